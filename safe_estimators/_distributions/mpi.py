"""MPI (``distribution={"mpi": {"enabled": True, ...}}``), the launcher of Horovod-style jobs.

Facts: the SDK sends ``sagemaker_mpi_num_of_processes_per_host`` only when
``processes_per_host`` is set (``Framework._distribution_configuration``); without it the
training toolkit's MPI runner starts one process per GPU. Injecting that same number makes the
count the job will use explicit, so plans and explanations show it and the rules check it.
Under torchrun the PyTorch and Hugging Face estimators send no MPI settings at all (their
``torch_distributed`` branch; the PyTorch one does beside smdistributed), nor does the Hugging
Face estimator beside an enabled ``pytorchddp``, so ``mpi`` there is ignored. Trainium refuses
MPI (see ``torchrun.trainium_only_torchrun``). SMP v1 jobs get their MPI block from
``model_parallel``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from safe_estimators._distributions import is_enabled, torchrun
from safe_estimators._distributions.instance_groups.spec import group_note
from safe_estimators._distributions.selection import huggingface_launcher, mpi_processes_derived
from safe_estimators._facts.targets import ESTIMATOR
from safe_estimators._problems import Problem, count, removing, setting
from safe_estimators._resolved import Injection

if TYPE_CHECKING:
    from safe_estimators._context import Context

PATH = "distribution.mpi.processes_per_host"


def enabled(distribution: Mapping[str, Any]) -> bool:
    """MPI is on: the SDK reads ``mpi.enabled`` (default False)."""
    return is_enabled(distribution.get("mpi"))


def injects_processes(ctx: Context) -> bool:
    """The process count is derived from the GPU count (MPI on, no count given, GPUs known)."""
    return mpi_processes_derived(ctx.distribution, ctx.spec.estimator, ctx.gpus_per_instance)


def mpi_rules(ctx: Context) -> Iterator[Problem]:
    """Idle GPUs with too few processes, and MPI settings that torchrun drops."""
    block = ctx.distribution.get("mpi")
    if not isinstance(block, Mapping):
        return
    launcher = _dropped_by(ctx)
    if launcher == "torch_distributed":
        yield Problem(
            "distribution.mpi",
            "is ignored: with torch_distributed enabled the SageMaker SDK launches torchrun and "
            "sends none of the MPI settings.",
            "",
            "warning",
            fixes=(
                removing("distribution.mpi", why="torchrun starts one process per GPU"),
                removing("distribution.torch_distributed", why="to launch with mpirun"),
            ),
        )
        return
    if launcher == "pytorchddp":
        yield Problem(
            "distribution.mpi",
            "is ignored: with pytorchddp enabled the SageMaker SDK's Hugging Face estimator "
            "sends only sagemaker_pytorch_ddp_enabled (PyTorch DDP over mpirun, one process per "
            "GPU) and none of the MPI settings.",
            "",
            "warning",
            fixes=(
                removing("distribution.mpi"),
                removing("distribution.pytorchddp", why="to launch with these MPI settings"),
            ),
        )
        return
    processes = block.get("processes_per_host")
    gpus = ctx.gpus_per_instance
    if not enabled(ctx.distribution) or type(processes) is not int or not gpus:
        return
    if 0 < processes < gpus:
        idle = gpus - processes
        yield Problem(
            PATH,
            f"is {processes}, but {ctx.instance_name}{group_note(ctx.group)} has "
            f"{count(gpus, 'GPU')}: {count(idle, 'GPU')} per instance "
            f"({idle * ctx.instance_count} in total) would sit idle.",
            f"pick an instance type with {count(processes, 'GPU')}.",
            "warning",
            fixes=(setting((PATH, gpus), why="one process per GPU"),),
        )


def _dropped_by(ctx: Context) -> str | None:
    """The launcher whose branch sends no MPI setting, when one is enabled.

    The PyTorch estimator's torchrun branch sends them beside smdistributed; the Hugging Face
    estimator's torchrun and pytorchddp branches never do (see ``dropped.py``).
    """
    d = ctx.distribution
    if ctx.target != ESTIMATOR:  # the estimators' dispatch; ModelTrainer takes one launcher
        return None
    if ctx.spec.estimator == "huggingface" and ctx.model_parallel is None:
        return huggingface_launcher(d)
    return "torch_distributed" if torchrun.enabled(d) and "smdistributed" not in d else None


def resolve_mpi(ctx: Context, kwargs: dict[str, Any], record: list[Injection]) -> None:
    """Inject ``processes_per_host`` = GPUs per instance, the count the toolkit would start."""
    if not injects_processes(ctx):
        return
    gpus = ctx.gpus_per_instance
    kwargs["distribution"]["mpi"] = {**kwargs["distribution"]["mpi"], "processes_per_host": gpus}
    record.append(
        Injection(
            PATH,
            gpus,
            f"{ctx.instance_name}{group_note(ctx.group)} has {count(gpus, 'GPU')}"
            f"{ctx.gpu_assumption}: "
            "one MPI process per GPU, the count the training toolkit starts without it, now "
            "explicit and checked.",
        )
    )
