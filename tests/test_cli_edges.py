"""A newcomer's first hour with the command line: each rough edge of issue 31, as they met it.

`--version`, `plan --target`, the catalog's option errors and help, a subcommand's own usage,
`--fits` naming the file, no `train.py:0:` anywhere, one verdict from lint and validate, a
problem in a file the spec names placed in that file, and plain words for a name pattern.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from safe_estimators._cli import main
from safe_estimators._report import escape_property

ROOT = Path(__file__).parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*/job.*"))
SPECS = Path(__file__).parent / "fixtures" / "specs"


@pytest.fixture(autouse=True)
def _restore_logging():
    previous = logging.root.manager.disable
    yield
    logging.disable(previous)


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _project(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "train.py").write_text("print('training')\n")
    return tmp_path


# --- the command line itself ----------------------------------------------------------------


def test_version_prints_the_installed_version(capsys):
    from importlib.metadata import version

    code, out, err = run(capsys, "--version")
    assert (code, out, err) == (0, f"safe-estimators {version('safe-estimators')}\n", "")


@pytest.mark.sdk2_only
def test_plan_takes_the_target_on_the_command_line(capsys):
    spec = ROOT / "examples/model-trainer/torchrun-fsdp.yaml"  # an estimator spec: no target:
    code, out, _ = run(capsys, "plan", "--json", "--target", "model_trainer", spec)
    assert code == 0
    trainer = json.loads(out)
    assert trainer["estimator"].startswith("model_trainer")
    code, out, _ = run(capsys, "plan", "--json", "--target", "estimator", spec)
    assert code == 0
    assert json.loads(out)["estimator"] == "pytorch"
    code, _, err = run(capsys, "plan", "--target", "modeltrainer", spec)
    assert code == 2
    assert "argument --target: invalid choice: 'modeltrainer'" in err


def test_a_bad_min_gpus_says_what_is_wrong_in_the_catalogs_usage(capsys):
    code, out, err = run(capsys, "catalog", "--min-gpus", "abc")
    assert code == 2
    assert out == ""
    assert err.startswith("usage: safe-estimators catalog ")
    assert err.endswith(
        "safe-estimators catalog: error: argument --min-gpus: expected a whole number, "
        "got 'abc'\n"
    )
    assert "_count" not in err


def test_min_gpus_has_help(capsys):
    code, out, _ = run(capsys, "catalog", "--help")
    assert code == 0
    help_line = out[out.index("--min-gpus N") :].split("\n--", 1)[0]
    assert "at least N GPUs" in " ".join(help_line.split())


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["catalog", "--accelerator", "A1000"], "catalog"),  # refused by the command itself
        (["plan", "--bogus", "job.yaml"], "plan"),  # refused by the parser
        (["lint"], "lint"),
        (["rule", "spot-trainin"], "rule"),
    ],
)
def test_an_error_inside_a_command_prints_that_commands_usage(capsys, argv, command):
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert err.startswith(f"usage: safe-estimators {command} ")
    assert f"safe-estimators {command}: error: " in err


def test_fits_without_a_model_names_the_file(capsys):
    spec = ROOT / "examples/compiler-single-gpu/job.yaml"
    code, out, _ = run(capsys, "catalog", "--fits", spec)
    assert code == 1
    assert out == (
        f"{spec}: model: is needed to estimate where the job fits. (add a model: section.)\n"
    )


# --- no line 0, one verdict -----------------------------------------------------------------

MP_JOB = (
    "estimator: pytorch\nentry_point: train.py\ninstance_type: ml.p4d.24xlarge\n"
    "framework_version: '1.13.1'\npy_version: py39\n"
    "model_parallel:\n  sharded_data_parallel_degree: 8\n  bf16: true\n  ddp: true\n"
)


@pytest.mark.sdk2_only
def test_a_finding_about_the_whole_script_has_no_line_zero(capsys, tmp_path):
    project = _project(tmp_path)  # model parallelism, and a script that never imports it
    spec = project / "job.yaml"
    spec.write_text(MP_JOB)
    script = project / "train.py"
    code, out, _ = run(capsys, "lint", spec)
    assert code == 0
    assert f"{script}: warning: model parallelism is on but the script never imports" in out
    assert ":0" not in out
    code, out, _ = run(capsys, "lint", "--json", spec)
    finding = next(p for p in json.loads(out)["problems"] if p["rule"] == "smp-not-imported")
    assert finding["path"] == finding["file"] == str(script)
    assert "line" not in finding and "column" not in finding
    code, out, _ = run(capsys, "validate", spec)
    assert f"entry_point: warning: {script}: model parallelism is on" in out
    assert ":0" not in out


@pytest.mark.sdk2_only
def test_lint_of_a_recipe_job_does_not_check_an_entry_point_the_recipe_supplies(capsys):
    spec = ROOT / "examples/hyperpod-recipe/job.yaml"
    assert run(capsys, "validate", spec)[0] == 0
    code, out, _ = run(capsys, "lint", spec)
    assert (code, out) == (0, f"{spec}: no findings\n")


def test_lint_json_reports_a_misspelt_key_and_fails_as_validate_does(capsys):
    spec = SPECS / "unknown-key.yaml"
    code, out, _ = run(capsys, "lint", "--json", spec)
    assert code == 1
    document = json.loads(out)
    assert document["ok"] is False
    assert [(p["path"], p["rule"], p["line"]) for p in document["problems"]] == [
        ("instance_cout", "spec-options", 6)
    ]
    assert run(capsys, "validate", spec)[0] == 1


@pytest.mark.parametrize(
    "spec", [*EXAMPLES, *sorted(SPECS.glob("*.yaml"))], ids=lambda p: f"{p.parent.name}/{p.name}"
)
def test_lint_and_validate_reach_one_verdict(capsys, spec):
    assert run(capsys, "lint", spec)[0] == run(capsys, "validate", "--no-cache", spec)[0]


# --- a problem in a file the spec names is placed in that file ------------------------------


def _model_job(tmp_path: Path) -> tuple[Path, Path]:
    project = _project(tmp_path)
    config = project / "config.json"
    # A missing comma after "hidden_size": the parser stops at line 4, column 25.
    config.write_text(
        '{\n  "model_type": "llama",\n  "num_hidden_layers": 32,\n  "hidden_size": 4096   '
        '"vocab_size": 32000\n}\n'
    )
    spec = project / "job.yaml"
    spec.write_text(
        "estimator: pytorch\nentry_point: train.py\ninstance_type: ml.p4d.24xlarge\n"
        "framework_version: '2.3.0'\npy_version: py311\nmodel:\n  config: config.json\n"
        "  sequence_length: 4096\n"
    )
    return spec, config


def test_a_syntax_error_in_the_models_config_is_placed_in_the_config_in_every_format(
    capsys, tmp_path
):
    spec, config = _model_job(tmp_path)
    code, out, _ = run(capsys, "validate", spec)
    assert code == 1
    assert f"\n{config}:4:25: model.config: '{config}' is not valid JSON" in f"\n{out}"
    code, out, _ = run(capsys, "validate", "--format", "github", spec)
    assert f"::error file={escape_property(str(config))},line=4,col=25," in out
    code, out, _ = run(capsys, "validate", "--format", "sarif", spec)
    result = next(r for r in json.loads(out)["runs"][0]["results"] if r["level"] == "error")
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"].endswith("/config.json")
    assert location["region"] == {"startLine": 4, "startColumn": 25}
    code, out, _ = run(capsys, "validate", "--format", "codeclimate", spec)
    issue = next(i for i in json.loads(out) if i["severity"] == "major")
    assert issue["location"]["path"].endswith("config.json")
    assert issue["location"]["lines"]["begin"] == 4


def test_a_syntax_error_in_the_model_parallel_parameters_is_placed_in_that_file(
    capsys, tmp_path
):
    project = _project(tmp_path)
    (project / "mp.json").write_text('{\n  "partitions": 2,\n  "microbatches" 4\n}\n')
    spec = project / "job.yaml"
    spec.write_text(
        "estimator: pytorch\nentry_point: train.py\ninstance_type: ml.p3.16xlarge\n"
        "framework_version: '1.13.1'\npy_version: py39\n"
        "distribution:\n  mpi: {enabled: true, processes_per_host: 8}\n"
        "  smdistributed:\n    modelparallel:\n      enabled: true\n      parameters: mp.json\n"
    )
    code, out, _ = run(capsys, "validate", spec)
    assert code == 1
    assert out.startswith(
        f"{project / 'mp.json'}:3:18: distribution.smdistributed.modelparallel.parameters: "
    )


# --- plain words ----------------------------------------------------------------------------


def test_a_hyperparameter_name_with_a_line_break_is_explained_in_words(capsys, tmp_path):
    project = _project(tmp_path)
    spec = project / "job.yaml"
    spec.write_text(
        "estimator: pytorch\nentry_point: train.py\ninstance_type: ml.p3.2xlarge\n"
        "framework_version: '2.1.0'\npy_version: py310\nhyperparameters:\n  \"a\\nb\": 1\n"
    )
    code, out, _ = run(capsys, "validate", "--json", spec)
    assert code == 1
    problem = next(p for p in json.loads(out)["problems"] if p["path"].startswith("hyperp"))
    assert "any characters but a line break" in problem["message"]
    assert ".*" not in problem["message"]
    assert problem["hint"] == "use any characters but a line break."


# --- one memory unit ------------------------------------------------------------------------


def test_the_catalog_gives_memory_in_gigabytes_of_ten_to_the_ninth_bytes(capsys):
    code, out, _ = run(capsys, "catalog", "--accelerator", "A100")
    assert code == 0
    p4d = next(line for line in out.splitlines() if line.startswith("ml.p4d.24xlarge "))
    assert " 42.9 GB " in p4d  # 40960 MiB
    assert "GiB" not in out and "MiB" not in out


@pytest.mark.sdk2_only
def test_fits_and_plan_give_memory_in_gigabytes_only(capsys):
    spec = ROOT / "examples/memory-fit/job.yaml"
    code, out, _ = run(capsys, "catalog", "--fits", spec)
    assert code == 0
    assert "MiB" not in out and "GiB" not in out
    assert "42.9 GB" in out
    code, out, _ = run(capsys, "plan", spec)
    assert code == 0
    assert "MiB" not in out and "GiB" not in out
    assert "of 42.9 GB per A100 of ml.p4d.24xlarge" in out
