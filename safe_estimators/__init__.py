"""safe_estimators: Amazon SageMaker training estimators that are right the first time.

``huggingface()`` and ``pytorch()`` take the SageMaker SDK's keyword arguments plus the user's
intent (``training_compiler=True``, ``model_parallel=...``), derive every hardware-dependent value
from the instance catalog, check everything, report all problems at once in one ``ConfigError``,
and return the real SageMaker estimator. Importing this package does not import ``sagemaker``.
"""

from safe_estimators._build import explain
from safe_estimators._factories import huggingface, pytorch
from safe_estimators._model_parallel import ModelParallel, ParallelLayout
from safe_estimators._problems import ConfigError, Problem
from safe_estimators._resolved import Explanation, Injection
from safe_estimators._spec import TrainingCompiler

__all__ = [
    "ConfigError",
    "Explanation",
    "Injection",
    "ModelParallel",
    "ParallelLayout",
    "Problem",
    "TrainingCompiler",
    "explain",
    "huggingface",
    "pytorch",
]
