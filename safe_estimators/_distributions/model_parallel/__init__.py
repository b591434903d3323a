"""Model parallelism with the SageMaker model parallel library (SMP) on PyTorch, v1 and v2.

``model_parallel=`` is one intent for both library generations; the container's PyTorch version
decides which runs (``dispatch``): up to 2.0.0 the library v1 under MPI, from 2.0.1 the
library v2 (``torch.sagemaker``) under torchrun from its own image. Four steps, each usable on
its own:

- ``ModelParallel`` (``options``): the typed options of both generations; attrs validators
  check single values.
- ``parse_model_parallel`` / ``split_distribution`` (``parse``): a plain dict, or a raw
  SageMaker ``distribution`` as AWS's notebooks and guides write it (MPI for v1,
  torch_distributed for v2), into ``ModelParallel`` plus problems.
- ``check_model_parallel`` (``dispatch``): the rules of the job's generation (``rules`` for
  v1, ``rules_v2`` for v2; ``hardware`` words the accelerator facts both use), relating the
  options to each other, to the instance type and count, the container's library version and
  the batch-size hyperparameters.
- ``resolve_model_parallel`` (``dispatch``): the ``distribution`` dict the SageMaker SDK
  expects (``resolve`` / ``resolve_v2``), the values injected on the user's behalf, and the
  parallel layout (``ParallelLayout``, ``layout``) for the explanation.

The facts the rules read (library release per PyTorch container, when each option appeared, the
supported instance types, what each v1 option means on v2) are tables in ``facts`` and
``facts_v2``. Nothing here imports ``sagemaker``. This module only re-exports the names the rest
of the package and the tests use.
"""

from typing import TYPE_CHECKING

from safe_estimators._lazy import names_from

if TYPE_CHECKING:
    from safe_estimators._distributions.model_parallel.dispatch import (
        check_model_parallel,
        library_generation,
        resolve_model_parallel,
    )
    from safe_estimators._distributions.model_parallel.layout import ParallelLayout
    from safe_estimators._distributions.model_parallel.options import ModelParallel
    from safe_estimators._distributions.model_parallel.parse import (
        attach_launcher,
        parse_model_parallel,
        split_distribution,
    )

# Each name is loaded from its module on first use: a job without model parallelism (most of
# them) never builds ModelParallel's class or reads the library's tables, even when it imports
# one of them (``facts_v2``) through this package.
_HOMES = {
    "check_model_parallel": "dispatch",
    "library_generation": "dispatch",
    "resolve_model_parallel": "dispatch",
    "ModelParallel": "options",
    "ParallelLayout": "layout",
    "attach_launcher": "parse",
    "parse_model_parallel": "parse",
    "split_distribution": "parse",
}


__getattr__ = names_from(__name__, _HOMES)


__all__ = [
    "ModelParallel",
    "ParallelLayout",
    "attach_launcher",
    "check_model_parallel",
    "library_generation",
    "parse_model_parallel",
    "resolve_model_parallel",
    "split_distribution",
]
