"""The rules: small pure functions from a job's context to the problems they find.

Every rule runs; their problems are gathered into one ConfigError. No rule raises for a user
mistake and none imports ``sagemaker``. A new check is one function added to ``RULES``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import attrs
from packaging.version import InvalidVersion, Version

import instance_catalog
from safe_estimators import _facts
from safe_estimators._limits import MapLimit, environment_limit, hyperparameters_limit
from safe_estimators._problems import Problem, did_you_mean, join_path, warning
from safe_estimators._secrets import secret_kind
from safe_estimators._spec import JobSpec, instance_type_name
from safe_estimators._versions import Container, framework_container, huggingface_container

LOCAL_TYPES = ("local", "local_gpu")


@attrs.frozen
class Context:
    """A spec with the facts the rules need: its catalog entry and its parsed parts."""

    spec: JobSpec
    instance: instance_catalog.InstanceType | None
    distribution: Mapping[str, Any]
    model_parallel: Any = None

    @property
    def instance_name(self) -> str:
        """The instance type checked: the name, or a pipeline parameter's default."""
        return instance_type_name(self.spec.instance_type)

    @property
    def parameterised(self) -> bool:
        """The instance type is a SageMaker Pipelines parameter, known only at run time."""
        return not isinstance(self.spec.instance_type, str)

    @property
    def gpu_derived(self) -> bool:
        """Values computed from the GPU count are injected (compiler, model parallelism)."""
        return self.compiler or self.model_parallel is not None

    @property
    def local(self) -> bool:
        return self.spec.instance_type in LOCAL_TYPES

    @property
    def compiler(self) -> bool:
        return self.spec.training_compiler is not None

    @property
    def gpus_per_instance(self) -> int | None:
        return self.instance.gpu_count if self.instance else None

    @property
    def total_gpus(self) -> int | None:
        gpus = self.gpus_per_instance
        return None if gpus is None else gpus * self.spec.instance_count

    @property
    def hardware(self) -> str:
        """``2 x ml.p3.8xlarge (4 GPUs each)``, for messages."""
        spec = self.spec
        gpus = self.gpus_per_instance
        each = "" if gpus is None else f" ({gpus} GPU{'s' if gpus != 1 else ''} each)"
        return f"{spec.instance_count} x {self.instance_name}{each}"

    @property
    def pytorch_version(self) -> str | None:
        """The full PyTorch version of the container, aliases resolved as the SDK does."""
        spec = self.spec
        if spec.estimator == "pytorch":
            if spec.framework_version is None:
                return None
            table = _facts.IMAGE_CONFIGS[("pytorch", self.compiler)]
            return framework_container(table, spec.framework_version).version
        if spec.pytorch_version is None or spec.transformers_version is None:
            return None
        table = _facts.IMAGE_CONFIGS[("huggingface", self.compiler)]
        base = huggingface_container(table, spec.transformers_version, spec.pytorch_version)[1]
        return base.version if base else None

    @property
    def wants_xla_distribution(self) -> bool:
        """A compiler job that needs the PyTorch/XLA launcher: more than one GPU in total."""
        return self.compiler and (self.total_gpus or 0) > 1


Rule = Callable[[Context], Iterator[Problem]]


def _version_at_least(version: str | None, minimum: str) -> bool:
    try:
        return version is not None and Version(version) >= Version(minimum)
    except InvalidVersion:
        return False


# --- instance ---------------------------------------------------------------------------------


def instance_type_known(ctx: Context) -> Iterator[Problem]:
    """The instance type must be a real SageMaker training type (or local mode)."""
    name = ctx.instance_name
    if ctx.instance is not None or ctx.local or (ctx.parameterised and not name):
        return
    try:
        instance_catalog.get(name)
    except instance_catalog.UnknownInstanceType as exc:
        close = ", ".join(exc.suggestions[:3])
        yield Problem(
            "instance_type",
            f"{name!r} is not a SageMaker training instance type.",
            f"did you mean {close}?" if close else "see `safe-estimators catalog` for the types.",
        )


def pipeline_parameter_instance_type(ctx: Context) -> Iterator[Problem]:
    """A run-time instance type must not make GPU-derived values silently wrong.

    Values such as GPU_NUM_DEVICES are fixed when the pipeline is defined. So the parameter needs
    a default to check against, and where GPU-derived values are injected, ``enum_values`` that
    all have the default's GPU count: SageMaker Pipelines refuses any other value at start.
    """
    if not ctx.parameterised:
        return
    parameter = ctx.spec.instance_type
    name = getattr(parameter, "name", "the parameter")
    if not ctx.instance_name:
        yield Problem(
            "instance_type",
            f"is the pipeline parameter {name!r} without a default_value; the instance type, "
            "and every value derived from its GPU count, cannot be checked.",
            f"give it a default: ParameterString({name!r}, default_value='ml.p3.8xlarge').",
        )
        return
    allowed = getattr(parameter, "enum_values", None) or []
    default_gpus = ctx.gpus_per_instance
    counts: dict[str, int | None] = {}
    for value in allowed:
        try:
            entry = instance_catalog.get(value)
        except (LookupError, TypeError):
            yield Problem(
                f"instance_type.enum_values.{value}",
                f"{value!r} is not a SageMaker training instance type.",
                did_you_mean(str(value), [t.name for t in instance_catalog.instance_types()]),
            )
            continue
        counts[value] = entry.gpu_count
        if ctx.compiler and entry.family not in _facts.COMPILER_FAMILIES:
            yield Problem(
                f"instance_type.enum_values.{value}",
                f"Training Compiler does not support the {entry.family} family.",
                f"allow only {', '.join(_facts.COMPILER_FAMILIES)} instance types.",
            )
    if not ctx.gpu_derived or default_gpus is None:
        return
    if not allowed:
        yield Problem(
            "instance_type",
            f"is the pipeline parameter {name!r}; values derived from its default "
            f"{ctx.instance_name} ({default_gpus} GPUs) would be wrong at run time for an "
            "instance with another GPU count.",
            f"pin the choices: ParameterString({name!r}, default_value={ctx.instance_name!r}, "
            f"enum_values=[...types with {default_gpus} GPUs...]).",
        )
        return
    for value, gpus in counts.items():
        if gpus is not None and gpus != default_gpus:
            yield Problem(
                f"instance_type.enum_values.{value}",
                f"has {gpus} GPUs but the default {ctx.instance_name} has {default_gpus}; the "
                "GPU-derived values fixed in the pipeline definition would be wrong for it.",
                f"allow only instance types with {default_gpus} GPUs, or build one step per "
                "GPU count.",
            )


# --- framework versions -----------------------------------------------------------------------


def _known(container: Container) -> str:
    return ", ".join(container.known)


def framework_versions(ctx: Context) -> Iterator[Problem]:
    """The versions must name a training container the installed SDK can resolve."""
    spec = ctx.spec
    if spec.image_uri is not None:
        return
    required = (
        ("framework_version", "py_version")
        if spec.estimator == "pytorch"
        else ("transformers_version", "py_version")
    )
    missing = [name for name in required if getattr(spec, name) is None]
    if spec.estimator == "huggingface" and spec.pytorch_version is spec.tensorflow_version is None:
        missing.append("pytorch_version")
    for name in missing:
        yield Problem(
            name,
            f"is required to pick a {spec.estimator} training container (no image_uri given).",
            f"set {name}; `safe-estimators plan` lists the versions the SDK knows.",
        )
    if missing or spec.tensorflow_version is not None:
        return
    family = ctx.instance.family if ctx.instance else ""
    if family.startswith(("trn", "inf")):
        return  # Neuron containers come from other SDK tables; the build step checks them.
    if spec.estimator == "pytorch":
        yield from _pytorch_versions(ctx)
    else:
        yield from _huggingface_versions(ctx)


def _compiler_words(compiler: bool) -> str:
    return "Training Compiler " if compiler else ""


def _pytorch_versions(ctx: Context) -> Iterator[Problem]:
    spec = ctx.spec
    assert spec.framework_version is not None
    table = _facts.IMAGE_CONFIGS[("pytorch", ctx.compiler)]
    container = framework_container(table, spec.framework_version)
    if container.version is None:
        other = framework_container(
            _facts.IMAGE_CONFIGS[("pytorch", not ctx.compiler)], spec.framework_version
        )
        yield Problem(
            "framework_version",
            f"the SageMaker SDK has no PyTorch {spec.framework_version} "
            f"{_compiler_words(ctx.compiler)}training container.",
            (
                f"PyTorch {spec.framework_version} exists only "
                f"{'without' if ctx.compiler else 'with'} Training Compiler; "
                if other.version
                else ""
            )
            + f"use one of: {_known(container)}.",
        )
        return
    yield from _py_version(ctx, container, f"PyTorch {container.version}")
    yield from _processor(ctx, container, f"PyTorch {container.version}")


def _huggingface_versions(ctx: Context) -> Iterator[Problem]:
    spec = ctx.spec
    assert spec.transformers_version is not None and spec.pytorch_version is not None
    table = _facts.IMAGE_CONFIGS[("huggingface", ctx.compiler)]
    outer, base = huggingface_container(table, spec.transformers_version, spec.pytorch_version)
    words = _compiler_words(ctx.compiler)
    if base is None:
        other, _ = huggingface_container(
            _facts.IMAGE_CONFIGS[("huggingface", not ctx.compiler)],
            spec.transformers_version,
            spec.pytorch_version,
        )
        only = (
            f"transformers {spec.transformers_version} exists only "
            f"{'without' if ctx.compiler else 'with'} Training Compiler"
            + ("" if ctx.compiler else " (training_compiler=True)")
            + "; "
            if other.version
            else ""
        )
        yield Problem(
            "transformers_version",
            f"the SageMaker SDK has no Hugging Face {words}training container for "
            f"transformers {spec.transformers_version}.",
            f"{only}use one of: {_known(outer)}.",
        )
        return
    if base.version is None:
        yield Problem(
            "pytorch_version",
            f"the Hugging Face {words}container for transformers {outer.version} is built with "
            f"PyTorch {_known(base)}, not {spec.pytorch_version}.",
            f"set pytorch_version to one of: {_known(base)}.",
        )
        return
    label = f"transformers {outer.version} with PyTorch {base.version}"
    yield from _py_version(ctx, base, label)
    yield from _processor(ctx, base, label)


def _py_version(ctx: Context, container: Container, label: str) -> Iterator[Problem]:
    if container.py_versions and ctx.spec.py_version not in container.py_versions:
        yield Problem(
            "py_version",
            f"{label} containers are built for {', '.join(container.py_versions)}, "
            f"not {ctx.spec.py_version!r}.",
            f"set py_version={container.py_versions[-1]!r}.",
        )


def _processor(ctx: Context, container: Container, label: str) -> Iterator[Problem]:
    if not container.processors or ctx.instance_name == "local":
        return
    if ctx.instance is None and not ctx.local:
        return  # unknown type: the instance_type rule reports it
    kind = "gpu" if ctx.local or (ctx.gpus_per_instance or 0) > 0 else "cpu"
    if kind not in container.processors:
        yield Problem(
            "instance_type",
            f"{label} containers exist for {'/'.join(container.processors).upper()} instances "
            f"only, and {ctx.instance_name} is a {kind.upper()} instance.",
            "pick a GPU instance such as ml.g5.xlarge or ml.p3.2xlarge"
            if kind == "cpu"
            else "pick a CPU instance such as ml.m5.xlarge",
        )


# --- Training Compiler ------------------------------------------------------------------------


def compiler_hardware(ctx: Context) -> Iterator[Problem]:
    """The compiler runs only on some GPU families, never in local mode."""
    if not ctx.compiler:
        return
    if ctx.local:
        yield Problem(
            "instance_type",
            f"Training Compiler does not run in local mode ({ctx.instance_name!r}).",
            "test the script locally without training_compiler, or use an ml.* GPU instance.",
        )
    elif ctx.instance is not None and ctx.instance.family not in _facts.COMPILER_FAMILIES:
        yield Problem(
            "instance_type",
            f"Training Compiler does not support the {ctx.instance.family} family "
            f"({ctx.instance_name}); it supports "
            f"{', '.join(_facts.COMPILER_FAMILIES)}.",
            "use e.g. ml.p3.2xlarge, ml.g5.xlarge or ml.p4d.24xlarge, or turn the compiler off.",
        )


def compiler_exclusions(ctx: Context) -> Iterator[Problem]:
    """The compiler cannot override the image, use instance groups or model parallelism."""
    if not ctx.compiler:
        return
    spec = ctx.spec
    if spec.image_uri is not None:
        yield Problem(
            "image_uri",
            "Training Compiler picks its own container; an image_uri override is not supported.",
            "remove image_uri and choose the container with the framework versions.",
        )
    if spec.instance_groups is not None:
        yield Problem(
            "instance_groups",
            "Training Compiler does not support heterogeneous clusters (instance_groups).",
            "use instance_type and instance_count instead.",
        )
    if ctx.model_parallel is not None or "smdistributed" in ctx.distribution:
        yield Problem(
            "training_compiler",
            "Training Compiler cannot be combined with the SageMaker distributed libraries "
            "(smdistributed model or data parallelism).",
            "turn off either the compiler or smdistributed.",
        )


def compiler_multi_gpu(ctx: Context) -> Iterator[Problem]:
    """Multi-GPU compiler jobs need a container recent enough for the PyTorch/XLA launcher."""
    if not ctx.wants_xla_distribution:
        return
    minimum = _facts.COMPILER_XLA_MIN_PYTORCH[ctx.spec.estimator]
    version = ctx.pytorch_version
    if version is not None and not _version_at_least(version, minimum):
        field = "pytorch_version" if ctx.spec.estimator == "huggingface" else "framework_version"
        yield Problem(
            field,
            f"{ctx.hardware} has {ctx.total_gpus} GPUs, but Training Compiler containers with "
            f"PyTorch {version} train on one GPU only; distributed compiler jobs need PyTorch "
            f">= {minimum} (the pytorchxla distribution).",
            "use transformers_version='4.21.1', pytorch_version='1.11.0', py_version='py38'"
            if ctx.spec.estimator == "huggingface"
            else "use framework_version='1.13.1', py_version='py39'",
        )


def compiler_distribution(ctx: Context) -> Iterator[Problem]:
    """Only the PyTorch/XLA distribution works with the compiler, spelled as the SDK reads it."""
    if not ctx.compiler:
        return
    for key in ctx.distribution:
        if key in _facts.XLA_MISSPELLINGS:
            yield warning(
                f"distribution.{key}",
                f"{key!r} is not read by the SageMaker SDK (AWS's troubleshooting page spells it "
                "this way); the SDK only honours 'pytorchxla', and ignores or rejects any other "
                "key, leaving the job on one GPU.",
                "write distribution={'pytorchxla': {'enabled': True}}; it was rewritten for you.",
            )
        elif key not in ("pytorchxla", "smdistributed"):
            yield Problem(
                f"distribution.{key}",
                f"Training Compiler supports only the PyTorch/XLA distribution, not {key!r}.",
                "remove it; multi-GPU compiler jobs get {'pytorchxla': {'enabled': True}}.",
            )
    xla = ctx.distribution.get("pytorchxla")
    if isinstance(xla, Mapping) and xla.get("enabled") is False and ctx.wants_xla_distribution:
        yield Problem(
            "distribution.pytorchxla.enabled",
            f"is false, so the job would train on 1 of its {ctx.total_gpus} GPUs "
            f"({ctx.hardware}).",
            "set it to True, or remove the distribution and let it be set.",
        )


def compiler_gpu_num_devices(ctx: Context) -> Iterator[Problem]:
    """GPU_NUM_DEVICES must equal the GPUs per instance ("Missing XLA configuration")."""
    if not ctx.compiler or ctx.gpus_per_instance is None:
        return
    given = ctx.spec.environment.get("GPU_NUM_DEVICES")
    if given is None or not isinstance(given, str):
        return
    if given.strip() != str(ctx.gpus_per_instance):
        yield Problem(
            "environment.GPU_NUM_DEVICES",
            f"is {given!r}, but {ctx.instance_name} has {ctx.gpus_per_instance} GPUs; "
            "PyTorch/XLA would start the wrong number of devices.",
            f"set it to \"{ctx.gpus_per_instance}\" or leave it out (it is set for you).",
        )


def compiler_debugging_tools(ctx: Context) -> Iterator[Problem]:
    """The profiler and the debugger hook slow compiled training; AWS advises turning them off."""
    if not ctx.compiler:
        return
    spec = ctx.spec
    if spec.disable_profiler is False:
        yield warning(
            "disable_profiler",
            "is False: SageMaker Debugger's profiler adds overhead that hides Training "
            "Compiler's speed-up.",
            "leave disable_profiler unset (it defaults to True for compiler jobs).",
        )
    if spec.debugger_hook_config not in (None, False):
        yield warning(
            "debugger_hook_config",
            "is set: the Debugger hook adds overhead that hides Training Compiler's speed-up.",
            "leave debugger_hook_config unset (it defaults to False for compiler jobs).",
        )


# --- distribution -----------------------------------------------------------------------------


def distribution_shape(ctx: Context) -> Iterator[Problem]:
    """Strategies and their keys must be ones the SDK reads (it silently ignores the rest)."""
    known = dict(_facts.DISTRIBUTION_KEYS)
    if ctx.compiler:
        known.update(dict.fromkeys(_facts.XLA_MISSPELLINGS, frozenset({"enabled"})))
    for key, value in ctx.distribution.items():
        path = join_path("distribution", key)
        if key not in known:
            yield Problem(
                path,
                f"{key!r} is not a distribution strategy the SageMaker SDK reads; it would be "
                "ignored silently.",
                did_you_mean(str(key), _facts.DISTRIBUTION_KEYS)
                or f"use one of: {', '.join(_facts.DISTRIBUTION_KEYS)}.",
            )
            continue
        if key == "instance_groups":
            continue
        if not isinstance(value, Mapping):
            yield Problem(path, f"must be a mapping like {{'enabled': True}}, got {value!r}.")
            continue
        for sub, subvalue in value.items():
            if sub not in known[key]:
                yield Problem(
                    join_path(path, sub),
                    f"{sub!r} is not read by the SageMaker SDK for {key}; it would be ignored.",
                    did_you_mean(str(sub), known[key]) or f"use: {', '.join(sorted(known[key]))}.",
                )
            elif sub == "enabled" and type(subvalue) is not bool:
                yield Problem(join_path(path, sub), f"must be true or false, got {subvalue!r}.")


def mpi_processes(ctx: Context) -> Iterator[Problem]:
    """MPI launches processes_per_host processes, one per GPU at most."""
    mpi = ctx.distribution.get("mpi")
    if not isinstance(mpi, Mapping) or "processes_per_host" not in mpi:
        return
    count = mpi["processes_per_host"]
    path = "distribution.mpi.processes_per_host"
    if type(count) is not int or count < 1:
        yield Problem(path, f"must be a positive whole number, got {count!r}.")
    elif ctx.gpus_per_instance and count > ctx.gpus_per_instance:
        yield Problem(
            path,
            f"is {count}, but {ctx.instance_name} has {ctx.gpus_per_instance} GPUs: "
            "more node-local processes than devices fail at start-up.",
            f"set it to {ctx.gpus_per_instance} (one process per GPU).",
        )


def distribution_needs_gpus(ctx: Context) -> Iterator[Problem]:
    """GPU launchers on a CPU instance start nothing useful."""
    if ctx.instance is None or ctx.instance.accelerator_kind is not None:
        return
    for key in ("pytorchxla", "pytorchddp", "smdistributed"):
        if key in ctx.distribution:
            yield Problem(
                f"distribution.{key}",
                f"needs GPUs, but {ctx.instance_name} has none.",
                "use a GPU instance (ml.g5.*, ml.p3.*, ml.p4d.*) or remove the distribution.",
            )


def torch_distributed_full_version(ctx: Context) -> Iterator[Problem]:
    """The SDK checks torch_distributed against full versions only: "2.0" is refused."""
    spec = ctx.spec
    if "torch_distributed" not in ctx.distribution or spec.estimator != "pytorch":
        return
    full = ctx.pytorch_version
    if spec.framework_version is not None and full is not None and full != spec.framework_version:
        yield Problem(
            "framework_version",
            f"{spec.framework_version!r} is a short alias of PyTorch {full}; the SageMaker SDK "
            "checks torch_distributed against full versions only and refuses the alias.",
            f"write framework_version={full!r}.",
        )


# --- cost and safety --------------------------------------------------------------------------


def spot_training(ctx: Context) -> Iterator[Problem]:
    """Managed spot needs max_wait >= max_run and checkpoints, or an interruption loses work."""
    spec = ctx.spec
    if not spec.use_spot_instances:
        return
    max_run = spec.max_run or _facts.DEFAULT_MAX_RUN
    if spec.max_wait is None:
        yield Problem(
            "max_wait",
            "is required with use_spot_instances=True (time to wait for spot capacity plus "
            "training time).",
            f"set max_wait to at least max_run ({max_run} s).",
        )
    elif spec.max_wait < max_run:
        yield Problem(
            "max_wait",
            f"is {spec.max_wait} s, less than max_run ({max_run} s"
            f"{'' if spec.max_run else ', the SDK default'}); SageMaker rejects the job.",
            f"set max_wait >= {max_run}, or lower max_run.",
        )
    if spec.checkpoint_s3_uri is None:
        yield Problem(
            "checkpoint_s3_uri",
            "is required with use_spot_instances=True: without checkpoints a spot "
            "interruption restarts training from scratch.",
            "set checkpoint_s3_uri='s3://<bucket>/<prefix>/checkpoints' and save checkpoints "
            "to /opt/ml/checkpoints in the script.",
        )


def _secrets_in(name: str, values: Mapping[str, Any]) -> Iterator[Problem]:
    for key, value in values.items():
        kind = secret_kind(str(key), value)
        if kind:
            yield Problem(
                join_path(name, key),
                f"looks like {kind}. {name} are shown in plain text by DescribeTrainingJob, the "
                "console and CloudTrail.",
                "store it in AWS Secrets Manager and pass the secret's name or ARN instead; "
                "read it in the script with boto3.",
            )


def no_secrets(ctx: Context) -> Iterator[Problem]:
    """Hyperparameters and environment variables are not secret: refuse credentials there."""
    yield from _secrets_in("hyperparameters", ctx.spec.hyperparameters)
    yield from _secrets_in("environment", ctx.spec.environment)


def _map_limits(name: str, entries: Mapping[str, str], limit: MapLimit, reserved: int) -> Iterator[
    Problem
]:
    allowed = limit.max_entries - reserved
    if len(entries) > allowed:
        extra = f" ({reserved} more are added by the SageMaker SDK)" if reserved else ""
        yield Problem(
            name,
            f"has {len(entries)} entries; CreateTrainingJob accepts {limit.max_entries}{extra}.",
            "move the rest into a configuration file in source_dir.",
        )
    for key, value in entries.items():
        path = join_path(name, key)
        if len(key) > limit.key_max:
            yield Problem(path, f"name is {len(key)} characters; the limit is {limit.key_max}.")
        elif not limit.key_pattern.fullmatch(key):
            yield Problem(
                path,
                f"{key!r} is not a valid name (CreateTrainingJob requires "
                f"{limit.key_pattern.pattern}).",
                "use letters, digits and underscores, not starting with a digit.",
            )
        if len(value) > limit.value_max:
            yield Problem(
                path,
                f"value is {len(value)} characters as sent; the limit is {limit.value_max}.",
                "put large values in a file in source_dir or S3 and pass its path.",
            )


def _encoded(value: object) -> str | None:
    # The SDK JSON-encodes every hyperparameter value (a string "x" is sent as "\"x\"").
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return None


def api_limits(ctx: Context) -> Iterator[Problem]:
    """Environment and hyperparameters must fit CreateTrainingJob's limits (botocore's model)."""
    hyper: dict[str, str] = {}
    for key, value in ctx.spec.hyperparameters.items():
        encoded = _encoded(value) if not hasattr(value, "to_string") else ""
        if encoded is None:
            yield Problem(
                join_path("hyperparameters", key),
                f"{type(value).__name__} values cannot be sent: the SDK JSON-encodes every "
                "hyperparameter.",
                "use a string, number, boolean, list or dict.",
            )
        else:
            hyper[str(key)] = encoded
    yield from _map_limits(
        "hyperparameters", hyper, hyperparameters_limit(), len(_facts.SDK_HYPERPARAMETERS)
    )
    env = {k: v for k, v in ctx.spec.environment.items() if isinstance(v, str)}
    yield from _map_limits("environment", env, environment_limit(), 0)


RULES: tuple[Rule, ...] = (
    instance_type_known,
    pipeline_parameter_instance_type,
    framework_versions,
    compiler_hardware,
    compiler_exclusions,
    compiler_multi_gpu,
    compiler_distribution,
    compiler_gpu_num_devices,
    compiler_debugging_tools,
    distribution_shape,
    mpi_processes,
    distribution_needs_gpus,
    torch_distributed_full_version,
    spot_training,
    no_secrets,
    api_limits,
)


def run_rules(ctx: Context, rules: tuple[Rule, ...] = RULES) -> list[Problem]:
    """Run every rule and gather all their problems."""
    return [problem for rule in rules for problem in rule(ctx)]
