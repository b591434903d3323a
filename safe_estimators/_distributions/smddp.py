"""The SageMaker distributed data parallel library (SMDDP), and ``pytorchddp``.

``{"smdistributed": {"dataparallel": {"enabled": True}}}`` launches SMDDP (mpirun with
``smddprun``). The PyTorch estimator rewrites ``{"pytorchddp": X}`` into
``{"smdistributed": {"dataparallel": X}}`` (SDK 2.221.1 and later, ``pytorch/estimator.py``), so
there pytorchddp is SMDDP with all its rules; the Hugging Face estimator keeps pytorchddp as plain
PyTorch DDP over mpirun (``sagemaker_pytorch_ddp_enabled``), which none of these rules concern.

Facts and sources:
- Instance types: AWS's SMDDP support page (``SMDDPSUP`` in launcher-facts.md) lists
  ml.p3dn.24xlarge, ml.p4d.24xlarge and ml.p4de.24xlarge. The SDK enforced its own list
  (``SM_DATAPARALLEL_SUPPORTED_INSTANCE_TYPES``, still defined in ``fw_utils.py``, read here)
  until 2.221.1; it adds ml.p3.16xlarge, which older SMDDP releases and AWS's own notebooks ran
  on, so it is a warning. P5-class types are on neither list, but the SMP v2 images that bundle
  SMDDP are built for P5: under torchrun they are a warning, not a refusal.
- Without torchrun, the SDK refuses any smdistributed job on a type whose name contains
  ``p5.48xlarge`` (``estimator.py``, ``_distribution_configuration``); the limitation is the
  hardware generation's, so the rule covers the p5, p5e, p5en, p6 families and later.
- Framework versions: the SDK's ``SM_DATAPARALLEL_SUPPORTED_FRAMEWORK_VERSIONS`` (read here);
  AWS documents SMDDP for some versions the SDK refuses (PyTorch 2.3.0 in its DLC), reachable by
  passing that image as ``image_uri`` (the SDK then skips its version check).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from safe_estimators._distributions import is_enabled, torchrun
from safe_estimators._distributions._sdk_source import sdk_constant
from safe_estimators._facts import tables
from safe_estimators._facts.targets import ESTIMATOR, only_for
from safe_estimators._facts.versions import framework_container
from safe_estimators._problems import (
    REMOVE,
    Fix,
    Problem,
    did_you_mean,
    join_path,
    removing,
    setting,
    warning,
)
from safe_estimators._resolved import Injection

if TYPE_CHECKING:
    from safe_estimators._context import Context

# AWS's current list of instance types for SMDDP (SMDDPSUP, "Supported instance types").
AWS_SUPPORTED_TYPES: tuple[str, ...] = ("ml.p3dn.24xlarge", "ml.p4d.24xlarge", "ml.p4de.24xlarge")

# The keys the SDK reads under smdistributed.dataparallel.
DATAPARALLEL_KEYS: tuple[str, ...] = ("enabled", "custom_mpi_options")

# PyTorch versions AWS documents SMDDP for although the SDK's list lacks them, with the image
# that has it (SMDDPSUP, PyTorch table).
AWS_DOCUMENTED_IMAGES: dict[str, str] = {
    "2.3.0": "763104351884.dkr.ecr.<region>.amazonaws.com/"
    "pytorch-training:2.3.0-gpu-py311-cu121-ubuntu20.04-sagemaker",
}

# The SDK's test for its p5 block, a substring of the instance type (estimator.py).
_SDK_P5_NAME = "p5.48xlarge"

# The first P-family generation the SDK's smdistributed block is about (p5.48xlarge, H100).
_FIRST_BLOCKED_GENERATION = 5
_P_FAMILY = re.compile(r"^p(\d+)")


def sdk_enforced_types() -> tuple[str, ...]:
    """The instance types the SDK accepted for SMDDP until 2.221.1 (its list, still defined)."""
    types = sdk_constant("fw_utils.py", "SM_DATAPARALLEL_SUPPORTED_INSTANCE_TYPES")
    return tuple(t for t in types if t.startswith("ml."))


def sdk_versions() -> tuple[str, ...]:
    """The PyTorch versions the SDK accepts for SMDDP (without image_uri)."""
    return tuple(
        sdk_constant("fw_utils.py", "SM_DATAPARALLEL_SUPPORTED_FRAMEWORK_VERSIONS")["pytorch"]
    )


def unsupported_images() -> tuple[str, ...]:
    """Image tags the SDK refuses for smdistributed without torchrun."""
    return tuple(sdk_constant("estimator.py", "Framework.UNSUPPORTED_DLC_IMAGE_FOR_SM_PARALLELISM"))


def p5_class(family: str) -> bool:
    """P5 and later generations (p5, p5e, p5en, p6-b200, ...)."""
    match = _P_FAMILY.match(family)
    return match is not None and int(match[1]) >= _FIRST_BLOCKED_GENERATION


def smddp_path(ctx: Context) -> str | None:
    """Where the user enabled SMDDP (``distribution.pytorchddp`` in the PyTorch estimator)."""
    d = ctx.distribution
    smd = d.get("smdistributed")
    if isinstance(smd, Mapping) and is_enabled(smd.get("dataparallel")):
        return "distribution.smdistributed.dataparallel"
    if ctx.spec.estimator == "pytorch" and is_enabled(d.get("pytorchddp")):
        return "distribution.pytorchddp"
    return None


def _uses_smdistributed(ctx: Context) -> bool:
    d = ctx.distribution
    return "smdistributed" in d or (ctx.spec.estimator == "pytorch" and "pytorchddp" in d)


@only_for(ESTIMATOR)
def dataparallel_shape(ctx: Context) -> Iterator[Problem]:
    """smdistributed.dataparallel is a mapping of the keys the SDK reads."""
    smd = ctx.distribution.get("smdistributed")
    if not isinstance(smd, Mapping) or "dataparallel" not in smd:
        return
    path = "distribution.smdistributed.dataparallel"
    block = smd["dataparallel"]
    if not isinstance(block, Mapping):
        yield Problem(
            path,
            f"must be a mapping like {{'enabled': True}}, got {type(block).__name__} {block!r}.",
            "write dataparallel: {enabled: true}.",
        )
        return
    for key, value in block.items():
        if key not in DATAPARALLEL_KEYS:
            yield Problem(
                join_path(path, key),
                f"{key!r} is not read by the SageMaker SDK for SMDDP; it would be ignored.",
                did_you_mean(str(key), DATAPARALLEL_KEYS)
                or f"use: {', '.join(DATAPARALLEL_KEYS)}.",
            )
        elif key == "enabled" and type(value) is not bool:
            yield Problem(
                join_path(path, key),
                f"must be true or false, got {value!r}.",
                "write enabled: true (a bool, not a string).",
            )
        elif key == "custom_mpi_options" and not isinstance(value, str):
            yield Problem(
                join_path(path, key),
                f"must be a string of mpirun options, got {type(value).__name__} {value!r}.",
                "write it as one string, e.g. '-verbose -x NCCL_DEBUG=VERSION'.",
            )


@only_for(ESTIMATOR)
def smddp_rules(ctx: Context) -> Iterator[Problem]:
    """Instance types, versions, the p5 block and the images the SDK refuses, with fixes."""
    d = ctx.distribution
    if ctx.spec.estimator == "pytorch" and "pytorchddp" in d and "smdistributed" in d:
        yield Problem(
            "distribution.pytorchddp",
            "the PyTorch estimator turns pytorchddp into smdistributed.dataparallel, and this "
            "job already has smdistributed; the SageMaker SDK refuses both together.",
            "",
            fixes=(
                removing("distribution.pytorchddp", why="smdistributed.dataparallel for SMDDP"),
                Fix(
                    (("distribution.pytorchddp", REMOVE), ("distribution.smdistributed", REMOVE),
                     ("distribution.torch_distributed", {"enabled": True})),
                    "replace both with torch_distributed: {'enabled': True} for plain DDP",
                ),
            ),
        )
    yield from _p5_without_torchrun(ctx)
    yield from _unsupported_image(ctx)
    path = smddp_path(ctx)
    if path is None:
        return
    yield from _instance_type(ctx, path)
    yield from _versions(ctx, path)


def _instance_type(ctx: Context, path: str) -> Iterator[Problem]:
    instance = ctx.instance
    if instance is None or instance.accelerator_kind != "gpu":
        return  # unknown types and CPUs are reported by their own rules
    name = ctx.instance_name
    if name in AWS_SUPPORTED_TYPES:
        return
    supported = ", ".join(AWS_SUPPORTED_TYPES)
    if name in sdk_enforced_types():
        yield Problem(
            path,
            f"AWS's SMDDP support list no longer names {name} ({supported}); older SMDDP releases "
            "ran on it, and newer ones get no tuning for it.",
            "use torch_distributed instead of SMDDP.",
            "warning",
            fixes=(
                setting(("instance_type", "ml.p4d.24xlarge"), why="SMDDP's optimised collectives"),
            ),
        )
        return
    if p5_class(instance.family):
        if torchrun.enabled(ctx.distribution) and ctx.spec.estimator == "pytorch":  # HF: dropped
            yield warning(
                path,
                f"AWS's SMDDP support list ({supported}) does not name {name}; SMDDP's optimised "
                "collectives may be unavailable on it.",
                "check that your container's SMDDP release supports it, or use the nccl backend.",
            )
        return  # without torchrun the p5 rule refuses it
    older = [t for t in sdk_enforced_types() if t not in AWS_SUPPORTED_TYPES]
    yield Problem(
        path,
        f"SMDDP runs on {supported} only (older releases also on {', '.join(older)}), not on "
        f"{name} ({instance.gpu_count} x {instance.accelerator_name}).",
        "",
        fixes=(
            *(setting(("instance_type", kind)) for kind in ("ml.p4d.24xlarge", "ml.p4de.24xlarge")),
            Fix(
                ((path, REMOVE), ("distribution.torch_distributed", {"enabled": True})),
                f"plain PyTorch DDP on {name}: replace {path.removeprefix('distribution.')} with "
                "torch_distributed: {'enabled': True} (the nccl backend)",
            ),
        ),
    )


def _versions(ctx: Context, path: str) -> Iterator[Problem]:
    spec = ctx.spec
    version = spec.framework_version if spec.estimator == "pytorch" else spec.pytorch_version
    if spec.image_uri is not None or version is None or version in sdk_versions():
        return
    name = "framework_version" if spec.estimator == "pytorch" else "pytorch_version"
    accepted = sdk_versions()
    runnable = [
        v
        for v in accepted
        if framework_container(tables.IMAGE_CONFIGS[("pytorch", False)], v).version == v
    ]
    documented = AWS_DOCUMENTED_IMAGES.get(ctx.pytorch_version or version)
    extra = (
        f"; AWS ships SMDDP for PyTorch {version} in {documented}: pass it as image_uri (the SDK "
        "then skips its version check)"
        if documented
        else ""
    )
    yield Problem(
        name,
        f"the SageMaker SDK runs SMDDP ({path.removeprefix('distribution.')}) with PyTorch up to "
        f"{accepted[-1]} only ({', '.join(runnable[-4:])}, ...), not {version}.",
        extra.removeprefix("; ") + "." if extra else "",
        fixes=(_version_fix(ctx, name, runnable[-1]),),
    )


def _version_fix(ctx: Context, name: str, version: str) -> Fix:
    """``name`` set to ``version``, with a py_version its container is built for."""
    container = framework_container(tables.IMAGE_CONFIGS[("pytorch", False)], version)
    changes: list[tuple[str, str]] = [(name, version)]
    if container.py_versions and ctx.spec.py_version not in container.py_versions:
        changes.append(("py_version", container.py_versions[-1]))
    return setting(*changes)


def _p5_without_torchrun(ctx: Context) -> Iterator[Problem]:
    if not _uses_smdistributed(ctx) or torchrun.enabled(ctx.distribution):
        return
    if ctx.spec.estimator == "huggingface" and is_enabled(ctx.distribution.get("pytorchddp")):
        return  # that branch never reaches the SDK's p5 test; dropped.py reports the drop
    key = "smdistributed" if "smdistributed" in ctx.distribution else "pytorchddp"
    fix = ""
    fixes: tuple[Fix, ...] = (
        Fix(
            (("distribution.torch_distributed", {"enabled": True}),),
            "add 'torch_distributed': {'enabled': True} to the distribution",
        ),
    )
    if ctx.spec.estimator == "huggingface":
        fixes = ()
        # Its torchrun branch sends no SMDDP setting (dropped.py): torchrun alone, or the
        # PyTorch estimator, which sends both.
        version = ctx.pytorch_version or ctx.spec.pytorch_version
        fix = (
            "the Hugging Face estimator drops SMDDP under torchrun, so build with the PyTorch "
            f"estimator (estimator: pytorch{f', framework_version={version!r}' if version else ''}"
            "; transformers in requirements.txt) with 'torch_distributed': {'enabled': True} "
            "beside smdistributed; or replace smdistributed with torch_distributed (the nccl "
            "backend)."
        )
    if ctx.instance is not None and p5_class(ctx.instance.family):
        yield Problem(
            f"distribution.{key}",
            f"{ctx.instance_name} is a P5-class instance; there the SageMaker SDK runs the "
            "smdistributed libraries only under torchrun, not under mpirun.",
            fix,
            fixes=fixes,
        )
        return
    for group in ctx.spec.instance_groups or ():
        if _SDK_P5_NAME in group.instance_type:
            yield Problem(
                f"distribution.{key}",
                f"group {group.instance_group_name!r} is {group.instance_type}; the SageMaker SDK "
                "refuses smdistributed without torchrun when any group is a P5 instance.",
                (fix + " Or m" if fix else "M") + "ove that group to another instance type.",
                fixes=fixes,
            )


def _unsupported_image(ctx: Context) -> Iterator[Problem]:
    image = ctx.spec.image_uri
    raw = ctx.spec.distribution or {}
    if not isinstance(image, str) or "smdistributed" not in raw or torchrun.enabled(raw):
        return
    for tag in unsupported_images():
        if tag in image:
            yield Problem(
                "image_uri",
                f"{image} ({tag}) does not ship the smdistributed libraries for mpirun; the "
                "SageMaker SDK refuses it with smdistributed unless torchrun launches.",
                "use another image.",
                fixes=(
                    Fix(
                        (("distribution.torch_distributed", {"enabled": True}),),
                        "add 'torch_distributed': {'enabled': True}",
                    ),
                ),
            )


def resolve_smddp(ctx: Context, kwargs: dict[str, Any], record: list[Injection]) -> None:
    """Write pytorchddp as the SMDDP it becomes in the PyTorch estimator, and record it."""
    distribution = kwargs.get("distribution")
    if ctx.spec.estimator != "pytorch" or not distribution or "pytorchddp" not in distribution:
        return
    block = distribution.pop("pytorchddp")
    distribution["smdistributed"] = {"dataparallel": block}
    record.append(
        Injection(
            "distribution.smdistributed.dataparallel",
            block,
            "rewritten from pytorchddp: the SageMaker PyTorch estimator (SDK 2.221.1 and later) "
            "runs pytorchddp as SMDDP, so the job was checked as SMDDP; for plain PyTorch DDP "
            "use torch_distributed.",
        )
    )
