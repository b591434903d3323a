"""The secret scan compiles its patterns only for a text that may hold a match, and finds
exactly what the one-pass scan it replaced found: that scan (one alternation of every format,
a walk that pushed every value on a stack) is kept here as the reference, and both run over
the corpus, its pieces and generated values.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from secrets_corpus import BENIGN, BENIGN_URIS, CREDENTIALS

from safe_estimators import _secret_formats as secrets
from safe_estimators._secret_formats import SECRET_FORMATS, SpecFileText

PATTERNS = [(kind, pattern) for kind, pattern, _ in SECRET_FORMATS]

# --- the reference: the scan as it was before patterns were compiled on first use ----------

_TOKENS = re.compile("|".join(f"(?:{p})" for _, p in PATTERNS))
_FORMATS = [(kind, re.compile(p)) for kind, p in PATTERNS]
_AWS_ID = re.compile(PATTERNS[0][1])
_AWS_SHAPE = re.compile(r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_URL_PASSWORD = re.compile(
    r":(?<=[A-Za-z0-9+.-]:)//[^\s:/@]{0,256}:"
    r"(?![$%{<*…]|x{1,64}@|(?:password|passwd|pass|pwd|secret)@)(?P<password>[^\s/@…]{1,256})@",
    re.I,
)
_REFERENCE = re.compile(
    r"^(?:arn:aws[a-z-]*:(?:secretsmanager|ssm|kms):|\{\{resolve:|\$\{[^}]*\}$|\$[A-Z_][A-Z0-9_]*$)"
)
_SEPARATORS = re.compile(r"[\s;&?]+")
_QUOTED_ENTRY = re.compile(r"""(['"])([A-Za-z0-9_.-]{1,128})\1: (['"])([^'"\\\n]{1,2500})\3""")
# NAME=value: the name where a word starts, the value up to a separator; one masked already
# ("…" after it) is left alone.
_ASSIGNED = re.compile(
    r"""(?<![A-Za-z0-9_.-])(-{0,2})([A-Za-z_][A-Za-z0-9_.-]{0,127})=([^\s'",;&…]+)(?![^\s'",;&])"""
)


def _reference_assignment(found: re.Match[str]) -> str:
    dashes, name, value = found.group(1), found.group(2), found.group(3)
    if not (secrets.secret_name(name) and _holds_secret(value)):
        return found.group()
    return f"{dashes}{name}={value[: secrets._shown_length(len(value))]}…"


# --name value: the flag where a word starts, a value that is no flag, up to a separator.
_FLAG_VALUE = re.compile(
    r"(?<![A-Za-z0-9_.-])(-{1,2}[A-Za-z_][A-Za-z0-9_.-]{0,127}[ \t]{1,4})"
    r"""([^\s'",;&…-][^\s'",;&…]*)(?!…)"""
)


def _reference_flag_value(found: re.Match[str]) -> str:
    flag, value = found.group(1), found.group(2)
    if not (secrets.secret_name(flag.strip().lstrip("-")) and _holds_secret(value)):
        return found.group()
    return f"{flag}{value[: secrets._shown_length(len(value))]}…"


def reference_tokens(text: str, aws_context: bool = False) -> list[tuple[str, int, int]]:
    spans: list[tuple[int, int, str]] = []
    pos = 0
    while True:
        match = _TOKENS.search(text, pos)
        if match is None:
            break
        kind = next(k for k, p in _FORMATS if p.match(text, match.start()))
        start, end = match.start(), secrets._extent(text, match)
        if kind in secrets._BEFORE:
            start = secrets._start_before(text, start, secrets._BEFORE[kind])
        pos = end
        if kind in secrets._RANDOM and not secrets._random(text[start:end]):
            pos = match.start() + 1
            continue
        spans.append((start, end, kind))
    for url in _URL_PASSWORD.finditer(text):
        start, end = url.span("password")
        spans.append((start, end, secrets.URL_PASSWORD))
    if aws_context:
        for shape in _AWS_SHAPE.finditer(text):
            if secrets._random(shape.group()):
                spans.append((shape.start(), shape.end(), "an AWS secret access key"))
    spans.sort()
    tokens, last = [], -1
    for start, end, kind in spans:
        if start >= last:
            last = end
            tokens.append((kind, start, end))
    return tokens


def reference_mask(text: str) -> str:
    if ": " in text and ("'" in text or '"' in text):
        text = _QUOTED_ENTRY.sub(secrets._masked_entry, text)
    if "=" in text:
        text = _ASSIGNED.sub(_reference_assignment, text)
    text = _FLAG_VALUE.sub(_reference_flag_value, text)
    parts: list[str] = []
    pos = 0
    for _, start, end in reference_tokens(text):
        parts += [text[pos:start], text[start : start + secrets._shown_length(end - start)], "…"]
        pos = end
    return "".join([*parts, text[pos:]]) if parts else text


def _value_kind(text: str, aws_context: bool) -> str | None:
    if _REFERENCE.match(text):
        return None
    return next((kind for kind, _, _ in reference_tokens(text, aws_context)), None)


def _holds_secret(value: str) -> bool:
    text = value.strip()
    return not (
        text.strip('"').lower() in secrets._NOT_SECRETS
        or text.startswith(secrets._POINTER)
        or _REFERENCE.match(text)
    )


def reference_kind(key: str, value: object, aws_context: bool = False) -> str | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    if not isinstance(value, str):
        numeric = secrets.secret_name(key, numeric=True) and str(value) not in secrets._NOT_SECRETS
        return "a password (by its name)" if numeric else None
    words = secrets.name_words(key)
    kind = _value_kind(value, aws_context or secrets._is_aws_secret_name(words))
    if kind:
        return kind
    if secrets.secret_name(key) and _holds_secret(value):
        return "a secret (by its name)"
    if _SEPARATORS.search(value) or "=" in value:
        for _, name, item in secrets._named_arguments(_SEPARATORS.split(value)):
            if isinstance(item, str) and secrets.secret_name(name) and _holds_secret(item):
                return "a secret (by its name)"
    return None


def reference_suspects(where: tuple[Any, ...], value: Any) -> Iterator[tuple[Any, ...]]:
    name = str(where[-1]) if where else ""
    stack: list[tuple[tuple[Any, ...], str, Any, bool]] = [(where, name, value, False)]
    seen: set[int] = set()
    while stack:
        at, key, item, aws = stack.pop()
        default = getattr(item, "default_value", None) if hasattr(item, "to_string") else None
        if default is not None:
            item = default
        if isinstance(item, Mapping | list | tuple):
            if id(item) in seen:
                continue
            seen.add(id(item))
        if isinstance(item, Mapping):
            entries = list(item.items())
            aws_here = aws or any(isinstance(v, str) and _AWS_ID.search(v) for _, v in entries)
            first = "Key" if "Key" in item else "Name"
            if frozenset(item) in secrets._NAMED_VALUE and isinstance(item.get(first), str):
                named = str(item[first])
                stack.append(((*at, "Value"), named, item["Value"], aws_here))
                stack.append(((*at, first), first, named, aws_here))
                continue
            for k, v in reversed(entries):
                stack.append(((*at, k), k if isinstance(k, str) else str(k), v, aws_here))
                if isinstance(k, str) and _value_kind(k, False):
                    stack.append(((*at, (secrets._KEY, k)), "", k, False))
        elif isinstance(item, list | tuple):
            aws_here = aws or any(isinstance(v, str) and _AWS_ID.search(v) for v in item)
            children = [
                ((*at, index), name_of or key, v, aws_here)
                for index, name_of, v in secrets._named_arguments(list(item))
            ]
            stack.extend(reversed(children))
        else:
            kind = reference_kind(key, item, aws)
            if kind:
                yield at, kind, type(item), item


def scanned(where: tuple[Any, ...], value: Any) -> list[tuple[Any, ...]]:
    return [(at, kind, type(raw), raw) for at, kind, raw in secrets._suspects(where, value)]


# --- the literals and the shortest match ----------------------------------------------------


def _starts(parsed: Any) -> tuple[set[str], bool]:
    """The texts every match of ``parsed`` (a parsed pattern) starts with, and whether they are
    the whole match; a lookaround is skipped (it matches no character)."""
    constants = re._constants  # type: ignore[attr-defined]
    starts = {""}
    for op, arg in parsed:
        if op is constants.LITERAL:
            starts = {s + chr(arg) for s in starts}
        elif op in (constants.ASSERT, constants.ASSERT_NOT):
            continue
        elif op is constants.IN and all(o is constants.LITERAL for o, _ in arg) and len(arg) < 8:
            starts = {s + chr(c) for s in starts for _, c in arg}
        elif op is constants.SUBPATTERN:
            inner, whole = _starts(arg[-1])
            starts = {s + i for s in starts for i in inner}
            if not whole:
                return starts, False
        elif op is constants.BRANCH:
            branches = [_starts(branch) for branch in arg[1]]
            starts = {s + i for s in starts for inner, _ in branches for i in inner}
            if not all(whole for _, whole in branches):
                return starts, False
        elif op is constants.MAX_REPEAT and arg[0] == 0 and arg[1] == 1:
            inner, whole = _starts(arg[2])
            if not whole:
                return starts, False
            starts = starts | {s + i for s in starts for i in inner}
        elif op is constants.MAX_REPEAT and arg[0] >= 1:
            inner, _ = _starts(arg[2])
            return {s + i for s in starts for i in inner}, False
        else:
            return starts, False
        assert len(starts) < 500, "too many starts to check"
    return starts, True


@pytest.mark.parametrize("kind, pattern, literals", SECRET_FORMATS, ids=lambda p: str(p)[:24])
def test_every_match_of_a_format_holds_one_of_its_literals(kind, pattern, literals):
    starts, _ = _starts(re._parser.parse(pattern))  # type: ignore[attr-defined]
    assert starts and all(any(literal in start for literal in literals) for start in starts)


def test_no_format_matches_a_text_shorter_than_the_shortest():
    widths = [re._parser.parse(p).getwidth()[0] for _, p in PATTERNS]  # type: ignore[attr-defined]
    assert min(widths) == secrets._SHORTEST


def _run(code: str) -> str:
    root = Path(secrets.__file__).parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_importing_compiles_no_pattern_and_an_ordinary_spec_no_token_format():
    out = _run(
        "import re\n"
        "compiled = []\n"
        "original = re._compile\n"
        "def spy(pattern, flags):\n"
        "    compiled.append(pattern)\n"
        "    return original(pattern, flags)\n"
        "re._compile = spy\n"
        "from safe_estimators import _secret_formats as s\n"
        "print(len(compiled))\n"
        "spec = {'entry_point': 'train.py', 'source_dir': '/home/me/projects/llm/code',\n"
        "    'instance_type': 'ml.p4d.24xlarge', 'instance_count': 2,\n"
        "    'hyperparameters': {'model_name_or_path': 'bert-base-uncased', 'epochs': 3,\n"
        "        'learning_rate': 5e-05, 'output_dir': '/opt/ml/model', 'fp16': True},\n"
        "    'environment': {'NCCL_DEBUG': 'WARN', 'HF_HOME': '/tmp/hf'},\n"
        "    'inputs': {'train': 's3://my-bucket/datasets/wikitext/train/'},\n"
        "    'tags': [{'Key': 'team', 'Value': 'research'}]}\n"
        "assert s.mark_spec_file_secrets(spec) is spec\n"
        "assert s.find_suspects_in(spec.items()) == []\n"
        "print(s._format.cache_info().currsize)\n"
    )
    assert out.split() == ["0", "0"]


# --- the same findings ----------------------------------------------------------------------

LITERALS = sorted({literal for _, _, literals in SECRET_FORMATS for literal in literals})
VALUES = [str(c.value) for c in CREDENTIALS] + [str(v) for _, v in BENIGN] + BENIGN_URIS
BODY = "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-.~+/=%"


def _pieces() -> st.SearchStrategy[str]:
    cut = st.sampled_from(VALUES).flatmap(
        lambda v: st.integers(0, len(v)).map(lambda n: v[:n] if n % 2 else v[n:])
    )
    return st.one_of(
        st.sampled_from(LITERALS),
        st.sampled_from(VALUES),
        cut,
        st.text(BODY, min_size=1, max_size=60),
        st.text("abcdef0123456789", min_size=8, max_size=70),
        st.sampled_from(["://", "@", ":", " ", "\n", "-----END ", "-----", "\0", "AKIA", "x@"]),
        st.text(max_size=8),
    )


TEXTS = st.lists(_pieces(), max_size=8).map("".join)


@settings(max_examples=600, deadline=None)
@given(text=TEXTS, aws=st.booleans())
def test_tokens_are_those_of_the_one_pass_scan(text, aws):
    assert secrets.find_tokens(text, aws) == reference_tokens(text, aws)


@settings(max_examples=300, deadline=None)
@given(text=TEXTS)
def test_masked_texts_are_those_of_the_one_pass_scan(text):
    assert secrets.mask_text(text) == reference_mask(text)


def test_every_corpus_text_and_piece_gives_the_same_tokens():
    for value in [*VALUES, *(v[:n] for v in VALUES for n in range(0, len(v), 3))]:
        for aws in (False, True):
            assert secrets.find_tokens(value, aws) == reference_tokens(value, aws), value
        assert secrets.mask_text(value) == reference_mask(value)


NAMES = st.sampled_from(
    ["HF_TOKEN", "token", "password", "db_password", "aws_secret", "AWS_SECRET_ACCESS_KEY",
     "api_key", "pass_at_k", "max_tokens", "Key", "Value", "Name", "seed", "lr", "", "--hub_token",
     "hub_token", "x", "ghp_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "s3://u:p4ssw0rdXy@b/k"]
)  # fmt: skip
SHAPES = [
    "AKIAZ2X3Y4W5V6U7T8S9", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzzzzzzzzzz", "a" * 45, "--hub_token",
    "Mixed/Case+40charsAAAAAAAAAAAAAAAAAAAAAA1", "HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "0", "1",
]  # fmt: skip
LEAVES = st.one_of(
    st.sampled_from(VALUES),
    TEXTS,
    st.sampled_from(SHAPES),
    st.integers(-5, 10**12),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
    TEXTS.map(SpecFileText),
)
KEYS = st.one_of(NAMES, st.integers(0, 3), NAMES.map(SpecFileText))
NESTED = st.recursive(
    LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(KEYS, inner, max_size=6),
        st.fixed_dictionaries({"Key": NAMES, "Value": inner}),
        st.fixed_dictionaries({"Name": NAMES, "Value": inner}),
    ),
    max_leaves=24,
)


@settings(max_examples=600, deadline=None)
@given(value=NESTED, where=st.sampled_from([(), ("hyperparameters",), ("environment",)]))
def test_suspects_are_those_of_the_one_pass_scan(value, where):
    assert scanned(where, value) == list(reference_suspects(where, value))


# Few values, so that an access key id often sits beside a secret access key's shape (and
# other 40-character texts) under a name that says nothing of AWS.
AWS_LEAVES = st.sampled_from(
    ["AKIAZ2X3Y4W5V6U7T8S9", "ASIAZ2X3Y4W5V6U7T8S9", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzzzzzzzzzz",
     "--secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYzzzzzzzzzz", "id AKIAZ2X3Y4W5V6U7T8S9 and more",
     "wjalrxutnfemi/k7mdeng/bpxrficyzzzzzzzzzz", "Mixed/Case+40charsAAAAAAAAAAAAAAAAAAAAAA1",
     "plain", 7]
)  # fmt: skip
AWS_KEYS = st.sampled_from(["a", "b", "aws_key", "Key", "Value", "c"])
AWS_NESTED = st.recursive(
    AWS_LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(AWS_KEYS, inner, max_size=4)
    ),
    max_leaves=10,
)


@settings(max_examples=400, deadline=None)
@given(value=AWS_NESTED)
def test_the_aws_context_is_that_of_the_one_pass_scan(value):
    assert scanned((), value) == list(reference_suspects((), value))


GRID_NAMES = [
    "HF_TOKEN", "password", "db_password", "PGPASSWORD", "pin", "pass_at_k", "token_budget",
    "AWS_SECRET_ACCESS_KEY", "aws_key", "api_key", "secret_name", "x", "", "--hub_token",
    "hyperparameters", "model_name_or_path", "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
]  # fmt: skip
GRID_VALUES = [
    0, 1, 2, -1, 0.0, 1.0, 0.5, True, False, None, 10**40, "", "0", "1", "true", "none", "hunter2",
    "${HF_TOKEN}", "$HF_TOKEN", "$lower", "arn:aws:secretsmanager:us-east-1:111122223333:secret:x",
    "{{resolve:secretsmanager:db}}", "/run/secrets/token", "s3://bucket/key", "./token.txt",
    "--hub_token hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567", "a=b c=d", "user=x;password=y",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzzzzzzzzzz", "AKIAZ2X3Y4W5V6U7T8S9", "x" * 300,
    "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", SpecFileText("hunter2"), b"bytes",
]  # fmt: skip


@pytest.mark.parametrize("name", GRID_NAMES)
def test_every_name_and_value_of_the_grid_gives_the_same_findings(name):
    for value in GRID_VALUES:
        for shape in (
            {name: value},
            {name: value, "other": "AKIAZ2X3Y4W5V6U7T8S9"},
            [name, value],
            [f"{name}={value}"],
            {"Key": name, "Value": value},
            [{"Name": name, "Value": value}, "AKIAZ2X3Y4W5V6U7T8S9"],
            {"Key": "AKIAZ2X3Y4W5V6U7T8S9", "Value": value},
            {"outer": {name: value}},
            {"outer": {name: value}, "id": "AKIAZ2X3Y4W5V6U7T8S9"},
        ):
            assert scanned(("environment",), shape) == list(
                reference_suspects(("environment",), shape)
            ), (name, value, shape)
        assert scanned((name,), value) == list(reference_suspects((name,), value))


def test_a_value_met_twice_and_a_value_that_holds_itself_are_judged_once():
    token = "ghp_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
    shared: dict[str, Any] = {"x": token}
    loop: list[Any] = ["--token", token]
    loop.append(loop)
    tagged = {"k": [shared, {"Key": "PASSWORD", "Value": shared}]}
    for value in ({"a": shared, "b": shared}, loop, tagged):
        assert scanned((), value) == list(reference_suspects((), value))
        assert len(scanned((), value)) == 1
