"""Problems found in a job configuration, and the one exception that carries them."""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import attrs

if TYPE_CHECKING:
    from instance_catalog._suggest import CloseMatches

# Shown in a ConfigError's message (all of them stay in ``problems``); see _bounds.
MAX_PROBLEMS = 50

# Values quoted in messages: enough to recognise the value, never a whole file in a CI log.
MAX_QUOTED = 80

# A problem's message and fix (and path) as stored, whatever they quote: a word longer than
# MAX_WORD characters (a value quoted whole: no word of ours is a tenth of it) is cut to its
# first MAX_QUOTED, and the text to MAX_MESSAGE, the longest line the text output prints. A
# multi-megabyte instance_type made 1.8 MB of --json output (issue 32).
MAX_WORD = 256
MAX_MESSAGE = 2_000

Severity = Literal["error", "warning"]


def _masked(text: str) -> str:
    """Every part of a problem may quote the user's values: none shows more than the first
    characters of a suspected credential (``_secret_formats.mask_text``), nor more than the
    first characters of a value quoted whole (``shortened``)."""
    from safe_estimators._secret_formats import mask_text

    if not isinstance(text, str):
        return text
    text = mask_text(text)
    return shortened(text) if len(text) > MAX_WORD else text


def shortened(text: str) -> str:
    """``text`` (a message) with each word over ``MAX_WORD`` characters cut to its first
    ``MAX_QUOTED`` and its length, and the whole to ``MAX_MESSAGE`` characters."""
    if len(text) > MAX_WORD:
        text = _long_word().sub(_cut_word, text)
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


@functools.cache
def _long_word() -> re.Pattern[str]:
    return re.compile(rf"\S{{{MAX_WORD + 1},}}")


def _cut_word(word: re.Match[str]) -> str:
    return f"{word.group()[: MAX_QUOTED - 1]}… ({len(word.group()):,} characters)"


@attrs.frozen
class Fix:
    """One fix of a problem as a change to the job: the options it sets (``changes``, option
    name -> value) and how the hint says it (``text``). The checks apply it and check the job
    again before they offer it (``_resolve.check``), so a fix that is itself refused is never
    named.

    An option name may be dotted, into a mapping option (``distribution.mpi.processes_per_host``,
    ``environment.GPU_NUM_DEVICES``); the value ``REMOVE`` takes the option (or the key) out.
    ``setting`` and ``removing`` make the common ones with their words."""

    changes: tuple[tuple[str, Any], ...]
    text: str


class _Removed:
    """The value of a change that removes an option (``Fix.changes``)."""

    def __repr__(self) -> str:
        return "REMOVE"


REMOVE: Any = _Removed()


def setting(*changes: tuple[str, Any], why: str = "") -> Fix:
    """A fix that sets options: ``setting(("max_wait", 3600))`` says ``set max_wait=3600``."""
    words = ", ".join(f"{name}={value!r}" for name, value in changes)
    return Fix(tuple(changes), f"set {words}" + (f" ({why})" if why else ""))


def removing(*names: str, why: str = "") -> Fix:
    """A fix that removes options (or keys of a mapping option): ``remove disable_profiler``."""
    words = " and ".join(names)
    return Fix(tuple((name, REMOVE) for name in names), f"remove {words}" + (
        f" ({why})" if why else ""
    ))


def changed(options: Mapping[str, Any], changes: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """``options`` (a job's keyword arguments, or a mapping option) with a fix's changes made:
    a dotted name sets (or, with ``REMOVE``, removes) a key inside a mapping, copied on the way
    down. A name that goes through something other than a mapping raises TypeError."""
    result = dict(options)
    for name, value in changes:
        head, _, rest = name.partition(".")
        if rest:
            inner = result.get(head)
            if inner is None:
                inner = {}
            if not isinstance(inner, Mapping):
                raise TypeError(f"{head} is not a mapping: cannot change {name}")
            result[head] = changed(inner, [(rest, value)])
        elif value is REMOVE:
            result.pop(head, None)
        else:
            result[head] = value
    return result


@attrs.frozen
class Problem:
    """One thing wrong (or worth a warning) in a job configuration.

    ``path`` is dotted, as the user wrote it (``model_parallel.tensor_parallel_degree``,
    ``environment.GPU_NUM_DEVICES``); ``message`` states what is wrong with the numbers involved;
    ``hint`` says how to fix it. A suspected credential in any of them is cut to its first
    characters when the problem is made, so no output can print one.

    ``rule`` is the id of the rule that found it (``spot-training``), set where the rule is run
    (``tagged``): the id SARIF, ``lint`` and ``safe-estimators rule`` use. ``at`` is where
    the problem is written when that is in a file the spec names, not in the spec (a syntax
    error in a model's config.json): the file, line and column (1-based). Two problems that say
    the same about the same path are equal whichever rule found them, wherever.
    """

    path: str = attrs.field(converter=_masked)
    message: str = attrs.field(converter=_masked)
    hint: str = attrs.field(default="", converter=_masked)
    severity: Severity = "error"
    rule: str | None = attrs.field(default=None, eq=False)
    at: tuple[str, int, int] | None = attrs.field(default=None, eq=False)
    # Fixes as changes to the job, offered before ``hint`` once each is checked (not compared:
    # two problems that say the same are the same problem).
    fixes: tuple[Fix, ...] = attrs.field(default=(), eq=False)

    def __attrs_post_init__(self) -> None:
        # The hint says the fixes first, then the rule's own way out: a problem read straight
        # from its rule says how to fix it too (the checks keep only the fixes that hold).
        if self.fixes and not self.hint.startswith(self.fixes[0].text):
            object.__setattr__(self, "hint", _masked(fix_hint(self.fixes, self.hint)))

    def __str__(self) -> str:
        text = f"{self.path}: {self.message}"
        if self.hint:
            text += f" Fix: {self.hint}"
        return text


def fix_hint(fixes: Iterable[Fix], own: str) -> str:
    """A hint from fixes and the rule's own words: each fix, then ``own``, joined by "; or "
    and ended with a period."""
    hint = "; or ".join([*(fix.text for fix in fixes), *([own] if own else [])])
    return hint + "." if hint and hint[-1] not in ".?!" else hint


def own_hint(problem: Problem) -> str:
    """A problem's hint without the words of its fixes (what ``fix_hint`` added)."""
    said = "; or ".join(fix.text for fix in problem.fixes)
    if not problem.fixes or not problem.hint.startswith(said):
        return problem.hint
    rest = problem.hint[len(said):]
    return "" if rest == "." else rest.removeprefix("; or ")


def warning(path: str, message: str, hint: str = "", fixes: tuple[Fix, ...] = ()) -> Problem:
    return Problem(path, message, hint, "warning", fixes=fixes)


_F = TypeVar("_F", bound=Callable[..., Any])

# The functions marked with ``problem_source``, by rule id (filled as their modules load).
SOURCES: dict[str, Callable[..., Any]] = {}
# The rule functions that found a problem in this process, by id: a report documents the rules
# it names from these without importing every rule module to find them (see _rulebook).
FOUND_BY: dict[str, Callable[..., Any]] = {}


def problem_source(rule: str, doc: str = "") -> Callable[[_F], _F]:
    """Mark a function that finds problems outside the rule tables (reading the file, the
    spec's options) as the rule ``rule``: ``doc`` (else its docstring) is the rule's
    documentation, and its callers tag what it returns with ``tagged(function, problems)``."""

    def mark(function: _F) -> _F:
        function.__rule_id__ = rule  # type: ignore[attr-defined]
        function.__rule_doc__ = doc  # type: ignore[attr-defined]
        SOURCES[rule] = function
        return function

    return mark


def rule_id(rule: Callable[..., Any]) -> str:
    """A rule's id, from the function that is the rule: ``spot_training`` is
    ``spot-training``; a module that holds one family of rules names its prefix in
    ``RULE_PREFIX`` (``_rule_ddp`` in the SMP v1 rules is ``smp-v1-ddp``); a problem source
    names its own (``problem_source``)."""
    import sys

    marked = getattr(rule, "__rule_id__", None)
    if isinstance(marked, str):
        return marked
    name = rule.__name__.lstrip("_").removeprefix("rule_").replace("_", "-")
    prefix = getattr(sys.modules.get(rule.__module__), "RULE_PREFIX", "")
    return f"{prefix}-{name}" if prefix and not name.startswith(prefix) else name


def tagged(rule: Callable[..., Any] | str, problems: Iterable[Problem]) -> list[Problem]:
    """``problems`` with the id of ``rule`` (a rule function, or an id) where they have none
    yet: a rule that calls another keeps the inner one's id."""
    found = list(problems)
    if not found or all(p.rule is not None for p in found):
        return found  # most rules find nothing: no id to make
    name = rule if isinstance(rule, str) else rule_id(rule)
    if not isinstance(rule, str):
        FOUND_BY[name] = rule
    return [p if p.rule is not None else _with_rule(p, name) for p in found]


def found_by(problem: Problem, rule: Callable[..., Any]) -> Problem:
    """``problem`` with the id of ``rule``, the function that found it, unless it has one: the
    rule tables' runners call this per problem, so a rule that finds nothing costs nothing."""
    if problem.rule is not None:
        return problem
    name = rule_id(rule)
    FOUND_BY[name] = rule
    return _with_rule(problem, name)


def run_rules(rules: Iterable[Callable[[Any], Iterable[Problem]]], subject: Any) -> list[Problem]:
    """Every problem the ``rules`` of a table find in ``subject``, in the table's order, each
    with the id of the rule that found it."""
    return [found_by(problem, rule) for rule in rules for problem in rule(subject)]


def _with_rule(problem: Problem, rule: str) -> Problem:
    # A copy with the field set, not attrs.evolve: evolve would mask the texts again (they were
    # masked when the problem was made), a cost paid per problem of a spec with thousands.
    copied = copy.copy(problem)
    object.__setattr__(copied, "rule", rule)
    return copied


class ConfigError(ValueError):
    """A job configuration that SageMaker would reject or run wrongly.

    Raised before any estimator is built. ``problems`` holds every problem found, not only the
    first; ``str()`` lists them one per line.
    """

    def __init__(self, problems: Iterable[Problem], *, source: str | None = None):
        self.problems: tuple[Problem, ...] = tuple(problems)
        self.source = source
        count = len(self.problems)
        where = source or "the training job configuration"
        head = f"{count} problem{'s' if count != 1 else ''} in {where}:"
        shown, more = self.problems[:MAX_PROBLEMS], count - MAX_PROBLEMS
        lines = [head, *(f"  - {p}" for p in shown)]
        if more > 0:
            lines.append(f"  ... and {more:,} more (the first {MAX_PROBLEMS} are shown)")
        super().__init__("\n".join(lines))

    def _render_traceback_(self) -> list[str]:
        """What IPython and Jupyter show for this error: its problem list, not a traceback
        (IPython calls this hook before any traceback formatter, rich's included)."""
        head, *rest = str(self).splitlines()
        return [f"{type(self).__name__}: {head}", *rest]

    @property
    def paths(self) -> list[str]:
        """The dotted paths of the problems, in order."""
        return [p.path for p in self.problems]


# difflib compares every pair of characters: past this length no option name is close anyway.
_MAX_SUGGESTED_LENGTH = 100


def closest(word: object, choices: Iterable[str]) -> str | None:
    """The choice closest to ``word`` (difflib's ratio of 0.6 or more), or None."""
    if not isinstance(word, str) or len(word) > _MAX_SUGGESTED_LENGTH:
        return None
    names = tuple(choices)
    if len(names) < _INDEXED:
        import difflib  # only for a name that is not known: most specs have none

        close = difflib.get_close_matches(word, names, n=1, cutoff=0.6)
    else:  # the option names, the catalog: difflib's answer from an index (instance_catalog)
        close = _index(names)(word, n=1, cutoff=0.6)
    return close[0] if close else None


_INDEXED = 40  # choices from which the index pays for itself
_INDEXES: dict[frozenset[str], CloseMatches] = {}


def _index(names: tuple[str, ...]) -> CloseMatches:
    # By the set of names: the one closest name does not depend on their order (difflib
    # breaks a tie of scores by the larger name).
    key = frozenset(names)
    if key not in _INDEXES:
        from instance_catalog._suggest import CloseMatches

        if len(_INDEXES) >= 16:
            _INDEXES.clear()
        _INDEXES[key] = CloseMatches(sorted(key))
    return _INDEXES[key]


def did_you_mean(word: object, choices: Iterable[str]) -> str:
    """Return a hint naming the closest choice to ``word``, or an empty string."""
    close = closest(word, choices)
    return f"did you mean {close!r}?" if close else ""


def count(number: object, noun: str) -> str:
    """``count(1, "GPU") == "1 GPU"``, ``count(4, "GPU") == "4 GPUs"``."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def join_path(*parts: object) -> str:
    """Join path parts with dots, skipping empty ones (``join_path("", "a") == "a"``)."""
    return ".".join(str(p) for p in parts if p not in ("", None))


def value_at(data: object, path: str) -> object:
    """What a dotted path names in nested mappings (``value_at(d, "a.b") == d["a"]["b"]``), or
    None where one of its keys is missing."""
    for key in path.split("."):
        # A dict or a missing key first: an isinstance check against the ABC costs ten times more.
        if type(data) is not dict and (data is None or not isinstance(data, Mapping)):
            return None
        data = data.get(key)  # type: ignore[attr-defined]
    return data
