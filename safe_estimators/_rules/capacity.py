"""Rules about the capacity a job asks for: training plans and encrypted volumes.

Sources:
- botocore's SageMaker model: ``SearchTrainingPlanOfferings`` takes a
  ``ReservedCapacityInstanceType``, whose enum lists the types a training plan can reserve; the
  documentation of ``ResourceConfig.VolumeKmsKeyId`` says a volume key cannot be asked for on an
  instance type with local storage (that storage is encrypted by the instance's hardware).
- AWS's user guide page on running a training job on a plan through the API, CLI or SDK: the
  job's ResourceConfig instance type has to be the plan's own.
- DescribeInstanceTypes' ``InstanceStorageInfo`` (the catalog's ``nvme_disks``): which types
  have local storage.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
from collections.abc import Iterator

import instance_catalog
from safe_estimators._context import Context
from safe_estimators._facts.limits import training_plan_instance_types
from safe_estimators._problems import Problem, removing, warning
from safe_estimators._rules.resources import instance_types_of
from safe_estimators._spec import value_of

PLAN = "training_plan"
PLAN_DOCS = "AWS's user guide, 'Create a training job using the API, AWS CLI, SageMaker SDK'"


def training_plan_instance_type(ctx: Context) -> Iterator[Problem]:
    """A training plan on an instance type no plan can reserve: the job's instance type must be
    the plan's, and plans reserve only the types of ``ReservedCapacityInstanceType``."""
    plan = value_of(ctx.spec.extra.get(PLAN))
    if not isinstance(plan, str) or not plan:
        return
    reservable = training_plan_instance_types()
    for path, entry in instance_types_of(ctx):
        if entry.name in reservable:
            continue
        yield Problem(
            path,
            f"is {entry.name}, and the job runs on training plan {plan!r}; a training plan "
            f"reserves only {', '.join(sorted(reservable))} (botocore's "
            "ReservedCapacityInstanceType), and the job's instance type must match its plan's "
            f"({PLAN_DOCS}): CreateTrainingJob refuses this job.",
            "run on the instance type your plan reserved.",
            fixes=(removing(PLAN, why="on-demand capacity"),),
        )


def volume_key_on_local_storage(ctx: Context) -> Iterator[Problem]:
    """A volume KMS key on an instance type with local (NVMe) storage, which CreateTrainingJob
    refuses (SageMaker encrypts instance storage with the instance's hardware module). Both
    targets send the key as given: sagemaker 2.x's estimator leaves out only a key that came
    from the SDK's config file (``instance_supports_kms``), never one passed to it."""
    key = value_of(ctx.spec.extra.get("volume_kms_key"))
    if not isinstance(key, str) or not key:
        return
    for path, entry in instance_types_of(ctx):
        if entry.nvme_disks:
            yield volume_key_problem(path, entry)


def volume_key_problem(path: str, entry: instance_catalog.InstanceType) -> Problem:
    """The error of a volume key on ``entry``, a type with local NVMe storage (at ``path``)."""
    return Problem(
        "volume_kms_key",
        f"is set, and {path} {entry.name} has local NVMe storage ({entry.nvme_disks} x "
        f"{entry.nvme_disk_gb} GB), which SageMaker encrypts with the instance's hardware "
        "module; botocore's documentation of ResourceConfig.VolumeKmsKeyId: a VolumeKmsKeyId "
        "cannot be requested with an instance type that has local storage, so "
        "CreateTrainingJob refuses the job.",
        "pick an EBS-backed instance type to encrypt the volume with your key.",
        fixes=(removing("volume_kms_key", why=f"{entry.name}'s storage is encrypted by the "
                        "instance"),),
    )


def max_pending_on_cpu(ctx: Context) -> Iterator[Problem]:
    """ModelTrainer's ``stopping_condition.max_pending_time_in_seconds`` on a type without
    accelerators: botocore's documentation of MaxPendingTimeInSeconds says it has no effect on
    jobs that request CPU-only instance types (a warning: the job runs, without that limit)."""
    words = ctx.spec.trainer
    given = words.given.get("stopping_condition") if words is not None else None
    if isinstance(given, dict):
        seconds = given.get("max_pending_time_in_seconds")
    else:
        seconds = getattr(given, "max_pending_time_in_seconds", None)
    if type(seconds) is not int:
        return
    for path, entry in instance_types_of(ctx):
        if entry.accelerator_kind is None:
            yield warning(
                "stopping_condition.max_pending_time_in_seconds",
                f"is {seconds} s, and {path} {entry.name} has no GPU or other accelerator; "
                "botocore's documentation of MaxPendingTimeInSeconds: it has no effect on jobs "
                "that request CPU-only instance types, so the job may wait longer.",
                "remove it on a CPU instance type (it limits the wait for accelerated capacity, "
                "such as a training plan's).",
            )


# arn:<partition>:sagemaker:<region>:<account>:training-plan/<name> (botocore's TrainingPlanArn
# pattern, the ARN CreateTrainingPlan returns).
_PLAN_ARN = re.compile(r"arn:aws[a-z-]*:sagemaker:([a-z0-9-]+):\d{12}:training-plan/.+")


def plan_region_problem(path: str, plan: object, region: str | None) -> Problem | None:
    """A training plan ARN of another region than the job's: a plan reserves capacity in its own
    region (the region is part of its ARN), and CreateTrainingJob in another region cannot use
    it. None when the region is not known here or the value is not a plan ARN (a plan name, a
    pipeline variable)."""
    if not region or not isinstance(plan, str):
        return None
    match = _PLAN_ARN.fullmatch(plan)
    if match is None or match.group(1) == region:
        return None
    return Problem(
        path,
        f"is a training plan of {match.group(1)} (its ARN says so), and the job is created in "
        f"{region}: a plan reserves capacity in its own region only, so CreateTrainingJob in "
        f"{region} cannot run on it.",
        f"create the job in {match.group(1)} (AWS_REGION, or the session's region), or use a "
        f"training plan of {region}.",
    )


# The region the job is created in, where the caller knows it: plan (job_region) and the
# factories (the session's region) set it around their checks; validate knows no region (a spec
# file names none) and leaves the rule below silent.
_REGION: contextvars.ContextVar[str | None] = contextvars.ContextVar("job_region", default=None)


@contextlib.contextmanager
def job_created_in(region: str | None) -> Iterator[None]:
    """While this runs, the rules know the region the job is created in."""
    token = _REGION.set(region)
    try:
        yield
    finally:
        _REGION.reset(token)


def training_plan_region(ctx: Context) -> Iterator[Problem]:
    """A training plan of another region than the job's, where the region is known (plan and
    the factories): the plan's ARN names its region, and a plan reserves capacity there only."""
    problem = plan_region_problem(PLAN, value_of(ctx.spec.extra.get(PLAN)), _REGION.get())
    if problem is not None:
        yield problem
