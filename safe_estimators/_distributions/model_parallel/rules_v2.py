"""The SMP v2 rules: the options against each other, the cluster, the container and the SDK.

They run when the container's PyTorch is 2.0.1 or later (the library v2, ``torch.sagemaker``,
launched by torchrun from the SDK's ``smdistributed-modelparallel`` image). Each rule is a small
pure function of a ``JobV2`` returning problems; the facts are tables in ``facts_v2``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import attrs
from packaging.version import InvalidVersion, Version

from safe_estimators._distributions.model_parallel.facts import MPI_OPTIONS
from safe_estimators._distributions.model_parallel.facts_v2 import (
    AWS_IMAGE_CUDA,
    LIBRARY_BY_PYTORCH,
    PARAMETERS,
    SMP_IMAGE_CONFIG,
    SUPPORTED_INSTANCES,
    V1_ON_V2,
    sdk_image_cuda,
    smp_image_keys,
    smp_py_versions,
    smp_pytorch_versions,
)
from safe_estimators._distributions.model_parallel.hardware import (
    needs_gpus,
    no_gpus_problem,
    unlisted_instance,
)
from safe_estimators._distributions.model_parallel.layout import ParallelLayout, layout_v2_of
from safe_estimators._distributions.model_parallel.options import ModelParallel, set_options
from safe_estimators._facts.versions import parse_version
from safe_estimators._problems import Fix, Problem, join_path, removing, run_rules, setting, warning

# The ids of the rules below are smp-v2-<name> (see _problems.rule_id).
RULE_PREFIX = "smp-v2"


@attrs.frozen
class JobV2:
    """What a v2 rule sees: the options plus the cluster, the container and the estimator."""

    mp: ModelParallel
    instance_type: str
    gpus: int
    instance_count: int
    framework_version: str | None  # as the user wrote it: the SDK puts it in the image tag
    library: Version | None
    estimator: str
    py_version: str | None
    entry_point: object
    path: str

    def where(self, name: str) -> str:
        return self.mp._origins.get(name) or join_path(self.path, name)

    @property
    def block_path(self) -> str:
        """Where the user asked for model parallelism: model_parallel= or the raw distribution."""
        mp = self.mp
        raw = (
            mp._torch_distributed is not None
            or mp._mpi
            or any(where.startswith("distribution.") for where in mp._origins.values())
        )
        return "distribution.smdistributed.modelparallel" if raw else self.path

    @functools.cached_property
    def layout(self) -> ParallelLayout:  # every rule reads it; the job is frozen
        return layout_v2_of(self.mp, self.gpus, self.instance_count)

    def cluster(self) -> str:
        return f"{self.instance_count} x {self.instance_type}, {self.gpus} GPUs each"


_Rule = Callable[[JobV2], list[Problem]]


def _pytorch_fix() -> str:
    return f"set framework_version to one of {', '.join(smp_pytorch_versions())}"


def _rule_estimator(job: JobV2) -> list[Problem]:
    """The library v2 runs only through the SDK's PyTorch estimator: the Hugging Face estimator
    looks the SMP image up by the transformers version and drops mp_parameters on its
    torch_distributed path."""
    if job.estimator == "pytorch":
        return []
    # The SDK's Hugging Face estimator looks the SMP image up by the transformers version
    # ("Unsupported pytorch-smp version: 4.36.0") and, on its torch_distributed path, never
    # emits mp_parameters, so the library would start without its configuration.
    return [
        Problem(
            job.block_path,
            "the model parallel library v2 (PyTorch >= 2.0.1) runs only through the SageMaker "
            "SDK's PyTorch estimator: the Hugging Face estimator looks its image up by the "
            "transformers version, which the SMP image table does not have, and drops "
            "mp_parameters (the library's configuration) on its torch_distributed path.",
            f"build with safe_estimators.pytorch(...) and {_pytorch_fix()}; install "
            "transformers in the script's requirements.txt. Or use pytorch_version 2.0.0 or "
            "older for the library v1.",
        )
    ]


def _rule_instance(job: JobV2) -> list[Problem]:
    """The library v2 runs on the GPU instance types it supports."""
    if job.gpus <= 0:
        return [no_gpus_problem(job.instance_type, "use ml.p4d.24xlarge or ml.p5.48xlarge.")]
    return unlisted_instance(job.instance_type, SUPPORTED_INSTANCES, "v2")


def _rule_container(job: JobV2) -> list[Problem]:
    """framework_version must be a PyTorch version the SDK has an SMP v2 image for (not a
    library release), with a py_version and CUDA that image is built for."""
    version = job.framework_version
    if version is None or job.estimator != "pytorch":
        return []  # a custom image is the user's business; Hugging Face is refused above
    known = smp_pytorch_versions()
    if version in known:
        problems = _image_cuda(job, version)
        py_versions = smp_py_versions(version)
        if py_versions and job.py_version is not None and job.py_version not in py_versions:
            problems.append(
                Problem(
                    "py_version",
                    f"the SageMaker SDK's model parallel v2 image for PyTorch {version} is built "
                    f"for {', '.join(py_versions)}, not {job.py_version!r}.",
                    "",
                    fixes=(setting(("py_version", py_versions[-1])),),
                )
            )
        return problems
    if version in smp_image_keys():
        why = (
            f"{version} is a model parallel library release in the SDK's {SMP_IMAGE_CONFIG} "
            "table, not a PyTorch version; the SDK would build the image tag "
            f"smdistributed-modelparallel:{version}-gpu-..., which does not exist"
        )
    else:
        full = [v for v in known if v.startswith(f"{version}.")]
        if full:
            why = (
                f"{version!r} is a short version; the SDK would put it into the image tag "
                f"as it is (smdistributed-modelparallel:{version}-gpu-...), and AWS publishes "
                f"the full version ({full[-1]})"
            )
        else:
            why = f"AWS publishes no model parallel v2 image for PyTorch {version}"
    return [
        Problem(
            "framework_version",
            f"{why}. PyTorch containers from 2.0.1 on run the model parallel library v2 from "
            f"its own image, which exists for PyTorch {', '.join(known)}.",
            f"{_pytorch_fix()} (nearest: {_nearest(version, known)}).",
            fixes=_smp_version_fixes(job, [_nearest(version, known)]),
        )
    ]


def _image_cuda(job: JobV2, version: str) -> list[Problem]:
    sdk, aws = sdk_image_cuda(version, job.instance_type), AWS_IMAGE_CUDA.get(version)
    if aws is None or sdk == aws:
        return []
    tag = f"{version}-gpu-{job.py_version or '<py>'}"
    return [
        warning(
            "framework_version",
            f"on {job.instance_type} the SageMaker SDK picks the image tag "
            f"smdistributed-modelparallel:{tag}-{sdk}, but AWS's release notes list only "
            f"{tag}-{aws} for PyTorch {version}.",
            f"if the job cannot pull the image, pass image_uri="
            f"'658645717510.dkr.ecr.<region>.amazonaws.com/smdistributed-modelparallel:{tag}-{aws}'.",
        )
    ]


def _nearest(version: str, known: tuple[str, ...]) -> str:
    try:
        wanted = parse_version(version)
    except InvalidVersion:
        return known[-1]
    below = [v for v in known if parse_version(v) <= wanted]
    return below[-1] if below else known[0]


def _rule_options_available(job: JobV2) -> list[Problem]:
    """Each option set must exist in the library version the image ships (the version each
    option arrived in, from AWS's SMP v2 release notes)."""
    if job.library is None:
        return []
    problems = []
    for name in set_options(job.mp):
        since = PARAMETERS.get(name)
        if since is None or job.library >= parse_version(since):
            continue
        containers = [
            pt for pt, lib in LIBRARY_BY_PYTORCH.items() if parse_version(lib) >= Version(since)
        ]
        problems.append(
            Problem(
                job.where(name),
                f"{name} arrived in model parallel library {since}, but the PyTorch "
                f"{job.framework_version} image ships library {job.library}.",
                f"use framework_version {', '.join(containers)}.",
                fixes=(removing(job.where(name)),),
            )
        )
    return problems


def _rule_v1_launcher(job: JobV2) -> list[Problem]:
    """An MPI distribution launches the library v1, which the v2 images do not have: v2 runs
    under torchrun (torch_distributed)."""
    if not job.mp._mpi:
        return []
    # Without torch_distributed the SDK starts mpirun in the plain PyTorch image, which has no
    # model parallel library v1; and a v1 script (smdistributed.modelparallel) does not run on
    # the library v2.
    container = f"PyTorch {job.framework_version}" if job.framework_version else "this container"
    return [
        Problem(
            "distribution.mpi",
            f"this distribution launches the model parallel library v1 through MPI, but "
            f"{container} has the library v2 (torch.sagemaker), which runs under torchrun; "
            "the PyTorch image has no library v1.",
            "replace mpi with torch_distributed: {enabled: True} and port the script to "
            "torch.sagemaker (tsm.init()), or use framework_version 2.0.0 or older for the "
            "library v1.",
        )
    ]


def _rule_v1_options(job: JobV2) -> list[Problem]:
    """Options of the library v1 that v2 does not read, each with its v2 counterpart where there
    is one."""
    problems = []
    for name, value in set_options(job.mp).items():
        if name in PARAMETERS or (job.mp._mpi and name in MPI_OPTIONS):
            continue  # the mpi block as a whole is reported by _rule_v1_launcher
        problems += _v1_option(job, name, value)
    return problems


def _smp_version_fixes(job: JobV2, versions: list[str]) -> tuple[Fix, ...]:
    """framework_version set to each of ``versions`` (with a py_version its SMP v2 image is
    built for)."""
    fixes = []
    for version in versions:
        changes: list[tuple[str, str]] = [("framework_version", version)]
        python = smp_py_versions(version)
        if python and job.py_version not in python:
            changes.append(("py_version", python[-1]))
        fixes.append(setting(*changes))
    return tuple(fixes)


def _v1_option(job: JobV2, name: str, value: object) -> list[Problem]:
    here = job.where(name)
    on_v2 = (
        f"the PyTorch {job.framework_version} container runs the model parallel library v2"
        if job.framework_version
        else "this job runs the model parallel library v2"
    )
    known = V1_ON_V2.get(name)
    if name == "processes_per_host" and value != job.gpus:
        return [
            Problem(
                here,
                f"processes_per_host is {value}, but {on_v2}, whose launcher (torchrun) starts "
                f"one process per GPU: {job.gpus} on {job.instance_type}.",
                "to use fewer GPUs pick a smaller instance type.",
                fixes=(removing(here),),
            )
        ]
    lost = known is not None and (
        known.lost == "always"
        or (known.lost == "above_one" and isinstance(value, int) and value > 1)
        or (known.lost == "when_true" and value is True)
    )
    counterpart = (
        f" Its v2 counterpart is {known.counterpart}." if known and known.counterpart else ""
    )
    if lost:
        assert known is not None
        return [
            Problem(
                here,
                f"{name} = {value!r} is an option of the library v1, and {on_v2}, which ignores "
                f"it: what it asks for would silently not happen.{counterpart}",
                known.advice,
            )
        ]
    return [
        warning(
            here,
            f"{name} is an option of the library v1 and has no effect on the library v2 ({on_v2}); "
            f"it is left out of mp_parameters.{counterpart}",
            known.advice if known else "",
            fixes=() if known else (removing(here),),
        )
    ]


_PER_INSTANCE_DEGREES = (
    "tensor_parallel_degree",
    "context_parallel_degree",
    "expert_parallel_degree",
)


@needs_gpus
def _rule_degrees_divide_gpus(job: JobV2) -> list[Problem]:
    """tensor, expert and context parallel degrees must divide the GPUs per instance."""
    problems = []
    for name in _PER_INSTANCE_DEGREES:
        degree = getattr(job.mp, name)
        if degree is None or job.gpus % degree == 0:
            continue
        fitting = [d for d in range(1, job.gpus + 1) if job.gpus % d == 0 and d > 1]
        problems.append(
            Problem(
                job.where(name),
                f"{name} ({degree}) must divide the GPUs per instance: {job.instance_type} has "
                f"{job.gpus}.",
                f"use one of {', '.join(map(str, fitting)) or '1'}.",
                fixes=tuple(
                    setting((job.where(name), d))
                    for d in [max((d for d in fitting if d < degree), default=1)]
                ),
            )
        )
    return problems


@needs_gpus
def _rule_degrees_divide_world(job: JobV2) -> list[Problem]:
    """hybrid_shard_degree ranges from 0 to the world size, and hybrid shard x tensor x expert
    parallel degrees must divide the job's GPUs."""
    mp, layout = job.mp, job.layout
    shard = mp.hybrid_shard_degree or 1
    group = shard * layout.tensor * layout.expert
    problems = []
    if mp.hybrid_shard_degree is not None and mp.hybrid_shard_degree > layout.world_size:
        problems.append(
            Problem(
                job.where("hybrid_shard_degree"),
                f"hybrid_shard_degree ({mp.hybrid_shard_degree}) is more than the job's "
                f"{layout.world_size} GPUs ({job.cluster()}); it ranges from 0 to the world size.",
                "",
                fixes=(
                    setting((job.where("hybrid_shard_degree"), layout.world_size)),
                    setting((job.where("hybrid_shard_degree"), 0),
                            why="0 shards over the whole cluster"),
                ),
            )
        )
    elif layout.world_size % group and all(
        job.gpus % (getattr(mp, n) or 1) == 0 for n in _PER_INSTANCE_DEGREES
    ):  # a degree that does not divide the GPUs per instance is reported once, above
        named = [
            f"{label} ({value})"
            for label, value in (
                ("hybrid shard", shard),
                ("tensor", layout.tensor),
                ("expert", layout.expert),
            )
            if value > 1
        ]
        blame = next(
            n
            for n in ("hybrid_shard_degree", "tensor_parallel_degree", "expert_parallel_degree")
            if getattr(mp, n) not in (None, 0, 1)
        )
        problems.append(
            Problem(
                job.where(blame),
                f"{' x '.join(named)} = {group} GPUs per model replica, which does not divide "
                f"the job's {layout.world_size} GPUs ({job.cluster()}).",
                f"choose degrees whose product divides {layout.world_size}.",
            )
        )
    return problems


def _rule_context_within_shard(job: JobV2) -> list[Problem]:
    """Context parallelism splits the sequence inside the shard group: context_parallel_degree
    must be at most hybrid_shard_degree (AWS's reference)."""
    context, shard = job.mp.context_parallel_degree or 1, job.mp.hybrid_shard_degree
    if context <= 1:
        return []
    here = job.where("context_parallel_degree")
    if not shard:
        return [
            warning(
                here,
                f"context_parallel_degree is {context} and hybrid_shard_degree is "
                f"{'not set' if shard is None else 0} (FSDP over the whole cluster); AWS's "
                "reference requires context_parallel_degree <= hybrid_shard_degree.",
                f"set hybrid_shard_degree to a multiple of {context} that divides the world size.",
            )
        ]
    if context > shard:
        return [
            Problem(
                here,
                f"context_parallel_degree ({context}) must be at most hybrid_shard_degree "
                f"({shard}): context parallelism splits the sequence inside the shard group.",
                "",
                fixes=(
                    setting((job.where("hybrid_shard_degree"), context)),
                    setting((here, shard)),
                ),
            )
        ]
    return []


def _rule_expert_without_tensor(job: JobV2) -> list[Problem]:
    """AWS's expert parallelism guide says expert parallelism does not work with tensor
    parallelism."""
    expert, tensor = job.mp.expert_parallel_degree or 1, job.mp.tensor_parallel_degree or 1
    if expert <= 1 or tensor <= 1:
        return []
    return [
        Problem(
            job.where("expert_parallel_degree"),
            f"expert_parallel_degree ({expert}) with tensor_parallel_degree ({tensor}): AWS's "
            "expert parallelism guide says expert parallelism does not work with tensor "
            "parallelism.",
            "",
            fixes=(
                setting((job.where("tensor_parallel_degree"), 1),
                        why="combine expert parallelism with hybrid_shard_degree instead"),
                removing(job.where("expert_parallel_degree")),
            ),
        )
    ]


def _rule_activation_loading_horizon(job: JobV2) -> list[Problem]:
    """activation_loading_horizon is a positive number of layers (the library's default is 2); 0
    is refused."""
    if job.mp.activation_loading_horizon != 0:
        return []
    return [
        Problem(
            job.where("activation_loading_horizon"),
            "activation_loading_horizon is 0; the library v2 takes a positive number of layers.",
            "use 1 or more.",
            fixes=(setting((job.where("activation_loading_horizon"), 2),
                           why="the library's default"),),
        )
    ]


def _rule_entry_point(job: JobV2) -> list[Problem]:
    """torchrun runs Python files: the SDK's validate_torch_distributed_distribution refuses an
    entry point that is not a .py file."""
    entry = job.entry_point
    if not isinstance(entry, str) or entry.endswith(".py"):
        return []
    # validate_torch_distributed_distribution refuses it (torchrun runs Python files).
    return [
        Problem(
            "entry_point",
            f"{entry!r} is not a .py file; the model parallel library v2 runs under torchrun, "
            "which the SageMaker SDK allows only for Python scripts.",
            "point entry_point at the training script (train.py) and start anything else from it.",
        )
    ]


RULES: tuple[_Rule, ...] = (
    _rule_estimator,
    _rule_instance,
    _rule_container,
    _rule_options_available,
    _rule_v1_launcher,
    _rule_v1_options,
    _rule_degrees_divide_gpus,
    _rule_degrees_divide_world,
    _rule_context_within_shard,
    _rule_expert_without_tensor,
    _rule_activation_loading_horizon,
    _rule_entry_point,
)


def check_v2(job: JobV2) -> list[Problem]:
    """Run every v2 rule; all problems (errors and warnings)."""
    return run_rules(RULES, job)
