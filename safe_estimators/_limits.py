"""CreateTrainingJob limits, read from botocore's SageMaker service model.

The model is the API's own contract; reading it (instead of copying numbers) keeps the checks right
when AWS changes a limit and botocore is upgraded.
"""

from __future__ import annotations

import functools
import re
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
    from botocore.loaders import Loader  # deferred: loading the model costs ~0.2 s

    shapes: dict[str, Any] = Loader().load_service_model("sagemaker", "service-2")["shapes"]
    return shapes


def environment_limit() -> MapLimit:
    """Limits of CreateTrainingJob ``Environment``."""
    return _map_limit(_shapes(), "TrainingEnvironmentMap")


def hyperparameters_limit() -> MapLimit:
    """Limits of CreateTrainingJob ``HyperParameters``."""
    return _map_limit(_shapes(), "HyperParameters")


def training_instance_types() -> tuple[str, ...]:
    """The values of the ``TrainingInstanceType`` enum."""
    return tuple(_shapes()["TrainingInstanceType"]["enum"])
