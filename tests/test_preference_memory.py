"""A 70B full fine-tune whose Compute.instance_preferences are ml.p4d.24xlarge (8 x A100 40 GB)
and ml.p5.48xlarge (8 x H100 80 GB): the memory estimate runs for each preferred type, so the job
is refused on p4d only, and the problem names it (issue 35's done-when)."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from safe_estimators._commands.validate import validate_file

pytestmark = [
    pytest.mark.both_sdks,
    pytest.mark.sdk3_only,  # Compute.instance_preferences is sagemaker 3's
]

ROLE = "arn:aws:iam::111122223333:role/SageMakerRole"
# meta-llama/Llama-3.3-70B's config.json numbers (Hugging Face Hub).
LLAMA_3_3_70B = {
    "model_type": "llama", "num_hidden_layers": 80, "hidden_size": 8192,
    "num_attention_heads": 64, "num_key_value_heads": 8, "intermediate_size": 28672,
    "vocab_size": 128256, "tie_word_embeddings": False,
}  # fmt: skip
# DeepSpeed ZeRO-3 in bf16: every parameter's 16 bytes of model states (bf16 weights and
# gradients, fp32 master weights and two Adam moments) are sharded over all GPUs of the job.
ZERO_3 = """
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


def _spec(tmp_path, preferences, count):
    (tmp_path / "train.py").write_text(ZERO_3)
    (tmp_path / "config.json").write_text(json.dumps(LLAMA_3_3_70B))
    data = {
        "estimator": "pytorch", "target": "model_trainer", "entry_point": "train.py",
        "framework_version": "2.3.0", "py_version": "py311", "role": ROLE,
        "distribution": {"torch_distributed": {"enabled": True}},
        "compute": {"instance_preferences": [{"instance_type": t} for t in preferences],
                    "instance_count": count},
        "model": {"config": "config.json", "sequence_length": 2048, "micro_batch_size": 1},
    }  # fmt: skip
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_70b_full_fine_tune_preferring_p4d_and_p5_is_refused_on_p4d_only(tmp_path):
    # 3 instances x 8 GPUs: 70.6e9 x 16 bytes / 24 = 47.1 GB of model states per GPU, over an
    # A100's 40 GiB (42.9 GB) before activations, and well inside an H100's 80 GiB (85.9 GB).
    problems = validate_file(str(_spec(tmp_path, ["ml.p4d.24xlarge", "ml.p5.48xlarge"], 3)))
    errors = [p for p in problems if p.severity == "error"]
    [memory] = errors
    assert memory.path == "model"
    assert "ml.p4d.24xlarge" in memory.message
    states = float(re.search(r"model states ([\d.]+) GB", memory.message).group(1))
    assert 46.5 < states < 47.5
    assert not any("p5" in p.message or "p5" in p.path for p in problems)


def test_the_same_job_preferring_p5_alone_fits(tmp_path):
    problems = validate_file(str(_spec(tmp_path, ["ml.p5.48xlarge", "ml.p5e.48xlarge"], 3)))
    assert [p for p in problems if p.severity == "error"] == []


def test_with_p5_listed_first_the_p4d_problem_is_still_the_one_named(tmp_path):
    problems = validate_file(str(_spec(tmp_path, ["ml.p5.48xlarge", "ml.p4d.24xlarge"], 3)))
    [memory] = [p for p in problems if p.severity == "error"]
    assert "ml.p4d.24xlarge" in memory.message
    assert "ml.p5.48xlarge" not in memory.message
