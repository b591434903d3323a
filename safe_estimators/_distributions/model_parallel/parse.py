"""Reading SMP v1 options from a plain dict or from a raw SageMaker ``distribution``.

``parse_model_parallel`` reads ``model_parallel=`` (a ``ModelParallel`` or a dict);
``split_distribution`` takes ``smdistributed.modelparallel`` and ``mpi`` out of a distribution
as AWS's example notebooks write it. Neither raises: bad entries become problems whose paths
point where the user wrote them, and the rest still reaches the rules.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from safe_estimators._bounds import MAX_SPEC_BYTES, quote
from safe_estimators._distributions.model_parallel.facts import ALIASES, MPI_OPTIONS
from safe_estimators._distributions.model_parallel.options import (
    OPTION_NAMES,
    VALUE_CHECKS,
    ModelParallel,
    kind,
    value_problem,
)
from safe_estimators._problems import Problem, did_you_mean, join_path, removing, setting

_Entries = list[tuple[object, object, str]]  # (key as written, value, path where written)


def _structure(
    entries: Iterable[tuple[object, object, str]],
    torch_distributed: object = None,
    mpi: bool = False,
) -> tuple[ModelParallel, list[Problem]]:
    """Build options from (key as written, value, path) entries; bad entries become problems."""
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    written: dict[str, str] = {}
    problems: list[Problem] = []
    for key, value, where in entries:
        if not isinstance(key, str):
            problems.append(Problem(where, f"option names are strings, got {kind(key)}."))
            continue
        name = ALIASES.get(key, key)
        if name not in VALUE_CHECKS:
            hint = did_you_mean(key, [*OPTION_NAMES, *ALIASES])
            problems.append(
                Problem(
                    where,
                    f"unknown model parallel option {key!r}.",
                    hint or "see safe_estimators.ModelParallel for the options.",
                )
            )
            continue
        if value is None:
            continue
        problem = value_problem(name, value, where)
        if problem:
            problems.append(problem)
        elif name in values and values[name] != value:
            problems.append(
                Problem(
                    where,
                    f"{key} = {value!r} and {written[name]} = {values[name]!r} name the same "
                    "option with different values.",
                    f"keep one of them ({name} is the current name).",
                )
            )
        elif name not in values:
            values[name], origins[name], written[name] = value, where, key
        elif key != written[name]:
            # Both names with one value (AWS's gpt-neo notebook writes pipeline_parallel_degree
            # and partitions, both 1): the SDK sends both, so the resolver does too.
            origins[key] = where
    options = ModelParallel(
        **values, _origins=origins, _torch_distributed=torch_distributed, _mpi=mpi
    )
    return options, problems


def parse_model_parallel(
    value: object, *, path: str = "model_parallel"
) -> tuple[ModelParallel | None, list[Problem]]:
    """Read ``model_parallel=`` (a ``ModelParallel``, a dict with the same keys, or None).

    Never raises. Entries with problems are left out of the returned options, so the rules can
    still run on the rest; any error-severity problem means the job must not be built.
    """
    if value is None or isinstance(value, ModelParallel):
        return value, []
    if not isinstance(value, Mapping):
        return None, [
            Problem(
                path,
                f"expected safe_estimators.ModelParallel or a dict, got {type(value).__name__}.",
                "pass ModelParallel(pipeline_parallel_degree=2, ...) or a dict with those keys.",
            )
        ]
    return _structure((k, v, join_path(path, k)) for k, v in value.items())


def split_distribution(
    distribution: object, *, path: str = "distribution"
) -> tuple[ModelParallel | None, dict, list[Problem]]:
    """Take model parallelism out of a raw SageMaker ``distribution`` dict.

    Reads ``smdistributed.modelparallel`` (``enabled``/``parameters``), ``mpi``
    (``processes_per_host``/``custom_mpi_options``, the library v1's launcher) and
    ``torch_distributed`` (the library v2's launcher) as AWS's notebooks and guides write them,
    and returns the typed options (None when model parallelism is not enabled), the rest of the
    distribution untouched, and problems whose paths point where the user wrote each value.
    Never raises.
    """
    if distribution is None:
        return None, {}, []
    if not isinstance(distribution, Mapping):
        return None, {}, [Problem(path, f"expected a dict, got {type(distribution).__name__}.")]
    rest = dict(distribution)
    smd = rest.get("smdistributed")
    if not isinstance(smd, Mapping) or "modelparallel" not in smd:
        return None, rest, []

    smd_path = join_path(path, "smdistributed")
    mp_path = join_path(smd_path, "modelparallel")
    block = smd["modelparallel"]
    if not isinstance(block, Mapping):
        return None, rest, [Problem(mp_path, "expected a dict with 'enabled' and 'parameters'.")]
    problems = _unknown_keys(block, ("enabled", "parameters"), mp_path)
    enabled = block.get("enabled")
    if enabled is not True:
        # The SDK only reads parameters when enabled is exactly True; anything else silently
        # drops them, which is worth an error unless the user clearly switched it off.
        if enabled is not False and (enabled is not None or block.get("parameters")):
            problems.append(
                Problem(
                    join_path(mp_path, "enabled"),
                    f"enabled is {enabled!r}: the SageMaker SDK ignores model parallel "
                    "parameters unless enabled is the bool True.",
                    "",
                    fixes=(
                        setting((join_path(mp_path, "enabled"), True)),
                        removing(mp_path),
                    ),
                )
            )
        return None, rest, problems

    others = {k: v for k, v in smd.items() if k != "modelparallel"}
    if others:
        rest["smdistributed"] = others
        problems.extend(
            Problem(
                join_path(smd_path, k),
                "the SageMaker SDK accepts one smdistributed strategy per job, and this one "
                "already has modelparallel.",
                "remove it; model parallelism can do data parallelism itself (ddp: True).",
            )
            for k in others
        )
    else:
        del rest["smdistributed"]

    entries, in_parameters = _parameter_entries(block.get("parameters") or {}, mp_path, path)
    mpi = rest.pop("mpi", None)
    mpi_entries, in_mpi = _mpi_entries(mpi, join_path(path, "mpi"))
    launcher, in_launcher = _torch_distributed(rest, join_path(path, "torch_distributed"))
    mp, in_values = _structure(entries + mpi_entries, launcher, mpi is not None)
    return mp, rest, problems + in_parameters + in_mpi + in_launcher + in_values


def attach_launcher(
    mp: ModelParallel, rest: dict, *, path: str = "distribution"
) -> tuple[ModelParallel, list[Problem]]:
    """Take a ``torch_distributed`` block written beside ``model_parallel=`` into the options.

    The library v2 runs under it and the v1 does not, so the rules must see it either way.
    """
    if "torch_distributed" not in rest:
        return mp, []
    launcher, problems = _torch_distributed(rest, join_path(path, "torch_distributed"))
    return attrs.evolve(mp, _torch_distributed=launcher), problems


def _torch_distributed(rest: dict, where: str) -> tuple[object, list[Problem]]:
    """The library v2's launcher block, taken out of the distribution: its ``enabled`` value."""
    if "torch_distributed" not in rest:
        return None, []
    block = rest.pop("torch_distributed")
    if not isinstance(block, Mapping):
        return None, [Problem(where, f"expected a dict, got {type(block).__name__}.")]
    problems = _unknown_keys(block, ("enabled",), where)
    enabled = block.get("enabled")
    if enabled is not True:
        # The SDK picks the SMP v2 image whenever the block is present, but starts torchrun only
        # when enabled is true: without it, nothing launches the library.
        problems.append(
            Problem(
                join_path(where, "enabled"),
                f"enabled is {enabled!r}: with smdistributed.modelparallel the SageMaker SDK "
                "picks the model parallel v2 image but launches torchrun only when enabled is "
                "True, so nothing would start the library.",
                "",
                fixes=(
                    setting((join_path(where, "enabled"), True), why="the library v2 needs it"),
                ),
            )
        )
    return enabled, problems


def _parameter_entries(
    parameters: object, mp_path: str, path: str
) -> tuple[_Entries, list[Problem]]:
    """The options under smdistributed.modelparallel.parameters."""
    where = join_path(mp_path, "parameters")
    if isinstance(parameters, str):
        parameters, file_problems = _parameters_file(parameters, where)
        if file_problems:
            return [], file_problems
    if not isinstance(parameters, Mapping):
        problem = Problem(
            where,
            f"expected a dict, got {type(parameters).__name__}.",
            "give the options as a dict, or the path of a JSON file holding one.",
        )
        return [], [problem]
    entries: _Entries = []
    problems = []
    for key, value in parameters.items():
        if key in MPI_OPTIONS:
            problems.append(
                Problem(
                    join_path(where, key),
                    f"{key} is an MPI setting; under parameters the library rejects it.",
                    f"move it to {join_path(path, 'mpi', key)}.",
                )
            )
        else:
            entries.append((key, value, join_path(where, key)))
    return entries, problems


def _parameters_file(path: str, where: str) -> tuple[object, list[Problem]]:
    """The options in a local JSON file: the SDK reads ``parameters`` given as a path
    (fw_utils.parse_mp_parameters), relative to the current folder."""
    if not os.path.isfile(path):
        return None, [
            Problem(
                where,
                f"{quote(path)} is neither a dict nor an existing file; the SageMaker SDK reads "
                "the parameters from a dict or from the path of a JSON file.",
                "give the options as a dict, or the path of an existing JSON file.",
            )
        ]
    from safe_estimators._bounds import NotRegular, read_regular

    try:  # bounded, never blocking: the file may be swapped for a FIFO or a device meanwhile
        data = read_regular(path, MAX_SPEC_BYTES)
    except NotRegular as error:
        return None, [Problem(where, f"{quote(path)} {error}.", "give the options as a dict.")]
    except OSError as error:
        return None, [
            Problem(
                where,
                f"cannot read {quote(path)}: {error.strerror}.",
                "check the file's permissions, or give the options as a dict.",
            )
        ]
    try:
        loaded = json.loads(data)
    except (ValueError, RecursionError) as exc:
        return None, [
            Problem(
                where,
                f"{quote(path)} is not JSON"
                f"{f' ({exc.msg})' if isinstance(exc, json.JSONDecodeError) else ''}; the "
                "SageMaker SDK refuses it ('Cannot parse ... as a json file').",
                "write the options as a JSON object in that file, or give them as a dict.",
                at=(path, exc.lineno, exc.colno) if isinstance(exc, json.JSONDecodeError) else None,
            )
        ]
    if not isinstance(loaded, Mapping):
        return None, [
            Problem(
                where,
                f"{quote(path)} holds a JSON {type(loaded).__name__}, not an object of options.",
                'write the options as a JSON object, e.g. {"pipeline_parallel_degree": 2}.',
            )
        ]
    return loaded, []


def _mpi_entries(mpi: object, where: str) -> tuple[_Entries, list[Problem]]:
    """processes_per_host and custom_mpi_options from the distribution's mpi block."""
    if mpi is None:
        return [], []
    if not isinstance(mpi, Mapping):
        return [], [Problem(where, f"expected a dict, got {type(mpi).__name__}.")]
    problems = _unknown_keys(mpi, ("enabled", *MPI_OPTIONS), where)
    if "enabled" in mpi and mpi["enabled"] is not True:
        problems.append(
            Problem(
                join_path(where, "enabled"),
                f"enabled is {mpi['enabled']!r}, but MPI launches the model parallel library.",
                "",
                fixes=(
                    setting((join_path(where, "enabled"), True)),
                    removing(join_path(where, "enabled"), why="it is added for you"),
                ),
            )
        )
    return [(k, mpi[k], join_path(where, k)) for k in MPI_OPTIONS if k in mpi], problems


def _unknown_keys(block: Mapping, known: tuple[str, ...], where: str) -> list[Problem]:
    return [
        Problem(
            join_path(where, key),
            f"unknown key {key!r}; SageMaker ignores it silently.",
            did_you_mean(str(key), known) or f"known keys: {', '.join(known)}.",
        )
        for key in block
        if key not in known
    ]
