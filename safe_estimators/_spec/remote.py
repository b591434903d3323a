"""A ``@remote`` function's job: its typed options and their loader, kept out of ``_spec`` so
that a validate of an estimator or ModelTrainer spec does not build these classes at start."""

from __future__ import annotations

from typing import Any

import attrs

from safe_estimators._bounds import quote
from safe_estimators._problems import ConfigError, Problem, closest, join_path, problem_source
from safe_estimators._spec import (
    ExposedPaths,
    _as_mapping,
    _positive_int,
    _shown,
    converter,
    problems_from_exception,
)


def _non_negative_int(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if type(value) is not int or value < 0:
        raise ConfigError(
            [
                Problem(
                    attribute.name,
                    f"must be a whole number of 0 or more, got {quote(value)}.",
                    f"set {attribute.name} to 0 or more.",
                )
            ]
        )


@attrs.frozen
class RemoteFunctionSpec:
    """A ``@remote`` function's job, in the decorator's own words (the SDK's keyword names).

    The options the rules read are typed here; the decorator's other keywords (dependencies,
    pre_execution_commands, role, subnets, tags, ...) are passed through as given in ``extra``.
    Defaults are the decorator's (``_facts.remote_function``).
    """

    instance_type: str
    instance_count: int = attrs.field(default=1, validator=_positive_int)
    use_torchrun: bool = False
    use_mpirun: bool = False
    nproc_per_node: int | None = attrs.field(default=None, validator=_positive_int)
    keep_alive_period_in_seconds: int = attrs.field(default=0, validator=_non_negative_int)
    use_spot_instances: bool = False
    max_wait_time_in_seconds: int | None = attrs.field(default=None, validator=_positive_int)
    max_runtime_in_seconds: int = attrs.field(default=24 * 60 * 60, validator=_positive_int)
    environment_variables: dict[str, str] = attrs.field(factory=dict)
    volume_size: int = attrs.field(default=30, validator=_positive_int)
    volume_kms_key: str | None = None
    image_uri: str | None = None
    job_conda_env: str | None = None
    spark_config: Any = None
    accept_exposure: ExposedPaths = attrs.field(default=ExposedPaths(()))
    extra: dict[str, Any] = attrs.field(factory=dict)


_REMOTE_TYPED = frozenset(a.name for a in attrs.fields(RemoteFunctionSpec)) - {"extra"}


@problem_source(
    "remote-options",
    "A @remote job's options are the SDK decorator's keywords, each of its type: the decorator "
    "takes no other keyword (a TypeError when the function is decorated).",
)
def structure_remote(
    data: object, keywords: tuple[str, ...], *, path: str = ""
) -> tuple[RemoteFunctionSpec | None, list[Problem]]:
    """Load a RemoteFunctionSpec from the decorator's keyword arguments (``keywords``: the names
    the installed SDK's ``remote()`` takes). Never raises for bad input.

    The decorator has no ``**kwargs``: any other name is a TypeError when the function is
    decorated, so it is an error here, with the closest name."""
    mapping, not_a_mapping = _as_mapping(data, path)
    if mapping is None:
        return None, not_a_mapping
    data = mapping
    problems: list[Problem] = []
    fields: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in data.items():
        if key in ("target", "sagemaker_session") or value is None:
            continue
        if not isinstance(key, str):
            problems.append(
                Problem(path or "<spec>", f"option names must be strings, got {quote(key)}.")
            )
        elif key in _REMOTE_TYPED and (key in keywords or key == "accept_exposure"):
            fields[key] = value
        elif key in keywords:
            extra[key] = value
        else:
            meant = closest(key, keywords)
            problems.append(
                Problem(
                    join_path(path, _shown(key)),
                    f"{quote(key)} is not an option of the SDK's @remote decorator (it takes no "
                    "other keyword arguments: Python raises TypeError when the function is "
                    "decorated).",
                    f"did you mean {meant!r}?" if meant else "remove it; see help(remote) for "
                    "the decorator's options.",
                )
            )
    if "instance_type" not in fields:
        problems.append(
            Problem(join_path(path, "instance_type"), "is required but missing.", "add it.")
        )
        return None, problems
    try:
        spec = converter.structure({**fields, "extra": extra}, RemoteFunctionSpec)
    except Exception as exc:
        return None, problems + problems_from_exception(exc, path)
    return spec, problems


