"""Configurations from AWS's and Hugging Face's example notebooks, built by the bare SDK and ours.

tests/fixtures/aws_example_jobs.json holds the literal options of PyTorch(...) and
HuggingFace(...) calls mined from aws/amazon-sagemaker-examples, hf_example_jobs.json those of
huggingface/notebooks (its sagemaker/ folder). For each one the bare SDK
estimator is built offline (construct, ``hyperparameters()``, ``training_image_uri()``), then
ours. Where the SDK accepts, ours must build and send what the notebook asked for (a false
refusal fails here); where the SDK refuses, ours must refuse first, with problems at real paths.
Options the SDK drops without a word (``ignored`` in the data: env=, datasets_version, ...) are
left out by ours with a warning, and what is sent is the same.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pytest_socket import SocketBlockedError
from sagemaker.huggingface import HuggingFace
from sagemaker.huggingface import TrainingCompilerConfig as HFCompiler
from sagemaker.pytorch import PyTorch
from sagemaker.pytorch import TrainingCompilerConfig as PTCompiler

import safe_estimators
from safe_estimators import ConfigError

FIXTURES = Path(__file__).parent / "fixtures"
SCRIPT = str(FIXTURES / "jobs" / "train.py")
MINED = ("aws_example_jobs.json", "hf_example_jobs.json")
JOBS: list[dict[str, Any]] = [
    job for name in MINED for job in json.loads((FIXTURES / name).read_text())["jobs"]
]

# Rows warned about by design (a Hub token in hyperparameters): the record must stay true.
HF_DISPUTED: list[dict[str, Any]] = json.loads(
    (FIXTURES / "hf_example_jobs.json").read_text()
)["disputed"]

SDK = {"pytorch": (PyTorch, PTCompiler), "huggingface": (HuggingFace, HFCompiler)}
FACTORY = {"pytorch": safe_estimators.pytorch, "huggingface": safe_estimators.huggingface}


def _ids(jobs: list[dict[str, Any]]) -> list[str]:
    seen: Counter[str] = Counter()
    ids = []
    for job in jobs:
        seen[job["source"]] += 1
        ids.append(f"{job['source']}#{seen[job['source']]}")
    return ids


def _arguments(job: dict[str, Any], role: str, session: Any) -> dict[str, Any]:
    """The notebook's options with our script, role and session, and real SDK objects."""
    arguments = dict(job["kwargs"])
    compiler = arguments.get("compiler_config")
    compiler_class = SDK[job["estimator"]][1]
    if isinstance(compiler, dict) and set(compiler) == {"TrainingCompilerConfig"}:
        arguments["compiler_config"] = compiler_class(**compiler["TrainingCompilerConfig"])
    elif isinstance(compiler, list):  # a stray trailing comma made a tuple of one config
        arguments["compiler_config"] = tuple(
            compiler_class(**item["TrainingCompilerConfig"]) for item in compiler
        )
    arguments.update(entry_point=SCRIPT, role=role, sagemaker_session=session)
    return arguments


def _sdk_verdict(job: dict[str, Any], role: str, session: Any) -> tuple[Any, Exception | None]:
    """The bare SDK's estimator and the hyperparameters it sends, or its refusal."""
    try:
        est = SDK[job["estimator"]][0](**_arguments(job, role, session))
        sent = est.hyperparameters()
        est.training_image_uri()
    except SocketBlockedError:
        raise
    except Exception as refusal:  # any SDK refusal is the verdict we compare
        return None, refusal
    return sent, None


def test_the_mined_configurations_are_many_and_distinct():
    assert len(JOBS) >= 50
    keys = {json.dumps([j["estimator"], j["kwargs"]], sort_keys=True) for j in JOBS}
    assert len(keys) == len(JOBS)


@pytest.mark.parametrize("job", JOBS, ids=_ids(JOBS))
def test_we_build_what_the_sdk_builds_and_refuse_first_what_it_refuses(
    job, role, sagemaker_session
):
    sdk_sent, sdk_refusal = _sdk_verdict(job, role, sagemaker_session)
    factory = FACTORY[job["estimator"]]
    if sdk_refusal is not None:
        with pytest.raises(ConfigError) as caught:
            factory(**_arguments(job, role, sagemaker_session))
        assert caught.value.problems, caught.value
        assert "<sagemaker>" not in caught.value.paths, (
            f"the SDK refused ({sdk_refusal!r}) before our rules did: {caught.value}"
        )
        return
    try:
        est = factory(**_arguments(job, role, sagemaker_session))
    except ConfigError as error:
        pytest.fail(f"the bare SDK builds this job, we refused it: {error}")
    kwargs = job["kwargs"]
    # SDK v1 spellings (train_instance_type, ...) are renamed by the SDK with a warning.
    assert est.instance_type == kwargs.get("instance_type", kwargs.get("train_instance_type"))
    assert est.instance_count == kwargs.get("instance_count", kwargs.get("train_instance_count"))
    sent = est.hyperparameters()
    for name in kwargs.get("hyperparameters") or {}:
        assert sent.get(name) == sdk_sent[name], (name, sent.get(name), sdk_sent[name])
    if "environment" in kwargs:
        assert est.environment == {**est.environment, **kwargs["environment"]}
    assert est.training_image_uri()
    # Options the estimator does not take: the SDK drops them, ours leaves them out and says so.
    warned = {w.path: w for w in safe_estimators.explain(est).warnings}
    for name in job.get("ignored", ()):
        assert warned[name].severity == "warning", warned
        assert "has no effect" in warned[name].message and warned[name].hint


def test_the_formerly_disputed_configurations_are_tested():
    """The SDK builds these without the options it drops; so do we, with a warning at each."""
    ignored = [job for job in JOBS if job.get("ignored")]
    assert len(ignored) == 6
    assert set().union(*(job["ignored"] for job in ignored)) == {
        "datasets_version", "processes_per_host", "model_dir", "env",
    }  # fmt: skip
    assert "disputed" not in json.loads((FIXTURES / "aws_example_jobs.json").read_text())


@pytest.mark.parametrize("job", HF_DISPUTED, ids=_ids(HF_DISPUTED))
def test_the_disputed_hugging_face_rows_build_with_a_warning_at_the_token(
    job, role, sagemaker_session
):
    _, sdk_refusal = _sdk_verdict(job, role, sagemaker_session)
    assert sdk_refusal is None, sdk_refusal
    est = FACTORY[job["estimator"]](**_arguments(job, role, sagemaker_session))
    warned = [w for w in safe_estimators.explain(est).warnings if "looks like" in w.message]
    assert [w.path for w in warned] == ["hyperparameters.use_auth_token"]
    assert "Secrets Manager" in warned[0].hint and "accept_exposure" in warned[0].hint
    token = job["kwargs"]["hyperparameters"]["use_auth_token"]
    assert token[5:] not in str(warned[0])
