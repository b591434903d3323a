"""The hand-made mutants of issue 31 that mutmut does not make (a module constant, a changed
comparison value, a swapped bound): each applied to a copy of the package, then the test file
that covers it is run. Run by hand: ``python benchmarks/mutants_by_hand.py`` (about 3 minutes
on 2 cores); prints one line per mutant, killed (with the test that failed) or survived, and
exits 1 if any survived.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# (name, file, original text, mutated text, the test file that covers it)
MUTANTS = [
    (
        "optimizer offload counted only for parameters",
        "safe_estimators/_memory/accounting.py",
        "on_gpu_optimizer = 0 if layout.offload else 1",
        'on_gpu_optimizer = 0 if layout.offload == "parameters" else 1',
        "tests/test_memory.py",
    ),
    (
        "entry_point contained by the project root instead of source_dir",
        "safe_estimators/_spec_files/read.py",
        'checks.append(("entry_point", entry_point, target, inside))',
        'checks.append(("entry_point", entry_point, target, real_root))',
        "tests/test_spec_loading.py",
    ),
    (
        "keep-alive limit 3601 s instead of 3600 s",
        "safe_estimators/_rules/resources.py",
        "DOCUMENTED_KEEP_ALIVE_MAX = 3600",
        "DOCUMENTED_KEEP_ALIVE_MAX = 3601",
        "tests/test_platform.py",
    ),
    (
        "sharded data parallel divisibility skipped for degree 2",
        "safe_estimators/_distributions/model_parallel/rules.py",
        "if not sharded or sharded <= 1:",
        "if not sharded or sharded <= 2:",
        "tests/test_model_parallel.py",
    ),
]


def run(name: str, file: str, original: str, mutated: str, tests: str) -> bool:
    """Whether the mutant was killed; prints the verdict."""
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder)
        for package in ("safe_estimators", "instance_catalog"):
            shutil.copytree(ROOT / package, copy / package)
        text = (copy / file).read_text()
        if text.count(original) != 1:
            print(f"{name}: the original text is not in {file} once: update this script")
            return False
        (copy / file).write_text(text.replace(original, mutated))
        # From the copy's folder, so that the mutated package is the one imported.
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
             "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml"), str(ROOT / tests)],
            cwd=copy, env={**os.environ, "PYTHONPATH": str(copy)}, capture_output=True, text=True,
        )  # fmt: skip
    failed = [line for line in done.stdout.splitlines() if line.startswith("FAILED")]
    test = failed[0][7:].rsplit("/tests/", 1)[-1] if failed else ""
    print(f"{name}: " + (f"killed ({test})" if failed else "SURVIVED"))
    return bool(failed)


def main() -> int:
    killed = [run(*mutant) for mutant in MUTANTS]
    return 0 if all(killed) else 1


if __name__ == "__main__":
    sys.exit(main())
