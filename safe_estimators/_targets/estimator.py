"""The estimator target: a resolved job as a real ``sagemaker.huggingface.HuggingFace`` or
``sagemaker.pytorch.PyTorch`` estimator (sagemaker 2.x), and its offline request."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from safe_estimators._cache import cache_folder, read_cached, write_atomically
from safe_estimators._distributions.torchrun import concrete_instance_type_needed
from safe_estimators._problems import ConfigError, Problem
from safe_estimators._recipes.offline import handed_recipe
from safe_estimators._resolve import ResolvedJob
from safe_estimators._resolved import Injection
from safe_estimators._targets.shared import (
    PLACEHOLDER_BUCKET,
    PLACEHOLDER_REGION,
    OfflineCallRefused,
    _botocore_session,
    _offline_send,
    _sdk_loader,
    _sdk_refused,
    default_boto_session,
    job_explanation,
)

EXPLANATION_ATTRIBUTE = "safe_estimators"


# --- the SDK defaults config, validated once per content ---------------------------------------

# The SDK re-validates the whole defaults config against its JSON Schema on every lookup
# (sagemaker.utils.get_sagemaker_config_value, behind resolve_value_from_config and the other
# resolve_* helpers; about twenty per estimator and fit), and jsonschema checks the large schema
# itself each time: about 0.15 s per call, most of a plan. The SDK's own validation runs once for
# each distinct content; a content it refused is refused again on every call.
_VALIDATED: dict[Any, None] = {}  # keys of contents the SDK's validation accepted
_VALIDATED_MAX = 64
_INSTALL_LOCK = threading.Lock()
_SCALARS = (str, int, float, bool, type(None))
# The SDK modules that call validate_sagemaker_config by a name of their own.
_CALLERS = ("sagemaker.config.config", "sagemaker.config", "sagemaker.utils", "sagemaker.session")


def _content_key(value: Any) -> Any:
    """A hashable key equal only for equal plain data (types included); TypeError otherwise."""
    kind = type(value)
    if kind is dict:
        return (dict, tuple((_content_key(k), _content_key(v)) for k, v in value.items()))
    if kind is list or kind is tuple:
        return (kind, tuple(_content_key(v) for v in value))
    if kind in _SCALARS:
        return (kind, value)
    raise TypeError(f"not plain data: {kind.__name__}")


def _validating_once(original: Any) -> Any:
    def validate_sagemaker_config(sagemaker_config: Any = None) -> None:
        try:
            key = _content_key(sagemaker_config)
        except (TypeError, RecursionError):  # dates, custom objects: validate every time
            original(sagemaker_config)
            return
        if key in _VALIDATED:
            return
        original(sagemaker_config)
        if len(_VALIDATED) >= _VALIDATED_MAX:
            _VALIDATED.clear()
        _VALIDATED[key] = None

    validate_sagemaker_config.__doc__ = original.__doc__
    validate_sagemaker_config.__wrapped__ = original  # type: ignore[attr-defined]
    validate_sagemaker_config.safe_estimators_once = True  # type: ignore[attr-defined]
    return validate_sagemaker_config


def _avoid_repeated_sdk_work() -> None:
    """Stop the SDK redoing work whose result cannot change within a process (idempotent):
    validating the same defaults config (and its own schema) again, parsing botocore's endpoints
    table again, and parsing the SageMaker service model again for boto3's default session."""
    import sagemaker.config.config as sdk_config

    if hasattr(sdk_config.validate_sagemaker_config, "safe_estimators_once"):
        return
    with _INSTALL_LOCK:
        if hasattr(sdk_config.validate_sagemaker_config, "safe_estimators_once"):
            return
        _resolve_endpoints_once()
        _validate_config_once(sdk_config.validate_sagemaker_config)
        _share_parsed_models_with_boto3_default()


# sagemaker 3 validates through SageMakerConfig.validate_sagemaker_config (a staticmethod, which
# ModelTrainer's defaults call for each of about ten lookups) and through
# sagemaker.core.config.config's function, imported by name into the modules listed here.
_SDK3_CALLERS = (
    "sagemaker.core.config.config",
    "sagemaker.core.config",
    "sagemaker.core.helper.session_helper",
    "sagemaker.core.utils.intelligent_defaults_helper",
)


def avoid_repeated_sdk3_work() -> None:
    """sagemaker 3's defaults config validated once per content, and its schema's own check
    once per schema content, as ``_avoid_repeated_sdk_work`` does for sagemaker 2 (idempotent)."""
    import importlib
    import sys

    from sagemaker.core.config.config_manager import SageMakerConfig

    method = SageMakerConfig.__dict__.get("validate_sagemaker_config")
    original = getattr(method, "__func__", None)
    if original is None or hasattr(original, "safe_estimators_once"):
        return
    with _INSTALL_LOCK:
        method = SageMakerConfig.__dict__.get("validate_sagemaker_config")
        original = getattr(method, "__func__", None)
        if original is None or hasattr(original, "safe_estimators_once"):
            return
        SageMakerConfig.validate_sagemaker_config = staticmethod(  # type: ignore[method-assign]
            _validating_once(_schema_checked_once(original))
        )
        function = importlib.import_module(_SDK3_CALLERS[0]).validate_sagemaker_config
        once = _validating_once(_schema_checked_once(function))
        modules: list[Any] = [importlib.import_module(name) for name in _SDK3_CALLERS]
        modules.append(sys.modules.get("sagemaker.core.local.local_session"))
        for module in modules:
            if getattr(module, "validate_sagemaker_config", None) is function:
                module.validate_sagemaker_config = once


# jsonschema.validate(config, schema) first checks the schema itself against its metaschema
# (check_schema: about half a second for the SDK's large schema, in every process that plans),
# then the config against the schema. The schema is a constant of the installed SDK, so its check
# is remembered per schema content in the cache folder; the config is validated every time, as
# jsonschema.validate does. Both functions are reproduced only while their code is the code
# reproduced here (the names they use); otherwise the SDK's own function runs.
_SDK_VALIDATE_NAMES = ("jsonschema", "validate", "SAGEMAKER_PYTHON_SDK_CONFIG_SCHEMA")
_JSONSCHEMA_VALIDATE_NAMES = (
    "validator_for",
    "check_schema",
    "exceptions",
    "best_match",
    "iter_errors",
)


def _schema_checked_once(original: Any) -> Any:
    """The SDK's ``validate_sagemaker_config`` with the SDK schema's own check done once per
    schema content on this machine (``original`` itself when it is not the code expected)."""
    import jsonschema

    sdk_code = getattr(original, "__code__", None)
    validate_code = getattr(jsonschema.validate, "__code__", None)
    if (
        sdk_code is None
        or validate_code is None
        or sdk_code.co_names != _SDK_VALIDATE_NAMES
        or validate_code.co_names != _JSONSCHEMA_VALIDATE_NAMES
    ):
        return original

    # The schema the SDK's function reads (sagemaker.config.config's on 2.x; on 3.x the same
    # name in sagemaker.core.config.config and config_manager).
    sdk_globals = original.__globals__

    def validate_sagemaker_config(sagemaker_config: Any = None) -> None:
        schema = sdk_globals["SAGEMAKER_PYTHON_SDK_CONFIG_SCHEMA"]
        cls = jsonschema.validators.validator_for(schema)
        record = _schema_record(schema, cls)
        if not _checked_before(record):
            cls.check_schema(schema)  # raises for a schema that is not valid: nothing recorded
            _record_checked(record)
        error = jsonschema.exceptions.best_match(cls(schema).iter_errors(sagemaker_config))
        if error is not None:
            raise error

    validate_sagemaker_config.__doc__ = original.__doc__
    validate_sagemaker_config.__wrapped__ = original  # type: ignore[attr-defined]
    return validate_sagemaker_config


_CHECKED_SCHEMAS: set[bytes] = set()  # the schema records seen valid in this process


def _schema_record(schema: Any, cls: Any) -> bytes | None:
    """What identifies the check of ``schema`` by ``cls``: the validator, jsonschema's version
    and the schema's content (None when it cannot be written down)."""
    import hashlib
    import importlib.metadata

    try:
        text = json.dumps(schema, sort_keys=True)
    except (TypeError, ValueError):
        return None
    digest = hashlib.sha256(text.encode()).hexdigest()
    return f"{cls.__name__}\n{importlib.metadata.version('jsonschema')}\n{digest}\n".encode()


def _record_file(record: bytes) -> Path | None:
    import hashlib

    folder = cache_folder()
    name = f"sdk-config-schema-{hashlib.sha256(record).hexdigest()[:16]}.checked"
    return None if folder is None else folder / name


def _checked_before(record: bytes | None) -> bool:
    if record is None:
        return False
    if record in _CHECKED_SCHEMAS:
        return True
    path = _record_file(record)
    found = path is not None and read_cached(path) == record
    if found:
        _CHECKED_SCHEMAS.add(record)
    return found


def _record_checked(record: bytes | None) -> None:
    if record is None:
        return
    _CHECKED_SCHEMAS.add(record)
    path = _record_file(record)
    if path is not None:
        write_atomically(path, record)


def _validate_config_once(original: Any) -> None:
    import importlib
    import sys

    once = _validating_once(_schema_checked_once(original))
    # Each caller bound the function to its own name when it was imported: import them, then
    # rebind. LocalSession's module, when imported later, takes it from sagemaker.config.
    modules: list[Any] = [importlib.import_module(name) for name in _CALLERS]
    modules.append(sys.modules.get("sagemaker.local.local_session"))
    for module in modules:
        if getattr(module, "validate_sagemaker_config", None) is original:
            module.validate_sagemaker_config = once


def _share_parsed_models_with_boto3_default() -> None:
    """Let boto3's default session read the service models the SDK has parsed already.

    Every estimator the SDK builds makes a SageMaker client for its TensorBoard app with
    ``boto3.client`` (``interactive_apps/base_interactive_app.py``), which creates boto3's default
    session on first use and, with it, a new loader that parses the 2.6 MB SageMaker model again:
    about 0.2 s of every fresh process that builds an estimator. The default session is created
    here as ``boto3.client`` would create it, moments before the SDK asks for it, with the parsed
    data files of the SDK's import-time session (``_sdk_loader``). A default session that
    already exists is the user's and is left alone.
    """
    import boto3

    if boto3.DEFAULT_SESSION is not None:
        return
    try:
        boto3.setup_default_session()
    except Exception:  # e.g. AWS_PROFILE names no profile: the SDK meets it where it always did
        return
    default: Any = boto3.DEFAULT_SESSION
    core = default._session
    loader = _sdk_loader(core)
    if loader is not None:
        core.register_component("data_loader", loader)


def _resolve_endpoints_once() -> None:
    """Load botocore's endpoints table once, as a botocore session does for all its clients.

    The SDK's ``sagemaker.utils._botocore_resolver()`` makes a new loader and parses the whole
    table (endpoints.json) on every image URI and partition lookup: about 0.2 s each, twice per
    fit. The resolver only adds derived keys to the entries it returns, so one is reused.
    """
    import functools

    import sagemaker.utils as sdk_utils

    original = getattr(sdk_utils, "_botocore_resolver", None)
    if original is None or hasattr(original, "cache_info"):
        return
    sdk_utils._botocore_resolver = functools.lru_cache(maxsize=1)(original)


def _classes(estimator: str) -> tuple[Any, Any]:
    """The estimator class and its TrainingCompilerConfig class."""
    import importlib

    _avoid_repeated_sdk_work()
    module: Any = importlib.import_module(f"sagemaker.{estimator}")
    name = {"huggingface": "HuggingFace", "pytorch": "PyTorch"}[estimator]
    return getattr(module, name), module.TrainingCompilerConfig


def estimator_arguments(job: ResolvedJob, sagemaker_session: Any = None) -> dict[str, Any]:
    """The exact keyword arguments handed to the SDK estimator class."""
    kwargs = dict(job.kwargs)
    if job.training_compiler is not None:
        config_class = _classes(job.estimator)[1]
        kwargs["compiler_config"] = config_class(enabled=True, debug=job.training_compiler.debug)
    if sagemaker_session is not None:
        kwargs["sagemaker_session"] = sagemaker_session
    if "instance_groups" in kwargs:
        _instance_group_objects(kwargs)
    return kwargs


def _instance_group_objects(kwargs: dict[str, Any]) -> None:
    """SDK InstanceGroup objects, and the distribution's group names as those same objects."""
    from sagemaker.instance_group import InstanceGroup

    groups = [InstanceGroup(**arguments) for arguments in kwargs["instance_groups"]]
    kwargs["instance_groups"] = groups
    distribution = kwargs.get("distribution")
    if distribution and "instance_groups" in distribution:
        by_name = {g.instance_group_name: g for g in groups}
        distribution = dict(distribution)
        distribution["instance_groups"] = [by_name[n] for n in distribution["instance_groups"]]
        kwargs["distribution"] = distribution


def _construct(estimator_class: Any, kwargs: dict[str, Any]) -> Any:
    """The estimator, around the SDK's torchrun check that misreads pipeline parameters.

    ``validate_torch_distributed_distribution`` takes any non-string instance type for a CPU
    (SDK issue #5515). Our rules checked the parameter through its default and its
    ``enum_values``; the SDK checks the default here, and the parameter goes back in before
    anything reads it, with the volume KMS key the SDK resolves for pipeline parameters.
    """
    if not concrete_instance_type_needed(kwargs):
        return estimator_class(**kwargs)
    parameter = kwargs["instance_type"]
    estimator = estimator_class(**{**kwargs, "instance_type": parameter.default_value})
    estimator.instance_type = parameter
    if kwargs.get("volume_kms_key") is None:
        from sagemaker.config import TRAINING_JOB_VOLUME_KMS_KEY_ID_PATH
        from sagemaker.utils import resolve_value_from_config

        estimator.volume_kms_key = resolve_value_from_config(
            None, TRAINING_JOB_VOLUME_KMS_KEY_ID_PATH, sagemaker_session=estimator.sagemaker_session
        )
    return estimator


def _local_session(job: ResolvedJob, sagemaker_session: Any) -> Any:
    """Local mode needs a LocalSession: make one, or refuse a remote session up front."""
    if job.spec.instance_type not in ("local", "local_gpu"):
        return sagemaker_session
    if sagemaker_session is None:
        from sagemaker.local import LocalSession

        return LocalSession()
    if not getattr(sagemaker_session, "local_mode", False):
        raise ConfigError(
            [
                Problem(
                    "sagemaker_session",
                    f"instance_type={job.spec.instance_type!r} runs in local mode, which needs a "
                    f"LocalSession, not a {type(sagemaker_session).__name__}.",
                    "pass sagemaker_session=sagemaker.local.LocalSession(), or leave it out.",
                )
            ]
        )
    return sagemaker_session


def _config_value(session: Any, path_name: str) -> Any:
    from sagemaker import config
    from sagemaker.utils import get_config_value

    # The session validated its config when it loaded it; the SDK's own lookup re-validates the
    # whole file with jsonschema on every call (~0.2 s each).
    return get_config_value(getattr(config, path_name), getattr(session, "sagemaker_config", None))


def submitting_session(region: str, check_request: Any) -> Any:
    """A real sagemaker.Session for ``submit``: ``check_request`` sees CreateTrainingJob first.

    The hook runs on botocore's ``provide-client-params`` event, so the request it raises on is
    never sent.
    """
    import boto3
    import sagemaker

    boto_session = boto3.Session(region_name=region)
    boto_session.events.register("provide-client-params.sagemaker.CreateTrainingJob", check_request)
    return sagemaker.Session(boto_session=boto_session)


def configured_bucket(session: Any) -> str | None:
    """The SDK config's ``SageMaker.PythonSDK.Modules.Session.DefaultS3Bucket``, as the SDK's
    ``Session`` resolved it (None: not set)."""
    name = getattr(session, "_default_bucket_name_override", None)
    return name if isinstance(name, str) and name else None


def configured_role(session: Any) -> Any:
    """The execution role the SageMaker SDK config sets (TrainingJob.RoleArn), if any."""
    return _config_value(session, "TRAINING_JOB_ROLE_ARN_PATH")


def _respect_sdk_config(
    kwargs: dict[str, Any], injections: tuple[Injection, ...], session: Any
) -> tuple[Injection, ...]:
    """Let an organisation's SDK defaults (sagemaker.config) win over our injected defaults.

    The SDK applies a config value only where the caller passes None, and takes a passed
    ``environment`` whole: an injected GPU_NUM_DEVICES would silently drop the organisation's
    environment defaults. So config environment entries are merged under ours, and an injected
    boolean default is withdrawn where the config sets that field explicitly.
    """
    if session is None or getattr(session, "local_mode", False):
        return injections
    kept = list(injections)
    org_env = _config_value(session, "TRAINING_JOB_ENVIRONMENT_PATH")
    if org_env and "environment" in kwargs:
        kwargs["environment"] = {**org_env, **kwargs["environment"]}
        kept.append(
            Injection(
                "environment",
                sorted(org_env),
                "merged from the SageMaker SDK config (TrainingJob.Environment): the SDK would "
                "drop them once an environment is passed.",
            )
        )
    for field, path_name in (
        ("encrypt_inter_container_traffic", "TRAINING_JOB_INTER_CONTAINER_ENCRYPTION_PATH"),
        ("disable_profiler", "TRAINING_JOB_DISABLE_PROFILER_PATH"),
    ):
        ours = next((i for i in kept if i.path == field), None)
        configured = _config_value(session, path_name)
        if ours is not None and configured is not None:
            del kwargs[field]
            kept.remove(ours)
            kept.append(
                Injection(
                    field,
                    configured,
                    f"from the SageMaker SDK config; kept instead of the default {ours.value!r} "
                    f"({ours.reason})",
                )
            )
    return tuple(kept)


def build_estimator(job: ResolvedJob, sagemaker_session: Any = None) -> Any:
    """Construct the SageMaker estimator for ``job`` and attach its Explanation."""
    estimator_class = _classes(job.estimator)[0]
    session = _local_session(job, sagemaker_session)
    if session is None:
        import sagemaker

        # What the estimator would create (we need its config), in a region we can name: the
        # SDK's own refusal is a bare ValueError.
        session = sagemaker.Session(boto_session=default_boto_session())
    kwargs = estimator_arguments(job, session)
    injections = _respect_sdk_config(kwargs, job.injections, session)
    try:
        with handed_recipe(kwargs) as kwargs:  # the recipe checked, as a local file
            estimator = _construct(estimator_class, kwargs)
        # The SDK validates distributions (validate_mp_config, smdistributed on p5, ...) only
        # when it computes the hyperparameters; do it now so a refusal is a ConfigError here,
        # not a traceback at fit().
        estimator.hyperparameters()
    except (ValueError, TypeError, KeyError, AttributeError, RuntimeError) as exc:
        raise _sdk_refused(exc, f"constructing {estimator_class.__name__}") from exc
    image_uri: Any = None
    if isinstance(job.kwargs.get("instance_type"), str) or job.spec.instance_groups:
        image_uri = estimator.training_image_uri
        if job.instance is not None and job.instance.accelerator_kind == "neuron":
            # Our version rules do not cover the Neuron image tables: resolve now, so a miss is
            # a ConfigError here and not a failure at fit().
            try:
                image_uri = image_uri()
            except (ValueError, KeyError) as exc:
                raise _sdk_refused(exc, "resolving the training image") from exc
    if job.spec.extra.get("training_recipe") is not None and isinstance(estimator.image_uri, str):
        # The recipe image the SDK resolved for the session's region: the URI that is sent.
        injections = tuple(
            Injection(i.path, estimator.image_uri, i.reason) if i.path == "image_uri" else i
            for i in injections
        )
    explanation = job_explanation(job, job.estimator, injections, image_uri)
    setattr(estimator, EXPLANATION_ATTRIBUTE, explanation)
    return estimator


# --- offline requests (plan) ------------------------------------------------------------------

__all__ = ["OfflineCallRefused"]  # raised by the offline session's calls

# Offline plans in one region share a boto3 session (with _offline_send) and the SageMaker
# clients the SDK would create: making them loads and builds botocore's service models, about
# 0.3 s a plan. Every session still gets its own config, S3 client and captured request.
_OFFLINE_CLIENTS: dict[str, tuple[Any, dict[str, Any]]] = {}
_OFFLINE_LOCK = threading.Lock()
_SESSION_CLIENTS = (
    "sagemaker_client",
    "sagemaker_runtime_client",
    "sagemaker_featurestore_runtime_client",
    "sagemaker_metrics_client",
)


def offline_session(region: str | None, bucket: str | None, *, local: bool = False) -> Any:
    """A real sagemaker.Session that captures CreateTrainingJob instead of sending it.

    The SDK builds the request with its own code (``Session._get_train_request``) and hands it to
    ``_intercept_create_request`` (the hook PipelineSession uses); here that hook keeps the
    request. S3 uploads of the source code are answered locally; any other call is refused.
    The SDK defaults config (organisation tags, KMS keys, VPC) still applies; telemetry is off.
    ``local``: a LocalSession (local mode) that captures the same request before it reaches
    ``LocalSagemakerClient.create_training_job``, so no container (no Docker) is started.
    """
    import boto3
    import sagemaker
    from sagemaker.config import load_sagemaker_config
    from sagemaker.local import LocalSession

    _avoid_repeated_sdk_work()

    class _Capturing:
        captured: dict[str, Any] | None = None

        def default_bucket(self) -> str:
            # Never the SDK's own: it asks S3 whether the bucket exists, or creates it. The
            # SDK config's DefaultS3Bucket (read by Session.__init__) is used as it is; its
            # DefaultS3ObjectKeyPrefix is applied by the SDK's estimator code.
            return bucket or configured_bucket(self) or PLACEHOLDER_BUCKET

        def _intercept_create_request(
            self, request: dict[Any, Any], create: Any, func_name: str | None = None
        ) -> Any:
            self.captured = request

    class _CapturingSession(_Capturing, sagemaker.Session):  # type: ignore[misc]
        pass

    class _CapturingLocalSession(_Capturing, LocalSession):  # type: ignore[misc]
        pass

    try:
        config = load_sagemaker_config()
    except Exception as exc:  # the file it was pointed at: missing, not YAML, not its schema
        raise ConfigError([_sdk_config_problem(exc)]) from None
    config.setdefault("SchemaVersion", "1.0")
    modules = config.setdefault("SageMaker", {}).setdefault("PythonSDK", {})
    modules.setdefault("Modules", {})["TelemetryOptOut"] = True
    region = region or PLACEHOLDER_REGION
    with _OFFLINE_LOCK:  # a boto3 session is not thread-safe while it creates clients
        reused = _OFFLINE_CLIENTS.get(region)
        if reused is not None:
            boto_session, clients = reused
            if local:
                return _CapturingLocalSession(boto_session=boto_session, sagemaker_config=config)
            return _CapturingSession(boto_session=boto_session, sagemaker_config=config, **clients)
        boto_session = boto3.Session(
            botocore_session=_botocore_session(),
            region_name=region,
            aws_access_key_id="PLAN",
            aws_secret_access_key="PLAN",  # never sent: every call is answered locally
        )
        boto_session.events.register("before-send", _offline_send)
        session = _CapturingSession(boto_session=boto_session, sagemaker_config=config)
        _OFFLINE_CLIENTS[region] = (
            boto_session,
            {name: getattr(session, name) for name in _SESSION_CLIENTS},
        )
        if local:
            return _CapturingLocalSession(boto_session=boto_session, sagemaker_config=config)
        return session


def _sdk_config_problem(exc: Exception) -> Problem:
    import os

    from safe_estimators._bounds import quote

    named = [f"${v}" for v in _CONFIG_VARIABLES if os.environ.get(v)]
    return Problem(
        named[0] if named else "<sagemaker config>",
        f"the SageMaker SDK cannot load its config file ({type(exc).__name__}: "
        f"{quote(str(exc), 200)}); fit() and submit would fail the same way.",
        "fix the file (the SDK's config schema), or point the variable at a readable file.",
    )


# Where the SDK reads its config files from (sagemaker.config.config), besides its defaults.
_CONFIG_VARIABLES = ("SAGEMAKER_USER_CONFIG_OVERRIDE", "SAGEMAKER_ADMIN_CONFIG_OVERRIDE")


def capture_request(estimator: Any, inputs: Any = None, job_name: str | None = None) -> Any:
    """Run the SDK's own fit() on an offline session; return the CreateTrainingJob request."""
    session = estimator.sagemaker_session
    estimator.fit(inputs=inputs, wait=False, logs=False, job_name=job_name)
    return session.captured
