"""What a ``target: fine_tuning`` spec file and the recipes collection may make us read.

A fine-tuning trainer opens its ``recipe`` as a local file at ``train()`` (anything but
``s3://`` and the ``http(s)://`` it refuses: ``recipe_resolver._load_user_recipe``) and sends
the recipe's values as the job's hyperparameters, so a spec's recipe is resolved against the
spec's folder and must stay inside the project, as ``source_dir`` or ``model.config`` must. The
collection (``--recipes`` / ``$SAFE_ESTIMATORS_RECIPES``) is read bounded (files, bytes, links
that stay inside), and what reaches a message from it is an instance type's name or a plain
recipe name: a CI log is read by its runner.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

import safe_estimators
from safe_estimators import ConfigError
from safe_estimators._commands.validate import validate_file

pytestmark = [
    pytest.mark.both_sdks,
    pytest.mark.sdk3_only,  # the fine-tuning trainers are sagemaker 3's
]

ROLE = "arn:aws:iam::111122223333:role/SageMakerRole"
MODEL = "meta-textgeneration-llama-3-2-1b-instruct"
LISTED = ["ml.g5.12xlarge", "ml.p4d.24xlarge", "ml.p5.48xlarge"]
SECRET = "sk-outside-value-never-read"
FINE_TUNING = ("recipes_collection", "recipes", "fine-tuning")


def _recipe(types: list[Any], model: str = "meta-llama/Llama-3.2-1B-Instruct") -> str:
    return yaml.safe_dump(
        {
            "instance_types": types,
            "training_config": {
                "model_config": {"model_name_or_path": model, "peft_config": {"r": 16}},
                "training_args": {"max_len": 4096, "trainer_type": "sft"},
            },
        }
    )


@pytest.fixture
def collection(tmp_path, monkeypatch) -> Path:
    """A copy of the collection with the SFT LoRA recipe of Llama 3.2 1B Instruct."""
    root = tmp_path / "collection"
    folder = root.joinpath(*FINE_TUNING, "llama")
    folder.mkdir(parents=True)
    (folder / "llmft_llama3_2_1b_instruct_seq4k_gpu_sft_lora.yaml").write_text(_recipe(LISTED))
    monkeypatch.setenv("SAFE_ESTIMATORS_RECIPES", str(root))
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    return root


@pytest.fixture
def project(tmp_path) -> Path:
    """A git project with a jobs folder, and a file beside it that must never be read."""
    root = tmp_path / "project"
    (root / "jobs" / "recipes").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "jobs" / "recipes" / "mine.yaml").write_text("training_config:\n  lr: 0.0001\n")
    (tmp_path / "outside.yaml").write_text(f"training_config:\n  api_key: {SECRET}\n")
    return root


def _spec(folder: Path, **options: Any) -> Path:
    data = {
        "target": "fine_tuning",
        "trainer": "SFT",
        "model": MODEL,
        "role": ROLE,
        "compute": {"instance_type": "ml.p5.48xlarge"},
        **options,
    }
    path = folder / "job.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _errors(problems) -> list:
    return [p for p in problems if p.severity == "error"]


# --- the spec's recipe: resolved against the spec's folder, inside the project -----------------


def test_a_recipe_beside_the_spec_is_the_file_the_trainer_gets_wherever_it_runs(
    collection, project, tmp_path, monkeypatch
):
    spec = _spec(project / "jobs", recipe="recipes/mine.yaml")
    monkeypatch.chdir(tmp_path)  # the trainer opens a relative path from here: not the spec's
    assert _errors(validate_file(spec)) == []
    checked = safe_estimators.build(spec)
    assert checked.kwargs["recipe"] == str(project / "jobs" / "recipes" / "mine.yaml")


@pytest.mark.parametrize(
    "recipe",
    [
        "../../outside.yaml",  # up and out
        "ABSOLUTE",  # an absolute path outside
        "x://../../../outside.yaml",  # not s3:// or http(s)://: the trainer opens it as a path
    ],
)
def test_a_recipe_outside_the_project_is_refused_and_never_read(
    collection, project, tmp_path, capsys, recipe
):
    from safe_estimators._cli import main

    if recipe == "ABSOLUTE":
        recipe = str(tmp_path / "outside.yaml")
    if recipe.startswith("x://"):
        (project / "jobs" / "x:").mkdir()
    spec = _spec(project / "jobs", recipe=recipe)
    [problem] = _errors(validate_file(spec))
    assert problem.path == "recipe"
    assert "outside the project" in problem.message
    assert problem.rule == "project-containment"
    with pytest.raises(ConfigError) as raised:
        safe_estimators.build(spec)
    assert raised.value.paths == ["recipe"]
    with pytest.raises(ConfigError):
        safe_estimators.plan(spec)
    assert main(["validate", str(spec)]) == 1
    out = capsys.readouterr().out
    assert "outside the project" in out and SECRET not in out
    assert SECRET not in str(raised.value)


def test_a_recipe_that_links_out_of_the_project_is_refused(collection, project, tmp_path):
    os.symlink(tmp_path / "outside.yaml", project / "jobs" / "recipes" / "linked.yaml")
    spec = _spec(project / "jobs", recipe="recipes/linked.yaml")
    [problem] = _errors(validate_file(spec))
    assert (problem.path, problem.rule) == ("recipe", "project-containment")
    assert "outside the project" in problem.message
    # A project root that holds the file accepts it, as for the other paths.
    assert _errors(validate_file(spec, project_root=tmp_path)) == []


def test_the_cached_verdict_follows_the_recipe_link(collection, project, tmp_path, capsys):
    from safe_estimators._cli import main

    link = project / "jobs" / "recipes" / "linked.yaml"
    os.symlink(project / "jobs" / "recipes" / "mine.yaml", link)
    spec = _spec(project / "jobs", recipe="recipes/linked.yaml")
    assert main(["validate", str(spec)]) == 0
    link.unlink()
    os.symlink(tmp_path / "outside.yaml", link)
    assert main(["validate", str(spec)]) == 1
    assert "outside the project" in capsys.readouterr().out


def test_s3_recipes_are_not_local_and_http_ones_are_refused_as_the_trainer_refuses_them(
    collection, project
):
    spec = _spec(project / "jobs", recipe="s3://bucket/recipes/mine.yaml")
    assert _errors(validate_file(spec)) == []
    assert safe_estimators.build(spec).kwargs["recipe"] == "s3://bucket/recipes/mine.yaml"
    spec = _spec(project / "jobs", recipe="https://example.com/mine.yaml")
    [problem] = _errors(validate_file(spec))
    assert problem.path == "recipe"
    assert "are not supported for security reasons" in problem.message


# --- the recipes collection: bounded, contained, nothing raw in a message ---------------------


def _refused_types(instance_type: str) -> str:
    with pytest.raises(ConfigError) as raised:
        safe_estimators.sft_trainer(
            model=MODEL, compute={"instance_type": instance_type}, role=ROLE
        )
    [problem] = raised.value.problems
    assert problem.path == "compute.instance_type"
    return problem.message


def test_a_recipe_linked_from_outside_the_collection_is_not_read(collection, tmp_path):
    outside = tmp_path / "elsewhere.yaml"
    outside.write_text(_recipe(["ml.g6.2xlarge"]))
    folder = collection.joinpath(*FINE_TUNING, "llama")
    os.symlink(outside, folder / "llmft_llama3_2_1b_instruct_seq4k_gpu_sft_lora_more.yaml")
    message = _refused_types("ml.g6.2xlarge")
    assert ", ".join(LISTED) in message and "_lora_more" not in message


def test_a_fine_tuning_folder_linked_out_of_the_collection_is_not_read(tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "llmft_llama3_2_1b_instruct_seq4k_gpu_sft_lora.yaml").write_text(
        _recipe(LISTED)
    )
    root = tmp_path / "collection"
    root.joinpath(*FINE_TUNING[:2]).mkdir(parents=True)
    os.symlink(elsewhere, root.joinpath(*FINE_TUNING))
    monkeypatch.setenv("SAFE_ESTIMATORS_RECIPES", str(root))
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    checked = safe_estimators.sft_trainer(
        model=MODEL, compute={"instance_type": "ml.g6.2xlarge"}, role=ROLE
    )
    [note] = [n for n in safe_estimators.explain(checked).not_checked if "instance types" in n]
    assert "was not read" in note and "links outside the collection" in note


def test_what_a_recipe_holds_reaches_a_message_only_as_an_instance_type(
    collection, tmp_path, capsys
):
    from safe_estimators._cli import main

    folder = collection.joinpath(*FINE_TUNING, "llama")
    hostile = ["ml.p5.48xlarge", "\n::error::owned", "ml.g5.2xlarge\x1b[31m", "##[group]x", 7]
    (folder / "llmft_llama3_2_1b_instruct_seq4k_gpu_sft_lora.yaml").write_text(_recipe(hostile))
    odd = folder / "llmft_llama3_2_1b_instruct_seq4k_gpu_sft_lora_\n::warning::x.yaml"
    odd.write_text(_recipe(["ml.p4d.24xlarge"]))
    message = _refused_types("ml.g6.2xlarge")
    assert "they run on ml.p4d.24xlarge, ml.p5.48xlarge (" in message
    assert message.isprintable() and "::error" not in message and "##[" not in message
    assert "\\n::warning::x" in message  # the file's name, quoted with its escapes
    spec = _spec(tmp_path, compute={"instance_type": "ml.g6.2xlarge"})
    assert main(["validate", "--format", "github", str(spec)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert all(not line.lstrip().startswith("::") or line.startswith("::error file=")
               for line in lines)
    assert not any("::warning::x" in line and not line.startswith("::error") for line in lines)


def test_a_collection_past_the_file_bound_is_not_read_and_said_so(collection, monkeypatch):
    from safe_estimators._recipes import fine_tuning

    folder = collection.joinpath(*FINE_TUNING, "llama")
    (folder / "second.yaml").write_text(_recipe(["ml.p5.48xlarge"]))
    monkeypatch.setattr(fine_tuning, "MAX_RECIPE_FILES", 2)
    assert "is ml.g6.2xlarge" in _refused_types("ml.g6.2xlarge")  # two files: read
    (folder / "third.yaml").write_text(_recipe(["ml.p5.48xlarge"]))
    checked = safe_estimators.sft_trainer(
        model=MODEL, compute={"instance_type": "ml.g6.2xlarge"}, role=ROLE
    )
    [note] = [n for n in safe_estimators.explain(checked).not_checked if "instance types" in n]
    assert "holds 3 YAML files, more than the 2 read" in note


def test_a_collection_past_the_byte_bound_is_not_read(collection, monkeypatch):
    from safe_estimators._recipes import fine_tuning

    [recipe] = collection.rglob("*.yaml")
    size = recipe.stat().st_size
    monkeypatch.setattr(fine_tuning, "MAX_COLLECTION_BYTES", size)
    assert "is ml.g6.2xlarge" in _refused_types("ml.g6.2xlarge")  # exactly the bound: read
    monkeypatch.setattr(fine_tuning, "MAX_COLLECTION_BYTES", size - 1)
    checked = safe_estimators.sft_trainer(
        model=MODEL, compute={"instance_type": "ml.g6.2xlarge"}, role=ROLE
    )
    notes = " ".join(safe_estimators.explain(checked).not_checked)
    assert f"more than {size - 1:,} bytes of recipes" in notes
