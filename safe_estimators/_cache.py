"""The user's cache folder: results derived from installed packages, kept between processes.

What is kept here is always derivable again from its source (botocore's model, the SDK's
schema); each entry carries the key it was derived for, and anything unreadable, stale or
unwritable means deriving it again. A cache changes how fast a check runs, never its verdict.

Another user must not be able to plant an entry, so the folder and its files are trusted only
as ssh trusts its own (owned by this user, writable by no one else): the folder is created 0700
and its files 0600 whatever the umask, and a folder or file that fails the check is neither read
nor written. Reads are bounded (``MAX_CACHE_BYTES``), non-blocking (a FIFO in place of a file
cannot hang a check) and of regular files only, checked on the open descriptor. Every doubt is
recorded (``take_doubts``) and shown as a warning; the caller derives the result from its source.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from safe_estimators._bounds import MAX_CACHE_BYTES, quote, read_at_most

_DOUBTS: dict[str, None] = {}  # why an entry was not trusted, in order, each once per process
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


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


def take_doubts() -> tuple[str, ...]:
    """Why cache entries were ignored (another user's, loose modes, not a regular file, too
    large, corrupt) since the last call: each is reported once per process, with the job that
    met it (the result it would have given is kept for the process, so it is not met again)."""
    found = tuple(_DOUBTS)
    _DOUBTS.clear()
    return found


def doubt(path: Path, why: str) -> None:
    """Record that the entry at ``path`` was ignored, and why."""
    _DOUBTS[f"{quote(str(path), 200)} {why}"] = None


def _untrusted(info: os.stat_result) -> str | None:
    """Why a folder or file with this status may have been written by someone else, or None."""
    euid = os.geteuid() if hasattr(os, "geteuid") else None
    if euid is not None and info.st_uid != euid:
        return f"is owned by user id {info.st_uid}, not by this user ({euid})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"is writable by other users (mode {stat.S_IMODE(info.st_mode):04o})"
    return None


def open_folder(folder: str | os.PathLike[str]) -> int | None:
    """A descriptor of the trusted cache folder ``folder``, or None (missing, or not trusted:
    recorded). Files opened relative to it (``read_in``) are in the folder that was checked,
    whatever happens to its name meanwhile."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _FLAGS)
    except (OSError, ValueError):
        return None
    why = _untrusted(os.fstat(fd))
    if why is not None:
        os.close(fd)
        doubt(Path(folder), why + "; its cache files were ignored")
        return None
    return fd


def read_cached(path: Path) -> bytes | None:
    """The bytes of the cache file at ``path`` if it can be trusted, else None.

    A missing file is None silently (it is derived and written again); a file or folder that
    fails a check is None with a recorded doubt.
    """
    folder = open_folder(path.parent)
    if folder is None:
        return None
    try:
        return read_in(folder, path.name, path.parent)
    finally:
        os.close(folder)


def read_in(folder: int, name: str, where: str | os.PathLike[str]) -> bytes | None:
    """``read_cached`` of the file ``name`` in the trusted folder ``where``, whose descriptor
    (``open_folder``) is ``folder``: it is opened by its name relative to that descriptor,
    never through a link, and read only if it is this user's, writable by no one else, a
    regular file and at most ``MAX_CACHE_BYTES``."""
    try:
        fd = os.open(name, _FLAGS | _NOFOLLOW, dir_fd=folder)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        doubt(Path(where, name), f"could not be opened ({type(exc).__name__}); it was ignored")
        return None
    try:
        info = os.fstat(fd)
        why = _untrusted(info)
        if why is None and not stat.S_ISREG(info.st_mode):
            why = "is not a regular file"
        if why is None and info.st_size > MAX_CACHE_BYTES:
            why = f"is {info.st_size:,} bytes, more than {MAX_CACHE_BYTES:,}"
        if why is not None:
            doubt(Path(where, name), why + "; it was ignored")
            return None
        data = read_at_most(fd, info.st_size, MAX_CACHE_BYTES + 1)
    except OSError:
        doubt(Path(where, name), "could not be read; it was ignored")
        return None
    finally:
        os.close(fd)
    if len(data) > MAX_CACHE_BYTES:  # grew since fstat
        doubt(Path(where, name), f"is more than {MAX_CACHE_BYTES:,} bytes; it was ignored")
        return None
    return data


def _make_folder(folder: Path) -> None:
    # Created 0700 whatever the umask (mkdir's mode is masked by it; chmod is not). Only a
    # folder this call created is changed: an existing one is checked, never loosened.
    if folder.is_dir():
        return
    if folder.parent != folder:
        _make_folder(folder.parent)  # every folder made here is private, not only the last
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        return
    os.chmod(folder, 0o700)


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all (mode 0600, in a trusted folder); give up
    silently when it cannot."""
    # A name no other writer uses; os.replace then swaps whole files, so a reader sees the old
    # file or the new one and concurrent writers (of the same content) cannot interleave.
    temporary = f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    folder: int | None = None
    try:
        _make_folder(path.parent)
        folder = open_folder(path.parent)
        if folder is None:
            return
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(temporary, flags, 0o600, dir_fd=folder)
        try:
            os.fchmod(fd, 0o600)  # the umask can only have removed bits; set exactly these
            with os.fdopen(fd, "wb", closefd=False) as file:
                file.write(data)
        finally:
            os.close(fd)
        os.replace(temporary, path.name, src_dir_fd=folder, dst_dir_fd=folder)
    except (OSError, ValueError):  # ValueError: a NUL in the folder's name
        if folder is not None:
            with contextlib.suppress(OSError, ValueError):
                os.unlink(temporary, dir_fd=folder)
    finally:
        if folder is not None:
            os.close(folder)


def remembered(
    name: str, key: object, derive: Callable[[], Any], well_formed: Callable[[Any], bool]
) -> Any:
    """Facts derived from installed files (JSON data), read back from the cache file ``name``
    when it was written for ``key`` and is ``well_formed``, else derived and written.

    The file is a header line (the key and the body's CRC-32) and the body; it is read only if
    ``read_cached`` trusts it. ``derive`` raising writes nothing.
    """
    folder = cache_folder()
    path = None if folder is None else folder / name
    data = None if path is None else read_cached(path)
    if data is not None:
        header, _, body = data.partition(b"\n")
        try:
            head = json.loads(header)
            current = isinstance(head, dict) and head.get("key") == key
            if current and head.get("crc32") == zlib.crc32(body):
                value = json.loads(body)
                if well_formed(value):
                    return value
        except (ValueError, RecursionError):
            pass  # corrupt: derived again
    value = derive()
    if path is not None:
        body = json.dumps(value, separators=(",", ":")).encode()
        header = json.dumps({"key": key, "crc32": zlib.crc32(body)}, sort_keys=True).encode()
        write_atomically(path, header + b"\n" + body)
    return value
