"""Validation of spec files and scripts without importing ``sagemaker`` (the fast CLI path).

Offline: no call here (nor in ``plan``) reaches the EC2 instance metadata service or any other
address; ``offline()`` makes sure botocore does not try.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from safe_estimators._files import SUFFIXES, offline_problems, read_spec, read_spec_data
from safe_estimators._problems import ConfigError, Problem
from safe_estimators._resolve import check_arguments, finding_problem, script_context

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
        found += [os.path.join(folder, n) for n in sorted(names) if Path(n).suffix in SUFFIXES]
    return found


def is_job_spec(path: str | os.PathLike[str]) -> bool:
    """A file found in a folder is a job spec when it names an estimator (``estimator: ...``);
    other YAML, JSON or TOML files (a copier.yml, a package.json) live beside specs."""
    data, _ = read_spec_data(path)
    return data is None or isinstance(data.get("estimator"), str)


def validate_file(
    path: str | os.PathLike[str], *, project_root: str | os.PathLike[str] | None = None
) -> list[Problem]:
    """Every problem (errors and warnings) of one spec file, its training script included."""
    with offline():
        return _validate_file(path, project_root)


def _validate_file(
    path: str | os.PathLike[str], project_root: str | os.PathLike[str] | None
) -> list[Problem]:
    arguments, problems = read_spec(path, project_root=project_root)
    if arguments is None:
        return problems
    problems += offline_problems(arguments)
    if problems:  # a path outside the project, or in git: its files are not to be read
        arguments = {**arguments, "check_script": False}
    _, found, findings = check_arguments(arguments)
    return problems + found + [finding_problem(f) for f in findings if f.severity == "warning"]


def lint_target(
    path: str | os.PathLike[str], *, project_root: str | os.PathLike[str] | None = None
) -> list[Finding]:
    """Script findings for a spec file (with its job's context) or a bare script."""
    with offline():
        return _lint_target(path, project_root)


def _lint_target(
    path: str | os.PathLike[str], project_root: str | os.PathLike[str] | None
) -> list[Finding]:
    from safe_estimators._script_checks import Finding, ScriptContext, check_script

    if Path(path).suffix.lower() not in SUFFIXES:
        return check_script(path, ScriptContext())
    arguments, problems = read_spec(path, project_root=project_root)
    ctx = None
    if arguments is not None:
        problems += offline_problems(arguments)
    if arguments is not None and not problems:
        ctx, problems, _ = check_arguments(arguments)
    if ctx is None:
        return [Finding(str(path), 0, "error", "invalid-spec", str(p), p.hint) for p in problems]
    spec = ctx.spec
    # Run even where the spec says check_script: false: linting is what was asked for.
    return check_script(spec.entry_point, script_context(ctx), source_dir=spec.source_dir)


@contextlib.contextmanager
def offline() -> Iterator[None]:
    """No lookup of the EC2 instance metadata service (credentials, region) while this runs,
    and no recipe fetched (one without a local copy is an error).

    Without credentials botocore asks 169.254.169.254, which on a machine where that address
    is black-holed waits for a timeout, and on EC2 picks up the instance's credentials. The
    user's environment is as it was afterwards.
    """
    from safe_estimators._recipes.load import offline_recipes

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
