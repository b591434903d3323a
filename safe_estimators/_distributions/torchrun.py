"""torchrun (``distribution={"torch_distributed": {"enabled": True}}``).

Facts, all read from the installed SDK (``fw_utils.validate_torch_distributed_distribution``):
torchrun runs on GPU instances (families starting with p or g, by the SDK's own name test) and
on Trainium (trn*), each with its own list of framework versions, compared as exact strings
("2.2" is refused, "2.2.0" accepted). The lists and the image tables disagree: PyTorch 2.4.0 has
a training container but is not on the torchrun list; 2.1.2, 2.3.1 and 2.4.1 are on the list but
have no plain training container (they are SMP v2 image versions). The entry point must be a
``.py`` file. On Trainium the SDK accepts no other strategy beside torchrun.

The SDK's test takes a SageMaker Pipelines parameter for a CPU type (SDK issue #5515); the
build step routes around it (``concrete_instance_type_needed``) after our rules have checked the
parameter's default and its ``enum_values``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import instance_catalog
from safe_estimators._distributions import is_enabled
from safe_estimators._distributions._sdk_source import sdk_constant
from safe_estimators._facts import tables
from safe_estimators._facts.targets import ESTIMATOR, only_for
from safe_estimators._facts.versions import (
    Container,
    framework_container,
    huggingface_container,
    nearby,
    parse_version,
)
from safe_estimators._problems import REMOVE, Fix, Problem, removing, setting, warning

if TYPE_CHECKING:
    from safe_estimators._context import Context

PATH = "distribution.torch_distributed"

# The SDK's instance test: ml.<family>.<size>, the family's first letters decide.
_SDK_INSTANCE = re.compile(r"^ml[\._]([a-z\d\-]+)\.?\w*$")


def gpu_versions() -> tuple[str, ...]:
    """The framework versions the SDK accepts for torchrun on GPU instances."""
    return tuple(sdk_constant("fw_utils.py", "TORCH_DISTRIBUTED_GPU_SUPPORTED_FRAMEWORK_VERSIONS"))


def trainium_versions() -> tuple[str, ...]:
    """The framework versions the SDK accepts for torchrun on Trainium instances."""
    return tuple(
        sdk_constant("fw_utils.py", "TRAINIUM_SUPPORTED_TORCH_DISTRIBUTED_FRAMEWORK_VERSIONS")
    )


def trainium_strategies() -> tuple[str, ...]:
    """The distribution strategies the SDK accepts on Trainium (torchrun only)."""
    return tuple(sdk_constant("fw_utils.py", "TRAINIUM_SUPPORTED_DISTRIBUTION_STRATEGIES"))


def sdk_kind(instance_type: str) -> str | None:
    """``"gpu"``, ``"trainium"`` or None (refused), as the SDK's torchrun check decides."""
    if instance_type == "local_gpu":
        return "gpu"
    match = _SDK_INSTANCE.match(instance_type)
    if not match:
        return None
    family = match[1]
    if family.startswith("trn"):
        return "trainium"
    return "gpu" if family.startswith(("p", "g")) else None


def enabled(distribution: Mapping[str, Any]) -> bool:
    """torchrun is on: the SDK reads ``torch_distributed.enabled`` (default False)."""
    return is_enabled(distribution.get("torch_distributed"))


def _framework_version(ctx: Context) -> str | None:
    spec = ctx.spec
    return spec.framework_version if spec.estimator == "pytorch" else spec.pytorch_version


def _runnable(ctx: Context, kind: str) -> list[str]:
    """Versions the SDK accepts for torchrun that also have a container to run."""
    accepted = gpu_versions() if kind == "gpu" else trainium_versions()
    if ctx.spec.estimator != "pytorch" or _uses_smp_image(ctx):
        return list(accepted)  # Hugging Face and SMP images: their own rules check the image
    table = (
        tables.IMAGE_CONFIGS[("pytorch", False)] if kind == "gpu" else tables.NEURON_IMAGE_CONFIG
    )
    return [v for v in accepted if framework_container(table, v).version == v]


def _uses_smp_image(ctx: Context) -> bool:
    smd = (ctx.spec.distribution or {}).get("smdistributed")
    return isinstance(smd, Mapping) and "modelparallel" in smd


def version_fix(ctx: Context) -> dict[str, str] | None:
    """The nearest versions torchrun takes for this job, as spec changes; None if none.

    The full version for a short alias, else the closest accepted version above the one written
    (below when none is), with a container and a py_version it is built for. A Hugging Face job
    changes transformers, PyTorch and Python together: its container pairs them.
    """
    version = _framework_version(ctx)
    kind = sdk_kind(ctx.instance_name) if ctx.instance_name else None
    if version is None or kind is None:
        return None
    if ctx.spec.estimator == "huggingface":
        return _huggingface_version_fix(ctx, version) if kind == "gpu" else None
    full = ctx.pytorch_version
    accepted = gpu_versions() if kind == "gpu" else trainium_versions()
    target = (
        full if full is not None and full in accepted else _closest(version, _runnable(ctx, kind))
    )
    if target is None:
        return None
    table = (
        tables.IMAGE_CONFIGS[("pytorch", False)] if kind == "gpu" else tables.NEURON_IMAGE_CONFIG
    )
    return {"framework_version": target, **_py_version(ctx, framework_container(table, target))}


def _closest(version: str, versions: list[str]) -> str | None:
    close = nearby(version, versions)
    try:
        above = [v for v in close if parse_version(v) > parse_version(version)]
    except Exception:
        above = []
    chosen = above or close[-1:]
    return chosen[0] if chosen else None


def _py_version(ctx: Context, container: Container) -> dict[str, str]:
    if not container.py_versions or ctx.spec.py_version in container.py_versions:
        return {}
    return {"py_version": container.py_versions[-1]}


def _huggingface_version_fix(ctx: Context, version: str) -> dict[str, str] | None:
    table = tables.IMAGE_CONFIGS[("huggingface", False)]
    written = ctx.spec.transformers_version or ""
    outer, _ = huggingface_container(table, written, version)
    pairs: dict[str, str] = {}  # PyTorch version -> the first transformers version built on it
    for transformers in outer.known:
        bases = huggingface_container(table, transformers, "")[1]
        for base in bases.known if bases else ():
            if base in gpu_versions():
                pairs.setdefault(base, transformers)
    target = _closest(version, list(pairs))
    if target is None:
        return None
    container = huggingface_container(table, pairs[target], target)[1]
    return {
        "transformers_version": pairs[target],
        "pytorch_version": target,
        **(_py_version(ctx, container) if container else {}),
    }


def torchrun_rules(ctx: Context) -> Iterator[Problem]:
    """Instance kind, framework version and entry point, as the SDK checks them, with fixes."""
    if not enabled(ctx.distribution):
        return
    spec = ctx.spec
    if isinstance(spec.entry_point, str) and not spec.entry_point.endswith(".py"):
        yield Problem(
            "entry_point",
            f"is {spec.entry_point!r}; torchrun starts Python scripts only (*.py), and the "
            "SageMaker SDK refuses anything else with torch_distributed.",
            "point entry_point at the .py training script (call a shell step from it).",
            fixes=(
                Fix(
                    (("distribution.torch_distributed", REMOVE),
                     ("distribution.mpi", {"enabled": True})),
                    "use mpi instead of torch_distributed",
                ),
            ),
        )
    if spec.image_uri is not None or (not ctx.instance_name and not ctx.local):
        return  # with image_uri the SDK checks no version or instance; unknown type: reported
    if ctx.target != ESTIMATOR:
        return  # the instance kind and versions below are the estimator's own checks
    kind = sdk_kind(ctx.instance_name)
    if kind is None:
        has = ctx.instance.describe_accelerators() if ctx.instance else "no GPUs"
        yield Problem(
            "instance_type",
            f"{ctx.instance_name} has {has} and is not a Trainium instance; torchrun "
            "(torch_distributed) runs on GPU and Trainium instances only.",
            "",
            fixes=(
                *(setting(("instance_type", name))
                  for name in ("ml.g5.12xlarge", "ml.p4d.24xlarge", "ml.trn1.32xlarge")),
                removing("distribution.torch_distributed", why="a single-process CPU job"),
            ),
        )
        return
    yield from _versions(ctx, kind)
    if ctx.parameterised:
        yield from _parameter_values(ctx, kind)


def _versions(ctx: Context, kind: str) -> Iterator[Problem]:
    version = _framework_version(ctx)
    if version is None:
        return
    accepted = gpu_versions() if kind == "gpu" else trainium_versions()
    if version in accepted:
        return
    name = "framework_version" if ctx.spec.estimator == "pytorch" else "pytorch_version"
    full = ctx.pytorch_version
    where = "GPU" if kind == "gpu" else "Trainium"
    if full is not None and full != version and full in accepted:
        yield Problem(
            name,
            f"{version!r} is a short alias of PyTorch {full}; the SageMaker SDK checks "
            "torch_distributed against full versions only and refuses the alias.",
            "",
            fixes=(setting((name, full)),),
        )
        return
    runnable = _runnable(ctx, kind)
    close = nearby(version, runnable)
    yield Problem(
        name,
        f"the SageMaker SDK runs torchrun (torch_distributed) on {where} instances with PyTorch "
        f"{', '.join(accepted)} only, not {version}.",
        "pass image_uri= for a custom container.",
        fixes=tuple(_version_fix(ctx, name, v, kind) for v in close),
    )


def _version_fix(ctx: Context, name: str, version: str, kind: str) -> Fix:
    """Set ``name`` to ``version``, with a py_version its container is built for."""
    changes: list[tuple[str, str]] = [(name, version)]
    if ctx.spec.estimator == "pytorch":
        table = (
            tables.IMAGE_CONFIGS[("pytorch", False)] if kind == "gpu"
            else tables.NEURON_IMAGE_CONFIG
        )
        changes += list(_py_version(ctx, framework_container(table, version)).items())
    text = ", ".join(f"{k}={v!r}" for k, v in changes)
    return Fix(tuple(changes), f"set {text} (a version with a training container that torchrun "
                               "accepts)")


def _parameter_values(ctx: Context, kind: str) -> Iterator[Problem]:
    """Every value a pipeline parameter may take must run torchrun like its default."""
    parameter = ctx.spec.instance_type
    name = getattr(parameter, "name", "the parameter")
    allowed = getattr(parameter, "enum_values", None) or []
    if not allowed:
        yield warning(
            "instance_type",
            f"is the pipeline parameter {name!r}, checked through its default "
            f"{ctx.instance_name}; torchrun fails at run time on any value without a GPU or "
            "Trainium.",
            f"pin the choices: ParameterString({name!r}, default_value={ctx.instance_name!r}, "
            "enum_values=[...]).",
        )
        return
    known = {t.name for t in instance_catalog.instance_types()}
    for value in allowed:
        if value in known and sdk_kind(value) != kind:  # unknown ones: pipeline parameter rule
            yield Problem(
                f"instance_type.enum_values.{value}",
                f"{value} is not a {kind.upper() if kind == 'gpu' else 'Trainium'} instance like "
                f"the default {ctx.instance_name}; torchrun (and the training image chosen for the "
                "default) would fail on it.",
                "allow only instance types of the default's kind in enum_values.",
            )


@only_for(ESTIMATOR)
def trainium_only_torchrun(ctx: Context) -> Iterator[Problem]:
    """On Trainium the SDK takes torch_distributed alone: MPI, SMDDP and the rest are refused."""
    if ctx.instance is None or not ctx.instance.family.startswith("trn"):
        return
    keys = [k for k in ctx.distribution if k != "instance_groups"]
    if ctx.model_parallel is not None:
        keys += ["smdistributed"]
    allowed = trainium_strategies()
    for key in keys:
        if key not in allowed:
            yield Problem(
                f"distribution.{key}",
                f"{ctx.instance_name} is a Trainium instance; there the SageMaker SDK runs "
                f"{' and '.join(allowed)} only, and refuses {key}.",
                f"use a GPU instance for {key}.",
                fixes=(
                    Fix(
                        (("model_parallel", REMOVE) if key == "smdistributed"
                         and "smdistributed" not in ctx.distribution
                         else (f"distribution.{key}", REMOVE),
                         ("distribution.torch_distributed", {"enabled": True})),
                        f"replace {key} with {{'torch_distributed': {{'enabled': True}}}} "
                        "(torchrun with the xla backend)",
                    ),
                ),
            )


def concrete_instance_type_needed(kwargs: Mapping[str, Any]) -> bool:
    """The SDK's torchrun check would take this pipeline-parameter instance type for a CPU.

    The build step then constructs the estimator with the parameter's default (already checked
    by our rules, with every ``enum_values`` entry of the same kind) and puts the parameter back
    before anything is sent, exactly as the SDK would have without the bug (SDK issue #5515).
    """
    instance_type = kwargs.get("instance_type")
    distribution = kwargs.get("distribution") or {}
    return (
        enabled(distribution)
        and kwargs.get("image_uri") is None
        and not isinstance(instance_type, str)
        and isinstance(getattr(instance_type, "default_value", None), str)
    )
