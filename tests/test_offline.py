"""Offline means offline: validate, lint and plan attempt no connection at all.

A fresh interpreter without credentials (where botocore would otherwise ask the EC2 instance
metadata service at 169.254.169.254) records every ``socket.connect`` through an audit hook;
none is allowed, not even to 127.0.0.1. And the region: plan and submit resolve it the same way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import SDK3

import safe_estimators
from safe_estimators._commands.plan import job_region

ROOT = Path(__file__).parent.parent
EXAMPLES = ROOT / "examples"
# A job with a local script that builds on the installed SDK (on sagemaker 3 the compiler
# examples are the estimator's only): its spec, the instance type it plans for, its script.
SINGLE, INSTANCE = (
    (EXAMPLES / "model-trainer" / "torchrun-fsdp.yaml", "ml.g5.12xlarge")
    if SDK3
    else (EXAMPLES / "compiler-single-gpu" / "job.yaml", "ml.p3.2xlarge")
)
MULTI, SCRIPT = (
    (SINGLE, "fsdp.py") if SDK3 else (EXAMPLES / "compiler-multi-gpu" / "job.yaml", "train.py")
)

_PROBE = """
import json, os, sys
attempts = []
sys.addaudithook(lambda event, args: event == "socket.connect" and attempts.append(repr(args[1])))
from safe_estimators._cli import main
import safe_estimators
spec, script = sys.argv[1], sys.argv[2]
codes = [main(["validate", spec]), main(["lint", spec]), main(["lint", script]),
         main(["plan", spec]), main(["plan", spec, "--json"])]
plan = safe_estimators.plan(spec)
# The estimator names its region in a hyperparameter; a ModelTrainer's image names it.
image_region = plan.request["AlgorithmSpecification"]["TrainingImage"].split(".")[3]
region = plan.request["HyperParameters"].get("sagemaker_region", json.dumps(image_region))
print(json.dumps({"codes": codes, "attempts": attempts, "region": region,
                  "metadata_env": os.environ.get("AWS_EC2_METADATA_DISABLED")}))
"""


def _run_without_credentials(tmp_path: Path, **env_extra: str) -> dict:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AWS_", "PYTEST", "SAGEMAKER_"))
    }
    env.update(HOME=str(tmp_path), SAGEMAKER_SUPPRESS_V2_WARNING="1", **env_extra)
    spec = MULTI
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, str(spec), str(spec.parent / SCRIPT)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_validate_lint_and_plan_attempt_no_connection_without_credentials(tmp_path):
    report = _run_without_credentials(tmp_path)
    assert report["codes"] == [0, 0, 0, 0, 0]
    assert report["attempts"] == []
    assert report["metadata_env"] is None  # the user's environment is as it was
    assert report["region"] == '"us-east-1"'  # the placeholder, said out loud


def test_aws_region_is_honoured_by_plan(tmp_path):
    report = _run_without_credentials(tmp_path, AWS_REGION="ap-northeast-1")
    assert report["attempts"] == []
    assert report["region"] == '"ap-northeast-1"'


def test_aws_region_wins_over_aws_default_region(monkeypatch):
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-2")
    assert job_region() == "eu-west-1"
    monkeypatch.delenv("AWS_REGION")
    assert job_region() == "us-west-2"


def test_metadata_setting_is_restored(monkeypatch):
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "false")
    safe_estimators.plan(SINGLE)
    assert os.environ["AWS_EC2_METADATA_DISABLED"] == "false"


def test_plan_uses_the_org_configs_role_like_submit(tmp_path, monkeypatch):
    role = "arn:aws:iam::444455556666:role/OrgTrainingRole"
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {"SchemaVersion": "1.0", "SageMaker": {"TrainingJob": {"RoleArn": role}}}
        )
    )
    monkeypatch.setenv("SAGEMAKER_USER_CONFIG_OVERRIDE", str(config))
    monkeypatch.setenv("SAGEMAKER_ADMIN_CONFIG_OVERRIDE", str(config))
    planned = safe_estimators.plan(SINGLE)
    assert planned.request["RoleArn"] == role
    assert not any(p.startswith("role") for p in planned.placeholders)


def test_an_aws_profile_that_does_not_exist_is_a_problem_not_a_crash(tmp_path, monkeypatch):
    import boto3

    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)  # as in a fresh process
    config = tmp_path / "aws-config"
    config.write_text("[profile dev]\nregion = us-west-2\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    job = SINGLE
    monkeypatch.setenv("AWS_PROFILE", "prod")  # a profile this machine does not have
    with pytest.raises(safe_estimators.ConfigError) as caught:
        safe_estimators.plan(job)
    [problem] = [p for p in caught.value.problems if p.path == "$AWS_PROFILE"]
    assert "'prod'" in problem.message and "aws configure list-profiles" in problem.hint
    monkeypatch.setenv("AWS_PROFILE", "dev")
    assert safe_estimators.plan(job).request["ResourceConfig"]["InstanceType"] == INSTANCE


@pytest.mark.sdk2_only  # the estimator's sessions read boto3's default session
def test_a_profile_added_after_boto3_read_the_config_is_explained(tmp_path, monkeypatch):
    # boto3's default session reads the AWS config files once; the SDK looks the profile up
    # there for every estimator. A profile added since is explained, not a crash.
    import boto3

    job = SINGLE
    safe_estimators.plan(job)
    assert boto3.DEFAULT_SESSION is not None
    config = tmp_path / "aws-config"
    config.write_text("[profile added-later]\nregion = us-west-2\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_PROFILE", "added-later")
    with pytest.raises(safe_estimators.ConfigError) as caught:
        safe_estimators.plan(job)
    [problem] = [p for p in caught.value.problems if p.path == "$AWS_PROFILE"]
    assert "a new process" in problem.hint
    monkeypatch.delenv("AWS_PROFILE")
    assert safe_estimators.plan(job).request["ResourceConfig"]["InstanceType"] == INSTANCE
