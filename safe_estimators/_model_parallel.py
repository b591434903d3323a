"""Model parallelism with the SageMaker model parallel library v1 (SMP v1) on PyTorch.

Four steps, each usable on its own, each in its own module:

- ``ModelParallel`` (``_model_parallel_options``): the typed options; attrs validators check
  single values.
- ``parse_model_parallel`` / ``split_distribution`` (``_model_parallel_parse``): a plain dict, or
  a raw SageMaker ``distribution`` as AWS's example notebooks write it, into ``ModelParallel``
  plus problems.
- ``check_model_parallel`` (``_model_parallel_rules``): the rules relating the options to each
  other, to the instance type, the instance count, the container's library version and the
  batch-size hyperparameters.
- ``resolve_model_parallel`` (``_model_parallel_resolve``): the ``distribution`` dict the SageMaker
  SDK expects, the values injected on the user's behalf, and the parallel layout
  (``ParallelLayout``, ``_model_parallel_layout``) for the explanation.

The facts the rules read (library version per PyTorch container, when each option appeared, the
supported instance types) are tables in ``_model_parallel_facts``. Nothing here imports
``sagemaker``. This module only re-exports the names the rest of the package and the tests use.
"""

from safe_estimators._model_parallel_layout import ParallelLayout
from safe_estimators._model_parallel_options import ModelParallel
from safe_estimators._model_parallel_parse import parse_model_parallel, split_distribution
from safe_estimators._model_parallel_resolve import resolve_model_parallel
from safe_estimators._model_parallel_rules import check_model_parallel

__all__ = [
    "ModelParallel",
    "ParallelLayout",
    "check_model_parallel",
    "parse_model_parallel",
    "resolve_model_parallel",
    "split_distribution",
]
