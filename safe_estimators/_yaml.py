"""YAML spec files, loaded from the parser's events with every bound checked as they arrive.

PyYAML's own loaders expand aliases into shared objects (a 528-byte alias bomb becomes 10^9
values for whoever walks it), recurse once per nesting level, keep the last of duplicate keys
and read YAML 1.1 (``on`` is true, ``1:20`` is 80). This loader builds the same plain values
from the parser's event stream iteratively, and refuses what a spec file cannot mean:

- more than ``MAX_NODES`` values, counting every alias as the values it stands for;
- nesting deeper than ``MAX_DEPTH``; an alias to a node that contains it (a cycle);
- duplicate keys, keys that are lists or mappings, tags other than the standard scalar ones;
- plain scalars that YAML 1.1 (PyYAML, the SageMaker SDK's config loader) and YAML 1.2 (most
  other tools, the YAML language server) read differently: ``yes``/``no``/``on``/``off``,
  sexagesimal ``1:20``, octal ``0777``, ``1_000``. Quoting them, or writing ``true``, settles it.

Anchors, aliases and merge keys (``<<: *defaults``) within the bounds keep working.
"""

from __future__ import annotations

import re
from typing import Any

from safe_estimators._bounds import MAX_DEPTH, MAX_NODES, MAX_PROBLEMS, quote
from safe_estimators._problems import Problem

_TAG = "tag:yaml.org,2002:"
_SCALAR_TAGS = frozenset(_TAG + t for t in ("str", "int", "float", "bool", "null"))
_BOOL_12 = frozenset(("true", "false"))
# Integers YAML 1.1 reads as numbers that YAML 1.2 reads as strings or as other numbers.
_INT_11_ONLY = re.compile(r"[-+]?(?:0b[01_]+|0[0-7_]+|[0-9][0-9_]*(?::[0-5]?[0-9])+|.*_.*)")
_FLOAT_11_ONLY = re.compile(r".*[:_].*")


# Resolved scalars, keyed by (tag, text, implicit, style); bounded in entries and in text size.
_SCALARS: dict[tuple[Any, ...], tuple[str, Any]] = {}
_MEMO_ENTRIES = 4096
_MEMO_MAX = 256


class _Refused(Exception):
    """A bound was exceeded: stop reading (the problem is already recorded)."""


class _Frame:
    __slots__ = (
        "anchor",
        "first_nodes",
        "is_map",
        "key",
        "key_line",
        "lines",
        "merges",
        "path",
        "value",
    )

    def __init__(self, is_map: bool, path: str, anchor: str | None, nodes: int) -> None:
        self.is_map = is_map
        self.path = path
        self.anchor = anchor
        self.first_nodes = nodes
        self.value: Any = {} if is_map else []
        self.key: Any = _NO_KEY
        self.key_line = 0
        self.lines: dict[Any, int] = {}
        self.merges: list[dict[Any, Any]] = []


_NO_KEY = object()
_MERGE = object()


def load_yaml(text: str) -> tuple[Any, list[Problem]]:
    """Load one YAML document into plain values; ``(None, problems)`` when it is refused.

    Raises ``yaml.YAMLError`` for syntax errors (the caller reports them with line and column).
    """
    import yaml  # deferred: only YAML files pay for it

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    reader = _Reader(loader, yaml)
    try:
        return reader.read()
    finally:
        loader.dispose()


class _Reader:
    def __init__(self, loader: Any, yaml: Any) -> None:
        self.loader = loader
        self.yaml = yaml
        self.problems: list[Problem] = []
        self.nodes = 0
        self.anchors: dict[str, tuple[Any, int]] = {}
        self.open_anchors: set[str] = set()
        self.stack: list[_Frame] = []
        self.documents = 0
        self.result: Any = None

    def refuse(self, path: str, line: int, message: str, hint: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(Problem(path or "<file>", f"line {line + 1}: {message}", hint))

    def read(self) -> tuple[Any, list[Problem]]:
        ev = self.yaml.events
        # The parser makes exactly these classes (none has a subclass): one type lookup per
        # event, not a chain of isinstance checks.
        scalar, alias, document = ev.ScalarEvent, ev.AliasEvent, ev.DocumentStartEvent
        starts = {ev.SequenceStartEvent: False, ev.MappingStartEvent: True}
        ends = (ev.SequenceEndEvent, ev.MappingEndEvent)
        check_event, get_event = self.loader.check_event, self.loader.get_event
        try:
            while check_event():
                event = get_event()
                kind = type(event)
                mark = event.start_mark
                line = mark.line if mark else 0
                if kind is scalar:
                    # Most scalars are plain values resolved before (see scalar): no call.
                    known = _SCALARS.get((event.tag, event.value, event.implicit, event.style))
                    value = known[1] if known is not None and known[0] == "value" else None
                    if value is None:
                        value = self.scalar(event, line)
                    self.add(value, line, event.anchor, 1)
                elif kind in starts:
                    self.start(event, line, starts[kind])
                elif kind in ends:
                    self.end()
                elif kind is alias:
                    self.alias(event, line)
                elif kind is document:
                    self.documents += 1
                    if self.documents > 1:
                        self.refuse(
                            "<file>",
                            line,
                            "holds more than one YAML document (---).",
                            "keep one job per file.",
                        )
                        raise _Refused
        except _Refused:
            return None, self.problems
        if self.problems:
            return None, self.problems
        return self.result, []

    def where(self) -> str:
        if not self.stack:
            return ""
        frame = self.stack[-1]
        if frame.is_map:
            key = frame.key
            if key is _NO_KEY:
                return frame.path
            shown = key if type(key) is str else "<<" if key is _MERGE else quote(key, 40)
            return f"{frame.path}.{shown}" if frame.path else shown
        index = str(len(frame.value))
        return f"{frame.path}.{index}" if frame.path else index

    def count(self, nodes: int, line: int) -> None:
        self.nodes += nodes
        if self.nodes > MAX_NODES:
            self.too_many(line)

    def too_many(self, line: int) -> None:
        self.refuse(
            self.where(),
            line,
            f"the file holds more than {MAX_NODES:,} values (aliases count as the values "
            "they repeat); CreateTrainingJob cannot carry that many.",
            "remove the repetition; a spec file describes one job.",
        )
        raise _Refused

    def scalar(self, event: Any, line: int) -> Any:
        value = event.value
        key = (event.tag, value, event.implicit, event.style)
        # Keys and common values repeat in every spec: each distinct short scalar is resolved
        # and constructed once per process (the result is an immutable str, number or bool).
        outcome = _SCALARS.get(key)
        if outcome is None:
            outcome = self.resolve_scalar(event)
            if len(value) <= _MEMO_MAX:
                if len(_SCALARS) >= _MEMO_ENTRIES:
                    _SCALARS.clear()
                _SCALARS[key] = outcome
        kind, result = outcome
        if kind == "merge":
            at_key = bool(self.stack) and self.stack[-1].is_map and self.stack[-1].key is _NO_KEY
            if at_key:
                return _MERGE
            kind, result = "tag", _TAG + "merge"
        if kind == "value":
            return result
        if kind == "tag":
            self.refuse(
                self.where(),
                line,
                f"the YAML tag {result!r} is not supported in spec files.",
                "remove the tag; write a plain string, number or true/false.",
            )
        elif kind == "surprise":
            self.refuse(
                self.where(),
                line,
                f"{value!r} {result}",
                'quote it ("' + value + '") if you mean the text, or write '
                "the value explicitly (true/false, a plain decimal number).",
            )
        else:  # e.g. an integer over Python's 4,300-digit limit
            self.refuse(
                self.where(),
                line,
                f"cannot be read as {result}.",
                "write a smaller number, or quote it.",
            )
        return None

    def resolve_scalar(self, event: Any) -> tuple[str, Any]:
        """What a scalar event is: ("value", the value), or why it is refused."""
        tag = event.tag
        value = event.value
        plain = event.implicit[0]
        if tag is None or tag == "!":
            tag = self.loader.resolve(self.yaml.ScalarNode, value, event.implicit)
        if tag == _TAG + "merge" and plain:
            return "merge", None
        if tag not in _SCALAR_TAGS:
            return "tag", tag
        if plain:
            surprise = _yaml11_surprise(tag, value)
            if surprise:
                return "surprise", surprise
        node = self.yaml.ScalarNode(tag, value, style=event.style)
        try:
            return "value", self.loader.yaml_constructors[tag](self.loader, node)
        except Exception as exc:
            return "error", f"{tag[len(_TAG) :]}: {type(exc).__name__}"

    def alias(self, event: Any, line: int) -> None:
        name = event.anchor
        if name in self.open_anchors:
            self.refuse(
                self.where(),
                line,
                f"the alias *{name} refers to a node that contains it (a cycle).",
                "repeat the values instead of the alias.",
            )
            raise _Refused
        if name not in self.anchors:  # the parser rejects unknown aliases first
            raise _Refused
        value, size = self.anchors[name]
        self.count(size, line)
        self.add(value, line, None, 0)

    def start(self, event: Any, line: int, is_map: bool) -> None:
        tag = event.tag
        expected = _TAG + ("map" if is_map else "seq")
        if tag not in (None, "!", expected):
            self.refuse(
                self.where(),
                line,
                f"the YAML tag {tag!r} is not supported in spec files.",
                "remove the tag.",
            )
            raise _Refused
        self.count(1, line)
        if len(self.stack) >= MAX_DEPTH:
            self.refuse(
                self.where(),
                line,
                f"is nested more than {MAX_DEPTH} levels deep.",
                "flatten it, or put the structure in a file in source_dir.",
            )
            raise _Refused
        path = self.where()
        if event.anchor:
            self.open_anchors.add(event.anchor)
        self.stack.append(_Frame(is_map, path, event.anchor, self.nodes))

    def end(self) -> None:
        frame = self.stack.pop()
        value = frame.value
        if frame.merges:
            merged: dict[Any, Any] = {}
            for source in reversed(frame.merges):  # the first merged mapping wins
                merged.update(source)
            value = {**merged, **value}
        if frame.anchor:
            self.open_anchors.discard(frame.anchor)
        self.add(value, 0, frame.anchor, self.nodes - frame.first_nodes + 1, counted=True)

    def add(
        self, value: Any, line: int, anchor: str | None, size: int, *, counted: bool = False
    ) -> None:
        if not counted and size:
            self.nodes += size
            if self.nodes > MAX_NODES:
                self.too_many(line)
        if anchor:
            self.anchors[anchor] = (value, size)
        if not self.stack:
            self.result = value
            return
        frame = self.stack[-1]
        if not frame.is_map:
            frame.value.append(value)
            return
        if frame.key is _NO_KEY:
            # Exact types: every list and mapping here was made by this reader.
            if type(value) is list or type(value) is dict:
                self.refuse(
                    frame.path,
                    line,
                    "a key is a list or a mapping; keys must be names.",
                    "write the key as a plain name.",
                )
                raise _Refused
            frame.key, frame.key_line = value, line
            return
        key, frame.key = frame.key, _NO_KEY
        if key is _MERGE:
            sources = value if isinstance(value, list) else [value]
            if not all(isinstance(s, dict) for s in sources):
                self.refuse(
                    frame.path,
                    frame.key_line,
                    "a merge key (<<) needs a mapping or a list of mappings.",
                    "merge an anchored mapping: <<: *defaults",
                )
                return
            frame.merges.extend(sources)
            return
        if key in frame.lines:
            shown = key if isinstance(key, str) else quote(key, 40)
            path = f"{frame.path}.{shown}" if frame.path else str(shown)
            self.refuse(
                path,
                frame.key_line,
                f"duplicate key (first at line "
                f"{frame.lines[key] + 1}); YAML loaders keep only one of them.",
                "remove one of the two.",
            )
            return
        frame.lines[key] = frame.key_line
        frame.value[key] = value


def _yaml11_surprise(tag: str, value: str) -> str | None:
    """Why a plain scalar means different things in YAML 1.1 and 1.2, or None."""
    if tag == _TAG + "bool" and value.lower() not in _BOOL_12:
        return (
            f"is {value.lower() in ('yes', 'on')} to YAML 1.1 (PyYAML) but the string "
            f"{value!r} to YAML 1.2 tools."
        )
    if tag == _TAG + "int" and _INT_11_ONLY.fullmatch(value):
        return "is an integer only to YAML 1.1 (sexagesimal, octal or with underscores)."
    if tag == _TAG + "float" and _FLOAT_11_ONLY.fullmatch(value):
        return "is a number only to YAML 1.1 (sexagesimal or with underscores)."
    return None
