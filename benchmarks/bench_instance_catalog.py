"""How cheap is instance_catalog? Run by hand: ``python benchmarks/bench_instance_catalog.py``.

Prints, in one run on the same machine:
- the time to ``import instance_catalog`` in a fresh interpreter (median of several runs), next
  to the time to ``import sagemaker``, which a user of the SDK's own GPU table has to pay;
- the latency of ``instance_catalog.get()``: the first call in a fresh process (it reads the
  data file) and warm calls, per lookup in microseconds, next to the SDK's way of looking up a
  GPU count (``sagemaker.instance_types_gpu_info.retrieve(region)[name]["Count"]``, which
  re-reads its JSON file on every call).

This is a measurement, not a test: nothing here asserts a threshold.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import timeit

RUNS = 7
SDK_RUNS = 3  # importing sagemaker takes seconds
LOOKUPS = 20_000
ENV = {**os.environ, "SAGEMAKER_SUPPRESS_V2_WARNING": "1", "PYTHONDONTWRITEBYTECODE": "1"}


def fresh_process_seconds(setup: str, measured: str, runs: int) -> float:
    """Median wall time of ``measured`` in a new interpreter, after ``setup`` has run there."""
    code = (
        f"{setup}\nimport time\nstart = time.perf_counter()\n{measured}\n"
        "print(time.perf_counter() - start)"
    )
    samples = []
    for _ in range(runs):
        result = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=ENV, check=True
        )
        samples.append(float(result.stdout.strip().splitlines()[-1]))
    return statistics.median(samples)


def warm_microseconds(statement: str, setup: str, number: int) -> float:
    """Best-of-five time per execution of ``statement``, in microseconds."""
    timer = timeit.Timer(statement, setup=setup)
    return min(timer.repeat(repeat=5, number=number)) / number * 1e6


def main() -> None:
    """Measure and print."""
    catalog_import = fresh_process_seconds("", "import instance_catalog", RUNS)
    sdk_import = fresh_process_seconds("", "import sagemaker", SDK_RUNS)
    first_get = fresh_process_seconds(
        "import instance_catalog", "instance_catalog.get('ml.p3.8xlarge')", RUNS
    )
    warm_get = warm_microseconds(
        "get('ml.p3.8xlarge')", "from instance_catalog import get; get('ml.p3.8xlarge')", LOOKUPS
    )
    warm_unknown = warm_microseconds(
        "try:\n    get('ml.p3.8xl')\nexcept LookupError:\n    pass",
        "from instance_catalog import get",
        200,
    )
    sdk_lookup = warm_microseconds(
        "retrieve('us-east-1')['ml.p3.8xlarge']['Count']",
        "from sagemaker.instance_types_gpu_info import retrieve",
        2_000,
    )

    print(f"Python {sys.version.split()[0]} on {sys.platform}; medians of {RUNS} fresh processes")
    print()
    print("import time")
    print(f"  import instance_catalog        {catalog_import * 1e3:9.1f} ms")
    print(f"  import sagemaker               {sdk_import * 1e3:9.1f} ms  ({SDK_RUNS} runs)")
    print(f"  ratio sagemaker / catalog      {sdk_import / catalog_import:9.0f} x")
    print()
    print("lookup latency")
    print(f"  get(), first call (loads data) {first_get * 1e6:9.0f} us")
    print(f"  get(), warm                    {warm_get:9.2f} us per lookup")
    print(f"  get() of an unknown name       {warm_unknown:9.0f} us (builds suggestions)")
    print(f"  SDK retrieve(region)[name]     {sdk_lookup:9.0f} us per lookup")
    print(f"  ratio SDK / get() warm         {sdk_lookup / warm_get:9.0f} x")


if __name__ == "__main__":
    main()
