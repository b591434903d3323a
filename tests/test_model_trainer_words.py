"""ModelTrainer's own vocabulary in model_trainer() and spec files: SourceCode (a command instead
of an entry script, requirements), Compute, StoppingCondition, Networking, input channels,
checkpoints, a hyperparameters file and the launchers, including a custom DistributedConfig.

The config objects are the installed SDK's (sagemaker.modules in 2.x, sagemaker.core.training
and sagemaker.train in 3.x); what ModelTrainer receives is asserted on the trainer itself and
on the CreateTrainingJob request its own train() sends, beside a bare ModelTrainer's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import safe_estimators
from safe_estimators import ConfigError
from safe_estimators._cli import main
from safe_estimators._targets.model_trainer import (
    _sdk,
    capture_train_request,
    offline_trainer_session,
)

pytestmark = pytest.mark.both_sdks

ROLE = "arn:aws:iam::111122223333:role/SageMakerRole"
# The Hugging Face image of aws/amazon-sagemaker-examples' model_trainer_overview notebook.
HF_IMAGE = (
    "763104351884.dkr.ecr.us-west-2.amazonaws.com/huggingface-pytorch-training:"
    "2.0.0-transformers4.28.1-gpu-py310-cu118-ubuntu20.04"
)
CPU_IMAGE = "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.0.0-cpu-py310"


@pytest.fixture(autouse=True)
def _no_role_validation(monkeypatch):
    monkeypatch.setenv("SAGEMAKER_VALIDATE_ROLE", "false")


@pytest.fixture(scope="module")
def session():
    return offline_trainer_session("us-west-2")


@pytest.fixture
def scripts(tmp_path: Path) -> Path:
    (tmp_path / "run_clm_no_trainer.py").write_text("print('training')\n")
    (tmp_path / "train.py").write_text("print('training')\n")
    (tmp_path / "requirements.txt").write_text("transformers\n")
    return tmp_path


def configs() -> Any:
    return _sdk().configs


def _request(trainer: Any) -> dict[str, Any]:
    request, _ = capture_train_request(trainer)
    # Named and uploaded per run: the job's name and where its code went.
    request.pop("TrainingJobName")
    for channel in request.get("InputDataConfig", ()):
        channel["DataSource"]["S3DataSource"].pop("S3Uri", None)
    request.get("HyperParameters", {}).pop("sagemaker_job_name", None)
    return request


def _bare(session: Any, **kwargs: Any) -> Any:
    return _sdk().ModelTrainer(sagemaker_session=session, role=ROLE, **kwargs)


def test_the_notebooks_torchrun_command_job_builds_as_written(session, scripts):
    """model_trainer_overview.ipynb, "Distributed Training - Explicit Commands"."""
    c = configs()
    compute = c.Compute(
        instance_count=1,
        instance_type="ml.p4d.24xlarge",
        volume_size_in_gb=96,
        keep_alive_period_in_seconds=3600,
    )
    source_code = c.SourceCode(
        source_dir=str(scripts),
        requirements="requirements.txt",
        command="torchrun --nnodes 1 --nproc_per_node 8 run_clm_no_trainer.py",
    )
    hyperparameters = {"model_dir": "/opt/ml/model", "num_train_epochs": 1, "lr": 5e-5}
    given = dict(
        training_image=HF_IMAGE,
        compute=compute,
        environment={"NCCL_DEBUG": "WARN"},
        hyperparameters=hyperparameters,
        source_code=source_code,
        base_job_name="model-trainer-distributed-commands",
    )
    trainer = safe_estimators.model_trainer(**given, role=ROLE, sagemaker_session=session)
    assert trainer.source_code is source_code  # read as given, never rebuilt
    assert trainer.compute is compute
    assert trainer.training_image == HF_IMAGE
    # ModelTrainer's own default max run, kept, and said so.
    assert trainer.stopping_condition.max_runtime_in_seconds == 3600
    injected = {i.path: i for i in safe_estimators.explain(trainer).injections}
    assert "ModelTrainer's own default (1 h)" in (
        injected["stopping_condition.max_runtime_in_seconds"].reason
    )
    assert _request(trainer) == _request(_bare(session, **given))


def test_the_sdks_command_instead_of_an_entry_script(session, scripts):
    """sagemaker-train's test_command_instead_of_entry_script, offline."""
    c = configs()
    source_code = c.SourceCode(
        source_dir=str(scripts), requirements="requirements.txt", command="python train.py"
    )
    given = dict(
        training_image=CPU_IMAGE,
        source_code=source_code,
        compute=c.Compute(instance_type="ml.m5.xlarge", instance_count=1),
        stopping_condition=c.StoppingCondition(max_runtime_in_seconds=1800),
        base_job_name="shallow-command",
    )
    trainer = safe_estimators.model_trainer(**given, role=ROLE, sagemaker_session=session)
    assert trainer.stopping_condition is given["stopping_condition"]
    assert _request(trainer) == _request(_bare(session, **given))


@pytest.mark.parametrize("suffix", ["json", "yaml"])
def test_hyperparameters_from_a_file(suffix, session, scripts):
    values = {"epochs": 2, "lr": 0.001, "nested": {"a": [1, 2]}}
    path = scripts / f"hyperparameters.{suffix}"
    path.write_text(
        json.dumps(values) if suffix == "json" else "epochs: 2\nlr: 0.001\nnested: {a: [1, 2]}\n"
    )
    c = configs()
    given = dict(
        training_image=CPU_IMAGE,
        source_code=c.SourceCode(source_dir=str(scripts), entry_script="train.py"),
        compute=c.Compute(instance_type="ml.m5.xlarge", instance_count=1),
        hyperparameters=str(path),
    )
    trainer = safe_estimators.model_trainer(**given, role=ROLE, sagemaker_session=session)
    assert trainer.hyperparameters == values
    assert _request(trainer) == _request(_bare(session, **given))


def test_a_hyperparameters_file_that_is_not_a_mapping_is_our_error(scripts):
    path = scripts / "hp.yaml"
    path.write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError) as caught:
        safe_estimators.model_trainer(
            entry_point="train.py",
            source_dir=str(scripts),
            image_uri=CPU_IMAGE,
            instance_type="ml.m5.xlarge",
            hyperparameters=str(path),
        )
    (problem,) = caught.value.problems
    assert problem.path == "hyperparameters"
    assert "not a JSON or YAML mapping" in problem.message


def test_torchrun_keeps_a_given_process_count_and_copies_to_inject_one(session, scripts):
    c, distributed = configs(), _sdk().distributed
    base = dict(
        source_code=c.SourceCode(source_dir=str(scripts), entry_script="train.py"),
        compute=c.Compute(instance_type="ml.g5.12xlarge", instance_count=1),
        framework_version="2.3.0",
        py_version="py311",
    )
    given = distributed.Torchrun(process_count_per_node=2)
    trainer = safe_estimators.model_trainer(
        **base, distributed=given, role=ROLE, sagemaker_session=session
    )
    assert trainer.distributed is given
    plain = distributed.Torchrun()
    trainer = safe_estimators.model_trainer(
        **base, distributed=plain, role=ROLE, sagemaker_session=session
    )
    assert trainer.distributed.process_count_per_node == 4  # ml.g5.12xlarge: 4 GPUs
    assert plain.process_count_per_node is None  # the user's object is left alone
    injected = safe_estimators.explain(trainer).injected
    assert injected["distributed.process_count_per_node"] == 4


def test_mpi_options_are_carried(session, scripts):
    c, distributed = configs(), _sdk().distributed
    mpi = distributed.MPI(
        process_count_per_node=8, mpi_additional_options=["-x", "NCCL_DEBUG=INFO"]
    )
    trainer = safe_estimators.model_trainer(
        source_code=c.SourceCode(source_dir=str(scripts), entry_script="train.py"),
        compute=c.Compute(instance_type="ml.p4d.24xlarge", instance_count=2),
        framework_version="2.3.0",
        py_version="py311",
        distributed=mpi,
        role=ROLE,
        sagemaker_session=session,
    )
    assert trainer.distributed is mpi
    # Two instances: inter-container traffic encrypted, on a copy of nothing the user gave.
    assert trainer.networking.enable_inter_container_traffic_encryption is True


def test_a_custom_distributed_driver_is_sent_as_given_and_recorded(session, scripts):
    c, distributed = configs(), _sdk().distributed
    drivers = scripts / "drivers"
    drivers.mkdir()
    (drivers / "driver.py").write_text("print('driver')\n")

    class CustomDriver(distributed.DistributedConfig):  # type: ignore[name-defined,misc]
        process_count_per_node: int | None = None

        @property
        def driver_dir(self) -> str:
            return str(drivers)

        @property
        def driver_script(self) -> str:
            return "driver.py"

    driver = CustomDriver(process_count_per_node=2)
    trainer = safe_estimators.model_trainer(
        source_code=c.SourceCode(source_dir=str(scripts), entry_script="train.py"),
        compute=c.Compute(instance_type="ml.m5.xlarge", instance_count=1),
        training_image=CPU_IMAGE,
        hyperparameters={"epochs": 1},
        distributed=driver,
        role=ROLE,
        sagemaker_session=session,
    )
    assert trainer.distributed is driver
    (record,) = [i for i in safe_estimators.explain(trainer).injections if i.path == "distributed"]
    assert record.value == "CustomDriver"
    assert "not checked" in record.reason


def test_own_words_are_checked_at_their_own_path(scripts):
    c = configs()
    with pytest.raises(ConfigError) as caught:
        safe_estimators.model_trainer(
            source_code=c.SourceCode(source_dir=str(scripts), entry_script="train.py"),
            compute=c.Compute(instance_type="ml.p3.2xlarge", instance_count=1),
            stopping_condition=c.StoppingCondition(max_runtime_in_seconds=0),
            training_image=CPU_IMAGE,
            instance_type="ml.g5.xlarge",
        )
    paths = caught.value.paths
    assert "compute.instance_type" in paths  # given twice, differently
    assert "stopping_condition.max_runtime_in_seconds" in paths  # max_run, where it was written


SPEC = """\
estimator: pytorch
target: model_trainer
training_image: {image}
source_code:
  source_dir: .
  command: torchrun --nproc_per_node 4 train.py
compute:
  instance_type: ml.g5.12xlarge
  instance_count: 1
  volume_size_in_gb: 100
checkpoint_config:
  s3_uri: s3://bucket/checkpoints
networking:
  enable_network_isolation: false
input_data_config:
  - channel_name: train
    data_source: s3://bucket/train
hyperparameters: hyperparameters.yaml
"""


def test_a_spec_file_in_model_trainers_words_validates_and_plans(scripts, capsys):
    (scripts / "hyperparameters.yaml").write_text("epochs: 3\n")
    spec = scripts / "job.yaml"
    spec.write_text(SPEC.format(image=CPU_IMAGE))
    assert main(["validate", "--no-cache", str(spec)]) == 0, capsys.readouterr().out
    plan = safe_estimators.plan(spec)
    request = plan.request
    assert request["ResourceConfig"]["VolumeSizeInGB"] == 100
    assert request["ResourceConfig"]["InstanceType"] == "ml.g5.12xlarge"
    assert request["StoppingCondition"]["MaxRuntimeInSeconds"] == 3600
    assert request["CheckpointConfig"]["S3Uri"] == "s3://bucket/checkpoints"
    assert request["HyperParameters"]["epochs"] == "3"
    channels = {c["ChannelName"]: c for c in request["InputDataConfig"]}
    assert channels["train"]["DataSource"]["S3DataSource"]["S3Uri"] == "s3://bucket/train"
    # The command as written, run by ModelTrainer's sm_train.sh from the code channel.
    assert {"code", "sm_drivers"} <= set(channels)
    sourcecode = json.loads(plan.files["sourcecode.json"])
    assert sourcecode["command"] == "torchrun --nproc_per_node 4 train.py"


def test_a_misspelt_field_of_a_config_is_a_did_you_mean(scripts, capsys):
    spec = scripts / "job.yaml"
    spec.write_text(SPEC.format(image=CPU_IMAGE).replace("volume_size_in_gb", "volume_size_gb"))
    (scripts / "hyperparameters.yaml").write_text("epochs: 3\n")
    assert main(["--format", "json", "validate", "--no-cache", str(spec)]) == 1
    problems = json.loads(capsys.readouterr().out)["problems"]
    assert [p["path"] for p in problems] == ["compute.volume_size_gb"], problems
    (problem,) = problems
    assert problem["hint"] == "did you mean 'volume_size_in_gb'?"


def test_model_trainers_words_for_the_estimator_target_name_the_other_target(scripts, capsys):
    (scripts / "hyperparameters.yaml").write_text("epochs: 3\n")
    spec = scripts / "job.yaml"
    spec.write_text(SPEC.format(image=CPU_IMAGE).replace("model_trainer", "estimator"))
    assert main(["--format", "json", "validate", "--no-cache", str(spec)]) == 1
    problems = json.loads(capsys.readouterr().out)["problems"]
    assert any(
        "target: model_trainer" in p["hint"] or "target: estimator" in p["message"]
        for p in problems
    ), problems


def test_the_table_of_own_words_knows_every_field_of_the_installed_configs():
    from safe_estimators._facts.model_trainer import OWN_WORDS

    classes = {
        "source_code": "SourceCode", "compute": "Compute",
        "stopping_condition": "StoppingCondition", "networking": "Networking",
        "checkpoint_config": "CheckpointConfig", "output_data_config": "OutputDataConfig",
    }  # fmt: skip
    assert set(classes) == set(OWN_WORDS)
    for name, cls in classes.items():
        assert set(getattr(configs(), cls).model_fields) <= set(OWN_WORDS[name]), name


def test_model_trainers_own_default_max_run_is_the_installed_sdks(session, scripts):
    from safe_estimators._facts.model_trainer import MODEL_TRAINER_MAX_RUN

    c = configs()
    bare = _bare(
        session,
        training_image=CPU_IMAGE,
        source_code=c.SourceCode(source_dir=str(scripts), entry_script="train.py"),
    )
    assert bare.stopping_condition.max_runtime_in_seconds == MODEL_TRAINER_MAX_RUN



def test_the_script_a_command_runs_is_checked_as_an_entry_point(scripts, capsys):
    (scripts / "hyperparameters.yaml").write_text("epochs: 3\n")
    spec = scripts / "job.yaml"
    spec.write_text(SPEC.format(image=CPU_IMAGE).replace("train.py", "trian.py"))
    assert main(["--format", "json", "validate", "--no-cache", str(spec)]) == 1
    (problem,) = json.loads(capsys.readouterr().out)["problems"]
    assert problem["path"] == "source_code.command"
    assert "'trian.py' in source_dir" in problem["message"]


def test_a_fix_is_said_in_the_words_the_job_was_written_in(scripts):
    c = configs()
    with pytest.raises(ConfigError) as caught:
        safe_estimators.model_trainer(
            source_code=c.SourceCode(source_dir=str(scripts), entry_script="train.py"),
            compute=c.Compute(instance_type="ml.g5.xlarge", instance_count=1),
            stopping_condition=c.StoppingCondition(max_runtime_in_seconds=2_419_201),
            training_image=CPU_IMAGE,
        )
    (problem,) = [p for p in caught.value.problems if p.severity == "error"]
    assert problem.path == "stopping_condition.max_runtime_in_seconds"
    assert "stopping_condition.max_runtime_in_seconds=2419200" in problem.hint
    assert "max_run=" not in problem.hint
