"""Script facts in the memory fit: what the training script does (FSDP and its strategy,
DeepSpeed ZeRO from its config, CPU offload, checkpointing, mixed precision) decides the
per-GPU estimate under a data-parallel launcher, and the layout says which line showed it.
Scripts are minimal ones of our own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

import safe_estimators
from safe_estimators import ConfigError
from safe_estimators._cli import main
from safe_estimators._script_checks import script_memory_facts

ROLE = "arn:aws:iam::111111111111:role/SageMakerRole"
TORCHRUN = {"torch_distributed": {"enabled": True}}
GB = 1e9

# Llama-3.1-8B's architecture (its config.json's numbers).
LLAMA_3_1_8B = {
    "model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096,
    "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
    "vocab_size": 128256, "tie_word_embeddings": False,
}  # fmt: skip

HEAD = '''
import os

import torch
import torch.distributed as dist
from transformers import AutoModelForCausalLM


def main():
    dist.init_process_group("nccl")
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-3.1-8B")
    model.gradient_checkpointing_enable()
'''
FSDP_SCRIPT = HEAD + '''
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, ShardingStrategy
    model = FSDP(model, sharding_strategy=ShardingStrategy.FULL_SHARD,
                 device_id=torch.cuda.current_device())
    return model
'''
DDP_SCRIPT = HEAD + '''
    from torch.nn.parallel import DistributedDataParallel as DDP
    return DDP(model.cuda(), device_ids=[int(os.environ["LOCAL_RANK"])])
'''
RUNTIME_SCRIPT = HEAD + '''
    import argparse
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, ShardingStrategy
    strategy = getattr(ShardingStrategy, os.environ["STRATEGY"])
    return FSDP(model, sharding_strategy=strategy)
'''


def project(folder: Path, script: str, **extra: Any) -> dict[str, Any]:
    (folder / "train.py").write_text(script)
    (folder / "config.json").write_text(json.dumps(LLAMA_3_1_8B))
    job = {
        "estimator": "pytorch", "entry_point": "train.py", "source_dir": ".",
        "role": ROLE, "instance_type": "ml.p5.48xlarge", "instance_count": 2,
        "framework_version": "2.3.0", "py_version": "py311", "distribution": TORCHRUN,
        "model": {"config": "config.json", "parameters": "8.03B", "sequence_length": 4096,
                  "micro_batch_size": 1, "precision": "bf16"},
        **extra,
    }  # fmt: skip
    (folder / "job.yaml").write_text(yaml.safe_dump(job))
    return job


def build(folder: Path, script: str, **extra: Any) -> Any:
    job = project(folder, script, **extra)
    job.pop("estimator")
    model = job.pop("model")
    return safe_estimators.pytorch(
        **{**job, "source_dir": str(folder)},
        model={**model, "config": str(folder / "config.json")},
    )


def test_the_fsdp_llama_3_1_8b_job_on_two_p5_counts_full_shard_over_16_gpus(
    tmp_path: Path,
) -> None:
    estimator = build(tmp_path, FSDP_SCRIPT)
    explanation = safe_estimators.explain(estimator)
    memory = explanation.memory
    assert memory.fits is True and not memory.tight
    # ZeRO section 3.1: 16 bytes x 8.03e9 parameters / 16 GPUs.
    assert memory.model_states / GB == pytest.approx(16 * 8.03e9 / 16 / GB, rel=0.01)
    assert "sharded 16" in memory.layout
    assert "from the script: FSDP FULL_SHARD at train.py:16" in memory.layout
    assert any("activation_checkpointing True from the script" in n for n in memory.notes)
    assert not [w for w in explanation.warnings if w.path == "model"]


def test_catalog_fits_lists_h100_types_for_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project(tmp_path, FSDP_SCRIPT)
    assert main(["catalog", "--fits", str(tmp_path / "job.yaml"), "--json"]) == 0
    rows = {r["instance_type"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["ml.p5.48xlarge"]["instance_count"] == 1


def test_its_plain_ddp_twin_is_refused_with_the_sharding_fix(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        build(tmp_path, DDP_SCRIPT)
    [problem] = raised.value.problems
    assert (problem.path, problem.severity) == ("model", "error")
    assert "plain DistributedDataParallel at train.py:" in problem.message
    assert "unless the training script shards" not in problem.message
    assert "shard the model states over" in problem.hint


def test_a_strategy_decided_at_run_time_keeps_the_caveat_and_says_why(tmp_path: Path) -> None:
    estimator = build(tmp_path, RUNTIME_SCRIPT)
    [warning] = [w for w in safe_estimators.explain(estimator).warnings if w.path == "model"]
    assert "unless the training script shards" in warning.message
    assert "FSDP's sharding_strategy at train.py:" in warning.message


def write(folder: Path, script: str, **files: str) -> None:
    (folder / "train.py").write_text(script)
    for name, text in files.items():
        (folder / name).write_text(text)


def facts(folder: Path, hyperparameters: dict[str, object] | None = None) -> Any:
    return script_memory_facts("train.py", hyperparameters or {}, source_dir=folder)


def test_deepspeed_zero_3_with_cpu_offload_from_its_json_file(tmp_path: Path) -> None:
    config = {"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}},
              "bf16": {"enabled": True}}  # fmt: skip
    write(tmp_path, "import deepspeed\nengine, *_ = deepspeed.initialize(model=m, "
          "config='ds_config.json')\n", **{"ds_config.json": json.dumps(config)})
    found = facts(tmp_path)
    assert found.sharding.value == ("all", "world")
    assert found.offload.value == "optimizer"
    assert found.precision.value == "bf16"
    assert "ZeRO stage 3" in str(found.sharding)


def test_deepspeed_config_named_by_the_hyperparameters(tmp_path: Path) -> None:
    config = {"zero_optimization": {"stage": 2}}
    write(
        tmp_path,
        "import argparse\nimport deepspeed\nparser = argparse.ArgumentParser()\n"
        "parser.add_argument('--deepspeed_config', default='missing.json')\n"
        "args = parser.parse_args()\nengine, *_ = deepspeed.initialize(args=args, model=m)\n",
        **{"zero2.json": json.dumps(config)},
    )
    assert facts(tmp_path, {"deepspeed_config": "zero2.json"}).sharding.value == (
        "gradients", "world"
    )
    assert facts(tmp_path).undecided  # its default names no file in source_dir


def test_trainer_fsdp_from_hf_argument_parser_hyperparameters(tmp_path: Path) -> None:
    write(
        tmp_path,
        "from transformers import HfArgumentParser, Trainer, TrainingArguments\n"
        "parser = HfArgumentParser((TrainingArguments,))\n"
        "(training_args,) = parser.parse_args_into_dataclasses()\n"
        "Trainer(model=m, args=training_args).train()\n",
    )
    found = facts(tmp_path, {"fsdp": "hybrid_shard auto_wrap offload", "bf16": "True",
                             "gradient_checkpointing": "True"})  # fmt: skip
    assert found.sharding.value == ("all", "instance")
    assert found.offload.value == "parameters"
    assert (found.precision.value, found.checkpointing.value) == ("bf16", True)
    assert facts(tmp_path).undecided  # no fsdp: the Trainer may still shard through Accelerate


@pytest.mark.parametrize(
    ("call", "value"),
    [
        ("from torch.distributed.fsdp import fully_shard\nfully_shard(m)", ("all", "world")),
        ("from torch.distributed._composable.fsdp import fully_shard\n"
         "fully_shard(m, reshard_after_forward=False)", ("gradients", "world")),
        ("from accelerate import FullyShardedDataParallelPlugin\n"
         "FullyShardedDataParallelPlugin(sharding_strategy='SHARD_GRAD_OP')",
         ("gradients", "world")),
        ("import torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel\n"
         "FullyShardedDataParallel(m)", ("all", "world")),
    ],
    ids=["fsdp2", "fsdp2-composable-no-reshard", "accelerate-plugin", "fsdp-default"],
)
def test_the_sharding_spellings(tmp_path: Path, call: str, value: tuple[str, str]) -> None:
    write(tmp_path, call + "\n")
    assert facts(tmp_path).sharding.value == value


def test_an_unknown_library_leaves_the_sharding_undecided(tmp_path: Path) -> None:
    write(tmp_path, "import torch\nimport my_trainer_lib\nmy_trainer_lib.run(torch.nn.Linear(2))\n")
    found = facts(tmp_path)
    assert found.sharding is None
    assert "my_trainer_lib" in found.undecided[0]


PURE_BF16_DDP = DDP_SCRIPT.replace(
    'from_pretrained("meta-llama/Llama-3.1-8B")',
    'from_pretrained("meta-llama/Llama-3.1-8B", torch_dtype=torch.bfloat16)',
)


def test_weights_loaded_in_16_bits_make_the_refusal_a_warning(tmp_path: Path) -> None:
    estimator = build(tmp_path, PURE_BF16_DDP)
    [warning] = [w for w in safe_estimators.explain(estimator).warnings if w.path == "model"]
    assert "unless the estimate counts high: the weights are 16-bit" in warning.message


@pytest.mark.parametrize(
    "call",
    ["from torch.distributed.tensor.parallel import parallelize_module\nparallelize_module(m)",
     "from torch.distributed.pipelining import pipeline\npipeline(m)"],
    ids=["tensor-parallel", "pipelining"],
)
def test_torch_tensor_or_pipeline_parallelism_is_undecided(tmp_path: Path, call: str) -> None:
    write(tmp_path, "import torch\n" + call + "\n")
    assert facts(tmp_path).undecided


def test_zero_redundancy_optimizer_shards_the_optimizer_states(tmp_path: Path) -> None:
    write(tmp_path, "import torch\nfrom torch.distributed.optim import ZeroRedundancyOptimizer\n"
          "ZeroRedundancyOptimizer(m.parameters(), optimizer_class=torch.optim.AdamW)\n")
    assert facts(tmp_path).sharding.value == ("optimizer", "world")


def test_a_script_that_runs_another_program_leaves_it_undecided(tmp_path: Path) -> None:
    write(tmp_path, "import runpy\nrunpy.run_path('pretrain_real.py', run_name='__main__')\n")
    assert facts(tmp_path).undecided == ("it runs another program, which the checks do not read",)


OPTIONS_TO_TRAINING_ARGUMENTS = '''
import argparse

from transformers import Trainer, TrainingArguments

parser = argparse.ArgumentParser()
parser.add_argument("--fsdp", default="")
parser.add_argument("--gradient_checkpointing", action="store_true")
args = parser.parse_args()
training_args = TrainingArguments(
    output_dir="/opt/ml/checkpoints", fsdp=args.fsdp,
    gradient_checkpointing=args.gradient_checkpointing,
)
Trainer(model=model, args=training_args).train()
'''


def test_hyperparameters_reach_training_arguments_through_the_scripts_options(
    tmp_path: Path,
) -> None:
    write(tmp_path, OPTIONS_TO_TRAINING_ARGUMENTS)
    found = facts(tmp_path, {"fsdp": "full_shard auto_wrap", "gradient_checkpointing": "True"})
    assert found.sharding.value == ("all", "world")
    assert "fsdp='full_shard auto_wrap'" in str(found.sharding)
    assert found.checkpointing.value is True
    # Without them: the option's default (no FSDP), and the Trainer may still shard.
    default = facts(tmp_path)
    assert default.sharding is None and default.checkpointing.value is False
    assert default.undecided
