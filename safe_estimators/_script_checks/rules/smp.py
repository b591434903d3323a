"""Rules for the SageMaker model parallel library (smdistributed.modelparallel), mostly fp16."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from packaging.version import InvalidVersion, Version

from safe_estimators._script_checks.findings import Finding, ScriptContext
from safe_estimators._script_checks.program import _is_torch_clip, _Program
from safe_estimators._script_checks.summary import (
    _Call,
    _dotted,
    _has_kwargs_unpacking,
    _is_const,
    _keyword,
    _Module,
    _short,
)

_SMP = "smdistributed.modelparallel"
_NORM_CLIP_TAILS = frozenset({"clip_grad_norm_", "clip_grad_norm"})
# LR scheduler factories; value = index of the optimizer among the positional arguments.
_SCHEDULER_FACTORIES = {
    "get_scheduler": 1,
    "get_constant_schedule": 0,
    "get_constant_schedule_with_warmup": 0,
    "get_linear_schedule_with_warmup": 0,
    "get_cosine_schedule_with_warmup": 0,
    "get_cosine_with_hard_restarts_schedule_with_warmup": 0,
    "get_polynomial_decay_schedule_with_warmup": 0,
    "get_inverse_sqrt_schedule": 0,
}
_FP16_NAMES = frozenset({"float16", "half"})
_OTHER_DTYPES = frozenset({"float32", "float", "float64", "double", "bfloat16"})


def _is_smp(call: _Call, tail: str) -> bool:
    return _is_smp_name(call.name, tail)


def _is_smp_name(name: str, tail: str) -> bool:
    # A bare name counts too (star import, or a helper that re-exports it).
    return name == tail or (name.startswith(_SMP) and name.rpartition(".")[2] == tail)


def _smp_calls(program: _Program, tail: str) -> list[tuple[_Module, _Call]]:
    """Calls to the library's ``tail`` (``smp.init``), in program order."""
    return [(m, c) for m, c in program.find(tail) if _is_smp(c, tail)]


def _first_or_file(program: _Program, hits: list[tuple[_Module, _Call]]) -> tuple[_Module, int]:
    """Where to point a finding: the first of ``hits``, else the whole entry point (line 0)."""
    return (hits[0][0], hits[0][1].line) if hits else (program.entry, 0)


# The library's own fp16 path (smp.model_creation, loss scaling in smp.DistributedOptimizer,
# clip_master_grads) arrived in SMP v1.10.0, first in the PyTorch 1.11.0 container (the
# library's release notes). Before it, fp16 scripts brought their own Apex-style FP16_Module and
# FP16_Optimizer (AWS's GPT-2 and GPT-J examples on PyTorch 1.10): the fp16 rules do not apply.
_FP16_API_FROM = Version("1.11")


def _fp16_rules_apply(program: _Program, context: ScriptContext) -> bool:
    if not context.model_parallel_fp16 or not _custom_smp(program):
        return False
    try:
        return Version(context.pytorch_version or "") >= _FP16_API_FROM
    except InvalidVersion:
        return True  # unknown container: judge by the current library


def _custom_smp(program: _Program) -> bool:
    # The Hugging Face Trainer runs smdistributed itself (model_creation, set_device, loss
    # scaling); the checks below are for scripts that drive smp by hand.
    return program.imports(_SMP) and not program.trainer_based


def _rule_smp_model_creation(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    """fp16 needs the model built inside ``smp.model_creation(dtype=torch.float16)``.

    Accepted: any dtype expression that mentions float16/half (``torch.float16 if args.fp16
    else ...``), a variable assigned such an expression, or an expression it cannot read.
    """
    if not _fp16_rules_apply(program, context):
        return
    creations = _smp_calls(program, "model_creation")
    kinds = [_dtype_kind(_keyword(c.node, "dtype"), m) for m, c in creations]
    if any(k != "other" for k in kinds):
        return
    if any(
        call.name == "torch.set_default_dtype" and _mentions_fp16(call.node)
        for _, call in program.find("set_default_dtype")
    ):
        return  # the model is built with float16 as the default dtype: its weights are fp16
    if creations:
        module, call = creations[0]
        line = call.line
        what = f"`{_short(call)}` at line {line} has no float16 dtype"
    else:
        # Point at smp.DistributedModel(...) when there is one: the model is built near it.
        module, line = _first_or_file(program, _smp_calls(program, "DistributedModel"))
        what = "the model is not created inside `smp.model_creation(dtype=torch.float16)`"
    yield Finding(
        module.file, line, "warning", "smp-fp16-model-creation",
        f"fp16 is on for model parallelism but {what}: the parameters stay float32 and the "
        "library's fp16 path (half-precision weights, fp32 master copies) is not used.",
        "build the model in `with smp.model_creation(dtype=torch.float16):` (AWS example: "
        "`dtype=torch.float16 if args.fp16 else torch.get_default_dtype()`).",
    )


def _dtype_kind(node: ast.expr | None, module: _Module) -> str:
    """"fp16", "other" (surely not fp16) or "unknown"; a variable is looked up one level."""
    if node is None:
        return "other"  # the default dtype, float32
    if _mentions_fp16(node):
        return "fp16"
    if isinstance(node, ast.Name):
        values = [a.value for a in module.assigns_by_target.get(node.id, ())]
        if any(_mentions_fp16(v) for v in values):
            return "fp16"
        return "other" if values and all(map(_plainly_not_fp16, values)) else "unknown"
    return "other" if _plainly_not_fp16(node) else "unknown"


def _plainly_not_fp16(node: ast.expr) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr in _OTHER_DTYPES
    if isinstance(node, ast.Call):
        return _dotted(node.func, None).endswith("get_default_dtype")
    return False


def _mentions_fp16(node: ast.AST) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and sub.attr in _FP16_NAMES:
            return True
        if isinstance(sub, ast.Constant) and sub.value in ("float16", "fp16", "half"):
            return True
    return False


def _rule_smp_scheduler(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    """An LR scheduler must get the wrapped optimizer, ``optimizer.optimizer``."""
    if not _fp16_rules_apply(program, context):
        return
    for module, call in program.calls():
        if call.tail not in _SCHEDULER_FACTORIES and "lr_scheduler" not in call.name:
            continue  # cheap test first: this loop sees every call
        if call.name.startswith("torch.optim.lr_scheduler."):
            index: int | None = 0
        elif call.name.startswith("transformers") or call.name == call.tail:
            index = _SCHEDULER_FACTORIES.get(call.tail)
        else:
            index = None
        if index is None:
            continue
        arg = _keyword(call.node, "optimizer", index)
        if not isinstance(arg, ast.Name | ast.Attribute):
            continue
        name = _dotted(arg, None)
        value = module.latest_value(name, call.scope, call.pos)
        if not (isinstance(value, ast.Call) and _is_smp_name(
                _dotted(value.func, module.aliases), "DistributedOptimizer")):
            continue
        yield Finding(
            module.file, call.line, "warning", "smp-fp16-lr-scheduler-wrapper",
            f"`{_short(call)}` at line {call.line} is given `{name}`, the "
            f"`smp.DistributedOptimizer` wrapper (line {value.lineno}): with fp16 the scheduler "
            "must drive the wrapped optimizer, otherwise the learning rate it sets is not the "
            "one used.",
            f"pass `{name}.optimizer` to the scheduler.",
        )


def _rule_smp_clip(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    """With fp16 model parallelism the update uses the fp32 master gradients, partitioned across
    ranks: clip them with optimizer.clip_master_grads, not torch's clip_grad_norm_."""
    if not _fp16_rules_apply(program, context):
        return
    for module, call in program.find(*_NORM_CLIP_TAILS):
        if _is_torch_clip(call, _NORM_CLIP_TAILS):
            yield Finding(
                module.file, call.line, "warning", "smp-fp16-clip-grad-norm",
                f"`{_short(call)}` at line {call.line} clips the fp16 model gradients; with fp16 "
                "model parallelism the update uses the fp32 master gradients, partitioned "
                "across ranks, which this call does not see.",
                "call `optimizer.clip_master_grads(max_norm)` on the smp.DistributedOptimizer "
                "instead.",
            )


def _rule_smp_loss_scale(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    """fp16 with smp.DistributedOptimizer's static loss scale (1.0 by default) underflows or
    overflows: AWS's fp16 example asks for dynamic_loss_scale=True."""
    if not _fp16_rules_apply(program, context):
        return
    for module, call in _smp_calls(program, "DistributedOptimizer"):
        if _has_kwargs_unpacking(call.node) or _dynamic_scaling(call.node):
            continue
        if _dynamic_scaling(_wrapped_optimizer(module, call)):
            continue  # it wraps the script's own fp16 optimizer, which scales dynamically
        yield Finding(
            module.file, call.line, "warning", "smp-fp16-static-loss-scale",
            f"`{_short(call)}` at line {call.line} uses a static loss scale "
            "(static_loss_scale defaults to 1.0, dynamic_loss_scale to False): with fp16, small "
            "gradients underflow to zero and the loss stalls, or large ones overflow to inf/NaN.",
            "pass `dynamic_loss_scale=True` (and `static_loss_scale=None`), optionally with "
            "`dynamic_loss_args={...}`, as in the AWS fp16 example.",
        )


def _dynamic_scaling(node: ast.expr | None) -> bool:
    """A call that asks for dynamic loss scaling (``dynamic_loss_scale=`` anything but False)."""
    if not isinstance(node, ast.Call):
        return False
    dynamic = _keyword(node, "dynamic_loss_scale")
    return dynamic is not None and not _is_const(dynamic, False)


def _wrapped_optimizer(module: _Module, call: _Call) -> ast.expr | None:
    """What ``smp.DistributedOptimizer(x)`` wraps: ``x``, or the value last assigned to it."""
    arg = _keyword(call.node, "optimizer", 0)
    if isinstance(arg, ast.Name):
        # Before the line: `optimizer = smp.DistributedOptimizer(optimizer)` assigns it too.
        return module.latest_value(arg.id, call.scope, (call.line, 0))
    return arg


def _rule_smp_set_device(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    """Each SMP process must pin its GPU: ``torch.cuda.set_device(smp.local_rank())``.

    Any ``torch.cuda.set_device`` whose argument is not a constant counts; a constant pins every
    process to the same GPU and is reported.
    """
    if not (context.model_parallel or context.model_parallel_fp16) or not _custom_smp(program):
        return
    calls = [(m, c) for m, c in program.find("set_device") if "cuda" in c.name]
    constant = [
        (m, c) for m, c in calls if c.node.args and isinstance(c.node.args[0], ast.Constant)
    ]
    if calls and len(constant) < len(calls):
        return
    if constant:
        module, call = constant[0]
        line = call.line
        what = f"`{_short(call)}` at line {line} pins every process to the same GPU"
    else:
        module, line = _first_or_file(program, _smp_calls(program, "init"))
        what = "the script never calls `torch.cuda.set_device(smp.local_rank())`"
    yield Finding(
        module.file, line, "warning", "smp-set-device",
        f"{what}: the library runs one process per GPU, and a process that does not pin its "
        "own GPU allocates on GPU 0, so processes collide there (out of memory, or slow).",
        "right after `smp.init()`, call `torch.cuda.set_device(smp.local_rank())` and move "
        'inputs to `torch.device("cuda")`.',
    )


def _rule_smp_not_used(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    """A job with model parallelism on must run a script that uses smdistributed.modelparallel
    (or the Hugging Face Trainer, which does): otherwise each MPI process trains the whole model
    alone."""
    if not context.model_parallel or program.imports(_SMP) or program.trainer_based:
        return
    yield Finding(
        program.entry.file, 0, "warning", "smp-not-imported",
        "model parallelism is on but the script never imports `smdistributed.modelparallel` "
        "(nor uses the Hugging Face Trainer, which would): MPI starts one process per GPU and "
        "each runs this script on its own, with the whole model, unpartitioned.",
        "`import smdistributed.modelparallel.torch as smp`, call `smp.init()` and wrap the "
        "model and optimizer in `smp.DistributedModel` / `smp.DistributedOptimizer`.",
    )
