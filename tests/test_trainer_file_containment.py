"""The files ModelTrainer's own words name in a spec file stay inside the project: a
hyperparameters file (read by the checks and by ModelTrainer, its values sent and printed by
plan) and a requirements file (SourceCode's, in source_dir; ``from_recipe``'s, copied from this
machine into the job's code). A pull request's spec naming a file outside is refused and the
file is never read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from safe_estimators._cli import main

pytestmark = pytest.mark.both_sdks

SECRET = "SECRETBYTES-from-outside-the-project"
JOB = (
    "estimator: pytorch\ntarget: model_trainer\nframework_version: '2.3.0'\npy_version: py311\n"
    "role: arn:aws:iam::123456789012:role/x\n"
    "compute: {instance_type: ml.g5.xlarge, instance_count: 1}\n"
)
from_recipe_only = pytest.mark.sdk3_only  # from_recipe is 3.x
RECIPE = Path(__file__).parent.parent / "examples" / "hyperpod-recipe" / "recipes"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project (a git repository) beside an outside folder holding a mapping of secrets."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "hp.yaml").write_text(f"token: {SECRET}\n")
    (outside / "req.txt").write_text(f"{SECRET}\n")
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    (root / "code").mkdir()
    (root / "code" / "train.py").write_text("print('training')\n")
    (root / "code" / "requirements.txt").write_text("numpy\n")
    (root / "hp.yaml").write_text("epochs: 3\n")
    return root


def _problems(spec: Path, capsys: pytest.CaptureFixture[str], *, command: str = "validate"):
    extra = ["--no-cache"] if command == "validate" else []
    code = main(["--format", "json", command, *extra, str(spec)])
    out = capsys.readouterr()
    assert SECRET not in out.out + out.err
    return code, json.loads(out.out)


@pytest.mark.parametrize("command", ["validate", "plan"])
@pytest.mark.parametrize("named", ["../outside/hp.yaml", "{outside}/hp.yaml", "link.yaml"])
def test_a_hyperparameters_file_outside_the_project_is_refused_unread(
    project: Path, named: str, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "link.yaml").symlink_to(project.parent / "outside" / "hp.yaml")
    name = named.format(outside=project.parent / "outside")
    spec = project / "job.yaml"
    spec.write_text(JOB + f"source_code: {{source_dir: code, entry_script: train.py}}\n"
                    f"hyperparameters: '{name}'\n")  # fmt: skip
    code, report = _problems(spec, capsys, command=command)
    assert code == 1
    (problem,) = [p for p in report["problems"] if p["severity"] == "error"]
    assert problem["path"].endswith("hyperparameters")
    assert "outside the project" in problem["message"]


def test_a_hyperparameters_file_inside_the_project_is_read_and_sent(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = project / "job.yaml"
    spec.write_text(JOB + "source_code: {source_dir: code, entry_script: train.py}\n"
                    "hyperparameters: hp.yaml\n")  # fmt: skip
    assert main(["validate", "--no-cache", str(spec)]) == 0, capsys.readouterr().out
    capsys.readouterr()
    assert main(["--format", "json", "plan", str(spec)]) == 0
    request = json.loads(capsys.readouterr().out)["request"]
    assert request["HyperParameters"]["epochs"] == "3"


@pytest.mark.parametrize("named", ["../../outside/req.txt", "link.txt"])
def test_a_requirements_file_outside_source_dir_is_refused(
    project: Path, named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "code" / "link.txt").symlink_to(project.parent / "outside" / "req.txt")
    spec = project / "job.yaml"
    spec.write_text(JOB + "source_code: {source_dir: code, entry_script: train.py, "
                    f"requirements: '{named}'}}\n")  # fmt: skip
    code, report = _problems(spec, capsys)
    assert code == 1
    (problem,) = [p for p in report["problems"] if p["path"] == "source_code.requirements"]
    assert "outside source_dir" in problem["message"]
    assert problem["severity"] == "error"


def test_a_requirements_file_in_source_dir_is_valid(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = project / "job.yaml"
    spec.write_text(JOB + "source_code: {source_dir: code, entry_script: train.py, "
                    "requirements: requirements.txt}\n")  # fmt: skip
    assert main(["validate", "--no-cache", str(spec)]) == 0, capsys.readouterr().out


RECIPE_JOB = (
    "estimator: pytorch\ntarget: model_trainer\nrole: arn:aws:iam::123456789012:role/x\n"
    "training_recipe: recipes/llama3_8b_pretrain.yaml\n"
    "training_image: 123456789012.dkr.ecr.us-west-2.amazonaws.com/smp:1\n"
    "compute: {instance_type: ml.p5.48xlarge}\n"
    "recipe_overrides:\n"
    "  run: {results_dir: /opt/ml/model}\n"
    "  exp_manager: {exp_dir: /opt/ml/output, checkpoint_dir: /opt/ml/checkpoints}\n"
    "  model: {data: {train_dir: /opt/ml/input/data/train}}\n"
)


@pytest.fixture
def recipe_project(project: Path) -> Path:
    (project / "recipes").mkdir()
    text = (RECIPE / "llama3_8b_pretrain.yaml").read_text()
    (project / "recipes" / "llama3_8b_pretrain.yaml").write_text(text)
    return project


@from_recipe_only
def test_from_recipes_requirements_outside_the_project_is_refused(
    recipe_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = recipe_project / "job.yaml"
    spec.write_text(RECIPE_JOB + "requirements: ../outside/req.txt\n")
    code, report = _problems(spec, capsys)
    assert code == 1
    (problem,) = [p for p in report["problems"] if p["severity"] == "error"]
    assert problem["path"] == "requirements"
    assert "outside the project" in problem["message"]


@from_recipe_only
def test_from_recipes_requirements_is_found_beside_the_spec_from_any_folder(
    recipe_project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (recipe_project / "requirements.txt").write_text("numpy\n")
    spec = recipe_project / "job.yaml"
    spec.write_text(RECIPE_JOB + "requirements: requirements.txt\n")
    monkeypatch.chdir(recipe_project.parent)  # from_recipe opens it from the working folder
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-2")
    assert main(["validate", "--no-cache", str(spec)]) == 0, capsys.readouterr().out
    capsys.readouterr()
    assert main(["--format", "json", "plan", str(spec)]) == 0, capsys.readouterr().out
