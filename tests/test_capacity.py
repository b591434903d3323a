"""Training plans and volume keys: what CreateTrainingJob refuses is refused before it is sent,
by validate, build and plan alike, on both targets; what it runs is sent as the bare SDK sends it.
"""

from __future__ import annotations

import pytest
import yaml

import safe_estimators
from safe_estimators import ConfigError
from safe_estimators._commands.validate import validate_file
from safe_estimators._facts.limits import training_plan_instance_types

ROLE = "arn:aws:iam::111122223333:role/SageMakerRole"
PLAN = "arn:aws:sagemaker:us-west-2:111122223333:training-plan/my-plan"


def _spec(tmp_path, **options):
    (tmp_path / "train.py").write_text(
        "import os\nimport torch.distributed as dist\ndist.init_process_group('nccl')\n"
        "open(os.path.join(os.environ['SM_MODEL_DIR'], 'm.pt'), 'w')\n"
    )
    data = {
        "estimator": "pytorch",
        "entry_point": "train.py",
        "framework_version": "2.3.0",
        "py_version": "py311",
        "role": ROLE,
        "distribution": {"torch_distributed": {"enabled": True}},
        **options,
    }
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _problems(path):
    return [p for p in validate_file(str(path)) if p.path != "<file>"]


def _errors(path):
    return [p for p in _problems(path) if p.severity == "error"]


@pytest.mark.both_sdks
def test_the_plan_instance_types_come_from_botocore():
    types = training_plan_instance_types()
    assert "ml.p5.48xlarge" in types and "ml.trn2.48xlarge" in types
    assert "ml.g5.xlarge" not in types


@pytest.mark.both_sdks
def test_a_training_plan_on_a_type_no_plan_reserves_is_refused(tmp_path):
    path = _spec(tmp_path, instance_type="ml.g5.xlarge", training_plan=PLAN)
    errors = _errors(path)
    assert [p.path for p in errors] == ["instance_type"]
    assert "ml.g5.xlarge" in errors[0].message and "ml.p5.48xlarge" in errors[0].message
    assert "training_plan" in errors[0].hint


@pytest.mark.both_sdks
def test_a_training_plan_on_a_reservable_type_validates(tmp_path):
    path = _spec(tmp_path, instance_type="ml.p5.48xlarge", instance_count=2, training_plan=PLAN)
    assert _errors(path) == []


@pytest.mark.both_sdks
def test_a_plan_on_each_instance_group_is_checked_per_group(tmp_path):
    path = _spec(
        tmp_path,
        instance_groups=[
            {"instance_group_name": "a", "instance_type": "ml.p5.48xlarge", "instance_count": 1},
            {"instance_group_name": "b", "instance_type": "ml.c5.xlarge", "instance_count": 1},
        ],
        distribution=None,
        training_plan=PLAN,
    )
    paths = [p.path for p in _errors(path) if "training plan" in p.message]
    assert paths == ["instance_groups.1.instance_type"]


@pytest.mark.sdk2_only
def test_the_estimator_sends_the_plan_arn(tmp_path):
    path = _spec(tmp_path, instance_type="ml.p5.48xlarge", training_plan=PLAN)
    plan = safe_estimators.plan(path)
    assert plan.request["ResourceConfig"]["TrainingPlanArn"] == PLAN
    assert plan.request["ResourceConfig"]["InstanceType"] == "ml.p5.48xlarge"


@pytest.mark.both_sdks
def test_the_model_trainer_sends_the_plan_arn_instead_of_refusing_it(tmp_path):
    path = _spec(
        tmp_path, instance_type="ml.p5.48xlarge", training_plan=PLAN, target="model_trainer"
    )
    assert _errors(path) == []
    plan = safe_estimators.plan(path)
    assert plan.request["ResourceConfig"]["TrainingPlanArn"] == PLAN


@pytest.mark.both_sdks
def test_a_plan_on_a_non_reservable_type_is_refused_by_build_and_plan_too(tmp_path):
    path = _spec(tmp_path, instance_type="ml.g5.xlarge", training_plan=PLAN, target="model_trainer")
    with pytest.raises(ConfigError) as built:
        safe_estimators.build(path)
    with pytest.raises(ConfigError) as planned:
        safe_estimators.plan(path)
    for exc in (built, planned):
        assert "training plan" in str(exc.value)


KEY = "arn:aws:kms:us-west-2:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"


@pytest.mark.both_sdks
@pytest.mark.parametrize("instance_type", ["ml.g5.12xlarge", "ml.p4d.24xlarge", "ml.trn2.48xlarge"])
def test_a_volume_key_on_local_storage_is_refused_for_the_model_trainer(tmp_path, instance_type):
    path = _spec(
        tmp_path, instance_type=instance_type, volume_kms_key=KEY, target="model_trainer"
    )
    errors = [p for p in _errors(path) if p.path == "volume_kms_key"]
    assert len(errors) == 1
    assert instance_type in errors[0].message and "local NVMe storage" in errors[0].message


@pytest.mark.both_sdks
def test_a_volume_key_on_an_ebs_type_is_sent(tmp_path):
    path = _spec(tmp_path, instance_type="ml.p3.16xlarge", volume_kms_key=KEY,
                 target="model_trainer")
    assert [p for p in _problems(path) if p.path == "volume_kms_key"] == []
    assert safe_estimators.plan(path).request["ResourceConfig"]["VolumeKmsKeyId"] == KEY


@pytest.mark.sdk2_only
def test_the_estimator_sends_a_volume_key_it_is_given_so_the_job_is_refused(tmp_path):
    # sagemaker 2's estimator drops only a key from its config file on g5; one passed to it is
    # sent, and CreateTrainingJob refuses it there.
    path = _spec(tmp_path, instance_type="ml.g5.12xlarge", volume_kms_key=KEY)
    errors = [p for p in _errors(path) if p.path == "volume_kms_key"]
    assert len(errors) == 1 and "refuses" in errors[0].message
    with pytest.raises(ConfigError, match="volume_kms_key"):
        safe_estimators.plan(path)


@pytest.mark.sdk2_only
def test_the_estimator_sends_a_volume_key_on_nvme_types_its_list_misses(tmp_path):
    # ml.trn2.48xlarge has NVMe storage, but its family is not in the SDK's list: the estimator
    # sends the key and CreateTrainingJob refuses it.
    path = _spec(tmp_path, instance_type="ml.trn2.48xlarge", volume_kms_key=KEY,
                 framework_version="2.1.2", py_version="py310")
    errors = [p for p in _errors(path) if p.path == "volume_kms_key"]
    assert len(errors) == 1 and "refuses" in errors[0].message


def _own_words_spec(tmp_path, compute, stopping_condition=None):
    (tmp_path / "train.py").write_text("print('hello')\n")
    data = {
        "estimator": "pytorch", "target": "model_trainer", "entry_point": "train.py",
        "framework_version": "2.3.0", "py_version": "py311", "role": ROLE, "compute": compute,
        **({"stopping_condition": stopping_condition} if stopping_condition else {}),
    }
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.both_sdks
def test_a_training_plan_in_modeltrainers_words_is_checked_where_written(tmp_path):
    path = _own_words_spec(
        tmp_path, {"instance_type": "ml.g5.xlarge", "training_plan_arn": PLAN}
    )
    (problem,) = _errors(path)
    assert problem.path == "compute.instance_type" and "training plan" in problem.message
    ok = _own_words_spec(tmp_path, {"instance_type": "ml.p5.48xlarge", "training_plan_arn": PLAN})
    assert _errors(ok) == []
    assert safe_estimators.plan(ok).request["ResourceConfig"]["TrainingPlanArn"] == PLAN


@pytest.mark.both_sdks
@pytest.mark.parametrize(("instance_type", "warned"), [("ml.m5.xlarge", True),
                                                       ("ml.g5.xlarge", False)])
def test_max_pending_time_on_a_cpu_type_warns(tmp_path, instance_type, warned):
    path = _own_words_spec(
        tmp_path, {"instance_type": instance_type},
        {"max_runtime_in_seconds": 3600, "max_pending_time_in_seconds": 7200},
    )
    found = [p for p in _problems(path) if "MaxPendingTimeInSeconds" in p.message]
    assert [p.severity for p in found] == (["warning"] if warned else [])
    if warned:
        assert found[0].path == "stopping_condition.max_pending_time_in_seconds"
