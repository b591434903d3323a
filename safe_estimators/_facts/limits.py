"""CreateTrainingJob limits, read from botocore's SageMaker service model.

The model is the API's own contract; reading it (instead of copying numbers) keeps the checks right
when AWS changes a limit and botocore is upgraded.

The whole model is a 2.6 MB JSON document (tens of milliseconds to decompress and parse, a large
share of a ``validate`` process), of which the checks read a hundred-odd shapes: those reachable
from ``ROOTS``. That subset is derived from botocore's file and cached in the user's cache folder,
keyed by the file's path, size and modification time and by the subset's format, so an upgraded
botocore or a changed set of roots is derived again. Any trouble with the cache (unwritable,
corrupt, stale, written by someone else) falls back to botocore's file: the cache changes how fast
the limits load, never what they are.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs

from safe_estimators._bounds import quote
from safe_estimators._cache import cache_folder, doubt, read_cached, write_atomically


@attrs.frozen
class MapLimit:
    """The limits of one string-to-string map in the request (Environment, HyperParameters)."""

    shape: str
    max_entries: int
    key_max: int
    key_pattern: re.Pattern[str]
    value_max: int
    value_pattern: re.Pattern[str]


def _map_limit(name: str) -> MapLimit:
    shape = _shape(name)
    key_name, value_name = shape["key"]["shape"], shape["value"]["shape"]
    return MapLimit(
        name,
        shape["max"],
        _shape(key_name)["max"],
        re.compile(_pattern_text(key_name) or ".*"),
        _shape(value_name)["max"],
        re.compile(_pattern_text(value_name) or ".*"),
    )


# --- the model and the cached subset of it -----------------------------------------------------

REQUEST_SHAPE = "CreateTrainingJobRequest"

# The shapes this package looks up by name; everything it reads is reachable from them. Adding a
# lookup of another shape means adding it here (the cache key includes this list).
ROOTS = (
    REQUEST_SHAPE,
    "TrainingInstanceType",
    "HyperParameters",
    "TrainingEnvironmentMap",
    "ResourceConfig",
    "InstanceGroup",
    "ReservedCapacityInstanceType",
)

# Bump when the derivation of the subset or the cache file's layout changes.
_FORMAT = 2


def _model_file() -> Path:
    # botocore's own file, found without importing botocore (and urllib3 with it), which would
    # cost more than reading the model.
    spec = importlib.util.find_spec("botocore")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("botocore is not installed")
    service = Path(next(iter(spec.submodule_search_locations))) / "data" / "sagemaker"
    newest = max(p for p in service.iterdir() if (p / "service-2.json.gz").is_file())
    return newest / "service-2.json.gz"


@functools.cache
def _model() -> dict[str, Any]:
    """Every shape of botocore's SageMaker model."""
    import gzip  # only when the cache cannot serve: nothing else on the validate path needs it

    with gzip.open(_model_file(), "rt", encoding="utf-8") as file:
        shapes: dict[str, Any] = json.load(file)["shapes"]
    return shapes


def _references(shape: dict[str, Any]) -> Iterator[str]:
    """The names of the shapes one shape refers to (list members, map keys and values, members)."""
    for part in ("member", "key", "value"):
        if part in shape:
            yield shape[part]["shape"]
    for member in shape.get("members", {}).values():
        yield member["shape"]


# A limit the model states only in a member's documentation, not in its shape:
# StoppingCondition.MaxRuntimeInSeconds says "The maximum value is 28 days." while its shape
# (MaxRuntimeInSeconds) has a minimum only. The number and unit, as written there.
_DOCUMENTED_MAXIMUM = re.compile(r"The maximum value is ([0-9,]+) (second|minute|hour|day)s?\b")
_UNIT_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
DOCUMENTED_MAXIMUM = "documentedMaximum"


def _documented_maximum(documentation: str) -> int | None:
    """The maximum a member's documentation states, in seconds, or None."""
    found = _DOCUMENTED_MAXIMUM.search(documentation)
    if found is None:
        return None
    return int(found.group(1).replace(",", "")) * _UNIT_SECONDS[found.group(2)]


def _without_documentation(shape: dict[str, Any]) -> dict[str, Any]:
    # The documentation is most of the model's bytes; the one fact a check reads in it, a
    # maximum stated in words, is kept as a number beside the member (DOCUMENTED_MAXIMUM).
    kept = {k: v for k, v in shape.items() if k != "documentation"}
    if "members" in kept:
        kept["members"] = {
            name: _member_without_documentation(member)
            for name, member in kept["members"].items()
        }
    return kept


def _member_without_documentation(member: dict[str, Any]) -> dict[str, Any]:
    kept = {k: v for k, v in member.items() if k != "documentation"}
    maximum = _documented_maximum(member.get("documentation", ""))
    if maximum is not None:
        kept[DOCUMENTED_MAXIMUM] = maximum
    return kept


def derive_subset(shapes: dict[str, Any], roots: tuple[str, ...] = ROOTS) -> dict[str, Any]:
    """The shapes reachable from ``roots`` in a service model's ``shapes``, without documentation.

    A root the model lacks is left out (looking it up then fails as it would in the whole model).
    """
    subset: dict[str, Any] = {}
    pending = [root for root in roots if root in shapes]
    while pending:
        name = pending.pop()
        if name not in subset:
            subset[name] = _without_documentation(shapes[name])
            pending.extend(_references(shapes[name]))
    return dict(sorted(subset.items()))


def _cache_key(model: Path) -> dict[str, Any]:
    status = model.stat()
    return {
        "format": _FORMAT,
        "roots": list(ROOTS),
        "model": str(model),
        "size": status.st_size,
        "mtime_ns": status.st_mtime_ns,
    }


def _cache_file(folder: Path, model: Path) -> Path:
    # One file per botocore installation: an upgrade replaces it instead of adding another.
    return folder / f"sagemaker-shapes-{zlib.crc32(str(model).encode()):08x}.json"


def _well_formed(subset: object) -> bool:
    """Every root is present, and so is every shape the subset refers to, each with a type."""
    # No assert statements: python -O would remove the checks.
    if not isinstance(subset, dict) or not all(isinstance(subset.get(r), dict) for r in ROOTS):
        return False
    try:
        return all(
            isinstance(shape.get("type"), str)
            and isinstance(shape.get("pattern", ""), str)
            and all(isinstance(subset.get(name), dict) for name in _references(shape))
            for shape in subset.values()
        )
    except (KeyError, TypeError, AttributeError):
        return False


def _read_cache(path: Path, key: dict[str, Any]) -> dict[str, Any] | None:
    """The subset cached at ``path`` for ``key``, or None (missing, stale, untrusted, corrupt:
    ``_cache.read_cached`` records why an untrusted file was ignored; a corrupt one is recorded
    here)."""
    # A header line (the key and the body's checksum), then the subset as one JSON object.
    data = read_cached(path)
    if data is None:
        return None
    try:
        header_text, _, body = data.partition(b"\n")
        header = json.loads(header_text)
        if not isinstance(header, dict) or header.get("key") != key:
            return None  # stale: derived again and replaced, as after an upgrade
        if header.get("crc32") != zlib.crc32(body):
            doubt(path, "does not match its checksum; it was ignored")
            return None
        subset = json.loads(body)
    except (ValueError, RecursionError):
        doubt(path, "is not a cache file of this version; it was ignored")
        return None
    if not _well_formed(subset):
        doubt(path, "does not hold a well-formed subset of botocore's model; it was ignored")
        return None
    return subset  # type: ignore[no-any-return]


def _write_cache(path: Path, key: dict[str, Any], subset: dict[str, Any]) -> None:
    """Write the cache file atomically; give up silently if the folder is not writable."""
    # The model's order of keys is kept: messages list a structure's members in that order.
    body = json.dumps(subset, separators=(",", ":")).encode()
    header = json.dumps({"key": key, "crc32": zlib.crc32(body)}, sort_keys=True).encode()
    write_atomically(path, header + b"\n" + body)


@functools.cache
def _subset() -> dict[str, Any]:
    """The shapes reachable from ``ROOTS``: from the cache when it is current, else derived."""
    model = _model_file()
    try:
        key = _cache_key(model)
    except OSError:
        return _model()
    folder = cache_folder()
    path = None if folder is None else _cache_file(folder, model)
    if path is not None:
        cached = _read_cache(path, key)
        if cached is not None:
            return cached
    subset = derive_subset(_model())
    if path is not None and _well_formed(subset):
        _write_cache(path, key, subset)
    return subset


def _shape(name: str) -> dict[str, Any]:
    """One shape of the model; a shape outside the subset is read from the whole model."""
    found: dict[str, Any] | None = _subset().get(name)
    return found if found is not None else _model()[name]


@functools.cache
def environment_limit() -> MapLimit:
    """Limits of CreateTrainingJob ``Environment``."""
    return _map_limit("TrainingEnvironmentMap")


@functools.cache
def hyperparameters_limit() -> MapLimit:
    """Limits of CreateTrainingJob ``HyperParameters``."""
    return _map_limit("HyperParameters")


def training_instance_types() -> tuple[str, ...]:
    """The values of the ``TrainingInstanceType`` enum."""
    return tuple(_shape("TrainingInstanceType")["enum"])


def training_plan_instance_types() -> tuple[str, ...]:
    """The instance types training plans reserve: ``SearchTrainingPlanOfferings``'s
    ``ReservedCapacityInstanceType`` enum (AWS's user guide names fewer; the model is newer)."""
    return tuple(_shape("ReservedCapacityInstanceType")["enum"])


# --- member constraints -----------------------------------------------------------------------
# botocore validates types, required members and minimums client-side; the service enforces
# maximums, patterns and enums too. Both are in the model, so both are checked here.

# The model's patterns are Java regular expressions. Python's ``re`` lacks Unicode classes; inside
# a character class these stand-ins are as wide or wider, so a translated pattern never refuses a
# value the service accepts. Patterns that still do not compile are not checked.
_UNICODE_CLASSES = {r"\p{L}": r"\w", r"\p{N}": r"\w", r"\p{Alnum}": r"\w", r"\p{Z}": r"\s"}


def _pattern_text(shape_name: str) -> str | None:
    """A shape's pattern. A pattern is code the checks run (a planted ``(a|aa)*c`` would hang
    them), so one from the cache is run only when it is linear to match (``_linear``: ``.*``,
    ``[a-zA-Z_][a-zA-Z0-9_]*``); any other is read from botocore's own file."""
    pattern = _shape(shape_name).get("pattern")
    if pattern is None or _linear(pattern) or pattern in _VETTED:
        return pattern  # type: ignore[no-any-return]
    return _source_pattern(shape_name)


# Patterns of the request that are not ``_linear`` by that test and still match in linear time:
# read from a cache entry, they are run without loading botocore's whole model (about 25 ms of
# every validate). TrainingJobName's repetition is of ``-*`` then a character ``-`` is not, so a
# value splits into repetitions one way only.
_VETTED = frozenset({"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}"})


def _source_pattern(shape_name: str) -> str | None:
    """A shape's pattern as botocore's own file has it."""
    source = _model()[shape_name].get("pattern")
    return source if isinstance(source, str) else None


def _linear(pattern: str) -> bool:
    """At most one repetition (``?``, ``*``, ``+``, ``{m,n}``) in the whole pattern and no
    back-reference: a backtracking matcher then tries each starting split once, so a match costs
    at most the value's length times the pattern's. Nested or neighbouring repetitions are what
    makes a pattern exponential (``(a|aa)*c``) or polynomial (``.*.*.*x``)."""
    if sys.version_info >= (3, 11):
        from re import _parser as parser  # type: ignore[attr-defined]
    else:  # pragma: no cover - Python 3.10
        import sre_parse as parser
    try:
        parsed = parser.parse(pattern)
    except Exception:  # re.error, or a pattern too large to parse
        return False
    repeats = 0
    stack: list[tuple[Any, bool]] = [(parsed, False)]  # (a sequence, inside a repetition)
    while stack:
        sequence, repeated = stack.pop()
        for code, argument in sequence:
            name = str(code)
            if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                repeats += 1
                stack.append((argument[2], True))
            elif name in ("GROUPREF", "GROUPREF_EXISTS") or (name == "BRANCH" and repeated):
                return False  # alternatives under a repetition: (a|aa)*
            elif name == "SUBPATTERN":
                stack.append((argument[-1], repeated))
            elif name == "BRANCH":
                stack.extend((branch, repeated) for branch in argument[1])
            elif name in ("ASSERT", "ASSERT_NOT"):
                stack.append((argument[1], repeated))
            if repeats > 1:
                return False
    return True


@functools.cache
def _pattern(shape_name: str) -> re.Pattern[str] | None:
    text = _pattern_text(shape_name)
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
        shape = _shape(shape)["members"][name]["shape"]
    return shape


def documented_maximum(dotted: str, root: str = REQUEST_SHAPE) -> int | None:
    """The maximum a request member's documentation states in words, in seconds (the shape
    itself may have none): ``documented_maximum("StoppingCondition.MaxRuntimeInSeconds")`` is
    2,419,200 (28 days) in botocore's model."""
    *parents, last = dotted.split(".")
    shape = root
    for name in parents:
        shape = _shape(shape)["members"][name]["shape"]
    member = _shape(shape)["members"][last]
    if DOCUMENTED_MAXIMUM in member:
        found: int = member[DOCUMENTED_MAXIMUM]
        return found
    if "documentation" in member:  # read from the whole model (a shape outside the subset)
        return _documented_maximum(member["documentation"])
    return None


def _where(shape_name: str) -> str:
    return f"CreateTrainingJob's {shape_name} in botocore's SageMaker model"


def _typed(value: object, kind: str) -> bool:
    if kind in ("integer", "long"):
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


# The model's number types without a "max" are still bounded: Smithy (the language AWS's
# models are written in) defines integer as a 32-bit and long as a 64-bit signed number.
_BITS = {"integer": 32, "long": 64}
_WIDTHS = {kind: 2 ** (bits - 1) - 1 for kind, bits in _BITS.items()}

_KIND_WORDS = {
    "integer": "a whole number",
    "long": "a whole number",
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
    shape = _shape(shape_name)
    kind = shape["type"]
    if not _typed(value, kind):
        return [
            (
                path,
                f"must be {_KIND_WORDS.get(kind, kind)}, got {type(value).__name__} {quote(value)} "
                f"({_where(shape_name)}).",
            )
        ]
    found: list[tuple[str, str]] = []
    low, high = shape.get("min"), shape.get("max")
    if kind in ("integer", "long", "double", "float"):
        assert isinstance(value, int | float)
        if low is not None and value < low:
            minimum = f"the minimum is {low} ({_where(shape_name)})"
            found.append((path, f"is {quote(value)}; {minimum}."))
        if high is not None and value > high:
            maximum = f"the maximum is {high} ({_where(shape_name)})"
            found.append((path, f"is {quote(value)}; {maximum}."))
        elif kind in _WIDTHS and value > _WIDTHS[kind]:
            found.append(
                (
                    path,
                    f"is {quote(value)}; the maximum is {_WIDTHS[kind]:,}: {_where(shape_name)} is "
                    f"of type {kind}, a {_BITS[kind]}-bit signed number in AWS's APIs.",
                )
            )
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
            choices = f"it must be one of {', '.join(enum)} ({_where(shape_name)})"
            found.append((path, f"is {quote(value)}; {choices}."))
        elif pattern is not None and not pattern.fullmatch(value):
            found.append(
                (
                    path,
                    f"{quote(value)} does not match the pattern {_pattern_text(shape_name)} "
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
    groups = _shape(_shape("ResourceConfig")["members"]["InstanceGroups"]["shape"])
    name = _shape(_shape("InstanceGroup")["members"]["InstanceGroupName"]["shape"])
    return ListLimit(groups["max"], name.get("min", 1), name["max"])
