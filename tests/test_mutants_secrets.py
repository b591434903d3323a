"""The secrets policy's messages, word for word, and each way a finding is kept or dropped.

Written against the mutants ``./dev mutate`` left alive in ``_secrets``: each test pins what a
user reads (the message and hint of each case: a spec file's literal, a value passed in
Python, an S3 URI with a password, each option's wording) or which findings reach them
(``accept_exposure`` and the option filter when a malformed entry keeps the rules from the
others). All credentials are fabricated.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from safe_estimators._commands.validate import validate_file
from safe_estimators._resolve import check_arguments
from safe_estimators._secrets import is_secret_problem, secrets_in

A = "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
HUB = "hf_" + A  # 39 characters
GITHUB = "ghp_" + A  # 40 characters
BASE = {
    "estimator": "pytorch",
    "entry_point": "train.py",
    "instance_type": "ml.p3.2xlarge",
    "framework_version": "2.0",
    "py_version": "py310",
    "check_script": False,
}
EXPOSED = (
    "DescribeTrainingJob, the console and CloudTrail show {} in plain text to anyone who may "
    "read the job"
)


def _found(**options: Any) -> list[tuple[str, str, str, str]]:
    _, problems, _ = check_arguments({**BASE, **options})
    return [(p.path, p.severity, p.message, p.hint) for p in problems if is_secret_problem(p)]


def _python_warning(path: str, what: str, shown: str, where: str) -> tuple[str, str, str, str]:
    return (
        path,
        "warning",
        f"looks like {what}: {shown}; {EXPOSED.format(where)}.",
        "store it in AWS Secrets Manager and pass the secret's name or ARN instead (read it in "
        f"the script with boto3); accept_exposure=[{path!r}] accepts the exposure.",
    )


def test_a_token_passed_in_python_is_a_warning_with_the_whole_message():
    assert _found(environment={"HF_TOKEN": HUB}) == [
        _python_warning(
            "environment.HF_TOKEN",
            "a Hugging Face token",
            "'hf_A'… (39 characters)",
            "environment variables",
        )
    ]


@pytest.mark.parametrize(
    ("option", "value", "path", "where"),
    [
        ("hyperparameters", {"token": GITHUB}, "hyperparameters.token", "hyperparameters"),
        ("tags", [{"Key": "k", "Value": GITHUB}], "tags.0.Value", "tags"),
        (
            "distribution",
            {"torch_distributed": {"enabled": True, "token": GITHUB}},
            "distribution.torch_distributed.token",
            "the distribution's options (the SDK sends them as hyperparameters)",
        ),
    ],
)
def test_each_option_says_where_describe_training_job_shows_it(option, value, path, where):
    found = [f for f in _found(**{option: value}) if f[0] == path]
    assert found == [_python_warning(path, "a GitHub token", "'ghp_'… (40 characters)", where)]


@pytest.mark.parametrize(
    ("option", "where"),
    [
        ("container_arguments", "container arguments"),
        ("container_entry_point", "the container entry point"),
        ("some_option", "some_option (in the request)"),
    ],
)
def test_secrets_in_names_the_option_as_the_request_shows_it(option, where):
    found = secrets_in(option, ["--token", GITHUB])
    assert [(p.path, p.severity, p.message, p.hint) for p in found] == [
        _python_warning(f"{option}.1", "a GitHub token", "'ghp_'… (40 characters)", where)
    ]


def test_secrets_in_leaves_out_accepted_paths_and_finds_nothing_in_plain_values():
    assert secrets_in("environment", {"TOKEN": GITHUB}, ("environment.TOKEN",)) == []
    assert secrets_in("environment", {"NCCL_DEBUG": "WARN", "EPOCHS": "3"}) == []


def test_an_s3_uri_with_a_password_is_an_error_showing_user_and_host_only():
    assert _found(output_path="s3://me:hunter22@bucket/out") == [
        (
            "output_path",
            "error",
            "looks like a password in a URL: 's3://me:h…@bucket/out'. S3 URIs take no user or "
            "password: the SDK reads what stands before the bucket as part of its name, which "
            "S3 refuses.",
            "write s3://bucket/prefix; the job's role gives it access to the bucket.",
        )
    ]


def test_an_s3_uri_in_capitals_is_an_s3_uri():
    [(path, severity, message, _)] = _found(output_path="S3://me:hunter22@bucket/out")
    assert (path, severity) == ("output_path", "error")
    assert "S3 URIs take no user or password" in message


def test_another_url_with_a_password_is_a_warning_that_shows_its_scheme_user_and_host():
    url = "postgres://admin:s3cr3tP4ss@db.example.com:5432/app"
    assert _found(environment={"DB": url}) == [
        _python_warning(
            "environment.DB",
            "a password in a URL",
            "'postgres://admin:s3…@db.example.com:5432/app'",
            "environment variables",
        )
    ]


def _spec(folder: Path, **options: Any) -> str:
    (folder / "train.py").write_text("print('training')\n")
    job = {
        "estimator": "huggingface",
        "entry_point": "train.py",
        "instance_type": "ml.g5.2xlarge",
        "transformers_version": "4.36.0",
        "pytorch_version": "2.1.0",
        "py_version": "py310",
        **options,
    }
    path = folder / "job.json"
    path.write_text(json.dumps(job))
    return str(path)


def test_a_spec_files_literal_is_an_error_with_the_whole_message(tmp_path):
    found = validate_file(_spec(tmp_path, hyperparameters={"epochs": 1, "password": 12345678}))
    assert [(p.path, p.severity, p.message, p.hint) for p in found] == [
        (
            "hyperparameters.password",
            "error",
            "looks like a password (by its name): '1'… (8 characters), written in the spec "
            "file: it is in the repository for everyone who can read it, and "
            f"{EXPOSED.format('hyperparameters')}.",
            "revoke it; store it in AWS Secrets Manager and pass the secret's name or ARN (read "
            "it in the script with boto3), or pass a value read at run time from Python; "
            "accept_exposure: [hyperparameters.password] accepts the exposure.",
        )
    ]


def test_a_git_config_token_written_in_a_spec_file_is_reported(tmp_path):
    # Passed in Python it is the SDK's documented use (test_secrets_policy); written in the
    # file it is in the repository.
    git = {"repo": "https://github.com/org/repo.git", "token": HUB}
    found = [p for p in validate_file(_spec(tmp_path, git_config=git)) if is_secret_problem(p)]
    assert [(p.path, p.severity) for p in found] == [("git_config.token", "error")]
    # The SDK clones the repository here: the token never reaches the job's description.
    assert "DescribeTrainingJob" not in found[0].message
    assert "only to clone the repository on this machine" in found[0].message
    assert "written in the spec file" in found[0].message


# --- a malformed entry keeps the rules from an option: the same scan on the arguments -------


def test_accept_exposure_holds_beside_a_malformed_entry():
    environment = {"BAD": [1], "HF_TOKEN": HUB}
    assert [f[0] for f in _found(environment=environment)] == ["environment.HF_TOKEN"]
    assert _found(environment=environment, accept_exposure=["environment.HF_TOKEN"]) == []


def test_a_malformed_entry_reports_the_other_options_secrets_once():
    found = _found(environment={"BAD": [1]}, hyperparameters={"token": GITHUB})
    assert [f[0] for f in found] == ["hyperparameters.token"]


def test_a_malformed_entry_leaves_options_that_hold_no_job_value_unscanned():
    # model, check_script and the rest are read by safe_estimators, never sent.
    found = _found(environment={"BAD": [1]}, model={"parameters": "7B", "token": GITHUB})
    assert found == []


def test_with_no_spec_at_all_the_arguments_are_still_scanned():
    found = _found(hyperparameters=5, distribution={"torch_distributed": {"password": "hunter22"}})
    assert [(f[0], f[1]) for f in found] == [("distribution.torch_distributed.password", "warning")]


def test_an_accepted_key_leaves_the_next_one_in_the_same_option_reported():
    environment = {"A_TOKEN": GITHUB, "B_TOKEN": GITHUB, "C_TOKEN": GITHUB}
    found = _found(environment=environment, accept_exposure=["environment.A_TOKEN"])
    assert [f[0] for f in found] == ["environment.B_TOKEN", "environment.C_TOKEN"]
