"""The pre-commit hooks as a user's repository runs them: the real `pre-commit try-repo` on this
checkout, in a temporary git repository with a good and a bad spec.

pre-commit builds a fresh hook environment each time (it installs this checkout and the
SageMaker SDK from the package index, 1.5-3 minutes), so this test is out of the default run:

    SAFE_ESTIMATORS_TRY_REPO=1 python -m pytest tests/test_pre_commit.py -m pre_commit

It uses `pre-commit` from PATH, or the one $PRE_COMMIT names, and is skipped without one (or
without a package index to install from).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
PRE_COMMIT = os.environ.get("PRE_COMMIT") or shutil.which("pre-commit")

pytestmark = [
    pytest.mark.pre_commit,
    pytest.mark.skipif(
        os.environ.get("SAFE_ESTIMATORS_TRY_REPO") != "1",
        reason="minutes long: set SAFE_ESTIMATORS_TRY_REPO=1 to run pre-commit try-repo",
    ),
    pytest.mark.skipif(PRE_COMMIT is None, reason="pre-commit is not installed"),
]


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def _try_repo(repo: Path, home: Path, *files: str) -> subprocess.CompletedProcess[str]:
    assert PRE_COMMIT is not None
    environment = {**os.environ, "PRE_COMMIT_HOME": str(home), "NO_COLOR": "1"}
    environment.pop("SAFE_ESTIMATORS_CACHE_DIR", None)
    return subprocess.run(
        [PRE_COMMIT, "try-repo", str(ROOT), "--color", "never", "--files", *files],
        cwd=repo,
        env=environment,
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_try_repo_passes_a_good_spec_and_annotates_a_bad_one(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    example = ROOT / "examples/compiler-single-gpu"
    shutil.copy(example / "train.py", repo / "train.py")
    good = (example / "job.yaml").read_text()
    (repo / "good.yaml").write_text(good)
    bad = good.replace("ml.p3.2xlarge", "ml.p3.2xlarg").replace(
        "entry_point: train.py", "entry_point: bad_train.py"
    )
    (repo / "bad.yaml").write_text(bad)
    (repo / "bad_train.py").write_text('import os\nos.environ["NCCL_DEBUG"] = 1\n')
    # A workflow beside the specs: YAML that names no estimator is skipped, not refused.
    (repo / "workflow.yml").write_text("name: ci\non: push\n")
    _git(repo, "add", "-A")
    home = tmp_path / "pre-commit-home"

    passed = _try_repo(repo, home, "good.yaml", "workflow.yml")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "safe-estimators validate" in passed.stdout
    assert "safe-estimators lint" in passed.stdout

    failed = _try_repo(repo, home, "bad.yaml")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    line = bad.splitlines().index("instance_type: ml.p3.2xlarg") + 1
    assert f"bad.yaml:{line}:1: instance_type: 'ml.p3.2xlarg' is not" in failed.stdout
    assert "bad_train.py:2: error: `os.environ['NCCL_DEBUG'] = 1`" in failed.stdout
