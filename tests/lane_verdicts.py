"""The verdict (every problem, as validate gives it) on every spec the tests hold, on the
installed SDK generation: the examples, the spec fixtures and the published estimator calls
(tests/fixtures/*_example_jobs.json). ``python tests/lane_verdicts.py TARGET`` prints them as
JSON, for the differential test to compare the two lanes (test_lanes_differential.py).

No sagemaker import: validate's checks only, a few milliseconds a spec.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
CORPORA = ("aws_example_jobs.json", "hf_example_jobs.json")


def spec_files() -> list[Path]:
    """The spec files of examples/ and of the test fixtures."""
    files = [*ROOT.glob("examples/*/job.*"), *ROOT.glob("examples/model-trainer/*.yaml")]
    files += FIXTURES.glob("specs/*.yaml")
    return sorted(set(files))


def cases() -> dict[str, tuple[dict[str, Any] | None, Path | None]]:
    """Each case's keyword arguments (a published call's) or spec file, by a stable name."""
    found: dict[str, tuple[dict[str, Any] | None, Path | None]] = {
        str(path.relative_to(ROOT)): (None, path) for path in spec_files()
    }
    for corpus in CORPORA:
        jobs = json.loads((FIXTURES / corpus).read_text())["jobs"]
        for number, job in enumerate(jobs):
            arguments = {"estimator": job["estimator"], **job["kwargs"]}
            found[f"{corpus}#{number}"] = (arguments, None)
    return found


def verdict(arguments: dict[str, Any] | None, path: Path | None, target: str | None) -> list[str]:
    """The problems of one case built as ``target`` (None: the spec's own, or the SDK's
    default), each as ``severity path: message (hint)`` with the SDK version written out."""
    from safe_estimators._facts.sdk_files import sdk_version
    from safe_estimators._problems import ConfigError
    from safe_estimators._resolve import check_arguments
    from safe_estimators._spec_files.read import job_arguments

    overrides = {} if target is None else {"target": target}
    try:
        if path is not None:
            arguments, _, prior = job_arguments(path, overrides)
        else:
            assert arguments is not None
            arguments, prior = {**arguments, **overrides}, []
        _, problems, _ = check_arguments({**arguments, "check_script": False})
        problems = [*prior, *problems]
    except ConfigError as error:
        problems = list(error.problems)
    except Exception as exc:  # an internal error: a difference the test must show
        return [f"internal {type(exc).__name__}: {exc}"]
    version = sdk_version()
    return sorted(
        f"{p.severity} {p.path}: {p.message} ({p.hint})".replace(version, "<sdk>") for p in problems
    )


def verdicts(target: str | None) -> dict[str, list[str]]:
    """Every case's verdict built as ``target``."""
    return {name: verdict(*case, target) for name, case in cases().items()}


if __name__ == "__main__":
    chosen = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] != "default" else None
    json.dump(verdicts(chosen), sys.stdout)
