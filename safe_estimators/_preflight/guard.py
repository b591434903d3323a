"""The read-only guard: every AWS client the preflight makes, and the only calls it may make.

Each client gets a botocore ``before-call`` hook that lets through the operations in
``ALLOWED`` (Get, List, Describe and Simulate calls) and fails any other before it is signed or
sent. The hook also records every call it sees (``seen_calls``), so a test can show that the
whole preflight suite made no other call. Clients have connect and read timeouts and a bounded
number of retries (botocore's ``Config``): a slow or unreachable endpoint costs seconds, never
minutes.
"""

from __future__ import annotations

import threading
from typing import Any

# (boto3 client name, operation): everything the preflight reads, and nothing else.
ALLOWED: frozenset[tuple[str, str]] = frozenset(
    {
        ("sts", "GetCallerIdentity"),
        ("service-quotas", "ListAWSDefaultServiceQuotas"),
        ("service-quotas", "GetServiceQuota"),
        ("service-quotas", "ListRequestedServiceQuotaChangeHistoryByQuota"),
        ("sagemaker", "ListTrainingJobs"),
        ("sagemaker", "DescribeTrainingJob"),
        ("sagemaker", "DescribeTrainingPlan"),
        ("iam", "GetRole"),
        ("iam", "SimulatePrincipalPolicy"),
        ("s3", "GetBucketLocation"),
        ("s3", "ListObjectsV2"),
        ("ecr", "DescribeImages"),
        ("ecr", "GetRepositoryPolicy"),
        ("ec2", "DescribeSubnets"),
        ("ec2", "DescribeSecurityGroups"),
        ("ec2", "DescribeRouteTables"),
        ("ec2", "DescribeVpcEndpoints"),
        ("kms", "DescribeKey"),
        ("pricing", "GetProducts"),
    }
)

# IAM's prefix for a service's actions, where it differs from the boto3 client name.
_ACTION_PREFIX = {"service-quotas": "servicequotas"}
# IAM's action for an operation, where it differs from the operation's name.
_ACTION_NAME = {("s3", "ListObjectsV2"): "ListBucket"}

CONNECT_TIMEOUT = 5  # seconds
READ_TIMEOUT = 10
MAX_ATTEMPTS = 3  # botocore's standard retry mode: the first try and two retries

_seen_lock = threading.Lock()
_seen: dict[tuple[str, str], int] = {}


class ReadOnlyViolation(RuntimeError):
    """A call the preflight does not declare; raised before anything is sent."""


def permission(service: str, operation: str) -> str:
    """The IAM action a call needs: ``permission("service-quotas", "GetServiceQuota") ==
    "servicequotas:GetServiceQuota"``."""
    prefix = _ACTION_PREFIX.get(service, service)
    return f"{prefix}:{_ACTION_NAME.get((service, operation), operation)}"


def seen_calls() -> dict[tuple[str, str], int]:
    """Every call the guard has let through or refused in this process, with its count."""
    with _seen_lock:
        return dict(_seen)


def _guard(model: Any = None, **_: Any) -> None:
    key = (model.service_model.service_name, model.name)
    with _seen_lock:
        _seen[key] = _seen.get(key, 0) + 1
    if key not in ALLOWED:
        raise ReadOnlyViolation(
            f"{permission(*key)} is not a read-only call the preflight declares; it was not sent"
        )


def config() -> Any:
    """The botocore Config of every preflight client: timeouts, bounded retries, a pool large
    enough for the concurrent calls."""
    from botocore.config import Config

    return Config(
        connect_timeout=CONNECT_TIMEOUT,
        read_timeout=READ_TIMEOUT,
        retries={"max_attempts": MAX_ATTEMPTS, "mode": "standard"},
        max_pool_connections=16,
        user_agent_extra="safe-estimators-preflight",
    )


class Clients:
    """The preflight's clients over one boto3 session, made on first use and shared by the
    threads (botocore clients are thread-safe); each is guarded.

    ``lane`` keeps a concern's client apart from another concern's client of the same service
    (each its own connection pool; and a test can stub one lane, e.g. IAM's policy simulation,
    while the other talks to an emulator).
    """

    def __init__(self, session: Any, region: str) -> None:
        self.session = session
        self.region = region
        self._clients: dict[tuple[str, str, str], Any] = {}
        self._lock = threading.Lock()

    def get(self, service: str, lane: str = "", region: str | None = None) -> Any:
        key = (service, lane, region or self.region)
        with self._lock:
            client = self._clients.get(key)
            if client is None:
                client = self.session.client(service, region_name=key[2], config=config())
                # First of every before-call handler, so that a handler answering the call in
                # its place (botocore's Stubber, in tests) cannot skip the guard.
                client.meta.events.register_first("before-call.*.*", _guard)
                self._clients[key] = client
            return client
