"""What the preflight checks against the account: the job's account-facing facts.

Read from the CreateTrainingJob request (a spec's offline plan, or a request given whole), or
from a built estimator or ModelTrainer. Each fact keeps the path the user wrote it under
(``instance_type``, ``role``, ``output_path``, ``inputs.train``), so a problem points there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs

S3_URI = re.compile(r"^s3://([^/]+)/?(.*)$")


@attrs.frozen
class Location:
    """An S3 URI the job names: ``kind`` is ``input`` (must hold an object), ``output`` (the
    job writes there) or ``upload`` (the SDK uploads there before the job starts)."""

    path: str
    uri: str
    kind: str

    @property
    def bucket(self) -> str:
        found = S3_URI.match(self.uri)
        return found.group(1) if found else ""

    @property
    def prefix(self) -> str:
        found = S3_URI.match(self.uri)
        return found.group(2) if found else ""


@attrs.frozen
class Instances:
    """``count`` instances of ``instance_type``, written at ``path``."""

    instance_type: str
    count: int
    path: str = "instance_type"


@attrs.frozen
class Job:
    """The account-facing facts of one training job in ``region``."""

    region: str
    instances: tuple[Instances, ...] = ()
    spot: bool = False
    keep_alive_seconds: int = 0
    max_run_seconds: int | None = None
    role: str | None = None
    locations: tuple[Location, ...] = ()
    image: str | None = None
    subnets: tuple[str, ...] = ()
    security_groups: tuple[str, ...] = ()
    keys: tuple[tuple[str, str], ...] = ()  # (path, key: its id, alias or ARN)
    training_plan: str | None = None
    # (estimator keyword, where the user wrote it) where the trainer names it otherwise: a
    # fine-tuning trainer's networking= and compute= (see ``written``).
    paths: tuple[tuple[str, str], ...] = ()
    # Values a plan made up (role, bucket): not the user's, never checked.
    placeholders: frozenset[str] = frozenset()
    # A serverless job (a fine-tuning trainer's with no compute): SageMaker picks and provides
    # the instances, so no instance quota of the account is the job's.
    serverless: bool = False

    def written(self, path: str) -> str:
        """Where the user wrote what the estimator calls ``path``."""
        return dict(self.paths).get(path, path)

    @property
    def remote(self) -> bool:
        """A job SageMaker runs (not local mode)."""
        local = all(i.instance_type.startswith("local") for i in self.instances)
        return self.serverless or (bool(self.instances) and not local)


# Channels the SDK fills itself with uploaded code (ModelTrainer's code and drivers).
_UPLOADED_CHANNELS = frozenset({"code", "sm_drivers"})


def _input_path(channel: str, channels: int) -> str:
    return "inputs" if channels == 1 and channel == "training" else f"inputs.{channel}"


def from_request(
    request: Mapping[str, Any], region: str, placeholders: frozenset[str] = frozenset()
) -> Job:
    """The facts of a CreateTrainingJob request (as boto3 takes it)."""
    resources = request.get("ResourceConfig") or {}
    if resources.get("InstanceGroups"):
        instances = tuple(
            Instances(g["InstanceType"], int(g["InstanceCount"]), f"instance_groups.{n}")
            for n, g in enumerate(resources["InstanceGroups"])
        )
    elif resources.get("InstanceType"):
        instances = (Instances(resources["InstanceType"], int(resources.get("InstanceCount", 1))),)
    else:
        instances = ()
    locations: list[Location] = []
    channels = request.get("InputDataConfig") or []
    for channel in channels:
        name = channel.get("ChannelName", "")
        uri = ((channel.get("DataSource") or {}).get("S3DataSource") or {}).get("S3Uri")
        if isinstance(uri, str):
            kind = "upload" if name in _UPLOADED_CHANNELS else "input"
            path = "source_code" if kind == "upload" else _input_path(name, len(channels))
            locations.append(Location(path, uri, kind))
    output = request.get("OutputDataConfig") or {}
    if output.get("S3OutputPath"):
        locations.append(Location("output_path", output["S3OutputPath"], "output"))
    checkpoint = (request.get("CheckpointConfig") or {}).get("S3Uri")
    if checkpoint:
        locations.append(Location("checkpoint_s3_uri", checkpoint, "output"))
    tensorboard = (request.get("TensorBoardOutputConfig") or {}).get("S3OutputPath")
    if tensorboard:
        locations.append(Location("tensorboard_output_config", tensorboard, "output"))
    code = (request.get("HyperParameters") or {}).get("sagemaker_submit_directory")
    if isinstance(code, str):
        code = code.strip('"')
        if code.startswith("s3://"):
            locations.append(Location("code_location", code, "upload"))
    keys = []
    if output.get("KmsKeyId"):
        keys.append(("output_kms_key", output["KmsKeyId"]))
    if resources.get("VolumeKmsKeyId"):
        keys.append(("volume_kms_key", resources["VolumeKmsKeyId"]))
    vpc = request.get("VpcConfig") or {}
    stopping = request.get("StoppingCondition") or {}
    return Job(
        region=region,
        instances=instances,
        spot=bool(request.get("EnableManagedSpotTraining")),
        keep_alive_seconds=int(resources.get("KeepAlivePeriodInSeconds") or 0),
        max_run_seconds=stopping.get("MaxRuntimeInSeconds"),
        role=request.get("RoleArn"),
        locations=tuple(locations),
        image=(request.get("AlgorithmSpecification") or {}).get("TrainingImage"),
        subnets=tuple(vpc.get("Subnets") or ()),
        security_groups=tuple(vpc.get("SecurityGroupIds") or ()),
        keys=tuple(keys),
        training_plan=resources.get("TrainingPlanArn"),
        placeholders=placeholders,
    )


def _text(owner: Any, name: str) -> str | None:
    """``owner.name`` when it is a non-empty string (SDK config objects may be None)."""
    value = getattr(owner, name, None)
    return value if isinstance(value, str) and value else None


def from_estimator(estimator: Any, region: str) -> Job:
    """The facts of a SageMaker 2.x estimator as built (before ``fit()``, so without inputs)."""
    groups = getattr(estimator, "instance_groups", None) or []
    if groups:
        instances = tuple(
            Instances(g.instance_type, int(g.instance_count), f"instance_groups.{n}")
            for n, g in enumerate(groups)
        )
    elif isinstance(estimator.instance_type, str):  # (a Pipelines parameter is not known yet)
        instances = (Instances(estimator.instance_type, int(estimator.instance_count or 1)),)
    else:
        instances = ()
    locations = []
    for path, kind in (
        ("output_path", "output"),
        ("checkpoint_s3_uri", "output"),
        ("code_location", "upload"),
    ):
        value = getattr(estimator, path, None)
        if isinstance(value, str) and value.startswith("s3://"):
            locations.append(Location(path, value, kind))
    tensorboard = _text(getattr(estimator, "tensorboard_output_config", None), "s3_output_path")
    if tensorboard:
        locations.append(Location("tensorboard_output_config", tensorboard, "output"))
    keys = [
        (path, value)
        for path in ("output_kms_key", "volume_kms_key")
        if isinstance(value := getattr(estimator, path, None), str) and value
    ]
    image = getattr(estimator, "image_uri", None)
    return Job(
        region=region,
        instances=instances,
        spot=bool(getattr(estimator, "use_spot_instances", False)),
        keep_alive_seconds=int(getattr(estimator, "keep_alive_period_in_seconds", 0) or 0),
        max_run_seconds=getattr(estimator, "max_run", None),
        role=getattr(estimator, "role", None),
        locations=tuple(locations),
        image=image if isinstance(image, str) else None,
        subnets=tuple(getattr(estimator, "subnets", None) or ()),
        security_groups=tuple(getattr(estimator, "security_group_ids", None) or ()),
        keys=tuple(keys),
        training_plan=getattr(estimator, "training_plan", None),
    )


def from_trainer(trainer: Any, region: str) -> Job:
    """The facts of a ModelTrainer as built (before ``train()``)."""
    compute = getattr(trainer, "compute", None)
    instances: tuple[Instances, ...] = ()
    if compute is not None and getattr(compute, "instance_type", None):
        instances = (
            Instances(compute.instance_type, int(getattr(compute, "instance_count", 1) or 1)),
        )
    locations = []
    output = getattr(trainer, "output_data_config", None)
    if output_path := _text(output, "s3_output_path"):
        locations.append(Location("output_path", output_path, "output"))
    if checkpoint := _text(getattr(trainer, "checkpoint_config", None), "s3_uri"):
        locations.append(Location("checkpoint_s3_uri", checkpoint, "output"))
    for data in getattr(trainer, "input_data_config", None) or ():
        source = getattr(data, "data_source", None)
        uri = (
            source
            if isinstance(source, str)
            else getattr(getattr(source, "s3_data_source", None), "s3_uri", None)
        )
        if isinstance(uri, str) and uri.startswith("s3://"):
            locations.append(Location(f"inputs.{data.channel_name}", uri, "input"))
    keys = []
    if output_key := _text(output, "kms_key_id"):
        keys.append(("output_kms_key", output_key))
    if volume_key := _text(compute, "volume_kms_key_id"):
        keys.append(("volume_kms_key", volume_key))
    networking = getattr(trainer, "networking", None)
    stopping = getattr(trainer, "stopping_condition", None)
    return Job(
        region=region,
        instances=instances,
        spot=bool(getattr(compute, "enable_managed_spot_training", False)),
        keep_alive_seconds=int(getattr(compute, "keep_alive_period_in_seconds", 0) or 0),
        max_run_seconds=getattr(stopping, "max_runtime_in_seconds", None),
        role=getattr(trainer, "role", None),
        locations=tuple(locations),
        image=getattr(trainer, "training_image", None),
        subnets=tuple(getattr(networking, "subnets", None) or ()),
        security_groups=tuple(getattr(networking, "security_group_ids", None) or ()),
        keys=tuple(keys),
        training_plan=getattr(compute, "training_plan_arn", None),
    )


def _given(owner: Any, name: str) -> Any:
    """``name`` of a mapping (a spec file's) or of an SDK config object (a Python caller's)."""
    return owner.get(name) if isinstance(owner, Mapping) else getattr(owner, name, None)


def from_fine_tuning(job: Any, region: str) -> Job:
    """The facts of a fine-tuning trainer's job (``_resolve.fine_tuning.ResolvedFineTuning``), from
    its arguments as the trainer sends them, each at the path the user wrote it under.

    A serverful job (``compute=TrainingJobCompute``) runs on the instances the serverful path
    keeps (``base_trainer.py`` rebuilds the compute from its instance type, count, volume, warm
    pool and, from PR #6258, the training plan: never spot); a serverless one on SageMaker's.
    Both send the role, ``s3_output_path`` with ``kms_key_id`` (``_create_output_config``), the
    datasets as the ``train`` and ``validation`` channels (S3 URIs; a hub DataSet ARN is no S3
    location), ``networking`` and ``training_image``. A HyperPod job makes no training job: it
    is submitted to the cluster, and nothing here is its.
    """
    from safe_estimators._facts.fine_tuning import plan_arn_forwarded

    spec = job.spec
    compute = spec.compute
    if compute.kind == "hyperpod":
        return Job(region=region)
    extra = spec.extra
    instances: tuple[Instances, ...] = ()
    keep_alive, plan = 0, None
    if compute.kind == "training_job" and compute.instance_type:
        path = "compute.instance_type"
        instances = (Instances(compute.instance_type, compute.instance_count, path),)
        keep_alive = compute.fields.get("keep_alive_period_in_seconds")
        keep_alive = keep_alive if type(keep_alive) is int else 0
        arn = compute.fields.get("training_plan_arn")
        plan = arn if isinstance(arn, str) and arn and plan_arn_forwarded() else None
    locations = []
    output = extra.get("s3_output_path")
    if isinstance(output, str) and output.startswith("s3://"):
        locations.append(Location("s3_output_path", output, "output"))
    for name in ("training_dataset", "validation_dataset"):
        data = extra.get(name)
        if isinstance(data, str) and data.startswith("s3://"):
            locations.append(Location(name, data, "input"))
    key = extra.get("kms_key_id")
    networking = extra.get("networking")
    stopping = extra.get("stopping_condition")
    role, image = extra.get("role"), extra.get("training_image")
    seconds = _given(stopping, "max_runtime_in_seconds") if stopping is not None else None
    return Job(
        region=region,
        instances=instances,
        keep_alive_seconds=keep_alive,
        max_run_seconds=seconds if type(seconds) is int else None,
        role=role if isinstance(role, str) and role else None,
        locations=tuple(locations),
        image=image if isinstance(image, str) and image else None,
        subnets=tuple(_given(networking, "subnets") or ()) if networking is not None else (),
        security_groups=tuple(_given(networking, "security_group_ids") or ())
        if networking is not None
        else (),
        keys=(("kms_key_id", key),) if isinstance(key, str) and key else (),
        training_plan=plan,
        paths=(
            ("subnets", "networking.subnets"),
            ("security_group_ids", "networking.security_group_ids"),
            ("training_plan", "compute.training_plan_arn"),
        ),
        serverless=compute.kind == "serverless",
    )
