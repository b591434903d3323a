"""safe_estimators: Amazon SageMaker training estimators that are right the first time.

``huggingface()`` and ``pytorch()`` take the SageMaker SDK's keyword arguments plus the user's
intent (``training_compiler=True``, ``model_parallel=...``), derive every hardware-dependent value
from the instance catalog, check everything, report all problems at once in one ``ConfigError``,
and return the real SageMaker estimator; ``model_trainer()`` builds the same job as a
``ModelTrainer`` (sagemaker 2.x's ``sagemaker.modules.train`` or 3.x's ``sagemaker.train``).
Spec files go through the same path: ``load_spec``, ``build`` and ``plan`` (an offline
CreateTrainingJob request); ``preflight`` checks a job against the AWS account, read-only.
Importing this package does not import ``sagemaker``; only building
does.
"""

from typing import TYPE_CHECKING

__all__ = [
    "ConfigError",
    "Explanation",
    "Finding",
    "Injection",
    "JobSpec",
    "MemoryEstimate",
    "ModelParallel",
    "ModelShape",
    "ParallelLayout",
    "Plan",
    "PreflightResult",
    "Problem",
    "ScriptContext",
    "TrainingCompiler",
    "build",
    "check_script",
    "check_source",
    "cpt_trainer",
    "dpo_trainer",
    "explain",
    "huggingface",
    "load_spec",
    "model_trainer",
    "plan",
    "preflight",
    "pytorch",
    "remote",
    "rlaif_trainer",
    "rlvr_trainer",
    "sft_trainer",
]

# The module of each public name. A name's module is imported on first use, so that
# `import safe_estimators` is cheap and `safe-estimators validate` loads neither the builder nor
# the plan (nor the script checks, for a spec without a local entry point).
_HOMES = {
    "ConfigError": "_problems",
    "Explanation": "_resolved",
    "Finding": "_script_checks",
    "Injection": "_resolved",
    "JobSpec": "_spec",
    "MemoryEstimate": "_memory",
    "ModelParallel": "_distributions.model_parallel",
    "ModelShape": "_memory",
    "ParallelLayout": "_distributions.model_parallel",
    "Plan": "_commands.plan",
    "PreflightResult": "_preflight",
    "Problem": "_problems",
    "ScriptContext": "_script_checks",
    "TrainingCompiler": "_spec",
    "build": "_commands.factories",
    "check_script": "_script_checks",
    "check_source": "_script_checks",
    "explain": "_targets",
    "huggingface": "_commands.factories",
    "load_spec": "_commands.validate",
    "model_trainer": "_commands.factories",
    "plan": "_commands.plan",
    "preflight": "_preflight",
    "pytorch": "_commands.factories",
    "remote": "_commands.factories",
    "sft_trainer": "_commands.factories",
    "dpo_trainer": "_commands.factories",
    "rlvr_trainer": "_commands.factories",
    "rlaif_trainer": "_commands.factories",
    "cpt_trainer": "_commands.factories",
}

if TYPE_CHECKING:  # what type checkers and IDEs see: the same names, imported eagerly
    from safe_estimators._commands.factories import (
        build,
        cpt_trainer,
        dpo_trainer,
        huggingface,
        model_trainer,
        pytorch,
        remote,
        rlaif_trainer,
        rlvr_trainer,
        sft_trainer,
    )
    from safe_estimators._commands.plan import Plan, plan
    from safe_estimators._commands.validate import load_spec
    from safe_estimators._distributions.model_parallel import ModelParallel, ParallelLayout
    from safe_estimators._memory import MemoryEstimate, ModelShape
    from safe_estimators._preflight import PreflightResult, preflight
    from safe_estimators._problems import ConfigError, Problem
    from safe_estimators._resolved import Explanation, Injection
    from safe_estimators._script_checks import Finding, ScriptContext, check_script, check_source
    from safe_estimators._spec import JobSpec, TrainingCompiler
    from safe_estimators._targets import explain
else:
    # Not shown to type checkers: a module __getattr__ would make every misspelt name valid.

    def __getattr__(name: str) -> object:
        home = _HOMES.get(name)
        if home is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
        globals()[name] = value  # later lookups are plain attribute reads
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *__all__})


del TYPE_CHECKING
