"""The verdict cache: what ``validate`` found for a spec, kept until anything it depends on changes.

A repository's specs are validated on every change, most of them unchanged. An entry is found by
a key of the spec's bytes, its path (as given and resolved), the working folder, the project root
given, the environment variables in ``ENVIRONMENT`` and the installed code (``_installed``:
safe_estimators and its catalog, the SageMaker SDK, botocore). It records the files the verdict
read or looked for (``_dependencies``: the project's ``.git``, the code folder the script checks
and the upload rule walk, the entry point, the data files and dependencies the spec names), each
with a fingerprint, and is used only while every fingerprint is the same: Python and shell files
and the files the spec names by their bytes, the other files of a code folder by name, kind and
size (no check reads their contents), links by their target.

Threat model: entries another user could have written are never read (the folder and the file
must be this user's and writable by no one else, ``_cache.read_cached``); the user's own entries
are trusted as the user's own files are. An entry that is corrupt, of another format, or whose
recorded key is not the one looked up (an entry copied from another spec) is ignored and written
again. Writes are atomic; an entry is at most ``MAX_ENTRY_BYTES`` and each of the 256 shards keeps
at most ``MAX_ENTRIES // 256`` entries (the oldest go first), so the cache stays under about
20,000 entries. A hit returns exactly the problems a miss returns, so it prints the same.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path

from safe_estimators._problems import Problem

FORMAT = 1
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
)
# Files of a code folder whose bytes a check may read (the script checks parse Python and shell
# entry points); the others count by name, kind and size.
_READ_SUFFIXES = (".py", ".pyi", ".sh")
_MAX_HASHED = 1_000_000  # a larger file is fingerprinted by size and modification time
_MAX_TREE = 20_000  # entries of a code folder: past this the verdict is not cached

Validate = Callable[[str, "str | os.PathLike[str] | None"], list[Problem]]


def validate_cached(
    path: str, project_root: str | os.PathLike[str] | None, validate: Validate
) -> list[Problem]:
    """``validate(path, project_root)``, from the cache when nothing it depends on changed."""
    from safe_estimators._cache import cache_folder

    folder = cache_folder()
    key = _key(path, project_root) if folder is not None else None
    if folder is None or key is None:
        return validate(path, project_root)
    entry = folder / "verdicts" / key[:2] / f"{key}.json"
    found = _read(entry, key)
    if found is not None:
        return found
    problems = validate(path, project_root)
    dependencies = _dependencies(path, project_root)
    if dependencies is not None:
        _write(entry, key, dependencies, problems)
    return problems


# --- the key --------------------------------------------------------------------------------


def _key(path: str, project_root: str | os.PathLike[str] | None) -> str | None:
    """The key of the spec at ``path``, or None (unreadable: not worth caching)."""
    from safe_estimators._files import _read_bounded

    try:
        data = _read_bounded(Path(path))
    except Exception:
        return None
    digest = hashlib.sha256(data)
    context = [
        FORMAT,
        path,
        os.path.abspath(path),
        os.getcwd(),
        None if project_root is None else os.fspath(project_root),
        [os.environ.get(name) for name in ENVIRONMENT],
        _installed(),
    ]
    digest.update(json.dumps(context).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


_INSTALLED: list[str] = []


def _installed() -> str:
    """The installed code a verdict comes from: our own package and catalog (every file, by
    size and modification time: an editable install changes without a new version) and the
    SageMaker SDK's and botocore's packages (by their version files)."""
    if _INSTALLED:
        return _INSTALLED[0]
    import importlib.util

    digest = hashlib.sha256(sys.version.encode())
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
    path: str, project_root: str | os.PathLike[str] | None
) -> list[list[str]] | None:
    """``[kind, name, fingerprint]`` of everything the verdict of the spec read or looked for
    (``path``: a file or folder; ``project``: the project found above the spec's folder), or
    None when one of them cannot be fingerprinted (too large a folder)."""
    from safe_estimators._files import read_spec

    arguments, _ = read_spec(path, project_root=project_root)
    out = []
    if project_root is None:
        folder = os.path.dirname(path) or "."
        out.append(["project", folder, _project(folder)])
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
        from safe_estimators._files import _PARAMETERS_PATH
        from safe_estimators._problems import value_at

        parameters = value_at(arguments, _PARAMETERS_PATH)
        if isinstance(parameters, str):
            named.append(parameters)
        dependencies = arguments.get("dependencies")
        if isinstance(dependencies, list):
            named += [d for d in dependencies if isinstance(d, str) and "://" not in d]
    for name in named:
        fingerprint = _fingerprint(name)
        if fingerprint is None:
            return None
        out.append(["path", name, fingerprint])
    return out


def _project(folder: str) -> str:
    from safe_estimators._bounds import project_folder

    return str(project_folder(folder))


def _now(kind: str, name: str) -> str | None:
    return _project(name) if kind == "project" else _fingerprint(name)


_FINGERPRINTS: dict[str, str | None] = {}  # per process: a run sees each folder once


def _fingerprint(path: str) -> str | None:
    """What the checks can see of ``path``: a file's bytes, a folder's tree, a link's target, or
    that it is missing; None for a folder too large to fingerprint."""
    if path not in _FINGERPRINTS:
        _FINGERPRINTS[path] = _fingerprint_now(path)
    return _FINGERPRINTS[path]


def _fingerprint_now(path: str) -> str | None:
    digest = hashlib.sha256()
    try:
        info = os.lstat(path)
    except (OSError, ValueError) as exc:
        return f"missing:{type(exc).__name__}"
    if stat.S_ISLNK(info.st_mode):
        real = os.path.realpath(path)
        target = _fingerprint(real) if real != path else None
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
        with os.fdopen(fd, "rb") as file:
            return hashlib.sha256(file.read(_MAX_HASHED + 1)).hexdigest()
    except OSError as exc:
        return f"unreadable:{type(exc).__name__}"


# --- entries --------------------------------------------------------------------------------


def _read(entry: Path, key: str) -> list[Problem] | None:
    """The problems recorded at ``entry`` for ``key``, if it is ours, whole, and nothing it
    depends on changed; None otherwise (a miss)."""
    from safe_estimators._cache import read_cached

    data = read_cached(entry)
    if not data:
        return None
    try:
        document = json.loads(data)
        if document.get("format") != FORMAT or document.get("key") != key:
            return None
        for kind, name, recorded in document["dependencies"]:
            if _now(kind, name) != recorded:
                return None
        problems = [_problem(item) for item in document["problems"]]
    except Exception:  # corrupt, or not written by this version: a miss
        return None
    if any(p is None for p in problems):
        return None
    return [p for p in problems if p is not None]


def _problem(item: object) -> Problem | None:
    if not (isinstance(item, list) and len(item) == 4 and all(isinstance(v, str) for v in item)):
        return None
    path, message, hint, severity = item
    if severity not in ("error", "warning"):
        return None
    return Problem(path, message, hint, "error" if severity == "error" else "warning")


def _write(entry: Path, key: str, dependencies: list[list[str]], problems: list[Problem]) -> None:
    from safe_estimators._cache import write_atomically

    document = {
        "format": FORMAT,
        "key": key,
        "dependencies": dependencies,
        "problems": [[p.path, p.message, p.hint, p.severity] for p in problems],
    }
    data = json.dumps(document, ensure_ascii=False).encode("utf-8", "surrogatepass")
    if len(data) > MAX_ENTRY_BYTES:
        return
    _make_room(entry.parent)
    write_atomically(entry, data)


def _make_room(shard: Path) -> None:
    """Keep a shard under its share of ``MAX_ENTRIES``: the oldest entries go first."""
    try:
        with os.scandir(shard) as listing:
            entries = [e for e in listing if e.name.endswith(".json")]
    except OSError:
        return
    if len(entries) < _SHARD_ENTRIES:
        return

    def age(entry: os.DirEntry[str]) -> float:
        try:
            return entry.stat(follow_symlinks=False).st_mtime
        except OSError:
            return 0.0

    for old in sorted(entries, key=age)[: len(entries) - _SHARD_ENTRIES + 1]:
        with contextlib.suppress(OSError):
            os.unlink(old.path)
