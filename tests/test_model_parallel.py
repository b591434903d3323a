"""Model parallelism (SMP v1): typed options, rules, and the distribution the real SDK receives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from safe_estimators._distributions.model_parallel import (
    ModelParallel,
    ParallelLayout,
    check_model_parallel,
    parse_model_parallel,
    resolve_model_parallel,
    split_distribution,
)
from safe_estimators._problems import ConfigError, Problem

# GPUs per instance (EC2 facts; the catalog is not this module's concern).
GPUS = {
    "ml.p3.2xlarge": 1,
    "ml.p3.8xlarge": 4,
    "ml.p3.16xlarge": 8,
    "ml.p3dn.24xlarge": 8,
    "ml.g4dn.12xlarge": 4,
    "ml.p4d.24xlarge": 8,
    "ml.p5.48xlarge": 8,
    "ml.c5.xlarge": 0,
    "ml.trn1.32xlarge": 0,
}
# The py_version each PyTorch training container is published with (image_uri_config/pytorch.json).
PY_VERSION = {
    "1.6.0": "py3",
    "1.7.1": "py3",
    "1.8.0": "py3",
    "1.8.1": "py3",
    "1.9.0": "py38",
    "1.9.1": "py38",
    "1.10.0": "py38",
    "1.10.2": "py38",
    "1.11.0": "py38",
    "1.12.0": "py38",
    "1.12.1": "py38",
    "1.13.1": "py39",
    "2.0.0": "py310",
}
DEFAULT_MPI = "--mca btl_vader_single_copy_mechanism none"


def problems_for(
    options: object,
    instance: str = "ml.p3.16xlarge",
    count: int = 1,
    pytorch: str | None = "1.13.1",
    hyperparameters: dict | None = None,
) -> list[Problem]:
    mp, problems = parse_model_parallel(options)
    assert mp is not None or problems
    if mp is not None:
        problems += check_model_parallel(
            mp,
            instance_type=instance,
            gpus_per_instance=GPUS[instance],
            instance_count=count,
            pytorch_version=pytorch,
            hyperparameters=hyperparameters or {},
        )
    return problems


def errors(problems: list[Problem]) -> list[Problem]:
    return [p for p in problems if p.severity == "error"]


@pytest.fixture
def sdk_session(sagemaker_session):
    """The suite's offline session without the SDK defaults file.

    These tests only construct estimators; the SDK sends telemetry on fit(), which they never
    call. With a defaults file the SDK re-validates its JSON schema on every config lookup
    (about 5 s per estimator). The seed scenario keeps the suite's session as it is.
    """
    sagemaker_session.sagemaker_config = {}
    return sagemaker_session


@pytest.fixture
def entry_point(tmp_path: Path) -> str:
    script = tmp_path / "train.py"
    script.write_text("print('training')\n")
    return str(script)


def build_pytorch(distribution, *, instance, count, pytorch, entry_point, role, session):
    from sagemaker.pytorch import PyTorch

    return PyTorch(
        entry_point=entry_point,
        role=role,
        instance_type=instance,
        instance_count=count,
        framework_version=pytorch,
        py_version=PY_VERSION[pytorch],
        distribution=distribution,
        sagemaker_session=session,
    )


def assert_sdk_receives(estimator, distribution: dict) -> dict:
    """What SageMaker will get: the distribution as given, and the SDK's hyperparameters."""
    assert estimator.distribution == distribution
    hyperparameters = estimator.hyperparameters()
    mpi = distribution["mpi"]
    parameters = distribution["smdistributed"]["modelparallel"]["parameters"]
    assert hyperparameters["sagemaker_mpi_enabled"] == "true"
    assert hyperparameters["sagemaker_mpi_num_of_processes_per_host"] == str(
        mpi["processes_per_host"]
    )
    assert hyperparameters["sagemaker_mpi_custom_mpi_options"] == json.dumps(
        mpi["custom_mpi_options"]
    )
    assert json.loads(hyperparameters["mp_parameters"]) == parameters
    return json.loads(hyperparameters["mp_parameters"])


# ---------------------------------------------------------------------------------------------
# The seed scenario and the "done when"
# ---------------------------------------------------------------------------------------------


def test_seed_pipeline_2_tensor_2_fp16_on_one_p3_16xlarge(entry_point, role, sagemaker_session):
    options = {
        "pipeline_parallel_degree": 2,
        "tensor_parallel_degree": 2,
        "microbatches": 4,
        "fp16": True,
    }
    assert errors(problems_for(options)) == []
    mp, _ = parse_model_parallel(options)
    assert mp is not None
    distribution, injections, layout = resolve_model_parallel(
        mp, gpus_per_instance=8, instance_count=1, pytorch_version="1.13.1"
    )

    estimator = build_pytorch(
        distribution,
        instance="ml.p3.16xlarge",
        count=1,
        pytorch="1.13.1",
        entry_point=entry_point,
        role=role,
        session=sagemaker_session,
    )
    mp_parameters = assert_sdk_receives(estimator, distribution)

    assert distribution["mpi"]["processes_per_host"] == 8
    assert mp_parameters == {
        "pipeline_parallel_degree": 2,
        "tensor_parallel_degree": 2,
        "microbatches": 4,
        "fp16": True,
        "ddp": True,
    }
    injected = {i.path: i for i in injections}
    assert (
        "tensor parallelism (degree 2)"
        in injected["distribution.smdistributed.modelparallel.parameters.ddp"].reason
    )
    assert injected["distribution.mpi.processes_per_host"].value == 8
    assert injected["distribution.mpi.custom_mpi_options"].value == DEFAULT_MPI
    assert str(layout) == (
        "world 8 = 1 instance x 8 processes; pipeline 2 x tensor 2 x data-parallel 2"
    )


def test_seed_through_hugging_face_estimator(entry_point, role, sdk_session):
    from sagemaker.huggingface import HuggingFace

    mp = ModelParallel(
        pipeline_parallel_degree=2, tensor_parallel_degree=2, microbatches=4, fp16=True
    )
    assert errors(problems_for(mp, pytorch="1.13.1")) == []
    distribution, _, _ = resolve_model_parallel(
        mp, gpus_per_instance=8, instance_count=1, pytorch_version="1.13.1"
    )
    estimator = HuggingFace(
        entry_point=entry_point,
        role=role,
        instance_type="ml.p3.16xlarge",
        instance_count=1,
        transformers_version="4.26.0",
        pytorch_version="1.13.1",
        py_version="py39",
        distribution=distribution,
        sagemaker_session=sdk_session,
    )
    assert assert_sdk_receives(estimator, distribution)["ddp"] is True


def test_p3_8xlarge_with_pipeline_4_x_tensor_2_states_world_and_product():
    found = errors(
        problems_for(
            {"pipeline_parallel_degree": 4, "tensor_parallel_degree": 2},
            instance="ml.p3.8xlarge",
        )
    )
    assert len(found) == 1
    (problem,) = found
    assert problem.path == "model_parallel.tensor_parallel_degree"
    assert str(problem) == (
        "model_parallel.tensor_parallel_degree: pipeline (4) x tensor (2) = 8 processes per "
        "model replica, but the job has 4 (1 x ml.p3.8xlarge, 4 GPUs each). Fix: lower the "
        "degrees so their product divides 4, or use ml.p3.16xlarge (8 GPUs)."
    )


# ---------------------------------------------------------------------------------------------
# Valid configurations, single node and multi-node, built by the real SDK
# ---------------------------------------------------------------------------------------------

VALID = [
    pytest.param(
        {"pipeline_parallel_degree": 2, "tensor_parallel_degree": 2},
        "ml.p4d.24xlarge", 2, "1.13.1",
        {"pipeline_parallel_degree": 2, "tensor_parallel_degree": 2, "ddp": True},
        "world 16 = 2 instances x 8 processes; pipeline 2 x tensor 2 x data-parallel 4",
        id="multi-node hybrid: ddp injected for 4 replicas",
    ),
    pytest.param(
        {"pipeline_parallel_degree": 2, "processes_per_host": 2, "microbatches": 2},
        "ml.p3.16xlarge", 1, "1.12.1",
        {"pipeline_parallel_degree": 2, "microbatches": 2},
        "world 2 = 1 instance x 2 processes; pipeline 2 x tensor 1 x data-parallel 1",
        id="pure pipeline on 2 of 8 GPUs: no ddp needed",
    ),
    pytest.param(
        {"processes_per_host": 4, "pipeline_parallel_degree": 4},
        "ml.p3.16xlarge", 2, "1.12.1",
        {"pipeline_parallel_degree": 4, "ddp": True},
        "world 8 = 2 instances x 4 processes; pipeline 4 x tensor 1 x data-parallel 2",
        id="multi-node with fewer processes than GPUs",
    ),
    pytest.param(
        {
            "sharded_data_parallel_degree": 16,
            "bf16": True,
            "ddp": True,
            "sdp_reduce_bucket_size": 500_000_000,
            "sdp_gradient_clipping": 1,
            "memory_weight": 1,
        },
        "ml.p4d.24xlarge", 2, "1.13.1",
        {
            "sharded_data_parallel_degree": 16,
            "bf16": True,
            "ddp": True,
            "sdp_reduce_bucket_size": 500_000_000,
            "sdp_gradient_clipping": 1.0,
            "memory_weight": 1.0,
        },
        "world 16 = 2 instances x 8 processes; pipeline 1 x tensor 1 x data-parallel 16"
        " (sharded over 16)",
        id="sharded data parallel with bf16 across two nodes; floats stay floats",
    ),
    pytest.param(
        {"sharded_data_parallel_degree": 4, "tensor_parallel_degree": 2},
        "ml.p4d.24xlarge", 1, "2.0.0",
        {"sharded_data_parallel_degree": 4, "tensor_parallel_degree": 2, "ddp": True},
        "world 8 = 1 instance x 8 processes; pipeline 1 x tensor 2 x data-parallel 4"
        " (sharded over 4)",
        id="sharded with tensor parallelism from library 1.15",
    ),
    pytest.param(
        {
            "pipeline_parallel_degree": 2,
            "default_partition": 1,
            "auto_partition": False,
            "placement_strategy": "DPT",
        },
        "ml.p3.16xlarge", 1, "1.12.1",
        {
            "partitions": 2,
            "default_partition": 1,
            "auto_partition": False,
            "placement_strategy": "cluster",
            "ddp": True,
        },
        "world 8 = 1 instance x 8 processes; pipeline 2 x tensor 1 x data-parallel 4",
        id="default_partition routes the degree via partitions; DPT becomes cluster",
    ),
    pytest.param(
        {"default_partition": 0, "auto_partition": False},
        "ml.p3.16xlarge", 1, "1.13.1",
        {"partitions": 1, "default_partition": 0, "auto_partition": False, "ddp": True},
        "world 8 = 1 instance x 8 processes; pipeline 1 x tensor 1 x data-parallel 8",
        id="default_partition without a pipeline degree gets partitions 1",
    ),
    pytest.param(
        {"pipeline_parallel_degree": 2, "placement_strategy": "TPD", "ddp_port": 29501},
        "ml.g4dn.12xlarge", 2, "1.12.1",
        {
            "pipeline_parallel_degree": 2,
            "placement_strategy": "spread",
            "ddp_port": 29501,
            "ddp": True,
        },
        "world 8 = 2 instances x 4 processes; pipeline 2 x tensor 1 x data-parallel 4",
        id="TPD becomes spread; ddp_port gets ddp",
    ),
    pytest.param(
        {"pipeline_parallel_degree": 8, "ddp_dist_backend": "nccl", "ddp": True},
        "ml.p3dn.24xlarge", 1, "1.13.1",
        {"pipeline_parallel_degree": 8, "ddp_dist_backend": "nccl", "ddp": True},
        "world 8 = 1 instance x 8 processes; pipeline 8 x tensor 1 x data-parallel 1",
        id="whole node one pipeline",
    ),
    pytest.param(
        {"partitions": 2, "tensor_parallel_degree": 4, "fp16_params": True},
        "ml.p3.16xlarge", 1, "1.8.1",
        {"partitions": 2, "tensor_parallel_degree": 4, "fp16_params": True, "ddp": True},
        "world 8 = 1 instance x 8 processes; pipeline 2 x tensor 4 x data-parallel 1",
        id="notebook partitions on library 1.6 read as the pipeline degree, sent as written",
    ),
    pytest.param(
        {"pipeline_parallel_degree": 2, "microbatches": 4, "ddp": True},
        "ml.p3.16xlarge", 1, "1.6.0",
        {"partitions": 2, "microbatches": 4, "ddp": True},
        "world 8 = 1 instance x 8 processes; pipeline 2 x tensor 1 x data-parallel 4",
        id="library before 1.6 gets the degree as partitions",
    ),
    pytest.param(
        {"pipeline_parallel_degree": 2, "active_microbatches": 2, "microbatches": 4,
         "pipeline": "simple", "optimize": "memory", "deterministic_server": True,
         "custom_mpi_options": "-verbose"},
        "ml.p3.16xlarge", 1, "1.9.1",
        {"partitions": 2, "active_microbatches": 2, "microbatches": 4,
         "pipeline": "simple", "optimize": "memory", "deterministic_server": True,
         "ddp": True},
        "world 8 = 1 instance x 8 processes; pipeline 2 x tensor 1 x data-parallel 4",
        id="library 1.4: 1.3 options, partitions, a custom MPI flag",
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("options", "instance", "count", "pytorch", "expected", "layout_text"), VALID
)
def test_valid_configuration_reaches_sagemaker(
    options, instance, count, pytorch, expected, layout_text, entry_point, role, sdk_session
):
    assert errors(problems_for(options, instance, count, pytorch)) == []
    mp, _ = parse_model_parallel(options)
    assert mp is not None
    distribution, _, layout = resolve_model_parallel(
        mp, gpus_per_instance=GPUS[instance], instance_count=count, pytorch_version=pytorch
    )
    estimator = build_pytorch(
        distribution,
        instance=instance,
        count=count,
        pytorch=pytorch,
        entry_point=entry_point,
        role=role,
        session=sdk_session,
    )
    assert assert_sdk_receives(estimator, distribution) == expected
    assert str(layout) == layout_text
    expected_mpi = options.get("custom_mpi_options", DEFAULT_MPI)
    assert distribution["mpi"]["custom_mpi_options"] == expected_mpi


def test_all_defaults_still_reach_the_container_as_model_parallel(entry_point, role, sdk_session):
    # The SDK drops an empty mp_parameters, and the training toolkit decides "model parallel"
    # by its presence; so something is always sent.
    distribution, injections, _ = resolve_model_parallel(
        ModelParallel(processes_per_host=1),
        gpus_per_instance=8,
        instance_count=1,
        pytorch_version="1.13.1",
    )
    estimator = build_pytorch(
        distribution,
        instance="ml.p3.16xlarge",
        count=1,
        pytorch="1.13.1",
        entry_point=entry_point,
        role=role,
        session=sdk_session,
    )
    assert assert_sdk_receives(estimator, distribution) == {"pipeline_parallel_degree": 1}
    assert "mp_parameters" in injections[0].reason


def test_custom_image_skips_version_gating():
    # A custom image: the library version is unknown, so no option is gated on it.
    options = {"sharded_data_parallel_degree": 8, "bf16": True, "ddp_dist_backend": "auto"}
    assert errors(problems_for(options, instance="ml.p4d.24xlarge", pytorch=None)) == []


def test_layout_reads_well_in_an_explanation():
    layout = ParallelLayout(
        instance_count=2,
        processes_per_host=8,
        world_size=16,
        pipeline=2,
        tensor=2,
        data_parallel=4,
    )
    assert str(layout) == (
        "world 16 = 2 instances x 8 processes; pipeline 2 x tensor 2 x data-parallel 4"
    )


# ---------------------------------------------------------------------------------------------
# Invalid configurations: every rule, with the path and the numbers in the message
# ---------------------------------------------------------------------------------------------

MP = "model_parallel"
INVALID = [
    # Process counts against the cluster
    pytest.param({"processes_per_host": 8}, "ml.p3.8xlarge", 1, "1.13.1", {},
                 [f"{MP}.processes_per_host"], ["8", "4 GPUs", "ml.p3.16xlarge"],
                 id="more processes than GPUs"),
    # The library needs pipeline x tensor to divide the world (not the processes per host).
    pytest.param({"processes_per_host": 6, "pipeline_parallel_degree": 4}, "ml.p3.16xlarge", 1,
                 "1.13.1", {}, [f"{MP}.pipeline_parallel_degree"], ["6", "(4)"],
                 id="world of 6 processes not divisible by pipeline 4"),
    pytest.param({"pipeline_parallel_degree": 3}, "ml.p3.16xlarge", 2, "1.13.1", {},
                 [f"{MP}.pipeline_parallel_degree"], ["16", "(3)", "2 x ml.p3.16xlarge"],
                 id="multi-node world not divisible by the pipeline"),
    pytest.param({"pipeline_parallel_degree": 2, "tensor_parallel_degree": 4}, "ml.g4dn.12xlarge",
                 1, "1.13.1", {}, [f"{MP}.tensor_parallel_degree"], ["8", "4"],
                 id="replica larger than the node"),
    pytest.param({"tensor_parallel_degree": 2}, "ml.c5.xlarge", 1, "1.13.1", {},
                 ["instance_type"], ["ml.c5.xlarge", "GPU"], id="CPU instance"),
    pytest.param({"tensor_parallel_degree": 2}, "ml.trn1.32xlarge", 1, "1.13.1", {},
                 ["instance_type"], ["ml.trn1.32xlarge has 32 NeuronCores (16 Trainium)"],
                 id="Trainium instance in NeuronCores"),
    pytest.param({"tensor_parallel_degree": 2}, "ml.p5.48xlarge", 1, "1.13.1", {},
                 ["instance_type"], ["ml.p5.48xlarge", "torch_distributed"], id="p5 refused"),
    # Sharded data parallelism
    pytest.param({"sharded_data_parallel_degree": 3}, "ml.p4d.24xlarge", 1, "1.13.1", {},
                 [f"{MP}.sharded_data_parallel_degree"], ["(3)", "(8 = world 8"],
                 id="sharded degree does not divide data parallel"),
    pytest.param({"sharded_data_parallel_degree": 2, "tensor_parallel_degree": 8},
                 "ml.p4d.24xlarge", 3, "1.13.1", {}, [f"{MP}.sharded_data_parallel_degree"],
                 ["(2)", "(3 = world 24 / (pipeline 1 x tensor 8))"],
                 id="the smallest sharded degree, 2, does not divide data parallel 3"),
    pytest.param({"sharded_data_parallel_degree": 4, "pipeline_parallel_degree": 2},
                 "ml.p4d.24xlarge", 1, "1.13.1", {}, [f"{MP}.sharded_data_parallel_degree"],
                 ["pipeline degree 2"], id="sharded with pipeline"),
    pytest.param({"sharded_data_parallel_degree": 4, "shard_optimizer_state": True},
                 "ml.p4d.24xlarge", 1, "1.13.1", {}, [f"{MP}.shard_optimizer_state"], [],
                 id="sharded with shard_optimizer_state"),
    pytest.param({"sharded_data_parallel_degree": 2, "tensor_parallel_degree": 2},
                 "ml.p4d.24xlarge", 1, "1.12.1", {}, [f"{MP}.sharded_data_parallel_degree"],
                 ["1.15", "1.13.0", "(degree 2)"], id="sharded with tensor before 1.15"),
    # DDP
    pytest.param({"tensor_parallel_degree": 2, "processes_per_host": 2, "ddp": False},
                 "ml.p3.16xlarge", 1, "1.13.1", {}, [f"{MP}.ddp"], ["degree 2"],
                 id="tensor parallelism with ddp False"),
    pytest.param({"pipeline_parallel_degree": 2, "ddp": False}, "ml.p3.16xlarge", 1, "1.13.1",
                 {}, [f"{MP}.ddp"], ["4 model replicas"], id="data parallelism with ddp False"),
    pytest.param({"ddp_port": 1234, "ddp": False, "processes_per_host": 1}, "ml.p3.16xlarge", 1,
                 "1.13.1", {}, [f"{MP}.ddp_port"], ["ddp is False"], id="ddp_port without ddp"),
    pytest.param({"horovod": True, "ddp": True}, "ml.p3.16xlarge", 1, "1.13.1", {},
                 [f"{MP}.horovod"], ["ddp is True"], id="horovod and ddp"),
    pytest.param({"horovod": True, "tensor_parallel_degree": 8}, "ml.p3.16xlarge", 1, "1.13.1",
                 {}, [f"{MP}.horovod"], ["degree 8"], id="horovod with tensor parallelism"),
    # Precision
    pytest.param({"fp16": True, "bf16": True, "sharded_data_parallel_degree": 8},
                 "ml.p4d.24xlarge", 1, "1.13.1", {}, [f"{MP}.bf16"], ["fp16"],
                 id="fp16 and bf16"),
    pytest.param({"bf16": True}, "ml.p4d.24xlarge", 1, "1.13.1", {}, [f"{MP}.bf16"], ["is 1"],
                 id="bf16 without sharded data parallelism"),
    # Library versions
    pytest.param({"fp16": True}, "ml.p3.16xlarge", 1, "1.10.2", {}, [f"{MP}.fp16"],
                 ["1.10", "1.7.0", "1.11.0 to 2.0.0"], id="fp16 before library 1.10"),
    pytest.param({"sharded_data_parallel_degree": 8, "bf16": True}, "ml.p4d.24xlarge", 1,
                 "1.11.0", {}, [f"{MP}.sharded_data_parallel_degree", f"{MP}.bf16"],
                 ["1.11", "1.10.1", "1.12.0"], id="sharded and bf16 before library 1.11"),
    pytest.param({"tensor_parallel_degree": 2}, "ml.p3.16xlarge", 1, "1.9.1", {},
                 [f"{MP}.tensor_parallel_degree"], ["1.6", "1.4.0"],
                 id="tensor parallelism before 1.6"),
    pytest.param({"active_microbatches": 1}, "ml.p3.16xlarge", 1, "1.7.1", {},
                 [f"{MP}.active_microbatches"], ["1.3", "1.2.0"],
                 id="active_microbatches before 1.3"),
    pytest.param({"ddp_dist_backend": "nccl", "ddp": True}, "ml.p3.16xlarge", 1, "1.12.0", {},
                 [f"{MP}.ddp_dist_backend"], ["1.13", "1.11.0"],
                 id="ddp_dist_backend before 1.13"),
    pytest.param({"hybrid_shard_degree": 8}, "ml.p3.16xlarge", 1, "1.13.1", {},
                 [f"{MP}.hybrid_shard_degree"], ["v2", "sharded_data_parallel_degree", "2.5.1"],
                 id="a v2 option on a v1 container names the v1 counterpart"),
    pytest.param({"bf16": True, "sharded_data_parallel_degree": 8}, "ml.p3.16xlarge", 1,
                 "1.13.1", {}, [f"{MP}.bf16"], ["V100", "Volta", "ml.p4d.24xlarge (A100)"],
                 id="bf16 on V100"),
    pytest.param({"bf16": True, "sharded_data_parallel_degree": 4}, "ml.g4dn.12xlarge", 1,
                 "1.13.1", {}, [f"{MP}.bf16"], ["T4", "Turing", "ml.p4de.24xlarge"],
                 id="bf16 on T4"),
    pytest.param({"overlapping_allreduce": True}, "ml.p3.16xlarge", 1, "1.13.1", {},
                 [f"{MP}.overlapping_allreduce"], ["1.15.0", "smp.DistributedModel"],
                 id="overlapping_allreduce where the library validates launch keys"),
    pytest.param({"tensor_parallel_degree": 2}, "ml.p3.16xlarge", 1, "1.5.0", {}, [MP],
                 ["1.5.0", "1.6.0 to 2.0.0"], id="no SMP v1 before PyTorch 1.6"),
    pytest.param({"tensor_parallel_degree": 2}, "ml.p3.16xlarge", 1, "1.12", {}, [MP],
                 ["'1.12'", "1.12.1"], id="unresolved short version"),
    # Partitioning and placement
    pytest.param({"auto_partition": False, "pipeline_parallel_degree": 2}, "ml.p3.16xlarge", 1,
                 "1.13.1", {}, [f"{MP}.auto_partition"], ["0 to 1"],
                 id="manual partitioning without default_partition"),
    pytest.param({"default_partition": 2, "pipeline_parallel_degree": 2}, "ml.p3.16xlarge", 1,
                 "1.13.1", {}, [f"{MP}.default_partition"], ["(2)", "0 to 1"],
                 id="default_partition beyond the partitions"),
    pytest.param({"placement_strategy": "PDT"}, "ml.p3.16xlarge", 1, "1.13.1", {},
                 [f"{MP}.placement_strategy"], ["'PDT'", "'cluster' (= 'DPT')"],
                 id="placement without a route through the SDK -> cluster"),
    pytest.param({"placement_strategy": "PTD"}, "ml.p3.16xlarge", 1, "1.13.1", {},
                 [f"{MP}.placement_strategy"], ["'spread' (= 'TPD')"],
                 id="placement without a route through the SDK -> spread"),
    # Microbatches and batch size
    pytest.param({"pipeline_parallel_degree": 2, "microbatches": 4, "active_microbatches": 8},
                 "ml.p3.16xlarge", 1, "1.13.1", {}, [f"{MP}.active_microbatches"], ["(8)", "(4)"],
                 id="more active microbatches than microbatches"),
    pytest.param({"pipeline_parallel_degree": 2, "microbatches": 4}, "ml.p3.16xlarge", 1,
                 "1.13.1", {"train_batch_size": "30", "learning_rate": "x"},
                 ["hyperparameters.train_batch_size"], ["30", "(4)", "28"],
                 id="batch size as a string not divisible by microbatches"),
    pytest.param({"pipeline_parallel_degree": 2, "microbatches": 4}, "ml.p3.16xlarge", 2,
                 "1.13.1", {"per-device-train-batch-size": 6, "batch_size": "auto"},
                 ["hyperparameters.per-device-train-batch-size"], ["6", "(4)"],
                 id="argparse-style batch size not divisible by microbatches"),
    # Option combinations and non-launch options
    pytest.param({"prescaled_batch": True, "optimize": "memory", "tensor_parallel_degree": 8},
                 "ml.p3.16xlarge", 1, "1.13.1", {}, [f"{MP}.prescaled_batch"], ["'memory'"],
                 id="prescaled_batch needs optimize speed"),
    pytest.param({"overlapping_allreduce": False}, "ml.p3.16xlarge", 1, "1.13.1", {},
                 [f"{MP}.overlapping_allreduce"], ["smp.DistributedModel"],
                 id="overlapping_allreduce belongs to the script"),
    # Single values (parse)
    pytest.param({"process_per_host": 8}, "ml.p3.16xlarge", 1, "1.13.1", {},
                 [f"{MP}.process_per_host"], [], id="misspelled processes_per_host"),
    pytest.param({"tensor_paralel_degree": 2}, "ml.p3.16xlarge", 1, "1.13.1", {},
                 [f"{MP}.tensor_paralel_degree"], [], id="misspelled tensor degree"),
    pytest.param({"tensor_parallel_degree": True}, "ml.p3.16xlarge", 1, "1.13.1", {},
                 [f"{MP}.tensor_parallel_degree"], ["True (bool)"], id="a degree of True"),
    pytest.param({"pipeline_parallel_degree": 0}, "ml.p3.16xlarge", 1, "1.13.1", {},
                 [f"{MP}.pipeline_parallel_degree"], ["got 0"], id="degree zero"),
    pytest.param({"memory_weight": 1.5}, "ml.p3.16xlarge", 1, "1.13.1", {},
                 [f"{MP}.memory_weight"], ["1.5"], id="memory_weight above 1"),
    pytest.param({"ddp": "true"}, "ml.p3.16xlarge", 1, "1.13.1", {}, [f"{MP}.ddp"],
                 ["'true' (str)"], id="a string for a bool"),
    pytest.param({"sdp_reduce_bucket_size": 5e8}, "ml.p3.16xlarge", 1, "1.13.1", {},
                 [f"{MP}.sdp_reduce_bucket_size"], ["500000000"], id="5e8 is a float"),
    pytest.param({"placement_strategy": "dpt"}, "ml.p3.16xlarge", 1, "1.13.1", {},
                 [f"{MP}.placement_strategy"], ["'dpt'"], id="lower-case placement"),
    pytest.param({"pipeline": "1f1b"}, "ml.p3.16xlarge", 1, "1.13.1", {}, [f"{MP}.pipeline"],
                 ["'interleaved'"], id="unknown pipeline schedule"),
    pytest.param({"ddp_port": 70000}, "ml.p3.16xlarge", 1, "1.13.1", {}, [f"{MP}.ddp_port"],
                 ["70000"], id="port out of range"),
    pytest.param({"partitions": 2, "pipeline_parallel_degree": 4}, "ml.p3.16xlarge", 1, "1.13.1",
                 {}, [f"{MP}.pipeline_parallel_degree"], ["partitions = 2", "= 4"],
                 id="both names of the pipeline degree, different values"),
    pytest.param(["pipeline_parallel_degree", 2], "ml.p3.16xlarge", 1, "1.13.1", {}, [MP],
                 ["list"], id="not a dict"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("options", "instance", "count", "pytorch", "hyperparameters", "paths", "numbers"), INVALID
)
def test_invalid_configuration_is_reported(
    options, instance, count, pytorch, hyperparameters, paths, numbers
):
    found = errors(problems_for(options, instance, count, pytorch, hyperparameters))
    assert found, "expected an error"
    for path in paths:
        assert path in [p.path for p in found]
    text = "\n".join(str(p) for p in found if p.path in paths)
    for number in numbers:
        assert number in text
    assert all(p.hint for p in found), "every error says how to fix it"


def test_misspelled_keys_suggest_the_right_name():
    found = problems_for({"process_per_host": 8, "tensor_paralel_degree": 2})
    hints = {p.path: p.hint for p in found}
    assert hints["model_parallel.process_per_host"] == "did you mean 'processes_per_host'?"
    assert hints["model_parallel.tensor_paralel_degree"] == "did you mean 'tensor_parallel_degree'?"


def test_all_problems_are_reported_together():
    found = errors(
        problems_for(
            {"pipeline_parallel_degree": 4, "tensor_parallel_degree": 2, "fp16": True,
             "bf16": True, "process_per_host": 4},
            instance="ml.p3.8xlarge",
            pytorch="1.10.2",
        )
    )  # fmt: skip
    paths = {p.path for p in found}
    assert {
        "model_parallel.process_per_host",
        "model_parallel.fp16",
        "model_parallel.bf16",
        "model_parallel.tensor_parallel_degree",
    } <= paths


# ---------------------------------------------------------------------------------------------
# Warnings where the documentation advises
# ---------------------------------------------------------------------------------------------

WARNINGS = [
    pytest.param({"microbatches": 4}, "ml.p3.16xlarge", "1.13.1", f"{MP}.microbatches", "is 4",
                 id="microbatches without pipeline"),
    pytest.param({"pipeline_parallel_degree": 2, "offload_activations": True}, "ml.p3.16xlarge",
                 "1.13.1", f"{MP}.offload_activations", "is 1",
                 id="offloading without microbatches"),
    pytest.param({"pipeline_parallel_degree": 2}, "ml.p3.8xlarge", "1.13.1", "instance_type",
                 "ml.p4de.24xlarge", id="instance outside AWS's list"),
    pytest.param({"fp16_params": True, "tensor_parallel_degree": 2}, "ml.p3.16xlarge", "1.12.1",
                 f"{MP}.fp16_params", "superseded by fp16", id="fp16_params from 1.10"),
    pytest.param({"sdp_max_live_parameters": 10**9}, "ml.p3.16xlarge", "1.13.1",
                 f"{MP}.sdp_max_live_parameters", "sharded", id="sdp option without sdp"),
    pytest.param({"contiguous": True}, "ml.p3.16xlarge", "1.13.1", f"{MP}.contiguous",
                 "TensorFlow", id="TensorFlow-only option"),
]  # fmt: skip


@pytest.mark.parametrize(("options", "instance", "pytorch", "path", "text"), WARNINGS)
def test_documented_advice_is_a_warning_not_an_error(options, instance, pytorch, path, text):
    found = problems_for(options, instance=instance, pytorch=pytorch)
    assert errors(found) == []
    (match,) = [p for p in found if p.path == path]
    assert match.severity == "warning"
    assert text in str(match)


# ---------------------------------------------------------------------------------------------
# Direct construction gives our error too
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "path"),
    [
        ({"tensor_parallel_degree": True}, "model_parallel.tensor_parallel_degree"),
        ({"memory_weight": 2}, "model_parallel.memory_weight"),
        ({"ddp": "yes"}, "model_parallel.ddp"),
        ({"placement_strategy": "DDT"}, "model_parallel.placement_strategy"),
        ({"processes_per_host": -1}, "model_parallel.processes_per_host"),
    ],
)
def test_direct_construction_raises_config_error(kwargs, path):
    with pytest.raises(ConfigError) as raised:
        ModelParallel(**kwargs)
    assert raised.value.paths == [path]


def test_dict_and_typed_options_are_the_same_options():
    from_dict, problems = parse_model_parallel({"partitions": 2, "ddp": True})
    assert problems == []
    assert from_dict == ModelParallel(pipeline_parallel_degree=2, ddp=True)
    assert parse_model_parallel(None) == (None, [])


# ---------------------------------------------------------------------------------------------
# Raw distributions as AWS's example notebooks write them
# ---------------------------------------------------------------------------------------------

DP = "distribution.smdistributed.modelparallel.parameters"


def notebook(parameters: dict, mpi: dict | None = None, **extra) -> dict:
    mpi = mpi if mpi is not None else {"enabled": True, "processes_per_host": 8}
    return {
        "smdistributed": {"modelparallel": {"enabled": True, "parameters": parameters}},
        "mpi": mpi,
        **extra,
    }


NOTEBOOKS = [
    pytest.param(
        notebook(
            {"microbatches": 4, "placement_strategy": "spread", "pipeline": "interleaved",
             "optimize": "speed", "partitions": 2, "ddp": True},
            {"enabled": True, "processes_per_host": 8,
             "custom_mpi_options": "--mca btl_vader_single_copy_mechanism none "},
        ),
        "ml.p3.16xlarge", 1, "1.6.0",
        {"microbatches": 4, "placement_strategy": "spread", "pipeline": "interleaved",
         "optimize": "speed", "partitions": 2, "ddp": True},
        id="the SDK docs' PyTorch 1.6 example",
    ),
    pytest.param(
        notebook(
            {"tensor_parallel_degree": 8, "partitions": 1, "fp16_params": True,
             "shard_optimizer_state": True, "prescaled_batch": True, "optimize": "speed",
             "placement_strategy": "cluster", "ddp": True, "microbatches": 1},
            {"enabled": True, "processes_per_host": 8,
             "custom_mpi_options": "-verbose --mca orte_base_help_aggregate 0 "},
        ),
        "ml.p3.16xlarge", 2, "1.8.1",
        {"tensor_parallel_degree": 8, "partitions": 1, "fp16_params": True,
         "shard_optimizer_state": True, "prescaled_batch": True, "optimize": "speed",
         "placement_strategy": "cluster", "ddp": True, "microbatches": 1},
        id="GPT-2 tensor parallel with fp16_params on library 1.6",
    ),
    pytest.param(
        notebook(
            {"ddp": True, "skip_tracing": True, "delayed_parameter_initialization": True,
             "offload_activations": False, "activation_loading_horizon": 4,
             "sharded_data_parallel_degree": 16, "fp16": False, "bf16": True, "partitions": 1},
            {"enabled": True, "processes_per_host": 8,
             "custom_mpi_options": "-verbose -x NCCL_DEBUG=WARN"},
        ),
        "ml.p4d.24xlarge", 2, "1.12.1",
        {"ddp": True, "skip_tracing": True, "delayed_parameter_initialization": True,
         "offload_activations": False, "activation_loading_horizon": 4,
         "sharded_data_parallel_degree": 16, "fp16": False, "bf16": True, "partitions": 1},
        id="GPT-NeoX sharded data parallel with bf16 on PyTorch 1.12",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("distribution", "instance", "count", "pytorch", "expected"), NOTEBOOKS)
def test_notebook_distribution_parses_checks_and_builds(
    distribution, instance, count, pytorch, expected, entry_point, role, sdk_session
):
    mp, rest, problems = split_distribution(distribution)
    assert mp is not None
    assert rest == {}
    problems += check_model_parallel(
        mp,
        instance_type=instance,
        gpus_per_instance=GPUS[instance],
        instance_count=count,
        pytorch_version=pytorch,
        hyperparameters={},
    )
    assert errors(problems) == []
    resolved, _, _ = resolve_model_parallel(
        mp, gpus_per_instance=GPUS[instance], instance_count=count, pytorch_version=pytorch
    )
    assert resolved["mpi"]["custom_mpi_options"] == distribution["mpi"]["custom_mpi_options"]
    estimator = build_pytorch(
        resolved,
        instance=instance,
        count=count,
        pytorch=pytorch,
        entry_point=entry_point,
        role=role,
        session=sdk_session,
    )
    assert assert_sdk_receives(estimator, resolved) == expected


def test_notebook_problems_point_where_the_user_wrote_them():
    distribution = notebook(
        {"partitions": 4, "tensor_parallel_degree": 2, "processes_per_host": 8, "fp16": True},
        {"enabled": True, "process_per_host": 8},
    )
    mp, _, problems = split_distribution(distribution)
    assert mp is not None
    problems += check_model_parallel(
        mp,
        instance_type="ml.p3.8xlarge",
        gpus_per_instance=4,
        instance_count=1,
        pytorch_version="1.10.2",
        hyperparameters={},
    )
    paths = {p.path for p in errors(problems)}
    assert paths == {
        f"{DP}.processes_per_host",  # an MPI setting under parameters
        "distribution.mpi.process_per_host",  # misspelled, SageMaker would ignore it
        f"{DP}.fp16",  # library 1.7.0 in the PyTorch 1.10.2 container
        f"{DP}.tensor_parallel_degree",  # 4 x 2 = 8 on 4 GPUs
    }
    by_path = {p.path: p for p in problems}
    assert by_path["distribution.mpi.process_per_host"].hint == "did you mean 'processes_per_host'?"
    assert "(4) x tensor (2) = 8" in by_path[f"{DP}.tensor_parallel_degree"].message


def test_notebook_pipeline_degree_problem_points_at_partitions():
    mp, _, problems = split_distribution(notebook({"partitions": 3}))
    assert problems == [] and mp is not None
    found = check_model_parallel(
        mp,
        instance_type="ml.p3.16xlarge",
        gpus_per_instance=8,
        instance_count=1,
        pytorch_version="1.13.1",
        hyperparameters={},
    )
    assert f"{DP}.partitions" in {p.path for p in errors(found)}


@pytest.mark.parametrize(
    ("distribution", "path", "text"),
    [
        pytest.param(
            {"smdistributed": {"modelparallel": {"parameters": {"partitions": 2}}}},
            "distribution.smdistributed.modelparallel.enabled", "ignores",
            id="parameters without enabled are silently ignored by the SDK",
        ),
        pytest.param(
            {"smdistributed": {"modelparallel": {"enabled": "true", "parameters": {}}}},
            "distribution.smdistributed.modelparallel.enabled", "'true'",
            id="enabled as a string",
        ),
        pytest.param(
            notebook({}, smdistributed={"modelparallel": {"enabled": True},
                                        "dataparallel": {"enabled": True}}),
            "distribution.smdistributed.dataparallel", "one smdistributed strategy",
            id="two smdistributed strategies",
        ),
        pytest.param(
            notebook({}, {"enabled": False}),
            "distribution.mpi.enabled", "MPI", id="mpi switched off",
        ),
        pytest.param(
            {"smdistributed": {"modelparallel": {"enabled": True, "parameters": "mp.json"}}},
            "distribution.smdistributed.modelparallel.parameters", "str",
            id="parameters as a file path",
        ),
        pytest.param(
            {"smdistributed": {"modelparallel": {"enabled": True, "paramters": {}}}},
            "distribution.smdistributed.modelparallel.paramters", "parameters",
            id="misspelled parameters",
        ),
        pytest.param("smdistributed", "distribution", "str", id="not a dict"),
    ],
)  # fmt: skip
def test_malformed_distribution_is_reported(distribution, path, text):
    _, _, problems = split_distribution(distribution)
    matching = [p for p in problems if p.path == path]
    assert matching, [str(p) for p in problems]
    assert text in str(matching[0])


def test_other_strategies_stay_untouched():
    distribution = notebook({"partitions": 2}, instance_groups=["gpu"], custom={"a": 1})
    mp, rest, problems = split_distribution(distribution)
    assert problems == []
    assert mp == ModelParallel(pipeline_parallel_degree=2, processes_per_host=8)
    assert rest == {"instance_groups": ["gpu"], "custom": {"a": 1}}

    without_mp = {"torch_distributed": {"enabled": True}}
    assert split_distribution(without_mp) == (None, without_mp, [])
    disabled = {"smdistributed": {"modelparallel": {"enabled": False}}}
    assert split_distribution(disabled) == (None, disabled, [])


# ---------------------------------------------------------------------------------------------
# Why the resolver routes around the SDK's validator (sagemaker 2.257)
# ---------------------------------------------------------------------------------------------


def test_sdk_validator_bugs_that_the_resolver_avoids(entry_point, role, sdk_session):
    documented = notebook(
        {"pipeline_parallel_degree": 2, "default_partition": 1, "auto_partition": False}
    )
    estimator = build_pytorch(
        documented,
        instance="ml.p3.16xlarge",
        count=1,
        pytorch="1.13.1",
        entry_point=entry_point,
        role=role,
        session=sdk_session,
    )
    with pytest.raises(KeyError, match="partitions"):
        estimator.hyperparameters()

    dpt = notebook({"pipeline_parallel_degree": 2, "placement_strategy": "DPT"})
    estimator = build_pytorch(
        dpt,
        instance="ml.p3.16xlarge",
        count=1,
        pytorch="1.13.1",
        entry_point=entry_point,
        role=role,
        session=sdk_session,
    )
    with pytest.raises(ValueError, match="placement_strategy"):
        estimator.hyperparameters()

    # The same intent, resolved, goes through.
    for raw in (documented, dpt):
        mp, _, problems = split_distribution(raw)
        assert mp is not None and problems == []
        resolved, injections, _ = resolve_model_parallel(
            mp, gpus_per_instance=8, instance_count=1, pytorch_version="1.13.1"
        )
        estimator = build_pytorch(
            resolved,
            instance="ml.p3.16xlarge",
            count=1,
            pytorch="1.13.1",
            entry_point=entry_point,
            role=role,
            session=sdk_session,
        )
        assert_sdk_receives(estimator, resolved)
        assert any("validator" in i.reason for i in injections)
