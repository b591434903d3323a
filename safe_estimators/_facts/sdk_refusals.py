"""The SageMaker SDK's own image-time refusals, read from its source without importing it.

``image_uris.retrieve`` refuses some instance families for some framework versions before it
builds the image URI (``_validate_instance_deprecation``: P2 for PyTorch from 1.13 and
TensorFlow from 2.12 in 2.257). The function's body is read with ``ast`` so that our rule
refuses exactly what the installed SDK refuses, on every SDK upgrade.
"""

from __future__ import annotations

import ast
import functools
import zlib
from pathlib import Path

import attrs

from safe_estimators._cache import remembered
from safe_estimators._facts.sdk_files import sdk_file

MODULE = "image_uris.py"
FUNCTION = "_validate_instance_deprecation"


@attrs.frozen
class Deprecation:
    """Instances of ``family`` refused for ``framework`` (the SDK's framework name) at
    ``since`` and later; ``message`` is the SDK's own text."""

    family: str
    framework: str
    since: str
    message: str


def _constant(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _call_name(node: ast.AST) -> str | None:
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)


@functools.cache
def instance_deprecations() -> tuple[Deprecation, ...]:
    """Every (family, framework, first version) the installed SDK refuses.

    Raises LookupError when the function is gone or no longer has the shape read here, so an
    SDK upgrade that changes it fails the tests instead of silently emptying the rule. Read
    back from the user's cache while the SDK's file is the one they were read from (parsing
    it costs a one-file validate about 5 ms).
    """
    source = sdk_file(MODULE)
    try:
        status = source.stat()
    except OSError:
        return _read_deprecations(source)
    key = {"format": 1, "file": str(source), "size": status.st_size, "mtime_ns": status.st_mtime_ns}
    rows = remembered(
        f"sdk-deprecations-{zlib.crc32(str(source).encode()):08x}.json",
        key,
        lambda: [attrs.astuple(rule) for rule in _read_deprecations(source)],
        _well_formed,
    )
    return tuple(Deprecation(*row) for row in rows)


def _well_formed(rows: object) -> bool:
    return (
        isinstance(rows, list)
        and bool(rows)
        and all(
            isinstance(row, list) and len(row) == 4 and all(isinstance(v, str) for v in row)
            for row in rows
        )
    )


def _read_deprecations(source: Path) -> tuple[Deprecation, ...]:
    tree = ast.parse(source.read_text(encoding="utf-8"))
    function = next(
        (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == FUNCTION), None
    )
    if function is None:
        raise LookupError(f"sagemaker/{MODULE} defines no {FUNCTION}")
    found: list[Deprecation] = []
    for check in (n for n in ast.walk(function) if isinstance(n, ast.If)):
        test = check.test
        if not isinstance(test, ast.Compare):
            continue
        if _call_name(test.left) != "get_instance_type_family":
            continue
        family = _constant(test.comparators[0])
        message = "".join(
            _constant(part) or ""
            for raise_ in ast.walk(check)
            if isinstance(raise_, ast.Raise) and isinstance(raise_.exc, ast.Call)
            for part in raise_.exc.args[:1]
        )
        for pair in (n for n in ast.walk(check) if isinstance(n, ast.BoolOp)):
            if not isinstance(pair.op, ast.And):
                continue
            framework = since = None
            for part in pair.values:
                if isinstance(part, ast.Compare) and getattr(part.left, "id", None) == "framework":
                    framework = _constant(part.comparators[0])
                elif isinstance(part, ast.Compare) and _call_name(part.comparators[0]) == "Version":
                    since = _constant(part.comparators[0].args[0])  # type: ignore[attr-defined]
            if family and framework and since:
                found.append(Deprecation(family, framework, since, message))
    if not found:
        raise LookupError(f"sagemaker/{MODULE} {FUNCTION} no longer has the shape read here")
    return tuple(found)
