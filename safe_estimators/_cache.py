"""The user's cache folder: results derived from installed packages, kept between processes.

What is kept here is always derivable again from its source (botocore's model, the SDK's
schema); each entry carries the key it was derived for, and anything unreadable, stale or
unwritable means deriving it again. A cache changes how fast a check runs, never its verdict.
"""

from __future__ import annotations

import contextlib
import os
import stat
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


# A cache file larger than this was not written by us (reading it whole could exhaust memory).
_MAX_READ = 4_000_000


def read_cached(path: Path) -> bytes | None:
    """The bytes of the cache file at ``path`` if it can be trusted, else None: a regular file
    of at most ``_MAX_READ`` bytes, in a folder and a file owned by this user and writable by no
    one else (checked on the open descriptors; opened without blocking or following a link)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        folder = os.open(path.parent, flags | getattr(os, "O_DIRECTORY", 0))
    except (OSError, ValueError):
        return None
    try:
        if not _trusted(os.fstat(folder)):
            return None
        fd = os.open(path.name, flags | getattr(os, "O_NOFOLLOW", 0), dir_fd=folder)
        try:
            info = os.fstat(fd)
            if not _trusted(info) or not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_READ:
                return None
            data = os.read(fd, info.st_size + 1)  # one read: a regular file of this size
            while len(data) <= info.st_size:
                more = os.read(fd, _MAX_READ + 1 - len(data))
                if not more:
                    break
                data += more
        finally:
            os.close(fd)
    except (OSError, ValueError):
        return None
    finally:
        os.close(folder)
    return data if len(data) <= _MAX_READ else None


def _trusted(info: os.stat_result) -> bool:
    """Owned by this user and writable by no one else (as ssh trusts its files)."""
    owner = os.geteuid() if hasattr(os, "geteuid") else info.st_uid
    return info.st_uid == owner and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
