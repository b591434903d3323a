"""What the benchmarks share: an offline environment, fresh-process timing, bytecode up to date."""

from __future__ import annotations

import compileall
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
BIN = Path(sys.executable).parent

# Offline, before anything imports boto3: building estimators makes boto3 clients, which look for
# credentials (and would ask the EC2 metadata service without these). No SDK config file unless
# a benchmark names one (the SDK's default paths, ~/.config/sagemaker and /etc/xdg/sagemaker,
# are reported by `sdk_config_files()`).
OFFLINE = {
    "AWS_DEFAULT_REGION": "us-west-2",
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "AWS_EC2_METADATA_DISABLED": "true",
    "SAGEMAKER_SUPPRESS_V2_WARNING": "1",
}
_UNSET = (
    "AWS_PROFILE",
    "AWS_ENDPOINT_URL",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "SAGEMAKER_USER_CONFIG_OVERRIDE",
    "SAGEMAKER_ADMIN_CONFIG_OVERRIDE",
)


def go_offline() -> dict[str, str]:
    """Put this process in the offline environment; return it, for child processes."""
    os.environ.update(OFFLINE)
    for name in _UNSET:
        os.environ.pop(name, None)
    return dict(os.environ)


def sdk_config_files() -> list[str]:
    """The SDK defaults config files at the SDK's default paths (there should be none)."""
    paths = [Path("/etc/xdg/sagemaker/config.yaml"), Path.home() / ".config/sagemaker/config.yaml"]
    return [str(p) for p in paths if p.exists()]


def compile_bytecode() -> None:
    """Write the packages' .pyc files, as an install does: otherwise every fresh process
    compiles them again (PYTHONDONTWRITEBYTECODE), which is not what users pay."""
    for package in ("safe_estimators", "instance_catalog"):
        compileall.compile_dir(str(ROOT / package), quiet=1)


# Started from a minimal interpreter: a child's peak memory includes the memory of the process it
# was forked from, so forking from this (large) process would count it.
_LAUNCHER = """
import os, sys, time
start = time.perf_counter()
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ, file_actions=[
    (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
    (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
])
_, status, usage = os.wait4(pid, 0)
wall = time.perf_counter() - start
print(os.waitstatus_to_exitcode(status), wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss)
"""


def process_costs(
    command: list[str], env: dict[str, str], cwd: Path | None = None
) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + system) and peak memory (KiB) of one fresh process."""
    result = subprocess.run(
        [sys.executable, "-S", "-c", _LAUNCHER, *command],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    code, wall, cpu, peak = result.stdout.split()
    if int(code) not in (0, 1):
        raise RuntimeError(f"{command} exited with {code}")
    return float(wall), float(cpu), int(peak)


def interleaved_processes(
    commands: dict[str, list[str]], runs: int, env: dict[str, str]
) -> dict[str, tuple[float, float, int]]:
    """Median wall, median CPU and largest peak memory of each command, run in turn so that
    the machine's load hits all of them alike."""
    samples: dict[str, list[tuple[float, float, int]]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, command in commands.items():
            samples[name].append(process_costs(command, env))
    return {
        name: (
            statistics.median(s[0] for s in values),
            statistics.median(s[1] for s in values),
            max(s[2] for s in values),
        )
        for name, values in samples.items()
    }


def machine() -> str:
    """One line on where the figures come from."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"Python {sys.version.split()[0]} on {sys.platform}, {os.cpu_count()} CPUs, "
        f"load average {load:.1f} at start (figures are noisy above {os.cpu_count()})"
    )


def checkout(revision: str, folder: Path) -> Path:
    """The packages of ``revision``, extracted into ``folder`` (with their bytecode)."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", revision, "safe_estimators", "instance_catalog"],
        capture_output=True,
        check=True,
    ).stdout
    folder.mkdir()
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(folder)], check=True)
    return folder


# Run in a fresh interpreter that never imports safe_estimators: the SDK on its own, constructing
# each job's estimator with the final keyword arguments (a TrainingCompilerConfig from its dict).
_SDK_ALONE = """
import json, sys, time
import logging
logging.disable(logging.WARNING)
import boto3, importlib, sagemaker
document = json.loads(sys.stdin.read())
session = sagemaker.Session(
    boto_session=boto3.Session(region_name="us-west-2"), default_bucket="bench-bucket"
)
times = []
for job in document["jobs"]:
    module = importlib.import_module("sagemaker." + job["module"])
    cls = getattr(module, job["class"])
    runs = []
    for _ in range(document["repeats"]):
        kwargs = json.loads(json.dumps(job["kwargs"]))  # fresh dicts: the SDK may change them
        kwargs.setdefault("role", "arn:aws:iam::111122223333:role/bench")  # as plan assumes
        if "compiler_config" in kwargs:
            kwargs["compiler_config"] = module.TrainingCompilerConfig(**kwargs["compiler_config"])
        start = time.perf_counter()
        cls(**kwargs, sagemaker_session=session)
        runs.append(time.perf_counter() - start)
    times.append(runs)
print(json.dumps(times))
"""


def sdk_construction(
    jobs: list[dict[str, Any]], repeats: int, env: dict[str, str]
) -> list[list[float]]:
    """Seconds the bare SDK takes to construct each job's estimator, ``repeats`` times each, in
    one fresh process. A job is ``{"module": "pytorch", "class": "PyTorch", "kwargs": {...}}``."""
    result = subprocess.run(
        [sys.executable, "-c", _SDK_ALONE],
        input=json.dumps({"jobs": jobs, "repeats": repeats}),
        env=env,
        capture_output=True,
        text=True,
    )
    if result.returncode:
        output = (result.stderr + result.stdout)[-3000:]  # the SDK prints rich tracebacks
        raise RuntimeError(f"exit code {result.returncode}: {output}")
    return [list(map(float, runs)) for runs in json.loads(result.stdout.strip().splitlines()[-1])]
