"""A training plan (reserved capacity): it covers training jobs, reserves the job's instance
type, is active or scheduled, and has enough free instances.

Settled by the plan (errors): expired or failed, not for training jobs, or reserving other
instance types. Still changing (warnings): a plan scheduled to start later or pending (the job
waits for it, up to ``max_wait``/``MaxPendingTimeInSeconds``), fewer free instances now than
the job asks (running jobs may end first).
"""

from __future__ import annotations

from safe_estimators._preflight.context import Context
from safe_estimators._problems import Problem, count, warning


def check(ctx: Context) -> list[Problem]:
    job = ctx.job
    arn = job.training_plan
    if not arn or not job.remote:
        return []
    path = job.written("training_plan")
    name = arn.rpartition("/")[2]
    plan = ctx.call(path, "sagemaker", "DescribeTrainingPlan", lane="plans", TrainingPlanName=name)
    status = plan.get("Status")
    if status in ("Expired", "Failed"):
        return [
            Problem(
                path,
                f"the training plan {name!r} is {status}: it reserves no capacity any more.",
                "use an active training plan (aws sagemaker list-training-plans), or none.",
            )
        ]
    problems = []
    targets = plan.get("TargetResources", [])
    if "training-job" not in targets:
        problems.append(
            Problem(
                path,
                f"the training plan {name!r} reserves capacity for {', '.join(targets)}, not "
                "for training jobs.",
                "use a plan created with TargetResources training-job.",
            )
        )
    reserved = {s.get("InstanceType") for s in plan.get("ReservedCapacitySummaries", [])}
    reserved.discard(None)
    for instances in job.instances:
        if reserved and instances.instance_type not in reserved:
            problems.append(
                Problem(
                    instances.path,
                    f"is {instances.instance_type}, but the training plan {name!r} reserves "
                    f"{', '.join(sorted(reserved))}: SageMaker refuses the job.",
                    f"set instance_type to {sorted(reserved)[0]}, or use a plan for "
                    f"{instances.instance_type}.",
                )
            )
    if problems:
        return problems
    if status in ("Scheduled", "Pending"):
        start = plan.get("StartTime")
        problems.append(
            warning(
                path,
                f"the training plan {name!r} is {status}"
                + (f" (it starts {start:%Y-%m-%d %H:%M %Z})" if start else "")
                + ": the job waits for it.",
                "make sure max_wait (MaxPendingTimeInSeconds) covers the wait, or submit when "
                "the plan is active.",
            )
        )
    wanted = sum(i.count for i in job.instances)
    available = plan.get("AvailableInstanceCount")
    if status == "Active" and isinstance(available, int) and available < wanted:
        problems.append(
            warning(
                path,
                f"the training plan {name!r} has {count(available, 'free instance')} now "
                f"(of {plan.get('TotalInstanceCount')}); the job asks for {wanted}: it waits "
                "until other jobs on the plan end.",
                "lower instance_count, or wait for the plan's running jobs.",
            )
        )
    return problems
