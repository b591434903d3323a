"""Validation of spec files and scripts without importing ``sagemaker`` (the fast CLI path)."""

from __future__ import annotations

import os
from pathlib import Path

from safe_estimators._files import SUFFIXES, read_spec_data
from safe_estimators._problems import Problem
from safe_estimators._resolve import check
from safe_estimators._rules import Context
from safe_estimators._script_checks import Finding, ScriptContext, check_script
from safe_estimators._spec import structure_spec


def _spec_context(
    path: str | os.PathLike[str],
) -> tuple[Context | None, list[Problem], list[Finding]]:
    data, problems = read_spec_data(path)
    if data is None:
        return None, problems, []
    from safe_estimators._files import _relative_to

    spec, problems = structure_spec(_relative_to(Path(path).parent, data))
    if spec is None:
        return None, problems, []
    return check(spec)


def validate_file(path: str | os.PathLike[str]) -> list[Problem]:
    """Every problem (errors and warnings) of one spec file, its training script included."""
    return _spec_context(path)[1]


def lint_target(path: str | os.PathLike[str]) -> list[Finding]:
    """Script findings for a spec file (with its job's context) or a bare script."""
    if Path(path).suffix.lower() in SUFFIXES:
        ctx, problems, findings = _spec_context(path)
        if ctx is None:
            return [
                Finding(str(path), 0, "error", "invalid-spec", str(p), p.hint) for p in problems
            ]
        return findings
    return check_script(path, ScriptContext())
