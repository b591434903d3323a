"""Where a job fits: every instance type of the catalog, with the fewest instances it needs."""

from __future__ import annotations

import attrs

import instance_catalog
from safe_estimators._memory.accounting import MemoryEstimate
from safe_estimators._memory.fixes import MAX_INSTANCE_COUNT, Job, library_instances, valid
from safe_estimators._memory.layout import memory_layout
from safe_estimators._memory.rule import shape_of_job
from safe_estimators._problems import ConfigError, Problem


@attrs.frozen
class Placement:
    """An instance type and count on which the job fits, with its estimate."""

    instance: instance_catalog.InstanceType
    instance_count: int
    estimate: MemoryEstimate


def placements(
    spec: object, model_parallel: object = None, library: int | None = None, script: object = None
) -> list[Placement]:
    """The GPU instance types (those its model parallel library runs on) on which ``spec``
    fits, each with the fewest instances (up to ``MAX_INSTANCE_COUNT``) its own launcher
    options allow; smallest accelerator memory first, then fewest accelerators.

    Raises ConfigError when the spec has no ``model`` or its shape cannot be completed.
    """
    shape = getattr(spec, "model", None)
    if shape is None:
        raise ConfigError(
            [Problem("model", "is needed to estimate where the job fits.", "add a model: section.")]
        )
    complete, problems = shape_of_job(
        shape, getattr(spec, "hyperparameters", {}), model_parallel, script
    )
    if problems or complete.parameters is None:
        raise ConfigError(
            problems or [Problem("model", "gives no parameters.", "add parameters (e.g. \"7B\").")]
        )
    found = []
    for instance in instance_catalog.instance_types():
        if instance.accelerator_kind != "gpu" or not instance.accelerator_memory_mib:
            continue
        for count in range(1, MAX_INSTANCE_COUNT + 1):
            layout = memory_layout(
                gpus_per_instance=instance.accelerator_count,
                instance_count=count,
                distribution=getattr(spec, "distribution", None),
                model_parallel=model_parallel,
                library=library,
                script=script,
            )
            allowed = library_instances(layout.launcher)
            if not valid(layout) or (allowed is not None and instance.name not in allowed):
                continue
            result = Job(complete, layout, instance, count).estimate()
            if result.fits:
                found.append(Placement(instance, count, result))
                break
    return sorted(
        found,
        key=lambda p: (
            p.instance.accelerator_memory_mib,
            p.instance_count * p.instance.accelerator_count,
            p.instance.name,
        ),
    )


def placements_of_file(path: str) -> list[Placement]:
    """``placements`` of a spec file (its model-parallel options parsed as the rules do)."""
    from safe_estimators._context import Context
    from safe_estimators._files import load_spec
    from safe_estimators._resolve import _model_parallel

    spec = load_spec(path)
    model_parallel = _model_parallel(spec)[0]
    # The library generation follows the container, not the instance type.
    context = Context(spec, None, {}, model_parallel)
    script = None if model_parallel is not None else getattr(context, "script_memory", None)
    return placements(
        spec, model_parallel, getattr(context, "model_parallel_library", None), script
    )

