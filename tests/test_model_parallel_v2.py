"""Model parallelism on PyTorch >= 2.0.1: the library v2 (torch.sagemaker), through the real SDK.

Every job is built by safe_estimators.pytorch(...) and checked on what SageMaker receives: the
distribution, est.hyperparameters() and est.training_image_uri(). Configurations come from
AWS's SMP v2 guide, reference and best-practices pages and the SDK's PyTorch docstring.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

import safe_estimators
from safe_estimators import ConfigError, ModelParallel

P4D = "ml.p4d.24xlarge"
SMP_IMAGE = "658645717510.dkr.ecr.us-west-2.amazonaws.com/smdistributed-modelparallel"
PY = {"2.0.1": "py310", "2.1.2": "py310", "2.2.0": "py310", "2.3.1": "py311", "2.4.1": "py311",
      "2.5.1": "py311"}  # fmt: skip


@pytest.fixture
def session(sagemaker_session):
    sagemaker_session.sagemaker_config = {}  # no defaults file: see test_model_parallel.py
    return sagemaker_session


@pytest.fixture
def script(tmp_path: Path) -> str:
    path = tmp_path / "train.py"
    # The script checks want tsm.init() and, for tensor/context/expert degrees, tsm.transform.
    path.write_text(
        "import torch\nimport torch.sagemaker as tsm\n\ntsm.init()\n"
        "model = tsm.transform(torch.nn.Linear(8, 8))\n"
    )
    return str(path)


@pytest.fixture
def build(session, role, script):
    def build(pytorch="2.2.0", instance=P4D, count=2, **kwargs):
        arguments = {
            "entry_point": script,
            "role": role,
            "instance_type": instance,
            "instance_count": count,
            "framework_version": pytorch,
            "py_version": PY.get(pytorch, "py310"),
            "sagemaker_session": session,
        }
        arguments.update(kwargs)
        return safe_estimators.pytorch(**arguments)

    return build


def refused(build, **kwargs) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        build(**kwargs)
    return caught.value


def problem_at(error: ConfigError, path: str) -> str:
    texts = [str(p) for p in error.problems if p.path == path]
    assert texts, f"no problem at {path}: {error}"
    return " ".join(texts)


# --- the "Done when" ---------------------------------------------------------------------

DONE = {"hybrid_shard_degree": 16, "sm_activation_offloading": True}
RAW = {
    "torch_distributed": {"enabled": True},
    "smdistributed": {"modelparallel": {"enabled": True, "parameters": dict(DONE)}},
}


def test_hybrid_sharding_on_two_p4d_builds_with_torchrun_and_the_smp_image(build):
    est = build(model_parallel=DONE)

    hyper = est.hyperparameters()
    assert hyper["sagemaker_torch_distributed_enabled"] == "true"
    assert json.loads(hyper["mp_parameters"]) == DONE
    assert "sagemaker_mpi_enabled" not in hyper
    assert est.training_image_uri() == f"{SMP_IMAGE}:2.2.0-gpu-py310-cu121"
    assert est.distribution == RAW

    explanation = safe_estimators.explain(est)
    assert "world 16" in str(explanation.layout) and "hybrid shard 16" in str(explanation.layout)
    reasons = {i.path: i.reason for i in explanation.injections}
    assert "mp_parameters" in reasons["distribution.smdistributed.modelparallel.enabled"]
    assert "torchrun" in reasons["distribution.torch_distributed.enabled"]


def test_the_raw_aws_distribution_builds_the_same_estimator(build):
    typed = build(model_parallel=ModelParallel(**DONE))
    raw = build(distribution=json.loads(json.dumps(RAW)))
    assert raw.distribution == typed.distribution
    assert raw.hyperparameters() == typed.hyperparameters()
    assert raw.training_image_uri() == typed.training_image_uri()
    # The user wrote torch_distributed: nothing to record about it.
    paths = [i.path for i in safe_estimators.explain(raw).injections]
    assert "distribution.torch_distributed.enabled" not in paths


def test_tensor_degree_that_does_not_divide_the_gpus_is_refused(build):
    text = problem_at(
        refused(build, model_parallel={"tensor_parallel_degree": 3}),
        "model_parallel.tensor_parallel_degree",
    )
    assert "(3)" in text and "has 8" in text and "2, 4, 8" in text


def test_context_degree_above_the_hybrid_shard_degree_is_refused(build):
    options = {"context_parallel_degree": 4, "hybrid_shard_degree": 2}
    error = refused(build, pytorch="2.3.1", model_parallel=options)
    text = problem_at(error, "model_parallel.context_parallel_degree")
    assert "(4)" in text and "hybrid_shard_degree (2)" in text
    assert len(error.problems) == 1


def test_expert_with_tensor_parallelism_is_refused(build):
    options = {"expert_parallel_degree": 2, "tensor_parallel_degree": 2}
    error = refused(build, model_parallel=options)
    text = problem_at(error, "model_parallel.expert_parallel_degree")
    assert "expert_parallel_degree (2)" in text and "tensor_parallel_degree (2)" in text


def test_expert_parallelism_on_pytorch_2_1_2_names_the_release_that_added_it(build):
    text = problem_at(
        refused(build, pytorch="2.1.2", model_parallel={"expert_parallel_degree": 2}),
        "model_parallel.expert_parallel_degree",
    )
    assert "2.3.0" in text and "2.1.0" in text and "2.2.0" in text


# --- configurations from AWS's documents that build ---------------------------------------------

BUILDS = [
    # SDK PyTorch estimator docstring ("To enable ... SMP library v2").
    pytest.param("2.2.0", P4D, 2, {"tensor_parallel_degree": 8, "hybrid_shard_degree": 1},
                 "cu121", id="sdk-docstring-tp8"),
    # Best-practices page, Llama 2 on ml.p4d.24xlarge: 7B on 1 node, 70B on 32, 175B on 64.
    pytest.param("2.2.0", P4D, 1, {"hybrid_shard_degree": 8}, "cu121", id="best-practices-7b"),
    pytest.param("2.2.0", P4D, 32, {"hybrid_shard_degree": 256}, "cu121",
                 id="best-practices-70b"),
    pytest.param("2.2.0", P4D, 64, {"hybrid_shard_degree": 128, "tensor_parallel_degree": 4,
                                    "sm_activation_offloading": True}, "cu121",
                 id="best-practices-175b"),
    # Expert parallelism (Mixtral) combined with hybrid sharding, SMP >= 2.3.0.
    pytest.param("2.2.0", P4D, 2, {"expert_parallel_degree": 2, "hybrid_shard_degree": 8},
                 "cu121", id="expert-parallel-mixtral"),
    # Context parallelism (SMP 2.5.0, PyTorch 2.3.1) inside the shard group, with TP.
    pytest.param("2.3.1", P4D, 2, {"context_parallel_degree": 2, "hybrid_shard_degree": 8,
                                   "tensor_parallel_degree": 2}, "cu121", id="context-parallel"),
    # The reference's full key list, with values that fit 2 x 8 GPUs.
    pytest.param("2.4.1", P4D, 2, {"hybrid_shard_degree": 8, "sm_activation_offloading": False,
                                   "activation_loading_horizon": 4,
                                   "fsdp_cache_flush_warnings": False, "allow_empty_shards": True,
                                   "tensor_parallel_degree": 2, "expert_parallel_degree": 1,
                                   "context_parallel_degree": 2, "random_seed": 12345},
                 "cu121", id="reference-all-keys"),
    pytest.param("2.0.1", P4D, 1, {"hybrid_shard_degree": 8}, "cu118", id="first-smp-v2"),
    pytest.param("2.0.1", "ml.p5.48xlarge", 1, {"hybrid_shard_degree": 8}, "cu121", id="p5"),
    pytest.param("2.5.1", P4D, 2, {"hybrid_shard_degree": 16}, "cu124", id="last-smp-v2"),
]  # fmt: skip


@pytest.mark.parametrize(("pytorch", "instance", "count", "options", "cuda"), BUILDS)
def test_documented_configurations_reach_sagemaker(build, pytorch, instance, count, options, cuda):
    est = build(pytorch=pytorch, instance=instance, count=count, model_parallel=options)
    hyper = est.hyperparameters()
    assert json.loads(hyper["mp_parameters"]) == options
    assert hyper["sagemaker_torch_distributed_enabled"] == "true"
    assert est.training_image_uri() == f"{SMP_IMAGE}:{pytorch}-gpu-{PY[pytorch]}-{cuda}"


def test_workshop_v1_key_is_a_warning_and_stays_out_of_mp_parameters(build, caplog):
    # AWS's SMP v2 workshop passes delayed_parameter_initialization (a v1 key) and ran.
    options = {"hybrid_shard_degree": 16, "delayed_parameter_initialization": True}
    with caplog.at_level(logging.WARNING, logger="safe_estimators"):
        est = build(model_parallel=options)
    assert json.loads(est.hyperparameters()["mp_parameters"]) == {"hybrid_shard_degree": 16}
    warnings = safe_estimators.explain(est).warnings
    assert any(
        w.path == "model_parallel.delayed_parameter_initialization" and "no effect" in w.message
        for w in warnings
    )


def test_no_options_still_reach_the_container_as_smp(build):
    est = build(model_parallel={})
    assert json.loads(est.hyperparameters()["mp_parameters"]) == {"hybrid_shard_degree": 0}
    injected = {i.path: i.value for i in safe_estimators.explain(est).injections}
    assert injected["distribution.smdistributed.modelparallel.parameters.hybrid_shard_degree"] == 0


def test_aws_smp_image_given_as_image_uri_runs_the_v2_rules(build):
    # AWS's guide: for older releases pass the SMP image itself.
    image = f"{SMP_IMAGE}:2.2.0-gpu-py310-cu121"
    est = build(pytorch=None, py_version=None, image_uri=image,
                model_parallel={"tensor_parallel_degree": 8})  # fmt: skip
    assert est.training_image_uri() == image
    assert est.hyperparameters()["sagemaker_torch_distributed_enabled"] == "true"
    error = refused(build, pytorch=None, py_version=None, image_uri=image,
                    model_parallel={"tensor_parallel_degree": 3})  # fmt: skip
    assert "model_parallel.tensor_parallel_degree" in error.paths


def test_unlisted_gpu_type_is_a_warning(build):
    est = build(instance="ml.g5.48xlarge", count=1, model_parallel={"hybrid_shard_degree": 8})
    warnings = safe_estimators.explain(est).warnings
    assert any(w.path == "instance_type" and "ml.p4d.24xlarge" in w.message for w in warnings)


# --- refusals -----------------------------------------------------------------------------------

REFUSED = [
    # The SDK's pytorch-smp keys that are library versions: image tags that do not exist.
    pytest.param({"pytorch": "2.8.0", "py_version": "py311"}, {"hybrid_shard_degree": 8},
                 "framework_version", ["2.8.0", "not a PyTorch version", "2.5.1"],
                 id="library-version-key-2.8.0"),
    pytest.param({"pytorch": "2.3.0"}, {"hybrid_shard_degree": 8}, "framework_version",
                 ["2.3.0", "2.0.1, 2.1.2, 2.2.0, 2.3.1, 2.4.1, 2.5.1"], id="key-2.3.0"),
    pytest.param({"pytorch": "2.6.0", "py_version": "py312"}, {"hybrid_shard_degree": 8},
                 "framework_version", ["2.6.0", "nearest: 2.5.1"], id="no-image-2.6.0"),
    pytest.param({"pytorch": "2.2"}, {"hybrid_shard_degree": 8}, "framework_version",
                 ["short version", "2.2.0"], id="short-version"),
    pytest.param({"pytorch": "2.3.1", "py_version": "py310"}, {"hybrid_shard_degree": 8},
                 "py_version", ["py311"], id="python-of-the-image"),
    pytest.param({}, {"pipeline_parallel_degree": 2}, "model_parallel.pipeline_parallel_degree",
                 ["no pipeline parallelism", "PyTorch 2.0.0 or older"], id="pipeline-on-v2"),
    pytest.param({}, {"sharded_data_parallel_degree": 8},
                 "model_parallel.sharded_data_parallel_degree", ["hybrid_shard_degree"],
                 id="sharded-data-parallel-on-v2"),
    pytest.param({}, {"fp16": True}, "model_parallel.fp16", ["MixedPrecision"], id="fp16-on-v2"),
    pytest.param({}, {"tensor_parallel_seed": 3}, "model_parallel.tensor_parallel_seed",
                 ["random_seed"], id="v1-seed-on-v2"),
    pytest.param({}, {"processes_per_host": 4}, "model_parallel.processes_per_host",
                 ["torchrun", "8"], id="fewer-processes-on-v2"),
    pytest.param({}, {"hybrid_shard_degree": 32}, "model_parallel.hybrid_shard_degree",
                 ["(32)", "16 GPUs"], id="hybrid-shard-above-world"),
    pytest.param({}, {"hybrid_shard_degree": 16, "tensor_parallel_degree": 2},
                 "model_parallel.hybrid_shard_degree", ["32 GPUs per model replica", "16"],
                 id="product-does-not-divide-world"),
    pytest.param({"count": 3}, {"expert_parallel_degree": 2, "hybrid_shard_degree": 8},
                 "model_parallel.hybrid_shard_degree", ["16 GPUs per model replica", "24"],
                 id="expert-product-does-not-divide-world"),
    pytest.param({}, {"activation_loading_horizon": 0}, "model_parallel.activation_loading_horizon",
                 ["positive"], id="horizon-zero"),
    pytest.param({"instance": "ml.trn1.32xlarge", "count": 1}, {"hybrid_shard_degree": 8},
                 "instance_type", ["32 NeuronCores (16 Trainium)", "no NVIDIA GPUs"],
                 id="trainium"),
    pytest.param({"entry_point": "train.sh"}, {"hybrid_shard_degree": 8}, "entry_point",
                 [".py", "torchrun"], id="shell-entry-point"),
    # Bad input: a problem at the user's path, with a hint.
    pytest.param({}, {"hybrid_shard_degre": 8}, "model_parallel.hybrid_shard_degre",
                 ["did you mean 'hybrid_shard_degree'"], id="misspelt-key"),
    pytest.param({}, {"tensor_parallel_degree": 0}, "model_parallel.tensor_parallel_degree",
                 [">= 1", "got 0"], id="degree-zero"),
    pytest.param({}, {"context_parallel_degree": 3.5}, "model_parallel.context_parallel_degree",
                 ["3.5", "whole number"], id="degree-3.5"),
    pytest.param({}, {"sm_activation_offloading": "yes"},
                 "model_parallel.sm_activation_offloading", ["True or False"], id="not-a-bool"),
    pytest.param({}, {"hybrid_shard_degree": -1}, "model_parallel.hybrid_shard_degree",
                 [">= 0"], id="negative-shard-degree"),
]  # fmt: skip


@pytest.mark.parametrize(("job", "options", "path", "words"), REFUSED)
def test_refusals_name_the_numbers_and_the_fix(build, job, options, path, words):
    error = refused(build, model_parallel=options, **job)
    text = problem_at(error, path)
    for word in words:
        assert word in text, text
    assert "Fix:" in text


def test_raw_distribution_problems_point_where_the_user_wrote_them(build):
    raw = json.loads(json.dumps(RAW))
    raw["torch_distributed"]["enabled"] = False
    raw["smdistributed"]["modelparallel"]["parameters"] = {
        "tensor_parallel_degree": 3,
        "hybrid_shard_degre": 2,
    }
    error = refused(build, distribution=raw)
    parameters = "distribution.smdistributed.modelparallel.parameters"
    assert {
        "distribution.torch_distributed.enabled",
        f"{parameters}.tensor_parallel_degree",
        f"{parameters}.hybrid_shard_degre",
    } <= set(error.paths)


def test_a_v1_notebook_distribution_on_a_v2_container_is_refused_with_the_port(build):
    raw = {
        "smdistributed": {"modelparallel": {"enabled": True, "parameters": {"ddp": True}}},
        "mpi": {"enabled": True, "processes_per_host": 8},
    }
    text = problem_at(refused(build, distribution=raw), "distribution.mpi")
    assert "torch_distributed" in text and "2.0.0 or older" in text


def test_torch_distributed_on_a_v1_container_is_refused(build):
    raw = json.loads(json.dumps(RAW))
    raw["smdistributed"]["modelparallel"]["parameters"] = {"pipeline_parallel_degree": 2}
    error = refused(build, pytorch="1.13.1", py_version="py39", instance="ml.p3.16xlarge",
                    count=1, distribution=raw)  # fmt: skip
    assert "library v1" in problem_at(error, "distribution.torch_distributed")


def test_hugging_face_estimator_is_refused_with_the_pytorch_estimator_as_the_fix(
    session, role, script
):
    error = refused(
        safe_estimators.huggingface,
        entry_point=script,
        role=role,
        instance_type=P4D,
        instance_count=2,
        transformers_version="4.36.0",
        pytorch_version="2.1.0",
        py_version="py310",
        sagemaker_session=session,
        model_parallel=DONE,
    )
    assert "safe_estimators.pytorch" in problem_at(error, "model_parallel")


def test_why_the_hugging_face_estimator_cannot_run_smp_v2(session, role, script):
    """The bare SDK: the image lookup uses the transformers version and mp_parameters vanish."""
    from sagemaker.huggingface import HuggingFace

    arguments = {
        "entry_point": script,
        "role": role,
        "instance_type": P4D,
        "instance_count": 2,
        "transformers_version": "4.36.0",
        "pytorch_version": "2.1.0",
        "py_version": "py310",
        "sagemaker_session": session,
        "distribution": json.loads(json.dumps(RAW)),
    }
    est = HuggingFace(**arguments)
    assert "mp_parameters" not in est.hyperparameters()
    with pytest.raises(ValueError, match=r"pytorch-smp version: 4\.36\.0"):
        est.training_image_uri()


def test_the_smp_versions_come_from_the_sdk_table_and_agree_with_the_release_table():
    from safe_estimators._distributions.model_parallel import facts_v2
    from safe_estimators._facts.versions import _training_config

    assert facts_v2.smp_pytorch_versions() == ("2.0.1", "2.1.2", "2.2.0", "2.3.1", "2.4.1", "2.5.1")
    assert set(facts_v2.LIBRARY_BY_PYTORCH) == set(facts_v2.smp_pytorch_versions())
    aliases = _training_config("pytorch-smp")["version_aliases"]
    for pytorch, library in facts_v2.LIBRARY_BY_PYTORCH.items():
        key = aliases.get(pytorch, pytorch)
        if key != pytorch:  # the key is a library version: it must be the one we record
            assert key == library, pytorch


def test_torch_distributed_written_beside_model_parallel_counts_as_the_launcher(build):
    est = build(model_parallel=DONE, distribution={"torch_distributed": {"enabled": True}})
    assert est.distribution == RAW
    paths = [i.path for i in safe_estimators.explain(est).injections]
    assert "distribution.torch_distributed.enabled" not in paths
    error = refused(build, pytorch="1.13.1", py_version="py39", instance="ml.p3.16xlarge",
                    count=1, model_parallel={"pipeline_parallel_degree": 2},
                    distribution={"torch_distributed": {"enabled": True}})  # fmt: skip
    assert "distribution.torch_distributed" in error.paths


def test_hugging_face_refusal_points_at_the_raw_distribution_when_written_there(
    session, role, script
):
    error = refused(
        safe_estimators.huggingface,
        entry_point=script,
        role=role,
        instance_type=P4D,
        instance_count=2,
        transformers_version="4.36.0",
        pytorch_version="2.1.0",
        py_version="py310",
        sagemaker_session=session,
        distribution=json.loads(json.dumps(RAW)),
    )
    text = problem_at(error, "distribution.smdistributed.modelparallel")
    assert "safe_estimators.pytorch" in text


def test_pytorch_2_0_1_outside_p5_warns_about_the_cuda_118_tag_aws_does_not_list(build):
    est = build(pytorch="2.0.1", count=1, model_parallel={"hybrid_shard_degree": 8})
    assert est.training_image_uri().endswith(":2.0.1-gpu-py310-cu118")  # what the SDK picks
    (warned,) = [w for w in safe_estimators.explain(est).warnings if w.path == "framework_version"]
    assert "2.0.1-gpu-py310-cu121" in warned.hint
    on_p5 = build(pytorch="2.0.1", instance="ml.p5.48xlarge", count=1,
                  model_parallel={"hybrid_shard_degree": 8})  # fmt: skip
    assert not [w for w in safe_estimators.explain(on_p5).warnings if w.path == "framework_version"]


@pytest.mark.parametrize("pytorch", list(PY))
@pytest.mark.parametrize("instance", [P4D, "ml.p5.48xlarge"])
def test_our_copy_of_the_sdk_cuda_choice_agrees_with_the_sdk(pytorch, instance, build):
    from safe_estimators._distributions.model_parallel.facts_v2 import sdk_image_cuda

    est = build(pytorch=pytorch, instance=instance, count=1,
                model_parallel={"hybrid_shard_degree": 8})  # fmt: skip
    assert est.training_image_uri().endswith(f"-{sdk_image_cuda(pytorch, instance)}")
