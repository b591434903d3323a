"""From a resolved job to ModelTrainer's arguments, as plain data: the ModelTrainer target.

Pure: no ``sagemaker`` import. The resolved job holds the estimator's keyword arguments (checked,
with every safe default injected); this turns them into the configs ModelTrainer takes
(``Compute``, ``SourceCode``, ``Torchrun``/``MPI``, ``StoppingCondition``, ...), each as a dict of
its fields, and records what it had to make explicit because the two targets differ. The build
step (``_build.model_trainer``) makes the SDK's objects from them; ``port`` prints them as code.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from typing import Any

import attrs

from safe_estimators._distributions import is_enabled, torchrun
from safe_estimators._facts import tables
from safe_estimators._facts.model_trainer import (
    LAUNCHERS,
    MODEL_TRAINER_MAX_RUN,
    REQUIREMENTS_FILE,
)
from safe_estimators._problems import count
from safe_estimators._resolve import ResolvedJob
from safe_estimators._resolved import Injection
from safe_estimators._spec import TrainerWords


@attrs.frozen
class TrainerArguments:
    """ModelTrainer's arguments as plain data.

    ``configs`` maps each ModelTrainer argument to its value: a dict of fields for a config
    class (``compute``, ``source_code``, ``stopping_condition``, ...), else the value itself.
    ``image`` holds the arguments of the SDK's ``image_uris.get_training_image_uri``, the lookup
    the estimators make. ``distributed`` is ``("Torchrun" | "MPI", fields)`` or None; ``smp``
    the SMP v2 fields of ``Torchrun(smp=SMP(...))``. ``inputs`` are the channels ``train()``
    reads (``InputData`` fields); ``with_calls`` the ``with_*`` methods to call, by name.
    """

    image: dict[str, Any]
    configs: dict[str, Any]
    distributed: tuple[str, dict[str, Any]] | None
    smp: dict[str, Any] | None
    inputs: tuple[dict[str, str], ...]
    with_calls: dict[str, Any]
    injections: tuple[Injection, ...]
    # ModelTrainer's config objects as the user gave them (model_trainer() in its own words),
    # by argument name: built as given, with only the recorded injections set on a copy.
    given: dict[str, Any] = attrs.field(factory=dict)


def _image(job: ResolvedJob) -> dict[str, Any]:
    kwargs, spec = job.kwargs, job.spec
    version = "transformers_version" if spec.estimator == "huggingface" else "framework_version"
    return {
        "framework": spec.estimator,
        "framework_version": kwargs.get(version),
        "py_version": kwargs.get("py_version"),
        "image_uri": kwargs.get("image_uri"),
        "distribution": kwargs.get("distribution"),
        "tensorflow_version": kwargs.get("tensorflow_version"),
        "pytorch_version": kwargs.get("pytorch_version"),
        "instance_type": kwargs.get("instance_type") or _image_instance_type(kwargs),
    }


def _image_instance_type(kwargs: Mapping[str, Any]) -> str | None:
    """The instance type a heterogeneous cluster's image is looked up for, as the estimator
    picks it (``EstimatorBase._get_instance_type``): the first GPU group's (g or p family),
    else the first group's."""
    types = [group["instance_type"] for group in kwargs.get("instance_groups") or ()]
    gpu = [t for t in types if isinstance(t, str) and t.split(".")[1][:1] in ("g", "p")]
    return (gpu or types or [None])[0]


def _source_code(job: ResolvedJob, record: list[Injection]) -> dict[str, Any]:
    """SourceCode: ModelTrainer needs a folder; the estimator takes a lone entry point too. A
    SourceCode given in ModelTrainer's words is kept as given (its command, its requirements
    or none: the estimator's requirements.txt is not added to it)."""
    words = job.spec.trainer
    if words is not None and "source_code" in words.given:
        return {
            name: value
            for name, value in (
                ("source_dir", job.kwargs.get("source_dir")),
                ("entry_script", _given_fields(words, "source_code").get("entry_script")),
                ("command", words.command),
                ("requirements", words.requirements),
            )
            if value is not None
        }
    entry, source_dir = job.kwargs["entry_point"], job.kwargs.get("source_dir")
    if source_dir is None:
        source_dir = os.path.dirname(entry) or "."
        entry = os.path.basename(entry)
        record.append(
            Injection(
                "source_code.source_dir",
                source_dir,
                f"the entry point's folder: ModelTrainer uploads a source_dir, never a lone "
                f"script (the estimator would upload {entry} alone).",
            )
        )
    fields: dict[str, Any] = {"source_dir": source_dir, "entry_script": entry}
    if "://" not in source_dir and os.path.isfile(os.path.join(source_dir, REQUIREMENTS_FILE)):
        fields["requirements"] = REQUIREMENTS_FILE
        record.append(
            Injection(
                "source_code.requirements",
                REQUIREMENTS_FILE,
                f"source_dir has {REQUIREMENTS_FILE}, which the estimator's containers install "
                "before training; ModelTrainer's sm_train.sh installs only a file it is given.",
            )
        )
    return fields


def _launcher(
    job: ResolvedJob, record: list[Injection]
) -> tuple[tuple[str, dict[str, Any]] | None, dict[str, Any] | None]:
    """Torchrun (with SMP v2) or MPI, with the process count per node written out."""
    distribution: Mapping[str, Any] = job.kwargs.get("distribution") or {}
    instance = job.instance
    smd = distribution.get("smdistributed")
    block = smd.get("modelparallel") if isinstance(smd, Mapping) else None
    smp = dict(block.get("parameters") or {}) if is_enabled(block) else None
    words = job.spec.trainer
    if words is not None and words.launcher is not None and words.launcher not in LAUNCHERS:
        record.append(
            Injection(
                "distributed",
                words.launcher,
                f"your own DistributedConfig driver ({words.launcher}), sent as given: how many "
                "processes it starts, and with what launcher, is not checked.",
            )
        )
        return (words.launcher, {}), None
    given = _given_fields(words, "distributed")
    if torchrun.enabled(distribution):
        devices = (instance.gpu_count or instance.neuron_cores) if instance else None
        fields: dict[str, Any] = {}
        if given.get("process_count_per_node") is not None:
            fields["process_count_per_node"] = given["process_count_per_node"]
        elif devices:
            fields["process_count_per_node"] = devices
            kind = "GPU" if instance and instance.gpu_count else "NeuronCore"
            record.append(
                Injection(
                    "distributed.process_count_per_node",
                    devices,
                    f"{job.spec.instance_type} has {count(devices, kind)}: one torchrun process "
                    f"per {kind}, what the estimator's torchrun starts; explicit, so the driver "
                    "does not fall back to SM_NUM_GPUS, then SM_NUM_NEURONS, then 1.",
                )
            )
        return ("Torchrun", fields), smp
    mpi = distribution.get("mpi")
    if is_enabled(mpi):
        fields = {}
        if mpi.get("processes_per_host") is not None:
            fields["process_count_per_node"] = mpi["processes_per_host"]
        options = mpi.get("custom_mpi_options")
        if isinstance(options, str) and options.strip():
            fields["mpi_additional_options"] = shlex.split(options)
        return ("MPI", fields), None
    return None, None


def _given_fields(words: TrainerWords | None, name: str) -> dict[str, Any]:
    """The fields of the ModelTrainer config ``name`` as the user gave it (none: {})."""
    value = None if words is None else words.given.get(name)
    if isinstance(value, Mapping):
        inner = next(iter(value.values()), None) if name == "distributed" else value
        return dict(inner) if isinstance(inner, Mapping) else {}
    fields = getattr(value, "model_fields_set", None)
    return {k: getattr(value, k) for k in fields} if isinstance(fields, (set, frozenset)) else {}


def _stopping_condition(job: ResolvedJob, record: list[Injection]) -> dict[str, Any]:
    kwargs = job.kwargs
    max_run = kwargs.get("max_run")
    if max_run is None and job.spec.trainer is not None:
        max_run = MODEL_TRAINER_MAX_RUN
        record.append(
            Injection(
                "stopping_condition.max_runtime_in_seconds",
                max_run,
                f"ModelTrainer's own default ({max_run // 3600} h), sent explicitly: the job is "
                "written in ModelTrainer's words (the estimator's default is "
                f"{tables.DEFAULT_MAX_RUN // 3600} h).",
            )
        )
    elif max_run is None:
        max_run = tables.DEFAULT_MAX_RUN
        record.append(
            Injection(
                "max_run",
                max_run,
                f"the estimator's default ({max_run // 3600} h), sent explicitly: ModelTrainer's "
                f"own is {MODEL_TRAINER_MAX_RUN // 3600} h, and the same spec is the same job on "
                "both targets.",
            )
        )
    fields: dict[str, Any] = {"max_runtime_in_seconds": max_run}
    if kwargs.get("max_wait") is not None:
        fields["max_wait_time_in_seconds"] = kwargs["max_wait"]
    return fields


def _compute(kwargs: Mapping[str, Any], job: ResolvedJob) -> dict[str, Any]:
    fields: dict[str, Any] = (
        {"instance_groups": list(kwargs["instance_groups"])}  # sagemaker 3.x only
        if kwargs.get("instance_groups")
        else {
            "instance_type": kwargs.get("instance_type"),
            "instance_count": kwargs.get("instance_count", 1),
        }
    )
    words = job.spec.trainer
    if words is not None and words.preferences:
        # The first preference stood in instance_type for the rules; Compute takes the list
        # (given) and no instance_type, and a count only where the user gave one at the top.
        fields.pop("instance_type", None)
        if any(count is not None for _, count in words.preferences):
            fields.pop("instance_count", None)
    fields["volume_size_in_gb"] = kwargs.get("volume_size", 30)  # the estimator's default
    for ours, theirs in (
        ("volume_kms_key", "volume_kms_key_id"),
        ("keep_alive_period_in_seconds", "keep_alive_period_in_seconds"),
        ("training_plan", "training_plan_arn"),
        ("use_spot_instances", "enable_managed_spot_training"),
    ):
        if kwargs.get(ours) is not None:
            fields[theirs] = kwargs[ours]
    return fields


def _networking(kwargs: Mapping[str, Any]) -> dict[str, Any] | None:
    fields = {
        theirs: kwargs[ours]
        for ours, theirs in (
            ("subnets", "subnets"),
            ("security_group_ids", "security_group_ids"),
            ("enable_network_isolation", "enable_network_isolation"),
            ("encrypt_inter_container_traffic", "enable_inter_container_traffic_encryption"),
        )
        if kwargs.get(ours) is not None
    }
    return fields or None


def _output(kwargs: Mapping[str, Any]) -> dict[str, Any] | None:
    fields: dict[str, Any] = {}
    if kwargs.get("output_path") is not None:
        fields["s3_output_path"] = kwargs["output_path"]
    if kwargs.get("output_kms_key") is not None:
        fields["kms_key_id"] = kwargs["output_kms_key"]
    if kwargs.get("disable_output_compression"):
        fields["compression_type"] = "NONE"
    return fields or None


def _inputs(inputs: str | Mapping[str, str] | None) -> tuple[dict[str, str], ...]:
    """fit()'s inputs as channels: a lone URI is the estimator's "training" channel."""
    if inputs is None:
        return ()
    if isinstance(inputs, str):
        return ({"channel_name": "training", "data_source": inputs},)
    return tuple({"channel_name": k, "data_source": v} for k, v in inputs.items())


def trainer_arguments(job: ResolvedJob) -> TrainerArguments:
    """The ModelTrainer that runs ``job``: its arguments and what had to be made explicit."""
    kwargs = job.kwargs
    record: list[Injection] = list(job.injections)
    recipe = kwargs.get("training_recipe") is not None
    configs: dict[str, Any] = {
        "compute": _compute(kwargs, job),
        "stopping_condition": _stopping_condition(job, record),
        "environment": dict(kwargs.get("environment") or {}),
    }
    if recipe:
        # ModelTrainer.from_recipe makes the source code, launcher and hyperparameters from
        # the recipe (recorded by the recipe's injections); it takes a requirements file.
        words = job.spec.trainer
        if words is not None and words.requirements is not None:
            configs["requirements"] = words.requirements
    else:
        configs["source_code"] = _source_code(job, record)
        configs["hyperparameters"] = dict(kwargs.get("hyperparameters") or {})
    for name, value in (
        ("role", kwargs.get("role")),
        ("base_job_name", kwargs.get("base_job_name")),
        ("networking", _networking(kwargs)),
        ("output_data_config", _output(kwargs)),
        ("training_input_mode", kwargs.get("input_mode")),
        ("tags", _tags(kwargs.get("tags"))),
    ):
        if value:
            configs[name] = value
    names = (("checkpoint_s3_uri", "s3_uri"), ("checkpoint_local_path", "local_path"))
    checkpoint = {theirs: kwargs[ours] for ours, theirs in names if kwargs.get(ours) is not None}
    if checkpoint:
        configs["checkpoint_config"] = checkpoint
    distributed, smp = _launcher(job, record) if not recipe else (None, None)
    given = dict(job.spec.trainer.given) if job.spec.trainer is not None else {}
    for name, value in list(given.items()):
        if isinstance(value, Mapping) and isinstance(configs.get(name), dict):
            # A spec file's mapping: its fields the estimator has no word for, kept.
            configs[name] = {**value, **configs[name]}
        objects = value if name == "input_data_config" and isinstance(value, list) else [value]
        if not all(hasattr(v, "model_copy") for v in objects):
            del given[name]  # mappings are built from configs; objects are kept as given
    hyperparameters_file = job.spec.trainer.hyperparameters_file if job.spec.trainer else None
    if hyperparameters_file is not None and _file_unchanged(job, hyperparameters_file):
        configs["hyperparameters"] = hyperparameters_file  # ModelTrainer reads it itself
    with_calls: dict[str, Any] = {}
    if kwargs.get("max_retry_attempts") is not None:
        with_calls["with_retry_strategy"] = {"maximum_retry_attempts": kwargs["max_retry_attempts"]}
    if kwargs.get("metric_definitions"):
        with_calls["with_metric_definitions"] = [
            {"name": m["Name"], "regex": m["Regex"]} for m in kwargs["metric_definitions"]
        ]
    return TrainerArguments(
        _image(job),
        configs,
        distributed,
        smp,
        _inputs(job.spec.inputs),
        with_calls,
        tuple(record),
        given,
    )


def _file_unchanged(job: ResolvedJob, path: str) -> bool:
    """Whether the hyperparameters sent are the file's as it was read (nothing injected)."""
    from safe_estimators._spec import own_words

    read, problems = own_words({"hyperparameters": path})
    return not problems and read.get("hyperparameters") == dict(
        job.kwargs.get("hyperparameters") or {}
    )


def _tags(tags: Any) -> list[dict[str, Any]]:
    """The job's tags as ModelTrainer's Tag fields. Like the estimator (its ``format_tags``),
    a mapping ``{key: value}`` is taken besides the list of ``{"Key": ..., "Value": ...}``."""
    if isinstance(tags, Mapping):
        return [{"key": key, "value": value} for key, value in tags.items()]
    return [{"key": t["Key"], "value": t["Value"]} for t in tags or ()]

