"""The SDK defaults config is validated by the SDK's own schema check once per content, not on
every lookup, and an invalid config is still refused every time it is used.

The SDK calls ``jsonschema.validate`` with its config schema from ``validate_sagemaker_config``;
the tests count those calls (the real validation still runs) and plan real jobs offline.
"""

from __future__ import annotations

import concurrent.futures
import json
from pathlib import Path
from typing import Any

import boto3
import jsonschema
import pytest
import sagemaker
import yaml
from sagemaker.config.config_schema import SAGEMAKER_PYTHON_SDK_CONFIG_SCHEMA

import safe_estimators

EXAMPLES = Path(__file__).parent.parent / "examples"
JOB = EXAMPLES / "compiler-multi-gpu" / "job.yaml"


@pytest.fixture
def schema_checks(monkeypatch) -> list[Any]:
    """The configs the SDK validates against its schema from now on (validation still runs)."""
    checked: list[Any] = []
    original = jsonschema.validate

    def counting(instance: Any, schema: Any, *args: Any, **kwargs: Any) -> None:
        if schema is SAGEMAKER_PYTHON_SDK_CONFIG_SCHEMA:
            checked.append(instance)
        original(instance, schema, *args, **kwargs)

    monkeypatch.setattr(jsonschema, "validate", counting)
    return checked


def _use_config(monkeypatch, path: Path, config: dict[str, Any]) -> None:
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    monkeypatch.setenv("SAGEMAKER_USER_CONFIG_OVERRIDE", str(path))
    monkeypatch.setenv("SAGEMAKER_ADMIN_CONFIG_OVERRIDE", str(path))


def _org_config(team: str) -> dict[str, Any]:
    return {
        "SchemaVersion": "1.0",
        "SageMaker": {
            "PythonSDK": {"Modules": {"TelemetryOptOut": True}},
            "TrainingJob": {"Tags": [{"Key": "team", "Value": team}]},
        },
    }


def test_a_second_plan_with_the_same_config_validates_nothing(monkeypatch, tmp_path, schema_checks):
    _use_config(monkeypatch, tmp_path / "config.yaml", _org_config(tmp_path.name))
    first = safe_estimators.plan(JOB)
    assert schema_checks, "the SDK's own validation ran for a config it had not seen"
    assert len(schema_checks) <= 3  # the file, and the merged config with telemetry off
    schema_checks.clear()

    second = safe_estimators.plan(JOB)
    assert schema_checks == []
    # The config still drives the request: the organisation's tag, on both plans.
    for planned in (first, second):
        assert {"Key": "team", "Value": tmp_path.name} in planned.request["Tags"]


def test_a_changed_config_is_validated_again(monkeypatch, tmp_path, schema_checks):
    path = tmp_path / "config.yaml"
    _use_config(monkeypatch, path, _org_config("first"))
    safe_estimators.plan(JOB)
    schema_checks.clear()

    _use_config(monkeypatch, path, _org_config(f"second-{tmp_path.name}"))
    planned = safe_estimators.plan(JOB)
    assert schema_checks, "new content must go through the SDK's validation"
    assert {"Key": "team", "Value": f"second-{tmp_path.name}"} in planned.request["Tags"]


def test_an_invalid_config_is_refused_every_time(monkeypatch, tmp_path):
    config = _org_config("x")
    config["SageMaker"]["TrainingJob"]["EnableNetworkIsolation"] = "yes"  # must be a boolean
    _use_config(monkeypatch, tmp_path / "config.yaml", config)
    for _ in range(2):
        with pytest.raises(jsonschema.ValidationError, match="is not of type 'boolean'"):
            safe_estimators.plan(JOB)


def test_a_session_config_made_invalid_after_validation_is_refused(role):
    session = sagemaker.Session(
        boto_session=boto3.Session(region_name="us-west-2"), default_bucket="some-bucket"
    )
    assert session.sagemaker_config  # the suite's config: telemetry off
    arguments = dict(
        entry_point="train.py",
        source_dir=str(EXAMPLES / "compiler-multi-gpu"),
        role=role,
        instance_type="ml.p3.8xlarge",
        framework_version="1.13.1",
        py_version="py39",
        training_compiler=True,
        sagemaker_session=session,
    )
    safe_estimators.pytorch(**arguments)
    # The SDK reads the config from the session on every lookup; new content, new validation.
    session.sagemaker_config = {**session.sagemaker_config, "SchemaVersion": 1}
    with pytest.raises(jsonschema.ValidationError):
        safe_estimators.pytorch(**arguments)


def _request_without_name(planned: safe_estimators.Plan) -> Any:
    name = planned.request["TrainingJobName"]
    return json.loads(json.dumps(planned.request, default=str).replace(name, "<job name>"))


def test_plans_in_parallel_threads_get_their_own_requests():
    jobs = sorted(EXAMPLES.glob("*/job.*"))
    alone = [_request_without_name(safe_estimators.plan(job)) for job in jobs]
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        together = [_request_without_name(p) for p in pool.map(safe_estimators.plan, jobs)]
    assert together == alone
    assert len({r["ResourceConfig"].get("InstanceType") for r in together}) > 1


def test_a_number_is_not_taken_for_the_boolean_validated_before(monkeypatch, tmp_path):
    config = _org_config(f"typed-{tmp_path.name}")
    config["SageMaker"]["TrainingJob"]["EnableNetworkIsolation"] = True
    _use_config(monkeypatch, tmp_path / "config.yaml", config)
    assert safe_estimators.plan(JOB).request["EnableNetworkIsolation"] is True

    config["SageMaker"]["TrainingJob"]["EnableNetworkIsolation"] = 1  # equal to True in Python
    _use_config(monkeypatch, tmp_path / "config.yaml", config)
    with pytest.raises(jsonschema.ValidationError, match="is not of type 'boolean'"):
        safe_estimators.plan(JOB)
