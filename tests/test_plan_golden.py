"""The requests SageMaker receives do not change when the code around them is made faster.

A set of jobs (the example specs, the notebook's plans and its two factory-built jobs) is planned
or built and fitted, under the test suite's SDK config (telemetry off only) and under an
organisation's config (tags, KMS keys, VPC, environment, explicit encryption and profiler
settings). Their CreateTrainingJob requests must equal the ones recorded in
``fixtures/golden-requests.json`` before the speed work, once the timestamped job name is set
aside. A change that alters a request on purpose regenerates the file and says why:

    SAFE_ESTIMATORS_REGENERATE_GOLDEN=1 .venv/bin/pytest tests/test_plan_golden.py
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import boto3
import pytest
import sagemaker
import yaml
from conftest import SDK3
from moto import mock_aws
from test_sdk_config import ORG_CONFIG

import safe_estimators

EXAMPLES = Path(__file__).parent.parent / "examples"
GOLDEN = Path(__file__).parent / "fixtures" / "golden-requests.json"
REGENERATE = os.environ.get("SAFE_ESTIMATORS_REGENERATE_GOLDEN") == "1"
REGION = "us-west-2"
BUCKET = "golden-bucket"
ROLE = "arn:aws:iam::111122223333:role/SageMakerRole"
JOB = "<job name>"

# (name, spec file relative to examples/, overrides): what `plan` is asked in the examples and
# the notebook.
PLANS = [
    ("plan compiler-single-gpu", "compiler-single-gpu/job.yaml", {}),
    ("plan compiler-multi-gpu", "compiler-multi-gpu/job.yaml", {}),
    ("plan compiler-multi-gpu x2", "compiler-multi-gpu/job.yaml", {"instance_count": 2}),
    ("plan compiler-multi-node", "compiler-multi-node/job.toml", {}),
    ("plan model-parallel-fp16", "model-parallel-fp16/job.yaml", {}),
]

# The notebook's factory calls (with a role), fitted against moto.
BUILDS: list[tuple[str, str, dict[str, Any]]] = [
    (
        "notebook compiler job",
        "huggingface",
        dict(
            entry_point="train.py",
            source_dir=str(EXAMPLES / "compiler-single-gpu"),
            role=ROLE,
            instance_type="ml.p3.8xlarge",
            instance_count=2,
            transformers_version="4.21.1",
            pytorch_version="1.11.0",
            py_version="py38",
            training_compiler=True,
            hyperparameters={"model_name_or_path": "bert-base-uncased", "max_seq_length": 128},
        ),
    ),
    (
        "notebook model-parallel job",
        "pytorch",
        dict(
            entry_point="train.py",
            source_dir=str(EXAMPLES / "model-parallel-fp16"),
            role=ROLE,
            instance_type="ml.p3.16xlarge",
            framework_version="1.13.1",
            py_version="py39",
            model_parallel={
                "pipeline_parallel_degree": 2,
                "tensor_parallel_degree": 2,
                "microbatches": 4,
                "fp16": True,
            },
        ),
    ),
]

# sagemaker 3's: the examples that build there, as ModelTrainers (its default target). The
# notebook's jobs and the examples above are the estimator's.
TRAINER_PLANS = [
    *((f"ModelTrainer plan {name}", f"model-trainer/{name}.yaml", {})
      for name in ("torchrun-fsdp", "smp-v2", "qlora")),
    ("ModelTrainer plan model-parallel-v2", "model-parallel-v2/job.yaml", {}),
]  # fmt: skip
CONFIGS = [
    "telemetry off",
    pytest.param(
        "organisation",
        marks=pytest.mark.xfail(
            SDK3,
            strict=True,
            reason="sagemaker 3's ModelTrainer itself takes none of this config's tags, KMS "
            "keys or VPC (the estimator takes them all); the plan sends what the bare "
            "ModelTrainer sends (test_model_trainer, under an organisation's config)",
        ),
    ),
]


def _without_job_name(request: dict[str, Any]) -> Any:
    """The request as JSON data, with its timestamped job name replaced wherever it appears."""
    name = request["TrainingJobName"]
    return json.loads(json.dumps(request, default=str, sort_keys=True).replace(name, JOB))


@pytest.fixture(params=CONFIGS)
def config(request, tmp_path, monkeypatch) -> str:
    """Which SDK defaults config is in force: the suite's own, or an organisation's."""
    if request.param == "organisation":
        path = tmp_path / "org-config.yaml"
        path.write_text(yaml.safe_dump(ORG_CONFIG, sort_keys=False))
        monkeypatch.setenv("SAGEMAKER_USER_CONFIG_OVERRIDE", str(path))
        monkeypatch.setenv("SAGEMAKER_ADMIN_CONFIG_OVERRIDE", str(path))
    return str(request.param)


def _planned(spec: str, overrides: dict[str, Any]) -> Any:
    return _without_job_name(safe_estimators.plan(EXAMPLES / spec, **overrides).request)


def _built_and_fitted(factory: str, kwargs: dict[str, Any]) -> Any:
    """Build with the factory on a session backed by moto; the request fit() sends."""
    with mock_aws():
        boto_session = boto3.Session(region_name=REGION)
        boto_session.client("s3").create_bucket(
            Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION}
        )
        sent: list[dict[str, Any]] = []
        boto_session.events.register(
            "provide-client-params.sagemaker.CreateTrainingJob",
            lambda params, **_: sent.append(copy.deepcopy(params)),
        )
        session = sagemaker.Session(boto_session=boto_session, default_bucket=BUCKET)
        estimator = getattr(safe_estimators, factory)(**kwargs, sagemaker_session=session)
        estimator.fit(wait=False, logs=False)
    (request,) = sent
    return _without_job_name(request)


def _requests(config: str) -> dict[str, Any]:
    if SDK3:
        return {f"{name} ({config})": _planned(spec, o) for name, spec, o in TRAINER_PLANS}
    found = {f"{name} ({config})": _planned(spec, o) for name, spec, o in PLANS}
    for name, factory, kwargs in BUILDS:
        found[f"{name} ({config})"] = _built_and_fitted(factory, kwargs)
    return found


def test_requests_are_unchanged(config):
    found = _requests(config)
    golden = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    if REGENERATE:
        golden.update(found)
        GOLDEN.write_text(json.dumps(golden, indent=2, sort_keys=True) + "\n")
    for name, request in found.items():
        assert name in golden, f"no golden request for {name!r}; regenerate (see the docstring)"
        assert request == golden[name], name
    # Not vacuous: the organisation's defaults reach the requests.
    if config == "organisation":
        assert all("VpcConfig" in request for request in found.values())
