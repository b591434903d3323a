"""Validation of spec files and scripts without importing ``sagemaker`` (the fast CLI path)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from safe_estimators._files import SUFFIXES, offline_problems, read_spec
from safe_estimators._problems import Problem
from safe_estimators._resolve import check_arguments, finding_problem, script_context

if TYPE_CHECKING:
    from safe_estimators._script_checks import Finding


def validate_file(
    path: str | os.PathLike[str], *, project_root: str | os.PathLike[str] | None = None
) -> list[Problem]:
    """Every problem (errors and warnings) of one spec file, its training script included."""
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
