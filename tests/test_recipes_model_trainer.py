"""HyperPod recipes as ModelTrainer jobs (sagemaker 3's ``ModelTrainer.from_recipe``): the
estimator path's recipe checks, built through the real from_recipe, planned offline.

The recipes are our own (tests/recipe_fixtures.py); the repositories from_recipe clones while it
is built are local ones in tmp. The job is the distributed-training workshop's
(aws-samples/sagemaker-distributed-training-workshop, 18_sagemaker_training_recipes/
ft_deepseek_qwen_lora/model_trainer_deepseek_r1_recipe_lora.ipynb): its recipe name, overrides,
instance type, image and configs.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import SDK3
from recipe_fixtures import (
    gpu_recipe,
    local_repositories,
    redirect_environment,
    trainium_recipe,
    use_local_repositories,
)

import safe_estimators
from safe_estimators import ConfigError
from safe_estimators._cli import main

pytestmark = pytest.mark.both_sdks

ROLE = "arn:aws:iam::111122223333:role/SageMakerRole"
NAME = "fine-tuning/deepseek/hf_deepseek_r1_distilled_qwen_7b_seq8k_gpu_lora"
IMAGE = (
    "658645717510.dkr.ecr.us-west-2.amazonaws.com/smdistributed-modelparallel:"
    "2.4.1-gpu-py311-cu121"
)
HF_MODEL = "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B"
# The workshop's recipe_overrides (max_steps 215, instance_count 1).
OVERRIDES = {
    "run": {"results_dir": "/opt/ml/model"},
    "trainer": {"num_nodes": 1, "max_steps": 215},
    "exp_manager": {"exp_dir": "/opt/ml/output", "checkpoint_dir": "/opt/ml/checkpoints"},
    "use_smp_model": False,
    "model": {
        "hf_model_name_or_path": HF_MODEL,
        "train_batch_size": 14,
        "val_batch_size": 2,
        "data": {"train_dir": "/opt/ml/input/data/train", "val_dir": "/opt/ml/input/data/test"},
    },
}


def _recipe(*, interpolated: bool) -> dict[str, Any]:
    """A LoRA fine-tuning recipe with the keys the workshop overrides; ``interpolated``: its
    results and checkpoint folders are interpolations, as in AWS's recipes."""
    recipe = gpu_recipe(model_type="deepseek_r1", shard=8, finetune=True, hf_model=HF_MODEL)
    recipe["model"]["val_batch_size"] = 1
    recipe["model"]["data"]["val_dir"] = None
    if not interpolated:
        recipe["run"]["results_dir"] = "/results"
        recipe["exp_manager"]["checkpoint_dir"] = "/checkpoints"
    return recipe


@pytest.fixture
def repos(tmp_path, monkeypatch):
    def make(*, interpolated: bool = False) -> dict[str, Path]:
        recipes = {NAME: _recipe(interpolated=interpolated)}
        return use_local_repositories(tmp_path / "repos", recipes, monkeypatch)

    return make


@pytest.fixture(scope="module")
def session():
    from safe_estimators._targets.model_trainer import offline_trainer_session

    return offline_trainer_session("us-west-2")


def _configs() -> Any:
    from safe_estimators._targets.model_trainer import _sdk

    return _sdk().configs


def _workshop(**changes: Any) -> dict[str, Any]:
    c = _configs()
    given = dict(
        training_image=IMAGE,
        training_recipe=NAME,
        recipe_overrides=copy.deepcopy(OVERRIDES),
        base_job_name="train-deepseek-recipe-lora",
        compute=c.Compute(
            instance_type="ml.p4d.24xlarge", instance_count=1, keep_alive_period_in_seconds=1800
        ),
        stopping_condition=c.StoppingCondition(max_runtime_in_seconds=7200),
        checkpoint_config=c.CheckpointConfig(s3_uri="s3://bucket/checkpoints/lora"),
        role=ROLE,
    )
    return {**given, **changes}


def _request(trainer: Any) -> dict[str, Any]:
    from safe_estimators._targets.model_trainer import capture_train_request

    request, _ = capture_train_request(trainer)
    request.pop("TrainingJobName")  # named per run, and its code uploaded under that name
    for channel in request.get("InputDataConfig", ()):
        channel["DataSource"]["S3DataSource"].pop("S3Uri", None)
    return request


def _bare(session: Any, **given: Any) -> Any:
    from safe_estimators._targets.model_trainer import _sdk

    return _sdk().ModelTrainer.from_recipe(sagemaker_session=session, **given)


sdk3 = pytest.mark.sdk3_only  # ModelTrainer.from_recipe is built on sagemaker 3


@sdk3
def test_the_workshops_from_recipe_job_builds_as_the_bare_from_recipe(repos, session, tmp_path):
    repos()
    requirements = tmp_path / "scripts" / "requirements.txt"
    requirements.parent.mkdir()
    requirements.write_text("peft\n")
    given = _workshop(requirements=str(requirements))
    ours = safe_estimators.model_trainer(**given, sagemaker_session=session)
    bare = _bare(session, **_workshop(requirements=str(requirements)))
    assert _request(ours) == _request(bare)
    assert ours.source_code.requirements == bare.source_code.requirements == "requirements.txt"
    request = _request(ours)
    assert request["AlgorithmSpecification"]["TrainingImage"] == IMAGE
    hyperparameters = request["HyperParameters"]
    assert (hyperparameters["config-path"], hyperparameters["config-name"]) == (".", "recipe.yaml")
    injected = {i.path: i for i in safe_estimators.explain(ours).injections}
    assert "trainer.num_nodes" in injected["instance_count"].reason
    assert injected["source_code"].value["entry_script"] == "deepseek_pretrain.py"
    assert injected["distributed"].value == "Torchrun(smp=SMP(random_seed='123456'))"


@sdk3
def test_an_override_of_an_interpolated_value_builds_where_the_bare_from_recipe_fails(
    repos, session
):
    # AWS's recipes interpolate run.results_dir from the launcher's base_results_dir: sagemaker
    # 3.27.0's from_recipe reads the recipe's own value of each overridden key and fails.
    from omegaconf.errors import OmegaConfBaseException

    repos(interpolated=True)
    with pytest.raises(OmegaConfBaseException):
        _bare(session, **_workshop())
    ours = safe_estimators.model_trainer(**_workshop(), sagemaker_session=session)
    injected = {i.path for i in safe_estimators.explain(ours).injections}
    assert {"recipe_overrides.run.results_dir", "recipe_overrides.exp_manager.checkpoint_dir"} <= (
        injected
    )
    assert _request(ours)["AlgorithmSpecification"]["TrainingImage"] == IMAGE


@sdk3
def test_without_a_training_image_the_placeholder_is_refused(repos, session):
    repos()
    given = _workshop()
    del given["training_image"]
    with pytest.raises(ConfigError) as refused:
        safe_estimators.model_trainer(**given, sagemaker_session=session)
    problem = next(p for p in refused.value.problems if "dummy_image" in p.message)
    assert problem.path == "training_image"
    # The bare from_recipe sends the placeholder.
    assert _request(_bare(session, **given))["AlgorithmSpecification"]["TrainingImage"] == (
        "dummy_image"
    )


@sdk3
def test_the_recipe_checks_of_the_estimator_path_apply(repos, session):
    repos()
    # trainer.num_nodes (1) is not the instances the job has (2): the estimator path's rule.
    c = _configs()
    given = _workshop(compute=c.Compute(instance_type="ml.p4d.24xlarge", instance_count=2))
    with pytest.raises(ConfigError) as refused:
        safe_estimators.model_trainer(**given, sagemaker_session=session)
    assert any(p.path == "recipe.trainer.num_nodes" for p in refused.value.problems)
    # An override of a key the recipe lacks is dropped by from_recipe: a did-you-mean.
    overrides = copy.deepcopy(OVERRIDES)
    overrides["trainer"]["max_step"] = 10
    trainer = safe_estimators.model_trainer(
        **_workshop(recipe_overrides=overrides), sagemaker_session=session
    )
    warned = [w for w in safe_estimators.explain(trainer).warnings if "max_step" in w.path]
    assert warned and "did you mean 'max_steps'" in warned[0].hint


@sdk3
def test_a_trainium_recipe_builds_as_the_bare_from_recipe(tmp_path, monkeypatch, session):
    name = "training/llama/ours_trn1x4_pretrain"
    recipe = trainium_recipe(nodes=4)
    recipe["run"]["results_dir"] = "/results"  # a value the bare from_recipe can read
    found = local_repositories(tmp_path / "repos", {name: recipe})
    for key, value in redirect_environment(found).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("SAFE_ESTIMATORS_RECIPES", str(found["launcher"]))
    monkeypatch.setenv("SAGEMAKER_VALIDATE_ROLE", "false")
    image = "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training-neuronx:2.1.2"
    c = _configs()

    def given() -> dict[str, Any]:
        return dict(
            training_recipe=name,
            recipe_overrides={"run": {"results_dir": "/opt/ml/model"}},
            compute=c.Compute(instance_type="ml.trn1.32xlarge"),
            training_image=image,
            role=ROLE,
        )

    ours = safe_estimators.model_trainer(**given(), sagemaker_session=session)
    injected = {i.path: i for i in safe_estimators.explain(ours).injections}
    # Apart from the recorded injection: 4 instances, their traffic encrypted.
    request = _request(ours)
    assert request.pop("EnableInterContainerTrafficEncryption") is True
    assert "encrypt_inter_container_traffic" in injected
    assert request == _request(_bare(session, **given()))
    assert ours.compute.instance_count == 4  # the recipe's trainer.num_nodes, as from_recipe
    assert injected["distributed"].value == "Torchrun()"
    assert injected["source_code"].value["entry_script"] == "training_orchestrator.py"


def _spec(folder: Path, **changes: Any) -> Path:
    data = {
        "estimator": "pytorch",
        "training_recipe": NAME,
        "recipe_overrides": OVERRIDES,
        "instance_type": "ml.p4d.24xlarge",
        "image_uri": IMAGE,
        "role": ROLE,
        "base_job_name": "train-deepseek-recipe-lora",
        "max_run": 7200,
        **changes,
    }
    path = folder / "job.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@sdk3
def test_a_recipe_spec_file_validates_and_plans_offline_as_the_bare_from_recipe(
    repos, session, tmp_path, capsys
):
    repos()
    spec = _spec(tmp_path)
    assert main(["validate", "--no-cache", str(spec)]) == 0, capsys.readouterr().out
    plan = safe_estimators.plan(spec)
    c = _configs()
    bare = _bare(
        session,
        training_image=IMAGE,
        training_recipe=NAME,
        recipe_overrides=copy.deepcopy(OVERRIDES),
        base_job_name="train-deepseek-recipe-lora",
        compute=c.Compute(instance_type="ml.p4d.24xlarge"),
        stopping_condition=c.StoppingCondition(max_runtime_in_seconds=7200),
        role=ROLE,
    )
    planned = copy.deepcopy(plan.request)
    planned.pop("TrainingJobName")
    for channel in planned.get("InputDataConfig", ()):
        channel["DataSource"]["S3DataSource"].pop("S3Uri", None)
    assert planned == _request(bare)
    assert plan.request["ResourceConfig"]["InstanceCount"] == 1  # the recipe's num_nodes


def test_recipe_jobs_the_model_trainer_target_does_not_build_name_the_estimator(
    tmp_path, capsys, monkeypatch
):
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yaml.safe_dump(_recipe(interpolated=False)))
    spec = _spec(tmp_path, training_recipe="recipe.yaml", target="model_trainer")
    code = main(["validate", "--no-cache", str(spec)])
    out = capsys.readouterr().out
    if SDK3:
        assert code == 0, out  # a GPU recipe: built through from_recipe
    else:
        assert code == 1 and "training_recipe" in out and "target: estimator" in out


def test_port_writes_a_recipe_job_as_from_recipe_on_3_and_refuses_it_on_2(
    tmp_path, capsys, monkeypatch
):
    # Never a bare ModelTrainer(...), which would run no recipe (tests/test_port_recipe.py runs
    # the code and compares it with plan).
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-2")
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yaml.safe_dump(_recipe(interpolated=False)))
    spec = _spec(tmp_path, training_recipe="recipe.yaml")
    code = main(["port", str(spec)])
    out = capsys.readouterr().out
    if SDK3:
        assert code == 0, out
        assert "ModelTrainer.from_recipe(" in out and "ModelTrainer(\n" not in out
    else:
        assert code == 1 and "training_recipe" in out and "from_recipe" in out


@sdk3
def test_plan_needs_no_clone_of_anything_but_its_own_stand_ins(tmp_path, monkeypatch):
    # Only a local copy of the recipes collection: the adapter clone from_recipe makes while
    # it is built goes to plan's stand-in (no redirect of ours in the environment).
    found = local_repositories(tmp_path / "repos", {NAME: _recipe(interpolated=True)})
    monkeypatch.setenv("SAFE_ESTIMATORS_RECIPES", str(found["launcher"]))
    plan = safe_estimators.plan(_spec(tmp_path))
    assert plan.request["AlgorithmSpecification"]["TrainingImage"] == IMAGE
    assert plan.request["HyperParameters"]["config-name"] == "recipe.yaml"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.yaml", "repos"]
