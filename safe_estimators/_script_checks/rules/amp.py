"""Rules for the order of a GradScaler (AMP) step: scale, [all-reduce], unscale_, clip, step."""

from __future__ import annotations

from collections.abc import Iterator

from safe_estimators._script_checks.findings import Finding, ScriptContext
from safe_estimators._script_checks.program import _REDUCE_TAILS, _is_torch_clip, _Program
from safe_estimators._script_checks.summary import _Call, _Module, _short

_CLIP_TAILS = frozenset({"clip_grad_norm_", "clip_grad_value_", "clip_grad_norm"})


def _amp_scopes(program: _Program) -> Iterator[tuple[_Module, list[_Call]]]:
    """Functions that drive a GradScaler (scale/unscale_/step/update on a scaler), with their
    calls in straight-line order. Only these are checked: a helper that only clips is judged
    where it is called, which is out of reach of a per-function order."""
    if not program.find("GradScaler"):
        return
    for module in program.modules:
        for calls in module.calls_by_scope.values():
            if any(
                program.is_scaler_call(c) and c.tail in ("scale", "unscale_", "step", "update")
                for c in calls
            ):
                yield module, calls


def _rule_amp_clip_before_unscale(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    """Order from the troubleshooting guide: scale, [all-reduce], unscale, clip, step, mark_step."""
    for module, calls in _amp_scopes(program):
        unscales = [c for c in calls if c.tail == "unscale_"]
        for clip in (c for c in calls if _is_torch_clip(c, _CLIP_TAILS)):
            if any(u.pos < clip.pos for u in unscales):
                continue
            later = [u.line for u in unscales if u.pos > clip.pos]
            where = (
                f"`scaler.unscale_` comes later, at line {later[0]}"
                if later
                else "there is no `scaler.unscale_` before it in this function"
            )
            yield Finding(
                module.file, clip.line, "warning", "amp-clip-before-unscale",
                f"`{_short(clip)}` at line {clip.line} clips gradients that GradScaler has still "
                f"multiplied by the loss scale ({where}): the threshold applies to scaled "
                "values, so clipping is either always or never triggered.",
                "call `scaler.unscale_(optimizer)` right before clipping: scale, backward, "
                "[all-reduce], unscale_, clip, scaler.step, scaler.update.",
            )


def _rule_amp_step_before_clip(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    """Gradient clipping after the optimizer step has no effect: the step already used the
    unclipped gradients."""
    for module, calls in _amp_scopes(program):
        steps = [c for c in calls if program.is_step(c)]
        for clip in (c for c in calls if _is_torch_clip(c, _CLIP_TAILS)):
            earlier = [s for s in steps if s.pos < clip.pos]
            if not earlier:
                continue
            step = earlier[-1]
            yield Finding(
                module.file, clip.line, "warning", "amp-step-before-clip",
                f"`{_short(clip)}` at line {clip.line} runs after the update "
                f"`{_short(step)}` at line {step.line}: the step has already used the unclipped "
                "gradients, so clipping has no effect.",
                "move the clipping before the step: unscale_, clip, then scaler.step(optimizer).",
            )


def _rule_amp_reduce_after_clip(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    """With pytorchxla, gradients must be all-reduced before they are unscaled and clipped."""
    if not context.xla_distributed:
        return
    for module, calls in _amp_scopes(program):
        reduces = [c for c in calls if c.tail in _REDUCE_TAILS]
        firsts = [c for c in calls if c.tail == "unscale_" or _is_torch_clip(c, _CLIP_TAILS)]
        if not firsts:
            continue
        first = firsts[0]
        for reduce in (r for r in reduces if r.pos > first.pos):
            yield Finding(
                module.file, reduce.line, "warning", "amp-reduce-after-clip",
                f"`{_short(reduce)}` at line {reduce.line} all-reduces after "
                f"`{_short(first)}` at line {first.line}: each worker unscales/clips its own "
                "gradients, so the workers clip differently.",
                "all-reduce right after `scaler.scale(loss).backward()`, before unscale_ and "
                "clipping.",
            )
