"""What a secret looks like in hyperparameters and environment variables.

DescribeTrainingJob shows both in plain text to anyone with read access to SageMaker, and they
end up in CloudTrail and in the console. Two tables, read by the secrets rule and by every
message that quotes a value (which must never print a suspected secret):

- ``SECRET_VALUES``: token formats that are credentials whatever key they sit under. The
  prefixes are the issuers' documented formats (the same ones the ``detect-secrets`` and
  gitleaks projects match); a dozen regular expressions do not justify a dependency.
- ``SECRET_WORDS``: words in a key name that say it holds a credential, matched on the name's
  words after normalising case, camelCase, dashes and dots; ``BENIGN_LAST_WORDS`` and
  ``TOKENIZER_WORDS`` are the names that merely talk about one (``HF_TOKEN_SECRET_NAME``,
  ``password_file``, ``pad_token``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from typing import Any

from safe_estimators._problems import Problem

# Values that are credentials whatever key they sit under.
SECRET_VALUES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("an AWS access key id", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b")),
    ("a Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    ("a GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_\w{22,})")),
    ("a GitLab token", re.compile(r"\bgl(?:pat|dt|ptt|rt|cbt)-[A-Za-z0-9_-]{20,}")),
    ("an npm token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")),
    ("a Slack token", re.compile(r"\bxox[abposre]-[A-Za-z0-9-]{10,}")),
    ("a Slack webhook", re.compile(r"hooks\.slack\.com/(?:services|workflows|triggers)/\w+/")),
    ("a Stripe key", re.compile(r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}")),
    # OpenAI (sk-..., sk-proj-...), Anthropic (sk-ant-...) and the many APIs that copied them.
    ("an API key (sk-...)", re.compile(r"(?<![\w-])sk-[A-Za-z0-9_-]{20,}")),
    ("a Google API key", re.compile(r"\bAIza[A-Za-z0-9_-]{35}\b")),
    ("a JSON Web Token", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[\w-]{8,}")),
    (
        "an Azure connection string",
        re.compile(r"(?:AccountKey|SharedAccessKey|SharedAccessSignature)=[A-Za-z0-9+/=%]{16,}"),
    ),
    ("a private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY(?: BLOCK)?-----")),
    # scheme://user:password@host, unless the password is a ${VARIABLE} or {{template}}.
    (
        "a password in a URL",
        re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s:/@]+:(?![$%{<*]|x+@)[^\s/@]{3,}@[\w.-]+", re.I),
    ),
)

# The AWS secret access key's shape: 40 characters of base64 with upper case, lower case and a
# digit. Model ids and hashes have the same shape, so it counts only where the context says AWS:
# the key's name, or an access key id beside it.
AWS_SECRET_SHAPE = re.compile(r"(?<![A-Za-z0-9/+])(?=[^\s]*[A-Z])(?=[^\s]*[a-z])(?=[^\s]*[0-9])"
                              r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")  # fmt: skip
_AWS_ID = SECRET_VALUES[0][1]

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
    ]
)
# Words that make a number a credential's (a PIN or a numeric password; tokens are never numbers).
PASSWORD_WORDS = frozenset(["password", "passwd", "pwd", "pass", "passphrase", "passcode", "pin"])
# Substrings that make a single word a credential's (PGPASSWORD, dbpassword, mysecret).
SECRET_FRAGMENTS = ("password", "passwd", "passphrase", "secret", "apikey", "accesskey", "token")
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
SECRET_REFERENCE = re.compile(
    r"^(?:arn:aws[a-z-]*:(?:secretsmanager|ssm|kms):|\{\{resolve:|\$\{[^}]*\}$|\$[A-Z_][A-Z0-9_]*$)"
)
_NOT_SECRETS = frozenset(("", "true", "false", "none", "null", "yes", "no", "0", "1"))
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def name_words(key: str) -> list[str]:
    """``"dbPassword"``, ``"DB_PASSWORD"``, ``"db-password"`` all give ``["db", "password"]``."""
    return [w.lower() for w in _WORDS.findall(key)]


def secret_name(key: object, *, numeric: bool = False) -> bool:
    """The key's name says its value is a credential (``OPENAI_KEY``, ``dbPassword``).

    With ``numeric``, only password-like names count: a token or key is never a bare number.
    """
    if not isinstance(key, str):
        return False
    if len(key) > _MEMO_MAX:
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
    if numeric:
        return any(w in PASSWORD_WORDS or "password" in w or "passwd" in w for w in words)
    for i, word in enumerate(words):
        before = words[i - 1] if i else ""
        if word in ("token", "tokens"):
            if word == "token" and not set(words) & TOKENIZER_WORDS:
                return True
        elif word == "key":
            if before in KEY_QUALIFIERS:
                return True
        elif word in SECRET_WORDS or (
            len(word) > 6
            and any(f in word for f in SECRET_FRAGMENTS)
            and not word.startswith(("tokeniz", "tokens"))
        ):
            return True
    return False


def redacted(value: object) -> str:
    """How a suspected secret is shown: its first characters and its length, never the rest."""
    text = value if isinstance(value, str) else str(value)
    shown = text[: min(4, len(text) // 5)]
    return f"{shown!r}… ({len(text)} characters)" if shown else f"({len(text)} characters)"


_memo_secret_name = functools.lru_cache(maxsize=4096)(_secret_name)


def _value_kind(text: str, aws_context: bool) -> str | None:
    if len(text) > _MEMO_MAX:
        return _find_value_kind(text, aws_context)
    return _memo_value_kind(text, aws_context)


def _find_value_kind(text: str, aws_context: bool) -> str | None:
    if SECRET_REFERENCE.match(text):
        return None
    for kind, pattern in SECRET_VALUES:
        if pattern.search(text):
            return kind
    if (aws_context or _AWS_ID.search(text)) and AWS_SECRET_SHAPE.search(text):
        return "an AWS secret access key"
    return None


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
        return "a password (by its name)" if numeric else None
    kind = _value_kind(value, aws_context or _is_aws_secret_name(name_words(key)))
    if kind:
        return kind
    if secret_name(key) and value.strip().lower() not in _NOT_SECRETS:
        return None if SECRET_REFERENCE.match(value) else "a secret (by its name)"
    return None


# typed: 1, 1.0 and "1" are judged apart (only a string can hold a token).
_memo_secret_kind = functools.lru_cache(maxsize=4096, typed=True)(_secret_kind)


def find_secrets(path: str, value: Any) -> Iterator[tuple[str, str, str]]:
    """Every suspected secret under ``value``: (dotted path, kind, redacted form).

    Walks nested dicts and lists iteratively; a list such as ``["--hub_token", "hf_..."]`` is
    read as command-line arguments (each flag names the value after it); a pipeline parameter
    is checked by its default value. ``value`` is a mapping of names (hyperparameters,
    environment) or any value under ``path``.
    """
    stack: list[tuple[str, str, Any, bool]] = [(path, path.rsplit(".", 1)[-1], value, False)]
    seen: set[int] = set()
    while stack:
        where, key, item, aws = stack.pop()
        if type(item) in _PLAIN:  # most values: no pipeline default, no children
            short = len(key) <= _MEMO_MAX and (type(item) is not str or len(item) <= _MEMO_MAX)
            kind = (_memo_secret_kind if short else _secret_kind)(key, item, aws)
            if kind:
                yield where, kind, redacted(item)
            continue
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
            for k, v in reversed(entries):
                name = k if isinstance(k, str) else str(k)
                stack.append((f"{where}.{name}" if where else name, name, v, aws_here))
        elif isinstance(item, list | tuple):
            aws_here = aws or any(isinstance(v, str) and _AWS_ID.search(v) for v in item)
            flag = key
            children = []
            for i, v in enumerate(item):
                name = flag
                if isinstance(v, str) and ((v[:1] == "-" and v[1:2].isalpha()) or v[:2] == "--"):
                    flag, _, inline = v.lstrip("-").partition("=")
                    if inline:
                        children.append((f"{where}.{i}", flag, inline, aws_here))
                    continue
                children.append((f"{where}.{i}", name, v, aws_here))
                flag = key
            stack.extend(reversed(children))
        else:
            kind = secret_kind(key, item, aws_context=aws)
            if kind:
                yield where, kind, redacted(item)


def secrets_in(name: str, values: object) -> Iterator[Problem]:
    """A problem for every suspected secret under ``values`` (nested values included); the
    message shows only the value's first characters and length."""
    for path, kind, shown in find_secrets(name, values):
        yield Problem(
            path,
            f"looks like {kind}: {shown}. {name} are shown in plain text by DescribeTrainingJob, "
            "the console and CloudTrail.",
            "store it in AWS Secrets Manager and pass the secret's name or ARN instead; "
            "read it in the script with boto3.",
        )
