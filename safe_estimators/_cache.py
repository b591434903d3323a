"""The user's cache folder: results derived from installed packages, kept between processes.

What is kept here is always derivable again from its source (botocore's model, the SDK's
schema); each entry carries the key it was derived for, and anything unreadable, stale or
unwritable means deriving it again. A cache changes how fast a check runs, never its verdict.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def cache_folder() -> Path | None:
    """``$SAFE_ESTIMATORS_CACHE_DIR``, else the ``safe-estimators`` folder in
    ``$XDG_CACHE_HOME`` or ``~/.cache`` (None: no home folder)."""
    explicit = os.environ.get("SAFE_ESTIMATORS_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):  # the XDG spec says to ignore a relative path
        return Path(xdg) / "safe-estimators"
    try:
        return Path.home() / ".cache" / "safe-estimators"
    except RuntimeError:  # no HOME and no password entry
        return None


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all; give up silently when it cannot."""
    # A name no other writer uses; os.replace then swaps whole files, so a reader sees the old
    # file or the new one and concurrent writers (of the same content) cannot interleave.
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(temporary, "xb") as file:
            file.write(data)
        os.replace(temporary, path)
    except (OSError, ValueError):  # ValueError: a NUL in the folder's name
        with contextlib.suppress(OSError, ValueError):
            temporary.unlink(missing_ok=True)
