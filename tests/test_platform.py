"""The platform under the container: the GPU's architecture against the image's CUDA build, the
host CPU's architecture, and the SageMaker SDK's own image-time refusals.

The verdicts follow the primary sources (PyTorch's build_cuda.sh per release, AWS's Dockerfiles,
NVIDIA's compatibility rules); validate and plan agree on every pair of instance type and
training image of the SDK's PyTorch and Hugging Face tables.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import SDK3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import instance_catalog
import safe_estimators
from safe_estimators import ConfigError
from safe_estimators._commands.validate import validate_file
from safe_estimators._facts import cuda
from safe_estimators._facts.sdk_refusals import instance_deprecations
from safe_estimators._facts.versions import _training_config, framework_container
from safe_estimators._resolve import check_arguments

SCRIPT = "import torch\nprint(torch.cuda.is_available())\n"
ROLE = "arn:aws:iam::111122223333:role/SageMakerRole"


def _spec(folder: Path, **options: Any) -> Path:
    (folder / "train.py").write_text(SCRIPT)
    data = {
        "estimator": "pytorch", "entry_point": "train.py", "instance_count": 1,
        "check_script": False, **options,
    }
    path = folder / "job.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _at(problems, path: str):
    return [p for p in problems if p.path == path]


def _pt(version: str) -> dict[str, str]:
    py = framework_container("pytorch", version).py_versions[-1]
    return {"estimator": "pytorch", "framework_version": version, "py_version": py}


def _hf(transformers: str, pytorch: str, py: str) -> dict[str, str]:
    return {
        "estimator": "huggingface",
        "transformers_version": transformers,
        "pytorch_version": pytorch,
        "py_version": py,
    }


# --- the CUDA build against the GPU ------------------------------------------------------------


def test_pytorch_2_7_1_on_a_v100_is_refused_with_the_versions_that_have_volta_kernels(tmp_path):
    problems = validate_file(_spec(tmp_path, instance_type="ml.p3.2xlarge", **_pt("2.7.1")))
    [problem] = _at(problems, "framework_version")
    assert problem.severity == "error"
    assert "V100 (compute capability 7.0)" in problem.message
    assert "7.5, 8.0, 8.6, 9.0, 10.0, 12.0; PTX: 12.0" in problem.message
    assert "framework_version='2.8.0', py_version='py312'" in problem.hint


def test_pytorch_2_8_0_on_a_v100_builds(tmp_path):
    plan = safe_estimators.plan(_spec(tmp_path, instance_type="ml.p3.2xlarge", **_pt("2.8.0")))
    assert plan.request["ResourceConfig"]["InstanceType"] == "ml.p3.2xlarge"
    assert "2.8.0-gpu-py312" in plan.request["AlgorithmSpecification"]["TrainingImage"]
    assert not [w for w in plan.explanation.warnings if w.path == "framework_version"]


def test_hugging_face_4_55_on_a_v100_is_refused_with_the_2_8_image_as_fix(tmp_path):
    spec = _spec(tmp_path, instance_type="ml.p3.2xlarge", **_hf("4.55.0", "2.7.1", "py312"))
    [problem] = _at(validate_file(spec), "pytorch_version")
    assert problem.severity == "error"
    assert "transformers_version='4.56.2', pytorch_version='2.8.0', py_version='py312'" in (
        problem.hint
    )


@pytest.mark.parametrize(
    ("instance_type", "version"),
    [
        ("ml.p6-b200.48xlarge", "2.5.1"),
        ("ml.p6-b200.48xlarge", "2.6.0"),
        ("ml.g7e.12xlarge", "2.5.1"),
    ],
)
def test_blackwell_on_an_image_built_before_cuda_12_8_is_a_warning_naming_a_blackwell_build(
    tmp_path, instance_type, version
):
    options = {"distribution": {"torch_distributed": {"enabled": True}}, **_pt(version)}
    spec = _spec(tmp_path, instance_type=instance_type, **options)
    [problem] = _at(validate_file(spec), "framework_version")
    assert problem.severity == "warning"
    assert "AWS's own" in problem.message
    assert "framework_version='2.7.1', py_version='py312'" in problem.hint  # no py311 image
    plan = safe_estimators.plan(spec)  # a warning: the job is planned
    assert plan.request["ResourceConfig"]["InstanceType"] == instance_type


def test_hopper_on_a_cuda_11_7_image_is_a_warning(tmp_path):
    spec = _spec(tmp_path, instance_type="ml.p5.4xlarge", **_hf("4.26.0", "1.13.1", "py39"))
    [problem] = _at(validate_file(spec), "pytorch_version")
    assert problem.severity == "warning" and "CUDA 11.7" in problem.message


def test_a_cuda_12_hugging_face_image_on_a_k80_is_refused_by_validate(tmp_path):
    spec = _spec(tmp_path, instance_type="ml.p2.xlarge", **_hf("4.49.0", "2.5.1", "py311"))
    [problem] = _at(validate_file(spec), "pytorch_version")
    assert problem.severity == "error"
    assert "CUDA 12.4 runs nothing below compute capability 5.0" in problem.message
    with pytest.raises(ConfigError):
        safe_estimators.plan(spec)


@pytest.mark.parametrize(
    ("capability", "expected"),
    [("3.7", "no-kernel"), ("7.0", "no-kernel"), ("7.5", "runs"), ("8.9", "runs"),
     ("10.3", "runs"), ("12.0", "runs")],
)
def test_the_2_7_cu128_wheel_by_capability(capability, expected):
    # A cubin runs on its major's higher minors (sm_100 on a B300, 10.3); PTX only JITs upward.
    assert cuda.verdict_of(cuda.pytorch_image_builds("2.7.1"), capability) == expected


def test_every_gpu_of_the_catalog_has_a_compute_capability():
    for entry in instance_catalog.instance_types():
        if entry.accelerator_kind == "gpu":
            assert entry.accelerator is not None and entry.accelerator.compute_capability


def test_the_image_builds_name_versions_the_sdk_has():
    assert set(cuda.IMAGE_BUILDS) <= set(framework_container("pytorch", "2.8.0").known)


def test_hugging_face_builds_come_from_the_sdk_tables_container_version():
    [one] = cuda.huggingface_image_builds("4.56.2", "pytorch2.8.0")
    assert one.cuda == "12.9" and one.known and "7.0" in (one.cubins or ())


# --- the host CPU ------------------------------------------------------------------------------


def test_gb200_has_arm_hosts_and_an_sdk_image_is_refused(tmp_path):
    assert instance_catalog.get("ml.p6e-gb200.36xlarge").cpu_architecture == "arm64"
    assert {e.cpu_architecture for e in instance_catalog.instance_types()} == {"x86_64", "arm64"}
    options = {"distribution": {"torch_distributed": {"enabled": True}}, **_pt("2.8.0")}
    problems = validate_file(_spec(tmp_path, instance_type="ml.p6e-gb200.36xlarge", **options))
    [problem] = _at(problems, "instance_type")
    assert problem.severity == "error" and "arm64" in problem.message


def test_gb200_with_an_image_uri_of_unknown_architecture_is_a_warning(tmp_path):
    options = {
        "image_uri": "123456789012.dkr.ecr.us-east-1.amazonaws.com/mine:latest",
        "distribution": {"torch_distributed": {"enabled": True}},
    }
    problems = validate_file(_spec(tmp_path, instance_type="ml.p6e-gb200.36xlarge", **options))
    assert [p.severity for p in _at(problems, "image_uri")] == ["warning"]


# --- the SDK's own refusals --------------------------------------------------------------------


def test_the_p2_deprecation_is_read_from_the_installed_sdk():
    rules = {(d.family, d.framework, d.since) for d in instance_deprecations()}
    assert ("p2", "pytorch", "1.13") in rules and ("p2", "tensorflow", "2.12") in rules


def test_p2_with_pytorch_2_5_1_is_refused_by_validate_as_the_sdk_refuses_it(tmp_path):
    spec = _spec(tmp_path, instance_type="ml.p2.xlarge", **_pt("2.5.1"))
    [problem] = _at(validate_file(spec), "instance_type")
    assert problem.severity == "error" and "P2" in problem.message
    assert "framework_version='1.12.1', py_version='py38'" in problem.hint
    with pytest.raises(ConfigError) as raised:
        safe_estimators.plan(spec)
    assert "<sagemaker>" not in {p.path for p in raised.value.problems}


# --- validate and plan agree on every (instance type, training image) pair -------------------

REGION = "us-east-1"


def _pytorch_images() -> list[dict[str, str]]:
    config = _training_config("pytorch")
    return [
        {"estimator": "pytorch", "framework_version": v, "py_version": e["py_versions"][-1]}
        for v, e in config["versions"].items()
    ]


def _huggingface_images() -> list[dict[str, str]]:
    return [
        _hf(t, key.removeprefix("pytorch"), py[-1])
        for t, key, py in cuda.huggingface_images()
        if key.startswith("pytorch") and py
    ]


IMAGES = _pytorch_images() + _huggingface_images()
TYPES = [entry.name for entry in instance_catalog.instance_types()]


def _family(name: str) -> str:
    return name.split(".")[1]


@functools.cache
def _sdk_refuses(image_key: str, family_type: str) -> str | None:
    """The SDK's own image lookup for the pair, as the estimators call it (the only step of
    plan's build that depends on the instance type and the versions): the installed
    generation's (sagemaker.image_uris on 2, sagemaker.core.image_uris on 3)."""
    from safe_estimators._targets.model_trainer import _sdk

    image_uris = _sdk().image_uris

    image = json.loads(image_key)
    try:
        if image["estimator"] == "pytorch":
            image_uris.get_training_image_uri(
                REGION, "pytorch", framework_version=image["framework_version"],
                py_version=image["py_version"], instance_type=family_type,
            )
        else:
            image_uris.get_training_image_uri(
                REGION, "huggingface", framework_version=image["transformers_version"],
                py_version=image["py_version"], pytorch_version=image["pytorch_version"],
                instance_type=family_type,
            )
    except ValueError as exc:
        return str(exc)
    return None


def _validate_errors(instance_type: str, image: dict[str, str]) -> list[str]:
    arguments = {
        "entry_point": "train.py", "role": ROLE, "instance_type": instance_type,
        "instance_count": 1, "check_script": False, "source_dir": "s3://bucket/code.tar.gz",
        **image,
    }
    _, problems, _ = check_arguments(arguments)
    return [str(p) for p in problems if p.severity == "error"]


def test_no_pair_passes_validate_that_the_sdk_refuses():
    # One representative type per family: the SDK's lookup reads only the family.
    representatives: dict[str, str] = {}
    for name in TYPES:
        representatives.setdefault(_family(name), name)
    missed = []
    for image in IMAGES:
        key = json.dumps(image, sort_keys=True)
        for name in TYPES:
            refused = _sdk_refuses(key, representatives[_family(name)])
            if refused and not _validate_errors(name, image):
                missed.append((name, image, refused))
    assert not missed, missed[:5]


_GPU_TYPES = [n for n in TYPES if instance_catalog.get(n).accelerator_kind == "gpu"]


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    instance_type=st.one_of(st.sampled_from(_GPU_TYPES), st.sampled_from(TYPES)),
    image=st.sampled_from(IMAGES),
)
def test_validate_and_plan_agree(tmp_path, instance_type, image):
    options = {**image, "instance_type": instance_type}
    if instance_catalog.get(instance_type).gpu_count > 1:
        options["distribution"] = {"torch_distributed": {"enabled": True}}
    spec = _spec(tmp_path, **options)
    errors = [p for p in validate_file(spec) if p.severity == "error"]
    try:
        safe_estimators.plan(spec)
    except ConfigError as exc:
        assert "<sagemaker>" not in {p.path for p in exc.problems}, exc
        assert [str(p) for p in errors] == [str(p) for p in exc.problems[: len(errors)]]
        assert errors, exc
    else:
        assert not errors


# --- the SDK config's default bucket -----------------------------------------------------------


@pytest.mark.sdk2_only  # the estimator's sagemaker.Session reads the bucket
def test_plan_uses_the_sdk_configs_default_bucket_and_prefix(tmp_path, monkeypatch):
    import sagemaker

    config = {
        "SchemaVersion": "1.0",
        "SageMaker": {
            "PythonSDK": {
                "Modules": {
                    "TelemetryOptOut": True,
                    "Session": {
                        "DefaultS3Bucket": "org-ml-bucket",
                        "DefaultS3ObjectKeyPrefix": "team-a",
                    },
                }
            }
        },
    }
    path = tmp_path / "sagemaker-config.yaml"
    path.write_text(yaml.safe_dump(config))
    monkeypatch.setenv("SAGEMAKER_USER_CONFIG_OVERRIDE", str(path))

    def no_default_bucket(self):
        raise AssertionError("plan called Session.default_bucket(), which calls S3")

    monkeypatch.setattr(sagemaker.Session, "default_bucket", no_default_bucket)
    plan = safe_estimators.plan(_spec(tmp_path, instance_type="ml.g5.xlarge", **_pt("2.8.0")))
    output = plan.request["OutputDataConfig"]["S3OutputPath"]
    code = plan.request["HyperParameters"]["sagemaker_submit_directory"]
    assert output.startswith("s3://org-ml-bucket/team-a")
    assert code.strip('"').startswith("s3://org-ml-bucket/team-a/")
    assert not [p for p in plan.placeholders if p.startswith("bucket")]


# --- warm pools --------------------------------------------------------------------------------

SPOT = {"use_spot_instances": True, "max_wait": 90000, "checkpoint_s3_uri": "s3://b/ckpt"}


def test_a_warm_pool_with_spot_instances_is_a_warning(tmp_path):
    # AWS says warm pools "cannot be used" with spot; whether the API refuses the job or runs it
    # without a pool is not documented, so the job is warned about, not refused.
    spec = _spec(tmp_path, instance_type="ml.g5.xlarge", keep_alive_period_in_seconds=1800,
                 **SPOT, **_pt("2.8.0"))
    [problem] = _at(validate_file(spec), "keep_alive_period_in_seconds")
    assert problem.severity == "warning" and "spot" in problem.message
    assert "no pool is retained" in problem.message


def test_a_warm_pool_with_instance_groups_is_a_warning(tmp_path):
    groups = [
        {"instance_group_name": "train", "instance_type": "ml.g5.xlarge", "instance_count": 1},
        {"instance_group_name": "data", "instance_type": "ml.c5.xlarge", "instance_count": 1},
    ]
    options = {"distribution": {"instance_groups": ["train"], "mpi": {"enabled": True}}}
    data = {"instance_groups": groups, "keep_alive_period_in_seconds": 600, **options}
    spec = _spec(tmp_path, **data, **_pt("2.8.0"))
    problems = validate_file(spec)
    assert [p.severity for p in _at(problems, "keep_alive_period_in_seconds")] == ["warning"]


@pytest.mark.parametrize(
    ("seconds", "expected"), [(3600, []), (3601, ["warning"]), (7200, ["warning"])]
)  # the boundary at the boundary: 3600 s is the documented limit
def test_a_keep_alive_past_the_documented_hour_is_a_warning(tmp_path, seconds, expected):
    spec = _spec(tmp_path, instance_type="ml.g5.xlarge", keep_alive_period_in_seconds=seconds,
                 **_pt("2.8.0"))
    problems = validate_file(spec)
    assert [p.severity for p in _at(problems, "keep_alive_period_in_seconds")] == expected


def test_the_warm_pool_is_sent_and_its_quota_explained(tmp_path):
    spec = _spec(tmp_path, instance_type="ml.g5.xlarge", keep_alive_period_in_seconds=1800,
                 **_pt("2.8.0"))
    plan = safe_estimators.plan(spec)
    assert plan.request["ResourceConfig"]["KeepAlivePeriodInSeconds"] == 1800
    injected = plan.explanation.injections
    [injection] = [i for i in injected if i.path == "keep_alive_period_in_seconds"]
    assert "quota" in injection.reason and " 0 " in injection.reason


# --- instance storage --------------------------------------------------------------------------


def test_the_catalog_records_nvme_instance_storage():
    g5 = instance_catalog.get("ml.g5.2xlarge")
    assert (g5.nvme_disks, g5.nvme_disk_gb) == (1, 450)
    assert instance_catalog.get("ml.p4d.24xlarge").nvme_total_gb == 8000
    assert instance_catalog.get("ml.m5.xlarge").nvme_total_gb == 0


@pytest.mark.parametrize(
    ("instance_type", "size", "expected"),
    [
        ("ml.g5.2xlarge", 1000, ["error"]),  # one 450 GB NVMe disk
        ("ml.g5.2xlarge", 400, []),
        ("ml.g6.12xlarge", 2000, ["warning"]),  # 4 x 940 GB: above one disk, below the total
        ("ml.g6.12xlarge", 4000, ["error"]),
        ("ml.m5.xlarge", 1000, []),  # EBS only: volume_size sizes the EBS volume
    ],
)
def test_volume_size_against_the_nvme_storage(tmp_path, instance_type, size, expected):
    options = {"distribution": {"torch_distributed": {"enabled": True}}}
    spec = _spec(tmp_path, instance_type=instance_type, volume_size=size, **options,
                 **_pt("2.8.0"))
    problems = validate_file(spec)
    found = _at(problems, "volume_size")
    assert [p.severity for p in found] == expected
    if expected == ["error"]:
        assert f"{size} GB" in found[0].message


# --- Trainium2 ---------------------------------------------------------------------------------


def test_trainium2_memory_is_the_neuron_docs_96_gib_per_chip():
    entry = instance_catalog.get("ml.trn2.48xlarge")
    assert entry.accelerator_memory_mib == 96 * 1024
    assert entry.corrections == "supplement:neuron-trainium2"
    assert (entry.accelerator_count, entry.neuron_cores) == (16, 64)


# --- Trainium fits per NeuronCore; catalog --fits runs plan's checks -------------------------

EXAMPLE = Path(__file__).parent.parent / "examples" / "memory-fit" / "job.yaml"
QLORA_SCRIPT = """\
import torch
from transformers import AutoModelForCausalLM, BitsAndBytesConfig, Trainer, TrainingArguments

quantized = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=torch.bfloat16)
model = AutoModelForCausalLM.from_pretrained("/opt/ml/input/data/model", device_map="auto",
                                             quantization_config=quantized)
Trainer(model=model, args=TrainingArguments(output_dir="/opt/ml/model", bf16=True)).train()
"""


def _qlora_70b(folder: Path) -> Path:
    (folder / "train.py").write_text(QLORA_SCRIPT)
    data = {
        **_hf("4.56.2", "2.8.0", "py312"),
        "entry_point": "train.py",
        "instance_type": "ml.g6.12xlarge",
        "model": {
            "parameters": "70B", "trainable_parameters": "0.2B", "quantization": "4bit",
            "layers": 80, "hidden_size": 8192, "sequence_length": 1024, "micro_batch_size": 1,
            "activation_checkpointing": True,
        },
    }
    path = folder / "job.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _trainium(folder: Path) -> Path:
    return _spec(
        folder, instance_type="ml.trn1.32xlarge", framework_version="1.11.0", py_version="py38",
        distribution={"torch_distributed": {"enabled": True}},
        model={"parameters": "350M", "sequence_length": 1024, "micro_batch_size": 1},
    )


def test_a_trainium_job_gets_a_fit_verdict_per_neuroncore(tmp_path):
    plan = safe_estimators.plan(_trainium(tmp_path))
    memory = plan.explanation.memory
    assert memory is not None and memory.fits is True
    assert memory.device_memory == 16 * 1024**3  # 32 GiB per Trainium chip, 2 NeuronCores
    assert "32 accelerators" in memory.layout


def test_a_trainium2_job_is_estimated_at_24_gib_per_logical_neuroncore(tmp_path):
    spec = _trainium(tmp_path)
    # The SDK's own Neuron container predates Trainium2: a Neuron SDK 2.21+ image.
    image = (
        "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training-neuronx:"
        "2.7.0-neuronx-py310-sdk2.24.1-ubuntu22.04"
    )
    plan = safe_estimators.plan(spec, instance_type="ml.trn2.48xlarge", image_uri=image)
    assert plan.explanation.memory is not None
    assert plan.explanation.memory.device_memory == 24 * 1024**3
    assert "64 accelerators" in plan.explanation.memory.layout


def _fits(path: Path, capsys) -> list[dict[str, Any]]:
    from safe_estimators._cli import main

    assert main(["catalog", "--fits", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    "make",
    [
        # memory-fit is the model parallel library v1's: the estimator's only.
        pytest.param(lambda _: EXAMPLE, marks=pytest.mark.sdk2_only),
        _qlora_70b,
        _trainium,
    ],
    ids=["example", "qlora-70b", "trn1"],
)
def test_catalog_fits_and_plan_agree_on_every_listed_type(tmp_path, capsys, make):
    path = make(tmp_path)
    rows = _fits(path, capsys)
    assert rows
    for row in rows:
        planned = safe_estimators.plan(
            path, instance_type=row["instance_type"], instance_count=row["instance_count"]
        )
        memory = planned.explanation.memory
        assert memory is not None and memory.fits is True
        assert memory.total == row["memory"]["total"] and memory.layout == row["layout"]
        if row["instance_count"] > 1:  # the fewest: one instance fewer does not pass plan
            with pytest.raises(ConfigError):
                safe_estimators.plan(
                    path, instance_type=row["instance_type"],
                    instance_count=row["instance_count"] - 1,
                )


def test_catalog_fits_counts_a_device_map_job_as_plan_does(tmp_path, capsys):
    # One process spreads the 70B QLoRA model over the instance's GPUs (device_map="auto"):
    # split four ways on ml.g6.12xlarge, as plan says, not replicated data-parallel.
    rows = {r["instance_type"]: r for r in _fits(_qlora_70b(tmp_path), capsys)}
    assert rows["ml.g6.12xlarge"]["instance_count"] == 1
    assert "device_map" in rows["ml.g6.12xlarge"]["layout"]


def test_catalog_fits_lists_trainium_and_never_a_gpu_the_image_cannot_run_on(tmp_path, capsys):
    rows = [r["instance_type"] for r in _fits(_trainium(tmp_path), capsys)]
    assert "ml.trn1.32xlarge" in rows
    gpus = [r for r in rows if instance_catalog.get(r).accelerator_kind == "gpu"]
    if not SDK3:
        # The estimator runs torchrun on GPUs with PyTorch 1.13.1 or later only: this
        # PyTorch 1.11.0 job fits on no GPU type as the estimator.
        assert gpus == []
    else:
        # ModelTrainer starts torchrun itself (its torchrun_driver: PyTorch >= 1.9), so on a
        # GPU type the same job runs on PyTorch 1.11.0's GPU image, as plan shows.
        assert "ml.g4dn.xlarge" in gpus
        planned = safe_estimators.plan(
            _trainium(tmp_path), instance_type="ml.g4dn.xlarge", instance_count=1
        )
        assert "pytorch-training:1.11.0-gpu-py38" in planned.request["AlgorithmSpecification"][
            "TrainingImage"
        ]
    # PyTorch 2.7.1's image has no Volta kernels: no p3 type is offered for it.
    spec = _spec(tmp_path, instance_type="ml.g5.xlarge", **_pt("2.7.1"),
                 model={"parameters": "125M", "sequence_length": 512, "micro_batch_size": 1})
    listed = [r["instance_type"] for r in _fits(spec, capsys)]
    assert "ml.g5.xlarge" in listed
    assert not [r for r in listed if r.startswith(("ml.p3.", "ml.p3dn.", "ml.p2."))]
