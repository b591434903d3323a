"""Will it fit? The per-accelerator memory estimate of a job, before launch.

- ``ModelShape`` (``shape``): the model and training step, as the user gives them (public).
- ``complete_shape`` (``complete``): the shape filled in from a Hugging Face config.json and
  the hyperparameters.
- ``memory_layout`` (``layout``): the one adapter from the job's launcher options (SMP v1,
  SMP v2, plain data parallelism) to the degrees that divide memory.
- ``estimate`` / ``MemoryEstimate`` (``accounting``): ZeRO's model states and Korthikanti et
  al.'s activations per accelerator; the constants and their sources are in ``facts``.
- ``memory_problems`` (``rule``) and ``fixes``: the rule over the estimate, and the smallest
  changes that fit, each verified by re-estimating.

Nothing here imports ``sagemaker``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

import attrs

from safe_estimators._memory.shape import ModelShape
from safe_estimators._problems import Problem, problem_source

if TYPE_CHECKING:
    from safe_estimators._memory.accounting import MemoryEstimate, estimate
    from safe_estimators._memory.complete import complete_shape
    from safe_estimators._memory.fixes import Job
    from safe_estimators._memory.layout import MemoryLayout, memory_layout

__all__ = [
    "MemoryEstimate",
    "MemoryLayout",
    "ModelShape",
    "check_memory",
    "complete_shape",
    "estimate",
    "memory_layout",
]

# Loaded on first use: ModelShape is part of every spec, the estimate only of jobs with model=.
_LAZY = {
    "MemoryEstimate": "accounting",
    "estimate": "accounting",
    "complete_shape": "complete",
    "MemoryLayout": "layout",
    "memory_layout": "layout",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def job_of(ctx: Any) -> tuple[Job | None, MemoryEstimate | None, list[Problem]]:
    """The memory estimate of a checked job's context (``_rules.Context``)."""
    spec = ctx.spec
    if spec.model is None:
        return None, None, []
    from safe_estimators._memory.rule import job_estimate

    return job_estimate(
        spec.model,
        instance=ctx.instance,
        instance_count=ctx.instance_count,  # the launch group's, or a pipeline parameter's default
        hyperparameters=spec.hyperparameters,
        distribution=spec.distribution,
        model_parallel=spec.model_parallel if ctx.model_parallel is None else ctx.model_parallel,
        library=ctx.model_parallel_library,
        spread_by_script=_spreads(ctx),
        script=_script_facts(ctx),
    )


def _script_facts(ctx: Any) -> Any:
    # What the script does counts only where it decides: a data-parallel launcher (the SMP
    # options say their own layout) or no launcher at all (precision, checkpointing).
    if ctx.model_parallel is not None:
        return None
    script = ctx.script_memory
    fact = getattr(script, "frozen_weights", None)
    if fact is None or fact.value != "default":
        return script
    # from_pretrained without a dtype: float32 in transformers 4, the checkpoint's dtype
    # ("auto") from transformers 5 (its from_pretrained's dtype default); the Hugging Face
    # estimator says which the container has, the PyTorch estimator does not.
    from packaging.version import InvalidVersion, Version

    version = ctx.spec.transformers_version if ctx.spec.estimator == "huggingface" else None
    try:
        major = Version(str(version)).major if version is not None else None
    except InvalidVersion:
        major = None
    if major is None:
        return script
    if major >= 5:
        return attrs.evolve(script, frozen_weights=None)
    how = f"{fact.how} (transformers {version} loads float32)"
    return attrs.evolve(script, frozen_weights=attrs.evolve(fact, value="fp32", how=how))


def _spreads(ctx: Any) -> bool:
    # The script is read only where it could matter: several GPUs and no launcher.
    gpus = ctx.instance.accelerator_count if ctx.instance is not None else 0
    if gpus <= 1 or ctx.model_parallel is not None or ctx.distribution:
        return False
    return bool(ctx.script_device_use == "device_map")


@problem_source(
    "memory-fit",
    "With a model: section, the estimated memory of one accelerator (model states as ZeRO "
    "counts them, activations as Korthikanti et al., with the parallel layout the job "
    "configures) must fit the accelerator's memory: an error when it cannot, a warning when "
    "it is tight or when the section gives too little to estimate.",
)
def check_memory(ctx: Any) -> tuple[MemoryEstimate | None, list[Problem]]:
    """The estimate of a job and the rule's problems (none without ``model``)."""
    job, result, problems = job_of(ctx)
    if job is None:
        return result, problems
    from safe_estimators._memory.rule import memory_problems

    return result, problems + memory_problems(job, result)
