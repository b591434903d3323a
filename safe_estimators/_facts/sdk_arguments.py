"""The estimator keyword arguments the SageMaker SDK v2 accepts, one table per estimator.

The SDK does not refuse a keyword it does not know: ``EstimatorBase.__init__`` takes
``**kwargs``; it and ``Framework`` read only their SDK v1 names from it (``RENAMED``; Framework
also reads the internal ``is_nova_job``) and drop everything else without a word. A misspelt
option (``hyperparamters=``) therefore builds, and the job runs without the setting the user
meant; knowing the names up front lets us say "did you mean ...?" before that. Names that other
estimators take, or that notebooks pass by mistake, are dropped the same way and are harmless:
``OTHER_ESTIMATORS`` and ``MISPLACED`` let us say so precisely. Tests compare these tables with
the installed SDK's signatures, so an SDK upgrade that adds a keyword fails loudly until the name
is added here.
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

# The SDK v1 names EstimatorBase and Framework still take (sagemaker.estimator, their
# renamed_kwargs calls): the value goes to the v2 name, over any value given there, with a
# deprecation warning.
RENAMED: dict[str, str] = {
    "train_instance_count": "instance_count",
    "train_instance_type": "instance_type",
    "train_max_run": "max_run",
    "train_use_spot_instances": "use_spot_instances",
    "train_max_wait": "max_wait",
    "train_volume_size": "volume_size",
    "train_volume_kms_key": "volume_kms_key",
    "image_name": "image_uri",
}

# The own keywords (beyond COMMON) of the SDK v2's other estimator and framework classes, by
# class. Passed to the PyTorch or Hugging Face estimator they land in its **kwargs and are
# dropped: harmless, but worth a word, since the user expected them to do something.
OTHER_ESTIMATORS: dict[str, frozenset[str]] = {
    "sagemaker.tensorflow.TensorFlow": frozenset({"framework_version", "model_dir"}),
    "sagemaker.mxnet.MXNet": frozenset({"framework_version"}),
    "sagemaker.chainer.Chainer": frozenset(
        {"framework_version", "use_mpi", "num_processes", "process_slots_per_host",
         "additional_mpi_options"}
    ),
    "sagemaker.sklearn.SKLearn": frozenset({"framework_version", "image_uri_region"}),
    "sagemaker.xgboost.XGBoost": frozenset({"framework_version", "image_uri_region"}),
    "sagemaker.rl.RLEstimator": frozenset({"framework", "toolkit", "toolkit_version"}),
    "sagemaker.estimator.Estimator": frozenset(),
    "sagemaker.algorithm.AlgorithmEstimator": frozenset({"algorithm_arn"}),
    "sagemaker.jumpstart.estimator.JumpStartEstimator": frozenset(
        {"model_id", "model_version", "hub_name", "region", "tolerate_vulnerable_model",
         "tolerate_deprecated_model", "config_name"}
    ),
}  # fmt: skip

# Names that example notebooks pass to the estimator as if it took them, with what to write
# instead, by the distribution launcher the job enables ("" for any other job). "{value}" stands
# for the value given, "{text}" for a string value without its quotes. The estimator drops them
# (its **kwargs), so they are warnings, not errors.
MISPLACED: dict[str, dict[str, str]] = {
    # sagemaker.model.Model's spelling (hosting); the estimator's is environment.
    "env": {"": "rename it to environment: env is the spelling of sagemaker.model.Model (for "
                "hosting); the estimator's option is environment."},
    # The MPI launcher's option, written at the top level.
    "processes_per_host": {
        "": "to start {value} processes per instance write distribution={{'mpi': {{'enabled': "
            "True, 'processes_per_host': {value}}}}}; otherwise remove it.",
        "smdistributed.dataparallel": "remove it: smdistributed dataparallel starts one "
                                      "process per GPU by itself.",
        "pytorchddp": "remove it: pytorchddp starts one process per GPU by itself.",
        "torch_distributed": "remove it: torch_distributed (torchrun) starts one process per "
                             "GPU by itself.",
    },
    # No estimator takes it: the training toolkit installs source_dir/requirements.txt.
    "datasets_version": {
        "": "remove it: the container's datasets library comes from a requirements.txt in "
            "source_dir (a line such as datasets=={text}), which the training toolkit installs "
            "before running the script."
    },
    # TensorFlow's option (sagemaker.tensorflow.TensorFlow): its scripts get --model_dir.
    "model_dir": {
        "": "remove it: a PyTorch or Hugging Face script saves its model to SM_MODEL_DIR "
            "(/opt/ml/model), which SageMaker uploads to output_path."
    },
    # A TensorFlow option of SDK v1, removed in v2.0.0 with TensorFlow's legacy mode.
    "script_mode": {
        "": "remove it: SDK v2 estimators always run the entry point as a script (script_mode "
            "was a TensorFlow option of SDK v1)."
    },
}  # fmt: skip
