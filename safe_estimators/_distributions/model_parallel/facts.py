"""Facts about the SageMaker model parallel library v1 (SMP v1): data, read by the rules.

The library v2's facts are in ``facts_v2``.

Which library release each PyTorch container ships, when each launch parameter appeared, the
instance types AWS lists, and the option groups the rules and the resolver treat alike. Adding a
container or a parameter is one line in one table here.
"""

from __future__ import annotations

from itertools import permutations

import attrs
from packaging.version import Version

from safe_estimators._facts.versions import parse_version

# The newest SMP v1 release inside each SageMaker PyTorch training container (full PyTorch
# version). Sources: the release notes in aws/sagemaker-python-sdk
# doc/api/training/smd_model_parallel_release_notes/smd_model_parallel_change_log.rst
# ("Migration to AWS Deep Learning Containers") and the AWS developer guide page "Supported
# Frameworks and AWS Regions" for the library v1. "inferred" rows come from the release that added
# support for that PyTorch version (the container may carry a later 1.x patch release); the
# releases they could be off by introduced no launch parameter except 1.3 (active_microbatches,
# deterministic_server), which the 1.6.0 and 1.7.1 rows might therefore under-report.
LIBRARY_BY_PYTORCH: dict[str, str] = {
    "1.6.0": "1.1.0",  # inferred: 1.2.0 was the first release for PyTorch 1.7.1
    "1.7.1": "1.2.0",  # inferred: 1.2.0 added PyTorch 1.7.1
    "1.8.0": "1.3.1",  # inferred: 1.3.0 added PyTorch 1.8
    "1.8.1": "1.6.0",
    "1.9.0": "1.4.0",  # inferred: the guide lists 1.4.0 for 1.9.1
    "1.9.1": "1.4.0",
    "1.10.0": "1.5.0",
    "1.10.2": "1.7.0",  # the Hugging Face 4.17 container on PyTorch 1.10.2 carries 1.8.1
    "1.11.0": "1.10.1",
    "1.12.0": "1.11.0",
    "1.12.1": "1.13.0",
    "1.13.1": "1.15.0",
    "2.0.0": "1.15.0",
}
LAST_V1_PYTORCH = "2.0.0"


@attrs.frozen
class _Availability:
    """When a launch parameter appeared in the library (and, if so, what superseded it)."""

    since: str | None  # None: no document dates it, so it is not gated
    superseded_in: str | None = None
    replacement: str | None = None


# When each launch parameter appeared, from the parameter tables of
# doc/api/training/smd_model_parallel_general.rst (the "smdistributed-modelparallel>=v1.x" marks),
# the release notes, and the developer guide (ddp_dist_backend: "since ... version 1.13.0").
# `partitions` is the pre-1.6 name of the pipeline degree; ModelParallel reads it as an alias.
PARAMETERS: dict[str, _Availability] = {
    "partitions": _Availability("1.0", "1.6", "pipeline_parallel_degree"),
    "pipeline_parallel_degree": _Availability("1.6"),
    "microbatches": _Availability("1.0"),
    "pipeline": _Availability("1.0"),
    "placement_strategy": _Availability("1.0"),
    "optimize": _Availability("1.0"),
    "auto_partition": _Availability("1.0"),
    "default_partition": _Availability("1.0"),
    "memory_weight": _Availability("1.0"),
    "ddp": _Availability("1.0"),
    "horovod": _Availability("1.0"),
    "contiguous": _Availability("1.0"),
    "active_microbatches": _Availability("1.3"),
    "deterministic_server": _Availability("1.3"),
    "tensor_parallel_degree": _Availability("1.6"),
    "fp16_params": _Availability("1.6", "1.10", "fp16"),
    "shard_optimizer_state": _Availability("1.6"),
    "prescaled_batch": _Availability("1.6"),
    "skip_tracing": _Availability("1.6"),
    "offload_activations": _Availability("1.6"),
    "activation_loading_horizon": _Availability("1.6"),
    "fp16": _Availability("1.10"),
    "bf16": _Availability("1.11"),
    "sharded_data_parallel_degree": _Availability("1.11"),
    "sdp_reduce_bucket_size": _Availability("1.11"),
    "sdp_param_persistence_threshold": _Availability("1.11"),
    "sdp_max_live_parameters": _Availability("1.11"),
    "sdp_hierarchical_allgather": _Availability("1.11"),
    "sdp_gradient_clipping": _Availability("1.11"),
    "ddp_dist_backend": _Availability("1.13"),
    # Read by the library's config schema but never dated by a document.
    "ddp_port": _Availability(None),
    "tensor_parallel_seed": _Availability(None),
    "delayed_parameter_initialization": _Availability(None),
    "fast_mode": _Availability(None),
    "static_mode": _Availability(None),
    "load_partition": _Availability(None),
    "partition_file": _Availability(None),
}

SDP_WITH_TENSOR_SINCE = "1.15"

# overlapping_allreduce as a launch parameter. AWS's SMP BERT tutorial passes it on the PyTorch
# 1.6.0 container (library 1.1) and ran. The library's own config code of a 1.13/1.14 release
# (public mirror: it has ddp_dist_backend, new in 1.13, and refuses sharded data parallelism with
# tensor parallelism, allowed from 1.15) raises "Unrecognized config parameter" for any key
# outside its schema, which does not list it; the release that started validating is not
# documented. So: accepted up to 1.1, refused from 1.15 (later than that mirror), a warning
# between.
OVERLAPPING_ALLREDUCE_LAUNCH_UNTIL = "1.1"
LAUNCH_KEYS_VALIDATED_FROM = "1.15"

# The library v1 option that does what a library v2 option does (for fixes).
V1_COUNTERPARTS: dict[str, str] = {
    "hybrid_shard_degree": "sharded_data_parallel_degree",
    "sm_activation_offloading": "offload_activations",
    "random_seed": "tensor_parallel_seed",
}

# The instance types AWS lists for the library v1, with their GPU counts (used for fix hints).
SUPPORTED_INSTANCES: dict[str, int] = {
    "ml.g4dn.12xlarge": 4,
    "ml.p3.16xlarge": 8,
    "ml.p3dn.24xlarge": 8,
    "ml.p4d.24xlarge": 8,
    "ml.p4de.24xlarge": 8,
}

# AWS's recommended MPI flag: keeps Docker shared-memory warnings out of the training log.
DEFAULT_CUSTOM_MPI_OPTIONS = "--mca btl_vader_single_copy_mechanism none"

# Hyperparameters that hold the per-step batch the library splits into microbatches.
BATCH_SIZE_HYPERPARAMETERS = frozenset(
    {
        "batch_size",
        "train_batch_size",
        "per_device_train_batch_size",
        "per_gpu_train_batch_size",
        "train_micro_batch_size_per_gpu",
        "micro_batch_size",
        "per_device_batch_size",
    }
)

# The SDK's validate_mp_config (sagemaker 2.257) accepts only "cluster" and "spread"; the docs
# define "cluster" as "DPT" and "spread" as "TPD", so those two permutations have a route.
PLACEMENT_ROUTES = {"cluster": "cluster", "spread": "spread", "DPT": "cluster", "TPD": "spread"}
PLACEMENT_PERMUTATIONS = frozenset("".join(p) for p in permutations("DPT"))

# Option groups the rules and the resolver treat alike.
TENSORFLOW_ONLY = ("contiguous", "load_partition", "partition_file")
SDP_OPTIONS = (
    "sdp_reduce_bucket_size",
    "sdp_param_persistence_threshold",
    "sdp_max_live_parameters",
    "sdp_hierarchical_allgather",
    "sdp_gradient_clipping",
)
MPI_OPTIONS = ("processes_per_host", "custom_mpi_options")
FLOAT_PARAMETERS = ("memory_weight", "sdp_gradient_clipping")  # the library type-checks floats
# Older names read as the current option (AWS's notebooks write `partitions`).
ALIASES = {"partitions": "pipeline_parallel_degree"}


def library_of(pytorch_version: str | None) -> Version | None:
    """The library release in the container of this full PyTorch version (None: unknown)."""
    release = LIBRARY_BY_PYTORCH.get(pytorch_version or "")
    return parse_version(release) if release else None
