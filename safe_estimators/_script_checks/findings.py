"""What the training-script checks take and give back: the job as they see it
(:class:`ScriptContext`) and one problem in a script (:class:`Finding`)."""

from __future__ import annotations

from typing import Literal

import attrs

from safe_estimators._problems import Severity

# How the job starts the entry point; "smp-v1" is MPI with the model parallel library v1,
# "smp-v2" is torchrun with the SMP v2 image (torch.sagemaker), "smddp" is
# smdistributed.dataparallel (through mpirun or torchrun), "pytorchddp" is mpirun.
Launcher = Literal["torchrun", "pytorchddp", "smddp", "mpi", "smp-v1", "smp-v2"]


@attrs.frozen
class ScriptContext:
    """What the checks need to know about the job, resolved from its configuration.

    Attributes:
        training_compiler: SageMaker Training Compiler is on.
        xla_distributed: a compiler job with the ``pytorchxla`` distribution (more than one GPU in
            total): the container launches the entry point through torch_xla's ``xla_spawn``.
        gpus_per_instance: GPUs on each instance; ``None`` when unknown (local mode, a pipeline
            parameter).
        model_parallel: the SageMaker model parallel library (``smdistributed.modelparallel``)
            is on.
        model_parallel_fp16: model parallelism with ``fp16`` on.
        launcher: the multi-process launcher that starts the entry point, ``None`` for a single
            process (or a launcher the checks do not model, such as pytorchxla).
        processes: how many processes the launcher starts in total; ``None`` when unknown.
        instance_type: the instance type name (``ml.trn1.32xlarge``); ``None`` when unknown.
        pytorch_version: the container's full PyTorch version; ``None`` when unknown.
        tensor_parallel_degree, context_parallel_degree, expert_parallel_degree,
            hybrid_shard_degree: the SMP v2 degrees as configured (their defaults otherwise).
        activation_offloading_set: the SMP v2 option ``sm_activation_offloading`` is given.
        use_spot_instances: a managed spot job (it may be interrupted and restarted).
        checkpoint_dir: the local folder SageMaker syncs with ``checkpoint_s3_uri``.
        checkpoint_in_hyperparameters: a hyperparameter names ``checkpoint_dir``, so the
            script may read it from its arguments.
        transformers_version: the Hugging Face container's transformers version; ``None`` when
            unknown (the PyTorch estimator installs it from requirements.txt).
        accelerate_device_map_bypass: the environment sets ``ACCELERATE_BYPASS_DEVICE_MAP=true``,
            which turns off Accelerate's refusal of device_map models in distributed mode.
        hyperparameters: the job's hyperparameters as (name, value) pairs, as the script's
            options receive them (``--name value``), for following a value to its option.
        instance_groups: the groups of a heterogeneous cluster (``"gpu: 2 x
            ml.p4d.24xlarge"``), empty for one homogeneous cluster.
    """

    training_compiler: bool = False
    xla_distributed: bool = False
    gpus_per_instance: int | None = None
    model_parallel: bool = False
    model_parallel_fp16: bool = False
    launcher: Launcher | None = None
    processes: int | None = None
    instance_type: str | None = None
    pytorch_version: str | None = None
    tensor_parallel_degree: int = 1
    context_parallel_degree: int = 1
    expert_parallel_degree: int = 1
    hybrid_shard_degree: int = 0
    activation_offloading_set: bool = False
    use_spot_instances: bool = False
    checkpoint_dir: str = "/opt/ml/checkpoints"
    checkpoint_in_hyperparameters: bool = False
    transformers_version: str | None = None
    accelerate_device_map_bypass: bool = False
    hyperparameters: tuple[tuple[str, str], ...] = ()
    instance_groups: tuple[str, ...] = ()

    @property
    def multi_process(self) -> bool | None:
        """The launcher starts more than one process; ``None`` when the count is unknown."""
        if self.launcher is None:
            return False
        return None if self.processes is None else self.processes > 1


@attrs.frozen
class Finding:
    """One problem found in a training script.

    Attributes:
        file: the script's path as given, or relative to ``source_dir`` when one was given.
        line: 1-based line; 0 when the finding is about the whole file.
        severity: ``"error"`` (the job would fail or train wrongly) or ``"warning"``.
        rule: a short stable id naming the check (``"xla-missing-mp-fn"``), for filtering and
            for tests; an id never changes meaning.
        message: what is wrong, with the numbers involved.
        hint: how to fix it.
    """

    file: str
    line: int
    severity: Severity
    rule: str
    message: str
    hint: str

    def __str__(self) -> str:
        """``file:line: severity: message Fix: hint``; a finding about the whole file (line 0)
        names the file alone."""
        where = f"{self.file}:{self.line}" if self.line else self.file
        text = f"{where}: {self.severity}: {self.message}"
        if self.hint:
            text += f" Fix: {self.hint}"
        return text
