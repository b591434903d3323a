"""Where a job fits: every accelerated instance type of the catalog, with the fewest instances
on which the job, as plan would check it there, passes every rule and fits in memory.

Each candidate runs plan's own checks (``_resolve.check``: the compatibility rules, such as the
container's CUDA build against the GPU, and the memory rule) with ``instance_type`` and
``instance_count`` replaced; the instance count grows, up to ``MAX_INSTANCE_COUNT``, through the
memory estimate plan makes (``job_of``), and the count found is checked in full again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

import instance_catalog
from safe_estimators._memory.accounting import MemoryEstimate
from safe_estimators._memory.fixes import MAX_INSTANCE_COUNT
from safe_estimators._memory.neuron import per_core
from safe_estimators._problems import ConfigError, Problem


@attrs.frozen
class Placement:
    """An instance type and count on which the job fits, with its estimate (whose ``layout``
    says how the job was assumed to be laid out there)."""

    instance: instance_catalog.InstanceType
    instance_count: int
    estimate: MemoryEstimate

    @property
    def device(self) -> instance_catalog.InstanceType:
        """The instance as the estimate counts it: per NeuronCore on Trainium."""
        return per_core(self.instance)


def _checked(arguments: Mapping[str, Any], name: str, count: int) -> tuple[Any, list[Problem]]:
    from safe_estimators._resolve import check_arguments

    changed = {**arguments, "instance_type": name, "instance_count": count}
    ctx, problems, _ = check_arguments(changed)
    return ctx, [p for p in problems if p.severity == "error"]


def _estimate_at(ctx: Any, count: int) -> MemoryEstimate | None:
    from safe_estimators._memory import job_of

    counted = attrs.evolve(ctx, spec=attrs.evolve(ctx.spec, instance_count=count))
    return job_of(counted)[1]


# Full checks per instance type at counts where the estimate fits: a launcher's degrees may
# need a few more instances before the job is valid (SMP sharding 8 on 4-GPU types: 2).
_CHECKS_PER_TYPE = 6


def _placement(
    arguments: Mapping[str, Any], entry: instance_catalog.InstanceType
) -> Placement | None:
    ctx, errors = _checked(arguments, entry.name, 1)
    if ctx is None:
        return None
    checks = 1
    for count in range(1, MAX_INSTANCE_COUNT + 1):
        result = _estimate_at(ctx, count)
        if result is None or result.fits is None:
            return None  # no estimate there (no device memory known)
        if not result.fits:
            continue
        if count > 1:
            if checks == _CHECKS_PER_TYPE:
                return None
            checks += 1
            errors = _checked(arguments, entry.name, count)[1]
        if not errors:
            return Placement(entry, count, result)
    return None


def placements_of_arguments(arguments: Mapping[str, Any]) -> list[Placement]:
    """The accelerated instance types on which the job of ``arguments`` (a spec's keyword
    arguments) passes plan's checks and fits, each with the fewest instances; smallest
    per-accelerator memory first, then fewest accelerators.

    Raises ConfigError when the job has no ``model`` or uses ``instance_groups``.
    """
    if arguments.get("model") is None:
        raise ConfigError(
            [Problem("model", "is needed to estimate where the job fits.", "add a model: section.")]
        )
    if arguments.get("instance_groups") is not None:
        raise ConfigError(
            [
                Problem(
                    "instance_groups",
                    "name the instance types themselves; --fits varies instance_type.",
                    "check each group's type with plan instead.",
                )
            ]
        )
    found = [
        placement
        for entry in instance_catalog.instance_types()
        if entry.accelerator_kind is not None
        and (placement := _placement(arguments, entry)) is not None
    ]
    return sorted(
        found,
        key=lambda p: (
            p.device.accelerator_memory_mib,
            p.instance_count * p.device.accelerator_count,
            p.instance.name,
        ),
    )


def placements_of_file(path: str) -> list[Placement]:
    """``placements_of_arguments`` of a spec file; ConfigError when the file itself is wrong."""
    from safe_estimators._spec_files.read import read_spec

    arguments, problems = read_spec(path)
    if arguments is None or any(p.severity == "error" for p in problems):
        raise ConfigError(problems, source=str(path))
    return placements_of_arguments(arguments)
