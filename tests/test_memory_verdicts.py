"""The memory verdict's severity from the sources: a job over its accelerator's memory under
every reading the sources allow is refused (an error, with fixes that were estimated again); a
warning only where the verdict turns on something the checks cannot see, naming it.

The four jobs of issue 34, with minimal scripts of our own and the models' config.json numbers:
- Llama-3.1-8B, the Trainer's ``fsdp="full_shard auto_wrap"`` with bf16 on 1 x ml.g5.12xlarge:
  accelerate upcasts the trainable FSDP parameters to fp32 under mixed precision
  (accelerate/accelerator.py, ``Accelerator._prepare_fsdp``), so 16 bytes per parameter hold;
- Llama-3.3-70B, DeepSpeed ZeRO-3 with bf16 on 2 x ml.p4d.24xlarge: fp32 master weights (ZeRO
  paper section 3.1), and even 8 bytes per parameter is over;
- Mistral-7B under plain DDP on ml.g5.48xlarge: over at 16 and at 8 bytes per parameter;
- Llama-2-70B under plain DDP on 8 x ml.p4d.24xlarge, whose script imports
  ``torch_xla.core.xla_model`` and uses nothing of it that shards.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import safe_estimators
from safe_estimators import ConfigError
from safe_estimators._script_checks import script_memory_facts

ROLE = "arn:aws:iam::111111111111:role/SageMakerRole"
TORCHRUN = {"torch_distributed": {"enabled": True}}

# The models' config.json numbers (Hugging Face Hub).
LLAMA_3_1_8B = {
    "model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096,
    "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
    "vocab_size": 128256, "tie_word_embeddings": False,
}  # fmt: skip
LLAMA_3_3_70B = {**LLAMA_3_1_8B, "num_hidden_layers": 80, "hidden_size": 8192,
                 "num_attention_heads": 64, "intermediate_size": 28672}  # fmt: skip
LLAMA_2_70B = {**LLAMA_3_3_70B, "vocab_size": 32000}
MISTRAL_7B = {**LLAMA_3_1_8B, "model_type": "mistral", "vocab_size": 32000}

TRAINER_FSDP = """
import torch
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-3.1-8B", torch_dtype=torch.bfloat16)
args = TrainingArguments(output_dir="/opt/ml/checkpoints", fsdp="full_shard auto_wrap",
                         bf16=True, gradient_checkpointing=True, per_device_train_batch_size=1)
Trainer(model=model, args=args, train_dataset=data).train()
trainer.save_model("/opt/ml/model")
"""
DEEPSPEED_ZERO_3 = """
import deepspeed
import torch
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-3.3-70B", torch_dtype=torch.bfloat16)
model.gradient_checkpointing_enable()
config = {"zero_optimization": {"stage": 3}, "bf16": {"enabled": True},
          "train_micro_batch_size_per_gpu": 1}
engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                               config=config)
"""
DDP = """
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers import AutoModelForCausalLM

dist.init_process_group("nccl")
model = AutoModelForCausalLM.from_pretrained("model", torch_dtype=torch.bfloat16).cuda()
model.gradient_checkpointing_enable()
model = DDP(model, device_ids=[int(os.environ["LOCAL_RANK"])])
"""
DDP_WITH_XLA_IMPORT = DDP.replace(
    "import torch.distributed as dist\n",
    "import torch.distributed as dist\nimport torch_xla.core.xla_model as xm\n",
).replace(", torch_dtype=torch.bfloat16", "")


def job(
    folder: Path, script: str, config: dict[str, Any], instance_type: str, count: int,
    **model: Any,
) -> Any:  # fmt: skip
    (folder / "train.py").write_text(script)
    (folder / "config.json").write_text(json.dumps(config))
    return safe_estimators.pytorch(
        entry_point="train.py", source_dir=str(folder), role=ROLE, instance_type=instance_type,
        instance_count=count, framework_version="2.3.0", py_version="py311",
        distribution=TORCHRUN,
        model={"config": str(folder / "config.json"), "sequence_length": 2048,
               "micro_batch_size": 1, **model},
    )  # fmt: skip


def refused(*args: Any, **kwargs: Any) -> Any:
    with pytest.raises(ConfigError) as raised:
        job(*args, **kwargs)
    [problem] = [p for p in raised.value.problems if p.path == "model"]
    assert problem.severity == "error"
    return problem


def memory_warnings(estimator: Any) -> list[str]:
    return [w.message for w in safe_estimators.explain(estimator).warnings if w.path == "model"]


def test_the_trainers_fsdp_with_bf16_counts_fp32_master_weights_and_refuses_8b_on_g5_12xlarge(
    tmp_path: Path,
) -> None:
    problem = refused(tmp_path, TRAINER_FSDP, LLAMA_3_1_8B, "ml.g5.12xlarge", 1)
    # 8.03e9 x 16 bytes / 4 GPUs = 32.1 GB of model states against 24 GB per A10G.
    assert "model states 32.1 GB" in problem.message
    assert "accelerate keeps the trainable FSDP parameters in float32" in problem.message
    assert "Accelerator._prepare_fsdp" in problem.message
    assert "unless" not in problem.message
    # The fix offered was estimated again, and the job it names passes.
    instance_type = re.search(r"use (ml\.[\w.-]+)", problem.hint).group(1)
    fixed = job(tmp_path, TRAINER_FSDP, LLAMA_3_1_8B, instance_type, 1)
    assert safe_estimators.explain(fixed).memory.fits is True


def test_without_mixed_precision_accelerate_upcasts_nothing_so_8_bytes_may_hold_a_warning(
    tmp_path: Path,
) -> None:
    # bf16=False: accelerate's mixed precision is "no", the 16-bit weights train as they are
    # (8 bytes per parameter: 16.1 GB of model states per A10G), which fits: a warning.
    script = TRAINER_FSDP.replace("bf16=True", "bf16=False")
    [warning] = memory_warnings(job(tmp_path, script, LLAMA_3_1_8B, "ml.g5.12xlarge", 1))
    assert "unless the estimate counts high: the weights are 16-bit" in warning


def test_deepspeed_zero_3_bf16_keeps_fp32_master_weights_and_70b_on_2_p4d_is_refused(
    tmp_path: Path,
) -> None:
    problem = refused(tmp_path, DEEPSPEED_ZERO_3, LLAMA_3_3_70B, "ml.p4d.24xlarge", 2)
    # 70.6e9 x 16 bytes / 16 GPUs = 70.6 GB of model states against 42.9 GB per A100.
    assert "model states 70.6 GB" in problem.message
    assert "DeepSpeed's bf16/fp16 optimizer keeps fp32 master weights" in problem.message


def test_deepspeed_without_bf16_is_refused_even_at_8_bytes_per_parameter(tmp_path: Path) -> None:
    # No bf16 section: the 16-bit weights may train without masters, 8 bytes per parameter:
    # 70.6e9 x 8 / 16 = 35.3 GB + (fp32) activations + the gathered layer, still over 42.9 GB.
    script = DEEPSPEED_ZERO_3.replace(', "bf16": {"enabled": True}', "")
    problem = refused(tmp_path, script, LLAMA_3_3_70B, "ml.p4d.24xlarge", 2)
    assert "It cannot fit under any reading of what the checks cannot see: even at 8 bytes " in (
        problem.message
    )
    needed = float(re.search(r"it needs ([\d.]+) GB per accelerator", problem.message).group(1))
    assert 42.9 < needed < 50


def test_mistral_7b_under_plain_ddp_on_g5_48xlarge_is_refused_at_16_and_at_8_bytes(
    tmp_path: Path,
) -> None:
    problem = refused(tmp_path, DDP, MISTRAL_7B, "ml.g5.48xlarge", 1, precision="bf16")
    # 7,241,732,096 parameters (counted from config.json) x 16 = 115.9 GB of model states; at 8
    # bytes about 58 GB (+ activations), against 24 GB.
    assert "model states 115.9 GB" in problem.message
    assert "even at 8 bytes per parameter" in problem.message
    needed = float(re.search(r"it needs ([\d.]+) GB per accelerator", problem.message).group(1))
    assert 57.9 < needed < 62
    assert "shard the model states over 8 GPUs" in problem.hint


def test_an_unused_torch_xla_import_downgrades_nothing(tmp_path: Path) -> None:
    problem = refused(
        tmp_path, DDP_WITH_XLA_IMPORT, LLAMA_2_70B, "ml.p4d.24xlarge", 8,
        sequence_length=4096, precision="bf16",
    )  # fmt: skip
    assert "plain DistributedDataParallel" in problem.message
    assert "torch_xla" not in problem.message
    assert "shard the model states over 64 GPUs" in problem.hint


def test_torch_xlas_placing_names_shard_nothing_its_fsdp_may(tmp_path: Path) -> None:
    placing = DDP_WITH_XLA_IMPORT + "device = xm.xla_device()\nxm.mark_step()\n"
    (tmp_path / "train.py").write_text(placing)
    facts = script_memory_facts("train.py", {}, source_dir=tmp_path)
    assert facts.sharding.value == ("none", "world") and not facts.undecided
    sharding = placing + (
        "from torch_xla.distributed.fsdp import XlaFullyShardedDataParallel as FSDP\n"
        "model = FSDP(model)\n"
    )
    (tmp_path / "train.py").write_text(sharding)
    facts = script_memory_facts("train.py", {}, source_dir=tmp_path)
    assert facts.sharding is None
    assert "torch_xla (`torch_xla.distributed.fsdp.XlaFullyShardedDataParallel`)" in (
        facts.undecided[0]
    )
    [warning] = memory_warnings(
        job(tmp_path, sharding, LLAMA_2_70B, "ml.p4d.24xlarge", 8, precision="bf16")
    )
    assert "unless the training script shards the model states itself" in warning
    assert "torch_xla.distributed.fsdp" in warning


def test_an_unknown_library_imported_and_never_used_downgrades_nothing(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(DDP + "import my_trainer_lib\n")
    assert not script_memory_facts("train.py", {}, source_dir=tmp_path).undecided
    (tmp_path / "train.py").write_text(DDP + "import my_trainer_lib\nmy_trainer_lib.wrap(model)\n")
    assert script_memory_facts("train.py", {}, source_dir=tmp_path).undecided == (
        "it imports my_trainer_lib, which may shard",
    )


LORA = """
import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-3.1-8B", {load})
model = get_peft_model(model, LoraConfig(r=16, target_modules=["q_proj", "v_proj"]))
optimizer = torch.optim.AdamW(p for p in model.parameters() if p.requires_grad)
with torch.autocast("cuda", dtype=torch.bfloat16):
    model(**batch).loss.backward()
optimizer.step()
model.save_pretrained("/opt/ml/model")
"""


def lora_job(folder: Path, load: str) -> Any:
    (folder / "train.py").write_text(LORA.format(load=load))
    (folder / "config.json").write_text(json.dumps(LLAMA_3_1_8B))
    return safe_estimators.pytorch(
        entry_point="train.py", source_dir=str(folder), role=ROLE,
        instance_type="ml.g4dn.xlarge", instance_count=1, framework_version="2.3.0",
        py_version="py311",
        model={"config": str(folder / "config.json"), "sequence_length": 2048,
               "micro_batch_size": 1, "precision": "bf16", "activation_checkpointing": True},
    )  # fmt: skip


def test_adapters_on_weights_the_script_visibly_loads_unquantized_are_refused(tmp_path):
    # 8.03e9 bf16 frozen weights (16.1 GB) on a 16 GB T4: in 4 bits they would fit, but every
    # model load is in sight and asks for no quantization.
    with pytest.raises(ConfigError) as raised:
        lora_job(tmp_path, "torch_dtype=torch.bfloat16")
    [problem] = [p for p in raised.value.problems if p.path == "model"]
    assert problem.severity == "error"
    assert "unless the script loads the frozen weights quantized" not in problem.message
    assert "load the frozen weights in 8bit" in problem.hint  # a change the script can make


def test_a_load_whose_arguments_are_out_of_sight_keeps_the_quantization_caveat(tmp_path):
    [warning] = memory_warnings(lora_job(tmp_path, "torch_dtype=torch.bfloat16, **loading"))
    assert "unless the script loads the frozen weights quantized" in warning
