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
    device (chip) count is in ``accelerator_count``. ``neuron_cores`` is the number of
    NeuronCores a Neuron instance exposes to training processes under the Neuron runtime's default
    logical NeuronCore configuration (one process each; ``ml.trn1.32xlarge``: 32, from 16 chips
    with 2 cores each; ``ml.trn2.48xlarge``: 64, since its 128 physical cores are paired by
    default); None for types without NeuronCores. ``accelerator_memory_mib`` is per device and
    None when the type has no accelerator (or no source publishes the figure). ``source`` names
    where the facts come from: ``"ec2-describe-instance-types"`` or ``"supplement:<source>"``.
    ``accelerator`` gives the accelerator's own facts (architecture, bf16 and fp8 support).
    ``cpu_architecture`` is the host CPU's (``ProcessorInfo.SupportedArchitectures``:
    ``"x86_64"`` or ``"arm64"``); a container image must be built for it.
    ``nvme_disks`` x ``nvme_disk_gb`` is the NVMe instance storage (``InstanceStorageInfo``):
    0 disks for EBS-only types, None when no source gives it. ``corrections`` names the
    supplement source of facts that override the API's answer (``"supplement:<source>"``).
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
    neuron_cores: int | None = None
    cpu_architecture: str = "x86_64"
    nvme_disks: int | None = None
    nvme_disk_gb: int | None = None
    corrections: str | None = None

    @property
    def nvme_total_gb(self) -> int | None:
        """The NVMe instance storage in GB (None: not recorded)."""
        if self.nvme_disks is None or self.nvme_disk_gb is None:
            return None
        return self.nvme_disks * self.nvme_disk_gb

    @property
    def accelerator(self) -> Accelerator | None:
        """The facts of this type's accelerator model (None: no accelerator, or not recorded)."""
        if self.accelerator_name is None:
            return None
        from instance_catalog._catalog import accelerators  # the data file, loaded once

        return accelerators().get(self.accelerator_name)

    def describe_accelerators(self) -> str:
        """The accelerators in words: ``"8 A100 GPUs"``, ``"32 NeuronCores (16 Trainium)"``."""
        if self.accelerator_kind == "gpu":
            plural = "s" if self.gpu_count != 1 else ""
            return f"{self.gpu_count} {self.accelerator_name} GPU{plural}"
        if self.accelerator_kind == "neuron":
            chips = f"{self.accelerator_count} {self.accelerator_name}"
            if self.neuron_cores is None:
                return f"{chips} devices (no GPUs)"
            plural = "s" if self.neuron_cores != 1 else ""
            return f"{self.neuron_cores} NeuronCore{plural} ({chips})"
        return "no GPUs"

    @property
    def family(self) -> str:
        """The instance family: ``"p3"`` for ``ml.p3.8xlarge``, ``"p6-b200"``, ``"g4dn"``."""
        return self.name.split(".")[1]

    @property
    def size(self) -> str:
        """The instance size: ``"8xlarge"`` for ``ml.p3.8xlarge``."""
        return self.name.split(".")[2]


@attrs.frozen(kw_only=True)
class Accelerator:
    """What one accelerator model supports, from its vendor's documentation.

    ``bf16``: bfloat16 arithmetic in hardware (NVIDIA from Ampere, compute capability 8.0; AWS
    Trainium). ``fp8``: 8-bit floating point tensor operations (NVIDIA from compute capability 8.9,
    Ada Lovelace and Hopper; AWS Trainium). ``compute_capability`` is NVIDIA's number, None for
    other vendors. ``source`` names the document the facts come from.
    """

    name: str
    vendor: str
    architecture: str
    compute_capability: str | None
    bf16: bool
    fp8: bool
    source: str


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
