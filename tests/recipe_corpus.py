"""Make tests/fixtures/recipe_corpus.json from a local checkout of aws/sagemaker-hyperpod-recipes.

``python tests/recipe_corpus.py CHECKOUT COMMIT tests/fixtures/recipe_corpus.json``

For every training and fine-tuning recipe of ``CHECKOUT/recipes_collection/recipes`` (evaluation
recipes left out) it keeps options and numbers only: the keys the SDK, the training adapter and
our rules read, resolved with the overrides AWS's README gives (plus the ones a recipe needs to
resolve or to find its model: ``overrides``), the instance type its name or its own instance
list implies, and the bare SDK's verdict on the recipe file itself (``sdk``: "builds" or the
SDK's message), built with local stand-ins for the repositories the SDK clones. No recipe text
is kept; tests rebuild a minimal recipe of their own from these numbers.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent))

from recipe_fixtures import local_repositories, redirect_environment

PLACEHOLDER_MODEL = "hf-model-name-given-by-the-user"


def instance_type(name: str, recipe: dict[str, Any]) -> str:
    """The type the recipe is written for, from its name (p5x16, trn1, p4_, g5_g6_48x)."""
    base = name.rsplit("/", 1)[-1]
    if "trn1" in base:
        return "ml.trn1.32xlarge"
    if base.startswith("p4_"):
        return "ml.p4d.24xlarge"
    if "g5_g6_12x" in base:
        return "ml.g5.12xlarge"
    if "g5_g6_48x" in base:
        return "ml.g5.48xlarge"
    if "_r5_" in base:
        return "ml.r5.24xlarge"
    return "ml.p5.48xlarge"


def overrides_for(data: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"run": {"results_dir": "/opt/ml/model"}}
    model = data.get("model")
    if isinstance(model, dict) and isinstance(model.get("data"), dict):
        out["model"] = {"data": {"train_dir": "/opt/ml/input/data/train"}}
        if model.get("do_finetune", True) and not model.get("hf_model_name_or_path"):
            out["model"]["hf_model_name_or_path"] = PLACEHOLDER_MODEL
    if isinstance(data.get("exp_manager"), dict) and "exp_dir" in data["exp_manager"]:
        out["exp_manager"] = {"exp_dir": "/opt/ml/output"}
    return out


def _get(data: Any, dotted: str) -> Any:
    for key in dotted.split("."):
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


KEPT = (
    "trainer.devices", "trainer.num_nodes", "trainer.precision", "use_smp_model",
    "model.model_type", "model.shard_degree", "model.tensor_model_parallel_degree",
    "model.expert_model_parallel_degree", "model.context_parallel_degree", "model.fp8",
    "model.do_finetune", "model.multi_modal", "model.peft.peft_type",
    "model.data.use_synthetic_data", "model.max_context_width", "model.num_hidden_layers",
    "model.hidden_size", "model.train_batch_size", "model.activation_checkpointing",
    "model.vocab_size", "model.num_attention_heads", "model.intermediate_size", "model.moe",
    "model.use_flash_attention", "model.offload_activations", "model.peft.rank",
    "model.num_local_experts", "model.num_experts_per_tok",
    "distributed_strategy.tensor_model_parallel_size",
    "distributed_strategy.pipeline_model_parallel_size", "run.replicas", "run.model_type",
)  # fmt: skip


def entry(root: Path, file: Path, session: Any) -> dict[str, Any]:
    from omegaconf import OmegaConf
    from sagemaker.pytorch import PyTorch

    from safe_estimators._recipes.load import load_recipe

    name = str(file.relative_to(root).with_suffix(""))
    raw = OmegaConf.to_container(OmegaConf.load(file))
    assert isinstance(raw, dict)
    overrides = overrides_for(raw)
    recipe, problems = load_recipe(str(file), overrides)
    out: dict[str, Any] = {"name": name, "overrides": overrides}
    if recipe is None:
        out["unreadable"] = [str(p) for p in problems]
        return out
    data = recipe.data
    out["kind"] = recipe.kind
    out["instance_type"] = instance_type(name, data)
    out["values"] = {k: _get(data, k) for k in KEPT if _get(data, k) is not None}
    out["keys"] = {
        "model.fp8": "fp8" in (data.get("model") or {}),
        "model.do_finetune": "do_finetune" in (data.get("model") or {}),
        "model.data": isinstance(_get(data, "model.data"), dict),
        "model.hf_model_name_or_path": bool(_get(raw, "model.hf_model_name_or_path")),
        "run.model_name_or_path": _get(data, "run.model_name_or_path") is not None,
        "training_config.distillation_data": bool(_get(data, "training_config.distillation_data")),
    }
    arguments: dict[str, Any] = {
        "training_recipe": str(file),
        "recipe_overrides": overrides,
        "instance_type": out["instance_type"],
        "role": "arn:aws:iam::111122223333:role/SageMakerRole",
        "sagemaker_session": session,
    }
    if recipe.kind != "standard":
        arguments["image_uri"] = "111122223333.dkr.ecr.us-west-2.amazonaws.com/recipe:1"
    with tempfile.TemporaryDirectory() as source:
        try:
            PyTorch(**arguments, source_dir=source)
            out["sdk"] = "builds"
        except Exception as exc:
            out["sdk"] = f"{type(exc).__name__}: {exc}"
    return out


def main() -> None:
    import boto3
    import sagemaker

    checkout, commit, target = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    root = checkout / "recipes_collection" / "recipes"
    files = sorted(p for p in root.rglob("*.yaml") if "evaluation" not in p.parts)
    session = sagemaker.Session(
        boto_session=boto3.Session(region_name="us-west-2"), default_bucket="corpus"
    )
    with tempfile.TemporaryDirectory() as folder:
        os.environ.update(redirect_environment(local_repositories(Path(folder), {})))
        entries = [entry(root, f, session) for f in files]
    document = {
        "about": __doc__.split("\n\n")[2].strip().replace("\n", " "),
        "repository": "aws/sagemaker-hyperpod-recipes",
        "commit": commit,
        "recipes": entries,
    }
    target.write_text(json.dumps(document, indent=1) + "\n")


if __name__ == "__main__":
    main()
