"""The typed SMP v1 options: ``ModelParallel`` and the checks of its single values.

Each option's value check is one entry in ``VALUE_CHECKS``; the attrs validators and the parsers
(``parse``) share them, so a wrong value reads the same from Python, a dict or a
raw distribution. Relations between values are the rules' business (``rules``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from safe_estimators._distributions.model_parallel.facts import (
    PLACEMENT_PERMUTATIONS,
    PLACEMENT_ROUTES,
)
from safe_estimators._problems import ConfigError, Problem, did_you_mean, join_path

# --------------------------------------------------------------------------------------------
# Single-value checks (shared by the attrs validators and the parsers)
# --------------------------------------------------------------------------------------------

_Verdict = tuple[str, str] | None  # (message, hint) when the value is wrong


def kind(value: object) -> str:
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
            return f"expected an int >= {low}, got {kind(value)}.", _int_hint(value)
        assert isinstance(value, int)
        if value < low:
            return f"expected an int >= {low}, got {value}.", f"use {low} or more."
        return None

    return check


def _expect(
    what: str, accepts: Callable[[object], bool], hint: str
) -> Callable[[object], _Verdict]:
    """A check that reports "expected <what>, got <value> (<type>)." with one fixed hint."""

    def check(value: object) -> _Verdict:
        return None if accepts(value) else (f"expected {what}, got {kind(value)}.", hint)

    return check


_port = _expect(
    "a TCP port (an int from 0 to 65535)",
    lambda v: _is_int(v) and 0 <= v <= 65535,  # type: ignore[operator]
    "write the port as an int, e.g. 29500.",
)
_bool = _expect(
    "True or False",
    lambda v: type(v) is bool,
    "use a real bool (Python True/False, JSON true/false); the library type-checks it.",
)
_unit_interval = _expect(
    "a number from 0.0 to 1.0",
    lambda v: _is_number(v) and 0.0 <= v <= 1.0,  # type: ignore[operator]
    "0.0 balances only computation, 1.0 only memory; the library default is 0.8.",
)
_positive_number = _expect(
    "a number > 0",
    lambda v: _is_number(v) and math.isfinite(v) and v > 0,  # type: ignore[operator,arg-type]
    "the library default is 1.0.",
)
_text = _expect("a string", lambda v: isinstance(v, str), "write the value as a string.")


def _one_of(*choices: str) -> Callable[[object], _Verdict]:
    def check(value: object) -> _Verdict:
        if value not in choices:
            hint = did_you_mean(str(value), choices) if isinstance(value, str) else ""
            return f"expected one of {', '.join(map(repr, choices))}, got {kind(value)}.", (
                hint or f"use one of {', '.join(map(repr, choices))}."
            )
        return None

    return check


def _placement(value: object) -> _Verdict:
    if isinstance(value, str) and (value in PLACEMENT_ROUTES or value in PLACEMENT_PERMUTATIONS):
        return None
    choices = ["cluster", "spread", *sorted(PLACEMENT_PERMUTATIONS)]
    hint = ""
    if isinstance(value, str):
        upper = value.upper()
        if upper in PLACEMENT_PERMUTATIONS or value.lower() in PLACEMENT_ROUTES:
            hint = f"write {upper if upper in PLACEMENT_PERMUTATIONS else value.lower()!r}."
        else:
            hint = did_you_mean(value, choices)
    return f"expected 'cluster', 'spread' or a permutation of D, P, T, got {kind(value)}.", (
        hint or "use 'cluster' (= 'DPT') or 'spread' (= 'TPD')."
    )


_positive_int = _int_at_least(1)
_non_negative_int = _int_at_least(0)

# How each option's single value is checked.
VALUE_CHECKS: dict[str, Callable[[object], _Verdict]] = {
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


def value_problem(name: str, value: object, path: str) -> Problem | None:
    verdict = VALUE_CHECKS[name](value)
    return Problem(path, *verdict) if verdict else None


def _validate(instance: object, attribute: attrs.Attribute, value: object) -> None:
    if value is None:
        return
    problem = value_problem(attribute.name, value, join_path("model_parallel", attribute.name))
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


OPTION_NAMES: tuple[str, ...] = tuple(
    a.name for a in attrs.fields(ModelParallel) if not a.name.startswith("_")
)
assert set(OPTION_NAMES) == set(VALUE_CHECKS), "every option needs a value check"


def set_options(mp: ModelParallel) -> dict[str, Any]:
    """The options the user set, in declaration order."""
    return {n: getattr(mp, n) for n in OPTION_NAMES if getattr(mp, n) is not None}
