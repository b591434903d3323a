"""What every preflight check reads: the job, the guarded clients, the caller's account, and
how a call that fails becomes a problem."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import attrs

from safe_estimators._preflight.guard import Clients, permission
from safe_estimators._preflight.job import Job
from safe_estimators._problems import Problem, warning

T = TypeVar("T")
R = TypeVar("R")

# Error codes meaning "the caller may not make this call" across the services the preflight asks.
DENIED = frozenset(
    {
        "AccessDenied",
        "AccessDeniedException",
        "UnauthorizedOperation",  # EC2
        "AuthorizationError",
        "UnauthorizedException",
    }
)


class CouldNotCheck(Exception):
    """A check that could not be made; ``problem`` (a warning) says which call failed."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(str(problem))
        self.problem = problem


def error_code(exc: BaseException) -> str:
    """The AWS error code of a botocore ClientError, else the exception's class name."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code", type(exc).__name__))
    return type(exc).__name__


@attrs.define
class Context:
    """One preflight run: the job, the clients, and a pool for a check's own concurrent calls
    (separate from the pool the checks run on, so a check waiting for its calls never holds a
    thread its calls need)."""

    job: Job
    clients: Clients
    pool: ThreadPoolExecutor
    account: str | None = None
    _memo: dict[str, Any] = attrs.field(factory=dict)
    _lock: threading.Lock = attrs.field(factory=threading.Lock)

    def call(
        self,
        path: str,
        service: str,
        operation: str,
        *,
        lane: str = "",
        region: str | None = None,
        **params: Any,
    ) -> Any:
        """Make one declared call; an AccessDenied raises CouldNotCheck naming the permission
        (a warning at ``path``), any other ClientError goes to the caller."""
        from botocore import xform_name
        from botocore.exceptions import ClientError

        client = self.clients.get(service, lane, region)
        try:
            return getattr(client, xform_name(operation))(**params)
        except ClientError as exc:
            code = error_code(exc)
            if code in DENIED:
                raise CouldNotCheck(
                    warning(
                        path,
                        f"could not check: {code} on {permission(service, operation)}.",
                        f"allow {permission(service, operation)} to the credentials that run "
                        "the preflight, or skip it (--no-preflight).",
                    )
                ) from exc
            raise

    def map(self, function: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """``function`` over ``items`` concurrently, results in order (the first error raised)."""
        futures = [self.pool.submit(function, item) for item in items]
        return [future.result() for future in futures]

    def each(self, function: Callable[[T], list[Problem]], items: Iterable[T]) -> list[Problem]:
        """``function``'s problems for each item, concurrently; an item that could not be
        checked gives its warning and the others still count."""

        def guarded(item: T) -> list[Problem]:
            try:
                return function(item)
            except CouldNotCheck as denied:
                return [denied.problem]

        return [p for found in self.map(guarded, items) for p in found]

    def once(self, name: str, derive: Callable[[], Any]) -> Any:
        """``derive()`` made once per run and shared by the checks that need it (the first
        caller derives it; the others wait for it)."""
        with self._lock:
            entry = self._memo.get(name)
            if entry is None:
                entry = self._memo[name] = _Once(derive)
        return entry.value()


class _Once:
    def __init__(self, derive: Callable[[], Any]) -> None:
        self._derive = derive
        self._lock = threading.Lock()
        self._done = False
        self._value: Any = None
        self._error: BaseException | None = None

    def value(self) -> Any:
        with self._lock:
            if not self._done:
                try:
                    self._value = self._derive()
                except BaseException as exc:
                    self._error = exc
                self._done = True
        if self._error is not None:
            raise self._error
        return self._value
