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


def test_seed_job_gets_one_process_per_gpu_ddp_and_the_sdk_mp_parameters(sagemaker_session, role):
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


def test_aws_gpt_j_notebook_builds_with_pipeline_16_over_four_8_gpu_hosts(sagemaker_session, role):
    # amazon-sagemaker-examples, "Train EleutherAI GPT-J with PyTorch 1.8.1 and Pipeline
    # Parallelism": 4 x ml.p3.16xlarge, partitions 16, ddp True. The library needs only
    # pipeline x tensor to divide the world (32), not the processes per host (8).
    distribution = {
        "smdistributed": {
            "modelparallel": {
                "enabled": True,
                "parameters": {"partitions": 16, "microbatches": 8, "ddp": True},
            }
        },
        "mpi": {"enabled": True, "processes_per_host": 8},
    }
    est = pt(
        sagemaker_session,
        role,
        model_parallel=None,
        distribution=distribution,
        instance_count=4,
        framework_version="1.8.1",
        py_version="py36",
    )
    hyper = est.hyperparameters()
    assert hyper["sagemaker_mpi_num_of_processes_per_host"] == "8"
    mp = json.loads(hyper["mp_parameters"])
    assert mp.get("pipeline_parallel_degree", mp.get("partitions")) == 16
    assert mp["ddp"] is True
    assert "pipeline 16" in str(safe_estimators.explain(est).layout)


def test_aws_bert_tutorial_passes_overlapping_allreduce_on_pytorch_1_6_0(sagemaker_session, role):
    # AWS's SMP BERT tutorial (PyTorch 1.6.0 container, the library's first releases) passes
    # overlapping_allreduce as a launch parameter, and it ran.
    parameters = {"partitions": 2, "microbatches": 4, "ddp": True, "overlapping_allreduce": True}
    est = pt(
        sagemaker_session,
        role,
        framework_version="1.6.0",
        py_version="py36",
        model_parallel=parameters,
    )
    assert json.loads(est.hyperparameters()["mp_parameters"])["overlapping_allreduce"] is True
    assert not [w for w in safe_estimators.explain(est).warnings if "overlapping" in w.path]


def test_overlapping_allreduce_where_the_release_is_unknown_is_a_warning(sagemaker_session, role):
    est = pt(
        sagemaker_session,
        role,
        framework_version="1.10.2",
        py_version="py38",
        model_parallel={"partitions": 2, "ddp": True, "overlapping_allreduce": True},
    )
    warnings = [w for w in safe_estimators.explain(est).warnings if "overlapping" in w.path]
    assert warnings and "smp.DistributedModel" in warnings[0].hint


@pytest.mark.parametrize(
    ("instance", "gpu"), [("ml.p3.16xlarge", "V100"), ("ml.g4dn.12xlarge", "T4")]
)
def test_bf16_on_a_gpu_without_it_names_the_gpu_and_the_types_that_have_it(
    sagemaker_session, role, instance, gpu
):
    with pytest.raises(ConfigError) as caught:
        pt(
            sagemaker_session,
            role,
            instance_type=instance,
            model_parallel={"bf16": True, "sharded_data_parallel_degree": 4, "ddp": True},
        )
    text = " ".join(str(p) for p in caught.value.problems if p.path == "model_parallel.bf16")
    assert gpu in text and "ml.p4d.24xlarge (A100)" in text


def test_bf16_on_a100_builds(sagemaker_session, role):
    est = pt(
        sagemaker_session,
        role,
        instance_type="ml.p4d.24xlarge",
        model_parallel={"bf16": True, "sharded_data_parallel_degree": 8, "ddp": True},
    )
    assert json.loads(est.hyperparameters()["mp_parameters"])["bf16"] is True
