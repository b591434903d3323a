"""Time and memory of the hostile inputs the issue names, one fresh process each. Run by hand:

    .venv/bin/python benchmarks/bench_hostile.py [--commands validate,plan]

Generates the corpus of tests/hostile_corpus.py in a temporary folder and runs the alias bomb,
the FIFO, /dev/zero, the 100 MB spec, the 10^5-key spec (and the script-module cases) through
the CLI, printing the exit code, the wall time of the whole process (interpreter start
included) and its peak resident memory. Target: each under 5 s and 500 MB, with exit 1.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))

from hostile_corpus import generate, remove_deep_folders

NAMES = (
    "alias-bomb-hyperparameters",
    "alias-bomb-environment",
    "fifo",
    "dev-zero",
    "100mb-spec",
    "1e5-unknown-keys",
    "9e3-unknown-keys",
    "ten-1.9mb-modules",
    "ten-0.4mb-modules",
    "1000-deep-folder",
    "netrc-symlink",
)


def _run(command: str, target: Path) -> tuple[int, float, float]:
    """Exit code, wall seconds and peak RSS in MB of one fresh process (os.wait4's rusage)."""
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "safe_estimators._cli", command, str(target)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, time.monotonic() - start, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--commands", default="validate,plan")
    args = parser.parse_args()
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-west-2")
    with tempfile.TemporaryDirectory() as folder:
        cases = {case.name: case for case in generate(Path(folder))}
        print(f"{'case':28} {'command':9} exit  seconds  peak MB")
        for name in NAMES:
            for command in args.commands.split(","):
                code, seconds, peak = _run(command, cases[name].target)
                print(f"{name:28} {command:9} {code:4} {seconds:8.2f} {peak:8.0f}")
        remove_deep_folders(Path(folder))


if __name__ == "__main__":
    main()
