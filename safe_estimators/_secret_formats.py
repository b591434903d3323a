"""What a secret looks like, wherever a value of the job may hold one (``_secrets`` says what
it means for the job).

DescribeTrainingJob shows hyperparameters, environment, container arguments, tags and URIs in
plain text to anyone with read access to SageMaker, and they end up in CloudTrail and in the
console. Read by the secrets rule and by everything that prints a value (``_bounds.quote``,
every ``Problem``, plans), which must never print more than a suspected secret's first
characters; it imports nothing of the package, so that all of them can:

- ``SECRET_FORMATS``: token formats that are credentials whatever key they sit under, by their
  issuers' documented prefixes (the same ones the ``detect-secrets`` and gitleaks projects
  match), plus passwords in URLs (``scheme://user:password@host``).
- ``SECRET_WORDS``: words in a key name that say it holds a credential, matched on the name's
  words after normalising case, camelCase, dashes and dots; ``BENIGN_LAST_WORDS`` and
  ``TOKENIZER_WORDS`` are the names that merely talk about one (``HF_TOKEN_SECRET_NAME``,
  ``password_file``, ``pad_token``, ``token_budget``).

Every pattern runs in linear time on any input: each alternative starts with a literal or a
guarded character class and has bounded repetition only (``{n}``, ``{m,n}``), so the work at
one position is bounded; the whole token is then found by extending the match over token
characters once (``_extent``). ``tests/test_secrets_corpus.py`` times them on crafted input.

Nothing is compiled at import, and a pattern only for a text that may match it: a format's
pattern once a text holds one of its literals (names, paths, numbers and S3 URIs hold none),
the URL pattern once a text holds "://" and "@". ``tests/test_secrets_reference.py`` checks
that this finds what one alternation of all the formats finds.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

# The guards: a token does not start inside a longer word or token ("_" and "-" count, unlike
# \b). Each is written after the token's first character (a two-character lookbehind), so that
# every pattern starts with a literal and the engine skips ahead to where a token could start.
_WORD = "A-Za-z0-9_-"
_ALNUM = "A-Za-z0-9"


def _token(pattern: str, guard: str = _WORD) -> str:
    """``pattern`` (starting with a literal character) at the start of a token only."""
    return f"{pattern[0]}(?<![{guard}].){pattern[1:]}"


# (what it is, its pattern, its literals): values that are credentials whatever key they sit
# under. Each pattern matches the token's fixed prefix and its shortest documented body;
# ``_extent`` finds the rest. Every match holds one of its literals: a text holding none of them
# is not searched with the pattern, and the pattern is compiled only for a text that holds one.
# Kinds in ``_RANDOM`` must also look random (upper case, lower case and a digit): run names
# such as "sk-learn-random-forest-baseline" share their prefix.
SECRET_FORMATS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "an AWS access key id",
        _token(r"A(?:KIA|SIA|BIA|CCA)[A-Z0-9]{16}(?![A-Za-z0-9])", _ALNUM),
        ("AKIA", "ASIA", "ABIA", "ACCA"),
    ),
    ("a Hugging Face token", _token(r"hf_[A-Za-z0-9]{30}"), ("hf_",)),
    ("a Hugging Face token", _token(r"api_org_[A-Za-z0-9]{30}"), ("api_org_",)),
    (
        "a GitHub token",
        _token(r"gh[pousr]_[A-Za-z0-9]{36}"),
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    ),
    ("a GitHub token", _token(r"github_pat_[A-Za-z0-9_]{22}"), ("github_pat_",)),
    (
        "a GitLab token",
        _token(r"gl(?:pat|dt|ptt|rt|cbt|oas|ft|imt|soat|agent)-[A-Za-z0-9_-]{20}"),
        ("glpat-", "gldt-", "glptt-", "glrt-", "glcbt-", "gloas-", "glft-", "glimt-", "glsoat-",
         "glagent-"),
    ),
    ("an npm token", _token(r"npm_[A-Za-z0-9]{36}"), ("npm_",)),
    ("a PyPI token", _token(r"pypi-AgE[A-Za-z0-9_-]{50}"), ("pypi-AgE",)),
    (
        "a Slack token",
        _token(r"x(?:ox[abposre]|app)-[0-9A-Za-z]{1,16}-[A-Za-z0-9-]{8}"),
        ("xox", "xapp-"),
    ),
    (
        "a Slack webhook",
        r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9]{4}",
        ("hooks.slack.com/",),
    ),
    ("a Discord webhook", r"discord(?:app)?\.com/api/webhooks/[0-9]{8}", ("/api/webhooks/",)),
    ("a Stripe key", _token(r"sk_(?:live|test)_[A-Za-z0-9]{16}"), ("sk_live_", "sk_test_")),
    ("a Stripe key", _token(r"rk_(?:live|test)_[A-Za-z0-9]{16}"), ("rk_live_", "rk_test_")),
    ("a Stripe key", _token(r"whsec_[A-Za-z0-9]{24}"), ("whsec_",)),
    # OpenAI (sk-..., sk-proj-...), Anthropic (sk-ant-...) and the many APIs that copied them.
    ("an API key (sk-...)", _token(r"sk-[A-Za-z0-9_-]{20}"), ("sk-",)),
    ("a Google API key", _token(r"AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])"), ("AIza",)),
    ("a Google OAuth secret", _token(r"GOCSPX-[A-Za-z0-9_-]{24}"), ("GOCSPX-",)),
    ("a Google OAuth token", _token(r"ya29\.[A-Za-z0-9_-]{30}"), ("ya29.",)),
    (
        "a JSON Web Token",
        _token(r"eyJ[A-Za-z0-9_-]{8}[A-Za-z0-9_-]{0,2000}\.eyJ[A-Za-z0-9_-]{8}"),
        ("eyJ",),
    ),
    ("an Azure key", r"AccountKey=[A-Za-z0-9+/%]{16}", ("AccountKey=",)),
    ("an Azure key", r"SharedAccess(?:Key|Signature)=[A-Za-z0-9+/%]{16}", ("SharedAccess",)),
    ("an Azure SAS signature", _token(r"sig=[A-Za-z0-9%+/]{30}", _ALNUM), ("sig=",)),
    # An Entra ID client secret: 3 characters, a digit, "Q~", 31 more (found from its "Q~").
    ("an Azure client secret", r"Q(?<=[A-Za-z0-9_~.-]{3}[0-9]Q)~[A-Za-z0-9_~.-]{31}", ("Q~",)),
    (
        "a private key",
        r"-----BEGIN (?:[A-Z0-9]{1,12} ){0,3}PRIVATE KEY(?: BLOCK)?-----",
        ("-----BEGIN ",),
    ),
    ("a Twilio API key", _token(r"SK[0-9a-fA-F]{32}(?![A-Za-z0-9])", _ALNUM), ("SK",)),
    ("a SendGrid key", _token(r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"), ("SG.",)),
    ("a Mailgun key", _token(r"key-[0-9a-f]{32}(?![A-Za-z0-9])"), ("key-",)),
    (
        "a Shopify token",
        _token(r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"),
        ("shpat_", "shpss_", "shpca_", "shppa_"),
    ),
    ("a DigitalOcean token", _token(r"do[opr]_v1_[a-f0-9]{64}"), ("_v1_",)),
    ("a Databricks token", _token(r"dapi[a-f0-9]{32}(?![A-Za-z0-9])"), ("dapi",)),
    # A Telegram bot token: the bot's 8 to 10 digits, ":AA", 33 more (found from its ":AA").
    ("a Telegram bot token", r":(?<=[0-9]{8}:)AA[A-Za-z0-9_-]{33}", (":AA",)),
    ("a Square token", _token(r"sq0(?:atp|csp)-[A-Za-z0-9_-]{22}"), ("sq0atp-", "sq0csp-")),
    ("a New Relic key", _token(r"NRAK-[A-Z0-9]{27}"), ("NRAK-",)),
    ("a HashiCorp Vault token", _token(r"hv[sb]\.[A-Za-z0-9_-]{24}"), ("hvs.", "hvb.")),
    (
        "a Terraform Cloud token",
        r"\.(?<=[A-Za-z0-9]{14}\.)atlasv1\.[A-Za-z0-9_-]{20}",
        (".atlasv1.",),
    ),
    ("a Grafana token", _token(r"gl(?:c|sa)_[A-Za-z0-9_=+/-]{32}"), ("glc_", "glsa_")),
    ("a Postman key", _token(r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"), ("PMAK-",)),
    ("a Replicate token", _token(r"r8_[A-Za-z0-9]{37}"), ("r8_",)),
    ("a Groq key", _token(r"gsk_[A-Za-z0-9]{40}"), ("gsk_",)),
    ("a Linear key", _token(r"lin_api_[A-Za-z0-9]{40}"), ("lin_api_",)),
    ("a Notion token", _token(r"secret_[A-Za-z0-9]{43}"), ("secret_",)),
    ("a Notion token", _token(r"ntn_[A-Za-z0-9]{43}"), ("ntn_",)),
    ("a Supabase token", _token(r"sbp_[a-f0-9]{40}"), ("sbp_",)),
    ("a PlanetScale token", _token(r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.-]{32}"), ("pscale_",)),
    ("an Atlassian token", _token(r"ATATT3[A-Za-z0-9_=-]{50}"), ("ATATT3",)),
    ("an age secret key", r"AGE-SECRET-KEY-1[A-Z0-9]{58}", ("AGE-SECRET-KEY-1",)),
    ("a Mapbox secret token", _token(r"sk\.eyJ[A-Za-z0-9_-]{20}"), ("sk.eyJ",)),
    ("a Dropbox token", _token(r"sl\.[A-Za-z0-9_-]{60}"), ("sl.",)),
    (
        "a Doppler token",
        _token(r"dp\.(?:st|ct|sa|scim|audit)\.(?:[a-z0-9_-]{1,32}\.)?[A-Za-z0-9]{40}"),
        ("dp.",),
    ),
    ("a Pulumi token", _token(r"pul-[a-f0-9]{40}"), ("pul-",)),
    ("a Heroku key", _token(r"HRKU-[A-Za-z0-9_-]{60}"), ("HRKU-",)),
    (
        "an Authorization header",
        _token(r"Bearer {1,4}[A-Za-z0-9._~+/-]{20}", _ALNUM),
        ("Bearer ",),
    ),
    (
        "an Authorization header",
        _token(r"bearer {1,4}[A-Za-z0-9._~+/-]{20}", _ALNUM),
        ("bearer ",),
    ),
    ("an Authorization header", _token(r"Basic {1,4}[A-Za-z0-9._~+/-]{20}", _ALNUM), ("Basic ",)),
    ("an Authorization header", _token(r"basic {1,4}[A-Za-z0-9._~+/-]{20}", _ALNUM), ("basic ",)),
)
# Found from a literal in their middle: the token starts up to this many characters earlier.
_BEFORE = {"an Azure client secret": 4, "a Telegram bot token": 10, "a Terraform Cloud token": 14}
_RANDOM = frozenset(("an API key (sk-...)", "an Authorization header"))


def _lazy(pattern: str, flags: int = 0) -> Callable[[], re.Pattern[str]]:
    """``pattern``, compiled the first time it is needed: compiling them all at import cost 7 ms
    of every command, and an ordinary value needs few of them or none."""
    return functools.cache(lambda: re.compile(pattern, flags))


@functools.cache
def _format(index: int) -> re.Pattern[str]:
    """The pattern of ``SECRET_FORMATS[index]``, compiled once a text holds one of its literals."""
    return re.compile(SECRET_FORMATS[index][1])


# The shortest text any format matches (a Slack token: "xoxb-", a character, "-" and 8 more).
_SHORTEST = 15


def _filed_literals() -> tuple[tuple[str | None, tuple[tuple[str, int], ...]], ...]:
    """Every format's literals (with the format's index), filed under a character each holds, so
    that a text is searched for a literal only if it holds that character: those with an upper
    case letter under None (a text with one), the others under the first of " =~:/._-" they hold
    (names, paths and numbers hold few of these), else their first character."""
    filed: dict[str | None, list[tuple[str, int]]] = {None: []}
    for index, (_, _, literals) in enumerate(SECRET_FORMATS):
        for literal in literals:
            if not literal.islower():
                gate = None
            else:
                gate = next((c for c in " =~:/._-" if c in literal), literal[0])
            filed.setdefault(gate, []).append((literal, index))
    return tuple((gate, tuple(entries)) for gate, entries in filed.items())


_LITERALS = _filed_literals()


def _formats_in(text: str) -> list[int]:
    """The indices of the formats one of whose literals ``text`` holds, in order: no other
    format can match in it."""
    if len(text) < _SHORTEST:
        return []
    found: set[int] = set()
    for gate, literals in _LITERALS:
        if (not text.islower()) if gate is None else gate in text:
            for literal, index in literals:
                if literal in text:
                    found.add(index)
    return sorted(found)


# scheme://user:password@host, unless the password is a ${VARIABLE}, a {{template}}, <password>,
# ***, xxx or the word itself (placeholders in documentation), or already masked (…).
URL_PASSWORD = "a password in a URL"
_URL_PASSWORD = _lazy(
    r":(?<=[A-Za-z0-9+.-]:)//[^\s:/@]{0,256}:"
    r"(?![$%{<*…]|x{1,64}@|(?:password|passwd|pass|pwd|secret)@)(?P<password>[^\s/@…]{1,256})@",
    re.I,
)
# What follows a token's prefix: the characters of every format's body.
_TOKEN_CHARS = _lazy(r"[A-Za-z0-9_~+/=.%-]*")
_PEM_END = "-----END "

# The AWS secret access key's shape: 40 characters of base64 with upper case, lower case and a
# digit. Model ids and hashes have the same shape, so it counts only where the context says AWS:
# the key's name, or an access key id beside it.
_AWS_SECRET_SHAPE = _lazy(r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_AWS_KEY_LENGTH = 40


def _aws_tells(text: str) -> bool:
    """An AWS context may change what ``text`` holds: it is long enough for a secret access key,
    and has an upper case letter (which the key's shape needs, see ``_random``)."""
    return len(text) >= _AWS_KEY_LENGTH and not text.islower()


def _aws_context(values: Iterable[Any]) -> bool:
    """One of ``values`` holds an AWS access key id (20 characters: "AKIA" and 16 more, ...)."""
    # Searched at once: the pattern's guards read a NUL between two values as the end of one
    # and the start of the other.
    texts = "\0".join(filter(str.__instancecheck__, values))
    return (
        len(texts) >= 20
        and "A" in texts
        and any(literal in texts for literal in SECRET_FORMATS[0][2])
        and _format(0).search(texts) is not None
    )


def _random(text: str) -> bool:
    return (
        any(c.isupper() for c in text)
        and any(c.islower() for c in text)
        and any(c.isdigit() for c in text)
    )


def find_tokens(text: str, aws_context: bool = False) -> list[tuple[str, int, int]]:
    """Every suspected credential in ``text``: (kind, start, end) of the part to hide, left to
    right and not overlapping. Linear in ``len(text)``."""
    spans: list[tuple[int, int, str]] = []
    formats = _formats_in(text)
    if formats:
        _token_spans(text, formats, spans)
    if "@" in text and "://" in text:
        for url in _URL_PASSWORD().finditer(text):
            start, end = url.span("password")
            spans.append((start, end, URL_PASSWORD))
    if aws_context and _aws_tells(text):
        for shape in _AWS_SECRET_SHAPE().finditer(text):
            if _random(shape.group()):
                spans.append((shape.start(), shape.end(), "an AWS secret access key"))
    if not spans:
        return []
    spans.sort()
    tokens = []
    last = -1
    for start, end, kind in spans:
        if start >= last:
            last = end
            tokens.append((kind, start, end))
    return tokens


def _token_spans(text: str, formats: list[int], spans: list[tuple[int, int, str]]) -> None:
    """Add to ``spans`` the tokens of ``formats`` in ``text``, left to right: at each step the
    leftmost match of any of them, the first format in ``SECRET_FORMATS`` where two start at
    the same place (what one alternation of them all would find). Each format's next match is
    kept until the scan passes its start, so each pattern scans the text about once."""
    pending: dict[int, re.Match[str] | None] = {i: _format(i).search(text) for i in formats}
    pos = 0
    while True:
        match, kind = None, ""
        for index, found in pending.items():
            if found is not None and found.start() < pos:
                found = pending[index] = _format(index).search(text, pos)
            if found is not None and (match is None or found.start() < match.start()):
                match, kind = found, SECRET_FORMATS[index][0]
        if match is None:
            return
        start, end = match.start(), _extent(text, match)
        if kind in _BEFORE:
            start = _start_before(text, start, _BEFORE[kind])
        pos = end
        if kind in _RANDOM and not _random(text[start:end]):
            pos = match.start() + 1
            continue
        spans.append((start, end, kind))


def _extent(text: str, match: re.Match[str]) -> int:
    """Where the token ``match`` starts ends: a private key runs to its END line (or the end of
    the text), any other token over the characters tokens are made of."""
    if match.group().startswith("-----BEGIN"):
        end = text.find(_PEM_END, match.end())
        # Equivalent when mutated to <= 0 or < 1: it is searched for after the BEGIN line.
        if end < 0:  # pragma: no mutate
            return len(text)
        close = text.find("-----", end + len(_PEM_END))
        return len(text) if close < 0 else close + 5
    run = _TOKEN_CHARS().match(text, match.end())
    return run.end() if run else match.end()


def _start_before(text: str, start: int, most: int) -> int:
    first = start
    while first > start - most and first > 0 and text[first - 1] in _BODY:
        first -= 1
    return first


_BODY = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_~.-")


def mask_text(text: str) -> str:
    """``text`` with every suspected credential cut to its first characters (``ghp_…``): the
    token formats, the values a quoted mapping in it holds under a secret's name
    (``{'password': 'hunter2'}``, as ``repr`` writes one), those assigned to one
    (``password=hunter2``, a hyperparameter's name or a command line's word) and those after a
    command line's flag named for one (``--password hunter2``)."""
    # The gates only spare a text that cannot match the pattern after them the search: their
    # "and" and "or" mutants change the time taken, not the text.
    if ": " in text and ("'" in text or '"' in text):  # pragma: no mutate
        text = _QUOTED_ENTRY().sub(_masked_entry, text)
    if "=" in text:
        text = _NAMED_ASSIGNMENT().sub(_masked_named_value, text)
    if "-" in text and (" " in text or "\t" in text):  # pragma: no mutate
        text = _FLAG_WITH_VALUE().sub(_masked_named_value, text)
    parts: list[str] = []
    # Equivalent when mutated to None: a slice from None is a slice from 0.
    pos = 0  # pragma: no mutate
    for _, start, end in find_tokens(text):
        parts += [text[pos:start], text[start : start + _shown_length(end - start)], "…"]
        pos = end
    if not parts:
        return text
    parts.append(text[pos:])
    return "".join(parts)


# 'name': 'value' (or with double quotes), as repr() writes a mapping's entry.
_QUOTED_ENTRY = _lazy(r"""(['"])([A-Za-z0-9_.-]{1,128})\1: (['"])([^'"\\\n]{1,2500})\3""")


def _masked_entry(entry: re.Match[str]) -> str:
    name, value = entry.group(2), entry.group(4)
    if not (secret_name(name) and _holds_secret(value)):
        return entry.group()
    quote = entry.group(3)
    shown = value[: _shown_length(len(value))]
    return f"{entry.group(1)}{name}{entry.group(1)}: {quote}{shown}…{quote}"


# NAME=value inside a text: a name not inside a longer word (so a name starts only where a word
# does: linear), after a command line's "-" or "--" if any (--password=hunter2), a value up to a
# space, quote or separator.
_NAMED_ASSIGNMENT = _lazy(
    r"""(?<![A-Za-z0-9_.-])-{0,2}([A-Za-z_][A-Za-z0-9_.-]{0,127})=([^\s'",;&…]+)"""
)


def _masked_named_value(named: re.Match[str]) -> str:
    """A NAME=value or a flag and its value (group 1 the name, group 2 the value), the value cut
    short where the name is a secret's."""
    name, value = named.group(1), named.group(2)
    end = named.end()
    if named.string[end : end + 1] == "…" or not (secret_name(name) and _holds_secret(value)):
        return named.group()  # masked already, or not a secret
    written = named.group()[: named.start(2) - named.start()]  # "--name=" or "--name "
    return f"{written}{value[: _shown_length(len(value))]}…"


# A command line's flag and the word after it (--password hunter2, -p hunter2): the flag where
# a word starts, a value that is no flag itself, up to a space, quote or separator.
_FLAG_WITH_VALUE = _lazy(
    r"(?<![A-Za-z0-9_.-])-{1,2}([A-Za-z_][A-Za-z0-9_.-]{0,127})[ \t]{1,4}"
    r"""([^\s'",;&…-][^\s'",;&…]*)"""
)


def _shown_length(length: int) -> int:
    return min(4, length // 5)


# Words that make a key name a credential's.
SECRET_WORDS = frozenset(
    [
        "password",
        "passwd",
        "pwd",
        "pass",
        "passphrase",
        "passcode",
        "secret",
        "secrets",
        "credential",
        "credentials",
        "creds",
        "token",
        "apikey",
        "pat",
        "authorization",
        "bearer",
        "cookie",
        "privatekey",
    ]
)
# Two-word names: ``key`` alone is too common (sort_key, s3_key), these qualify it.
KEY_QUALIFIERS = frozenset(
    [
        "api",
        "access",
        "secret",
        "private",
        "signing",
        "master",
        "auth",
        "client",
        "license",
        "encryption",
        "account",
        "service",
        "openai",
        "anthropic",
        "cohere",
        "wandb",
        "comet",
        "neptune",
        "stripe",
        "sendgrid",
        "twilio",
        "mailgun",
        "pinecone",
        "hf",
        "huggingface",
        "github",
        "gitlab",
        "slack",
        "azure",
        "gcp",
        "google",
        "mistral",
        "groq",
        "replicate",
        "kaggle",
        "databricks",
        "mlflow",
        "pypi",
        "npm",
        "hub",
    ]
)
# Words that make a number a credential's (a PIN or a numeric password; tokens are never numbers).
PASSWORD_WORDS = frozenset(["password", "passwd", "pwd", "pass", "passphrase", "passcode", "pin"])
# Endings that make a single word a credential's (PGPASSWORD, dbpassword, mysecret, hftoken).
SECRET_FRAGMENTS = ("password", "passwd", "passphrase", "secret", "apikey", "accesskey", "token")
# Words that end in a fragment and are vocabulary (a subtoken is a piece of a word).
FRAGMENT_WORDS = frozenset(["subtoken", "pretoken", "multitoken", "detoken", "nosecret"])
# Secret words that are also common words elsewhere in a name (pass_at_k, pat_size,
# pwd_dir): they count only as the name's last word (DB_PASS, GH_PAT).
LAST_ONLY = frozenset(["pass", "pat", "pwd", "pin", "creds"])
# What may follow a secret word in a credential's name (TOKEN_VALUE, SECRET_KEY_B64, TOKEN2);
# any other word makes it a different setting (token_budget, secret_sharing_rounds).
TRAILING_WORDS = frozenset(
    ["value", "val", "str", "string", "text", "plain", "plaintext", "raw", "b64", "base64",
     "hex", "encoded", "key", "secret", "pem", "json", "data", "content", "contents"]
)  # fmt: skip
# A last word that says the value points at a secret or describes one, rather than holding it.
BENIGN_LAST_WORDS = frozenset(
    [
        "name",
        "id",
        "ids",
        "arn",
        "file",
        "files",
        "path",
        "paths",
        "dir",
        "header",
        "env",
        "var",
        "envvar",
        "url",
        "uri",
        "endpoint",
        "ttl",
        "length",
        "len",
        "type",
        "kind",
        "enabled",
        "required",
        "expiry",
        "expires",
        "expiration",
        "field",
        "prefix",
        "location",
        "bucket",
        "count",
        "limit",
        "size",
        "timeout",
        "ref",
        "reference",
        "key_name",
        "version",
        "policy",
    ]
)
# Tokenizer and generation settings: tokens that are words, not credentials.
TOKENIZER_WORDS = frozenset(
    [
        "pad",
        "eos",
        "bos",
        "unk",
        "sep",
        "cls",
        "mask",
        "special",
        "additional",
        "max",
        "min",
        "num",
        "new",
        "start",
        "end",
        "vocab",
        "added",
        "decoder",
        "encoder",
        "prompt",
        "image",
        "audio",
        "video",
        "tokens",
        "per",
        "return",
        "truncate",
        "skip",
    ]
)

# Values that name a secret instead of holding it are the right way to pass one.
_SECRET_REFERENCE = _lazy(
    r"^(?:arn:aws[a-z-]*:(?:secretsmanager|ssm|kms):|\{\{resolve:|\$\{[^}]*\}$|\$[A-Z_][A-Z0-9_]*$)"
)
_REFERENCE_STARTS = ("arn:aws", "{{resolve:", "$")


def _names_a_secret(text: str) -> bool:
    """``text`` names a secret (a Secrets Manager ARN, ``${NAME}``, ...) instead of holding it."""
    return text.startswith(_REFERENCE_STARTS) and _SECRET_REFERENCE().match(text) is not None


_NOT_SECRETS = frozenset(("", "true", "false", "none", "null", "yes", "no", "0", "1"))
# A value that points at a secret (a file, an S3 object) rather than holding it.
_POINTER = ("/", "./", "~/", "s3://", "file://")
# An encoding's name is one word (B64, base64: TRAILING_WORDS), not a word and a number.
_WORDS = _lazy(r"(?i:base64|b64)(?![a-z])|[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# NAME=value in a list of arguments or a command line (-x HF_TOKEN=..., Password=...;).
_ASSIGNMENT = _lazy(r"([A-Za-z_][A-Za-z0-9_.-]{0,127})=(.*)", re.S)
# -x, --flag, --flag=value (not "-----BEGIN ...", not "-1").
_FLAG = _lazy(r"--?[A-Za-z]")
# What separates the arguments of a command line, a connection string or a query string.
_SEPARATORS = _lazy(r"[\s;&?]+")


def name_words(key: str) -> list[str]:
    """``"dbPassword"``, ``"DB_PASSWORD"``, ``"db-password"`` all give ``["db", "password"]``;
    ``"TOKEN_B64"`` gives ``["token", "b64"]``."""
    return [w.lower() for w in _WORDS().findall(key)]


def secret_name(key: object, *, numeric: bool = False) -> bool:
    """The key's name says its value is a credential (``OPENAI_KEY``, ``dbPassword``).

    With ``numeric``, only password-like names count: a token or key is never a bare number.
    """
    if not isinstance(key, str):
        return False
    # Equivalent when mutated: the memo and the function give the same answer (only memory).
    if len(key) > _MEMO_MAX:  # pragma: no mutate
        return _secret_name(key, numeric)
    return _memo_secret_name(key, numeric)


# Every check reads every hyperparameter and environment name and value, and jobs repeat them
# (a sweep, a folder of specs): short ones are remembered. Long texts are rare and would make
# the memo hold megabytes.
_MEMO_MAX = 256


def _secret_name(key: str, numeric: bool) -> bool:
    words = name_words(key.lstrip("-"))
    if not words or words[-1] in BENIGN_LAST_WORDS or "_".join(words[-2:]) in BENIGN_LAST_WORDS:
        return False
    for i, word in enumerate(words):
        rest = words[i + 1 :]
        if (rest and word in LAST_ONLY) or any(
            w not in TRAILING_WORDS and not w.isdigit() for w in rest
        ):
            continue  # another setting named after a secret: token_budget, pass_at_k
        if numeric:
            if word in PASSWORD_WORDS or "password" in word or "passwd" in word:
                return True
        elif word == "token":
            if not set(words) & TOKENIZER_WORDS:
                return True
        elif word == "key":
            if i and words[i - 1] in KEY_QUALIFIERS:
                return True
        elif word in SECRET_WORDS or (
            len(word) > 6 and word.endswith(SECRET_FRAGMENTS) and word not in FRAGMENT_WORDS
        ):
            return True
    return False


def redacted(value: object) -> str:
    """How a suspected secret is shown: its first characters and its length, never the rest."""
    text = value if isinstance(value, str) else str(value)
    shown = text[: _shown_length(len(text))]
    return f"{shown!r}… ({len(text)} characters)" if shown else f"({len(text)} characters)"


_memo_secret_name = functools.lru_cache(maxsize=4096)(_secret_name)


def _value_kind(text: str, aws_context: bool) -> str | None:
    # Equivalent when mutated: either way gives the same kind (the memo saves time only).
    if len(text) > _MEMO_MAX or (len(text) < _SHORTEST and "@" not in text):  # pragma: no mutate
        return _find_value_kind(text, aws_context)  # too long to keep, or too short to need it
    return _memo_value_kind(text, aws_context)


def _find_value_kind(text: str, aws_context: bool) -> str | None:
    if len(text) < _SHORTEST and "@" not in text:
        return None  # too short for a token, and no URL with a password
    if _names_a_secret(text):
        return None
    tokens = find_tokens(text, aws_context)
    return tokens[0][0] if tokens else None


_memo_value_kind = functools.lru_cache(maxsize=4096)(_find_value_kind)


def redacted_if_secret(text: str) -> str | None:
    """``redacted(text)`` when ``text`` holds a known token format, else None."""
    return redacted(text) if _value_kind(text, False) else None


def _is_aws_secret_name(words: list[str]) -> bool:
    return ("aws" in words and ("secret" in words or "key" in words)) or words[-3:] == [
        "secret", "access", "key",
    ]  # fmt: skip


def secret_kind(key: str, value: object, *, aws_context: bool = False) -> str | None:
    """Say what kind of secret ``key=value`` looks like, or None when it looks harmless."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    short = not isinstance(value, str) or len(value) <= _MEMO_MAX
    if short and type(key) is str and len(key) <= _MEMO_MAX and type(value) in _PLAIN:
        return _memo_secret_kind(key, value, aws_context)
    return _secret_kind(key, value, aws_context)


_PLAIN = (str, int, float)


def _secret_kind(key: str, value: str | int | float, aws_context: bool) -> str | None:
    if not isinstance(value, str):
        numeric = secret_name(key, numeric=True) and str(value) not in _NOT_SECRETS
        return _NUMERIC_PASSWORD if numeric else None
    aws = aws_context or (_aws_tells(value) and _is_aws_secret_name(name_words(key)))
    kind = _value_kind(value, aws)
    if kind:
        return kind
    if secret_name(key) and _holds_secret(value):
        return "a secret (by its name)"
    if "=" in value or _SEPARATORS().search(value):
        return _argument_kind(_SEPARATORS().split(value))
    return None


def _holds_secret(value: str) -> bool:
    text = value.strip()
    return not (
        text.strip('"').lower() in _NOT_SECRETS
        or text.startswith(_POINTER)
        or _names_a_secret(text)
    )


def _argument_kind(words: list[str]) -> str | None:
    """A secret passed by name in a command line's words (``--hub_token X``, ``-x PASS=X``)."""
    for _, name, value in _named_arguments(words):
        if isinstance(value, str) and secret_name(name) and _holds_secret(value):
            return "a secret (by its name)"
    return None


def _named_arguments(items: list[Any]) -> Iterator[tuple[int, str, Any]]:
    """(index, name, value) of each argument: a flag names the value after it (``--lr 0.1``,
    ``--lr=0.1``), ``NAME=value`` names its own; the flags themselves are not values."""
    flag = ""
    for index, item in enumerate(items):
        if isinstance(item, str) and _FLAG().match(item):
            flag, equals, inline = item.lstrip("-").partition("=")
            if equals:
                yield index, flag, _as(item, inline)
                flag = ""
            continue
        assignment = _ASSIGNMENT().fullmatch(item) if isinstance(item, str) else None
        # After a flag, NAME=value is still an assignment (mpirun -x HF_TOKEN=...), unless the
        # flag itself names a secret (--password a=b).
        if assignment is not None and not (flag and secret_name(flag)):
            yield index, assignment.group(1), _as(item, assignment.group(2))
        else:
            yield index, flag, item
        flag = ""


def _as(item: str, part: str) -> str:
    """``part`` of ``item``, of the same type: a part of a spec file's text is one too."""
    return SpecFileText(part) if isinstance(item, SpecFileText) else part


# typed: 1, 1.0 and "1" are judged apart (only a string can hold a token).
_memo_secret_kind = functools.lru_cache(maxsize=4096, typed=True)(_secret_kind)

# A mapping that is one name and its value: a tag ({"Key": ..., "Value": ...}) and the like.
_NAMED_VALUE = (frozenset(("Key", "Value")), frozenset(("Name", "Value")))


_NUMERIC_PASSWORD = "a password (by its name)"

# The walk's memos, for a value under a name (a str): what a text under it is outside an AWS
# context (the walk asks where no AWS context tells, see _aws_tells), with what the name itself
# is (a token?); the same for a number, by its name alone (the number matters only for 0, 1
# and the like: every seed and learning rate differs). _CLEAN for nothing, else (the name's
# token, the text's kind or whether the name is a password's). Plain dicts, emptied when full:
# a lookup costs half an lru_cache's, and the walk meets each value of a job twice (the spec
# file, then the spec).
_TEXT_ENTRIES: dict[tuple[str, str], Any] = {}
_NUMBER_ENTRIES: dict[str, Any] = {}
_NAME_TOKENS: dict[str, str | None] = {}
_MEMO_ENTRIES = 4096
_CLEAN: Any = object()
_UNSEEN: Any = object()


def _text_entry(key: str, text: str) -> Any:
    """(``_name_token(key)``, ``_secret_kind(key, text, False)``), or _CLEAN."""
    token = _name_token(key) if _may_hold_token(key) else None
    kind = _secret_kind(key, text, False)
    entry = (token, kind) if token or kind else _CLEAN
    # Equivalent when mutated: what is remembered, when it is forgotten, or a None remembered
    # (a miss: the caller computes it again) changes the time taken, not the entry.
    if len(key) <= _MEMO_MAX and len(text) <= _MEMO_MAX:  # pragma: no mutate
        if len(_TEXT_ENTRIES) >= _MEMO_ENTRIES:  # pragma: no mutate
            _TEXT_ENTRIES.clear()
        _TEXT_ENTRIES[key, text] = entry  # pragma: no mutate
    return entry


def _number_entry(key: str) -> Any:
    """(``_name_token(key)``, ``secret_name(key, numeric=True)``), or _CLEAN."""
    token = _name_token(key) if _may_hold_token(key) else None
    named = _secret_name(key, True)
    entry = (token, named) if token or named else _CLEAN
    # Equivalent when mutated, as in _text_entry.
    if len(key) <= _MEMO_MAX:  # pragma: no mutate
        if len(_NUMBER_ENTRIES) >= _MEMO_ENTRIES:  # pragma: no mutate
            _NUMBER_ENTRIES.clear()
        _NUMBER_ENTRIES[key] = entry  # pragma: no mutate
    return entry


def _may_hold_token(key: str) -> bool:
    """A name can be a token only if it holds a format's literal (15 characters at least), is
    a URL with a password (an "@") or assigns a value (``password=...``, ``--token x``)."""
    return len(key) >= _SHORTEST or "@" in key or "=" in key or " " in key


def _name_token(key: str) -> str | None:
    """``_value_kind(key, False)``: the token a mapping's key is, remembered."""
    token = _NAME_TOKENS.get(key, _UNSEEN)
    if token is not _UNSEEN:
        return token  # type: ignore[no-any-return]
    token = _find_value_kind(key, False)
    if token is None and ("=" in key or " " in key):
        # A name that is a command line's words or an assignment: password=Xk9#mP2vL8qR4wT6.
        token = _argument_kind(_SEPARATORS().split(key))
    # Equivalent when mutated: what is remembered and when it is forgotten (not what).
    if len(key) <= _MEMO_MAX:  # pragma: no mutate
        if len(_NAME_TOKENS) >= _MEMO_ENTRIES:  # pragma: no mutate
            _NAME_TOKENS.clear()
        _NAME_TOKENS[key] = token
    return token


def _judged(key: str, item: Any, aws: bool) -> str | None:
    """``secret_kind(key, item, aws_context=aws)``, by the walk's memos."""
    kind_of = type(item)
    if kind_of is str:
        if aws and _aws_tells(item):
            # Equivalent when mutated: the memo and _secret_kind give the same kind.
            if len(key) <= _MEMO_MAX and len(item) <= _MEMO_MAX:  # pragma: no mutate
                return _memo_secret_kind(key, item, True)
            return _secret_kind(key, item, True)
        entry = _TEXT_ENTRIES.get((key, item)) or _text_entry(key, item)
        return None if entry is _CLEAN else entry[1]  # type: ignore[no-any-return]
    if kind_of is int or kind_of is float:
        entry = _NUMBER_ENTRIES.get(key) or _number_entry(key)
        named = entry is not _CLEAN and entry[1]
        return _NUMERIC_PASSWORD if named and str(item) not in _NOT_SECRETS else None
    return secret_kind(key, item, aws_context=aws)


Suspect = tuple[tuple[Any, ...], str, Any]
# A container being walked: [its path, whether it is in an AWS context (an access key id beside
# its values or beside those of a container above it; None: not looked for yet), what is left of
# its children, whether they are a mapping's (key, value) or (path step, name, value), its
# values, the frame of the container it is in while that one's context is not known].
_Frame = list[Any]


def _in_aws_context(frame: _Frame) -> bool:
    """Whether ``frame``'s values are judged in an AWS context, looked for now (from the
    outermost container not looked at yet: no recursion)."""
    pending = []
    while frame is not None and frame[1] is None:
        pending.append(frame)
        frame = frame[5]
    aws: bool = False if frame is None else frame[1]
    for inner in reversed(pending):
        aws = inner[1] = aws or _aws_context(inner[4])
    return aws


def _suspects(where: tuple[Any, ...], value: Any) -> list[Suspect]:
    """(path as a tuple of keys, kind, the value itself) of every suspected secret, in the order
    of a depth-first walk. Iterative (a stack of containers, not recursion); a plain value is
    judged where it is met, and its path made only when it is reported."""
    found: list[Suspect] = []
    _collect(where, value, found)
    return found


def _collect(where: tuple[Any, ...], value: Any, found: list[Suspect]) -> None:
    """Add ``_suspects(where, value)`` to ``found``."""
    name = str(where[-1]) if where else ""
    if type(value) in _PLAIN:
        kind = _judged(name, value, False)
        if kind:
            found.append((where, kind, value))
        return
    stack: list[_Frame] = []
    seen: set[int] = set()
    if not _enter(where, name, value, False, stack, seen, found):
        return
    text_entries, number_entries = _TEXT_ENTRIES, _NUMBER_ENTRIES
    while stack:
        frame = stack[-1]
        at, aws, children, mapping, _, _ = frame
        context = frame if aws is None else aws  # a child looks for it only if it must
        if not mapping:
            for step, key, item in children:
                if type(item) in _PLAIN:
                    if aws is None and type(item) is str and _aws_tells(item):
                        aws = context = _in_aws_context(frame)
                    kind = _judged(key, item, bool(aws))
                    if kind:
                        found.append(((*at, step), kind, item))
                elif _enter((*at, step), key, item, context, stack, seen, found):
                    break
            else:
                stack.pop()
            continue
        # A mapping's entries, the hot loop. Most are a text or a number under a name: one
        # lookup says what the name and the value are.
        for step, item in children:
            kind_of = type(item)
            if type(step) is str:
                if kind_of is str:
                    if len(item) < _AWS_KEY_LENGTH or item.islower():  # not _aws_tells(item)
                        entry = text_entries.get((step, item)) or _text_entry(step, item)
                        if entry is _CLEAN:
                            continue
                        token, kind = entry
                        if token:
                            found.append(((*at, (_KEY, step)), token, step))
                        if kind:
                            found.append(((*at, step), kind, item))
                        continue
                elif kind_of is int or kind_of is float:
                    entry = number_entries.get(step) or _number_entry(step)
                    if entry is _CLEAN:
                        continue
                    token, named = entry
                    if token:
                        found.append(((*at, (_KEY, step)), token, step))
                    if named and str(item) not in _NOT_SECRETS:
                        found.append(((*at, step), _NUMERIC_PASSWORD, item))
                    continue
            if isinstance(step, str):
                key = step
                if _may_hold_token(step):
                    token = _name_token(step)
                    if token:
                        found.append(((*at, (_KEY, step)), token, step))
            else:
                key = str(step)
            if type(item) in _PLAIN:
                if aws is None and kind_of is str and _aws_tells(item):
                    aws = context = _in_aws_context(frame)
                kind = _judged(key, item, bool(aws))
                if kind:
                    found.append(((*at, step), kind, item))
            elif item is None or kind_of is bool:
                continue  # what secret_kind says of them
            elif _enter((*at, step), key, item, context, stack, seen, found):
                break
        else:
            stack.pop()


def _enter(
    at: tuple[Any, ...],
    key: str,
    item: Any,
    aws: bool | _Frame,
    stack: list[_Frame],
    seen: set[int],
    found: list[Suspect],
) -> bool:
    """Put a container's children on ``stack`` (True), or judge a value that is not one: a
    pipeline parameter by its default, a str subclass, an object. ``aws``: the AWS context, or
    the frame of the mapping whose context it is (not looked for yet)."""
    kind_of = type(item)
    if kind_of is not dict and kind_of is not list and hasattr(item, "to_string"):
        default = getattr(item, "default_value", None)
        if default is not None:
            item = default
            kind_of = type(item)
    if kind_of is dict or (kind_of is not list and isinstance(item, Mapping)):
        if id(item) in seen:
            return False
        seen.add(id(item))
        if kind_of is dict:  # nothing in the walk changes it
            entries: Iterable[tuple[Any, Any]] = item.items()
            values: Iterable[Any] = item.values()
        else:
            entries = list(item.items())
            values = [v for _, v in entries]
        if kind_of is dict:  # frozenset(item) in _NAMED_VALUE, by lookups
            first = "Key" if "Key" in item else "Name"
            named_value = len(item) == 2 and "Value" in item and first in item
        else:
            named_value = frozenset(item) in _NAMED_VALUE
            first = _first(item) if named_value else ""
        if named_value and isinstance(item.get(first), str):
            named, value = str(item[first]), item["Value"]
            if type(value) in _PLAIN and not (
                _aws_tells(named) or (type(value) is str and _aws_tells(value))
            ):
                # Most tags: judged here, no AWS context telling on them.
                kind = _judged(first, named, False)
                if kind:
                    found.append(((*at, first), kind, named))
                kind = _judged(named, value, False)
                if kind:
                    found.append(((*at, "Value"), kind, value))
                return False
            if isinstance(aws, list):
                aws = _in_aws_context(aws)
            tag = [(first, first, named), ("Value", named, value)]
            stack.append([at, aws or _aws_context(values), iter(tag), False, None, None])
        elif aws is True:
            stack.append([at, True, iter(entries), True, values, None])
        else:
            stack.append([at, None, iter(entries), True, values, aws or None])
        return True
    if kind_of is list or isinstance(item, list | tuple):
        if id(item) in seen:
            return False
        seen.add(id(item))
        children = [
            (index, name_of or key, v) for index, name_of, v in _named_arguments(list(item))
        ]
        if aws is True:
            stack.append([at, True, iter(children), False, None, None])
        else:
            stack.append([at, None, iter(children), False, item, aws or None])
        return True
    if isinstance(aws, list):
        aws = _in_aws_context(aws)
    kind = secret_kind(key, item, aws_context=aws)
    if kind:
        found.append((at, kind, item))
    return False


def _first(item: Mapping[Any, Any]) -> str:
    return "Key" if "Key" in item else "Name"


# A path step (_KEY, name) stands for a mapping's key itself: a token used as a name.
_KEY = object()


def dotted(at: tuple[Any, ...]) -> str:
    """A path of ``find_suspects`` as the user writes it, a token in it cut short."""
    steps = (step[1] if type(step) is tuple and step[0] is _KEY else step for step in at)
    return ".".join(mask_text(str(step)) for step in steps)


def find_secrets(path: str, value: Any) -> Iterator[tuple[str, str, str]]:
    """Every suspected secret under ``value``: (dotted path, kind, redacted form).

    Walks nested dicts and lists iteratively; a list such as ``["--hub_token", "hf_..."]`` is
    read as command-line arguments (each flag names the value after it, ``NAME=value`` names
    itself), and so is a string with spaces, ``;``, ``&`` or ``?`` (a command line, a
    connection or query string); a tag (``{"Key": k, "Value": v}``) as ``k`` naming ``v``; a
    name that is itself a token is reported; a pipeline parameter is checked by its default
    value. ``value`` is a mapping of names (hyperparameters, environment) or any value under
    ``path``. Paths never hold more than a token's first characters.
    """
    for at, kind, raw in find_suspects(path, value):
        yield dotted(at), kind, redacted(raw)


def find_suspects(path: str, value: Any) -> list[Suspect]:
    """``find_secrets`` with the path as a tuple of keys (the first is ``path``) and the value
    itself, for callers that decide what to do with it."""
    return _suspects((path,) if path else (), value)


def find_suspects_in(options: Iterable[tuple[str, Any]]) -> list[tuple[str, list[Suspect]]]:
    """``(path, find_suspects(path, value))`` of each (path, value) under which a secret is
    suspected, in order: a job's options at once (most of them None)."""
    suspected = []
    for path, value in options:
        if value is None:
            continue
        kind_of = type(value)
        if kind_of is str or kind_of is int or kind_of is float:  # most options
            kind = _judged(path, value, False)
            if kind:
                suspected.append((path, [((path,) if path else (), kind, value)]))
            continue
        found: list[Suspect] = []
        _collect((path,) if path else (), value, found)
        if found:
            suspected.append((path, found))
    return suspected


class _Hidden(str):
    """A suspected secret as a message shows it: its repr is its redacted form."""

    def __repr__(self) -> str:
        return str(self)


# Past this depth a value is shown as a whole placeholder rather than copied.
_MASK_DEPTH = 64


def masked(value: Any) -> Any:
    """A copy of ``value`` to print: each suspected secret in it (by format, or by the name it
    sits under) replaced by its redacted form; ``value`` itself when it holds none."""
    hidden = {at: raw for at, _, raw in _suspects((), value)}
    return _rewritten(
        value, hidden, lambda _, raw: _Hidden(redacted(raw)), lambda key: _Hidden(mask_text(key))
    )


def masked_plain(value: Any) -> Any:
    """A copy of ``value`` to print as data (``port``'s program): each suspected secret in it
    replaced by a plain ``str`` of its first characters and "…", each name that is one by its
    masked form (accepted in ``accept_exposure`` or not); ``value`` itself when it holds none."""
    hidden = {at: raw for at, _, raw in _suspects((), value)}
    return _rewritten(value, hidden, lambda _, raw: _cut(str(raw)), _cut_name)


def _cut(text: str) -> str:
    return f"{text[: _shown_length(len(text))]}…"


def _cut_name(name: str) -> str:
    shown = mask_text(name)
    return shown if shown != name else _cut(name)


def _rewritten(
    value: Any,
    found: dict[tuple[Any, ...], Any],
    leaf: Callable[[Any, Any], Any],
    name: Callable[[str], str],
) -> Any:
    """A copy of ``value`` in which the value at each path of ``found`` is ``leaf(it, what was
    found there)`` and each name found to be a token is ``name(it)``. What holds none of them
    is shared, not copied; past ``_MASK_DEPTH`` levels (deeper than any spec may be) nothing is
    rewritten."""
    if not found:
        return value
    above = {at[:n] for at in found for n in range(len(at))}

    def walk(item: Any, at: tuple[Any, ...]) -> Any:
        if at in found:
            return leaf(item, found[at])
        if at not in above or len(at) > _MASK_DEPTH:
            return item
        default = getattr(item, "default_value", None) if hasattr(item, "to_string") else None
        if default is not None:
            return walk(default, at)
        if isinstance(item, Mapping):
            return {
                (name(k) if isinstance(k, str) and (*at, (_KEY, k)) in found else k):
                walk(v, (*at, k))
                for k, v in item.items()
            }  # fmt: skip
        if isinstance(item, list | tuple):
            return type(item)(walk(v, (*at, i)) for i, v in enumerate(item))  # type: ignore[call-arg]
        return item

    return walk(value, ())


def mask_values_in(text: str, value: Any) -> str:
    """``text`` (a message about ``value``) with each suspected secret of ``value`` that it
    quotes replaced by its redacted form."""
    for _, _, raw in _suspects((), value):
        if isinstance(raw, str) and raw:
            shown = redacted(raw)
            text = text.replace(repr(raw), shown).replace(raw, shown)
    return text


class SpecFileText(str):
    """A suspected secret as a spec file wrote it. The file is committed to a repository, so
    the secret has leaked already: an error, where the same value passed in Python (read from
    the environment or a login at run time) is a warning. Only values that are refused carry
    this type: none reaches the SDK."""


class SpecFileInt(int):
    """A number a spec file wrote under a password's name (see ``SpecFileText``)."""


class SpecFileFloat(float):
    """A number a spec file wrote under a password's name (see ``SpecFileText``)."""


# Messages name the type the file wrote ("expected str, got int").
SpecFileInt.__name__, SpecFileFloat.__name__ = "int", "float"
SPEC_FILE_TYPES = (SpecFileText, SpecFileInt, SpecFileFloat)


def _from_spec_file(item: Any) -> Any:
    if isinstance(item, str):
        return SpecFileText(item)
    return SpecFileFloat(item) if isinstance(item, float) else SpecFileInt(item)


def is_accepted(path: str, accepted: tuple[str, ...]) -> bool:
    """``path`` is one that ``accept_exposure`` names, or lies under one (``hyperparameters.args``
    accepts ``hyperparameters.args.1``)."""
    return any(path == key or path.startswith(key + ".") for key in accepted)


def accepted_paths(value: object) -> tuple[str, ...]:
    """The paths an ``accept_exposure`` value names (one path, or a list of them)."""
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list | tuple):
        return tuple(item for item in value if isinstance(item, str))
    return ()


def mark_spec_file_secrets(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (a spec file's options) with each suspected secret in it, value or name, as a
    ``SpecFileText``; those its ``accept_exposure`` names stay as they are."""
    suspects = _suspects((), data)
    if not suspects:
        return data
    accepted = accepted_paths(data.get("accept_exposure"))
    found = {
        at: raw
        for at, _, raw in suspects
        if not is_accepted(dotted(at), accepted) and isinstance(raw, str | int | float)
    }
    # A flag with its value (--password=x) is marked whole.
    return _rewritten(  # type: ignore[no-any-return]
        data, found, lambda item, _: _from_spec_file(item), SpecFileText
    )
