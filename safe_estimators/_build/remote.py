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

from safe_estimators._build.estimator import EXPLANATION_ATTRIBUTE
from safe_estimators._facts.sdk_files import sdk_generation
from safe_estimators._resolve import ResolvedRemote
from safe_estimators._targets import REMOTE_FUNCTION

def sdk_remote() -> Callable[..., Any]:
    """The installed generation's ``remote`` decorator."""
    if sdk_generation() >= 3:
        from sagemaker.core.remote_function import remote
    else:
        from sagemaker.remote_function import remote
    return remote  # type: ignore[no-any-return]


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
