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
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from typing import Any, TextIO

import attrs

from safe_estimators._bounds import MAX_PROBLEMS, printable
from safe_estimators._problems import Problem

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


@attrs.frozen
class Entry:
    """One problem as reported: what the command was given, the problem, the id of the rule
    that found it, and where it is written (``file``, ``line``, ``column``; None where that is
    not known). ``written``: the dotted path written at that line when it is a parent of
    ``path`` (a missing key is placed at the key that would hold it). ``script``: a finding in a
    training script, whose ``path`` is the script's file, not a dotted spec path."""

    source: str | None
    path: str
    message: str
    hint: str = ""
    severity: str = "error"
    rule: str | None = None
    file: str | None = None
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
        from safe_estimators._locations import Locator

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
        properties.append(f"file={escape_property(_repository_path(entry.file))}")
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
    for entry in entries:
        out.write(github_line(entry) + "\n")


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

    shown = _repository_path(file)
    if os.path.isabs(shown):
        return {"uri": "file://" + url_quote(shown.replace(os.sep, "/"))}
    return {"uri": url_quote(shown.replace(os.sep, "/")), "uriBaseId": "%SRCROOT%"}


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
                    "path": _repository_path(entry.file or entry.source or "."),
                    "lines": {"begin": entry.line or 1},
                },
            }
        )
    return issues


# --- shared ---------------------------------------------------------------------------------


def write_document(out: TextIO, document: Any) -> None:
    # Strict JSON: a NaN or Infinity would break the reader's parser.
    out.write(json.dumps(document, indent=2, default=str, allow_nan=False) + "\n")


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
        self.printed = False  # the command printed its own document (schema)

    @property
    def human(self) -> bool:
        """Whether the command's own text (valid, a plan, a table) is printed too."""
        return self.format in ("text", "github")

    def problems(self, source: str | None, problems: Sequence[Problem]) -> None:
        self.add(located(source, problems))

    def add(self, entries: Sequence[Entry]) -> None:
        if self.format == "text":
            write_text(self.out, entries)
        elif self.format == "github":
            write_github(self.out, entries)
        else:
            self.entries += entries

    def finish(self, failure: str | None = None) -> None:
        """Print the document of a document format; ``failure``: the run did not finish."""
        if self.printed:
            return
        if self.format == "sarif":
            write_document(self.out, sarif_log(self.entries, failure=failure))
        elif self.format == "codeclimate":
            write_document(self.out, codeclimate_issues(self.entries))
        elif self.format == "github" and failure is not None:
            self.out.write(f"::error title=safe-estimators::{escape_data(printable(failure))}\n")
