"""Model parallelism with the SageMaker model parallel library v1 (SMP v1) on PyTorch.

Four steps, each usable on its own:

- ``ModelParallel``: the typed options; attrs validators check single values.
- ``parse_model_parallel`` / ``split_distribution``: a plain dict, or a raw SageMaker
  ``distribution`` as AWS's example notebooks write it, into ``ModelParallel`` plus problems.
- ``check_model_parallel``: the rules relating the options to each other, to the instance type,
  the instance count, the container's library version and the batch-size hyperparameters.
- ``resolve_model_parallel``: the ``distribution`` dict the SageMaker SDK expects, the values
  injected on the user's behalf, and the parallel layout for the explanation.

Nothing here imports ``sagemaker``: the facts this module needs from the SDK are written down in
the tables and comments below.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from itertools import permutations
from typing import Any

import attrs
from packaging.version import InvalidVersion, Version

from safe_estimators._problems import ConfigError, Problem, did_you_mean, join_path, warning
from safe_estimators._resolved import Injection

# --------------------------------------------------------------------------------------------
# Facts (data, read by the rules)
# --------------------------------------------------------------------------------------------

# The newest SMP v1 release inside each SageMaker PyTorch training container (full PyTorch
# version). Sources: the release notes in aws/sagemaker-python-sdk
# doc/api/training/smd_model_parallel_release_notes/smd_model_parallel_change_log.rst
# ("Migration to AWS Deep Learning Containers") and the AWS developer guide page "Supported
# Frameworks and AWS Regions" for the library v1. "inferred" rows come from the release that added
# support for that PyTorch version (the container may carry a later 1.x patch release); the
# releases they could be off by introduced no launch parameter except 1.3 (active_microbatches,
# deterministic_server), which the 1.6.0 and 1.7.1 rows might therefore under-report.
_LIBRARY_BY_PYTORCH: dict[str, str] = {
    "1.6.0": "1.1.0",  # inferred: 1.2.0 was the first release for PyTorch 1.7.1
    "1.7.1": "1.2.0",  # inferred: 1.2.0 added PyTorch 1.7.1
    "1.8.0": "1.3.1",  # inferred: 1.3.0 added PyTorch 1.8
    "1.8.1": "1.6.0",
    "1.9.0": "1.4.0",  # inferred: the guide lists 1.4.0 for 1.9.1
    "1.9.1": "1.4.0",
    "1.10.0": "1.5.0",
    "1.10.2": "1.7.0",  # the Hugging Face 4.17 container on PyTorch 1.10.2 carries 1.8.1
    "1.11.0": "1.10.1",
    "1.12.0": "1.11.0",
    "1.12.1": "1.13.0",
    "1.13.1": "1.15.0",
    "2.0.0": "1.15.0",
}
_LAST_V1_PYTORCH = "2.0.0"


@attrs.frozen
class _Availability:
    """When a launch parameter appeared in the library (and, if so, what superseded it)."""

    since: str | None  # None: no document dates it, so it is not gated
    superseded_in: str | None = None
    replacement: str | None = None


# When each launch parameter appeared, from the parameter tables of
# doc/api/training/smd_model_parallel_general.rst (the "smdistributed-modelparallel>=v1.x" marks),
# the release notes, and the developer guide (ddp_dist_backend: "since ... version 1.13.0").
# `partitions` is the pre-1.6 name of the pipeline degree; ModelParallel reads it as an alias.
_PARAMETERS: dict[str, _Availability] = {
    "partitions": _Availability("1.0", "1.6", "pipeline_parallel_degree"),
    "pipeline_parallel_degree": _Availability("1.6"),
    "microbatches": _Availability("1.0"),
    "pipeline": _Availability("1.0"),
    "placement_strategy": _Availability("1.0"),
    "optimize": _Availability("1.0"),
    "auto_partition": _Availability("1.0"),
    "default_partition": _Availability("1.0"),
    "memory_weight": _Availability("1.0"),
    "ddp": _Availability("1.0"),
    "horovod": _Availability("1.0"),
    "contiguous": _Availability("1.0"),
    "active_microbatches": _Availability("1.3"),
    "deterministic_server": _Availability("1.3"),
    "tensor_parallel_degree": _Availability("1.6"),
    "fp16_params": _Availability("1.6", "1.10", "fp16"),
    "shard_optimizer_state": _Availability("1.6"),
    "prescaled_batch": _Availability("1.6"),
    "skip_tracing": _Availability("1.6"),
    "offload_activations": _Availability("1.6"),
    "activation_loading_horizon": _Availability("1.6"),
    "fp16": _Availability("1.10"),
    "bf16": _Availability("1.11"),
    "sharded_data_parallel_degree": _Availability("1.11"),
    "sdp_reduce_bucket_size": _Availability("1.11"),
    "sdp_param_persistence_threshold": _Availability("1.11"),
    "sdp_max_live_parameters": _Availability("1.11"),
    "sdp_hierarchical_allgather": _Availability("1.11"),
    "sdp_gradient_clipping": _Availability("1.11"),
    "ddp_dist_backend": _Availability("1.13"),
    # Read by the library's config schema but never dated by a document.
    "ddp_port": _Availability(None),
    "tensor_parallel_seed": _Availability(None),
    "delayed_parameter_initialization": _Availability(None),
    "fast_mode": _Availability(None),
    "static_mode": _Availability(None),
    "load_partition": _Availability(None),
    "partition_file": _Availability(None),
}

# Sharded data parallelism together with tensor parallelism (release notes 1.15.0).
_SDP_WITH_TENSOR_SINCE = "1.15"

# The instance types AWS lists for the library v1, with their GPU counts (used for fix hints).
_SUPPORTED_INSTANCES: dict[str, int] = {
    "ml.g4dn.12xlarge": 4,
    "ml.p3.16xlarge": 8,
    "ml.p3dn.24xlarge": 8,
    "ml.p4d.24xlarge": 8,
    "ml.p4de.24xlarge": 8,
}

# AWS's recommended MPI flag: keeps Docker shared-memory warnings out of the training log.
_DEFAULT_CUSTOM_MPI_OPTIONS = "--mca btl_vader_single_copy_mechanism none"

# Hyperparameters that hold the per-step batch the library splits into microbatches.
_BATCH_SIZE_HYPERPARAMETERS = frozenset(
    {
        "batch_size",
        "train_batch_size",
        "per_device_train_batch_size",
        "per_gpu_train_batch_size",
        "train_micro_batch_size_per_gpu",
        "micro_batch_size",
        "per_device_batch_size",
    }
)

# The SDK's validate_mp_config (sagemaker 2.257) accepts only "cluster" and "spread"; the docs
# define "cluster" as "DPT" and "spread" as "TPD", so those two permutations have a route.
_PLACEMENT_ROUTES = {"cluster": "cluster", "spread": "spread", "DPT": "cluster", "TPD": "spread"}
_PLACEMENT_PERMUTATIONS = frozenset("".join(p) for p in permutations("DPT"))

_TENSORFLOW_ONLY = ("contiguous", "load_partition", "partition_file")
_SDP_OPTIONS = (
    "sdp_reduce_bucket_size",
    "sdp_param_persistence_threshold",
    "sdp_max_live_parameters",
    "sdp_hierarchical_allgather",
    "sdp_gradient_clipping",
)
_MPI_OPTIONS = ("processes_per_host", "custom_mpi_options")
_FLOAT_PARAMETERS = ("memory_weight", "sdp_gradient_clipping")  # the library type-checks floats
_ALIASES = {"partitions": "pipeline_parallel_degree"}

# --------------------------------------------------------------------------------------------
# Single-value checks (shared by the attrs validators and the parsers)
# --------------------------------------------------------------------------------------------

_Verdict = tuple[str, str] | None  # (message, hint) when the value is wrong


def _kind(value: object) -> str:
    return f"{value!r} ({type(value).__name__})"


def _is_int(value: object) -> bool:
    # True is an int in Python; a degree of True is a mistake, not 1.
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _int_hint(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return f"the library accepts only ints here: write {int(value)} instead of {value!r}."
    if isinstance(value, bool):
        return "a bool is not a number here: write the number itself."
    return "write a whole number."


def _int_at_least(low: int) -> Callable[[object], _Verdict]:
    def check(value: object) -> _Verdict:
        if not _is_int(value):
            return f"expected an int >= {low}, got {_kind(value)}.", _int_hint(value)
        assert isinstance(value, int)
        if value < low:
            return f"expected an int >= {low}, got {value}.", f"use {low} or more."
        return None

    return check


def _port(value: object) -> _Verdict:
    if not _is_int(value) or not 0 <= value <= 65535:  # type: ignore[operator]
        return f"expected a TCP port (an int from 0 to 65535), got {_kind(value)}.", (
            "write the port as an int, e.g. 29500."
        )
    return None


def _bool(value: object) -> _Verdict:
    if type(value) is not bool:
        return f"expected True or False, got {_kind(value)}.", (
            "use a real bool (Python True/False, JSON true/false); the library type-checks it."
        )
    return None


def _unit_interval(value: object) -> _Verdict:
    if not _is_number(value) or not 0.0 <= value <= 1.0:  # type: ignore[operator]
        return f"expected a number from 0.0 to 1.0, got {_kind(value)}.", (
            "0.0 balances only computation, 1.0 only memory; the library default is 0.8."
        )
    return None


def _positive_number(value: object) -> _Verdict:
    if not _is_number(value) or value <= 0:  # type: ignore[operator]
        return f"expected a number > 0, got {_kind(value)}.", "the library default is 1.0."
    return None


def _text(value: object) -> _Verdict:
    if not isinstance(value, str):
        return f"expected a string, got {_kind(value)}.", "write the value as a string."
    return None


def _one_of(*choices: str) -> Callable[[object], _Verdict]:
    def check(value: object) -> _Verdict:
        if value not in choices:
            hint = did_you_mean(str(value), choices) if isinstance(value, str) else ""
            return f"expected one of {', '.join(map(repr, choices))}, got {_kind(value)}.", (
                hint or f"use one of {', '.join(map(repr, choices))}."
            )
        return None

    return check


def _placement(value: object) -> _Verdict:
    if isinstance(value, str) and (value in _PLACEMENT_ROUTES or value in _PLACEMENT_PERMUTATIONS):
        return None
    choices = ["cluster", "spread", *sorted(_PLACEMENT_PERMUTATIONS)]
    hint = ""
    if isinstance(value, str):
        upper = value.upper()
        if upper in _PLACEMENT_PERMUTATIONS or value.lower() in _PLACEMENT_ROUTES:
            hint = f"write {upper if upper in _PLACEMENT_PERMUTATIONS else value.lower()!r}."
        else:
            hint = did_you_mean(value, choices)
    return f"expected 'cluster', 'spread' or a permutation of D, P, T, got {_kind(value)}.", (
        hint or "use 'cluster' (= 'DPT') or 'spread' (= 'TPD')."
    )


_positive_int = _int_at_least(1)
_non_negative_int = _int_at_least(0)

# How each option's single value is checked.
_VALUE_CHECKS: dict[str, Callable[[object], _Verdict]] = {
    "pipeline_parallel_degree": _positive_int,
    "tensor_parallel_degree": _positive_int,
    "sharded_data_parallel_degree": _positive_int,
    "microbatches": _positive_int,
    "active_microbatches": _positive_int,
    "pipeline": _one_of("interleaved", "simple"),
    "placement_strategy": _placement,
    "ddp": _bool,
    "ddp_port": _port,
    "ddp_dist_backend": _one_of("auto", "nccl"),
    "horovod": _bool,
    "auto_partition": _bool,
    "default_partition": _non_negative_int,
    "optimize": _one_of("speed", "memory"),
    "memory_weight": _unit_interval,
    "skip_tracing": _bool,
    "contiguous": _bool,
    "load_partition": _bool,
    "partition_file": _text,
    "fp16": _bool,
    "bf16": _bool,
    "fp16_params": _bool,
    "offload_activations": _bool,
    "activation_loading_horizon": _non_negative_int,
    "shard_optimizer_state": _bool,
    "delayed_parameter_initialization": _bool,
    "prescaled_batch": _bool,
    "tensor_parallel_seed": _non_negative_int,
    "sdp_reduce_bucket_size": _positive_int,
    "sdp_param_persistence_threshold": _positive_int,
    "sdp_max_live_parameters": _positive_int,
    "sdp_hierarchical_allgather": _bool,
    "sdp_gradient_clipping": _positive_number,
    "deterministic_server": _bool,
    "fast_mode": _bool,
    "static_mode": _bool,
    "overlapping_allreduce": _bool,
    "processes_per_host": _positive_int,
    "custom_mpi_options": _text,
}


def _value_problem(name: str, value: object, path: str) -> Problem | None:
    verdict = _VALUE_CHECKS[name](value)
    return Problem(path, *verdict) if verdict else None


def _validate(instance: object, attribute: attrs.Attribute, value: object) -> None:
    if value is None:
        return
    problem = _value_problem(attribute.name, value, join_path("model_parallel", attribute.name))
    if problem:
        raise ConfigError([problem])


def _option() -> Any:
    return attrs.field(default=None, validator=_validate)


# --------------------------------------------------------------------------------------------
# The typed options
# --------------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class ModelParallel:
    """Options of the SageMaker model parallel library v1 for PyTorch (and its MPI launch).

    Every field defaults to None, meaning "not set": only the options you set (plus values
    safe_estimators must add, each recorded with its reason) reach the job. Wrong single values
    raise ``ConfigError`` at construction; relations between values, the instance and the
    container are checked when the estimator is built.

    Degrees and layout: ``pipeline_parallel_degree`` (``partitions`` in AWS's notebooks is read
    as the same option), ``tensor_parallel_degree``, ``sharded_data_parallel_degree``,
    ``microbatches``, ``active_microbatches``, ``pipeline`` ("interleaved"/"simple"),
    ``placement_strategy`` ("cluster", "spread" or a permutation of D, P, T), ``ddp``,
    ``ddp_port``, ``ddp_dist_backend`` ("auto"/"nccl"), ``horovod``.

    Partitioning: ``auto_partition``, ``default_partition``, ``optimize`` ("speed"/"memory"),
    ``memory_weight`` (0.0 to 1.0), ``skip_tracing``; TensorFlow-only ``contiguous``,
    ``load_partition``, ``partition_file``.

    Precision: ``fp16`` (library 1.10+), ``bf16`` (1.11+, sharded data parallelism only),
    ``fp16_params`` (the pre-1.10 spelling).

    Memory saving: ``offload_activations``, ``activation_loading_horizon``,
    ``shard_optimizer_state``, ``delayed_parameter_initialization``, ``prescaled_batch``,
    ``tensor_parallel_seed``.

    Sharded data parallelism (1.11+): ``sdp_reduce_bucket_size``,
    ``sdp_param_persistence_threshold``, ``sdp_max_live_parameters`` (ints),
    ``sdp_hierarchical_allgather``, ``sdp_gradient_clipping``.

    Pipeline execution: ``deterministic_server``, ``fast_mode``, ``static_mode``.

    ``overlapping_allreduce`` is accepted only to explain that it belongs to
    ``smp.DistributedModel(...)`` in the training script, not to the launch.

    MPI: ``processes_per_host`` (defaults to the GPUs per instance) and ``custom_mpi_options``.
    """

    pipeline_parallel_degree: int | None = _option()
    tensor_parallel_degree: int | None = _option()
    sharded_data_parallel_degree: int | None = _option()
    microbatches: int | None = _option()
    active_microbatches: int | None = _option()
    pipeline: str | None = _option()
    placement_strategy: str | None = _option()
    ddp: bool | None = _option()
    ddp_port: int | None = _option()
    ddp_dist_backend: str | None = _option()
    horovod: bool | None = _option()

    auto_partition: bool | None = _option()
    default_partition: int | None = _option()
    optimize: str | None = _option()
    memory_weight: float | None = _option()
    skip_tracing: bool | None = _option()
    contiguous: bool | None = _option()
    load_partition: bool | None = _option()
    partition_file: str | None = _option()

    fp16: bool | None = _option()
    bf16: bool | None = _option()
    fp16_params: bool | None = _option()

    offload_activations: bool | None = _option()
    activation_loading_horizon: int | None = _option()
    shard_optimizer_state: bool | None = _option()
    delayed_parameter_initialization: bool | None = _option()
    prescaled_batch: bool | None = _option()
    tensor_parallel_seed: int | None = _option()

    sdp_reduce_bucket_size: int | None = _option()
    sdp_param_persistence_threshold: int | None = _option()
    sdp_max_live_parameters: int | None = _option()
    sdp_hierarchical_allgather: bool | None = _option()
    sdp_gradient_clipping: float | None = _option()

    deterministic_server: bool | None = _option()
    fast_mode: bool | None = _option()
    static_mode: bool | None = _option()

    overlapping_allreduce: bool | None = _option()

    processes_per_host: int | None = _option()
    custom_mpi_options: str | None = _option()

    # Where the user wrote each option (dotted path), when it came from a dict or a raw
    # distribution; problems then point there. Not part of equality.
    _origins: Mapping[str, str] = attrs.field(factory=dict, eq=False, repr=False, alias="_origins")


_OPTION_NAMES: tuple[str, ...] = tuple(
    a.name for a in attrs.fields(ModelParallel) if not a.name.startswith("_")
)
assert set(_OPTION_NAMES) == set(_VALUE_CHECKS), "every option needs a value check"


def _set_options(mp: ModelParallel) -> dict[str, Any]:
    """The options the user set, in declaration order."""
    return {n: getattr(mp, n) for n in _OPTION_NAMES if getattr(mp, n) is not None}


# --------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------


_Entries = list[tuple[object, object, str]]  # (key as written, value, path where written)


def _structure(
    entries: Iterable[tuple[object, object, str]],
) -> tuple[ModelParallel, list[Problem]]:
    """Build options from (key as written, value, path) entries; bad entries become problems."""
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    written: dict[str, str] = {}
    problems: list[Problem] = []
    for key, value, where in entries:
        if not isinstance(key, str):
            problems.append(Problem(where, f"option names are strings, got {_kind(key)}."))
            continue
        name = _ALIASES.get(key, key)
        if name not in _VALUE_CHECKS:
            hint = did_you_mean(key, [*_OPTION_NAMES, *_ALIASES])
            problems.append(
                Problem(
                    where,
                    f"unknown model parallel option {key!r}.",
                    hint or "see safe_estimators.ModelParallel for the options.",
                )
            )
            continue
        if value is None:
            continue
        problem = _value_problem(name, value, where)
        if problem:
            problems.append(problem)
        elif name in values and values[name] != value:
            problems.append(
                Problem(
                    where,
                    f"{key} = {value!r} and {written[name]} = {values[name]!r} name the same "
                    "option with different values.",
                    f"keep one of them ({name} is the current name).",
                )
            )
        elif name not in values:
            values[name], origins[name], written[name] = value, where, key
    return ModelParallel(**values, _origins=origins), problems


def parse_model_parallel(
    value: object, *, path: str = "model_parallel"
) -> tuple[ModelParallel | None, list[Problem]]:
    """Read ``model_parallel=`` (a ``ModelParallel``, a dict with the same keys, or None).

    Never raises. Entries with problems are left out of the returned options, so the rules can
    still run on the rest; any error-severity problem means the job must not be built.
    """
    if value is None or isinstance(value, ModelParallel):
        return value, []
    if not isinstance(value, Mapping):
        return None, [
            Problem(
                path,
                f"expected safe_estimators.ModelParallel or a dict, got {type(value).__name__}.",
                "pass ModelParallel(pipeline_parallel_degree=2, ...) or a dict with those keys.",
            )
        ]
    return _structure((k, v, join_path(path, k)) for k, v in value.items())


def split_distribution(
    distribution: object, *, path: str = "distribution"
) -> tuple[ModelParallel | None, dict, list[Problem]]:
    """Take model parallelism out of a raw SageMaker ``distribution`` dict.

    Reads ``smdistributed.modelparallel`` (``enabled``/``parameters``) and ``mpi``
    (``processes_per_host``/``custom_mpi_options``) as AWS's example notebooks write them, and
    returns the typed options (None when model parallelism is not enabled), the rest of the
    distribution untouched, and problems whose paths point where the user wrote each value.
    Never raises.
    """
    if distribution is None:
        return None, {}, []
    if not isinstance(distribution, Mapping):
        return None, {}, [Problem(path, f"expected a dict, got {type(distribution).__name__}.")]
    rest = dict(distribution)
    smd = rest.get("smdistributed")
    if not isinstance(smd, Mapping) or "modelparallel" not in smd:
        return None, rest, []

    smd_path = join_path(path, "smdistributed")
    mp_path = join_path(smd_path, "modelparallel")
    block = smd["modelparallel"]
    if not isinstance(block, Mapping):
        return None, rest, [Problem(mp_path, "expected a dict with 'enabled' and 'parameters'.")]
    problems = _unknown_keys(block, ("enabled", "parameters"), mp_path)
    enabled = block.get("enabled")
    if enabled is not True:
        # The SDK only reads parameters when enabled is exactly True; anything else silently
        # drops them, which is worth an error unless the user clearly switched it off.
        if enabled is not False and (enabled is not None or block.get("parameters")):
            problems.append(
                Problem(
                    join_path(mp_path, "enabled"),
                    f"enabled is {enabled!r}: the SageMaker SDK ignores model parallel "
                    "parameters unless enabled is the bool True.",
                    "set enabled: True (or remove smdistributed.modelparallel).",
                )
            )
        return None, rest, problems

    others = {k: v for k, v in smd.items() if k != "modelparallel"}
    if others:
        rest["smdistributed"] = others
        problems.extend(
            Problem(
                join_path(smd_path, k),
                "the SageMaker SDK accepts one smdistributed strategy per job, and this one "
                "already has modelparallel.",
                "remove it; model parallelism can do data parallelism itself (ddp: True).",
            )
            for k in others
        )
    else:
        del rest["smdistributed"]

    entries, in_parameters = _parameter_entries(block.get("parameters") or {}, mp_path, path)
    mpi_entries, in_mpi = _mpi_entries(rest.pop("mpi", None), join_path(path, "mpi"))
    mp, in_values = _structure(entries + mpi_entries)
    return mp, rest, problems + in_parameters + in_mpi + in_values


def _parameter_entries(
    parameters: object, mp_path: str, path: str
) -> tuple[_Entries, list[Problem]]:
    """The options under smdistributed.modelparallel.parameters."""
    where = join_path(mp_path, "parameters")
    if not isinstance(parameters, Mapping):
        problem = Problem(
            where,
            f"expected a dict, got {type(parameters).__name__}.",
            "load the JSON file yourself and pass the dict.",
        )
        return [], [problem]
    entries: _Entries = []
    problems = []
    for key, value in parameters.items():
        if key in _MPI_OPTIONS:
            problems.append(
                Problem(
                    join_path(where, key),
                    f"{key} is an MPI setting; under parameters the library rejects it.",
                    f"move it to {join_path(path, 'mpi', key)}.",
                )
            )
        else:
            entries.append((key, value, join_path(where, key)))
    return entries, problems


def _mpi_entries(mpi: object, where: str) -> tuple[_Entries, list[Problem]]:
    """processes_per_host and custom_mpi_options from the distribution's mpi block."""
    if mpi is None:
        return [], []
    if not isinstance(mpi, Mapping):
        return [], [Problem(where, f"expected a dict, got {type(mpi).__name__}.")]
    problems = _unknown_keys(mpi, ("enabled", *_MPI_OPTIONS), where)
    if "enabled" in mpi and mpi["enabled"] is not True:
        problems.append(
            Problem(
                join_path(where, "enabled"),
                f"enabled is {mpi['enabled']!r}, but MPI launches the model parallel library.",
                "set mpi.enabled: True (or leave it out; it is added for you).",
            )
        )
    return [(k, mpi[k], join_path(where, k)) for k in _MPI_OPTIONS if k in mpi], problems


def _unknown_keys(block: Mapping, known: tuple[str, ...], where: str) -> list[Problem]:
    return [
        Problem(
            join_path(where, key),
            f"unknown key {key!r}; SageMaker ignores it silently.",
            did_you_mean(str(key), known) or f"known keys: {', '.join(known)}.",
        )
        for key in block
        if key not in known
    ]


# --------------------------------------------------------------------------------------------
# Layout
# --------------------------------------------------------------------------------------------


@attrs.frozen
class ParallelLayout:
    """How the job's processes split into pipeline, tensor and data parallelism."""

    instance_count: int
    processes_per_host: int
    world_size: int
    pipeline: int
    tensor: int
    data_parallel: int
    sharded_data_parallel: int | None = None

    def __str__(self) -> str:
        hosts = f"{self.instance_count} instance{'s' if self.instance_count != 1 else ''}"
        text = (
            f"world {self.world_size} = {hosts} x {self.processes_per_host} processes; "
            f"pipeline {self.pipeline} x tensor {self.tensor} x data-parallel {self.data_parallel}"
        )
        if self.sharded_data_parallel:
            text += f" (sharded over {self.sharded_data_parallel})"
        return text


def _layout(mp: ModelParallel, gpus_per_instance: int, instance_count: int) -> ParallelLayout:
    per_host = mp.processes_per_host or gpus_per_instance
    world = instance_count * per_host
    pipeline, tensor = mp.pipeline_parallel_degree or 1, mp.tensor_parallel_degree or 1
    sharded = mp.sharded_data_parallel_degree
    return ParallelLayout(
        instance_count=instance_count,
        processes_per_host=per_host,
        world_size=world,
        pipeline=pipeline,
        tensor=tensor,
        data_parallel=max(1, world // (pipeline * tensor)),
        sharded_data_parallel=sharded if sharded and sharded > 1 else None,
    )


# --------------------------------------------------------------------------------------------
# Rules
# --------------------------------------------------------------------------------------------


def _library_of(pytorch_version: str | None) -> Version | None:
    release = _LIBRARY_BY_PYTORCH.get(pytorch_version or "")
    return Version(release) if release else None


@attrs.frozen
class _Job:
    """What a rule sees: the options plus the cluster and container facts."""

    mp: ModelParallel
    instance_type: str
    gpus: int
    instance_count: int
    pytorch_version: str | None
    library: Version | None
    hyperparameters: Mapping[str, object]
    path: str

    def where(self, name: str) -> str:
        return self.mp._origins.get(name) or join_path(self.path, name)

    @property
    def layout(self) -> ParallelLayout:
        return _layout(self.mp, self.gpus, self.instance_count)

    @property
    def replica(self) -> int:
        """Processes holding one model replica (pipeline x tensor)."""
        return self.layout.pipeline * self.layout.tensor

    @property
    def data_parallel(self) -> int | None:
        """The data-parallel degree, or None when the replica does not divide the world."""
        world = self.layout.world_size
        return world // self.replica if world % self.replica == 0 else None

    def cluster(self) -> str:
        per_host = self.layout.processes_per_host
        each = f"{self.gpus} GPUs each" if per_host == self.gpus else f"{per_host} processes each"
        return f"{self.instance_count} x {self.instance_type}, {each}"


_Rule = Callable[[_Job], list[Problem]]


def _needs_gpus(rule: _Rule) -> _Rule:
    """Rules about process counts mean nothing without GPUs (reported once, elsewhere)."""

    def guarded(job: _Job) -> list[Problem]:
        return rule(job) if job.gpus > 0 else []

    guarded.__name__ = rule.__name__
    return guarded


def _rule_instance(job: _Job) -> list[Problem]:
    itype = job.instance_type
    if job.gpus <= 0:
        return [
            Problem(
                "instance_type",
                f"{itype} has no NVIDIA GPUs; the model parallel library runs one process per GPU.",
                "use a GPU instance such as ml.p3.16xlarge (8 GPUs) or ml.p4d.24xlarge (8 GPUs).",
            )
        ]
    if "p5.48xlarge" in itype:  # the SDK's own test in Framework._distribution_configuration
        return [
            Problem(
                "instance_type",
                f"the SageMaker SDK refuses smdistributed on {itype} unless torch_distributed is "
                "enabled, which the model parallel library v1 does not use.",
                "use ml.p4d.24xlarge or ml.p4de.24xlarge, or the library v2 (PyTorch >= 2.0.1).",
            )
        ]
    if itype not in _SUPPORTED_INSTANCES:
        return [
            warning(
                "instance_type",
                f"{itype} is not among the instance types AWS lists for the model parallel "
                f"library ({', '.join(_SUPPORTED_INSTANCES)}).",
                "use one of those unless you have tested this one.",
            )
        ]
    return []


def _rule_container(job: _Job) -> list[Problem]:
    version = job.pytorch_version
    if version is None or job.library is not None:
        return []
    containers = f"{min(_LIBRARY_BY_PYTORCH, key=Version)} to {_LAST_V1_PYTORCH}"
    full = [v for v in _LIBRARY_BY_PYTORCH if v.startswith(f"{version}.")]
    if full:
        return [
            Problem(
                job.path,
                f"PyTorch version {version!r} is a short alias; the library table is keyed by "
                "full container versions.",
                f"resolve it first (the SDK's pytorch.json aliases, e.g. {full[-1]}).",
            )
        ]
    try:
        newer = Version(version) > Version(_LAST_V1_PYTORCH)
    except InvalidVersion:
        return [
            Problem(
                job.path,
                f"cannot read the PyTorch version {version!r}.",
                "pass the container's full PyTorch version, such as '1.13.1'.",
            )
        ]
    if newer:
        return [
            Problem(
                job.path,
                f"the PyTorch {version} container has no model parallel library v1; v1 ends with "
                f"PyTorch {_LAST_V1_PYTORCH} (library {_LIBRARY_BY_PYTORCH[_LAST_V1_PYTORCH]}). "
                "Newer containers use the library v2, launched through torch_distributed.",
                f"use framework_version {_LAST_V1_PYTORCH} or older for these options, or move "
                "to the model parallel library v2.",
            )
        ]
    return [
        Problem(
            job.path,
            f"the PyTorch {version} container does not ship the model parallel library v1 "
            f"(the containers that do: PyTorch {containers}).",
            f"use a framework_version from {containers}.",
        )
    ]


def _rule_parameters_available(job: _Job) -> list[Problem]:
    if job.library is None:
        return []
    problems = []
    for name in _set_options(job.mp):
        # The pipeline degree is written under whichever name the container's library reads
        # (see _pipeline_degree_name), so neither spelling is gated.
        facts = _PARAMETERS.get(name)
        if facts is None or name == "pipeline_parallel_degree":
            continue
        if facts.since and job.library < Version(facts.since):
            problems.append(
                Problem(
                    job.where(name),
                    f"{name} needs model parallel library >= {facts.since}, but the PyTorch "
                    f"{job.pytorch_version} container ships {job.library}.",
                    _container_hint(Version(facts.since)),
                )
            )
        elif facts.superseded_in and job.library >= Version(facts.superseded_in):
            problems.append(
                warning(
                    job.where(name),
                    f"{name} is superseded by {facts.replacement} from library "
                    f"{facts.superseded_in} (the PyTorch {job.pytorch_version} container ships "
                    f"{job.library}).",
                    f"use {facts.replacement} instead.",
                )
            )
    return problems


def _container_hint(required: Version) -> str:
    fitting = sorted(
        (pt for pt, lib in _LIBRARY_BY_PYTORCH.items() if Version(lib) >= required), key=Version
    )
    return f"use framework_version {fitting[0]} to {fitting[-1]}."


@_needs_gpus
def _rule_processes_per_host(job: _Job) -> list[Problem]:
    per_host, pipeline = job.layout.processes_per_host, job.layout.pipeline
    problems = []
    if per_host > job.gpus:
        problems.append(
            Problem(
                job.where("processes_per_host"),
                f"{per_host} processes per host, but {job.instance_type} has {job.gpus} GPUs; "
                "the library needs one GPU per process.",
                f"set processes_per_host to {job.gpus} (or fewer), or use "
                f"{_bigger_instance(job, lambda gpus: gpus >= per_host)}.",
            )
        )
    if per_host % pipeline:
        blame = "processes_per_host" if job.mp.processes_per_host else "pipeline_parallel_degree"
        problems.append(
            Problem(
                job.where(blame),
                f"processes per host ({per_host}) is not divisible by the pipeline degree "
                f"({pipeline}).",
                "choose a pipeline degree that divides the processes per host.",
            )
        )
    return problems


@_needs_gpus
def _rule_degrees_divide_world(job: _Job) -> list[Problem]:
    layout = job.layout
    if job.data_parallel is not None:
        return []
    blame = (
        "tensor_parallel_degree" if job.mp.tensor_parallel_degree else "pipeline_parallel_degree"
    )
    return [
        Problem(
            job.where(blame),
            f"pipeline ({layout.pipeline}) x tensor ({layout.tensor}) = {job.replica} processes "
            f"per model replica, but the job has {layout.world_size} ({job.cluster()}).",
            f"lower the degrees so their product divides {layout.world_size}, or use "
            f"{_bigger_instance(job, lambda gpus: gpus * job.instance_count % job.replica == 0)}.",
        )
    ]


def _bigger_instance(job: _Job, fits: Callable[[int], bool]) -> str:
    """Name a supported instance type with more GPUs that ``fits``, same family first."""
    parts = job.instance_type.split(".")
    family = parts[1] if len(parts) > 2 else ""
    fitting = [
        (itype, gpus)
        for itype, gpus in _SUPPORTED_INSTANCES.items()
        if gpus > job.gpus and fits(gpus)
    ]
    fitting.sort(key=lambda item: item[0].split(".")[1] != family)
    if fitting:
        return f"{fitting[0][0]} ({fitting[0][1]} GPUs)"
    return "more instances"


@_needs_gpus
def _rule_sharded_data_parallel(job: _Job) -> list[Problem]:
    sharded = job.mp.sharded_data_parallel_degree
    if not sharded or sharded <= 1:
        return []
    here, layout, problems = job.where("sharded_data_parallel_degree"), job.layout, []
    dp = job.data_parallel
    if dp is not None and dp % sharded:
        problems.append(
            Problem(
                here,
                f"sharded data parallel degree ({sharded}) does not divide the data-parallel "
                f"degree ({dp} = world {layout.world_size} / (pipeline {layout.pipeline} x "
                f"tensor {layout.tensor})).",
                f"use a degree that divides {dp}.",
            )
        )
    if layout.pipeline > 1:
        problems.append(
            Problem(
                here,
                f"sharded data parallelism does not combine with pipeline parallelism "
                f"(pipeline degree {layout.pipeline}).",
                "set pipeline_parallel_degree to 1, or drop sharded data parallelism.",
            )
        )
    if job.mp.shard_optimizer_state:
        problems.append(
            Problem(
                job.where("shard_optimizer_state"),
                "shard_optimizer_state does not combine with sharded data parallelism, which "
                "already shards the optimizer state.",
                "remove shard_optimizer_state.",
            )
        )
    if layout.tensor > 1 and job.library and job.library < Version(_SDP_WITH_TENSOR_SINCE):
        problems.append(
            Problem(
                here,
                f"sharded data parallelism with tensor parallelism (degree {layout.tensor}) "
                f"needs library >= {_SDP_WITH_TENSOR_SINCE}; PyTorch {job.pytorch_version} "
                f"ships {job.library}.",
                _container_hint(Version(_SDP_WITH_TENSOR_SINCE)),
            )
        )
    return problems


def _rule_ddp(job: _Job) -> list[Problem]:
    mp, layout = job.mp, job.layout
    problems = []
    dp = job.data_parallel or 1
    reasons = []
    if layout.tensor > 1:
        reasons.append(f"tensor parallelism (degree {layout.tensor})")
    if dp > 1 and not mp.horovod:
        reasons.append(f"data parallelism across {dp} model replicas")
    if mp.ddp is False and reasons:
        problems.append(
            Problem(
                job.where("ddp"),
                f"ddp is False, but {' and '.join(reasons)} needs DDP.",
                "set ddp to True (or leave it out; it is set for you).",
            )
        )
    for name in ("ddp_port", "ddp_dist_backend"):
        if getattr(mp, name) is not None and (mp.ddp is False or mp.horovod):
            problems.append(
                Problem(
                    job.where(name),
                    f"{name} configures DDP, which is off "
                    f"({'horovod is True' if mp.horovod else 'ddp is False'}).",
                    f"set ddp to True, or remove {name}.",
                )
            )
    if mp.horovod and (mp.ddp or layout.tensor > 1):
        why = "ddp is True" if mp.ddp else f"tensor parallelism (degree {layout.tensor}) needs DDP"
        problems.append(
            Problem(
                job.where("horovod"),
                f"horovod cannot be combined with DDP ({why}).",
                "remove horovod; with PyTorch, ddp: True is the documented data-parallel engine.",
            )
        )
    return problems


def _rule_precision(job: _Job) -> list[Problem]:
    mp, problems = job.mp, []
    if mp.bf16 and (mp.fp16 or mp.fp16_params):
        other = "fp16" if mp.fp16 else "fp16_params"
        problems.append(
            Problem(
                job.where("bf16"),
                f"bf16 and {other} are both True; pick one precision.",
                "keep bf16 (needs sharded data parallelism) or fp16.",
            )
        )
    if mp.bf16 and not (mp.sharded_data_parallel_degree or 1) > 1:
        problems.append(
            Problem(
                job.where("bf16"),
                "bf16 works only with sharded data parallelism, and "
                f"sharded_data_parallel_degree is {mp.sharded_data_parallel_degree or 1}.",
                "set sharded_data_parallel_degree > 1, or use fp16.",
            )
        )
    return problems


def _rule_partitioning(job: _Job) -> list[Problem]:
    mp, problems = job.mp, []
    pipeline = mp.pipeline_parallel_degree or 1
    if mp.auto_partition is False and mp.default_partition is None:
        problems.append(
            Problem(
                job.where("auto_partition"),
                "auto_partition is False, so the library needs default_partition for modules "
                "outside smp.partition contexts.",
                f"add default_partition (0 to {pipeline - 1}).",
            )
        )
    if mp.default_partition is not None and mp.default_partition >= pipeline:
        problems.append(
            Problem(
                job.where("default_partition"),
                f"default_partition ({mp.default_partition}) must be less than the pipeline "
                f"degree ({pipeline}); partitions are numbered 0 to {pipeline - 1}.",
                f"use a default_partition from 0 to {pipeline - 1}.",
            )
        )
    return problems


def _rule_placement(job: _Job) -> list[Problem]:
    placement = job.mp.placement_strategy
    if placement is None or placement in _PLACEMENT_ROUTES:
        return []
    # Nearest accepted spelling: the one whose letters agree in most positions ("PDT" shares the
    # innermost T with "DPT" = cluster).
    nearest = max(
        ("DPT", "TPD"), key=lambda p: sum(a == b for a, b in zip(p, placement, strict=True))
    )
    return [
        Problem(
            job.where("placement_strategy"),
            f"placement_strategy {placement!r} is documented by the library, but the SageMaker "
            "SDK's validate_mp_config accepts only 'cluster' (= 'DPT') and 'spread' (= 'TPD'), "
            "so there is no way to launch it through the SDK.",
            f"use the nearest accepted placement: {_PLACEMENT_ROUTES[nearest]!r} (= {nearest!r}).",
        )
    ]


def _rule_microbatches(job: _Job) -> list[Problem]:
    mp, problems = job.mp, []
    microbatches = mp.microbatches or 1
    if mp.active_microbatches is not None and mp.active_microbatches > microbatches:
        problems.append(
            Problem(
                job.where("active_microbatches"),
                f"active_microbatches ({mp.active_microbatches}) exceeds microbatches "
                f"({microbatches}).",
                f"use active_microbatches <= {microbatches}.",
            )
        )
    if microbatches > 1 and (mp.pipeline_parallel_degree or 1) == 1:
        problems.append(
            warning(
                job.where("microbatches"),
                f"microbatches is {microbatches} but the pipeline degree is 1; microbatches "
                "overlap pipeline stages, so with one stage they only split the batch.",
                "set pipeline_parallel_degree > 1, or leave microbatches at 1.",
            )
        )
    if mp.offload_activations and microbatches <= 1:
        problems.append(
            warning(
                job.where("offload_activations"),
                "offload_activations helps only with microbatches > 1 (and activation "
                f"checkpointing); microbatches is {microbatches}.",
                "raise microbatches, or drop offload_activations.",
            )
        )
    return problems


def _rule_batch_size(job: _Job) -> list[Problem]:
    microbatches = job.mp.microbatches or 1
    if microbatches <= 1:
        return []
    problems = []
    for key, raw in job.hyperparameters.items():
        if str(key).lower().replace("-", "_") not in _BATCH_SIZE_HYPERPARAMETERS:
            continue
        size = _as_int(raw)
        if size is not None and size % microbatches:
            lower = size - size % microbatches
            problems.append(
                Problem(
                    join_path("hyperparameters", key),
                    f"batch size {size} is not divisible by microbatches ({microbatches}); the "
                    "library splits each batch into equal microbatches.",
                    f"use a multiple of {microbatches} (e.g. {lower or microbatches}), or "
                    "microbatches that divide it.",
                )
            )
    return problems


def _as_int(raw: object) -> int | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    if isinstance(raw, str) and raw.strip().isdigit():
        return int(raw)
    return None


def _rule_option_combinations(job: _Job) -> list[Problem]:
    mp, problems = job.mp, []
    if mp.prescaled_batch and mp.optimize == "memory":
        problems.append(
            Problem(
                job.where("prescaled_batch"),
                "prescaled_batch requires optimize 'speed' (the library's schema), and optimize "
                "is 'memory'.",
                "set optimize to 'speed', or drop prescaled_batch.",
            )
        )
    if not (mp.sharded_data_parallel_degree or 1) > 1:
        problems.extend(
            warning(
                job.where(name),
                f"{name} has no effect without sharded data parallelism "
                "(sharded_data_parallel_degree > 1).",
                "set sharded_data_parallel_degree, or remove it.",
            )
            for name in _SDP_OPTIONS
            if getattr(mp, name) is not None
        )
    return problems


def _rule_not_launch_options(job: _Job) -> list[Problem]:
    mp, problems = job.mp, []
    if mp.overlapping_allreduce is not None:
        problems.append(
            Problem(
                job.where("overlapping_allreduce"),
                "overlapping_allreduce is an argument of smp.DistributedModel(...) in the "
                "training script, not a launch parameter; the library refuses unknown launch "
                "parameters.",
                f"remove it here and write smp.DistributedModel(model, overlapping_allreduce="
                f"{mp.overlapping_allreduce}) in the script.",
            )
        )
    problems.extend(
        warning(
            job.where(name),
            f"{name} only affects TensorFlow; this is a PyTorch job.",
            "remove it.",
        )
        for name in _TENSORFLOW_ONLY
        if getattr(mp, name) is not None
    )
    return problems


_RULES: tuple[_Rule, ...] = (
    _rule_instance,
    _rule_container,
    _rule_parameters_available,
    _rule_processes_per_host,
    _rule_degrees_divide_world,
    _rule_sharded_data_parallel,
    _rule_ddp,
    _rule_precision,
    _rule_partitioning,
    _rule_placement,
    _rule_microbatches,
    _rule_batch_size,
    _rule_option_combinations,
    _rule_not_launch_options,
)


def check_model_parallel(
    mp: ModelParallel,
    *,
    instance_type: str,
    gpus_per_instance: int,
    instance_count: int,
    pytorch_version: str | None,
    hyperparameters: Mapping[str, object],
    path: str = "model_parallel",
) -> list[Problem]:
    """Run every model parallel rule and return all problems (errors and warnings).

    ``pytorch_version`` is the full container version with aliases resolved (``"1.12.1"``, not
    ``"1.12"``); None (a custom image) skips the checks that depend on the library version.
    Does not check the Training Compiler or ``instance_groups``; the caller does.
    """
    job = _Job(
        mp=mp,
        instance_type=instance_type,
        gpus=gpus_per_instance,
        instance_count=instance_count,
        pytorch_version=pytorch_version,
        library=_library_of(pytorch_version),
        hyperparameters=hyperparameters,
        path=path,
    )
    return [problem for rule in _RULES for problem in rule(job)]


# --------------------------------------------------------------------------------------------
# Resolution
# --------------------------------------------------------------------------------------------

_PARAMETERS_PATH = "distribution.smdistributed.modelparallel.parameters"


def resolve_model_parallel(
    mp: ModelParallel,
    *,
    gpus_per_instance: int,
    instance_count: int,
    pytorch_version: str | None,
    path: str = "model_parallel",
) -> tuple[dict, list[Injection], ParallelLayout]:
    """Turn checked options into the ``distribution`` the SageMaker SDK expects.

    Call only when ``check_model_parallel`` found no error. Only options the user set go into
    the parameters, plus injected values, each recorded with its reason. The result passes the
    SDK's own ``validate_mp_config`` (sagemaker 2.257).
    """
    layout = _layout(mp, gpus_per_instance, instance_count)
    injections: list[Injection] = []
    pipeline_key, why_partitions = _pipeline_degree_name(mp, _library_of(pytorch_version))
    parameters: dict[str, Any] = {}
    if why_partitions:
        degree = mp.pipeline_parallel_degree or 1
        parameters["partitions"] = degree
        source = join_path(path, "pipeline_parallel_degree")
        value = f"{source} ({degree})" if mp.pipeline_parallel_degree else "pipeline degree 1"
        injections.append(
            Injection(f"{_PARAMETERS_PATH}.partitions", degree, f"{value}: {why_partitions}")
        )

    for name, value in _set_options(mp).items():
        if name == "pipeline_parallel_degree":
            parameters[pipeline_key] = value
        elif name in _FLOAT_PARAMETERS:
            parameters[name] = float(value)  # the library type-checks: 1 is not a float to it
        elif name not in _MPI_OPTIONS:
            parameters[name] = value

    placement = mp.placement_strategy
    if placement in ("DPT", "TPD"):
        parameters["placement_strategy"] = _PLACEMENT_ROUTES[placement]
        injections.append(
            Injection(
                f"{_PARAMETERS_PATH}.placement_strategy",
                _PLACEMENT_ROUTES[placement],
                f"{join_path(path, 'placement_strategy')} {placement!r} is the same placement; "
                "the SageMaker SDK's validator accepts only 'cluster' and 'spread'",
            )
        )

    needs_ddp = _ddp_reason(mp, layout)
    if mp.ddp is None and needs_ddp:
        parameters["ddp"] = True
        injections.append(Injection(f"{_PARAMETERS_PATH}.ddp", True, needs_ddp))

    if not parameters:
        # The SDK sends mp_parameters only when they are non-empty, and the training toolkit
        # treats model parallelism as on only when mp_parameters is present and not "{}".
        parameters[pipeline_key] = 1
        injections.append(
            Injection(
                f"{_PARAMETERS_PATH}.{pipeline_key}",
                1,
                "the library's default, written out: with no parameters the SageMaker SDK drops "
                "mp_parameters and the training container does not treat the job as model "
                "parallel",
            )
        )

    mpi = {
        "enabled": True,
        "processes_per_host": layout.processes_per_host,
        "custom_mpi_options": mp.custom_mpi_options or _DEFAULT_CUSTOM_MPI_OPTIONS,
    }
    if mp.processes_per_host is None:
        injections.append(
            Injection(
                "distribution.mpi.processes_per_host",
                layout.processes_per_host,
                f"one process per GPU ({gpus_per_instance} GPUs per instance)",
            )
        )
    if mp.custom_mpi_options is None:
        injections.append(
            Injection(
                "distribution.mpi.custom_mpi_options",
                _DEFAULT_CUSTOM_MPI_OPTIONS,
                "AWS's recommended flag; keeps Docker shared-memory warnings out of the log",
            )
        )

    distribution = {
        "smdistributed": {"modelparallel": {"enabled": True, "parameters": parameters}},
        "mpi": mpi,
    }
    return distribution, injections, layout


def _pipeline_degree_name(mp: ModelParallel, library: Version | None) -> tuple[str, str]:
    """The key the pipeline degree goes under, and why, when it must be the old `partitions`.

    The SDK's validate_mp_config reads config["partitions"] whenever default_partition is set
    (KeyError without it), and libraries before 1.6 know the degree only as `partitions`
    (documented there as required). The library's config code reads `partitions` as an alias of
    pipeline_parallel_degree and accepts both names together only when they agree; that code is
    public for 1.11+ only, while `partitions` alone is what AWS's notebooks pass to every release.
    So in those two cases the degree goes under `partitions` alone (the user's value, or 1), and
    otherwise under pipeline_parallel_degree when the user set it.
    """
    if mp.default_partition is not None:
        return (
            "partitions",
            "the SageMaker SDK's validator reads 'partitions' with default_partition",
        )
    renamed_in = _PARAMETERS["partitions"].superseded_in
    if library is not None and renamed_in and library < Version(renamed_in):
        return "partitions", f"library {library} knows the pipeline degree only as 'partitions'"
    return "pipeline_parallel_degree", ""


def _ddp_reason(mp: ModelParallel, layout: ParallelLayout) -> str:
    if layout.tensor > 1:
        return f"tensor parallelism (degree {layout.tensor}) needs DDP"
    if layout.data_parallel > 1 and not mp.horovod:
        return f"data parallelism across {layout.data_parallel} model replicas needs DDP"
    for name in ("ddp_port", "ddp_dist_backend"):
        if getattr(mp, name) is not None:
            return f"{name} configures DDP; the SDK and the library need ddp set with it"
    return ""
