"""The same spec is the same job on both targets: planned as the estimator and as a ModelTrainer,
each example sends the same image, instance, processes per node, SMP options, environment,
hyperparameters and limits, as each target sends them. And the ModelTrainer target sends what a
bare ModelTrainer, written by hand the way the SDK's documentation writes it, sends."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

import instance_catalog
import safe_estimators
from safe_estimators._facts.sdk_files import sdk_generation

EXAMPLES = Path(__file__).parent.parent / "examples"
BOTH = [
    EXAMPLES / "model-trainer" / "torchrun-fsdp.yaml",
    EXAMPLES / "model-trainer" / "smp-v2.yaml",
    EXAMPLES / "model-trainer" / "qlora.yaml",
    EXAMPLES / "model-parallel-v2" / "job.yaml",
]
ROLE = "arn:aws:iam::111122223333:role/SageMakerRole"


def _decoded(value: str, target: str) -> Any:
    """A hyperparameter as the script receives it: the estimator JSON-encodes every value; the
    ModelTrainer drivers decode what is JSON (safe_deserialize) and pass the rest as it is."""
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        assert target == "model_trainer", value
        return value


def _job(plan: Any, target: str) -> dict[str, Any]:
    """What the job runs, read from what each target sends."""
    request = plan.request
    hyper = {k: _decoded(v, target) for k, v in request.get("HyperParameters", {}).items()}
    resources = request["ResourceConfig"]
    gpus = instance_catalog.get(resources["InstanceType"]).gpu_count
    if target == "estimator":
        # The training toolkit starts torchrun with one process per GPU, MPI with the count sent.
        per_node = (
            gpus
            if hyper.get("sagemaker_torch_distributed_enabled")
            else hyper.get("sagemaker_mpi_num_of_processes_per_host", 1)
        )
    else:
        distributed = json.loads(plan.files.get("distributed.json") or "{}")
        per_node = distributed.get("process_count_per_node") or 1
    smp = hyper.pop("mp_parameters", None)
    return {
        "image": request["AlgorithmSpecification"]["TrainingImage"],
        "instances": (resources["InstanceType"], resources["InstanceCount"]),
        "volume": resources["VolumeSizeInGB"],
        "processes_per_node": per_node,
        "smp": smp,
        "environment": request.get("Environment") or {},
        "hyperparameters": {k: v for k, v in hyper.items() if not k.startswith("sagemaker_")},
        "stopping": request["StoppingCondition"],
        "encryption": request.get("EnableInterContainerTrafficEncryption", False),
        "role": request["RoleArn"],
    }


# What the estimator target sends for each example, recorded under sagemaker 2.x (the 2.x lane
# checks the record against the live estimator): the sagemaker 3 lane, which has no estimator,
# compares its ModelTrainer jobs with it.
RECORD = Path(__file__).parent / "fixtures" / "estimator-jobs.json"


def _key(spec: Path) -> str:
    return f"{spec.parent.name}/{spec.name}"


def _recorded() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(RECORD.read_text())
    return data


@pytest.mark.sdk2_only  # the estimator target needs sagemaker 2.x
@pytest.mark.parametrize("spec", BOTH, ids=_key)
def test_the_same_spec_is_the_same_job_on_both_targets(spec):
    estimator = _job(safe_estimators.plan(spec, target="estimator", role=ROLE), "estimator")
    trainer = _job(safe_estimators.plan(spec, target="model_trainer", role=ROLE), "model_trainer")
    assert trainer == estimator
    assert estimator["stopping"]["MaxRuntimeInSeconds"] >= 3600  # never ModelTrainer's 1 h
    assert json.loads(json.dumps(estimator)) == _recorded()[_key(spec)]


@pytest.mark.both_sdks
@pytest.mark.parametrize("spec", BOTH, ids=_key)
def test_the_model_trainer_job_is_the_recorded_estimator_job(spec):
    trainer = _job(safe_estimators.plan(spec, target="model_trainer", role=ROLE), "model_trainer")
    assert json.loads(json.dumps(trainer)) == _recorded()[_key(spec)]


@pytest.mark.both_sdks
def test_the_model_trainer_target_sends_what_a_bare_model_trainer_sends(tmp_path, monkeypatch):
    """The torchrun FSDP example, written as the SDK's documentation writes a ModelTrainer."""
    from safe_estimators._resolve import resolve_arguments
    from safe_estimators._spec_files.read import job_arguments
    from safe_estimators._targets.model_trainer import (
        _sdk,
        capture_train_request,
        offline_trainer_session,
        training_image,
    )
    from safe_estimators._targets.trainer_args import trainer_arguments

    monkeypatch.setenv("SAGEMAKER_VALIDATE_ROLE", "false")
    spec = EXAMPLES / "model-trainer" / "torchrun-fsdp.yaml"
    ours = safe_estimators.plan(spec, target="model_trainer", role=ROLE)

    sdk = _sdk()
    configs, distributed = sdk.configs, sdk.distributed
    arguments, _, _ = job_arguments(spec, {"target": "model_trainer", "role": ROLE})
    image = training_image(trainer_arguments(resolve_arguments(arguments)), "us-west-2")
    assert image.endswith("/pytorch-training:2.3.0-gpu-py311")
    bare = sdk.ModelTrainer(
        training_image=image,
        role=ROLE,
        sagemaker_session=offline_trainer_session("us-west-2"),
        source_code=configs.SourceCode(source_dir=str(spec.parent), entry_script="fsdp.py"),
        compute=configs.Compute(instance_type="ml.g5.12xlarge", instance_count=2),
        distributed=distributed.Torchrun(process_count_per_node=4),
        stopping_condition=configs.StoppingCondition(max_runtime_in_seconds=7200),
        networking=configs.Networking(
            enable_inter_container_traffic_encryption=True,
            **({"subnets": [], "security_group_ids": []} if sdk_generation() < 3 else {}),
        ),
        environment={"NCCL_DEBUG": "INFO"},
        hyperparameters={"max_steps": 1000, "lr": 0.0002},
    )
    request, files = capture_train_request(bare)
    name, ours_name = request["TrainingJobName"], ours.request["TrainingJobName"]
    assert json.loads(json.dumps(ours.request).replace(ours_name, name)) == request
    assert json.loads(files["distributed.json"]) == json.loads(ours.files["distributed.json"])


@pytest.mark.both_sdks
@pytest.mark.parametrize("spec", BOTH, ids=_key)
def test_port_writes_a_bare_model_trainer_that_sends_the_planned_request(
    spec, tmp_path, monkeypatch, capsys
):
    """`safe-estimators port FILE` prints SDK code without safe_estimators; run, it sends what
    plan shows for the ModelTrainer target."""
    from safe_estimators._cli import main
    from safe_estimators._targets.model_trainer import (
        capture_train_request,
        offline_trainer_session,
    )

    monkeypatch.setenv("SAGEMAKER_VALIDATE_ROLE", "false")
    written = tmp_path / "job.json"
    data = yaml.safe_load(spec.read_text())
    data.update(role=ROLE, source_dir=str((spec.parent / data["source_dir"]).resolve()))
    written.write_text(json.dumps(data))
    root = str(EXAMPLES.parent)  # the spec names the example's code, outside tmp_path
    assert main(["port", str(written), "--project-root", root]) == 0
    code = capsys.readouterr().out
    assert "safe_estimators" not in code
    namespace: dict[str, Any] = {"__name__": "ported"}
    exec(compile(code, "ported.py", "exec"), namespace)
    trainer = namespace["model_trainer"](offline_trainer_session("us-west-2"))
    request, files = capture_train_request(trainer)

    ours = safe_estimators.plan(written, target="model_trainer", project_root=root)
    name, ours_name = request["TrainingJobName"], ours.request["TrainingJobName"]
    assert json.loads(json.dumps(ours.request).replace(ours_name, name)) == request
    assert files == ours.files
