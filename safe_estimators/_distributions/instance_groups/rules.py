"""Heterogeneous clusters: ``instance_groups`` instead of ``instance_type``/``instance_count``.

The rules over the typed groups of ``spec.py``, and the request shape the SDK needs (no instance
type or count beside the groups: CreateTrainingJob refuses both at once, and the SDK's ``fit()``
raises before sending).

Facts (AWS "Configure distributed training with the heterogeneous cluster", the SDK's
``fw_utils.validate_distribution`` and ``Framework._distribution_configuration``): only MPI and
SMDDP run on one group; with several groups, ``distribution["instance_groups"]`` names exactly
one; the SDK drops the group silently under torchrun and under Hugging Face's pytorchddp.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

import instance_catalog
from safe_estimators._distributions import is_enabled
from safe_estimators._distributions.instance_groups.spec import InstanceGroupSpec, named_groups
from safe_estimators._facts.limits import instance_groups_limit
from safe_estimators._facts.targets import ESTIMATOR
from safe_estimators._problems import (
    REMOVE,
    Fix,
    Problem,
    closest,
    join_path,
    removing,
)

if TYPE_CHECKING:
    from safe_estimators._context import Context


def _group_launchers(ctx: Context) -> tuple[bool, list[str]]:
    """Whether an MPI or SMDDP launcher runs, and the launchers that lose the group."""
    d = ctx.distribution
    smd = d.get("smdistributed")
    smddp = isinstance(smd, Mapping) and is_enabled(smd.get("dataparallel"))
    if ctx.spec.estimator == "pytorch" and is_enabled(d.get("pytorchddp")):
        smddp = True  # the PyTorch estimator rewrites pytorchddp into SMDDP
    supported = is_enabled(d.get("mpi")) or smddp
    losing = [key for key in ("torch_distributed", "pytorchxla", "parameter_server") if key in d]
    if ctx.spec.estimator == "huggingface" and "pytorchddp" in d:
        losing.append("pytorchddp")
    if ctx.model_parallel is not None:
        losing.append("smdistributed.modelparallel")
    return supported, losing


def instance_groups_rules(ctx: Context) -> Iterator[Problem]:
    """Groups checked against the catalog, the API's limits and the launcher that uses them
    (the estimator's; ModelTrainer scopes no launcher to a group: ``_rules.targets``)."""
    groups = ctx.spec.instance_groups
    if ctx.target != ESTIMATOR:
        yield from _group_shapes(groups or ())
        return
    named = named_groups(ctx.distribution)
    path_named = "distribution.instance_groups"
    if not groups:
        if named is not None:
            yield Problem(
                "distribution.instance_groups",
                "names instance groups, but the job has no instance_groups.",
                "define instance_groups=[...].",
                fixes=(removing("distribution.instance_groups"),),
            )
        return
    yield from _group_shapes(groups)
    names = [g.instance_group_name for g in groups]
    supported, losing = _group_launchers(ctx)
    for key in losing:
        yield Problem(
            join_path("distribution", key),
            f"{key} does not run on instance groups: the SageMaker SDK silently drops the group "
            "and the job loses its heterogeneous layout.",
            "use SMDDP ({'smdistributed': {'dataparallel': {'enabled': True}}}) on one group, or "
            "instance_type and instance_count without groups.",
            fixes=(
                Fix(
                    ((join_path("distribution", key.partition(".")[0]), REMOVE),
                     ("distribution.mpi", {"enabled": True}),
                     ("distribution.instance_groups", [names[-1]])),
                    f"replace {key} with MPI on group {names[-1]!r} ({{'mpi': {{'enabled': "
                    f"True}}, 'instance_groups': [{names[-1]!r}]}})",
                ),
            ) if key != "smdistributed.modelparallel" else (),
        )
    if named is None:
        if ctx.distribution and len(groups) > 1:
            # The SDK validates any distribution given (even one with everything disabled).
            yield Problem(
                "distribution.instance_groups",
                f"is missing: with {len(groups)} instance groups ({', '.join(names)}) the "
                "SageMaker SDK needs the distribution to name the one group it runs on.",
                "",
                fixes=tuple(
                    Fix(
                        ((path_named, [name]),),
                        f"add 'instance_groups': [{name!r}] (exactly one group) to distribution",
                    )
                    for name in reversed(names)
                ),
            )
        return
    path = "distribution.instance_groups"
    if not supported and not losing:
        yield Problem(
            path,
            "names a group, but no launcher that runs on instance groups is enabled; the "
            "SageMaker SDK refuses this.",
            "enable MPI or SMDDP.",
            fixes=(removing(path),),
        )
    if len(named) != 1:
        yield Problem(
            path,
            f"names {len(named)} groups; a distributed launcher runs on exactly one.",
            "",
            fixes=tuple(
                Fix(((path, [name]),), f"name one group: 'instance_groups': [{name!r}]")
                for name in names
            ),
        )
    for index, name in enumerate(named):
        if name not in names:
            yield Problem(
                join_path(path, index),
                f"{name!r} is not one of the job's instance groups ({', '.join(names)}).",
                f"name one of: {', '.join(names)}.",
                fixes=tuple(
                    Fix(((path, [close]),), f"did you mean {close!r}? ('instance_groups': "
                        f"[{close!r}])")
                    for close in [closest(name, names)] if close and len(named) == 1
                ),
            )


def _group_shapes(groups: tuple[InstanceGroupSpec, ...]) -> Iterator[Problem]:
    limit = instance_groups_limit()
    if len(groups) > limit.max_entries:
        yield Problem(
            "instance_groups",
            f"has {len(groups)} groups; CreateTrainingJob takes at most {limit.max_entries}.",
            f"merge groups of the same instance type until at most {limit.max_entries} remain.",
        )
    seen: set[str] = set()
    for index, group in enumerate(groups):
        where = join_path("instance_groups", index)
        if group.instance_group_name in seen:
            yield Problem(
                join_path(where, "instance_group_name"),
                f"{group.instance_group_name!r} names two groups; names must be unique.",
                "rename one of them.",
            )
        seen.add(group.instance_group_name)
        try:
            instance_catalog.get(group.instance_type)
        except instance_catalog.UnknownInstanceType as exc:
            close = ", ".join(exc.suggestions[:3])
            yield Problem(
                join_path(where, "instance_type"),
                f"{group.instance_type!r} is not a SageMaker training instance type.",
                f"did you mean {close}?" if close else "see `safe-estimators catalog`.",
            )
