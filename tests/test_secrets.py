"""Secrets in hyperparameters and environment: every fabricated credential is caught, none of
the benign look-alikes is flagged, and no message prints more than a secret's first characters.

All credentials below are fabricated: they have the issuers' formats and belong to nobody.
"""

from __future__ import annotations

from typing import Any

import pytest
from sdk_generations import ParameterString

from safe_estimators._problems import Problem
from safe_estimators._resolve import check_arguments

A = "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"  # 36 characters
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THs"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzzzzzzzzzz"

# (where, key, value): each must be reported at its path.
FABRICATED: list[tuple[str, str, Any]] = [
    ("environment", "GITHUB_TOKEN", "ghp_" + A),
    ("environment", "CI", "github_pat_11ABCDEFG0_" + A + A),
    ("environment", "OPENAI_KEY", "sk-proj-" + A),
    ("environment", "LLM", "sk-ant-api03-" + A),
    ("environment", "SLACK_BOT_TOKEN", "xoxb-123456789012-" + A[:24]),
    ("environment", "NOTIFY", "https://hooks.slack.com/services/T0ABCDEFG/B0ABCDEFG/" + A[:24]),
    ("environment", "AUTHORIZATION", "Bearer " + JWT),
    ("environment", "SESSION", JWT),
    ("environment", "GITLAB", "glpat-" + A[:20]),
    ("environment", "REGISTRY", "npm_" + A),
    ("environment", "PAYMENTS", "sk_live_" + A[:24]),
    (
        "environment",
        "STORAGE",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey="
        + A
        + "==;EndpointSuffix=core.windows.net",
    ),
    ("environment", "SIGNING", "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF..."),
    ("environment", "DEPLOY", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk..."),
    ("environment", "DATABASE_URL", "postgres://admin:s3cr3tP4ss@db.example.com:5432/app"),
    ("environment", "AWS_ACCESS_KEY_ID", "AKIAZZZZZZZZZZZZZZZZ"),
    ("environment", "AWS_SECRET_ACCESS_KEY", AWS_SECRET),
    ("environment", "PGPASSWORD", "hunter2"),
    ("environment", "GH_PAT", "abcdef0123456789"),
    ("environment", "GOOGLE", "AIza" + A[:35]),
    ("environment", "HF_TOKEN", "hf_" + A),
    ("environment", "WANDB_API_KEY", "0123456789abcdef0123456789abcdef01234567"),
    ("environment", "MY_SERVICE_API_KEY", "abc123def456"),
    ("environment", "CLIENT_SECRET", "x7f2k9q1"),
    ("hyperparameters", "dbPassword", "correct-horse"),
    ("hyperparameters", "passphrase", "open sesame"),
    ("hyperparameters", "token", "abcdef123456"),
    ("hyperparameters", "password", 12345678),
    ("hyperparameters", "hub_token", "hf_" + A),
    ("hyperparameters", "api-key", "sk-" + A),
    ("hyperparameters", "comet_api_key", "k" * 25),
]
# Nested values and pipeline parameters: (spec options, the path reported).
NESTED: list[tuple[dict[str, Any], str]] = [
    ({"hyperparameters": {"args": ["--hub_token", "hf_" + A]}}, "hyperparameters.args.1"),
    ({"hyperparameters": {"args": ["--password=hunter22"]}}, "hyperparameters.args.0"),
    (
        {"hyperparameters": {"wandb": {"api_key": "0123456789abcdef" * 2}}},
        "hyperparameters.wandb.api_key",
    ),
    (
        {"hyperparameters": {"token": ParameterString("Token", default_value="ghp_" + A)}},
        "hyperparameters.token",
    ),
    # An AWS secret key under a name that does not say so, beside its access key id.
    ({"environment": {"ID": "ASIAZZZZZZZZZZZZZZZZ", "VALUE": AWS_SECRET}}, "environment.VALUE"),
]

BENIGN: list[tuple[str, str, Any]] = [
    ("environment", "HF_TOKEN_SECRET_NAME", "prod/hf-token"),
    ("environment", "SECRET_ID", "arn:aws:secretsmanager:us-west-2:111122223333:secret:hf-AbC"),
    ("environment", "DB_SECRET_ARN", "arn:aws:secretsmanager:us-west-2:111122223333:secret:db"),
    ("environment", "secret_name", "my-secret"),
    ("environment", "TOKEN_ENV_VAR", "HF_TOKEN"),
    ("environment", "DATABASE_URL", "postgres://app:${DB_PASSWORD}@db:5432/app"),
    ("environment", "MLFLOW_TRACKING_URI", "https://mlflow.example.com:5000"),
    ("environment", "AUTH_TYPE", "bearer"),
    ("environment", "KMS_KEY_ID", "arn:aws:kms:us-west-2:111122223333:key/1234abcd"),
    ("hyperparameters", "use_auth_token", "True"),
    ("hyperparameters", "use_auth_token_flag", True),
    ("hyperparameters", "password_file", "/opt/ml/input/secrets/pw"),
    ("hyperparameters", "credentials_path", "/root/.aws/credentials"),
    ("hyperparameters", "private_key_path", "/opt/keys/id_rsa"),
    ("hyperparameters", "api_key_header", "X-Api-Key"),
    ("hyperparameters", "model_name_or_path", "sshleifer/tinyDistilbertBaseCasedDistil1"),
    ("hyperparameters", "revision", "3f786850e387550fdab836ed7e6dc881de23001b"),
    ("hyperparameters", "pad_token", "[PAD]"),
    ("hyperparameters", "eos_token", "</s>"),
    ("hyperparameters", "bos_token", "<s>"),
    ("hyperparameters", "max_tokens", 512),
    ("hyperparameters", "num_tokens", 1024),
    ("hyperparameters", "pad_token_id", 0),
    ("hyperparameters", "tokenizer_name", "bert-base-uncased"),
    ("hyperparameters", "token_budget", 0.5),
    ("hyperparameters", "sort_key", "length"),
    ("hyperparameters", "s3_key", "data/train.csv"),
    ("hyperparameters", "run_name", "sk-learn-baseline"),
    ("hyperparameters", "learning_rate", 0.0004),
    ("hyperparameters", "args", ["--lr", "-1", "--epochs", "3"]),
]

BASE = {
    "estimator": "pytorch",
    "entry_point": "train.py",
    "instance_type": "ml.p3.2xlarge",
    "framework_version": "2.0",
    "py_version": "py310",
    "check_script": False,
}


def _secret_problems(**options: Any) -> list[Problem]:
    _, problems, _ = check_arguments({**BASE, **options})
    return [p for p in problems if "looks like" in p.message]


def _one_each(cases: list[tuple[str, str, Any]]) -> dict[str, dict[str, Any]]:
    options: dict[str, dict[str, Any]] = {"hyperparameters": {}, "environment": {}}
    for where, key, value in cases:
        options[where][key] = value if where == "hyperparameters" else str(value)
    return options


def test_every_fabricated_credential_is_caught_at_its_path() -> None:
    found = _secret_problems(**_one_each(FABRICATED))
    caught = {p.path for p in found}
    expected = {f"{where}.{key}" for where, key, _ in FABRICATED}
    assert expected - caught == set()
    assert len(caught) == len(FABRICATED) == 31


@pytest.mark.parametrize(("options", "path"), NESTED)
def test_nested_values_and_pipeline_defaults_are_checked(options: dict[str, Any], path: str):
    assert path in {p.path for p in _secret_problems(**options)}


def test_no_benign_look_alike_is_flagged() -> None:
    flagged = [str(p) for p in _secret_problems(**_one_each(BENIGN))]
    assert flagged == []
    assert len(BENIGN) == 30


def test_no_message_prints_a_secret_beyond_its_first_characters() -> None:
    found = _secret_problems(**_one_each(FABRICATED))
    text = "\n".join(str(p) for p in found)
    for _, _, value in FABRICATED:
        value = str(value)
        assert value not in text
        if "://" in value and "@" in value:  # a URL shows its user and host, not the password
            value = value.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]
        assert value[len(value) // 5 + 1 :][:8] not in text
    assert "'ghp_'… (40 characters)" in text


def test_one_malformed_entry_does_not_hide_the_secrets_in_the_others() -> None:
    _, problems, _ = check_arguments(
        {**BASE, "environment": {"BAD": [1, 2], "PASSWORD": 12345678, "HF": "hf_" + A}}
    )
    paths = {p.path: p.message for p in problems}
    assert "environment.BAD" in paths
    assert "looks like" in paths["environment.HF"]
    # The malformed secret is reported without its value.
    assert "12345678" not in "\n".join(str(p) for p in problems)
