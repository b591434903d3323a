"""The recipes of aws/sagemaker-hyperpod-recipes at a pinned commit, as options and numbers
(tests/fixtures/recipe_corpus.json, made by tests/recipe_corpus.py; no recipe text is kept).

For each, a minimal recipe of our own with those numbers is built by the bare SDK (with local
stand-ins for the repositories it clones) and checked by us on its own instance type and node
count: the bare SDK's verdict on our minimal recipe is the one it gave on AWS's file, the
recipes it builds pass here with no warning, the ones it cannot build are refused for its
reason, and one planted mistake each is refused at the recipe path.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import ROLE
from recipe_fixtures import local_repositories, redirect_environment, write_recipe
from sagemaker.pytorch import PyTorch

import instance_catalog
from safe_estimators._resolve import check_arguments

CORPUS = json.loads((Path(__file__).parent / "fixtures" / "recipe_corpus.json").read_text())
RECIPES = CORPUS["recipes"]
IMAGE = "111122223333.dkr.ecr.us-west-2.amazonaws.com/recipe:1"
BUILT = [r for r in RECIPES if r["sdk"] == "builds"]

# Where we refuse what the SDK refuses, by the SDK's message.
SDK_REASONS = {
    "not supported": "recipe.model.model_type",
    "required field model_type": "recipe.model.model_type",
    "Must set either instance_count": "instance_count",
}


def test_the_corpus_is_the_pinned_commit_and_106_of_its_117_recipes_build():
    assert CORPUS["commit"] == "bb4da663a3786c838db0895227841eeb99e58f11"
    assert (len(RECIPES), len(BUILT)) == (117, 106)


def _set(data: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    for key in parents:
        data = data.setdefault(key, {})
    data[last] = value


def minimal_recipe(entry: dict[str, Any]) -> dict[str, Any]:
    """A recipe of our own with the entry's keys and numbers."""
    values = entry["values"]
    recipe: dict[str, Any] = {"run": {"name": "corpus"}}
    if entry["kind"] == "nova":
        recipe["training_config"] = {"max_length": 8192}
        if entry["keys"]["run.model_name_or_path"]:
            recipe["run"]["model_name_or_path"] = "nova/prod"
        if entry["keys"]["training_config.distillation_data"]:
            recipe["training_config"]["distillation_data"] = "true"
    else:
        recipe["run"]["results_dir"] = "${base_results_dir}/${.name}"
    for key, value in values.items():
        if key == "model.fp8" and not entry["keys"]["model.fp8"]:
            continue
        _set(recipe, key, value)
    if entry["keys"]["model.data"]:
        _set(recipe, "model.data.train_dir", None)
        _set(recipe, "model.hf_model_name_or_path", None)
        _set(recipe, "model.precision", "${recipes.trainer.precision}")
    return recipe


@pytest.fixture(scope="module")
def redirected(tmp_path_factory):
    repos = local_repositories(tmp_path_factory.mktemp("repos"), {})
    with pytest.MonkeyPatch.context() as patch:
        for name, value in redirect_environment(repos).items():
            patch.setenv(name, value)
        yield


def _arguments(entry: dict[str, Any], file: Path, **changes: Any) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "training_recipe": str(file),
        "recipe_overrides": copy.deepcopy(entry["overrides"]),
        "instance_type": entry["instance_type"],
        "role": ROLE,
    }
    if entry["kind"] != "standard":
        arguments["image_uri"] = IMAGE
    arguments.update(changes)
    return {k: v for k, v in arguments.items() if v is not None}


def _problems(arguments: dict[str, Any]) -> list[Any]:
    return check_arguments({"estimator": "pytorch", **arguments})[1]


def _signature(entry: dict[str, Any]) -> tuple[Any, ...]:
    values = entry["values"]
    return (entry["kind"], entry["instance_type"], values.get("model.model_type"), entry["sdk"])


# The bare SDK builds one recipe of each kind, instance type, model type and verdict (a build
# clones the adapter: about a second each); ours checks all of them.
SAMPLE = {_signature(r): r["name"] for r in reversed(RECIPES)}


@pytest.mark.parametrize(
    "entry", [r for r in RECIPES if r["name"] in SAMPLE.values()], ids=lambda r: r["name"]
)
def test_our_minimal_recipe_gets_the_bare_sdks_verdict_on_aws_file(
    entry, tmp_path, redirected, sagemaker_session
):
    file = write_recipe(tmp_path / (Path(entry["name"]).name + ".yaml"), minimal_recipe(entry))
    source = tmp_path / "source"
    source.mkdir()
    try:
        PyTorch(
            **_arguments(entry, file), sagemaker_session=sagemaker_session, source_dir=str(source)
        )
        sdk = "builds"
    except Exception as exc:
        sdk = f"{type(exc).__name__}: {exc}"
    assert sdk == entry["sdk"]


@pytest.mark.parametrize("entry", RECIPES, ids=[r["name"] for r in RECIPES])
def test_each_recipe_gets_the_bare_sdks_verdict(entry, tmp_path):
    file = write_recipe(tmp_path / (Path(entry["name"]).name + ".yaml"), minimal_recipe(entry))
    problems = _problems(_arguments(entry, file))
    sdk = entry["sdk"]
    if sdk == "builds":
        assert problems == []
    else:
        (path,) = {at for reason, at in SDK_REASONS.items() if reason in sdk}
        assert [p.path for p in problems if p.severity == "error"] == [path]


def _mutations(entry: dict[str, Any]) -> list[tuple[str, dict[str, Any], dict[str, Any], str]]:
    """(what, recipe override, argument changes, the path refused) for one recipe."""
    values = entry["values"]
    if entry["kind"] == "nova":
        return [("no image", {}, {"image_uri": None}, "image_uri")]
    nodes = values.get("trainer.num_nodes", 1)
    per_node = instance_catalog.get(entry["instance_type"])
    devices = per_node.neuron_cores if entry["instance_type"].startswith("ml.trn") else (
        per_node.gpu_count
    )
    found = [
        ("devices", {"trainer": {"devices": devices // 2}}, {}, "recipe.trainer.devices"),
        ("nodes", {}, {"instance_count": nodes + 1}, "recipe.trainer.num_nodes"),
    ]
    world = nodes * devices
    if entry["instance_type"].startswith("ml.trn"):
        strategy = {"distributed_strategy": {"tensor_model_parallel_size": world + 1}}
        at = "recipe.distributed_strategy.tensor_model_parallel_size"
        found.append(("degree", strategy, {}, at))
        return found
    shard = {"model": {"shard_degree": world + 1}}
    found.append(("degree", shard, {}, "recipe.model.shard_degree"))
    if values.get("use_smp_model", True):
        found.append(
            ("fp8 on A100", {"model": {"fp8": True}}, {"instance_type": "ml.p4d.24xlarge"},
             "recipe.model.fp8")
        )  # fmt: skip
    return found


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


MUTATED = [(r, m) for r in BUILT for m in _mutations(r)]


@pytest.mark.parametrize(
    ("entry", "mutation"), MUTATED, ids=[f"{r['name']}-{m[0]}" for r, m in MUTATED]
)
def test_one_planted_mistake_is_refused_at_the_recipe_path(entry, mutation, tmp_path):
    _, override, changes, path = mutation
    file = write_recipe(tmp_path / "r.yaml", minimal_recipe(entry))
    arguments = _arguments(entry, file, **changes)
    arguments["recipe_overrides"] = _merge(arguments["recipe_overrides"], override)
    errors = [p for p in _problems(arguments) if p.severity == "error"]
    assert path in [p.path for p in errors], errors
    if path != "image_uri":  # the numbers involved are in the message
        assert all(any(ch.isdigit() for ch in p.message) for p in errors if p.path == path)


@pytest.mark.parametrize("instance_type", ["ml.p3.16xlarge", "ml.g4dn.12xlarge"])
def test_bf16_on_v100_or_t4_is_refused_with_flash_attention_else_a_warning(
    tmp_path, instance_type
):
    # FlashAttention-2 refuses GPUs below compute capability 8.0 (V100 7.0, T4 7.5).
    found = {}
    for entry in BUILT:
        if entry["kind"] != "standard" or entry["values"].get("use_smp_model", True):
            continue
        if entry["instance_type"].startswith("ml.trn"):
            continue
        file = write_recipe(tmp_path / "r.yaml", minimal_recipe(entry))
        arguments = _arguments(entry, file, instance_type=instance_type)
        problems = [p for p in _problems(arguments) if p.path == "recipe.trainer.precision"]
        flash = entry["values"].get("model.use_flash_attention") is True
        assert [p.severity for p in problems] == ["error" if flash else "warning"], entry["name"]
        found[flash] = found.get(flash, 0) + 1
    assert found[True] > 20 and found[False] >= 2
