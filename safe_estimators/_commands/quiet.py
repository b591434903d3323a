"""Our calls into the SageMaker SDK print nothing of the SDK's own, and leave logging as it was.

Importing and using the SDK (sagemaker 2) logs ``sagemaker.config INFO - ...`` lines through a
handler it adds itself, warns twice about the v2 deprecation (a ``FutureWarning`` and a log
record), and two of its modules call ``logging.basicConfig(level=INFO)`` when imported, which
configures the user's root logger. In a notebook all of it lands under the cell that called
``plan()`` or ``pytorch()``.

Importing it also imports sagemaker_core, which installs rich tracebacks: ``sys.excepthook``
and, in IPython or Jupyter, the shell's traceback display, which then shows an error as a box
of frames whatever the exception asks (``ConfigError._render_traceback_``).

``sdk_quiet()`` wraps our calls: while it lasts the ``sagemaker`` loggers drop records below
WARNING and the deprecation nudge is off (``SAGEMAKER_SUPPRESS_V2_WARNING``, the SDK's own
switch); afterwards each is put back as it was, a root logger the SDK configured meanwhile gets
back its level and handlers, and the traceback hooks replaced meanwhile are put back. Nothing
of the user's is touched: their loggers, handlers and records go on as before. Nested and
concurrent calls share one quiet period, entered by the first and undone by the last.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

# The SDK's loggers whose records below WARNING are dropped during our calls: "sagemaker"
# covers its modules (sagemaker.image_uris, ...); "sagemaker.config" sets its own level.
_SDK_LOGGERS = ("sagemaker", "sagemaker.config")
_V2_WARNING = "SAGEMAKER_SUPPRESS_V2_WARNING"


class _NoRegionNoise(logging.Filter):
    """sagemaker 3's ModelTrainer.train() creates the job through sagemaker-core's
    TrainingJob.create, which makes its client from the session without a region and so warns
    "No region provided. Using default region." on every job, though the session has one (the
    region the job uses): a line about the SDK's own call, not about the job."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "No region provided. Using default region."


_NO_REGION = (logging.getLogger("sagemaker.core.utils.utils"), _NoRegionNoise())

# What rich's traceback.install replaces on an IPython shell (instance attributes).
_SHELL_HOOKS = ("showtraceback", "_showtraceback", "showsyntaxerror")
_UNSET = object()

_lock = threading.Lock()
_depth = 0
_saved: dict[str, Any] = {}


@contextlib.contextmanager
def sdk_quiet() -> Iterator[None]:
    """No SDK INFO lines or v2 deprecation banners from the calls inside; logging, the
    environment and the root logger as they were afterwards."""
    global _depth
    with _lock:
        if _depth == 0:
            _saved.clear()
            _saved["levels"] = {name: logging.getLogger(name).level for name in _SDK_LOGGERS}
            _saved["root"] = (logging.root.level, list(logging.root.handlers))
            _saved["variable"] = os.environ.get(_V2_WARNING)
            _saved["excepthook"] = sys.excepthook
            shell = _shell()
            _saved["shell"] = (shell, {n: _hook(shell, n) for n in _SHELL_HOOKS})
            os.environ[_V2_WARNING] = "1"
            _NO_REGION[0].addFilter(_NO_REGION[1])
            for name in _SDK_LOGGERS:
                # Set even where the effective level is WARNING now: importing the SDK sets
                # sagemaker.config to INFO when it is unset, and its basicConfig lowers root.
                logger = logging.getLogger(name)
                if logger.level < logging.WARNING:
                    logger.setLevel(logging.WARNING)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                _restore()


def _restore() -> None:
    _NO_REGION[0].removeFilter(_NO_REGION[1])
    for name, level in _saved["levels"].items():
        logging.getLogger(name).setLevel(level)
    level, handlers = _saved["root"]
    root = logging.root
    if root.level != level:
        root.setLevel(level)
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)  # added by the SDK's basicConfig while we called it
    if _saved["variable"] is None:
        os.environ.pop(_V2_WARNING, None)
    else:
        os.environ[_V2_WARNING] = _saved["variable"]
    if sys.excepthook is not _saved["excepthook"]:
        sys.excepthook = _saved["excepthook"]  # sagemaker_core's rich traceback
    shell, hooks = _saved["shell"]
    for name, hook in hooks.items() if shell is not None else ():
        if _hook(shell, name) is hook:
            continue
        if hook is _UNSET:
            delattr(shell, name)  # the class's own method shows through again
        else:
            setattr(shell, name, hook)


def _hook(shell: Any, name: str) -> Any:
    """A hook set on the shell object itself (not its class's method), or _UNSET."""
    return getattr(shell, "__dict__", {}).get(name, _UNSET)


def _shell() -> Any:
    """The running IPython shell, or None (IPython is not imported to ask)."""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    return get() if get is not None else None
