"""How fast on sagemaker 3? Run by hand, with any Python:
``python benchmarks/bench_sdk3.py [--python PATH] [--runs 3]``.

Measures, with the interpreter of a sagemaker 3 environment (``--python``, by default the
development machine's ``.venv-sdk3``) and this checkout's code (``PYTHONPATH``), medians of
fresh processes interleaved with their reference (CPU time from ``wait4``):

1. ``safe-estimators plan`` of a ModelTrainer torchrun job (examples/model-trainer/
   torchrun-fsdp.yaml, built as a ModelTrainer on sagemaker 3) against
   ``python -c "from sagemaker.train import ModelTrainer"`` (target: at most 1.2x by CPU);
2. one-file ``safe-estimators validate --no-cache`` of the same spec against the bare stack's
   start, ``python -I -c "import attrs, cattrs, yaml, packaging.version, argparse, json"``, as
   bench_ci.py measures it on sagemaker 2 (target: at most 1.5x by CPU).

This is a measurement, not a test: nothing here asserts a threshold.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from _measure import EXAMPLES, ROOT, compile_bytecode, go_offline, interleaved_processes, machine

SPEC = EXAMPLES / "model-trainer" / "torchrun-fsdp.yaml"
DEFAULT_PYTHON = Path("/work/main/.venv-sdk3/bin/python")
BARE_STACK = "import attrs, cattrs, yaml, packaging.version, argparse, json"
TARGET_PLAN = 1.2
TARGET_VALIDATE = 1.5


def _sdk_version(python: Path, env: dict[str, str]) -> str:
    found = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('sagemaker'))"],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return found.stdout.strip()


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", type=Path, default=DEFAULT_PYTHON,
                        help="the interpreter of an environment with sagemaker 3")  # fmt: skip
    parser.add_argument("--runs", type=int, default=3, help="fresh processes per command")
    args = parser.parse_args()

    header = machine()  # the load before this benchmark adds its own
    env = {**go_offline(), "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    compile_bytecode()
    python = args.python
    cli = str(python.parent / "safe-estimators")
    version = _sdk_version(python, env)
    print(header)
    print(f"sagemaker {version} ({python}); this checkout's code through PYTHONPATH")
    print()

    commands = {
        "safe-estimators plan FILE": [cli, "plan", str(SPEC)],
        "from sagemaker.train import ModelTrainer": [
            str(python), "-c", "from sagemaker.train import ModelTrainer"
        ],
        "safe-estimators validate --no-cache FILE": [cli, "validate", "--no-cache", str(SPEC)],
        "bare stack": [str(python), "-I", "-c", BARE_STACK],
    }
    costs = interleaved_processes(commands, args.runs, env)
    print(f"{SPEC.relative_to(ROOT)}: fresh processes (median of {args.runs}, interleaved)")
    print(f"  {'':<42} {'wall':>8}    {'CPU':>7}    {'peak':>5}")
    for name, (wall, cpu, peak) in costs.items():
        print(f"  {name:<42} {wall * 1e3:8.0f} ms {cpu * 1e3:7.0f} ms {peak / 1024:5.0f} MiB")
    for (a, b), target in (
        (("safe-estimators plan FILE", "from sagemaker.train import ModelTrainer"), TARGET_PLAN),
        (("safe-estimators validate --no-cache FILE", "bare stack"), TARGET_VALIDATE),
    ):
        (wall_a, cpu_a, _), (wall_b, cpu_b, _) = costs[a], costs[b]
        print(
            f"  ratio {a.split()[1]} / {b.split(' import ')[-1]:<28} wall {wall_a / wall_b:5.2f}x"
            f"   CPU {cpu_a / cpu_b:5.2f}x   target <= {target}x by CPU"
        )
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"load average {load:.1f} at the end")


if __name__ == "__main__":
    sys.exit(main())
