"""Script facts in the memory fit, part two: LoRA adapters the script trains (peft) count as
the only trainable parameters, and a process that replicates the model over its GPUs
(``torch.nn.DataParallel``, or the Hugging Face Trainer without a launcher) is counted on GPU 0,
with the gathered outputs. Scripts are minimal ones of our own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import safe_estimators
from safe_estimators import ConfigError

ROLE = "arn:aws:iam::111111111111:role/SageMakerRole"

# Llama-3.1-8B's architecture (its config.json's numbers).
LLAMA_3_1_8B = {
    "model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096,
    "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
    "vocab_size": 128256, "tie_word_embeddings": False,
}  # fmt: skip
MODEL = {"parameters": "8.03B", "sequence_length": 2048, "micro_batch_size": 1}

LORA = '''
import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-3.1-8B", torch_dtype=torch.bfloat16)
config = LoraConfig(r=16, lora_alpha=32, target_modules={targets}, task_type="CAUSAL_LM")
model = get_peft_model(model, config)
optimizer = torch.optim.AdamW(p for p in model.parameters() if p.requires_grad)
with torch.autocast("cuda", dtype=torch.bfloat16):
    model(**batch).loss.backward()
optimizer.step()
model.save_pretrained("/opt/ml/model")
'''
Q_AND_V = LORA.format(targets='["q_proj", "v_proj"]')
FP32_LOAD = Q_AND_V.replace(", torch_dtype=torch.bfloat16", "")


PYTORCH = {"framework_version": "2.3.0", "py_version": "py311"}
HUGGING_FACE = {"transformers_version": "4.36.0", "pytorch_version": "2.1.0", "py_version": "py310"}


def build(
    folder: Path, script: str, instance_type: str, *, config: dict[str, Any] = LLAMA_3_1_8B,
    shape: dict[str, Any] = MODEL, hugging_face: bool = False, **model: Any,
) -> Any:  # fmt: skip
    (folder / "train.py").write_text(script)
    (folder / "config.json").write_text(json.dumps(config))
    factory = safe_estimators.huggingface if hugging_face else safe_estimators.pytorch
    return factory(
        entry_point="train.py", source_dir=str(folder), role=ROLE, instance_type=instance_type,
        instance_count=1, **(HUGGING_FACE if hugging_face else PYTORCH),
        model={"config": str(folder / "config.json"), **shape, **model},
    )  # fmt: skip


def memory_warnings(estimator: Any) -> list[str]:
    return [w.message for w in safe_estimators.explain(estimator).warnings if w.path == "model"]


def test_lora_on_q_and_v_trains_only_the_adapters_peft_adds(tmp_path: Path) -> None:
    # peft: lora_A (in x r) and lora_B (r x out) per adapted matrix, 32 layers of q_proj
    # (4096 -> 4096) and v_proj (4096 -> 1024): 16 x (8192 + 5120) x 32, peft's own
    # print_trainable_parameters figure for Llama-3-8B at r=16 on q and v.
    estimator = build(tmp_path, Q_AND_V, "ml.g6e.xlarge")
    memory = safe_estimators.explain(estimator).memory
    assert memory.fits is True
    assert memory.gradients == 6_815_744 * 2  # bf16 gradients of the adapters only
    assert any(
        "trainable_parameters 6,815,744 from the script (LoRA r=16 on q_proj, v_proj "
        "(train.py:7) with `get_peft_model(...)` at train.py:8" in note for note in memory.notes
    )
    assert not memory_warnings(estimator)


def test_the_same_job_without_adapters_is_refused(tmp_path: Path) -> None:
    full = FP32_LOAD.replace("model = get_peft_model(model, config)\n", "")
    with pytest.raises(ConfigError) as raised:
        build(tmp_path, full, "ml.g6e.xlarge")
    [problem] = raised.value.problems
    assert (problem.path, problem.severity) == ("model", "error")


def test_all_linear_adapts_every_linear_layer_but_the_output(tmp_path: Path) -> None:
    # q, k, v, o, gate, up, down: 16 x 81920 x 32 (peft prints 41,943,040 for Llama-3-8B).
    estimator = build(tmp_path, LORA.format(targets='"all-linear"'), "ml.g6e.xlarge")
    memory = safe_estimators.explain(estimator).memory
    assert memory.gradients == 41_943_040 * 2
    assert any("LoRA r=16 on all-linear" in note for note in memory.notes)


def test_peft_default_modules_for_the_model_type(tmp_path: Path) -> None:
    estimator = build(tmp_path, LORA.format(targets="None"), "ml.g6e.xlarge")
    # LoraConfig's default r is 16 here; target_modules=None: peft's llama default, q and v.
    assert safe_estimators.explain(estimator).memory.gradients == 6_815_744 * 2


def test_the_model_sections_trainable_parameters_win_and_the_notes_say_so(
    tmp_path: Path,
) -> None:
    estimator = build(tmp_path, Q_AND_V, "ml.g6e.xlarge", trainable_parameters="20M")
    memory = safe_estimators.explain(estimator).memory
    assert memory.gradients == 20_000_000 * 2
    assert any(
        "model.trainable_parameters 20,000,000 wins over the script's 6,815,744" in note
        for note in memory.notes
    )


def test_adapters_of_a_configuration_decided_at_run_time_make_a_refusal_a_warning(
    tmp_path: Path,
) -> None:
    script = Q_AND_V.replace("r=16", 'r=int(os.environ["RANK_R"])').replace(
        "import torch\n", "import os\nimport torch\n", 1
    )
    [warning] = memory_warnings(build(tmp_path, script, "ml.g6e.xlarge"))
    assert "unless the estimate counts high: only adapters train (`get_peft_model(...)` at " in (
        warning
    )
    assert "their count is not known (its configuration is not readable)" in warning


def test_frozen_weights_loaded_in_float32_take_4_bytes_under_autocast(tmp_path: Path) -> None:
    # transformers 4's from_pretrained loads float32 without torch_dtype; autocast computes
    # in bf16 but keeps them: 8.03e9 x 4 bytes, about 32 GB (with 13.4 GB of activations: an
    # 80 GB A100; on a 40 GB one the job is refused, its unquantized load being in sight).
    estimator = build(tmp_path, FP32_LOAD, "ml.p4de.24xlarge", hugging_face=True, precision="bf16")
    memory = safe_estimators.explain(estimator).memory
    assert memory.weights / 1e9 == pytest.approx(8.03e9 * 4 / 1e9, rel=0.01)
    assert any(
        "frozen weights counted in float32, 4 bytes each, from the script "
        "(`AutoModelForCausalLM.from_pretrained(...)` without torch_dtype (transformers 4.36.0 "
        "loads float32) at train.py:6)" in note for note in memory.notes
    )


def test_without_the_transformers_version_a_refusal_on_float32_weights_is_a_warning(
    tmp_path: Path,
) -> None:
    # The PyTorch estimator installs transformers from requirements.txt: 5 loads bf16 weights,
    # with which the job fits (8.03e9 x 2 bytes, checkpointed activations).
    [warning] = memory_warnings(
        build(
            tmp_path, FP32_LOAD, "ml.g5.2xlarge", precision="bf16", activation_checkpointing=True
        )
    )
    assert "from transformers 5 they load in the checkpoint's dtype" in warning


DATA_PARALLEL = '''
import torch
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("gpt2-like")
model = torch.nn.DataParallel(model.cuda())
optimizer = torch.optim.AdamW(model.parameters())
with torch.autocast("cuda", dtype=torch.bfloat16):
    model(**batch).loss.mean().backward()
optimizer.step()
torch.save(model.module.state_dict(), "/opt/ml/model/model.pt")
'''
SMALL = {"parameters": "350M", "layers": 24, "hidden_size": 1024, "attention_heads": 16,
         "vocab_size": 50304, "sequence_length": 1024, "micro_batch_size": 4,
         "precision": "bf16"}  # fmt: skip


def small_job(folder: Path, script: str, instance_type: str, micro_batch_size: int = 4) -> Any:
    (folder / "train.py").write_text(script)
    return safe_estimators.pytorch(
        entry_point="train.py", source_dir=str(folder), role=ROLE, instance_type=instance_type,
        instance_count=1, framework_version="2.3.0", py_version="py311",
        model={**SMALL, "micro_batch_size": micro_batch_size},
    )  # fmt: skip


def test_data_parallel_counts_gpu_0_with_the_gathered_outputs(tmp_path: Path) -> None:
    four = safe_estimators.explain(small_job(tmp_path, DATA_PARALLEL, "ml.g5.12xlarge")).memory
    # One GPU's share of the batch of 4: one sample.
    alone = safe_estimators.explain(
        small_job(tmp_path, DATA_PARALLEL, "ml.g5.2xlarge", micro_batch_size=1)
    ).memory
    assert "torch.nn.DataParallel in one process per instance over 4 accelerators" in four.layout
    assert "GPU 0 counted: the full model states and the outputs of its 4 replicas" in four.layout
    assert "from the script: `torch.nn.DataParallel(...)` at train.py:6" in four.layout
    # Nothing sharded: GPU 0 holds what one GPU would for its share of the batch, plus the
    # 4 replicas' outputs gathered (the fp32 logits of all 4 samples).
    assert four.model_states == alone.model_states
    assert four.activations - alone.activations == pytest.approx(4 * 1024 * 4 * 50304, abs=2)


TRAINER = '''
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

model = AutoModelForCausalLM.from_pretrained("gpt2-like"{load})
args = TrainingArguments(output_dir="/opt/ml/model", bf16=True)
Trainer(model=model, args=args).train()
'''


def test_the_trainer_without_a_launcher_is_counted_on_gpu_0(tmp_path: Path) -> None:
    script = TRAINER.format(load="")
    memory = safe_estimators.explain(small_job(tmp_path, script, "ml.g5.12xlarge")).memory
    alone = safe_estimators.explain(small_job(tmp_path, script, "ml.g5.2xlarge")).memory
    assert "GPU 0 counted" in memory.layout
    assert "`Trainer(...)` in one process (Trainer._wrap_model: DataParallel) at train.py:6" in (
        memory.layout
    )
    # The Trainer's batch is per device: each replica runs 4 samples, and GPU 0 gathers 16.
    assert memory.activations - alone.activations == pytest.approx(4 * 4 * 1024 * 4 * 50304, abs=2)


def test_an_8_bit_model_is_not_wrapped_by_the_trainer(tmp_path: Path) -> None:
    script = TRAINER.format(load=", load_in_8bit=True")
    memory = safe_estimators.explain(small_job(tmp_path, script, "ml.g5.12xlarge")).memory
    assert "DataParallel" not in memory.layout


# Falcon-7B's config.json (multi-query attention: one key/value head).
FALCON_7B = {"model_type": "falcon", "hidden_size": 4544, "n_head": 71, "n_layer": 32,
             "vocab_size": 65024, "multi_query": True, "new_decoder_architecture": False}
QLORA_FALCON = '''
import torch
from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
from transformers import AutoModelForCausalLM, BitsAndBytesConfig

quantized = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=torch.bfloat16)
model = AutoModelForCausalLM.from_pretrained("tiiuae/falcon-7b", quantization_config=quantized)
model = prepare_model_for_kbit_training(model)
config = LoraConfig(r=64, lora_alpha=16, target_modules=[
    "query_key_value", "dense", "dense_h_to_4h", "dense_4h_to_h"])
model = get_peft_model(model, config)
'''


def test_qlora_on_falcon_counts_its_fused_multi_query_attention(tmp_path: Path) -> None:
    # query_key_value 4544 -> 4544 + 2 x 64, dense 4544 -> 4544, the MLP 4544 <-> 18176, at
    # r=64 over 32 layers: 130,547,712, the QLoRA Falcon-7B notebooks' printed figure.
    estimator = build(
        tmp_path, QLORA_FALCON, "ml.g5.2xlarge", config=FALCON_7B,
        shape={"sequence_length": 2048, "micro_batch_size": 1}, precision="bf16",
        activation_checkpointing=True,
    )  # fmt: skip
    memory = safe_estimators.explain(estimator).memory
    assert memory.gradients == 130_547_712 * 2
    assert any("quantization 4bit from the script" in note for note in memory.notes)
