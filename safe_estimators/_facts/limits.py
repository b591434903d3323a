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
