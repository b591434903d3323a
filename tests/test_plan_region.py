"""A training plan ARN names its region, and a plan reserves capacity there only: where the job's
region is known (plan: the configured region; the factories: the session's), a plan of another
region is refused with the fix, on both targets. validate knows no region (a spec file names
none) and says nothing of it."""

from __future__ import annotations

import pytest
import yaml

import safe_estimators
from safe_estimators import ConfigError
from safe_estimators._commands.validate import validate_file
from safe_estimators._facts.sdk_files import sdk_generation

SDK3 = sdk_generation() >= 3
ROLE = "arn:aws:iam::111122223333:role/SageMakerRole"
EU_PLAN = "arn:aws:sagemaker:eu-west-1:111122223333:training-plan/my-plan"
US_PLAN = "arn:aws:sagemaker:us-west-2:111122223333:training-plan/my-plan"


@pytest.fixture(autouse=True)
def _in_us_west_2(monkeypatch):
    monkeypatch.setenv("AWS_REGION", "us-west-2")


def _spec(tmp_path, target, **options):
    (tmp_path / "train.py").write_text("print('hello')\n")
    data = {
        "estimator": "pytorch", "target": target, "entry_point": "train.py",
        "framework_version": "2.3.0", "py_version": "py311", "role": ROLE, **options,
    }  # fmt: skip
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _refused(call) -> object:
    with pytest.raises(ConfigError) as raised:
        call()
    [problem] = [p for p in raised.value.problems if "its ARN says so" in p.message]
    assert "a training plan of eu-west-1" in problem.message
    assert "created in us-west-2" in problem.message
    assert "create the job in eu-west-1" in problem.hint
    return problem


@pytest.mark.both_sdks
def test_model_trainer_plan_of_another_region_is_refused_by_plan_and_build(tmp_path):
    path = _spec(
        tmp_path, "model_trainer",
        compute={"instance_type": "ml.p5.48xlarge", "training_plan_arn": EU_PLAN},
    )  # fmt: skip
    assert _refused(lambda: safe_estimators.plan(path)).path == "compute.training_plan_arn"
    assert _refused(lambda: safe_estimators.build(path)).path == "compute.training_plan_arn"
    # validate knows no region: the plan's own region is the only one it could guess.
    assert [p for p in validate_file(str(path)) if "ARN says so" in p.message] == []


@pytest.mark.both_sdks
def test_model_trainer_factory_reads_the_sessions_region(tmp_path):
    (tmp_path / "train.py").write_text("print('hello')\n")
    compute_cls = _compute_class()
    problem = _refused(
        lambda: safe_estimators.model_trainer(
            entry_point="train.py", source_dir=str(tmp_path), role=ROLE,
            framework_version="2.3.0", py_version="py311",
            compute=compute_cls(instance_type="ml.p5.48xlarge", training_plan_arn=EU_PLAN),
        )
    )  # fmt: skip
    assert problem.path == "compute.training_plan_arn"


@pytest.mark.both_sdks
def test_a_plan_of_the_jobs_region_plans_and_sends_its_arn(tmp_path):
    path = _spec(
        tmp_path, "model_trainer",
        compute={"instance_type": "ml.p5.48xlarge", "training_plan_arn": US_PLAN},
    )  # fmt: skip
    assert safe_estimators.plan(path).request["ResourceConfig"]["TrainingPlanArn"] == US_PLAN


@pytest.mark.sdk2_only  # the estimator target is sagemaker 2's
def test_estimator_plan_of_another_region_is_refused_by_plan_and_the_factory(tmp_path):
    path = _spec(tmp_path, "estimator", instance_type="ml.p5.48xlarge", training_plan=EU_PLAN)
    assert _refused(lambda: safe_estimators.plan(path)).path == "training_plan"
    problem = _refused(
        lambda: safe_estimators.pytorch(
            entry_point="train.py", source_dir=str(tmp_path), role=ROLE,
            instance_type="ml.p5.48xlarge", framework_version="2.3.0", py_version="py311",
            training_plan=EU_PLAN,
        )
    )  # fmt: skip
    assert problem.path == "training_plan"


@pytest.mark.sdk2_only  # the estimator target is sagemaker 2's
def test_estimator_plan_of_the_jobs_region_is_sent(tmp_path):
    path = _spec(tmp_path, "estimator", instance_type="ml.p5.48xlarge", training_plan=US_PLAN)
    assert safe_estimators.plan(path).request["ResourceConfig"]["TrainingPlanArn"] == US_PLAN


def _compute_class():
    if SDK3:
        from sagemaker.core.training.configs import Compute
    else:
        from sagemaker.modules.configs import Compute
    return Compute
