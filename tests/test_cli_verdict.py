"""The command line's contract for CI and scripts: JSON everywhere, exit codes, flags anywhere.

Each case of issue 15's CLI item, through `safe_estimators._cli.main` in-process.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from conftest import SDK3, runs_here

import instance_catalog
from safe_estimators._cli import main, size_order

ROOT = Path(__file__).parent.parent
# The examples that build on the installed SDK (on sagemaker 3, not the estimator-only ones).
EXAMPLES = [path for path in sorted((ROOT / "examples").glob("*/job.*")) if runs_here(path)]
SPECS = Path(__file__).parent / "fixtures" / "specs"
SCRIPT = ROOT / "examples" / "compiler-multi-gpu" / "train.py"


@pytest.fixture(autouse=True)
def _restore_logging():
    previous = logging.root.manager.disable
    yield
    logging.disable(previous)


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_help_lists_the_exit_codes(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for line in ("0  ok", "1  problems found", "2  usage error", "3  internal error"):
        assert line in out
    code, out, _ = run(capsys, "plan", "--help")
    assert code == 0 and "3  internal error" in out


def test_global_flags_work_after_the_command(capsys):
    code, out, _ = run(capsys, "validate", EXAMPLES[0], "--json")
    assert code == 0 and json.loads(out)["ok"] is True
    code, out, _ = run(capsys, "--json", "validate", EXAMPLES[0])
    assert code == 0 and json.loads(out)["ok"] is True
    code, out, _ = run(capsys, "validate", EXAMPLES[0], "--verbose")
    assert code == 0 and out.endswith(": valid\n")


def test_validate_json_lists_every_problem(capsys):
    path = SPECS / "three-mistakes.yaml"
    code, out, _ = run(capsys, "validate", "--json", path, EXAMPLES[0])
    document = json.loads(out)
    assert code == 1
    assert document["ok"] is False
    assert [p["path"] for p in document["problems"]] == [
        "hyperparameter", "instance_count", "max_run"
    ]
    assert [f["ok"] for f in document["files"]] == [False, True]
    problem = document["problems"][0]
    assert set(problem) == {
        "source", "path", "message", "hint", "severity", "rule", "file", "line", "column"
    }  # fmt: skip
    assert problem["rule"] == "spec-options"  # the id SARIF and `safe-estimators rule` use


def test_usage_errors_are_json_too(capsys):
    code, out, _err = run(capsys, "plan", "--json")
    assert code == 2
    document = json.loads(out)
    assert document["ok"] is False and document["problems"][0]["path"] == "<usage>"


def test_an_internal_error_is_json_with_json(capsys, monkeypatch):
    import safe_estimators._commands.plan

    monkeypatch.setattr(safe_estimators._commands.plan, "plan", lambda *_: 1 / 0)
    code, out, _err = run(capsys, "plan", EXAMPLES[0], "--json")
    assert code == 3
    assert json.loads(out)["problems"][0]["path"] == "<internal>"


def test_validate_a_folder(capsys):
    code, out, _ = run(capsys, "validate", ROOT / "examples")
    assert code == (1 if SDK3 else 0), out  # the estimator-only examples, on sagemaker 3
    for example in EXAMPLES:
        assert f"{example}: valid" in out
    assert "copier.yml: skipped" in out


def test_validate_an_empty_folder_is_a_problem(capsys, tmp_path):
    code, out, _ = run(capsys, "validate", tmp_path)
    assert code == 1
    assert "holds no spec files" in out


def test_plan_and_lint_take_several_files(capsys):
    names = ("model-trainer/smp-v2", "model-trainer/qlora") if SDK3 else (
        "compiler-single-gpu/job", "compiler-multi-gpu/job"
    )
    two = [ROOT / f"examples/{name}.yaml" for name in names]
    code, out, _ = run(capsys, "plan", *two)
    assert code == 0
    assert out.count("plan for ") == 2
    code, out, _ = run(capsys, "plan", "--json", two[0], SPECS / "wrong-type.yaml")
    document = json.loads(out)
    assert code == 1
    assert [plan["ok"] for plan in document["plans"]] == [True, False]
    code, out, _ = run(capsys, "lint", *two, SCRIPT)
    assert code == 0
    code, out, _ = run(capsys, "lint", "--json", *two)
    assert json.loads(out)["ok"] is True


def test_catalog_sorts_sizes_by_size(capsys):
    assert sorted(["ml.g6.12xlarge", "ml.g6.2xlarge", "ml.g6.xlarge", "ml.g6.large"],
                  key=size_order) == ["ml.g6.large", "ml.g6.xlarge", "ml.g6.2xlarge",
                                      "ml.g6.12xlarge"]  # fmt: skip
    _code, out, _ = run(capsys, "catalog", "--min-gpus", 1)
    names = [line.split()[0] for line in out.splitlines()[1:]]
    g5 = [n for n in names if n.startswith("ml.g5.")]
    assert g5.index("ml.g5.2xlarge") < g5.index("ml.g5.12xlarge")


def test_catalog_refuses_an_unknown_accelerator_with_the_known_names(capsys):
    code, _out, err = run(capsys, "catalog", "--accelerator", "X100")
    assert code == 2
    assert "unknown accelerator 'X100'" in err
    known = {t.accelerator_name for t in instance_catalog.instance_types() if t.accelerator_name}
    assert all(name in err for name in known)


def test_catalog_refuses_negative_counts(capsys):
    code, _, err = run(capsys, "catalog", "--min-gpus", -1)
    assert code == 2 and "must be 0 or more" in err


def test_submit_without_a_region_exits_1_with_the_fix(capsys, monkeypatch, tmp_path):
    empty = tmp_path / "config"
    empty.write_text("")
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(empty))
    code, out, err = run(capsys, "submit", EXAMPLES[0])
    assert code == 1
    assert "no AWS region" in out and "AWS_REGION" in out
    assert "internal error" not in out + err


def test_submit_without_credentials_exits_1_with_the_fix(capsys, monkeypatch, tmp_path):
    empty = tmp_path / "none"
    empty.write_text("")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                 "AWS_SECURITY_TOKEN"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(empty))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(empty))
    spec = tmp_path / "job.json"
    (tmp_path / "train.py").write_text(SCRIPT.read_text())  # inside the spec's project
    spec.write_text(
        json.dumps(
            {
                "estimator": "pytorch",
                "entry_point": "train.py",
                "instance_type": "ml.p3.8xlarge",
                "framework_version": "1.13.1",
                "py_version": "py39",
                "role": "arn:aws:iam::111122223333:role/SageMakerRole",
            }
        )
    )
    code, out, err = run(capsys, "submit", spec, "--json")
    assert code == 1, out + err
    problem = json.loads(out)["problems"][0]
    assert problem["path"] == "<aws>"
    assert "credentials" in problem["message"] and "aws configure" in problem["hint"]


@pytest.mark.parametrize(
    ("error", "words"),
    [
        ("AccessDeniedException", "iam:PassRole"),
        ("ExpiredToken", "aws sso login"),
        ("ResourceLimitExceeded", "quota"),
    ],
)
def test_aws_refusals_are_the_users_to_fix(error, words):
    from botocore.exceptions import ClientError

    from safe_estimators._cli import _aws_problem

    exc = ClientError({"Error": {"Code": error, "Message": "no"}}, "CreateTrainingJob")
    problem = _aws_problem(exc)
    assert problem is not None and words in problem.hint
    from boto3.exceptions import S3UploadFailedError

    upload = S3UploadFailedError(
        "Failed to upload x: An error occurred (AccessDenied) when calling the PutObject operation"
    )
    assert "s3:PutObject" in _aws_problem(upload).hint
    assert _aws_problem(RuntimeError("boom")) is None
