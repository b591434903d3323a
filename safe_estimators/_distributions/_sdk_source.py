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
from typing import Any

from safe_estimators._facts.sdk_files import sdk_file


@functools.cache
def _assignments(module: str) -> dict[str, Any]:
    """Every literal ``NAME = ...`` of a module, with ``Class.NAME`` for class attributes."""
    tree = ast.parse(sdk_file(module).read_text(encoding="utf-8"))
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
