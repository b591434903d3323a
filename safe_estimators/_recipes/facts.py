"""What the SageMaker SDK does with a HyperPod training recipe, as data.

Read from the installed SDK (``sagemaker/pytorch/estimator.py``, ``_setup_for_training_recipe``
and its helpers, SDK 2.236.0 and later) and from AWS's training adapter
(aws/sagemaker-hyperpod-training-adapter-for-nemo, ``conf/config_schemas.py``). Nothing here
imports ``sagemaker``: ``training_recipes.json`` is read as a file from the installed package, and
``tests/test_recipes_sdk_agreement.py`` compares the other tables with the SDK's own functions.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
from typing import Any

from safe_estimators._facts.cuda import cuda_of_tag

# ``_get_training_recipe_gpu_script``: a GPU recipe's ``model.model_type`` (its prefix) picks the
# adapter's example script, which the SDK copies into source_dir as the entry point.
GPU_SCRIPTS: dict[str, tuple[str, str]] = {
    "llama_v3": ("llama", "llama_pretrain.py"),
    "mistral": ("mistral", "mistral_pretrain.py"),
    "mixtral": ("mixtral", "mixtral_pretrain.py"),
    "deepseek": ("deepseek", "deepseek_pretrain.py"),
    "gpt_oss": ("custom_model", "custom_pretrain.py"),
}

# ``_get_training_recipe_trainium_script``: the Neuron repository's ``examples`` folder is copied
# into source_dir whole; this script is the entry point.
TRAINIUM_SCRIPT = "training_orchestrator.py"

# ``_device_get_distribution``: the distribution a recipe job gets, by device type.
DISTRIBUTIONS: dict[str, dict[str, Any]] = {
    "gpu": {
        "smdistributed": {
            "modelparallel": {"enabled": True, "parameters": {"placement_strategy": "cluster"}}
        },
        "torch_distributed": {"enabled": True},
    },
    "trainium": {"torch_distributed": {"enabled": True}},
}

# ``_device_validate_and_get_type``: the second part of the instance type name decides.
GPU_PREFIXES = ("p", "g")
TRAINIUM_PREFIX = "trn"
# Trainium types whose NeuronCores per instance (the processes torchrun starts) do not depend
# on the Neuron runtime's logical NeuronCore setting.
FIXED_CORE_FAMILIES = ("ml.trn1.", "ml.trn1n.")

# The adapter's defaults where a recipe leaves a key out (config_schemas.py, BaseConfig and
# BaseModelConfig): the SMP model implementation and fp8 are on, and so is fine-tuning.
ADAPTER_DEFAULTS: dict[str, Any] = {
    "use_smp_model": True,
    "fp8": True,
    "do_finetune": True,
}

# Transformer Engine's fp8_autocast refuses a GPU below compute capability 8.9 ("Device compute
# capability 8.9 or higher required for FP8 execution"); bfloat16 needs 8.0 (Ampere).
FP8_COMPUTE_CAPABILITY = "8.9"
BF16_COMPUTE_CAPABILITY = "8.0"
# FlashAttention-2 (Dao-AILab/flash-attention, csrc/flash_attn/flash_api.cpp) checks the device
# before any kernel runs: sm8x or sm90 only, for fp16 and bf16 alike.
FLASH_ATTENTION_COMPUTE_CAPABILITY = "8.0"
FLASH_ATTENTION_REFUSAL = '"FlashAttention only supports Ampere GPUs or newer."'

# The instance types a recipe's name says it is written for: the collection names its GPU
# recipes ``..._gpu_p5x16_pretrain`` (16 x ml.p5.48xlarge) and its Trainium ones
# ``..._trn1x4_...``; the same accelerators with more memory (p5e/p5en: H200; trn1n) count too.
_NAMED_TYPES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (r"_p5x\d+", "ml.p5.48xlarge", ("ml.p5.", "ml.p5e.", "ml.p5en.")),
    (r"_trn1x\d+", "ml.trn1.32xlarge", ("ml.trn1.", "ml.trn1n.")),
)

# What the SDK's training_recipes.json holds when the installed SDK has none (SDK 2.257.7).
_FALLBACK_CONFIG: dict[str, Any] = {
    "adapter_repo": "https://github.com/aws/sagemaker-training-adapter-for-nemo.git",
    "launcher_repo": "https://github.com/aws/sagemaker-hyperpod-recipes.git",
    "neuron_dist_repo": "https://github.com/aws-neuron/neuronx-distributed-training.git",
    "gpu_image": {
        "framework": "pytorch-smp",
        "version": "2.4.1",
        "additional_args": {"container_version": "cu121"},
    },
    "neuron_image": {"framework": "hyperpod-recipes-neuron", "version": "2.1.2"},
}

# The variables the SDK reads for the repositories it clones (none for the Neuron one).
LAUNCHER_VARIABLE = "TRAINING_LAUNCHER_GIT"
ADAPTER_VARIABLE = "TRAINING_ADAPTER_GIT"
# git_utils._run_clone_command clones only these; any other URL is skipped without a word.
CLONED_SCHEMES = ("https://", "git@", "ssh://")


# Where each generation keeps training_recipes.json: sagemaker 2's estimator, sagemaker 3's
# ModelTrainer.from_recipe (sagemaker/train/sm_recipes/utils.py, _load_recipes_cfg).
_CONFIG_FILES = (("pytorch",), ("train", "sm_recipes"))

# sagemaker 3's ModelTrainer.from_recipe (sagemaker/train/sm_recipes/utils.py,
# _get_trainining_recipe_gpu_model_name_and_script): a GPU recipe's model_type, by prefix, picks
# the adapter's folder and script; it has no custom_model script (gpt_oss) and matches "llama".
FROM_RECIPE_GPU_SCRIPTS: dict[str, tuple[str, str]] = {
    "llama": ("llama", "llama_pretrain.py"),
    "mistral": ("mistral", "mistral_pretrain.py"),
    "mixtral": ("mixtral", "mixtral_pretrain.py"),
    "deepseek": ("deepseek", "deepseek_pretrain.py"),
}
# What from_recipe's distributed is for a standard recipe, by device (_configure_gpu_args:
# Torchrun(smp=SMP(random_seed="123456")); _configure_trainium_args: Torchrun()).
FROM_RECIPE_DISTRIBUTED = {
    "gpu": "Torchrun(smp=SMP(random_seed='123456'))",
    "trainium": "Torchrun()",
}
# The name from_recipe gives the resolved recipe in the cloned folder (sagemaker.train.constants
# SM_RECIPE_YAML), which its hyperparameters point the script at.
FROM_RECIPE_FILE = "recipe.yaml"
# from_recipe sends this literal as the training image when none is given: its image lookup
# from training_recipes.json is commented out (_configure_gpu_args, _configure_trainium_args).
_PLACEHOLDER_IMAGE = re.compile(r'training_image = "([^"]+)"\s*# Placeholder')


@functools.lru_cache(maxsize=1)
def from_recipe_placeholder_image() -> str | None:
    """The placeholder image the installed sagemaker 3 from_recipe sends without a
    training_image (``dummy_image`` in 3.27.0), or None when it looks a real one up."""
    spec = importlib.util.find_spec("sagemaker")
    for folder in list(spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(folder, "train", "sm_recipes", "utils.py")
        try:
            with open(path, encoding="utf-8") as handle:
                found = _PLACEHOLDER_IMAGE.search(handle.read())
        except OSError:
            continue
        return found.group(1) if found else None
    return None


def from_recipe_script(model_type: str) -> tuple[str, str] | None:
    """from_recipe's adapter (folder, script) for a model type, by prefix as it matches."""
    for key, script in FROM_RECIPE_GPU_SCRIPTS.items():
        if model_type.startswith(key):
            return script
    return None


@functools.lru_cache(maxsize=1)
def recipes_config() -> dict[str, Any]:
    """The installed SDK's ``training_recipes.json`` (sagemaker 2: ``sagemaker/pytorch/``;
    sagemaker 3: ``sagemaker/train/sm_recipes/``), read as a file, not imported."""
    spec = importlib.util.find_spec("sagemaker")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for folder, parts in ((f, p) for f in locations for p in _CONFIG_FILES):
        path = os.path.join(folder, *parts, "training_recipes.json")
        try:
            with open(path, encoding="utf-8") as handle:
                found = json.load(handle)
        except (OSError, ValueError):
            continue
        if isinstance(found, dict):
            return found
    return _FALLBACK_CONFIG


def device_type(instance_type: str) -> str:
    """``gpu``, ``trainium`` or ``cpu``, as the SDK tells them apart."""
    parts = instance_type.split(".")
    family = parts[1] if len(parts) > 1 else ""
    if family.startswith(GPU_PREFIXES):
        return "gpu"
    if family.startswith(TRAINIUM_PREFIX):
        return "trainium"
    return "cpu"


# The base models of the collection's fine-tuning recipes (llmft ``model_name_or_path``, verl
# ``actor_rollout_ref.model.path``) whose architecture the memory estimate counts: each one's
# config.json on the Hugging Face Hub (num_hidden_layers, hidden_size, num_attention_heads,
# num_key_value_heads, intermediate_size, vocab_size, tie_word_embeddings; all gated-MLP
# decoders). Keyed by the name after the organisation, lower case, without "-instruct".
FINE_TUNING_MODELS: dict[str, dict[str, Any]] = {
    "llama-3.1-8b": {"model_type": "llama", "layers": 32, "hidden_size": 4096,
                     "attention_heads": 32, "key_value_heads": 8, "intermediate_size": 14336,
                     "vocab_size": 128256, "tied_embeddings": False},
    "llama-3.2-1b": {"model_type": "llama", "layers": 16, "hidden_size": 2048,
                     "attention_heads": 32, "key_value_heads": 8, "intermediate_size": 8192,
                     "vocab_size": 128256, "tied_embeddings": True},
    "llama-3.2-3b": {"model_type": "llama", "layers": 28, "hidden_size": 3072,
                     "attention_heads": 24, "key_value_heads": 8, "intermediate_size": 8192,
                     "vocab_size": 128256, "tied_embeddings": True},
    "llama-3.3-70b": {"model_type": "llama", "layers": 80, "hidden_size": 8192,
                      "attention_heads": 64, "key_value_heads": 8, "intermediate_size": 28672,
                      "vocab_size": 128256, "tied_embeddings": False},
    "qwen2.5-7b": {"model_type": "qwen2", "layers": 28, "hidden_size": 3584,
                   "attention_heads": 28, "key_value_heads": 4, "intermediate_size": 18944,
                   "vocab_size": 152064, "tied_embeddings": False},
}  # fmt: skip


def fine_tuning_model(name: object) -> dict[str, Any] | None:
    """The architecture of a fine-tuning recipe's base model by its Hub name, if known."""
    if not isinstance(name, str):
        return None
    key = name.rsplit("/", 1)[-1].lower().removesuffix("-instruct")
    return FINE_TUNING_MODELS.get(key)


def named_instance_type(name: str, instance_type: str) -> str | None:
    """The instance type a recipe's name says it is written for, when ``instance_type`` is not
    of that kind (None: the name says none, or the type matches)."""
    base = name.rsplit("/", 1)[-1]
    for pattern, written, family in _NAMED_TYPES:
        if re.search(pattern, base):
            return None if instance_type.startswith(family) else written
    return None


def gpu_script(model_type: str) -> tuple[str, str] | None:
    """The adapter's (folder, script) for a model type, matched by prefix as the SDK does."""
    for key, script in GPU_SCRIPTS.items():
        if model_type.startswith(key):
            return script
    return None


def gpu_image() -> tuple[str, str, str | None] | None:
    """The SDK's recipe image for GPUs as (label, CUDA version, the PyTorch the SMP version
    runs, when known): ``("recipe's pytorch-smp 2.4.1", "12.1", "2.4.1")``; None when the SDK's
    training_recipes.json says no CUDA build."""
    config = recipes_config().get("gpu_image")
    if not isinstance(config, dict):
        return None
    extra = config.get("additional_args") or {}
    tag = extra.get("container_version") if isinstance(extra, dict) else None
    cuda = cuda_of_tag(tag) if isinstance(tag, str) else None
    if cuda is None:
        return None
    version = config.get("version")
    version = version if isinstance(version, str) else None
    return f"recipe's {config.get('framework')} {version}", cuda, version


def image_description(device: str) -> str:
    """The recipe image the SDK retrieves for a device type, as framework and version."""
    config = recipes_config().get("gpu_image" if device == "gpu" else "neuron_image")
    if isinstance(config, str):
        return config
    if not isinstance(config, dict):
        return "<none>"
    extra = config.get("additional_args") or {}
    suffix = f" ({', '.join(str(v) for v in extra.values())})" if extra else ""
    return f"{config.get('framework')} {config.get('version')}{suffix}"
