"""Rules for a Training Compiler job launched through torch_xla's ``xla_spawn`` (the pytorchxla
distribution): ``_mp_fn(index)``, ``xm.mark_step()``, all-reduced gradients, sharded data, the
device loader."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from safe_estimators._script_checks.findings import Finding, ScriptContext
from safe_estimators._script_checks.program import _REDUCE_TAILS, _Program
from safe_estimators._script_checks.summary import _Call, _Module, _short

_DEVICE_LOADER_TAILS = frozenset({"MpDeviceLoader", "ParallelLoader"})


def _gpus(context: ScriptContext) -> str:
    n = context.gpus_per_instance
    return f" ({n} per instance)" if n else ""


def _first(program: _Program, hits: list[tuple[_Module, _Call]]) -> tuple[_Module, _Call]:
    """The first of ``hits`` in the entry point, else the first in a local module."""
    return min(hits, key=lambda hit: (hit[0] is not program.entry, hit[1].pos))


def _rule_mp_fn(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    """xla_spawn imports the entry point and calls ``module._mp_fn(index)`` in each process."""
    if not (context.training_compiler and context.xla_distributed):
        return
    entry = program.entry
    binding = _module_level_bindings(entry.tree).get("_mp_fn")
    if binding is None:
        # A star import may bind it: the name rests on a module the checks may not see.
        starred = sorted(name or "." for name, names, _ in entry.raw_imports if "*" in names)
        unseen = (
            f" (unless `from {starred[0]} import *` defines it: a warning, not an error)"
            if starred else ""
        )
        yield Finding(
            entry.file, 0, "warning" if starred else "error", "xla-missing-mp-fn",
            f"no module-level `_mp_fn(index)`{unseen}. With the pytorchxla distribution, "
            "SageMaker starts this script through torch_xla's xla_spawn, which launches one "
            f"process per GPU{_gpus(context)} and calls `_mp_fn(index)` from this module in "
            "each. Without it the launch fails, or, if the script trains at import time, every "
            "worker trains its own model independently and their updates are never combined.",
            "define `def _mp_fn(index): main()` at module level (index is the process's "
            "ordinal; keep `if __name__ == \"__main__\": main()` for single-process runs).",
        )
        return
    args = None
    if isinstance(binding, ast.FunctionDef | ast.AsyncFunctionDef):
        args = binding.args
    elif isinstance(binding, ast.Assign) and isinstance(binding.value, ast.Lambda):
        args = binding.value.args
    problem = _signature_problem(args) if args is not None else None
    if isinstance(binding, ast.AsyncFunctionDef):
        problem = "it is `async`: calling it only creates a coroutine, nothing trains"
    if problem:
        yield Finding(
            entry.file, binding.lineno, "error", "xla-mp-fn-signature",
            f"`_mp_fn` cannot be called as `_mp_fn(index)`: {problem}. xla_spawn calls it with "
            "exactly one positional argument, the process index.",
            "declare it as `def _mp_fn(index):` and call your training function from it.",
        )


def _signature_problem(args: ast.arguments) -> str | None:
    positional = [*args.posonlyargs, *args.args]
    required = len(positional) - len(args.defaults)
    kw_pairs = zip(args.kwonlyargs, args.kw_defaults, strict=True)
    missing_kw = [a.arg for a, d in kw_pairs if d is None]
    if missing_kw:
        return f"keyword-only parameter(s) {', '.join(missing_kw)} have no default"
    if required > 1:
        return f"it requires {required} positional parameters"
    if not positional and args.vararg is None:
        return "it takes no parameters"
    return None


def _module_level_bindings(tree: ast.Module) -> dict[str, ast.stmt]:
    """Names bound when the module is imported, including under top-level if/try/with."""
    bound: dict[str, ast.stmt] = {}
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        stmt = todo.pop(0)
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound[stmt.name] = stmt
        elif isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    bound[target.id] = stmt
        elif isinstance(stmt, ast.Import | ast.ImportFrom):
            for alias in stmt.names:
                bound[(alias.asname or alias.name).partition(".")[0]] = stmt
        elif isinstance(stmt, ast.If | ast.With | ast.AsyncWith | ast.For | ast.While):
            todo.extend([*stmt.body, *getattr(stmt, "orelse", ())])
        elif isinstance(stmt, ast.Try):
            todo.extend([*stmt.body, *stmt.orelse, *stmt.finalbody])
            for handler in stmt.handlers:
                todo.extend(handler.body)
    return bound


def _rule_mark_step(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    """A custom torch_xla loop must cut the lazy graph after each update.

    Accepted as a mark: any ``*.mark_step()``, ``torch_xla.sync()``,
    ``xm.optimizer_step(..., barrier=True)``, or a call to a local function that does one of
    those; placed later in the same function, anywhere in the loop around the step (it runs
    before the next one), or after the call to the step's function in a caller.
    ``MpDeviceLoader`` also marks a step when it fetches the next batch, but the troubleshooting
    guide still asks for an explicit mark before logging, so the loader does not count.
    """
    if not (context.training_compiler and context.xla_distributed):
        return
    if not program.imports("torch_xla"):
        return
    reported: set[tuple[int, int]] = set()
    for module, call in program.calls():
        if not program.is_step(call) or program.is_mark(call):
            continue
        key = (id(module), call.scope)
        if key in reported or program.is_marked(module, call):
            continue
        reported.add(key)
        yield Finding(
            module.file, call.line, "warning", "xla-missing-mark-step",
            f"`{_short(call)}` at line {call.line} is not followed by `xm.mark_step()`. torch_xla "
            "builds the step lazily and runs it only when the step is marked: losses and "
            "metrics logged before that are stale or force extra graph compilations.",
            "call `xm.mark_step()` right after the optimizer step, before printing or logging "
            "(or use `xm.optimizer_step(optimizer, barrier=True)`).",
        )


def _rule_gradients_reduced(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    """``optimizer.step()`` in a torch_xla loop updates each worker with its own gradients.

    Accepted: ``xm.optimizer_step`` (it all-reduces), any ``*.reduce_gradients`` or
    ``*.all_reduce`` call anywhere in the program, a ``DistributedDataParallel`` model, or
    Accelerate's ``prepare`` (its optimizer wrapper reduces).
    """
    if not (context.training_compiler and context.xla_distributed):
        return
    if not program.imports("torch_xla") or program.accelerate_prepared:
        return
    if program.find(*_REDUCE_TAILS, "DistributedDataParallel"):
        return
    reported: set[tuple[int, int]] = set()
    for module, call in program.calls():
        key = (id(module), call.scope)
        if key in reported or not program.is_direct_step(call):
            continue
        reported.add(key)
        yield Finding(
            module.file, call.line, "warning", "xla-gradients-not-reduced",
            f"gradients not all-reduced: `{_short(call)}` at line {call.line} updates each "
            f"worker's model with its own gradients only; the workers{_gpus(context)} drift apart "
            "and the job trains several unrelated models.",
            "replace it with `xm.optimizer_step(optimizer)` (all-reduce, then step), or call "
            "`xm.reduce_gradients(optimizer)` before it (with GradScaler: after "
            "`scaler.scale(loss).backward()`, before `scaler.unscale_`).",
        )


def _rule_data_sharded(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    """Each xla_spawn worker must read its own shard of the data.

    Accepted: a ``DistributedSampler`` anywhere, ``datasets``' ``split_dataset_by_node`` or a
    ``.shard(...)`` call, Accelerate's ``prepare``, or the Hugging Face Trainer. Reported once,
    at the first ``DataLoader``; a script without one is not reported.
    """
    if not (context.training_compiler and context.xla_distributed):
        return
    if program.trainer_based or program.accelerate_prepared:
        return
    loaders = program.find("DataLoader")
    if not loaders or program.find("DistributedSampler", "split_dataset_by_node", "shard"):
        return
    module, call = _first(program, loaders)
    yield Finding(
        module.file, call.line, "warning", "xla-data-not-sharded",
        f"`{_short(call)}` at line {call.line} has no `DistributedSampler`: every worker"
        f"{_gpus(context)} iterates over the whole dataset, so an epoch costs one full pass "
        "per worker instead of one pass shared between them, and the global batch is not the "
        "per-worker batch times the workers you planned for.",
        "pass `sampler=DistributedSampler(dataset, num_replicas=xm.xrt_world_size(), "
        "rank=xm.get_ordinal(), shuffle=True)` to the DataLoader (and drop `shuffle=True`).",
    )


def _rule_device_loader(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    """A custom torch_xla loop should feed batches through ``MpDeviceLoader``/``ParallelLoader``."""
    if not (context.training_compiler and context.xla_distributed):
        return
    if program.trainer_based or program.accelerate_prepared or not program.imports("torch_xla"):
        return
    loaders = program.find("DataLoader")
    if not loaders or program.find(*_DEVICE_LOADER_TAILS):
        return
    module, call = _first(program, loaders)
    yield Finding(
        module.file, call.line, "warning", "xla-no-device-loader",
        f"`{_short(call)}` at line {call.line} is iterated without torch_xla's "
        "`MpDeviceLoader`: batches are not preloaded onto the XLA device and the step is not "
        "marked per batch, so each worker waits on host-to-device copies.",
        "wrap it: `loader = torch_xla.distributed.parallel_loader.MpDeviceLoader(loader, "
        "xm.xla_device())` and iterate over that.",
    )


def _entry_not_python(shown: str, context: ScriptContext) -> Finding:
    """With the pytorchxla distribution the container starts the entry point through xla_spawn,
    which imports it as a Python module: it must be a .py file."""
    return Finding(
        shown, 0, "error", "xla-entry-not-python",
        "with the pytorchxla distribution the container runs `python -m "
        "torch_xla.distributed.xla_spawn --num_gpus "
        f"{context.gpus_per_instance or 'N'} <entry point>`, which imports the entry point as a "
        "Python module; this entry point is not a .py file.",
        "make the entry point a Python script that defines `_mp_fn(index)`.",
    )
