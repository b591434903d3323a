"""Service Quotas: the account's SageMaker training quotas against what the job and the jobs
already running need.

Quota names follow the instance type (as the Service Quotas console and ``aws service-quotas
list-service-quotas --service-code sagemaker`` list them): ``<type> for training job usage``,
``<type> for spot training job usage`` (a job with managed spot training), ``<type> for
training warm pool usage`` (a job with ``keep_alive_period_in_seconds``) and the account-wide
``Number of instances across all training jobs`` (and, where listed, ``... all spot training
jobs``). Their codes are opaque (``L-...``), so the sagemaker quotas are listed once
(ListAWSDefaultServiceQuotas, about 1,500 of them) and the name -> code table is kept in the
user cache per account and region; the applied value (GetServiceQuota) wins over the default.

Warm pools: AWS's default warm-pool quota is 0, and a job whose warm-pool quota is too small
still runs, only no pool is kept ("train-warm-pools-resource-limits" in the SageMaker developer
guide): that is a warning, never an error.

Sources of the names: the SageMaker developer guide (train-warm-pools-resource-limits: the
warm-pool quotas are per instance type, under Amazon SageMaker in the Service Quotas console,
and count against the training quota); the Service Quotas API reference
(ListAWSDefaultServiceQuotas lists every quota with its default, while ListServiceQuotas leaves
out a quota whose applied value is not available, so it cannot be the name -> code table);
the ``^<type> for (spot )?training job usage$`` and ``for training warm pool usage`` patterns
of the open-source aws_quota_exporter, and ``list-service-quotas --service-code sagemaker``
output quoted in public projects (``ml.m5.large for spot training job usage``,
``Number of instances across all training jobs`` with code L-00C91CB5). A name the listing
does not hold is not compared, never guessed.

Which running jobs count: on-demand jobs against the on-demand quotas, spot jobs against the
spot quotas (each quota is compared with the job's own kind of capacity only).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import attrs

from safe_estimators._preflight.context import Context, CouldNotCheck, error_code
from safe_estimators._problems import Problem, count, warning

SERVICE = "sagemaker"
ALL_ON_DEMAND = "Number of instances across all training jobs"
ALL_SPOT = "Number of instances across all spot training jobs"
MAX_QUOTA_PAGES = 40  # 100 a page: the listing held about 1,500 sagemaker quotas
MAX_JOB_PAGES = 5  # in-progress jobs listed, 100 a page
MAX_DESCRIBED = 100  # in-progress jobs described for their instances


def on_demand(instance_type: str) -> str:
    return f"{instance_type} for training job usage"


def spot(instance_type: str) -> str:
    return f"{instance_type} for spot training job usage"


def warm_pool(instance_type: str) -> str:
    return f"{instance_type} for training warm pool usage"


def console(region: str, code: str) -> str:
    """The Service Quotas console page of a sagemaker quota."""
    return (
        f"https://{region}.console.aws.amazon.com/servicequotas/home/services/sagemaker/"
        f"quotas/{code}"
    )


@attrs.frozen
class Table:
    """The sagemaker quotas of one account and region: name -> (code, default value)."""

    quotas: dict[str, tuple[str, float]]
    complete: bool  # every page was read


def needed_names(ctx: Context) -> list[str]:
    names = []
    for instances in ctx.job.instances:
        kind = spot if ctx.job.spot else on_demand
        names.append(kind(instances.instance_type))
        if ctx.job.keep_alive_seconds:
            names.append(warm_pool(instances.instance_type))
    return names


def table(ctx: Context) -> Table:
    """The quota table, from the user cache when it holds every name the job needs."""
    return ctx.once("quota-table", lambda: _cached_table(ctx))  # type: ignore[no-any-return]


def _cached_table(ctx: Context) -> Table:
    from safe_estimators._cache import remembered

    names = needed_names(ctx)
    found: dict[str, Any] = {}

    def derive() -> dict[str, Any]:
        listing = _list_quotas(ctx)
        found["listed"] = listing
        return {"quotas": listing.quotas, "complete": listing.complete}

    def well_formed(value: Any) -> bool:
        return (
            isinstance(value, dict)
            and isinstance(value.get("quotas"), dict)
            and all(name in value["quotas"] for name in names)
        )

    if ctx.account is None:  # no account to key the cache by
        return _list_quotas(ctx)
    value = remembered(
        f"preflight-quotas-{ctx.account}-{ctx.clients.region}.json",
        {"account": ctx.account, "region": ctx.clients.region, "service": SERVICE, "format": 1},
        derive,
        well_formed,
    )
    if "listed" in found:
        listed: Table = found["listed"]
        return listed
    quotas = {name: (str(entry[0]), float(entry[1])) for name, entry in value["quotas"].items()}
    return Table(quotas, bool(value.get("complete")))


def _list_quotas(ctx: Context) -> Table:
    quotas: dict[str, tuple[str, float]] = {}
    token = None
    for _ in range(MAX_QUOTA_PAGES):
        params: dict[str, Any] = {"ServiceCode": SERVICE, "MaxResults": 100}
        if token:
            params["NextToken"] = token
        page = ctx.call("instance_type", "service-quotas", "ListAWSDefaultServiceQuotas", **params)
        for quota in page.get("Quotas", []):
            quotas[quota["QuotaName"]] = (quota["QuotaCode"], float(quota.get("Value", 0)))
        token = page.get("NextToken")
        if not token:
            return Table(quotas, True)
    return Table(quotas, False)


def applied(ctx: Context, code: str, default: float) -> float:
    """The quota's applied value in the account, else its default."""
    try:
        answer = ctx.call(
            "instance_type", "service-quotas", "GetServiceQuota", ServiceCode=SERVICE,
            QuotaCode=code,
        )  # fmt: skip
    except Exception as exc:
        if error_code(exc) == "NoSuchResourceException":  # never changed: the default holds
            return default
        raise
    return float(answer["Quota"]["Value"])


def pending_increase(ctx: Context, code: str, need: int) -> Any:
    """A pending request to raise the quota to ``need`` or more, or None."""
    answer = ctx.call(
        "instance_type", "service-quotas", "ListRequestedServiceQuotaChangeHistoryByQuota",
        ServiceCode=SERVICE, QuotaCode=code, MaxResults=20,
    )  # fmt: skip
    for request in answer.get("RequestedQuotas", []):
        if (
            request.get("Status") in ("PENDING", "CASE_OPENED")
            and request.get("DesiredValue", 0) >= need
        ):
            return request
    return None


@attrs.frozen
class Usage:
    """Instances of in-progress training jobs, by (instance type, spot), and the instances
    kept in available warm pools (which count against the training quotas too, unless the job
    reuses the pool)."""

    instances: Counter[tuple[str, bool]]
    jobs: Counter[tuple[str, bool]]  # the jobs holding them
    listed: int  # in-progress jobs counted
    complete: bool
    spot_jobs: int = 0
    pooled: Counter[tuple[str, bool]] = attrs.field(factory=Counter)

    def of(self, instance_type: str | None, spot: bool) -> tuple[int, int, int]:
        """(instances, jobs, instances in warm pools) of ``instance_type`` (None: every type)
        on spot or on demand."""

        def wanted(key: tuple[str, bool]) -> bool:
            return key[1] == spot and (instance_type is None or key[0] == instance_type)

        instances = sum(n for key, n in self.instances.items() if wanted(key))
        jobs = sum(n for key, n in self.jobs.items() if wanted(key))
        if instance_type is None:  # a job of two instance groups is one job
            jobs = self.spot_jobs if spot else self.listed - self.spot_jobs
        return instances, jobs, sum(n for key, n in self.pooled.items() if wanted(key))


def _names(ctx: Context, **only: str) -> tuple[list[str], bool]:
    """The names of the training jobs ListTrainingJobs gives with the filter ``only``, and
    whether every page was read."""
    names: list[str] = []
    token = None
    for _ in range(MAX_JOB_PAGES):
        params: dict[str, Any] = {**only, "MaxResults": 100}
        if token:
            params["NextToken"] = token
        page = ctx.call("instance_type", "sagemaker", "ListTrainingJobs", **params)
        names += [s["TrainingJobName"] for s in page.get("TrainingJobSummaries", [])]
        token = page.get("NextToken")
        if not token:
            return names, True
    return names, False


def usage(ctx: Context) -> Usage:
    """What the account's in-progress training jobs and available warm pools hold
    (ListTrainingJobs, then DescribeTrainingJob: the summaries have no instance type), bounded
    in pages and jobs. A job counts by what DescribeTrainingJob says of it (its status, its
    warm pool's status), whatever the listing's filter did."""
    running, complete = _names(ctx, StatusEquals="InProgress")
    pools, pools_complete = _names(ctx, WarmPoolStatusEquals="Available")
    names = list(dict.fromkeys(running + pools))
    complete = complete and pools_complete
    if len(names) > MAX_DESCRIBED:
        names, complete = names[:MAX_DESCRIBED], False

    def describe(name: str) -> dict[str, Any] | None:
        try:
            found: dict[str, Any] = ctx.call(
                "instance_type", "sagemaker", "DescribeTrainingJob", TrainingJobName=name
            )
            return found
        except Exception as exc:
            if error_code(exc) in ("ValidationException", "ResourceNotFound"):
                return None  # ended and gone since it was listed
            raise

    instances: Counter[tuple[str, bool]] = Counter()
    pooled: Counter[tuple[str, bool]] = Counter()
    jobs: Counter[tuple[str, bool]] = Counter()
    spot_jobs = listed = 0
    for described in ctx.map(describe, names):
        if described is None:
            continue
        resources = described.get("ResourceConfig") or {}
        on_spot = bool(described.get("EnableManagedSpotTraining"))
        groups = [
            g for g in resources.get("InstanceGroups") or [resources] if g.get("InstanceType")
        ]
        if described.get("TrainingJobStatus") == "InProgress":
            listed += 1
            spot_jobs += on_spot
            for kind in {g["InstanceType"] for g in groups}:
                jobs[(kind, on_spot)] += 1
            for group in groups:
                instances[(group["InstanceType"], on_spot)] += int(group.get("InstanceCount", 1))
        elif (described.get("WarmPoolStatus") or {}).get("Status") == "Available":
            for group in groups:
                pooled[(group["InstanceType"], on_spot)] += int(group.get("InstanceCount", 1))
    return Usage(instances, jobs, listed, complete, spot_jobs, pooled)


def check(ctx: Context) -> list[Problem]:
    job = ctx.job
    if not job.remote or job.serverless:  # a serverless job's instances are SageMaker's
        return []
    quotas = table(ctx)
    kind = spot if job.spot else on_demand
    needs: Counter[str] = Counter()
    paths: dict[str, str] = {}
    for instances in job.instances:
        needs[instances.instance_type] += instances.count
        paths.setdefault(instances.instance_type, instances.path)
    values: dict[str, float] = {}
    counted = [kind(t) for t in needs] + [ALL_SPOT if job.spot else ALL_ON_DEMAND]
    warm = [warm_pool(t) for t in needs] if job.keep_alive_seconds else []
    # The running jobs are listed only for a quota they count against, while the values are read.
    listing = any(name in quotas.quotas for name in counted)
    running = ctx.pool.submit(usage, ctx) if listing else None
    for name in counted + warm:
        if name in quotas.quotas:
            values[name] = applied(ctx, *quotas.quotas[name])
    problems: list[Problem] = []
    try:
        held = running.result() if running else Usage(Counter(), Counter(), 0, True)
        complete = held.complete
    except CouldNotCheck as denied:  # the job's own need is still a lower bound
        problems.append(denied.problem)
        held, complete = Usage(Counter(), Counter(), 0, False), True  # (said once, above)
    for instance_type, need in needs.items():
        name = kind(instance_type)
        if name in values:
            problems += _against(
                ctx, paths[instance_type], name, quotas.quotas[name][0], values[name], need,
                *held.of(instance_type, job.spot), complete,
            )  # fmt: skip
    total = sum(needs.values())
    every = ALL_SPOT if job.spot else ALL_ON_DEMAND
    if every in values:
        path = next(iter(paths.values()), "instance_type")
        problems += _against(
            ctx, path, every, quotas.quotas[every][0], values[every], total,
            *held.of(None, job.spot), complete,
        )  # fmt: skip
    for instance_type, need in needs.items() if job.keep_alive_seconds else ():
        name = warm_pool(instance_type)
        if name in values and values[name] < need:
            code = quotas.quotas[name][0]
            problems.append(
                warning(
                    "keep_alive_period_in_seconds",
                    f"the account's quota {name!r} is {values[name]:g} in {job.region}, below "
                    f"the job's {count(need, 'instance')}: the job runs, but no warm pool is "
                    "kept after it (AWS's default for this quota is 0).",
                    "request an increase in the Service Quotas console "
                    f"({console(job.region, code)}), or drop keep_alive_period_in_seconds.",
                )
            )
    return problems


def _against(
    ctx: Context,
    path: str,
    name: str,
    code: str,
    value: float,
    own: int,
    others: int,
    jobs: int,
    pooled: int,
    complete: bool,
) -> list[Problem]:
    """The job's ``own`` instances plus ``others`` held by ``jobs`` running jobs against the
    quota, and ``pooled`` kept in warm pools (``complete``: every running job was counted)."""
    need = own + others
    region = ctx.job.region
    running = f"{others} in {count(jobs, 'running training job')}" if jobs else "0 running"
    if need <= value < need + pooled:  # a warm pool the job may or may not reuse
        return [
            warning(
                path,
                f"the account's quota {name!r} is {value:g} in {region}; the job needs {own} "
                f"and the running jobs hold {others}, and {pooled} more are kept in warm "
                "pools: unless the job reuses one of them (same configuration), SageMaker "
                "refuses it with ResourceLimitExceeded.",
                "let the warm pools end (UpdateTrainingJob with KeepAlivePeriodInSeconds 0), "
                f"or request an increase ({console(region, code)}).",
            )
        ]
    if need <= value:
        if complete:
            return []
        return [
            warning(
                path,
                f"the account's quota {name!r} is {value:g}; the job needs {own} and the "
                f"running jobs counted hold {others}, but not every running job was counted "
                f"(at most {MAX_DESCRIBED}).",
                "check the Service Quotas console before submitting more jobs.",
            )
        ]
    pending = pending_increase(ctx, code, need)
    message = (
        f"the account's quota {name!r} is {value:g} in {region}, and the job needs {need} "
        f"({own} for this job + {running})."
    )
    if pending is not None:
        return [
            warning(
                path,
                message + f" An increase to {pending['DesiredValue']:g} is pending "
                f"(status {pending['Status']}); the job fails until it is granted.",
                "wait for the increase, or use another instance type.",
            )
        ]
    return [
        Problem(
            path,
            message + " SageMaker refuses it with ResourceLimitExceeded.",
            f"request an increase to at least {need} in the Service Quotas console "
            f"({console(region, code)}), or use another instance type"
            + (", or wait for the running jobs to end." if others else "."),
        )
    ]
