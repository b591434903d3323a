"""Loaded programs and their rules' findings, remembered within one process.

CI validates folders of specs that share a few scripts: parsing every script again for each
spec was most of a validation. Two memos, both in memory only (nothing here is written to disk):

- A loaded program (the entry point and its local modules, ``_load_program``), by the entry
  point as given. It is used again only while every path the load depended on (``files._Reads``:
  the files it read or tried to, the folders it looked for modules in) has the same stamp:
  device, inode, mode, size and modification time, or still missing. Adding, removing,
  renaming or relinking an entry changes its folder's time; editing a file changes its own. A
  load is remembered only when all of its stamps are older than ``_SETTLED_SECONDS``, as
  ``_bounds.walk_tree`` does: a file written twice within its file system's clock tick keeps its
  time.
- What each rule found on that program, by the job's ``ScriptContext`` without its
  hyperparameters, which vary from job to job (learning rates, seeds). A rule is a pure function
  of the program and the context: one that did not read the hyperparameters (``_Recorder``
  notes it) finds the same again for every job that differs only in them; the few that do read
  them run again for every job.
"""

from __future__ import annotations

import operator
import os
import stat
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, cast

import attrs

from safe_estimators._bounds import _SETTLED_SECONDS
from safe_estimators._script_checks.files import _Reads
from safe_estimators._script_checks.findings import Finding, ScriptContext
from safe_estimators._script_checks.program import _Program

# Bounds on what stays in memory: a parsed file costs 40-80 times its size in syntax tree
# (measured on the examples and on a generated 10,000-line script), so 256 kB of remembered
# source is 10-20 MB; the oldest entry goes first.
_MAX_PROGRAMS = 256
_MAX_SOURCE_BYTES = 256_000
# Contexts remembered per program (jobs sharing a script differ in instance types and counts).
_MAX_CONTEXTS = 64

_Stamp = tuple[int, int, int, int, int] | None
# Per rule, what it found; None for a rule that read what the key leaves out (the
# hyperparameters): it runs again for every job.
_Findings = list[tuple[Finding, ...] | None]
_Rule = Callable[[_Program, ScriptContext], Any]


class _Loaded:
    """One entry point as loaded: its program (None when the entry point itself could not be
    read), the findings about files that could not be, and what its rules found per context."""

    __slots__ = ("contexts", "findings", "program", "size", "stamps")

    def __init__(
        self,
        program: _Program | None,
        findings: Sequence[Finding],
        stamps: tuple[tuple[str, _Stamp], ...],
    ) -> None:
        self.program = program
        self.findings = tuple(findings)
        self.stamps = stamps
        self.size = 0 if program is None else sum(m.size for m in program.modules)
        self.contexts: OrderedDict[tuple[Any, ...], _Findings] = OrderedDict()


_LOADED: OrderedDict[tuple[str, str, str | None], _Loaded] = OrderedDict()
_remembered_bytes = 0
# Factories may check jobs from several threads; a lock is cheaper than a surprise.
_LOCK = threading.RLock()


# The latest load the memo above does not keep (read too recently, or over its bytes), kept
# alone: used again only while every other path it read has its stamp and every file it parsed
# still holds the same bytes, read again (a file rewritten within its clock tick keeps its
# stamp). A command that loads a script twice (lint: the spec's checks, then the script's own)
# parses it once; issue 32's 500 kB entry point was parsed twice.
_LATEST: list[tuple[tuple[str, str, str | None], _Loaded]] = []


def _recall_latest(key: tuple[str, str, str | None]) -> _Loaded | None:
    if not _LATEST or _LATEST[0][0] != key:
        return None
    loaded = _LATEST[0][1]
    parsed = {} if loaded.program is None else {
        os.path.abspath(m.path): m._source for m in loaded.program.modules if m.path is not None
    }  # fmt: skip
    for path, stamp in loaded.stamps:
        if _stamp(path) != stamp or (path in parsed and _bytes(path) != parsed[path]):
            _LATEST.clear()
            return None
    return loaded


def _bytes(path: str) -> bytes | None:
    try:
        with open(path, "rb") as file:
            return file.read(_MAX_READ)
    except OSError:
        return None


_MAX_READ = 2_000_000  # more than any file the checks parse (files._MAX_BYTES)


def recall(key: tuple[str, str, str | None]) -> _Loaded | None:
    """The load remembered under ``key`` while none of what it read has changed."""
    with _LOCK:
        loaded = _LOADED.get(key)
        if loaded is None:
            return _recall_latest(key)
        for path, stamp in loaded.stamps:
            if _stamp(path) != stamp:
                _forget(key)
                return None
        _LOADED.move_to_end(key)
        return loaded


def remember(
    key: tuple[str, str, str | None],
    reads: _Reads,
    started: float,
    program: _Program | None,
    findings: Sequence[Finding],
) -> _Loaded:
    """The load as a ``_Loaded``, remembered under ``key`` when everything it read has settled
    (``started``: ``time.time()`` before the load) and it fits the bounds."""
    global _remembered_bytes
    found = {path: _stamp(path) for path in reads.paths}
    # A path missing from a folder that is stamped stays missing while the folder's time holds.
    stamps = tuple(sorted(
        (path, stamp) for path, stamp in found.items()
        if stamp is not None or not _is_folder(found.get(os.path.dirname(path)))
    ))  # fmt: skip
    loaded = _Loaded(program, findings, stamps)
    settled = all(s is None or started - s[4] / 1e9 > _SETTLED_SECONDS for _, s in stamps)
    if not settled or loaded.size > _MAX_SOURCE_BYTES:
        with _LOCK:
            _LATEST[:] = [(key, loaded)]
        return loaded
    with _LOCK:
        _forget(key)
        while _LOADED and (
            len(_LOADED) >= _MAX_PROGRAMS or _remembered_bytes + loaded.size > _MAX_SOURCE_BYTES
        ):
            _forget(next(iter(_LOADED)))
        _LOADED[key] = loaded
        _remembered_bytes += loaded.size
    return loaded


def _forget(key: tuple[str, str, str | None]) -> None:
    global _remembered_bytes
    loaded = _LOADED.pop(key, None)
    if loaded is not None:
        _remembered_bytes -= loaded.size


def _is_folder(stamp: _Stamp) -> bool:
    return stamp is not None and stat.S_ISDIR(stamp[2])


def _stamp(path: str) -> _Stamp:
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return (info.st_dev, info.st_ino, info.st_mode, info.st_size, info.st_mtime_ns)


def rule_findings(
    loaded: _Loaded,
    context: ScriptContext,
    rules: Sequence[_Rule],
    run: Callable[[_Rule, _Program, ScriptContext], list[Finding]],
) -> list[Finding]:
    """What ``run(rule, program, context)`` gives for each rule in turn, in the rules' order:
    remembered from an earlier run on the same program with the same context but for its
    hyperparameters, except for the rules that read them (or anything else outside the key)
    there, which run again."""
    program = loaded.program
    assert program is not None
    key = _context_key(context)
    with _LOCK:  # the rules run under it too: pure Python gains nothing from running in parallel
        remembered = None if key is None else loaded.contexts.get(key)
        if key is not None and remembered is not None:
            loaded.contexts.move_to_end(key)
            findings: list[Finding] = []
            for rule, found in zip(rules, remembered, strict=True):
                findings.extend(run(rule, program, context) if found is None else found)
            return findings
        findings, remembered = [], []
        for rule in rules:
            recorder = _Recorder(context)
            result = run(rule, program, cast(ScriptContext, recorder))
            findings.extend(result)
            remembered.append(None if recorder.read_unkeyed else tuple(result))
        if key is not None:
            if len(loaded.contexts) >= _MAX_CONTEXTS:
                loaded.contexts.popitem(last=False)
            loaded.contexts[key] = remembered
        return findings


class _Recorder:
    """A ``ScriptContext`` that notes whether a rule read anything the key of ``rule_findings``
    leaves out: the hyperparameters, or a property not known to derive from the key's fields."""

    __slots__ = ("_context", "read_unkeyed")

    def __init__(self, context: ScriptContext) -> None:
        self._context = context
        self.read_unkeyed = False

    def __getattr__(self, name: str) -> Any:
        if name not in _KEYED:
            self.read_unkeyed = True
        return getattr(self._context, name)


# The key: every field but the hyperparameters. What a rule may read and still be remembered by
# it: those fields, and the properties computed from them alone.
_KEY_FIELDS = tuple(
    field.name for field in attrs.fields(ScriptContext) if field.name != "hyperparameters"
)
_KEYED = frozenset({*_KEY_FIELDS, "multi_process"})
_FIELDS = operator.attrgetter(*_KEY_FIELDS)
_PLAIN = frozenset({str, int, bool, type(None)})


def _context_key(context: ScriptContext) -> tuple[Any, ...] | None:
    """The context but for its hyperparameters, as a key that tells ``1`` from ``True`` (a rule
    may print either); None when a value is not a plain one (a float prints -0.0 and 0.0 apart
    though they are equal)."""
    values = _FIELDS(context)
    types = tuple(map(type, values))
    return (type(context), values, types) if _PLAIN.issuperset(types) else None
