"""A recipe's interpolations, resolved as data: never a channel to the machine that checks it.

A recipe and its overrides come from a pull request, and ``validate`` runs on a CI runner that
holds secrets. OmegaConf's resolvers read more than the document: ``oc.env`` the process's
environment, ``oc.decode`` and ``oc.create`` turn text into new interpolations, and a resolver
registered by the program at hand can read anything. The SDK resolves the recipe at build
(``PyTorch._recipe_resolve_and_save`` calls ``OmegaConf.resolve``) on the machine that builds the
job, with its four arithmetic resolvers (``_setup_omegaconf_resolvers``) and OmegaConf's
defaults; what such a value becomes there cannot be known here. So, when checking:

- a value that calls a resolver other than the SDK's four and OmegaConf's document-only ones
  (``oc.select``, ``oc.dict.keys``, ``oc.dict.values``, ``oc.coerce``, ``oc.deprecated``), or one
  whose resolver name is itself an interpolation, is replaced by ``UNRESOLVED`` and reported,
  its text shown as a secret is (``outside_values``);
- resolution runs with a registry that holds only those resolvers (``sandboxed``), so nothing
  else can run whatever the detection misses; the SDK's four are wrapped to refuse results
  longer than ``MAX_RESOLVER_RESULT`` before computing them, and pass ``UNRESOLVED`` through;
- nesting is bounded (``MAX_NESTING`` levels of ``${``: OmegaConf's parser recurses per level),
  and so is growth (``growth_problem``): the characters a value resolves to, counting a
  reference as its target and a resolver call as the most its resolver may return, and the
  evaluations resolution makes (OmegaConf does not remember a reference's value, so a chain of
  values that each name the previous one twice costs 2^n evaluations even when nothing grows).
"""

from __future__ import annotations

import contextlib
import math
import re
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import attrs

from safe_estimators._bounds import MAX_INT_DIGITS

# What a value that reads outside the document holds while checking (and in the recipe plan
# hands the SDK): text no real value has, so that whatever is derived from it is found.
UNRESOLVED = "<resolved at build>"

# sagemaker/pytorch/estimator.py, _setup_omegaconf_resolvers (the same four in
# sagemaker/modules/train/sm_recipes/utils.py for ModelTrainer).
SDK_RESOLVERS = ("multiply", "divide_ceil", "divide_floor", "add")
# OmegaConf's default resolvers that read only the document being resolved.
DOCUMENT_RESOLVERS = ("oc.select", "oc.dict.keys", "oc.dict.values", "oc.coerce", "oc.deprecated")

# What one arithmetic resolver call may return: a number of a hyperparameter's length (2,500
# characters, CreateTrainingJob's limit), or a string or list that long. The SDK's resolvers
# compute numbers; ``${multiply:'aaaaaaaaaa',45000000}`` made 450 MB.
MAX_RESOLVER_RESULT = MAX_INT_DIGITS
_MAX_RESULT_BITS = int(MAX_RESOLVER_RESULT * 3.33)
# The longest value resolution may make: interpolations that repeat each other grow without end.
MAX_RESOLVED_CHARS = 100_000
# Interpolations evaluated in one resolution, counting each reference's target again (an AWS
# recipe makes a few hundred; 10,000 take about a second).
MAX_EVALUATIONS = 10_000
# ``${`` inside ``${``: AWS's recipes nest two deep.
MAX_NESTING = 16


@attrs.frozen
class Outside:
    """A value that reads outside the document: where, its text, and the resolvers it calls."""

    path: tuple[str, ...]
    text: str
    resolvers: tuple[str, ...]


def nesting(text: str) -> int:
    """How deep ``${`` nests in ``text`` (an over-estimate: escapes and quotes are not read)."""
    depth = deepest = 0
    for mark in _OPEN_OR_CLOSE.finditer(text):
        if mark.group() == "${":
            depth += 1
            deepest = max(deepest, depth)
        elif depth:
            depth -= 1
    return deepest


_OPEN_OR_CLOSE = re.compile(r"\$\{|\}")


def strings(root: Any) -> Iterator[tuple[tuple[str, ...], str]]:
    """Every string value of plain data with its path, iteratively, in document order (the
    order OmegaConf resolves them in)."""
    stack: list[tuple[tuple[str, ...], Any]] = [((), root)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, Mapping):
            stack += reversed([((*path, str(k)), v) for k, v in value.items()])
        elif isinstance(value, list):
            stack += reversed([((*path, str(i)), v) for i, v in enumerate(value)])
        elif isinstance(value, str):
            yield path, value


def nesting_problem(root: Any) -> tuple[tuple[str, ...], str] | None:
    """The first value whose interpolations nest deeper than ``MAX_NESTING``, and why."""
    for path, text in strings(root):
        depth = nesting(text)
        if depth > MAX_NESTING:
            return path, (
                f"nests interpolations {depth} deep; at most {MAX_NESTING} are read (OmegaConf's "
                "parser recurses once per level)."
            )
    return None


def resolvers_called(text: str) -> tuple[str, ...]:
    """The resolvers ``text`` calls, by OmegaConf's own grammar (a name made by an
    interpolation is ``${...}``); ``("<unparsable>",)`` for text the grammar refuses."""
    from omegaconf.grammar.gen.OmegaConfGrammarParser import OmegaConfGrammarParser
    from omegaconf.grammar_parser import parse

    try:
        tree = parse(text)
    except Exception:  # GrammarParseError: OmegaConf refuses it as well, at resolution
        return ("<unparsable>",)
    found: list[str] = []
    stack: list[Any] = [tree]  # ANTLR's untyped parse tree
    while stack:
        node = stack.pop()
        if isinstance(node, OmegaConfGrammarParser.InterpolationResolverContext):
            name = node.resolverName()
            dynamic = name is not None and name.interpolation()
            found.append("${...}" if dynamic or name is None else name.getText())
        stack += list(node.getChildren()) if hasattr(node, "getChildren") else []
    return tuple(dict.fromkeys(found))


def outside_values(root: Any) -> list[Outside]:
    """The string values of plain data (a recipe merged with its overrides, not resolved) that
    call a resolver reading outside the document."""
    allowed = set(SDK_RESOLVERS) | set(DOCUMENT_RESOLVERS)
    found = []
    for path, text in strings(root):
        if "${" in text:
            outside = tuple(r for r in resolvers_called(text) if r not in allowed)
            if outside:
                found.append(Outside(path, text, outside))
    return sorted(found, key=lambda o: o.path)


def replaced(root: Any, paths: set[tuple[str, ...]]) -> Any:
    """``root`` (plain data) with the values at ``paths`` replaced by ``UNRESOLVED``."""
    if not paths:
        return root

    def copy(path: tuple[str, ...], value: Any) -> Any:
        if path in paths:
            return UNRESOLVED
        if isinstance(value, Mapping):
            return {k: copy((*path, str(k)), v) for k, v in value.items()}
        if isinstance(value, list):
            return [copy((*path, str(i)), v) for i, v in enumerate(value)]
        return value

    return copy((), root)  # depth bounded: the recipe was checked for nesting when read


def unresolved_paths(data: Any) -> list[tuple[str, ...]]:
    """Where resolved data holds ``UNRESOLVED`` (directly, or in text made from it)."""
    return sorted(path for path, text in strings(data) if UNRESOLVED in text)


# --- growth ---------------------------------------------------------------------------------

_INNERMOST = re.compile(r"\$\{([^${}]*)\}")


def growth_problem(root: Any) -> tuple[tuple[str, ...], str] | None:
    """The first value whose resolution would make more than ``MAX_RESOLVED_CHARS`` characters,
    or a document whose resolution would evaluate more than ``MAX_EVALUATIONS``
    interpolations (its path and why), or None. Both are over-estimates: a reference counts as
    its target's whole size, a resolver call as the most it may return, and a reference to a
    value not resolved yet as its target's work (OmegaConf resolves values in document order,
    in place: a value named after it is resolved already; one named before it is evaluated
    again each time)."""
    sizes: dict[tuple[str, ...], tuple[int, int]] = {}
    visiting: set[tuple[str, ...]] = set()
    done: set[tuple[str, ...]] = set()  # resolved in place already

    def node(path: tuple[str, ...]) -> Any:
        value = root
        for key in path:
            if isinstance(value, Mapping) and key in value:
                value = value[key]
            elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
                value = value[int(key)]
            else:
                return None
        return value

    def target(where: tuple[str, ...], key: str) -> tuple[str, ...]:
        if key.startswith("."):
            dots = len(key) - len(key.lstrip("."))
            base = where[: max(0, len(where) - (dots - 1))]
            return base + tuple(k for k in key.lstrip(".").split(".") if k)
        parts = tuple(key.split("."))
        if parts[0] in ("recipes", "training") and parts[0] not in root:
            parts = parts[1:]  # the SDK's second and third attempts wrap the recipe in that key
        return parts

    def measure(path: tuple[str, ...]) -> tuple[int, int]:
        """(characters, evaluations) of the value at ``path``, resolved."""
        if path in sizes:
            return sizes[path]
        if path in visiting:
            return (0, 1)  # a cycle: OmegaConf refuses it
        visiting.add(path)
        value = node(path)
        chars = work = 0
        if isinstance(value, Mapping):
            for k in value:
                c, w = measure((*path, str(k)))
                chars, work = chars + c + len(str(k)) + 4, work + w
        elif isinstance(value, list):
            for i in range(len(value)):
                c, w = measure((*path, str(i)))
                chars, work = chars + c + 2, work + w
        elif isinstance(value, str) and "${" in value:
            chars, work = text_measure(path[:-1], value)
        else:
            chars = len(str(value))
        visiting.discard(path)
        sizes[path] = (min(chars, MAX_RESOLVED_CHARS + 1), min(work, MAX_EVALUATIONS + 1))
        return sizes[path]

    def reference(where: tuple[str, ...], key: str) -> tuple[int, int]:
        if not key:
            return 0, 0
        path = target(where, key)
        chars, work = measure(path)
        return chars, 0 if path in done else work

    def text_measure(where: tuple[str, ...], text: str) -> tuple[int, int]:
        chars = work = 0
        while chars <= MAX_RESOLVED_CHARS and work <= MAX_EVALUATIONS:
            found = _INNERMOST.search(text)
            if found is None:
                return chars + len(text), work
            inner = found.group(1).strip()
            name, colon, arguments = inner.partition(":")
            work += 1
            if not colon:
                c, w = reference(where, inner)
            elif name.strip() in DOCUMENT_RESOLVERS:
                c, w = reference(where, arguments.split(",", 1)[0].strip().strip("'\""))
                c += len(arguments)  # a default, at most the arguments' text
            else:  # the SDK's arithmetic (bounded when called); anything else is not called
                c, w = MAX_RESOLVER_RESULT, 0
            chars, work = chars + c, work + w
            text = text[: found.start()] + text[found.end() :]
        return chars, work

    total = 0
    for path, text in strings(root):
        if "${" not in text:
            done.add(path)
            continue
        sizes.pop(path, None)  # measured again now that the values before it are resolved
        chars, work = measure(path)
        done.add(path)
        if chars > MAX_RESOLVED_CHARS:
            return path, (
                f"would resolve to more than {MAX_RESOLVED_CHARS:,} characters: its "
                "interpolations repeat values that repeat others."
            )
        total += work
        if total > MAX_EVALUATIONS:
            return path, (
                f"takes the recipe's resolution past {MAX_EVALUATIONS:,} evaluations of "
                "interpolations: its references repeat values that repeat others (OmegaConf "
                "evaluates a reference again each time it is named)."
            )
    return None


# --- resolving ------------------------------------------------------------------------------


class TooLarge(ValueError):
    """An arithmetic resolver call whose result would be longer than ``MAX_RESOLVER_RESULT``."""


def _length(value: Any) -> int | None:
    """Characters (or items) of a value a resolver would repeat, None for a number."""
    if isinstance(value, str | list | tuple):
        return len(value)
    return None if isinstance(value, int | float) else len(str(value))


def _check(name: str, arguments: tuple[Any, ...]) -> None:
    for value in arguments:
        if isinstance(value, int) and value.bit_length() > _MAX_RESULT_BITS:
            raise TooLarge(f"{name} is given a number of more than {MAX_RESOLVER_RESULT:,} digits")
    if name == "multiply" and len(arguments) == 2:
        x, y = arguments
        for text, times in ((x, y), (y, x)):
            length = _length(text)
            made = length * times if length is not None and isinstance(times, int) else 0
            if made > MAX_RESOLVER_RESULT:
                raise TooLarge(
                    f"multiply would repeat {length:,} characters {times:,} times "
                    f"({made:,}; at most {MAX_RESOLVER_RESULT:,} are made)"
                )
        both = isinstance(x, int) and isinstance(y, int)
        if both and x.bit_length() + y.bit_length() > _MAX_RESULT_BITS:
            raise TooLarge(
                f"multiply would make a number of over {MAX_RESOLVER_RESULT:,} digits"
            )


def _guarded(name: str, function: Callable[..., Any], refused: list[str]) -> Callable[..., Any]:
    def call(*arguments: Any) -> Any:
        if any(isinstance(a, str) and UNRESOLVED in a for a in arguments):
            return UNRESOLVED  # derived from a value resolved at build: unknown as well
        try:
            _check(name, arguments)
        except TooLarge as exc:
            refused.append(str(exc))
            raise
        return function(*arguments)

    return call


# The SDK's four, as it registers them.
_SDK_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "multiply": lambda x, y: x * y,
    "divide_ceil": lambda x, y: _ceil(x / y),
    "divide_floor": lambda x, y: _floor(x / y),
    "add": lambda *numbers: sum(numbers),
}


def _ceil(value: float) -> int:
    return math.ceil(value)


def _floor(value: float) -> int:
    return math.floor(value)


_LOCK = threading.Lock()


@contextlib.contextmanager
def sandboxed() -> Iterator[list[str]]:
    """While this runs, OmegaConf resolves with the SDK's four resolvers (bounded) and its
    document-only ones, nothing else; yields the list of the calls refused as too large.

    OmegaConf keeps one registry for the process (``BaseContainer._resolvers``); it is swapped
    for this one and back under a lock, so two checks never see each other's. The SDK's own
    resolution (a real build) never runs inside this: a plan hands it a recipe resolved here.
    """
    from omegaconf import OmegaConf
    from omegaconf.basecontainer import BaseContainer
    from omegaconf.omegaconf import register_default_resolvers

    refused: list[str] = []
    with _LOCK:
        saved = BaseContainer._resolvers
        try:
            BaseContainer._resolvers = {}
            register_default_resolvers()
            defaults = BaseContainer._resolvers
            BaseContainer._resolvers = {k: defaults[k] for k in DOCUMENT_RESOLVERS if k in defaults}
            with warnings.catch_warnings():  # OmegaConf 2.4 calls this way of registering old
                warnings.simplefilter("ignore", UserWarning)
                for name in SDK_RESOLVERS:
                    function = _guarded(name, _SDK_FUNCTIONS[name], refused)
                    OmegaConf.register_new_resolver(name, function, replace=True)
            yield refused
        finally:
            BaseContainer._resolvers = saved


def register_sdk_resolvers() -> None:
    """The SDK's four resolvers in OmegaConf's registry, as it registers them
    (``_setup_omegaconf_resolvers``: each only if none of that name is there), before it
    resolves a recipe at build; registered here, OmegaConf 2.4's warning that this way of
    registering is old is not printed on every build."""
    from omegaconf import OmegaConf

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for name in SDK_RESOLVERS:
            if not OmegaConf.has_resolver(name):
                OmegaConf.register_new_resolver(name, _SDK_FUNCTIONS[name], replace=True)
