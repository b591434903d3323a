"""One verdict on both SDK generations: a misspelt key is the same did-you-mean on sagemaker 2
and 3, in Python and in every CLI format, and hides no other problem; the estimator target on
sagemaker 3 is our ConfigError in every command and format, never an internal error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import safe_estimators
from safe_estimators import ConfigError
from safe_estimators._cli import main
from safe_estimators._facts import pipeline_variables

pytestmark = pytest.mark.both_sdks

FORMATS = ("text", "json", "github", "sarif", "codeclimate")

SPEC = (
    "estimator: pytorch\n"
    "entry_point: train.py\n"
    "instance_type: ml.g5.12xlarge\n"
    "instance_count: 2\n"
    "framework_version: '2.3.0'\n"
    "py_version: py311\n"
    "distribution: {torch_distributed: {enabled: true}}\n"
)


def _spec(tmp_path: Path, extra: str) -> Path:
    (tmp_path / "train.py").write_text(
        "import torch.distributed as dist\ndist.init_process_group()\n"
    )
    path = tmp_path / "job.yaml"
    path.write_text(SPEC + extra)
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().out


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("command", ["validate", "plan"])
def test_a_misspelt_key_is_a_did_you_mean_in_every_format(command, fmt, tmp_path, capsys):
    path = _spec(tmp_path, "hyperparamters: {epochs: 3}\n")
    code, out = _run(capsys, "--format", fmt, command, path)
    assert code == 1, out
    assert "did you mean 'hyperparameters'?" in out
    assert "reading the arguments failed" not in out and "internal error" not in out


def test_a_misspelt_key_hides_no_other_problem(tmp_path, capsys):
    path = _spec(
        tmp_path,
        "hyperparamters: {epochs: 3}\nvolume_sise: 100\nmax_run: -1\nenvironment: {A: 1}\n",
    )
    code, out = _run(capsys, "--format", "json", "validate", "--no-cache", path)
    assert code == 1
    paths = {p["path"] for p in json.loads(out)["problems"]}
    # The two typos, the negative max_run, the non-string environment value: every one
    # reported, none hidden by another.
    assert {"hyperparamters", "volume_sise", "max_run", "environment.A"} <= paths, paths


def test_a_misspelt_keyword_of_model_trainer_is_a_did_you_mean(tmp_path):
    (tmp_path / "train.py").write_text("print('training')\n")
    with pytest.raises(ConfigError) as caught:
        safe_estimators.model_trainer(
            entry_point="train.py",
            source_dir=str(tmp_path),
            instance_type="ml.g5.2xlarge",
            framework_version="2.3.0",
            py_version="py311",
            volume_sise=100,
        )
    (problem,) = [p for p in caught.value.problems if p.path == "volume_sise"]
    assert problem.hint == "did you mean 'volume_size'?"
    assert problem.severity == "error"


def test_fit_keywords_are_warnings_naming_fit_on_both_generations(tmp_path, capsys):
    path = _spec(tmp_path, "job_name: bert-v1\n")
    code, out = _run(capsys, "--format", "json", "validate", "--no-cache", path)
    assert code == 0, out
    (warned,) = [p for p in json.loads(out)["problems"] if p["path"] == "job_name"]
    assert warned["severity"] == "warning"
    assert "is a keyword of fit(), not of the estimator" in warned["message"]


@pytest.mark.sdk2_only
def test_the_recorded_estimator_facts_are_what_sagemaker_2_reads():
    """sagemaker 3 has no estimator.py: the recorded readings stand in for it there."""
    assert pipeline_variables._estimators_shipped()
    assert pipeline_variables.fit_keywords() == pipeline_variables.RECORDED_FIT_KEYWORDS
    for kind in ("pytorch", "huggingface"):
        assert pipeline_variables.pipeline_options(kind) == (
            pipeline_variables.RECORDED_PIPELINE_OPTIONS
        )


@pytest.mark.sdk3_only  # the estimator target builds on sagemaker 2
@pytest.mark.parametrize("fmt", FORMATS)
def test_plan_of_the_estimator_target_on_sagemaker_3_is_our_config_error(fmt, tmp_path, capsys):
    path = _spec(tmp_path, "target: estimator\n")
    code, out = _run(capsys, "--format", fmt, "plan", path)
    assert code == 1, out
    assert "the estimator target needs the SageMaker SDK 2.x" in out
    assert "internal error" not in out
    if fmt == "sarif":
        (run,) = json.loads(out)["runs"]
        assert [r["ruleId"] for r in run["results"]] == ["estimator-needs-sdk2"]
