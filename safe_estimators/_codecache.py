"""The code attrs and cattrs generate for our classes, compiled once and reused between runs.

attrs writes each class's methods (``__init__``, ``__eq__``, ``__hash__``...) as Python source
and compiles it when the class is defined, and cattrs does the same for each structure function:
about 60 compilations, 15 ms of a one-file ``validate``. The command line (``_cli``, which
imports this module before any of ours) keeps the compiled code objects in one file of the user
cache and reads them back on the next run: the same source compiled with the same flags by the
same Python gives the same code object, so nothing a class does changes.

The file is trusted as the cache's other files are (``_cache.read_cached``: owned by this user,
writable by no one else); its key is the Python that wrote it (marshal's format is per version).
A missing, foreign, corrupt or stale file means compiling again. Nothing here runs unless the
attrs and cattrs functions it wraps have the shape it expects.
"""

from __future__ import annotations

import marshal
import sys
import threading
import zlib
from pathlib import Path
from types import CodeType
from typing import Any

_MAX_ENTRIES = 2_000  # our classes and structure functions, with room for the tests' own
_KEY = f"{sys.implementation.cache_tag} {sys.version}"

_lock = threading.Lock()
# (source with its type hash written as _HASH, filename, flags) -> (code, the hash it holds)
_codes: dict[tuple[str, str, int], tuple[CodeType, int]] = {}
_added = False
_path: Path | None = None
_HASH = "__attrs_type_hash__"


def _file() -> Path | None:
    from safe_estimators._cache import cache_folder

    folder = cache_folder()
    name = f"generated-code-{zlib.crc32(_KEY.encode()):08x}.marshal"
    return None if folder is None else folder / name


def _entry(name: object, value: object) -> bool:
    return (
        isinstance(name, tuple)
        and len(name) == 3
        and isinstance(name[0], str)
        and isinstance(name[1], str)
        and isinstance(name[2], int)
        and isinstance(value, tuple)
        and len(value) == 2
        and isinstance(value[0], CodeType)
        and isinstance(value[1], int)
    )


def _load() -> None:
    global _path, _added
    # Importing the cache module defines a class or two already: compiled through the cache.
    from safe_estimators._cache import read_cached

    _path = _file()
    data = None if _path is None else read_cached(_path)
    if data is None:
        return
    try:
        key, entries = marshal.loads(data)
    except (ValueError, EOFError, TypeError):
        return
    if key != _KEY or not isinstance(entries, dict):
        return
    kept = {name: value for name, value in entries.items() if _entry(name, value)}
    with _lock:
        _added = any(name not in kept for name in _codes)
        _codes.update(kept)


def _type_hash(filename: str) -> int:
    """The number attrs writes into a class's ``__hash__``: the hash of a name, which differs
    from process to process (``PYTHONHASHSEED``), so the cache keeps it out of the key."""
    base, dash, number = filename.rpartition("-")
    if dash and number[:-1].isdigit() and number.endswith(">"):  # linecache's second name
        filename = base + ">"
    return hash(filename.replace("<attrs generated methods ", "<attrs generated hash ", 1))


def _with_constant(code: CodeType, old: int, new: int) -> CodeType:
    """``code`` with the integer constant ``old`` replaced by ``new``, in nested code too."""
    consts = tuple(
        _with_constant(c, old, new)
        if isinstance(c, CodeType)
        else (new if type(c) is int and c == old else c)
        for c in code.co_consts
    )
    return code.replace(co_consts=consts)


def _compiled(source: str, filename: str, flags: int, type_hash: int = 0) -> CodeType:
    """``compile(source, filename, "exec")`` with ``flags`` as the only future features."""
    global _added
    written = f" {type_hash}," if type_hash else ""
    key = (source.replace(written, f" {_HASH},") if written in source else source, filename, flags)
    if not written or written not in source:
        type_hash = 0
    found = _codes.get(key)
    if found is not None:
        code, held = found
        return code if held == type_hash else _with_constant(code, held, type_hash)
    code = compile(source, filename, "exec", flags=flags, dont_inherit=True)
    with _lock:
        if len(_codes) < _MAX_ENTRIES:
            _codes[key] = (code, type_hash)
            _added = True
    return code


def _future_flags(module: Any) -> int:
    """The future features ``module`` was compiled with, which its ``compile()`` calls pass on."""
    import __future__

    return sum(
        getattr(__future__, name).compiler_flag
        for name in __future__.all_feature_names
        if getattr(module, name, None) is getattr(__future__, name)
    )


def install() -> None:
    """Compile attrs's and cattrs's generated code through the cache (once per process)."""
    import attr._make
    import cattrs.gen

    original = getattr(attr._make, "_compile_and_eval", None)
    code = getattr(original, "__code__", None)
    if code is None or code.co_varnames[:4] != ("script", "globs", "locs", "filename"):
        return  # another attrs, or installed already: its own compile
    attrs_flags = _future_flags(attr._make)

    def compile_and_eval(
        script: str,
        globs: dict[str, Any] | None,
        locs: Any = None,
        filename: str = "",
    ) -> None:
        eval(_compiled(script, filename, attrs_flags, _type_hash(filename)), globs, locs)

    attr._make._compile_and_eval = compile_and_eval  # type: ignore[assignment]
    if "compile" not in vars(cattrs.gen):  # it calls the builtin, found through its globals
        cattrs_flags = _future_flags(cattrs.gen)

        def cattrs_compile(source: Any, filename: Any, mode: str, *args: Any, **kw: Any) -> Any:
            if (
                isinstance(source, str)
                and isinstance(filename, str)
                and mode == "exec"
                and not (args or kw)
            ):
                return _compiled(source, filename, cattrs_flags)
            return compile(source, filename, mode, *args, **kw)

        vars(cattrs.gen)["compile"] = cattrs_compile
    _load()


def save() -> None:
    """Write the code compiled in this process for the next one (when there is any)."""
    global _added
    from safe_estimators._cache import write_atomically

    with _lock:
        if not _added or _path is None:
            return
        try:
            data = marshal.dumps((_KEY, dict(_codes)))
        except ValueError:
            return
        _added = False
    write_atomically(_path, data)


install()
