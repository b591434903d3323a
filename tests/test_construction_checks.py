"""The SDK estimators' construction-time checks are our rules: validate, build and plan agree.

``HuggingFace._validate_args`` and ``__init__``, ``PyTorch.__init__`` and ``EstimatorBase.__init__``
(sagemaker 2.257) refuse a Hugging Face job with both pytorch_version and tensorflow_version,
versions that mix full and short forms, ``pytorchxla`` without Training Compiler, ``local_gpu``
on two instances, and subnets without security groups (or the reverse). Each was found by the
build only (a ``<sagemaker>`` refusal); now validate, the factories and plan report the same
problem at its path. Local mode plans with a LocalSession that captures the request (no Docker).
Over the SDK's unit-test rows (the agreement tests' tables) the three verdicts are the same.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from sagemaker.huggingface import HuggingFace
from sagemaker.pytorch import PyTorch
from test_compiler_mp_sdk_agreement import (
    ACCEPTED,
    ACCEPTED_BY_SDK_REFUSED_BY_US,
    DISABLED_COMPILER,
    REFUSED,
)
from test_compiler_mp_sdk_agreement import _arguments as _row_arguments
from test_launchers_sdk_agreement import ACCEPTED as LAUNCHER_ACCEPTED
from test_launchers_sdk_agreement import REFUSED as LAUNCHER_REFUSED
from test_launchers_sdk_agreement import _arguments as _launcher_arguments
from test_launchers_sdk_agreement import offline_session

import safe_estimators
from safe_estimators import ConfigError
from safe_estimators._resolve import check_arguments
from safe_estimators._spec import structure_spec

SDK = {"huggingface": HuggingFace, "pytorch": PyTorch}
HF = {"transformers_version": "4.26.0", "pytorch_version": "1.13.1", "py_version": "py39"}
PT = {"framework_version": "1.13.1", "py_version": "py39"}
XLA = {"pytorchxla": {"enabled": True}}

# The SDK's own words for each refusal (sagemaker 2.257), so that the bare SDK is seen refusing
# the job for the reason the row is about, not for another.
MIXED_FORMS = "use either full version or shortened version for both transformers_version"
XLA_NEEDS_COMPILER = (
    "Distributed training through PyTorch XLA is currently only supported when SageMaker "
    "Training Compiler is enabled"
)
VPC_NEEDS_BOTH = "both subnets and security_group_ids must be set"

CONSTRUCTION = [
    pytest.param(
        "huggingface", {**HF, "tensorflow_version": "2.11.0", "instance_type": "ml.g5.xlarge"},
        "tensorflow_version", "beside pytorch_version",
        "tensorflow_version and pytorch_version are both not None", id="both-base-frameworks",
    ),
    pytest.param(
        "huggingface", {**HF, "transformers_version": "4.26", "instance_type": "ml.g5.xlarge"},
        "pytorch_version", "transformers_version='4.26', pytorch_version='1.13'", MIXED_FORMS,
        id="short-transformers-full-pytorch",
    ),
    pytest.param(
        "huggingface", {**HF, "pytorch_version": "1.13", "instance_type": "ml.g5.xlarge"},
        "pytorch_version", "mix a full and a short version", MIXED_FORMS,
        id="full-transformers-short-pytorch",
    ),
    pytest.param(
        "huggingface",
        {**HF, "instance_type": "ml.g5.12xlarge", "distribution": XLA},
        "distribution.pytorchxla", "only with SageMaker Training Compiler", XLA_NEEDS_COMPILER,
        id="hf-xla-no-compiler",
    ),
    pytest.param(
        "pytorch",
        {**PT, "instance_type": "ml.g5.12xlarge", "distribution": XLA},
        "distribution.pytorchxla", "only with SageMaker Training Compiler", XLA_NEEDS_COMPILER,
        id="pt-xla-no-compiler",
    ),
    pytest.param(
        "pytorch", {**PT, "instance_type": "local_gpu", "instance_count": 2},
        "instance_count", "with instance_type 'local_gpu'",
        "Distributed Training in Local GPU is not supported", id="local-gpu-two-instances",
    ),
    pytest.param(
        "pytorch", {**PT, "instance_type": "ml.g5.xlarge", "subnets": ["subnet-0abc"]},
        "subnets", "given without security_group_ids", VPC_NEEDS_BOTH, id="subnets-alone",
    ),
    pytest.param(
        "pytorch", {**PT, "instance_type": "ml.g5.xlarge", "security_group_ids": ["sg-0abc"]},
        "security_group_ids", "given without subnets", VPC_NEEDS_BOTH,
        id="security-groups-alone",
    ),
]  # fmt: skip


@pytest.fixture(scope="module")
def session():
    return offline_session()


def _verdicts(kind: str, arguments: dict[str, Any], session: Any) -> dict[str, Any]:
    """The error paths of validate, the factory and plan for one job (empty: it builds)."""
    arguments = copy.deepcopy(arguments)
    _, problems, _ = check_arguments({"estimator": kind, **arguments})
    validated = sorted({p.path for p in problems if p.severity == "error"})
    try:
        getattr(safe_estimators, kind)(sagemaker_session=session, **copy.deepcopy(arguments))
        built: list[str] = []
    except ConfigError as error:
        built = sorted({p.path for p in error.problems if p.severity == "error"})
    # plan from a spec holding the machines, with every argument as an override: the overrides
    # are structured again, so an unknown keyword is plan's problem too.
    machines = {k: arguments[k] for k in ("instance_type", "instance_groups") if k in arguments}
    base, _ = structure_spec(
        {"estimator": kind, "entry_point": arguments["entry_point"], **machines}
    )
    try:
        if base is None:
            raise ConfigError(problems)
        safe_estimators.plan(base, **copy.deepcopy(arguments))
        planned: list[str] = []
    except ConfigError as error:
        planned = sorted({p.path for p in error.problems if p.severity == "error"})
    return {"validate": validated, "build": built, "plan": planned}


@pytest.mark.parametrize(("kind", "arguments", "path", "words", "sdk_says"), CONSTRUCTION)
def test_an_sdk_construction_check_is_our_rule_in_validate_build_and_plan(
    kind, arguments, path, words, sdk_says, session, role
):
    arguments = {"entry_point": _row_arguments({}, role)["entry_point"], "role": role, **arguments}
    # The bare SDK refuses it as it builds, for this reason.
    with pytest.raises((ValueError, RuntimeError), match=re.escape(sdk_says)):
        SDK[kind](sagemaker_session=session, **{"instance_count": 1, **arguments})
    verdicts = _verdicts(kind, arguments, session)
    assert verdicts == {"validate": [path], "build": [path], "plan": [path]}
    _, problems, _ = check_arguments({"estimator": kind, **arguments})
    (problem,) = [p for p in problems if p.path == path]
    assert words in problem.message + problem.hint
    assert problem.hint


def test_a_local_mode_job_plans_with_a_local_session(role):
    spec, problems = structure_spec(
        {"estimator": "pytorch", **PT, "instance_type": "local_gpu", "role": role,
         "entry_point": _row_arguments({}, role)["entry_point"]}
    )  # fmt: skip
    assert not problems
    planned = safe_estimators.plan(spec)
    assert planned.request["ResourceConfig"]["InstanceType"] == "local_gpu"
    assert planned.request["AlgorithmSpecification"]["TrainingImage"].endswith("1.13.1-gpu-py39")


def _rows() -> list[Any]:
    compiler = REFUSED + ACCEPTED + ACCEPTED_BY_SDK_REFUSED_BY_US + DISABLED_COMPILER
    launchers = LAUNCHER_REFUSED + LAUNCHER_ACCEPTED
    return [
        *(pytest.param(row["estimator"], row, "compiler", id=row["id"]) for row in compiler),
        *(
            pytest.param("pytorch", row, "launcher", id=f"launcher-{row['id']}")
            for row in launchers
        ),
    ]


@pytest.mark.parametrize(("kind", "row", "table"), _rows())
def test_validate_build_and_plan_agree_on_the_sdks_unit_test_rows(kind, row, table, session, role):
    arguments = _row_arguments(row, role) if table == "compiler" else _launcher_arguments(row, role)
    verdicts = _verdicts(kind, arguments, session)
    assert verdicts["validate"] == verdicts["build"] == verdicts["plan"], verdicts
    assert "<sagemaker>" not in verdicts["build"]
