"""Rules for SageMaker Training Compiler jobs."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from safe_estimators._context import Context
from safe_estimators._distributions import is_enabled
from safe_estimators._facts import tables
from safe_estimators._facts.targets import ESTIMATOR, only_for
from safe_estimators._problems import REMOVE, Fix, Problem, count, removing, setting, warning
from safe_estimators._spec import JobSpec

# Instance types of the compiler's families, offered (each checked again) to a job on another.
_COMPILER_TYPES = ("ml.g5.xlarge", "ml.p3.2xlarge", "ml.p4d.24xlarge")


def _compiler_off(spec: JobSpec) -> Fix:
    """Training Compiler off, under the name the job turned it on with. The spec reads
    compiler_config (AWS's spelling) into training_compiler as well, so that one goes too."""
    if spec.compiler_config is None:
        return removing("training_compiler", why="Training Compiler off")
    return Fix(
        (("compiler_config", REMOVE), ("training_compiler", REMOVE)),
        "remove compiler_config (Training Compiler off)",
    )


@only_for(ESTIMATOR)
def compiler_hardware(ctx: Context) -> Iterator[Problem]:
    """The compiler runs only on some GPU families, never in local mode."""
    if not ctx.compiler:
        return
    if ctx.local:
        yield Problem(
            "instance_type",
            f"Training Compiler does not run in local mode ({ctx.instance_name!r}).",
            "",
            fixes=(
                Fix(_compiler_off(ctx.spec).changes, "test the script locally without "
                    "Training Compiler (remove it)"),
                *(setting(("instance_type", name)) for name in _COMPILER_TYPES),
            ),
        )
    elif ctx.instance is not None and ctx.instance.family not in tables.COMPILER_FAMILIES:
        yield Problem(
            "instance_type",
            f"Training Compiler does not support the {ctx.instance.family} family "
            f"({ctx.instance_name}); it supports "
            f"{', '.join(tables.COMPILER_FAMILIES)}.",
            f"use another instance type of {', '.join(tables.COMPILER_FAMILIES)}.",
            fixes=(
                *(setting(("instance_type", name)) for name in _COMPILER_TYPES),
                _compiler_off(ctx.spec),
            ),
        )


@only_for(ESTIMATOR)
def compiler_exclusions(ctx: Context) -> Iterator[Problem]:
    """The compiler cannot override the image, use instance groups or model parallelism."""
    if not ctx.compiler:
        return
    spec = ctx.spec
    if spec.image_uri is not None:
        yield Problem(
            "image_uri",
            "Training Compiler picks its own container; an image_uri override is not supported.",
            "choose the container with the framework versions.",
            fixes=(removing("image_uri"),),
        )
    if spec.instance_groups is not None:
        yield Problem(
            "instance_groups",
            "Training Compiler does not support heterogeneous clusters (instance_groups).",
            "use instance_type and instance_count instead.",
            fixes=tuple(
                Fix(
                    (("instance_groups", REMOVE), ("instance_type", group.instance_type),
                     ("instance_count", group.instance_count)),
                    f"replace instance_groups with instance_type={group.instance_type!r}, "
                    f"instance_count={group.instance_count} (the group "
                    f"{group.instance_group_name!r})",
                )
                for group in spec.instance_groups
            ),
        )
    if ctx.model_parallel is not None or "smdistributed" in ctx.distribution:
        yield Problem(
            "training_compiler",
            "Training Compiler cannot be combined with the SageMaker distributed libraries "
            "(smdistributed model or data parallelism).",
            "turn off either the compiler or smdistributed.",
            fixes=(
                _compiler_off(spec),
                removing(
                    *(["model_parallel"] if spec.model_parallel is not None else []),
                    *(["distribution.smdistributed"] if "smdistributed" in ctx.distribution
                      else []),
                ),
            ),
        )


@only_for(ESTIMATOR)
def compiler_multi_gpu(ctx: Context) -> Iterator[Problem]:
    """Multi-GPU compiler jobs need a container recent enough for the PyTorch/XLA launcher."""
    if not ctx.compiler or ctx.xla_launcher_available:
        return
    xla = ctx.distribution.get("pytorchxla")
    if ctx.trains_tensorflow:
        # The SDK refuses pytorchxla with tensorflow_version; a TensorFlow compiler job
        # distributes inside its script, so nothing else is needed.
        if is_enabled(xla):
            yield Problem(
                "distribution.pytorchxla",
                f"is the PyTorch/XLA launcher, but this job trains with TensorFlow "
                f"{ctx.spec.tensorflow_version}; the SageMaker SDK refuses the job.",
                "",
                fixes=(
                    removing("distribution.pytorchxla"),
                    Fix(
                        (("tensorflow_version", REMOVE), ("transformers_version", "4.21.1"),
                         ("pytorch_version", "1.11.0"), ("py_version", "py38")),
                        "use transformers_version='4.21.1', pytorch_version='1.11.0', "
                        "py_version='py38' (without tensorflow_version) for PyTorch/XLA",
                    ),
                ),
            )
        return
    minimum = tables.COMPILER_XLA_MIN_PYTORCH[ctx.spec.estimator]
    version = ctx.pytorch_version
    field = "pytorch_version" if ctx.spec.estimator == "huggingface" else "framework_version"
    newer = setting(
        *(
            (("transformers_version", "4.21.1"), ("pytorch_version", "1.11.0"),
             ("py_version", "py38"))
            if ctx.spec.estimator == "huggingface"
            else (("framework_version", "1.13.1"), ("py_version", "py39"))
        ),
        why="a container with the pytorchxla launcher",
    )
    if is_enabled(xla):
        yield Problem(
            "distribution.pytorchxla",
            f"needs PyTorch >= {minimum} in Training Compiler containers; this one has {version}, "
            "and the SageMaker SDK refuses the job.",
            "",
            fixes=(newer, removing("distribution.pytorchxla")),
        )
        return
    if (ctx.total_gpus or 0) <= 1:
        return
    # AWS's multi-GPU notebooks for these versions start the processes themselves, from a
    # launcher script given as the entry point (on one instance, and on several: the multi-node
    # notebook of Dec. 2021 ran 2 x ml.p3.16xlarge on PyTorch 1.9.0 through the container's
    # `torch_xla.distributed.sm_dist`); the SDK builds both. A plain script uses one GPU.
    several = ctx.instance_count > 1
    yield Problem(
        field,
        f"{ctx.hardware} has {ctx.total_gpus} GPUs, but Training Compiler containers with PyTorch "
        f"{version} have no multi-GPU launcher (pytorchxla needs >= {minimum}): unless the entry "
        "point starts one process per GPU itself, as AWS's example launcher scripts do"
        + (" (across instances: `python -m torch_xla.distributed.sm_dist`)" if several else "")
        + ", the job trains on one GPU" + (" of each instance, and the instances train "
        "independent copies." if several else "."),
        "use an entry point that starts one process per GPU, or "
        + ("one instance with one GPU." if several else "an instance type with one GPU."),
        "warning",
        fixes=(newer,),
    )


@only_for(ESTIMATOR)
def compiler_distribution(ctx: Context) -> Iterator[Problem]:
    """Only the PyTorch/XLA distribution works with the compiler, spelled as the SDK reads it."""
    if not ctx.compiler:
        return
    for key in ctx.distribution:
        if key in tables.XLA_MISSPELLINGS:
            yield Problem(
                f"distribution.{key}",
                f"{key!r} is not read by the SageMaker SDK (AWS's troubleshooting page spells it "
                "this way); the SDK only honours 'pytorchxla', and ignores or rejects any other "
                "key, leaving the job on one GPU; it was rewritten for you.",
                "",
                "warning",
                fixes=(
                    Fix(
                        ((f"distribution.{key}", REMOVE), ("distribution.pytorchxla",
                                                            {"enabled": True})),
                        f"write distribution={{'pytorchxla': {{'enabled': True}}}} instead of "
                        f"{key!r}",
                    ),
                ),
            )
        elif key not in ("pytorchxla", "smdistributed"):
            yield Problem(
                f"distribution.{key}",
                f"Training Compiler supports only the PyTorch/XLA distribution, not {key!r}; "
                "multi-GPU compiler jobs get {'pytorchxla': {'enabled': True}}.",
                "",
                fixes=(removing(f"distribution.{key}"),),
            )
    xla = ctx.distribution.get("pytorchxla")
    enabled = xla.get("enabled") if xla is not None and isinstance(xla, Mapping) else None
    if enabled is False and ctx.wants_xla_distribution:
        yield Problem(
            "distribution.pytorchxla.enabled",
            f"is false, so the job would train on 1 of its {ctx.total_gpus} GPUs ({ctx.hardware}).",
            "",
            fixes=(
                setting(("distribution.pytorchxla.enabled", True)),
                removing("distribution.pytorchxla", why="it is set for you"),
            ),
        )


@only_for(ESTIMATOR)
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
            f"is {given!r}, but {ctx.instance_name} has {count(ctx.gpus_per_instance, 'GPU')}; "
            "PyTorch/XLA would start the wrong number of devices.",
            "",
            fixes=(
                *(
                    [setting(("environment.GPU_NUM_DEVICES", str(ctx.gpus_per_instance)))]
                    if ctx.gpus_per_instance
                    else []
                ),
                removing("environment.GPU_NUM_DEVICES", why="it is set for you"),
            ),
        )


@only_for(ESTIMATOR)
def compiler_debugging_tools(ctx: Context) -> Iterator[Problem]:
    """The profiler and the debugger hook slow compiled training; AWS advises turning them off."""
    if not ctx.compiler:
        return
    spec = ctx.spec
    if spec.disable_profiler is False:
        yield Problem(
            "disable_profiler",
            "is False: SageMaker Debugger's profiler adds overhead that hides Training "
            "Compiler's speed-up.",
            "",
            "warning",
            fixes=(removing("disable_profiler", why="it defaults to True for compiler jobs"),),
        )
    if spec.debugger_hook_config not in (None, False):
        yield Problem(
            "debugger_hook_config",
            "is set: the Debugger hook adds overhead that hides Training Compiler's speed-up.",
            "",
            "warning",
            fixes=(
                removing("debugger_hook_config", why="it defaults to False for compiler jobs"),
            ),
        )


def sdk_class_names(value: object) -> set[str]:
    """The class names of an SDK object and its bases (known without importing sagemaker)."""
    return {cls.__name__ for cls in type(value).__mro__}


def _profiler_rules(spec: JobSpec) -> bool:
    rules = spec.extra.get("rules")
    return isinstance(rules, list | tuple) and any(
        "ProfilerRule" in sdk_class_names(rule) for rule in rules
    )


def _debugger_rules(spec: JobSpec) -> bool:
    rules = spec.extra.get("rules")
    return isinstance(rules, list | tuple) and any(
        "ProfilerRule" not in sdk_class_names(rule) and "RuleBase" in sdk_class_names(rule)
        for rule in rules
    )


def profiling_asked(spec: JobSpec, field: str) -> bool:
    """The user asked for what a compiler default would turn off, so the default must not be set.

    The SDK's fit() raises "profiler_config.disable_profiler cannot be False when
    disable_profiler is True" and "ProfilerRule cannot be set when disable_profiler is True";
    Debugger rules without the hook have no tensors to analyse.
    """
    if field == "disable_profiler":
        config = spec.extra.get("profiler_config")
        wants_config = config is not None and getattr(config, "disable_profiler", False) is not True
        return wants_config or _profiler_rules(spec)
    return field == "debugger_hook_config" and _debugger_rules(spec)


@only_for(ESTIMATOR)
def compiler_profiling_asked(ctx: Context) -> Iterator[Problem]:
    """A compiler job that asks for profiling or Debugger rules keeps them, with a warning."""
    if not ctx.compiler:
        return
    spec = ctx.spec
    if spec.disable_profiler is None and profiling_asked(spec, "disable_profiler"):
        what = "profiler_config" if spec.extra.get("profiler_config") is not None else "rules"
        yield warning(
            what,
            "asks for the SageMaker Debugger profiler, so disable_profiler=True is not set for "
            "this compiler job (the SDK would refuse both at fit()); the profiler's overhead "
            "hides Training Compiler's speed-up.",
            "drop the profiler for compiled runs, or keep it knowingly.",
            fixes=(removing("profiler_config"),) if what == "profiler_config" else (),
        )
    if spec.debugger_hook_config is None and profiling_asked(spec, "debugger_hook_config"):
        yield warning(
            "rules",
            "has Debugger rules, which need the Debugger hook, so debugger_hook_config=False is "
            "not set for this compiler job; the hook's overhead hides the compiler's speed-up.",
            "drop the Debugger rules for compiled runs, or keep them knowingly.",
        )
