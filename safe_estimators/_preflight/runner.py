"""The preflight's run: the checks concurrently, each call bounded, the whole run bounded in
time, and what did not finish said out loud."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

from safe_estimators._preflight import ecr, kms, network, offering, plans, quotas, role, s3
from safe_estimators._preflight.context import Context, CouldNotCheck, error_code
from safe_estimators._preflight.guard import Clients, ReadOnlyViolation
from safe_estimators._preflight.job import Job
from safe_estimators._preflight.price import Price, price
from safe_estimators._problems import Problem, problem_source, tagged, warning

TIME_LIMIT = 30.0  # seconds for the whole preflight
CALL_THREADS = 16

# Each check: its name (said when it could not finish), the path its failures are reported at,
# and the function. Adding a check is one line here and one module.
CHECKS: tuple[tuple[str, str, Callable[[Context], list[Problem]]], ...] = (
    ("quotas", "instance_type", quotas.check),
    ("region offering", "instance_type", offering.check),
    ("role", "role", role.check),
    ("S3 locations", "output_path", s3.check),
    ("ECR image", "image_uri", ecr.check),
    ("network", "subnets", network.check),
    ("KMS keys", "output_kms_key", kms.check),
    ("training plan", "training_plan", plans.check),
)


def _could_not(name: str, path: str, exc: BaseException) -> Problem:
    if isinstance(exc, CouldNotCheck):
        return exc.problem
    text = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
    return warning(
        path,
        f"could not check the {name}: {error_code(exc)}: {text}",
        "run the preflight again; if it persists, check the credentials and the network.",
    )


def _account(clients: Clients) -> tuple[str | None, list[Problem]]:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        identity = clients.get("sts").get_caller_identity()
    except (BotoCoreError, ClientError) as exc:
        return None, [
            warning(
                "<aws>",
                f"the preflight did not run: the caller's account is unknown ({error_code(exc)}"
                f": {str(exc)[:200]}).",
                "configure AWS credentials (aws configure, aws sso login), or skip the "
                "preflight (--no-preflight).",
            )
        ]
    return str(identity["Account"]), []


@problem_source(
    "preflight",
    "The job against the AWS account, read-only, after the offline verdict: quotas (on-demand, "
    "spot, warm pool, the account-wide count, with the instances of running jobs), the instance "
    "type offered in the region, the role's trust and permissions, every S3 location, a custom "
    "image in ECR, subnets, security groups and their route to S3, KMS keys and a training plan. "
    "An error only where the account's answer settles it; a warning where it can change, is "
    "partial, or our own call was denied (naming the permission).",
)
def run(
    job: Job,
    clients: Clients,
    *,
    time_limit: float = TIME_LIMIT,
    with_price: bool = False,
    fits: Sequence[tuple[str, int]] = (),
    checks: Sequence[tuple[str, str, Callable[[Context], list[Problem]]]] = CHECKS,
) -> tuple[list[Problem], list[str], Price | None, str | None]:
    """Run ``checks`` on ``job``: (problems, names of the checks that did not finish, price,
    the caller's account)."""
    from botocore.exceptions import BotoCoreError, ClientError

    deadline = time.monotonic() + time_limit
    account, problems = _account(clients)
    if account is None:
        return tagged(run, problems), [], None, None
    calls = ThreadPoolExecutor(CALL_THREADS, thread_name_prefix="preflight-call")
    workers = ThreadPoolExecutor(len(checks) + 1, thread_name_prefix="preflight")
    ctx = Context(job, clients, calls, account)
    futures: dict[Future[Any], tuple[str, str]] = {
        workers.submit(check, ctx): (name, path) for name, path, check in checks
    }
    if with_price:
        futures[workers.submit(price, clients, job, fits)] = ("price", "instance_type")
    try:
        done, pending = wait(futures, timeout=max(0.0, deadline - time.monotonic()))
    finally:
        workers.shutdown(wait=False, cancel_futures=True)
        calls.shutdown(wait=False, cancel_futures=True)
    found: Price | None = None
    for future, (name, path) in futures.items():
        if future not in done:
            continue
        exc = future.exception()
        if isinstance(exc, ReadOnlyViolation):
            raise exc
        if isinstance(exc, CouldNotCheck | ClientError | BotoCoreError):
            problems.append(_could_not(name, job.written(path), exc))
        elif exc is not None:
            raise exc
        elif name == "price":
            found = future.result()
        else:
            problems += future.result()
    unfinished = [futures[f][0] for f in futures if f in pending]
    if unfinished:
        problems.append(
            warning(
                "<preflight>",
                f"did not finish within {time_limit:g} s: {', '.join(unfinished)}; "
                "nothing is known about them.",
                "run the preflight again (a slow network or throttling), or allow it more "
                "time (--preflight-time-limit).",
            )
        )
    return tagged(run, dict.fromkeys(problems)), unfinished, found, account
