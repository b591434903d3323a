"""Heterogeneous clusters: ``instance_groups`` instead of ``instance_type``/``instance_count``.

The typed group (``InstanceGroupSpec``), its parsing from SDK ``InstanceGroup`` objects or
``{instance_group_name, instance_type, instance_count}`` mappings, the group a launcher runs on,
the rules, and the request shape the SDK needs (no instance type or count beside the groups:
CreateTrainingJob refuses both at once, and the SDK's ``fit()`` raises before sending).

Facts (AWS "Configure distributed training with the heterogeneous cluster", the SDK's
``fw_utils.validate_distribution`` and ``Framework._distribution_configuration``): only MPI and
SMDDP run on one group; with several groups, ``distribution["instance_groups"]`` names exactly
one; the SDK drops the group silently under torchrun and under Hugging Face's pytorchddp.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

import instance_catalog
from safe_estimators._distributions import is_enabled
from safe_estimators._facts.limits import instance_groups_limit
from safe_estimators._problems import ConfigError, Problem, count, did_you_mean, join_path
from safe_estimators._targets import ESTIMATOR

if TYPE_CHECKING:
    from safe_estimators._rules.context import Context

GROUP_KEYS = ("instance_group_name", "instance_type", "instance_count")


@attrs.frozen(kw_only=True)
class InstanceGroupSpec:
    """One group of a heterogeneous cluster: a name, an instance type and how many instances."""

    instance_group_name: str
    instance_type: str
    instance_count: int

    def __str__(self) -> str:
        return f"{self.instance_group_name}: {self.instance_count} x {self.instance_type}"

    def as_arguments(self) -> dict[str, Any]:
        """The keyword arguments of ``sagemaker.instance_group.InstanceGroup``."""
        return {key: getattr(self, key) for key in GROUP_KEYS}


def _fields(item: object) -> Mapping[str, Any] | None:
    if isinstance(item, Mapping):
        return item
    if all(hasattr(item, key) for key in GROUP_KEYS):  # sagemaker.instance_group.InstanceGroup
        return {key: getattr(item, key) for key in GROUP_KEYS}
    return None


def _group_problems(values: Mapping[Any, Any], where: str) -> list[Problem]:
    problems = [
        Problem(
            join_path(where, key),
            f"unknown instance group key {key!r}.",
            did_you_mean(str(key), GROUP_KEYS) or f"the keys are: {', '.join(GROUP_KEYS)}.",
        )
        for key in values
        if key not in GROUP_KEYS
    ]
    limit = instance_groups_limit()
    for key in GROUP_KEYS:
        value, path = values.get(key), join_path(where, key)
        if value is None:
            problems.append(Problem(path, "is required but missing.", f"add {key}."))
        elif key == "instance_count":
            if type(value) is not int or value < 1:
                problems.append(
                    Problem(
                        path, f"must be a positive whole number, got {value!r}.", "use 1 or more."
                    )
                )
        elif not isinstance(value, str):
            problems.append(
                Problem(path, f"expected a string, got {type(value).__name__} {value!r}.")
            )
        elif key == "instance_group_name" and not limit.name_min <= len(value) <= limit.name_max:
            problems.append(
                Problem(
                    path,
                    f"is {len(value)} characters long; the API takes {limit.name_min} to "
                    f"{limit.name_max}.",
                    "use a short name such as 'gpu' or 'data'.",
                )
            )
    return problems


def structure_instance_groups(value: object, _type: object = None) -> tuple[InstanceGroupSpec, ...]:
    """The cattrs hook for ``instance_groups``: every problem at once, at ``N.key`` paths."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise ConfigError(
            [
                Problem(
                    "",
                    f"expected a list of instance groups, got {type(value).__name__}.",
                    "write [{instance_group_name: gpu, instance_type: ml.p4d.24xlarge, "
                    "instance_count: 2}, ...], or a list of sagemaker InstanceGroup objects.",
                )
            ]
        )
    problems: list[Problem] = []
    groups: list[InstanceGroupSpec] = []
    for index, item in enumerate(value):
        values = _fields(item)
        if values is None:
            problems.append(
                Problem(
                    str(index),
                    f"expected an InstanceGroup or a mapping, got {type(item).__name__}.",
                    f"write a mapping with {', '.join(GROUP_KEYS)}.",
                )
            )
            continue
        found = _group_problems(values, str(index))
        problems += found
        if not found:
            groups.append(InstanceGroupSpec(**{key: values[key] for key in GROUP_KEYS}))
    if problems:
        raise ConfigError(problems)
    return tuple(groups)


def conflicting_arguments(data: Mapping[str, Any], path: str = "") -> list[Problem]:
    """instance_type/instance_count beside instance_groups: the API takes one or the other."""
    if data.get("instance_groups") is None:
        return []
    return [
        Problem(
            join_path(path, name),
            "cannot be set together with instance_groups (CreateTrainingJob takes either "
            "instance_type and instance_count, or instance groups).",
            f"remove {name}; each group has its own instance_type and instance_count.",
        )
        for name in ("instance_type", "instance_count")
        if data.get(name) is not None
    ]


def named_groups(distribution: Mapping[str, Any]) -> list[object] | None:
    """The group names in ``distribution["instance_groups"]`` (None when it is absent)."""
    value = distribution.get("instance_groups")
    if value is None:
        return None
    items = value if isinstance(value, list | tuple) else [value]
    return [getattr(item, "instance_group_name", item) for item in items]


def launch_group(
    groups: tuple[InstanceGroupSpec, ...] | None, distribution: Mapping[str, Any]
) -> InstanceGroupSpec | None:
    """The group the launcher runs on: the one the distribution names, or the only group."""
    if not groups:
        return None
    named = named_groups(distribution)
    if not named:
        return groups[0] if len(groups) == 1 else None
    by_name = {g.instance_group_name: g for g in groups}
    return by_name.get(named[0]) if len(named) == 1 and isinstance(named[0], str) else None


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
    if not groups:
        if named is not None:
            yield Problem(
                "distribution.instance_groups",
                "names instance groups, but the job has no instance_groups.",
                "define instance_groups=[...] or remove distribution['instance_groups'].",
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
            "use MPI ({'mpi': {'enabled': True}}) or SMDDP "
            "({'smdistributed': {'dataparallel': {'enabled': True}}}) on one group, or "
            "instance_type and instance_count without groups.",
        )
    if named is None:
        if ctx.distribution and len(groups) > 1:
            # The SDK validates any distribution given (even one with everything disabled).
            yield Problem(
                "distribution.instance_groups",
                f"is missing: with {len(groups)} instance groups ({', '.join(names)}) the "
                "SageMaker SDK needs the distribution to name the one group it runs on.",
                f"add 'instance_groups': [{names[-1]!r}] (exactly one group) to distribution.",
            )
        return
    path = "distribution.instance_groups"
    if not supported and not losing:
        yield Problem(
            path,
            "names a group, but no launcher that runs on instance groups is enabled; the "
            "SageMaker SDK refuses this.",
            "enable MPI or SMDDP, or remove distribution['instance_groups'].",
        )
    if len(named) != 1:
        yield Problem(
            path,
            f"names {len(named)} groups; a distributed launcher runs on exactly one.",
            f"name one of: {', '.join(names)}.",
        )
    for index, name in enumerate(named):
        if name not in names:
            yield Problem(
                join_path(path, index),
                f"{name!r} is not one of the job's instance groups ({', '.join(names)}).",
                did_you_mean(str(name), names) or f"name one of: {', '.join(names)}.",
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


def describe(groups: tuple[InstanceGroupSpec, ...]) -> str:
    """``instance groups (data: 1 x ml.c5.xlarge, gpu: 2 x ml.p4d.24xlarge)``, for messages."""
    return f"instance groups ({', '.join(map(str, groups))})"


def total_instances(groups: tuple[InstanceGroupSpec, ...]) -> int:
    """How many instances the groups start together."""
    return sum(g.instance_count for g in groups)


def group_note(group: InstanceGroupSpec | None) -> str:
    """`` (group 'gpu')`` for messages about the launch group, or nothing."""
    return (
        ""
        if group is None
        else f" (group {group.instance_group_name!r}, {count(group.instance_count, 'instance')})"
    )
