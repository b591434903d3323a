"""How fast is a plan? Run by hand: ``python benchmarks/bench_plan.py [--runs 5] [--warm 10]``.

Prints, in one run on the same machine, each figure next to its reference:
- ``safe_estimators.plan(spec)`` in one process: the first call (which imports the SageMaker
  SDK) and the median of the warm calls after it (target: under 0.5 s), next to constructing
  the same SDK estimator directly, with the same final keyword arguments, in a process that
  never imports safe_estimators: without an SDK defaults config file, and with one that holds
  only ``TelemetryOptOut`` (the SDK then validates the whole config against its JSON Schema on
  every lookup). A plan does more than construct: it also runs ``fit()`` to build the request.
- ``safe-estimators plan FILE`` against ``python -c "import sagemaker"``: medians of fresh
  processes, interleaved, wall and CPU time and their ratio (target: at most 1.2).

The spec is the notebook's plan: examples/compiler-multi-gpu with instance_count=2. Nothing is
sent anywhere. This is a measurement, not a test: nothing here asserts a threshold.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _measure import (
    BIN,
    EXAMPLES,
    compile_bytecode,
    go_offline,
    interleaved_processes,
    machine,
    sdk_construction,
)

SPEC = EXAMPLES / "compiler-multi-gpu" / "job.yaml"
OVERRIDES = {"instance_count": 2}
PLAN_TARGET_SECONDS = 0.5
COMMAND_TARGET_RATIO = 1.2
TELEMETRY_ONLY = (
    'SchemaVersion: "1.0"\nSageMaker:\n  PythonSDK:\n    Modules:\n      TelemetryOptOut: true\n'
)

def _recorded_plan() -> tuple[float, dict[str, Any]]:
    """The first plan's seconds, and the class and final keyword arguments it gave the SDK."""
    import importlib

    import safe_estimators

    recorded: dict[str, Any] = {}
    start = time.perf_counter()
    plan = safe_estimators.plan(SPEC, **OVERRIDES)
    first = time.perf_counter() - start
    name = plan.explanation.estimator
    module: Any = importlib.import_module(f"sagemaker.{name}")
    class_name = {"huggingface": "HuggingFace", "pytorch": "PyTorch"}[name]
    original = getattr(module, class_name)

    class Recording(original):  # type: ignore[misc, valid-type]
        def __init__(self, **kwargs: Any) -> None:
            recorded.update(kwargs)
            super().__init__(**kwargs)

    setattr(module, class_name, Recording)
    try:
        safe_estimators.plan(SPEC, **OVERRIDES)
    finally:
        setattr(module, class_name, original)
    kwargs = {k: v for k, v in recorded.items() if k != "sagemaker_session"}
    if "compiler_config" in kwargs:
        config = kwargs["compiler_config"]
        kwargs["compiler_config"] = {"enabled": config.enabled, "debug": config.debug}
    return first, {"module": name, "class": class_name, "kwargs": kwargs}


def _direct(job: dict[str, Any], runs: int, env: dict[str, str]) -> dict[str, float]:
    times = sdk_construction([job], runs + 1, env)[0]
    return {"first": times[0], "warm": statistics.median(times[1:])}


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per command")
    parser.add_argument("--warm", type=int, default=10, help="warm plans in one process")
    args = parser.parse_args()

    header = machine()  # the load before this benchmark adds its own
    env = go_offline()
    compile_bytecode()
    logging.disable(logging.WARNING)  # the SDK's INFO lines, as the CLI does
    print(header)
    print()

    import safe_estimators

    first, job = _recorded_plan()
    warm = []
    for _ in range(args.warm):
        start = time.perf_counter()
        safe_estimators.plan(SPEC, **OVERRIDES)
        warm.append(time.perf_counter() - start)
    plan_warm = statistics.median(warm)
    direct = _direct(job, args.warm, env)
    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "config.yaml"
        config.write_text(TELEMETRY_ONLY)
        configured = {**env, "SAGEMAKER_USER_CONFIG_OVERRIDE": str(config)}
        direct_config = _direct(job, max(3, args.warm // 3), configured)

    print(f"in one process: {SPEC.relative_to(EXAMPLES.parent)} with {OVERRIDES}")
    print(f"  safe_estimators.plan, first (imports the SDK)   {first * 1e3:9.0f} ms")
    print(
        f"  safe_estimators.plan, warm (median of {args.warm:>2})       {plan_warm * 1e3:9.0f} ms"
        f"   target < {PLAN_TARGET_SECONDS * 1e3:.0f} ms"
    )
    print(f"  the SDK alone: {job['class']}(...) with the plan's arguments, another process")
    print(
        f"    no SDK config file, first / warm           {direct['first'] * 1e3:7.0f} / "
        f"{direct['warm'] * 1e3:.0f} ms"
    )
    print(
        f"    config file with TelemetryOptOut only      {direct_config['first'] * 1e3:7.0f} / "
        f"{direct_config['warm'] * 1e3:.0f} ms"
    )
    for label, reference in (("no config", direct), ("config", direct_config)):
        ratio = plan_warm / reference["warm"]
        print(f"  ratio warm plan / warm construction, {label:<9} {ratio:7.2f}")
    print()

    commands = {
        "safe-estimators plan FILE": [str(BIN / "safe-estimators"), "plan", str(SPEC)],
        "python -c 'import sagemaker'": [sys.executable, "-c", "import sagemaker"],
    }
    costs = interleaved_processes(commands, args.runs, env)
    print(f"fresh processes (median of {args.runs}, interleaved)      wall        CPU     peak")
    for name, (wall, cpu, peak) in costs.items():
        print(f"  {name:<34} {wall * 1e3:8.0f} ms {cpu * 1e3:7.0f} ms {peak / 1024:5.0f} MiB")
    (plan_wall, plan_cpu, _), (sdk_wall, sdk_cpu, _) = costs.values()
    print(
        f"  ratio plan / import sagemaker      {plan_wall / sdk_wall:8.2f}    "
        f"{plan_cpu / sdk_cpu:7.2f}      target <= {COMMAND_TARGET_RATIO}"
    )


if __name__ == "__main__":
    main()
