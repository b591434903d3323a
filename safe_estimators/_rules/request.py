"""Rules for the estimator options that become one CreateTrainingJob member each.

The SDK passes these through to the request unchanged (or nearly so), and only the API refuses
a bad one, at ``fit()``. Their constraints (ranges, lengths, patterns, enums, list sizes) are read
from botocore's service model, so the message names the limit the API will apply.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import attrs

from safe_estimators._bounds import quote
from safe_estimators._context import Context
from safe_estimators._facts.limits import documented_maximum, member_shape, shape_problems
from safe_estimators._facts.targets import ESTIMATOR
from safe_estimators._problems import Fix, Problem, join_path, warning
from safe_estimators._rules.compiler import sdk_class_names
from safe_estimators._secret_formats import mask_values_in
from safe_estimators._spec import SPEC_FIELDS, is_pipeline_variable

# The job is built into a SageMaker Pipelines step (the factories were given a PipelineSession):
# fit() then records the request for TrainingStep, which drops TrainingJobName from it
# (sagemaker.workflow.utilities.trim_request_dict, unless PipelineDefinitionConfig says
# use_custom_job_prefix=True): the execution names the job.
_PIPELINE_STEP: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "pipeline_step", default=False
)


@contextlib.contextmanager
def pipeline_step(session: object) -> Iterator[None]:
    """While this runs, the job is checked as a pipeline step when ``session`` is a
    PipelineSession (sagemaker 2 or 3, local or not: known by its class name, so that
    sagemaker need not be imported)."""
    step = any("PipelineSession" in cls.__name__ for cls in type(session).__mro__)
    token = _PIPELINE_STEP.set(step)
    try:
        yield
    finally:
        _PIPELINE_STEP.reset(token)


def in_pipeline_step() -> bool:
    """Whether the job being checked is built into a pipeline step (``pipeline_step``)."""
    return _PIPELINE_STEP.get()


# The SDK's timestamp suffix (sagemaker.utils.sagemaker_timestamp): "-YYYY-mm-dd-HH-MM-SS-mmm".
_JOB_NAME_SUFFIX = "-2000-01-01-00-00-00-000"


@attrs.frozen
class Member:
    """One option and the request member it becomes.

    ``send`` turns the option's value into what the SDK sends (or None: not sent, not checked).
    """

    member: str
    hint: str
    send: Callable[[Any, Context], Any] = lambda value, ctx: value


def _tags(value: Any, ctx: Context) -> Any:
    # sagemaker.utils.format_tags also takes a mapping of key to value.
    if isinstance(value, Mapping):
        return [{"Key": str(k), "Value": str(v)} for k, v in value.items()]
    return value


def _role(value: Any, ctx: Context) -> Any:
    # A bare role name is expanded to an ARN by the SDK (an IAM call); only an ARN is checked.
    return value if not isinstance(value, str) or "/" in value or value.startswith("arn:") else None


def _job_name(value: Any, ctx: Context) -> Any:
    # sagemaker.utils.name_from_base: the base trimmed to leave room for the timestamp.
    if not isinstance(value, str):
        return value
    return value[: 63 - len(_JOB_NAME_SUFFIX)] + _JOB_NAME_SUFFIX


def _s3_unless_local(value: Any, ctx: Context) -> Any:
    # Local mode writes to file:// paths; the API never sees them.
    if ctx.local and isinstance(value, str) and value.startswith("file://"):
        return None
    return value


_S3 = "write an S3 URI such as s3://my-bucket/prefix/ (with the s3:// scheme)."
_KMS = "give a KMS key id, alias or ARN (arn:aws:kms:<region>:<account>:key/<id>)."

# Option -> member; each option is checked against the member's shape in botocore's model.
MEMBERS: dict[str, Member] = {
    "volume_size": Member("ResourceConfig.VolumeSizeInGB", "give the size in GB, e.g. 100."),
    "instance_count": Member("ResourceConfig.InstanceCount", "use 1 or more instances."),
    "keep_alive_period_in_seconds": Member(
        "ResourceConfig.KeepAlivePeriodInSeconds", "give the warm-pool time in seconds."
    ),
    "volume_kms_key": Member("ResourceConfig.VolumeKmsKeyId", _KMS),
    "training_plan": Member("ResourceConfig.TrainingPlanArn", "give the training plan's ARN."),
    "max_run": Member("StoppingCondition.MaxRuntimeInSeconds", "give seconds, e.g. 86400."),
    "max_wait": Member("StoppingCondition.MaxWaitTimeInSeconds", "give seconds, e.g. 172800."),
    "tags": Member(
        "Tags",
        "give at most 50 tags as [{'Key': ..., 'Value': ...}] or {key: value}.",
        _tags,
    ),
    "base_job_name": Member(
        "TrainingJobName",
        "use letters, digits and hyphens only, starting with a letter or digit "
        "(e.g. my-job-v1); the SDK appends a timestamp.",
        _job_name,
    ),
    "role": Member(
        "RoleArn", "give the role's ARN (arn:aws:iam::<account>:role/<name>) or its name.", _role
    ),
    "checkpoint_s3_uri": Member("CheckpointConfig.S3Uri", _S3, _s3_unless_local),
    "checkpoint_local_path": Member("CheckpointConfig.LocalPath", "give a folder path."),
    "output_path": Member("OutputDataConfig.S3OutputPath", _S3, _s3_unless_local),
    "output_kms_key": Member("OutputDataConfig.KmsKeyId", _KMS),
    "subnets": Member("VpcConfig.Subnets", "give 1 to 16 subnet ids (subnet-...)."),
    "security_group_ids": Member(
        "VpcConfig.SecurityGroupIds", "give 1 to 5 security group ids (sg-...)."
    ),
    "input_mode": Member("AlgorithmSpecification.TrainingInputMode", "use File, FastFile or Pipe."),
    "metric_definitions": Member(
        "AlgorithmSpecification.MetricDefinitions",
        "give at most 40 metrics as [{'Name': 'loss', 'Regex': 'loss=([0-9.]+)'}].",
    ),
    "enable_sagemaker_metrics": Member(
        "AlgorithmSpecification.EnableSageMakerMetricsTimeSeries", "write true or false."
    ),
    "container_entry_point": Member(
        "AlgorithmSpecification.ContainerEntrypoint", "give a list of strings."
    ),
    "container_arguments": Member(
        "AlgorithmSpecification.ContainerArguments", "give a list of strings."
    ),
    "enable_network_isolation": Member("EnableNetworkIsolation", "write true or false."),
    "encrypt_inter_container_traffic": Member(
        "EnableInterContainerTrafficEncryption", "write true or false."
    ),
    "use_spot_instances": Member("EnableManagedSpotTraining", "write true or false."),
    "max_retry_attempts": Member("RetryStrategy.MaximumRetryAttempts", "use 1 to 30 attempts."),
}

# Options the SDK turns into something other than one member; their type is all it needs.
TYPES: dict[str, tuple[type, ...]] = {
    "container_log_level": (int,),
    "disable_output_compression": (bool,),
    "enable_remote_debug": (bool,),
    "enable_infra_check": (bool,),
    "enable_session_tag_chaining": (bool,),
    "code_location": (str,),
    "dependencies": (list, tuple),
    "git_config": (dict,),
}


# Options the SDK takes only as its own objects (it reads their attributes at fit(), so a
# mapping from a spec file fails there with an AttributeError). Class names, from sagemaker.debugger
# and sagemaker.inputs, so that validate need not import sagemaker.
SDK_OBJECTS: dict[str, tuple[str, str]] = {
    "profiler_config": ("ProfilerConfig", "sagemaker.debugger.ProfilerConfig(...)"),
    "debugger_hook_config": ("DebuggerHookConfig", "sagemaker.debugger.DebuggerHookConfig(...)"),
    "tensorboard_output_config": (
        "TensorBoardOutputConfig",
        "sagemaker.debugger.TensorBoardOutputConfig(...)",
    ),
}


def option_value(ctx: Context, name: str) -> Any:
    """The value the user gave for an estimator option (typed field or pass-through)."""
    return getattr(ctx.spec, name) if name in SPEC_FIELDS else ctx.spec.extra.get(name)


def request_members(ctx: Context) -> Iterator[Problem]:
    """Options that map onto one CreateTrainingJob member meet that member's constraints."""
    spec = ctx.spec
    # Only the options given: a job sets a handful of the forty.
    given = [(n, getattr(spec, n)) for n in _TYPED_MEMBERS if getattr(spec, n) is not None]
    given += [(n, spec.extra[n]) for n in MEMBERS if n in spec.extra and spec.extra[n] is not None]
    for name, value in sorted(given, key=lambda item: _ORDER[item[0]]):
        member = MEMBERS[name]
        sent = member.send(_default(value), ctx)
        if sent is None:
            continue
        for sub, message in shape_problems(sent, member_shape(member.member), _unknown):
            if isinstance(sent, str) and sent != value and repr(sent) in message:
                message = message.replace(repr(sent), f"{value!r} (with the SDK's timestamp)")
            if name == "base_job_name" and (ctx.pipeline_variables or in_pipeline_step()):
                yield _pipeline_job_name(message, member.hint)
                # the trimmed name breaks its pattern only (never its length): `break` is the same
                continue  # pragma: no mutate
            # A tag's value under a secret's name ({"Key": "db_password", ...}) stays hidden.
            yield Problem(join_path(name, sub), mask_values_in(message, sent), member.hint)
        yield from _beyond_documented_maximum(name, sent, member)


def _beyond_documented_maximum(name: str, sent: Any, member: Member) -> Iterator[Problem]:
    """A maximum the model states only in words (``max_run``: "The maximum value is 28 days.",
    botocore's documentation of StoppingCondition.MaxRuntimeInSeconds); the API refuses more."""
    if type(sent) is not int:
        return
    maximum = documented_maximum(member.member)
    if maximum is None or sent <= maximum:
        return
    # botocore documents one maximum in words, 28 days: the words for a maximum of no whole
    # days are not reached by any member today (not mutated)
    days = f" ({maximum // 86400} days)" if maximum % 86400 == 0 else ""  # pragma: no mutate
    yield Problem(
        name,
        f"is {sent:,} s ({sent / 86400:.1f} days); the maximum is {maximum:,} s{days}, as "
        f"botocore's SageMaker model documents {member.member}: CreateTrainingJob refuses the "
        "job.",
        "save checkpoints (checkpoint_s3_uri) and continue in a new job.",
        fixes=(Fix(((name, maximum),), f"give {name}={maximum} or less"),),
    )


def _pipeline_job_name(message: str, hint: str) -> Problem:
    # TrainingStep.arguments drops TrainingJobName (workflow.utilities.trim_request_dict): the
    # execution names the job, unless the pipeline opts in to a custom job prefix.
    return warning(
        "base_job_name",
        f"{message} A pipeline step sends no job name (SageMaker Pipelines names the job), so "
        "this one is not used, unless the pipeline is defined with "
        "PipelineDefinitionConfig(use_custom_job_prefix=True), where it is refused.",
        hint,
    )


_TYPED_MEMBERS = tuple(name for name in MEMBERS if name in SPEC_FIELDS)
_ORDER = {name: index for index, name in enumerate(MEMBERS)}  # problems in the table's order


def _default(value: Any) -> Any:
    """A pipeline variable is checked through its default value, when it has one."""
    if is_pipeline_variable(value):
        default = getattr(value, "default_value", None)
        # the variable itself or None: either is left unchecked (not mutated)
        return value if default is None else default  # pragma: no mutate
    return value


def _unknown(value: object) -> bool:
    return is_pipeline_variable(value)


def option_types(ctx: Context) -> Iterator[Problem]:
    """Options the SDK passes on without checking have the type it expects."""
    for name, expected in TYPES.items():
        value = option_value(ctx, name)
        if value is None or is_pipeline_variable(value):
            continue
        if not isinstance(value, expected) or (bool not in expected and type(value) is bool):
            words = " or ".join(t.__name__ for t in expected)
            yield Problem(
                name,
                f"must be {words}, got {type(value).__name__} {quote(value)}.",
                "e.g. container_log_level=logging.INFO (20)"
                if name == "container_log_level"
                else f"give a {words}.",
            )
    # The sagemaker.debugger objects are the estimator's: on the ModelTrainer target these
    # options are refused whatever they hold (model_trainer_counterparts), and on sagemaker 3
    # the module this fix names does not exist.
    debugger = ctx.target == ESTIMATOR
    for name, (cls, example) in SDK_OBJECTS.items() if debugger else ():
        value = option_value(ctx, name)
        if value is None or (name == "debugger_hook_config" and value is False):
            continue
        if cls not in sdk_class_names(value):
            yield Problem(
                name,
                f"must be a {cls} object, got {type(value).__name__} {quote(value)}; the SDK "
                "reads its attributes at fit().",
                f"pass {example} in Python; spec files cannot hold it (leave {name} out).",
            )
    rules = option_value(ctx, "rules")
    if debugger and rules is not None and (
        not isinstance(rules, list | tuple)
        or not all("RuleBase" in sdk_class_names(rule) for rule in rules)
    ):
        yield Problem(
            "rules",
            "must be a list of sagemaker.debugger Rule or ProfilerRule objects, got "
            f"{quote(rules)}.",
            "pass e.g. [Rule.sagemaker(rule_configs.loss_not_decreasing())] in Python.",
        )
    location = option_value(ctx, "code_location")
    if isinstance(location, str) and not ctx.local and not location.startswith("s3://"):
        yield Problem(
            "code_location",
            f"{quote(location)} is not an S3 URI; the SDK uploads the source code there and "
            "accepts only s3://.",
            _S3,
        )


def vpc_pair(ctx: Context) -> Iterator[Problem]:
    """EstimatorBase.__init__ takes subnets and security groups together or not at all."""
    subnets, groups = option_value(ctx, "subnets"), option_value(ctx, "security_group_ids")
    if (subnets is None) != (groups is None):
        given, missing = ("subnets", "security_group_ids")
        if subnets is None:
            given, missing = missing, given
        yield Problem(
            given,
            f"is given without {missing}: the SageMaker SDK refuses that when it builds the "
            "estimator (RuntimeError: both subnets and security_group_ids must be set), even "
            "when the SageMaker SDK config supplies the other.",
            f"give {missing} too.",
        )
