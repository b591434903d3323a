"""Rules for the SageMaker distributed data parallel library (SMDDP) as a process-group backend."""

from __future__ import annotations

from collections.abc import Iterator

from safe_estimators._script_checks.findings import Finding, ScriptContext
from safe_estimators._script_checks.libraries import KNOWN_TO_SMDDP_RULE
from safe_estimators._script_checks.program import _backend, _Program
from safe_estimators._script_checks.summary import _short

# Importing this module registers the "smddp" backend with torch.distributed.
SMDDP_BACKEND_MODULE = "smdistributed.dataparallel.torch.torch_smddp"
# The library's own API from before the smddp backend (deprecated in SMDDP 1.4.0, its release
# notes): `import smdistributed.dataparallel.torch.distributed as dist; dist.init_process_group()`
# starts SMDDP's own process group, not torch.distributed's NCCL one.
SMDDP_LEGACY_API = "smdistributed.dataparallel.torch.distributed."


def _rule_smddp_not_imported(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    """``backend="smddp"`` exists only once ``torch_smddp`` is imported (any job)."""
    if program.imports(SMDDP_BACKEND_MODULE) or program.mentions(SMDDP_BACKEND_MODULE):
        return
    for module, call in program.process_group_inits:
        if _backend(call) == "smddp":
            yield program.absent(
                KNOWN_TO_SMDDP_RULE, "smddp-backend-not-imported",
                f"`{_short(call)}` at line {call.line} asks for the smddp backend, but the "
                f"script never imports `{SMDDP_BACKEND_MODULE}`, which registers it: the job "
                "fails at start-up with \"Invalid backend: 'smddp'\".",
                f"add `import {SMDDP_BACKEND_MODULE}  # noqa: F401` before "
                "`init_process_group`.",
                file=module.file, line=call.line,
            )


def _rule_smddp_job_uses_nccl(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    """An smdistributed.dataparallel job whose script sets up NCCL never uses SMDDP."""
    if context.launcher != "smddp":
        return
    for module, call in program.process_group_inits:
        if call.name.startswith(SMDDP_LEGACY_API):
            continue  # the library's own process group: SMDDP itself, whatever the backend
        backend = _backend(call)
        if backend not in ("nccl", ""):
            continue
        said = "the nccl backend" if backend else "no backend (PyTorch's default on GPUs is NCCL)"
        yield Finding(
            module.file, call.line, "warning", "smddp-job-uses-nccl",
            f"`{_short(call)}` at line {call.line} sets up {said} on a job launched for the "
            "SMDDP library (distribution smdistributed.dataparallel): the collectives run on "
            "NCCL and the job gets nothing from SMDDP.",
            f"`import {SMDDP_BACKEND_MODULE}` and call "
            "`init_process_group(backend=\"smddp\")`, or launch with torch_distributed instead.",
        )
