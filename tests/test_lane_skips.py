"""A skipped test is a visible failure of the lane that should run it (tests/conftest.py).

The suite's conftest runs in a fresh pytest over a scratch test module: a skip for a missing
tool fails the run and is listed; the other generation's tests are skipped without failing it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from conftest import SDK3

CONFTEST = Path(__file__).parent / "conftest.py"
OTHER = "sdk2_only" if SDK3 else "sdk3_only"


def _run(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    shutil.copy(CONFTEST, tmp_path / "conftest.py")
    shutil.copy(CONFTEST.parent / "mutation_scope.py", tmp_path)  # the conftest imports it
    (tmp_path / "test_scratch.py").write_text(source)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip


def test_a_skip_for_a_missing_tool_fails_the_run_and_is_listed(tmp_path):
    done = _run(tmp_path, "import pytest\n\ndef test_x():\n    pytest.skip('tool missing')\n")
    assert done.returncode == 1, done.stdout
    assert "skipped where they should run (this fails the run)" in done.stdout
    assert "test_scratch.py::test_x: Skipped: tool missing" in done.stdout


def test_the_other_generations_tests_are_skipped_without_failing_the_run(tmp_path):
    source = f"import pytest\n\n@pytest.mark.{OTHER}\ndef test_y():\n    pass\n"
    done = _run(tmp_path, source)
    assert done.returncode == 0, done.stdout
    assert "1 skipped" in done.stdout and "should run" not in done.stdout
