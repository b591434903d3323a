"""The typed model parallel options (SMP v1 and v2): ``ModelParallel`` and its single-value checks.

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
_any_int = _expect("an int", _is_int, "write the seed as a whole number, e.g. 12345.")


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
    # The library's schema (config.yaml) and the SDK's validate_mp_config also list the internal
    # schedule "_only_forward", so a job with it runs.
    "pipeline": _one_of("interleaved", "simple", "_only_forward"),
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
    "hybrid_shard_degree": _non_negative_int,
    "sm_activation_offloading": _bool,
    "fsdp_cache_flush_warnings": _bool,
    "allow_empty_shards": _bool,
    "context_parallel_degree": _positive_int,
    "expert_parallel_degree": _positive_int,
    "random_seed": _any_int,
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
    """Options of the SageMaker model parallel library (SMP) for PyTorch, v1 and v2.

    One intent for both library generations: the container's PyTorch version decides which one
    runs. PyTorch 2.0.0 and older ship the library v1 (launched by MPI); PyTorch 2.0.1 and later
    run the library v2 (``torch.sagemaker``, launched by torchrun) from its own image, which
    exists for PyTorch 2.0.1, 2.1.2, 2.2.0, 2.3.1, 2.4.1 and 2.5.1 (with the installed SageMaker
    SDK). Each option is checked against the library release the container ships.

    Every field defaults to None, meaning "not set": only the options you set (plus values
    safe_estimators must add, each recorded with its reason) reach the job. Wrong single values
    raise ``ConfigError`` at construction; relations between values, the instance and the
    container are checked when the estimator is built.

    **Library v2** (PyTorch >= 2.0.1): ``hybrid_shard_degree`` (0 to the number of GPUs; the
    sharded data parallel degree of FSDP), ``tensor_parallel_degree``,
    ``context_parallel_degree`` (library 2.5.0+, at most ``hybrid_shard_degree``),
    ``expert_parallel_degree`` (2.3.0+, not with tensor parallelism), ``sm_activation_offloading``,
    ``activation_loading_horizon``, ``fsdp_cache_flush_warnings``, ``allow_empty_shards``,
    ``random_seed``. Tensor, context and expert degrees each divide the GPUs per instance, and
    hybrid shard x tensor x expert divides the world size. A v1-only option on a v2 container is
    an error when what it asks for would silently not happen (a pipeline degree above 1,
    ``sharded_data_parallel_degree`` above 1, whose v2 name is ``hybrid_shard_degree``, fp16/bf16)
    and otherwise a warning that it has no effect.

    **Library v1** (PyTorch <= 2.0.0), degrees and layout: ``pipeline_parallel_degree``
    (``partitions`` in AWS's notebooks is read as the same option), ``tensor_parallel_degree``,
    ``sharded_data_parallel_degree``, ``microbatches``, ``active_microbatches``, ``pipeline``
    ("interleaved"/"simple"), ``placement_strategy`` ("cluster", "spread" or a permutation of
    D, P, T), ``ddp``, ``ddp_port``, ``ddp_dist_backend`` ("auto"/"nccl"), ``horovod``.
    Pipeline x tensor must divide the world size (instances x processes per host).

    Partitioning: ``auto_partition``, ``default_partition``, ``optimize`` ("speed"/"memory"),
    ``memory_weight`` (0.0 to 1.0), ``skip_tracing``; TensorFlow-only ``contiguous``,
    ``load_partition``, ``partition_file``.

    Precision: ``fp16`` (library 1.10+), ``bf16`` (1.11+, sharded data parallelism only, on
    accelerators with bf16: A100 and later, not V100 or T4), ``fp16_params`` (the pre-1.10
    spelling).

    Memory saving: ``offload_activations``, ``activation_loading_horizon``,
    ``shard_optimizer_state``, ``delayed_parameter_initialization``, ``prescaled_batch``,
    ``tensor_parallel_seed``.

    Sharded data parallelism (1.11+): ``sdp_reduce_bucket_size``,
    ``sdp_param_persistence_threshold``, ``sdp_max_live_parameters`` (ints),
    ``sdp_hierarchical_allgather``, ``sdp_gradient_clipping``.

    Pipeline execution: ``deterministic_server``, ``fast_mode``, ``static_mode``.

    ``overlapping_allreduce``: a launch parameter of the library's first releases (AWS's BERT
    tutorial passes it on the PyTorch 1.6.0 container); later releases take it as an argument of
    ``smp.DistributedModel(...)`` and refuse unknown launch parameters.

    MPI (v1): ``processes_per_host`` (defaults to the GPUs per instance) and
    ``custom_mpi_options``.
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

    hybrid_shard_degree: int | None = _option()
    sm_activation_offloading: bool | None = _option()
    fsdp_cache_flush_warnings: bool | None = _option()
    allow_empty_shards: bool | None = _option()
    context_parallel_degree: int | None = _option()
    expert_parallel_degree: int | None = _option()
    random_seed: int | None = _option()

    # Where the user wrote each option (dotted path), when it came from a dict or a raw
    # distribution; problems then point there. Not part of equality.
    _origins: Mapping[str, str] = attrs.field(factory=dict, eq=False, repr=False, alias="_origins")
    # The raw distribution's torch_distributed.enabled (SMP v2's launcher) when the options came
    # from one that has the block; None otherwise. Not part of equality.
    _torch_distributed: object = attrs.field(
        default=None, eq=False, repr=False, alias="_torch_distributed"
    )
    # Whether that raw distribution has an mpi block (the library v1's launcher).
    _mpi: bool = attrs.field(default=False, eq=False, repr=False, alias="_mpi")


OPTION_NAMES: tuple[str, ...] = tuple(
    a.name for a in attrs.fields(ModelParallel) if not a.name.startswith("_")
)
assert set(OPTION_NAMES) == set(VALUE_CHECKS), "every option needs a value check"


def set_options(mp: ModelParallel) -> dict[str, Any]:
    """The options the user set, in declaration order."""
    return {n: getattr(mp, n) for n in OPTION_NAMES if getattr(mp, n) is not None}
