"""Capacity-flexible compute: ModelTrainer's ``Compute.instance_preferences`` (sagemaker 3.x),
an ordered list of instance types of which SageMaker launches the first with capacity.

Sources: sagemaker 3.x's ``sagemaker/core/training/utils.py::validate_instance_preferences``
(the SDK refuses preferences beside ``instance_type``, ``instance_groups``,
``instance_placement_config`` or managed spot, repeated types, a top-level count beside
per-preference counts or neither, and a whole-job training plan beside per-preference plans) and
botocore's ``InstancePreference`` documentation (the same count rule, enforced by the service).
Everything that depends on the instance type is checked for each preference by ``_resolve``;
this module holds what is about the list itself, and what one request must fix for all of them:
the processes per node that a launcher is sent.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import instance_catalog
from safe_estimators._context import Context
from safe_estimators._facts.sdk_files import sdk_generation, sdk_version
from safe_estimators._facts.targets import MODEL_TRAINER, only_for
from safe_estimators._problems import Problem

AT = "compute.instance_preferences"


def _fields(value: object) -> dict[str, Any]:
    if isinstance(value, Mapping):
        return dict(value)
    given = getattr(value, "model_fields_set", None)
    return {name: getattr(value, name) for name in given} if given else {}


def _accelerators(name: str) -> tuple[int, str] | None:
    try:
        entry = instance_catalog.get(name)
    except LookupError:
        return None  # the per-preference run reports it
    if entry.gpu_count:
        return entry.gpu_count, "GPUs"
    if entry.neuron_cores:
        return entry.neuron_cores, "NeuronCores"
    return None


@only_for(MODEL_TRAINER)
def instance_preferences(ctx: Context) -> Iterator[Problem]:
    """The SDK's own checks of the list, and one process count per node for every type."""
    words = ctx.spec.trainer
    if words is None or not words.preferences:
        return
    if sdk_generation() < 3:
        yield Problem(
            AT,
            f"needs sagemaker 3: the ModelTrainer of sagemaker {sdk_version()} has no "
            "instance_preferences in its Compute (its pydantic model refuses the field).",
            "install sagemaker>=3,<4, or give one compute.instance_type.",
        )
        return
    compute = _fields(words.given.get("compute"))
    items = [_fields(item) for item in compute.get("instance_preferences") or ()]
    for field in ("instance_type", "instance_groups", "instance_placement_config"):
        if compute.get(field) is not None:
            yield Problem(
                f"compute.{field}",
                f"is set beside {AT}; the SDK refuses both (Compute validation): a job has one "
                "fixed cluster or a list of preferred types.",
                f"remove compute.{field}, or remove {AT}.",
            )
    if compute.get("enable_managed_spot_training") is True or ctx.spec.use_spot_instances is True:
        yield Problem(
            "compute.enable_managed_spot_training",
            f"is True beside {AT}; the SDK refuses managed spot training with preferred types.",
            f"train on on-demand or training-plan capacity with {AT}, or drop the preferences.",
        )
    kinds = [kind for kind, _ in words.preferences]
    repeated = sorted({kind for kind in kinds if kinds.count(kind) > 1})
    if repeated:
        yield Problem(
            AT,
            f"names {', '.join(repeated)} more than once; an instance type may appear once.",
            "list each instance type once, in the order you prefer them.",
        )
    counted = [item.get("instance_count") is not None for item in items]
    if compute.get("instance_count") is not None and any(counted):
        yield Problem(
            "compute.instance_count",
            f"is set, and so is instance_count on preferences of {AT}; SageMaker takes one or "
            "the other (the SDK refuses both).",
            "keep compute.instance_count (it applies to whichever type wins), or give every "
            "preference its own instance_count and drop the top-level one.",
        )
    elif compute.get("instance_count") is None and not all(counted):
        missing = [str(index) for index, has in enumerate(counted) if not has]
        yield Problem(
            f"{AT}.{missing[0]}",
            f"has no instance_count, and compute.instance_count is not set: preferences "
            f"{', '.join(missing)} would run on no stated number of instances (the SDK refuses "
            "the job).",
            "set compute.instance_count for all, or instance_count on every preference.",
        )
    if compute.get("training_plan_arn") is not None and any(
        item.get("training_plan_arns") for item in items
    ):
        yield Problem(
            "compute.training_plan_arn",
            f"is set, and so are training_plan_arns on preferences of {AT}; the SDK refuses a "
            "whole-job plan beside per-preference ones.",
            "keep one: the whole-job plan, or each preference's own.",
        )
    yield from _processes_per_node(ctx, kinds)


def _processes_per_node(ctx: Context, kinds: list[str]) -> Iterator[Problem]:
    """A launcher's processes per node are one number in the request, derived from the first
    type's accelerators: preferred types with another count would run too many processes (an
    error) or leave accelerators idle."""
    words = ctx.spec.trainer
    assert words is not None
    launcher = next((k for k in ("torch_distributed", "mpi") if k in ctx.launchers), None)
    if launcher is None:
        return
    distributed = words.given.get("distributed")
    if isinstance(distributed, Mapping):  # a spec file's {torchrun: {...}} or {mpi: {...}}
        distributed = next(iter(distributed.values()), None)
    given = _fields(distributed)
    if given.get("process_count_per_node") is not None:
        return  # the user's number: each type's own rules judge it against its accelerators
    counts = {kind: _accelerators(kind) for kind in kinds}
    known = {kind: found for kind, found in counts.items() if found is not None}
    first = kinds[0]
    if first not in known:
        # The first type has no accelerators (or is unknown: its own run says so): the request
        # fixes no count, and each node's driver starts one process per accelerator it has.
        return
    if len({count for count, _ in known.values()}) <= 1:
        return
    shown = ", ".join(f"{kind} has {count} {what}" for kind, (count, what) in known.items())
    sent = known[first][0]
    yield Problem(
        AT,
        f"lists types with different accelerator counts ({shown}); the job's launcher starts "
        f"one number of processes per node, fixed in the request ({sent}, from {first}): on a "
        "type with fewer the extra processes have no accelerator, on one with more they sit "
        "idle.",
        "prefer types with the same accelerator count (ml.p5.48xlarge and ml.p5en.48xlarge, "
        "say), or give one ModelTrainer job per count.",
    )
