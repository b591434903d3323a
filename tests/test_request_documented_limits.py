"""Limits botocore's model states only in words: max_run's 28 days (issue 34).

botocore's documentation of ``StoppingCondition.MaxRuntimeInSeconds`` says "The maximum value
is 28 days."; its shape has a minimum only, so the request rules once let 30 days through.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
import yaml

import safe_estimators
from safe_estimators import ConfigError
from safe_estimators._commands.validate import validate_file
from safe_estimators._facts import limits

EXAMPLES = Path(__file__).parent.parent / "examples"
TWENTY_EIGHT_DAYS = 28 * 24 * 60 * 60


def write_spec(folder: Path, **options) -> Path:
    shutil.copytree(EXAMPLES / "compiler-multi-gpu", folder / "code", dirs_exist_ok=True)
    data = {
        "estimator": "pytorch",
        "entry_point": "train.py",
        "source_dir": "code",
        "instance_type": "ml.p3.8xlarge",
        "framework_version": "1.13.1",
        "py_version": "py39",
        **options,
    }
    path = folder / "job.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def errors(problems):
    return [p for p in problems if p.severity == "error"]


def test_the_maximum_is_read_from_botocores_own_words():
    with gzip.open(limits._model_file(), "rt", encoding="utf-8") as file:
        shapes = json.load(file)["shapes"]
    words = shapes["StoppingCondition"]["members"]["MaxRuntimeInSeconds"]["documentation"]
    assert "The maximum value is 28 days." in words
    assert "max" not in shapes["MaxRuntimeInSeconds"]  # the shape alone would allow any int
    maximum = limits.documented_maximum("StoppingCondition.MaxRuntimeInSeconds")
    assert maximum == TWENTY_EIGHT_DAYS == 2_419_200
    assert limits.documented_maximum("StoppingCondition.MaxWaitTimeInSeconds") is None


def test_28_days_exactly_is_accepted(tmp_path):
    assert errors(validate_file(write_spec(tmp_path, max_run=2_419_200))) == []


def test_one_second_more_is_refused(tmp_path):
    (problem,) = errors(validate_file(write_spec(tmp_path, max_run=2_419_201)))
    assert problem.path == "max_run"
    assert "2,419,201 s" in problem.message and "2,419,200 s (28 days)" in problem.message
    assert "StoppingCondition.MaxRuntimeInSeconds" in problem.message
    assert "max_run=2419200" in problem.hint


def test_thirty_days_refused_by_the_factory(sagemaker_session, role):
    with pytest.raises(ConfigError) as error:
        safe_estimators.pytorch(
            entry_point=str(EXAMPLES / "compiler-multi-gpu" / "train.py"),
            role=role,
            instance_type="ml.p3.8xlarge",
            framework_version="1.13.1",
            py_version="py39",
            max_run=30 * 24 * 3600,
            max_wait=31 * 24 * 3600,
            use_spot_instances=True,
            checkpoint_s3_uri="s3://bucket/ckpt",
            sagemaker_session=sagemaker_session,
        )
    assert [p.path for p in error.value.problems if p.severity == "error"] == ["max_run"]


def test_the_cached_subset_keeps_the_number(tmp_path, monkeypatch):
    monkeypatch.setenv("SAFE_ESTIMATORS_CACHE_DIR", str(tmp_path))
    subset = limits.derive_subset(limits._model())
    member = subset["StoppingCondition"]["members"]["MaxRuntimeInSeconds"]
    assert member[limits.DOCUMENTED_MAXIMUM] == TWENTY_EIGHT_DAYS
    assert "documentation" not in member
