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
