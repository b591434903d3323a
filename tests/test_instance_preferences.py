"""ModelTrainer's Compute.instance_preferences (sagemaker 3): the job must be right on whichever
preferred type SageMaker grants, so every rule that depends on the instance type runs for each,
and what one request fixes for all of them (processes per node) must hold for all."""

from __future__ import annotations

import pytest
import yaml

import safe_estimators
from safe_estimators import ConfigError
from safe_estimators._commands.validate import validate_file
from safe_estimators._facts.sdk_files import sdk_generation

pytestmark = pytest.mark.both_sdks
SDK3 = sdk_generation() >= 3
needs_sdk3 = pytest.mark.sdk3_only  # Compute.instance_preferences is sagemaker 3's

ROLE = "arn:aws:iam::111122223333:role/SageMakerRole"
KEY = "arn:aws:kms:us-west-2:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"


def _spec(tmp_path, compute, **options):
    (tmp_path / "train.py").write_text(
        "import os\nimport torch.distributed as dist\ndist.init_process_group('nccl')\n"
        "open(os.path.join(os.environ['SM_MODEL_DIR'], 'm.pt'), 'w')\n"
    )
    data = {
        "estimator": "pytorch",
        "target": "model_trainer",
        "entry_point": "train.py",
        "framework_version": "2.3.0",
        "py_version": "py311",
        "role": ROLE,
        "compute": compute,
        "distribution": {"torch_distributed": {"enabled": True}},
        **options,
    }
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _prefs(*kinds, **each):
    return [{"instance_type": kind, **each} for kind in kinds]


def _errors(path):
    return [p for p in validate_file(str(path)) if p.severity == "error"]


@needs_sdk3
def test_types_with_different_gpu_counts_are_refused_under_torchrun(tmp_path):
    path = _spec(
        tmp_path,
        {"instance_preferences": _prefs("ml.p4d.24xlarge", "ml.g6e.12xlarge"), "instance_count": 2},
    )
    (problem,) = _errors(path)
    assert problem.path == "compute.instance_preferences"
    assert "ml.p4d.24xlarge has 8 GPUs" in problem.message
    assert "ml.g6e.12xlarge has 4 GPUs" in problem.message
    assert "same accelerator count" in problem.hint


@needs_sdk3
def test_types_with_equal_gpu_counts_plan_with_eight_processes_per_node(tmp_path):
    path = _spec(
        tmp_path,
        {"instance_preferences": _prefs("ml.p5.48xlarge", "ml.p5en.48xlarge"), "instance_count": 2},
    )
    assert _errors(path) == []
    plan = safe_estimators.plan(path)
    resources = plan.request["ResourceConfig"]
    assert resources["InstancePreferences"] == [
        {"InstanceType": "ml.p5.48xlarge"},
        {"InstanceType": "ml.p5en.48xlarge"},
    ]
    assert resources["InstanceCount"] == 2
    assert "InstanceType" not in resources
    assert plan.explanation.injected["distributed.process_count_per_node"] == 8


@needs_sdk3
def test_per_preference_counts_are_sent_per_preference(tmp_path):
    path = _spec(
        tmp_path,
        {"instance_preferences": [
            {"instance_type": "ml.p5.48xlarge", "instance_count": 1},
            {"instance_type": "ml.p5en.48xlarge", "instance_count": 2},
        ]},
    )
    resources = safe_estimators.plan(path).request["ResourceConfig"]
    assert resources["InstancePreferences"][1] == {
        "InstanceType": "ml.p5en.48xlarge",
        "InstanceCount": 2,
    }
    assert "InstanceCount" not in resources


@needs_sdk3
def test_a_problem_of_one_preferred_type_names_that_type(tmp_path):
    # ml.p3.16xlarge has EBS storage, ml.p4d.24xlarge local NVMe (8 GPUs each): the volume key
    # is refused only if the p4d is granted.
    path = _spec(
        tmp_path,
        {
            "instance_preferences": _prefs("ml.p3.16xlarge", "ml.p4d.24xlarge"),
            "instance_count": 1,
            "volume_kms_key_id": KEY,
        },
        framework_version="2.1.0",
        py_version="py310",
    )
    (problem,) = [p for p in _errors(path) if "NVMe" in p.message]
    assert problem.path == "compute.volume_kms_key_id"
    assert "ml.p4d.24xlarge" in problem.message
    assert "if ml.p4d.24xlarge is granted: preference 2 of 2" in problem.message


@needs_sdk3
@pytest.mark.parametrize(
    ("compute", "path", "words"),
    [
        (
            {"instance_preferences": _prefs("ml.p5.48xlarge", "ml.p5.48xlarge"),
             "instance_count": 1},
            "compute.instance_preferences",
            "more than once",
        ),
        (
            {"instance_preferences": _prefs("ml.p5.48xlarge", "ml.p5en.48xlarge",
                                            instance_count=1),
             "instance_count": 1},
            "compute.instance_count",
            "one or the other",
        ),
        (
            {"instance_preferences": [{"instance_type": "ml.p5.48xlarge", "instance_count": 1},
                                      {"instance_type": "ml.p5en.48xlarge"}]},
            "compute.instance_preferences.1",
            "no instance_count",
        ),
        (
            {"instance_preferences": _prefs("ml.p5.48xlarge"), "instance_count": 1,
             "enable_managed_spot_training": True},
            "compute.enable_managed_spot_training",
            "spot",
        ),
    ],
)
def test_the_sdks_own_checks_of_the_list_are_rules(tmp_path, compute, path, words):
    found = [p for p in _errors(_spec(tmp_path, compute)) if p.path == path]
    assert len(found) == 1 and words in found[0].message
    with pytest.raises(ConfigError, match=words):
        safe_estimators.build(_spec(tmp_path, compute))


@pytest.mark.sdk2_only
def test_sagemaker_2_has_no_preferences(tmp_path):
    path = _spec(
        tmp_path,
        {"instance_preferences": _prefs("ml.p5.48xlarge", "ml.p5en.48xlarge"), "instance_count": 1},
    )
    (problem,) = [p for p in _errors(path) if p.path == "compute.instance_preferences"]
    assert "needs sagemaker 3" in problem.message
