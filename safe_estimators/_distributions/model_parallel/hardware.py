"""What the instance's accelerators can do, in the model parallel rules' terms (both libraries).

The facts (GPU model, NeuronCores, bf16 per accelerator) are the instance catalog's; this
module only words them for problems.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Protocol, TypeVar

import instance_catalog
from safe_estimators._problems import Problem, setting, warning


class _OnGpus(Protocol):
    @property
    def gpus(self) -> int: ...


_J = TypeVar("_J", bound=_OnGpus)


def needs_gpus(rule: Callable[[_J], list[Problem]]) -> Callable[[_J], list[Problem]]:
    """Rules about process counts mean nothing without GPUs (reported once, elsewhere)."""

    def guarded(job: _J) -> list[Problem]:
        return rule(job) if job.gpus > 0 else []

    functools.update_wrapper(guarded, rule)  # its name, module and docstring: its rule id
    return guarded


def catalog_entry(instance_type: str) -> instance_catalog.InstanceType | None:
    try:
        return instance_catalog.get(instance_type)
    except (LookupError, TypeError):
        return None


def no_gpus_problem(instance_type: str, fix: str) -> Problem:
    """The instance has no NVIDIA GPUs, said in its own terms (``32 NeuronCores (16 Trainium)``)."""
    entry = catalog_entry(instance_type)
    has = entry.describe_accelerators() if entry else "no GPUs"
    neuron = entry is not None and entry.accelerator_kind == "neuron"
    return Problem(
        "instance_type",
        f"{instance_type} has {has}"
        + (", and no NVIDIA GPUs" if neuron else "")
        + "; the model parallel library runs one process per NVIDIA GPU.",
        fix
        + (
            " On Trainium, use the Neuron SDK's own parallelism (neuronx-distributed)."
            if neuron
            else ""
        ),
    )


def unlisted_instance(instance_type: str, supported: Iterable[str], library: str) -> list[Problem]:
    """A warning when AWS does not list the type for the library (it may still run)."""
    listed = list(supported)
    if instance_type in listed:
        return []
    return [
        warning(
            "instance_type",
            f"{instance_type} is not among the instance types AWS lists for the model parallel "
            f"library {library} ({', '.join(listed)}).",
            "use one of those unless you have tested this one.",
        )
    ]


def bf16_hardware_problems(
    instance_type: str, where: str, supported: Iterable[str]
) -> list[Problem]:
    """bf16 asked for on an accelerator without bfloat16 arithmetic (V100, T4, K80)."""
    entry = catalog_entry(instance_type)
    accelerator = entry.accelerator if entry else None
    if accelerator is None or accelerator.bf16:
        return []
    having = [
        name
        for name in supported
        if (other := catalog_entry(name)) is not None
        and other.accelerator is not None
        and other.accelerator.bf16
    ]
    with_models = ", ".join(f"{name} ({_gpu_model(name)})" for name in having)
    return [
        Problem(
            where,
            f"bf16 needs an accelerator with bfloat16 arithmetic, and {instance_type} has "
            f"{accelerator.name} GPUs ({accelerator.architecture}, compute capability "
            f"{accelerator.compute_capability}), which have none (NVIDIA has it from Ampere on).",
            f"use fp16 on {instance_type}, or an instance type with bf16: {with_models}.",
            fixes=tuple(setting(("instance_type", name)) for name in having[:2]),
        )
    ]


def _gpu_model(name: str) -> str:
    entry = catalog_entry(name)
    return entry.accelerator_name or "" if entry else ""
