"""Rules for the SageMaker model parallelism library v2 (``torch.sagemaker``), per AWS's SMP v2
guide and release notes."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from packaging.version import InvalidVersion, Version

from safe_estimators._script_checks.findings import Finding, ScriptContext
from safe_estimators._script_checks.libraries import KNOWN_TO_SMP_RULES
from safe_estimators._script_checks.program import _backend, _Program
from safe_estimators._script_checks.summary import _Call, _Module, _short, _src

_TSM = "torch.sagemaker"
# Modules a release no longer has: module -> (the release without it, what to use instead, why).
REMOVED_MODULES = {
    "torch.sagemaker.distributed.fsdp.checkpoint": (
        "2.7.0",
        "torch.sagemaker.distributed.checkpoint.state_dict_saver / state_dict_loader",
        "deprecated in SMP 2.6.1 and removed in 2.7.0 (AWS release notes; SMP 2.6.0 already "
        "failed to import it, amazon-sagemaker-examples issue #4772)",
    ),
}
_TRANSFORM_DEGREES = ("tensor_parallel_degree", "context_parallel_degree", "expert_parallel_degree")


def _smp_v2(program: _Program, context: ScriptContext) -> bool:
    # AWS's HyperPod recipe adapter calls tsm.init and transform itself.
    return context.launcher == "smp-v2" and not program.imports("hyperpod_nemo_adapter")


def _whole_file(program: _Program, context: ScriptContext) -> bool:
    # "never calls X" needs the whole training in sight.
    return _smp_v2(program, context) and not program.runs_other_programs


def _tsm_calls(program: _Program, tail: str) -> list[tuple[_Module, _Call]]:
    return [(m, c) for m, c in program.find(tail) if c.name == f"{_TSM}.{tail}"]


def _rule_smp_v2_no_init(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    if not _whole_file(program, context) or _tsm_calls(program, "init"):
        return
    yield program.absent(
        KNOWN_TO_SMP_RULES, "smp-v2-no-init",
        "the job runs the SageMaker model parallelism library v2, but the script never calls "
        "`torch.sagemaker.init()`: the SMP configuration (its degrees and options) is never "
        "applied and the script runs as plain PyTorch.",
        "`import torch.sagemaker as tsm` and call `tsm.init()` at the start of the script, "
        "after any `init_process_group(backend=\"smddp\")`.",
    )


def _rule_smp_v2_no_transform(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    if not _whole_file(program, context) or _tsm_calls(program, "transform"):
        return
    degrees = [
        f"{name} {getattr(context, name)}" for name in _TRANSFORM_DEGREES
        if getattr(context, name) > 1
    ]
    if not degrees:
        return
    module, line = program.entry, 0
    inits = _tsm_calls(program, "init")
    if inits:
        module, line = inits[0][0], inits[0][1].line
    yield program.absent(
        KNOWN_TO_SMP_RULES, "smp-v2-no-transform",
        f"the job sets {' and '.join(degrees)}, but the script never passes the model through "
        "`torch.sagemaker.transform(...)`: that degree would do nothing (the model is not split; "
        "each GPU holds its full copy).",
        "call `model = tsm.transform(model)` after building the model and before wrapping it in "
        "FSDP, or remove the degree from the job.",
        file=module.file, line=line,
    )


def _smddp_inits(program: _Program) -> list[tuple[_Module, _Call]]:
    return [(m, c) for m, c in program.process_group_inits if _backend(c) == "smddp"]


def _rule_smp_v2_smddp_after_init(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    """The smddp process group must exist before ``tsm.init()`` (AWS's SMDDP-compat guide)."""
    if not _smp_v2(program, context):
        return
    inits = _tsm_calls(program, "init")
    for module, call in _smddp_inits(program):
        for init_module, init in inits:
            if init_module is not module:
                continue
            same_scope = init.scope == call.scope and init.pos < call.pos
            if not (same_scope or (init.scope == 0 and call.scope != 0)):
                continue
            yield Finding(
                module.file, call.line, "error", "smp-v2-smddp-after-init",
                f"`{_short(call)}` at line {call.line} runs after `{_short(init)}` (line "
                f"{init.line}): SMP v2 sets up its process groups in `tsm.init()`, so the smddp "
                "group must exist before it, and creating it afterwards fails.",
                "move `init_process_group(backend=\"smddp\")` (after `import "
                "smdistributed.dataparallel.torch.torch_smddp`) above `tsm.init()`.",
            )
            break


def _rule_smp_v2_smddp_tp_only(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    """Tensor parallelism without sharding (hybrid_shard_degree 1) must use NCCL."""
    if not _smp_v2(program, context):
        return
    if not (context.tensor_parallel_degree > 1 and context.hybrid_shard_degree == 1):
        return
    for module, call in _smddp_inits(program):
        yield Finding(
            module.file, call.line, "error", "smp-v2-smddp-tensor-parallel-only",
            f"`{_short(call)}` at line {call.line} uses the smddp backend, but the job runs "
            f"tensor parallelism only (tensor_parallel_degree {context.tensor_parallel_degree}, "
            "hybrid_shard_degree 1): SMDDP supports only the sharded data-parallel collectives, "
            "and AWS documents that a tensor-parallel-only job must use NCCL.",
            "call `init_process_group(backend=\"nccl\")`, or raise hybrid_shard_degree above 1.",
        )


def _rule_smp_v2_offloading(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    """``sm_activation_offloading`` offloads only checkpointed activations, and only with
    ``offload_wrapper`` on the root module."""
    if not _smp_v2(program, context) or not context.activation_offloading_set:
        return
    checkpointing = program.find("apply_activation_checkpointing", "checkpoint_wrapper")
    wrappers = program.find("offload_wrapper")
    if checkpointing and wrappers and any(_wraps_root(c) for _, c in wrappers):
        return
    if wrappers and not any(_wraps_root(c) for _, c in wrappers):
        module, call = wrappers[0]
        file, line = module.file, call.line
        what = (
            f"`{_short(call)}` at line {line} wraps a submodule, not the root module (SMP uses "
            "the root module to tell when the forward pass ends)"
        )
    else:
        file, line = program.entry.file, 0
        missing = [
            name for name, found in (
                ("activation checkpointing (`apply_activation_checkpointing`)", checkpointing),
                ("`offload_wrapper` on the root module", wrappers),
            ) if not found
        ]
        what = f"the script has no {' and no '.join(missing)}"
    yield Finding(
        file, line, "warning", "smp-v2-offloading-not-wired",
        f"the job sets sm_activation_offloading, but {what}: no activation is offloaded and "
        "the option does nothing.",
        "apply activation checkpointing to the transformer layers first, then "
        "`model = offload_wrapper(model)` on the root module (torch.distributed.algorithms."
        "_checkpoint.checkpoint_wrapper).",
    )


def _wraps_root(call: _Call) -> bool:
    args = call.node.args
    return not args or isinstance(args[0], ast.Name)


def _rule_smp_v2_removed_module(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    """An import of a torch.sagemaker module that the container's SMP release removed fails at
    start-up (the release each module left, from AWS's SMP v2 release notes)."""
    if not _smp_v2(program, context):
        return
    release = _release(context.pytorch_version)
    if release is None:
        return
    for module in program.modules:
        for node in _import_nodes(module):
            found = next(filter(None, map(_removed, _imported_modules(node))), None)
            if found is not None and release >= Version(found[1]):
                gone, removed_in, instead, why = found
                yield Finding(
                    module.file, node.lineno, "error", "smp-v2-removed-module",
                    f"`{_src(node)}` at line {node.lineno}: the container (PyTorch "
                    f"{context.pytorch_version}) runs SMP {release}, which has no `{gone}` "
                    f"({why}); the script fails at import.",
                    f"use {instead}, or an SMP image before {removed_in}.",
                )


def _release(pytorch: str | None) -> Version | None:
    # The SMP v2 release in the SMP image of each PyTorch version: one table, kept with the model
    # parallel facts (AWS's release notes; the SDK's pytorch-smp aliases agree, a test checks).
    # Imported here, for scripts that use SMP v2 only: its module builds a class at import.
    from safe_estimators._distributions.model_parallel.facts_v2 import LIBRARY_BY_PYTORCH

    if pytorch is None:
        return None
    found = LIBRARY_BY_PYTORCH.get(pytorch)
    if found is None:
        return None
    try:
        return Version(found)
    except InvalidVersion:  # pragma: no cover - the table is ours
        return None


def _import_nodes(module: _Module) -> Iterator[ast.Import | ast.ImportFrom]:
    if not any(name.startswith(_TSM) for name in module.imported):
        return
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node


def _imported_modules(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level or not node.module:
        return []
    return [node.module, *(f"{node.module}.{a.name}" for a in node.names)]


def _removed(name: str) -> tuple[str, str, str, str] | None:
    for gone, (removed_in, instead, why) in REMOVED_MODULES.items():
        if name == gone or name.startswith(gone + "."):
            return gone, removed_in, instead, why
    return None
