"""Validation of spec files and scripts without importing ``sagemaker`` (the fast CLI path).

Offline: no call here (nor in ``plan``) reaches the EC2 instance metadata service or any other
address; ``offline()`` makes sure botocore does not try.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from safe_estimators._bounds import MAX_SPEC_BYTES, read_at_most
from safe_estimators._facts.targets import FINE_TUNING, REMOTE_FUNCTION
from safe_estimators._problems import ConfigError, Problem
from safe_estimators._spec_files.read import SUFFIXES, offline_problems, read_spec, read_spec_data

if TYPE_CHECKING:
    from safe_estimators._script_checks import Finding
    from safe_estimators._spec import JobSpec


def load_spec(
    path: str | os.PathLike[str], *, project_root: str | os.PathLike[str] | None = None
) -> JobSpec:
    """Load and check a spec file; raise ConfigError with every problem in it.

    The file's keys are the factories' keyword arguments plus ``estimator`` (``huggingface`` or
    ``pytorch``) and optional ``inputs`` (the channels passed to ``fit``). Relative
    ``entry_point``, ``source_dir``, ``dependencies`` and ``model.config`` are resolved against
    the file's folder and must stay inside the project (see ``project_folder``);
    ``project_root`` widens it. Every check ``validate`` runs is run here too, and the errors
    come in the same order.
    """
    from safe_estimators._resolve import check_arguments

    arguments, problems = read_spec(path, project_root=project_root)
    if arguments is None:
        raise ConfigError(problems, source=str(path))
    if problems:  # a path outside the project: its files are not to be read
        arguments = {**arguments, "check_script": False}
    ctx, found, _ = check_arguments(arguments)
    problems += found
    errors = [p for p in problems if p.severity == "error"]
    if ctx is None or errors:
        raise ConfigError(errors or problems, source=str(path))
    return ctx.spec


def spec_files(target: str | os.PathLike[str]) -> list[str]:
    """A spec file as given, or the spec files in a folder and its subfolders (sorted; hidden
    folders skipped)."""
    if not os.path.isdir(target):
        return [os.fspath(target)]
    found = []
    for folder, folders, names in os.walk(target):
        folders[:] = sorted(f for f in folders if not f.startswith((".", "__")))
        found += [
            os.path.join(folder, n) for n in sorted(names) if os.path.splitext(n)[1] in SUFFIXES
        ]
    return found


def is_job_spec(path: str | os.PathLike[str]) -> bool:
    """A file found in a folder is a job spec when it names an estimator (``estimator: ...``);
    other YAML, JSON or TOML files (a copier.yml, a package.json) live beside specs.

    Decided from the text where that is certain (a folder of specs is read once more for
    this): a file that does not hold the word, or that names one of the estimators as a spec
    does. Checking a file that is not a spec is the safe mistake, so the text may say yes too
    readily, and says no only where no reading of it can hold the key.
    """
    head = _head(path)
    if head is None:
        return True  # unreadable: reported as it is
    if "estimator" not in head and "\\" not in head:  # a key may be written with escapes
        return False
    if _named().search(head):
        return True
    data, _ = read_spec_data(path)
    if data is None:  # unreadable or refused: a spec when it visibly names an estimator
        return re.search(_ESTIMATOR_KEY, head) is not None
    return isinstance(data.get("estimator"), str)


# A top-level estimator key in YAML or TOML (estimator: / estimator =), or a JSON key.
_ESTIMATOR_KEY = r"""(?m)^["']?estimator["']?[ \t]*[:=]|"estimator"\s*:"""
# A line that names an estimator as a spec does, in YAML, TOML or JSON.
_NAMED = (
    r"""(?m)^["']?estimator["']?[ \t]*[:=][ \t]*["']?(?:huggingface|pytorch)\b"""
    r'|"estimator"\s*:\s*"(?:huggingface|pytorch)"'
)
_NAMED_RE: list[re.Pattern[str]] = []


def _named() -> re.Pattern[str]:
    if not _NAMED_RE:
        _NAMED_RE.append(re.compile(_NAMED))
    return _NAMED_RE[0]


def _head(path: str | os.PathLike[str]) -> str | None:
    """The text of a regular file (its first MAX_SPEC_BYTES), or None."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError):
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        return read_at_most(fd, info.st_size, MAX_SPEC_BYTES).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)


# Targets with no training script to check, whose options have no check_script.
_NO_SCRIPT = (FINE_TUNING, REMOTE_FUNCTION)


def validate_file(
    path: str | os.PathLike[str], *, project_root: str | os.PathLike[str] | None = None
) -> list[Problem]:
    """Every problem (errors and warnings) of one spec file, its training script included."""
    return validate_spec(path, project_root=project_root)[1]


def validate_spec(
    path: str | os.PathLike[str], *, project_root: str | os.PathLike[str] | None = None
) -> tuple[dict[str, Any] | None, list[Problem]]:
    """``validate_file``'s problems, and the keyword arguments the spec stands for (paths
    resolved; None when the file cannot be read as a spec): what the verdict cache records."""
    from safe_estimators._resolve import check_arguments, finding_problem

    with offline():
        arguments, problems = read_spec(path, project_root=project_root)
        if arguments is None:
            return None, problems
        problems += offline_problems(arguments)
        checked = arguments
        if problems and arguments.get("target") not in _NO_SCRIPT:
            # A path outside the project, or in git: its files are not to be read.
            checked = {**arguments, "check_script": False}
        _, found, findings = check_arguments(checked)
    warnings = [finding_problem(f) for f in findings if f.severity == "warning"]
    return arguments, problems + found + warnings


def lint_target(
    path: str | os.PathLike[str], *, project_root: str | os.PathLike[str] | None = None
) -> tuple[list[Problem], list[Finding]]:
    """What ``lint`` reports for a spec file: the spec's own problems, as ``validate`` finds
    them but without those of its script (so lint and validate reach one verdict), and its
    script's findings; for a bare script, its findings alone."""
    with offline():
        return _lint_target(path, project_root)


def _lint_target(
    path: str | os.PathLike[str], project_root: str | os.PathLike[str] | None
) -> tuple[list[Problem], list[Finding]]:
    from safe_estimators._resolve import check_arguments, finding_problem
    from safe_estimators._script_checks import ScriptContext, check_script

    if Path(path).suffix.lower() not in SUFFIXES:
        return [], check_script(path, ScriptContext())
    arguments, problems = read_spec(path, project_root=project_root)
    if arguments is None:
        return problems, []
    problems += offline_problems(arguments)
    checked = arguments
    if problems and arguments.get("target") not in _NO_SCRIPT:  # as validate_spec
        checked = {**arguments, "check_script": False}
    ctx, found, findings = check_arguments(checked)
    if ctx is not None and not problems and checked.get("check_script") is False:
        # Linting is what was asked for: the script of a spec with check_script: false too.
        findings = check_arguments({**checked, "check_script": True})[2]
    from_script = {finding_problem(f) for f in findings}
    return problems + [p for p in found if p not in from_script], findings


@contextlib.contextmanager
def offline() -> Iterator[None]:
    """No lookup of the EC2 instance metadata service (credentials, region) while this runs,
    and no recipe fetched (one without a local copy is an error).

    Without credentials botocore asks 169.254.169.254, which on a machine where that address
    is black-holed waits for a timeout, and on EC2 picks up the instance's credentials. The
    user's environment is as it was afterwards.
    """
    from safe_estimators._recipes.modes import offline_recipes

    name = "AWS_EC2_METADATA_DISABLED"
    previous = os.environ.get(name)
    os.environ[name] = "true"
    try:
        with offline_recipes():  # a recipe with no local copy is an error here
            yield
    finally:
        if previous is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = previous
