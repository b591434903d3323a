"""The ``@remote`` target: a checked job as the SDK's own decorator.

sagemaker 2.x's decorator is ``sagemaker.remote_function.remote``; 3.x's is
``sagemaker.core.remote_function.remote`` (``sagemaker.train.remote_function`` re-exports it and
is deprecated). The SDK's decorator makes its job settings when it decorates: that looks up the
role (IAM) and the default bucket (STS, S3) unless they are given. So the function is decorated
with it on its first call, where the job is sent anyway: decorating stays offline.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from safe_estimators._facts.sdk_files import sdk_generation
from safe_estimators._facts.targets import REMOTE_FUNCTION
from safe_estimators._problems import ConfigError, Problem
from safe_estimators._resolve.remote import ResolvedRemote
from safe_estimators._targets.estimator import EXPLANATION_ATTRIBUTE


def sdk_remote(region: str | None = None) -> Callable[..., Any]:
    """The installed generation's ``remote`` decorator.

    sagemaker 3.x's module makes a boto3 client when it is first imported (a class attribute
    of ``sagemaker.ai_registry``'s AIRHub, which it imports), and boto3 refuses a client
    without a region. No call is made then; ``region`` (a plan's) stands in for an unset one
    while it imports, and with no region at all the failure is our error naming the setting.
    """
    if sdk_generation() < 3:
        from sagemaker.remote_function import remote

        return remote  # type: ignore[no-any-return]
    import os

    from botocore.exceptions import NoRegionError

    with _IMPORT_LOCK:
        unset = region is not None and not os.environ.get("AWS_DEFAULT_REGION")
        if unset:
            os.environ["AWS_DEFAULT_REGION"] = str(region)
        try:
            from sagemaker.core.remote_function import remote as decorator
        except NoRegionError:
            raise ConfigError(
                [
                    Problem(
                        "region",
                        "is not set: sagemaker 3's remote_function makes a boto3 client when "
                        "it is imported, and boto3 needs a region for it.",
                        "set AWS_REGION or AWS_DEFAULT_REGION (or a region in ~/.aws/config).",
                    )
                ]
            ) from None
        finally:
            if unset:
                del os.environ["AWS_DEFAULT_REGION"]
    return decorator  # type: ignore[no-any-return]


_IMPORT_LOCK = threading.Lock()


def build_remote(job: ResolvedRemote, sagemaker_session: Any = None) -> Callable[[Any], Any]:
    """A decorator that runs the function as ``job`` on SageMaker, through the SDK's own
    ``remote`` with the checked (and injected) keyword arguments."""
    kwargs = dict(job.kwargs)
    if sagemaker_session is not None:
        kwargs["sagemaker_session"] = sagemaker_session

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        made: list[Callable[..., Any]] = []
        lock = threading.Lock()

        @functools.wraps(func)
        def wrapper(*args: Any, **call_kwargs: Any) -> Any:
            with lock:
                if not made:
                    made.append(sdk_remote()(**kwargs)(func))
            return made[0](*args, **call_kwargs)

        setattr(wrapper, EXPLANATION_ATTRIBUTE, job.explanation)
        wrapper.remote_kwargs = kwargs  # type: ignore[attr-defined]
        wrapper.target = REMOTE_FUNCTION  # type: ignore[attr-defined]
        return wrapper

    setattr(decorate, EXPLANATION_ATTRIBUTE, job.explanation)
    return decorate


def offline_remote_session(region: str | None) -> Any:
    """A real session of the decorator's generation (sagemaker 2.x's ``sagemaker.Session``,
    3.x's ``sagemaker.core`` Session) whose calls never leave the machine: the default bucket is
    given (no STS or S3 call), S3 uploads are answered locally, CreateTrainingJob's parameters
    are captured where boto3 would send them, any other call is refused, telemetry is off."""

    from safe_estimators._targets.model_trainer import _sdk_config
    from safe_estimators._targets.shared import PLACEHOLDER_BUCKET, capturing_session

    if sdk_generation() >= 3:
        from sagemaker.core.helper.session_helper import Session
    else:
        from sagemaker.session import Session

    class _OfflineSession(Session):  # type: ignore[misc]
        def default_bucket(self) -> str:
            return getattr(self, "_default_bucket_name_override", None) or PLACEHOLDER_BUCKET

    session = capturing_session(region)
    return _OfflineSession(boto_session=session, sagemaker_config=_sdk_config(True))


def plan_remote(job: ResolvedRemote, region: str | None) -> dict[str, Any]:
    """The CreateTrainingJob request the SDK's decorator makes for ``job``, offline: the real
    decorator runs a stand-in function (a spec file names none) on an offline session."""
    from safe_estimators._targets.shared import OfflineCallRefused, _Captured

    def remote_function() -> None:
        """A stand-in for the decorated function: the request does not depend on its body."""

    session = offline_remote_session(region)
    kwargs = {**job.kwargs, "sagemaker_session": session}
    try:
        sdk_remote(session.boto_region_name)(**kwargs)(remote_function)()
    except _Captured as captured:
        return captured.request
    except OfflineCallRefused as exc:
        raise ConfigError(
            [
                Problem(
                    "role" if "iam" in str(exc) else "<sagemaker>",
                    f"the SDK's @remote would call AWS to plan this job ({exc}).",
                    "give the role's ARN (arn:aws:iam::<account>:role/<name>) and s3_root_uri to "
                    "plan offline.",
                )
            ]
        ) from exc
    raise ConfigError(
        [Problem("<sagemaker>", "the SDK's @remote sent no CreateTrainingJob request.", "")]
    )
