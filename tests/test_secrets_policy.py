"""The secrets policy on the jobs Hugging Face and AWS publish: a Hub token read at run time
and passed in Python (``HfFolder.get_token()``) builds, with a warning and the Secrets Manager
fix; the same token written in a spec file is an error; ``accept_exposure`` accepts one key;
and what is printed stays masked in every case, nested values included.

Issue 27 counts seven published jobs (philschmid's llm-sagemaker-sample and workshop series,
two archived AWS generative-AI samples): the token in ``environment["HF_TOKEN"]`` (2),
``hyperparameters["hub_token"]`` (3) or ``hyperparameters["hf_token"]`` (2). Their three
shapes are below, with a fabricated token.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import safe_estimators
from safe_estimators import ConfigError
from safe_estimators._commands.validate import validate_file

SCRIPT = str(Path(__file__).parent / "fixtures" / "jobs" / "train.py")
TOKEN = "hf_" + "Xy9" * 12  # what HfFolder.get_token() returns: fabricated
PUBLISHED = [("environment", "HF_TOKEN"), ("hyperparameters", "hub_token"),
             ("hyperparameters", "hf_token")]  # fmt: skip
JOB: dict[str, Any] = {
    "entry_point": SCRIPT,
    "instance_type": "ml.g5.2xlarge",
    "transformers_version": "4.36.0",
    "pytorch_version": "2.1.0",
    "py_version": "py310",
}


def _hidden(text: str) -> bool:
    return TOKEN[4:] not in text and "Xy9Xy9" not in text


@pytest.mark.parametrize(("where", "key"), PUBLISHED)
def test_a_token_read_at_run_time_builds_with_a_warning(where, key, role, sagemaker_session):
    est = safe_estimators.huggingface(
        **JOB, role=role, sagemaker_session=sagemaker_session, **{where: {key: TOKEN}}
    )
    if where == "environment":
        assert est.environment[key] == TOKEN  # sent as given: the job runs
    else:
        assert est.hyperparameters()[key] == json.dumps(TOKEN)
    warned = [w for w in safe_estimators.explain(est).warnings if "looks like" in w.message]
    assert [(w.path, w.severity) for w in warned] == [(f"{where}.{key}", "warning")]
    assert "a Hugging Face token" in warned[0].message
    assert "Secrets Manager" in warned[0].hint
    assert f"accept_exposure=['{where}.{key}']" in warned[0].hint
    assert _hidden(str(warned[0]))


@pytest.mark.parametrize(("where", "key"), PUBLISHED)
def test_accept_exposure_names_the_key_and_the_warning_goes(where, key, role, sagemaker_session):
    est = safe_estimators.huggingface(
        **JOB,
        role=role,
        sagemaker_session=sagemaker_session,
        accept_exposure=[f"{where}.{key}"],
        **{where: {key: TOKEN}},
    )
    assert [w for w in safe_estimators.explain(est).warnings if "looks like" in w.message] == []
    assert "accept_exposure" not in est.hyperparameters()


def _spec(folder: Path, **options: Any) -> Path:
    (folder / "train.py").write_text("print('training')\n")
    data = {**JOB, "estimator": "huggingface", "entry_point": "train.py", **options}
    path = folder / "job.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(("where", "key"), PUBLISHED)
def test_the_same_token_written_in_a_spec_file_is_an_error(where, key, tmp_path):
    found = validate_file(str(_spec(tmp_path, **{where: {key: TOKEN}})))
    assert [(p.path, p.severity) for p in found] == [(f"{where}.{key}", "error")]
    assert "written in the spec file" in found[0].message and "revoke it" in found[0].hint
    assert _hidden(str(found[0]))


def test_a_spec_file_with_the_token_passed_from_python_builds_with_a_warning(
    tmp_path, role, sagemaker_session
):
    path = _spec(tmp_path)
    est = safe_estimators.build(
        path, environment={"HF_TOKEN": TOKEN}, role=role, sagemaker_session=sagemaker_session
    )
    assert est.environment["HF_TOKEN"] == TOKEN
    paths = [w.path for w in safe_estimators.explain(est).warnings if "looks like" in w.message]
    assert paths == ["environment.HF_TOKEN"]


@pytest.mark.parametrize(
    "environment",
    [
        {"ARGS": ["--hub_token", TOKEN]},
        {"CONFIG": {"password": "Xy9Xy9Xy9Xy9"}},
        {"CONFIG": {"nested": [{"Key": "hf_token", "Value": TOKEN}]}},
    ],
)
def test_a_nested_value_in_a_type_error_is_masked(environment, role, sagemaker_session):
    with pytest.raises(ConfigError) as caught:
        safe_estimators.huggingface(
            **JOB, role=role, sagemaker_session=sagemaker_session, environment=environment
        )
    assert "expected str" in str(caught.value)
    assert _hidden(str(caught.value))


def test_a_plan_prints_an_accepted_token_masked_and_sends_it_whole(tmp_path):
    path = _spec(
        tmp_path,
        role="arn:aws:iam::111122223333:role/SageMakerRole",
        environment={"HF_TOKEN": TOKEN},
        hyperparameters={"db_password": "Xy9Xy9Xy9Xy9"},
        accept_exposure=["environment.HF_TOKEN", "hyperparameters.db_password"],
    )
    planned = safe_estimators.plan(path)
    assert planned.request["Environment"]["HF_TOKEN"] == TOKEN
    for shown in (str(planned), planned.to_json(), planned._repr_markdown_()):
        assert _hidden(shown)
        assert "'hf_X'" in shown and "(39 characters)" in shown


def test_a_git_config_token_passed_in_python_is_the_sdks_documented_use():
    from safe_estimators._resolve import check_arguments

    git = {"repo": "https://github.com/org/repo.git", "token": TOKEN}
    options = {**JOB, "estimator": "huggingface", "check_script": False, "git_config": git}
    _, problems, _ = check_arguments(options)
    assert [p for p in problems if "looks like" in p.message] == []
