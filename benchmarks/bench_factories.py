"""What do the factories cost? Run by hand: ``python benchmarks/bench_factories.py``.

Prints, in one run on the same machine:
- the time to ``import safe_estimators`` in a fresh interpreter against ``import sagemaker``
  (medians of fresh processes; target: under a tenth);
- the factory's overhead over constructing the same SageMaker estimator directly with the same
  final keyword arguments (target: under 10%), warm, over many interleaved iterations, with the
  script checks on and off. The final arguments are recorded from the factory's own call to the
  SDK class, so both sides construct exactly the same estimator with the same session.
  Both are measured without an SDK defaults config (the SDK then reads no config at all) and,
  with ``--config-iterations N`` (default 3), with a config file holding only
  ``TelemetryOptOut``. On its own the SDK validates the whole config against its JSON Schema on
  every lookup; once safe_estimators has built an estimator, each distinct config is validated
  once per process, for both sides alike (``bench_plan.py`` measures the SDK alone);
- a breakdown of the factory's own work: resolving (rules, script checks) and the training image
  lookup the factory does at build time and direct construction leaves for ``fit()``.

The job is the issue's example: Hugging Face, Training Compiler, 2 x ml.p3.8xlarge. Nothing
is sent anywhere: region and placeholder credentials are set, the metadata service is off.
This is a measurement, not a test: nothing here asserts a threshold.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Offline, before anything imports boto3: constructing an estimator makes boto3 clients, which
# look for credentials (and would ask the EC2 metadata service without these).
os.environ.update(
    {
        "AWS_DEFAULT_REGION": "us-west-2",
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_EC2_METADATA_DISABLED": "true",
        "SAGEMAKER_SUPPRESS_V2_WARNING": "1",
    }
)
for _variable in ("AWS_PROFILE", "AWS_ENDPOINT_URL"):
    os.environ.pop(_variable, None)

ROOT = Path(__file__).resolve().parent.parent
RUNS = 7
SDK_RUNS = 5  # importing sagemaker takes seconds
ITERATIONS = 40
ENV = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
ROLE = "arn:aws:iam::111122223333:role/SageMakerRole"
JOB: dict[str, Any] = {
    "entry_point": "train.py",
    "source_dir": str(ROOT / "examples" / "compiler-multi-node"),
    "role": ROLE,
    "instance_type": "ml.p3.8xlarge",
    "instance_count": 2,
    "transformers_version": "4.21.1",
    "pytorch_version": "1.11.0",
    "py_version": "py38",
    "training_compiler": True,
    "hyperparameters": {"epochs": 1, "per_device_train_batch_size": 24},
}


def fresh_process_seconds(statement: str, runs: int) -> float:
    """Median wall time of ``statement`` in a new interpreter (timed inside it)."""
    code = (
        f"import time\nstart = time.perf_counter()\n{statement}\nprint(time.perf_counter() - start)"
    )
    samples = []
    for _ in range(runs):
        result = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=ENV, check=True
        )
        samples.append(float(result.stdout.strip().splitlines()[-1]))
    return statistics.median(samples)


def _session(config_file: Path | None) -> Any:
    import boto3
    import sagemaker
    from sagemaker.config import load_sagemaker_config

    config = load_sagemaker_config([str(config_file)]) if config_file else None
    session = sagemaker.Session(
        boto_session=boto3.Session(region_name="us-west-2"),
        default_bucket="bench-bucket",
        sagemaker_config=config,
    )
    return session


def final_arguments(session: Any) -> dict[str, Any]:
    """The keyword arguments the factory hands to the SDK class, recorded at the call."""
    import sagemaker.huggingface as module

    import safe_estimators

    recorded: dict[str, Any] = {}
    original = module.HuggingFace

    class Recording(original):  # type: ignore[misc, valid-type]
        def __init__(self, **kwargs: Any) -> None:
            recorded.update(kwargs)
            super().__init__(**kwargs)

    module.HuggingFace = Recording  # type: ignore[misc]
    try:
        safe_estimators.huggingface(**JOB, sagemaker_session=session)
    finally:
        module.HuggingFace = original  # type: ignore[misc]
    if not recorded:
        raise RuntimeError("could not record the factory's call to sagemaker's HuggingFace")
    return recorded


def _copy(arguments: dict[str, Any]) -> dict[str, Any]:
    """A fresh top level and fresh dicts: the SDK may keep or change what it is given."""
    return {k: dict(v) if isinstance(v, dict) else v for k, v in arguments.items()}


def interleaved(candidates: dict[str, Callable[[], Any]], iterations: int) -> dict[str, float]:
    """Median seconds per call of each candidate, run in turn so drift hits all alike."""
    samples: dict[str, list[float]] = {name: [] for name in candidates}
    for call in candidates.values():  # warm-up: imports, caches, botocore models
        call()
    for _ in range(iterations):
        for name, call in candidates.items():
            start = time.perf_counter()
            call()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in samples.items()}


def overhead(session: Any, iterations: int) -> dict[str, float]:
    """Factory (script checks on and off) against direct construction, same final arguments."""
    from sagemaker.huggingface import HuggingFace

    import safe_estimators

    arguments = final_arguments(session)
    return interleaved(
        {
            "direct": lambda: HuggingFace(**_copy(arguments)),
            "factory": lambda: safe_estimators.huggingface(**JOB, sagemaker_session=session),
            "factory, check_script=False": lambda: safe_estimators.huggingface(
                **JOB, sagemaker_session=session, check_script=False
            ),
        },
        iterations,
    )


def breakdown(session: Any, iterations: int) -> dict[str, float]:
    """The factory's own steps, timed alone."""
    from sagemaker.huggingface import HuggingFace

    from safe_estimators._resolve import resolve_arguments

    direct = HuggingFace(**_copy(final_arguments(session)))
    spec = {"estimator": "huggingface", **JOB}
    return interleaved(
        {
            "resolve (rules + script checks)": lambda: resolve_arguments(spec),
            "resolve, check_script=False": lambda: resolve_arguments(
                {**spec, "check_script": False}
            ),
            "training_image_uri() (SDK)": direct.training_image_uri,
        },
        iterations,
    )


def _config_lookup(session: Any) -> Any:
    """One SDK defaults lookup, as the SDK and safe_estimators._targets make them."""
    from sagemaker.config import TRAINING_JOB_ENVIRONMENT_PATH
    from sagemaker.utils import get_sagemaker_config_value

    return get_sagemaker_config_value(session, TRAINING_JOB_ENVIRONMENT_PATH)


def _report(title: str, times: dict[str, float]) -> None:
    direct = times["direct"]
    print(title)
    print(f"  direct HuggingFace(...)        {direct * 1e3:9.1f} ms")
    for name in ("factory", "factory, check_script=False"):
        extra = (times[name] - direct) / direct * 100
        print(f"  {name:<30} {times[name] * 1e3:9.1f} ms   overhead {extra:+7.1f} %")


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=ITERATIONS)
    parser.add_argument("--config-iterations", type=int, default=3, metavar="N")
    args = parser.parse_args()

    import logging

    logging.disable(logging.WARNING)  # the SDK's INFO lines, as the CLI does

    ours = fresh_process_seconds("import safe_estimators", RUNS)
    sdk = fresh_process_seconds("import sagemaker", SDK_RUNS)
    print(f"Python {sys.version.split()[0]} on {sys.platform}, {os.cpu_count()} CPUs")
    print()
    print(f"import time (median of {RUNS} fresh processes; sagemaker {SDK_RUNS})")
    print(f"  import safe_estimators         {ours * 1e3:9.1f} ms")
    print(f"  import sagemaker               {sdk * 1e3:9.1f} ms")
    print(f"  ratio                          {ours / sdk:9.3f}      (target < 0.1)")
    print()

    session = _session(None)
    config_state = "none found" if not session.sagemaker_config else "PRESENT on this machine"
    times = overhead(session, args.iterations)
    _report(
        f"construction, no SDK defaults config ({config_state}); median of {args.iterations}",
        times,
    )
    steps = breakdown(session, args.iterations)
    print("  the factory's own steps, alone")
    for name, seconds in steps.items():
        print(f"    {name:<32} {seconds * 1e3:9.1f} ms")

    if args.config_iterations:
        with tempfile.TemporaryDirectory() as folder:
            config_file = Path(folder) / "config.yaml"
            config_file.write_text(
                'SchemaVersion: "1.0"\nSageMaker:\n  PythonSDK:\n    Modules:\n'
                "      TelemetryOptOut: true\n"
            )
            configured = _session(config_file)
            times = overhead(configured, args.config_iterations)
            lookup = interleaved(
                {"lookup": lambda: _config_lookup(configured)}, args.config_iterations
            )["lookup"]
        print()
        _report(
            "construction, SDK defaults config with TelemetryOptOut only; "
            f"median of {args.config_iterations}",
            times,
        )
        print(f"  one SDK config lookup (config validated before)  {lookup * 1e3:9.1f} ms")


if __name__ == "__main__":
    main()
