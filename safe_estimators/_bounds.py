"""Limits on what safe_estimators reads, walks and prints, so that no input can hang it.

``validate`` and ``lint`` run in CI on files anyone can change. Each bound below is far above
what a real job needs and far below what would stall a build; each says why it is where it is.
Every walk here is iterative (an explicit stack), so depth is a number we choose, not the
interpreter's recursion limit.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
import os
import re
import stat
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from safe_estimators._problems import MAX_PROBLEMS, MAX_QUOTED

__all__ = [
    "MAX_PROBLEMS",
    "MAX_QUOTED",
    "is_inside",
    "printable",
    "quote",
    "real_path",
    "shape_problems",
    "walk_tree",
]

# Everything CreateTrainingJob accepts (100 hyperparameters of 2,500 characters, 100 environment
# entries of 512, 50 tags, ...) fits in about 400 kB; a spec file larger than this is not a job.
MAX_SPEC_BYTES = 1_000_000

# A job's options, 100 hyperparameters and 100 environment entries (CreateTrainingJob's limits)
# with a few small lists are a few thousand values; reading 20,000 takes well under a second.
MAX_NODES = 20_000

# The deepest real option is about 6 levels (distribution.smdistributed.modelparallel.
# parameters.x, or a DeepSpeed config in a hyperparameter); the SDK's own code recurses.
MAX_DEPTH = 64

# MAX_PROBLEMS (imported above, defined beside ConfigError): problems shown in one message; a
# human fixes the first ones, and more than that is one mistake repeated.

# No value of CreateTrainingJob holds a longer number: top-level numbers are 64-bit, and a
# hyperparameter is sent as text of at most 2,500 characters (Python cannot even print an int
# of over 4,300 digits).
MAX_INT_DIGITS = 2_500

_MAX_INT_BITS = int(MAX_INT_DIGITS * 3.33)  # log2(10) bits per digit, rounded down

# MAX_QUOTED (imported above, defined beside Problem): the characters of a value quoted in a
# message.

# Folders walked under source_dir (the SDK uploads all of it): a training project has tens or
# hundreds of files; a walk that meets more is walking a disk.
MAX_TREE_ENTRIES = 20_000
# The SDK packages source_dir with tarfile.add, which recurses once per folder level and fails
# (RecursionError) a few hundred levels down; real projects are under 20 levels deep.
MAX_TREE_DEPTH = 100

# A cache file (the botocore subset is about 40 kB; a schema record is tens of bytes): anything
# larger was not written by us, and reading it whole could exhaust memory (a 3 GB file, or a
# link to /dev/zero).
MAX_CACHE_BYTES = 4_000_000

# Statements the script checks inspect for a rank test before the saves of one script, all saves
# together (each save walks the statements before it: 4,000 saves after 4,000 ifs were 16
# million steps, minutes). A real script has hundreds of statements and tens of saves; 100,000
# steps take well under a second. Past it the remaining saves count as guarded: no warning.
MAX_GUARD_STEPS = 100_000

# A model's numbers (parameters, layers, hidden size, vocabulary, sequence length, batch): the
# largest models have about 2 x 10^12 parameters and every other number is far smaller. The
# estimate multiplies several of them in floating point, which stays finite below this
# (10^300 overflowed it: an internal error).
MAX_MODEL_NUMBER = 10**15

# A Hugging Face config.json is a few kilobytes (id2label tables of large vocabularies: a few
# hundred); a larger file, a FIFO or a device is not one.
MAX_CONFIG_BYTES = 2_000_000

# Framework versions in the SageMaker SDK's image tables are at most about 10 characters
# ("2.1.0", "4.28.1"); a longer one is resolved (as unknown) but never kept in the version
# caches, so 300 distinct 1 MB versions do not stay in memory (256 MB before).
MAX_VERSION_CHARS = 32

# Fix searches (the memory fit's "smallest change that fits"): sharding degrees are the divisors
# of the ranks, found by trial division up to this many candidates (every world size up to
# 10^10 ranks completely, a few milliseconds); beyond, only divisors paired with a small one are
# tried. Searches over monotone quantities (micro-batch, sharding) bisect: log2 of the range in
# estimates, so a micro-batch of 10^9 or 10^20 instances costs tens of estimates, not hours.
MAX_DIVISOR_TRIALS = 100_000


def divisors(number: int) -> list[int]:
    """The divisors of ``number`` in increasing order, found by trial division up to
    MAX_DIVISOR_TRIALS candidates (every divisor of a number up to 10^10; beyond, only those
    paired with a small one: a bounded subset), never one step per unit of ``number``."""
    small, large = [], []
    candidate = 1
    while candidate * candidate <= number and candidate <= MAX_DIVISOR_TRIALS:
        if number % candidate == 0:
            small.append(candidate)
            if candidate * candidate != number:
                large.append(number // candidate)
        candidate += 1
    return small + large[::-1]


class NotRegular(OSError):
    """A file ``read_regular`` refused: why, in words for a message."""


def read_regular(path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes. Opened without blocking (a FIFO
    would wait for a writer forever) and checked on the open descriptor; raises NotRegular
    (a FIFO, a device, a folder, too large) or the OSError of the open."""
    return read_contained(path, limit, None)


# The files read (or looked for) while one verdict is made, for the verdict cache to key them by
# their bytes (``recording_reads``); None outside a recording. A context variable: threads and
# nested commands keep their own.
_READS: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("reads", default=None)


@contextlib.contextmanager
def recording_reads() -> Iterator[list[str]]:
    """While this runs, every file ``read_contained`` reads or ``note_read`` names is listed
    (absolute paths, in order, repeats kept) in the list it yields."""
    found: list[str] = []
    token = _READS.set(found)
    try:
        yield found
    finally:
        _READS.reset(token)


def note_read(path: str | os.PathLike[str]) -> None:
    """Record that a verdict depends on ``path`` (read, or looked for and maybe missing)."""
    found = _READS.get()
    if found is not None:
        found.append(os.path.abspath(path))


# How every checked file is opened: without blocking (a FIFO would wait for a writer) and not
# inherited by a process started while it is open (the getattr defaults: platforms without them).
READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def read_contained(
    path: str | os.PathLike[str], limit: int, root: str | os.PathLike[str] | None
) -> bytes:
    """``read_regular``, and the file must be inside ``root`` (a real path; None: anywhere)
    once every link is followed: the bounded reader every file a check reads goes through.

    The checks are made on the open descriptor (its type, its size, and where it really is:
    ``/proc/self/fd`` names it), so the file cannot be swapped for a link, a FIFO or a device
    between the check and the read: a link to ``/proc/self/fd/1`` (the CI log's pipe), a FIFO
    or ``/dev/zero`` is refused without a byte read, as is a link that leaves ``root``.
    """
    note_read(path)
    fd = os.open(path, READ_FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegular(f"is {file_kind(info.st_mode)}, not a regular file")
        if root is not None and not is_inside(_opened_path(fd, path), os.fspath(root)):
            raise NotRegular("links to a file outside the project")
        if info.st_size > limit:
            raise NotRegular(f"is {info.st_size:,} bytes, more than {limit:,}")
        data = read_at_most(fd, info.st_size, limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise NotRegular(f"is more than {limit:,} bytes")
    return data


def file_kind(mode: int) -> str:
    """What a file that is not a regular one is, in words."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _opened_path(fd: int, path: str | os.PathLike[str]) -> str:
    """Where the open file ``fd`` really is (links resolved)."""
    if _HAS_PROC_FD:
        try:
            found = os.readlink(f"{_PROC_FD}/{fd}")
        except OSError:  # never, for a descriptor this process holds open
            found = ""  # pragma: no mutate
        # Else real_path resolves the same file by its name: the two differ only if the file is
        # replaced between the open and here, which no test can time (equivalent mutants).
        if found.startswith(os.sep) and not found.endswith(" (deleted)"):  # pragma: no mutate
            return found
    return real_path(path)


def read_at_most(fd: int, size: int, limit: int) -> bytes:
    """The bytes of an open file up to its end or ``limit`` bytes, whichever comes first;
    ``size`` is what fstat said (a file may grow or shrink while it is read).

    Plain ``os.read`` calls sized by ``size``: a file object reading ``limit`` bytes allocates a
    buffer of that size (a megabyte or two, mapped and unmapped) for a file of a few hundred
    bytes, and that was most of the cost of reading a spec or a model's config.json.
    """
    chunks = []
    total = 0
    # One byte more than fstat said: a short read at the end sees the end. These two lines only
    # size the reads (a read of 0 bytes at the limit ends the loop too): their mutants read the
    # same bytes in more or fewer calls.
    want = size + 1  # pragma: no mutate
    while total < limit:  # pragma: no mutate
        chunk = os.read(fd, min(want, limit - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        want = 1 << 16
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def printable(text: str) -> str:
    """``text`` with every control character escaped (``\\n``, ``\\x1b``), so that a value can
    never start a new output line or reach the terminal; other characters are kept."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch == " " else repr(ch)[1:-1] for ch in text)


# HTML's three (what html.escape does without quotes; not importing html saves a millisecond of
# every command) and Markdown's link, code and table characters, in one pass.
_MARKDOWN_ACTIVE = str.maketrans(
    {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
    | {"\\": "\\\\", "`": "\\`", "[": "\\[", "]": "\\]", "|": "\\|"}
)


def markdown_text(text: str) -> str:
    """``text`` for a Markdown table cell in a notebook, rendering as the text itself: no HTML
    (``<img>``, ``<script>``), no links or images (``[x](...)``, bare ``https://`` URLs, which
    GitHub-flavoured Markdown links), no new cell (``|``) or line. Emphasis is left alone."""
    escaped = printable(text).translate(_MARKDOWN_ACTIVE)
    return escaped.replace("://", "\\://").replace("www.", "www\\.")


def markdown_code(text: str) -> str:
    """``text`` as a Markdown code span in a table cell: Markdown and HTML are not read inside
    one; a fence longer than any run of backticks in it keeps it closed, ``\\|`` keeps the
    cell."""
    shown = printable(text).replace("|", "\\|")
    fence = "`" * (max((len(run) for run in re.findall(r"`+", shown)), default=0) + 1)
    pad = " " if shown.startswith("`") or shown.endswith("`") else ""
    return f"{fence}{pad}{shown}{pad}{fence}"


def quote(value: object, limit: int = MAX_QUOTED) -> str:
    """``repr(value)`` for a message: truncated, never raising (a user object's ``__repr__``
    may), never printing what looks like a credential."""
    if isinstance(value, int) and value.bit_length() > 256:
        # repr() of an int over 4,300 digits raises (CVE-2020-10735's limit).
        return f"an integer of about {int(value.bit_length() * math.log10(2)):,} digits"
    if isinstance(value, str):
        from safe_estimators._secret_formats import redacted_if_secret

        hidden = redacted_if_secret(value)
        if hidden is not None:
            return hidden
    elif isinstance(value, Mapping | list | tuple) or hasattr(value, "to_string"):
        from safe_estimators._secret_formats import masked

        # Nested values too: {"password": ...}, ["--hub_token", "hf_..."], a parameter's default.
        value = masked(value)
    try:
        text = repr(value)
    except Exception as exc:  # a user object's __repr__
        return f"<{_type_name(value)} object whose repr() raised {type(exc).__name__}>"
    if not isinstance(text, str):
        return f"<{_type_name(value)} object>"
    if len(text) > limit:
        text = f"{text[: limit - 1]}… ({len(text):,} characters)"
    return printable(text)


def _type_name(value: object) -> str:
    try:
        return type(value).__name__
    except Exception:  # pragma: no cover - type() never fails in practice
        return "object"


@attrs.frozen
class ShapeProblem:
    """Where a value breaks a bound, and what to say (turned into a Problem by the caller)."""

    path: str
    message: str
    hint: str


def shape_problems(data: object, path: str = "") -> list[ShapeProblem]:
    """Check nesting depth, value count, cycles and non-finite numbers of plain data.

    Iterative and linear in the values visited; stops at the first bound exceeded (one problem
    per kind), so it is safe on any object graph, including one that contains itself.
    """
    found: list[ShapeProblem] = []
    nodes = 0
    on_path: set[int] = set()  # ids of the containers on the current path, for cycles
    # One frame per open container: [its children's iterator, its id, the key being read]. Every
    # spec is walked on every check, so a value's dotted path is built only for a problem.
    stack: list[list[Any]] = []

    def where() -> str:
        out = path
        for frame in stack:
            out = _join(out, frame[2])
        return out

    def visit(value: object) -> bool:
        nonlocal nodes
        nodes += 1
        if nodes > MAX_NODES:
            # Named by the option being read when the count ran out: where the bulk is.
            option = where()[len(path) :].lstrip(".").split(".", 1)[0]
            found.append(
                ShapeProblem(
                    _join(path, option) if option else path or "<spec>",
                    f"holds more than {MAX_NODES:,} values; CreateTrainingJob cannot carry that "
                    "many.",
                    "move data into a file in source_dir or S3 and pass its path.",
                )
            )
            return False
        kind = type(value)
        if kind is str or kind is bool or value is None:
            return True
        children: Iterator[tuple[object, object]]
        if isinstance(value, dict):  # exact types first: an ABC check costs ten times more
            children = iter(value.items())
        elif isinstance(value, list | tuple):
            children = enumerate(value)
        elif isinstance(value, int):
            if value.bit_length() > _MAX_INT_BITS:
                found.append(
                    ShapeProblem(
                        where() or "<spec>",
                        f"is {quote(value)}: longer than any number CreateTrainingJob accepts "
                        f"({MAX_INT_DIGITS:,} characters at most, as a hyperparameter).",
                        "write the number you mean.",
                    )
                )
            return True
        elif isinstance(value, float):
            if not math.isfinite(value):
                found.append(
                    ShapeProblem(
                        where() or "<spec>",
                        f"is {value}; the CreateTrainingJob request is JSON, which has no NaN or "
                        "Infinity.",
                        "write a finite number.",
                    )
                )
            return True
        elif isinstance(value, Mapping):
            children = iter(value.items())
        elif isinstance(value, set | frozenset):
            children = enumerate(value)
        else:
            return True
        if id(value) in on_path:
            found.append(
                ShapeProblem(
                    where() or "<spec>",
                    "contains itself (a cycle); it cannot be encoded for CreateTrainingJob.",
                    "pass plain data without self-references.",
                )
            )
            return False
        if len(stack) >= MAX_DEPTH:
            found.append(
                ShapeProblem(
                    where() or "<spec>",
                    f"is nested more than {MAX_DEPTH} levels deep.",
                    "flatten it, or put the structure in a file in source_dir.",
                )
            )
            return False
        on_path.add(id(value))
        stack.append([children, id(value), None])
        return True

    try:
        if not visit(data):
            return found
        while stack:
            frame = stack[-1]
            step = next(frame[0], None)
            if step is None:
                stack.pop()
                on_path.discard(frame[1])
                continue
            frame[2] = step[0]
            value = step[1]
            kind = type(value)
            # Most values are short scalars: counted here, without a call.
            if nodes < MAX_NODES and (
                kind is str
                or value is None
                or kind is bool
                or (kind is int and value.bit_length() <= _MAX_INT_BITS)  # type: ignore[attr-defined]
                or (kind is float and math.isfinite(value))  # type: ignore[arg-type]
            ):
                nodes += 1
                continue
            if not visit(value):
                return found
    except Exception as exc:  # a user mapping whose items() or keys raise
        found.append(
            ShapeProblem(
                path or "<spec>",
                f"could not be read: {type(exc).__name__} raised by one of the values passed.",
                "pass plain dicts, lists, strings and numbers.",
            )
        )
    return found


def _join(where: str, key: object) -> str:
    text = key if isinstance(key, str) else quote(key, 40)
    return f"{where}.{text}" if where else text


# Linux names every open file's real path under /proc/self/fd: three system calls, where
# os.path.realpath (pure Python) makes one lstat per component; a validation resolves a handful
# of paths, and a CI run thousands.
_PROC_FD = "/proc/self/fd"
_HAS_PROC_FD = os.path.isdir(_PROC_FD) and hasattr(os, "O_PATH")


def real_path(path: str | os.PathLike[str]) -> str:
    """``os.path.realpath(path)``: absolute, links resolved (a missing path as realpath does).

    A path holding a NUL byte names no file: it is returned absolute and unresolved (realpath
    raises ValueError on it); the callers refuse it.
    """
    if "\0" in os.fspath(path):
        return os.path.abspath(path)
    if _HAS_PROC_FD:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except (OSError, ValueError):
            pass  # missing, a dangling link, a NUL byte: realpath's own rules apply
        else:
            try:
                resolved = os.readlink(f"{_PROC_FD}/{fd}")
            except OSError:  # never, for a descriptor this process holds open
                resolved = ""  # pragma: no mutate
            finally:
                os.close(fd)
            if resolved.startswith(os.sep) and not resolved.endswith(" (deleted)"):
                return resolved
    return os.path.realpath(path)


def is_inside(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> bool:
    """``path`` is ``root`` or below it (both already real paths)."""
    path, root = os.fspath(path), os.fspath(root)
    return path == root or path.startswith(root if root.endswith(os.sep) else root + os.sep)


def too_wide_to_package(folder: str | os.PathLike[str], *, resolved: bool = False) -> str | None:
    """Why ``folder`` must not be a source_dir (the disk root, a home folder), or None;
    ``resolved``: ``folder`` is a real path already (``real_path``'s)."""
    real = os.fspath(folder) if resolved else real_path(folder)
    if real == os.sep:
        return "is the root of the file system"
    if real == _real_home(os.path.expanduser("~")) or os.path.dirname(real) == "/home":
        return "is a home folder"
    if real == "/root":
        return "is a home folder"
    return None


@functools.lru_cache(maxsize=8)
def _real_home(home: str) -> str:
    # Keyed by $HOME as given: resolving it walks every component, on every check otherwise.
    return real_path(home)


def project_folder(folder: str | os.PathLike[str]) -> Path:
    """The project a spec file or source_dir belongs to: the nearest folder above it holding
    ``.git`` (the repository anyone changing the spec can change anyway), else the folder."""
    return Path(real_project_folder(folder))


def real_project_folder(folder: str | os.PathLike[str]) -> str:
    """``project_folder`` as a string: a real path (links resolved)."""
    start = candidate = real_path(folder)
    while candidate != os.sep:
        if os.path.exists(os.path.join(candidate, ".git")):
            return candidate
        parent = os.path.dirname(candidate)
        if parent == candidate:
            break
        candidate = parent
    return start


@attrs.frozen
class Tree:
    """What a bounded walk of a folder found: files (real paths), and why it stopped or skipped."""

    files: tuple[str, ...]
    outside_links: tuple[tuple[str, str], ...]  # (link, where it points), leaving the root
    truncated: str | None  # why the walk stopped early, or None
    too_deep: bool = False  # it stopped at MAX_TREE_DEPTH
    # The ``.py`` files among ``files``, found once per walk (the script checks' fingerprint
    # reads them for every spec that shares the folder).
    python_files: tuple[str, ...] = ()
    # Links that point nowhere or into a loop of links: tarfile (dereference=True) fails on them.
    broken_links: tuple[str, ...] = ()
    # Links to a folder that holds them (``x -> .``): tarfile (dereference=True) descends into
    # them again and again until the system refuses the path (ELOOP).
    looping_links: tuple[str, ...] = ()


def _tree(
    files: list[str],
    outside: list[tuple[str, str]],
    truncated: str | None,
    broken: list[str],
    too_deep: bool = False,
    looping: tuple[str, ...] = (),
) -> Tree:
    python = tuple(path for path in files if path.endswith(".py"))
    return Tree(
        tuple(files), tuple(outside), truncated, too_deep, python, tuple(broken), looping
    )


def _name(entry: os.DirEntry[str]) -> str:
    return entry.name


# Walks remembered in this process (see walk_tree): a CI run validating 10,000 specs beside one
# train.py walked that folder's 10,000 entries once per spec (10^8 steps, minutes).
_WALKS: dict[str, tuple[Tree, tuple[tuple[str, int], ...]]] = {}
_MAX_WALKS = 16
# A folder changed this recently may change again within its file system's timestamp
# granularity without its modification time moving: such a walk is not remembered.
_SETTLED_SECONDS = 2.0


def walk_tree(root: str | os.PathLike[str], *, resolved: bool = False) -> Tree:
    """Every file under ``root``, iteratively, bounded in depth and entries (``resolved``:
    ``root`` is a real path already).

    Links are followed only while they stay inside ``root`` (each real folder once); a link
    that leaves it is reported, not followed: SageMaker's SDK packages source_dir with
    ``tarfile.open(..., dereference=True)``, so it would upload what the link points to.

    A walk is remembered with the modification time of every folder it listed; adding,
    removing, renaming or relinking an entry changes its folder's time, so a remembered walk
    is reused only while every one of them is unchanged (one stat per folder, not per entry).
    """
    real_root = os.fspath(root) if resolved else real_path(root)
    remembered = _WALKS.get(real_root)
    if remembered is not None and _unchanged(remembered[1]):
        return remembered[0]
    started = time.time()
    tree, folders = _walk(real_root)
    stamps = _stamps(folders)
    if stamps is not None and all(started - ns / 1e9 > _SETTLED_SECONDS for _, ns in stamps):
        if len(_WALKS) >= _MAX_WALKS:
            _WALKS.pop(next(iter(_WALKS)))
        _WALKS[real_root] = (tree, stamps)
    return tree


def _stamps(folders: list[str]) -> tuple[tuple[str, int], ...] | None:
    try:
        return tuple((folder, os.stat(folder).st_mtime_ns) for folder in folders)
    except (OSError, ValueError):
        return None


def _unchanged(stamps: tuple[tuple[str, int], ...]) -> bool:
    return _stamps([folder for folder, _ in stamps]) == stamps


def _walk(real_root: str) -> tuple[Tree, list[str]]:
    # Strings and the directory entries' own types, not pathlib and a stat per entry: every
    # validation walks source_dir, and CI validates folders of specs sharing one.
    files: list[str] = []
    listed_folders: list[str] = []
    outside: list[tuple[str, str]] = []
    broken: list[str] = []
    looping: list[str] = []
    seen_dirs = {real_root}
    # (the folder as reached, its real path, its depth)
    stack: list[tuple[str, str, int]] = [(real_root, real_root, 0)]
    entries = 0
    while stack:
        folder, real_folder, depth = stack.pop()
        listed_folders.append(folder)
        try:
            with os.scandir(folder) as it:
                listed = sorted(it, key=_name)
        except (OSError, ValueError):  # ValueError: a NUL byte in the name
            continue
        for entry in listed:
            entries += 1
            if entries > MAX_TREE_ENTRIES:
                truncated = f"more than {MAX_TREE_ENTRIES:,} entries"
                return _tree(files, outside, truncated, broken, False, tuple(looping)), (
                    listed_folders
                )
            path = entry.path
            try:
                if entry.is_symlink():
                    target = real_path(path)
                    if not is_inside(target, real_root):
                        outside.append((path, target))
                        continue
                    try:
                        mode = os.stat(path).st_mode
                    except OSError:  # dangling, or a loop of links
                        broken.append(path)
                        continue
                    is_dir, is_file = stat.S_ISDIR(mode), stat.S_ISREG(mode)
                    if is_dir and is_inside(real_folder, target):
                        looping.append(path)  # to its own folder or one above it
                        continue
                else:
                    target = path
                    is_dir = entry.is_dir(follow_symlinks=False)
                    is_file = not is_dir and entry.is_file(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if target in seen_dirs:
                    continue
                if depth + 1 >= MAX_TREE_DEPTH:
                    deep = f"folders nested over {MAX_TREE_DEPTH} deep"
                    return _tree(files, outside, deep, broken, True, tuple(looping)), (
                        listed_folders
                    )
                seen_dirs.add(target)
                real = target if target != path else os.path.join(real_folder, entry.name)
                stack.append((path, real, depth + 1))
            elif is_file:
                files.append(path)
    return _tree(files, outside, None, broken, False, tuple(looping)), listed_folders
