"""Lookup over the shipped data file, loaded once on first use."""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any

from instance_catalog._model import Accelerator, InstanceType, UnknownInstanceType

if TYPE_CHECKING:
    from instance_catalog._suggest import CloseMatches

DATA_FILE = "instances.json"
ACCELERATORS_FILE = "accelerators.json"


def read_data(name: str = DATA_FILE) -> dict[str, Any]:
    """A parsed data file; by default ``{"header": {...}, "instance_types": {name: fields}}``."""
    # pkgutil reads package data from a directory or a zip alike. importlib.resources would too,
    # but importing it costs several times the rest of the first lookup. Imported here so that
    # importing the package pays for neither.
    import pkgutil

    raw = pkgutil.get_data("instance_catalog", f"data/{name}")
    if raw is None:  # only for exotic loaders that cannot read data files
        raise FileNotFoundError(f"instance_catalog cannot read its data file data/{name}")
    data: dict[str, Any] = json.loads(raw)
    return data


@functools.cache
def _rows() -> dict[str, dict[str, Any]]:
    """Each instance type's fields as the data file has them, by name."""
    rows: dict[str, dict[str, Any]] = read_data()["instance_types"]
    return rows


_BUILT: dict[str, InstanceType] = {}


def _entry(name: str) -> InstanceType | None:
    # Built on first lookup: a job looks up one or two of the 225 types, and building them all
    # (their validators) was a millisecond of every one-file validate.
    entry = _BUILT.get(name)
    if entry is None:
        fields = _rows().get(name)
        if fields is None:
            return None
        entry = _BUILT.setdefault(name, InstanceType(name=name, **fields))  # one per name
    return entry


@functools.cache
def _by_name() -> dict[str, InstanceType]:
    return {name: entry for name in _rows() if (entry := _entry(name)) is not None}


@functools.cache
def instance_types() -> tuple[InstanceType, ...]:
    """Every SageMaker training instance type in the catalog, sorted by name."""
    return tuple(sorted(_by_name().values(), key=lambda entry: entry.name))


@functools.cache
def accelerators() -> dict[str, Accelerator]:
    """Every accelerator model the catalog's instance types carry, by name (``"A100"``)."""
    data = read_data(ACCELERATORS_FILE)
    sources = data["sources"]
    return {
        name: Accelerator(name=name, **{**row, "source": sources[row["source"]]["reference"]})
        for name, row in data["accelerators"].items()
    }


def get(name: str) -> InstanceType:
    """The catalog entry for a training instance type such as ``"ml.p3.8xlarge"``.

    Raises TypeError when ``name`` is not a string and UnknownInstanceType (a LookupError)
    when it is not a training type; the error names the closest real types.
    """
    if not isinstance(name, str):
        raise TypeError(
            f"instance type must be a string such as 'ml.p3.8xlarge', "
            f"not {type(name).__name__} ({name!r})"
        )
    entry = _entry(name)
    if entry is None:
        raise UnknownInstanceType(name, _suggestions(name, _rows()))
    return entry


def gpu_count(name: str) -> int:
    """GPUs per instance of ``name``: 0 for CPU types and for Trainium/Inferentia types."""
    return get(name).gpu_count


def _suggestions(name: str, known: dict[str, Any]) -> list[str]:
    last = _LAST_SUGGESTED
    if last and last[0] == name and last[1] is known:  # a name is often looked up twice
        return list(_LAST_SUGGESTED[2])
    found = _suggest(name, known)
    _LAST_SUGGESTED[:] = [name, known, found]
    return list(found)


_LAST_SUGGESTED: list[Any] = []


def _suggest(name: str, known: dict[str, Any]) -> list[str]:
    # SageMaker names are exact: "ML.P3.8XLARGE", " ml.p3.8xlarge" and "p3.8xlarge" are all
    # rejected by CreateTrainingJob, so they are errors here too, but with the fix spelled out.
    normalised = "".join(name.split()).lower()
    if not normalised.startswith("ml."):
        normalised = "ml." + normalised
    if normalised in known:
        return [normalised]
    return _close_matches(known)(normalised, n=3, cutoff=0.6)


_INDEX: list[tuple[object, CloseMatches]] = []


def _close_matches(known: dict[str, Any]) -> CloseMatches:
    """The did-you-mean index of the catalog's names, built on the first misspelling."""
    if not _INDEX or _INDEX[0][0] is not known:
        from instance_catalog._suggest import CloseMatches

        _INDEX[:] = [(known, CloseMatches(known))]
    return _INDEX[0][1]
