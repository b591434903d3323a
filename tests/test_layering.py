"""The package's imports follow its data flow: no module imports, however indirectly, one that
imports it back. Every import counts: at module level, under ``TYPE_CHECKING`` and inside
functions, and importing a submodule counts as importing the packages above it (Python runs
their ``__init__`` first)."""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import safe_estimators

PACKAGE = Path(safe_estimators.__file__).parent
ROOT = PACKAGE.name


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imported(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that ``module`` imports, itself and its own packages left out."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    found: set[str] = set()
    for name in names:
        parts = name.split(".")
        for end in range(1, len(parts) + 1):  # the module and every package above it
            candidate = ".".join(parts[:end])
            if candidate in modules:
                found.add(candidate)
    return {m for m in found if m != module and not module.startswith(m + ".")}


def test_the_package_has_no_import_circle() -> None:
    modules = _modules()
    graph = {module: _imported(module, path, modules) for module, path in modules.items()}
    try:
        order = list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as exc:
        # graphlib lists each module before the one that imports it
        circle = " imports ".join(reversed(exc.args[1]))
        raise AssertionError(f"import circle: {circle}") from None
    assert len(order) == len(modules)


def test_the_typed_spec_comes_before_the_rules() -> None:
    """The stages in order: input -> spec -> Context -> rules -> resolve -> build."""
    modules = _modules()
    graph = {module: _imported(module, path, modules) for module, path in modules.items()}

    def reaches(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for dep in graph[todo.pop()] - seen:
                seen.add(dep)
                todo.append(dep)
        return seen

    spec = reaches(f"{ROOT}._spec")
    assert not {m for m in spec if m.startswith(f"{ROOT}._rules")}
    assert f"{ROOT}._context" not in spec
    context = reaches(f"{ROOT}._context")
    assert not {m for m in context if m.startswith(f"{ROOT}._rules")}
    assert f"{ROOT}._resolve" not in reaches(f"{ROOT}._rules")
    assert not {m for m in reaches(f"{ROOT}._resolve") if m.startswith(f"{ROOT}._build")}
