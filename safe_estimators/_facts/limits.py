"""CreateTrainingJob limits, read from botocore's SageMaker service model.

The model is the API's own contract; reading it (instead of copying numbers) keeps the checks right
when AWS changes a limit and botocore is upgraded.
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import attrs


@attrs.frozen
class MapLimit:
    """The limits of one string-to-string map in the request (Environment, HyperParameters)."""

    shape: str
    max_entries: int
    key_max: int
    key_pattern: re.Pattern[str]
    value_max: int
    value_pattern: re.Pattern[str]


def _map_limit(shapes: dict[str, Any], name: str) -> MapLimit:
    shape = shapes[name]
    key = shapes[shape["key"]["shape"]]
    value = shapes[shape["value"]["shape"]]
    return MapLimit(
        name,
        shape["max"],
        key["max"],
        re.compile(key.get("pattern", ".*")),
        value["max"],
        re.compile(value.get("pattern", ".*")),
    )


@functools.cache
def _shapes() -> dict[str, Any]:
    # botocore's own file, read directly: importing botocore.loaders (and urllib3 with it) would
    # cost more than reading the model, and validation must stay fast.
    spec = importlib.util.find_spec("botocore")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("botocore is not installed")
    service = Path(next(iter(spec.submodule_search_locations))) / "data" / "sagemaker"
    newest = max(p for p in service.iterdir() if (p / "service-2.json.gz").is_file())
    with gzip.open(newest / "service-2.json.gz", "rt", encoding="utf-8") as file:
        shapes: dict[str, Any] = json.load(file)["shapes"]
    return shapes


@functools.cache
def environment_limit() -> MapLimit:
    """Limits of CreateTrainingJob ``Environment``."""
    return _map_limit(_shapes(), "TrainingEnvironmentMap")


@functools.cache
def hyperparameters_limit() -> MapLimit:
    """Limits of CreateTrainingJob ``HyperParameters``."""
    return _map_limit(_shapes(), "HyperParameters")


def training_instance_types() -> tuple[str, ...]:
    """The values of the ``TrainingInstanceType`` enum."""
    return tuple(_shapes()["TrainingInstanceType"]["enum"])


# --- member constraints -----------------------------------------------------------------------
# botocore validates types, required members and minimums client-side; the service enforces
# maximums, patterns and enums too. Both are in the model, so both are checked here.

REQUEST_SHAPE = "CreateTrainingJobRequest"

# The model's patterns are Java regular expressions. Python's ``re`` lacks Unicode classes; inside
# a character class these stand-ins are as wide or wider, so a translated pattern never refuses a
# value the service accepts. Patterns that still do not compile are not checked.
_UNICODE_CLASSES = {r"\p{L}": r"\w", r"\p{N}": r"\w", r"\p{Alnum}": r"\w", r"\p{Z}": r"\s"}


@functools.cache
def _pattern(shape_name: str) -> re.Pattern[str] | None:
    text = _shapes()[shape_name].get("pattern")
    if text is None:
        return None
    for java, python in _UNICODE_CLASSES.items():
        text = text.replace(java, python)
    try:
        return re.compile(text)
    except re.error:
        return None


def member_shape(dotted: str, root: str = REQUEST_SHAPE) -> str:
    """The shape name of a request member: ``member_shape("ResourceConfig.VolumeSizeInGB")``."""
    shape = root
    for name in dotted.split("."):
        shape = _shapes()[shape]["members"][name]["shape"]
    return shape


def _where(shape_name: str) -> str:
    return f"CreateTrainingJob's {shape_name} in botocore's SageMaker model"


def _typed(value: object, kind: str) -> bool:
    if kind == "integer":
        return type(value) is int
    if kind in ("double", "float"):
        return type(value) in (int, float)
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return type(value) is bool
    if kind == "list":
        return isinstance(value, list | tuple)
    if kind in ("map", "structure"):
        return isinstance(value, dict)
    return True  # timestamps, blobs: not sent by the SDK from estimator arguments


_KIND_WORDS = {
    "integer": "a whole number",
    "double": "a number",
    "float": "a number",
    "string": "a string",
    "boolean": "true or false",
    "list": "a list",
    "map": "a mapping",
    "structure": "a mapping",
}


def shape_problems(
    value: object, shape_name: str, opaque: Any = None, path: str = ""
) -> list[tuple[str, str]]:
    """Every way ``value`` breaks the model's constraints for ``shape_name``.

    Returns ``(sub_path, message)`` pairs; ``sub_path`` is dotted below the value (``"3.Key"``)
    and each message names the limit and the shape it comes from. Values for which ``opaque``
    is true (pipeline variables, known only at run time) are not checked.
    """
    if opaque is not None and opaque(value):
        return []
    shape = _shapes()[shape_name]
    kind = shape["type"]
    if not _typed(value, kind):
        return [
            (
                path,
                f"must be {_KIND_WORDS.get(kind, kind)}, got {type(value).__name__} {value!r} "
                f"({_where(shape_name)}).",
            )
        ]
    found: list[tuple[str, str]] = []
    low, high = shape.get("min"), shape.get("max")
    if kind in ("integer", "double", "float"):
        assert isinstance(value, int | float)
        if low is not None and value < low:
            found.append((path, f"is {value}; the minimum is {low} ({_where(shape_name)})."))
        if high is not None and value > high:
            found.append((path, f"is {value}; the maximum is {high} ({_where(shape_name)})."))
        return found
    if kind in ("string", "list", "map"):
        assert isinstance(value, str | list | tuple | dict)
        unit = "characters" if kind == "string" else "entries"
        if low is not None and len(value) < low:
            found.append(
                (path, f"has {len(value)} {unit}; the minimum is {low} ({_where(shape_name)}).")
            )
        if high is not None and len(value) > high:
            found.append(
                (path, f"has {len(value)} {unit}; the maximum is {high} ({_where(shape_name)}).")
            )
    if kind == "string":
        assert isinstance(value, str)
        enum = shape.get("enum")
        pattern = _pattern(shape_name)
        if enum and value not in enum:
            found.append(
                (path, f"is {value!r}; it must be one of {', '.join(enum)} ({_where(shape_name)}).")
            )
        elif pattern is not None and not pattern.fullmatch(value):
            found.append(
                (
                    path,
                    f"{value!r} does not match the pattern {shape['pattern']} "
                    f"({_where(shape_name)}).",
                )
            )
    elif kind == "list":
        assert isinstance(value, list | tuple)
        member = shape["member"]["shape"]
        for index, item in enumerate(value):
            found += shape_problems(item, member, opaque, _join(path, index))
    elif kind == "map":
        assert isinstance(value, dict)
        for key, item in value.items():
            found += shape_problems(key, shape["key"]["shape"], opaque, _join(path, key))
            found += shape_problems(item, shape["value"]["shape"], opaque, _join(path, key))
    elif kind == "structure":
        assert isinstance(value, dict)
        members = shape["members"]
        for name in shape.get("required", []):
            if name not in value:
                found.append(
                    (_join(path, name), f"is required ({_where(shape_name)}) but missing.")
                )
        for name, item in value.items():
            if name not in members:
                found.append(
                    (
                        _join(path, name),
                        f"{name!r} is not a member of {shape_name}; it has "
                        f"{', '.join(members)}.",
                    )
                )
            elif item is not None:
                found += shape_problems(item, members[name]["shape"], opaque, _join(path, name))
    return found


def _join(path: str, key: object) -> str:
    return f"{path}.{key}" if path else str(key)


@attrs.frozen
class ListLimit:
    """The limits of one list in the request and of its members' names."""

    max_entries: int
    name_min: int
    name_max: int


@functools.cache
def instance_groups_limit() -> ListLimit:
    """Limits of ``ResourceConfig.InstanceGroups`` (heterogeneous clusters) and group names."""
    shapes = _shapes()
    groups = shapes[shapes["ResourceConfig"]["members"]["InstanceGroups"]["shape"]]
    name = shapes[shapes["InstanceGroup"]["members"]["InstanceGroupName"]["shape"]]
    return ListLimit(groups["max"], name.get("min", 1), name["max"])
