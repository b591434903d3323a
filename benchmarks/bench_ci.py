"""``validate`` as CI and pre-commit run it: ``python benchmarks/bench_ci.py [--verdicts REV]``.

Prints one table of the four targets of CI use, each beside its reference measured in the same
run on the same machine:

1. one-file ``safe-estimators validate FILE`` (a fresh process, ``--no-cache``) against the bare
   stack's start, ``python -I -c "import attrs, cattrs, yaml, packaging.version, argparse,
   json"``: medians of interleaved fresh processes (target: at most 1.25x);
2. a spec with a misspelt instance type against the same spec spelt right, in one process, each
   file distinct (a different misspelling each time, so nothing is remembered between them):
   median seconds per file (target: at most 1.25x);
3. 10,000 distinct spec files in one ``validate`` process, by CPU: with the cache off, on the
   first run (every verdict written) and on the second (every verdict read back), and the peak
   memory (targets: at least 1,500 and 15,000 files/s, under 60 MiB);
4. with ``--verdicts REV``: ``compare_verdicts.py --against REV``, the files whose verdict changed
   (target: none).

This is a measurement, not a test: nothing here asserts a threshold.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _measure import BIN, ROOT, compile_bytecode, go_offline, interleaved_processes, machine

sys.path.insert(0, str(ROOT))  # this checkout's code, in this process too (the misspellings)
from bench_cli import write_specs

BARE_STACK = "import attrs, cattrs, yaml, packaging.version, argparse, json"
FILES = 10_000
RUNS = 9
SAMPLES = 150  # files of each kind for the misspelling ratio

TARGET_START = 1.25
TARGET_MISSPELT = 1.25
TARGET_UNCACHED = 1_500
TARGET_CACHED = 15_000
TARGET_PEAK_MIB = 60


def _validate_command(*argv: str) -> list[str]:
    return [str(BIN / "safe-estimators"), "validate", *argv]


def start_costs(
    spec: Path, env: dict[str, str], runs: int, cache: Path
) -> dict[str, tuple[float, float, int]]:
    """Wall, CPU and peak of one-file validate (cache off, and its verdict cached) and of the
    bare stack's start."""
    cached = {**env, "SAFE_ESTIMATORS_CACHE_DIR": str(cache)}
    interleaved_processes({"warm": _validate_command(str(spec))}, 1, cached)  # writes the entry
    costs = interleaved_processes(
        {
            "validate": _validate_command("--no-cache", str(spec)),
            "bare": [sys.executable, "-I", "-c", BARE_STACK],
        },
        runs,
        env,
    )
    costs.update(interleaved_processes({"cached": _validate_command(str(spec))}, runs, cached))
    return costs


def _misspelt(name: str, rng: random.Random) -> str:
    """``name`` with one character of its size dropped or doubled: a typo, not another type."""
    family, _, size = name.rpartition(".")
    i = rng.randrange(len(size))
    size = size[:i] + size[i + 1 :] if rng.random() < 0.5 else size[:i] + size[i] + size[i:]
    return f"{family}.{size}"


def misspelt_ratio(folder: Path) -> tuple[float, float]:
    """Median seconds to validate a spec with a misspelt instance type, and spelt right."""
    from instance_catalog import instance_types
    from safe_estimators._commands.validate import validate_file

    rng = random.Random(3)
    names = [t.name for t in instance_types()]
    text = (folder / "examples/compiler-single-gpu/job.yaml").read_text()
    text = text.replace("source_dir: .", "source_dir: ../examples/compiler-single-gpu")
    (folder / "misspelt").mkdir()
    catalog = set(names)
    right, wrong = [], []
    for i in range(SAMPLES):
        name = rng.choice(names)
        typo = _misspelt(name, rng)
        while typo in catalog:
            typo = _misspelt(name, rng)
        for kind, value, into in (("right", name, right), ("wrong", typo, wrong)):
            path = folder / "misspelt" / f"{kind}-{i}.yaml"
            path.write_text(text.replace("ml.p3.2xlarge", value).replace("bert-mlm", f"b{i}"))
            into.append(path)
    validate_file(right[0])  # imports and the catalog: not part of either
    validate_file(wrong[0])

    def seconds(path: Path) -> float:
        start = time.perf_counter()
        validate_file(path)
        return time.perf_counter() - start

    # Interleaved, so that the machine's load falls on both alike.
    right_times, wrong_times = [], []
    for index in range(1, SAMPLES):
        right_times.append(seconds(right[index]))
        wrong_times.append(seconds(wrong[index]))
    return statistics.median(wrong_times), statistics.median(right_times)


def throughput(folder: Path, env: dict[str, str]) -> dict[str, tuple[float, float, int]]:
    """CPU seconds, wall seconds and peak KiB of one validate process over the folder: cache
    off, cache empty (writing), cache full (reading)."""
    from _measure import process_costs

    cache = folder / "cache"
    env = {**env, "SAFE_ESTIMATORS_CACHE_DIR": str(cache)}
    out = {}
    for name, argv in (
        ("off", _validate_command("--no-cache", str(folder / "specs"))),
        ("first", _validate_command(str(folder / "specs"))),
        ("cached", _validate_command(str(folder / "specs"))),
    ):
        wall, cpu, peak = process_costs(argv, env)
        out[name] = (cpu, wall, peak)
    return out


def verdicts(against: str) -> str:
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks/compare_verdicts.py"), "--against", against],
        capture_output=True,
        text=True,
        check=False,
    )
    return (run.stdout.splitlines() or [run.stderr.strip()[-200:]])[0]


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=FILES)
    parser.add_argument("--runs", type=int, default=RUNS, help="fresh processes per command")
    parser.add_argument("--verdicts", metavar="REV", help="also run compare_verdicts.py")
    args = parser.parse_args()
    header = machine()
    env = {**go_offline(), "PYTHONPATH": str(ROOT)}  # this checkout, whatever is installed
    compile_bytecode()
    folder = Path(tempfile.mkdtemp(prefix="bench-ci-"))
    try:
        specs = folder / "specs"
        specs.mkdir()
        paths = write_specs(specs, args.files)
        one = paths[0]
        start = start_costs(one, env, args.runs, folder / "one-file-cache")
        wrong, right = misspelt_ratio(specs)
        shutil.rmtree(specs / "misspelt")
        runs = throughput(folder, env)
        compared = verdicts(args.verdicts) if args.verdicts else "not run (--verdicts REV)"
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    count = len(paths)
    off, first, cached = (runs[k] for k in ("off", "first", "cached"))
    peak = max(r[2] for r in runs.values()) / 1024
    (wall, cpu, _), (bare_wall, bare_cpu, _) = start["validate"], start["bare"]
    cached_wall, cached_cpu, _ = start["cached"]
    rows = [
        ("one-file validate --no-cache (wall)", f"{wall * 1e3:.0f} ms",
         f"bare stack {bare_wall * 1e3:.0f} ms", f"{wall / bare_wall:.2f}x", f"<= {TARGET_START}x"),
        ("  the same by CPU", f"{cpu * 1e3:.0f} ms", f"bare stack {bare_cpu * 1e3:.0f} ms",
         f"{cpu / bare_cpu:.2f}x", ""),
        ("one-file validate, cached (wall)", f"{cached_wall * 1e3:.0f} ms",
         f"bare stack {bare_wall * 1e3:.0f} ms", f"{cached_wall / bare_wall:.2f}x",
         f"<= {TARGET_START}x"),
        ("  the same by CPU", f"{cached_cpu * 1e3:.0f} ms", f"bare stack {bare_cpu * 1e3:.0f} ms",
         f"{cached_cpu / bare_cpu:.2f}x", ""),
        ("misspelt instance type (per file)", f"{wrong * 1e3:.2f} ms",
         f"spelt right {right * 1e3:.2f} ms", f"{wrong / right:.2f}x", f"<= {TARGET_MISSPELT}x"),
        (f"{count:,} files, no cache (CPU)", f"{count / off[0]:,.0f} files/s",
         f"{off[0]:.1f} s CPU, {off[1]:.1f} s wall", "", f">= {TARGET_UNCACHED:,}/s"),
        (f"{count:,} files, first run (CPU)", f"{count / first[0]:,.0f} files/s",
         f"{first[0]:.1f} s CPU, {first[1]:.1f} s wall", "", "(writes every verdict)"),
        (f"{count:,} files, all cached (CPU)", f"{count / cached[0]:,.0f} files/s",
         f"{cached[0]:.2f} s CPU, {cached[1]:.2f} s wall", f"{off[0] / cached[0]:.0f}x faster",
         f">= {TARGET_CACHED:,}/s"),
        ("peak memory (largest run)", f"{peak:.0f} MiB", "", "", f"< {TARGET_PEAK_MIB} MiB"),
        ("compare_verdicts.py", compared, "", "", "no change"),
    ]  # fmt: skip
    print(header)
    print(f"PYTHONPATH={ROOT}; {args.runs} interleaved fresh processes for the first row")
    print()
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    head = ("measurement", "value", "reference (same run)", "ratio", "target")
    widths = [max(w, len(h)) for w, h in zip(widths, head, strict=True)]
    for row in (head, *rows):
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))


if __name__ == "__main__":
    main()
