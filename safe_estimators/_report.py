"""Problems as each consumer reads them: ``--format text|json|github|sarif|codeclimate``.

- ``text``: one line per problem, ``file:line:col: path: message (fix)`` where the line is known
  (editors and CI logs link it), else ``file: path: ...``.
- ``json``: the CLI's JSON documents (built in ``_cli``), each problem with ``file``, ``line``
  and ``column`` beside its ``source``.
- ``github``: GitHub Actions workflow commands, one ``::error file=F,line=L,col=C,title=T::M`` per
  problem, escaped as GitHub's toolkit escapes them (``%``, CR and LF in the message; also ``:``
  and ``,`` in properties), so that a value can neither end the command nor start another.
- ``sarif``: one SARIF 2.1.0 log (GitHub code scanning, most IDEs); ``codeclimate``: GitLab's
  Code Quality report (a JSON list of Code Climate issues).

Every message has been masked where it was written (``quote`` never prints a suspected secret)
and is passed through ``printable`` here in every format, so no format carries a control
character of the user's.

Every line any command prints also passes one choke point, ``CiSafeStream`` (``_cli`` puts it in
front of stdout and stderr): a CI log is read by the runner, which acts on workflow commands in
it. ``ci_safe_line`` escapes what the GitHub Actions runner would read as one (``::`` at the start
of a line, ``##[`` anywhere: actions/runner's ``ActionCommand.TryParseV2`` and ``TryParse``) and
every control or separator character; only the annotations of ``--format github`` are written
as commands, through ``write_command``.
"""

from __future__ import annotations

import io
import json
import os
import threading
from collections.abc import Iterable, Sequence
from typing import Any, TextIO

import attrs

from safe_estimators._bounds import MAX_PROBLEMS, printable
from safe_estimators._problems import Problem, shortened
from safe_estimators._secret_formats import mask_text

FORMATS = ("text", "json", "github", "sarif", "codeclimate")

# Each format's words for our two severities.
_GITHUB_LEVEL = {"error": "error", "warning": "warning"}
_SARIF_LEVEL = {"error": "error", "warning": "warning"}
# GitLab's scale is info, minor, major, critical, blocker: an error stops the job (major is
# what linters' errors usually map to), a warning is worth reading.
_CODECLIMATE_SEVERITY = {"error": "major", "warning": "minor"}

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"

# A problem is one line for a human; a path or message longer than this quotes a value whole.
_MAX_LINE = 2_000
_MAX_PATH = 200

# Problems in one SARIF log or Code Climate report: MAX_PROBLEMS per file, as text and JSON show,
# and this many in all. GitHub code scanning rejects a run of over 25,000 results (or 25,000
# rules) and keeps only 5,000 of one ("SARIF results exceed one or more limits", GitHub docs);
# 3 specs with 9,000 unknown keys each made 27,000 results, and the whole upload failed. Each
# result names one location, and a rule is named by a result: a run has at most this many
# rules too (plus the one of the notes saying what was left out).
MAX_RUN_RESULTS = 5_000
OMITTED_RULE = "omitted"


def _text(value: str) -> str:
    """A message, fix or path as an entry holds it: a credential in it cut to its first
    characters (a script's line may hold one; a file or key may be named after one) and a value
    quoted whole cut short."""
    return shortened(mask_text(value)) if isinstance(value, str) else value


def _name(value: str | None) -> str | None:
    """A file name as an entry holds it: a credential in it cut short (``ghp_….py``)."""
    return mask_text(value) if isinstance(value, str) else value


@attrs.frozen
class Entry:
    """One problem as reported: what the command was given, the problem, the id of the rule
    that found it, and where it is written (``file``, ``line``, ``column``; None where that is
    not known). ``written``: the dotted path written at that line when it is a parent of
    ``path`` (a missing key is placed at the key that would hold it). ``script``: a finding in a
    training script, whose ``path`` is the script's file, not a dotted spec path."""

    source: str | None = attrs.field(converter=_name)
    path: str = attrs.field(converter=_text)
    message: str = attrs.field(converter=_text)
    hint: str = attrs.field(default="", converter=_text)
    severity: str = "error"
    rule: str | None = None
    file: str | None = attrs.field(default=None, converter=_name)
    line: int | None = None
    column: int | None = None
    written: str | None = None
    script: bool = False

    def as_json(self) -> dict[str, Any]:
        """The problem in the CLI's JSON: ``line`` and ``column`` only where they are known."""
        document: dict[str, Any] = {
            "source": self.source,
            "path": self.path,
            "message": self.message,
            "hint": self.hint,
            "severity": self.severity,
            "rule": rule_of(self),
            "file": self.file,
        }
        if self.line is not None:
            document["line"] = self.line
            document["column"] = self.column or 1
        return document


def located(source: str | None, problems: Iterable[Problem]) -> list[Entry]:
    """The problems of ``source`` (a spec file), each placed where the file writes its path,
    or where its rule placed it in a file the spec names (``Problem.at``)."""
    problems = list(problems)
    locator = None
    if source is not None and problems and os.path.isfile(source):
        from safe_estimators._spec_files.locations import Locator

        paths = frozenset(p.path for p in problems)
        # A file that did not parse as a spec has a <file> problem; without one, it parsed.
        locator = Locator(source, paths, parsed="<file>" not in paths)
    out = []
    for problem in problems:
        file, line, column, written = source, None, None, None
        if problem.at is not None:
            file, line, column = problem.at
        elif locator is not None and (placed := locator.placed(problem.path)) is not None:
            (file, line, column), key = placed
            written = key if key != problem.path else None
        out.append(
            Entry(
                source,
                problem.path,
                problem.message,
                problem.hint,
                problem.severity,
                rule=problem.rule,
                file=file,
                line=line,
                column=column,
                written=written,
            )
        )
    return out


def rule_of(entry: Entry) -> str:
    """The id of the rule that found ``entry`` (``safe-estimators rule ID`` documents it)."""
    if entry.rule:
        return entry.rule
    from safe_estimators._rulebook import UNCLASSIFIED

    return UNCLASSIFIED


# --- text -----------------------------------------------------------------------------------


def text_line(entry: Entry) -> str:
    """``file:line:col: path: [warning: ]message (hint)``, escaped and bounded; a script
    finding as lint prints it, ``file:line: severity: message Fix: hint``. A position that is
    not known is left out (never ``:0``)."""
    if entry.script:
        where = f"{entry.file}:{entry.line}" if entry.line is not None else str(entry.file)
        fix = f" Fix: {entry.hint}" if entry.hint else ""
        line = printable(f"{where}: {entry.severity}: {entry.message}{fix}")
        return line if len(line) <= _MAX_LINE else line[: _MAX_LINE - 1] + "…"
    label = "warning: " if entry.severity == "warning" else ""
    hint = f" ({entry.hint})" if entry.hint else ""
    path = entry.path if len(entry.path) <= _MAX_PATH else entry.path[: _MAX_PATH - 1] + "…"
    if entry.line is not None:
        where = f"{entry.file}:{entry.line}:{entry.column or 1}"
    else:
        where = str(entry.source)
    line = printable(f"{where}: {path}: {label}{entry.message}{hint}")
    return line if len(line) <= _MAX_LINE else line[: _MAX_LINE - 1] + "…"


def write_text(out: TextIO, entries: Sequence[Entry]) -> None:
    for entry in entries[:MAX_PROBLEMS]:
        out.write(text_line(entry) + "\n")
    if len(entries) > MAX_PROBLEMS:
        more = len(entries) - MAX_PROBLEMS
        source = entries[0].source
        out.write(printable(f"{source}: ... and {more:,} more problems (the first "
                            f"{MAX_PROBLEMS} are shown)") + "\n")  # fmt: skip


# --- github ---------------------------------------------------------------------------------


def escape_data(text: str) -> str:
    """A workflow command's message, as GitHub's toolkit escapes it."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value (file, title), as GitHub's toolkit escapes it."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_line(entry: Entry) -> str:
    """``::error file=F,line=L,col=C,title=T::message`` (``::warning`` for a warning)."""
    properties = []
    if entry.file:
        shown = printable(_bounded(_repository_path(entry.file), _MAX_LINE))
        properties.append(f"file={escape_property(shown)}")
    if entry.line is not None:
        properties.append(f"line={entry.line}")
        if entry.column is not None:
            properties.append(f"col={entry.column}")
    title = rule_of(entry) if entry.script else entry.path
    properties.append(f"title={escape_property(printable(_bounded(title, _MAX_PATH)))}")
    message = printable(_bounded(_message(entry), _MAX_LINE))
    level = _GITHUB_LEVEL.get(entry.severity, "error")
    return f"::{level} {','.join(properties)}::{escape_data(message)}"


def write_github(out: TextIO, entries: Sequence[Entry]) -> None:
    for entry in entries[:MAX_PROBLEMS]:
        write_command(out, github_line(entry))
    if len(entries) > MAX_PROBLEMS:
        write_command(out, github_line(_omitted_entry(entries[0].source, entries)))


# --- sarif ----------------------------------------------------------------------------------


def sarif_log(entries: Sequence[Entry], *, failure: str | None = None) -> dict[str, Any]:
    """One SARIF 2.1.0 log of ``entries``; ``failure``: why the run could not finish."""
    rules: dict[str, int] = {}
    results = []
    for entry in entries:
        rule = rule_of(entry)
        rules.setdefault(rule, len(rules))
        result: dict[str, Any] = {
            "ruleId": rule,
            "ruleIndex": rules[rule],
            "level": _SARIF_LEVEL.get(entry.severity, "error"),
            "message": {"text": printable(_message(entry) + _placement_note(entry))},
        }
        location: dict[str, Any] = {}
        file = entry.file or entry.source
        if file:
            location["physicalLocation"] = {
                "artifactLocation": _artifact(file),
                "region": _sarif_region(entry),
            }
        if entry.path and not entry.path.startswith("<") and not entry.script:
            location["logicalLocations"] = [{"fullyQualifiedName": printable(entry.path)}]
        if location:
            result["locations"] = [location]
        result["partialFingerprints"] = {"safeEstimators/v1": _fingerprint(entry)}
        results.append(result)
    invocation: dict[str, Any] = {"executionSuccessful": failure is None}
    if failure is not None:
        invocation["toolExecutionNotifications"] = [
            {"level": "error", "message": {"text": printable(failure)}}
        ]
    driver = {
        "name": "safe-estimators",
        "version": version(),
        "rules": [sarif_rule(rule) for rule in rules],
    }
    run = {
        "tool": {"driver": driver},
        "invocations": [invocation],
        "columnKind": "unicodeCodePoints",
        "results": results,
    }
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}


def _artifact(file: str) -> dict[str, Any]:
    from urllib.parse import quote as url_quote

    # The file name's own bytes, percent-encoded: a name that is not UTF-8 (b"\xff", read by
    # Python as a surrogate) is %FF, as the file system holds it.
    shown = os.fsencode(_repository_path(file).replace(os.sep, "/"))
    if os.path.isabs(shown):
        return {"uri": "file://" + url_quote(shown)}
    return {"uri": url_quote(shown), "uriBaseId": "%SRCROOT%"}


# --- sarif: regions and rules ---------------------------------------------------------------
# Kept apart from the output's escaping and bounds above: where a result points, and what its
# rule says.


def _sarif_region(entry: Entry) -> dict[str, int]:
    """Where a result points: its line and column, or line 1 of the file when the problem is
    written nowhere in it (a missing key with no parent; a finding about the whole script).
    GitHub code scanning refuses a result without ``region.startLine``."""
    if entry.line is None:
        return {"startLine": 1, "startColumn": 1}
    return {"startLine": entry.line, "startColumn": entry.column or 1}


def _placement_note(entry: Entry) -> str:
    """What a region that is not the problem's own place means, said in the message."""
    path = _bounded(entry.path, _MAX_PATH)
    if entry.line is None:
        if entry.script:
            return " (This is about the whole script: it is shown at line 1.)"
        if path.startswith(("<", "$")):  # <file>, <aws>, $SAGEMAKER_USER_CONFIG_OVERRIDE
            return " (This is about no line of the file: it is shown at line 1.)"
        return f" (This is about {path}, which is not in the file: it is shown at line 1.)"
    if entry.written is not None:
        written = _bounded(entry.written, _MAX_PATH)
        return f" ({path} is not written in the file: it is shown at {written}, where it belongs.)"
    return ""


def sarif_rule(rule: str) -> dict[str, Any]:
    """``tool.driver.rules[]`` for a rule id: its summary, its documentation and where to read
    it (``docs/rules.md#<id>``), from the rule's own docstring (see _rulebook)."""
    from safe_estimators._rulebook import doc_of, rule_text

    doc = doc_of(rule)  # an id no rule defines: UNCLASSIFIED's entry, a bug of ours
    text = rule_text(doc)
    return {
        "id": rule,
        "name": "".join(part.capitalize() for part in rule.split("-")),
        "shortDescription": {"text": doc.summary},
        "fullDescription": {"text": doc.text or doc.summary},
        "help": {"text": text, "markdown": text},
        "helpUri": help_uri(rule),
        "properties": {"tags": [doc.kind]},
    }


def help_uri(rule: str) -> str:
    """Where a rule is documented: ``docs/rules.md#<id>`` in this project's repository (the
    package's ``Documentation`` URL), or in the checkout the package runs from."""
    from importlib.metadata import PackageNotFoundError, metadata

    from safe_estimators._rulebook import DOCUMENT

    try:
        urls = metadata("safe-estimators").get_all("Project-URL") or []
    except PackageNotFoundError:  # pragma: no cover - run from a source tree
        urls = []
    for url in urls:
        label, _, address = url.partition(",")
        if label.strip().lower() == "documentation" and address.strip():
            return f"{address.strip().rstrip('/')}/{DOCUMENT}#{rule}"
    from pathlib import Path

    checkout = Path(__file__).resolve().parent.parent / DOCUMENT
    return f"{checkout.as_uri()}#{rule}"


def version() -> str:
    """The installed safe-estimators version."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("safe-estimators")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree
        return "0"


# --- codeclimate ----------------------------------------------------------------------------


def codeclimate_issues(entries: Sequence[Entry]) -> list[dict[str, Any]]:
    """GitLab Code Quality: a Code Climate issue per problem (GitLab needs a path and a line:
    a problem without one is placed at line 1 of its file)."""
    issues = []
    for entry in entries:
        issues.append(
            {
                "type": "issue",
                "check_name": rule_of(entry),
                "description": printable(_message(entry) + _placement_note(entry)),
                "categories": ["Bug Risk"],
                "severity": _CODECLIMATE_SEVERITY.get(entry.severity, "major"),
                "fingerprint": _fingerprint(entry),
                "location": {
                    "path": printable(_repository_path(entry.file or entry.source or ".")),
                    "lines": {"begin": entry.line or 1},
                },
            }
        )
    return issues


# --- shared ---------------------------------------------------------------------------------


def write_document(out: TextIO, document: Any) -> None:
    """``document`` as JSON (strict: a NaN or Infinity would break the reader's parser), with
    every credential in its texts cut to its first characters (``masked_texts``)."""
    out.write(json.dumps(masked_texts(document), indent=2, default=str, allow_nan=False) + "\n")


def masked_texts(document: Any) -> Any:
    """A copy of a JSON document with ``mask_text`` applied to every string in it, keys too (a
    file name, a skipped spec, a value quoted in a plan); the document itself when that changes
    nothing. Iterative, and no deeper than ``_MAX_DOCUMENT_DEPTH`` (a cycle json.dumps refuses
    anyway)."""
    if isinstance(document, str):
        return mask_text(document)
    if not isinstance(document, dict | list):
        return document
    root: list[Any] = [document]
    # (container, key, depth) of each value to visit
    stack: list[tuple[Any, Any, int]] = [(root, 0, 0)]
    copied: set[int] = set()
    while stack:
        parent, key, depth = stack.pop()
        value = parent[key]
        if depth > _MAX_DOCUMENT_DEPTH:
            continue
        if isinstance(value, str):
            shown = mask_text(value)
            if shown != value:
                parent[key] = shown
        elif isinstance(value, dict):
            if id(value) not in copied:
                value = parent[key] = {mask_text(k) if isinstance(k, str) else k: v
                                       for k, v in value.items()}  # fmt: skip
                copied.add(id(value))
            stack.extend((value, k, depth + 1) for k in value)
        elif isinstance(value, list):
            if id(value) not in copied:
                value = parent[key] = list(value)
                copied.add(id(value))
            stack.extend((value, i, depth + 1) for i in range(len(value)))
    return root[0]


# Deeper than any document the commands print (a spec is at most _bounds.MAX_DEPTH deep).
_MAX_DOCUMENT_DEPTH = 200


def _message(entry: Entry) -> str:
    """The message with its fix, for formats that show one text."""
    text = entry.message if entry.script else f"{entry.path}: {entry.message}"
    return f"{text} Fix: {entry.hint}" if entry.hint else text


def _bounded(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _fingerprint(entry: Entry) -> str:
    """Stable across runs and line moves: the file, the path (or rule) and the message."""
    import hashlib

    key = json.dumps([entry.file or entry.source, entry.path, entry.rule, entry.message])
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def _repository_path(file: str) -> str:
    """A path as CI tools want it: relative to the working folder (the repository's root in
    CI and pre-commit) where it is inside it, with forward slashes."""
    if os.path.isabs(file):
        try:
            relative = os.path.relpath(file)
        except ValueError:  # another drive on Windows
            return file
        if not relative.startswith(".."):
            file = relative
    return os.path.normpath(file).replace(os.sep, "/") if file else file


class Reporter:
    """Where a command's problems go in its ``--format``: text and github lines as they come
    (between the command's other output), a SARIF or Code Climate document at the end."""

    def __init__(self, format: str, out: TextIO) -> None:
        self.format = format
        self.out = out
        self.entries: list[Entry] = []
        self.omitted = 0  # problems past MAX_RUN_RESULTS, left out of the document
        self.printed = False  # the command printed its own document (schema)

    @property
    def human(self) -> bool:
        """Whether the command's own text (valid, a plan, a table) is printed too."""
        return self.format in ("text", "github")

    def problems(self, source: str | None, problems: Sequence[Problem]) -> None:
        self.add(located(source, problems))

    def add(self, entries: Sequence[Entry]) -> None:
        """The problems of one file (a spec, a script)."""
        if self.format == "text":
            write_text(self.out, entries)
        elif self.format == "github":
            write_github(self.out, entries)
        else:
            kept = bounded_entries(entries)
            room = max(0, MAX_RUN_RESULTS - len(self.entries))
            self.omitted += max(0, len(kept) - room)
            self.entries += kept[:room]

    def finish(self, failure: str | None = None) -> None:
        """Print the document of a document format; ``failure``: the run did not finish."""
        if self.printed:
            return
        entries = self.entries
        if self.omitted:
            entries = [*entries, _run_omitted_entry(self.omitted)]
        if self.format == "sarif":
            write_document(self.out, sarif_log(entries, failure=failure))
        elif self.format == "codeclimate":
            write_document(self.out, codeclimate_issues(entries))
        elif self.format == "github" and failure is not None:
            failed = f"::error title=safe-estimators::{escape_data(printable(failure))}"
            write_command(self.out, failed)


# --- bounded documents ----------------------------------------------------------------------


def bounded_entries(entries: Sequence[Entry]) -> list[Entry]:
    """One file's problems as a document holds them: the first MAX_PROBLEMS, and a note saying
    how many more there are."""
    if len(entries) <= MAX_PROBLEMS:
        return list(entries)
    return [*entries[:MAX_PROBLEMS], _omitted_entry(entries[0].source, entries)]


def _omitted_entry(source: str | None, entries: Sequence[Entry]) -> Entry:
    more = len(entries) - MAX_PROBLEMS
    return Entry(
        source,
        "<output>",
        f"... and {more:,} more problems in this file (the first {MAX_PROBLEMS} are shown).",
        "fix these and run again, or run validate on the file for its text output.",
        "warning",
        rule=OMITTED_RULE,
        file=source,
    )


def _run_omitted_entry(more: int) -> Entry:
    return Entry(
        None,
        "<output>",
        f"... and {more:,} more problems in other files (the first {MAX_RUN_RESULTS:,} are "
        "shown).",
        "fix these and run again, or check fewer files at once.",
        "warning",
        rule=OMITTED_RULE,
    )


# --- every printed line: safe in a CI log ----------------------------------------------------

# What the GitHub Actions runner reads as a command in a line of a step's output (actions/runner,
# src/Runner.Common/ActionCommand.cs): ``::name props::data`` once the line's leading white space
# is trimmed (TryParseV2), and the legacy ``##[name props]data`` anywhere in the line (TryParse);
# a ``::stop-commands::TOKEN`` makes it ignore every command up to ``::TOKEN::``. Each is broken
# by writing its first character as ``\u0023`` or ``\u003a``: a JSON document and a Python
# program (port's) read back the same text (the character is inside a string literal there),
# and a person reads the escape as text and control characters read.
_LEGACY_COMMAND = "##["
_LEGACY_ESCAPED = "\\u0023#["
_COMMAND_START = "::"
_COLON_ESCAPED = "\\u003a"


def ci_safe_line(line: str) -> str:
    """``line`` (one line, without its end) as it may be printed in a CI log: every control or
    separator character escaped (``printable``: ESC, BEL, CR, U+0085, U+2028, bidi controls,
    every Unicode space but " "), and no workflow command. Applying it twice changes nothing."""
    line = printable(line)
    if _LEGACY_COMMAND in line:
        line = line.replace(_LEGACY_COMMAND, _LEGACY_ESCAPED)
    # After printable, " " is the only character left that the runner's TrimStart removes.
    stripped = line.lstrip(" ")
    if stripped.startswith(_COMMAND_START):
        line = line[: len(line) - len(stripped)] + _COLON_ESCAPED + stripped[1:]
    return line


def write_command(out: TextIO, line: str) -> None:
    """Write one of our own workflow commands (an annotation of ``--format github``), whose
    values ``github_line`` escaped: the one kind of line that stays a command."""
    command = printable(line).replace(_LEGACY_COMMAND, _LEGACY_ESCAPED)
    if isinstance(out, CiSafeStream):
        out.write_command(command)
    else:
        out.write(command + "\n")


class CiSafeStream(io.TextIOBase):
    """A text stream that passes every line written to it on through ``ci_safe_line``.

    ``_cli`` puts one in front of stdout and stderr for the whole of a command: every print, ours
    or a library's, is one line of a CI log, whatever the format (text, JSON, SARIF, a plan, a
    port's program, a usage error). A line is passed on when its end is written (the checks see
    the whole line); ``close_line`` passes on what is left.
    """

    def __init__(self, raw: TextIO) -> None:
        self.raw = raw
        self._partial = ""
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            if "\n" not in text:
                self._partial += text
                return len(text)
            lines = (self._partial + text).split("\n")
            self._partial = lines.pop()
            self.raw.write("\n".join(map(ci_safe_line, lines)) + "\n")
        return len(text)

    def write_command(self, command: str) -> None:
        """Write ``command`` as a line of its own, unchanged (see ``write_command``)."""
        with self._lock:
            if self._partial:
                self.raw.write(ci_safe_line(self._partial) + "\n")
                self._partial = ""
            self.raw.write(command + "\n")

    def close_line(self) -> None:
        """Pass on a last line written without its end."""
        with self._lock:
            if self._partial:
                partial, self._partial = self._partial, ""
                self.raw.write(ci_safe_line(partial))

    def flush(self) -> None:
        self.raw.flush()

    def close(self) -> None:
        """Close the stream written to as well (``_cli`` closes stderr when the reader left)."""
        self.close_line()
        self.raw.close()
        super().close()

    def __del__(self) -> None:
        pass  # IOBase's closes the stream; the one written to is not this one's to close

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self.raw.isatty()

    def fileno(self) -> int:
        return self.raw.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self.raw.encoding

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return self.raw.errors
