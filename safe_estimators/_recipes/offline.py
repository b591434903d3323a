"""Building a recipe job's real estimator without the network, and without writing into the
user's project.

The SDK clones up to three repositories for a recipe job (``git_utils._run_clone_command``):
the recipes collection for a predefined name, the training adapter (GPU) or
neuronx-distributed-training (Trainium) for the entry point. It clones only ``https://``,
``git@`` and ``ssh://`` URLs (a local path is skipped without a word), and the Neuron repository
has no variable to point it elsewhere. So:

- the SDK is handed the recipe we checked, merged, as a local ``.yaml`` file (no collection
  clone, and the job gets exactly the recipe that was checked);
- for ``plan``, git itself redirects the two other URLs to repositories made in a temporary
  folder (``url.<local>.insteadOf`` through ``GIT_CONFIG_COUNT``; ``GIT_ALLOW_PROTOCOL=file``
  makes any other clone fail at once instead of reaching the network; the system and global
  git configuration are not read). Those repositories hold a stand-in of the one script the SDK
  copies: the request names the script and the packaged code, whose content a plan never
  shows. ``fit()`` and ``submit`` clone the real repositories, as the SDK does;
- ``source_dir``, where the SDK copies the script and saves the resolved recipe, is a temporary
  folder during ``plan``, and the SDK's clone runs ``--quiet`` (a ``git`` first on PATH that
  adds it), so plan's stderr holds no "Cloning into ...".
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from safe_estimators._problems import ConfigError, Problem
from safe_estimators._recipes import facts
from safe_estimators._recipes.interpolation import register_sdk_resolvers
from safe_estimators._recipes.load import load_recipe

_STAND_IN = (
    "# A stand-in written by safe-estimators plan: fit() and submit clone the real script.\n"
)


@contextlib.contextmanager
def environment_set(values: Mapping[str, str]) -> Iterator[None]:
    """``os.environ`` with ``values`` while this runs, as it was afterwards."""
    previous = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def handed_recipe(kwargs: dict[str, Any], *, resolved: bool = False) -> Iterator[dict[str, Any]]:
    """``kwargs`` with the checked, merged recipe as a local file while the SDK reads it:
    as merged (a build: the SDK resolves it on the machine that builds the job), or
    ``resolved`` here (plan: the SDK resolves nothing of it on this machine, so no value of
    this machine's environment or files can reach the plan). A recipe with a value only the
    build resolves cannot be planned: a ConfigError says which.

    A recipe that could not be read locally (a factory call without a local copy) is left to
    the SDK, which fetches it.
    """
    name = kwargs.get("training_recipe")
    if name is None:
        yield kwargs
        return
    recipe, _ = load_recipe(name, kwargs.get("recipe_overrides"))
    if recipe is None:
        yield kwargs
        return
    if resolved and recipe.unresolved:
        raise ConfigError([_unplannable(sorted(recipe.unresolved)[0])])
    register_sdk_resolvers()
    with tempfile.TemporaryDirectory(prefix="safe-estimators-recipe-") as folder:
        path = os.path.join(folder, recipe.name + ".yaml")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(recipe.resolved if resolved else recipe.merged)
        handed = {k: v for k, v in kwargs.items() if k != "recipe_overrides"}
        handed["training_recipe"] = path
        yield handed


def _unplannable(path: tuple[str, ...]) -> Problem:
    return Problem(
        ".".join(("recipe", *path)),
        "is resolved by the SageMaker SDK when it builds the job, on the machine that builds "
        "it; plan never resolves it on this machine, so it cannot show the job.",
        "write the value itself in the recipe or in recipe_overrides to plan the job.",
    )


def clone_urls(environ: Mapping[str, str]) -> dict[str, str]:
    """The URLs the SDK clones for a recipe's entry point, by purpose."""
    config = facts.recipes_config()
    return {
        "adapter": environ.get(facts.ADAPTER_VARIABLE) or str(config.get("adapter_repo")),
        "neuron": str(config.get("neuron_dist_repo")),
    }


def _git(folder: str, *args: str) -> None:
    subprocess.run(
        ["git", "-C", folder, *args],
        check=True,
        capture_output=True,
        env=_isolated(dict(os.environ)),
        timeout=60,
    )


def _isolated(environ: dict[str, str]) -> dict[str, str]:
    """git reads no configuration but what is passed here (no system or user insteadOf)."""
    environ.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_TERMINAL_PROMPT="0",
        GIT_ALLOW_PROTOCOL="file",
    )
    return environ


def _stand_in_repository(folder: str, files: list[str]) -> str:
    os.makedirs(folder)
    for name in files:
        path = os.path.join(folder, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(_STAND_IN)
    _git(folder, "init", "-q")
    _git(folder, "add", "-A")
    _git(
        folder,
        "-c", "user.name=safe-estimators",
        "-c", "user.email=plan@localhost",
        "-c", "commit.gpgsign=false",
        "commit", "-q", "-m", "stand-in",
    )  # fmt: skip
    return folder


@contextlib.contextmanager
def redirected_clones(root: str) -> Iterator[None]:
    """While this runs, the SDK's clones of the adapter and Neuron repositories read local
    stand-ins made under ``root``, and no other clone can leave the machine."""
    urls = clone_urls(os.environ)
    adapter = [os.path.join("examples", d, s) for d, s in facts.GPU_SCRIPTS.values()]
    repos = {
        "adapter": _stand_in_repository(os.path.join(root, "adapter"), adapter),
        "neuron": _stand_in_repository(
            os.path.join(root, "neuron"), [os.path.join("examples", facts.TRAINIUM_SCRIPT)]
        ),
    }
    settings = {
        "GIT_CONFIG_COUNT": str(len(repos)),
        **{
            key: value
            for i, purpose in enumerate(repos)
            for key, value in (
                (f"GIT_CONFIG_KEY_{i}", f"url.file://{repos[purpose]}.insteadOf"),
                (f"GIT_CONFIG_VALUE_{i}", urls[purpose]),
            )
        },
    }
    quiet = _quiet_git(os.path.join(root, "bin"))
    if quiet is not None:  # the SDK's clone then prints no "Cloning into ..." on plan's stderr
        settings["PATH"] = quiet + os.pathsep + os.environ.get("PATH", os.defpath)
    with environment_set({**_isolated({}), **settings}):
        yield


def _quiet_git(folder: str) -> str | None:
    """A folder holding a ``git`` that runs the real one, with ``clone --quiet`` for clones.

    The SDK runs ``git clone URL DIR`` with the process's stderr and no option to quieten it
    (git_utils._run_clone_command); git has no setting for it either. Errors still show. None
    where no POSIX shell runs it (Windows), or no git is found.
    """
    real = shutil.which("git")
    if os.name != "posix" or real is None:
        return None
    os.makedirs(folder)
    path = os.path.join(folder, "git")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(
            "#!/bin/sh\n"
            f'if [ "$1" = clone ]; then shift; exec {shlex.quote(real)} clone --quiet "$@"; fi\n'
            f'exec {shlex.quote(real)} "$@"\n'
        )
    os.chmod(path, 0o700)
    return folder


@contextlib.contextmanager
def planned_recipe_job(kwargs: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The keyword arguments for an offline build: the recipe as a local file, a temporary
    source_dir, and the SDK's clones redirected to local stand-ins (no-op without a recipe)."""
    if kwargs.get("training_recipe") is None:
        yield kwargs
        return
    # The redirect lives in os.environ, which every thread shares: the SDK's clone
    # (git_utils._run_clone_command) runs git with a copy of os.environ and takes no environment
    # of ours, so nothing narrower reaches it. One recipe plan at a time, so that none ends
    # another's redirect while its clone runs.
    with _PLANNING, _planned(kwargs) as handed:
        yield handed


_PLANNING = threading.Lock()


@contextlib.contextmanager
def _planned(kwargs: dict[str, Any]) -> Iterator[dict[str, Any]]:
    root = tempfile.mkdtemp(prefix="safe-estimators-plan-")
    try:
        source = os.path.join(root, "source")
        os.makedirs(source)
        # The recipe first: the redirect hides the user's git configuration, which may be
        # where its local copy is found.
        planned = {**kwargs, "source_dir": source}
        with handed_recipe(planned, resolved=True) as handed, redirected_clones(root):
            yield handed
    finally:
        shutil.rmtree(root, ignore_errors=True)
