"""Two messages new users met: lint printed its fix twice, and the hint for a missing framework
version pointed at `plan`, which stopped at the same problem and listed nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from safe_estimators._cli import main
from safe_estimators._facts import tables
from safe_estimators._facts.versions import framework_container, huggingface_container
from safe_estimators._resolve import check_arguments

SCRIPT = str(Path(__file__).parent / "fixtures" / "jobs" / "train.py")


def test_lint_prints_each_fix_once(tmp_path, capsys):
    spec = tmp_path / "job.yaml"
    spec.write_text("estimator: pytorch\ninstance_type: ml.g5.xlarge\n")
    assert main(["lint", str(spec)]) == 1
    out = capsys.readouterr().out
    # The spec's own problems as validate prints them (one verdict, one wording).
    assert f"{spec}: entry_point: is required but missing. (add it.)" in out
    assert out.count("add it.") == 1, out


def _hints(**arguments):
    _, problems, _ = check_arguments(
        {"entry_point": SCRIPT, "instance_type": "ml.g5.xlarge", **arguments}
    )
    return {p.path: p.hint for p in problems}


def test_a_missing_pytorch_version_hint_lists_the_sdks_versions():
    known = framework_container(tables.IMAGE_CONFIGS[("pytorch", False)], "").known
    hint = _hints(estimator="pytorch")["framework_version"]
    assert "plan" not in hint
    assert all(version in hint for version in known[-12:])  # the newest twelve
    assert f"and {len(known) - 12} older" in hint


@pytest.mark.parametrize(
    ("arguments", "path", "listed"),
    [
        ({"framework_version": "2.1.0"}, "py_version", "for PyTorch 2.1.0: py310"),
        ({"transformers_version": "4.36.0"}, "pytorch_version",
         "for transformers 4.36.0: PyTorch 2.1.0"),
        ({"transformers_version": "4.36.0", "pytorch_version": "2.1.0"}, "py_version",
         "for PyTorch 2.1.0: py310"),
    ],
)  # fmt: skip
def test_a_missing_version_hint_lists_what_goes_with_the_others(arguments, path, listed):
    kind = "pytorch" if "framework_version" in arguments else "huggingface"
    assert listed in _hints(estimator=kind, **arguments)[path]


def test_a_missing_transformers_version_hint_lists_the_sdks_versions():
    table = tables.IMAGE_CONFIGS[("huggingface", False)]
    newest = huggingface_container(table, "", "")[0].known[-1]
    assert f"transformers {newest}" in _hints(estimator="huggingface")["transformers_version"]
