"""Where the installed SageMaker SDK takes a SageMaker Pipelines variable, read from its signatures.

The SDK types each such option ``... | PipelineVariable`` (``EstimatorBase.__init__``,
``Framework.__init__`` and the estimator's own ``__init__``): the option itself, the values of a
mapping (environment, hyperparameters), the elements of a list (subnets) or the values of a
list's mappings (tags, metric definitions). Reading the annotations (with ``ast``, without
importing sagemaker) keeps that list equal to the installed SDK's. ``fit()``'s keywords are read
the same way.
"""

from __future__ import annotations

import ast
import functools
from typing import Literal

from safe_estimators._distributions._sdk_source import sdk_parameters

# "value": the option; "values": a mapping's values; "elements": a list's elements; "entries":
# the values of a list's mappings (or of one mapping).
Kind = Literal["value", "values", "elements", "entries"]

# The signatures each estimator's keywords reach, from the estimator to its base classes.
_SIGNATURES = {
    "pytorch": ("pytorch/estimator.py", "PyTorch.__init__"),
    "huggingface": ("huggingface/estimator.py", "HuggingFace.__init__"),
}
_BASES = (("estimator.py", "Framework.__init__"), ("estimator.py", "EstimatorBase.__init__"))


@functools.cache
def pipeline_options(estimator: str) -> dict[str, Kind]:
    """The options of ``estimator`` ("pytorch", "huggingface") that take a pipeline variable,
    each with where in its value the variable may stand."""
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
