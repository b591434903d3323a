"""Every fix a rule offers as a change to the job holds when applied (issue 34).

The harness: a problem's ``fixes`` are option changes (``Fix.changes``); each is applied to the
job's arguments and the job is checked again. A fix holds when the problem is gone and no new
error appears. Run over the examples, the notebook corpora the tests hold, and generated jobs
(instance types x framework and Python versions x launchers), with the trn2 case of the issue
pinned: ml.trn2.48xlarge with PyTorch 2.1.0 under torchrun is never offered
framework_version='1.11.0', whose container (Neuron SDK 2.4.0) predates Trainium2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from safe_estimators._problems import changed
from safe_estimators._resolve import check_arguments
from safe_estimators._spec_files.read import read_spec

HERE = Path(__file__).parent
EXAMPLES = HERE.parent / "examples"
SCRIPT = str(HERE / "fixtures" / "jobs" / "train.py")
ROLE = "arn:aws:iam::111122223333:role/SageMakerRole"
TORCHRUN = {"torch_distributed": {"enabled": True}}


def errors(arguments: dict[str, Any]) -> list[Any]:
    _, problems, _ = check_arguments({**arguments, "check_script": False})
    return [p for p in problems if p.severity == "error"]


def found(arguments: dict[str, Any]) -> list[Any]:
    return check_arguments({**arguments, "check_script": False})[1]


def broken_fixes(arguments: dict[str, Any]) -> list[str]:
    """Each offered fix (of an error or a warning) applied to the job's arguments and checked
    again: what breaks, in words (empty: all hold). A fix holds when its problem is gone and no
    new error appears."""
    before = found(arguments)
    seen = {(p.path, p.message) for p in before if p.severity == "error"}
    broken = []
    for problem in before:
        for fix in problem.fixes:
            after = found(changed(arguments, fix.changes))
            if (problem.path, problem.message) in {(p.path, p.message) for p in after}:
                broken.append(f"{fix.text}: leaves {problem.path}: {problem.message}")
            broken += [
                f"{fix.text}: brings {p}" for p in after
                if p.severity == "error" and (p.path, p.message) not in seen
            ]
    return broken


def fixes_of(arguments: dict[str, Any]) -> list[Any]:
    return [fix for p in found(arguments) for fix in p.fixes]


def offered(arguments: dict[str, Any]) -> list[str]:
    return [fix.text for p in errors(arguments) for fix in p.fixes]


@pytest.mark.sdk2_only
def test_the_trn2_job_is_not_offered_a_container_older_than_trainium2():
    job = {
        "estimator": "pytorch", "entry_point": SCRIPT, "role": ROLE,
        "instance_type": "ml.trn2.48xlarge", "framework_version": "2.1.0",
        "py_version": "py310", "distribution": TORCHRUN,
    }
    found = errors(job)
    assert [p.path for p in found] == ["framework_version", "framework_version"]
    assert not any("1.11.0" in p.hint for p in found)
    assert any("Neuron SDK 2.21.0 or later" in p.hint for p in found)
    assert "Unsupported Python version: py310" in found[0].message  # what the SDK says
    assert broken_fixes(job) == []
    # On ml.trn1 the same container runs: there the fix is offered, and holds.
    on_trn1 = {**job, "instance_type": "ml.trn1.32xlarge"}
    assert "set framework_version='1.11.0', py_version='py38'" in offered(on_trn1)
    assert broken_fixes(on_trn1) == []
    assert errors({**on_trn1, "framework_version": "1.11.0", "py_version": "py38"}) == []


def _example_arguments() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted(EXAMPLES.glob("*/*.yaml")):
        arguments, problems = read_spec(path)
        if arguments is not None and not problems:
            found.append((f"{path.parent.name}/{path.name}", arguments))
    return found


@pytest.mark.parametrize(("name", "arguments"), _example_arguments(),
                         ids=[n for n, _ in _example_arguments()])
def test_no_fix_offered_for_an_example_is_refused(name, arguments):
    assert broken_fixes(arguments) == []


def _corpus() -> list[dict[str, Any]]:
    jobs = []
    for name in ("aws_example_jobs.json", "hf_example_jobs.json"):
        for job in json.loads((HERE / "fixtures" / name).read_text())["jobs"]:
            kwargs = {k: v for k, v in job["kwargs"].items() if isinstance(v, str | int | dict)}
            kwargs.pop("compiler_config", None)
            jobs.append({**kwargs, "estimator": job["estimator"], "entry_point": SCRIPT,
                         "role": ROLE, "source_dir": None})
    return jobs


def test_no_fix_offered_for_the_notebook_corpora_is_refused():
    corpus = _corpus()
    checked = [broken for job in corpus for broken in broken_fixes(
        {k: v for k, v in job.items() if v is not None}
    )]
    assert len(corpus) > 100 and checked == []


def _versions(table: str) -> list[str]:
    from safe_estimators._facts.versions import framework_container

    return list(framework_container(table, "0").known)


INSTANCES = ["ml.trn2.48xlarge", "ml.trn1.32xlarge", "ml.trn1.2xlarge", "ml.g5.12xlarge",
             "ml.p4d.24xlarge", "ml.p5.48xlarge", "ml.c5.xlarge"]
PYTHON = ["py38", "py39", "py310", "py311", "py312"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    instance=st.sampled_from(INSTANCES),
    version=st.sampled_from(_versions("pytorch") + _versions("pytorch-neuron") + ["2.1", "9.9"]),
    python=st.sampled_from(PYTHON),
    launcher=st.sampled_from([None, TORCHRUN, {"mpi": {"enabled": True}}]),
    count=st.integers(1, 3),
)
def test_no_fix_offered_for_a_generated_job_is_refused(instance, version, python, launcher, count):
    job = {"estimator": "pytorch", "entry_point": SCRIPT, "role": ROLE,
           "instance_type": instance, "instance_count": count, "framework_version": version,
           "py_version": python}
    if launcher is not None:
        job["distribution"] = launcher
    assert broken_fixes(job) == []
