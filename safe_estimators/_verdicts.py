"""The verdict cache: what ``validate`` found for a spec, kept until anything it depends on changes.

A repository's specs are validated on every change, most of them unchanged. An entry is found by
a key of the spec's bytes, its path (as given and resolved), the working folder, the project root
given, the environment variables in ``ENVIRONMENT`` and the installed code (``_installed``:
safe_estimators and its catalog, the SageMaker SDK, botocore). It records the files the verdict
read or looked for (``_dependencies``: the project's ``.git``, the code folder the script checks
and the upload rule walk, the entry point, the data files and dependencies the spec names), each
with a fingerprint, and is used only while every fingerprint is the same: Python and shell files,
the files the spec names and every file the checks read or looked for (``_bounds.recording_reads``:
a recipe file, a DeepSpeed JSON a script names, a predefined recipe's candidates) by their bytes,
the other files of a code folder by name, kind and size (no check reads their contents), links by
their target, and the recipes collection a predefined recipe name is read from (``--recipes``,
``$SAFE_ESTIMATORS_RECIPES`` or git's ``insteadOf``) by its path.

Threat model: entries another user could have written are never read (the folder and the file
must be this user's and writable by no one else, ``_cache.read_in``; a run checks each shard
folder once, when it opens it, and reads its entries through that descriptor); the user's own
entries are trusted as the user's own files are. An entry that is corrupt, of another format,
or whose recorded key is not the one looked up (an entry copied from another spec) is ignored
and written again. Writes are atomic; an entry is at most ``MAX_ENTRY_BYTES`` and each of the
256 shards keeps at most ``MAX_ENTRIES // 256`` entries (the oldest go first), so the cache
stays under about 20,000 entries. A hit returns exactly the problems a miss returns, so it
prints the same.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

from safe_estimators._bounds import MAX_SPEC_BYTES, read_at_most, recording_reads
from safe_estimators._cache import (
    cache_folder,
    open_folder,
    read_in,
    write_atomically,
)
from safe_estimators._report import Entry, located

FORMAT = 2  # 2: each problem records its rule id and the parent key it is placed at
MAX_ENTRY_BYTES = 1_000_000
MAX_ENTRIES = 20_480
_SHARD_ENTRIES = MAX_ENTRIES // 256

# The environment variables a verdict may depend on (the region and the SDK config overrides are
# read by plan; a validate that reads them later is covered).
ENVIRONMENT = (
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "SAGEMAKER_USER_CONFIG_OVERRIDE",
    "SAGEMAKER_ADMIN_CONFIG_OVERRIDE",
    # The recipe checks: the collection's copy, the adapter and launcher repositories' URLs.
    "SAFE_ESTIMATORS_RECIPES",
    "TRAINING_ADAPTER_GIT",
    "TRAINING_LAUNCHER_GIT",
)
# Files of a code folder whose bytes a check may read (the script checks parse Python and shell
# entry points); the others count by name, kind and size.
_READ_SUFFIXES = (".py", ".pyi", ".sh")
_MAX_HASHED = 1_000_000  # a larger file is fingerprinted by size and modification time
_MAX_TREE = 20_000  # entries of a code folder: past this the verdict is not cached


def validate_cached(path: str, project_root: str | os.PathLike[str] | None) -> list[Entry]:
    """``validate_file(path, project_root=...)``'s problems, each where the file writes it
    (``_report.located``), from the cache when nothing they depend on changed.

    Inside ``run()`` the lookups share one run's state; outside it, each call is a run of its
    own."""
    current = getattr(_LOCAL, "run", None)
    if current is not None:
        return _validate_cached(current, path, project_root)
    with run() as alone:
        return _validate_cached(alone, path, project_root)


def _validate_cached(
    current: _Run, path: str, project_root: str | os.PathLike[str] | None
) -> list[Entry]:
    key = _key(current, path, project_root) if current.folder is not None else None
    if key is not None:
        shard, name = key[:2], f"{key}.json"
        found = _read(current, shard, name, key, path)
        if found is not None:
            return found
    from safe_estimators._cache import take_doubts
    from safe_estimators._commands import validate as _validate
    from safe_estimators._problems import tagged
    from safe_estimators._rules.cache import cache_trusted, doubt_warning

    if key is None:
        return located(path, _validate.validate_file(path, project_root=project_root))
    with recording_reads() as reads:  # every file the checks read, keyed by its bytes
        arguments, problems = _validate.validate_spec(path, project_root=project_root)
    # What the lookup doubted, for a spec whose checks did not get to say it (one that does
    # not parse runs no rules): the warning belongs to this spec, not the next one.
    problems += tagged(cache_trusted, [doubt_warning(why) for why in take_doubts()])
    entries = located(path, problems)
    dependencies = _dependencies(current, path, arguments, project_root, reads)
    # A problem about the cache itself is this process's, not the spec's: never kept.
    if dependencies is not None and not any(p.path == "<cache>" for p in problems):
        _write(current, shard, name, key, dependencies, entries)
    return entries


class _Run:
    """What every lookup of one command shares: the folder, the part of the key that is not the
    spec's, the fingerprints of the files the verdicts depend on (a folder many specs share is
    fingerprinted once), and the shard folders' descriptors (see ``_shard``)."""

    __slots__ = ("cwd", "fingerprints", "folder", "shards", "shared")

    def __init__(self) -> None:
        found = cache_folder()
        self.folder = None if found is None else str(found / "verdicts")
        self.cwd = os.getcwd()
        shared = [self.cwd, *(os.environ.get(name) for name in ENVIRONMENT), _installed()]
        self.shared = hashlib.sha256(repr(shared).encode("utf-8", "surrogatepass") + b"\n")
        self.fingerprints: dict[str, str | None] = {}
        self.shards: dict[str, int] = {}


# Each thread's run: commands run from several threads (notebooks, tests) never share
# descriptors, which one command's end would close under another's reads.
_LOCAL = threading.local()


@contextlib.contextmanager
def run() -> Iterator[_Run]:
    """One command's lookups: files may have changed since the last command, so fingerprints
    and the folder's checks start afresh, and the shard folders it opened are closed when it
    ends."""
    current, previous = _Run(), getattr(_LOCAL, "run", None)
    _LOCAL.run = current
    try:
        yield current
    finally:
        _LOCAL.run = previous
        for fd in current.shards.values():
            os.close(fd)


def _open_files_limit() -> int:
    try:
        return os.sysconf("SC_OPEN_MAX")
    except (AttributeError, ValueError, OSError):
        return 0


# How many shard folders a run keeps open: all 256 where a process may open 1,024 files, fewer
# where it may open fewer (macOS's default is 256), so that the specs and scripts the checks
# open never run out of descriptors; a shard past the limit is opened for each entry.
_OPEN_FILES = _open_files_limit()
_SHARDS_KEPT = 256 if _OPEN_FILES < 0 else max(0, min(256, (_OPEN_FILES - 128) // 2))


def _shard(current: _Run, name: str) -> tuple[int | None, bool]:
    """A descriptor of the trusted shard folder ``name`` (None: missing or not trusted) and
    whether the caller is to close it.

    Its owner and mode are checked when it is opened, once per run, not once per entry: the
    descriptor stays the folder that was checked even if its name is moved, and only its owner
    (this user) or root can change its owner or mode, whom a check per entry could not stop
    either. Each entry is still checked for its own owner, mode, type and size when read."""
    shards = current.shards
    if name in shards:
        return shards[name], False
    fd = open_folder(os.path.join(str(current.folder), name))
    if fd is None or len(shards) >= _SHARDS_KEPT:
        return fd, fd is not None  # missing (looked for again after a write), or past the limit
    shards[name] = fd
    return fd, False


# --- the key --------------------------------------------------------------------------------


def _key(current: _Run, path: str, project_root: str | os.PathLike[str] | None) -> str | None:
    """The key of the spec at ``path``, or None (unreadable: not worth caching)."""
    data = _spec_bytes(path)
    if data is None:
        return None
    digest = current.shared.copy()  # the working folder, the environment, the installed code
    root = None if project_root is None else os.fspath(project_root)
    where = (path, os.path.join(current.cwd, path), root)  # as given and absolute
    digest.update(repr(where).encode("utf-8", "surrogatepass") + b"\n")
    digest.update(data)
    return digest.hexdigest()


def _spec_bytes(path: str) -> bytes | None:
    """The spec's bytes, if it is a regular file of at most a spec's size (else not cached)."""
    try:
        fd = os.open(path, _SPEC_FLAGS)
    except (OSError, ValueError):
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_SPEC_BYTES:
            return None
        data = read_at_most(fd, info.st_size, MAX_SPEC_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data if len(data) <= MAX_SPEC_BYTES else None


_SPEC_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


_INSTALLED: list[str] = []


def _installed() -> str:
    """The installed code a verdict comes from: our own package and catalog (every file, by
    size and modification time: an editable install changes without a new version) and the
    SageMaker SDK's and botocore's packages (by their version files)."""
    if _INSTALLED:
        return _INSTALLED[0]
    import importlib.util

    digest = hashlib.sha256(f"{FORMAT}:{sys.version}".encode())
    here = Path(__file__).parent
    for root in (here, here.parent / "instance_catalog"):
        for folder, folders, names in os.walk(root):
            folders[:] = sorted(f for f in folders if f != "__pycache__")
            for name in sorted(names):
                digest.update(_metadata(os.path.join(folder, name)).encode())
    for package, version_file in (("sagemaker", "__init__.py"), ("botocore", "__init__.py")):
        spec = importlib.util.find_spec(package)
        locations = spec.submodule_search_locations if spec is not None else None
        found = next(iter(locations), None) if locations else None
        digest.update(f"{package}:{found}".encode())
        if found is not None:
            digest.update(_metadata(os.path.join(found, version_file)).encode())
            digest.update(_metadata(os.path.join(found, "VERSION")).encode())
    _INSTALLED.append(digest.hexdigest())
    return _INSTALLED[0]


def _metadata(path: str) -> str:
    try:
        info = os.stat(path)
    except OSError:
        return f"{path}:missing"
    return f"{path}:{info.st_size}:{info.st_mtime_ns}"


# --- what a verdict depends on --------------------------------------------------------------


def _dependencies(
    current: _Run,
    path: str,
    arguments: dict[str, object] | None,
    project_root: str | os.PathLike[str] | None,
    reads: Sequence[str] = (),
) -> list[list[str]] | None:
    """``[kind, name, fingerprint]`` of everything the verdict of the spec read or looked for
    (``path``: a file or folder; ``project``: the project found above the spec's folder;
    ``recipes``: the recipes collection a predefined recipe is read from, which ``--recipes``,
    ``$SAFE_ESTIMATORS_RECIPES`` or git's configuration name), or None when one of them cannot
    be fingerprinted (too large a folder). ``reads``: the files the checks read or looked for
    (``_bounds.recording_reads``: a recipe file, a configuration file a script reads), each
    by its bytes."""
    out = []
    if project_root is None:
        folder = os.path.dirname(path) or "."
        out.append(["project", folder, _project(current, folder)])
    named: list[str] = []
    if arguments is not None:
        given = arguments.get("source_dir")
        entry_point = arguments.get("entry_point")
        source_dir = given if isinstance(given, str) and "://" not in given else None
        if source_dir is not None:
            named.append(source_dir)
        if isinstance(entry_point, str) and "://" not in entry_point:
            script = os.path.join(source_dir or "", entry_point)
            named.append(script)
            if given is None:
                named.append(os.path.dirname(script) or ".")  # what it imports from beside it
        model = arguments.get("model")
        if isinstance(model, dict) and isinstance(model.get("config"), str):
            named.append(model["config"])
        from safe_estimators._problems import value_at
        from safe_estimators._spec_files.read import _PARAMETERS_PATH

        parameters = value_at(arguments, _PARAMETERS_PATH)
        if isinstance(parameters, str):
            named.append(parameters)
        dependencies = arguments.get("dependencies")
        if isinstance(dependencies, list):
            named += [d for d in dependencies if isinstance(d, str) and "://" not in d]
        recipe = arguments.get("training_recipe")
        if isinstance(recipe, str) and not recipe.endswith(".yaml"):
            out.append(["recipes", "", _recipes_now()])
        from safe_estimators._spec_files.read import remote_function_files

        named += [path for _, path in remote_function_files(arguments)]
        if arguments.get("target") == "fine_tuning":
            from safe_estimators._spec_files.read import fine_tuning_recipe_file

            user_recipe = fine_tuning_recipe_file(arguments)
            if user_recipe is not None:  # inside the project or not: where its links lead
                named.append(user_recipe)
            # A fine-tuning job is checked against the collection's fine-tuning recipes: which
            # collection, and that folder's tree.
            collection = _recipes_now()
            out.append(["recipes", "", collection])
            if collection:
                from safe_estimators._recipes.fine_tuning import FOLDER

                named.append(os.path.join(collection, FOLDER))
    named += [name for name in dict.fromkeys(reads) if name not in named]
    for name in named:
        fingerprint = _fingerprint(current, name)
        if fingerprint is None:
            return None
        out.append(["path", name, fingerprint])
    return out


def _project(current: _Run, folder: str) -> str:
    """The project above ``folder`` (once per folder and run, like a fingerprint)."""
    key = "project:" + folder
    known = current.fingerprints
    if key not in known:
        from safe_estimators._bounds import project_folder

        known[key] = str(project_folder(folder))
    return known[key] or ""


def _now(current: _Run, kind: str, name: str) -> str | None:
    if kind == "recipes":
        return _recipes_now()
    return _project(current, name) if kind == "project" else _fingerprint(current, name)


def _recipes_now() -> str:
    """The recipes collection predefined recipes are read from now (its real path)."""
    from safe_estimators._bounds import real_path
    from safe_estimators._recipes.modes import recipes_folder

    folder = recipes_folder()
    return "" if folder is None else real_path(folder)


def _fingerprint(current: _Run, path: str) -> str | None:
    """What the checks can see of ``path``: a file's bytes, a folder's tree, a link's target, or
    that it is missing; None for a folder too large to fingerprint. Once per path and run."""
    known = current.fingerprints
    if path not in known:
        known[path] = _fingerprint_now(current, path)
    return known[path]


def _fingerprint_now(current: _Run, path: str) -> str | None:
    digest = hashlib.sha256()
    try:
        info = os.lstat(path)
    except (OSError, ValueError) as exc:
        return f"missing:{type(exc).__name__}"
    if stat.S_ISLNK(info.st_mode):
        real = os.path.realpath(path)
        target = _fingerprint(current, real) if real != path else None
        return None if target is None else f"link:{real}:{target}"
    if stat.S_ISREG(info.st_mode):
        return f"file:{_file_print(path, info, read=True)}"
    if not stat.S_ISDIR(info.st_mode):
        return f"other:{stat.S_IFMT(info.st_mode)}"
    stack, entries = [path], 0
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as listing:
                found = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            digest.update(f"{folder}:unlisted:{type(exc).__name__}\n".encode())
            continue
        for entry in found:
            entries += 1
            if entries > _MAX_TREE:
                return None
            name = entry.path
            try:
                if entry.is_symlink():
                    line = f"{name}:link:{os.readlink(name)}"
                elif entry.is_dir(follow_symlinks=False):
                    line = f"{name}:dir"
                    stack.append(name)
                else:
                    info = entry.stat(follow_symlinks=False)
                    read = name.endswith(_READ_SUFFIXES)
                    line = f"{name}:{stat.S_IFMT(info.st_mode)}:{_file_print(name, info, read)}"
            except OSError as exc:
                line = f"{name}:error:{type(exc).__name__}"
            digest.update(line.encode("utf-8", "surrogatepass") + b"\n")
    return f"tree:{digest.hexdigest()}"


def _file_print(path: str, info: os.stat_result, read: bool) -> str:
    if not read or not stat.S_ISREG(info.st_mode):
        return f"size:{info.st_size}"
    if info.st_size > _MAX_HASHED:
        return f"size:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}"
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        try:
            return hashlib.sha256(read_at_most(fd, info.st_size, _MAX_HASHED + 1)).hexdigest()
        finally:
            os.close(fd)
    except OSError as exc:
        return f"unreadable:{type(exc).__name__}"


# --- entries --------------------------------------------------------------------------------


def _read(current: _Run, shard: str, name: str, key: str, source: str) -> list[Entry] | None:
    """The problems recorded in the entry ``name`` of ``shard`` for ``key``, if it is ours,
    whole, and nothing it depends on changed; None otherwise (a miss)."""
    folder, close = _shard(current, shard)
    if folder is None:
        return None
    try:
        data = read_in(folder, name, f"{current.folder}{os.sep}{shard}")
    finally:
        if close:
            os.close(folder)
    if not data:
        return None
    try:
        document = json.loads(data.decode("utf-8", "surrogatepass"))  # as it was written
        if document.get("format") != FORMAT or document.get("key") != key:
            return None
        for kind, what, recorded in document["dependencies"]:
            if _now(current, kind, what) != recorded:
                return None
        problems = [_entry(item, source) for item in document["problems"]]
    except Exception:  # corrupt, or not written by this version: a miss
        return None
    if any(p is None for p in problems):
        return None
    return [p for p in problems if p is not None]


def _entry(item: object, source: str) -> Entry | None:
    """A recorded problem, or None when it is not one: path, message, hint, severity, the file,
    line and column it is written at, its rule id and the parent key it is placed at."""
    if not (isinstance(item, list) and len(item) == 9):
        return None
    path, message, hint, severity, file, line, column, rule, written = item
    if not (isinstance(rule, str | None) and isinstance(written, str | None)):
        return None
    # Spelt out, not all() over generators: this runs for every problem of every hit.
    texts = isinstance(path, str) and isinstance(message, str) and isinstance(hint, str)
    if not (texts and isinstance(file, str) and severity in ("error", "warning")):
        return None
    unplaced = line is None and column is None
    if not unplaced and not (type(line) is int and type(column) is int and line > 0 < column):
        return None
    return Entry(
        source, path, message, hint, severity,
        rule=rule, file=file, line=line, column=column, written=written,
    )  # fmt: skip


def _write(
    current: _Run,
    shard: str,
    name: str,
    key: str,
    dependencies: list[list[str]],
    found: list[Entry],
) -> None:
    if any(e.source != e.file and e.line is None for e in found):
        return  # only problems of the spec's own file, or placed in a file it names
    document = {
        "format": FORMAT,
        "key": key,
        "dependencies": dependencies,
        "problems": [
            [e.path, e.message, e.hint, e.severity, e.file, e.line, e.column, e.rule, e.written]
            for e in found
        ],
    }
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    data = text.encode("utf-8", "surrogatepass")
    if len(data) > MAX_ENTRY_BYTES:
        return
    folder = Path(str(current.folder), shard)
    _make_room(folder)
    write_atomically(folder / name, data)


_ROOM: dict[Path, int] = {}  # writes to each shard before this process counts it again


def _make_room(shard: Path) -> None:
    """Keep a shard under its share of ``MAX_ENTRIES``: when it is full the oldest entries go
    first, down to three quarters of it. A shard is listed once per process and again after a
    quarter of its share of writes (other processes may write to it too) or when this process
    may have filled it. It fills to its share: evicting at three quarters dropped entries of a
    10,000-spec folder, whose fullest shards hold 60-odd of the 80."""
    room = _ROOM.get(shard)
    if room:
        _ROOM[shard] = room - 1
        return
    try:
        with os.scandir(shard) as listing:
            entries = [e for e in listing if e.name.endswith(".json")]
    except OSError:
        entries = []
    if len(entries) >= _SHARD_ENTRIES:

        def age(entry: os.DirEntry[str]) -> float:
            try:
                return entry.stat(follow_symlinks=False).st_mtime
            except OSError:
                return 0.0

        keep = _SHARD_ENTRIES - _SHARD_ENTRIES // 4 - 1  # and the one being written
        for old in sorted(entries, key=age)[: len(entries) - keep]:
            with contextlib.suppress(OSError):
                os.unlink(old.path)
        entries = entries[:keep]
    _ROOM[shard] = min(_SHARD_ENTRIES - len(entries) - 1, _SHARD_ENTRIES // 4)
