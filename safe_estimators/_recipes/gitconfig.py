"""The local copy of the recipes collection that the user's git configuration points to.

The SDK clones the recipes collection from ``$TRAINING_LAUNCHER_GIT`` or the launcher URL of
its ``training_recipes.json`` with a plain ``git clone``, so git's ``url.<base>.insteadOf``
rewriting applies: a user who keeps a local copy and redirects that URL to it
(``git config --global url./srv/sagemaker-hyperpod-recipes.insteadOf
https://github.com/aws/sagemaker-hyperpod-recipes.git``) has the SDK clone the copy, and here
predefined recipes are read from the same copy. git itself reads the configuration
(``git config --get-regexp``: system, global, ``GIT_CONFIG_COUNT``, includes), run outside any
repository so that no project's own ``.git/config`` takes part; it reads files, never the
network. Only a rewrite to a local folder counts (an absolute path or a ``file://`` URL).
"""

from __future__ import annotations

import functools
import os
import subprocess
import tempfile
from urllib.parse import unquote, urlsplit

from safe_estimators._recipes import facts

# What decides git's answer: the configuration files it reads and the variables that add some.
_GIT_VARIABLES = (
    "HOME",
    "XDG_CONFIG_HOME",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_NOSYSTEM",
    "GIT_CONFIG_PARAMETERS",
)


# GIT_CONFIG_COUNT's settings read (git's own are a handful; the count is a number anyone
# setting the environment chooses).
_MAX_PARAMETERS = 1_000


def launcher_url() -> str:
    """The URL the SDK clones the recipes collection from."""
    return os.environ.get(facts.LAUNCHER_VARIABLE) or str(
        facts.recipes_config().get("launcher_repo")
    )


def configured_recipes_folder() -> str | None:
    """The local folder git's ``insteadOf`` rewrites the launcher URL to, or None."""
    count = os.environ.get("GIT_CONFIG_COUNT", "")
    extra = [
        (os.environ.get(f"GIT_CONFIG_KEY_{i}"), os.environ.get(f"GIT_CONFIG_VALUE_{i}"))
        for i in range(min(int(count), _MAX_PARAMETERS) if count.isdigit() else 0)
    ]
    state = (*(os.environ.get(name) for name in _GIT_VARIABLES), count, str(extra))
    return _rewritten(launcher_url(), state)


@functools.lru_cache(maxsize=8)
def _rewritten(url: str, _state: tuple[object, ...]) -> str | None:
    rewrites = _insteadof_rules()
    # git takes the longest insteadOf value the URL starts with (remote.c, alias_url).
    matches = [(prefix, base) for base, prefix in rewrites if url.startswith(prefix)]
    if not matches:
        return None
    prefix, base = max(matches, key=lambda match: len(match[0]))
    return local_folder(base + url[len(prefix) :])


def local_folder(url: str) -> str | None:
    """The folder a local clone source names (``/path`` or ``file:///path``), or None."""
    if url.startswith("file://"):
        url = unquote(urlsplit(url).path)
    return url if os.path.isabs(url) else None


def _insteadof_rules() -> list[tuple[str, str]]:
    """Every ``url.<base>.insteadOf`` of the user's git configuration, as (base, prefix)."""
    try:
        found = subprocess.run(
            ["git", "config", "-z", "--get-regexp", r"^url\..*\.insteadof$"],
            capture_output=True,
            cwd=tempfile.gettempdir(),
            env={**os.environ, "GIT_CEILING_DIRECTORIES": tempfile.gettempdir()},
            stdin=subprocess.DEVNULL,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return []  # no git: the SDK could not clone either
    rules = []
    for entry in found.stdout.decode("utf-8", "replace").split("\0"):
        key, _, value = entry.partition("\n")
        if key.startswith("url.") and key.lower().endswith(".insteadof") and value:
            rules.append((key[len("url.") : -len(".insteadof")], value))
    return rules
