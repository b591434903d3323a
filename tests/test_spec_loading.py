"""Reading spec files: what a spec file can mean is loaded as written, what it cannot is refused
with the line and the fix; anchors and merge keys within the bounds keep working."""

from __future__ import annotations

from pathlib import Path

import pytest

from safe_estimators._spec_files.read import read_spec_data

HEAD = "estimator: pytorch\nentry_point: train.py\ninstance_type: ml.p3.2xlarge\n"


def _read(tmp_path: Path, text: str, name: str = "job.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return read_spec_data(path)


def test_anchors_aliases_and_merge_keys_load_as_pyyaml_does(tmp_path: Path) -> None:
    data, problems = _read(
        tmp_path,
        HEAD + "defaults: &d {lr: 0.1, epochs: 3}\n"
        "hyperparameters:\n  <<: *d\n  epochs: 5\n  layers: &l [1, 2]\n  again: *l\n",
    )
    assert problems == []
    assert data["hyperparameters"] == {"lr": 0.1, "epochs": 5, "layers": [1, 2], "again": [1, 2]}


def test_quoted_and_explicit_values_are_not_surprises(tmp_path: Path) -> None:
    data, problems = _read(
        tmp_path,
        HEAD + "check_script: false\nhyperparameters: {a: 'off', b: \"1:20\", c: 0x1F, d: 1e-3,"
        " e: yes_please, f: 012a, g: !!str 0777}\n",
    )
    assert problems == []
    assert data["check_script"] is False
    assert data["hyperparameters"] == {
        "a": "off", "b": "1:20", "c": 31, "d": "1e-3", "e": "yes_please", "f": "012a", "g": "0777",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("text", "path", "words"),
    [
        ("check_script: off\n", "check_script", "'off' is False to YAML 1.1"),
        ("use_spot_instances: Yes\n", "use_spot_instances", "'Yes' is True to YAML 1.1"),
        ("instance_count: 1:20\n", "instance_count", "integer only to YAML 1.1"),
        ("max_run: 0777\n", "max_run", "integer only to YAML 1.1"),
        ("max_run: 3_600\n", "max_run", "integer only to YAML 1.1"),
        ("hyperparameters: {lr: 1:30.5}\n", "hyperparameters.lr", "number only to YAML 1.1"),
        ("role: x\nrole: y\n", "role", "duplicate key (first at line 4)"),
        ("role: !!binary aGVsbG8=\n", "role", "YAML tag"),
        ("hyperparameters: !!set {a, b}\n", "hyperparameters", "YAML tag"),
        ("hyperparameters: {[1, 2]: x}\n", "hyperparameters", "keys must be names"),
        ("hyperparameters: &a {x: *a}\n", "hyperparameters.x", "a cycle"),
        ("instance_count: 1" + "0" * 5000 + "\n", "instance_count", "cannot be read as int"),
    ],
)
def test_what_a_spec_cannot_mean_is_refused_at_its_line(
    tmp_path: Path, text: str, path: str, words: str
) -> None:
    data, problems = _read(tmp_path, HEAD + text)
    assert data is None
    assert [p.path for p in problems] == [path]
    assert words in problems[0].message and problems[0].message.startswith("line ")
    assert problems[0].hint


def test_json_duplicate_keys_are_refused_and_toml_refuses_its_own(tmp_path: Path) -> None:
    data, problems = _read(tmp_path, '{"role": "a", "role": "b"}', "job.json")
    assert data is None and "duplicate key 'role'" in problems[0].message
    data, problems = _read(tmp_path, 'role = "a"\nrole = "b"\n', "job.toml")
    assert data is None and problems[0].path == "<file>"


def test_a_folder_given_as_the_spec_is_a_problem(tmp_path: Path) -> None:
    (tmp_path / "job.yaml").mkdir()
    data, problems = read_spec_data(tmp_path / "job.yaml")
    assert data is None and "is a folder, not a regular file" in problems[0].message


def test_paths_leaving_the_project_need_an_explicit_project_root(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from safe_estimators._cli import main

    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "train.py").write_text("print('train')\n")
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    spec = jobs / "job.yaml"
    spec.write_text(
        "estimator: pytorch\nentry_point: train.py\nsource_dir: ../shared\n"
        "instance_type: ml.p3.2xlarge\nframework_version: '2.0'\npy_version: py310\n"
    )
    assert main(["validate", str(spec)]) == 1
    assert "outside the project" in capsys.readouterr().out
    assert main(["--project-root", str(tmp_path), "validate", str(spec)]) == 0
    # Inside a git repository, the repository is the project.
    (tmp_path / ".git").mkdir()
    assert main(["validate", str(spec)]) == 0


def test_a_scalar_read_before_is_judged_again_where_it_stands(tmp_path: Path) -> None:
    # Scalars are resolved once per process; where they stand (a merge key or a value, which
    # line, which option) must still be read from each file.
    text = HEAD + "hyperparameters:\n  <<: {lr: 0.1}\n  a: 'off'\n  b: off\n  c: off\n"
    first = _read(tmp_path, text)
    again = _read(tmp_path, text)
    assert first == again
    data, problems = first
    assert data is None
    assert [(p.path, p.message.split(":")[0]) for p in problems] == [
        ("hyperparameters.b", "line 7"),
        ("hyperparameters.c", "line 8"),
    ]
    # The merge key's text as a plain value is a tag the spec files do not support.
    data, problems = _read(tmp_path, HEAD + "hyperparameters:\n  <<: {lr: 0.1}\n  m: <<\n")
    assert data is None
    assert [p.path for p in problems] == ["hyperparameters.m"]
    assert "merge" in problems[0].message


SMP_V1 = (
    "estimator: pytorch\nentry_point: train.py\ncheck_script: false\n"
    "instance_type: ml.p3.16xlarge\nframework_version: 1.13.1\npy_version: py39\n"
    "distribution:\n  mpi: {enabled: true, processes_per_host: 8}\n"
    "  smdistributed:\n    modelparallel: {enabled: true, parameters: %s}\n"
)


@pytest.mark.sdk2_only  # the model parallel library v1 runs on the estimator only
def test_a_model_parallel_parameters_file_is_relative_to_the_spec_and_inside_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from safe_estimators._commands.validate import validate_file

    project = tmp_path / "project"
    (project / "jobs").mkdir(parents=True)
    (project / ".git").mkdir()
    (project / "jobs" / "train.py").write_text("print('train')\n")
    (project / "jobs" / "mp.json").write_text('{"partitions": 2, "microbatches": 4, "ddp": true}')
    (tmp_path / "elsewhere.json").write_text('{"partitions": "a secret value", "ddp": true}')
    spec = project / "jobs" / "job.yaml"
    monkeypatch.chdir(tmp_path)  # the file is found from the spec's folder, not from here
    spec.write_text(SMP_V1 % "mp.json")
    assert [p for p in validate_file(spec) if p.severity == "error"] == []
    spec.write_text(SMP_V1 % "../../elsewhere.json")
    [problem] = [p for p in validate_file(spec) if p.severity == "error"]
    assert problem.path == "distribution.smdistributed.modelparallel.parameters"
    assert "outside the project" in problem.message
    # A file outside the project is not read: nothing of it reaches a message.
    assert not any("secret" in p.message for p in validate_file(spec))


def test_an_entry_point_is_bounded_by_source_dir_not_by_the_project(tmp_path: Path) -> None:
    # The SDK packages source_dir and starts entry_point inside it: a script beside source_dir,
    # though inside the project, is not in the package.
    from safe_estimators._commands.validate import validate_file

    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / ".git").mkdir()
    (project / "src" / "train.py").write_text("print('train')\n")
    (project / "beside.py").write_text("print('beside')\n")
    spec = project / "job.yaml"
    body = "instance_type: ml.p3.2xlarge\nframework_version: '2.0'\npy_version: py310\n"
    spec.write_text(f"estimator: pytorch\nsource_dir: src\nentry_point: train.py\n{body}")
    assert [p for p in validate_file(spec) if p.severity == "error"] == []
    spec.write_text(f"estimator: pytorch\nsource_dir: src\nentry_point: ../beside.py\n{body}")
    [problem] = [p for p in validate_file(spec) if p.severity == "error"]
    assert problem.path == "entry_point"
    assert problem.message.startswith("'../beside.py' resolves to ")
    assert problem.message.endswith(
        "outside source_dir; plan and submit would package and upload it."
    )
