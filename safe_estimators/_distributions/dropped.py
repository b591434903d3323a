"""Launcher settings the Hugging Face estimator never sends to the job.

Facts (SDK 2.257.7): each estimator turns the distribution into hyperparameters in its own
``_<framework>_distribution_configuration``. An enabled ``pytorchddp`` or ``torch_distributed``
takes a branch that sends only that launcher's flag and ``sagemaker_instance_type``; every other
strategy goes through ``Framework._distribution_configuration`` (``estimator.py``).

- The PyTorch estimator's torchrun branch also calls ``_distribution_configuration`` when
  ``smdistributed`` is present (``pytorch/estimator.py``, ``_pytorch_distribution_configuration``),
  so torchrun with SMDDP sends both flags; its ``pytorchddp`` is rewritten to smdistributed
  before that (``smddp.py``), so nothing it runs is dropped here.
- The Hugging Face estimator's branches (``huggingface/estimator.py``,
  ``_huggingface_distribution_configuration``) send the one flag and nothing else: beside
  torchrun or pytorchddp, ``smdistributed.dataparallel`` never reaches the job. The job then runs
  plain torchrun or plain DDP: the training toolkit and the transformers Trainer choose SMDDP from
  ``sagemaker_distributed_dataparallel_enabled`` alone.
- It reads ``pytorchddp`` before ``torch_distributed`` (``if ... elif``): a ``pytorchddp`` block,
  even ``enabled: false``, keeps ``sagemaker_torch_distributed_enabled`` from being sent.

MPI settings dropped the same way are ``mpi.py``'s warning; the model parallel library's own
rules cover ``smdistributed.modelparallel`` (refused with the Hugging Face estimator on v2).
AWS documents SMDDP with the Hugging Face estimator as ``smdistributed.dataparallel`` alone
(mpirun with smddprun), which reaches the job and is not touched here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from safe_estimators._distributions import is_enabled, torchrun
from safe_estimators._distributions.selection import huggingface_launcher
from safe_estimators._distributions.smddp import p5_class
from safe_estimators._facts.targets import ESTIMATOR, only_for
from safe_estimators._problems import Problem, removing

if TYPE_CHECKING:
    from safe_estimators._context import Context

# The only hyperparameters each Hugging Face launcher branch sends, besides the instance type.
_SENT_FLAG = {
    "torch_distributed": "sagemaker_torch_distributed_enabled",
    "pytorchddp": "sagemaker_pytorch_ddp_enabled",
}
_RUNS = {"torch_distributed": "plain torchrun", "pytorchddp": "plain PyTorch DDP over mpirun"}


@only_for(ESTIMATOR)
def dropped_launchers(ctx: Context) -> Iterator[Problem]:
    """SMDDP or torchrun enabled where the Hugging Face estimator never sends it."""
    if ctx.spec.estimator != "huggingface" or ctx.compiler or ctx.model_parallel is not None:
        return
    d = ctx.distribution
    launcher = huggingface_launcher(d)
    smd = d.get("smdistributed")
    if launcher and isinstance(smd, Mapping) and is_enabled(smd.get("dataparallel")):
        yield _smddp_dropped(ctx, launcher)
    if "pytorchddp" in d and torchrun.enabled(d):
        yield _torchrun_dropped(ctx)


def _pytorch_estimator(ctx: Context) -> str:
    version = ctx.pytorch_version or ctx.spec.pytorch_version  # torchrun takes full versions
    written = f", framework_version={version!r}" if version else ""
    return (
        f"build with the PyTorch estimator (estimator: pytorch{written}; transformers in "
        "requirements.txt) with torch_distributed beside smdistributed: it sends both"
    )


def _smddp_dropped(ctx: Context, launcher: str) -> Problem:
    message = (
        f"is dropped: with {launcher} enabled the SageMaker SDK's Hugging Face estimator sends "
        f"only {_SENT_FLAG[launcher]}, not sagemaker_distributed_dataparallel_enabled, so the "
        f"job runs {_RUNS[launcher]} and SMDDP never starts"
    )
    message += " (the PyTorch estimator sends both)." if launcher == "torch_distributed" else "."
    instance = ctx.instance
    if instance is not None and p5_class(instance.family):
        hint = (
            f"on {ctx.instance_name} the SageMaker SDK runs SMDDP only under torchrun, and the "
            f"Hugging Face estimator drops SMDDP there: {_pytorch_estimator(ctx)}; or remove "
            f"smdistributed for {_RUNS[launcher]} with the nccl backend."
        )
    else:
        hint = (
            f"for SMDDP remove {launcher}: smdistributed.dataparallel alone runs mpirun with "
            "smddprun, as AWS documents for Hugging Face; for torchrun with SMDDP, "
            f"{_pytorch_estimator(ctx)}; for {_RUNS[launcher]}, remove smdistributed."
        )
    return Problem("distribution.smdistributed", message, hint)


def _torchrun_dropped(ctx: Context) -> Problem:
    if is_enabled(ctx.distribution.get("pytorchddp")):
        return Problem(
            "distribution.torch_distributed",
            "is dropped: the SageMaker SDK's Hugging Face estimator reads pytorchddp first, and "
            "with pytorchddp enabled it sends only sagemaker_pytorch_ddp_enabled: the job runs "
            "PyTorch DDP over mpirun, not torchrun.",
            "",
            fixes=(
                removing("distribution.pytorchddp", why="for torchrun"),
                removing("distribution.torch_distributed", why="for PyTorch DDP over mpirun"),
            ),
        )
    return Problem(
        "distribution.torch_distributed",
        "is dropped: the SageMaker SDK's Hugging Face estimator reads pytorchddp before "
        "torch_distributed, and a pytorchddp block, even with enabled: false, makes it skip "
        "torch_distributed: sagemaker_torch_distributed_enabled is never sent and torchrun never "
        "starts.",
        "",
        fixes=(removing("distribution.pytorchddp"),),
    )
