"""The public factories: typed keyword arguments in, a checked SageMaker estimator out."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from safe_estimators._commands.quiet import sdk_quiet
from safe_estimators._facts.sdk_files import sdk_generation
from safe_estimators._facts.targets import ESTIMATOR, FINE_TUNING, MODEL_TRAINER
from safe_estimators._problems import ConfigError, Problem, warning
from safe_estimators._resolve import ResolvedJob, resolve_arguments
from safe_estimators._rules.capacity import job_created_in
from safe_estimators._rules.request import pipeline_step
from safe_estimators._rules.targets import estimator_needs_sdk2
from safe_estimators._spec import JobSpec, TrainingCompiler
from safe_estimators._targets import build as build_target
from safe_estimators._targets import build_estimator, build_model_trainer

if TYPE_CHECKING:
    from sagemaker.huggingface import HuggingFace
    from sagemaker.pytorch import PyTorch
    from sagemaker.workflow.entities import PipelineVariable

    from safe_estimators._distributions.model_parallel import ModelParallel
    from safe_estimators._memory import ModelShape


def _given(named: Mapping[str, Any], passed_through: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments the caller set: None means "not given", as in the SageMaker SDK."""
    return {k: v for k, v in {**named, **passed_through}.items() if v is not None}


def _region_of(session: Any) -> str | None:
    """The region the job is created in: the session's, else the one the SDK's default session
    finds (no network call); None when none is configured (the build says so)."""
    region = getattr(session, "boto_region_name", None) if session is not None else None
    if isinstance(region, str) and region:
        return region
    from safe_estimators._targets.shared import known_region

    return known_region()


def _estimator_available() -> None:
    """The estimator factories under sagemaker 3, which has no estimators: one clear error."""
    if sdk_generation() >= 3:
        raise ConfigError([estimator_needs_sdk2()])


def _inputs_noted(job: ResolvedJob) -> ResolvedJob:
    """``inputs=`` given to a factory is fit()'s argument: the estimator cannot keep it, so it
    is a warning (spec files keep ``inputs`` for ``plan`` and ``submit``, which pass it to fit)."""
    if job.spec.inputs is None:
        return job
    problem = warning(
        "inputs",
        "is an argument of fit(), not of the estimator; the estimator does not keep it, so "
        "est.fit() with no arguments would start the job without these data channels.",
        "pass them to fit(): est.fit(inputs) (plan and submit pass a spec file's inputs to "
        "fit() themselves).",
    )
    logging.getLogger("safe_estimators").warning("%s", problem)
    return attrs.evolve(job, warnings=(*job.warnings, problem))


def _resolved(
    arguments: Mapping[str, Any],
    session: Any,
    source: str | None = None,
    prior: Sequence[Problem] = (),
) -> ResolvedJob:
    """The checked job, as a pipeline step when ``session`` is a PipelineSession, and in the
    region it would be created in."""
    with pipeline_step(session), job_created_in(_region_of(session)):
        return resolve_arguments(arguments, source, prior)


def _built(build: Callable[[ResolvedJob, Any], Any], job: ResolvedJob, session: Any,
           preflight: bool) -> Any:  # fmt: skip
    """The SDK object for ``job``, the SDK's banners and INFO lines kept out of the caller's
    output, then (``preflight=True``) checked against the account."""
    with sdk_quiet():
        return _preflighted(build(job, session), preflight)


def _preflighted(built: Any, preflight: bool) -> Any:
    """``preflight=True``: the built estimator or ModelTrainer checked against the AWS account
    it would run in (read-only, see ``safe_estimators.preflight``); its errors raise the one
    ConfigError, its warnings are logged."""
    if preflight:
        from safe_estimators._preflight import preflight as check_account

        result = check_account(built)
        for problem in result.problems:
            if problem.severity == "warning":
                logging.getLogger("safe_estimators").warning("%s", problem)
        result.raise_for_errors()
    return built


def huggingface(
    *,
    entry_point: str,
    instance_type: str | PipelineVariable | None = None,
    role: str | None = None,
    instance_count: int | None = None,
    transformers_version: str | None = None,
    pytorch_version: str | None = None,
    py_version: str | None = None,
    source_dir: str | None = None,
    hyperparameters: Mapping[str, Any] | None = None,
    environment: Mapping[str, str] | None = None,
    distribution: Mapping[str, Any] | None = None,
    training_compiler: bool | TrainingCompiler | None = None,
    model_parallel: ModelParallel | Mapping[str, Any] | None = None,
    model: ModelShape | Mapping[str, Any] | None = None,
    sagemaker_session: Any = None,
    check_script: bool = True,
    preflight: bool = False,
    **kwargs: Any,
) -> HuggingFace:
    """Build a checked ``sagemaker.huggingface.HuggingFace`` estimator.

    Takes the SageMaker SDK's own keyword names (every other estimator keyword, such as
    ``output_path``, ``tags`` or ``volume_size``, is passed through unchanged) plus:

    - ``training_compiler``: ``True`` or ``TrainingCompiler(debug=...)`` turns on SageMaker
      Training Compiler with its safe defaults: ``GPU_NUM_DEVICES`` from the instance's GPU count,
      the PyTorch/XLA distribution for multi-GPU jobs, profiler and debugger off (unless
      ``profiler_config`` or Debugger ``rules`` ask for them). AWS's spelling,
      ``compiler_config=TrainingCompilerConfig(...)``, is read as the same intent.
    - ``model_parallel``: ``ModelParallel(...)`` or a dict with the same keys, for the SageMaker
      model parallel library (v1); the MPI and smdistributed distribution is derived from it.
    - ``model``: ``ModelShape(...)`` or a dict with the same keys: estimate the memory of one
      accelerator (``explain(estimator).memory``) and refuse a job that cannot fit, naming the
      smallest changes that do.
    - ``instance_groups``: a heterogeneous cluster (SDK ``InstanceGroup`` objects or mappings
      with ``instance_group_name``, ``instance_type``, ``instance_count``) instead of
      ``instance_type`` and ``instance_count``; ``distribution["instance_groups"]`` names the
      group MPI or SMDDP runs on.
    - ``check_script``: check the entry point for known pitfalls before launch (default on).
    - ``accept_exposure``: dotted paths (``["environment.HF_TOKEN"]``) of suspected secrets to
      send without a warning, accepting that DescribeTrainingJob shows them (README, Secrets).
    - ``instance_type`` may be a SageMaker Pipelines ``ParameterString``: it is checked against
      its ``default_value``; jobs with GPU-derived values (compiler, model parallelism) also need
      ``enum_values`` that all have the default's GPU count.
    - ``preflight``: also check the built estimator against the AWS account it would run in
      (read-only: quotas, the role, buckets, network, keys; ``safe_estimators.preflight``).

    Every problem found is reported at once in one ``ConfigError`` before anything is built.
    ``safe_estimators.explain(estimator)`` tells what was injected and why.
    """
    _estimator_available()
    named = dict(
        estimator="huggingface",
        target=ESTIMATOR,
        transformers_version=transformers_version,
        pytorch_version=pytorch_version,
        entry_point=entry_point,
        instance_type=instance_type,
        role=role,
        instance_count=instance_count,
        py_version=py_version,
        source_dir=source_dir,
        hyperparameters=hyperparameters,
        environment=environment,
        distribution=distribution,
        training_compiler=training_compiler,
        model_parallel=model_parallel,
        model=model,
        check_script=check_script,
    )
    arguments = _given(named, kwargs)
    job = _inputs_noted(_resolved(arguments, sagemaker_session))
    return _built(build_estimator, job, sagemaker_session, preflight)


def pytorch(
    *,
    entry_point: str | None = None,
    instance_type: str | PipelineVariable | None = None,
    role: str | None = None,
    instance_count: int | None = None,
    framework_version: str | None = None,
    py_version: str | None = None,
    source_dir: str | None = None,
    hyperparameters: Mapping[str, Any] | None = None,
    environment: Mapping[str, str] | None = None,
    distribution: Mapping[str, Any] | None = None,
    training_compiler: bool | TrainingCompiler | None = None,
    model_parallel: ModelParallel | Mapping[str, Any] | None = None,
    model: ModelShape | Mapping[str, Any] | None = None,
    sagemaker_session: Any = None,
    check_script: bool = True,
    training_recipe: str | None = None,
    recipe_overrides: Mapping[str, Any] | None = None,
    preflight: bool = False,
    **kwargs: Any,
) -> PyTorch:
    """Build a checked ``sagemaker.pytorch.PyTorch`` estimator.

    Same options and guarantees as :func:`huggingface`, with ``framework_version`` naming the
    PyTorch container (short versions such as ``"1.13"`` resolve as the SDK resolves them).

    ``training_recipe`` (a HyperPod recipe: a predefined name, a local ``.yaml`` file or a URL)
    and ``recipe_overrides`` are the SDK's: with a recipe, ``entry_point``, ``framework_version``
    and ``py_version`` are not needed (the SDK picks the image, the script and the
    distribution), and the merged recipe is checked (devices, nodes, degrees, precision). A
    predefined recipe is read from a local copy of the recipes collection named by
    ``$SAFE_ESTIMATORS_RECIPES``.
    """
    _estimator_available()
    named = dict(
        estimator="pytorch",
        target=ESTIMATOR,
        framework_version=framework_version,
        entry_point=entry_point,
        instance_type=instance_type,
        role=role,
        instance_count=instance_count,
        py_version=py_version,
        source_dir=source_dir,
        hyperparameters=hyperparameters,
        environment=environment,
        distribution=distribution,
        training_compiler=training_compiler,
        model_parallel=model_parallel,
        model=model,
        check_script=check_script,
        training_recipe=training_recipe,
        recipe_overrides=recipe_overrides,
    )
    arguments = _given(named, kwargs)
    job = _inputs_noted(_resolved(arguments, sagemaker_session))
    return _built(build_estimator, job, sagemaker_session, preflight)


def model_trainer(
    *,
    entry_point: str | None = None,
    estimator: str | None = None,
    instance_type: str | None = None,
    role: str | None = None,
    instance_count: int | None = None,
    framework_version: str | None = None,
    transformers_version: str | None = None,
    pytorch_version: str | None = None,
    py_version: str | None = None,
    source_dir: str | None = None,
    hyperparameters: Mapping[str, Any] | None = None,
    environment: Mapping[str, str] | None = None,
    distribution: Mapping[str, Any] | None = None,
    model_parallel: ModelParallel | Mapping[str, Any] | None = None,
    model: ModelShape | Mapping[str, Any] | None = None,
    inputs: str | Mapping[str, str] | None = None,
    sagemaker_session: Any = None,
    check_script: bool = True,
    preflight: bool = False,
    **kwargs: Any,
) -> Any:
    """Build a checked ``ModelTrainer`` (``sagemaker.modules.train`` in sagemaker 2.x,
    ``sagemaker.train`` in 3.x) for the job the estimator arguments describe.

    Takes the same arguments as :func:`pytorch` and :func:`huggingface` (``transformers_version``
    with ``pytorch_version`` or ``tensorflow_version`` picks the Hugging Face training image, as
    the HuggingFace estimator would; ``estimator`` names the container family explicitly), plus
    ``inputs`` (what ``fit()`` would take: an S3 URI or channel name -> URI), and returns the
    same job as a ModelTrainer: the image the estimator picks, ``Compute``, ``SourceCode``,
    ``Torchrun``/``MPI`` with the processes per node from the instance's GPUs or NeuronCores
    (SMP v2 as ``Torchrun(smp=SMP(...))``), the environment, hyperparameters, stopping
    condition (the estimator's 24 h max run, sent explicitly), checkpoints, networking and
    encryption. ``trainer.train()`` runs it; ``safe_estimators.explain(trainer)`` tells what
    was injected and why. What ModelTrainer has no counterpart for (Training Compiler, the model
    parallel library v1, SMDDP, instance groups) is refused in the one ``ConfigError``.

    ModelTrainer's own words are taken too, as the installed SDK's config objects: ``source_code``
    (``SourceCode`` with an ``entry_script`` or a ``command``, and ``requirements``; then
    ``entry_point`` is not needed), ``compute``, ``stopping_condition``, ``networking``,
    ``input_data_config``, ``checkpoint_config``, ``output_data_config``, ``training_image``,
    ``distributed`` (``Torchrun``, ``MPI`` or your own ``DistributedConfig``) and
    ``hyperparameters`` as a JSON or YAML file path. They are checked as their estimator
    counterparts are, at the path written, and passed as given (a copy when a field is injected,
    recorded); a job in these words keeps ModelTrainer's 1 h default ``max_run``.
    """
    if estimator is None:
        # The HuggingFace estimator's own arguments name its container family.
        estimator = "huggingface" if transformers_version is not None else "pytorch"
    named = dict(
        estimator=estimator,
        target=MODEL_TRAINER,
        framework_version=framework_version,
        transformers_version=transformers_version,
        pytorch_version=pytorch_version,
        entry_point=entry_point,
        instance_type=instance_type,
        role=role,
        instance_count=instance_count,
        py_version=py_version,
        source_dir=source_dir,
        hyperparameters=hyperparameters,
        environment=environment,
        distribution=distribution,
        model_parallel=model_parallel,
        model=model,
        inputs=inputs,
        check_script=check_script,
    )
    job = _resolved(_given(named, kwargs), sagemaker_session)
    return _built(build_model_trainer, job, sagemaker_session, preflight)


def remote(
    _func: Callable[..., Any] | None = None,
    *,
    sagemaker_session: Any = None,
    **kwargs: Any,
) -> Any:
    """A checked drop-in for the SageMaker SDK's ``@remote`` decorator (``sagemaker.
    remote_function.remote`` in sagemaker 2.x, ``sagemaker.core.remote_function.remote`` in 3.x).

    Takes the decorator's own keyword arguments (``instance_type``, ``instance_count``,
    ``use_torchrun``, ``use_mpirun``, ``nproc_per_node``, ``keep_alive_period_in_seconds``,
    ``use_spot_instances``, ``max_wait_time_in_seconds``, ``environment_variables``,
    ``image_uri``, ...; ``accept_exposure`` as for the factories) and checks the job when the
    function is decorated, offline: processes per instance against its GPUs or NeuronCores
    (``nproc_per_node`` from the catalog when a launcher is on and it is not given: recorded),
    several instances without exactly one launcher, a warm pool beside spot, spot without a
    long enough wait, the default image against this Python, volume keys on local storage,
    credentials in the environment. Every problem is raised at once in one ``ConfigError``.

    The SDK's decorator is applied on the first call, where the job is sent: decorating makes
    no AWS call. ``safe_estimators.explain(func)`` tells what was injected and why.
    """
    from safe_estimators._resolve.remote import resolve_remote_arguments
    from safe_estimators._targets.remote import build_remote

    decorate = build_remote(resolve_remote_arguments(kwargs), sagemaker_session)
    return decorate(_func) if _func is not None else decorate


def _fine_tuning(technique: str, arguments: dict[str, Any]) -> Any:
    """The checked fine-tuning job for ``technique``: the region the trainer will use (its
    session's, else the environment's) is known here, so the region rules run too."""
    from safe_estimators._resolve.fine_tuning import resolve_fine_tuning_arguments
    from safe_estimators._targets.fine_tuning import build_fine_tuning

    session = arguments.get("sagemaker_session")
    region = _region_of(session)
    given = {k: v for k, v in arguments.items() if k != "sagemaker_session"}
    job = resolve_fine_tuning_arguments(given, technique, region=region)
    return build_fine_tuning(job, session)


_FINE_TUNING_DOC = """A checked drop-in for sagemaker 3's ``sagemaker.train.{cls}``: the same
    keyword arguments (``model``, {training_type}``compute`` = ``TrainingJobCompute`` /
    ``HyperPodCompute`` / None for serverless, {extra}``hyperparameters``, ``role``, ...; a
    spec file says ``target: fine_tuning`` with ``trainer: {technique}``).

    Checked offline, before the hub is asked: the compute's instance type against the model's
    {technique} fine-tuning recipes in your copy of the HyperPod recipes collection (``--recipes
    DIR`` / ``$SAFE_ESTIMATORS_RECIPES``; the trainer itself refuses another type only at
    ``train()``), the sequence length against those recipes, the 100-hyperparameter cap, the
    region, the model package group of a serverless job, training plans (their instance types,
    their region, and an SDK that drops the ARN), what the trainer silently leaves out of the
    compute, and credentials in the values. Every problem is raised at once in one ConfigError.

    Returns a ``CheckedTrainer``: the SDK's {cls} is made on first use (``train()``, or any of
    its attributes), since its constructor reads the hub; nothing is sent before.
    ``safe_estimators.explain(trainer).not_checked`` lists what only the hub or the account can
    say, with the call that will.
    """


def sft_trainer(**kwargs: Any) -> Any:
    return _fine_tuning("SFT", kwargs)


def dpo_trainer(**kwargs: Any) -> Any:
    return _fine_tuning("DPO", kwargs)


def rlvr_trainer(**kwargs: Any) -> Any:
    return _fine_tuning("RLVR", kwargs)


def rlaif_trainer(**kwargs: Any) -> Any:
    return _fine_tuning("RLAIF", kwargs)


def cpt_trainer(**kwargs: Any) -> Any:
    return _fine_tuning("CPT", kwargs)


for _factory, _technique, _cls, _type, _extra in (
    (sft_trainer, "SFT", "SFTTrainer", True, "``sequence_length``, ``recipe``, ``overrides``, "),
    (dpo_trainer, "DPO", "DPOTrainer", True, "``sequence_length``, ``recipe``, ``overrides``, "),
    (rlvr_trainer, "RLVR", "RLVRTrainer", True, "``custom_reward_function``, "
     "``sequence_length``, ``recipe``, ``overrides``, "),
    (rlaif_trainer, "RLAIF", "RLAIFTrainer", True, "``reward_model_id``, ``sequence_length``, "),
    (cpt_trainer, "CPT", "CPTTrainer", False, "``recipe``, ``overrides``, ``training_image``, "),
):  # fmt: skip
    _factory.__doc__ = _FINE_TUNING_DOC.format(
        cls=_cls,
        technique=_technique,
        training_type="``training_type`` (LORA or FULL), " if _type else "",
        extra=_extra,
    )


def build(spec: JobSpec | str | os.PathLike[str], **overrides: Any) -> Any:
    """Build the job a spec describes (a ``JobSpec`` or a spec file path) as its target: the
    estimator, or a ModelTrainer (``target: model_trainer``; the default under sagemaker 3).

    Keyword ``overrides`` replace the spec's options; pass ``sagemaker_session=`` to use your own
    session (a PipelineSession, say), ``preflight=True`` to check the built job against the AWS
    account too (see ``safe_estimators.preflight``). Raises ConfigError with every problem found.
    """
    from safe_estimators._spec_files.read import job_arguments

    session = overrides.pop("sagemaker_session", None)
    preflight = bool(overrides.pop("preflight", False))
    arguments, source, prior = job_arguments(spec, overrides)
    if arguments.get("target") == FINE_TUNING:
        if prior:
            raise ConfigError(list(prior), source=source)
        return _fine_tuning_spec(arguments, source, session)
    job = _resolved(arguments, session, source, prior)
    return _built(build_target, job, session, preflight)


def _fine_tuning_spec(arguments: dict[str, Any], source: str | None, session: Any) -> Any:
    """A spec file's fine-tuning job (``target: fine_tuning``, ``trainer: SFT``)."""
    from safe_estimators._resolve.fine_tuning import fine_tuning_technique

    technique, problems = fine_tuning_technique(arguments)
    if technique is None:
        raise ConfigError(problems, source=source)
    given = {k: v for k, v in arguments.items() if k not in ("target", "trainer")}
    if session is not None:
        given["sagemaker_session"] = session
    return _fine_tuning(technique, given)
