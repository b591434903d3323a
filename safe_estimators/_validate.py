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
from safe_estimators._problems import Problem
from safe_estimators._resolve import check_arguments, finding_problem, script_context

if TYPE_CHECKING:
    from safe_estimators._script_checks import Finding


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
        # The hint goes in the finding's own field: str(p) would print "Fix: ..." a second time.
        return [
            Finding(str(path), 0, "error", "invalid-spec", f"{p.path}: {p.message}", p.hint)
            for p in problems
        ]
    spec = ctx.spec
    if not isinstance(spec.entry_point, str) or not isinstance(spec.source_dir, str | None):
        return []  # pipeline variables: only Python callers pass them
    # Run even where the spec says check_script: false: linting is what was asked for.
    return check_script(spec.entry_point, script_context(ctx), source_dir=spec.source_dir)


@contextlib.contextmanager
def offline() -> Iterator[None]:
    """No lookup of the EC2 instance metadata service (credentials, region) while this runs.

    Without credentials botocore asks 169.254.169.254, which on a machine where that address
    is black-holed waits for a timeout, and on EC2 picks up the instance's credentials. The
    user's environment is as it was afterwards.
    """
    name = "AWS_EC2_METADATA_DISABLED"
    previous = os.environ.get(name)
    os.environ[name] = "true"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = previous
