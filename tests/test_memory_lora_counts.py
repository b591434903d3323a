"""LoRA counts as peft builds them, for the models of the examples and corpora.

peft puts ``lora_A`` (in -> r) and ``lora_B`` (r -> out) beside every adapted ``nn.Linear`` of
in x out (src/peft/tuners/lora/layer.py, ``LoraLayer.update_layer``): r x (in + out) parameters
each, no bias by default. The figures below are that arithmetic by hand from each model's
config.json (Hugging Face Hub): q_proj is hidden -> heads x head_dim, k_proj and v_proj hidden ->
key/value heads x head_dim (grouped-query attention), o_proj back, and the gated MLP's gate_proj
and up_proj hidden -> intermediate, down_proj back; ``"all-linear"`` is all seven, the output
layer left out (peft ``_maybe_include_all_linear_layers``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest

from safe_estimators import ModelShape
from safe_estimators._memory import job_of
from safe_estimators._memory.adapters import lora_parameters
from safe_estimators._memory.complete import complete_shape
from safe_estimators._resolve import check_arguments
from safe_estimators._script_checks.memory_facts import Adapters

ROLE = "arn:aws:iam::111111111111:role/SageMakerRole"

# config.json numbers: layers, hidden, heads, key/value heads, MLP width, vocabulary, tied.
MODELS: dict[str, dict[str, Any]] = {
    "Llama-3.1-8B": {
        "model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096,
        "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
        "vocab_size": 128256, "tie_word_embeddings": False,
    },
    "Llama-3.3-70B": {
        "model_type": "llama", "num_hidden_layers": 80, "hidden_size": 8192,
        "num_attention_heads": 64, "num_key_value_heads": 8, "intermediate_size": 28672,
        "vocab_size": 128256, "tie_word_embeddings": False,
    },
    "Qwen2.5-7B": {
        "model_type": "qwen2", "num_hidden_layers": 28, "hidden_size": 3584,
        "num_attention_heads": 28, "num_key_value_heads": 4, "intermediate_size": 18944,
        "vocab_size": 152064, "tie_word_embeddings": False,
    },
    "Mistral-7B": {
        "model_type": "mistral", "num_hidden_layers": 32, "hidden_size": 4096,
        "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
        "vocab_size": 32000, "tie_word_embeddings": False,
    },
}  # fmt: skip
QV = ("q_proj", "v_proj")
QKVO = ("q_proj", "k_proj", "v_proj", "o_proj")
ALL = "all-linear"

# r = 16. Per layer, r x (in + out) summed; x layers.
# Llama-3.1-8B and Mistral-7B (h 4096, k/v 8 x 128 = 1024, MLP 14336, 32 layers):
#   q 4096+4096, k and v 4096+1024 each, o 4096+4096: q/v 13312, q/k/v/o 26624;
#   gate and up 4096+14336 each, down 14336+4096: all-linear 26624 + 3 x 18432 = 81920.
# Llama-3.3-70B (h 8192, k/v 1024, MLP 28672, 80 layers): q/v 16384 + 9216 = 25600,
#   q/k/v/o 51200, all-linear 51200 + 3 x 36864 = 161792.
# Qwen2.5-7B (h 3584, k/v 4 x 128 = 512, MLP 18944, 28 layers): q/v 7168 + 4096 = 11264,
#   q/k/v/o 22528, all-linear 22528 + 3 x 22528 = 90112.
EXPECTED = {
    ("Llama-3.1-8B", QV): 16 * 13312 * 32,  # 6,815,744
    ("Llama-3.1-8B", QKVO): 16 * 26624 * 32,  # 13,631,488
    ("Llama-3.1-8B", ALL): 16 * 81920 * 32,  # 41,943,040
    ("Mistral-7B", QV): 16 * 13312 * 32,
    ("Mistral-7B", QKVO): 16 * 26624 * 32,
    ("Mistral-7B", ALL): 16 * 81920 * 32,
    ("Llama-3.3-70B", QV): 16 * 25600 * 80,  # 32,768,000
    ("Llama-3.3-70B", QKVO): 16 * 51200 * 80,  # 65,536,000
    ("Llama-3.3-70B", ALL): 16 * 161792 * 80,  # 207,093,760
    ("Qwen2.5-7B", QV): 16 * 11264 * 28,  # 5,046,272
    ("Qwen2.5-7B", QKVO): 16 * 22528 * 28,  # 10,092,544
    ("Qwen2.5-7B", ALL): 16 * 90112 * 28,  # 40,370,176
}


def test_the_issues_figures_are_peft_arithmetic() -> None:
    assert EXPECTED[("Llama-3.3-70B", ALL)] == 207_093_760
    assert EXPECTED[("Qwen2.5-7B", QKVO)] == 10_092_544


def _section(config: dict[str, Any]) -> ModelShape:
    """The model section with the shapes a count needs, no config.json."""
    return ModelShape(
        layers=config["num_hidden_layers"], hidden_size=config["hidden_size"],
        attention_heads=config["num_attention_heads"],
        key_value_heads=config["num_key_value_heads"],
        intermediate_size=config["intermediate_size"], vocab_size=config["vocab_size"],
        model_type=config["model_type"], tied_embeddings=config["tie_word_embeddings"],
    )  # fmt: skip


@pytest.mark.parametrize(("model", "targets"), list(EXPECTED), ids=lambda v: str(v))
@pytest.mark.parametrize("source", ["config.json", "model section"])
def test_lora_counts_equal_pefts(model: str, targets: Any, source: str, tmp_path: Path) -> None:
    config = MODELS[model]
    if source == "config.json":
        path = tmp_path / "config.json"
        path.write_text(json.dumps(config))
        shape = ModelShape(config=str(path))
    else:
        shape = _section(config)
    complete, problems = complete_shape(shape, {})
    assert problems == []
    count, how = lora_parameters(Adapters(16, targets), complete)
    assert count == EXPECTED[(model, targets)]
    assert "assuming" not in how


def test_a_count_without_the_key_value_heads_says_what_it_assumed() -> None:
    shape = attrs.evolve(_section(MODELS["Qwen2.5-7B"]), key_value_heads=None)
    complete, _ = complete_shape(shape, {})
    count, how = lora_parameters(Adapters(16, QKVO), complete)
    assert count == 16 * 4 * 7168 * 28  # k and v counted 3584 x 3584: 12,845,056
    assert "assuming key/value projections 3584 x 3584 (no key_value_heads given)" in how


def test_all_linear_without_the_model_type_or_mlp_width_says_so() -> None:
    shape = attrs.evolve(_section(MODELS["Llama-3.1-8B"]), model_type=None, intermediate_size=None)
    complete, _ = complete_shape(shape, {})
    _, how = lora_parameters(Adapters(16, ALL), complete)
    assert "the MLP 16384 wide, 4 x hidden (no intermediate_size given)" in how
    assert "an MLP of two matrices (no model_type given)" in how


def test_lm_head_as_a_target_is_counted_once_with_the_vocabulary() -> None:
    complete, _ = complete_shape(_section(MODELS["Llama-3.1-8B"]), {})
    count, _ = lora_parameters(Adapters(16, (*QV, "lm_head")), complete)
    assert count == 16 * 13312 * 32 + 16 * (4096 + 128256)


def test_the_parameter_count_follows_grouped_query_attention_and_untied_embeddings() -> None:
    # Llama-3.1-8B's 8,030,261,248 parameters: 32 layers of (2 x 4096^2 + 2 x 4096 x 1024 +
    # 3 x 4096 x 14336 + 2 x 4096), two 128256 x 4096 embeddings, the final norm.
    complete, _ = complete_shape(_section(MODELS["Llama-3.1-8B"]), {})
    assert complete.parameters == 8_030_261_248


LORA_SCRIPT = """
import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("m", torch_dtype=torch.bfloat16)
model = get_peft_model(model, LoraConfig(r=16, target_modules={targets}))
optimizer = torch.optim.AdamW(p for p in model.parameters() if p.requires_grad)
with torch.autocast("cuda", dtype=torch.bfloat16):
    model(**batch).loss.backward()
optimizer.step()
model.save_pretrained("/opt/ml/model")
"""


@pytest.mark.parametrize(
    ("model", "targets", "literal"),
    [("Llama-3.3-70B", ALL, '"all-linear"'),
     ("Qwen2.5-7B", QKVO, '["q_proj", "k_proj", "v_proj", "o_proj"]')],
)  # fmt: skip
def test_the_scripts_lora_config_counts_the_issues_jobs_as_peft_does(
    model: str, targets: Any, literal: str, tmp_path: Path
) -> None:
    (tmp_path / "train.py").write_text(LORA_SCRIPT.format(targets=literal))
    section = {k: v for k, v in attrs.asdict(_section(MODELS[model])).items() if v is not None}
    ctx, _, _ = check_arguments(dict(
        estimator="pytorch", entry_point="train.py", source_dir=str(tmp_path), role=ROLE,
        instance_type="ml.p5e.48xlarge", instance_count=1, framework_version="2.3.0",
        py_version="py311", model={**section, "sequence_length": 2048, "micro_batch_size": 1,
                                   "precision": "bf16"},
    ))  # fmt: skip
    _, memory, _ = job_of(ctx)
    expected = EXPECTED[(model, targets)]
    assert memory.gradients == expected * 2  # bf16 gradients of the adapters only
    assert any(f"trainable_parameters {expected:,} from the script" in n for n in memory.notes)

