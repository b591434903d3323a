"""The build target's own rules: what one target cannot build from a spec the other builds.

A spec is written in the estimator's words and builds the same job as an estimator (sagemaker
2.x) or as a ModelTrainer. What ModelTrainer has no counterpart for (Training Compiler, the
model parallel library v1, SMDDP, the estimators' other launchers, estimator-only keywords,
instance groups) is refused with a fix naming the estimator target, never dropped.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from safe_estimators._context import Context
from safe_estimators._distributions import is_enabled, torchrun
from safe_estimators._facts import tables
from safe_estimators._facts.model_trainer import (
    CARRIED,
    ENTRY_SCRIPT_SUFFIXES,
    SAME_AS_MODEL_TRAINER,
)
from safe_estimators._facts.sdk_files import sdk_generation, sdk_version
from safe_estimators._facts.targets import ESTIMATOR, MODEL_TRAINER, only_for
from safe_estimators._problems import Problem, join_path, problem_source, removing

_USE_ESTIMATOR = "or build the job as the estimator (target: estimator, with sagemaker 2.x)"


@problem_source("estimator-needs-sdk2")
def estimator_needs_sdk2() -> Problem:
    """The estimator target under sagemaker 3, which removed the estimator classes."""
    return Problem(
        "target",
        f"the estimator target needs the SageMaker SDK 2.x, and sagemaker {sdk_version()} is "
        "installed: sagemaker 3 removed Estimator and all its subclasses (HuggingFace, PyTorch).",
        "build the same job as a ModelTrainer: safe_estimators.model_trainer(...) with the same "
        "arguments, or target: model_trainer in a spec file (the default under sagemaker 3); "
        "or install sagemaker>=2.250,<3 for the estimator.",
    )


@problem_source("fine-tuning-needs-sdk3")
def fine_tuning_needs_sdk3(trainer: str) -> Problem:
    """A fine-tuning trainer under sagemaker 2.x, which has none (sagemaker.train's SFTTrainer,
    DPOTrainer, RLVRTrainer, RLAIFTrainer and CPTTrainer are sagemaker 3's)."""
    return Problem(
        "target",
        f"the {trainer} fine-tuning trainer needs the SageMaker SDK 3.x, and sagemaker "
        f"{sdk_version()} is installed: sagemaker 2.x has no fine-tuning trainers "
        "(sagemaker.train.SFTTrainer and its siblings came with sagemaker 3).",
        "install sagemaker>=3 (pip install 'sagemaker>=3.27'), or on sagemaker 2.x fine-tune "
        "with a HyperPod recipe: safe_estimators.pytorch(training_recipe=...).",
    )


@problem_source("recipe-needs-estimator")
def recipe_needs_estimator() -> Problem:
    """A HyperPod recipe job the ModelTrainer target does not build: any on sagemaker 2.x
    (whose estimator builds it), and Nova, evaluation and LLM fine-tuning recipes on 3.x (the
    ModelTrainer target builds GPU and Trainium recipes there, through from_recipe)."""
    if sdk_generation() < 3:
        what = (
            f"with sagemaker {sdk_version()} the ModelTrainer target does not build recipe "
            "jobs; the estimator does"
        )
    else:
        what = (
            "is a Nova, evaluation or LLM fine-tuning recipe; the ModelTrainer target builds "
            "GPU and Trainium pre-training and fine-tuning recipes (ModelTrainer.from_recipe) only"
        )
    return Problem(
        "training_recipe",
        f"{what}.",
        "build it as the estimator (target: estimator, with sagemaker 2.x), or call "
        "ModelTrainer.from_recipe yourself.",
    )


def _no_counterpart(path: str, what: str, fix: str) -> Problem:
    return Problem(
        path, f"{what}; ModelTrainer has no counterpart for it.", f"{fix}, {_USE_ESTIMATOR}."
    )


@only_for(MODEL_TRAINER)
def model_trainer_counterparts(ctx: Context) -> Iterator[Problem]:
    """Features of the estimator that ModelTrainer cannot run, each refused where written."""
    spec = ctx.spec
    if ctx.compiler:
        path = "compiler_config" if spec.compiler_config is not None else "training_compiler"
        yield _no_counterpart(
            path,
            "SageMaker Training Compiler runs through the estimator's compiler containers and "
            "hyperparameters (sagemaker 3's migration guide lists it as removed)",
            "remove it to train without the compiler",
        )
    if ctx.model_parallel is not None and ctx.model_parallel_library == 1:
        yield _no_counterpart(
            "model_parallel",
            "these options run the model parallel library v1 (smdistributed over MPI, PyTorch "
            "<= 2.0.0); ModelTrainer configures the library v2 only (Torchrun(smp=SMP(...)))",
            "use a PyTorch version with the library v2 (2.0.1 or later) and its v2 options",
        )
    if spec.instance_groups:
        yield from _instance_groups(ctx)
    yield from _launchers(ctx)
    yield from _keywords(ctx)
    if ctx.local:
        yield _no_counterpart(
            "instance_type",
            f"{spec.instance_type!r} is the estimator's local mode (ModelTrainer runs locally "
            "with training_mode=Mode.LOCAL_CONTAINER, which safe_estimators does not build)",
            "use a SageMaker instance type",
        )
    elif ctx.parameterised:
        yield _no_counterpart(
            "instance_type",
            "is a SageMaker Pipelines parameter; ModelTrainer's Compute takes a plain instance "
            "type (its pydantic model refuses a ParameterString)",
            "pass the instance type itself",
        )
    role = spec.role
    if isinstance(role, str) and not role.startswith("arn:") and sdk_generation() < 3:
        yield Problem(
            "role",
            f"is {role!r}, a role name; sagemaker {sdk_version()}'s ModelTrainer sends it as it "
            "is, and CreateTrainingJob takes an ARN (the estimator and sagemaker 3's "
            "ModelTrainer look the name up in IAM).",
            "give the role's ARN: arn:aws:iam::<account>:role/" + role + ".",
        )
    for name in ("entry_point", "source_dir"):
        value = getattr(spec, name)
        if value is not None and not isinstance(value, str):
            yield _no_counterpart(
                name,
                "is a SageMaker Pipelines variable; the ModelTrainer target builds SourceCode "
                "from a path known now",
                f"pass the {name} itself",
            )
    entry = spec.entry_point
    command = spec.trainer is not None and spec.trainer.command
    if isinstance(entry, str) and not (command and not entry) and not entry.endswith(
        ENTRY_SCRIPT_SUFFIXES
    ):
        yield Problem(
            "entry_point",
            f"is {entry!r}; ModelTrainer runs .py and .sh entry scripts only (its sm_train.sh "
            "refuses anything else).",
            "point entry_point at the Python or shell script that starts training.",
        )
    source_dir = spec.source_dir
    if isinstance(source_dir, str) and "://" in source_dir and not source_dir.startswith("s3://"):
        yield _no_counterpart(
                "source_dir",
                f"{spec.source_dir!r} is not a local folder or S3 location",
                "use a local folder or an s3:// location",
            )


@only_for(ESTIMATOR)
def model_trainer_words(ctx: Context) -> Iterator[Problem]:
    """ModelTrainer's own words (``source_code``, ``compute``, ``distributed``, a
    hyperparameters file, ...) given for the estimator target, which has no such arguments."""
    words = ctx.spec.trainer
    if words is None:
        return
    names = [*words.given]
    if words.hyperparameters_file is not None:
        names.append("hyperparameters")
    for name in names:
        yield Problem(
            name,
            "is ModelTrainer's own word; the estimator takes its own keywords (its **kwargs "
            "would drop this one).",
            "build the job as a ModelTrainer (target: model_trainer, or "
            "safe_estimators.model_trainer(...)), or write it in the estimator's words.",
        )


def _instance_groups(ctx: Context) -> Iterator[Problem]:
    """sagemaker 3.x's ModelTrainer runs a heterogeneous cluster (Compute(instance_groups=...))
    with its script on every instance; 2.x's cannot, and neither scopes a launcher to a group."""
    if sdk_generation() < 3:
        yield _no_counterpart(
            "instance_groups",
            f"a heterogeneous cluster: sagemaker {sdk_version()}'s ModelTrainer sends "
            "ml.m5.xlarge x 1 beside the groups (Compute's default instance type, set whenever "
            "instance_type is missing), which CreateTrainingJob refuses",
            "use instance_type and instance_count, or sagemaker 3.x's ModelTrainer",
        )
        return
    launchers = [key for key in ctx.distribution if key != "instance_groups"]
    if launchers or ctx.model_parallel is not None:
        yield _no_counterpart(
            "instance_groups",
            "a launcher on a heterogeneous cluster: ModelTrainer's Torchrun and MPI start on "
            "every instance of every group, where the estimator's distribution['instance_groups'] "
            "runs them on one group",
            "use instance_type and instance_count, or no launcher",
        )


def _launchers(ctx: Context) -> Iterator[Problem]:
    """ModelTrainer takes one launcher, Torchrun or MPI; the estimators' others have none."""
    d = ctx.distribution
    smdistributed = d.get("smdistributed")
    if isinstance(smdistributed, Mapping) and is_enabled(smdistributed.get("dataparallel")):
        yield _no_counterpart(
            "distribution.smdistributed.dataparallel",
            "SMDDP is started by the estimator's containers from its hyperparameters",
            "use torch_distributed (torchrun, NCCL) instead",
        )
    for key, what in (
        ("pytorchddp", "pytorchddp is the estimators' DDP-over-mpirun launcher"),
        ("pytorchxla", "the PyTorch/XLA launcher is the estimator's Training Compiler launcher"),
        ("parameter_server", "the parameter server is the estimator's TensorFlow launcher"),
        ("instance_groups", "a launcher scoped to one instance group"),
        *((key, f"{key!r} is a spelling of pytorchxla") for key in tables.XLA_MISSPELLINGS),
    ):
        if key in d and not ctx.compiler:
            yield _no_counterpart(
                f"distribution.{key}",
                what,
                "use torch_distributed or mpi" if key != "instance_groups" else "remove it",
            )
    if not is_enabled(d.get("mpi")):
        return
    if torchrun.enabled(d):
        yield Problem(
            "distribution.mpi",
            "and torch_distributed are both enabled; ModelTrainer takes one launcher "
            "(distributed=Torchrun(...) or MPI(...)), and the estimator would ignore mpi here.",
            fixes=(
                removing("distribution.mpi", why="torchrun starts one process per GPU"),
                removing("distribution.torch_distributed"),
            ),
        )
    elif ctx.model_parallel_library == 2:
        # SMP v2 is started by torchrun (Torchrun(smp=SMP(...))): there is no torch_distributed
        # to remove, only the mpi that cannot go with it.
        yield Problem(
            "distribution.mpi",
            "is enabled with SMP v2, which runs under torchrun only (ModelTrainer: "
            "distributed=Torchrun(smp=SMP(...))); ModelTrainer takes one launcher.",
            fixes=(removing("distribution.mpi", why="torchrun starts one process per GPU"),),
        )


def _keywords(ctx: Context) -> Iterator[Problem]:
    """Estimator keywords ModelTrainer has no place for (the others are carried over)."""
    for key, value in ctx.spec.extra.items():
        if key in CARRIED:
            continue
        # Not mutated: SAME_AS_MODEL_TRAINER's options are JobSpec fields, never in extra (the
        # loop below checks them), so no job reaches these two lines.
        same = key in SAME_AS_MODEL_TRAINER  # pragma: no mutate
        if same and value == SAME_AS_MODEL_TRAINER[key]:  # pragma: no mutate
            continue  # pragma: no mutate
        yield _no_counterpart(
            # join_path skips "" and None: its mutants name the same path
            join_path("", key),  # pragma: no mutate
            "is an estimator option that the ModelTrainer target does not carry over",
            f"remove {key}",
        )
    for name in ("disable_profiler", "debugger_hook_config"):
        value = getattr(ctx.spec, name)
        if value is not None and value != SAME_AS_MODEL_TRAINER[name]:
            yield _no_counterpart(
                name,
                f"ModelTrainer sends no {'profiler' if name == 'disable_profiler' else 'Debugger'} "
                "configuration",
                f"remove {name}",
            )
