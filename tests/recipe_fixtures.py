"""Recipes of our own and local git repositories standing in for the ones the SDK clones.

The recipes are minimal YAML written here with the structure of AWS's HyperPod recipes (the
keys the SDK, the training adapter and our rules read, and interpolations of the same forms);
none is copied from aws/sagemaker-hyperpod-recipes. The repositories are made in a test's tmp
folder; git's ``url.<local>.insteadOf`` (through GIT_CONFIG_COUNT) sends the SDK's https clones
there, and GIT_ALLOW_PROTOCOL=file makes any other clone fail instead of reaching the network.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import yaml

_SDK = Path(__import__("importlib").util.find_spec("sagemaker").submodule_search_locations[0])
# sagemaker 2's estimator keeps it in pytorch/, sagemaker 3's from_recipe in train/sm_recipes/.
SDK_CONFIG = json.loads(
    next(
        p
        for p in (_SDK / "pytorch" / "training_recipes.json",
                  _SDK / "train" / "sm_recipes" / "training_recipes.json")
        if p.is_file()
    ).read_text()
)  # fmt: skip

GPU_SCRIPTS = {
    "llama": "llama_pretrain.py",
    "mistral": "mistral_pretrain.py",
    "mixtral": "mixtral_pretrain.py",
    "deepseek": "deepseek_pretrain.py",
    "custom_model": "custom_pretrain.py",
}

# What AWS's README example overrides so that the recipe resolves and finds its data.
README_OVERRIDES = {
    "run": {"results_dir": "/opt/ml/model"},
    "exp_manager": {"exp_dir": "", "checkpoint_dir": "/opt/ml/checkpoints"},
    "model": {"data": {"train_dir": "/opt/ml/input/data/train"}},
}


def gpu_recipe(
    *,
    nodes: int = 1,
    devices: int = 8,
    model_type: str = "llama_v3",
    shard: int | None = 8,
    tensor: int = 1,
    expert: int = 1,
    context: int = 1,
    fp8: bool | None = None,
    smp: bool = True,
    precision: str = "bf16",
    finetune: bool = False,
    hf_model: str | None = None,
    synthetic: bool = False,
) -> dict[str, Any]:
    """A GPU pre-training recipe with the shape of AWS's (run, trainer, exp_manager, model)."""
    model: dict[str, Any] = {
        "model_type": model_type,
        "train_batch_size": 1,
        "tensor_model_parallel_degree": tensor,
        "expert_model_parallel_degree": expert,
        "context_parallel_degree": context,
        "activation_checkpointing": True,
        "max_context_width": 8192,
        "max_position_embeddings": "${.max_context_width}",
        "num_hidden_layers": 32,
        "hidden_size": 4096,
        "do_finetune": finetune,
        "hf_model_name_or_path": hf_model,
        "precision": "${recipes.trainer.precision}",
        "lr_decay_iters": "${recipes.trainer.max_steps}",
        "data": {"train_dir": None, "use_synthetic_data": synthetic},
    }
    if shard is not None:
        model["shard_degree"] = shard
    if fp8 is not None:
        model["fp8"] = fp8
    return {
        "run": {"name": "ours", "results_dir": "${base_results_dir}/${.name}", "model_type": "hf"},
        "trainer": {
            "devices": devices,
            "num_nodes": nodes,
            "accelerator": "gpu",
            "precision": precision,
            "max_steps": 50,
        },
        "exp_manager": {
            "exp_dir": None,
            "checkpoint_dir": "${recipes.exp_manager.exp_dir}/checkpoints/",
        },
        "use_smp_model": smp,
        "distributed_backend": "nccl",
        "model": model,
    }


def trainium_recipe(*, nodes: int = 1, devices: int = 32, tensor: int = 32, pipeline: int = 1):
    """A Trainium recipe with the shape of AWS's neuronx-distributed-training ones."""
    return {
        "run": {"name": "ours-trn", "results_dir": "${base_results_dir}/${.name}",
                "model_type": "neuron-hf"},
        "trainer": {"devices": devices, "num_nodes": nodes, "max_steps": 10},
        "exp_manager": {
            "exp_dir": None,
            "checkpoint_callback_params": {
                "model_parallel_size": "${multiply:${...distributed_strategy."
                "tensor_model_parallel_size}, ${...distributed_strategy."
                "pipeline_model_parallel_size}}",
            },
        },
        "distributed_strategy": {
            "tensor_model_parallel_size": tensor,
            "pipeline_model_parallel_size": pipeline,
        },
        "data": {"micro_batch_size": 1, "global_batch_size": 64, "train_dir": None},
        "model": {"num_layers": 32, "hidden_size": 4096},
    }  # fmt: skip


def mutated(recipe: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(recipe)
    node = out
    *parents, last = path.split(".")
    for key in parents:
        node = node[key]
    node[last] = value
    return out


def write_recipe(path: Path, recipe: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(recipe, sort_keys=False))
    return path


def _git(folder: Path, *args: str) -> None:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True, env=env)


def _repository(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    _git(folder, "init", "-q")
    _git(folder, "add", "-A")
    _git(folder, "-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-q", "-m", "t")
    return folder


def local_repositories(root: Path, recipes: dict[str, dict[str, Any]]) -> dict[str, Path]:
    """The recipes collection (with ``recipes`` under their names), the adapter and the Neuron
    repository, as local git repositories under ``root``."""
    collection = {
        f"recipes_collection/recipes/{name}.yaml": yaml.safe_dump(recipe, sort_keys=False)
        for name, recipe in recipes.items()
    }
    adapter = {f"examples/{d}/{s}": "# adapter script stand-in\n" for d, s in GPU_SCRIPTS.items()}
    neuron = {"examples/training_orchestrator.py": "# neuron stand-in\n"}
    return {
        "launcher": _repository(root / "launcher", collection or {"README": "empty\n"}),
        "adapter": _repository(root / "adapter", adapter),
        "neuron": _repository(root / "neuron", neuron),
    }


def redirect_environment(repos: dict[str, Path]) -> dict[str, str]:
    """The variables that send the SDK's three clones to ``repos`` and nowhere else."""
    urls = {
        "launcher": SDK_CONFIG["launcher_repo"],
        "adapter": SDK_CONFIG["adapter_repo"],
        "neuron": SDK_CONFIG["neuron_dist_repo"],
    }
    env = {
        "GIT_ALLOW_PROTOCOL": "file",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_COUNT": str(len(urls)),
    }
    for i, purpose in enumerate(urls):
        env[f"GIT_CONFIG_KEY_{i}"] = f"url.file://{repos[purpose]}.insteadOf"
        env[f"GIT_CONFIG_VALUE_{i}"] = urls[purpose]
    return env


def use_local_repositories(
    root: Path, recipes: dict[str, dict[str, Any]], monkeypatch: Any
) -> dict[str, Path]:
    """``local_repositories`` made under ``root`` and the environment pointed at them: the SDK's
    clones (``from_recipe``'s) and our recipes collection; no role lookup while building."""
    found = local_repositories(root, recipes)
    for name, value in redirect_environment(found).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("SAFE_ESTIMATORS_RECIPES", str(found["launcher"]))
    monkeypatch.setenv("SAGEMAKER_VALIDATE_ROLE", "false")
    return found


def llmft_recipe(
    *,
    model: str = "meta-llama/Llama-3.3-70B-Instruct",
    peft: dict[str, Any] | None = None,
    sharding: str = "HYBRID_SHARD",
    instance_types: tuple[str, ...] = ("ml.p4de.24xlarge", "ml.p5.48xlarge"),
) -> dict[str, Any]:
    """An LLM fine-tuning recipe with the keys of the collection's main-branch llmft ones (the
    base model by name, peft_config, training_args with its FSDP strategy, its instance list)."""
    return {
        "instance_types": list(instance_types),
        "run": {"name": "ours-llmft", "model_type": "llm_finetuning_aws"},
        "trainer": {"devices": 8, "num_nodes": 1},
        "training_config": {
            "model_config": {
                "model_name_or_path": model,
                "peft_config": peft if peft is not None else {
                    "peft_type": "lora", "r": 16, "target_modules": "all-linear",
                },
            },
            "training_args": {
                "max_len": 4096, "micro_train_batch_size": 1, "train_batch_size": 8,
                "gradient_checkpointing": True,
                "strategy": {"fsdp_config": {"sharding_strategy": sharding,
                                             "cpu_offload": False}},
            },
        },
    }  # fmt: skip


def verl_recipe(*, model: str = "meta-llama/Llama-3.3-70B-Instruct", rank: int = 32):
    """A verl GRPO recipe with the keys of the collection's (the actor's model path, LoRA rank,
    its FSDP2 sizes and offloads)."""
    return {
        "instance_types": ["ml.p5.48xlarge", "ml.p4de.24xlarge"],
        "run": {"name": "ours-verl", "model_type": "verl"},
        "trainer": {"devices": 8, "num_nodes": 1},
        "training_config": {
            "actor_rollout_ref": {
                "model": {"path": model, "lora_rank": rank, "target_modules": "all-linear",
                          "enable_gradient_checkpointing": True},
                "actor": {"fsdp_config": {"fsdp_size": -1, "param_offload": False,
                                          "optimizer_offload": True}},
            },
        },
    }  # fmt: skip
