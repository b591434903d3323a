"""An offline plan: the resolved job and the exact CreateTrainingJob request the SDK would send."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from safe_estimators._bounds import MAX_PROBLEMS, markdown_code, markdown_text, printable, quote
from safe_estimators._commands.validate import offline
from safe_estimators._facts.sdk_files import default_target, sdk_generation
from safe_estimators._facts.targets import FINE_TUNING, MODEL_TRAINER, REMOTE_FUNCTION
from safe_estimators._problems import ConfigError, Problem, problem_source, tagged
from safe_estimators._recipes.offline import planned_recipe_job
from safe_estimators._resolve import resolve_arguments
from safe_estimators._resolved import Explanation
from safe_estimators._secret_formats import mask_text, masked
from safe_estimators._spec import JobSpec
from safe_estimators._spec_files.read import job_arguments, offline_problems, sdk_config_problems
from safe_estimators._targets.shared import REGION_SOURCES, job_region, known_region


@attrs.frozen
class Plan:
    """What a spec would launch, computed offline by the SageMaker SDK's own request code.

    ``request`` is the CreateTrainingJob parameters exactly as the SDK passes them to boto3
    (printed, ``to_dict()`` and the tables show suspected secrets in it cut short);
    ``explanation`` says what safe_estimators injected and why; ``placeholders`` lists the values
    (region, bucket, role) that were made up because the spec gives none.
    """

    request: dict[str, Any]
    explanation: Explanation
    placeholders: tuple[str, ...] = ()
    source: str | None = None
    # The files a ModelTrainer uploads in its sm_drivers channel (distributed.json, ...).
    files: dict[str, str] = attrs.field(factory=dict)
    # A fine-tuning trainer's checked job (``_resolve.ResolvedFineTuning``): the hub supplies
    # part of its request, so the preflight reads the job's own arguments instead.
    fine_tuning: Any = attrs.field(default=None, eq=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready document: ``request``, ``injected``, ``warnings``, ``layout``,
        ``memory`` (the per-accelerator estimate of a job given ``model``), ..."""
        e = self.explanation
        return {
            "source": self.source,
            "estimator": e.estimator,
            "image_uri": e.image_uri,
            "layout": str(e.layout) if e.layout is not None else None,
            "memory": e.memory.to_dict() if e.memory is not None else None,
            "injected": [
                {"path": i.path, "value": i.value, "reason": i.reason} for i in e.injections
            ],
            "warnings": [  # as many as a ConfigError shows: the rest are the same mistake
                {"path": w.path, "message": w.message, "hint": w.hint}
                for w in e.warnings[:MAX_PROBLEMS]
            ],
            "script_findings": [mask_text(str(f)) for f in e.script_findings],
            "placeholders": list(self.placeholders),
            "request": masked(self.request),
            **({"files": self.files} if self.files else {}),
        }

    def to_json(self) -> str:
        """``to_dict()`` as indented JSON."""
        # Strict JSON: NaN/Infinity are not JSON (the spec refuses them; this is the backstop).
        return json.dumps(self.to_dict(), indent=2, default=str, allow_nan=False)

    def __str__(self) -> str:
        r = masked(self.request)
        resources = r.get("ResourceConfig", {})
        lines = [f"plan for {self.source}" if self.source else "plan", *self.explanation.lines()]
        lines += [f"placeholder {p}" for p in self.placeholders]
        machines = f"{resources.get('InstanceCount')} x {resources.get('InstanceType')}"
        if resources.get("InstanceGroups"):
            machines = ", ".join(
                f"{g['InstanceGroupName']}: {g['InstanceCount']} x {g['InstanceType']}"
                for g in resources["InstanceGroups"]
            )
        lines += [
            "CreateTrainingJob request:",
            f"  TrainingImage: {r.get('AlgorithmSpecification', {}).get('TrainingImage')}",
            f"  ResourceConfig: {machines}, {resources.get('VolumeSizeInGB')} GB volume",
            f"  RoleArn: {r.get('RoleArn')}",
            f"  EnableInterContainerTrafficEncryption: "
            f"{r.get('EnableInterContainerTrafficEncryption', False)}",
        ]
        if not resources:  # a serverless fine-tuning job: SageMaker picks the instances
            lines = [line for line in lines if not line.startswith("  ResourceConfig: ")]
        for section in ("Environment", "HyperParameters"):
            for key, value in sorted((r.get(section) or {}).items()):
                lines.append(f"  {section}.{key} = {value}")
        lines += [f"  {path} = {value}" for path, value in other_fields(r)]
        if "distributed.json" in self.files:
            lines.append(f"sm_drivers/distributed.json: {self.files['distributed.json']}")
        lines.append("(use --json for the complete request)")
        # Keys and values are the user's: none may start a line of its own or reach the terminal,
        # and none shows more than a suspected secret's first characters.
        return "\n".join(printable(mask_text(line)) for line in lines)

    def _repr_markdown_(self) -> str:
        r = masked(self.request)
        rows = [self.explanation._repr_markdown_()]
        rows += [f"| placeholder | {markdown_text(p)} |" for p in self.placeholders]
        for section in ("Environment", "HyperParameters"):
            rows += [
                f"| request {markdown_code(f'{section}.{k}')} | {markdown_code(str(v))} |"
                for k, v in sorted((r.get(section) or {}).items())
            ]
        return "\n".join(rows)


# Request fields the summary lines above already show.
_SUMMARISED = frozenset(
    {
        "AlgorithmSpecification.TrainingImage",
        "ResourceConfig.InstanceCount",
        "ResourceConfig.InstanceType",
        "ResourceConfig.VolumeSizeInGB",
        "RoleArn",
        "EnableInterContainerTrafficEncryption",
        "Environment",
        "HyperParameters",
    }
)

# What the SageMaker SDK sends when the estimator's keyword is left out (EstimatorBase's
# defaults: volume_size=30, max_run=24 h, input_mode="File"; a test compares them).
SDK_DEFAULTS: dict[str, Any] = {
    "ResourceConfig.VolumeSizeInGB": 30,
    "StoppingCondition.MaxRuntimeInSeconds": 24 * 60 * 60,
    "AlgorithmSpecification.TrainingInputMode": "File",
}


def other_fields(request: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every other leaf of the request whose value is not the SDK's default, by dotted path."""
    found: list[tuple[str, str]] = []

    def walk(path: str, value: Any) -> None:
        if path in _SUMMARISED or path.split(".", 1)[0] in ("Environment", "HyperParameters"):
            return
        if isinstance(value, Mapping):
            for key, item in value.items():
                walk(f"{path}.{key}" if path else str(key), item)
        elif isinstance(value, list) and any(isinstance(v, Mapping | list) for v in value):
            for index, item in enumerate(value):
                walk(f"{path}.{index}", item)
        elif path not in SDK_DEFAULTS or SDK_DEFAULTS[path] != value:
            found.append((path, json.dumps(value, default=str)))

    walk("", request)
    return found


@problem_source(
    "request-limits",
    "The CreateTrainingJob request that plan and submit build must meet botocore's model of "
    "the API: the ranges, lengths, patterns, enums and list sizes the service enforces, then "
    "botocore's own client-side validation. A value from the SageMaker SDK config (tags, VPC, "
    "KMS keys) is checked as well as the spec's.",
)
def request_problems(
    request: Mapping[str, Any], operation: Any = None, *, local: bool = False
) -> list[Problem]:
    """A CreateTrainingJob request against botocore's model: the constraints the service
    enforces (ranges, lengths, patterns, enums, list sizes), then botocore's own client-side
    validation (``operation`` is the botocore operation model, when at hand). A local-mode
    request (``local``) never reaches the service: only botocore's validation applies (the
    members and their types, which LocalSagemakerClient.create_training_job takes as well)."""
    from safe_estimators._facts.limits import REQUEST_SHAPE, shape_problems

    hint = (
        "the value comes from the spec or the SageMaker SDK config (tags, VPC, KMS keys, "
        "environment); fix it there."
    )
    problems = [
        Problem(f"request.{sub}" if sub else "request", message, hint)
        for sub, message in ([] if local else shape_problems(dict(request), REQUEST_SHAPE))
    ]
    if not problems and operation is not None:
        from botocore.validate import ParamValidator

        report = ParamValidator().validate(dict(request), operation.input_shape)
        if report.has_errors():
            lines = report.generate_report().splitlines()
            problems = [Problem("request", line, hint) for line in lines]
    return tagged(request_problems, problems)


def plan(
    spec_or_path: JobSpec | str | os.PathLike[str],
    *,
    project_root: str | os.PathLike[str] | None = None,
    **overrides: Any,
) -> Plan:
    """Plan a job offline: no AWS account, no credentials, no network.

    Takes a spec file path or a ``JobSpec`` (from ``load_spec``); keyword ``overrides`` replace
    the spec's options; a file's local paths must stay inside ``project_root`` (see
    ``load_spec``). Raises ConfigError with every problem when the job is not valid; the
    problems are ``validate``'s, in its order, then any the planned request itself has.
    """
    from safe_estimators._commands.quiet import sdk_quiet
    from safe_estimators._rules.capacity import job_created_in

    # no SDK banners or INFO lines under the caller's cell; the rules know the job's region
    with offline(), sdk_quiet(), job_created_in(known_region()):
        return _plan(spec_or_path, overrides, project_root)


def _plan(
    spec_or_path: JobSpec | str | os.PathLike[str],
    overrides: dict[str, Any],
    project_root: str | os.PathLike[str] | None,
) -> Plan:
    from safe_estimators._targets import (
        PLACEHOLDER_BUCKET,
        PLACEHOLDER_ROLE,
        build_estimator,
        capture_request,
        configured_bucket,
        configured_role,
        offline_session,
    )

    arguments, source, prior = job_arguments(spec_or_path, overrides, project_root=project_root)
    # Nothing is cloned or downloaded offline: a git_config source or an SDK config in S3 is
    # refused before the session reads its config, together with validate's problems.
    prior += offline_problems(arguments) + sdk_config_problems(os.environ)
    prior += tagged(_profile_problems, _profile_problems(os.environ))
    if any(p.severity == "error" for p in prior):
        resolve_arguments(arguments, source, prior)  # raises with every problem, these first
    region = job_region()
    if arguments.get("target") == REMOTE_FUNCTION:
        return _plan_remote(arguments, source, prior, region)
    if arguments.get("target") == FINE_TUNING:
        return _plan_fine_tuning(arguments, source, prior, region)
    if (arguments.get("target") or default_target()) == MODEL_TRAINER:
        return _plan_model_trainer(arguments, source, prior, region)
    if sdk_generation() >= 3:
        # No estimator to build: resolving refuses the target with validate's problem.
        resolve_arguments(arguments, source, prior)
    local = arguments.get("instance_type") in ("local", "local_gpu")
    session = offline_session(region, None, local=local)
    placeholders = role_and_region_placeholders(arguments, configured_role(session), region)
    role = arguments.get("role")
    if isinstance(role, str) and role and "/" not in role:
        # The estimator's Session.expand_role asks IAM for the ARN of a bare role name; plan
        # asks no one. (ModelTrainer's own rules judge a role name for that target.)
        arguments["role"] = f"{PLACEHOLDER_ROLE.rpartition('/')[0]}/{role}"
        placeholders.append(
            f"role = {quote(arguments['role'])} (the SDK looks up the ARN of the role name "
            f"{quote(role)} in IAM at submit; plan is offline)"
        )
    no_bucket = not arguments.get("output_path") or not arguments.get("code_location")
    if no_bucket and configured_bucket(session) is None:
        placeholders.append(
            f"bucket = {PLACEHOLDER_BUCKET} (the SDK's default bucket; no account is asked)"
        )
    job = resolve_arguments(arguments, source, prior)
    try:
        # A recipe job: no clone, and nothing written into the project (no-op otherwise).
        with planned_recipe_job(job.kwargs) as kwargs:
            estimator = build_estimator(attrs.evolve(job, kwargs=kwargs), session)
            try:
                request = capture_request(estimator, _inputs(job.spec.inputs))
            finally:
                _close_recipe_file(estimator)
    except ConfigError:
        raise
    except (ValueError, TypeError, RuntimeError) as exc:
        raise ConfigError(sdk_refused("fit()", exc), source=source) from exc
    problems = request_problems(request, _operation(session), local=local)
    if problems:
        raise ConfigError(problems, source=source)
    return Plan(request, estimator.safe_estimators, tuple(placeholders), source)


def role_and_region_placeholders(
    arguments: dict[str, Any], configured_role: Any, region: str | None
) -> list[str]:
    """What a plan makes up for the role and region it is not given (the role is set in
    ``arguments``), said out loud."""
    from safe_estimators._targets import PLACEHOLDER_REGION, PLACEHOLDER_ROLE

    placeholders = []
    if not arguments.get("role") and not configured_role:
        arguments["role"] = PLACEHOLDER_ROLE
        placeholders.append(
            f"role = {PLACEHOLDER_ROLE} (neither the spec nor the SageMaker SDK config sets one)"
        )
    if region is None:
        placeholders.append(f"region = {PLACEHOLDER_REGION} (no region in {REGION_SOURCES})")
    return placeholders


def _close_recipe_file(estimator: Any) -> None:
    """The resolved recipe the SDK saved into the temporary source_dir, closed (and removed)
    before that folder goes."""
    saved = getattr(estimator, "training_recipe_file", None)
    if saved is not None:
        saved.close()


@problem_source("aws-profile")
def _profile_problems(environ: Mapping[str, str]) -> list[Problem]:
    """An AWS profile variable naming no profile: every estimator the SageMaker SDK builds makes
    a client from boto3's default session (for its TensorBoard app), which looks the profile up
    in the AWS config files as that session first read them, so even an offline plan would stop
    there."""
    names = [name for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE") if environ.get(name)]
    if not names:
        return []
    import boto3
    import botocore.session

    default = boto3.DEFAULT_SESSION
    try:
        source = default if default is not None else botocore.session.Session()
        known = set(source.available_profiles)
    except Exception:  # an unreadable AWS config: the SDK reports it in its own words
        return []
    restart = (
        "; boto3 read the config files when this process first used it, so a profile added "
        "since then needs a new process"
        if default is not None
        else ""
    )
    return [
        Problem(
            f"${name}",
            f"is {quote(environ[name])}, which is not a profile in the AWS config or credentials "
            "file; the SageMaker SDK reads it whenever it builds an estimator, even offline.",
            "set it to one of the profiles `aws configure list-profiles` shows, or unset it: "
            f"plan needs no credentials{restart}.",
        )
        for name in names
        if environ[name] not in known
    ]


def _operation(session: Any) -> Any:
    client = session.sagemaker_client
    if not hasattr(client, "meta"):  # LocalSagemakerClient: it takes the same request members
        client = session.boto_session.client("sagemaker")
    return client.meta.service_model.operation_model("CreateTrainingJob")


def _inputs(inputs: str | Mapping[str, str] | None) -> Any:
    return dict(inputs) if isinstance(inputs, Mapping) else inputs


# An offline plan of the ModelTrainer target: ModelTrainer's own ``train()``, stopped where
# sagemaker-core's ``TrainingJob.create`` hands CreateTrainingJob to boto3.
#
# No AWS call is made: the session's default bucket is given (ModelTrainer asks S3, and STS, for
# it when it is built), sagemaker 3.x's IAM role validation is off for the plan
# (``SAGEMAKER_VALIDATE_ROLE=false``), the code uploads are answered locally and the request is
# captured before it is sent. The plan also shows the files ModelTrainer writes into its
# ``sm_drivers`` channel: the launcher settings (``distributed.json``), the source settings
# (``sourcecode.json``) and the container's entry point (``sm_train.sh``).
@problem_source("sdk-refused")
def sdk_refused(stage: str, exc: Exception) -> list[Problem]:
    """The SageMaker SDK must accept a job the checks passed, when plan builds it and captures
    its request: a refusal there is a check safe-estimators lacks, reported as our bug with
    the SDK's own words."""
    return tagged(sdk_refused, [Problem(
        "<sagemaker>",
        f"the SageMaker SDK refused the job at {stage}: {exc}",
        "report this spec: safe_estimators should have caught it.",
    )])  # fmt: skip


@problem_source(
    "offline-role",
    "plan never calls AWS: sagemaker 3's ModelTrainer looks a role given by name up in IAM, so "
    "a ModelTrainer job is planned offline only with the role's ARN.",
)
def _plan_model_trainer(
    arguments: dict[str, Any], source: str | None, prior: Sequence[Problem], region: str | None
) -> Plan:
    """The plan of the job ``arguments`` describe, built as a ModelTrainer."""
    from safe_estimators._targets import explain
    from safe_estimators._targets.model_trainer import (
        configured_role,
        offline_trainer_session,
        plan_model_trainer,
    )
    from safe_estimators._targets.shared import PLACEHOLDER_BUCKET, OfflineCallRefused

    session = offline_trainer_session(region)
    placeholders = role_and_region_placeholders(arguments, configured_role(session), region)
    if session.default_bucket() == PLACEHOLDER_BUCKET:
        placeholders.append(
            f"bucket = {PLACEHOLDER_BUCKET} (the SDK's default bucket, where ModelTrainer "
            "uploads the code and its drivers; no account is asked)"
        )
    job = resolve_arguments(arguments, source, prior)
    try:
        trainer, request, files = plan_model_trainer(job, session)
    except OfflineCallRefused as exc:  # sagemaker 3 looks a role name up in IAM
        raise ConfigError(tagged(_plan_model_trainer, [Problem(
            "role",
            f"ModelTrainer would call AWS to plan this job ({exc}); a role name is looked up "
            "in IAM.",
            "give the role's ARN (arn:aws:iam::<account>:role/<name>) to plan offline.",
        )]), source=source) from exc  # fmt: skip
    # shutil.Error: sagemaker 3's ModelTrainer copies source_dir (shutil.copytree) before the
    # upload, which refuses a named pipe or a socket there; the estimator's tarfile takes them.
    except (ValueError, TypeError, RuntimeError, shutil.Error) as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(sdk_refused("train()", exc), source=source) from exc
    operation = session.boto_session.client("sagemaker").meta.service_model
    problems = request_problems(request, operation.operation_model("CreateTrainingJob"))
    if problems:
        raise ConfigError(problems, source=source)
    return Plan(request, explain(trainer), tuple(placeholders), source, files)


def _plan_remote(
    arguments: dict[str, Any], source: str | None, prior: Sequence[Problem], region: str | None
) -> Plan:
    """The plan of a ``@remote`` job: the request the SDK's own decorator makes, offline."""
    from safe_estimators._resolve import resolve_remote_arguments
    from safe_estimators._targets.remote import plan_remote
    from safe_estimators._targets.shared import PLACEHOLDER_BUCKET

    placeholders = role_and_region_placeholders(arguments, None, region)
    if not arguments.get("s3_root_uri"):
        placeholders.append(
            f"bucket = {PLACEHOLDER_BUCKET} (the SDK's default bucket, where @remote uploads the "
            "function and its runtime scripts; no account is asked)"
        )
    if prior:
        raise ConfigError(list(prior), source=source)
    job = resolve_remote_arguments(arguments, source)
    request = plan_remote(job, region)
    problems = request_problems(request, _remote_operation())
    if problems:
        raise ConfigError(problems, source=source)
    return Plan(request, job.explanation, tuple(placeholders), source, fine_tuning=job)


def _remote_operation() -> Any:
    """botocore's CreateTrainingJob operation model (no client, no credentials)."""
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    return model.operation_model("CreateTrainingJob")


def _plan_fine_tuning(
    arguments: dict[str, Any], source: str | None, prior: Sequence[Problem], region: str | None
) -> Plan:
    """The plan of a fine-tuning trainer's job: what its request holds that the job's own
    arguments settle, offline; the parts the hub supplies are named among the placeholders (the
    trainer's constructor reads the hub, so it is not made here)."""
    from safe_estimators._resolve import fine_tuning_technique, resolve_fine_tuning_arguments
    from safe_estimators._targets.fine_tuning import plan_fine_tuning

    technique, problems = fine_tuning_technique(arguments)
    if prior or technique is None:
        raise ConfigError([*prior, *problems], source=source)
    given = {k: v for k, v in arguments.items() if k not in ("target", "trainer")}
    job = resolve_fine_tuning_arguments(given, technique, source, region)
    request, supplied = plan_fine_tuning(job)
    placeholders = [f"not planned offline: {line}" for line in supplied]
    return Plan(request, job.explanation, tuple(placeholders), source, fine_tuning=job)
