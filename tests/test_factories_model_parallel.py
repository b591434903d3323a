"""Model-parallel jobs built through the factories and the real SageMaker SDK."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import safe_estimators
from safe_estimators import ConfigError, ModelParallel

SCRIPT = str(Path(__file__).parents[1] / "examples" / "model-parallel-fp16" / "train.py")
SEED = {"pipeline_parallel_degree": 2, "tensor_parallel_degree": 2, "microbatches": 4, "fp16": True}


def pt(sagemaker_session, role, **overrides):
    arguments = {
        "entry_point": SCRIPT,
        "role": role,
        "instance_type": "ml.p3.16xlarge",
        "framework_version": "1.13.1",
        "py_version": "py39",
        "sagemaker_session": sagemaker_session,
        "model_parallel": SEED,
    }
    arguments.update(overrides)
    return safe_estimators.pytorch(**arguments)


def test_seed_job_gets_one_process_per_gpu_ddp_and_the_sdk_mp_parameters(
    sagemaker_session, role
):
    est = pt(sagemaker_session, role)

    assert est.distribution["mpi"]["processes_per_host"] == 8
    assert est.distribution["mpi"]["enabled"] is True
    hyper = est.hyperparameters()
    assert hyper["sagemaker_mpi_enabled"] == "true"
    assert hyper["sagemaker_mpi_num_of_processes_per_host"] == "8"
    mp = json.loads(hyper["mp_parameters"])
    assert mp["tensor_parallel_degree"] == 2
    assert mp["microbatches"] == 4
    assert mp["fp16"] is True
    assert mp["ddp"] is True
    assert mp.get("pipeline_parallel_degree", mp.get("partitions")) == 2

    explanation = safe_estimators.explain(est)
    assert "world 8" in str(explanation.layout)
    assert "data-parallel 2" in str(explanation.layout)
    assert any(i.path.endswith("processes_per_host") for i in explanation.injections)


def test_typed_options_and_a_dict_build_the_same_job(sagemaker_session, role):
    typed = pt(sagemaker_session, role, model_parallel=ModelParallel(**SEED))
    plain = pt(sagemaker_session, role)
    assert typed.distribution == plain.distribution


def test_degrees_that_do_not_fit_the_cluster_state_world_and_product(sagemaker_session, role):
    with pytest.raises(ConfigError) as caught:
        pt(
            sagemaker_session,
            role,
            instance_type="ml.p3.8xlarge",
            model_parallel={"pipeline_parallel_degree": 4, "tensor_parallel_degree": 2},
        )
    text = str(caught.value)
    assert "8" in text and "4" in text
    assert any("tensor_parallel_degree" in p or "pipeline" in p for p in caught.value.paths)


def test_notebook_style_distribution_is_checked_the_same_way(sagemaker_session, role):
    distribution = {
        "smdistributed": {
            "modelparallel": {
                "enabled": True,
                "parameters": {"partitions": 2, "microbatches": 4, "ddp": True},
            }
        },
        "mpi": {
            "enabled": True,
            "processes_per_host": 8,
            "custom_mpi_options": "--mca btl_vader_single_copy_mechanism none",
        },
    }
    est = pt(sagemaker_session, role, model_parallel=None, distribution=distribution)
    assert est.distribution["mpi"]["processes_per_host"] == 8
    assert json.loads(est.hyperparameters()["mp_parameters"])["microbatches"] == 4

    bad = json.loads(json.dumps(distribution))
    bad["mpi"]["processes_per_host"] = 16
    with pytest.raises(ConfigError) as caught:
        pt(sagemaker_session, role, model_parallel=None, distribution=bad)
    assert "distribution.mpi.processes_per_host" in caught.value.paths


@pytest.mark.parametrize(
    ("overrides", "path"),
    [
        ({"model_parallel": {**SEED, "process_per_host": 8}}, "model_parallel.process_per_host"),
        ({"instance_groups": []}, "instance_groups"),
        ({"hyperparameters": {"train_batch_size": 10}}, "hyperparameters.train_batch_size"),
        ({"framework_version": "1.10.2", "py_version": "py38"}, "model_parallel.fp16"),
        ({"instance_type": "ml.m5.24xlarge"}, "instance_type"),
    ],
)
def test_model_parallel_refusals(sagemaker_session, role, overrides, path):
    with pytest.raises(ConfigError) as caught:
        pt(sagemaker_session, role, **overrides)
    assert path in caught.value.paths, caught.value
