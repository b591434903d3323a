"""From a typed spec to a resolved job: checked, with every safe default injected and recorded.

Pure: no ``sagemaker`` import. The result is plain estimator keyword arguments that the build
step hands to the SDK unchanged.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

import instance_catalog
from safe_estimators._bounds import MAX_VERSION_CHARS
from safe_estimators._context import LOCAL_TYPES, Context
from safe_estimators._distributions import is_enabled
from safe_estimators._distributions.instance_groups.spec import (
    launch_group,
    named_groups,
    total_instances,
)
from safe_estimators._distributions.launchers import LAUNCHER_RULES, resolve_launchers
from safe_estimators._facts import tables
from safe_estimators._facts.sdk_files import default_target, sdk_generation
from safe_estimators._facts.targets import ESTIMATOR, FINE_TUNING, REMOTE_FUNCTION
from safe_estimators._memory import check_memory, job_of
from safe_estimators._problems import (
    REMOVE,
    ConfigError,
    Fix,
    Problem,
    changed,
    count,
    fix_hint,
    own_hint,
    problem_source,
    tagged,
)
from safe_estimators._recipes import recipe_arguments, recipe_of
from safe_estimators._resolved import Explanation, Injection
from safe_estimators._rules import RECIPE_JOB_RULES, run_rules
from safe_estimators._rules.compiler import profiling_asked
from safe_estimators._rules.resources import warm_pool_injections
from safe_estimators._rules.targets import estimator_needs_sdk2, recipe_needs_estimator
from safe_estimators._secrets import is_secret_problem, secrets_in_arguments
from safe_estimators._spec import (
    SPEC_FIELDS,
    CountValue,
    InstanceTypeValue,
    JobSpec,
    TrainingCompiler,
    count_of,
    in_own_words,
    instance_type_name,
    judged_by_default,
    skipped_paths,
    structure_spec,
    value_of,
)

if TYPE_CHECKING:  # imported where used: a spec without a local script never loads the checks
    from safe_estimators._distributions.model_parallel import ParallelLayout
    from safe_estimators._memory import MemoryEstimate
    from safe_estimators._script_checks import Finding, ScriptContext

# Spec fields handed to the estimator as they are (when set).
_PASSED_THROUGH = (
    "entry_point", "source_dir", "role", "instance_type", "instance_count", "py_version",
    "framework_version", "transformers_version", "pytorch_version", "tensorflow_version",
    "image_uri", "instance_groups", "use_spot_instances", "max_run", "max_wait",
    "checkpoint_s3_uri",
)  # fmt: skip


@attrs.frozen
class ResolvedJob:
    """A checked job: the estimator's keyword arguments and the record of what was injected."""

    spec: JobSpec
    kwargs: dict[str, Any]
    training_compiler: TrainingCompiler | None
    injections: tuple[Injection, ...]
    warnings: tuple[Problem, ...]
    instance: instance_catalog.InstanceType | None
    layout: ParallelLayout | None = None
    script_findings: tuple[Finding, ...] = ()
    memory: MemoryEstimate | None = None

    @property
    def estimator(self) -> str:
        return self.spec.estimator

    @property
    def target(self) -> str:
        """What the job is built as (``Context.target``)."""
        return self.spec.target or default_target()


def _lookup(instance_type: str) -> instance_catalog.InstanceType | None:
    if instance_type in LOCAL_TYPES or not instance_type:
        return None
    try:
        return instance_catalog.get(instance_type)
    except (LookupError, TypeError):
        return None  # the instance_type rule reports it with suggestions


@problem_source(
    "model-parallel-options",
    "Model parallel options (model_parallel=, or distribution['smdistributed']['modelparallel']"
    " with its parameters dict or JSON file) must be written once, be options the library "
    "knows with values of their types, and sit beside an MPI or torch_distributed block the "
    "SDK reads.",
)
def _model_parallel(spec: JobSpec) -> tuple[Any, dict[str, Any], list[Problem]]:
    """The typed model-parallel options from either place the user may have written them."""
    if spec.model_parallel is None and not _names_model_parallel(spec.distribution):
        return None, dict(spec.distribution or {}), []  # as split_distribution finds it
    from safe_estimators._distributions.model_parallel.parse import (
        attach_launcher,
        parse_model_parallel,
        split_distribution,
    )

    problems: list[Problem] = []
    from_distribution, rest, found = split_distribution(spec.distribution or {})
    problems += found
    from_argument, found = parse_model_parallel(spec.model_parallel)
    problems += found
    if from_argument is not None:
        from_argument, found = attach_launcher(from_argument, rest)
        problems += found
    if from_argument is not None and from_distribution is not None:
        problems.append(
            Problem(
                "model_parallel",
                "is given twice: as model_parallel= and inside distribution['smdistributed'].",
                "keep one of them (model_parallel= is checked the same way and is shorter).",
            )
        )
    return from_argument or from_distribution, rest, problems


def _names_model_parallel(distribution: object) -> bool:
    """Whether a raw ``distribution`` may hold model parallelism (the library's modules and
    classes load only then): anything but None or a mapping without
    ``smdistributed.modelparallel``."""
    if distribution is None:
        return False
    if not isinstance(distribution, Mapping):
        return True
    smd = distribution.get("smdistributed")
    return isinstance(smd, Mapping) and "modelparallel" in smd


@problem_source("model-parallel")
def _model_parallel_rules(ctx: Context) -> list[Problem]:
    """Model parallelism needs one homogeneous cluster (not instance_groups); on a known
    instance type the rules of the library the container ships run (their ids are smp-v1-* and
    smp-v2-*)."""
    if ctx.model_parallel is None:
        return []
    problems: list[Problem] = []
    if ctx.spec.instance_groups is not None:
        problems.append(
            Problem(
                "instance_groups",
                "model parallelism needs one homogeneous cluster; instance_groups is not "
                "supported with smdistributed model parallelism.",
                "use instance_type and instance_count instead.",
            )
        )
    if ctx.instance is None:
        return problems  # local mode or unknown type: reported elsewhere
    from safe_estimators._distributions.model_parallel.dispatch import check_model_parallel

    return problems + check_model_parallel(
        ctx.model_parallel,
        instance_type=ctx.instance_name,
        gpus_per_instance=ctx.instance.gpu_count,
        instance_count=ctx.instance_count,
        pytorch_version=ctx.pytorch_version,
        hyperparameters=ctx.spec.hyperparameters,
        framework_version=ctx.written_pytorch_version,
        estimator=ctx.spec.estimator,
        py_version=ctx.spec.py_version,
        entry_point=ctx.spec.entry_point,
        image_uri=ctx.spec.image_uri,
    )


def script_context(ctx: Context) -> ScriptContext:
    """What the script checks need to know about the job."""
    from safe_estimators._script_checks import ScriptContext

    mp = ctx.model_parallel
    spec = ctx.spec
    launcher, per_host = _script_launcher(ctx)
    options = _smp_options(spec) if launcher == "smp-v2" else {}
    checkpoint_dir = spec.extra.get("checkpoint_local_path")
    if not isinstance(checkpoint_dir, str) or not checkpoint_dir:
        checkpoint_dir = "/opt/ml/checkpoints"
    return ScriptContext(
        training_compiler=ctx.compiler,
        xla_distributed=ctx.wants_xla_distribution,
        gpus_per_instance=ctx.gpus_per_instance,
        model_parallel=mp is not None and launcher != "smp-v2",
        model_parallel_fp16=bool(
            mp is not None and launcher != "smp-v2" and (mp.fp16 or mp.fp16_params)
        ),
        launcher=launcher,
        processes=None if per_host is None else per_host * ctx.instance_count,
        instance_type=ctx.instance_name or None,
        pytorch_version=_container_pytorch(ctx),
        tensor_parallel_degree=_degree(options, "tensor_parallel_degree", 1),
        context_parallel_degree=_degree(options, "context_parallel_degree", 1),
        expert_parallel_degree=_degree(options, "expert_parallel_degree", 1),
        hybrid_shard_degree=_degree(options, "hybrid_shard_degree", 0),
        activation_offloading_set="sm_activation_offloading" in options,
        use_spot_instances=value_of(spec.use_spot_instances) is True,
        checkpoint_dir=checkpoint_dir,
        checkpoint_in_hyperparameters=any(
            isinstance(v, str) and checkpoint_dir in v for v in spec.hyperparameters.values()
        ),
        transformers_version=spec.transformers_version if spec.estimator == "huggingface" else None,
        accelerate_device_map_bypass=str(
            value_of(spec.environment.get("ACCELERATE_BYPASS_DEVICE_MAP")) or ""
        ).lower() == "true",
        instance_groups=tuple(str(g) for g in spec.instance_groups or ()),
        # A pipeline parameter's default stands for its value; one with none is not known here.
        hyperparameters=tuple(
            sorted(
                (str(k), str(value_of(v)))
                for k, v in spec.hyperparameters.items()
                if value_of(v) is not None
            )
        ),
    )


def _script_launcher(ctx: Context) -> tuple[Any, int | None]:
    """The launcher (a ScriptContext.launcher value) and its processes per instance.

    The one the SDK sends (``Context.launchers``, its per-estimator dispatch); the model
    parallel library generation is the one the rules use (``Context.model_parallel_library``).
    """
    spec = ctx.spec
    dist = spec.distribution if isinstance(spec.distribution, Mapping) else {}
    instance = ctx.instance
    # One process per GPU, or per NeuronCore on Trainium (torchrun's nproc_per_node).
    devices = (instance.gpu_count or instance.neuron_cores or None) if instance else None
    smd = dist.get("smdistributed")
    smp_block = smd.get("modelparallel") if isinstance(smd, Mapping) else None
    # The library generation the rules judge by (container version, SMP image, v2 options).
    generation = ctx.model_parallel_library
    refused = isinstance(smp_block, Mapping) and smp_block.get("enabled") is not False
    if generation is None and refused:
        # Options the parser refused: the SDK picks the SMP v2 image when torch_distributed is
        # present beside modelparallel.
        generation = 2 if "torch_distributed" in dist else 1
    if generation == 2:
        return "smp-v2", devices
    if generation == 1:
        return "smp-v1", _mpi_per_host(ctx, devices)
    sent = ctx.launchers
    if "smdistributed.dataparallel" in sent:  # the PyTorch estimator's pytorchddp included
        return "smddp", devices
    if "pytorchddp" in sent:  # Hugging Face: PyTorch DDP over mpirun
        return "pytorchddp", devices
    if "torch_distributed" in sent:
        return "torchrun", devices
    mpi = dist.get("mpi")
    if "mpi" in sent and is_enabled(mpi):
        # Without a count the toolkit starts one process per GPU (what _distributions/mpi.py
        # injects); a CPU job runs one.
        count = mpi.get("processes_per_host", devices or 1)
        return "mpi", count if type(count) is int else None
    return None, None


def _mpi_per_host(ctx: Context, devices: int | None) -> int | None:
    count = getattr(ctx.model_parallel, "processes_per_host", None)
    return count if type(count) is int else devices


def _container_pytorch(ctx: Context) -> str | None:
    spec = ctx.spec
    # SMP-only versions (2.4.1) are not in the DLC table: the version as written then.
    written = spec.framework_version if spec.estimator == "pytorch" else spec.pytorch_version
    if not isinstance(written, str) or len(written) > MAX_VERSION_CHARS:
        written = None  # no such container; and the script checks' cache is keyed by it
    return ctx.known_pytorch_version or written


def _smp_options(spec: JobSpec) -> Mapping[str, Any]:
    """The SMP v2 parameters as written, from either place; empty when not readable."""
    value = spec.model_parallel
    if attrs.has(type(value)):
        value = {k: v for k, v in attrs.asdict(value).items() if v is not None}
    if isinstance(value, Mapping):
        return value
    dist = spec.distribution if isinstance(spec.distribution, Mapping) else {}
    smd = dist.get("smdistributed")
    block = smd.get("modelparallel") if isinstance(smd, Mapping) else None
    params = block.get("parameters") if isinstance(block, Mapping) else None
    return params if isinstance(params, Mapping) else {}


def _degree(options: Mapping[str, Any], name: str, default: int) -> int:
    value = options.get(name, default)
    return value if type(value) is int else default


def check_entry_point(ctx: Context) -> list[Finding]:
    """Run the training-script checks when the entry point is a local file (many specs share a
    script: ``_script_checks.memo`` remembers it parsed and what its rules found)."""
    if ctx.script_paths is None:
        return []
    from safe_estimators._script_checks import check_script

    entry_point, source_dir = ctx.script_paths
    return check_script(entry_point, script_context(ctx), source_dir=source_dir)


def finding_problem(finding: Finding) -> Problem:
    """A script finding as a problem at ``entry_point`` (file and line, where there is one, in
    the message): validate reports it at the spec that runs the script, since specs may share
    one; ``lint`` places the finding in the script itself."""
    where = f"{finding.file}:{finding.line}" if finding.line else finding.file
    return Problem(
        "entry_point", f"{where}: {finding.message}", finding.hint, finding.severity, finding.rule
    )


def check(spec: JobSpec) -> tuple[Context, list[Problem], list[Finding]]:
    """Run every rule and the script checks over ``spec``.

    Returns the context, all problems (errors and warnings; script errors among them, with the
    path ``entry_point``) and the script findings.
    """
    if recipe_of(spec) is not None:
        ctx, problems, findings = _check_recipe_job(spec)
        if ctx.target == ESTIMATOR and sdk_generation() >= 3:
            return ctx, tagged(estimator_needs_sdk2, [estimator_needs_sdk2()]), []
        if ctx.target != ESTIMATOR and not _from_recipe_builds(spec):
            problems += tagged(recipe_needs_estimator, [recipe_needs_estimator()])
        return ctx, in_own_words(_checked_fixes(spec, problems), spec.trainer), findings
    ctx, problems = _job_rules(spec)
    if ctx.target == ESTIMATOR and sdk_generation() >= 3:
        # the estimator's rules read its source
        return ctx, tagged(estimator_needs_sdk2, [estimator_needs_sdk2()]), []
    problems += tagged(check_memory, check_memory(ctx)[1])
    findings = check_entry_point(ctx)
    problems += [finding_problem(f) for f in findings if f.severity == "error"]
    problems = _checked_fixes(spec, problems)
    problems = in_own_words(problems, spec.trainer)  # at the path the user wrote
    if spec.trainer is not None and len(spec.trainer.preferences) > 1:
        problems = _on_every_preference(spec, problems)
    return ctx, judged_by_default(problems, ctx.pipeline_variables), findings


_PREFERENCE = re.compile(r"compute\.instance_preferences\.\d+")


def _on_every_preference(spec: JobSpec, first: list[Problem]) -> list[Problem]:
    """The rules again for each preferred instance type after the first (``first`` holds the
    first's problems): SageMaker grants whichever has capacity, so the job must be right on
    each. A problem every type has is reported once; one that only some have says which type
    it holds for, at that preference's path."""
    words = spec.trainer
    assert words is not None
    preferences = words.preferences
    runs = [first]
    for index, (kind, instances) in enumerate(preferences[1:], start=1):
        at = f"compute.instance_preferences.{index}"
        paths = {**words.paths, "instance_type": f"{at}.instance_type"}
        other = attrs.evolve(
            spec, instance_type=InstanceTypeValue(kind), trainer=attrs.evolve(words, paths=paths)
        )
        if instances is not None:
            paths["instance_count"] = f"{at}.instance_count"
            other = attrs.evolve(other, instance_count=CountValue(instances))
        ctx, found = _job_rules(other)
        found += tagged(check_memory, check_memory(ctx)[1])
        runs.append(in_own_words(_checked_fixes(other, found), other.trainer))
    key = lambda p: (_PREFERENCE.sub("compute.instance_preferences.N", p.path), p.message)  # noqa: E731
    everywhere = set.intersection(*({key(p) for p in run} for run in runs))
    merged: list[Problem] = [p for p in first if key(p) in everywhere]
    seen = {(p.path, p.message) for p in merged}
    for index, run in enumerate(runs):
        kind = preferences[index][0]
        for problem in run:
            if key(problem) in everywhere or (problem.path, problem.message) in seen:
                continue
            seen.add((problem.path, problem.message))
            merged.append(
                attrs.evolve(
                    problem,
                    message=f"{problem.message} (if {kind} is granted: preference {index + 1} "
                    f"of {len(preferences)} in compute.instance_preferences)",
                )
            )
    return merged


def _job_rules(spec: JobSpec) -> tuple[Context, list[Problem]]:
    """The context and the problems of the job-level, launcher and model parallel rules."""
    model_parallel, rest, problems = _model_parallel(spec)
    problems = tagged(_model_parallel, problems)
    group = launch_group(spec.instance_groups, rest)
    name = group.instance_type if group else instance_type_name(spec.instance_type)
    ctx = Context(spec, _lookup(name), rest, model_parallel, group)
    if ctx.target == ESTIMATOR and sdk_generation() >= 3:
        return ctx, []
    problems += run_rules(ctx)
    problems += run_rules(ctx, LAUNCHER_RULES)
    problems += tagged(_model_parallel_rules, _model_parallel_rules(ctx))
    return ctx, problems


def _checked_fixes(spec: JobSpec, problems: list[Problem]) -> list[Problem]:
    """Each fix a problem offers as a change to the job, applied and checked again by the
    rules: a fix whose job they refuse (a new error, or the problem itself still there) is not
    offered. The hint names the fixes that hold, then the rule's own way out."""
    if not any(problem.fixes for problem in problems):
        return problems
    before = _errors(problems)
    checked = []
    for problem in problems:
        if problem.fixes:
            kept = tuple(fix for fix in problem.fixes if _holds(spec, problem, fix, before))
            if kept != problem.fixes:
                hint = fix_hint(kept, own_hint(problem))
                problem = attrs.evolve(problem, hint=hint, fixes=kept)
        checked.append(problem)
    return checked


def applied(spec: JobSpec, changes: Sequence[tuple[str, Any]]) -> JobSpec:
    """``spec`` with a fix's changes: typed options replaced (a dotted name inside a mapping
    option; ``REMOVE`` back to the option's default), the others in ``extra``."""
    fields = attrs.fields_dict(JobSpec)
    typed: dict[str, Any] = {}
    passed = dict(spec.extra)
    for name, value in changes:
        head, _, rest = name.partition(".")
        if head not in SPEC_FIELDS:
            passed = changed(passed, [(name, value)])
            continue
        current = typed.get(head, getattr(spec, head))
        if rest:
            typed[head] = changed(current or {}, [(rest, value)])
        elif value is REMOVE:
            default: Any = fields[head].default
            factory = getattr(default, "factory", None)  # attrs.Factory: a fresh dict
            typed[head] = factory() if callable(factory) else default
        else:
            typed[head] = value
    return attrs.evolve(spec, **typed, extra=passed)


def _holds(spec: JobSpec, problem: Problem, fix: Fix, before: set[tuple[str, str]]) -> bool:
    """The job with ``fix`` made, checked again by the rules that found ``problem`` (the job's
    rules and the memory estimate, or a recipe job's rules): the problem gone, no new error."""
    try:
        job = applied(spec, fix.changes)
        if recipe_of(job) is not None:
            found = _check_recipe_job(job)[1]
        else:
            ctx, found = _job_rules(job)
            found += check_memory(ctx)[1]
        after = _errors(found)
    except (TypeError, ValueError):  # a change the typed spec refuses: not a fix
        return False
    still = {(p.path, p.message) for p in found}  # a warning's fix must clear the warning too
    return (problem.path, problem.message) not in still and not after - before


def _errors(problems: Sequence[Problem]) -> set[tuple[str, str]]:
    return {(p.path, p.message) for p in problems if p.severity == "error"}




def _from_recipe_builds(spec: JobSpec) -> bool:
    """Whether the ModelTrainer target builds this recipe job (sagemaker 3's
    ModelTrainer.from_recipe, for GPU and Trainium recipes), unreadable recipes included
    (their own problem says why)."""
    if sdk_generation() < 3:
        return False
    from safe_estimators._recipes import load_recipe

    recipe, _ = load_recipe(recipe_of(spec), spec.extra.get("recipe_overrides"))
    return recipe is None or recipe.kind == "standard"


def _check_recipe_job(spec: JobSpec) -> tuple[Context, list[Problem], list[Finding]]:
    """A recipe job: the job-level rules that apply, then the recipe's own rules."""
    from safe_estimators._recipes import check_recipe, dropped_arguments, load_recipe

    ctx = Context(spec, _lookup(instance_type_name(spec.instance_type)), {})
    problems = run_rules(ctx, RECIPE_JOB_RULES) + tagged(dropped_arguments, dropped_arguments(spec))
    recipe, found = load_recipe(recipe_of(spec), spec.extra.get("recipe_overrides"))
    problems += tagged(load_recipe, found)
    if recipe is not None:
        problems += check_recipe(ctx, recipe)
    return ctx, problems, []


def _compiler_injections(ctx: Context, kwargs: dict[str, Any], record: list[Injection]) -> None:
    spec = ctx.spec
    env: dict[str, str] = kwargs.setdefault("environment", {})
    gpus = ctx.gpus_per_instance
    if gpus is not None and "GPU_NUM_DEVICES" not in env:
        env["GPU_NUM_DEVICES"] = str(gpus)
        record.append(
            Injection(
                "environment.GPU_NUM_DEVICES",
                str(gpus),
                f"{ctx.instance_name} has {count(gpus, 'GPU')}{ctx.gpu_assumption}; Training "
                "Compiler needs it (\"Missing XLA configuration\" otherwise).",
            )
        )
    distribution: dict[str, Any] = kwargs.setdefault("distribution", {})
    for key in tables.XLA_MISSPELLINGS:
        if key in distribution:
            distribution["pytorchxla"] = distribution.pop(key)
            record.append(
                Injection(
                    "distribution.pytorchxla",
                    distribution["pytorchxla"],
                    f"rewritten from {key!r}: the SageMaker SDK only honours 'pytorchxla'.",
                )
            )
    if ctx.wants_xla_distribution and "pytorchxla" not in distribution:
        distribution["pytorchxla"] = {"enabled": True}
        record.append(
            Injection(
                "distribution.pytorchxla",
                {"enabled": True},
                f"{ctx.hardware} = {ctx.total_gpus} GPUs; without the PyTorch/XLA distribution "
                "the job would train on one GPU.",
            )
        )
    if not distribution:
        del kwargs["distribution"]
    if spec.compiler_config is not None:
        record.append(
            Injection(
                "training_compiler",
                True,
                "read from compiler_config (AWS's spelling): the compiler gets the same checks "
                "and safe defaults as training_compiler=True.",
            )
        )
    for name, value, reason in (
        ("disable_profiler", True, "the profiler's overhead hides the compiler's speed-up."),
        ("debugger_hook_config", False, "the Debugger hook's overhead hides the speed-up."),
    ):
        if getattr(spec, name) is None and not profiling_asked(spec, name):
            kwargs[name] = value
            record.append(Injection(name, value, f"Training Compiler: {reason}"))


def _kwargs(
    ctx: Context, count_from_recipe: bool = False
) -> tuple[dict[str, Any], list[Injection], ParallelLayout | None]:
    spec = ctx.spec
    kwargs: dict[str, Any] = {
        name: getattr(spec, name) for name in _PASSED_THROUGH if getattr(spec, name) is not None
    }
    for name in ("hyperparameters", "environment"):
        if getattr(spec, name):
            kwargs[name] = dict(getattr(spec, name))
    if ctx.distribution:
        kwargs["distribution"] = _deep_copy(ctx.distribution)
    for name in ("disable_profiler", "debugger_hook_config", "encrypt_inter_container_traffic"):
        if getattr(spec, name) is not None:
            kwargs[name] = getattr(spec, name)
    kwargs.update(spec.extra)
    instances = count_of(spec.instance_count)  # a pipeline parameter: its default
    if spec.instance_groups:
        instances = _group_arguments(ctx, kwargs)
    record: list[Injection] = []
    layout = None
    if recipe_of(spec) is not None:
        record += _recipe_injections(ctx, kwargs, count_from_recipe)
    else:
        layout = _launch_injections(ctx, kwargs, record)
    if instances > 1 and spec.encrypt_inter_container_traffic is None:
        kwargs["encrypt_inter_container_traffic"] = True
        reason = _encryption_reason(ctx, instances)
        record.append(Injection("encrypt_inter_container_traffic", True, reason))
    record += warm_pool_injections(ctx)
    return kwargs, record, layout


def _recipe_injections(
    ctx: Context, kwargs: dict[str, Any], count_from_recipe: bool
) -> list[Injection]:
    from safe_estimators._recipes import load_recipe, recipe_injections

    spec = ctx.spec
    recipe, _ = load_recipe(recipe_of(spec), spec.extra.get("recipe_overrides"))
    if recipe is None:
        return []
    return recipe_injections(ctx, recipe, kwargs, count_from_recipe=count_from_recipe)


def _launch_injections(
    ctx: Context, kwargs: dict[str, Any], record: list[Injection]
) -> ParallelLayout | None:
    """The compiler's, model parallelism's and the launchers' injections; the layout."""
    spec = ctx.spec
    layout = None
    if ctx.compiler:
        _compiler_injections(ctx, kwargs, record)
    if ctx.model_parallel is not None and ctx.instance is not None:
        from safe_estimators._distributions.model_parallel.dispatch import resolve_model_parallel

        distribution, injected, layout = resolve_model_parallel(
            ctx.model_parallel,
            gpus_per_instance=ctx.instance.gpu_count,
            instance_count=ctx.instance_count,
            pytorch_version=ctx.pytorch_version,
            framework_version=ctx.written_pytorch_version,
            image_uri=spec.image_uri,
        )
        kwargs["distribution"] = {**kwargs.get("distribution", {}), **distribution}
        record += injected
    record += resolve_launchers(ctx, kwargs)
    return layout


def _encryption_reason(ctx: Context, instances: int) -> str:
    """Why traffic is encrypted, and what it costs (AWS's inter-container encryption page)."""
    reason = (
        f"{instances} instances exchange gradients and data over the network; "
        "encrypted unless you set it to False. It adds training time (and so cost), most for "
        "jobs that communicate a lot (large models, many instances)."
    )
    if ctx.spec.extra.get("subnets") or ctx.spec.extra.get("security_group_ids"):
        reason += (
            " In a VPC the job's security group must allow inbound and outbound UDP port 500 "
            "and IP protocol 50 (ESP) from itself."
        )
    return reason


def _group_arguments(ctx: Context, kwargs: dict[str, Any]) -> int:
    """Instance groups replace instance_type and instance_count; the launcher's group by name.

    The build step turns the groups into SDK ``InstanceGroup`` objects and the names into those
    same objects (the SDK matches them by identity). Returns the number of instances.
    """
    groups = ctx.spec.instance_groups or ()
    kwargs.pop("instance_type", None)
    kwargs.pop("instance_count", None)
    kwargs["instance_groups"] = [g.as_arguments() for g in groups]
    named = named_groups(kwargs.get("distribution") or {})
    if named is not None:
        kwargs["distribution"]["instance_groups"] = named
    return total_instances(groups)


def _deep_copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep_copy(v) for v in value]
    return value


def resolve(spec: JobSpec) -> ResolvedJob:
    """Check ``spec`` and compute the estimator's arguments; raise ConfigError with all errors."""
    return _resolved_job(*check(spec))


def _resolved_job(
    ctx: Context,
    problems: list[Problem],
    findings: list[Finding],
    source: str | None = None,
    count_from_recipe: bool = False,
) -> ResolvedJob:
    errors = [p for p in problems if p.severity == "error"]
    if errors:  # with the credentials found: a refused job still says what it would expose
        raise ConfigError(
            [p for p in problems if p.severity == "error" or is_secret_problem(p)], source=source
        )
    spec = ctx.spec
    kwargs, injections, layout = _kwargs(ctx, count_from_recipe)
    warnings = tuple(p for p in problems if p.severity == "warning")
    script_warnings = tuple(f for f in findings if f.severity == "warning")
    if warnings or script_warnings:
        import logging  # only a job with warnings needs it; validate never logs

        logger = logging.getLogger("safe_estimators")
        for item in (*warnings, *script_warnings):
            logger.warning("%s", item)
    return ResolvedJob(
        spec,
        kwargs,
        spec.training_compiler,
        tuple(injections),
        warnings,
        ctx.instance,
        layout,
        script_warnings,
        _memory_estimate(ctx),
    )


def _memory_estimate(ctx: Context) -> MemoryEstimate | None:
    """The memory estimate per accelerator: the model's, or a recipe job's recipe's."""
    recipe = recipe_of(ctx.spec)
    if recipe is None:
        return job_of(ctx)[1]
    from safe_estimators._recipes.memory import job_memory

    return job_memory(ctx, recipe)


def check_arguments(
    arguments: Mapping[str, Any],
) -> tuple[Context | None, list[Problem], list[Finding]]:
    """Structure and check keyword arguments; every problem at once, never raises.

    Returns the checked context (None when no spec could be built), all problems and the script
    findings. When some options are malformed, the rules still run over the others (problems
    about the malformed options themselves are not repeated by the rules).
    """
    if isinstance(arguments, Mapping) and arguments.get("target") == REMOTE_FUNCTION:
        return None, check_remote_arguments(arguments)[1], []
    if isinstance(arguments, Mapping) and arguments.get("target") == FINE_TUNING:
        return None, check_fine_tuning_arguments(arguments, region=_known_region())[1], []
    arguments, problems = recipe_arguments(arguments)
    spec, found_in_spec = structure_spec(arguments)
    problems = tagged(structure_spec, found_in_spec) + tagged(recipe_arguments, problems)
    if spec is None:  # the secrets rule never runs: the same scan, on the arguments as given
        return None, problems + secrets_in_arguments(arguments), []
    ctx, found, findings = check(spec)
    skipped = skipped_paths(problems)
    problems += [p for p in found if p.path.split(".", 1)[0] not in skipped]
    if skipped:  # options the rules did not see: a malformed entry must not hide a credential
        problems += secrets_in_arguments(arguments, skipped)
    return ctx, problems, findings


def _known_region() -> str | None:
    """The region a job would be created in when the environment says it (AWS_REGION,
    AWS_DEFAULT_REGION): no config file is read and nothing is asked."""
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or None


def resolve_arguments(
    arguments: Mapping[str, Any],
    source: str | None = None,
    prior: Sequence[Problem] = (),
) -> ResolvedJob:
    """Structure keyword arguments (or a loaded spec file) into a spec and resolve it.

    Raises ConfigError with every error, in ``validate``'s order (``source`` names the file).
    ``prior`` are problems found before (the file's own, such as a path outside the project):
    they come first, and while there are any the script is not read.
    """
    if prior:
        arguments = {**arguments, "check_script": False}
    ctx, problems, findings = check_arguments(arguments)
    problems = [*prior, *problems]
    if ctx is None:
        raise ConfigError(problems, source=source)
    # A recipe job given no instance_count is sent the recipe's (recipe_arguments): a change
    # to record. One given the recipe's own number is sent what the user wrote.
    taken = recipe_of(ctx.spec) is not None and arguments.get("instance_count") is None
    return _resolved_job(ctx, problems, findings, source, count_from_recipe=taken)


# --- a @remote function's job --------------------------------------------------------------------


@attrs.frozen
class ResolvedRemote:
    """A checked ``@remote`` job: the decorator's keyword arguments (the user's, plus what was
    injected) and what ``explain`` shows."""

    spec: Any
    kwargs: dict[str, Any]
    explanation: Explanation


def check_remote_arguments(arguments: Mapping[str, Any]) -> tuple[Any, list[Problem]]:
    """Structure and check a ``@remote`` job's keyword arguments; never raises. Returns the
    remote context (None when no spec could be built) and every problem."""

    from safe_estimators._facts.remote_function import (
        STUDIO_IMAGE_VARIABLE,
        local_python,
        remote_keywords,
    )
    from safe_estimators._rules.remote import RemoteContext, check_remote
    from safe_estimators._spec import structure_remote

    def checked(options: Mapping[str, Any]) -> tuple[Any, list[Problem]]:
        spec, problems = structure_remote(options, remote_keywords())
        problems = tagged(structure_remote, problems)
        if spec is None:
            return None, problems
        studio = bool(os.environ.get(STUDIO_IMAGE_VARIABLE))
        ctx = RemoteContext(spec, _lookup(spec.instance_type), local_python(), studio)
        return ctx, problems + check_remote(ctx)

    ctx, problems = checked(arguments)
    if not any(problem.fixes for problem in problems):
        return ctx, problems
    # Each fix applied to the decorator's arguments and checked again, as a job's are.
    before = _errors(problems)

    def holds(problem: Problem, fix: Fix) -> bool:
        try:
            found = checked(changed(arguments, fix.changes))[1]
        except (TypeError, ValueError):
            return False
        still = {(p.path, p.message) for p in found}
        return (problem.path, problem.message) not in still and not _errors(found) - before

    kept_problems = []
    for problem in problems:
        kept = tuple(fix for fix in problem.fixes if holds(problem, fix))
        if kept != problem.fixes:
            problem = attrs.evolve(problem, hint=fix_hint(kept, own_hint(problem)), fixes=kept)
        kept_problems.append(problem)
    return ctx, kept_problems


def resolve_remote_arguments(
    arguments: Mapping[str, Any], source: str | None = None
) -> ResolvedRemote:
    """A checked ``@remote`` job, or ConfigError with every error."""
    from safe_estimators._rules.remote import remote_injections

    ctx, problems = check_remote_arguments(arguments)
    warnings = _refuse_or_log(ctx is None, problems, source)
    injected, injections = remote_injections(ctx)
    kwargs = {
        k: v
        for k, v in arguments.items()
        if k not in ("target", "accept_exposure") and v is not None
    }
    spec = ctx.spec
    entry = ctx.instance
    explanation = Explanation(
        estimator="remote function",
        instance_type=spec.instance_type,
        instance_count=spec.instance_count,
        gpus_per_instance=entry.gpu_count if entry is not None else None,
        injections=tuple(injections),
        warnings=warnings,
        image_source=spec.image_uri,
        neuron_cores=entry.neuron_cores if entry is not None else None,
    )
    return ResolvedRemote(spec, {**kwargs, **injected}, explanation)


# --- a fine-tuning trainer's job -----------------------------------------------------------------


@attrs.frozen
class ResolvedFineTuning:
    """A checked fine-tuning job: the trainer (its technique), its keyword arguments as the
    user gave them, and what ``explain`` shows (with what only the hub or account can say)."""

    spec: Any
    technique: str
    kwargs: dict[str, Any]
    explanation: Explanation
    region: str | None = None


def fine_tuning_technique(arguments: Mapping[str, Any]) -> tuple[str | None, list[Problem]]:
    """The trainer a fine-tuning spec names (``trainer: SFT``, or the class name)."""
    from safe_estimators._facts.fine_tuning import TRAINERS

    given = arguments.get("trainer")
    names = {cls.lower(): t for t, (_, cls) in TRAINERS.items()}
    names.update({t.lower(): t for t in TRAINERS})
    if isinstance(given, str) and given.lower() in names:
        return names[given.lower()], []
    choices = ", ".join(TRAINERS)
    return None, [
        Problem(
            "trainer",
            f"must name a fine-tuning trainer ({choices}, or the class: SFTTrainer, ...), got "
            f"{given!r}." if given is not None else f"is missing: name the trainer ({choices}).",
            "write trainer: SFT (or DPO, RLVR, RLAIF, CPT).",
        )
    ]


def check_fine_tuning_arguments(
    arguments: Mapping[str, Any], technique: str | None = None, region: str | None = None
) -> tuple[Any, list[Problem]]:
    """Structure and check a fine-tuning job's keyword arguments; never raises. Returns the
    fine-tuning context (None when no spec could be built) and every problem."""
    from safe_estimators._rules.targets import fine_tuning_needs_sdk3

    if technique is None:
        technique, problems = fine_tuning_technique(arguments)
        if technique is None:
            return None, problems
    if sdk_generation() < 3:
        return None, tagged(fine_tuning_needs_sdk3, [fine_tuning_needs_sdk3(technique)])
    from safe_estimators._facts.fine_tuning import trainer_keywords
    from safe_estimators._recipes.fine_tuning import model_recipes, read_collection
    from safe_estimators._recipes.modes import recipes_folder
    from safe_estimators._rules.fine_tuning import FineTuningContext, check_fine_tuning
    from safe_estimators._spec import structure_fine_tuning

    spec, problems = structure_fine_tuning(arguments, technique, trainer_keywords(technique))
    problems = tagged(structure_fine_tuning, problems)
    if spec is None:
        return None, problems
    name = spec.compute.instance_type
    folder = recipes_folder()
    recipes, unread = None, None
    if folder and spec.model_name:
        collection, unread = read_collection(folder)
        lora = None if technique == "CPT" else spec.training_type != "FULL"
        recipes = model_recipes(collection, spec.model_name, technique, lora) or None
    instance = _lookup(name) if name else None
    ctx = FineTuningContext(spec, instance, region, recipes, folder, unread)
    return ctx, problems + check_fine_tuning(ctx)


def resolve_fine_tuning_arguments(
    arguments: Mapping[str, Any],
    technique: str | None = None,
    source: str | None = None,
    region: str | None = None,
) -> ResolvedFineTuning:
    """A checked fine-tuning job, or ConfigError with every error."""
    from safe_estimators._facts.fine_tuning import TRAINERS
    from safe_estimators._rules.fine_tuning import not_checked

    ctx, problems = check_fine_tuning_arguments(arguments, technique, region)
    warnings = _refuse_or_log(ctx is None, problems, source)
    spec = ctx.spec
    kwargs = {
        k: v
        for k, v in arguments.items()
        if k not in ("target", "trainer", "accept_exposure") and v is not None
    }
    entry = ctx.instance
    compute = spec.compute
    explanation = Explanation(
        estimator=TRAINERS[spec.technique][1],
        instance_type=compute.instance_type or compute.kind,
        instance_count=compute.instance_count,
        gpus_per_instance=entry.gpu_count if entry is not None else None,
        warnings=warnings,
        neuron_cores=entry.neuron_cores if entry is not None and entry.neuron_cores else None,
        not_checked=not_checked(ctx),
    )
    return ResolvedFineTuning(spec, spec.technique, kwargs, explanation, region)


def _refuse_or_log(
    unbuilt: bool, problems: list[Problem], source: str | None
) -> tuple[Problem, ...]:
    """ConfigError with every error (or every problem, when the job could not be read at all);
    else the warnings, each logged as the factories do."""
    errors = [p for p in problems if p.severity == "error"]
    if unbuilt or errors:
        raise ConfigError(errors or problems, source=source)
    warnings = tuple(p for p in problems if p.severity == "warning")
    if warnings:
        import logging

        for item in warnings:
            logging.getLogger("safe_estimators").warning("%s", item)
    return warnings
