"""The ModelTrainer target: a resolved job as a real ModelTrainer, and its offline request.

sagemaker 2.x ships ModelTrainer as ``sagemaker.modules.train.ModelTrainer`` (configs in
``sagemaker.modules.configs``, launchers in ``sagemaker.modules.distributed``, on the separate
``sagemaker_core`` 1.x package); sagemaker 3.x as ``sagemaker.train.ModelTrainer`` (configs from
``sagemaker.core.training.configs``, launchers in ``sagemaker.train.distributed``, images from
``sagemaker.core.image_uris``). ``_sdk()`` picks the installed generation's modules; everything
else is the same code for both.
"""

from __future__ import annotations

import contextlib
import functools
import os
import tempfile
import threading
import weakref
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import attrs

from safe_estimators._facts.sdk_files import sdk_generation
from safe_estimators._problems import ConfigError, Problem
from safe_estimators._resolve import ResolvedJob
from safe_estimators._resolved import Explanation, Injection
from safe_estimators._targets.shared import (
    PLACEHOLDER_BUCKET,
    PLACEHOLDER_REGION,
    _Captured,
    _sdk_refused,
    capturing_session,
    default_boto_session,
    job_explanation,
)
from safe_estimators._targets.trainer_args import TrainerArguments, trainer_arguments


@functools.cache
def _sdk() -> SimpleNamespace:
    """The installed SDK generation's ModelTrainer, configs, launchers, images and session."""
    if sdk_generation() >= 3:
        from sagemaker.core import image_uris
        from sagemaker.core.helper.session_helper import Session
        from sagemaker.core.resources import TrainingJob
        from sagemaker.core.training import configs
        from sagemaker.train import ModelTrainer, distributed
    else:
        from sagemaker import image_uris
        from sagemaker.modules import configs, distributed
        from sagemaker.modules.train import ModelTrainer
        from sagemaker_core.helper.session_helper import Session
        from sagemaker_core.main.resources import TrainingJob
    return SimpleNamespace(
        ModelTrainer=ModelTrainer,
        configs=configs,
        distributed=distributed,
        image_uris=image_uris,
        Session=Session,
        TrainingJob=TrainingJob,
    )


# The Explanation of each ModelTrainer built here. A ModelTrainer is a pydantic model that
# refuses unknown attributes, so the record is kept beside it, for as long as it lives.
_EXPLANATIONS: dict[int, tuple[weakref.ref[Any], Explanation]] = {}


def _remember(trainer: Any, explanation: Explanation) -> None:
    key = id(trainer)
    _EXPLANATIONS[key] = (weakref.ref(trainer, lambda _: _EXPLANATIONS.pop(key, None)), explanation)


def trainer_explanation(trainer: Any) -> Explanation | None:
    """The Explanation of a ModelTrainer built by safe_estimators, else None."""
    found = _EXPLANATIONS.get(id(trainer))
    return found[1] if found is not None and found[0]() is trainer else None


def training_image(arguments: TrainerArguments, region: str) -> str:
    """The training image the estimator would pick (the SDK's own lookup and tables)."""
    image = arguments.image
    if image.get("image_uri"):
        return str(image["image_uri"])
    try:
        return str(_sdk().image_uris.get_training_image_uri(region=region, **image))
    except (ValueError, KeyError, TypeError) as exc:
        raise _sdk_refused(exc, "resolving the training image") from exc


def _configs(arguments: TrainerArguments) -> dict[str, Any]:
    """ModelTrainer's keyword arguments, as the SDK's config objects."""
    sdk = _sdk()
    configs = sdk.configs
    made: dict[str, Any] = {}
    for name, value in arguments.configs.items():
        if name == "source_code":
            made[name] = configs.SourceCode(**value)
        elif name == "compute":
            groups = [configs.InstanceGroup(**g) for g in value.get("instance_groups", ())]
            grouped = {"instance_groups": groups} if groups else {}
            made[name] = configs.Compute(**{**value, **grouped})
        elif name == "stopping_condition":
            made[name] = configs.StoppingCondition(**value)
        elif name == "networking":
            # sagemaker 2.x's Networking (a VpcConfig) requires both lists: empty ones mean
            # none, and its request builder then leaves VpcConfig out. 3.x's takes neither.
            fields = configs.Networking.model_fields
            required: dict[str, list[str]] = {
                k: [] for k in ("subnets", "security_group_ids") if fields[k].is_required()
            }
            made[name] = configs.Networking(**{**required, **value})
        elif name == "output_data_config":
            made[name] = configs.OutputDataConfig(**value)
        elif name == "checkpoint_config":
            made[name] = configs.CheckpointConfig(**value)
        elif name == "tags":
            made[name] = [configs.Tag(**tag) for tag in value]
        else:
            made[name] = value
    if arguments.distributed is not None:
        kind, fields = arguments.distributed
        if "distributed" in arguments.given:
            fields = {k: v for k, v in fields.items() if k != "smp"}
            made["distributed"] = _as_given(arguments.given["distributed"], fields)
        else:
            launcher = getattr(sdk.distributed, kind)
            if arguments.smp is not None:
                fields = {**fields, "smp": sdk.distributed.SMP(**arguments.smp)}
            made["distributed"] = launcher(**fields)
    if "input_data_config" in arguments.given:
        made["input_data_config"] = arguments.given["input_data_config"]
    elif arguments.inputs:
        made["input_data_config"] = [configs.InputData(**channel) for channel in arguments.inputs]
    for name, given in arguments.given.items():
        if name in made and name not in ("distributed", "input_data_config"):
            made[name] = _as_given(given, arguments.configs.get(name) or {})
    return made


_ENCRYPTION = "enable_inter_container_traffic_encryption"


def _org_encryption(arguments: TrainerArguments, session: Any) -> TrainerArguments:
    """An organisation's explicit TrainingJob.EnableInterContainerTrafficEncryption (the SDK
    defaults config) wins over the encryption we inject for a multi-instance job, as on the
    estimator target: ModelTrainer does not read that key, so our injection would overrule it."""
    injected = arguments.injections
    ours = next((i for i in injected if i.path == "encrypt_inter_container_traffic"), None)
    config = getattr(session, "sagemaker_config", None) or {}
    configured = config.get("SageMaker", {}).get("TrainingJob", {}).get(
        "EnableInterContainerTrafficEncryption"
    )
    if ours is None or not isinstance(configured, bool) or configured == ours.value:
        return arguments
    configs = dict(arguments.configs)
    # False is sent as no field, as the estimator sends it and as the bare ModelTrainer does.
    # Networking stays given (empty): sagemaker 2.x's ModelTrainer, given none, makes one
    # from the config that its own Networking class refuses.
    configs["networking"] = {**(configs.get("networking") or {}), _ENCRYPTION: configured or None}
    reason = (
        f"from the SageMaker SDK config; kept instead of the default {ours.value!r} "
        f"({ours.reason})"
    )
    injections = tuple(
        Injection(i.path, configured, reason) if i is ours else i for i in arguments.injections
    )
    return attrs.evolve(arguments, configs=configs, injections=injections)


def _as_given(given: Any, fields: dict[str, Any]) -> Any:
    """The user's config object itself, or a copy with the fields we set (each a recorded
    injection) when they differ: never rebuilt from scratch."""
    changed = {k: v for k, v in fields.items() if getattr(given, k, None) != v}
    return given.model_copy(update=changed) if changed else given


def _with_calls(trainer: Any, arguments: TrainerArguments) -> Any:
    configs = _sdk().configs
    calls = arguments.with_calls
    if "with_retry_strategy" in calls:
        trainer = trainer.with_retry_strategy(configs.RetryStrategy(**calls["with_retry_strategy"]))
    if "with_metric_definitions" in calls:
        trainer = trainer.with_metric_definitions(
            [configs.MetricDefinition(**m) for m in calls["with_metric_definitions"]]
        )
    return trainer


def _sdk_config(opt_out: bool = False) -> dict[str, Any]:
    """The SDK defaults config as the SDK loads it (``SAGEMAKER_USER_CONFIG_OVERRIDE``, the
    admin and user files), with telemetry off when ``opt_out``."""
    if sdk_generation() >= 3:
        from sagemaker.core.config.config import load_sagemaker_config

        from safe_estimators._targets.estimator import avoid_repeated_sdk3_work

        avoid_repeated_sdk3_work()  # validated once per content, as for sagemaker 2
    else:
        from sagemaker.config import load_sagemaker_config

        from safe_estimators._targets.estimator import _avoid_repeated_sdk_work

        _avoid_repeated_sdk_work()  # the config is validated once per content, as for estimators
    try:
        config: dict[str, Any] = load_sagemaker_config()
    except Exception as exc:  # the file it was pointed at: missing, not YAML, not its schema
        from safe_estimators._targets.estimator import _sdk_config_problem

        raise ConfigError([_sdk_config_problem(exc)]) from None
    if opt_out:
        config.setdefault("SchemaVersion", "1.0")
        modules = config.setdefault("SageMaker", {}).setdefault("PythonSDK", {})
        modules.setdefault("Modules", {})["TelemetryOptOut"] = True
    return config


def trainer_session(session_class: Any = None, opt_out: bool = False, **kwargs: Any) -> Any:
    """A ModelTrainer session (sagemaker-core's Session) that reads the SDK defaults config.

    sagemaker 3.x's Session loads the config itself. sagemaker 2.x's (sagemaker_core 1.x) has
    none: its ModelTrainer then applies no organisation defaults and cannot be told to send no
    telemetry, unlike the estimator; the config is given to it as the estimator's session holds
    it (``sagemaker_config``), which ModelTrainer's defaults and telemetry read.
    """
    session_class = session_class or _sdk().Session
    config = _sdk_config(opt_out)
    if sdk_generation() >= 3:
        return session_class(sagemaker_config=config, **kwargs)
    # 3.x's Session and the estimator's read the default bucket from the config too.
    modules = config.get("SageMaker", {}).get("PythonSDK", {}).get("Modules", {})
    bucket = modules.get("Session", {}).get("DefaultS3Bucket")
    if bucket and kwargs.get("default_bucket") is None:
        kwargs["default_bucket"] = bucket
    session = session_class(**kwargs)
    session.sagemaker_config = config
    return session


def _region(session: Any) -> str:
    boto_session = getattr(session, "boto_session", None)
    region = getattr(boto_session, "region_name", None)
    if not region:
        import boto3

        region = boto3.Session().region_name
    return region or PLACEHOLDER_REGION


def _role_arn(role: Any) -> bool:
    return isinstance(role, str) and role.startswith("arn:") and ":iam::" in role


def _lookups_at_build(arguments: TrainerArguments, session: Any) -> list[Injection]:
    """What ModelTrainer looks up through AWS while it is built on a session of ours, each
    recorded with the argument that spares the call (the estimator waits for ``fit()``).

    ModelTrainer resolves a missing role (STS GetCallerIdentity, then IAM) and its output
    location (``Session.default_bucket()``: STS for the account, then S3 HeadBucket and
    CreateBucket) in its constructor; sagemaker 3 looks a role name up in IAM there too.
    """
    found = []
    role = arguments.configs.get("role") or configured_role(session)
    if role is None:
        found.append(
            Injection(
                "role",
                "<the caller's role>",
                "not given: ModelTrainer looks up the caller's role through STS and IAM while it "
                "is built (AWS calls at build time); pass role='arn:aws:iam::<account>:role/"
                "<name>' to build without them.",
            )
        )
    elif not _role_arn(role) and sdk_generation() >= 3:  # sagemaker 2 sends it: a rule refuses
        found.append(
            Injection(
                "role",
                role,
                f"{role!r} is a role name: sagemaker 3's ModelTrainer looks its ARN up through "
                f"IAM while it is built (an AWS call at build time); give the ARN, "
                f"arn:aws:iam::<account>:role/{role}, to build without it.",
            )
        )
    if not (arguments.configs.get("output_data_config") or {}).get("s3_output_path"):
        found.append(
            Injection(
                "output_path",
                "<the default bucket>",
                "not given: ModelTrainer fixes its output location while it is built, from the "
                "SageMaker SDK's default bucket, which it looks up (and creates) through STS and "
                "S3 at that moment; pass output_path='s3://<bucket>/<prefix>' to build without "
                "those calls.",
            )
        )
    return found


def _lookup_failed(lookups: list[Injection], exc: Exception) -> ConfigError:
    """The AWS lookups ModelTrainer makes while it is built could not be made."""
    return ConfigError(
        [
            Problem(
                lookup.path,
                f"needs an AWS lookup while ModelTrainer is built ({lookup.reason.split(';')[0]}),"
                f" and it failed: {type(exc).__name__}: {exc}.",
                lookup.reason.rpartition("; ")[2].rstrip(".") + ", or configure AWS credentials.",
            )
            for lookup in lookups
        ]
    )


def _recipe_image(job: ResolvedJob, region: str) -> str:
    """The recipe image the estimator retrieves (training_recipes.json's gpu_image or
    neuron_image, through the SDK's image_uris), for a recipe job in the estimator's words."""
    from safe_estimators._recipes import facts

    kind = job.instance.accelerator_kind if job.instance is not None else None
    config = facts.recipes_config().get("neuron_image" if kind == "neuron" else "gpu_image")
    if isinstance(config, str):
        return config
    if not isinstance(config, dict):
        raise _sdk_refused(ValueError("training_recipes.json names no image"), "the recipe image")
    try:
        return str(
            _sdk().image_uris.retrieve(
                config.get("framework"),
                region=region,
                version=config.get("version"),
                image_scope="training",
                **(config.get("additional_args") or {}),
            )
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise _sdk_refused(exc, "resolving the recipe image") from exc


def recipe_training_image(
    job: ResolvedJob, injections: tuple[Injection, ...], region: str
) -> Any:
    """The training_image a recipe job's ``from_recipe`` is given: the job's image_uri, else
    the recipe image the estimator retrieves where it is injected (sagemaker 3's from_recipe
    would send its placeholder, "dummy_image"), else None."""
    image = job.kwargs.get("image_uri")
    if image is None and any(i.path == "training_image" for i in injections):
        return _recipe_image(job, region)
    return image


def _from_recipe(job: ResolvedJob, kwargs: dict[str, Any], *, offline: bool) -> Any:
    """``ModelTrainer.from_recipe`` handed the recipe we checked, merged, as a local file (no
    clone of the recipes collection). It clones the training adapter (or the Neuron
    repository) while it is built: from GitHub for a build, from local stand-ins for a plan
    (``offline``, with the recipe resolved here: nothing of this machine reaches the plan)."""
    from safe_estimators._recipes.offline import _PLANNING, handed_recipe, redirected_clones

    name = job.kwargs["training_recipe"]
    overrides = job.kwargs.get("recipe_overrides")
    given = {"training_recipe": name, "recipe_overrides": overrides}
    with contextlib.ExitStack() as stack:
        if offline:
            # The redirect lives in os.environ, shared by every thread: one recipe plan at a time.
            stack.enter_context(_PLANNING)
            root = stack.enter_context(tempfile.TemporaryDirectory(prefix="safe-estimators-plan-"))
            handed = stack.enter_context(handed_recipe(given, resolved=True))
            stack.enter_context(redirected_clones(root))
        else:
            handed = stack.enter_context(handed_recipe(given))
        trainer = _sdk().ModelTrainer.from_recipe(
            training_recipe=handed["training_recipe"],
            recipe_overrides=handed.get("recipe_overrides"),
            **kwargs,
        )
    # As the bare from_recipe keeps them (get_resolved_recipe reads them again).
    trainer._training_recipe = name
    trainer._recipe_overrides = overrides
    return trainer


def build_model_trainer(
    job: ResolvedJob, sagemaker_session: Any = None, *, offline: bool = False
) -> Any:
    """Construct the ModelTrainer for ``job`` (``train()`` runs it) and remember its
    Explanation (``explain``).

    Without ``sagemaker_session``, a job with a role ARN and an output path is built with no AWS
    call (a role ARN is not checked through IAM here, as sagemaker 3 would: CreateTrainingJob
    checks it when ``train()`` runs). A job without them makes the lookups ModelTrainer's
    constructor makes (STS, IAM, S3): each is recorded in ``explain()`` with the argument that
    spares it, and one that fails (no credentials) is our ConfigError naming that argument.
    """
    sdk = _sdk()
    arguments = trainer_arguments(job)
    session = sagemaker_session
    lookups: list[Injection] = []
    if session is None:
        session = trainer_session(boto_session=default_boto_session())
        lookups = _lookups_at_build(arguments, session)
    arguments = _org_encryption(arguments, session)
    recipe = job.kwargs.get("training_recipe")
    injections = arguments.injections
    if recipe is not None:
        image = recipe_training_image(job, injections, _region(session))
        kwargs = {**_configs(arguments), "sagemaker_session": session}
        if job.kwargs.get("image_uri") is None and image is not None:
            injections = tuple(
                Injection(i.path, image, i.reason) if i.path == "training_image" else i
                for i in injections
            )
        if image is not None:
            kwargs["training_image"] = image
    else:
        image = training_image(arguments, _region(session))
        kwargs = {**_configs(arguments), "training_image": image, "sagemaker_session": session}
    checked = _role_not_validated() if _role_arn(kwargs.get("role")) else contextlib.nullcontext()
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        with checked:
            if recipe is not None:
                trainer = _from_recipe(job, kwargs, offline=offline)
            else:
                trainer = sdk.ModelTrainer(**kwargs)
            trainer = _with_calls(trainer, arguments)
    except (BotoCoreError, ClientError) as exc:  # a lookup at build: no credentials, denied
        if not lookups:
            raise
        raise _lookup_failed(lookups, exc) from None
    except (ValueError, TypeError) as exc:  # pydantic's ValidationError is a ValueError
        raise _sdk_refused(exc, "constructing ModelTrainer") from exc
    explanation = job_explanation(
        job,
        f"model_trainer ({job.estimator} container)",
        [*injections, *lookups],
        image,
    )
    _remember(trainer, explanation)
    return trainer


# --- offline requests (plan) ------------------------------------------------------------------

_OFFLINE_LOCK = threading.Lock()


def offline_trainer_session(region: str | None) -> Any:
    """A real ModelTrainer session (sagemaker-core's Session) whose calls never leave the
    machine: its default bucket is given (no STS or S3 call), S3 uploads are answered locally,
    CreateTrainingJob's parameters are captured where boto3 would send them, and any other call
    is refused."""

    class _OfflineSession(_sdk().Session):  # type: ignore[misc,name-defined]
        def default_bucket(self) -> str:
            # The bucket given (through the SDK config), else a placeholder: no STS or S3 call.
            return self._default_bucket_name_override or PLACEHOLDER_BUCKET

    return trainer_session(_OfflineSession, opt_out=True, boto_session=capturing_session(region))




@contextlib.contextmanager
def _own_sagemaker_client() -> Iterator[None]:
    """sagemaker_core 1.x (sagemaker 2.x) keeps one SageMakerClient per process, made from the
    first session that asks: set it aside while the plan's session asks, then put it back, so
    that neither sees the other's client. sagemaker 3.x keeps one per session."""
    try:
        from sagemaker_core.main.utils import SageMakerClient, SingletonMeta
    except ImportError:
        yield
        return
    instances = SingletonMeta._instances
    saved = instances.pop(SageMakerClient, None)
    try:
        yield
    finally:
        instances.pop(SageMakerClient, None)
        if saved is not None:
            instances[SageMakerClient] = saved


@contextlib.contextmanager
def _role_not_validated() -> Iterator[None]:
    """sagemaker 3.x validates the role through IAM when a ModelTrainer is built, unless
    SAGEMAKER_VALIDATE_ROLE=false (iam_role_resolver.resolve_and_validate_role)."""
    previous = os.environ.get("SAGEMAKER_VALIDATE_ROLE")
    os.environ["SAGEMAKER_VALIDATE_ROLE"] = "false"
    try:
        yield
    finally:
        if previous is None:
            del os.environ["SAGEMAKER_VALIDATE_ROLE"]
        else:
            os.environ["SAGEMAKER_VALIDATE_ROLE"] = previous


def _driver_files(trainer: Any) -> dict[str, str]:
    """The files ModelTrainer wrote for the sm_drivers channel: the launcher settings
    (distributed.json), the source settings (sourcecode.json) and the entry point (sm_train.sh)."""
    folder = getattr(getattr(trainer, "_temp_code_dir", None), "name", None)
    found: dict[str, str] = {}
    if folder is None:
        return found
    for name in ("distributed.json", "sourcecode.json", "sm_train.sh"):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as handle:
                found[name] = handle.read()
    return found


def configured_role(session: Any) -> Any:
    """The execution role the SDK defaults config sets (SageMaker.TrainingJob.RoleArn), if any."""
    config = getattr(session, "sagemaker_config", None) or {}
    return config.get("SageMaker", {}).get("TrainingJob", {}).get("RoleArn")


def submit_model_trainer(job: ResolvedJob, region: str, check_request: Any, wait: bool) -> str:
    """Start the job's ModelTrainer for ``submit``: ``check_request`` sees CreateTrainingJob
    first (on botocore's ``provide-client-params`` event, so a refused request is never sent).
    Returns the job's name."""
    import boto3

    boto_session = boto3.Session(region_name=region)
    boto_session.events.register("provide-client-params.sagemaker.CreateTrainingJob", check_request)
    trainer = build_model_trainer(job, trainer_session(boto_session=boto_session))
    with _own_sagemaker_client():
        trainer.train(wait=wait, logs=wait)
    name: str = trainer._latest_training_job.training_job_name
    return name


def capture_train_request(trainer: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """Run ``trainer.train()`` (a ModelTrainer on ``offline_trainer_session``, built here or by
    hand) up to the request: the CreateTrainingJob parameters sagemaker-core's
    ``TrainingJob.create`` hands to boto3, and the driver files it wrote."""
    with _OFFLINE_LOCK, _role_not_validated():
        try:
            with _own_sagemaker_client():
                trainer.train(wait=False, logs=False)
        except _Captured as captured:
            request = captured.request
        else:  # pragma: no cover - train() returned without creating a job
            raise RuntimeError("ModelTrainer.train() sent no CreateTrainingJob request")
        files = _driver_files(trainer)
        temp = getattr(trainer, "_temp_code_dir", None)
        if temp is not None:
            temp.cleanup()
    return request, files


def plan_model_trainer(
    job: ResolvedJob, session: Any
) -> tuple[Any, dict[str, Any], dict[str, str]]:
    """Build the job's ModelTrainer on ``session`` (``offline_trainer_session``) and capture
    the request its own ``train()`` sends (``capture_train_request``)."""
    with _role_not_validated():
        trainer = build_model_trainer(job, session, offline=True)
    return (trainer, *capture_train_request(trainer))
