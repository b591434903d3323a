"""How long does the example notebook take headless? Run by hand:

    python benchmarks/bench_notebook.py [--against main] [--runs 3]

Times ``cd examples && jupyter execute notebook.ipynb`` (wall time of the whole command, median
of fresh runs), next to an empty notebook (the floor: Jupyter and the kernel starting) and, with
``--against REV``, the same notebook run with the code of another git revision (its
``safe_estimators`` and ``instance_catalog`` put first on the kernel's PYTHONPATH), interleaved
with this checkout's runs so that the machine's load hits both alike. The target is under half
of main's time. This is a measurement, not a test: nothing here asserts a threshold.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _measure import (
    BIN,
    EXAMPLES,
    checkout,
    compile_bytecode,
    go_offline,
    machine,
    process_costs,
)

NOTEBOOK = EXAMPLES / "notebook.ipynb"
EMPTY = {
    "cells": [{"cell_type": "code", "metadata": {}, "source": "", "outputs": []}],
    "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
    "nbformat": 4,
    "nbformat_minor": 5,
}


def _imported_from(env: dict[str, str]) -> str:
    """Where the kernel (started in examples/ with ``env``) imports safe_estimators from."""
    code = "import safe_estimators; print(safe_estimators.__file__)"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=EXAMPLES, env=env, capture_output=True, text=True
    )
    return result.stdout.strip()


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", metavar="REV", help="also run the notebook with REV's code")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    header = machine()  # the load before this benchmark adds its own
    env = go_offline()
    compile_bytecode()
    folder = Path(tempfile.mkdtemp(prefix="bench-notebook-"))
    try:
        empty = folder / "empty.ipynb"
        empty.write_text(json.dumps(EMPTY))
        jupyter = str(BIN / "jupyter")
        # jupyter execute runs the kernel in the notebook's folder: examples/, as the README says.
        commands = {
            "this checkout": [jupyter, "execute", str(NOTEBOOK)],
            "empty notebook (the floor)": [jupyter, "execute", str(empty)],
        }
        envs = {"this checkout": env, "empty notebook (the floor)": env}
        if args.against:
            code = checkout(args.against, folder / "against")
            other = {**env, "PYTHONPATH": str(code)}
            where = _imported_from(other)
            if not where.startswith(str(code)):
                raise RuntimeError(f"the kernel would import safe_estimators from {where}")
            commands[args.against] = commands["this checkout"]
            envs[args.against] = other
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):  # interleaved: one run of each in turn
            for name, command in commands.items():
                times[name].append(process_costs(command, envs[name], cwd=EXAMPLES)[0])

        print(header)
        print()
        print(f"jupyter execute, wall time (median of {args.runs} runs, interleaved)")
        medians = {name: statistics.median(values) for name, values in times.items()}
        for name, seconds in medians.items():
            print(f"  {name:<30} {seconds:7.1f} s")
        if args.against:
            ratio = medians["this checkout"] / medians[args.against]
            print(f"  ratio this checkout / {args.against:<13} {ratio:7.2f}   target < 0.5")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
