"""Validation of spec files and scripts without importing ``sagemaker`` (the fast CLI path)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from safe_estimators._files import SUFFIXES, read_spec_data, relative_to_file
from safe_estimators._problems import Problem
from safe_estimators._resolve import check_arguments, finding_problem, script_context

if TYPE_CHECKING:
    from safe_estimators._script_checks import Finding


def validate_file(path: str | os.PathLike[str]) -> list[Problem]:
    """Every problem (errors and warnings) of one spec file, its training script included."""
    data, problems = read_spec_data(path)
    if data is None:
        return problems
    _, problems, findings = check_arguments(relative_to_file(Path(path).parent, data))
    return problems + [finding_problem(f) for f in findings if f.severity == "warning"]


def lint_target(path: str | os.PathLike[str]) -> list[Finding]:
    """Script findings for a spec file (with its job's context) or a bare script."""
    from safe_estimators._script_checks import Finding, ScriptContext, check_script

    if Path(path).suffix.lower() not in SUFFIXES:
        return check_script(path, ScriptContext())
    data, problems = read_spec_data(path)
    ctx = None
    if data is not None:
        ctx, problems, _ = check_arguments(relative_to_file(Path(path).parent, data))
    if ctx is None:
        return [Finding(str(path), 0, "error", "invalid-spec", str(p), p.hint) for p in problems]
    spec = ctx.spec
    # Run even where the spec says check_script: false: linting is what was asked for.
    return check_script(spec.entry_point, script_context(ctx), source_dir=spec.source_dir)
