"""validate, the factories, build and plan reach the same verdict on the same input.

A property test over a space of options that mixes valid values with ones the SDK or the API
refuses, plus a table of real AWS configurations. For every input: validate's errors are exactly
the errors the factory and plan raise, in the same order; and a spec that validate passes is
built by the factory and planned (the SDK's own fit() code) without any refusal.
And the table of hyperparameters the SDK adds per launcher is what the SDK really adds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import safe_estimators
from safe_estimators import ConfigError
from safe_estimators._facts.reserved import sdk_hyperparameters
from safe_estimators._resolve import check_arguments

# The estimator's verdict and the hyperparameters its SDK adds (ModelTrainer adds none).
pytestmark = pytest.mark.sdk2_only

ROOT = Path(__file__).parent.parent  # the specs in tmp_path use the examples' code
EXAMPLES = ROOT / "examples"
XLA_FOLDER = str(EXAMPLES / "compiler-multi-gpu")
ROLE = "arn:aws:iam::111122223333:role/SageMakerRole"

OPTIONS: dict[str, list[Any]] = {
    "instance_type": ["ml.p3.2xlarge", "ml.p3.8xlarge", "ml.g5.12xlarge", "ml.c5.xlarge",
                      "ml.p3.9xlarge"],
    "instance_count": [1, 2, 0],
    "framework_version": ["1.13.1", "1.13", "2.0.1", "9.9"],
    "py_version": ["py39", "py310"],
    "entry_point": ["train.py", "missing.py"],
    "training_compiler": [None, True],
    "compiler_config": [None, {"enabled": True}, {"enabled": False}],
    "distribution": [None, {"pytorchxla": {"enabled": True}},
                     {"torch_distributed": {"enabled": True}}, {"mpi": {"enabled": True}}],
    "volume_size": [None, 30, 0, -5],
    "max_run": [None, 3600, 0, "3600"],
    "tags": [None, {"team": "nlp"}, [{"Key": f"k{i}", "Value": "v"} for i in range(51)],
             [{"Key": "bad,comma", "Value": "x"}]],
    "base_job_name": [None, "bert-v1", "my_job.v1"],
    "checkpoint_s3_uri": [None, "s3://my-bucket/ckpt", "my-bucket/ckpt"],
    "output_path": [None, "s3://my-bucket/out", "/tmp/out"],
    "input_mode": [None, "FastFile", "file"],
    "use_spot_instances": [None, True],
    "max_wait": [None, 7200, 100000],
    "hyperparameters": [None, {"lr": 0.1}, {f"h{i}": i for i in range(96)}],
    "container_log_level": [None, 20, "INFO"],
    "subnets": [None, ["subnet-0abc"], ["subnet_bad!"]],
    "security_group_ids": [None, ["sg-0abc"]],
    "enable_network_isolation": [None, True, "yes"],
    "max_retry_attempts": [None, 3, 31],
    "keep_alive_period_in_seconds": [None, 600, 99999],
    "metric_definitions": [None, [{"Name": "loss", "Regex": "loss=(.*)"}], [{"Name": "x"}]],
}  # fmt: skip


def _job(choice: dict[str, Any]) -> dict[str, Any]:
    return {
        "estimator": "pytorch",
        "source_dir": XLA_FOLDER,
        "role": ROLE,
        **{k: v for k, v in choice.items() if v is not None},
    }


def _errors(arguments: dict[str, Any]) -> list[str]:
    _, problems, _ = check_arguments(arguments)
    return [str(p) for p in problems if p.severity == "error"]


def _factory(arguments: dict[str, Any], session: Any) -> list[str]:
    kwargs = {k: v for k, v in arguments.items() if k != "estimator"}
    try:
        safe_estimators.pytorch(sagemaker_session=session, **kwargs)
    except ConfigError as error:
        return [str(p) for p in error.problems]
    return []


def _plan(arguments: dict[str, Any], folder: Path) -> list[str]:
    path = folder / "job.json"
    path.write_text(json.dumps(arguments))
    try:
        safe_estimators.plan(path, project_root=ROOT)
    except ConfigError as error:
        return [str(p) for p in error.problems]
    return []


def assert_one_verdict(arguments: dict[str, Any], session: Any, folder: Path) -> None:
    expected = _errors(arguments)
    assert _factory(arguments, session) == expected
    assert _plan(arguments, folder) == expected


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.fixed_dictionaries({k: st.sampled_from(v) for k, v in OPTIONS.items()}))
def test_validate_factory_and_plan_agree(sagemaker_session, tmp_path, choice):
    assert_one_verdict(_job(choice), sagemaker_session, tmp_path)


# Real configurations (from AWS's example notebooks and the documentation).
REAL = {
    "hf-compiler-multi-node": {
        "estimator": "huggingface", "entry_point": "train.py",
        "source_dir": str(EXAMPLES / "compiler-single-gpu"), "instance_type": "ml.p4d.24xlarge",
        "instance_count": 2, "transformers_version": "4.21.1", "pytorch_version": "1.11.0",
        "py_version": "py38", "compiler_config": {"enabled": True},
        "base_job_name": "bert-mlm-trcomp", "tags": [{"Key": "project", "Value": "nlp"}],
    },
    "pt-spot-with-checkpoints": {
        "estimator": "pytorch", "entry_point": "train.py", "source_dir": XLA_FOLDER,
        "instance_type": "ml.g5.12xlarge", "framework_version": "1.13.1", "py_version": "py39",
        "use_spot_instances": True, "max_run": 3600, "max_wait": 7200,
        "checkpoint_s3_uri": "s3://my-bucket/checkpoints/run-1", "volume_size": 200,
        "input_mode": "FastFile", "training_compiler": True,
    },
    "pt-torchrun-vpc": {
        "estimator": "pytorch", "entry_point": "train.py", "source_dir": XLA_FOLDER,
        "instance_type": "ml.p4d.24xlarge", "instance_count": 2, "framework_version": "2.0.1",
        "py_version": "py310", "distribution": {"torch_distributed": {"enabled": True}},
        "subnets": ["subnet-0123456789abcdef0"], "security_group_ids": ["sg-0123456789abcdef0"],
        "max_retry_attempts": 3, "keep_alive_period_in_seconds": 1800,
        "metric_definitions": [{"Name": "loss", "Regex": "loss = ([0-9\\.]+)"}],
        "check_script": False,
    },
    "pt-model-parallel": {
        "estimator": "pytorch", "entry_point": "train.py",
        "source_dir": str(EXAMPLES / "model-parallel-fp16"), "instance_type": "ml.p3.16xlarge",
        "framework_version": "1.13.1", "py_version": "py39",
        "model_parallel": {"pipeline_parallel_degree": 2, "microbatches": 4},
        "output_path": "s3://my-bucket/output", "enable_network_isolation": True,
    },
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_configurations_pass_everywhere(name, sagemaker_session, tmp_path):
    arguments = {"role": ROLE, **REAL[name]}
    assert _errors(arguments) == []
    if arguments["estimator"] == "pytorch":
        assert _factory(arguments, sagemaker_session) == []
    assert _plan(arguments, tmp_path) == []


# --- the SDK-added hyperparameters, per launcher ----------------------------------------------

LAUNCHERS = {
    "none": dict(instance_type="ml.p3.2xlarge"),
    "mpi": dict(
        instance_type="ml.p3.16xlarge",
        distribution={"mpi": {"enabled": True, "processes_per_host": 8}},
    ),
    "mpi-default-processes": dict(
        instance_type="ml.p3.16xlarge", distribution={"mpi": {"enabled": True}}
    ),
    "smdistributed-modelparallel": dict(
        instance_type="ml.p3.16xlarge",
        source_dir=str(EXAMPLES / "model-parallel-fp16"),
        model_parallel={"pipeline_parallel_degree": 2, "microbatches": 4},
    ),
    "pytorchxla": dict(instance_type="ml.p3.8xlarge", training_compiler=True),
    "parameter_server": dict(
        instance_type="ml.p3.2xlarge",
        instance_count=2,
        distribution={"parameter_server": {"enabled": True}},
    ),
    "parameter_server-disabled-with-mpi": dict(
        instance_type="ml.p3.16xlarge",
        distribution={"parameter_server": {"enabled": False}, "mpi": {"enabled": True}},
    ),
    "compiler-single-gpu": dict(instance_type="ml.p3.2xlarge", training_compiler=True),
    "torch_distributed": dict(
        instance_type="ml.p4d.24xlarge",
        instance_count=2,
        framework_version="2.0.1",
        py_version="py310",
        distribution={"torch_distributed": {"enabled": True}},
    ),
    "smddp": dict(
        instance_type="ml.p4d.24xlarge",
        instance_count=2,
        framework_version="2.2.0",
        py_version="py310",
        distribution={"smdistributed": {"dataparallel": {"enabled": True}}},
    ),
    "pytorchddp-as-smddp": dict(
        instance_type="ml.p4d.24xlarge",
        instance_count=2,
        framework_version="2.2.0",
        py_version="py310",
        distribution={"pytorchddp": {"enabled": True}},
    ),
    "smp-v2": dict(
        instance_type="ml.p4d.24xlarge",
        instance_count=2,
        framework_version="2.2.0",
        py_version="py310",
        model_parallel={"hybrid_shard_degree": 16},
    ),
    "heterogeneous-smddp": dict(
        framework_version="2.2.0",
        py_version="py310",
        instance_groups=[
            {"instance_group_name": "data", "instance_type": "ml.c5.2xlarge", "instance_count": 1},
            {"instance_group_name": "gpu", "instance_type": "ml.p4d.24xlarge", "instance_count": 2},
        ],
        distribution={
            "smdistributed": {"dataparallel": {"enabled": True}},
            "instance_groups": ["gpu"],
        },
    ),
}


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
def test_reserved_hyperparameters_are_what_the_sdk_adds(launcher, tmp_path):
    arguments = {
        "estimator": "pytorch",
        "entry_point": "train.py",
        "source_dir": XLA_FOLDER,
        "framework_version": "1.13.1",
        "py_version": "py39",
        "hyperparameters": {"lr": 0.1},
        "check_script": False,
        **LAUNCHERS[launcher],
    }
    ctx, problems, _ = check_arguments(arguments)
    assert ctx is not None and not [p for p in problems if p.severity == "error"]
    path = tmp_path / "job.json"
    path.write_text(json.dumps(arguments))
    sent = set(safe_estimators.plan(path, project_root=ROOT).request["HyperParameters"]) - {"lr"}
    assert sent == sdk_hyperparameters(ctx.launchers)
