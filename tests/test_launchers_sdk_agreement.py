"""Our launcher rules against the bare SageMaker SDK.

The SDK's own unit-test configurations (``sdk_launcher_cases``): what the SDK refuses is a
ConfigError of ours with a path and a fix, and the SDK really refuses it; what the SDK accepts we
build. Then a differential property test over random launcher configurations: whatever we build
the SDK accepts (construct, ``hyperparameters()``, ``training_image_uri()``), so every SDK
refusal is a ConfigError of ours first.

The tables ``REFUSED`` and ``ACCEPTED`` are configurations from the SDK's own unit tests
(aws/sagemaker-python-sdk, branch master-v2 at fc582aaa, tests/unit), written as factory
arguments; ``source`` names the SDK test of each row. Rows give ``instance_type`` or
``instance_groups``; the rest defaults to a PyTorch 2.2.0 GPU job.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sagemaker.huggingface
import sagemaker.pytorch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sagemaker.instance_group import InstanceGroup

import safe_estimators
from safe_estimators import ConfigError
from safe_estimators._facts.versions import framework_container

SCRIPT = str(Path(__file__).parent / "fixtures" / "jobs" / "train.py")

SMDDP_ON = {"smdistributed": {"dataparallel": {"enabled": True, "custom_mpi_options": "options"}}}
SMDDP_OFF = {"smdistributed": {"dataparallel": {"enabled": False}}}
TORCHRUN = {"torch_distributed": {"enabled": True}}
CUDA12_201 = "1.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.0.1-gpu-py310-cu121"


def _groups(*types: str) -> list[dict[str, object]]:
    return [
        {"instance_group_name": f"group{i}", "instance_type": t, "instance_count": 1}
        for i, t in enumerate(types)
    ]


REFUSED: list[dict[str, object]] = [
    # test_fw_utils.py::test_validate_smdistributed_raises / test_validate_distribution_raises
    {
        "id": "smdistributed-not-a-dict",
        "source": "test_validate_smdistributed_raises",
        "instance_type": "ml.p4d.24xlarge",
        "distribution": {"smdistributed": "dummy"},
        "path": "distribution.smdistributed",
    },
    {
        "id": "smdistributed-a-set",
        "source": "test_validate_smdistributed_raises",
        "instance_type": "ml.p3.16xlarge",
        "distribution": {"smdistributed": {"dummy"}},
        "path": "distribution.smdistributed",
    },
    {
        "id": "smdistributed-unknown-strategy",
        "source": "test_validate_smdistributed_raises",
        "instance_type": "ml.p3dn.24xlarge",
        "distribution": {"smdistributed": {"dummy": "val"}},
        "path": "distribution.smdistributed.dummy",
    },
    {
        "id": "smdistributed-unknown-enabled-strategy",
        "source": "test_validate_smdistributed_raises",
        "instance_type": "ml.p4de.24xlarge",
        "distribution": {"smdistributed": {"dummy": {"enabled": True}}},
        "path": "distribution.smdistributed.dummy",
    },
    {
        "id": "mpi-on-two-groups",
        "source": "test_validate_distribution_raises",
        "instance_groups": _groups("ml.p3.16xlarge", "ml.p3.16xlarge", "ml.p3.16xlarge"),
        "distribution": {
            "mpi": {"enabled": True, "processes_per_host": 2},
            "instance_groups": ["group0", "group1"],
        },
        "path": "distribution.instance_groups",
    },
    {
        "id": "smddp-no-group-of-three",
        "source": "test_validate_distribution_raises",
        "instance_groups": _groups("ml.p3.16xlarge", "ml.p3.16xlarge", "ml.p3.16xlarge"),
        "distribution": {**SMDDP_ON, "instance_groups": []},
        "path": "distribution.instance_groups",
    },
    # test_fw_utils.py::test_validate_smdataparallel_args_raises (PyTorch rows)
    {
        "id": "smddp-py2",
        "source": "test_validate_smdataparallel_args_raises",
        "instance_type": "ml.p3dn.24xlarge",
        "framework_version": "1.6.0",
        "py_version": "py2",
        "distribution": SMDDP_ON,
        "path": "py_version",
    },
    {
        "id": "smddp-pytorch-1.5.0",
        "source": "test_validate_smdataparallel_args_raises",
        "instance_type": "ml.p3.16xlarge",
        "framework_version": "1.5.0",
        "py_version": "py3",
        "distribution": SMDDP_ON,
        "path": "framework_version",
    },
    # test_fw_utils.py::test_validate_torch_distributed_raises
    {
        "id": "torchrun-trainium-1.10.0",
        "source": "test_validate_torch_distributed_raises",
        "instance_type": "ml.trn1.2xlarge",
        "framework_version": "1.10.0",
        "py_version": "py3",
        "distribution": TORCHRUN,
        "path": "framework_version",
    },
    {
        "id": "torchrun-trainium-py2",
        "source": "test_validate_torch_distributed_raises",
        "instance_type": "ml.trn1.2xlarge",
        "framework_version": "1.11.0",
        "py_version": "py2",
        "distribution": TORCHRUN,
        "path": "py_version",
    },
    {
        "id": "torchrun-shell-entry-point",
        "source": "test_validate_torch_distributed_raises",
        "instance_type": "ml.trn1.2xlarge",
        "framework_version": "1.11.0",
        "py_version": "py38",
        "entry_point": "train.sh",
        "distribution": TORCHRUN,
        "path": "entry_point",
    },
    {
        "id": "torchrun-gpu-1.11.0",
        "source": "test_validate_torch_distributed_raises",
        "instance_type": "ml.p3.8xlarge",
        "framework_version": "1.11.0",
        "py_version": "py38",
        "distribution": TORCHRUN,
        "path": "framework_version",
    },
    # test_fw_utils.py::test_validate_unsupported_distributions_trainium_raises
    {
        "id": "mpi-on-trn1.2xlarge",
        "source": "test_validate_unsupported_distributions_trainium_raises",
        "instance_type": "ml.trn1.2xlarge",
        "framework_version": "1.11.0",
        "py_version": "py38",
        "distribution": {"mpi": {"enabled": True}},
        "path": "distribution.mpi",
    },
    {
        "id": "mpi-on-trn1.32xlarge",
        "source": "test_validate_unsupported_distributions_trainium_raises",
        "instance_type": "ml.trn1.32xlarge",
        "framework_version": "1.11.0",
        "py_version": "py38",
        "distribution": {"mpi": {"enabled": True}},
        "path": "distribution.mpi",
    },
    {
        "id": "pytorch_ddp-on-trn1",
        "source": "test_validate_unsupported_distributions_trainium_raises",
        "instance_type": "ml.trn1.32xlarge",
        "framework_version": "1.11.0",
        "py_version": "py38",
        "distribution": {"pytorch_ddp": {"enabled": True}},
        "path": "distribution.pytorch_ddp",
    },
    {
        "id": "smdataparallel-on-trn1",
        "source": "test_validate_unsupported_distributions_trainium_raises",
        "instance_type": "ml.trn1.32xlarge",
        "framework_version": "1.11.0",
        "py_version": "py38",
        "distribution": {"smdataparallel": {"enabled": True}},
        "path": "distribution.smdataparallel",
    },
    # test_estimator.py::test_validate_smdistributed_unsupported_image_raises
    {
        "id": "cuda12-image-smddp-on",
        "source": "test_validate_smdistributed_unsupported_image_raises",
        "instance_type": "ml.p4d.24xlarge",
        "image_uri": CUDA12_201,
        "distribution": SMDDP_ON,
        "path": "image_uri",
    },
    {
        "id": "cuda12-image-smddp-off",
        "source": "test_validate_smdistributed_unsupported_image_raises",
        "instance_type": "ml.p4d.24xlarge",
        "image_uri": CUDA12_201 + "-ubuntu20.04-sagemaker-pr-3303",
        "distribution": SMDDP_OFF,
        "path": "image_uri",
    },
    # test_estimator.py::test_validate_smdistributed_p5_raises / _instance_groups_raises
    {
        "id": "p5-smddp-on",
        "source": "test_validate_smdistributed_p5_raises",
        "instance_type": "ml.p5.48xlarge",
        "image_uri": "some_acceptable_image",
        "distribution": SMDDP_ON,
        "path": "distribution.smdistributed",
    },
    {
        "id": "p5-smddp-off",
        "source": "test_validate_smdistributed_p5_raises",
        "instance_type": "ml.p5.48xlarge",
        "image_uri": "some_acceptable_image",
        "distribution": SMDDP_OFF,
        "path": "distribution.smdistributed",
    },
    {
        "id": "p5-group-beside-smddp",
        "source": "test_validate_smdistributed_instance_groups_raises",
        "instance_groups": _groups("ml.p4d.24xlarge", "ml.p5.48xlarge"),
        "image_uri": "some_acceptable_image",
        "distribution": {**SMDDP_ON, "instance_groups": ["group0"]},
        "path": "distribution.smdistributed",
    },
    # test_pytorch.py::test_pytorch_ddp_distribution_configuration_unsupported
    {
        "id": "pytorchddp-1.5.0-py2",
        "source": "test_pytorch_ddp_distribution_configuration_unsupported",
        "instance_type": "ml.p4d.24xlarge",
        "framework_version": "1.5.0",
        "py_version": "py2",
        "distribution": {"pytorchddp": {"enabled": True}},
        "path": "framework_version",
    },
]

ACCEPTED: list[dict[str, object]] = [
    # test_pytorch.py::test_pt_heterogeneous_cluster_distribution_config
    {
        "id": "mpi-on-a-cpu-group",
        "source": "test_pt_heterogeneous_cluster_distribution_config",
        "instance_groups": [
            {
                "instance_group_name": "train_group",
                "instance_type": "ml.c4.xlarge",
                "instance_count": 1,
            }
        ],
        "distribution": {"mpi": {"enabled": True}, "instance_groups": ["train_group"]},
    },
    # test_fw_utils.py::test_validate_distribution_copy (one group, named for the user)
    {
        "id": "smddp-single-group",
        "source": "test_validate_distribution_copy",
        "instance_groups": _groups("ml.p4d.24xlarge"),
        "distribution": SMDDP_ON,
    },
    # test_estimator.py::test_validate_smdistributed_p5_not_raises / _backward_compat_p4
    {
        "id": "p5-torchrun-smddp",
        "source": "test_validate_smdistributed_p5_not_raises",
        "instance_type": "ml.p5.48xlarge",
        "distribution": {**TORCHRUN, **SMDDP_ON},
    },
    {
        "id": "p4d-torchrun-smddp",
        "source": "test_validate_smdistributed_backward_compat_p4_not_raises",
        "instance_type": "ml.p4d.24xlarge",
        "distribution": {**TORCHRUN, **SMDDP_OFF},
    },
    # test_fw_utils.py::test_validate_torch_distributed_not_raises
    {
        "id": "torchrun-trainium-1.11.0",
        "source": "test_validate_torch_distributed_not_raises",
        "instance_type": "ml.trn1.2xlarge",
        "framework_version": "1.11.0",
        "py_version": "py38",
        "distribution": TORCHRUN,
    },
    *[
        {
            "id": f"torchrun-gpu-{v}",
            "source": "test_validate_torch_distributed_not_raises",
            "instance_type": "ml.p3.8xlarge",
            "framework_version": v,
            "py_version": "py39" if v == "1.13.1" else "py310",
            "distribution": TORCHRUN,
        }
        for v in ("1.13.1", "2.0.0", "2.0.1", "2.1.0", "2.2.0")
    ],
    # test_pytorch.py::test_pytorch_ddp_distribution_configuration
    {
        "id": "pytorchddp-p4d",
        "source": "test_pytorch_ddp_distribution_configuration",
        "instance_type": "ml.p4d.24xlarge",
        "distribution": {"pytorchddp": {"enabled": True}},
    },
]
_CASE_KEYS = ("id", "source", "path")


@pytest.fixture(scope="module")
def session():
    """A real Session without the suite's SDK config file (see offline_session)."""
    return offline_session()


def offline_session() -> Any:
    """A real Session without the suite's SDK config file.

    That file only opts out of telemetry, which building estimators never sends; with it, the SDK
    re-validates the file against its JSON Schema on each of the ~10 config lookups of every
    constructor (seconds per estimator), and these tests build hundreds.
    """
    import boto3

    session = sagemaker.Session(
        boto_session=boto3.Session(region_name="us-west-2"), default_bucket="agreement-bucket"
    )
    session.sagemaker_config = {}
    return session


def _arguments(case: dict[str, Any], role: str) -> dict[str, Any]:
    arguments = {
        "entry_point": SCRIPT,
        "role": role,
        "framework_version": "2.2.0",
        "py_version": "py310",
        "check_script": False,
    }
    arguments.update({k: v for k, v in case.items() if k not in _CASE_KEYS})
    return arguments


def bare_estimator(
    arguments: dict[str, Any], session: Any, estimator_class: Any = sagemaker.pytorch.PyTorch
) -> Any:
    """Build the same job with the SDK alone, as far as ``training_image_uri()``; it raises
    where the SDK refuses."""
    kwargs = {k: v for k, v in arguments.items() if k != "check_script"}
    distribution = kwargs.get("distribution")
    if kwargs.get("instance_groups") is not None:
        groups = [InstanceGroup(**g) for g in kwargs["instance_groups"]]
        kwargs["instance_groups"] = groups
        if isinstance(distribution, dict) and "instance_groups" in distribution:
            by_name = {g.instance_group_name: g for g in groups}
            names = distribution["instance_groups"]
            distribution = {**distribution, "instance_groups": [by_name[n] for n in names]}
            kwargs["distribution"] = distribution
    else:
        kwargs.setdefault("instance_count", 1)
    estimator = estimator_class(sagemaker_session=session, **kwargs)
    estimator.hyperparameters()
    estimator.training_image_uri()
    return estimator


def bare_sdk(
    arguments: dict[str, Any], session: Any, estimator_class: Any = sagemaker.pytorch.PyTorch
) -> Exception | None:
    """Build the same job with the SDK alone; return what it raised, or None."""
    try:
        bare_estimator(arguments, session, estimator_class)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        return exc
    return None


@pytest.mark.parametrize("case", REFUSED, ids=[c["id"] for c in REFUSED])
def test_what_the_sdks_tests_refuse_is_our_rule_first(case, session, role):
    arguments = _arguments(case, role)
    assert bare_sdk(arguments, session) is not None, "the SDK no longer refuses it"
    with pytest.raises(ConfigError) as caught:
        safe_estimators.pytorch(sagemaker_session=session, **arguments)
    error = caught.value
    assert "<sagemaker>" not in error.paths
    assert case["path"] in error.paths, error
    problem = next(p for p in error.problems if p.path == case["path"])
    assert problem.message and problem.hint, problem


@pytest.mark.parametrize("case", ACCEPTED, ids=[c["id"] for c in ACCEPTED])
def test_what_the_sdks_tests_accept_we_build(case, session, role):
    arguments = _arguments(case, role)
    assert bare_sdk(arguments, session) is None
    est = safe_estimators.pytorch(sagemaker_session=session, **arguments)
    est.hyperparameters()


# --- differential property test -------------------------------------------------------------

INSTANCE_TYPES = (
    "ml.c5.xlarge", "ml.g4dn.xlarge", "ml.g5.12xlarge", "ml.p3.16xlarge", "ml.p3dn.24xlarge",
    "ml.p4d.24xlarge", "ml.p5.48xlarge", "ml.p5e.48xlarge", "ml.trn1.32xlarge",
)  # fmt: skip
VERSIONS = (
    "1.13.1",
    "2.0.1",
    "2.1.0",
    "2.2.0",
    "2.3.0",
    "2.3.1",
    "2.4.0",
    "2.5.1",
    "2.2",
    "1.11.0",
)


def _py_version(version: str, instance_type: str) -> str:
    table = "pytorch-neuron" if "trn" in instance_type else "pytorch"
    container = framework_container(table, version)
    return container.py_versions[-1] if container.py_versions else "py310"


def _enabled() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"enabled": st.booleans()})


_DISTRIBUTIONS = st.fixed_dictionaries(
    {},
    optional={
        "torch_distributed": _enabled(),
        "pytorchddp": _enabled(),
        "mpi": st.fixed_dictionaries(
            {"enabled": st.booleans()},
            optional={"processes_per_host": st.integers(min_value=1, max_value=9)},
        ),
        "smdistributed": st.fixed_dictionaries({"dataparallel": _enabled()}),
    },
)


@st.composite
def launcher_jobs(draw: st.DrawFn) -> dict[str, Any]:
    version = draw(st.sampled_from(VERSIONS))
    job: dict[str, Any] = {
        "framework_version": version,
        "distribution": draw(_DISTRIBUTIONS),
        "entry_point": draw(st.sampled_from([SCRIPT, "train.sh"])),
    }
    if draw(st.booleans()):
        instance_type = draw(st.sampled_from(INSTANCE_TYPES))
        job["instance_type"] = instance_type
        job["instance_count"] = draw(st.integers(min_value=1, max_value=2))
    else:
        gpu = draw(st.sampled_from(INSTANCE_TYPES))
        instance_type = gpu
        job["instance_groups"] = [
            {"instance_group_name": "data", "instance_type": "ml.c5.xlarge", "instance_count": 1},
            {"instance_group_name": "train", "instance_type": gpu, "instance_count": 2},
        ]
        if draw(st.booleans()):
            job["distribution"]["instance_groups"] = [draw(st.sampled_from(["train", "data"]))]
    job["py_version"] = _py_version(version, instance_type)
    return job


def built_or_refused(factory: Any, session: Any, arguments: dict[str, Any]) -> Any:
    """What we build, or None when our rules refuse it (at our paths, never the SDK's)."""
    try:
        return factory(sagemaker_session=session, **arguments)
    except ConfigError as error:
        assert "<sagemaker>" not in error.paths, error
        return None


# The differential tests build real estimators: a few dozen jobs each.
differential = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@differential
@given(job=launcher_jobs())
def test_what_we_build_the_sdk_accepts(job, session, role):
    arguments = {"role": role, "check_script": False, **job}
    est = built_or_refused(safe_estimators.pytorch, session, arguments)
    if est is None:
        return
    est.hyperparameters()
    est.training_image_uri()
    # Our build may differ from the user's input only by recorded injections, so replay what
    # we built through the bare SDK.
    replay = {**arguments, "distribution": _names(est.distribution) or None}
    if "instance_type" in arguments:
        replay["instance_count"] = est.instance_count
    assert bare_sdk(replay, session) is None
    assert_enabled_launchers_reach_the_job(est, job["distribution"], "pytorch")


# The hyperparameter that tells the container to start each launcher, by estimator.
LAUNCH_FLAGS = {
    "torch_distributed": "sagemaker_torch_distributed_enabled",
    "smdistributed": "sagemaker_distributed_dataparallel_enabled",
    "mpi": "sagemaker_mpi_enabled",
}
PYTORCHDDP_FLAG = {
    "pytorch": "sagemaker_distributed_dataparallel_enabled",  # rewritten into SMDDP
    "huggingface": "sagemaker_pytorch_ddp_enabled",
}


def assert_enabled_launchers_reach_the_job(est, distribution, estimator: str) -> None:
    """Every launcher the user enabled is in what SageMaker receives, or we warned it is not."""
    hyperparameters = est.hyperparameters()
    warned = {w.path for w in safe_estimators.explain(est).warnings}
    for key, block in distribution.items():
        if key == "smdistributed":
            block = block.get("dataparallel")
        if key == "instance_groups" or not (isinstance(block, dict) and block.get("enabled")):
            continue
        flag = PYTORCHDDP_FLAG[estimator] if key == "pytorchddp" else LAUNCH_FLAGS[key]
        assert hyperparameters.get(flag) == "true" or f"distribution.{key}" in warned, (
            key,
            distribution,
            hyperparameters,
        )


HF_VERSIONS = (
    ("4.17.0", "1.10.2", "py38"),
    ("4.26.0", "1.13.1", "py39"),
    ("4.28.1", "2.0.0", "py310"),
    ("4.36.0", "2.1.0", "py310"),
    ("4.46.1", "2.3.0", "py311"),
)


@st.composite
def huggingface_launcher_jobs(draw: st.DrawFn) -> dict[str, Any]:
    transformers, pytorch, py = draw(st.sampled_from(HF_VERSIONS))
    return {
        "transformers_version": transformers,
        "pytorch_version": pytorch,
        "py_version": py,
        "distribution": draw(_DISTRIBUTIONS),
        "entry_point": SCRIPT,
        "instance_type": draw(st.sampled_from([t for t in INSTANCE_TYPES if "trn" not in t])),
        "instance_count": draw(st.integers(min_value=1, max_value=2)),
    }


@differential
@given(job=huggingface_launcher_jobs())
def test_what_we_build_with_hugging_face_runs_every_launcher_enabled(job, session, role):
    """The Hugging Face estimator drops launchers silently (SDK huggingface/estimator.py): what
    we build, the SDK accepts, and each launcher the user enabled reaches the job."""
    arguments = {"role": role, "check_script": False, **job}
    est = built_or_refused(safe_estimators.huggingface, session, arguments)
    if est is None:
        return
    est.training_image_uri()
    replay = {**arguments, "distribution": est.distribution or None}
    assert bare_sdk(replay, session, sagemaker.huggingface.HuggingFace) is None
    assert_enabled_launchers_reach_the_job(est, job["distribution"], "huggingface")


def _names(distribution: dict[str, Any]) -> dict[str, Any]:
    return {
        k: [getattr(g, "instance_group_name", g) for g in v] if k == "instance_groups" else v
        for k, v in distribution.items()
    }


# --- bad launcher input of any shape --------------------------------------------------------

_ANY = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(-2, 9), st.floats(), st.text(max_size=8),
        st.sampled_from(["gpu", "data", "ml.p4d.24xlarge", "ml.c5.xlarge", "enabled"]),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.sampled_from(["enabled", "processes_per_host", "custom_mpi_options", "dataparallel",
                             "modelparallel", "instance_group_name", "instance_type",
                             "instance_count", "x"]),
            inner, max_size=3,
        ),
    ),
    max_leaves=8,
)  # fmt: skip
_GROUP = st.one_of(
    _ANY,
    st.fixed_dictionaries(
        {
            "instance_group_name": st.one_of(st.sampled_from(["gpu", "data"]), _ANY),
            "instance_type": st.one_of(st.sampled_from(INSTANCE_TYPES), _ANY),
            "instance_count": st.one_of(st.integers(0, 3), _ANY),
        }
    ),
)
_BAD_DISTRIBUTIONS = st.dictionaries(
    st.sampled_from(
        ["torch_distributed", "mpi", "smdistributed", "pytorchddp", "instance_groups", "torchrun"]
    ),
    _ANY,
    max_size=4,
)


@settings(max_examples=300, deadline=None)
@given(
    distribution=st.one_of(_BAD_DISTRIBUTIONS, _ANY),
    groups=st.one_of(st.none(), st.lists(_GROUP, max_size=3), _ANY),
    instance_type=st.one_of(st.none(), st.sampled_from(INSTANCE_TYPES)),
)
def test_bad_launcher_input_is_problems_at_paths_never_a_traceback(
    distribution, groups, instance_type
):
    from safe_estimators._resolve import check_arguments, resolve_arguments

    arguments = {
        "estimator": "pytorch",
        "entry_point": SCRIPT,
        "framework_version": "2.2.0",
        "py_version": "py310",
        "check_script": False,
        "distribution": distribution,
        "instance_groups": groups,
        "instance_type": instance_type,
    }
    ctx, problems, _ = check_arguments(arguments)
    assert all(p.path and p.message for p in problems)
    if ctx is None:
        assert any(p.severity == "error" for p in problems)
    elif not any(p.severity == "error" for p in problems):
        resolve_arguments(arguments)  # what passes the rules resolves
