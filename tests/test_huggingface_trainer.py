"""Hugging Face jobs as ModelTrainer jobs: the same training image the sagemaker 2 HuggingFace
estimator picks (recorded here, and checked against the bare estimator on the sagemaker 2 lane),
the Hugging Face checks that still apply, and a fix under sagemaker 3 that works when followed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import safe_estimators
from safe_estimators import ConfigError
from safe_estimators._targets.model_trainer import offline_trainer_session

pytestmark = pytest.mark.both_sdks

ROLE = "arn:aws:iam::111122223333:role/SageMakerRole"

# (arguments, region, the image sagemaker 2.257.7's HuggingFace(...).training_image_uri() gives).
HF_IMAGES: list[tuple[dict[str, Any], str, str]] = [
    (
        dict(transformers_version="4.49.0", pytorch_version="2.5.1", py_version="py311",
             instance_type="ml.g5.2xlarge"),
        "us-west-2",
        "763104351884.dkr.ecr.us-west-2.amazonaws.com/huggingface-pytorch-training:"
        "2.5.1-transformers4.49.0-gpu-py311-cu124-ubuntu22.04",
    ),
    (
        dict(transformers_version="4.56.2", pytorch_version="2.8.0", py_version="py312",
             instance_type="ml.p4d.24xlarge"),
        "us-west-2",
        "763104351884.dkr.ecr.us-west-2.amazonaws.com/huggingface-pytorch-training:"
        "2.8.0-transformers4.56.2-gpu-py312-cu129-ubuntu22.04",
    ),
    (
        dict(transformers_version="4.17.0", tensorflow_version="2.6.3", py_version="py38",
             instance_type="ml.p3.2xlarge"),
        "eu-west-1",
        "763104351884.dkr.ecr.eu-west-1.amazonaws.com/huggingface-tensorflow-training:"
        "2.6.3-transformers4.17.0-gpu-py38-cu112-ubuntu20.04",
    ),
]  # fmt: skip
IDS = [arguments["transformers_version"] for arguments, _, _ in HF_IMAGES]


@pytest.fixture(autouse=True)
def _no_role_validation(monkeypatch):
    monkeypatch.setenv("SAGEMAKER_VALIDATE_ROLE", "false")


@pytest.fixture
def script(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text("print('training')\n")
    return tmp_path


@pytest.mark.parametrize(("arguments", "region", "image"), HF_IMAGES, ids=IDS)
def test_model_trainer_picks_the_hugging_face_estimators_image(arguments, region, image, script):
    trainer = safe_estimators.model_trainer(
        entry_point="train.py",
        source_dir=str(script),
        role=ROLE,
        sagemaker_session=offline_trainer_session(region),
        **arguments,
    )
    assert trainer.training_image == image


@pytest.mark.sdk2_only
@pytest.mark.parametrize(("arguments", "region", "image"), HF_IMAGES, ids=IDS)
def test_the_recorded_images_are_the_sagemaker_2_estimators(
    arguments, region, image, script, sagemaker_session
):
    from sagemaker.huggingface import HuggingFace

    estimator = HuggingFace(
        entry_point="train.py",
        source_dir=str(script),
        role=ROLE,
        instance_count=1,
        sagemaker_session=sagemaker_session,
        **arguments,
    )
    assert estimator.training_image_uri(region=region) == image


def test_a_hugging_face_spec_file_plans_as_a_model_trainer_on_that_image(script):
    arguments, region, image = HF_IMAGES[0]
    lines = [f"{key}: {value!r}" for key, value in arguments.items()]
    spec = script / "job.yaml"
    spec.write_text(
        "estimator: huggingface\ntarget: model_trainer\nentry_point: train.py\n"
        + "\n".join(lines)
        + "\n"
    )
    assert region == "us-west-2"  # the test environment's region (conftest)
    plan = safe_estimators.plan(spec)
    assert plan.request["AlgorithmSpecification"]["TrainingImage"] == image


def test_the_hugging_face_version_checks_hold_for_model_trainer(script):
    with pytest.raises(ConfigError) as caught:
        safe_estimators.model_trainer(
            entry_point="train.py",
            source_dir=str(script),
            transformers_version="4.49.0",
            pytorch_version="2.1.0",  # no such Hugging Face image
            py_version="py311",
            instance_type="ml.g5.2xlarge",
        )
    assert "pytorch_version" in caught.value.paths


@pytest.mark.estimator_refused
@pytest.mark.sdk3_only  # huggingface() builds the estimator on sagemaker 2
def test_huggingfaces_fix_on_sagemaker_3_works_when_followed(script):
    arguments, region, image = HF_IMAGES[0]
    given = dict(entry_point="train.py", source_dir=str(script), role=ROLE, **arguments)
    with pytest.raises(ConfigError) as caught:
        safe_estimators.huggingface(**given)
    (problem,) = caught.value.problems
    assert "safe_estimators.model_trainer(...) with the same arguments" in problem.hint
    trainer = safe_estimators.model_trainer(
        **given, sagemaker_session=offline_trainer_session(region)
    )
    assert trainer.training_image == image
