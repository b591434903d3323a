"""The typed instance group and its parsing: what a heterogeneous cluster is, before any rule.

``InstanceGroupSpec``, parsed from SDK ``InstanceGroup`` objects or
``{instance_group_name, instance_type, instance_count}`` mappings, the group a launcher runs on, and
the words messages use for them. The rules over them are ``rules.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from safe_estimators._facts.limits import instance_groups_limit
from safe_estimators._problems import ConfigError, Problem, count, did_you_mean, join_path

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
    if not value:
        raise ConfigError(
            [
                Problem(
                    "",
                    "is empty; the SDK reads an empty list as no groups, and then needs "
                    "instance_type and instance_count.",
                    "give at least one group, or remove instance_groups and set instance_type "
                    "and instance_count.",
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
