"""The rule: a job whose estimate exceeds its accelerator's memory is refused at ``model``.

Above the device memory: an error with the breakdown and the smallest fixes that fit (each
verified by re-estimating); above ``WARNING_FRACTION`` of it: a warning. When the launcher
leaves sharding to the script (torchrun, DDP) and sharding over the whole cluster would fit,
a warning instead of an error: the script may well shard; likewise when only the adapters train
and the job would fit with the frozen weights in 4 bits (QLoRA), unless ``model.quantization``
says how they are loaded. Without ``model=`` nothing is checked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

import instance_catalog
from safe_estimators._memory.accounting import MemoryEstimate, estimate, gb
from safe_estimators._memory.complete import CompleteShape, complete_shape
from safe_estimators._memory.facts import WARNING_FRACTION
from safe_estimators._memory.fixes import Job, fixes, valid
from safe_estimators._memory.layout import memory_layout
from safe_estimators._memory.neuron import per_core
from safe_estimators._memory.shape import ModelShape
from safe_estimators._problems import Problem, warning

PATH = "model"


def mixed_precision(model_parallel: Any) -> str | None:
    if getattr(model_parallel, "bf16", None):
        return "bf16"
    if getattr(model_parallel, "fp16", None) or getattr(model_parallel, "fp16_params", None):
        return "fp16"
    return None


def shape_of_job(
    shape: ModelShape, hyperparameters: Mapping[str, Any], model_parallel: Any, script: Any = None
) -> tuple[CompleteShape, list[Problem]]:
    """The shape completed with what the job's hyperparameters, launcher options and script
    (``_script_checks.ScriptMemoryFacts``, or None) say."""
    return complete_shape(
        shape,
        hyperparameters,
        mixed_precision=mixed_precision(model_parallel),
        microbatches=getattr(model_parallel, "microbatches", None),
        script=script,
    )


def job_estimate(
    shape: ModelShape | None,
    *,
    instance: instance_catalog.InstanceType | None,
    instance_count: int,
    hyperparameters: Mapping[str, Any],
    distribution: Mapping[str, Any] | None,
    model_parallel: Any,
    library: int | None = None,
    spread_by_script: bool = False,
    script: Any = None,
) -> tuple[Job | None, MemoryEstimate | None, list[Problem]]:
    """The estimate of one job (None without ``model``), and problems reading its shape
    (``spread_by_script`` and ``script``: see ``memory_layout``)."""
    if shape is None:
        return None, None, []
    complete, problems = shape_of_job(shape, hyperparameters, model_parallel, script)
    if complete.parameters is None:
        problems.append(
            warning(
                PATH,
                "gives neither parameters nor the architecture to count them from, so no "
                "memory estimate is made.",
                "add parameters (e.g. \"7B\"), or layers and hidden_size, or config.",
            )
        )
        return None, None, problems
    if instance is not None:
        instance = per_core(instance)  # Trainium: one process per NeuronCore
    gpus = instance.accelerator_count if instance is not None else 1
    layout = memory_layout(
        gpus_per_instance=gpus,
        instance_count=instance_count,
        distribution=distribution,
        model_parallel=model_parallel,
        library=library,
        spread_by_script=spread_by_script,
        script=script,
    )
    if instance is None or instance.accelerator_kind is None or not instance.accelerator_memory_mib:
        # CPU, local mode, or an accelerator whose memory no source gives.
        return None, estimate(complete, layout), problems
    job = Job(complete, layout, instance, instance_count)
    return job, job.estimate(), problems


def memory_problems(job: Job | None, result: MemoryEstimate | None) -> list[Problem]:
    """The rule over one job's estimate."""
    if job is None or result is None or result.fits is None:
        return []
    if result.fits:
        if not result.tight:
            return []
        return [
            warning(
                PATH,
                f"the job needs about {gb(result.total)} per accelerator, "
                f"{result.fraction:.0%} of the {result.device()}, above "
                f"{WARNING_FRACTION:.0%}: the allocator's fragmentation may still run it out "
                f"of memory. {result.breakdown()} ({result.layout}).",
                _fix_text(fixes(_tighter(job))) or "leave more headroom.",
            )
        ]
    message = (
        f"the job needs about {gb(result.total)} per accelerator, more than the "
        f"{result.device()}: model states {gb(result.model_states)} "
        f"(weights + gradients + optimizer states); {result.breakdown()} ({result.layout})"
    )
    found = fixes(job)
    hint = _fix_text(found) or (
        "no single change found makes it fit; shard over more instances, use tensor or "
        "pipeline parallelism, or a smaller model."
    )
    high = (*job.layout.over_counted, *job.shape.counted_high)
    if _fits_if_quantized(job):
        unless = (
            ", unless the script loads the frozen weights quantized (bitsandbytes 4-bit, as "
            "QLoRA does): model.quantization does not say"
        )
        also = f"; or unless the estimate counts high: {'; '.join(high)}" if high else ""
        return [warning(PATH, message + unless + also + ".", hint)]
    if high:
        unless = f", unless the estimate counts high: {'; '.join(high)}."
        return [warning(PATH, message + unless, hint)]
    if job.layout.script_may_shard and _fits_if_script_shards(job):
        why = job.layout.script_unknown
        said = (
            f"the launcher does not say, and the script cannot tell: {'; '.join(why)}"
            if why
            else "the launcher does not say and the script could not be read"
        )
        unless = (
            ", unless the training script shards the model states itself (FSDP FULL_SHARD, "
            f"DeepSpeed ZeRO-3): {said}."
        )
        return [warning(PATH, message + unless, hint)]
    return [Problem(PATH, message + ".", hint)]


def _fix_text(found: list[Any]) -> str:
    if not found:
        return ""
    if len(found) == 1:
        return f"{found[0]}."
    return "any one of: " + "; ".join(str(f) for f in found) + "."


def _tighter(job: Job) -> Job:
    # For the warning's fixes: the same job on a device with only WARNING_FRACTION of memory.
    mib = job.instance.accelerator_memory_mib or 0
    return attrs.evolve(
        job, instance=attrs.evolve(job.instance, accelerator_memory_mib=int(mib * WARNING_FRACTION))
    )


def _fits_if_script_shards(job: Job) -> bool:
    layout = job.layout
    sharded = attrs.evolve(layout, shard=layout.world_size // (layout.tensor * layout.pipeline))
    return valid(sharded) and bool(attrs.evolve(job, layout=sharded).estimate().fits)


def _fits_if_quantized(job: Job) -> bool:
    # Adapter training (trainable_parameters below parameters) with no word on quantization:
    # QLoRA scripts load the frozen model in 4 bits, which the job's options cannot show.
    shape = job.shape
    if shape.quantization is not None or not shape.trains_adapters:
        return False
    quantized = attrs.evolve(shape, quantization="4bit")
    return bool(attrs.evolve(job, shape=quantized).estimate().fits)
