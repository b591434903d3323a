"""The record of one training instance type and the error for names that are not one."""

from __future__ import annotations

from typing import Literal

import attrs

AcceleratorKind = Literal["gpu", "neuron"]


@attrs.frozen(kw_only=True)
class InstanceType:
    """The hardware of one SageMaker training instance type, as EC2 describes it.

    ``gpu_count`` counts NVIDIA/AMD GPUs only: Trainium and Inferentia devices are accelerators
    (``accelerator_kind == "neuron"``) but not GPUs, so ``gpu_count`` is 0 for them and their
    device count is in ``accelerator_count``. ``accelerator_memory_mib`` is per device and None
    when the type has no accelerator (or no source publishes the figure). ``source`` names where
    the facts come from: ``"ec2-describe-instance-types"`` or ``"supplement:<source>"``.
    """

    name: str
    gpu_count: int
    accelerator_kind: AcceleratorKind | None
    accelerator_name: str | None
    accelerator_count: int
    accelerator_memory_mib: int | None
    vcpus: int
    memory_mib: int
    efa_supported: bool
    source: str

    @property
    def family(self) -> str:
        """The instance family: ``"p3"`` for ``ml.p3.8xlarge``, ``"p6-b200"``, ``"g4dn"``."""
        return self.name.split(".")[1]

    @property
    def size(self) -> str:
        """The instance size: ``"8xlarge"`` for ``ml.p3.8xlarge``."""
        return self.name.split(".")[2]


class UnknownInstanceType(LookupError):
    """A string that is not a SageMaker training instance type.

    ``name`` is what was asked for; ``suggestions`` are the closest real types, best first
    (possibly empty), so callers can word their own message.
    """

    def __init__(self, name: str, suggestions: list[str]) -> None:
        self.name = name
        self.suggestions = suggestions
        hint = (
            f"did you mean {' or '.join(repr(s) for s in suggestions)}?"
            if suggestions
            else "instance_catalog.instance_types() lists every training type."
        )
        super().__init__(f"{name!r} is not a SageMaker training instance type; {hint}")

    def __reduce__(self) -> tuple[type[UnknownInstanceType], tuple[str, list[str]]]:
        # The message is derived, so rebuild from the fields (pickle, multiprocessing).
        return (type(self), (self.name, self.suggestions))
