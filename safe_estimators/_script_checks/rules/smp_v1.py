"""The basics of a hand-written SMP v1 script (smdistributed.modelparallel): ``smp.init()``, an
``@smp.step`` function, ``smp.DistributedModel`` and ``smp.DistributedOptimizer``.

The Hugging Face Trainer does all four itself; a script that never imports the library is the
smp-not-imported rule's business.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from safe_estimators._script_checks.findings import Finding, ScriptContext
from safe_estimators._script_checks.libraries import KNOWN_TO_SMP_RULES, SMP_V1_INITIALISERS
from safe_estimators._script_checks.program import _Program
from safe_estimators._script_checks.rules.smp import _custom_smp, _is_smp_name, _smp_calls
from safe_estimators._script_checks.summary import _dotted


def _applies(program: _Program, context: ScriptContext) -> bool:
    return context.model_parallel and _custom_smp(program) and not program.runs_other_programs


def _trains(program: _Program) -> bool:
    # The checks below need the training loop in sight (a backward pass); a script whose loop
    # lives in a module the checks cannot read is not a finding.
    return bool(program.find("backward"))


def _rule_smp_no_init(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    if not _applies(program, context) or _smp_calls(program, "init"):
        return
    if any(_uses(program, library, name) for library, name in SMP_V1_INITIALISERS):
        return  # a library name that calls smp.init() itself (transformers' TrainingArguments)
    yield program.absent(
        KNOWN_TO_SMP_RULES, "smp-no-init",
        "the script imports smdistributed.modelparallel but never calls `smp.init()`: the first "
        "smp call fails, or the processes run unpartitioned copies of the model.",
        "call `smp.init()` at the start of the script, before building the model.",
    )


def _uses(program: _Program, library: str, name: str) -> bool:
    return any(
        use == name or use.startswith((f"{name}.", f"{name}("))
        for use in program.library_uses.get(library, ())
    )


def _rule_smp_no_step(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    if not _applies(program, context) or not _trains(program):
        return
    for module in program.modules:
        for scope in module.scopes:
            if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef) and any(
                _is_smp_name(_dotted(d.func if isinstance(d, ast.Call) else d, module.aliases),
                             "step")
                for d in scope.decorator_list
            ):
                return
    yield program.absent(
        KNOWN_TO_SMP_RULES, "smp-no-step",
        "no function is decorated with `@smp.step`: the library splits each batch into "
        "microbatches and runs the pipeline only inside such a function, so the forward and "
        "backward passes never run through it.",
        "move the forward pass and `model.backward(loss)` into a function decorated with "
        "`@smp.step` and call it from the training loop.",
    )


def _rule_smp_no_distributed_model(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    if not _applies(program, context) or not _trains(program):
        return
    if _smp_calls(program, "DistributedModel"):
        return
    yield program.absent(
        KNOWN_TO_SMP_RULES, "smp-no-distributed-model",
        "the model is never wrapped in `smp.DistributedModel`: the library does not partition "
        "it, and every process holds and trains the whole model.",
        "`model = smp.DistributedModel(model)` after building it (and before the optimizer).",
    )


def _rule_smp_no_distributed_optimizer(
    program: _Program, context: ScriptContext
) -> Iterator[Finding]:
    """An smp.DistributedModel needs its optimizer wrapped in smp.DistributedOptimizer, or it
    steps without the library's gradient handling (fp16 master weights, optimizer state
    sharding)."""
    if not _applies(program, context) or not _trains(program):
        return
    if _smp_calls(program, "DistributedOptimizer"):
        return
    if not _smp_calls(program, "DistributedModel"):
        return  # smp-no-distributed-model says what matters first
    yield Finding(
        program.entry.file, 0, "warning", "smp-no-distributed-optimizer",
        "the optimizer is never wrapped in `smp.DistributedOptimizer`: it steps on the local "
        "partition without the library's gradient handling (fp16 master weights, optimizer "
        "state sharding).",
        "`optimizer = smp.DistributedOptimizer(optimizer)` after creating it from "
        "`model.parameters()` of the smp.DistributedModel.",
    )
