"""The switches a recipe is read under: offline (validate, lint, plan) and ``--recipes DIR``.

Apart from the loader because every validate enters them, for jobs with a recipe or not: the
loader (OmegaConf's merging, the bounded reader) is imported only for a job that has one.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator

RECIPES_VARIABLE = "SAFE_ESTIMATORS_RECIPES"

# validate, lint and plan must read every recipe; the factories leave one they cannot read to
# the SDK, which clones or downloads it (see ``offline_recipes``).
_OFFLINE: contextvars.ContextVar[bool] = contextvars.ContextVar("offline_recipes", default=False)


@contextlib.contextmanager
def offline_recipes() -> Iterator[None]:
    """While this runs, a recipe that cannot be read locally is an error, not a warning."""
    token = _OFFLINE.set(True)
    try:
        yield
    finally:
        _OFFLINE.reset(token)


def reading_offline() -> bool:
    """Whether this runs inside ``offline_recipes``."""
    return _OFFLINE.get()


# ``--recipes DIR``: a context variable, so that other threads (and os.environ) never see it.
_FOLDER: contextvars.ContextVar[str | None] = contextvars.ContextVar("recipes", default=None)


@contextlib.contextmanager
def recipes_from(folder: str | None) -> Iterator[None]:
    """While this runs, predefined recipes are read from ``folder`` (``--recipes DIR``)."""
    token = _FOLDER.set(folder or _FOLDER.get())
    try:
        yield
    finally:
        _FOLDER.reset(token)


def recipes_folder() -> str | None:
    """``--recipes DIR`` or ``$SAFE_ESTIMATORS_RECIPES``, else the local copy the user's git
    configuration sends the SDK's clone of the collection to."""
    from safe_estimators._recipes.gitconfig import configured_recipes_folder

    return _FOLDER.get() or os.environ.get(RECIPES_VARIABLE) or configured_recipes_folder()


__all__ = [
    "RECIPES_VARIABLE",
    "offline_recipes",
    "reading_offline",
    "recipes_folder",
    "recipes_from",
]
