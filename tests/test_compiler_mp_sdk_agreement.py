"""Training Compiler and model parallelism against the bare SageMaker SDK.

The configurations are the SDK's own unit tests (aws/sagemaker-python-sdk, branch master-v2 at
fc582aaa, the 2.257.6 release; the installed 2.257.7 has the same estimator, fw_utils and
training_compiler code), written as factory arguments in the SDK's spelling
(``compiler_config=TrainingCompilerConfig(...)``, raw ``distribution`` dicts); ``source`` names
the SDK test of each row: tests/unit/sagemaker/training_compiler (Hugging Face with PyTorch and
with TensorFlow, PyTorch), tests/unit/test_fw_utils.py (validate_mp_config, parse_mp_parameters),
image_uris/test_smp_v2.py and test_pytorch.py's GPU recipe. The version lists come from the SDK's
tables, as the SDK's conftest generates its version fixtures from them. The compiler tests write
every family at size xlarge; where that size does not exist (p3, p3dn, p4d) the row is refused
(below) and runs again at a real size of the family.

Every row runs the real SDK here, so an SDK upgrade that changes a verdict fails this file:
- ``REFUSED``: the SDK refuses, and ours raises a ConfigError first, at the row's path, with a fix;
- ``ACCEPTED``: the SDK accepts, and we build what the SDK builds from the same arguments plus
  our recorded injections (GPU_NUM_DEVICES, pytorchxla, profiler and Debugger off, ...): the same
  hyperparameters, distribution, environment and image;
- ``ACCEPTED_BY_SDK_REFUSED_BY_US``: the SDK accepts a job that would fail at run time; each row
  says why, with the source, and where it can, the test proves it (botocore's instance enum);
- ``DISABLED_COMPILER``: ``TrainingCompilerConfig(enabled=False)``, which the SDK still treats as
  on (see there).
"""

from __future__ import annotations

import copy
import functools
import json
from typing import Any

import pytest
import sagemaker.huggingface
import sagemaker.pytorch
from packaging.version import Version
from sagemaker import image_uris
from test_launchers_sdk_agreement import SCRIPT, bare_estimator, bare_sdk, offline_session

import safe_estimators
from safe_estimators import ConfigError
from safe_estimators._facts.limits import training_instance_types

HF_TC = sagemaker.huggingface.TrainingCompilerConfig
PT_TC = sagemaker.pytorch.TrainingCompilerConfig
SDK_CLASS = {"huggingface": sagemaker.huggingface.HuggingFace, "pytorch": sagemaker.pytorch.PyTorch}
FACTORY = {"huggingface": safe_estimators.huggingface, "pytorch": safe_estimators.pytorch}

# tests/unit/sagemaker/training_compiler: the GPU families the tests call supported, and the
# rest of their EC2 GPU family list. The tests write every family at size "xlarge".
SUPPORTED_FAMILIES = ("g4dn", "g5", "p3", "p3dn", "p4d")
UNSUPPORTED_FAMILIES = ("g4ad", "p2")
# A real size of each supported family, for the families whose xlarge does not exist.
REAL_SIZE = {"p3": "ml.p3.2xlarge", "p3dn": "ml.p3dn.24xlarge", "p4d": "ml.p4d.24xlarge"}


def _hf_compiler_versions(base: str = "pytorch") -> list[tuple[str, str]]:
    """(transformers, base framework) pairs as the SDK's conftest derives them: every version
    and alias of the huggingface-training-compiler table that has that base, with its first
    version (shortened for a short alias)."""
    config = image_uris.config_for_framework("huggingface-training-compiler")["training"]
    aliases = config.get("version_aliases", {})
    pairs = []
    for version in [*config["versions"], *aliases]:
        entry = config["versions"][aliases.get(version, version)]
        bases = sorted((k[len(base) :] for k in entry if k.startswith(base)), reverse=True)
        if bases:
            first = bases[0] if version.count(".") == 2 else bases[0].rsplit(".", 1)[0]
            pairs.append((version, first))
    return pairs


def _pt_compiler_versions() -> list[str]:
    config = image_uris.config_for_framework("pytorch-training-compiler")["training"]
    return [*config["versions"], *config.get("version_aliases", {})]


def _pt_compiler_py(version: str) -> str:
    """The conftest's pytorch_training_compiler_py_version."""
    return "py39" if Version(version) > Version("1.12") else "py38"


HF_VERSIONS = _hf_compiler_versions()
HF_TF_VERSIONS = _hf_compiler_versions("tensorflow")
PT_VERSIONS = _pt_compiler_versions()
HF_BYOC = (
    "1.dkr.ecr.us-east-1.amazonaws.com/huggingface-pytorch-trcomp-training:"
    "1.10.2-transformers4.17.0-gpu-py38-cu113-ubuntu20.04"
)
PT_BYOC = (
    "1.dkr.ecr.us-east-1.amazonaws.com/pytorch-trcomp-training:1.12.0-gpu-py38-cu113-ubuntu20.04"
)
TWO_GROUPS = [
    {"instance_group_name": t, "instance_type": t, "instance_count": 16}
    for t in ("ml.p3dn.24xlarge", "ml.p4d.24xlarge")
]
SMDDP = {"smdistributed": {"dataparallel": {"enabled": True}}}
XLA = {"pytorchxla": {"enabled": True}}
MPI = {"mpi": {"enabled": True}}


def _hf(transformers: str, pytorch: str | None, **overrides: Any) -> dict[str, Any]:
    """A row of test_huggingface_pytorch_compiler.py: its defaults, then the row's values."""
    row: dict[str, Any] = {
        "estimator": "huggingface",
        "py_version": "py38",
        "instance_count": 1,
        "instance_type": "ml.p3.2xlarge",
        "transformers_version": transformers,
        "pytorch_version": pytorch,
        "enable_sagemaker_metrics": False,
        "compiler_config": HF_TC(),
    }
    row.update(overrides)
    return {k: v for k, v in row.items() if v is not None}


def _pt(version: str | None, **overrides: Any) -> dict[str, Any]:
    """A row of test_pytorch_compiler.py: its defaults, then the row's values."""
    row: dict[str, Any] = {
        "estimator": "pytorch",
        "py_version": "py38",
        "instance_count": 1,
        "instance_type": "ml.p3.2xlarge",
        "framework_version": version,
        "enable_sagemaker_metrics": False,
        "compiler_config": PT_TC(),
    }
    row.update(overrides)
    return {k: v for k, v in row.items() if v is not None}


def _without_type(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in ("instance_type", "instance_count")}


def _compiler_refused() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for transformers, pytorch in HF_VERSIONS:
        v = f"hf{transformers}"
        rows += [
            {"id": f"{v}-byoc", "source": "test_unsupported_BYOC", "path": "image_uri",
             **_hf(transformers, pytorch, image_uri=HF_BYOC)},
            {"id": f"{v}-cpu", "source": "test_unsupported_cpu_instance",
             "path": "instance_type", **_hf(transformers, pytorch, instance_type="ml.m5.xlarge")},
            *[
                {"id": f"{v}-{family}", "source": "test_unsupported_gpu_instance",
                 "path": "instance_type",
                 **_hf(transformers, pytorch, instance_type=f"ml.{family}.xlarge")}
                for family in UNSUPPORTED_FAMILIES
            ],
            {"id": f"{v}-pytorch1.8", "source": "test_unsupported_framework_version_min",
             "path": "pytorch_version", **_hf(transformers, "1.8")},
            {"id": f"{v}-pytorch1.12", "source": "test_unsupported_framework_version_max",
             "path": "pytorch_version", **_hf(transformers, "1.12")},
            {"id": f"{v}-mxnet", "source": "test_unsupported_framework_mxnet",
             "path": "mxnet_version",
             **_hf(transformers, None, mxnet_version=".".join(["99"] * transformers.count(".")
                                                              + ["99"]))},
            {"id": f"{v}-py27", "source": "test_unsupported_python_2", "path": "py_version",
             **_hf(transformers, pytorch, py_version="py27")},
        ]  # fmt: skip
        if Version(pytorch) >= Version("1.11"):
            rows += [
                {"id": f"{v}-instance-groups", "source": "test_unsupported_instance_group",
                 "path": "instance_groups",
                 **_without_type(_hf(transformers, pytorch, instance_groups=TWO_GROUPS))},
                {"id": f"{v}-smddp", "source": "test_unsupported_distribution",
                 "path": "training_compiler",
                 **_hf(transformers, pytorch, instance_count=2, distribution=SMDDP)},
                {"id": f"{v}-mpi", "source": "test_unsupported_distribution",
                 "path": "distribution.mpi",
                 **_hf(transformers, pytorch, instance_count=2, distribution=MPI)},
            ]  # fmt: skip
    rows.append(
        {"id": "hf4.17-pytorch1.10-pytorchxla", "source": "test_unsupported_distribution",
         "path": "distribution.pytorchxla",
         **_hf("4.17", "1.10", instance_count=2, distribution=XLA)}
    )  # fmt: skip
    for version in PT_VERSIONS:
        v = f"pt{version}"
        rows += [
            {"id": f"{v}-byoc", "source": "test_unsupported_BYOC", "path": "image_uri",
             **_pt(version, image_uri=PT_BYOC)},
            {"id": f"{v}-cpu", "source": "test_unsupported_cpu_instance",
             "path": "instance_type", **_pt(version, instance_type="ml.m5.xlarge")},
            *[
                {"id": f"{v}-{family}", "source": "test_unsupported_gpu_instance",
                 "path": "instance_type", **_pt(version, instance_type=f"ml.{family}.xlarge")}
                for family in UNSUPPORTED_FAMILIES
            ],
            {"id": f"{v}-py27", "source": "test_unsupported_python_2", "path": "py_version",
             **_pt(version, py_version="py27")},
            {"id": f"{v}-instance-groups", "source": "test_unsupported_instance_group",
             "path": "instance_groups", **_without_type(_pt(version, instance_groups=TWO_GROUPS))},
            {"id": f"{v}-smddp", "source": "test_unsupported_distribution",
             "path": "training_compiler", **_pt(version, instance_count=2, distribution=SMDDP)},
            {"id": f"{v}-mpi", "source": "test_unsupported_distribution",
             "path": "distribution.mpi", **_pt(version, instance_count=2, distribution=MPI)},
        ]  # fmt: skip
    rows += [
        # The PyTorch estimator given the Hugging Face version arguments.
        {"id": "pt-with-hf-versions-pytorchxla", "source": "test_unsupported_distribution",
         "path": "framework_version",
         **_pt(None, instance_count=2, transformers_version="4.17", pytorch_version="1.10",
               distribution=XLA)},
        # xfail in the SDK (its comment: the user's version is ignored); the 2.257 SDK refuses.
        {"id": "pt99.99.99", "source": "test_unsupported_framework_version",
         "path": "framework_version", **_pt("99.99.99")},
    ]  # fmt: skip
    return rows


def _accepted_for(v: str, make: Any, xla: bool, debug: Any) -> list[dict[str, Any]]:
    """The accepted rows of one compiler version; ``make`` builds a row of its estimator."""
    rows = []
    for family in SUPPORTED_FAMILIES:
        size = f"ml.{family}.xlarge"
        rows.append(
            {"id": f"{v}-{family}", "source": "test_default_compiler_config",
             **make(instance_type=size)}
        )  # fmt: skip
        if xla:
            rows.append(
                {"id": f"{v}-{family}-x2-pytorchxla", "source": "test_pytorchxla_distribution",
                 **make(instance_count=2, instance_type=size, distribution=XLA)}
            )  # fmt: skip
    rows.append(
        {"id": f"{v}-debug", "source": "test_debug_compiler_config", **make(compiler_config=debug)}
    )
    return rows


def _compiler_accepted(
    more: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(rows we build, rows on an instance size that does not exist), with ``more`` rows."""
    rows: list[dict[str, Any]] = list(more)
    for transformers, pytorch in HF_VERSIONS:
        make = functools.partial(_hf, transformers, pytorch)
        xla = Version(pytorch) >= Version("1.11")
        rows += _accepted_for(f"hf{transformers}", make, xla, HF_TC(debug=True))
    for version in PT_VERSIONS:
        make = functools.partial(_pt, version, py_version=_pt_compiler_py(version))
        rows += _accepted_for(f"pt{version}", make, True, PT_TC(debug=True))
    missing = [r for r in rows if r["instance_type"] not in training_instance_types()]
    real = [
        {**r, "id": f"{r['id']}-at-{REAL_SIZE[r['instance_type'].split('.')[1]]}",
         "instance_type": REAL_SIZE[r["instance_type"].split(".")[1]]}
        for r in missing
    ]  # fmt: skip
    built = [r for r in rows if r not in missing]
    return built + real, missing


# --- model parallelism ------------------------------------------------------------------------

MP_JOB = {
    "estimator": "pytorch",
    "instance_type": "ml.p3.16xlarge",
    "instance_count": 1,
    "framework_version": "1.13.1",
    "py_version": "py39",
}
MP_PARAMETERS = "distribution.smdistributed.modelparallel.parameters"


def _v1(parameters: Any) -> dict[str, Any]:
    """The model parallel library v1 on the job of MP_JOB (8 GPUs: one process each)."""
    return {
        **MP_JOB,
        "distribution": {
            "smdistributed": {"modelparallel": {"enabled": True, "parameters": parameters}},
            "mpi": {"enabled": True, "processes_per_host": 8},
        },
    }


def _strings(pipeline: str, placement: str, optimize: str, trace: str) -> dict[str, Any]:
    """test_fw_utils.py::test_mp_config_string_names's parameters."""
    return {"partitions": 2, "pipeline": pipeline, "placement_strategy": placement,
            "optimize": optimize, "trace_device": trace, "active_microbatches": 8,
            "deterministic_server": True}  # fmt: skip


# test_fw_utils.py::test_parse_mp_parameters_input_dict / _str_json
PARSED = {"partitions": 1, "tensor_parallel_degree": 2, "microbatches": 1, "optimize": "speed",
          "pipeline": "interleaved", "ddp": 1, "auto_partition": False,
          "default_partition": 0}  # fmt: skip
SMP_V2 = {
    "torch_distributed": {"enabled": True},
    "smdistributed": {"modelparallel": {"enabled": True}},
}
RECIPE_IMAGE = (
    "658645717510.dkr.ecr.us-west-2.amazonaws.com/smdistributed-modelparallel:2.4.1-gpu-py311"
)


def _smp_v2(version: str, py: str, instance_type: str, **extra: Any) -> dict[str, Any]:
    """A row of image_uris/test_smp_v2.py: a key of the SDK's pytorch-smp table as the
    framework_version (py311 for 2.3.1, as the test overrides it) on its p4d or p5 type."""
    return {"id": f"smp-v2-{version}-{py}-{instance_type[3:]}", "source": "test_smp_v2",
            "estimator": "pytorch", "instance_type": instance_type, "instance_count": 1,
            "framework_version": version, "py_version": py, "distribution": SMP_V2,
            **extra}  # fmt: skip


MP_REFUSED: list[dict[str, Any]] = [
    {"id": "mp-auto-partition-off-without-default", "source": "test_mp_config_auto_partition_arg",
     "path": f"{MP_PARAMETERS}.auto_partition",
     **_v1({"partitions": 2, "auto_partition": False})},
    {"id": "mp-default-partition-4-of-2", "source": "test_mp_config_auto_partition_arg",
     "path": f"{MP_PARAMETERS}.default_partition",
     **_v1({"partitions": 2, "auto_partition": False, "default_partition": 4})},
    {"id": "mp-parameters-path-missing", "source": "test_parse_mp_parameters_input_not_exit",
     "path": MP_PARAMETERS, **_v1(" !@#$%^&*()path probably in not there.!@#$%^&*()")},
    # test_smp_v2 asks only for the image; the estimator refuses these versions (its
    # torch_distributed check), and so do we.
    *[
        {**_smp_v2(version, py, "ml.p4d.24xlarge"), "path": path}
        for version, py, path in (
            ("2.3.1", "py310", "py_version"),
            ("2.5.0", "py311", "framework_version"),
            ("2.7.0", "py311", "framework_version"),
        )
    ],
]  # fmt: skip

MP_ACCEPTED: list[dict[str, Any]] = [
    {"id": "mp-string-names-interleaved-no-trace", "source": "test_mp_config_string_names",
     **_v1({k: v for k, v in _strings("interleaved", "cluster", "memory", "gpu").items()
            if k not in ("trace_device", "active_microbatches")})},
    # "_only_forward" is in the library's schema and the SDK's list (we refused it before).
    {"id": "mp-string-names-only-forward", "source": "test_mp_config_string_names",
     **_v1({k: v for k, v in _strings("_only_forward", "spread", "speed", "gpu").items()
            if k not in ("trace_device", "active_microbatches")})},
    {"id": "mp-default-partition-1-of-2", "source": "test_mp_config_auto_partition_arg",
     **_v1({"partitions": 2, "auto_partition": False, "default_partition": 1})},
    *[_smp_v2(v, py, t) for v, py in (("2.0.1", "py310"), ("2.1.2", "py310"),
                                      ("2.2.0", "py310"), ("2.3.1", "py311"))
      for t in ("ml.p4d.24xlarge", "ml.p5.48xlarge")],
    # test_pytorch.py::test_training_recipe_for_gpu: the distribution a GPU training recipe
    # sets, on the image test_training_recipe_images_uri expects.
    {"id": "recipe-distribution-on-the-recipe-image", "source": "test_training_recipe_for_gpu",
     "estimator": "pytorch", "instance_type": "ml.p4d.24xlarge", "instance_count": 1,
     "image_uri": RECIPE_IMAGE,
     "distribution": {"torch_distributed": {"enabled": True}, "smdistributed": {"modelparallel": {
         "enabled": True, "parameters": {"placement_strategy": "cluster"}}}}},
]  # fmt: skip

_LIBRARY_SCHEMA = (
    "the library v1's own launch check (smdistributed/modelparallel/backend/config.py and its "
    "config.yaml, launcher-facts.md section 7)"
)
_NOT_A_TYPE = (
    "not a SageMaker training instance type (botocore's TrainingInstanceType enum, checked "
    "below): CreateTrainingJob refuses it"
)

# Jobs the SDK accepts that would fail at run time: we refuse them first, at `path`.
ACCEPTED_BY_SDK_REFUSED_BY_US: list[dict[str, Any]] = [
    *[
        {"id": f"mp-string-names-{p}", "source": "test_mp_config_string_names",
         "path": (f"{MP_PARAMETERS}.trace_device", f"{MP_PARAMETERS}.active_microbatches"),
         "why": "trace_device is an unknown key ('Unrecognized config parameter') and 8 active "
                "microbatches of 1 microbatch exceed the upper bound (microbatches), in "
                f"{_LIBRARY_SCHEMA}",
         **_v1(_strings(p, s, o, t))}
        for p, s, o, t in (("simple", "spread", "speed", "cpu"),
                           ("interleaved", "cluster", "memory", "gpu"),
                           ("_only_forward", "spread", "speed", "gpu"))
    ],
    {"id": "mp-parse-dict-ddp-1", "source": "test_parse_mp_parameters_input_dict",
     "path": f"{MP_PARAMETERS}.ddp", **_v1(PARSED),
     "why": f"ddp=1 is an int; the library checks type(value) is bool, {_LIBRARY_SCHEMA}"},
    *[
        {**_smp_v2(version, py, "ml.p4d.24xlarge"), "path": "framework_version",
         "why": f"{version} is a library release, not a PyTorch version: the SDK builds the tag "
                f"smdistributed-modelparallel:{version}-gpu-..., which AWS never published (the "
                "SMP v2 release notes list the images by PyTorch version, launcher-facts.md 1.4)"}
        for version, py in (("2.3.0", "py310"), ("2.8.0", "py311"))
    ],
    *[
        {**_smp_v2(version, py, "ml.p5.24xlarge"), "path": "instance_type", "why": _NOT_A_TYPE}
        for version, py in (("2.0.1", "py310"), ("2.1.2", "py310"), ("2.2.0", "py310"),
                            ("2.3.0", "py310"), ("2.3.1", "py311"), ("2.8.0", "py311"))
    ],
]  # fmt: skip


def _tf(transformers: str, tensorflow: str | None, **overrides: Any) -> dict[str, Any]:
    """A row of test_huggingface_tensorflow_compiler.py (its py_version fixture: py37 before
    TensorFlow 2.6)."""
    py = "py37" if tensorflow and Version(tensorflow) < Version("2.6") else "py38"
    arguments = {"tensorflow_version": tensorflow, "py_version": py, **overrides}
    return _hf(transformers, None, **arguments)


def _tensorflow_rows() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(refused, accepted) rows of test_huggingface_tensorflow_compiler.py."""
    refused: list[dict[str, Any]] = []
    accepted: list[dict[str, Any]] = []
    for transformers, tensorflow in HF_TF_VERSIONS:
        v, py = f"hf{transformers}-tf", _tf(transformers, tensorflow)["py_version"]
        byoc = (
            "1.dkr.ecr.us-east-1.amazonaws.com/huggingface-tensorflow-trcomp-training:"
            f"2.6.3-transformers4.17.0-gpu-{py}-cu112-ubuntu20.04"
        )
        nines = ".".join(["99"] * (transformers.count(".") + 1))
        refused += [
            {"id": f"{v}-byoc", "source": "test_unsupported_BYOC", "path": "image_uri",
             **_tf(transformers, tensorflow, image_uri=byoc)},
            {"id": f"{v}-cpu", "source": "test_unsupported_cpu_instance",
             "path": "instance_type",
             **_tf(transformers, tensorflow, instance_type="ml.m5.xlarge")},
            *[
                {"id": f"{v}-{family}", "source": "test_unsupported_gpu_instance",
                 "path": "instance_type",
                 **_tf(transformers, tensorflow, instance_type=f"ml.{family}.xlarge")}
                for family in UNSUPPORTED_FAMILIES
            ],
            {"id": f"{v}-tensorflow{nines}", "source": "test_unsupported_framework_version",
             "path": "tensorflow_version", **_tf(transformers, nines)},
            {"id": f"{v}-mxnet", "source": "test_unsupported_framework_mxnet",
             "path": "mxnet_version", **_tf(transformers, None, mxnet_version=nines)},
            {"id": f"{v}-py27", "source": "test_unsupported_python_2", "path": "py_version",
             **_tf(transformers, tensorflow, py_version="py27")},
            {"id": f"{v}-smddp", "source": "test_unsupported_distribution",
             "path": "training_compiler",
             **_tf(transformers, tensorflow, py_version="py38", instance_count=2,
                   distribution=SMDDP)},
            {"id": f"{v}-pytorchxla", "source": "test_unsupported_distribution",
             "path": "distribution.pytorchxla",
             **_tf(transformers, tensorflow, py_version="py38", instance_count=2,
                   distribution=XLA)},
        ]  # fmt: skip
        make = functools.partial(_tf, transformers, tensorflow)
        accepted += _accepted_for(v, make, False, HF_TC(debug=True))
    return refused, accepted


_TF_REFUSED, _TF_ACCEPTED = _tensorflow_rows()
COMPILER_REFUSED = _compiler_refused() + _TF_REFUSED
COMPILER_ACCEPTED, _MISSING_SIZES = _compiler_accepted(_TF_ACCEPTED)
ACCEPTED_BY_SDK_REFUSED_BY_US += [
    {**row, "path": "instance_type", "why": _NOT_A_TYPE} for row in _MISSING_SIZES
]
REFUSED = COMPILER_REFUSED + MP_REFUSED
ACCEPTED = COMPILER_ACCEPTED + MP_ACCEPTED

# TrainingCompilerConfig(enabled=False), test_disable_compiler_config. The SDK tests the config
# with `if compiler_config:`, and the class defines only Python 2's __nonzero__, so in Python 3
# every config object is true: a disabled compiler still gets the compiler's image, its checks
# and sagemaker_training_compiler_enabled="false". We read enabled=False as asked, the compiler
# off: the framework's standard image and no compiler hyperparameters. Transformers 4.21 has no
# standard Hugging Face image, so that job is refused with the fix (turn the compiler on).
DISABLED_COMPILER: list[dict[str, Any]] = [
    *[
        {"id": f"hf{t}-disabled", "source": "test_disable_compiler_config",
         **_hf(t, p, compiler_config=HF_TC(enabled=False))}
        for t, p in HF_VERSIONS
    ],
    *[
        {"id": f"hf{t}-tf-disabled", "source": "test_disable_compiler_config",
         **_tf(t, tf, compiler_config=HF_TC(enabled=False))}
        for t, tf in HF_TF_VERSIONS
    ],
    *[
        {"id": f"pt{v}-disabled", "source": "test_disable_compiler_config",
         **_pt(v, py_version=_pt_compiler_py(v), compiler_config=PT_TC(enabled=False))}
        for v in PT_VERSIONS
    ],
]  # fmt: skip


@pytest.fixture(scope="module")
def session():
    return offline_session()


_CASE_KEYS = ("id", "source", "path", "why", "estimator")


def _arguments(case: dict[str, Any], role: str) -> dict[str, Any]:
    arguments = {"entry_point": SCRIPT, "role": role, "check_script": False}
    arguments.update({k: copy.deepcopy(v) for k, v in case.items() if k not in _CASE_KEYS})
    return arguments


def _ids(rows: list[dict[str, Any]]) -> list[str]:
    return [row["id"] for row in rows]


def test_every_row_has_a_unique_id_and_its_source():
    rows = REFUSED + ACCEPTED + ACCEPTED_BY_SDK_REFUSED_BY_US + DISABLED_COMPILER
    assert len(set(_ids(rows))) == len(rows)
    assert all(row["source"].startswith("test_") for row in rows)


def _refused_at(case: dict[str, Any], session: Any, role: str) -> Any:
    """Our ConfigError for the row: at its path, never the SDK's, with a message and a fix."""
    with pytest.raises(ConfigError) as caught:
        FACTORY[case["estimator"]](sagemaker_session=session, **_arguments(case, role))
    error = caught.value
    assert "<sagemaker>" not in error.paths
    paths = (case["path"],) if isinstance(case["path"], str) else case["path"]
    problems = [p for p in error.problems if p.path in paths and p.severity == "error"]
    assert {p.path for p in problems} == set(paths), error
    assert all(p.message and p.hint for p in problems), problems
    return problems[0]


@pytest.mark.parametrize("case", REFUSED, ids=_ids(REFUSED))
def test_what_the_sdks_tests_refuse_is_our_rule_first(case, session, role):
    sdk = SDK_CLASS[case["estimator"]]
    assert bare_sdk(_arguments(case, role), session, sdk) is not None, "the SDK accepts it now"
    _refused_at(case, session, role)


# What we may set beyond the user's arguments (each recorded as an Injection with its reason).
DOCUMENTED_INJECTIONS = (
    "training_compiler",  # compiler_config read as the compiler intent
    "environment.GPU_NUM_DEVICES",
    "distribution.pytorchxla",
    "disable_profiler",
    "debugger_hook_config",
    "encrypt_inter_container_traffic",
    "distribution.mpi.",
    "distribution.torch_distributed.",
    "distribution.smdistributed.modelparallel.",
)


def _with_injections(
    arguments: dict[str, Any], injections: Any, dropped: set[str]
) -> dict[str, Any]:
    """The user's arguments with each recorded injection applied at its dotted path, and the
    options we warned we leave out removed."""
    replay = copy.deepcopy(arguments)
    for path, value in [(i.path, i.value) for i in injections] + [(p, _DROP) for p in dropped]:
        if path == "training_compiler":
            continue
        *parents, leaf = path.split(".")
        node = replay
        for key in parents:
            node = node.setdefault(key, {})
        if value is _DROP:
            node.pop(leaf, None)
        else:
            node[leaf] = value
    return replay


_DROP = object()
# The library v1 reads `partitions` as an alias of `pipeline_parallel_degree` (its config.yaml).
_ALIASES = {"partitions": "pipeline_parallel_degree"}


def _canonical(parameters: dict[str, Any]) -> dict[str, Any]:
    return {_ALIASES.get(k, k): v for k, v in parameters.items()}


def _received(est: Any) -> dict[str, Any]:
    """What SageMaker receives from an estimator, before fit() adds the job's own values; model
    parallel parameters under their canonical names."""
    hyperparameters = dict(est.hyperparameters())
    if "mp_parameters" in hyperparameters:
        hyperparameters["mp_parameters"] = _canonical(json.loads(hyperparameters["mp_parameters"]))
    distribution = json.loads(json.dumps(est.distribution or {}, default=str))
    mp = distribution.get("smdistributed", {}).get("modelparallel", {})
    if isinstance(mp.get("parameters"), dict):
        mp["parameters"] = _canonical(mp["parameters"])
    return {
        "hyperparameters": hyperparameters,
        "image": est.training_image_uri(),
        "distribution": distribution,
        "environment": est.environment or {},
        "instance": (est.instance_type, est.instance_count),
        "disable_profiler": est.disable_profiler,
        "debugger_hook_config": est.debugger_hook_config,
        "encrypt_inter_container_traffic": est.encrypt_inter_container_traffic,
    }


# The hyperparameters an injection under each path may change.
INJECTED_HYPERPARAMETERS = {
    "mp_parameters": "distribution.smdistributed.modelparallel.",
    "sagemaker_mpi_": "distribution.mpi.",
    "sagemaker_pytorch_xla_": "distribution.pytorchxla",
}


def _left_out(est: Any) -> set[str]:
    """Model parallel options we warned about and left out of what the job receives."""
    sent = (est.distribution or {}).get("smdistributed", {}).get("modelparallel", {})
    sent = _canonical(sent.get("parameters") or {})
    return {
        w.path
        for w in safe_estimators.explain(est).warnings
        if w.path.startswith(f"{MP_PARAMETERS}.")
        and _ALIASES.get(w.path.rsplit(".", 1)[1], w.path.rsplit(".", 1)[1]) not in sent
    }


@pytest.mark.parametrize("case", ACCEPTED, ids=_ids(ACCEPTED))
def test_what_the_sdks_tests_accept_we_build_as_the_sdk_does(case, session, role):
    sdk = SDK_CLASS[case["estimator"]]
    arguments = _arguments(case, role)
    bare = bare_estimator(arguments, session, sdk)
    ours = FACTORY[case["estimator"]](sagemaker_session=session, **arguments)
    injections = safe_estimators.explain(ours).injections
    assert all(i.path.startswith(DOCUMENTED_INJECTIONS) for i in injections), injections
    replay = bare_estimator(_with_injections(arguments, injections, _left_out(ours)), session, sdk)
    assert _received(ours) == _received(replay)
    assert ours.training_image_uri() == bare.training_image_uri()
    # What the user gave reaches the job unchanged unless an injection or a warning names it.
    named = {i.path for i in injections} | _left_out(ours)
    for key, value in bare.hyperparameters().items():
        changed_by = [p for h, p in INJECTED_HYPERPARAMETERS.items() if key.startswith(h)]
        if not any(n.startswith(tuple(changed_by)) for n in named):
            assert ours.hyperparameters()[key] == value, key


@pytest.mark.parametrize(
    "case", ACCEPTED_BY_SDK_REFUSED_BY_US, ids=_ids(ACCEPTED_BY_SDK_REFUSED_BY_US)
)
def test_what_the_sdk_passes_but_would_fail_we_refuse_first(case, session, role):
    sdk = SDK_CLASS[case["estimator"]]
    assert bare_sdk(_arguments(case, role), session, sdk) is None, "the SDK refuses it now"
    if case["why"] == _NOT_A_TYPE:
        assert case["instance_type"] not in training_instance_types()
    _refused_at(case, session, role)


@pytest.mark.parametrize("case", DISABLED_COMPILER, ids=_ids(DISABLED_COMPILER))
def test_a_disabled_compiler_is_off_where_the_sdk_keeps_its_image(case, session, role):
    sdk = SDK_CLASS[case["estimator"]]
    arguments = _arguments(case, role)
    bare = bare_estimator(arguments, session, sdk)
    assert "-trcomp-" in bare.training_image_uri()
    assert bare.hyperparameters()["sagemaker_training_compiler_enabled"] == "false"
    standard = _standard_image_exists(case, session, role)
    if not standard:
        problem = _refused_at({**case, "path": "transformers_version"}, session, role)
        assert "training_compiler=True" in problem.hint
        return
    ours = FACTORY[case["estimator"]](sagemaker_session=session, **arguments)
    assert "-trcomp-" not in ours.training_image_uri()
    assert not any("training_compiler" in key for key in ours.hyperparameters())
    assert "GPU_NUM_DEVICES" not in (ours.environment or {})


def _standard_image_exists(case: dict[str, Any], session: Any, role: str) -> bool:
    """Whether the bare SDK has the framework's image for the row without the compiler."""
    arguments = {k: v for k, v in _arguments(case, role).items() if k != "compiler_config"}
    return bare_sdk(arguments, session, SDK_CLASS[case["estimator"]]) is None


def test_parameters_as_a_json_file_reach_the_job_as_the_sdk_reads_them(session, role, tmp_path):
    """test_parse_mp_parameters_input_str_json: the SDK reads a local JSON file named in place of
    the parameters dict (fw_utils.parse_mp_parameters); so do we (we refused it before)."""
    parameters = {**PARSED, "ddp": True}
    path = tmp_path / "params.json"
    path.write_text(json.dumps(parameters))
    arguments = _arguments(_v1(str(path)), role)
    bare = bare_estimator(arguments, session)
    ours = safe_estimators.pytorch(sagemaker_session=session, **arguments)
    assert json.loads(bare.hyperparameters()["mp_parameters"]) == parameters
    assert _received(ours)["hyperparameters"] == _received(bare)["hyperparameters"] | {
        "sagemaker_mpi_custom_mpi_options": ours.hyperparameters()[
            "sagemaker_mpi_custom_mpi_options"
        ]
    }
    assert ours.training_image_uri() == bare.training_image_uri()


@pytest.mark.parametrize(
    ("content", "words"),
    [("{nope", "not JSON"), ("[1, 2]", "JSON list"), (None, "neither a dict nor")],
)
def test_a_parameters_file_the_sdk_cannot_read_is_our_problem_first(
    session, role, tmp_path, content, words
):
    """test_parse_mp_parameters_input_not_exit, and files the SDK cannot parse."""
    path = tmp_path / "params.json"
    if content is not None:
        path.write_text(content)
    case = {"path": MP_PARAMETERS, **_v1(str(path))}
    assert bare_sdk(_arguments(case, role), session) is not None
    assert words in _refused_at(case, session, role).message
