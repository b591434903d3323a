"""Fine-tuning recipes (the collection's main branch: llmft, verl) get the memory estimate and
their own instance-type list; recipes named for an instance type get a word on another one;
bf16 with FlashAttention-2 below compute capability 8.0 is refused.

Every recipe here is our own minimal YAML (tests/recipe_fixtures.py) with the keys AWS's
recipes carry; the base models' numbers are their config.json's.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from conftest import ROLE
from recipe_fixtures import (
    README_OVERRIDES,
    gpu_recipe,
    llmft_recipe,
    mutated,
    verl_recipe,
    write_recipe,
)

from safe_estimators._recipes.facts import FINE_TUNING_MODELS
from safe_estimators._resolve import check_arguments

IMAGE = "111122223333.dkr.ecr.us-west-2.amazonaws.com/llmft:1"


def _problems(recipe: str, **arguments: Any) -> list[Any]:
    given = {
        "estimator": "pytorch", "training_recipe": recipe, "instance_type": "ml.p5.48xlarge",
        "role": ROLE, **arguments,
    }  # fmt: skip
    return check_arguments({k: v for k, v in given.items() if v is not None})[1]


def test_llama_3_3_70b_lora_llmft_on_g5_12xlarge_is_refused_with_its_instance_list(tmp_path):
    # bf16 frozen weights, HYBRID_SHARD within the node: 70.6e9 x 2 bytes / 4 A10Gs = 35.3 GB
    # per 24 GB GPU before anything else.
    file = write_recipe(tmp_path / "llmft_70b_lora.yaml", llmft_recipe())
    problems = _problems(str(file), instance_type="ml.g5.12xlarge", image_uri=IMAGE)
    found = {(p.path, p.severity) for p in problems}
    assert found == {("recipe.training_config", "error"), ("instance_type", "warning")}
    [memory] = [p for p in problems if p.path == "recipe.training_config"]
    weights = float(re.search(r"weights ([\d.]+) GB", memory.message).group(1))
    assert 35.0 < weights < 35.6
    assert "A10G" in memory.message and "unless" not in memory.message
    [listed] = [p for p in problems if p.path == "instance_type"]
    assert "ml.p4de.24xlarge, ml.p5.48xlarge" in listed.message


def test_the_same_recipe_on_a_listed_type_passes_clean(tmp_path):
    file = write_recipe(tmp_path / "llmft_70b_lora.yaml", llmft_recipe())
    assert _problems(str(file), instance_type="ml.p5.48xlarge", image_uri=IMAGE) == []


def test_the_llmft_lora_count_is_pefts_and_full_shard_spans_the_cluster(tmp_path):
    from safe_estimators._recipes.load import load_recipe
    from safe_estimators._recipes.memory import recipe_estimate

    file = write_recipe(tmp_path / "r.yaml", llmft_recipe(sharding="FULL_SHARD"))
    ctx, _, _ = check_arguments({
        "estimator": "pytorch", "training_recipe": str(file), "instance_type": "ml.g5.12xlarge",
        "instance_count": 4, "role": ROLE, "image_uri": IMAGE,
    })  # fmt: skip
    recipe, _ = load_recipe(str(file), None)
    job, memory = recipe_estimate(ctx, recipe)
    assert job.shape.trainable == 207_093_760  # peft's all-linear count at r=16
    assert "sharded 16" in memory.layout  # FULL_SHARD over 4 x 4 GPUs


def test_a_verl_lora_recipe_on_one_g5_12xlarge_is_refused(tmp_path):
    file = write_recipe(tmp_path / "verl_70b_lora.yaml", verl_recipe())
    problems = _problems(str(file), instance_type="ml.g5.12xlarge", image_uri=IMAGE)
    assert ("recipe.training_config", "error") in {(p.path, p.severity) for p in problems}


def test_a_base_model_the_estimate_does_not_know_gets_no_estimate(tmp_path):
    file = write_recipe(tmp_path / "r.yaml", llmft_recipe(model="someone/unknown-70b"))
    problems = _problems(str(file), instance_type="ml.g5.12xlarge", image_uri=IMAGE)
    assert [p.path for p in problems] == ["instance_type"]


def test_a_recipe_named_for_p5_gets_a_word_on_p4de_and_none_on_h200(tmp_path):
    recipe = gpu_recipe(nodes=16, shard=64, tensor=2, fp8=False)
    file = write_recipe(tmp_path / "hf_llama3_8b_seq8k_gpu_p5x16_pretrain.yaml", recipe)
    problems = _problems(str(file), instance_type="ml.p4de.24xlarge", instance_count=16,
                         recipe_overrides=README_OVERRIDES)  # fmt: skip
    [word] = problems
    assert (word.path, word.severity) == ("instance_type", "warning")
    assert "written for ml.p5.48xlarge" in word.message
    assert _problems(str(file), instance_type="ml.p5e.48xlarge", instance_count=16,
                     recipe_overrides=README_OVERRIDES) == []  # fmt: skip


def test_bf16_with_flash_attention_on_a_v100_or_t4_is_refused(tmp_path):
    for flash, severity in ((True, "error"), (False, "warning")):
        recipe = mutated(gpu_recipe(fp8=False, smp=False), "model.use_flash_attention", flash)
        file = write_recipe(tmp_path / "r.yaml", recipe)
        for instance_type in ("ml.p3.16xlarge", "ml.g4dn.12xlarge"):
            problems = _problems(str(file), instance_type=instance_type,
                                 recipe_overrides=README_OVERRIDES)  # fmt: skip
            precision = [p for p in problems if p.path == "recipe.trainer.precision"]
            assert [p.severity for p in precision] == [severity], instance_type
            if flash:
                assert "FlashAttention only supports Ampere GPUs or newer." in (
                    precision[0].message
                )


def test_the_recipe_image_goes_through_the_cuda_rule_with_its_cuda_build(tmp_path):
    # The SDK's recipe image is CUDA 12.1 (training_recipes.json: container_version cu121);
    # Blackwell's first cubins come with CUDA 12.8: the same doubt as a CUDA 12.4 image.
    recipe = gpu_recipe(nodes=2, shard=16, fp8=True)
    file = write_recipe(tmp_path / "r.yaml", recipe)
    problems = _problems(str(file), instance_type="ml.p6-b200.48xlarge", instance_count=2,
                         recipe_overrides=README_OVERRIDES)  # fmt: skip
    [image] = [p for p in problems if p.path == "image_uri"]
    assert image.severity == "warning"
    assert "CUDA 12.1" in image.message and "B200" in image.message
    assert "CUDA 12.8 or later" in image.hint
    assert _problems(str(file), instance_type="ml.p5.48xlarge", instance_count=2,
                     recipe_overrides=README_OVERRIDES) == []  # fmt: skip
    given = _problems(str(file), instance_type="ml.p6-b200.48xlarge", instance_count=2,
                      recipe_overrides=README_OVERRIDES, image_uri=IMAGE)  # fmt: skip
    assert "image_uri" not in [p.path for p in given]


@pytest.mark.parametrize("model", sorted(FINE_TUNING_MODELS))
def test_the_collections_own_shapes_on_their_listed_types_pass_clean(model, tmp_path):
    # LoRA (HYBRID_SHARD, one ml.p5.48xlarge) and full fine-tuning (FULL_SHARD; 4 nodes for
    # the 70B, as AWS's Llama 3.3 70B fft recipe runs) pass with no problem at all.
    name = f"org/{model}-Instruct"
    lora = write_recipe(tmp_path / "lora.yaml", llmft_recipe(model=name))
    assert _problems(str(lora), image_uri=IMAGE) == []
    full = llmft_recipe(model=name, sharding="FULL_SHARD")
    full["training_config"]["model_config"]["peft_config"] = None
    nodes = 4 if "70b" in model else 1
    full["trainer"]["num_nodes"] = nodes
    file = write_recipe(tmp_path / "fft.yaml", full)
    assert _problems(str(file), image_uri=IMAGE, instance_count=nodes) == []
