"""Model parallelism with the SageMaker model parallel library v1 (SMP v1) on PyTorch.

Four steps, each usable on its own, each in its own module of this folder:

- ``ModelParallel`` (``options``): the typed options; attrs validators check
  single values.
- ``parse_model_parallel`` / ``split_distribution`` (``parse``): a plain dict, or
  a raw SageMaker ``distribution`` as AWS's example notebooks write it, into ``ModelParallel``
  plus problems.
- ``check_model_parallel`` (``rules``): the rules relating the options to each
  other, to the instance type, the instance count, the container's library version and the
  batch-size hyperparameters.
- ``resolve_model_parallel`` (``resolve``): the ``distribution`` dict the SageMaker
  SDK expects, the values injected on the user's behalf, and the parallel layout
  (``ParallelLayout``, ``layout``) for the explanation.

The facts the rules read (library version per PyTorch container, when each option appeared, the
supported instance types) are tables in ``facts``. Nothing here imports
``sagemaker``. This module only re-exports the names the rest of the package and the tests use.
"""

from safe_estimators._distributions.model_parallel.layout import ParallelLayout
from safe_estimators._distributions.model_parallel.options import ModelParallel
from safe_estimators._distributions.model_parallel.parse import (
    parse_model_parallel,
    split_distribution,
)
from safe_estimators._distributions.model_parallel.resolve import resolve_model_parallel
from safe_estimators._distributions.model_parallel.rules import check_model_parallel

__all__ = [
    "ModelParallel",
    "ParallelLayout",
    "check_model_parallel",
    "parse_model_parallel",
    "resolve_model_parallel",
    "split_distribution",
]
