"""How the estimator's options map onto ModelTrainer's (``sagemaker.modules.train`` in sagemaker
2.x, ``sagemaker.train`` in 3.x), read from both SDKs' ``model_trainer.py`` and ``configs.py``.

The spec is written in the estimator's words; the ModelTrainer target builds the same job from
them. Each estimator keyword a spec may pass through (``JobSpec.extra``) is carried into a
ModelTrainer config, is already what ModelTrainer does, or has no counterpart (refused, never
dropped).
"""

from __future__ import annotations

# Estimator keyword -> where ModelTrainer takes it ("config.field", or the with_* method).
CARRIED: dict[str, str] = {
    "base_job_name": "base_job_name",
    "tags": "tags",
    "output_path": "output_data_config.s3_output_path",
    "output_kms_key": "output_data_config.kms_key_id",
    "disable_output_compression": "output_data_config.compression_type",
    "volume_size": "compute.volume_size_in_gb",
    "volume_kms_key": "compute.volume_kms_key_id",
    "keep_alive_period_in_seconds": "compute.keep_alive_period_in_seconds",
    "training_plan": "compute.training_plan_arn",
    "subnets": "networking.subnets",
    "security_group_ids": "networking.security_group_ids",
    "enable_network_isolation": "networking.enable_network_isolation",
    "checkpoint_local_path": "checkpoint_config.local_path",
    "input_mode": "training_input_mode",
    "max_retry_attempts": "with_retry_strategy(RetryStrategy(maximum_retry_attempts=...))",
    "metric_definitions": "with_metric_definitions([MetricDefinition(name=..., regex=...)])",
}

# Estimator keywords whose value here is what ModelTrainer does anyway: it sends no Debugger
# hook and no profiler configuration (its request builder has neither field).
SAME_AS_MODEL_TRAINER: dict[str, object] = {
    "disable_profiler": True,
    "debugger_hook_config": False,
}

# ModelTrainer's own max run when none is given (2.x model_post_init, 3.x
# TrainDefaults.get_stopping_condition: max_runtime_in_seconds=3600); the estimator's is
# tables.DEFAULT_MAX_RUN (24 h), which the ModelTrainer target sends explicitly.
MODEL_TRAINER_MAX_RUN = 60 * 60

# The file the estimators' containers install before training when source_dir has it (the
# SageMaker training toolkit); ModelTrainer's sm_train.sh installs only SourceCode.requirements.
REQUIREMENTS_FILE = "requirements.txt"

# Entry scripts ModelTrainer's basic script driver runs (_prepare_train_script).
ENTRY_SCRIPT_SUFFIXES = (".py", ".sh")

# ModelTrainer's own words: its config arguments (``sagemaker.modules.configs`` in 2.x,
# ``sagemaker.core.training.configs`` in 3.x; both SDKs' configs.py) and, for each field, the
# estimator keyword that says the same, which the rules check. None: no estimator counterpart;
# the field is sent as given and not checked.
OWN_WORDS: dict[str, dict[str, str | None]] = {
    "source_code": {
        "source_dir": "source_dir", "entry_script": "entry_point", "command": None,
        "requirements": None, "args": None, "ignore_patterns": None,
    },
    "compute": {
        "instance_type": "instance_type", "instance_count": "instance_count",
        "volume_size_in_gb": "volume_size", "volume_kms_key_id": "volume_kms_key",
        "keep_alive_period_in_seconds": "keep_alive_period_in_seconds",
        "enable_managed_spot_training": "use_spot_instances",
        "instance_groups": "instance_groups", "training_plan_arn": "training_plan",
        "instance_placement_config": None,
        # sagemaker 3.x only (flexible instance types: Compute picks the selected ones).
        "instance_preferences": None, "selected_instance_type": None,
        "selected_instance_count": None,
    },
    "stopping_condition": {
        "max_runtime_in_seconds": "max_run", "max_wait_time_in_seconds": "max_wait",
        "max_pending_time_in_seconds": None,
    },
    "networking": {
        "subnets": "subnets", "security_group_ids": "security_group_ids",
        "enable_network_isolation": "enable_network_isolation",
        "enable_inter_container_traffic_encryption": "encrypt_inter_container_traffic",
    },
    "checkpoint_config": {"s3_uri": "checkpoint_s3_uri", "local_path": "checkpoint_local_path"},
    "output_data_config": {
        "s3_output_path": "output_path", "kms_key_id": "output_kms_key", "compression_type": None,
    },
}  # fmt: skip

# ModelTrainer arguments that are one value in its words and one keyword in the estimator's.
OWN_VALUES: dict[str, str] = {"training_image": "image_uri", "input_data_config": "inputs"}

# ModelTrainer's launchers (``distributed=``), by class name, and the estimator distribution
# key that starts the same processes. Any other DistributedConfig subclass is the user's own
# driver: sent as given, recorded, its processes not checked.
LAUNCHERS: dict[str, str] = {"Torchrun": "torch_distributed", "MPI": "mpi"}
