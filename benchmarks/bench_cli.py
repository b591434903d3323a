"""How fast is ``safe-estimators validate``? Run by hand: ``python benchmarks/bench_cli.py``.

Prints, in one run on the same machine:
- the throughput of ``validate_file`` over 1,000 spec files in one process (target: at least
  3,000 files per second): copies of the examples with varied values (instance types and counts,
  hyperparameters, environment, job names) in YAML, JSON and TOML, written with a copy of the
  examples' code into a temporary project folder; the fastest of three passes, and the first;
- the throughput of the same checks on keyword arguments in one process, no file parsing
  (``check_arguments``, what the factories run before building; target: at least 10,000 jobs/s),
  next to what the bare SDK takes to construct the same estimators (the factories' final keyword
  arguments, in a process that never imports safe_estimators): the checks' share of a build;
- the wall and CPU time and peak memory of one ``safe-estimators validate FILE`` process next to
  ``python -c "import sagemaker"`` (medians of fresh processes, interleaved) and their ratio
  (target: at most 5 % of the wall time, at most 40 MiB);
- when the throughput misses its target (or with ``--profile``), where the time goes: the share
  of each validation stage and the hottest functions, from cProfile.

This is a measurement, not a test: nothing here asserts a threshold.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import logging
import pstats
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from _measure import (
    BIN,
    EXAMPLES,
    compile_bytecode,
    go_offline,
    interleaved_processes,
    machine,
    sdk_construction,
)

from safe_estimators._commands.validate import validate_file
from safe_estimators._resolve import check_arguments, resolve_arguments
from safe_estimators._spec_files.read import read_spec_data, relative_to_file

FILES = 1_000
TARGET_PER_SECOND = 3_000
TARGET_JOBS_PER_SECOND = 10_000
TARGET_WALL_SHARE = 0.05
TARGET_PEAK_MIB = 40
PASSES = 3  # over the files and jobs, in one process
RUNS = 5  # fresh processes of each command; importing sagemaker takes seconds
SDK_JOBS = 200  # estimators the bare SDK constructs, for the reference per job

# Instance types each example's job is valid on, to vary the copies without making them wrong.
INSTANCE_TYPES = {
    "compiler-single-gpu": ["ml.p3.2xlarge", "ml.g4dn.xlarge", "ml.g5.xlarge", "ml.g5.2xlarge"],
    "compiler-multi-gpu": ["ml.p3.8xlarge", "ml.p3.16xlarge", "ml.g5.12xlarge", "ml.g4dn.12xlarge"],
    "compiler-multi-node": ["ml.p4d.24xlarge", "ml.p3.16xlarge", "ml.p3dn.24xlarge"],
    "model-parallel-fp16": ["ml.p3.16xlarge", "ml.p4d.24xlarge", "ml.p3dn.24xlarge"],
    "model-parallel-v2": ["ml.p4d.24xlarge", "ml.p4de.24xlarge", "ml.p5.48xlarge"],
}
# Examples whose instance count can vary without breaking a degree that names the world size.
VARIABLE_COUNT = ("compiler-multi-node", "model-parallel-fp16")


# --- the spec files -------------------------------------------------------------------------


def _toml_value(value: Any) -> str:
    return json.dumps(value)  # strings, numbers and booleans are spelt alike in TOML and JSON


def _to_toml(data: dict[str, Any], prefix: str = "") -> str:
    """A TOML document for spec data: scalars and lists of scalars inline, tables and lists of
    tables as headers, to any depth."""
    lines = []
    for key, value in data.items():
        if not isinstance(value, dict) and not _is_table_list(value):
            lines.append(f"{key} = {_toml_value(value)}")
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            lines += ["", f"[{name}]", _to_toml(value, f"{name}.").rstrip("\n")]
        elif _is_table_list(value):
            for item in value:
                lines += ["", f"[[{name}]]", _to_toml(item, f"{name}.").rstrip("\n")]
    return "\n".join(line for line in lines) + "\n"


def _is_table_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _vary(example: str, data: dict[str, Any], rng: random.Random, index: int) -> dict[str, Any]:
    out = json.loads(json.dumps(data))
    if example in INSTANCE_TYPES:  # the others (groups, a memory fit) stay on their own types
        out["instance_type"] = rng.choice(INSTANCE_TYPES[example])
    if example in VARIABLE_COUNT:
        out["instance_count"] = rng.randint(1, 4)
    out["base_job_name"] = f"bench-{example}-{index}"
    hyperparameters = out.setdefault("hyperparameters", {})
    hyperparameters["learning_rate"] = round(rng.uniform(1e-5, 1e-3), 6)
    hyperparameters["seed"] = rng.randint(0, 10_000)
    hyperparameters["num_train_epochs"] = rng.randint(1, 5)
    out["environment"] = {"NCCL_DEBUG": rng.choice(["INFO", "WARN"]), "RUN_INDEX": str(index)}
    if example == "model-parallel-fp16":
        out["model_parallel"]["microbatches"] = rng.choice([1, 2, 4, 8])
    return out


def write_specs(folder: Path, count: int, seed: int = 0) -> list[Path]:
    """``count`` valid spec files: the examples with varied values, in all three formats."""
    rng = random.Random(seed)
    # One project (a folder with .git) holds the copies and the examples' code they point at:
    # paths that leave the spec's project are refused, as they would be for a user.
    (folder / ".git").mkdir()
    shutil.copytree(EXAMPLES, folder / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    sources = []
    for spec in sorted((folder / "examples").glob("*/job.*")):
        data, problems = read_spec_data(spec)
        assert data is not None, problems
        sources.append((spec.parent.name, relative_to_file(spec.parent, data)))
    paths = []
    for index in range(count):
        example, data = sources[index % len(sources)]
        varied = _vary(example, data, rng, index)
        suffix = ("yaml", "json", "toml")[index // len(sources) % 3]
        path = folder / f"{index:04d}-{example}.{suffix}"
        if suffix == "yaml":
            path.write_text(yaml.safe_dump(varied, sort_keys=False))
        elif suffix == "json":
            path.write_text(json.dumps(varied, indent=2))
        else:
            path.write_text(_to_toml(varied))
        paths.append(path)
    return paths


# --- measurements ---------------------------------------------------------------------------


def validate_all(paths: list[Path]) -> tuple[float, int, int]:
    """Seconds to validate every file, the number of valid files and of problems reported."""
    start = time.perf_counter()
    results = [validate_file(path) for path in paths]
    seconds = time.perf_counter() - start
    valid = sum(not any(p.severity == "error" for p in problems) for problems in results)
    return seconds, valid, sum(map(len, results))


def check_all(jobs: list[dict[str, Any]]) -> tuple[float, int]:
    """Seconds to check every job's keyword arguments, and the number with no error."""
    start = time.perf_counter()
    results = [check_arguments(job)[1] for job in jobs]
    seconds = time.perf_counter() - start
    return seconds, sum(not any(p.severity == "error" for p in found) for found in results)


def sdk_reference(jobs: list[dict[str, Any]], env: dict[str, str]) -> float:
    """Median seconds the bare SDK takes to construct one of these jobs' estimators, with the
    keyword arguments our factories would hand it, in a process of its own (after one
    construction that loads the estimator's modules). Jobs with instance_groups are left out:
    the SDK takes InstanceGroup objects, which JSON cannot carry."""
    sdk_jobs = []
    logging.disable(logging.WARNING)  # resolving logs each job's warnings; they are counted above
    for job in jobs:
        resolved = resolve_arguments(job)
        kwargs = dict(resolved.kwargs)
        if "instance_groups" in kwargs:
            continue
        if resolved.training_compiler is not None:
            kwargs["compiler_config"] = {"enabled": True, "debug": resolved.training_compiler.debug}
        name = resolved.estimator
        sdk_jobs.append(
            {"module": name, "class": {"huggingface": "HuggingFace"}.get(name, "PyTorch"),
             "kwargs": kwargs}
        )  # fmt: skip
    logging.disable(logging.NOTSET)
    times = sdk_construction(sdk_jobs[:1] + sdk_jobs, 1, env)
    return statistics.median(runs[0] for runs in times[1:])


# Validation stages: (label, file name ending, function name) of the function that does each.
STAGES = [
    ("read and parse the file (YAML/JSON/TOML)", "_files.py", "read_spec_data"),
    ("  of which YAML (PyYAML's parser, our loader)", "_yaml.py", "load_yaml"),
    ("  of which TOML (tomllib)", "tomllib/_parser.py", "loads"),
    ("paths inside the project", "_files.py", "containment_problems"),
    ("structure into JobSpec (cattrs)", "_spec.py", "structure_spec"),
    ("rules and resolver checks", "_resolve.py", "check"),
    ("  of which source_dir's walk and upload rule", "safety.py", "source_dir_contents"),
    ("  of which the training script (cached per content)", "_resolve.py", "check_entry_point"),
    ("  of which secrets in hyperparameters/environment", "safety.py", "no_secrets"),
    ("  of which CreateTrainingJob limits", "safety.py", "api_limits"),
    ("  of which model parallel rules", "_resolve.py", "_model_parallel_rules"),
]


def profile(paths: list[Path], top: int = 15) -> None:
    """Where the time goes: stage shares and the hottest functions."""
    profiler = cProfile.Profile()
    profiler.runcall(lambda: [validate_file(path) for path in paths])
    stats = pstats.Stats(profiler)
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    total = max(ct for (_, _, name), (_, _, _, ct, _) in raw.items() if name == "validate_file")
    print(f"\nwhere the time goes (cProfile, {len(paths)} files, {total:.2f} s profiled)")
    for label, ending, function in STAGES:
        seconds = max(
            (
                cumulative
                for (file, _, name), (_, _, _, cumulative, _) in raw.items()
                if file.endswith(ending) and name == function
            ),
            default=0.0,
        )
        share, per_file = seconds / total * 100, seconds / len(paths) * 1e3
        print(f"  {label:<44} {share:5.1f} %  {per_file:7.3f} ms/file")
    print("\nhottest functions by own time")
    stats.sort_stats("tottime").print_stats(top)


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=FILES)
    parser.add_argument("--runs", type=int, default=RUNS, help="fresh processes per command")
    parser.add_argument("--profile", action="store_true", help="profile even if on target")
    args = parser.parse_args()

    header = machine()  # the load before this benchmark adds its own
    env = go_offline()
    compile_bytecode()
    folder = Path(tempfile.mkdtemp(prefix="bench-cli-"))
    try:
        paths = write_specs(folder, args.files)
        first = paths[0]
        cold_start = time.perf_counter()
        validate_file(first)  # imports PyYAML and the rules' data; not part of the throughput
        cold = time.perf_counter() - cold_start
        # The fastest of PASSES passes (the machine's other load only ever slows a pass down),
        # and the first (later passes meet values the process has already resolved).
        passes = [validate_all(paths) for _ in range(PASSES)]
        first_rate = len(paths) / passes[0][0]
        seconds, valid, problems = min(passes)
        rate = len(paths) / seconds
        jobs = []
        for path in paths:
            data, _ = read_spec_data(path)
            assert data is not None
            data.pop("inputs", None)
            jobs.append(relative_to_file(path.parent, data))
        check_all(jobs[:10])  # warm, as above
        job_seconds, job_valid = min(check_all(jobs) for _ in range(PASSES))
        job_rate = len(jobs) / job_seconds
        sdk_seconds = sdk_reference(jobs[:SDK_JOBS], env)

        costs = interleaved_processes(
            {
                "validate": [str(BIN / "safe-estimators"), "validate", str(first)],
                "sagemaker": [sys.executable, "-c", "import sagemaker"],
                "python": [sys.executable, "-c", "pass"],
            },
            args.runs,
            env,
        )

        print(header)
        print()
        print(f"validate_file over {len(paths)} spec files in one process")
        print(f"  valid files                    {valid:9d} of {len(paths)} ({problems} problems)")
        print(f"  first file (imports, caches)   {cold * 1e3:9.1f} ms")
        print(f"  all files (fastest of {PASSES})       {seconds:9.2f} s")
        print(f"  throughput                     {rate:9.0f} files/s", end="")
        print(f"  (target >= {TARGET_PER_SECOND})")
        print(f"  per file                       {seconds / len(paths) * 1e3:9.2f} ms")
        print(f"  first pass only                {first_rate:9.0f} files/s")
        print(f"check_arguments over the same {len(jobs)} jobs as keyword arguments (no files)")
        print(f"  valid jobs                     {job_valid:9d} of {len(jobs)}")
        print(f"  throughput                     {job_rate:9.0f} jobs/s", end="")
        print(f"  (target >= {TARGET_JOBS_PER_SECOND})")
        print(f"  per job                        {job_seconds / len(jobs) * 1e3:9.2f} ms")
        share = job_seconds / len(jobs) / sdk_seconds
        print(f"  the bare SDK constructing them (median of the first {SDK_JOBS}, its own process)")
        print(
            f"    per job                    {sdk_seconds * 1e3:9.2f} ms "
            f"({1 / sdk_seconds:.0f}/s); the checks cost {share:.1%} of it"
        )
        print()
        print(f"one process (median of {args.runs}, interleaved)      wall        CPU     peak")
        labels = {
            "validate": "safe-estimators validate FILE",
            "sagemaker": "python -c 'import sagemaker'",
            "python": "python -c pass (the floor)",
        }
        for name, (wall, cpu, peak) in costs.items():
            mib = peak / 1024
            print(f"  {labels[name]:<31} {wall * 1e3:8.0f} ms {cpu * 1e3:7.0f} ms {mib:5.0f} MiB")
        (cli_wall, cli_cpu, cli_peak), (sdk_wall, sdk_cpu, _) = (
            costs["validate"],
            costs["sagemaker"],
        )
        print(
            f"  ratio validate / import sagemaker  {cli_wall / sdk_wall:6.3f}     "
            f"{cli_cpu / sdk_cpu:6.3f}   target <= {TARGET_WALL_SHARE} (wall), "
            f"<= {TARGET_PEAK_MIB} MiB (now {cli_peak / 1024:.0f})"
        )
        if args.profile or rate < TARGET_PER_SECOND:
            if rate < TARGET_PER_SECOND:
                print(f"\nbelow target: {rate:.0f} files/s < {TARGET_PER_SECOND} files/s")
            profile(paths[: min(len(paths), 200)])
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
