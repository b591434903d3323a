"""Every difference between what the bare SDK sends and what we send is a recorded Injection.

For each configuration of the corpora (AWS's and Hugging Face's example notebooks, the rows the
SDK's own unit tests accept) that the bare SDK builds, three CreateTrainingJob requests are
captured offline with the SDK's own fit(): the bare SDK's from the user's arguments, ours, and
the bare SDK's from the user's arguments with each recorded injection applied at its path (and
the options we warned we leave out removed). Ours must equal the replay: a change we make and
do not record fails here. JSON-valued hyperparameters (mp_parameters) compare as JSON.
"""

from __future__ import annotations

import contextlib
import json
import re
from typing import Any

import pytest
from test_aws_examples import FACTORY, JOBS, SDK, _sdk_verdict
from test_aws_examples import _arguments as _notebook_arguments
from test_aws_examples import _ids as _notebook_ids
from test_compiler_mp_sdk_agreement import ACCEPTED, SDK_CLASS, _with_injections
from test_compiler_mp_sdk_agreement import _arguments as _row_arguments
from test_launchers_sdk_agreement import ACCEPTED as LAUNCHER_ACCEPTED
from test_launchers_sdk_agreement import _arguments as _launcher_arguments
from test_launchers_sdk_agreement import bare_estimator

import safe_estimators
from safe_estimators import ConfigError
from safe_estimators._targets import capture_request, offline_session

JOB_NAME = "differential-job"


@pytest.fixture(scope="module")
def session():
    return offline_session("us-west-2", "differential-bucket")


def _request(estimator: Any) -> dict[str, Any]:
    request = capture_request(estimator, job_name=JOB_NAME)
    hyperparameters = request.get("hyper_parameters") or request.get("HyperParameters") or {}
    for key, value in hyperparameters.items():
        with contextlib.suppress(TypeError, ValueError):
            hyperparameters[key] = json.loads(value)
    return json.loads(json.dumps(request, default=repr))


def _left_out(estimator: Any) -> set[str]:
    """The options we warned we leave out (the SDK drops them too)."""
    return {
        w.path
        for w in safe_estimators.explain(estimator).warnings
        if "left out" in w.message or "has no effect" in w.message
    }


def _moved(injections: Any) -> set[str]:
    """The options an injection says it was rewritten from (pytorchddp, torchxla): gone."""
    found = set()
    for injection in injections:
        moved = re.match(r"rewritten from '?(\w+)'?", injection.reason)
        if moved:
            parent = injection.path.split(".")[0]
            found.add(f"{parent}.{moved.group(1)}")
    return found


def _unrecorded(arguments: dict[str, Any], sdk: Any, ours: Any, session: Any) -> dict[str, Any]:
    injections = safe_estimators.explain(ours).injections
    replay = _with_injections(arguments, injections, _left_out(ours) | _moved(injections))
    expected = _request(bare_estimator(replay, session, sdk))
    sent = _request(ours)
    return {
        key: (expected.get(key), sent.get(key))
        for key in set(expected) | set(sent)
        if expected.get(key) != sent.get(key)
    }


@pytest.mark.parametrize("job", JOBS, ids=_notebook_ids(JOBS))
def test_a_notebook_job_differs_from_the_bare_sdk_only_by_recorded_injections(job, role, session):
    _, refusal = _sdk_verdict(job, role, session)
    if refusal is not None:  # nothing is sent to compare; ours refuses it too (where and why:
        with pytest.raises(ConfigError):  # test_aws_examples)
            FACTORY[job["estimator"]](**_notebook_arguments(job, role, session))
        return
    arguments = _notebook_arguments(job, role, session)
    del arguments["sagemaker_session"]
    ours = FACTORY[job["estimator"]](sagemaker_session=session, check_script=False, **arguments)
    assert _unrecorded(arguments, SDK[job["estimator"]][0], ours, session) == {}


@pytest.mark.parametrize("case", ACCEPTED, ids=[row["id"] for row in ACCEPTED])
def test_an_sdk_test_row_differs_from_the_bare_sdk_only_by_recorded_injections(case, role, session):
    arguments = _row_arguments(case, role)
    ours = FACTORY[case["estimator"]](sagemaker_session=session, **arguments)
    assert _unrecorded(arguments, SDK_CLASS[case["estimator"]], ours, session) == {}


@pytest.mark.parametrize("case", LAUNCHER_ACCEPTED, ids=[c["id"] for c in LAUNCHER_ACCEPTED])
def test_a_launcher_row_differs_from_the_bare_sdk_only_by_recorded_injections(case, role, session):
    arguments = _launcher_arguments(case, role)
    ours = safe_estimators.pytorch(sagemaker_session=session, **arguments)
    assert _unrecorded(arguments, SDK_CLASS["pytorch"], ours, session) == {}


def test_smp_v1_partitions_is_sent_as_written(role, session):
    # AWS's gpt-neo-smp-sharded-dp example: partitions 1 beside sharded data parallelism.
    parameters = {
        "ddp": True, "skip_tracing": True, "delayed_parameter_initialization": True,
        "sharded_data_parallel_degree": 8, "partitions": 1, "bf16": True,
        "offload_activations": False,
    }  # fmt: skip
    distribution = {
        "mpi": {"enabled": True, "processes_per_host": 8, "custom_mpi_options": "-verbose"},
        "smdistributed": {"modelparallel": {"enabled": True, "parameters": parameters}},
    }
    ours = safe_estimators.pytorch(
        entry_point=_row_arguments({}, role)["entry_point"],
        role=role,
        instance_type="ml.p4d.24xlarge",
        framework_version="1.12.0",
        py_version="py38",
        distribution=distribution,
        sagemaker_session=session,
        check_script=False,
    )
    assert json.loads(ours.hyperparameters()["mp_parameters"]) == parameters
