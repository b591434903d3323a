"""The secrets policy's messages, word for word, and each way a finding is kept or dropped.

Written against the mutants ``./dev mutate`` left alive in ``_secrets``: each test pins what a
user reads (the message and hint of each case: a spec file's literal, a value passed in
Python, an S3 URI with a password, each option's wording) or which findings reach them
(``accept_exposure`` and the option filter when a malformed entry keeps the rules from the
others). All credentials are fabricated.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import Any

import pytest
from secrets_corpus import CREDENTIALS

from safe_estimators import _secret_formats
from safe_estimators._commands.validate import validate_file
from safe_estimators._resolve import check_arguments
from safe_estimators._secret_formats import (
    _KEY,
    SpecFileFloat,
    SpecFileInt,
    SpecFileText,
    accepted_paths,
    dotted,
    find_secrets,
    find_suspects,
    find_suspects_in,
    find_tokens,
    is_accepted,
    mark_spec_file_secrets,
    mask_text,
    mask_values_in,
    masked,
    masked_plain,
    redacted,
    redacted_if_secret,
    secret_kind,
    secret_name,
)
from safe_estimators._secrets import is_secret_problem, secrets_in


@pytest.fixture(autouse=True)
def _cold_memos() -> None:
    """Each test computes what it asserts, as a fresh process does: the memos of
    ``_secret_formats`` keep answers across tests, and under ``./dev mutate`` a mutant's
    process inherits those its timing run kept, the unmutated ones."""
    for memo in (
        _secret_formats._memo_secret_name,
        _secret_formats._memo_value_kind,
        _secret_formats._memo_secret_kind,
    ):
        memo.cache_clear()
    for table in (
        _secret_formats._TEXT_ENTRIES,
        _secret_formats._NUMBER_ENTRIES,
        _secret_formats._NAME_TOKENS,
    ):
        table.clear()


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


def test_a_flags_value_is_an_error_written_in_a_spec_file_and_a_warning_passed_in_python(
    tmp_path,
):
    arguments = {"args": ["--password=hunter22", "--lr", "0.1"]}
    found = validate_file(_spec(tmp_path, hyperparameters=arguments))
    assert [(p.path, p.severity, p.message, p.hint) for p in found] == [
        (
            "hyperparameters.args.0",
            "error",
            "looks like a secret (by its name): 'h'… (8 characters), written in the spec "
            "file: it is in the repository for everyone who can read it, and "
            f"{EXPOSED.format('hyperparameters')}.",
            "revoke it; store it in AWS Secrets Manager and pass the secret's name or ARN (read "
            "it in the script with boto3), or pass a value read at run time from Python; "
            "accept_exposure: [hyperparameters.args.0] accepts the exposure.",
        )
    ]
    assert _found(hyperparameters=arguments) == [
        _python_warning(
            "hyperparameters.args.0",
            "a secret (by its name)",
            "'h'… (8 characters)",
            "hyperparameters",
        )
    ]


def test_a_git_config_token_written_in_a_spec_file_is_reported(tmp_path):
    # Passed in Python it is the SDK's documented use (test_secrets_policy); written in the
    # file it is in the repository.
    git = {"repo": "https://github.com/org/repo.git", "token": HUB}
    found = [p for p in validate_file(_spec(tmp_path, git_config=git)) if is_secret_problem(p)]
    # The SDK clones the repository here: the token never reaches the job's description.
    assert [(p.path, p.severity, p.message) for p in found] == [
        (
            "git_config.token",
            "error",
            "looks like a Hugging Face token: 'hf_A'… (39 characters), written in the spec "
            "file: it is in the repository for everyone who can read it (the SDK uses it only "
            "to clone the repository on this machine).",
        )
    ]


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


# --- _secret_formats: what is found in a text, and how a text is shown ----------------------
# Written against the mutants ./dev mutate makes of _secret_formats: each table pins what a
# user would notice (the kind named, the part hidden, the text printed) at the edges of each
# format and of each way a value is walked.

R = "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"  # 36 characters, mixed case and digits
AWS_ID = "AKIAZZZZZZZZZZZZZZZZ"
AWS_SECRET = "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"

# (text, the tokens found: kind, start, end, what mask_text prints)
TEXTS: list[tuple[str, list[tuple[str, int, int]], str]] = [
    # the shortest token of all (a Slack token: 15 characters) and one character less
    ("xoxb-1-abcdefgh", [("a Slack token", 0, 15)], "xox…"),
    ("xoxb-1-abcdefg", [], "xoxb-1-abcdefg"),
    # found from "Q~": the 4 characters before it belong to the secret, 3 alone do not make one
    ("pre abc8Q~" + R[:31], [("an Azure client secret", 4, 41)], "pre abc8…"),
    ("abc8Q~" + R[:31], [("an Azure client secret", 0, 37)], "abc8…"),
    ("ab8Q~" + R[:31], [], "ab8Q~" + R[:31]),
    # found from ":AA": the bot's id, at most 10 digits of it
    ("1234567890:AA" + R[:33], [("a Telegram bot token", 0, 46)], "1234…"),
    ("bot 12345678:AA" + R[:33], [("a Telegram bot token", 4, 48)], "bot 1234…"),
    ("id=01234567890123456789:AA" + R[:33], [("a Telegram bot token", 13, 59)],
     "id=01234567890123…"),
    # found from ".atlasv1.": the 14 characters before it
    ("AbCdEfGhIjKlMn.atlasv1." + R[:20], [("a Terraform Cloud token", 0, 43)], "AbCd…"),
    ("xAbCdEfGhIjKlMn.atlasv1." + R[:20], [("a Terraform Cloud token", 1, 44)], "xAbCd…"),
    # a private key runs to its END line's dashes, or to the end of the text
    ("-----BEGIN RSA PRIVATE KEY-----\nabc", [("a private key", 0, 35)], "----…"),
    ("-----BEGIN RSA PRIVATE KEY-----\nabc\n-----END RSA PRIVATE KEY----- tail",
     [("a private key", 0, 65)], "----… tail"),
    ("-----BEGIN RSA PRIVATE KEY-----\nabc\n-----END RSA", [("a private key", 0, 48)], "----…"),
    ("-----BEGIN A PRIVATE KEY-----\nx\n-----END A PRIVATE KEY----- mid "
     "-----BEGIN B PRIVATE KEY-----\ny\n-----END B PRIVATE KEY-----",
     [("a private key", 0, 59), ("a private key", 64, 123)], "----… mid ----…"),
    # a bot id of 9 digits at the start of the text
    ("123456789:AA" + R[:33], [("a Telegram bot token", 0, 45)], "1234…"),
    # a run name that shares the sk- prefix is not a key; a key later in the text still is
    ("sk-learn-random-forest-baseline then sk-" + R, [("an API key (sk-...)", 37, 76)],
     "sk-learn-random-forest-baseline then sk-A…"),
    ("Bearer abcdefghijklmnopqrstuvwxyz", [], "Bearer abcdefghijklmnopqrstuvwxyz"),
    ("sk-learn-random-forest-baseline-v2", [], "sk-learn-random-forest-baseline-v2"),
    ("Bearer AbC123dEf456GhI789jKl0mNo", [("an Authorization header", 0, 32)], "Bear…"),
    # several findings, left to right, whatever finds them
    ("https://u:pw12345678@h.example.com/x ghp_" + R,
     [("a password in a URL", 10, 20), ("a GitHub token", 37, 77)],
     "https://u:pw…@h.example.com/x ghp_…"),
    ("ghp_" + R + " and https://u:pw12345678@h.example.com/x",
     [("a GitHub token", 0, 40), ("a password in a URL", 55, 65)],
     "ghp_… and https://u:pw…@h.example.com/x"),
    ("https://user:Secret12@host/ and https://a:Other987@b/",
     [("a password in a URL", 13, 21), ("a password in a URL", 42, 50)],
     "https://user:S…@host/ and https://a:O…@b/"),
    ("ghp_" + R + " ghp_" + R, [("a GitHub token", 0, 40), ("a GitHub token", 41, 81)],
     "ghp_… ghp_…"),
    # a token runs over every token character after its prefix: one finding, not two
    ("hf_" + R + "ghp_" + R, [("a Hugging Face token", 0, 79)], "hf_A…"),
    ("hf_" + R[:30] + " ghp_" + R,
     [("a Hugging Face token", 0, 33), ("a GitHub token", 34, 74)], "hf_A… ghp_…"),
    # an access key id is exactly 20 characters, not inside a longer word
    (AWS_ID, [("an AWS access key id", 0, 20)], "AKIA…"),
    ("X" + AWS_ID, [], "X" + AWS_ID),
    (AWS_ID + "Z", [], AWS_ID + "Z"),
    # a name's value in a text: quoted as repr writes a mapping, or assigned
    ("key=value token=abc", [], "key=value token=…"),
    ("'password': 'hunter22', 'user': 'bob'", [], "'password': 'h…', 'user': 'bob'"),
    ('"password": "hunter22"', [], '"password": "h…"'),
    ("""{'password': "hunter22", 'token': 'true'}""", [],
     """{'password': "h…", 'token': 'true'}"""),
    ("password=hunter22 user=bob", [], "password=h… user=bob"),
    ("password=hunter22… user=bob", [], "password=hunter22… user=bob"),
    ("api_key=ghp_" + R, [("a GitHub token", 8, 48)], "api_key=ghp_…"),
    ("x_password=/etc/pw", [], "x_password=/etc/pw"),
    ("password=${PW}", [], "password=${PW}"),
    ("password=true", [], "password=true"),
    ("pwd=abcdefghij", [], "pwd=ab…"),
]


@pytest.mark.both_sdks
@pytest.mark.parametrize(("text", "tokens", "shown"), TEXTS)
def test_each_token_is_found_whole_and_shown_cut(text, tokens, shown):
    assert find_tokens(text) == tokens
    assert mask_text(text) == shown


@pytest.mark.both_sdks
def test_every_format_of_the_corpus_is_found_whole_and_named():
    for credential in CREDENTIALS:
        if not credential.by_value or "URI" in credential.format:
            continue
        text = f"x {credential.value} y"
        [(kind, start, end)] = find_tokens(text)
        assert credential.hidden in text[start:end], credential.format
        assert kind == KINDS[credential.format.split(" (")[0]], credential.format
        shown = text[start : start + min(4, (end - start) // 5)]
        if "AccountKey=" in text:  # masked first as a key's assignment
            assert mask_text(text) == text.replace(credential.hidden + "==", "AbCd…")
        else:
            assert mask_text(text) == f"{text[:start]}{shown}…{text[end:]}"


# The kind each corpus format is reported as.
KINDS = {
    "GitHub classic token": "a GitHub token",
    "GitHub OAuth token": "a GitHub token",
    "GitHub app token": "a GitHub token",
    "GitHub fine-grained token": "a GitHub token",
    "AWS access key id": "an AWS access key id",
    "AWS temporary key id": "an AWS access key id",
    "Hugging Face token": "a Hugging Face token",
    "Hugging Face org token": "a Hugging Face token",
    "Slack bot token": "a Slack token",
    "Slack user token": "a Slack token",
    "Slack webhook": "a Slack webhook",
    "Stripe live key": "a Stripe key",
    "Stripe restricted key": "a Stripe key",
    "Google API key": "a Google API key",
    "Google OAuth client secret": "a Google OAuth secret",
    "JSON Web Token": "a JSON Web Token",
    "RSA private key": "a private key",
    "OpenSSH private key": "a private key",
    "PGP private key block": "a private key",
    "Azure storage connection string": "an Azure key",
    "Azure SAS URL": "an Azure SAS signature",
    "Azure client secret": "an Azure client secret",
    "OpenAI project key": "an API key (sk-...)",
    "OpenAI legacy key": "an API key (sk-...)",
    "Anthropic key": "an API key (sk-...)",
    "GitLab token": "a GitLab token",
    "npm token": "an npm token",
    "PyPI token": "a PyPI token",
    "Twilio API key": "a Twilio API key",
    "SendGrid key": "a SendGrid key",
    "Mailgun key": "a Mailgun key",
    "Shopify token": "a Shopify token",
    "DigitalOcean token": "a DigitalOcean token",
    "Databricks token": "a Databricks token",
    "Telegram bot token": "a Telegram bot token",
    "Discord webhook": "a Discord webhook",
    "HashiCorp Vault token": "a HashiCorp Vault token",
    "Terraform Cloud token": "a Terraform Cloud token",
    "Grafana service token": "a Grafana token",
    "Postman key": "a Postman key",
    "Replicate token": "a Replicate token",
    "Groq key": "a Groq key",
    "Notion token": "a Notion token",
    "Supabase token": "a Supabase token",
    "Atlassian token": "an Atlassian token",
    "age secret key": "an age secret key",
    "Dropbox token": "a Dropbox token",
    "Doppler token": "a Doppler token",
    "Mapbox secret token": "a Mapbox secret token",
    "New Relic key": "a New Relic key",
    "Linear key": "a Linear key",
    "Square token": "a Square token",
    "Heroku key": "a Heroku key",
    "Bearer header": "an Authorization header",
    "Basic header": "an Authorization header",
}


@pytest.mark.both_sdks
def test_an_aws_secret_key_counts_only_where_the_context_says_aws():
    assert find_tokens(AWS_SECRET) == []
    assert find_tokens(AWS_SECRET, aws_context=True) == [("an AWS secret access key", 0, 40)]
    # a hash has the shape but not the mix of cases and digits
    assert find_tokens("3f786850e387550fdab836ed7e6dc881de23001b", aws_context=True) == []
    assert find_tokens("x" + AWS_SECRET, aws_context=True) == []
    assert find_tokens(AWS_SECRET[:39], aws_context=True) == []


# (name, a credential's name?, a password's name, for a number?)
NAMES = [
    ("--hub_token", True, False),
    ("hub_token--", True, False),
    ("-", False, False),
    ("", False, False),
    ("password", True, True),
    ("PGPASSWORD", True, True),
    ("dbPassword", True, True),
    ("db-password", True, True),
    ("secret_name", False, False),
    ("api_key_name", False, False),
    ("HF_TOKEN_SECRET_NAME", False, False),
    ("key_name", False, False),
    ("private_key_name", False, False),
    ("token_budget", False, False),
    ("pass_at_k", False, False),
    ("DB_PASS", True, True),
    ("GH_PAT", True, False),
    ("pat_size", False, False),
    ("token_value", True, False),
    ("TOKEN2", True, False),
    ("pad_token", False, False),
    ("max_new_tokens", False, False),
    ("api_key", True, False),
    ("API_KEY", True, False),
    ("sort_key", False, False),
    ("key", False, False),
    ("key_api", False, False),
    ("hf_key", True, False),
    ("key_hf", False, False),
    # a single word ending in a secret's word: longer than 6 letters
    ("atoken", False, False),
    ("abtoken", True, False),
    ("subtoken", False, False),
    ("nosecret", False, False),
    ("xsecret", True, False),
    ("passwd", True, True),
    ("mypasswd", True, True),
    ("pin", False, True),
    ("user_pin", False, True),
    ("pin_code", False, False),
    ("passcode", True, True),
    ("pass_word", False, False),
    ("password_hash", False, False),
    ("token_password", True, True),
    ("creds", True, False),
    ("creds_dir", False, False),
    ("access_token", True, False),
    # an encoding's name after a secret's: one word, as TRAILING_WORDS lists it
    ("SECRET_KEY_B64", True, False),
    ("TOKEN_BASE64", True, False),
    ("password_b64", True, True),
    ("image_base64", False, False),
    ("token_b", False, False),
]


@pytest.mark.both_sdks
@pytest.mark.parametrize(("name", "secret", "numeric"), NAMES)
def test_which_names_say_their_value_is_a_credential(name, secret, numeric):
    assert secret_name(name) is secret
    assert secret_name(name, numeric=True) is numeric


@pytest.mark.both_sdks
def test_a_secret_encoded_in_base64_under_its_name_is_reported():
    # The bug this found: "B64" and "base64" were split into a word and a number, so the names
    # TRAILING_WORDS was written for were never reported.
    assert _found(environment={"SECRET_KEY_B64": "c2VjcmV0dmFsdWUxMjM="}) == [
        _python_warning(
            "environment.SECRET_KEY_B64",
            "a secret (by its name)",
            "'c2Vj'… (20 characters)",
            "environment variables",
        )
    ]


@pytest.mark.both_sdks
def test_a_name_that_is_not_text_names_nothing():
    assert secret_name(5) is False
    assert secret_name(None, numeric=True) is False
    assert secret_name("x" * 300 + "_password") is True  # past the memo's length
    assert secret_name("x" * 300 + "_password_file") is False


# --- the walk: every value of an option, by the name it sits under ---------------------------


class _Parameter:
    """A pipeline parameter as the walk meets one: a default value and ``to_string``."""

    def __init__(self, default: Any) -> None:
        self.default_value = default

    def to_string(self) -> str:
        return "Parameter"


GH = "ghp_" + R


class _Arguments(list):  # type: ignore[type-arg]
    """A list of another type (the walk reads any list or tuple as arguments)."""


def _shown(length: int, first: str = "") -> str:
    return f"{first!r}… ({length} characters)" if first else f"({length} characters)"


# (path, value, (dotted path, kind, redacted form) of each finding, in order)
WALKS: list[tuple[str, Any, list[tuple[str, str, str]]]] = [
    (
        "hp",
        {"token": "abcdef123456", "n": 3, "b": True, "none": None, "password": 12345678,
         "pwd": 1, "pin": 0.5},
        [
            ("hp.token", "a secret (by its name)", _shown(12, "ab")),
            ("hp.password", "a password (by its name)", _shown(8, "1")),
            ("hp.pin", "a password (by its name)", _shown(3)),
        ],
    ),
    # an AWS secret key: beside an access key id (in its mapping or one above), under an AWS
    # name, or nowhere
    (
        "env",
        {"ID": AWS_ID, "VALUE": AWS_SECRET},
        [
            ("env.ID", "an AWS access key id", _shown(20, "AKIA")),
            ("env.VALUE", "an AWS secret access key", _shown(40, "wJal")),
        ],
    ),
    ("env", {"VALUE": AWS_SECRET}, []),
    ("env", {"AWS_SECRET": AWS_SECRET},
     [("env.AWS_SECRET", "an AWS secret access key", _shown(40, "wJal"))]),
    ("env", {"my_secret_access_key": AWS_SECRET},
     [("env.my_secret_access_key", "an AWS secret access key", _shown(40, "wJal"))]),
    (
        "env",
        {"x": {"VALUE": AWS_SECRET}, "ID": AWS_ID},
        [
            ("env.x.VALUE", "an AWS secret access key", _shown(40, "wJal")),
            ("env.ID", "an AWS access key id", _shown(20, "AKIA")),
        ],
    ),
    (
        "env",
        {"x": [AWS_SECRET], "ID": AWS_ID},
        [
            ("env.x.0", "an AWS secret access key", _shown(40, "wJal")),
            ("env.ID", "an AWS access key id", _shown(20, "AKIA")),
        ],
    ),
    (
        "env",
        [AWS_SECRET, AWS_ID],
        [
            ("env.0", "an AWS secret access key", _shown(40, "wJal")),
            ("env.1", "an AWS access key id", _shown(20, "AKIA")),
        ],
    ),
    (
        "env",
        {"a": {"b": {"VALUE": AWS_SECRET}}, "c": {"ID": AWS_ID}},
        [("env.c.ID", "an AWS access key id", _shown(20, "AKIA"))],
    ),
    (
        "env",
        {"a": {"b": {"VALUE": AWS_SECRET}}, "ID": AWS_ID},
        [
            ("env.a.b.VALUE", "an AWS secret access key", _shown(40, "wJal")),
            ("env.ID", "an AWS access key id", _shown(20, "AKIA")),
        ],
    ),
    # a tag: its Key (or Name) names its Value
    (
        "tags",
        [{"Key": "hf_token", "Value": "abcdefgh"}, {"Name": "password", "Value": 1234567}],
        [
            ("tags.0.Value", "a secret (by its name)", _shown(8, "a")),
            ("tags.1.Value", "a password (by its name)", _shown(7, "1")),
        ],
    ),
    ("tags", [{"Key": GH, "Value": "x"}], [("tags.0.Key", "a GitHub token", _shown(40, "ghp_"))]),
    ("tags", [{"Key": "aws_secret", "Value": AWS_SECRET}],
     [("tags.0.Value", "an AWS secret access key", _shown(40, "wJal"))]),
    ("tags", [{"Key": "k", "Value": AWS_SECRET, "Other": AWS_ID}],
     [("tags.0.Value", "an AWS secret access key", _shown(40, "wJal")),
      ("tags.0.Other", "an AWS access key id", _shown(20, "AKIA"))]),
    ("tags", [{"Key": "id", "Value": AWS_ID}],
     [("tags.0.Value", "an AWS access key id", _shown(20, "AKIA"))]),
    ("tags", {"Key": 5, "Value": GH}, [("tags.Value", "a GitHub token", _shown(40, "ghp_"))]),
    ("tags", MappingProxyType({"Key": "token", "Value": "abcdefgh"}),
     [("tags.Value", "a secret (by its name)", _shown(8, "a"))]),
    ("tags", MappingProxyType({"Name": "token", "Value": "abcdefgh"}),
     [("tags.Value", "a secret (by its name)", _shown(8, "a"))]),
    ("tags", MappingProxyType({"Name": "x", "Value": AWS_SECRET, "ID": AWS_ID}),
     [("tags.Value", "an AWS secret access key", _shown(40, "wJal")),
      ("tags.ID", "an AWS access key id", _shown(20, "AKIA"))]),
    # a mapping that is not a dict, a name that is itself a token
    (
        "m",
        MappingProxyType({"token": "abcdefgh", GH: 1}),
        [
            ("m.token", "a secret (by its name)", _shown(8, "a")),
            ("m.ghp_…", "a GitHub token", _shown(40, "ghp_")),
        ],
    ),
    (
        "k",
        {GH: "v", 5: GH, "password=Xk9mP2vL8qR4wT6": 1},
        [
            ("k.ghp_…", "a GitHub token", _shown(40, "ghp_")),
            ("k.5", "a GitHub token", _shown(40, "ghp_")),
            ("k.password=Xk9…", "a secret (by its name)", _shown(24, "pass")),
        ],
    ),
    ("k", {"https://u:Pw12345678@h/": 1}, [("k.https://u:Pw…@h/", "a password in a URL",
                                           _shown(23, "http"))]),
    ("k", {"x": {GH: 2.5}}, [("k.x.ghp_…", "a GitHub token", _shown(40, "ghp_"))]),
    ("k", {"x": {GH: [1]}}, [("k.x.ghp_…", "a GitHub token", _shown(40, "ghp_"))]),
    # command-line arguments: a flag names the value after it, NAME=value names its own
    (
        "args",
        ["--token", "abcdefgh", "--lr", "0.1", "PASSWORD=xyz123", "--password", "a=b",
         "--secret=zzz", "--verbose", "--token=", "token"],
        [
            ("args.1", "a secret (by its name)", _shown(8, "a")),
            ("args.4", "a secret (by its name)", _shown(6, "x")),
            ("args.6", "a secret (by its name)", _shown(3)),
            ("args.7", "a secret (by its name)", _shown(3)),
        ],
    ),
    ("args", ("--token", "abcdefgh"), [("args.1", "a secret (by its name)", _shown(8, "a"))]),
    ("args", ["--token", {"x": "abcdefgh"}], []),
    ("args", ["--token", ["abcdefgh"]], [("args.1.0", "a secret (by its name)", _shown(8, "a"))]),
    ("args", [1, "--password", 12345678], [("args.2", "a password (by its name)", _shown(8, "1"))]),
    ("args", "--lr 0.1 --hub_token abcdefgh",
     [("args", "a secret (by its name)", _shown(29, "--lr"))]),
    ("args", "lr=0.1;password=abcdefgh", [("args", "a secret (by its name)", _shown(24, "lr=0"))]),
    ("args", "--password a=b", [("args", "a secret (by its name)", _shown(14, "--"))]),
    # after a flag with its value, and after a plain value, a value is named by the list's name
    ("hp", {"password": ["--lr=0.1", "abcdefgh"]},
     [("hp.password.1", "a secret (by its name)", _shown(8, "a"))]),
    ("hp", {"password": ["abcd", "efghijkl"]},
     [("hp.password.0", "a secret (by its name)", _shown(4)),
      ("hp.password.1", "a secret (by its name)", _shown(8, "e"))]),
    # mpirun -x NAME=value; a flag's value that holds "="
    ("args", ["-x", "HF_TOKEN=abcdefgh"], [("args.1", "a secret (by its name)", _shown(8, "a"))]),
    ("args", ["--password=ab=cdefg"], [("args.0", "a secret (by its name)", _shown(8, "a"))]),
    ("args", ["--password", "HF_X=abcdefgh"],
     [("args.1", "a secret (by its name)", _shown(13, "HF"))]),
    # a pipeline parameter is judged by its default
    ("p", _Parameter(GH), [("p", "a GitHub token", _shown(40, "ghp_"))]),
    ("p", {"token": _Parameter("abcdefgh")},
     [("p.token", "a secret (by its name)", _shown(8, "a"))]),
    ("p", [_Parameter(GH)], [("p.0", "a GitHub token", _shown(40, "ghp_"))]),
    ("p", {"x": _Parameter(None)}, []),
    ("p", {"x": _Parameter({"token": "abcdefgh"})},
     [("p.x.token", "a secret (by its name)", _shown(8, "a"))]),
    # a plain value under the path's own name
    ("", GH, [("", "a GitHub token", _shown(40, "ghp_"))]),
    ("", {"a": GH}, [("a", "a GitHub token", _shown(40, "ghp_"))]),
    ("x", 12345678, []),
    ("password", 12345678, [("password", "a password (by its name)", _shown(8, "1"))]),
    ("password", 1.5, [("password", "a password (by its name)", _shown(3))]),
    ("password", "1", []),
    ("password", 1, []),
    ("password", True, []),
    ("password", None, []),
    ("password", b"abcdefgh", []),
    ("hp", {"password": 0, "pin": 1.0, "pwd": "0", "passcode": "no"},
     [("hp.pin", "a password (by its name)", _shown(3))]),
    # long names and values, past the memos' lengths
    ("hp", {"x" * 300 + "_token": "abcdefgh"},
     [("hp." + "x" * 300 + "_token", "a secret (by its name)", _shown(8, "a"))]),
    ("hp", {"token": "a" * 300}, [("hp.token", "a secret (by its name)", _shown(300, "aaaa"))]),
    ("hp", {"x": "y" * 300 + " " + GH}, [("hp.x", "a GitHub token", _shown(341, "yyyy"))]),
    ("hp", {"x" * 300 + "_password": 5}, [("hp." + "x" * 300 + "_password",
                                          "a password (by its name)", _shown(1))]),
    ("hp", {("t",): GH}, [("hp.('t',)", "a GitHub token", _shown(40, "ghp_"))]),
    ("hp", {"token": 12345678, "n": 5}, []),  # a token is never a bare number
    # a tag whose value is a container; a tag in an AWS context
    ("tags", {"Key": "token", "Value": ["abcdefgh"]},
     [("tags.Value.0", "a secret (by its name)", _shown(8, "a"))]),
    ("tags", {"Key": "token", "Value": None}, []),
    ("env", {"tag": {"Key": "k", "Value": AWS_SECRET}, "ID": AWS_ID},
     [("env.tag.Value", "an AWS secret access key", _shown(40, "wJal")),
      ("env.ID", "an AWS access key id", _shown(20, "AKIA"))]),
    ("env", [{"Key": "k", "Value": AWS_SECRET}, AWS_ID],
     [("env.0.Value", "an AWS secret access key", _shown(40, "wJal")),
      ("env.1", "an AWS access key id", _shown(20, "AKIA"))]),
    ("env", {"ID": AWS_ID, "x": [{"Key": "k", "Value": AWS_SECRET}]},
     [("env.ID", "an AWS access key id", _shown(20, "AKIA")),
      ("env.x.0.Value", "an AWS secret access key", _shown(40, "wJal"))]),
    ("env", {"ID": AWS_ID, "x": {"Name": "v", "Value": AWS_SECRET}},
     [("env.ID", "an AWS access key id", _shown(20, "AKIA")),
      ("env.x.Value", "an AWS secret access key", _shown(40, "wJal"))]),
    ("env", {"ID": AWS_ID, "x": {"Key": "v", "Value": "plain"}},
     [("env.ID", "an AWS access key id", _shown(20, "AKIA"))]),
    ("env", {"ID": AWS_ID, "t": {"Key": "k", "Value": [AWS_SECRET]}},
     [("env.ID", "an AWS access key id", _shown(20, "AKIA")),
      ("env.t.Value.0", "an AWS secret access key", _shown(40, "wJal"))]),
    ("env", {"t": {"Key": "k", "Value": [AWS_SECRET, AWS_ID]}},
     [("env.t.Value.0", "an AWS secret access key", _shown(40, "wJal")),
      ("env.t.Value.1", "an AWS access key id", _shown(20, "AKIA"))]),
    ("env", {"tag": {"Key": "AWS_SECRET_ACCESS_KEY_OF_THE_PRODUCTION_ACCOUNT", "Value": "x"}},
     []),
    # an AWS context reaches every container under it
    ("env", {"ID": AWS_ID, "x": {"y": {"VALUE": AWS_SECRET}}},
     [("env.ID", "an AWS access key id", _shown(20, "AKIA")),
      ("env.x.y.VALUE", "an AWS secret access key", _shown(40, "wJal"))]),
    ("env", {"ID": AWS_ID, "x": [[AWS_SECRET]]},
     [("env.ID", "an AWS access key id", _shown(20, "AKIA")),
      ("env.x.0.0", "an AWS secret access key", _shown(40, "wJal"))]),
    ("env", {"ID": AWS_ID, "x": MappingProxyType({"V": AWS_SECRET})},
     [("env.ID", "an AWS access key id", _shown(20, "AKIA")),
      ("env.x.V", "an AWS secret access key", _shown(40, "wJal"))]),
    ("env", (AWS_ID, AWS_SECRET),
     [("env.0", "an AWS access key id", _shown(20, "AKIA")),
      ("env.1", "an AWS secret access key", _shown(40, "wJal"))]),
    ("env", _Arguments([AWS_ID, AWS_SECRET]),
     [("env.0", "an AWS access key id", _shown(20, "AKIA")),
      ("env.1", "an AWS secret access key", _shown(40, "wJal"))]),
    ("env", {"x": _Arguments(["--token", "abcdefgh"])},
     [("env.x.1", "a secret (by its name)", _shown(8, "a"))]),
    ("env", {"ID": AWS_ID, 5: AWS_SECRET},
     [("env.ID", "an AWS access key id", _shown(20, "AKIA")),
      ("env.5", "an AWS secret access key", _shown(40, "wJal"))]),
    ("env", {"ID": AWS_ID, "p": None, "b": True, "v": AWS_SECRET},
     [("env.ID", "an AWS access key id", _shown(20, "AKIA")),
      ("env.v", "an AWS secret access key", _shown(40, "wJal"))]),
    ("env", {"x": ["--password", None, "--token", True]}, []),
    # names that are tokens, at the shortest of each way to be one
    ("k", {"xoxb-1-abcdefgh": 1}, [("k.xox…", "a Slack token", _shown(15, "xox"))]),
    ("k", {"pwd=Xk9mP2v": 1}, [("k.pwd=X…", "a secret (by its name)", _shown(11, "pw"))]),
    ("k", {"https://u:pw@h": 1}, [("k.https://u:…@h", "a password in a URL", _shown(14, "ht"))]),
    ("k", {AWS_SECRET: 1}, []),  # a name is never read in an AWS context
    ("k", {"x": "xoxb-1-abcdefgh"}, [("k.x", "a Slack token", _shown(15, "xox"))]),
    ("k", {"x": "xoxb-1-abcdefg"}, []),
]


@pytest.mark.both_sdks
@pytest.mark.parametrize(("path", "value", "found"), WALKS)
def test_each_secret_is_found_at_its_path_with_its_kind(path, value, found):
    assert list(find_secrets(path, value)) == found


@pytest.mark.both_sdks
def test_a_value_that_holds_itself_is_walked_once():
    mapping: dict[str, Any] = {"token": "abcdefgh"}
    mapping["self"] = mapping
    assert list(find_secrets("c", mapping)) == [
        ("c.token", "a secret (by its name)", _shown(8, "a"))
    ]
    arguments: list[Any] = ["--token", "abcdefgh"]
    arguments.append(arguments)
    assert [f[0] for f in find_secrets("c", arguments)] == ["c.1"]
    proxy = MappingProxyType({"token": "abcdefgh", "again": arguments, "more": arguments})
    assert [f[0] for f in find_secrets("c", proxy)] == ["c.token", "c.again.1"]
    twice = {"a": mapping, "b": mapping}
    assert [f[0] for f in find_secrets("c", twice)] == ["c.a.token"]


@pytest.mark.both_sdks
def test_the_options_of_a_job_are_scanned_each_under_its_name():
    assert find_suspects_in(
        [
            ("a", None),
            ("password", 12345678),
            ("b", GH),
            ("c", {"token": "abcdefgh"}),
            ("d", "plain"),
            ("", GH),
            ("e", [1]),
            ("f", 2.5),
            ("", {"token": "abcdefgh"}),
        ]
    ) == [
        ("password", [(("password",), "a password (by its name)", 12345678)]),
        ("b", [(("b",), "a GitHub token", GH)]),
        ("c", [(("c", "token"), "a secret (by its name)", "abcdefgh")]),
        ("", [((), "a GitHub token", GH)]),
        ("", [(("token",), "a secret (by its name)", "abcdefgh")]),
    ]
    assert find_suspects_in([("x", AWS_SECRET), ("y", [AWS_SECRET])]) == []  # no AWS context
    assert find_suspects("", GH) == [((), "a GitHub token", GH)]
    assert find_suspects("x", [GH]) == [(("x", 0), "a GitHub token", GH)]


# --- what is printed of a value, and what a spec file's secrets become -----------------------

NESTED = {
    "a": 1,
    "token": "abcdefgh",
    "n": {"password": 12345678, "ok": "x"},
    GH: "v",
    "args": ["--hub_token", "hf_" + R, "--lr", "1"],
    "t": ("x", GH),
    "p": _Parameter(GH),
    "q": MappingProxyType({"token": "abcdefgh"}),
}


@pytest.mark.both_sdks
def test_masked_shows_each_secret_by_its_first_characters_and_length():
    shown = masked(NESTED)
    assert repr(shown) == (
        "{'a': 1, 'token': 'a'… (8 characters), 'n': {'password': '1'… (8 characters), "
        "'ok': 'x'}, ghp_…: 'v', 'args': ['--hub_token', 'hf_A'… (39 characters), '--lr', "
        "'1'], 't': ('x', 'ghp_'… (40 characters)), 'p': 'ghp_'… (40 characters), "
        "'q': {'token': 'a'… (8 characters)}}"
    )
    assert type(shown["t"]) is tuple
    assert shown["n"]["ok"] == "x"
    assert masked(GH) == "'ghp_'… (40 characters)"
    assert repr(masked([GH, "x"])) == "['ghp_'… (40 characters), 'x']"


@pytest.mark.both_sdks
def test_masked_plain_writes_plain_text_to_print_as_data():
    shown = masked_plain(NESTED)
    assert shown == {
        "a": 1,
        "token": "a…",
        "n": {"password": "1…", "ok": "x"},
        "ghp_…": "v",
        "args": ["--hub_token", "hf_A…", "--lr", "1"],
        "t": ("x", "ghp_…"),
        "p": "ghp_…",
        "q": {"token": "a…"},
    }
    assert {type(k) for k in shown} == {str} and type(shown["token"]) is str
    assert masked_plain(GH) == "ghp_…" and type(masked_plain(GH)) is str
    # a name that assigns a secret shows the name; one that masking leaves whole is cut
    assert masked_plain({"password=abcdefghij": 1}) == {"password=ab…": 1}
    assert masked_plain({"--token abcdefgh": 1}) == {"--token a…": 1}
    assert masked_plain({"--token      abcdefgh": 1}) == {"--to…": 1}
    assert masked_plain({"x": "abcd", "token": "abcd"}) == {"x": "abcd", "token": "…"}


@pytest.mark.both_sdks
def test_a_value_with_no_secret_is_returned_itself():
    for value in ({"a": 1, "b": [1, "x"]}, ["x"], "plain", 5):
        assert masked(value) is value
        assert masked_plain(value) is value
        assert mark_spec_file_secrets({"v": value})["v"] is value
    untouched = {"x": [1, 2]}
    assert masked({"token": "abcdefgh", "other": untouched})["other"] is untouched


def _nested(depth: int) -> Any:
    value: Any = GH
    for _ in range(depth):
        value = [value]
    return value


def _innermost(value: Any, depth: int) -> Any:
    for _ in range(depth):
        value = value[0]
    return value


@pytest.mark.both_sdks
def test_nothing_deeper_than_the_mask_depth_is_rewritten():
    # the walk goes 64 levels down: a secret one level below the last list it copies (65
    # levels) is rewritten, one more level is not
    assert _innermost(masked_plain(_nested(65)), 65) == "ghp_…"
    assert _innermost(masked_plain(_nested(66)), 66) == GH
    assert _innermost(masked_plain(_nested(63)), 63) == "ghp_…"


@pytest.mark.both_sdks
def test_a_message_quoting_a_secret_shows_it_redacted():
    values = {"token": "abcdefgh", "x": GH, "n": 12345678, "e": ""}
    text = f"got {GH!r} and {GH} and 'abcdefgh' and 12345678"
    assert mask_values_in(text, values) == (
        "got 'ghp_'… (40 characters) and 'ghp_'… (40 characters) and 'a'… (8 characters) "
        "and 12345678"
    )
    assert mask_values_in("nothing here", values) == "nothing here"


@pytest.mark.both_sdks
def test_a_spec_files_secrets_are_marked_and_accepted_ones_left_as_they_are():
    data = {
        "hyperparameters": {"token": "abcdefgh", "password": 12345678, "pwd": 2.5, "ok": "x",
                            GH: 1, "args": ["--password=abcdefgh"]},
        "environment": {"A": GH, "B": GH},
        "accept_exposure": ["environment.B", "hyperparameters.ok"],
    }
    marked = mark_spec_file_secrets(data)
    hp, env = marked["hyperparameters"], marked["environment"]
    assert hp == data["hyperparameters"] and env == data["environment"]
    assert {k: type(v) for k, v in hp.items() if k != "args"} == {
        "token": SpecFileText,
        "password": SpecFileInt,
        "pwd": SpecFileFloat,
        "ok": str,
        GH: int,
    }
    assert [type(k) for k in hp] == [str, str, str, str, SpecFileText, str]
    assert type(hp["args"][0]) is SpecFileText  # the flag and its value, whole
    assert (type(env["A"]), type(env["B"])) == (SpecFileText, str)
    # a single accepted path
    marked = mark_spec_file_secrets({"environment": {"A": GH}, "accept_exposure": "environment"})
    assert type(marked["environment"]["A"]) is str
    # what the SDK's type errors print: the type the file wrote
    assert (SpecFileInt.__name__, SpecFileFloat.__name__) == ("int", "float")


@pytest.mark.both_sdks
def test_accept_exposure_names_a_path_or_what_lies_under_it():
    assert is_accepted("a.b", ("a.b",)) and is_accepted("a.b.c", ("x", "a.b"))
    assert not is_accepted("a.bc", ("a.b",)) and not is_accepted("a", ("a.b",))
    assert not is_accepted("a.b", ())
    assert accepted_paths("x") == ("x",)
    assert accepted_paths(["x", 1, "y"]) == ("x", "y")
    assert accepted_paths(("x",)) == ("x",)
    assert accepted_paths(5) == () and accepted_paths(None) == ()


@pytest.mark.both_sdks
def test_redacted_shows_a_fifth_of_the_value_and_at_most_4_characters():
    assert redacted("abcd") == "(4 characters)"
    assert redacted("abcde") == "'a'… (5 characters)"
    assert redacted("abcdefghi") == "'a'… (9 characters)"
    assert redacted("abcdefghij") == "'ab'… (10 characters)"
    assert redacted("a" * 20) == "'aaaa'… (20 characters)"
    assert redacted("a" * 25) == "'aaaa'… (25 characters)"
    assert redacted(12345) == "'1'… (5 characters)"
    assert redacted("") == "(0 characters)"
    assert redacted_if_secret(GH) == "'ghp_'… (40 characters)"
    assert redacted_if_secret("hello world, a plain text") is None
    assert redacted_if_secret(AWS_SECRET) is None  # no AWS context
    assert redacted_if_secret("https://u:pw@h") == "'ht'… (14 characters)"


@pytest.mark.both_sdks
def test_a_path_shows_a_token_in_it_cut_short():
    assert dotted(("a", 1, (_KEY, GH), GH, ("t", "u"))) == "a.1.ghp_….ghp_….('t', 'u')"
    assert dotted(()) == ""


# (name, value, what it looks like)
KINDS_OF: list[tuple[Any, Any, str | None]] = [
    ("token", "abcdefgh", "a secret (by its name)"),
    ("token", "true", None),
    ("password", "Xno", "a secret (by its name)"),
    ("token", ' "None" ', None),
    ("token", "/run/secrets/token", None),
    ("token", "./token.txt", None),
    ("token", "~/token", None),
    ("token", "s3://bucket/token", None),
    ("token", "file://token", None),
    ("token", "$HF_TOKEN", None),
    ("token", "${HF_TOKEN}", None),
    ("token", "{{resolve:secretsmanager:hf}}", None),
    ("token", "arn:aws:secretsmanager:us-east-1:111122223333:secret:hf", None),
    ("token", "arn:aws-cn:ssm:cn-north-1:111122223333:parameter/hf", None),
    ("token", "arn:aws:s3:::bucket/token", "a secret (by its name)"),
    ("token", "$lower", "a secret (by its name)"),
    ("x", "${HF_TOKEN}", None),
    ("x", GH, "a GitHub token"),
    ("x", "arn:aws:secretsmanager:us-east-1:1:secret:" + GH, None),
    ("x", "a=b token=abcdefgh", "a secret (by its name)"),
    ("x", "token=abcdefgh", "a secret (by its name)"),
    ("x", "--token abcdefgh", "a secret (by its name)"),
    ("x", "--lr 0.1", None),
    ("x", "a=b", None),
    ("x", "u:pw@h", None),
    ("x", "https://u:pw@h", "a password in a URL"),
    ("x", "https://u:password@h", None),
    ("x", "https://u:xxx@h", None),
    ("x", "https://u:${PW}@h", None),
    ("x", AWS_SECRET, None),
    ("aws_key", AWS_SECRET, "an AWS secret access key"),
    ("secret_access_key", AWS_SECRET, "an AWS secret access key"),
    ("aws_region", AWS_SECRET, None),
    ("password", 12345678, "a password (by its name)"),
    ("password", 0, None),
    ("password", True, None),
    ("password", None, None),
    ("password", [1], None),
    ("password", 2.5, "a password (by its name)"),
    ("token", 12345678, None),
    ("x" * 300, "y" * 300 + " " + GH, "a GitHub token"),
    ("token", "a" * 300, "a secret (by its name)"),
]


@pytest.mark.both_sdks
@pytest.mark.parametrize(("name", "value", "kind"), KINDS_OF)
def test_what_a_name_and_its_value_look_like(name, value, kind):
    assert secret_kind(name, value) == kind


@pytest.mark.both_sdks
def test_an_aws_context_makes_a_secret_keys_shape_one():
    assert secret_kind("x", AWS_SECRET, aws_context=True) == "an AWS secret access key"
    assert secret_kind("x", "y" * 300 + " " + AWS_SECRET, aws_context=True) == (
        "an AWS secret access key"
    )


# --- a fresh import: what each command's process builds when it loads the module -------------


def _fresh_import() -> ModuleType:
    """``_secret_formats`` loaded anew from its file, as a new process loads it: its patterns,
    their guards and the literals that gate them are built at import."""
    name, file = _secret_formats.__name__, _secret_formats.__file__
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Tokens written in lower case only: their literals are gated by a character they hold.
LOWER_CASE = [
    ("dapi" + "0123456789abcdef" * 2, "a Databricks token"),
    ("hf_" + "abcdefghijklmnopqrstuvwxyz0123", "a Hugging Face token"),
    ("xoxb-1-abcdefgh", "a Slack token"),
    ("glpat-" + "abcdefghij" * 2, "a GitLab token"),
]


@pytest.mark.both_sdks
def test_a_fresh_import_finds_and_masks_what_the_loaded_module_does():
    fresh = _fresh_import()
    for text, tokens, shown in TEXTS:
        assert fresh.find_tokens(text) == tokens, text
        assert fresh.mask_text(text) == shown, text
    for text, kind in LOWER_CASE:
        assert fresh.find_tokens(f"x {text} y") == [(kind, 2, 2 + len(text))]
    for credential in CREDENTIALS:
        if credential.by_value:
            assert fresh.find_tokens(f"x {credential.value} y"), credential.format
    assert fresh.find_tokens(AWS_SECRET, aws_context=True) == [
        ("an AWS secret access key", 0, 40)
    ]
    for path, value, found in WALKS:
        assert list(fresh.find_secrets(path, value)) == found
    assert fresh.secret_kind("token", "${HF_TOKEN}") is None
    assert fresh.secret_kind("x", "HTTPS://u:pw@h") == "a password in a URL"
    # placeholders in any case; an assignment's value over several lines
    assert fresh.secret_kind("x", "https://u:PASSWORD@h") is None
    assert fresh.secret_kind("x", "https://u:XXX@h") is None
    assert list(fresh.find_secrets("a", ["TOKEN=abc\ndef"])) == [
        ("a.0", "a secret (by its name)", _shown(7, "a"))
    ]


@pytest.mark.both_sdks
@pytest.mark.parametrize(("text", "kind"), LOWER_CASE)
def test_a_token_in_lower_case_is_found(text, kind):
    assert find_tokens(f"x {text} y") == [(kind, 2, 2 + len(text))]


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("--password=hunter22", "--password=h…"),
        ("-password=hunter22", "-password=h…"),
        ("train.py --epochs=3 --hub-token=Xk9mPq2Lw7", "train.py --epochs=3 --hub-token=Xk…"),
        ("--epochs=3 --lr=0.1", "--epochs=3 --lr=0.1"),
        # the flag and the word after it, as a shell splits them
        ("train.py --password hunter22 --lr 0.1", "train.py --password h… --lr 0.1"),
        ("-pwd \tXk9mP", "-pwd \tX…"),
        ("--pwd Xk9mP.", "--pwd X…"),
        ("--hub_token ${HF_TOKEN} --lr 0.1", "--hub_token ${HF_TOKEN} --lr 0.1"),
        ("--password --lr 0.1", "--password --lr 0.1"),
        ("--password true", "--password true"),
        ("--password h…", "--password h…"),
        ("--password hunter22… --lr 1", "--password hunter22… --lr 1"),
        ("--pwd\tXk9mP", "--pwd\tX…"),
        ("x--password hunter22", "x--password hunter22"),
        ("--epochs 3 --lr 0.1", "--epochs 3 --lr 0.1"),
    ],
)
def test_a_command_lines_assignment_to_a_secret_name_is_masked(text: str, shown: str) -> None:
    # A command line's word (--password=...) as well as a bare name=...: every printed line,
    # in every format, goes through mask_text (_report.masked_texts), keys too.
    from safe_estimators._report import masked_texts

    assert mask_text(text) == shown
    assert masked_texts({text: [text]}) == {shown: [shown]}


def test_a_name_that_is_a_flag_and_its_secret_is_cut_in_the_path() -> None:
    assert [path for path, _, _ in find_secrets("hyperparameters", {"--pwd Xk9mP": 1})] == [
        "hyperparameters.--pwd X…"
    ]
