"""Checks on the training script itself, before the job is launched.

The AWS troubleshooting pages for Training Compiler and for fp16 model parallelism are mostly about
mistakes inside the entry point that show up only after a job has run for a while: no
``_mp_fn(index)`` so every worker trains its own model, no ``xm.mark_step()``, no
``DistributedSampler``, ``os.environ["GPU_NUM_DEVICES"] = 4``, clipping before ``unscale_``, an LR
scheduler built on the ``smp.DistributedOptimizer`` wrapper... No SDK looks at the script. This
module does, because it knows the job's configuration (a :class:`ScriptContext`).

It parses the entry point and the local modules it imports with :mod:`ast`. It never imports or
runs them: the script may need a GPU, torch_xla, or may train at import time.

Shape, so that a new check is one small function:

- ``_parse`` turns a file into a ``_Module`` summary in one pass: import aliases, every call with
  its dotted name resolved through the imports (``xm.mark_step`` ->
  ``torch_xla.core.xla_model.mark_step``), its enclosing function and position, simple
  assignments, ``os.environ`` writes.
- ``_Program`` groups the entry point with its local modules and answers program-wide questions
  (is it built on the Hugging Face Trainer? does it import torch_xla?).
- Each rule is a generator over the program and the context; ``_RULES`` lists them.

The rules are heuristics over names. They prefer silence to crying wolf: each one says which
patterns it accepts, and an expression it cannot read (``padding=args.padding``) is not a finding.
"""

from __future__ import annotations

import ast
import gc
import os
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import Literal, NamedTuple

import attrs

from safe_estimators._problems import Severity

# A 10,000-line script is ~400 kB; past this size we refuse rather than stall a build.
_MAX_BYTES = 2_000_000
# Local modules followed from one entry point (a guard against huge source trees, not a limit
# anyone should meet).
_MAX_FILES = 200
# How far the mark_step search follows a helper function up to its callers.
_MAX_CALLER_DEPTH = 4


@attrs.frozen
class ScriptContext:
    """What the checks need to know about the job, resolved from its configuration.

    Attributes:
        training_compiler: SageMaker Training Compiler is on.
        xla_distributed: a compiler job with the ``pytorchxla`` distribution (more than one GPU in
            total): the container launches the entry point through torch_xla's ``xla_spawn``.
        gpus_per_instance: GPUs on each instance; ``None`` when unknown (local mode, a pipeline
            parameter).
        model_parallel: the SageMaker model parallel library (``smdistributed.modelparallel``)
            is on.
        model_parallel_fp16: model parallelism with ``fp16`` on.
    """

    training_compiler: bool = False
    xla_distributed: bool = False
    gpus_per_instance: int | None = None
    model_parallel: bool = False
    model_parallel_fp16: bool = False


@attrs.frozen
class Finding:
    """One problem found in a training script.

    Attributes:
        file: the script's path as given, or relative to ``source_dir`` when one was given.
        line: 1-based line; 0 when the finding is about the whole file.
        severity: ``"error"`` (the job would fail or train wrongly) or ``"warning"``.
        rule: a short stable id naming the check (``"xla-missing-mp-fn"``), for filtering and
            for tests; an id never changes meaning.
        message: what is wrong, with the numbers involved.
        hint: how to fix it.
    """

    file: str
    line: int
    severity: Severity
    rule: str
    message: str
    hint: str

    def __str__(self) -> str:
        text = f"{self.file}:{self.line}: {self.severity}: {self.message}"
        if self.hint:
            text += f" Fix: {self.hint}"
        return text


def check_script(
    entry_point: str | os.PathLike[str],
    context: ScriptContext,
    *,
    source_dir: str | os.PathLike[str] | None = None,
) -> list[Finding]:
    """Check a training script file against the job's configuration.

    ``entry_point`` is resolved relative to ``source_dir`` when one is given (SageMaker's
    convention). The local modules the entry point imports that live in ``source_dir`` or beside
    the entry point are parsed too, recursively, each once; a finding in one of them names that
    file. Nothing is imported or executed.

    Returns the findings sorted by file and line. A missing or unreadable entry point, a syntax
    error, or a file too large or too deeply nested to analyse each give one finding; this
    function does not raise on any file content.
    """
    given = Path(entry_point)
    base = Path(source_dir) if source_dir is not None else None
    path = base / given if base is not None else given
    shown = _display_name(path, base, given)
    if path.suffix != ".py" and path.is_file():
        # SageMaker runs a non-.py entry point as a program (shell script, binary), not with
        # Python: nothing to parse. Under pytorchxla it is still wrong: xla_spawn imports it.
        if context.training_compiler and context.xla_distributed:
            return [_entry_not_python(shown, context)]
        return []
    with _gc_paused():
        return _check_files(path, shown, given, base, context)


def check_source(
    source: str, context: ScriptContext, *, filename: str = "<script>"
) -> list[Finding]:
    """Run the same checks on a source string (no local modules are followed).

    Returns the findings sorted by line; never raises on any input text.
    """
    if len(source) > _MAX_BYTES:
        return [_too_large(filename, len(source))]
    with _gc_paused():
        return _check_text(source, filename, context)


# The work is done in these two functions, not in the `with` blocks above, so that the trees are
# freed (by reference counting) before the garbage collector is switched back on: see _gc_paused.


def _check_text(source: str, filename: str, context: ScriptContext) -> list[Finding]:
    module = _parse(source, filename, None)
    if isinstance(module, Finding):
        return [module]
    return sorted(_run_rules(_Program([module]), context), key=_order)


def _check_files(
    path: Path, shown: str, given: Path, base: Path | None, context: ScriptContext
) -> list[Finding]:
    loaded = _load(path, shown, required=True)
    if isinstance(loaded, Finding):
        return [loaded]
    findings: list[Finding] = []
    modules = [loaded]
    roots = _search_roots(path, base)
    # Helpers are named relative to source_dir, else beside the entry point as given.
    name_roots = [(_real(base), Path("."))] if base is not None else []
    name_roots.append((_real(path).parent, given.parent))
    seen = {_real(path)}
    queue = [loaded]
    while queue and len(modules) < _MAX_FILES:
        module = queue.pop(0)
        for candidate in _local_imports(module, roots):
            real = _real(candidate)
            if real in seen:
                continue
            seen.add(real)
            helper = _load(candidate, _helper_name(real, name_roots), required=False)
            if isinstance(helper, Finding):
                findings.append(helper)
                continue
            modules.append(helper)
            queue.append(helper)
    findings.extend(_run_rules(_Program(modules), context))
    return sorted(findings, key=_order)


# --------------------------------------------------------------------------------------------
# Names the rules look for. Facts are data: a new spelling is one entry here.

_XM = "torch_xla.core.xla_model"
_SMP = "smdistributed.modelparallel"
# Packages whose `*Trainer` runs the loop itself: data sharding, device loader, optimizer step.
_TRAINER_PACKAGES = frozenset(
    {"transformers", "trl", "optimum", "setfit", "lightning", "pytorch_lightning"}
)
# Besides any `*.mark_step()` call (xm.mark_step, a from-import, a re-export).
_MARK_STEP_NAMES = frozenset({f"{_XM}.mark_step", "torch_xla.sync"})
_REDUCE_TAILS = frozenset({"reduce_gradients", "all_reduce"})
_DEVICE_LOADER_TAILS = frozenset({"MpDeviceLoader", "ParallelLoader"})
_CLIP_TAILS = frozenset({"clip_grad_norm_", "clip_grad_value_", "clip_grad_norm"})
_NORM_CLIP_TAILS = frozenset({"clip_grad_norm_", "clip_grad_norm"})
# Constructors whose result is an optimizer, besides anything under torch.optim.
_OPTIMIZER_TAILS = frozenset({"AdamW", "Adafactor", "FusedAdam", "FusedLAMB", "Lamb", "LAMB"})
# Hugging Face collators (and tokenizer.pad) that pad to the longest sequence by default;
# value = index of `padding` among the positional arguments.
_LONGEST_BY_DEFAULT = {
    "DataCollatorWithPadding": 1,
    "DataCollatorForTokenClassification": 1,
    "DataCollatorForSeq2Seq": 2,
}
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


# --------------------------------------------------------------------------------------------
# Parsed-module summary.


def _node_classes(base: type) -> set[type]:
    found: set[type] = set()
    todo = [base]
    while todo:
        subclasses: list[type] = todo.pop().__subclasses__()
        for sub in subclasses:
            if sub not in found:
                found.add(sub)
                todo.append(sub)
    return found


# Nodes with nothing inside that any rule reads (their parents are read instead).
_LEAVES = frozenset(
    {ast.Name, ast.Constant, ast.alias, ast.Pass, ast.Break, ast.Continue, ast.Global,
     ast.Nonlocal}
    | _node_classes(ast.expr_context)
    | _node_classes(ast.operator)
    | _node_classes(ast.unaryop)
    | _node_classes(ast.cmpop)
    | _node_classes(ast.boolop)
)
_WALKED = frozenset(_node_classes(ast.AST) - _LEAVES)
_LOOPS = frozenset({ast.For, ast.AsyncFor, ast.While})
_SPECIAL = frozenset(
    {ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.Assign, ast.AnnAssign, ast.Import,
     ast.ImportFrom, ast.ClassDef}
    | _LOOPS
)


class _Call(NamedTuple):
    name: str  # dotted, resolved through the imports; "?" where a part has no name
    tail: str  # last part of the name: "mark_step"
    receiver: str  # the part before it: "self.optimizer.step" -> "optimizer"
    node: ast.Call
    scope: int  # index into _Module.scopes; 0 is module level
    pos: tuple[int, int]  # (line, column): straight-line order inside a scope
    loop: ast.AST | None  # innermost for/while of the same scope around the call

    @property
    def line(self) -> int:
        return self.pos[0]


def _make_call(
    name: str, node: ast.Call, scope: int, loop: ast.AST | None
) -> _Call:
    head, _, tail = name.rpartition(".")
    receiver = head.rpartition(".")[2]
    return _Call(name, tail, receiver, node, scope, (node.lineno, node.col_offset), loop)


class _Assign(NamedTuple):
    target: str  # dotted target, not alias-resolved: "optimizer", "self.optimizer"
    value: ast.expr
    scope: int
    pos: tuple[int, int]


class _EnvWrite(NamedTuple):
    key: str
    value: ast.expr
    line: int
    code: str  # the write as the user would recognise it, for the message


class _Module:
    """What the rules need from one parsed file."""

    def __init__(self, file: str, tree: ast.Module, path: Path | None) -> None:
        self.file = file
        self.tree = tree
        self.path = path
        self.aliases: dict[str, str] = {}
        self.imported: set[str] = set()
        # (module, imported names, relative level) for following local modules.
        self.raw_imports: list[tuple[str, tuple[str, ...], int]] = []
        self.calls: list[_Call] = []
        self.assigns: list[_Assign] = []
        self.assigns_by_target: dict[str, list[_Assign]] = {}
        self.scopes: list[ast.AST] = [tree]
        self.scope_names: list[str] = ["<module>"]
        self.class_bases: list[tuple[str, list[str]]] = []
        self._subscript_writes: list[tuple[ast.expr, ast.expr, ast.expr, int]] = []
        self._summarize()

    def _summarize(self) -> None:
        # One pass over the tree. Iterative on purpose: generated or minified code can nest
        # deeper than Python's recursion limit even when ast.parse accepted it. Fields are read
        # directly and leaf nodes (names, constants, contexts, operators) are never pushed: that
        # halves the time ast.iter_child_nodes would take.
        raw_calls: list[tuple[ast.Call, int, ast.AST | None]] = []
        raw_bases: list[tuple[str, list[ast.expr]]] = []
        stack: list[tuple[ast.AST, int, ast.AST | None]] = [(self.tree, 0, None)]
        push, pop, walked = stack.append, stack.pop, _WALKED
        while stack:
            node, scope, loop = pop()
            kind = type(node)
            if kind is ast.Call:
                raw_calls.append((node, scope, loop))  # type: ignore[arg-type]
            elif kind in _SPECIAL:
                if self._special(node, scope, loop, push, raw_bases):
                    continue
                if kind in _LOOPS:
                    loop = node
            # Pushed in reverse so that nodes are visited in source order: when two imports
            # bind the same alias, the later one wins, as in Python.
            for field in reversed(kind._fields):
                value = getattr(node, field, None)
                if type(value) is list:
                    for item in reversed(value):
                        if type(item) in walked:
                            push((item, scope, loop))
                elif type(value) in walked:
                    push((value, scope, loop))  # type: ignore[arg-type]
        self.calls = sorted(
            (_make_call(_dotted(call.func, self.aliases), call, scope, lp)
             for call, scope, lp in raw_calls),
            key=lambda c: c.pos,
        )
        self.assigns.sort(key=lambda a: a.pos)
        for assign in self.assigns:
            self.assigns_by_target.setdefault(assign.target, []).append(assign)
        self.class_bases = [(n, [_dotted(b, self.aliases) for b in bs]) for n, bs in raw_bases]

    def _special(
        self,
        node: ast.AST,
        scope: int,
        loop: ast.AST | None,
        push: Callable[[tuple[ast.AST, int, ast.AST | None]], None],
        raw_bases: list[tuple[str, list[ast.expr]]],
    ) -> bool:
        """Record what the rules need from a non-call node; True when its children are done."""
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            inner = len(self.scopes)
            self.scopes.append(node)
            if isinstance(node, ast.Lambda):
                self.scope_names.append("<lambda>")
                push((node.body, inner, None))
                push((node.args, scope, loop))
                return True
            self.scope_names.append(node.name)
            for stmt in reversed(node.body):
                push((stmt, inner, None))
            # Decorators, defaults and annotations run in the enclosing scope.
            for expr in [node.returns, node.args, *reversed(node.decorator_list)]:
                if expr is not None:
                    push((expr, scope, loop))
            return True
        if isinstance(node, ast.Assign):
            self._record_assign(node, scope)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            self._record_target(node.target, node.value, scope)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                self.imported.add(alias.name)
                self.raw_imports.append((alias.name, (), 0))
                top = alias.name.partition(".")[0]
                self.aliases[alias.asname or top] = alias.name if alias.asname else top
            return True
        elif isinstance(node, ast.ImportFrom):
            self._record_import_from(node)
            return True
        elif isinstance(node, ast.ClassDef):
            raw_bases.append((node.name, node.bases))
        return False

    def _record_import_from(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        self.raw_imports.append((module, tuple(a.name for a in node.names), node.level))
        if node.level:
            # Relative imports only reach local modules; their names are not library names.
            return
        self.imported.add(module)
        for alias in node.names:
            if alias.name == "*":
                continue
            full = f"{module}.{alias.name}"
            self.imported.add(full)
            self.aliases[alias.asname or alias.name] = full

    def _record_assign(self, node: ast.Assign, scope: int) -> None:
        for target in node.targets:
            if isinstance(target, ast.Subscript):
                self._subscript_writes.append((target.value, target.slice, node.value, node.lineno))
            elif (
                isinstance(target, ast.Tuple)
                and isinstance(node.value, ast.Tuple)
                and len(target.elts) == len(node.value.elts)
            ):
                for sub, value in zip(target.elts, node.value.elts, strict=True):
                    self._record_target(sub, value, scope)
            else:
                self._record_target(target, node.value, scope)

    def _record_target(self, target: ast.expr, value: ast.expr, scope: int) -> None:
        if isinstance(target, ast.Name | ast.Attribute):
            name = _dotted(target, None)
            self.assigns.append(_Assign(name, value, scope, (target.lineno, target.col_offset)))

    @cached_property
    def calls_by_scope(self) -> dict[int, list[_Call]]:
        grouped: dict[int, list[_Call]] = {}
        for call in self.calls:
            grouped.setdefault(call.scope, []).append(call)
        return grouped

    @cached_property
    def env_writes(self) -> list[_EnvWrite]:
        """Writes to os.environ with a constant key, however the script spells them."""
        writes: list[_EnvWrite] = []
        for container, key, value, line in self._subscript_writes:
            name = _str_value(key)
            if name is not None and _dotted(container, self.aliases) == "os.environ":
                code = f"{_src(container)}[{name!r}] = {_src(value)}"
                writes.append(_EnvWrite(name, value, line, code))
        for call in self.calls:
            if call.tail not in ("setdefault", "putenv", "update"):
                continue
            args, keywords = call.node.args, call.node.keywords
            if call.name in ("os.environ.setdefault", "os.putenv") and len(args) >= 2:
                name = _str_value(args[0])
                if name is not None:
                    code = f"{_src(call.node.func)}({name!r}, {_src(args[1])})"
                    writes.append(_EnvWrite(name, args[1], call.line, code))
            elif call.name == "os.environ.update":
                if args and isinstance(args[0], ast.Dict):
                    for k, v in zip(args[0].keys, args[0].values, strict=True):
                        name = _str_value(k)
                        if name is not None:
                            code = f"{_src(call.node.func)}({{{name!r}: {_src(v)}}})"
                            writes.append(_EnvWrite(name, v, v.lineno, code))
                for kw in keywords:
                    if kw.arg is not None:
                        code = f"{_src(call.node.func)}({kw.arg}={_src(kw.value)})"
                        writes.append(_EnvWrite(kw.arg, kw.value, kw.value.lineno, code))
        return writes

    def latest_value(self, target: str, scope: int, pos: tuple[int, int]) -> ast.expr | None:
        """The value last assigned to ``target`` before ``pos``: same function, else module
        level, else any function (``self.optimizer`` set in ``__init__``, used elsewhere)."""
        assigns = self.assigns_by_target.get(target, [])
        same = [a for a in assigns if a.scope == scope and a.pos < pos]
        if same:
            return same[-1].value
        module_level = [a for a in assigns if a.scope == 0]
        found = module_level or assigns
        return found[-1].value if found else None


def _dotted(node: ast.AST, aliases: dict[str, str] | None) -> str:
    """``xm.mark_step`` -> ``torch_xla.core.xla_model.mark_step``; iterative (deep chains)."""
    parts: list[str] = []
    suffix = ""
    while True:
        if isinstance(node, ast.Attribute):
            parts.append(node.attr + suffix)
            suffix = ""
            node = node.value
        elif isinstance(node, ast.Call):
            suffix = "()"
            node = node.func
        elif isinstance(node, ast.Subscript):
            suffix = "[]"
            node = node.value
        elif isinstance(node, ast.Name):
            base = aliases.get(node.id, node.id) if aliases is not None else node.id
            parts.append(base + suffix)
            break
        else:
            parts.append("?")
            break
    return ".".join(reversed(parts))


def _str_value(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _is_const(node: ast.AST | None, value: object) -> bool:
    return (
        isinstance(node, ast.Constant)
        and type(node.value) is type(value)
        and node.value == value
    )


def _keyword(call: ast.Call, name: str, position: int | None = None) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    if position is not None and len(call.args) > position:
        # After a *args the positions are unknown.
        if any(isinstance(a, ast.Starred) for a in call.args[: position + 1]):
            return None
        return call.args[position]
    return None


def _has_kwargs_unpacking(call: ast.Call) -> bool:
    return any(kw.arg is None for kw in call.keywords) or any(
        isinstance(a, ast.Starred) for a in call.args
    )


# --------------------------------------------------------------------------------------------
# The program: entry point plus local modules.


class _Program:
    def __init__(self, modules: list[_Module]) -> None:
        self.entry = modules[0]
        self.modules = modules
        self._mark_cache: dict[tuple[int, int], tuple[tuple[int, int], set[int]]] = {}

    def calls(self) -> Iterator[tuple[_Module, _Call]]:
        for module in self.modules:
            for call in module.calls:
                yield module, call

    @cached_property
    def by_tail(self) -> dict[str, list[tuple[_Module, _Call]]]:
        index: dict[str, list[tuple[_Module, _Call]]] = {}
        for module, call in self.calls():
            index.setdefault(call.tail, []).append((module, call))
        return index

    def find(self, *tails: str) -> list[tuple[_Module, _Call]]:
        return [hit for tail in tails for hit in self.by_tail.get(tail, ())]

    def imports(self, prefix: str) -> bool:
        return any(
            name == prefix or name.startswith(prefix + ".")
            for module in self.modules
            for name in module.imported
        )

    @cached_property
    def trainer_based(self) -> bool:
        """Built on the Hugging Face Trainer, a subclass, or a similar framework trainer
        (Lightning): it handles sharding, the device loader, loss scaling and model parallelism
        itself."""
        local_trainers: set[str] = set()
        changed = True
        while changed:  # subclasses of subclasses
            changed = False
            for module in self.modules:
                for name, bases in module.class_bases:
                    if name not in local_trainers and any(
                        _is_framework_trainer(b) or b in local_trainers for b in bases
                    ):
                        local_trainers.add(name)
                        changed = True
        for _, call in self.calls():
            if _is_framework_trainer(call.name) or call.name in local_trainers:
                return True
            if call.tail == "train" and "trainer" in call.receiver.lower():
                return True
        return bool(local_trainers)

    @cached_property
    def accelerate_prepared(self) -> bool:
        """Hugging Face Accelerate wraps the optimizer and data loaders (reduction, sharding)."""
        return self.imports("accelerate") and bool(self.find("prepare"))

    @cached_property
    def optimizer_names(self) -> set[str]:
        return self._names_assigned_from(_is_optimizer_constructor)

    @cached_property
    def scaler_names(self) -> set[str]:
        return self._names_assigned_from(lambda name: name.endswith("GradScaler"))

    def _names_assigned_from(self, test: Callable[[str], bool]) -> set[str]:
        names: set[str] = set()
        for module in self.modules:
            for assign in module.assigns:
                if isinstance(assign.value, ast.Call) and test(
                    _dotted(assign.value.func, module.aliases)
                ):
                    names.add(assign.target.rpartition(".")[2])
        return names

    # What a call does, as far as the training-loop rules care.

    def is_scaler_call(self, call: _Call) -> bool:
        receiver = call.receiver
        return "scaler" in receiver.lower() or receiver in self.scaler_names

    def is_direct_step(self, call: _Call) -> bool:
        """``optimizer.step()`` or ``scaler.step(optimizer)``: an update with no all-reduce."""
        if call.tail != "step":
            return False
        receiver = call.receiver
        low = receiver.lower()
        if self.is_scaler_call(call):
            return True
        if "sched" in low:
            return False
        return "optim" in low or low == "opt" or receiver in self.optimizer_names

    @staticmethod
    def is_xla_step(call: _Call) -> bool:
        """``xm.optimizer_step(optimizer)``: all-reduce, then step."""
        return call.tail == "optimizer_step" and (
            call.name.startswith("torch_xla") or call.name == call.tail
        )

    def is_step(self, call: _Call) -> bool:
        return self.is_direct_step(call) or self.is_xla_step(call)

    def is_mark(self, call: _Call) -> bool:
        if call.name in _MARK_STEP_NAMES or call.tail == "mark_step":
            return True
        if self.is_xla_step(call):
            return _is_const(_keyword(call.node, "barrier", 1), True)
        return call.tail in self.marking_functions and not self.is_direct_step(call)

    def _marks_in_scope(self, module: _Module, scope: int) -> tuple[tuple[int, int], set[int]]:
        """Position of the last mark in a function, and the loops (by id) that hold a mark."""
        key = (id(module), scope)
        cached = self._mark_cache.get(key)
        if cached is None:
            last, loops = (0, -1), set()
            for call in module.calls_by_scope.get(scope, ()):
                if self.is_mark(call):
                    last = max(last, call.pos)
                    if call.loop is not None:
                        loops.add(id(call.loop))
            cached = self._mark_cache[key] = (last, loops)
        return cached

    @cached_property
    def marking_functions(self) -> set[str]:
        """Names of local functions that mark the step, directly or through other functions."""
        callers: dict[str, set[str]] = {}
        marked: set[str] = set()
        for module, call in self.calls():
            if call.scope == 0 or module.scope_names[call.scope] == "<lambda>":
                continue
            name = module.scope_names[call.scope]
            if call.name in _MARK_STEP_NAMES or call.tail == "mark_step":
                marked.add(name)
            callers.setdefault(call.tail, set()).add(name)
        work = list(marked)
        while work:
            for caller in callers.get(work.pop(), ()):
                if caller not in marked:
                    marked.add(caller)
                    work.append(caller)
        return marked

    def is_marked(self, module: _Module, step: _Call) -> bool:
        """A mark_step follows ``step``: later in its function, anywhere in the loop around it
        (the next iteration), or after a call to its function in some caller."""
        seen: set[tuple[int, int]] = set()
        todo = [(module, step, 0)]
        while todo:
            mod, call, depth = todo.pop()
            last, loops = self._marks_in_scope(mod, call.scope)
            if last > call.pos or (call.loop is not None and id(call.loop) in loops):
                return True
            if call.scope == 0 or depth >= _MAX_CALLER_DEPTH:
                continue
            name = mod.scope_names[call.scope]
            if name == "<lambda>" or (id(mod), call.scope) in seen:
                continue
            seen.add((id(mod), call.scope))
            for caller_mod, site in self.by_tail.get(name, ()):
                if site.scope != call.scope or caller_mod is not mod:
                    todo.append((caller_mod, site, depth + 1))
        return False


def _is_framework_trainer(name: str) -> bool:
    return name.partition(".")[0] in _TRAINER_PACKAGES and name.endswith("Trainer")


def _is_optimizer_constructor(name: str) -> bool:
    if name.startswith("torch.optim.lr_scheduler"):
        return False
    tail = name.rpartition(".")[2]
    return name.startswith("torch.optim.") or tail.endswith("Optimizer") or tail in _OPTIMIZER_TAILS


def _is_smp(call: _Call, tail: str) -> bool:
    return _is_smp_name(call.name, tail)


def _is_smp_name(name: str, tail: str) -> bool:
    # A bare name counts too (star import, or a helper that re-exports it).
    return name == tail or (name.startswith(_SMP) and name.rpartition(".")[2] == tail)


def _is_torch_clip(call: _Call, tails: frozenset[str]) -> bool:
    # Only torch's own functions: accelerator.clip_grad_norm_ unscales by itself, and
    # optimizer.clip_master_grads is the fix, not the problem.
    return call.tail in tails and (call.name.startswith("torch.") or call.name == call.tail)


# --------------------------------------------------------------------------------------------
# Rules. Each is a generator over the program; the gate on the job configuration comes first.

_Rule = Callable[[_Program, ScriptContext], Iterable[Finding]]


def _gpus(context: ScriptContext) -> str:
    n = context.gpus_per_instance
    return f" ({n} per instance)" if n else ""


def _rule_mp_fn(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    """xla_spawn imports the entry point and calls ``module._mp_fn(index)`` in each process."""
    if not (context.training_compiler and context.xla_distributed):
        return
    entry = program.entry
    binding = _module_level_bindings(entry.tree).get("_mp_fn")
    if binding is None:
        yield Finding(
            entry.file, 0, "error", "xla-missing-mp-fn",
            "no module-level `_mp_fn(index)`. With the pytorchxla distribution, SageMaker starts "
            "this script through torch_xla's xla_spawn, which launches one process per "
            f"GPU{_gpus(context)} and calls `_mp_fn(index)` from this module in each. Without it "
            "the launch fails, or, if the script trains at import time, every worker trains its "
            "own model independently and their updates are never combined.",
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
            f"worker's model with its own gradients only; the {_workers(context)} drift apart "
            "and the job trains several unrelated models.",
            "replace it with `xm.optimizer_step(optimizer)` (all-reduce, then step), or call "
            "`xm.reduce_gradients(optimizer)` before it (with GradScaler: after "
            "`scaler.scale(loss).backward()`, before `scaler.unscale_`).",
        )


def _workers(context: ScriptContext) -> str:
    n = context.gpus_per_instance
    return f"workers ({n} per instance)" if n else "workers"


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
    module, call = min(loaders, key=lambda hit: (hit[0] is not program.entry, hit[1].pos))
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
    module, call = min(loaders, key=lambda hit: (hit[0] is not program.entry, hit[1].pos))
    yield Finding(
        module.file, call.line, "warning", "xla-no-device-loader",
        f"`{_short(call)}` at line {call.line} is iterated without torch_xla's "
        "`MpDeviceLoader`: batches are not preloaded onto the XLA device and the step is not "
        "marked per batch, so each worker waits on host-to-device copies.",
        "wrap it: `loader = torch_xla.distributed.parallel_loader.MpDeviceLoader(loader, "
        "xm.xla_device())` and iterate over that.",
    )


def _rule_environ_values(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    """``os.environ[...] = 4`` raises TypeError (str expected); GPU_NUM_DEVICES must match.

    Non-strings recognised: non-str constants (4, 4.0, True, None, b"4"), and calls that return
    an int (``int(...)``, ``len(...)``, ``*.device_count()``). Other expressions are not read.
    """
    gpus = context.gpus_per_instance
    for module in program.modules:
        for write in module.env_writes:
            kind, text = _env_value(write.value)
            gpu_key = write.key == "GPU_NUM_DEVICES"
            if kind == "not-str":
                if gpu_key:
                    hint = f'use the string "{gpus}"' if gpus else "use a string"
                    if context.xla_distributed:
                        hint += ", or drop the line: with pytorchxla the container sets it itself"
                else:
                    hint = "use a string (wrap the value in str())"
                yield Finding(
                    module.file, write.line, "error",
                    "gpu-num-devices-not-str" if gpu_key else "environ-not-str",
                    f"`{write.code}` sets {write.key} to {text}: environment values must be "
                    "strings, so this line raises TypeError (str expected) and the job fails "
                    "before training starts.",
                    hint + ".",
                )
            elif (
                kind == "str"
                and gpu_key
                and context.training_compiler
                and gpus is not None
                and _as_int(text) != gpus
            ):
                what = "" if _as_int(text) is not None else " (not a whole number)"
                yield Finding(
                    module.file, write.line, "error", "gpu-num-devices-mismatch",
                    f"`{write.code}` sets GPU_NUM_DEVICES to \"{text}\"{what} but each instance "
                    f"has {gpus} GPUs: torch_xla needs the number of GPUs it can use, and fails "
                    "(\"Missing XLA configuration\") or leaves GPUs idle otherwise.",
                    f'remove the line (the job sets GPU_NUM_DEVICES to "{gpus}") or set it to '
                    f'"{gpus}".',
                )


def _env_value(node: ast.expr) -> tuple[Literal["str", "not-str", "unknown"], str]:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, str):
            return "str", node.value
        return "not-str", f"the {type(node.value).__name__} {_clip(repr(node.value))}"
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.operand, ast.Constant)
        and isinstance(node.operand.value, int | float | complex)
    ):
        return "not-str", f"the number {_src(node)}"
    if isinstance(node, ast.Call):
        name = _dotted(node.func, None)
        tail = name.rpartition(".")[2]
        if name == "str" and len(node.args) == 1 and isinstance(node.args[0], ast.Constant):
            return "str", str(node.args[0].value)
        if name in ("int", "len") or tail == "device_count":
            return "not-str", f"an int (`{name}(...)`)"
    return "unknown", ""


def _as_int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def _rule_dynamic_padding(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    """Training Compiler recompiles for every new tensor shape; pad to a fixed length.

    Reported: ``padding=True`` / ``"longest"`` / ``PaddingStrategy.LONGEST`` in any call, and
    Hugging Face collators (and ``tokenizer.pad``) that pad to the longest sequence by default,
    unless the script pads to ``"max_length"`` somewhere (then the longest sequence is the max
    length). A tokenizer call without ``padding`` is not reported: texts grouped into fixed
    blocks (``run_mlm.py``) need none.
    """
    if not context.training_compiler:
        return
    pads_to_max = any(
        _padding_kind(kw.value) == "max_length"
        for _, call in program.calls()
        for kw in call.node.keywords
        if kw.arg == "padding"
    )
    for module, call in program.calls():
        default_index = _LONGEST_BY_DEFAULT.get(call.tail)
        if call.tail == "pad" and "tokenizer" in call.receiver.lower():
            default_index = 1
        value = _keyword(call.node, "padding", default_index)
        if value is not None:
            kind = _padding_kind(value)
            if kind != "longest":
                continue
            what, line = f"`padding={_src(value)}`", value.lineno
        elif default_index is not None and not pads_to_max and not _has_kwargs_unpacking(call.node):
            what, line = f"`{_short(call)}` (its default pads to the longest sequence)", call.line
        else:
            continue
        yield Finding(
            module.file, line, "warning", "dynamic-padding",
            f"{what} at line {line} pads each batch to its longest sequence, so tensor "
            "shapes change from batch to batch; Training Compiler recompiles the graph for every "
            "new shape, which can make training slower than without it.",
            'pad to a fixed length: `padding="max_length", max_length=<N>` (with '
            "`truncation=True`), in the tokenizer call or the collator.",
        )


def _padding_kind(node: ast.AST) -> str | None:
    if _is_const(node, True) or _is_const(node, "longest"):
        return "longest"
    if isinstance(node, ast.Attribute) and node.attr in ("LONGEST", "MAX_LENGTH"):
        return node.attr.lower()
    if _is_const(node, "max_length"):
        return "max_length"
    return None


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


def _custom_smp(program: _Program) -> bool:
    # The Hugging Face Trainer runs smdistributed itself (model_creation, set_device, loss
    # scaling); the checks below are for scripts that drive smp by hand.
    return program.imports(_SMP) and not program.trainer_based


def _rule_smp_model_creation(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    """fp16 needs the model built inside ``smp.model_creation(dtype=torch.float16)``.

    Accepted: any dtype expression that mentions float16/half (``torch.float16 if args.fp16
    else ...``), a variable assigned such an expression, or an expression it cannot read.
    """
    if not context.model_parallel_fp16 or not _custom_smp(program):
        return
    creations = [
        (m, c) for m, c in program.find("model_creation") if _is_smp(c, "model_creation")
    ]
    kinds = [_dtype_kind(_keyword(c.node, "dtype"), m) for m, c in creations]
    if any(k != "other" for k in kinds):
        return
    wrappers = [
        (m, c) for m, c in program.find("DistributedModel") if _is_smp(c, "DistributedModel")
    ]
    if creations:
        module, call = creations[0]
        line = call.line
        what = f"`{_short(call)}` at line {line} has no float16 dtype"
    else:
        # Point at smp.DistributedModel(...) when there is one: the model is built near it.
        module, line = (wrappers[0][0], wrappers[0][1].line) if wrappers else (program.entry, 0)
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
    if not context.model_parallel_fp16 or not _custom_smp(program):
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
    if not context.model_parallel_fp16 or not _custom_smp(program):
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
    if not context.model_parallel_fp16 or not _custom_smp(program):
        return
    for module, call in program.find("DistributedOptimizer"):
        if not _is_smp(call, "DistributedOptimizer") or _has_kwargs_unpacking(call.node):
            continue
        dynamic = _keyword(call.node, "dynamic_loss_scale")
        if dynamic is not None and not _is_const(dynamic, False):
            continue
        yield Finding(
            module.file, call.line, "warning", "smp-fp16-static-loss-scale",
            f"`{_short(call)}` at line {call.line} uses a static loss scale "
            "(static_loss_scale defaults to 1.0, dynamic_loss_scale to False): with fp16, small "
            "gradients underflow to zero and the loss stalls, or large ones overflow to inf/NaN.",
            "pass `dynamic_loss_scale=True` (and `static_loss_scale=None`), optionally with "
            "`dynamic_loss_args={...}`, as in the AWS fp16 example.",
        )


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
        inits = [(m, c) for m, c in program.find("init") if _is_smp(c, "init")]
        module, line = (inits[0][0], inits[0][1].line) if inits else (program.entry, 0)
        what = "the script never calls `torch.cuda.set_device(smp.local_rank())`"
    yield Finding(
        module.file, line, "warning", "smp-set-device",
        f"{what}: the library runs one process per GPU, and a process that does not pin its "
        "own GPU allocates on GPU 0, so processes collide there (out of memory, or slow).",
        "right after `smp.init()`, call `torch.cuda.set_device(smp.local_rank())` and move "
        'inputs to `torch.device("cuda")`.',
    )


def _rule_smp_not_used(program: _Program, context: ScriptContext) -> Iterator[Finding]:
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


_RULES: tuple[_Rule, ...] = (
    _rule_mp_fn,
    _rule_mark_step,
    _rule_gradients_reduced,
    _rule_data_sharded,
    _rule_device_loader,
    _rule_environ_values,
    _rule_dynamic_padding,
    _rule_amp_clip_before_unscale,
    _rule_amp_step_before_clip,
    _rule_amp_reduce_after_clip,
    _rule_smp_model_creation,
    _rule_smp_scheduler,
    _rule_smp_clip,
    _rule_smp_loss_scale,
    _rule_smp_set_device,
    _rule_smp_not_used,
)


def _run_rules(program: _Program, context: ScriptContext) -> list[Finding]:
    findings: list[Finding] = []
    for rule in _RULES:
        try:
            findings.extend(rule(program, context))
        except Exception as exc:  # a bug in one heuristic must not block the job
            findings.append(Finding(
                program.entry.file, 0, "warning", "checker-failed",
                f"the script check {rule.__name__.removeprefix('_rule_')} failed on this file "
                f"({type(exc).__name__}: {exc}); the other checks ran.",
                "report this to the safe_estimators maintainers with the script.",
            ))
    return findings


def _short(call: _Call) -> str:
    """The call as the user wrote it, arguments elided: ``xm.optimizer_step(...)``."""
    text = _src(call.node.func)
    return f"{text}(...)" if call.node.args or call.node.keywords else f"{text}()"


def _src(node: ast.AST) -> str:
    try:
        return _clip(ast.unparse(node))
    except (RecursionError, ValueError):  # ast.unparse recurses; absurd nesting
        return "<expression>"


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --------------------------------------------------------------------------------------------
# Reading and parsing files.


def _parse(source: str | bytes, file: str, path: Path | None) -> _Module | Finding:
    try:
        with warnings.catch_warnings():
            # Invalid escape sequences etc. are the user's business, and under `-W error` a
            # SyntaxWarning would turn into a SyntaxError here.
            warnings.simplefilter("ignore")
            tree = ast.parse(source, filename=file)
    except (SyntaxError, ValueError) as exc:  # ValueError: null bytes, undecodable text
        line = getattr(exc, "lineno", None) or 0
        detail = getattr(exc, "msg", None) or str(exc)
        text = (getattr(exc, "text", None) or "").strip()
        shown = f": `{text[:80]}`" if text else ""
        return Finding(
            file, line, "error", "syntax-error",
            f"Python cannot parse this file ({detail}){shown}; the job would fail when it "
            "starts the script.",
            "fix the syntax (run `python -m py_compile <file>` locally).",
        )
    except (RecursionError, MemoryError):
        return Finding(
            file, 0, "warning", "script-too-complex",
            "the file is nested too deeply to analyse; it was not checked.",
            "split deeply nested expressions, or check the file by hand.",
        )
    try:
        return _Module(file, tree, path)
    except (RecursionError, MemoryError):
        return Finding(
            file, 0, "warning", "script-too-complex",
            "the file is nested too deeply to analyse; it was not checked.",
            "split deeply nested expressions, or check the file by hand.",
        )


def _load(path: Path, shown: str, *, required: bool) -> _Module | Finding:
    try:
        if not path.is_file():
            raise FileNotFoundError("not a regular file" if path.exists() else "no such file")
        size = path.stat().st_size
        if size > _MAX_BYTES:
            return _too_large(shown, size)
        data = path.read_bytes()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return Finding(
            shown, 0, "error" if required else "warning", "unreadable",
            f"cannot read {'the entry point' if required else 'this local module'} ({reason}); "
            "it was not checked.",
            "check the path (it is relative to source_dir when one is given) and permissions.",
        )
    # Bytes, not text: ast.parse then honours a PEP 263 coding line and a BOM like Python does.
    return _parse(data, shown, path)


def _too_large(shown: str, size: int) -> Finding:
    return Finding(
        shown, 0, "warning", "script-too-large",
        f"the file is {size:,} bytes, over the {_MAX_BYTES:,} the checks read; it was not "
        "checked.",
        "check it by hand, or split generated code out of the entry point.",
    )


def _entry_not_python(shown: str, context: ScriptContext) -> Finding:
    return Finding(
        shown, 0, "error", "xla-entry-not-python",
        "with the pytorchxla distribution the container runs `python -m "
        "torch_xla.distributed.xla_spawn --num_gpus "
        f"{context.gpus_per_instance or 'N'} <entry point>`, which imports the entry point as a "
        "Python module; this entry point is not a .py file.",
        "make the entry point a Python script that defines `_mp_fn(index)`.",
    )


def _search_roots(path: Path, base: Path | None) -> list[Path]:
    # sys.path[0] is the script's directory; SageMaker also puts source_dir on the path.
    roots = [_real(path).parent]
    if base is not None and _real(base) not in roots:
        roots.append(_real(base))
    return roots


def _local_imports(module: _Module, roots: list[Path]) -> Iterator[Path]:
    """Files of local modules (and the packages around them) that ``module`` imports."""
    if module.path is None:
        return
    here = _real(module.path).parent
    for name, names, level in module.raw_imports:
        parts = [p for p in name.split(".") if p]
        if level:
            base = here
            for _ in range(level - 1):
                base = base.parent
            if not any(base == r or r in base.parents for r in roots):
                continue
            bases = [base]
        else:
            if not parts:
                continue
            # Like Python: the first root that has the top-level package or module.
            bases = [
                r for r in roots
                if (r / f"{parts[0]}.py").is_file() or (r / parts[0] / "__init__.py").is_file()
            ][:1]
        for base in bases:
            directory = base
            for part in parts:
                yield from _module_files(directory, part)
                directory = directory / part
            for sub in names:
                if sub != "*":
                    yield from _module_files(directory, sub)


def _module_files(directory: Path, name: str) -> Iterator[Path]:
    for candidate in (directory / f"{name}.py", directory / name / "__init__.py"):
        if candidate.is_file():
            yield candidate


def _real(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # symlink loops
        return path.absolute()


def _display_name(path: Path, base: Path | None, given: Path) -> str:
    if base is not None:
        try:
            return _real(path).relative_to(_real(base)).as_posix()
        except ValueError:
            pass
    return given.as_posix()


def _helper_name(real: Path, name_roots: list[tuple[Path, Path]]) -> str:
    for root, shown_root in name_roots:
        try:
            rel = real.relative_to(root)
        except ValueError:
            continue
        return rel.as_posix() if shown_root == Path(".") else (shown_root / rel).as_posix()
    return real.as_posix()


def _order(finding: Finding) -> tuple[str, int, str]:
    return (finding.file, finding.line, finding.rule)


@contextmanager
def _gc_paused() -> Iterator[None]:
    # ast.parse allocates hundreds of thousands of acyclic nodes; the cyclic collector scanning
    # them repeatedly costs about a third of the parse time and frees nothing. Re-enable it only
    # once the trees are gone: the first collection after re-enabling scans every object
    # allocated meanwhile, so switching it back on while a tree is alive just defers the cost.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
