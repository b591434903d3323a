"""Rules about the resources a job holds: managed warm pools and the instance's storage.

Sources: AWS's "Train Using SageMaker Managed Warm Pools" page (awsdocs/amazon-sagemaker-developer-
guide doc_source/train-warm-pools.md; Considerations: warm pools "cannot be used with heterogeneous
cluster training" nor "with spot instances", and are "limited to a KeepAlivePeriodInSeconds value
of 3600 seconds"; resource limits: "The default resource limit for warm pools is 0", and without
an increase "a warm pool is not retained after the completion of the training job"), botocore's
SageMaker model (``KeepAlivePeriodInSeconds``: 0 to 21600, read by the request rules), the SDK's
``volume_size`` docstring (on NVMe instance-store types SageMaker uses the NVMe volume, and a
larger ``volume_size`` "returns an Invalid VolumeSizeInGB error") and DescribeInstanceTypes'
``InstanceStorageInfo`` (in the catalog: ``nvme_disks`` x ``nvme_disk_gb``).
"""

from __future__ import annotations

from collections.abc import Iterator

import instance_catalog
from safe_estimators._context import Context
from safe_estimators._problems import REMOVE, Fix, Problem, removing, setting
from safe_estimators._resolved import Injection
from safe_estimators._spec import value_of

KEEP_ALIVE = "keep_alive_period_in_seconds"
# The warm-pool page's limit; botocore's model, the newer source, allows up to 21600 s.
DOCUMENTED_KEEP_ALIVE_MAX = 3600
WARM_POOL_DOCS = "AWS's 'Train Using SageMaker Managed Warm Pools' page"


def _keep_alive(ctx: Context) -> int | None:
    value = value_of(ctx.spec.extra.get(KEEP_ALIVE))
    return value if type(value) is int and value > 0 else None


def warm_pool(ctx: Context) -> Iterator[Problem]:
    """A warm pool (keep_alive_period_in_seconds > 0) beside spot instances or heterogeneous
    clusters, and one above the documented 3600 s: warnings.

    AWS's page says warm pools "cannot be used" with either, but not whether CreateTrainingJob
    refuses the job or runs it without retaining a pool; no source we found settles it, so the
    job is not refused (dropping the option changes nothing else about it)."""
    seconds = _keep_alive(ctx)
    if seconds is None:
        return
    if value_of(ctx.spec.use_spot_instances) is True:
        yield warm_pool_with_spot(seconds)
    if ctx.spec.instance_groups is not None:
        yield Problem(
            KEEP_ALIVE,
            f"is {seconds} s with instance_groups; warm pools cannot be used with "
            f"heterogeneous clusters ({WARM_POOL_DOCS}, Considerations): no pool is retained, "
            "or CreateTrainingJob refuses the job.",
            "use one instance_type and instance_count.",
            "warning",
            fixes=(removing(KEEP_ALIVE),),
        )
    if seconds > DOCUMENTED_KEEP_ALIVE_MAX:
        yield Problem(
            KEEP_ALIVE,
            f"is {seconds} s; {WARM_POOL_DOCS} limits the keep-alive period to "
            f"{DOCUMENTED_KEEP_ALIVE_MAX} s, though the API accepts up to 21600 s.",
            "keep it only if your account is known to accept more.",
            "warning",
            fixes=(setting((KEEP_ALIVE, DOCUMENTED_KEEP_ALIVE_MAX)),),
        )


def warm_pool_with_spot(seconds: int, wait: str = "max_wait") -> Problem:
    """The warning on a warm pool of ``seconds`` beside managed spot training (``wait``: the
    option that limits the wait for spot capacity, left out with spot)."""
    return Problem(
        KEEP_ALIVE,
        f"is {seconds} s with use_spot_instances=True; warm pools cannot be used with "
        f"managed spot training ({WARM_POOL_DOCS}, Considerations): no pool is retained, "
        "or CreateTrainingJob refuses the job.",
        "",
        "warning",
        fixes=(
            removing(KEEP_ALIVE),
            Fix(
                (("use_spot_instances", False), (wait, REMOVE)),
                f"train on on-demand instances (use_spot_instances=False, without {wait})",
            ),
        ),
    )


def warm_pool_injections(ctx: Context) -> list[Injection]:
    """The warm pool as given, recorded with what the account's quota does to it."""
    seconds = _keep_alive(ctx)
    if seconds is None:
        return []
    return [
        Injection(
            KEEP_ALIVE,
            seconds,
            f"kept as given: a warm pool of {ctx.instance_name} for {seconds} s after the job. "
            "The default warm-pool quota of an account is 0 per instance type: the job runs "
            "either way, but nothing is retained until a Service Quotas increase for "
            f"'{ctx.instance_name} for training warm pool usage' is granted.",
        )
    ]


def instance_types_of(ctx: Context) -> list[tuple[str, instance_catalog.InstanceType]]:
    """The job's instance types from the catalog, each with the path that names it (the
    instance_type, or each instance group's); unknown ones are left to the rules that say so."""
    groups = ctx.spec.instance_groups
    if groups is None:
        return [("instance_type", ctx.instance)] if ctx.instance is not None else []
    found = []
    for index, group in enumerate(groups):
        name = getattr(group, "instance_type", None)
        if not isinstance(name, str):
            continue
        try:
            found.append((f"instance_groups.{index}.instance_type", instance_catalog.get(name)))
        except LookupError:
            continue  # the instance_groups rules report it
    return found


def instance_storage(ctx: Context) -> Iterator[Problem]:
    """On NVMe instance-store types SageMaker trains on the NVMe volume: a volume_size above
    its size is refused (an error above the total of the disks; between one disk and the total,
    where the documentation does not say which, a warning)."""
    size = value_of(ctx.spec.extra.get("volume_size"))
    if type(size) is not int:
        return
    for _, entry in instance_types_of(ctx):
        total, disks, each = entry.nvme_total_gb, entry.nvme_disks, entry.nvme_disk_gb
        if not total or not disks or not each or size <= each:
            continue
        storage = f"{disks} x {each} GB" if disks > 1 else f"one {each} GB disk"
        fix = "pick an EBS-backed type for a larger volume."
        fixes = (
            removing("volume_size", why=f"SageMaker uses all of {entry.name}'s NVMe storage"),
        )
        if size > total:
            yield Problem(
                "volume_size",
                f"is {size} GB, more than the NVMe instance storage of {entry.name} "
                f"({storage}, {total} GB in all), which SageMaker uses instead of an EBS "
                "volume; it refuses the job (Invalid VolumeSizeInGB).",
                fix,
                fixes=fixes,
            )
        else:
            yield Problem(
                "volume_size",
                f"is {size} GB, more than one NVMe disk of {entry.name} ({storage}, {total} GB "
                "in all); SageMaker refuses a volume_size above the NVMe volume's size, and the "
                "documentation does not say whether that is one disk or all of them.",
                fix,
                "warning",
                fixes=fixes,
            )
