"""The launchers' rules and resolutions, in the order ``_resolve`` runs them.

Each launcher keeps its facts, rules and resolution in its own module; this table is the one
place that lists them, so a new launcher is one module plus one line here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from safe_estimators._distributions.dropped import dropped_launchers
from safe_estimators._distributions.instance_groups.rules import instance_groups_rules
from safe_estimators._distributions.mpi import mpi_rules, resolve_mpi
from safe_estimators._distributions.smddp import dataparallel_shape, resolve_smddp, smddp_rules
from safe_estimators._distributions.torchrun import torchrun_rules, trainium_only_torchrun
from safe_estimators._resolved import Injection

if TYPE_CHECKING:
    from safe_estimators._context import Context, Rule

LAUNCHER_RULES: tuple[Rule, ...] = (
    instance_groups_rules,
    torchrun_rules,
    trainium_only_torchrun,
    dataparallel_shape,
    smddp_rules,
    dropped_launchers,
    mpi_rules,
)


def resolve_launchers(ctx: Context, kwargs: dict[str, Any]) -> list[Injection]:
    """Rewrite the distribution into what the SDK runs and inject the derived values."""
    record: list[Injection] = []
    if "distribution" in kwargs:
        resolve_smddp(ctx, kwargs, record)
        resolve_mpi(ctx, kwargs, record)
    return record
