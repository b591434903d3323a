"""What the SageMaker SDK adds to a job's hyperparameters and environment, per launcher.

CreateTrainingJob's limits (100 hyperparameters, 100 environment entries) count these too, so a
job is checked with them. A test builds each launcher's job with the installed SDK and compares
the request it captures with these tables.
"""

from __future__ import annotations

# Hyperparameters the SDK sets for every script-mode job (sagemaker.model's *_PARAM_NAME).
BASE_HYPERPARAMETERS: tuple[str, ...] = (
    "sagemaker_program",
    "sagemaker_submit_directory",
    "sagemaker_container_log_level",
    "sagemaker_job_name",
    "sagemaker_region",
)

# Added on top of the base, by what the job uses ("mpi.processes_per_host": only when the MPI
# distribution sets processes_per_host; the SDK leaves it out otherwise).
LAUNCHER_HYPERPARAMETERS: dict[str, tuple[str, ...]] = {
    "compiler": ("sagemaker_training_compiler_enabled", "sagemaker_training_compiler_debug_mode"),
    "pytorchxla": ("sagemaker_pytorch_xla_multi_worker_enabled",),
    "mpi": ("sagemaker_mpi_enabled", "sagemaker_mpi_custom_mpi_options"),
    "mpi.processes_per_host": ("sagemaker_mpi_num_of_processes_per_host",),
    "smdistributed.modelparallel": (
        "mp_parameters",
        "sagemaker_distributed_dataparallel_enabled",
        "sagemaker_instance_type",
    ),
    "torch_distributed": ("sagemaker_torch_distributed_enabled", "sagemaker_instance_type"),
    # Any smdistributed block; SMDDP on (smdistributed.dataparallel.enabled) adds its options.
    "smdistributed": ("sagemaker_distributed_dataparallel_enabled", "sagemaker_instance_type"),
    "smdistributed.dataparallel": ("sagemaker_distributed_dataparallel_custom_mpi_options",),
    # Hugging Face's pytorchddp (the PyTorch estimator runs it as smdistributed.dataparallel).
    "pytorchddp": ("sagemaker_pytorch_ddp_enabled", "sagemaker_instance_type"),
    "instance_groups": ("sagemaker_distribution_instance_groups",),
    # Sent whenever the block is present (enabled or not), read by no PyTorch container.
    "parameter_server": ("sagemaker_parameter_server_enabled",),
}


# What ModelTrainer adds (both SDK generations): only the SMP v2 options, as mp_parameters
# (Torchrun(smp=SMP(...)), model_trainer.py's _create_training_job_args); the program, code
# location and launcher settings travel in the sm_drivers channel instead.
MODEL_TRAINER_HYPERPARAMETERS: dict[str, tuple[str, ...]] = {
    "smdistributed.modelparallel": ("mp_parameters",),
}


def sdk_hyperparameters(launchers: tuple[str, ...], target: str = "estimator") -> frozenset[str]:
    """The hyperparameter names the SDK adds for a job using ``launchers`` (table keys), when
    built as ``target``."""
    trainer = target != "estimator"
    names = set() if trainer else set(BASE_HYPERPARAMETERS)
    table = MODEL_TRAINER_HYPERPARAMETERS if trainer else LAUNCHER_HYPERPARAMETERS
    for launcher in launchers:
        names.update(table.get(launcher, ()))
    return frozenset(names)
