"""Whether the region offers the job's instance types for training.

Service Quotas lists a ``<type> for training job usage`` quota for every type SageMaker offers
for training in the region; a type with none is not offered there (SageMaker's own refusal
reads ``training-job/ml.p2.xlarge is not available in this region``). The listing is the one
the quota check reads (one listing, cached per account and region). A listing that was cut
short proves nothing, so then nothing is said.
"""

from __future__ import annotations

from safe_estimators._preflight import quotas
from safe_estimators._preflight.context import Context
from safe_estimators._problems import Problem, warning


def check(ctx: Context) -> list[Problem]:
    job = ctx.job
    if not job.remote or job.serverless:  # local mode, or SageMaker's instances: none to offer
        return []
    table = quotas.table(ctx)
    listed = [name for name in table.quotas if name.endswith(" for training job usage")]
    if not table.complete or not listed:
        return []
    problems = []
    for instances in job.instances:
        name = quotas.on_demand(instances.instance_type)
        if name not in table.quotas:
            problems.append(
                warning(
                    instances.path,
                    f"{instances.instance_type} is not offered for training in {job.region}: "
                    f"Service Quotas lists no quota {name!r} there ({len(listed)} training "
                    "instance types are listed). SageMaker refuses such a job ('is not "
                    "available in this region').",
                    "use an instance type offered in the region (the Service Quotas console "
                    "lists them under Amazon SageMaker), or run the job in another region.",
                )
            )
    return problems
