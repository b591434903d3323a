"""Where the installed SageMaker SDK takes a SageMaker Pipelines variable, read from its signatures.

The SDK types each such option ``... | PipelineVariable`` (``EstimatorBase.__init__``,
``Framework.__init__`` and the estimator's own ``__init__``): the option itself, the values of a
mapping (environment, hyperparameters), the elements of a list (subnets) or the values of a
list's mappings (tags, metric definitions). Reading the annotations (with ``ast``, without
importing sagemaker) keeps that list equal to the installed SDK's. ``fit()``'s keywords are read
the same way.

sagemaker 3 removed the estimators, and ``estimator.py`` with them, while a spec is still
written in the estimator's words (a job given to ``model_trainer()`` or built from a spec file
on either generation). There the facts come from ``RECORDED_*``: the same readings taken from
sagemaker 2.257.7, which the tests compare with the installed SDK's on the sagemaker 2 lane.
"""

from __future__ import annotations

import ast
import functools
from typing import Literal

from safe_estimators._distributions._sdk_source import sdk_parameters
from safe_estimators._facts.sdk_files import sdk_file

# "value": the option; "values": a mapping's values; "elements": a list's elements; "entries":
# the values of a list's mappings (or of one mapping).
Kind = Literal["value", "values", "elements", "entries"]

# The signatures each estimator's keywords reach, from the estimator to its base classes.
_SIGNATURES = {
    "pytorch": ("pytorch/estimator.py", "PyTorch.__init__"),
    "huggingface": ("huggingface/estimator.py", "HuggingFace.__init__"),
}
_BASES = (("estimator.py", "Framework.__init__"), ("estimator.py", "EstimatorBase.__init__"))

# Read from sagemaker 2.257.7 (``EstimatorBase.fit``, ``EstimatorBase.__init__``,
# ``Framework.__init__``, ``PyTorch.__init__`` and ``HuggingFace.__init__``, whose pipeline
# options are the same): used where the installed SDK has no estimator.py (sagemaker 3).
RECORDED_FIT_KEYWORDS = ("inputs", "wait", "logs", "job_name", "experiment_config")
RECORDED_PIPELINE_OPTIONS: dict[str, Kind] = {
    **dict.fromkeys(
        (
            "entry_point", "source_dir", "image_uri", "container_log_level",
            "enable_network_isolation", "checkpoint_s3_uri", "checkpoint_local_path",
            "enable_sagemaker_metrics", "instance_count", "instance_type",
            "keep_alive_period_in_seconds", "volume_size", "volume_kms_key", "max_run",
            "input_mode", "output_path", "output_kms_key", "model_channel_name",
            "encrypt_inter_container_traffic", "use_spot_instances", "max_wait",
            "max_retry_attempts", "training_repository_access_mode",
            "training_repository_credentials_provider_arn", "enable_infra_check",
            "enable_remote_debug", "enable_session_tag_chaining", "training_plan",
        ),
        "value",
    ),
    "hyperparameters": "values",
    "environment": "values",
    "subnets": "elements",
    "security_group_ids": "elements",
    "tags": "entries",
    "metric_definitions": "entries",
}  # fmt: skip


def _estimators_shipped() -> bool:
    """Whether the installed SDK has the estimator classes' source (sagemaker 2)."""
    try:
        sdk_file("estimator.py")
    except FileNotFoundError:
        return False
    return True


@functools.cache
def pipeline_options(estimator: str) -> dict[str, Kind]:
    """The options of ``estimator`` ("pytorch", "huggingface") that take a pipeline variable,
    each with where in its value the variable may stand."""
    if not _estimators_shipped():
        return dict(RECORDED_PIPELINE_OPTIONS)
    found: dict[str, Kind] = {}
    for module, function in (_SIGNATURES[estimator], *_BASES):
        for name, annotation in sdk_parameters(module, function).items():
            kind = _kind(ast.parse(annotation, mode="eval").body) if annotation else None
            if kind is not None:
                found.setdefault(name, kind)
    return found


@functools.cache
def fit_keywords() -> tuple[str, ...]:
    """The keywords of ``EstimatorBase.fit()`` (inputs, wait, logs, job_name, ...)."""
    if not _estimators_shipped():
        return RECORDED_FIT_KEYWORDS
    return tuple(sdk_parameters("estimator.py", "EstimatorBase.fit", annotated=False))


def _kind(node: ast.expr) -> Kind | None:
    if isinstance(node, ast.Name):
        return "value" if node.id == "PipelineVariable" else None
    if not isinstance(node, ast.Subscript) or not isinstance(node.value, ast.Name):
        return None
    outer = node.value.id
    inner = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    kinds = [_kind(element) for element in inner]
    if outer in ("Optional", "Union"):
        # A list of mappings beside one mapping (tags) reads as the list's form.
        for wanted in ("value", "entries", "elements", "values"):
            if wanted in kinds:
                return wanted  # type: ignore[return-value]
        return None
    if outer in ("Dict", "dict", "Mapping") and len(kinds) == 2 and kinds[1] == "value":
        return "values"
    if outer in ("List", "list", "Sequence") and kinds:
        if kinds[0] == "value":
            return "elements"
        if kinds[0] == "values":
            return "entries"
    return None
