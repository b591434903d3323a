"""Secrets wherever a value reaches the request or a message: every fabricated credential of
the corpus (tests/secrets_corpus.py) is reported in every field it can sit in, no ordinary value
is, no message (text or JSON) shows more than a secret's first characters, and the patterns run
in linear time on crafted input.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from secrets_corpus import BASE, BENIGN, CREDENTIALS, FIELDS, applies, leaks, run

from safe_estimators import _secret_formats as secrets
from safe_estimators._cli import main
from safe_estimators._commands.validate import validate_file
from safe_estimators._problems import Problem
from safe_estimators._resolve import check_arguments


def _problems(arguments: dict[str, Any]) -> list[Problem]:
    return check_arguments(arguments)[1]


def _secret_problems(arguments: dict[str, Any]) -> list[Problem]:
    return [p for p in _problems(arguments) if p.path != "entry_point"]


@pytest.fixture(scope="module")
def outcomes() -> list[tuple[str, str, str]]:
    return list(run(_problems))


def test_the_corpus_has_the_formats_and_ordinary_values_the_issue_asks_for():
    assert len({c.format for c in CREDENTIALS if c.by_value}) >= 34
    assert len(BENIGN) >= 52
    assert sum(1 for c in CREDENTIALS for f in FIELDS if applies(f, c)) > 600


def test_every_credential_is_reported_in_every_field_that_reaches_the_request(outcomes):
    assert [o for o in outcomes if o[0] == "missed"] == []


def test_no_message_shows_more_than_a_secrets_first_characters(outcomes):
    assert [o for o in outcomes if o[0] == "leaked"] == []


def test_no_ordinary_value_is_flagged_in_any_field(outcomes):
    assert [o for o in outcomes if o[0] == "flagged"] == []


@pytest.mark.sdk2_only  # Python's estimator factories
def test_a_value_passed_in_python_is_a_warning_with_the_secrets_manager_fix():
    token = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz01234567"
    found = _secret_problems({**BASE, "environment": {"HF_TOKEN": token}})
    assert [(p.path, p.severity) for p in found] == [("environment.HF_TOKEN", "warning")]
    assert "Secrets Manager" in found[0].hint
    assert "accept_exposure=['environment.HF_TOKEN']" in found[0].hint


@pytest.mark.sdk2_only  # Python's estimator factories
def test_an_s3_uri_with_a_password_is_an_error_wherever_it_comes_from():
    found = _secret_problems({**BASE, "output_path": "s3://user:Pw0rdPw0rd@bucket/out"})
    assert [(p.path, p.severity) for p in found] == [("output_path", "error")]
    assert "S3 URIs take no user or password" in found[0].message
    assert "'s3://user:Pw…@bucket/out'" in found[0].message


@pytest.mark.sdk2_only  # Python's estimator factories
def test_accept_exposure_accepts_the_keys_it_names_and_no_other():
    token = "ghp_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
    options = {
        **BASE,
        "hyperparameters": {"hub_token": token, "args": ["--hf_token", token]},
        "environment": {"HF_TOKEN": token},
    }
    accepted = {"accept_exposure": ["hyperparameters.hub_token", "hyperparameters.args"]}
    assert [p.path for p in _secret_problems({**options, **accepted})] == ["environment.HF_TOKEN"]
    one = {"accept_exposure": "environment.HF_TOKEN"}
    assert "environment.HF_TOKEN" not in [p.path for p in _secret_problems({**options, **one})]
    bad = _secret_problems({**options, "accept_exposure": [1]})
    assert [p.path for p in bad if p.severity == "error"] == ["accept_exposure"]


def _write_spec(folder: Path, options: dict[str, Any], name: str = "job.json") -> Path:
    (folder / "train.py").write_text("print('training')\n")
    path = folder / name
    path.write_text(json.dumps(options))
    return path


def test_a_literal_in_a_spec_file_is_an_error_in_every_field(tmp_path: Path):
    missed = []
    for index, field in enumerate(FIELDS):
        for number, credential in enumerate(CREDENTIALS):
            if not applies(field, credential):
                continue
            folder = tmp_path / f"{index}-{number}"
            folder.mkdir()
            options = {**BASE, **field.options(credential.name, credential.value)}
            found = validate_file(str(_write_spec(folder, options)))
            expected = field.path(credential.name)
            if not any(
                p.severity == "error" and "looks like" in p.message and p.path.startswith(expected)
                for p in found
            ):
                missed.append((credential.format, field.name))
    assert missed == []


def test_accept_exposure_in_a_spec_file_makes_the_literal_valid(tmp_path: Path):
    token = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz01234567"
    options = {**BASE, "environment": {"HF_TOKEN": token}}
    assert [p.severity for p in validate_file(str(_write_spec(tmp_path, options)))] == ["error"]
    accepted = {**options, "accept_exposure": ["environment.HF_TOKEN"]}
    assert validate_file(str(_write_spec(tmp_path, accepted, "accepted.json"))) == []


def test_validate_json_output_masks_every_secret(tmp_path: Path, capsys):
    chosen = [c for c in CREDENTIALS if c.by_value][:40]
    # --json lists at most MAX_PROBLEMS problems a file: 16 credentials in 3 fields each fit.
    for start in range(0, len(chosen), 16):
        batch = chosen[start : start + 16]
        options = {
            **BASE,
            "environment": {c.name: str(c.value) for c in batch},
            "tags": [{"Key": c.name, "Value": str(c.value)} for c in batch],
            "container_arguments": [str(c.value) for c in batch],
        }
        spec = _write_spec(tmp_path, options)
        assert main(["--json", "validate", str(spec)]) == 1
        printed = capsys.readouterr().out
        document = json.loads(printed)
        assert len(document["problems"]) >= 3 * len(batch)
        assert [c.format for c in batch if leaks(printed, c.hidden)] == []
        assert main(["validate", str(spec)]) == 1
        text = capsys.readouterr().out
        assert [c.format for c in batch if leaks(text, c.hidden)] == []


# --- linear time ----------------------------------------------------------------------------

SIZE = 100_000


def _adversarial() -> dict[str, str]:
    """Crafted 100 kB strings: each format's own pieces repeated (a prefix over and over, a
    prefix with a body one character short, ...) and the classic traps of backtracking."""
    texts = {
        "a.": "a.", "a://": "a://", "a://b:c": "a://b:c", "u:p@": "a://b:c@", "-": "-",
        "eyJ-": "eyJ-", "eyJ.": "eyJaaaaaaaaaa.", "AccountKey=": "AccountKey=", "=": "a=b ",
        "Bearer": "Bearer ", ":AA": "12345678:AA", "Q~": "abc1Q~", "--flag": "--token x ",
        "A": "A", "aA0": "aA0", "/+": "aA0/+", "-----BEGIN": "-----BEGIN ", ";": "Password=;",
        "repr": "'password': 'x", "repr2": "'a': '",
    }  # fmt: skip
    for credential in CREDENTIALS:
        value = str(credential.value)
        for cut in (3, 5, 8, len(value) - 1):
            texts[f"{credential.format} [{cut}]"] = value[:cut]
        texts[f"{credential.format} [sep]"] = value[:-1] + "!"
    return {name: (piece * (SIZE // len(piece) + 1))[:SIZE] for name, piece in texts.items()}


def _fastest(run_once: Any, times: int) -> float:
    # CPU seconds of this process, not wall time: the other processes of a busy machine do not
    # count, so the ratio below measures the pattern's work, not the machine's load.
    best = float("inf")
    for _ in range(times):
        start = time.process_time()
        run_once()
        best = min(best, time.process_time() - start)
    return best


# A scan of 100 kB costs about 1,000 to 2,000 times str.count over it; a quadratic pattern on
# the same input costs tens of thousands of times more (seconds to minutes).
RATIO = 30_000


def test_every_pattern_runs_in_linear_time_on_crafted_input():
    slow = []
    for name, text in _adversarial().items():
        baseline = max(_fastest(lambda t=text: t.count("a"), 30), 1e-5)
        for what, scan in (
            ("value", lambda t=text: secrets.secret_kind("HF_TOKEN_X", t, aws_context=True)),
            ("mask", lambda t=text: secrets.mask_text(t)),
        ):
            took = _fastest(scan, 2)
            if took > RATIO * baseline:
                slow.append(f"{name} ({what}): {took * 1000:.0f} ms, {took / baseline:.0f} x count")
    assert slow == []
