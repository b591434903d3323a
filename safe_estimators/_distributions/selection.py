"""Which launcher the SageMaker SDK runs for a ``distribution`` dict: pure functions over the
dict, read by the job's Context (its ``launchers``) and by the launcher modules beside this one.

They take the dict and plain values, never a Context, so that the Context can read them without
the launcher modules (which read the Context) being imported first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from safe_estimators._distributions import is_enabled


def huggingface_launcher(distribution: Mapping[str, Any]) -> str | None:
    """The launcher whose branch the Hugging Face estimator takes, sending nothing else."""
    if is_enabled(distribution.get("pytorchddp")):
        return "pytorchddp"
    if "pytorchddp" not in distribution and is_enabled(distribution.get("torch_distributed")):
        return "torch_distributed"
    return None


def mpi_processes_derived(
    distribution: Mapping[str, Any], estimator: str, gpus_per_instance: int | None
) -> bool:
    """The MPI process count is derived from the GPU count (MPI on, no count given, GPUs known,
    and no launcher beside it that the SDK runs instead)."""
    block = distribution.get("mpi")
    return (
        is_enabled(block)
        and block.get("processes_per_host") is None
        and not is_enabled(distribution.get("torch_distributed"))
        and not (estimator == "huggingface" and huggingface_launcher(distribution))
        and bool(gpus_per_instance)
    )
