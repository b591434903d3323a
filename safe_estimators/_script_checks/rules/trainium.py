"""Rules for torchrun on Trainium (ml.trn*): the process group must use the XLA backend."""

from __future__ import annotations

from collections.abc import Iterator

from safe_estimators._script_checks.findings import Finding, ScriptContext
from safe_estimators._script_checks.program import _backend, _Program
from safe_estimators._script_checks.summary import _short


def _rule_trainium_backend(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    """On Trainium the NeuronCores communicate only through the xla backend: init_process_group
    with nccl or gloo fails at the first collective."""
    if not (context.instance_type or "").startswith("ml.trn") or context.launcher is None:
        return
    for module, call in program.process_group_inits:
        backend = _backend(call)
        if not backend or backend == "xla":
            continue  # not given, or not readable: no finding
        yield Finding(
            module.file, call.line, "error", "trainium-backend",
            f"`{_short(call)}` at line {call.line} uses the {backend!r} backend on "
            f"{context.instance_type}: Trainium has no CUDA, and its NeuronCores communicate "
            "only through the xla backend, so the first collective fails.",
            "`import torch_xla.distributed.xla_backend` and call "
            "`torch.distributed.init_process_group(\"xla\")`.",
        )
