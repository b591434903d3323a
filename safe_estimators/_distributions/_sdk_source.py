"""Constants of the installed SageMaker SDK, read from its source without importing it.

The launchers' version and instance lists live in the SDK's Python modules
(``sagemaker/fw_utils.py``, ``sagemaker/estimator.py``; ``sagemaker/core/fw_utils.py`` in 3.x,
which has no ``estimator.py``), not in its data files. Reading the
literal assignments with ``ast`` keeps our rules equal to the SDK's checks on every SDK upgrade,
while validation stays free of the ``sagemaker`` import (seconds).
"""

from __future__ import annotations

import ast
import contextlib
import functools
import re
from typing import Any

from safe_estimators._facts.sdk_files import sdk_file


def _has_file(relative: str) -> bool:
    try:
        return sdk_file(relative).is_file()
    except FileNotFoundError:
        return False


@functools.cache
def _tree(module: str) -> ast.Module:
    return ast.parse(sdk_file(module).read_text(encoding="utf-8"))


@functools.cache
def _assignments(module: str) -> dict[str, Any]:
    """Every literal ``NAME = ...`` of a module, with ``Class.NAME`` for class attributes."""
    tree = _tree(module)
    found: dict[str, Any] = {}

    def collect(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef) and not prefix:
                collect(node.body, f"{node.name}.")
            elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name):
                    # Not a literal (a call, a name): not a fact we read.
                    with contextlib.suppress(ValueError):
                        found[prefix + target.id] = ast.literal_eval(node.value)

    collect(tree.body, "")
    return found


def sdk_constant(module: str, name: str) -> Any:
    """The literal value of ``name`` (``Class.NAME`` for a class attribute) in ``module``.

    Raises LookupError when the installed SDK no longer defines it, so that an SDK upgrade that
    moves a fact fails the tests instead of silently emptying a rule.
    """
    try:
        return _assignments(module)[name]
    except FileNotFoundError as exc:  # estimator.py under sagemaker 3
        raise LookupError(str(exc)) from None
    except KeyError:
        raise LookupError(f"sagemaker/{module} defines no literal {name}") from None


def sdk_parameters(module: str, function: str, *, annotated: bool = True) -> dict[str, str]:
    """The parameters of ``function`` (``Class.method``, or a module-level name) in ``module``,
    each with its annotation as source text, type aliases imported from the SDK's own modules
    written out
    (``Optional[Tags]`` becomes ``Optional[Union[List[Dict[...]], Dict[...]]]``); with
    ``annotated=False`` the names only (no alias is looked up).

    Raises LookupError when the installed SDK no longer defines the function.
    """
    owner, _, name = function.rpartition(".")
    tree = _tree(module)
    bodies = [tree.body] if not owner else [
        node.body for node in tree.body if isinstance(node, ast.ClassDef) and node.name == owner
    ]
    for body in bodies:
        for item in body:
            if isinstance(item, ast.FunctionDef) and item.name == name:
                arguments = [*item.args.posonlyargs, *item.args.args, *item.args.kwonlyargs]
                return {
                    a.arg: _expand(module, ast.unparse(a.annotation))
                    if annotated and a.annotation
                    else ""
                    for a in arguments
                    if a.arg != "self"
                }
    raise LookupError(f"sagemaker/{module} defines no {function}")


def _expand(module: str, annotation: str, depth: int = 0) -> str:
    """Write out the SDK type aliases an annotation names (``from sagemaker.x import Alias``);
    only the modules that define a name the annotation uses are read."""
    if depth > 3:
        return annotation
    for word in set(re.findall(r"\b[A-Z]\w*\b", annotation)):
        source = module if word in _type_aliases(module) else _imports(module).get(word)
        if source is None or word not in _type_aliases(source):
            continue
        written = _expand(source, _type_aliases(source)[word], depth + 1)
        annotation = re.sub(rf"\b{word}\b", written.replace("\\", r"\\"), annotation)
    return annotation


@functools.cache
def _type_aliases(module: str) -> dict[str, str]:
    """The typing aliases a module defines (``Tags = Union[...]``), as source text."""
    return {
        node.targets[0].id: ast.unparse(node.value)
        for node in _tree(module).body
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Subscript)
    }


@functools.cache
def _imports(module: str) -> dict[str, str]:
    """The names a module imports from other SDK modules, with the file of each."""
    found: dict[str, str] = {}
    for node in _tree(module).body:
        imported = node.module if isinstance(node, ast.ImportFrom) else None
        if imported and imported.startswith("sagemaker.") and isinstance(node, ast.ImportFrom):
            source = imported.removeprefix("sagemaker.").replace(".", "/") + ".py"
            if _has_file(source):
                found.update((n.asname or n.name, source) for n in node.names)
    return found
