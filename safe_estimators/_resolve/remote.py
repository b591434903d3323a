"""A ``@remote`` function's job, checked and resolved: kept out of ``_resolve`` so that a validate
of an estimator or ModelTrainer spec does not build its class at start."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import attrs

from safe_estimators._problems import Fix, Problem, changed, fix_hint, own_hint, tagged
from safe_estimators._resolve import _errors, _lookup, _refuse_or_log
from safe_estimators._resolved import Explanation


@attrs.frozen
class ResolvedRemote:
    """A checked ``@remote`` job: the decorator's keyword arguments (the user's, plus what was
    injected) and what ``explain`` shows."""

    spec: Any
    kwargs: dict[str, Any]
    explanation: Explanation


def check_remote_arguments(arguments: Mapping[str, Any]) -> tuple[Any, list[Problem]]:
    """Structure and check a ``@remote`` job's keyword arguments; never raises. Returns the
    remote context (None when no spec could be built) and every problem."""

    from safe_estimators._facts.remote_function import (
        STUDIO_IMAGE_VARIABLE,
        local_python,
        remote_keywords,
    )
    from safe_estimators._rules.remote import RemoteContext, check_remote
    from safe_estimators._spec.remote import structure_remote

    def checked(options: Mapping[str, Any]) -> tuple[Any, list[Problem]]:
        spec, problems = structure_remote(options, remote_keywords())
        problems = tagged(structure_remote, problems)
        if spec is None:
            return None, problems
        studio = bool(os.environ.get(STUDIO_IMAGE_VARIABLE))
        ctx = RemoteContext(spec, _lookup(spec.instance_type), local_python(), studio, _workdir())
        return ctx, problems + check_remote(ctx)

    ctx, problems = checked(arguments)
    if not any(problem.fixes for problem in problems):
        return ctx, problems
    # Each fix applied to the decorator's arguments and checked again, as a job's are.
    before = _errors(problems)

    def holds(problem: Problem, fix: Fix) -> bool:
        try:
            found = checked(changed(arguments, fix.changes))[1]
        except (TypeError, ValueError):
            return False
        still = {(p.path, p.message) for p in found}
        return (problem.path, problem.message) not in still and not _errors(found) - before

    kept_problems = []
    for problem in problems:
        kept = tuple(fix for fix in problem.fixes if holds(problem, fix))
        if kept != problem.fixes:
            problem = attrs.evolve(problem, hint=fix_hint(kept, own_hint(problem)), fixes=kept)
        kept_problems.append(problem)
    return ctx, kept_problems


def _workdir() -> str | None:
    try:
        return os.getcwd()
    except OSError:  # the folder was removed under the process
        return None


def resolve_remote_arguments(
    arguments: Mapping[str, Any], source: str | None = None
) -> ResolvedRemote:
    """A checked ``@remote`` job, or ConfigError with every error."""
    from safe_estimators._rules.remote import remote_injections

    ctx, problems = check_remote_arguments(arguments)
    warnings = _refuse_or_log(ctx is None, problems, source)
    injected, injections = remote_injections(ctx)
    kwargs = {
        k: v
        for k, v in arguments.items()
        if k not in ("target", "accept_exposure") and v is not None
    }
    spec = ctx.spec
    entry = ctx.instance
    explanation = Explanation(
        estimator="remote function",
        instance_type=spec.instance_type,
        instance_count=spec.instance_count,
        gpus_per_instance=entry.gpu_count if entry is not None else None,
        injections=tuple(injections),
        warnings=warnings,
        image_source=spec.image_uri,
        neuron_cores=entry.neuron_cores if entry is not None else None,
    )
    return ResolvedRemote(spec, {**kwargs, **injected}, explanation)


