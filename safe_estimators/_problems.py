"""Problems found in a job configuration, and the one exception that carries them."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Literal

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
class Problem:
    """One thing wrong (or worth a warning) in a job configuration.

    ``path`` is dotted, as the user wrote it (``model_parallel.tensor_parallel_degree``,
    ``environment.GPU_NUM_DEVICES``); ``message`` states what is wrong with the numbers involved;
    ``hint`` says how to fix it. A suspected credential in any of them is cut to its first
    characters when the problem is made, so no output can print one.
    """

    path: str = attrs.field(converter=_masked)
    message: str = attrs.field(converter=_masked)
    hint: str = attrs.field(default="", converter=_masked)
    severity: Severity = "error"

    def __str__(self) -> str:
        text = f"{self.path}: {self.message}"
        if self.hint:
            text += f" Fix: {self.hint}"
        return text


def warning(path: str, message: str, hint: str = "") -> Problem:
    return Problem(path, message, hint, "warning")


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
