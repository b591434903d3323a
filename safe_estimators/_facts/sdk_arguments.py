"""The estimator keyword arguments the SageMaker SDK v2 accepts, one table per estimator.

The SDK raises a bare TypeError for a misspelt keyword, after the user has assembled everything
else; knowing the names up front lets us say "did you mean ...?" alongside every other problem.
A test compares these tables with the installed SDK's signatures, so an SDK upgrade that adds a
keyword fails loudly until the name is added here.
"""

from __future__ import annotations

# sagemaker.estimator.EstimatorBase and Framework (shared by both estimators).
COMMON = frozenset(
    {
        "role", "instance_count", "instance_type", "keep_alive_period_in_seconds", "volume_size",
        "volume_kms_key", "max_run", "input_mode", "output_path", "output_kms_key",
        "base_job_name", "sagemaker_session", "tags", "subnets", "security_group_ids",
        "model_uri", "model_channel_name", "metric_definitions",
        "encrypt_inter_container_traffic", "use_spot_instances", "max_wait",
        "checkpoint_s3_uri", "checkpoint_local_path", "rules", "debugger_hook_config",
        "tensorboard_output_config", "enable_sagemaker_metrics", "enable_network_isolation",
        "profiler_config", "disable_profiler", "environment", "max_retry_attempts",
        "source_dir", "git_config", "hyperparameters", "container_log_level", "code_location",
        "entry_point", "dependencies", "instance_groups", "training_repository_access_mode",
        "training_repository_credentials_provider_arn", "enable_infra_check",
        "container_entry_point", "container_arguments", "disable_output_compression",
        "enable_remote_debug", "enable_session_tag_chaining", "training_plan",
        "instance_placement_config", "image_uri", "distribution", "compiler_config", "py_version",
    }
)  # fmt: skip

BY_ESTIMATOR: dict[str, frozenset[str]] = {
    "pytorch": COMMON | {"framework_version", "training_recipe", "recipe_overrides"},
    "huggingface": COMMON | {"transformers_version", "tensorflow_version", "pytorch_version"},
}

# The SDK v1 names EstimatorBase still takes (sagemaker.estimator, its renamed_kwargs calls):
# the value goes to the v2 name, over any value given there, with a deprecation warning.
RENAMED: dict[str, str] = {
    "train_instance_count": "instance_count",
    "train_instance_type": "instance_type",
    "train_max_run": "max_run",
    "train_use_spot_instances": "use_spot_instances",
    "train_max_wait": "max_wait",
    "train_volume_size": "volume_size",
    "train_volume_kms_key": "volume_kms_key",
}
