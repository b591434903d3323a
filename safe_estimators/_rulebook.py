"""Every rule's id and documentation, read from where the rules are defined.

A spec rule is a function: its id is made from its name (``_problems.rule_id``) and its
docstring is its documentation. The rules are found in the package's rule tables (every
module-level tuple of functions whose name ends in ``RULES``) and among the functions marked
``problem_source`` (reading the file, the spec's options). A script check's findings carry their
ids in the ``Finding(...)`` that makes them; the function that makes one documents it. So a new
rule is documented where it is written, and no list here can drift from the code.

Used by ``safe-estimators rule`` and by the SARIF log's ``tool.driver.rules``; ``docs/rules.md``
is this book written out (``python -m safe_estimators._rulebook > docs/rules.md``).
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import pkgutil
import re
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

# The id of a problem no rule claims (a bug of ours: the test of the book says there is none).
UNCLASSIFIED = "unclassified"
# Where each rule is documented, in this repository (headings are the rule ids).
DOCUMENT = "docs/rules.md"
# Not walked: they import the SageMaker SDK (seconds) and hold no rule (_build is the only
# package that imports it; _factories imports _build). A problem_source marked in one would
# be missing from the book, which its test sees.
_SKIPPED = ("safe_estimators._targets", "safe_estimators._commands.factories")
_URL = re.compile(r"https?://[^\s)>\]`'\"]+")


@attrs.frozen
class RuleDoc:
    """One rule: its id, what it checks and why (its docstring), where it is defined, and the
    sources its documentation cites."""

    id: str
    kind: str  # "spec" (validate, plan) or "script" (lint, and validate's entry_point)
    text: str
    defined: str  # module:function
    sources: tuple[str, ...] = ()

    @property
    def summary(self) -> str:
        """The first sentence of the documentation."""
        first = self.text.split("\n\n", 1)[0].replace("\n", " ")
        end = re.search(r"(?<=[a-z0-9)`'\"])\.(\s|$)", first)
        return first[: end.start() + 1] if end else first


def _doc_of(function: Callable[..., Any]) -> str:
    return textwrap.dedent(inspect.getdoc(function) or "").strip()


def _sources(module: str, *texts: str) -> tuple[str, ...]:
    """What a rule's documentation cites: the addresses in it and in its module's docstring,
    and the fact tables its module reads (``_facts``, a strategy's ``facts``), each with the
    first line of its own docstring (which says where its facts come from)."""
    found: list[str] = []
    for text in texts:
        found += [u.rstrip(".,;") for u in _URL.findall(text) if u.rstrip(".,;") not in found]
    for facts in _facts_read_by(module):
        first = (inspect.getdoc(importlib.import_module(facts)) or "").split("\n", 1)[0]
        found.append(f"{facts}: {first}" if first else facts)
    return tuple(found)


@functools.cache
def _facts_read_by(module: str) -> tuple[str, ...]:
    source = inspect.getsource(importlib.import_module(module))
    names = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            last = node.module.rsplit(".", 1)[-1]
            ours = node.module.startswith("safe_estimators.") and last != "_facts"
            if ours and ("._facts." in node.module or "facts" in last):
                names.append(node.module)
            elif node.module == "safe_estimators._facts":
                names += [f"safe_estimators._facts.{alias.name}" for alias in node.names]
    return tuple(dict.fromkeys(names))


def _modules() -> list[Any]:
    import safe_estimators

    modules = []
    for info in pkgutil.walk_packages(safe_estimators.__path__, "safe_estimators."):
        if info.name.startswith(_SKIPPED) or info.name == __name__:
            continue
        modules.append(importlib.import_module(info.name))
    return modules


def _spec_rule(function: Callable[..., Any]) -> RuleDoc:
    """A spec rule's entry, from its function."""
    from safe_estimators._problems import rule_id

    target = inspect.unwrap(function)
    module_doc = inspect.getdoc(inspect.getmodule(target)) or ""
    text = getattr(function, "__rule_doc__", "") or _doc_of(target)
    return RuleDoc(
        rule_id(function), "spec", text, f"{target.__module__}:{target.__qualname__}",
        _sources(target.__module__, text, module_doc),
    )  # fmt: skip


def doc_of(rule: str) -> RuleDoc:
    """One rule's entry: from the function that found it in this process where there is one
    (a report names the rules that ran), else from the whole book (UNCLASSIFIED's entry for an
    id no rule defines)."""
    from safe_estimators._problems import FOUND_BY, SOURCES

    function = FOUND_BY.get(rule) or SOURCES.get(rule)
    if function is not None:
        return _spec_rule(function)
    scripts = _script_rules()
    if rule in scripts:
        return scripts[rule]
    book = rulebook()
    return book.get(rule, book[UNCLASSIFIED])


def _spec_rules(modules: list[Any]) -> dict[str, RuleDoc]:
    from safe_estimators._problems import SOURCES

    functions: list[Callable[..., Any]] = []
    for module in modules:
        for name, value in vars(module).items():
            table = name.endswith("RULES") and isinstance(value, tuple) and bool(value)
            if table and all(inspect.isfunction(item) for item in value):
                # The script checks' table: their ids are in their findings (below).
                functions += [f for f in value if not _is_script_check(f)]
    functions += SOURCES.values()
    book: dict[str, RuleDoc] = {}
    for function in functions:
        entry = _spec_rule(function)
        book.setdefault(entry.id, entry)
    return book


def _is_script_check(function: Callable[..., Any]) -> bool:
    return inspect.unwrap(function).__module__.startswith("safe_estimators._script_checks")


@functools.cache
def _script_rules() -> dict[str, RuleDoc]:
    """The ids in every ``Finding(...)`` of the script checks, each documented by the function
    that makes it (its docstring)."""
    import safe_estimators._script_checks as package

    book: dict[str, RuleDoc] = {}
    folder = Path(package.__file__).parent
    for file in sorted(folder.rglob("*.py")):
        parts = file.relative_to(folder.parent).with_suffix("").parts
        module = ".".join(("safe_estimators", *parts)).removesuffix(".__init__")
        tree = ast.parse(file.read_text(encoding="utf-8"))
        module_doc = ast.get_docstring(tree) or ""
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            text = textwrap.dedent(ast.get_docstring(function) or "").strip()
            for rule in _finding_ids(function):
                book.setdefault(
                    rule,
                    RuleDoc(rule, "script", text, f"{module}:{function.name}",
                            _sources(module, text, module_doc)),
                )  # fmt: skip
    return book


def _finding_ids(function: ast.AST) -> list[str]:
    """The rule ids written in the ``Finding(...)`` calls of a function (its fourth argument,
    or ``rule=``)."""
    ids = []
    for call in ast.walk(function):
        if not (isinstance(call, ast.Call) and getattr(call.func, "id", None) == "Finding"):
            continue
        argument = call.args[3] if len(call.args) > 3 else None
        for keyword in call.keywords:
            if keyword.arg == "rule":
                argument = keyword.value
        if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
            ids.append(argument.value)
    return ids


_UNCLASSIFIED_DOC = RuleDoc(
    UNCLASSIFIED,
    "spec",
    "A problem that no rule id claims.\n\nEvery problem safe-estimators reports should carry the "
    "id of the rule that found it; one without is a bug of safe-estimators. Please report it "
    "with the spec.",
    "safe_estimators._rulebook:UNCLASSIFIED",
)


@functools.cache
def rulebook() -> dict[str, RuleDoc]:
    """Every rule, by id, sorted by id (imports every module of the package but ``_build``)."""
    book = {**_script_rules(), **_spec_rules(_modules()), UNCLASSIFIED: _UNCLASSIFIED_DOC}
    return dict(sorted(book.items()))


def rule_text(rule: RuleDoc) -> str:
    """A rule's documentation as ``safe-estimators rule NAME`` prints it."""
    checks = {
        "spec": "spec files (validate, lint, plan, submit, the factories)",
        "script": "training scripts (lint; validate and plan at entry_point)",
    }
    lines = [f"# {rule.id}", "", rule.text or "(no documentation)", ""]
    lines.append(f"Checks: {checks[rule.kind]}. Defined in {rule.defined}.")
    if rule.sources:
        lines += ["", "Sources:", *(f"- {source}" for source in rule.sources)]
    return "\n".join(lines) + "\n"


def markdown() -> str:
    """``docs/rules.md``: every rule under a heading that is its id (the SARIF helpUri anchor)."""
    book = rulebook()
    out = [
        "# Rules",
        "",
        "Every check safe-estimators runs, by the id that `lint`, `--json` (`rule`), `--format "
        "github` (`title`), SARIF (`ruleId`) and code climate (`check_name`) report. "
        "`safe-estimators rule NAME` prints one; `safe-estimators rule --all` lists them.",
        "This file is generated from the rules' docstrings: "
        "`python -m safe_estimators._rulebook > docs/rules.md`.",
        "",
    ]
    for rule in book.values():
        out += [f"## {rule.id}", "", rule.text or "(no documentation)", ""]
        out.append(f"Checks {rule.kind} files; defined in `{rule.defined}`.")
        if rule.sources:
            out += ["", "Sources:", "", *(f"- <{source}>" for source in rule.sources)]
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":  # pragma: no cover - writes docs/rules.md
    print(markdown(), end="")
