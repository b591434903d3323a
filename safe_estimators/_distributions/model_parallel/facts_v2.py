"""Facts about the SageMaker model parallel library v2 (SMP v2, ``torch.sagemaker``): data.

Which PyTorch containers have an SMP v2 image (read from the installed SDK's ``pytorch-smp``
table), which library release each ships, when each option appeared, which library generation a
job runs, and what each v1-only option means on a v2 container. Sources:
shared/reference/launcher-facts.md section 1 (the SMP v2 reference and release notes, the SDK).
"""

from __future__ import annotations

import functools
from typing import Literal

import attrs
from packaging.version import InvalidVersion, Version

from safe_estimators._facts.versions import _training_config, parse_version

# The SDK table the PyTorch estimator takes the SMP v2 image from (image_uris.py switches to it
# when a distribution holds torch_distributed and smdistributed.modelparallel).
SMP_IMAGE_CONFIG = "pytorch-smp"
SMP_IMAGE_REPOSITORY = "smdistributed-modelparallel"  # its ECR repository (account 658645717510)

# The first PyTorch container whose model parallel library is v2 (LIBRARY_BY_PYTORCH in facts
# ends with 2.0.0 on v1).
FIRST_V2_PYTORCH = "2.0.1"

# The SMP v2 release inside each SMP image, by the PyTorch version of its tag. AWS re-publishes a
# tag for each library release built on that PyTorch (2.2.0, 2.3.0 and 2.3.1 all on PyTorch
# 2.2.0), so a tag carries the newest of them; the SDK's pytorch-smp aliases say the same where
# their keys are library versions (2.2.0 -> 2.3.1, 2.3.1 -> 2.5.0, 2.4.1 -> 2.7.0,
# 2.5.1 -> 2.8.0; a test compares). Source: AWS "Release notes for the SageMaker model
# parallelism library" (launcher-facts.md 1.4).
LIBRARY_BY_PYTORCH: dict[str, str] = {
    "2.0.1": "2.0.0",
    "2.1.2": "2.1.0",
    "2.2.0": "2.3.1",
    "2.3.1": "2.5.0",
    "2.4.1": "2.7.0",
    "2.5.1": "2.8.0",
}

# The CUDA suffix of the image tags AWS's release notes list per PyTorch version.
AWS_IMAGE_CUDA: dict[str, str] = {
    "2.0.1": "cu121",
    "2.1.2": "cu121",
    "2.2.0": "cu121",
    "2.3.1": "cu121",
    "2.4.1": "cu121",
    "2.5.1": "cu124",
}


def sdk_image_cuda(pytorch_version: str, instance_type: str) -> str:
    """The CUDA suffix the SDK puts in the SMP image tag (image_uris.get_training_image_uri).

    A substring test on the version string: "2.5" gives cu124; a p5 type or "2.1" to "2.4"
    gives cu121; anything else cu118.
    """
    if "2.5" in pytorch_version:
        return "cu124"
    if "p5" in instance_type or any(v in pytorch_version for v in ("2.1", "2.2", "2.3", "2.4")):
        return "cu121"
    return "cu118"


# When each v2 option appeared (None: since 2.0.0, or not dated by any AWS document, so not
# gated). expert_parallel_degree: release 2.3.0 ("Expert parallelism"); context_parallel_degree:
# release 2.5.0 ("Context parallelism").
PARAMETERS: dict[str, str | None] = {
    "hybrid_shard_degree": None,
    "sm_activation_offloading": None,
    "activation_loading_horizon": None,
    "fsdp_cache_flush_warnings": None,
    "allow_empty_shards": None,
    "tensor_parallel_degree": None,
    "context_parallel_degree": "2.5.0",
    "expert_parallel_degree": "2.3.0",
    "random_seed": None,
}

# The instance types AWS names for the SMP v2 images ("available for P4d, P4de, and P5").
SUPPORTED_INSTANCES: dict[str, int] = {
    "ml.p4d.24xlarge": 8,
    "ml.p4de.24xlarge": 8,
    "ml.p5.48xlarge": 8,
}


@attrs.frozen
class V1Option:
    """What a v1-only option means on a v2 container.

    ``lost`` says when the user's intent would silently not happen (then it is an error; else a
    warning that it has no effect), ``counterpart`` is the v2 way to get it (None: there is none),
    ``advice`` the fix in words.
    """

    lost: Literal["always", "above_one", "when_true", "never"]
    counterpart: str | None
    advice: str


_NOTHING = "remove it; the library v2 has no such option."

# v1-only options on a v2 container. The v2 library reads only its own keys (launcher-facts.md
# 1.2); AWS's own SMP v2 workshop passes delayed_parameter_initialization and ran, so a v1 key is
# harmless where nothing the user asked for depends on it.
V1_ON_V2: dict[str, V1Option] = {
    "pipeline_parallel_degree": V1Option(
        "above_one",
        None,
        "the library v2 has no pipeline parallelism (AWS dropped it in 2.0.0). Shard instead: "
        "use hybrid_shard_degree (FSDP) and tensor_parallel_degree, or use PyTorch 2.0.0 or "
        "older for the library v1.",
    ),
    "sharded_data_parallel_degree": V1Option(
        "above_one", "hybrid_shard_degree", "write it as hybrid_shard_degree (same degree)."
    ),
    "microbatches": V1Option("never", None, "remove it; microbatches serve pipeline parallelism."),
    "active_microbatches": V1Option("never", None, _NOTHING),
    "fp16": V1Option(
        "when_true",
        None,
        "set the precision in the script (FSDP MixedPrecision or torch.autocast).",
    ),
    "bf16": V1Option(
        "when_true",
        None,
        "set the precision in the script (FSDP MixedPrecision or torch.autocast).",
    ),
    "fp16_params": V1Option(
        "when_true",
        None,
        "set the precision in the script (FSDP MixedPrecision or torch.autocast).",
    ),
    "offload_activations": V1Option(
        "when_true",
        "sm_activation_offloading",
        "wrap the model's root module with PyTorch's offload_wrapper in the script; "
        "sm_activation_offloading chooses SMP's implementation (the default).",
    ),
    "tensor_parallel_seed": V1Option(
        "always", "random_seed", "write it as random_seed (the v2 name of that seed)."
    ),
    "shard_optimizer_state": V1Option(
        "when_true",
        "hybrid_shard_degree",
        "FSDP shards the optimizer state with the parameters: set hybrid_shard_degree.",
    ),
    "processes_per_host": V1Option("never", None, "remove it; torchrun starts one per GPU."),
    "custom_mpi_options": V1Option("never", None, "remove it; the library v2 does not use MPI."),
}
# Every other v1 option (ddp, placement_strategy, delayed_parameter_initialization, ...) has no
# effect on the library v2: a warning.


@functools.cache
def smp_pytorch_versions() -> tuple[str, ...]:
    """The PyTorch versions that have an SMP v2 image, read from the SDK's pytorch-smp aliases.

    The table's keys mix PyTorch versions (2.0.1, 2.1.2, 2.2.0) and library versions (2.3.0,
    2.5.0, 2.7.0, 2.8.0), and the image tag is the framework_version as given, so a key is no
    proof of an image. The aliases are: a full alias key is a PyTorch version; a short one
    (``2.1``) stands for its target, unless a full key of that line exists (``2.2`` -> the key
    ``2.2.0``).
    """
    aliases: dict[str, str] = _training_config(SMP_IMAGE_CONFIG).get("version_aliases", {})
    full = {key for key in aliases if key.count(".") == 2}
    lines = {".".join(key.split(".")[:2]) for key in full}
    short = {target for key, target in aliases.items() if key.count(".") == 1 and key not in lines}
    return tuple(sorted(full | short, key=Version))


def smp_image_keys() -> tuple[str, ...]:
    """The keys of the SDK's pytorch-smp table (PyTorch and library versions mixed)."""
    return tuple(_training_config(SMP_IMAGE_CONFIG).get("versions", {}))


@functools.cache
def smp_py_versions(pytorch_version: str) -> tuple[str, ...]:
    """The Python versions the SDK's SMP image for this PyTorch version is built for."""
    config = _training_config(SMP_IMAGE_CONFIG)
    key = config.get("version_aliases", {}).get(pytorch_version, pytorch_version)
    return tuple(config.get("versions", {}).get(key, {}).get("py_versions", ()))


def library_of(pytorch_version: str | None) -> Version | None:
    """The SMP v2 release in the SMP image for this PyTorch version (None: no such image)."""
    release = LIBRARY_BY_PYTORCH.get(pytorch_version or "")
    return parse_version(release) if release else None


def is_v2_container(pytorch_version: str | None) -> bool | None:
    """True from PyTorch 2.0.1 (library v2), False before, None when unknown or unreadable."""
    if pytorch_version is None:
        return None
    try:
        return parse_version(pytorch_version) >= parse_version(FIRST_V2_PYTORCH)
    except InvalidVersion:
        return None
