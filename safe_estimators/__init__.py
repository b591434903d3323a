"""safe_estimators: Amazon SageMaker training estimators that are right the first time.

``huggingface()`` and ``pytorch()`` take the SageMaker SDK's keyword arguments plus the user's
intent (``training_compiler=True``, ``model_parallel=...``), derive every hardware-dependent value
from the instance catalog, check everything, report all problems at once in one ``ConfigError``,
and return the real SageMaker estimator. Spec files go through the same path: ``load_spec``,
``build`` and ``plan`` (an offline CreateTrainingJob request). Importing this package does not
import ``sagemaker``; only building an estimator does.
"""

from safe_estimators._build import explain
from safe_estimators._distributions.model_parallel import ModelParallel, ParallelLayout
from safe_estimators._factories import build, huggingface, pytorch
from safe_estimators._files import load_spec
from safe_estimators._plan import Plan, plan
from safe_estimators._problems import ConfigError, Problem
from safe_estimators._resolved import Explanation, Injection
from safe_estimators._script_checks import Finding, ScriptContext, check_script, check_source
from safe_estimators._spec import JobSpec, TrainingCompiler

__all__ = [
    "ConfigError",
    "Explanation",
    "Finding",
    "Injection",
    "JobSpec",
    "ModelParallel",
    "ParallelLayout",
    "Plan",
    "Problem",
    "ScriptContext",
    "TrainingCompiler",
    "build",
    "check_script",
    "check_source",
    "explain",
    "huggingface",
    "load_spec",
    "plan",
    "pytorch",
]
