"""An empty entry point names no script: the SDK has nothing to pack at fit() and the container
nothing to run, so it is refused where it was written. A recipe job and a ModelTrainer command
name their script themselves and need none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from safe_estimators._cli import main
from safe_estimators._resolve import check_arguments

BASE: dict[str, Any] = {
    "estimator": "pytorch",
    "instance_type": "ml.g5.xlarge",
    "framework_version": "2.3.0",
    "py_version": "py311",
    "role": "arn:aws:iam::111122223333:role/training",
    "check_script": False,
}
EMPTY = (
    "entry_point",
    "is empty: there is no training script to upload or run.",
    "give the training script's path (train.py), relative to source_dir if set.",
)


def _entry_point_problems(**options: Any) -> list[tuple[str, str, str]]:
    _, problems, _ = check_arguments({**BASE, **options})
    return [(p.path, p.message, p.hint) for p in problems if p.path == "entry_point"]


@pytest.mark.parametrize("source_dir", [None, "code"], ids=["alone", "with source_dir"])
def test_an_empty_entry_point_in_python_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source_dir: str | None
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "code").mkdir()
    assert _entry_point_problems(entry_point="", source_dir=source_dir) == [EMPTY]


def test_a_named_entry_point_is_not_called_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("print('training')\n")
    assert _entry_point_problems(entry_point="train.py") == []


@pytest.mark.parametrize("source_dir", ["", "source_dir: code\n"], ids=["alone", "source_dir"])
def test_an_empty_entry_point_in_a_spec_file_is_refused_where_it_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], source_dir: str
) -> None:
    (tmp_path / "code").mkdir()
    spec = tmp_path / "job.yaml"
    spec.write_text(
        'estimator: pytorch\nentry_point: ""\n' + source_dir + "instance_type: ml.g5.xlarge\n"
        "framework_version: '2.3.0'\npy_version: py311\n"
    )
    assert main(["validate", str(spec)]) == 1
    out = capsys.readouterr().out
    # As written, not rebased onto the spec's folder (which is no script either).
    assert f"{spec}:2:1: entry_point: {EMPTY[1]} ({EMPTY[2]})" in out
    assert str(tmp_path) + "'" not in out


def test_a_model_trainer_command_needs_no_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run.sh").write_text("python train.py\n")
    found = _entry_point_problems(
        target="model_trainer", source_code={"source_dir": ".", "command": "bash run.sh"}
    )
    assert EMPTY not in found


def test_a_recipe_job_needs_no_entry_point() -> None:
    spec = Path(__file__).parents[1] / "examples" / "hyperpod-recipe" / "job.yaml"
    assert main(["validate", str(spec)]) == 0
