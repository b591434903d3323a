"""Turning checked SMP v1 options into the ``distribution`` the SageMaker SDK expects.

Also returns what was injected on the user's behalf (each with its reason) and the parallel layout
for the explanation. Nothing here imports ``sagemaker``; the SDK facts it relies on are in the
comments below and in ``facts``.
"""

from __future__ import annotations

from typing import Any

from packaging.version import Version

from safe_estimators._distributions.model_parallel.facts import (
    ALIASES,
    DEFAULT_CUSTOM_MPI_OPTIONS,
    FLOAT_PARAMETERS,
    MPI_OPTIONS,
    PARAMETERS,
    PLACEMENT_ROUTES,
    library_of,
)
from safe_estimators._distributions.model_parallel.layout import ParallelLayout, layout_of
from safe_estimators._distributions.model_parallel.options import ModelParallel, set_options
from safe_estimators._problems import join_path
from safe_estimators._resolved import Injection

_PARAMETERS_PATH = "distribution.smdistributed.modelparallel.parameters"


def resolve_v1(
    mp: ModelParallel,
    *,
    gpus_per_instance: int,
    instance_count: int,
    pytorch_version: str | None,
    path: str = "model_parallel",
) -> tuple[dict, list[Injection], ParallelLayout]:
    """Turn checked SMP v1 options into the ``distribution`` the SageMaker SDK expects.

    Call only when ``check_model_parallel`` found no error. Only options the user set go into
    the parameters, plus injected values, each recorded with its reason. The result passes the
    SDK's own ``validate_mp_config`` (sagemaker 2.257).
    """
    layout = layout_of(mp, gpus_per_instance, instance_count)
    injections: list[Injection] = []
    pipeline_key, why_partitions = _pipeline_degree_name(mp, library_of(pytorch_version))
    parameters: dict[str, Any] = {}
    if why_partitions:
        degree = mp.pipeline_parallel_degree or 1
        parameters["partitions"] = degree
        source = join_path(path, "pipeline_parallel_degree")
        value = f"{source} ({degree})" if mp.pipeline_parallel_degree else "pipeline degree 1"
        injections.append(
            Injection(f"{_PARAMETERS_PATH}.partitions", degree, f"{value}: {why_partitions}")
        )

    for name, value in set_options(mp).items():
        if name == "pipeline_parallel_degree":
            parameters[pipeline_key] = value
            for alias in _also_written(mp, pipeline_key):
                parameters[alias] = value  # as the SDK sends them: both names, one value
        elif name in FLOAT_PARAMETERS:
            parameters[name] = float(value)  # the library type-checks: 1 is not a float to it
        elif name not in MPI_OPTIONS:
            parameters[name] = value

    placement = mp.placement_strategy
    if placement in ("DPT", "TPD"):
        parameters["placement_strategy"] = PLACEMENT_ROUTES[placement]
        injections.append(
            Injection(
                f"{_PARAMETERS_PATH}.placement_strategy",
                PLACEMENT_ROUTES[placement],
                f"{join_path(path, 'placement_strategy')} {placement!r} is the same placement; "
                "the SageMaker SDK's validator accepts only 'cluster' and 'spread'",
            )
        )

    needs_ddp = _ddp_reason(mp, layout)
    if mp.ddp is None and needs_ddp:
        parameters["ddp"] = True
        injections.append(Injection(f"{_PARAMETERS_PATH}.ddp", True, needs_ddp))

    if not parameters:
        # The SDK sends mp_parameters only when they are non-empty, and the training toolkit
        # treats model parallelism as on only when mp_parameters is present and not "{}".
        parameters[pipeline_key] = 1
        injections.append(
            Injection(
                f"{_PARAMETERS_PATH}.{pipeline_key}",
                1,
                "the library's default, written out: with no parameters the SageMaker SDK drops "
                "mp_parameters and the training container does not treat the job as model "
                "parallel",
            )
        )

    mpi = {
        "enabled": True,
        "processes_per_host": layout.processes_per_host,
        "custom_mpi_options": mp.custom_mpi_options or DEFAULT_CUSTOM_MPI_OPTIONS,
    }
    if mp.processes_per_host is None:
        injections.append(
            Injection(
                "distribution.mpi.processes_per_host",
                layout.processes_per_host,
                f"one process per GPU ({gpus_per_instance} GPUs per instance)",
            )
        )
    if mp.custom_mpi_options is None:
        injections.append(
            Injection(
                "distribution.mpi.custom_mpi_options",
                DEFAULT_CUSTOM_MPI_OPTIONS,
                "AWS's recommended flag; keeps Docker shared-memory warnings out of the log",
            )
        )

    distribution = {
        "smdistributed": {"modelparallel": {"enabled": True, "parameters": parameters}},
        "mpi": mpi,
    }
    return distribution, injections, layout


def _pipeline_degree_name(mp: ModelParallel, library: Version | None) -> tuple[str, str]:
    """The key the pipeline degree goes under, and why, when it must be the old `partitions`.

    The SDK's validate_mp_config reads config["partitions"] whenever default_partition is set
    (KeyError without it), and libraries before 1.6 know the degree only as `partitions`
    (documented there as required). The library's config code reads `partitions` as an alias of
    pipeline_parallel_degree and accepts both names together only when they agree; that code is
    public for 1.11+ only, while `partitions` alone is what AWS's notebooks pass to every release.
    So in those two cases the degree goes under `partitions` alone (the user's value, or 1), and
    otherwise under the name the user wrote it with (`partitions` is sent as written: renaming it
    would change what the SDK sends without a reason to record).
    """
    if mp.default_partition is not None:
        return (
            "partitions",
            "the SageMaker SDK's validator reads 'partitions' with default_partition",
        )
    renamed_in = PARAMETERS["partitions"].superseded_in
    if library is not None and renamed_in and library < Version(renamed_in):
        return "partitions", f"library {library} knows the pipeline degree only as 'partitions'"
    origin = mp._origins.get("pipeline_parallel_degree", "")
    if origin.rsplit(".", 1)[-1] == "partitions":
        return "partitions", ""  # sent as written: every release reads it
    return "pipeline_parallel_degree", ""


def _also_written(mp: ModelParallel, sent: str) -> list[str]:
    """The other names of the pipeline degree the user wrote beside the one sent (with the same
    value: different values are a problem). The SDK passes ``parameters`` through as written
    (``fw_utils.validate_mp_config`` reads them, ``mp_parameters`` is their JSON), and the
    library reads ``partitions`` as an alias of ``pipeline_parallel_degree``, accepting both
    when they agree; leaving one out would change what is sent without a reason to record."""
    first = mp._origins.get("pipeline_parallel_degree", "").rsplit(".", 1)[-1]
    aliases = [a for a, name in ALIASES.items() if name == "pipeline_parallel_degree"]
    written = {first, *(a for a in aliases if a in mp._origins)}
    if "pipeline_parallel_degree" in written and any(a in written for a in aliases):
        return sorted(written - {sent})
    return []


def _ddp_reason(mp: ModelParallel, layout: ParallelLayout) -> str:
    if layout.tensor > 1:
        return f"tensor parallelism (degree {layout.tensor}) needs DDP"
    if layout.data_parallel > 1 and not mp.horovod:
        return f"data parallelism across {layout.data_parallel} model replicas needs DDP"
    for name in ("ddp_port", "ddp_dist_backend"):
        if getattr(mp, name) is not None:
            return f"{name} configures DDP; the SDK and the library need ddp set with it"
    return ""
