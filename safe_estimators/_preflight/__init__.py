"""The preflight: after the offline checks pass, read-only calls to the user's AWS account for
what no offline check can see (quotas, the region's instance types, the role, buckets, the
image, the network, keys, training plans), and what the job may cost.

One module per concern (``quotas``, ``offering``, ``role``, ``s3``, ``ecr``, ``network``,
``kms``, ``plans``, ``price``), each a ``check(ctx)`` returning problems; ``guard`` makes the
clients and refuses any call but the declared Get/List/Describe/Simulate ones; ``runner`` runs
the checks concurrently within a time bound; ``job`` reads the job's facts from a request, an
estimator or a ModelTrainer.

Severity keeps the promise of the offline checks: an error only where the account's answer
settles it (a quota below the need, a bucket in another region, a role SageMaker may not
assume, a missing subnet, a disabled key, a plan for another instance type); a warning where the
answer can change or is partial (a policy simulation, a pending quota increase, a call of ours
that was denied); nothing where nothing is known.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from safe_estimators._facts.targets import FINE_TUNING
from safe_estimators._preflight.guard import ALLOWED, Clients
from safe_estimators._preflight.job import (
    Job,
    from_estimator,
    from_fine_tuning,
    from_request,
    from_trainer,
)
from safe_estimators._preflight.price import Price
from safe_estimators._preflight.runner import TIME_LIMIT, run
from safe_estimators._problems import ConfigError, Problem

__all__ = [
    "ALLOWED",
    "TIME_LIMIT",
    "PreflightResult",
    "plan_price",
    "preflight",
    "preflight_request",
    "run_job",
]


@attrs.frozen
class PreflightResult:
    """What the preflight found: ``problems`` (errors and warnings, the project's ``Problem``),
    the checks that did not finish in time (``unfinished``) and, when asked, the ``price``."""

    problems: tuple[Problem, ...]
    region: str
    account: str | None = None
    unfinished: tuple[str, ...] = ()
    price: Price | None = None
    source: str | None = None

    @property
    def errors(self) -> tuple[Problem, ...]:
        """The problems that stop the job."""
        return tuple(p for p in self.problems if p.severity == "error")

    @property
    def ok(self) -> bool:
        """No error (warnings may remain)."""
        return not self.errors

    def raise_for_errors(self) -> None:
        """Raise ConfigError carrying every problem when there is an error."""
        if not self.ok:
            raise ConfigError(self.problems, source=self.source)

    def lines(self) -> list[str]:
        """The result as text lines: the verdict, each problem, the price."""
        where = f"{self.region}" + (f", account {self.account}" if self.account else "")
        verdict = "ok" if self.ok else f"{len(self.errors)} error(s)"
        out = [f"preflight ({where}): {verdict}"]
        out += [f"  - {'warning: ' if p.severity == 'warning' else ''}{p}" for p in self.problems]
        out += self.price.lines() if self.price is not None else []
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready document: region, account, unfinished checks, price (the problems go
        where each output format puts problems)."""
        return {
            "region": self.region,
            "account": self.account,
            "unfinished": list(self.unfinished),
            "price": self.price.to_dict() if self.price is not None else None,
        }

    def _repr_markdown_(self) -> str:
        rows = ["| | path | problem | fix |", "| --- | --- | --- | --- |"]
        rows += [f"| {p.severity} | `{p.path}` | {p.message} | {p.hint} |" for p in self.problems]
        text = "\n".join(rows) if self.problems else f"preflight ({self.region}): ok"
        if self.price is not None:
            text += "\n\n" + self.price._repr_markdown_()
        return text


def _placeholders(lines: Sequence[str]) -> frozenset[str]:
    return frozenset(line.split(" ", 1)[0] for line in lines)


def run_job(
    job: Job,
    session: Any = None,
    *,
    price: bool = False,
    fits: Sequence[tuple[str, int]] = (),
    time_limit: float = TIME_LIMIT,
    clients: Clients | None = None,
    source: str | None = None,
) -> PreflightResult:
    """The preflight of ``job`` with ``session``'s credentials (boto3's standard chain when
    None), or with ``clients`` made already."""
    if clients is None:
        clients = Clients(session if session is not None else _default_session(), job.region)
    problems, unfinished, found, account = run(
        job, clients, time_limit=time_limit, with_price=price, fits=fits
    )
    return PreflightResult(tuple(problems), job.region, account, tuple(unfinished), found, source)


def _default_session() -> Any:
    """boto3's default session (the standard credential chain): after a plan it reads the
    service models the SageMaker SDK has parsed already (``_build``), a few tenths of a second
    of every preflight otherwise."""
    import boto3

    if boto3.DEFAULT_SESSION is None:
        boto3.setup_default_session()
    return boto3.DEFAULT_SESSION


def _region(session: Any) -> str:
    from safe_estimators._commands.plan import REGION_SOURCES, job_region

    region = getattr(session, "region_name", None) or job_region()
    if not region:
        raise ConfigError(
            [
                Problem(
                    "<aws>",
                    f"no AWS region: none is set in {REGION_SOURCES}.",
                    "export AWS_REGION=us-east-1 (your region), or run `aws configure`.",
                )
            ]
        )
    return str(region)


def _fits(path: str | os.PathLike[str]) -> list[tuple[str, int]]:
    from safe_estimators._memory.catalog import placements_of_file

    try:
        return [(p.instance.name, p.instance_count) for p in placements_of_file(os.fspath(path))]
    except ConfigError:  # no model: section, or instance groups: no fits to compare
        return []


def preflight(
    target: Any,
    session: Any = None,
    *,
    price: bool = False,
    time_limit: float = TIME_LIMIT,
    project_root: str | os.PathLike[str] | None = None,
) -> PreflightResult:
    """Check a job against the AWS account it would run in, read-only.

    ``target`` is a spec file (or ``JobSpec``: planned offline first, so the offline checks
    run before any call), a ``Plan``, a CreateTrainingJob request, an estimator or
    ModelTrainer built by ``safe_estimators`` or by hand, or a fine-tuning trainer made by
    ``safe_estimators.sft_trainer`` (and its siblings), read without making the SDK's
    trainer. ``session`` is a ``boto3.Session`` (default: boto3's standard credential chain
    and the region plan uses). ``price=True`` also
    reads the on-demand price (AWS Price List) and, for a spec with ``model:``, the cheaper
    instance types on which the job fits. Returns a ``PreflightResult``; raises ConfigError
    when the offline checks fail.
    """
    from safe_estimators._commands.plan import Plan, plan
    from safe_estimators._spec import JobSpec

    fits: list[tuple[str, int]] = []
    source = None
    if isinstance(target, str | os.PathLike | JobSpec):
        planned = plan(target, project_root=project_root)
        if price and not isinstance(target, JobSpec):
            fits = _fits(target)
        source = planned.source
        target = planned
    if isinstance(target, Plan) and target.fine_tuning is not None:
        job = from_fine_tuning(target.fine_tuning, _region(session))
        source = source or target.source
    elif isinstance(target, Plan):
        session_region = _region(session)
        job = from_request(target.request, session_region, _placeholders(target.placeholders))
        source = source or target.source
    elif isinstance(target, Mapping):
        job = from_request(target, _region(session))
    elif getattr(type(target), "target", None) == FINE_TUNING:  # a checked fine-tuning trainer
        # Read from its checked arguments: any other attribute makes the SDK's trainer, whose
        # constructor reads the hub.
        if session is None:
            session = getattr(getattr(target, "_session", None), "boto_session", None)
        job = from_fine_tuning(target._job, _region(session))
    elif hasattr(target, "compute") and hasattr(target, "train"):  # a ModelTrainer
        trainer_session = getattr(target, "sagemaker_session", None)
        if session is None:
            session = getattr(trainer_session, "boto_session", None)
        job = from_trainer(target, _region(session))
    elif hasattr(target, "fit") and hasattr(target, "instance_count"):  # an estimator
        if session is None:
            session = getattr(getattr(target, "sagemaker_session", None), "boto_session", None)
        job = from_estimator(target, _region(session))
    else:
        raise TypeError(
            "preflight() takes a spec file, a JobSpec, a Plan, a CreateTrainingJob request, an "
            "estimator, a ModelTrainer or a checked fine-tuning trainer, not "
            f"{type(target).__name__}"
        )
    return run_job(job, session, price=price, fits=fits, time_limit=time_limit, source=source)


def preflight_request(
    request: Mapping[str, Any], region: str, source: str | None = None
) -> PreflightResult:
    """The preflight of the CreateTrainingJob request ``submit`` is about to send, with boto3's
    standard credentials in ``region``."""
    return run_job(from_request(request, region), source=source)


def plan_price(planned: Any, session: Any = None) -> tuple[Price | None, list[Problem]]:
    """The price of a ``Plan`` (on-demand rate, ceiling, cheaper fits for a spec file with
    ``model:``), read from the AWS Price List with ``session``'s credentials, and a warning
    when it could not be read."""
    from botocore.exceptions import BotoCoreError, ClientError

    from safe_estimators._commands.plan import job_region
    from safe_estimators._preflight.context import CouldNotCheck, error_code
    from safe_estimators._preflight.price import price
    from safe_estimators._problems import warning
    from safe_estimators._targets.shared import PLACEHOLDER_REGION

    region = getattr(session, "region_name", None) or job_region() or PLACEHOLDER_REGION
    job = from_request(planned.request, region)
    source = planned.source
    fits = _fits(source) if isinstance(source, str) and os.path.isfile(source) else []
    clients = Clients(session if session is not None else _default_session(), region)
    try:
        return price(clients, job, fits), []
    except CouldNotCheck as denied:
        return None, [denied.problem]
    except (BotoCoreError, ClientError) as exc:
        reason = f"{error_code(exc)}: {str(exc)[:200]}"
        return None, [
            warning(
                "instance_type",
                f"could not read the price from the AWS Price List ({reason}).",
                "check the AWS credentials and the network, or leave out --price.",
            )
        ]
