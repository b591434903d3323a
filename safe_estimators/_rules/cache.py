"""The cache folder as the checks found it: an entry they could not trust is a warning.

The verdict is the same either way (the checks derived the result from its source instead);
the warning says why the cache was ignored, since it may have been planted by another user.
"""

from __future__ import annotations

from collections.abc import Iterator

from safe_estimators._cache import take_doubts
from safe_estimators._context import Context
from safe_estimators._problems import Problem, warning


def cache_trusted(ctx: Context) -> Iterator[Problem]:
    """Every cache entry ignored since the last job (``_cache.take_doubts``), as a warning."""
    for why in take_doubts():
        yield doubt_warning(why)


def doubt_warning(why: str) -> Problem:
    """The warning for a cache entry ignored for ``why`` (a ``_cache.take_doubts`` item)."""
    return warning(
        "<cache>",
        f"{why}; the checks derived its result again from its source instead (botocore's "
        "model, the SDK's schema, the spec itself: same verdicts, slower).",
        "remove it: safe_estimators writes it again (files 0600 in a 0700 folder), or set "
        "SAFE_ESTIMATORS_CACHE_DIR to a folder only you can write.",
    )
