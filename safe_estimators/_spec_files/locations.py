"""Where a problem is written: the file, line and column of a dotted path in a spec file.

Only files with problems are located, so a valid file costs nothing here: the spec is read
again (bounded as when it was checked) and its keys indexed by dotted path, each at the line and
column of its key (a list item at the start of the item). A path that is not written in the file
(a value injected, or under an alias) is placed at its longest written prefix; a path written
nowhere (``<aws>``, ``$SAGEMAKER_USER_CONFIG_OVERRIDE``) has no position. A file that does not
parse places ``<file>`` at its syntax error.

A path can continue into a JSON file the spec names (``LINKED``): a model parallel option read
from the ``parameters`` file is placed in that file. Such a file is read only when the spec's
own problems say nothing about that path (a path outside the project has a problem there).
"""

from __future__ import annotations

import bisect
import functools
import json
import os
import re
from typing import Any

# A position: the file it is in (as the spec's path was given, or beside it), line and column
# (1-based, in characters).
Position = tuple[str, int, int]

# Paths whose value is the name of a JSON file whose keys the problems' paths continue into.
LINKED = ("distribution.smdistributed.modelparallel.parameters", "model.config")

# Patterns are compiled on first use, once: most files have no problem to place.
_compiled = functools.cache(re.compile)
# Valid JSON (it parsed) as tokens: strings, brackets and the other scalars; the white space,
# commas and colons between them are skipped in C, not a character at a time.
_JSON_TOKEN = r'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\]]|[^ \t\r\n,:{}\[\]"]+'
# TOML: a key's parts; the next character that opens or closes something; a basic string; the
# inside of a multi-line basic string up to where it may close.
_TOML_KEY_PART = r'\s*("(?:[^"\\]|\\.)*"|\'[^\']*\'|[^.\s]+)\s*(?:\.|$)'
_TOML_SPECIAL = r"[\"'#\[\]{}]"
_TOML_BASIC = r'"[^"\\]*(?:\\.[^"\\]*)*"'
_TOML_MULTI_LINE_BASIC = r'(?:[^"\\]|\\.|"(?!""))*'


class Locator:
    """Positions of the dotted paths of one spec file (read on the first question)."""

    def __init__(
        self, source: str, problem_paths: frozenset[str] = frozenset(), *, parsed: bool = False
    ) -> None:
        self.source = source
        self.problem_paths = problem_paths
        # The file parsed when it was checked (a file that does not has a <file> problem): its
        # JSON or TOML need not be parsed once more to find a syntax error.
        self.parsed = parsed
        self._index: dict[str, tuple[int, int]] | None = None
        self._linked: dict[str, Locator | None] = {}

    def index(self) -> dict[str, tuple[int, int]]:
        if self._index is None:
            self._index = _file_index(self.source, self.parsed)
        return self._index

    def position(self, path: str) -> Position | None:
        """Where ``path`` (or its longest written prefix) is written, or None."""
        found = self.placed(path)
        return found[0] if found is not None else None

    def placed(self, path: str) -> tuple[Position, str] | None:
        """Where ``path`` (or its longest written prefix) is written, and that prefix (the
        dotted path written there: ``path`` itself, or a parent of a missing key), or None."""
        for linked in LINKED:
            if path.startswith(linked + ".") and linked not in self.problem_paths:
                found = self._linked_file(linked)
                if found is not None:
                    inner = found.placed(path[len(linked) + 1 :])
                    if inner is not None:
                        return inner[0], f"{linked}.{inner[1]}"
        index = self.index()
        key = path
        while key:
            if key in index:
                line, column = index[key]
                return (self.source, line, column), key
            key = key.rpartition(".")[0]
        return None

    def _linked_file(self, linked: str) -> Locator | None:
        if linked not in self._linked:
            self._linked[linked] = None
            from safe_estimators._problems import value_at
            from safe_estimators._spec_files.read import read_spec_data

            data, _ = read_spec_data(self.source)
            name = value_at(data, linked) if data is not None else None
            if isinstance(name, str) and name.lower().endswith(".json") and "://" not in name:
                target = os.path.join(os.path.dirname(self.source), name)
                self._linked[linked] = Locator(os.path.normpath(target))
        return self._linked[linked]


def _file_index(source: str, parsed: bool = False) -> dict[str, tuple[int, int]]:
    from safe_estimators._spec_files.read import _read_bounded, path_suffix

    try:
        text = _read_bounded(source).decode("utf-8")
    except Exception:  # unreadable, not a file, too large, not UTF-8: the problem says so
        return {}
    suffix = path_suffix(source)
    try:
        if suffix == ".json":
            return _json_index(text, parsed)
        if suffix == ".toml":
            return _toml_index(text, parsed)
        if suffix in (".yaml", ".yml"):
            return _yaml_index(text)
    except Exception as exc:  # a syntax error: <file> is where the parser stopped
        return _error_index(exc)
    return {}


def _error_index(exc: Exception) -> dict[str, tuple[int, int]]:
    mark = getattr(exc, "problem_mark", None)
    if mark is not None:  # PyYAML
        return {"<file>": (mark.line + 1, mark.column + 1)}
    if isinstance(exc, json.JSONDecodeError):
        return {"<file>": (exc.lineno, exc.colno)}
    found = _compiled(r"at line (\d+), column (\d+)").search(str(exc))
    return {"<file>": (int(found.group(1)), int(found.group(2)))} if found else {}


def _join(path: str, key: object) -> str:
    return f"{path}.{key}" if path else str(key)


class _Frame:
    __slots__ = ("count", "is_map", "key", "path")

    def __init__(self, is_map: bool, path: str) -> None:
        self.is_map = is_map
        self.path = path
        self.key: str | None = None  # a mapping's current key path, None while a key is due
        self.count = 0


def _value_path(stack: list[_Frame]) -> str:
    """The path of the value that starts now (a list item is numbered as it starts)."""
    if not stack:
        return ""
    frame = stack[-1]
    if frame.is_map:
        path, frame.key = frame.key or frame.path, None
        return path
    frame.count += 1
    return _join(frame.path, frame.count - 1)


def _yaml_index(text: str) -> dict[str, tuple[int, int]]:
    import yaml

    index: dict[str, tuple[int, int]] = {}
    stack: list[_Frame] = []
    events = yaml.events
    # The loader makes exactly these classes: one type lookup per event, not four isinstance.
    ends = (events.MappingEndEvent, events.SequenceEndEvent)
    mapping, sequence = events.MappingStartEvent, events.SequenceStartEvent
    scalar, alias = events.ScalarEvent, events.AliasEvent
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        while loader.check_event():
            event = loader.get_event()
            kind = type(event)
            if kind in ends:
                stack.pop()
                continue
            starts = kind is mapping or kind is sequence
            if not starts and kind is not scalar and kind is not alias:
                continue
            mark: Any = event.start_mark
            top = stack[-1] if stack else None
            if top is not None and top.is_map and top.key is None:  # a key
                key = event.value if kind is scalar else "?"
                top.key = _join(top.path, key)
                index[top.key] = (mark.line + 1, mark.column + 1)  # a duplicate: the last one
                if starts:  # a complex key: its contents are no path
                    stack.append(_Frame(kind is mapping, "?"))
                continue
            path = _value_path(stack)
            if top is not None and not top.is_map:
                index[path] = (mark.line + 1, mark.column + 1)
            if starts:
                stack.append(_Frame(kind is mapping, path))
    finally:
        loader.dispose()
    return index


def _positions(text: str) -> Any:
    """A function from an offset of ``text`` to its (line, column), both 1-based."""
    starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def at(offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(starts, offset)
        return line, offset - starts[line - 1] + 1

    return at


def _json_index(text: str, parsed: bool = False) -> dict[str, tuple[int, int]]:
    if not parsed:
        json.loads(text)  # a syntax error is raised here, with its position
    at = _positions(text)
    index: dict[str, tuple[int, int]] = {}
    stack: list[_Frame] = []
    for token in _compiled(_JSON_TOKEN, re.DOTALL).finditer(text):
        value = token.group()
        char = value[0]
        if char in "}]":
            stack.pop()
            continue
        top = stack[-1] if stack else None
        if top is not None and top.is_map and top.key is None:  # a key: always a string
            key = json.loads(value) if "\\" in value else value[1:-1]
            top.key = _join(top.path, key)
            index[top.key] = at(token.start())
            continue
        path = _value_path(stack)
        if top is not None and not top.is_map:
            index[path] = at(token.start())
        if char in "{[":
            stack.append(_Frame(char == "{", path))
    return index


def _toml_index(text: str, parsed: bool = False) -> dict[str, tuple[int, int]]:
    """Keys of a TOML document by dotted path: tables, arrays of tables and ``key = value``
    lines (the keys of an inline table are placed at the key that holds it)."""
    if not parsed:
        import sys

        if sys.version_info >= (3, 11):
            import tomllib
        else:  # pragma: no cover - Python 3.10
            import tomli as tomllib
        tomllib.loads(text)  # a syntax error is raised here, with its position
    index: dict[str, tuple[int, int]] = {}
    arrays: dict[str, int] = {}  # an array of tables' path: the index of its last table
    table = ""
    open_value = ""  # what closes the multi-line value that the previous lines opened
    for number, line in enumerate(text.splitlines(), 1):
        if open_value:
            open_value = _still_open(line, open_value)
            continue
        stripped = line.lstrip()
        column = len(line) - len(stripped) + 1
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("["):
            double = stripped.startswith("[[")
            inside = stripped[2 if double else 1 :].split("]", 1)[0]
            keys = _toml_keys(inside)
            path = ".".join(keys)
            # A table below an array of tables is inside its last table.
            for prefix in sorted(arrays, key=len, reverse=True):
                if path.startswith(prefix + ".") or (path == prefix and not double):
                    path = f"{prefix}.{arrays[prefix]}{path[len(prefix) :]}"
                    break
            if double:
                arrays[path] = arrays.get(path, -1) + 1
                index.setdefault(path, (number, column + 2))
                path = f"{path}.{arrays[path]}"
            index[path] = (number, column + (2 if double else 1))
            table = path
            continue
        key_text, equals, value = stripped.partition("=")
        if not equals:
            continue
        path = ".".join([table, *_toml_keys(key_text)] if table else _toml_keys(key_text))
        index[path] = (number, column)
        open_value = _still_open(value, "")
    return index


def _toml_keys(text: str) -> list[str]:
    """The parts of a TOML key (``a."b.c".d``), unquoted."""
    parts: list[str] = []
    for found in _compiled(_TOML_KEY_PART).finditer(text):
        part = found.group(1)
        if part.startswith('"'):
            part = json.loads(part)
        elif part.startswith("'"):
            part = part[1:-1]
        parts.append(part)
    return parts


def _still_open(text: str, closing: str) -> str:
    """What still has to close after ``text``: a multi-line string's quotes, or the brackets
    of an array that goes on (as ``]]``); "" when the value ended."""
    special, basic = _compiled(_TOML_SPECIAL), _compiled(_TOML_BASIC)
    multi_line_basic = _compiled(_TOML_MULTI_LINE_BASIC, re.DOTALL)
    depth = len(closing) if closing.startswith("]") else 0
    quote = closing if closing in ('"""', "'''") else ""
    i = 0
    end = len(text)
    while i < end:
        if quote:
            if quote == "'''":
                close = text.find(quote, i)
            else:  # a backslash escapes the character after it
                close = multi_line_basic.match(text, i).end()  # type: ignore[union-attr]
                close = close if text.startswith(quote, close) else -1
            if close < 0:
                return quote
            i, quote = close + 3, ""
            continue
        found = special.search(text, i)  # the characters between count for nothing
        if found is None:
            break
        i = found.start()
        char = text[i]
        if text.startswith(('"""', "'''"), i):
            quote, i = text[i : i + 3], i + 3
        elif char == '"':
            string = basic.match(text, i)
            i = string.end() if string else end
        elif char == "'":
            close = text.find("'", i + 1)
            i = close + 1 if close >= 0 else end
        elif char == "#":
            break
        else:
            depth += 1 if char in "[{" else -1
            i += 1
    return quote or "]" * max(depth, 0)
