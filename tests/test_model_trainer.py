"""The ModelTrainer target: the same spec builds the same job as a real ModelTrainer
(sagemaker 2.x's sagemaker.modules.train, 3.x's sagemaker.train), what it cannot run is refused
naming the estimator target, and the estimator's own refusals do not apply to it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import safe_estimators
from safe_estimators import ConfigError
from safe_estimators._facts.sdk_files import sdk_generation
from safe_estimators._targets.model_trainer import _sdk, offline_trainer_session

pytestmark = pytest.mark.both_sdks

EXAMPLES = Path(__file__).parent.parent / "examples"
TRAINER = EXAMPLES / "model-trainer"
ROLE = "arn:aws:iam::111122223333:role/SageMakerRole"


@pytest.fixture(scope="module")
def session():
    """A real ModelTrainer session that needs no network (its default bucket is given)."""
    return offline_trainer_session("us-west-2")


@pytest.fixture(autouse=True)
def _no_role_validation(monkeypatch):
    """sagemaker 3.x asks IAM about the role when a ModelTrainer is built; these offline tests
    turn that off as the SDK documents (plan does the same for its own build)."""
    monkeypatch.setenv("SAGEMAKER_VALIDATE_ROLE", "false")


def build(spec, session, **overrides):
    return safe_estimators.build(
        spec, target="model_trainer", role=ROLE, sagemaker_session=session, **overrides
    )


def test_a_torchrun_fsdp_job_is_a_model_trainer_with_one_process_per_gpu(session):
    trainer = build(TRAINER / "torchrun-fsdp.yaml", session)
    assert type(trainer) is _sdk().ModelTrainer
    assert type(trainer.distributed).__name__ == "Torchrun"
    assert trainer.distributed.process_count_per_node == 4  # ml.g5.12xlarge: 4 A10G
    assert trainer.distributed.smp is None
    assert (trainer.compute.instance_type, trainer.compute.instance_count) == ("ml.g5.12xlarge", 2)
    assert trainer.compute.volume_size_in_gb == 30
    assert trainer.stopping_condition.max_runtime_in_seconds == 7200
    assert trainer.environment == {"NCCL_DEBUG": "INFO"}
    assert trainer.hyperparameters == {"max_steps": 1000, "lr": 0.0002}
    assert trainer.networking.enable_inter_container_traffic_encryption is True
    assert trainer.training_image.endswith("/pytorch-training:2.3.0-gpu-py311")
    assert trainer.source_code.entry_script == "fsdp.py"
    injected = {i.path: i.value for i in safe_estimators.explain(trainer).injections}
    assert injected["distributed.process_count_per_node"] == 4
    assert injected["encrypt_inter_container_traffic"] is True


def test_an_smp_v2_job_is_torchrun_with_smp_on_the_smp_image(session):
    trainer = build(TRAINER / "smp-v2.yaml", session)
    assert trainer.distributed.process_count_per_node == 8
    smp = trainer.distributed.smp
    assert (smp.hybrid_shard_degree, smp.sm_activation_offloading) == (16, True)
    assert "/smdistributed-modelparallel:2.2.0-gpu-py310-cu121" in trainer.training_image
    # The estimator's default max run, not ModelTrainer's hour, and said so.
    assert trainer.stopping_condition.max_runtime_in_seconds == 24 * 60 * 60
    reasons = {i.path: i.reason for i in safe_estimators.explain(trainer).injections}
    assert "ModelTrainer's own is 1 h" in reasons["max_run"]


def test_a_qlora_job_is_checked_for_memory_and_runs_on_the_hugging_face_image(session):
    trainer = build(TRAINER / "qlora.yaml", session)
    assert trainer.distributed is None  # one GPU: one process, as the estimator starts it
    assert "/huggingface-pytorch-training:2.1.0-transformers4.36.0-gpu-py310" in (
        trainer.training_image
    )
    memory = safe_estimators.explain(trainer).memory
    assert memory is not None and memory.fits


def test_model_trainer_takes_the_estimators_arguments(session, tmp_path):
    (tmp_path / "train.py").write_text("print('hello')\n")
    (tmp_path / "requirements.txt").write_text("transformers\n")
    trainer = safe_estimators.model_trainer(
        entry_point="train.py",
        source_dir=str(tmp_path),
        instance_type="ml.p4d.24xlarge",
        instance_count=1,
        framework_version="2.3.0",
        py_version="py311",
        role=ROLE,
        distribution={"mpi": {"enabled": True, "custom_mpi_options": "-x NCCL_DEBUG=INFO"}},
        inputs={"train": "s3://bucket/train"},
        output_path="s3://bucket/output",
        use_spot_instances=True,
        max_wait=7200,
        max_run=3600,
        checkpoint_s3_uri="s3://bucket/checkpoints",
        tags=[{"Key": "team", "Value": "ml"}],
        sagemaker_session=session,
    )
    assert type(trainer.distributed).__name__ == "MPI"
    assert trainer.distributed.process_count_per_node == 8  # injected: 8 A100s
    assert trainer.distributed.mpi_additional_options == ["-x", "NCCL_DEBUG=INFO"]
    assert trainer.source_code.requirements == "requirements.txt"  # the estimator installs it
    assert trainer.compute.enable_managed_spot_training is True
    assert trainer.stopping_condition.max_wait_time_in_seconds == 7200
    assert trainer.checkpoint_config.s3_uri == "s3://bucket/checkpoints"
    assert trainer.output_data_config.s3_output_path == "s3://bucket/output"
    assert [(c.channel_name, c.data_source) for c in trainer.input_data_config] == [
        ("train", "s3://bucket/train")
    ]
    assert [(t.key, t.value) for t in trainer.tags] == [("team", "ml")]


@pytest.mark.parametrize(
    ("spec", "overrides", "path"),
    [
        (EXAMPLES / "compiler-multi-gpu" / "job.yaml", {}, "training_compiler"),
        (EXAMPLES / "model-parallel-fp16" / "job.yaml", {}, "model_parallel"),
        (EXAMPLES / "heterogeneous-smddp" / "job.yaml", {}, "instance_groups"),
        (
            TRAINER / "torchrun-fsdp.yaml",
            {
                "instance_type": "ml.p4d.24xlarge",
                "distribution": {"smdistributed": {"dataparallel": {"enabled": True}}},
            },
            "distribution.smdistributed.dataparallel",
        ),
        (TRAINER / "torchrun-fsdp.yaml", {"code_location": "s3://bucket/code"}, "code_location"),
        (TRAINER / "torchrun-fsdp.yaml", {"container_log_level": 10}, "container_log_level"),
    ],
    ids=["compiler", "smp-v1", "instance-groups", "smddp", "code-location", "log-level"],
)
def test_what_model_trainer_cannot_run_is_refused_naming_the_estimator_target(
    spec, overrides, path, session
):
    with pytest.raises(ConfigError) as raised:
        build(spec, session, **overrides)
    problem = next(p for p in raised.value.problems if p.path == path)
    assert "ModelTrainer has no counterpart" in problem.message
    assert "target: estimator" in problem.hint


def test_the_estimators_torchrun_version_list_does_not_refuse_a_model_trainer_job(session):
    # The estimator refuses torch_distributed with PyTorch 2.4.0 (not in the SDK's list);
    # ModelTrainer's Torchrun driver runs any PyTorch >= 1.9 container.
    trainer = build(TRAINER / "torchrun-fsdp.yaml", session, framework_version="2.4.0")
    assert trainer.training_image.endswith("/pytorch-training:2.4.0-gpu-py311")


def test_a_model_trainer_job_counts_only_what_model_trainer_adds_to_the_hyperparameters(session):
    # 100 is CreateTrainingJob's limit; the estimator would add its sagemaker_* entries.
    many = {f"h{i}": i for i in range(100)}
    trainer = build(TRAINER / "torchrun-fsdp.yaml", session, hyperparameters=many)
    assert len(trainer.hyperparameters) == 100


def test_plan_of_a_model_trainer_job_shows_the_request_and_the_driver_files():
    plan = safe_estimators.plan(TRAINER / "smp-v2.yaml", target="model_trainer")
    request = plan.request
    assert request["ResourceConfig"] == {
        "InstanceType": "ml.p4d.24xlarge",
        "InstanceCount": 2,
        "VolumeSizeInGB": 30,
    }
    assert json.loads(request["HyperParameters"]["mp_parameters"]) == {
        "hybrid_shard_degree": 16,
        "sm_activation_offloading": True,
    }
    assert request["StoppingCondition"]["MaxRuntimeInSeconds"] == 86400
    assert request["EnableInterContainerTrafficEncryption"] is True
    assert request["AlgorithmSpecification"]["ContainerEntrypoint"] == ["/bin/bash"]
    channels = [c["ChannelName"] for c in request["InputDataConfig"]]
    assert channels == ["code", "sm_drivers"]
    distributed = json.loads(plan.files["distributed.json"])
    assert distributed["process_count_per_node"] == 8
    assert distributed["smp"]["hybrid_shard_degree"] == 16
    assert "torchrun_driver.py" in plan.files["sm_train.sh"]
    document = plan.to_dict()
    assert document["files"]["distributed.json"] == plan.files["distributed.json"]
    assert "sm_drivers/distributed.json" in str(plan)


def test_plan_of_a_model_trainer_job_opens_no_socket(monkeypatch):
    import pytest_socket

    attempts: list[object] = []

    class RecordedAttempt(pytest_socket.SocketBlockedError):
        def __init__(self, *args, **kwargs):
            attempts.append(args)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(pytest_socket, "SocketBlockedError", RecordedAttempt)
    monkeypatch.delenv("SAGEMAKER_VALIDATE_ROLE", raising=False)
    pytest_socket.disable_socket()
    try:
        plan = safe_estimators.plan(TRAINER / "torchrun-fsdp.yaml", target="model_trainer")
    finally:
        pytest_socket.enable_socket()
    assert attempts == []
    assert plan.request["ResourceConfig"]["InstanceType"] == "ml.g5.12xlarge"
    import os

    assert "SAGEMAKER_VALIDATE_ROLE" not in os.environ  # set for the plan only


@pytest.mark.sdk3_only  # sagemaker 2.x has the estimators
def test_under_sagemaker_3_the_estimator_factories_name_model_trainer(tmp_path):
    (tmp_path / "train.py").write_text("print('hello')\n")
    with pytest.raises(ConfigError) as raised:
        safe_estimators.pytorch(
            entry_point=str(tmp_path / "train.py"),
            instance_type="ml.g5.xlarge",
            framework_version="2.3.0",
            py_version="py311",
        )
    (problem,) = raised.value.problems
    assert problem.path == "target"
    assert "model_trainer" in problem.hint


@pytest.mark.sdk3_only  # sagemaker 2.x has the estimators
def test_under_sagemaker_3_a_spec_builds_a_model_trainer_by_default(session):
    trainer = safe_estimators.build(
        TRAINER / "torchrun-fsdp.yaml", role=ROLE, sagemaker_session=session
    )
    assert type(trainer) is _sdk().ModelTrainer


HETEROGENEOUS = {
    "estimator": "pytorch",
    "entry_point": "fsdp.py",
    "source_dir": str(TRAINER),
    "framework_version": "2.3.0",
    "py_version": "py311",
    "role": ROLE,
    "target": "model_trainer",
    # The request's shape is what these tests look at: the FSDP example script reads no
    # instance group, which the script checks refuse on a heterogeneous cluster.
    "check_script": False,
    "instance_groups": [
        {"instance_group_name": "data", "instance_type": "ml.c5.2xlarge", "instance_count": 1},
        {"instance_group_name": "gpu", "instance_type": "ml.g5.12xlarge", "instance_count": 2},
    ],
}


@pytest.mark.sdk3_only  # sagemaker 2.x's ModelTrainer has no groups
def test_sagemaker_3_plans_a_heterogeneous_cluster_without_a_launcher():
    from safe_estimators._spec import structure_spec

    spec, problems = structure_spec(HETEROGENEOUS)
    assert problems == []
    plan = safe_estimators.plan(spec)
    resources = plan.request["ResourceConfig"]
    assert "InstanceType" not in resources and "InstanceCount" not in resources
    found = [
        (g["InstanceGroupName"], g["InstanceType"], g["InstanceCount"])
        for g in resources["InstanceGroups"]
    ]
    assert found == [("data", "ml.c5.2xlarge", 1), ("gpu", "ml.g5.12xlarge", 2)]
    # The image is the first GPU group's, as the estimator picks it.
    assert plan.request["AlgorithmSpecification"]["TrainingImage"].endswith("-gpu-py311")
    assert plan.request["EnableInterContainerTrafficEncryption"] is True  # 3 instances


def test_a_launcher_on_a_heterogeneous_cluster_is_refused(session):
    from safe_estimators._resolve import check_arguments

    arguments = {**HETEROGENEOUS, "distribution": {"torch_distributed": {"enabled": True}}}
    problems = [p for p in check_arguments(arguments)[1] if p.path == "instance_groups"]
    assert problems and "ModelTrainer has no counterpart" in problems[0].message


def test_spot_training_reaches_the_request_spelt_right():
    # sagemaker 2.x's boto3-form request builder (_create_training_job_args(boto3=True)) spells
    # it EnableManagedSotTraining; train() goes through sagemaker-core, which spells it right.
    plan = safe_estimators.plan(
        TRAINER / "torchrun-fsdp.yaml",
        target="model_trainer",
        use_spot_instances=True,
        max_wait=7200,
        checkpoint_s3_uri="s3://bucket/checkpoints",
    )
    assert plan.request["EnableManagedSpotTraining"] is True
    assert "EnableManagedSotTraining" not in plan.request
    assert plan.request["StoppingCondition"] == {
        "MaxRuntimeInSeconds": 7200,
        "MaxWaitTimeInSeconds": 7200,
    }
    assert plan.request["CheckpointConfig"]["S3Uri"] == "s3://bucket/checkpoints"


@pytest.mark.parametrize(
    "tags", [{"team": "nlp"}, [{"Key": "team", "Value": "nlp"}]], ids=["mapping", "list"]
)
def test_tags_in_either_of_the_estimators_forms_reach_the_request(tags):
    # The estimator takes a mapping too (sagemaker 2's format_tags); ModelTrainer's Tag list
    # is made from either (a mapping was an internal TypeError reported as the SDK's refusal).
    plan = safe_estimators.plan(TRAINER / "torchrun-fsdp.yaml", target="model_trainer", tags=tags)
    assert plan.request["Tags"] == [{"Key": "team", "Value": "nlp"}]


def test_trainium_torchrun_runs_one_process_per_neuron_core():
    plan = safe_estimators.plan(
        TRAINER / "torchrun-fsdp.yaml",
        target="model_trainer",
        instance_type="ml.trn1.32xlarge",
        framework_version="1.11.0",  # the SDK's only Neuron training container
        py_version="py38",
        environment={},
        check_script=False,  # the example's script is written for GPUs (nccl)
    )
    assert json.loads(plan.files["distributed.json"])["process_count_per_node"] == 32
    assert "-neuron-" in plan.request["AlgorithmSpecification"]["TrainingImage"]


def test_without_source_dir_model_trainer_uploads_the_entry_points_folder_and_it_is_checked(
    tmp_path, session
):
    """The estimator uploads a lone entry point; ModelTrainer needs a folder: the entry point's,
    recorded, and checked like a source_dir (here a link out of the project is refused)."""
    project = tmp_path / "project"
    project.mkdir()
    (project / ".git").mkdir()
    (project / "train.py").write_text("print('hello')\n")
    def lone_script():
        return safe_estimators.model_trainer(
            entry_point=str(project / "train.py"),
            instance_type="ml.g5.xlarge",
            framework_version="2.3.0",
            py_version="py311",
            role=ROLE,
            sagemaker_session=session,
        )

    trainer = lone_script()
    assert trainer.source_code.source_dir == str(project)
    assert trainer.source_code.entry_script == "train.py"
    injected = {i.path: i.value for i in safe_estimators.explain(trainer).injections}
    assert injected["source_code.source_dir"] == str(project)

    (tmp_path / "secret.txt").write_text("not for the job\n")
    (project / "data.txt").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(ConfigError) as raised:
        lone_script()
    assert [p.path for p in raised.value.problems] == ["source_dir"]


def test_a_role_name_is_refused_on_sagemaker_2_and_planned_only_as_an_arn_on_3(monkeypatch):
    monkeypatch.delenv("SAGEMAKER_VALIDATE_ROLE")
    with pytest.raises(ConfigError) as raised:
        safe_estimators.plan(
            TRAINER / "torchrun-fsdp.yaml", target="model_trainer", role="SageMakerRole"
        )
    (problem,) = raised.value.problems
    assert problem.path == "role"
    assert "arn:aws:iam::<account>:role/" in problem.hint


def test_a_recipe_job_as_a_model_trainer_is_from_recipe_on_3_and_refused_on_2():
    spec = EXAMPLES / "hyperpod-recipe" / "job.yaml"
    if sdk_generation() >= 3:  # ModelTrainer.from_recipe, with the estimator's recipe image
        plan = safe_estimators.plan(spec, target="model_trainer")
        assert plan.request["AlgorithmSpecification"]["TrainingImage"].endswith(
            "smdistributed-modelparallel:2.4.1-gpu-py311-cu121"
        )
        assert plan.request["ResourceConfig"]["InstanceCount"] == 2  # trainer.num_nodes
        return
    with pytest.raises(ConfigError) as raised:
        safe_estimators.plan(spec, target="model_trainer")
    (problem,) = raised.value.problems
    assert problem.path == "training_recipe"
    assert "target: estimator" in problem.hint


MISTRAL_DDP = """
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers import AutoModelForCausalLM

dist.init_process_group("nccl")
model = AutoModelForCausalLM.from_pretrained("mistralai/Mistral-7B-v0.1",
                                             torch_dtype=torch.bfloat16).cuda()
model = DDP(model, device_ids=[int(os.environ["LOCAL_RANK"])])
"""


def test_a_job_that_cannot_fit_under_any_reading_is_refused_as_a_model_trainer_too(tmp_path):
    # Mistral-7B under plain DDP on ml.g5.48xlarge: 7.24e9 x 16 bytes per A10G, and about
    # 58 GB even at 8 bytes per parameter (issue 34): the same error on either SDK.
    (tmp_path / "train.py").write_text(MISTRAL_DDP)
    with pytest.raises(ConfigError) as raised:
        safe_estimators.model_trainer(
            entry_point="train.py", source_dir=str(tmp_path), role=ROLE,
            instance_type="ml.g5.48xlarge", instance_count=1, framework_version="2.3.0",
            py_version="py311", distribution={"torch_distributed": {"enabled": True}},
            model={"parameters": "7.24B", "sequence_length": 2048, "micro_batch_size": 1,
                   "precision": "bf16", "activation_checkpointing": True},
        )  # fmt: skip
    [problem] = [p for p in raised.value.problems if p.path == "model"]
    assert problem.severity == "error"
    assert "even at 8 bytes per parameter" in problem.message


@pytest.mark.sdk3_only  # sagemaker 3's SageMakerConfig
def test_sagemaker_3_validates_each_config_content_once_and_still_refuses_a_bad_one(monkeypatch):
    import jsonschema
    from sagemaker.core.config.config_manager import SageMakerConfig

    safe_estimators.plan(EXAMPLES / "model-trainer" / "torchrun-fsdp.yaml")
    validate = SageMakerConfig.validate_sagemaker_config
    assert getattr(validate, "safe_estimators_once", False)
    calls = []
    monkeypatch.setattr(jsonschema.exceptions, "best_match", lambda errors: calls.append(1))
    config = {"SchemaVersion": "1.0", "SageMaker": {"PythonSDK": {"Modules": {"Telemetry": 1}}}}
    validate(config)
    validate(config)
    assert len(calls) == 1  # the second lookup of the same content is not validated again
    monkeypatch.undo()
    with pytest.raises(jsonschema.exceptions.ValidationError):
        validate({"SchemaVersion": "1.0", "SageMaker": {"NoSuchKey": True}})


def test_an_organisations_explicit_encryption_choice_wins_over_our_default(
    tmp_path, monkeypatch
):
    # The estimator target lets an SDK config's explicit EnableInterContainerTrafficEncryption
    # win over the encryption we inject for a multi-instance job; ModelTrainer reads no such
    # key, so without this our injection would overrule the organisation's choice.
    from test_sdk_config import use_org_config

    plain = safe_estimators.plan(TRAINER / "torchrun-fsdp.yaml", target="model_trainer")
    assert plain.request["EnableInterContainerTrafficEncryption"] is True  # 2 instances
    use_org_config(tmp_path, monkeypatch)  # sets it False
    plan = safe_estimators.plan(TRAINER / "torchrun-fsdp.yaml", target="model_trainer")
    assert not plan.request.get("EnableInterContainerTrafficEncryption")
    (record,) = [
        i for i in plan.explanation.injections if i.path == "encrypt_inter_container_traffic"
    ]
    assert record.value is False
    assert "SageMaker SDK config" in record.reason
    assert "instead of the default True" in record.reason


@pytest.mark.sdk3_only
def test_under_an_organisations_config_the_plan_sends_what_the_bare_model_trainer_sends(
    tmp_path, monkeypatch
):
    # sagemaker 3's ModelTrainer takes the organisation's defaults as its own code does (no
    # VpcConfig or output KMS key from this config, network isolation yes): the plan may not
    # add or drop any of them.
    from test_sdk_config import use_org_config

    from safe_estimators._targets.model_trainer import capture_train_request

    use_org_config(tmp_path, monkeypatch)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-2")
    plan = safe_estimators.plan(TRAINER / "torchrun-fsdp.yaml", target="model_trainer")
    sdk = _sdk()
    (tmp_path / "train.py").write_text("print(1)\n")
    bare = sdk.ModelTrainer(
        training_image=plan.request["AlgorithmSpecification"]["TrainingImage"],
        role=ROLE,
        source_code=sdk.configs.SourceCode(source_dir=str(tmp_path), entry_script="train.py"),
        compute=sdk.configs.Compute(instance_type="ml.g5.12xlarge", instance_count=2),
        sagemaker_session=offline_trainer_session("us-west-2"),
    )
    request, _ = capture_train_request(bare)
    for field in ("Tags", "VpcConfig", "EnableNetworkIsolation"):
        assert plan.request.get(field) == request.get(field), field
    for field in ("KmsKeyId",):
        assert plan.request["OutputDataConfig"].get(field) == request["OutputDataConfig"].get(field)
    assert plan.request["ResourceConfig"].get("VolumeKmsKeyId") == request["ResourceConfig"].get(
        "VolumeKmsKeyId"
    )
