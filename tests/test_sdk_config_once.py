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
from safe_estimators._targets import estimator as _build

EXAMPLES = Path(__file__).parent.parent / "examples"
JOB = EXAMPLES / "compiler-multi-gpu" / "job.yaml"


SDK_VALIDATOR = jsonschema.validators.validator_for(SAGEMAKER_PYTHON_SDK_CONFIG_SCHEMA)


@pytest.fixture
def schema_checks(monkeypatch) -> list[Any]:
    """The configs validated against the SDK's schema from now on (validation still runs)."""
    checked: list[Any] = []
    original = SDK_VALIDATOR.iter_errors

    def counting(self: Any, instance: Any, *args: Any, **kwargs: Any) -> Any:
        if self.schema is SAGEMAKER_PYTHON_SDK_CONFIG_SCHEMA:
            checked.append(instance)
        return original(self, instance, *args, **kwargs)

    monkeypatch.setattr(SDK_VALIDATOR, "iter_errors", counting)
    return checked


@pytest.fixture
def schema_self_checks(monkeypatch, tmp_path) -> list[Any]:
    """Checks of the SDK's schema itself from now on, with an empty cache folder and nothing
    remembered in this process."""
    checks: list[Any] = []
    original = SDK_VALIDATOR.check_schema

    def counting(schema: Any, *args: Any, **kwargs: Any) -> None:
        if schema is SAGEMAKER_PYTHON_SDK_CONFIG_SCHEMA:
            checks.append(schema)
        original(schema, *args, **kwargs)

    monkeypatch.setattr(SDK_VALIDATOR, "check_schema", staticmethod(counting))
    monkeypatch.setenv("SAFE_ESTIMATORS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(_build, "_CHECKED_SCHEMAS", set())
    return checks


def _sdk_validation() -> Any:
    """The SDK's validate_sagemaker_config with the schema's own check remembered."""
    import sagemaker.config.config as sdk_config

    original = sdk_config.validate_sagemaker_config
    while hasattr(original, "__wrapped__"):  # the SDK's own, under what a build installed
        original = original.__wrapped__
    fast = _build._schema_checked_once(original)
    assert fast is not original, "the SDK's function is no longer the code reproduced"
    return fast


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
    for _ in range(2):  # a problem at the config's variable, not an internal error
        with pytest.raises(safe_estimators.ConfigError, match="is not of type 'boolean'"):
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
    text = json.dumps(planned.request, default=str).replace(name, "<job name>")
    # A recipe job's resolved recipe is saved under a random name (tempfile, in the SDK).
    recipe = planned.request.get("HyperParameters", {}).get("config-name", "").strip('"')
    return json.loads(text.replace(recipe, "<recipe file>") if recipe else text)


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
    with pytest.raises(safe_estimators.ConfigError, match="is not of type 'boolean'"):
        safe_estimators.plan(JOB)


def test_the_sdk_schema_is_checked_once_per_machine(schema_self_checks, tmp_path):
    validate = _sdk_validation()
    validate(_org_config("a"))
    assert len(schema_self_checks) == 1
    validate(_org_config("b"))  # new content, same schema: this process remembers
    assert len(schema_self_checks) == 1
    _build._CHECKED_SCHEMAS.clear()  # as a new process: the record in the cache folder
    validate(_org_config("c"))
    assert len(schema_self_checks) == 1
    [record] = (tmp_path / "cache").glob("sdk-config-schema-*.checked")
    record.write_bytes(b"Draft7Validator\n0.0\nsomething else\n")  # not this schema's
    _build._CHECKED_SCHEMAS.clear()
    validate(_org_config("d"))
    assert len(schema_self_checks) == 2


def test_without_a_cache_folder_the_schema_is_checked_once_per_process(
    schema_self_checks, monkeypatch
):
    monkeypatch.setattr(_build, "cache_folder", lambda: None)
    validate = _sdk_validation()
    for team in ("a", "b"):
        validate(_org_config(team))
    assert len(schema_self_checks) == 1


@pytest.mark.parametrize(
    "change",
    [
        {"EnableNetworkIsolation": "yes"},
        {"EnableNetworkIsolation": 1},
        {"Tags": [{"Key": "k"}]},
        {"NoSuchOption": True},
    ],
)
def test_a_config_is_refused_with_the_sdks_own_error(schema_self_checks, change):
    import sagemaker.config.config as sdk_config

    config = _org_config("x")
    config["SageMaker"]["TrainingJob"].update(change)
    with pytest.raises(jsonschema.ValidationError) as ours:
        _sdk_validation()(config)
    with pytest.raises(jsonschema.ValidationError) as sdks:  # jsonschema.validate, as the SDK does
        jsonschema.validate(config, sdk_config.SAGEMAKER_PYTHON_SDK_CONFIG_SCHEMA)
    assert (ours.value.message, list(ours.value.absolute_path)) == (
        sdks.value.message,
        list(sdks.value.absolute_path),
    )


def test_a_plan_uses_the_remembered_schema_check():
    import sagemaker.config.config as sdk_config

    safe_estimators.plan(JOB)
    once = sdk_config.validate_sagemaker_config  # once per content, over ...
    # ... the remembered check
    assert once.__wrapped__.__module__ == "safe_estimators._targets.estimator"
    assert once.__wrapped__.__wrapped__.__module__ == "sagemaker.config.config"


def test_an_sdk_validation_of_other_code_runs_as_it_is():
    def stricter(sagemaker_config=None):  # e.g. a future SDK with format checks
        jsonschema.validate(sagemaker_config, {}, format_checker=jsonschema.FormatChecker())

    assert _build._schema_checked_once(stricter) is stricter


def test_boto3s_default_session_reads_the_models_the_sdk_parsed(monkeypatch):
    from sagemaker.jumpstart import constants

    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    _build._share_parsed_models_with_boto3_default()
    default = boto3.DEFAULT_SESSION
    assert default is not None
    sdk_loader = constants.DEFAULT_JUMPSTART_SAGEMAKER_SESSION.boto_session._session.get_component(
        "data_loader"
    )
    assert default._session.get_component("data_loader") is sdk_loader
    # Otherwise the session boto3.client would have made: same region and credentials chain.
    assert default.region_name == boto3.Session().region_name
    assert default.client("sagemaker").meta.region_name == default.region_name


def test_a_default_session_the_user_made_is_left_alone(monkeypatch):
    mine = boto3.Session(region_name="eu-west-1")
    loader = mine._session.get_component("data_loader")
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", mine)
    _build._share_parsed_models_with_boto3_default()
    assert boto3.DEFAULT_SESSION is mine
    assert mine._session.get_component("data_loader") is loader


def test_an_unusable_aws_profile_is_met_where_the_sdk_meets_it(monkeypatch):
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    monkeypatch.setenv("AWS_PROFILE", "no-such-profile-anywhere")
    _build._share_parsed_models_with_boto3_default()  # no exception from here
    assert boto3.DEFAULT_SESSION is None
