"""`safe-estimators port` of a HyperPod recipe job: on sagemaker 3 the code of
``ModelTrainer.from_recipe(...)`` that, run, sends the request plan shows for the ModelTrainer
target; on sagemaker 2 (where the ModelTrainer target leaves recipe jobs to the estimator) the
same refusal as plan's.

The repositories from_recipe clones while it is built are local ones in tmp
(tests/recipe_fixtures.py), as in test_recipes_model_trainer.py.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from recipe_fixtures import gpu_recipe, trainium_recipe, use_local_repositories, write_recipe

import safe_estimators
from safe_estimators._cli import main
from safe_estimators._facts.sdk_files import sdk_version

EXAMPLE = Path(__file__).parent.parent / "examples" / "hyperpod-recipe" / "job.yaml"
ROLE = "arn:aws:iam::111122223333:role/SageMakerRole"
NAME = "training/llama/ours_llama3_8b_pretrain"
IMAGE = (
    "658645717510.dkr.ecr.us-west-2.amazonaws.com/smdistributed-modelparallel:"
    "2.4.1-gpu-py311-cu121"
)

sdk3 = pytest.mark.sdk3_only  # ModelTrainer.from_recipe is sagemaker 3's


@pytest.fixture
def clones(tmp_path, monkeypatch):
    """from_recipe's clones (and a predefined name's collection) read local repositories."""

    def make(recipes: dict[str, dict[str, Any]] | None = None) -> dict[str, Path]:
        return use_local_repositories(tmp_path / "repos", recipes or {}, monkeypatch)

    return make


def _port(capsys, spec: Path, *argv: str) -> str:
    code = main(["port", str(spec), *argv])
    out = capsys.readouterr().out
    assert code == 0, out
    return out


def _run(code: str) -> dict[str, Any]:
    """The CreateTrainingJob request the written code's ModelTrainer sends (offline)."""
    from safe_estimators._targets.model_trainer import (
        capture_train_request,
        offline_trainer_session,
    )

    assert "safe_estimators" not in code
    namespace: dict[str, Any] = {"__name__": "ported"}
    exec(compile(code, "ported.py", "exec"), namespace)
    request, _ = capture_train_request(namespace["model_trainer"](offline_trainer_session(None)))
    return request


def _as_planned(request: dict[str, Any], spec: Path, **options: Any) -> None:
    """``request`` is plan's for the ModelTrainer target, but for the job's name (per run)."""
    planned = safe_estimators.plan(spec, target="model_trainer", **options).request
    name, ours = request["TrainingJobName"], planned["TrainingJobName"]
    assert json.loads(json.dumps(planned).replace(ours, name)) == request


def _argument(code: str, name: str) -> Any:
    """The value of from_recipe's ``name=`` argument in the written code (a literal)."""
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.keyword) and node.arg == name:
            return ast.literal_eval(node.value)
    raise AssertionError(f"no {name}=")


@sdk3
def test_the_example_is_written_as_from_recipe_and_sends_the_planned_request(
    clones, tmp_path, capsys
):
    clones()
    # The example with a role (without one ModelTrainer looks the caller's up through STS
    # while it is built, and plan puts in a placeholder).
    data = yaml.safe_load(EXAMPLE.read_text())
    recipe = EXAMPLE.parent / data["training_recipe"]
    spec = tmp_path / "job.json"
    spec.write_text(json.dumps({**data, "training_recipe": str(recipe), "role": ROLE}))
    root = str(EXAMPLE.parent)  # the spec names the example's recipe, outside tmp_path
    code = _port(capsys, spec, "--project-root", root)
    assert "ModelTrainer.from_recipe(" in code and "ModelTrainer(\n" not in code
    # The recipe as plan found it, and the recipe image plan resolves.
    assert _argument(code, "training_recipe") == str(recipe)
    assert _argument(code, "training_image") == IMAGE
    # Its overrides replace interpolations of keys outside the recipe, which the bare
    # from_recipe cannot read from a dict: they are handed as an OmegaConf config.
    assert "recipe_overrides=OmegaConf.create({" in code
    assert "from omegaconf import OmegaConf" in code
    request = _run(code)
    _as_planned(request, spec, project_root=root)
    assert request["AlgorithmSpecification"]["TrainingImage"] == IMAGE
    assert request["ResourceConfig"]["InstanceType"] == "ml.p5.48xlarge"
    assert request["ResourceConfig"]["InstanceCount"] == 2  # the recipe's trainer.num_nodes
    hyperparameters = request["HyperParameters"]
    assert (hyperparameters["config-path"], hyperparameters["config-name"]) == (".", "recipe.yaml")


def _spec(folder: Path, **changes: Any) -> Path:
    data = {
        "estimator": "pytorch",
        "instance_type": "ml.p4d.24xlarge",
        "role": ROLE,
        "base_job_name": "ported-recipe",
        "max_run": 7200,
        "output_path": "s3://my-bucket/out",
        "checkpoint_s3_uri": "s3://my-bucket/checkpoints",
        "environment": {"NCCL_DEBUG": "INFO"},
        "tags": [{"Key": "team", "Value": "ml"}],
        "max_retry_attempts": 2,
        "metric_definitions": [{"Name": "loss", "Regex": "loss: ([0-9.]+)"}],
        "inputs": {"train": "s3://my-bucket/train/"},
        **changes,
    }
    path = folder / "job.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _plain_recipe() -> dict[str, Any]:
    """A recipe the bare from_recipe reads with the overrides below (no interpolation of a key
    outside it where they override)."""
    recipe = gpu_recipe(nodes=1, fp8=False)  # an A100 has no fp8
    recipe["run"]["results_dir"] = "/results"
    recipe["exp_manager"]["checkpoint_dir"] = "/checkpoints"
    return recipe


OVERRIDES = {
    "run": {"results_dir": "/opt/ml/model"},
    "trainer": {"max_steps": 20},
    "model": {"data": {"train_dir": "/opt/ml/input/data/train"}},
}


@sdk3
def test_a_local_recipe_file_with_the_jobs_configs_sends_the_planned_request(
    clones, tmp_path, capsys
):
    clones()
    write_recipe(tmp_path / "recipes" / "mine.yaml", _plain_recipe())
    requirements = tmp_path / "scripts" / "requirements.txt"
    requirements.parent.mkdir()
    requirements.write_text("peft\n")
    spec = _spec(
        tmp_path,
        training_recipe="recipes/mine.yaml",
        recipe_overrides=OVERRIDES,
        requirements="scripts/requirements.txt",
        training_image=IMAGE,  # in ModelTrainer's words, as from_recipe takes it
    )
    code = _port(capsys, spec)
    assert _argument(code, "training_recipe") == str(tmp_path / "recipes" / "mine.yaml")
    assert _argument(code, "requirements") == str(requirements)  # beside the spec
    # Overrides the bare from_recipe reads are written as the spec gives them, a dict.
    assert _argument(code, "recipe_overrides") == OVERRIDES
    assert "OmegaConf" not in code
    assert ".with_retry_strategy(RetryStrategy(" in code
    assert ".with_metric_definitions([MetricDefinition(" in code
    request = _run(code)
    _as_planned(request, spec)
    assert request["RetryStrategy"] == {"MaximumRetryAttempts": 2}
    assert request["Environment"] == {"NCCL_DEBUG": "INFO"}
    assert request["StoppingCondition"]["MaxRuntimeInSeconds"] == 7200
    assert request["CheckpointConfig"]["S3Uri"] == "s3://my-bucket/checkpoints"
    assert request["OutputDataConfig"]["S3OutputPath"] == "s3://my-bucket/out"


@sdk3
def test_a_predefined_recipe_is_written_by_its_name_with_the_given_image(
    clones, tmp_path, capsys
):
    clones({NAME: _plain_recipe()})
    image = "111122223333.dkr.ecr.us-west-2.amazonaws.com/mine:1"
    spec = _spec(tmp_path, training_recipe=NAME, recipe_overrides=OVERRIDES, image_uri=image)
    code = _port(capsys, spec)
    assert _argument(code, "training_recipe") == NAME
    assert _argument(code, "training_image") == image
    request = _run(code)
    _as_planned(request, spec)
    assert request["AlgorithmSpecification"]["TrainingImage"] == image
    assert request["ResourceConfig"]["InstanceCount"] == 1


@sdk3
def test_an_override_of_a_key_the_recipe_lacks_is_left_out_of_an_omegaconf_config(
    clones, tmp_path, capsys
):
    # The config skips the SDK's pass that drops such keys (and warns): port drops them.
    clones()
    recipe = gpu_recipe(nodes=1, fp8=False)
    recipe["exp_manager"]["checkpoint_dir"] = "/checkpoints"
    write_recipe(tmp_path / "mine.yaml", recipe)
    overrides = {**OVERRIDES, "trainer": {"max_step": 9}}
    spec = _spec(tmp_path, training_recipe="mine.yaml", recipe_overrides=overrides)
    code = _port(capsys, spec)
    created = next(
        node
        for node in ast.walk(ast.parse(code))
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "create"
    )
    assert ast.literal_eval(created.args[0]) == {**OVERRIDES, "trainer": {}}
    _as_planned(_run(code), spec)


@sdk3
def test_a_trainium_recipe_is_written_with_the_neuron_image_plan_resolves(
    clones, tmp_path, capsys
):
    clones()
    recipe = trainium_recipe(nodes=2)
    recipe["run"]["results_dir"] = "/results"
    recipe["data"]["train_dir"] = "/opt/ml/input/data/train"
    write_recipe(tmp_path / "trn.yaml", recipe)
    spec = _spec(tmp_path, training_recipe="trn.yaml", instance_type="ml.trn1.32xlarge")
    code = _port(capsys, spec)
    assert "recipe_overrides" not in code  # none given
    request = _run(code)
    _as_planned(request, spec)
    assert "neuronx" in request["AlgorithmSpecification"]["TrainingImage"]
    assert request["ResourceConfig"] == {
        **request["ResourceConfig"],
        "InstanceType": "ml.trn1.32xlarge",
        "InstanceCount": 2,
    }


@sdk3
def test_a_token_in_the_overrides_is_cut_short_accepted_or_not(tmp_path, capsys):
    token = "hf_" + "Qw3rTy" * 6
    recipe = _plain_recipe()
    recipe["model"]["hf_access_token"] = None
    write_recipe(tmp_path / "mine.yaml", recipe)
    overrides = {**OVERRIDES, "model": {**OVERRIDES["model"], "hf_access_token": token}}
    spec = _spec(
        tmp_path,
        training_recipe="mine.yaml",
        recipe_overrides=overrides,
        accept_exposure=["recipe_overrides.model.hf_access_token"],
    )
    code = _port(capsys, spec)
    assert token not in code and "cut to their first characters" in code
    assert _argument(code, "recipe_overrides")["model"]["hf_access_token"] == "hf_Q…"


@pytest.mark.sdk2_only  # sagemaker 2's recipe jobs are the estimator's (recipe-needs-estimator)
def test_on_sagemaker_2_port_refuses_a_recipe_job_as_plan_does(tmp_path, capsys):
    write_recipe(tmp_path / "recipes" / "mine.yaml", _plain_recipe())
    spec = _spec(tmp_path, training_recipe="recipes/mine.yaml", recipe_overrides=OVERRIDES)
    verdicts = []
    for command in (["port"], ["plan", "--target", "model_trainer"]):
        code = main([*command, "--format", "json", str(spec)])
        problems = json.loads(capsys.readouterr().out)["problems"]
        verdicts.append((code, [(p["path"], p["message"], p["hint"]) for p in problems]))
    assert verdicts[0] == verdicts[1]
    code, problems = verdicts[0]
    assert code == 1
    assert [p[:2] for p in problems] == [
        ("training_recipe", f"with sagemaker {sdk_version()} the ModelTrainer target does not "
         "build recipe jobs; the estimator does."),
    ]
