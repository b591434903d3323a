"""The rule: a job whose estimate exceeds its accelerator's memory is refused at ``model``.

Above the device memory: an error with the breakdown and the smallest fixes that fit (each
verified by re-estimating); above ``WARNING_FRACTION`` of it: a warning. Where the verdict turns
on something the checks cannot see (``Reading``: the script may shard when the launcher leaves
it to the script and the script cannot tell; only adapters train and the frozen weights may load
in 4 bits, which ``model.quantization`` does not say; the weights load in 16 bits with no fp32
master copy in sight; the adapters' count or the frozen weights' dtype unknown), the job is
estimated again under the most optimistic reading of all of them together: if it fits there,
a warning naming what it turns on; if not, it cannot fit whatever those turn out to be, and it is
an error. Without ``model=`` nothing is checked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

import instance_catalog
from safe_estimators._memory.accounting import MemoryEstimate, estimate, gb
from safe_estimators._memory.complete import CompleteShape, complete_shape
from safe_estimators._memory.facts import WARNING_FRACTION
from safe_estimators._memory.fixes import Job, fixes, valid
from safe_estimators._memory.layout import MemoryLayout, memory_layout
from safe_estimators._memory.neuron import per_core
from safe_estimators._memory.shape import ModelShape
from safe_estimators._problems import Fix, Problem, warning

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
                _fix_text(tight := fixes(_tighter(job)))
                or ("" if _option_fixes(tight) else "leave more headroom."),
                fixes=_option_fixes(tight),
            )
        ]
    message = (
        f"the job needs about {gb(result.total)} per accelerator, more than the "
        f"{result.device()}: model states {gb(result.model_states)} "
        f"(weights + gradients + optimizer states); {result.breakdown()} ({result.layout})"
    )
    found = fixes(job)
    options = _option_fixes(found)
    hint = _fix_text(found) or (
        "" if options else
        "no single change found makes it fit; shard over more instances, use tensor or "
        "pipeline parallelism, or a smaller model."
    )
    readings = _readings(job)
    if not readings:
        return [Problem(PATH, message + ".", hint, fixes=options)]
    optimistic = job
    for reading in readings:
        optimistic = reading.apply(optimistic)
    best = optimistic.estimate()
    if not best.fits:
        # Over the device under every reading the sources allow: certain, so an error.
        assumed = "; ".join(dict.fromkeys(reading.assumed for reading in readings))
        return [
            Problem(
                PATH,
                f"{message}. It cannot fit under any reading of what the checks cannot see: "
                f"even {assumed}, it needs {gb(best.total)} per accelerator.",
                hint,
                fixes=options,
            )
        ]
    # The verdict turns on what the checks cannot see: a warning naming it.
    alone = [reading for reading in readings if reading.apply(job).estimate().fits]
    unless = "; or unless ".join(r.unless for r in alone) if alone else (
        "all of these hold: " + "; and ".join(r.unless for r in readings)
    )
    return [warning(PATH, f"{message}, unless {unless}.", hint, fixes=options)]


@attrs.frozen
class Reading:
    """Something the checks cannot see that may make the estimate count high: ``unless`` says
    it in a warning, ``assumed`` in an error, ``apply`` gives the job read most optimistically."""

    unless: str
    assumed: str
    apply: Callable[[Job], Job]


def _readings(job: Job) -> list[Reading]:
    """Every unseen thing the verdict could turn on, each with its most optimistic reading."""
    found: list[Reading] = []
    for high in job.layout.over_counted:
        found.append(
            Reading(
                f"the estimate counts high: {high}",
                "at 8 bytes per parameter (16-bit weights with no fp32 master copy, 16-bit Adam "
                "moments)",
                lambda j: attrs.evolve(j, shape=attrs.evolve(j.shape, master_weights=False)),
            )
        )
    for counted in job.shape.counted_high:
        if counted.kind == "adapters":
            found.append(
                Reading(
                    f"the estimate counts high: {counted}",
                    "with no parameter trained but the frozen weights held",
                    lambda j: attrs.evolve(
                        j, shape=attrs.evolve(j.shape, trainable_parameters=1)
                    ),
                )
            )
        else:
            found.append(
                Reading(
                    f"the estimate counts high: {counted}",
                    "with the frozen weights in 16 bits",
                    lambda j: attrs.evolve(
                        j, shape=attrs.evolve(j.shape, frozen_weight_bytes=None)
                    ),
                )
            )
    shape = job.shape
    adapters_only = shape.trains_adapters or any(c.kind == "adapters" for c in shape.counted_high)
    if shape.quantization is None and adapters_only and not shape.quantization_known:
        found.append(
            Reading(
                "the script loads the frozen weights quantized (bitsandbytes 4-bit, as QLoRA "
                "does): model.quantization does not say",
                "with the frozen weights in 4 bits (QLoRA)",
                lambda j: attrs.evolve(j, shape=attrs.evolve(j.shape, quantization="4bit")),
            )
        )
    layout = job.layout
    if layout.script_may_shard:
        ranks = layout.world_size // (layout.tensor * layout.pipeline)
        if valid(_sharded_everywhere(layout)):
            why = layout.script_unknown
            said = (
                f"the launcher does not say, and the script cannot tell: {'; '.join(why)}"
                if why
                else "the launcher does not say and the script could not be read"
            )
            found.append(
                Reading(
                    "the training script shards the model states itself (FSDP FULL_SHARD, "
                    f"DeepSpeed ZeRO-3): {said}",
                    f"with the model states sharded over all {ranks} GPUs",
                    lambda j: attrs.evolve(j, layout=_sharded_everywhere(j.layout)),
                )
            )
    return found


def _sharded_everywhere(layout: MemoryLayout) -> MemoryLayout:
    """The layout sharded over every rank the tensor and pipeline degrees leave."""
    # Only a plain data-parallel layout leaves sharding to the script (memory_layout), so tensor
    # and pipeline are 1 here and "/" for "//" or "*" changes nothing: no mutant can be told apart.
    ranks = layout.world_size // (layout.tensor * layout.pipeline)  # pragma: no mutate
    return attrs.evolve(layout, shard=ranks)


def _fix_text(found: list[Any]) -> str:
    found = [fix for fix in found if not getattr(fix, "options", ())]
    if not found:
        return ""
    if len(found) == 1:
        return f"{found[0]}."
    return "any one of: " + "; ".join(str(f) for f in found) + "."


def _option_fixes(found: list[Any]) -> tuple[Fix, ...]:
    """The fixes that are changes of the job's options (another instance type or count), for
    the checks to apply and check again before they are offered."""
    return tuple(Fix(fix.options, str(fix)) for fix in found if getattr(fix, "options", ()))


def _tighter(job: Job) -> Job:
    # For the warning's fixes: the same job on a device with only WARNING_FRACTION of memory.
    # A Job is only made for an accelerator whose memory is known (job_estimate): "or 0" is
    # never taken, so its mutants cannot be told apart.
    mib = job.instance.accelerator_memory_mib or 0  # pragma: no mutate
    return attrs.evolve(
        job, instance=attrs.evolve(job.instance, accelerator_memory_mib=int(mib * WARNING_FRACTION))
    )
