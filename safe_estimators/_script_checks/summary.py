"""One training script, parsed and summarised for the rules.

``_parse`` turns a file into a ``_Module`` summary in one pass: import aliases, every call with its
dotted name resolved through the imports (``xm.mark_step`` ->
``torch_xla.core.xla_model.mark_step``, see ``_dotted``), its enclosing function and position,
simple assignments, ``os.environ`` writes. Beside it, the small readers the rules use on single
nodes (a keyword argument, a constant, the call as the user wrote it).
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import NamedTuple

from safe_estimators._script_checks.findings import Finding


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

    def __init__(
        self, file: str, tree: ast.Module, path: Path | None, source: str | bytes = ""
    ) -> None:
        self.file = file
        self.tree = tree
        self.path = path
        self._source = source
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

    @property
    def size(self) -> int:
        """The length of the source (bytes as read, or characters)."""
        return len(self._source)

    @cached_property
    def text(self) -> str:
        """The source text, for the rules that only ask whether a name is mentioned at all."""
        source = self._source
        return source.decode("utf-8", "replace") if isinstance(source, bytes) else source

    @cached_property
    def assigns_by_value(self) -> dict[int, list[_Assign]]:
        """The assignments by the id of the node assigned (``loader = DataLoader(...)``)."""
        grouped: dict[int, list[_Assign]] = {}
        for assign in self.assigns:
            grouped.setdefault(id(assign.value), []).append(assign)
        return grouped

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


def _parse(source: str | bytes, file: str, path: Path | None) -> _Module | Finding:
    """Python must parse the entry point and the local modules it imports, in their declared
    encoding: a syntax error fails the job when SageMaker starts the script."""
    undecodable = _undecodable(source, file) if isinstance(source, bytes) else None
    if undecodable is not None:
        return undecodable
    fields, line = _longest_fstring(source)
    if fields > MAX_FSTRING_FIELDS:
        return Finding(
            file, line, "warning", "script-too-complex",
            f"holds an f-string of about {fields:,} fields; the checks parse files whose "
            f"f-strings have at most {MAX_FSTRING_FIELDS:,} fields (Python 3.11 parses one in "
            "time that grows with the square of its fields), so this file was not checked.",
            "build the text another way (str.join over a list), or check the file by hand.",
        )  # fmt: skip
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
        return _too_complex(file)
    try:
        return _Module(file, tree, path, source)
    except (RecursionError, MemoryError):
        return _too_complex(file)


# Python 3.11 parses each field of an f-string again from the rest of the literal: time grows
# with the square of one f-string's fields (measured, ast.parse on 3.11.7: 10,000 fields 0.15 s,
# 20,000 0.56 s, 40,000 2.9 s; issue 32's entry point of 166,000 took 17.5 s, and was parsed
# twice). Real scripts write f-strings of a few fields; past this many the file is not parsed.
# Python 3.12 reads f-strings in its tokenizer (PEP 701), in linear time.
MAX_FSTRING_FIELDS = 5_000


def _longest_fstring(source: str | bytes) -> tuple[int, int]:
    """(fields, line) of the f-string with the most fields in ``source`` (an upper bound: the
    "{" in it), or (0, 0) when no f-string can have more than MAX_FSTRING_FIELDS. A file with
    fewer "{" in all is not read further; one with more is tokenized (about 0.1 s for 250 kB of
    f-strings, 1.4 s for 500 kB of nested dict literals, on 3.11)."""
    import sys

    data = source.encode("utf-8", "surrogatepass") if isinstance(source, str) else source
    if data.count(b"{") <= MAX_FSTRING_FIELDS or sys.version_info >= (3, 12):
        return 0, 0
    import io
    import tokenize

    most, line = 0, 0
    try:
        for token in tokenize.tokenize(io.BytesIO(data).readline):
            text = token.string
            if token.type != tokenize.STRING or text.count("{") <= most:
                continue
            prefix = text[: len(text) - len(text.lstrip("rRbBuUfF"))]
            if "f" in prefix or "F" in prefix:
                most, line = text.count("{"), token.start[0]
    except (tokenize.TokenError, SyntaxError, ValueError):
        pass  # ast.parse reports the error (after the f-strings read up to it)
    return most, line


def _undecodable(source: bytes, file: str) -> Finding | None:
    """Python refuses to run a file that is not text in its declared encoding (UTF-8 unless a
    PEP 263 line says otherwise), even where the bad byte is in a comment; ``ast.parse`` of the
    bytes does not check, so it is checked here as Python's own reader does."""
    import io
    import tokenize

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
        source.decode(encoding)
    except UnicodeDecodeError as exc:
        line = source.count(b"\n", 0, exc.start) + 1
        detail = f"byte {source[exc.start]:#04x} is not {exc.encoding}"
    except (SyntaxError, LookupError) as exc:  # an unknown or contradictory coding line
        line, detail = getattr(exc, "lineno", None) or 1, str(exc)[:120]
    else:
        return None
    return Finding(
        file, line, "error", "syntax-error",
        f"Python cannot read this file ({detail}, and no encoding declaration says otherwise); "
        "the job would fail when it starts the script.",
        "save the file as UTF-8, or declare its encoding (`# -*- coding: latin-1 -*-`).",
    )  # fmt: skip


def _too_complex(file: str) -> Finding:
    """A file nested too deeply for the analysis is not checked (a warning)."""
    return Finding(
        file, 0, "warning", "script-too-complex",
        "the file is nested too deeply to analyse; it was not checked.",
        "split deeply nested expressions, or check the file by hand.",
    )
