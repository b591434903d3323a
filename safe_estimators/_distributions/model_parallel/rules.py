"""The SMP v1 rules: how the options relate to each other, the cluster and the container.

They run when the container's PyTorch is 2.0.0 or older (or a custom image with v1 options);
``rules_v2`` holds the library v2's.

Each rule is a small pure function of a ``JobV1`` (the options plus the instance type, GPU count,
instance count, library version and hyperparameters) returning problems; ``check_model_parallel``
runs them all. The facts they read are tables in ``facts``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping

import attrs
from packaging.version import InvalidVersion, Version

from safe_estimators._distributions.model_parallel.facts import (
    BATCH_SIZE_HYPERPARAMETERS,
    LAST_V1_PYTORCH,
    LAUNCH_KEYS_VALIDATED_FROM,
    LIBRARY_BY_PYTORCH,
    OVERLAPPING_ALLREDUCE_LAUNCH_UNTIL,
    PARAMETERS,
    PLACEMENT_ROUTES,
    SDP_OPTIONS,
    SDP_WITH_TENSOR_SINCE,
    SUPPORTED_INSTANCES,
    TENSORFLOW_ONLY,
    V1_COUNTERPARTS,
)
from safe_estimators._distributions.model_parallel.facts_v2 import PARAMETERS as V2_PARAMETERS
from safe_estimators._distributions.model_parallel.facts_v2 import smp_pytorch_versions
from safe_estimators._distributions.model_parallel.hardware import (
    bf16_hardware_problems,
    needs_gpus,
    no_gpus_problem,
    unlisted_instance,
)
from safe_estimators._distributions.model_parallel.layout import ParallelLayout, layout_of
from safe_estimators._distributions.model_parallel.options import ModelParallel, set_options
from safe_estimators._facts.versions import parse_version
from safe_estimators._problems import (
    Problem,
    count,
    join_path,
    removing,
    run_rules,
    setting,
    warning,
)

# The ids of the rules below are smp-v1-<name> (see _problems.rule_id).
RULE_PREFIX = "smp-v1"


@attrs.frozen
class JobV1:
    """What a v1 rule sees: the options plus the cluster and container facts.

    ``pytorch_version`` is the full container version with aliases resolved (``"1.12.1"``, not
    ``"1.12"``); None (a custom image) skips the checks that depend on the library version.
    """

    mp: ModelParallel
    instance_type: str
    gpus: int
    instance_count: int
    pytorch_version: str | None
    library: Version | None
    hyperparameters: Mapping[str, object]
    path: str

    def where(self, name: str) -> str:
        return self.mp._origins.get(name) or join_path(self.path, name)

    @functools.cached_property
    def layout(self) -> ParallelLayout:  # every rule reads it; the job is frozen
        return layout_of(self.mp, self.gpus, self.instance_count)

    @property
    def replica(self) -> int:
        """Processes holding one model replica (pipeline x tensor)."""
        return self.layout.pipeline * self.layout.tensor

    @property
    def data_parallel(self) -> int | None:
        """The data-parallel degree, or None when the replica does not divide the world."""
        world = self.layout.world_size
        return world // self.replica if world % self.replica == 0 else None

    def cluster(self) -> str:
        per_host = self.layout.processes_per_host
        each = (
            f"{count(self.gpus, 'GPU')} each"
            if per_host == self.gpus
            else f"{per_host} process{'' if per_host == 1 else 'es'} each"
        )
        return f"{self.instance_count} x {self.instance_type}, {each}"


_Rule = Callable[[JobV1], list[Problem]]


def _rule_instance(job: JobV1) -> list[Problem]:
    """The library v1 runs on GPU instance types it supports; the SageMaker SDK refuses
    smdistributed on ml.p5.48xlarge unless torch_distributed is on, which v1 does not use."""
    itype = job.instance_type
    if job.gpus <= 0:
        return [no_gpus_problem(itype, "use a GPU instance such as ml.p4d.24xlarge (8 GPUs).")]
    if "p5.48xlarge" in itype:  # the SDK's own test in Framework._distribution_configuration
        return [
            Problem(
                "instance_type",
                f"the SageMaker SDK refuses smdistributed on {itype} unless torch_distributed is "
                "enabled, which the model parallel library v1 does not use.",
                "move to the library v2 (PyTorch >= 2.0.1).",
                fixes=tuple(
                    setting(("instance_type", name)) for name in ("ml.p4d.24xlarge",
                                                                  "ml.p4de.24xlarge")
                ),
            )
        ]
    return unlisted_instance(itype, SUPPORTED_INSTANCES, "v1")


def _rule_container(job: JobV1) -> list[Problem]:
    """The PyTorch container must ship the model parallel library v1: a full container version
    the library table knows, not newer than the last v1 container."""
    version = job.pytorch_version
    if version is None or job.library is not None:
        return []
    containers = f"{min(LIBRARY_BY_PYTORCH, key=Version)} to {LAST_V1_PYTORCH}"
    full = [v for v in LIBRARY_BY_PYTORCH if v.startswith(f"{version}.")]
    if full:
        return [
            Problem(
                job.path,
                f"PyTorch version {version!r} is a short alias; the library table is keyed by "
                "full container versions.",
                f"resolve it first (the SDK's pytorch.json aliases, e.g. {full[-1]}).",
            )
        ]
    try:
        newer = parse_version(version) > parse_version(LAST_V1_PYTORCH)
    except InvalidVersion:
        return [
            Problem(
                job.path,
                f"cannot read the PyTorch version {version!r}.",
                "pass the container's full PyTorch version, such as '1.13.1'.",
            )
        ]
    if newer:
        return [
            Problem(
                job.path,
                f"the PyTorch {version} container has no model parallel library v1; v1 ends with "
                f"PyTorch {LAST_V1_PYTORCH} (library {LIBRARY_BY_PYTORCH[LAST_V1_PYTORCH]}). "
                "Newer containers use the library v2, launched through torch_distributed.",
                f"use framework_version {LAST_V1_PYTORCH} or older for these options, or move "
                "to the model parallel library v2.",
            )
        ]
    return [
        Problem(
            job.path,
            f"the PyTorch {version} container does not ship the model parallel library v1 "
            f"(the containers that do: PyTorch {containers}).",
            f"use a framework_version from {containers}.",
        )
    ]


def _rule_parameters_available(job: JobV1) -> list[Problem]:
    """Each option set must exist in the library version the container ships; an option a later
    version superseded is a warning naming its replacement."""
    if job.library is None:
        return []
    problems = []
    for name in set_options(job.mp):
        # The pipeline degree is written under whichever name the container's library reads
        # (see _pipeline_degree_name in resolve), so neither spelling is gated.
        facts = PARAMETERS.get(name)
        if facts is None or name == "pipeline_parallel_degree":
            continue
        if facts.since and job.library < parse_version(facts.since):
            problems.append(
                Problem(
                    job.where(name),
                    f"{name} needs model parallel library >= {facts.since}, but the PyTorch "
                    f"{job.pytorch_version} container ships {job.library}.",
                    _container_hint(parse_version(facts.since)),
                )
            )
        elif facts.superseded_in and job.library >= parse_version(facts.superseded_in):
            problems.append(
                warning(
                    job.where(name),
                    f"{name} is superseded by {facts.replacement} from library "
                    f"{facts.superseded_in} (the PyTorch {job.pytorch_version} container ships "
                    f"{job.library}).",
                    f"use {facts.replacement} instead.",
                )
            )
    return problems


def _container_hint(required: Version) -> str:
    fitting = sorted(
        (pt for pt, lib in LIBRARY_BY_PYTORCH.items() if parse_version(lib) >= required),
        key=parse_version,
    )
    return f"use framework_version {fitting[0]} to {fitting[-1]}."


@needs_gpus
def _rule_processes_per_host(job: JobV1) -> list[Problem]:
    """The library needs one GPU per process: processes_per_host must not exceed the instance's
    GPUs (checked at start-up on each node)."""
    # The library checks node-local processes against the node's devices at start-up. There is
    # no per-host rule for the pipeline degree (its _validate_worker_size needs only pipeline x
    # tensor to divide the world): AWS's GPT-J notebook runs pipeline 16 on 4 x 8 GPUs.
    per_host = job.layout.processes_per_host
    if per_host <= job.gpus:
        return []
    return [
        Problem(
            job.where("processes_per_host"),
            f"{per_host} processes per host, but {job.instance_type} has "
            f"{count(job.gpus, 'GPU')}; "
            "the library needs one GPU per process.",
            f"use {_bigger_instance(job, lambda gpus: gpus >= per_host)}.",
            fixes=(setting((job.where("processes_per_host"), job.gpus)),),
        )
    ]


@needs_gpus
def _rule_degrees_divide_world(job: JobV1) -> list[Problem]:
    """pipeline x tensor parallel degrees (the processes per model replica) must divide the
    job's processes, or the library cannot form whole replicas."""
    layout = job.layout
    if job.data_parallel is not None:
        return []
    blame = (
        "tensor_parallel_degree" if job.mp.tensor_parallel_degree else "pipeline_parallel_degree"
    )
    return [
        Problem(
            job.where(blame),
            f"pipeline ({layout.pipeline}) x tensor ({layout.tensor}) = {job.replica} processes "
            f"per model replica, but the job has {layout.world_size} ({job.cluster()}).",
            f"lower the degrees so their product divides {layout.world_size}, or use "
            f"{_bigger_instance(job, lambda gpus: gpus * job.instance_count % job.replica == 0)}.",
        )
    ]


def _bigger_instance(job: JobV1, fits: Callable[[int], bool]) -> str:
    """Name a supported instance type with more GPUs that ``fits``, same family first."""
    parts = job.instance_type.split(".")
    family = parts[1] if len(parts) > 2 else ""
    fitting = [
        (itype, gpus)
        for itype, gpus in SUPPORTED_INSTANCES.items()
        if gpus > job.gpus and fits(gpus)
    ]
    fitting.sort(key=lambda item: item[0].split(".")[1] != family)
    if fitting:
        return f"{fitting[0][0]} ({fitting[0][1]} GPUs)"
    return "more instances"


@needs_gpus
def _rule_sharded_data_parallel(job: JobV1) -> list[Problem]:
    """sharded_data_parallel_degree must divide the data-parallel degree and does not combine
    with pipeline parallelism or shard_optimizer_state."""
    sharded = job.mp.sharded_data_parallel_degree
    if not sharded or sharded <= 1:
        return []
    here, layout, problems = job.where("sharded_data_parallel_degree"), job.layout, []
    dp = job.data_parallel
    if dp is not None and dp % sharded:
        problems.append(
            Problem(
                here,
                f"sharded data parallel degree ({sharded}) does not divide the data-parallel "
                f"degree ({dp} = world {layout.world_size} / (pipeline {layout.pipeline} x "
                f"tensor {layout.tensor})).",
                f"use a degree that divides {dp}.",
                fixes=tuple(
                    setting((here, degree))
                    for degree in [max(d for d in range(1, sharded) if dp % d == 0)] if degree > 1
                ),
            )
        )
    if layout.pipeline > 1:
        problems.append(
            Problem(
                here,
                f"sharded data parallelism does not combine with pipeline parallelism "
                f"(pipeline degree {layout.pipeline}).",
                "",
                fixes=(
                    setting((job.where("pipeline_parallel_degree"), 1)),
                    removing(here, why="no sharded data parallelism"),
                ),
            )
        )
    if job.mp.shard_optimizer_state:
        problems.append(
            Problem(
                job.where("shard_optimizer_state"),
                "shard_optimizer_state does not combine with sharded data parallelism, which "
                "already shards the optimizer state.",
                "",
                fixes=(removing(job.where("shard_optimizer_state")),),
            )
        )
    if layout.tensor > 1 and job.library and job.library < parse_version(SDP_WITH_TENSOR_SINCE):
        problems.append(
            Problem(
                here,
                f"sharded data parallelism with tensor parallelism (degree {layout.tensor}) "
                f"needs library >= {SDP_WITH_TENSOR_SINCE}; PyTorch {job.pytorch_version} "
                f"ships {job.library}.",
                _container_hint(parse_version(SDP_WITH_TENSOR_SINCE)),
            )
        )
    return problems


def _rule_ddp(job: JobV1) -> list[Problem]:
    """Tensor parallelism and data parallelism across replicas need DDP on; DDP's own options
    need DDP on, and horovod excludes DDP and tensor parallelism."""
    mp, layout = job.mp, job.layout
    problems = []
    dp = job.data_parallel or 1
    reasons = []
    if layout.tensor > 1:
        reasons.append(f"tensor parallelism (degree {layout.tensor})")
    if dp > 1 and not mp.horovod:
        reasons.append(f"data parallelism across {dp} model replicas")
    if mp.ddp is False and reasons:
        problems.append(
            Problem(
                job.where("ddp"),
                f"ddp is False, but {' and '.join(reasons)} needs DDP.",
                fixes=(
                    setting((job.where("ddp"), True)),
                    removing(job.where("ddp"), why="it is set for you"),
                ),
            )
        )
    for name in ("ddp_port", "ddp_dist_backend"):
        if getattr(mp, name) is not None and (mp.ddp is False or mp.horovod):
            problems.append(
                Problem(
                    job.where(name),
                    f"{name} configures DDP, which is off "
                    f"({'horovod is True' if mp.horovod else 'ddp is False'}).",
                    fixes=(setting((job.where("ddp"), True)), removing(job.where(name))),
                )
            )
    if mp.horovod and (mp.ddp or layout.tensor > 1):
        why = "ddp is True" if mp.ddp else f"tensor parallelism (degree {layout.tensor}) needs DDP"
        problems.append(
            Problem(
                job.where("horovod"),
                f"horovod cannot be combined with DDP ({why}).",
                fixes=(
                    removing(job.where("horovod"),
                             why="with PyTorch, ddp: True is the documented data-parallel engine"),
                ),
            )
        )
    return problems


def _rule_precision(job: JobV1) -> list[Problem]:
    """One precision: bf16 excludes fp16 and fp16_params, and bf16 works only with sharded data
    parallelism."""
    mp, problems = job.mp, []
    if mp.bf16 and (mp.fp16 or mp.fp16_params):
        other = "fp16" if mp.fp16 else "fp16_params"
        problems.append(
            Problem(
                job.where("bf16"),
                f"bf16 and {other} are both True; pick one precision.",
                "keep bf16 (needs sharded data parallelism) or fp16.",
            )
        )
    if mp.bf16 and not (mp.sharded_data_parallel_degree or 1) > 1:
        problems.append(
            Problem(
                job.where("bf16"),
                "bf16 works only with sharded data parallelism, and "
                f"sharded_data_parallel_degree is {mp.sharded_data_parallel_degree or 1}.",
                "set sharded_data_parallel_degree > 1, or use fp16.",
            )
        )
    return problems


def _rule_partitioning(job: JobV1) -> list[Problem]:
    """With auto_partition off the library needs default_partition, which must name a pipeline
    stage (0 to pipeline degree - 1)."""
    mp, problems = job.mp, []
    pipeline = mp.pipeline_parallel_degree or 1
    if mp.auto_partition is False and mp.default_partition is None:
        problems.append(
            Problem(
                job.where("auto_partition"),
                "auto_partition is False, so the library needs default_partition for modules "
                "outside smp.partition contexts.",
                f"add default_partition (0 to {pipeline - 1}).",
                fixes=(setting((job.where("default_partition"), 0)),),
            )
        )
    if mp.default_partition is not None and mp.default_partition >= pipeline:
        problems.append(
            Problem(
                job.where("default_partition"),
                f"default_partition ({mp.default_partition}) must be less than the pipeline "
                f"degree ({pipeline}); partitions are numbered 0 to {pipeline - 1}.",
                f"use a default_partition from 0 to {pipeline - 1}.",
                fixes=(setting((job.where("default_partition"), pipeline - 1)),),
            )
        )
    return problems


def _rule_placement(job: JobV1) -> list[Problem]:
    """placement_strategy must be one the SDK's validate_mp_config accepts ('cluster' or
    'spread'): the library's other spellings cannot be launched through the SDK."""
    placement = job.mp.placement_strategy
    if placement is None or placement in PLACEMENT_ROUTES:
        return []
    # Nearest accepted spelling: the one whose letters agree in most positions ("PDT" shares the
    # innermost T with "DPT" = cluster).
    nearest = max(
        ("DPT", "TPD"), key=lambda p: sum(a == b for a, b in zip(p, placement, strict=True))
    )
    return [
        Problem(
            job.where("placement_strategy"),
            f"placement_strategy {placement!r} is documented by the library, but the SageMaker "
            "SDK's validate_mp_config accepts only 'cluster' (= 'DPT') and 'spread' (= 'TPD'), "
            "so there is no way to launch it through the SDK.",
            fixes=(
                setting((job.where("placement_strategy"), PLACEMENT_ROUTES[nearest]),
                        why=f"the nearest accepted placement, = {nearest!r}"),
            ),
        )
    ]


def _rule_microbatches(job: JobV1) -> list[Problem]:
    """active_microbatches must not exceed microbatches; microbatches without a pipeline, and
    offload_activations without microbatches, do nothing (warnings)."""
    mp, problems = job.mp, []
    microbatches = mp.microbatches or 1
    if mp.active_microbatches is not None and mp.active_microbatches > microbatches:
        problems.append(
            Problem(
                job.where("active_microbatches"),
                f"active_microbatches ({mp.active_microbatches}) exceeds microbatches "
                f"({microbatches}).",
                f"use active_microbatches <= {microbatches}.",
                fixes=(setting((job.where("active_microbatches"), microbatches)),),
            )
        )
    if microbatches > 1 and (mp.pipeline_parallel_degree or 1) == 1:
        problems.append(
            warning(
                job.where("microbatches"),
                f"microbatches is {microbatches} but the pipeline degree is 1; microbatches "
                "overlap pipeline stages, so with one stage they only split the batch.",
                "set pipeline_parallel_degree > 1, or leave microbatches at 1.",
            )
        )
    if mp.offload_activations and microbatches <= 1:
        problems.append(
            warning(
                job.where("offload_activations"),
                "offload_activations helps only with microbatches > 1 (and activation "
                f"checkpointing); microbatches is {microbatches}.",
                "raise microbatches, or drop offload_activations.",
            )
        )
    return problems


def _rule_batch_size(job: JobV1) -> list[Problem]:
    """A batch-size hyperparameter must be divisible by microbatches: the library splits each
    batch into equal microbatches."""
    microbatches = job.mp.microbatches or 1
    if microbatches <= 1:
        return []
    problems = []
    for key, raw in job.hyperparameters.items():
        if str(key).lower().replace("-", "_") not in BATCH_SIZE_HYPERPARAMETERS:
            continue
        size = _as_int(raw)
        if size is not None and size % microbatches:
            lower = size - size % microbatches
            problems.append(
                Problem(
                    join_path("hyperparameters", key),
                    f"batch size {size} is not divisible by microbatches ({microbatches}); the "
                    "library splits each batch into equal microbatches.",
                    f"use a multiple of {microbatches} (e.g. {lower or microbatches}), or "
                    "microbatches that divide it.",
                )
            )
    return problems


def _as_int(raw: object) -> int | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    if isinstance(raw, str) and raw.strip().isdigit():
        return int(raw)
    return None


def _rule_option_combinations(job: JobV1) -> list[Problem]:
    """prescaled_batch requires optimize 'speed' (the library's schema); the
    sharded-data-parallel options have no effect without sharded data parallelism (warnings)."""
    mp, problems = job.mp, []
    if mp.prescaled_batch and mp.optimize == "memory":
        problems.append(
            Problem(
                job.where("prescaled_batch"),
                "prescaled_batch requires optimize 'speed' (the library's schema), and optimize "
                "is 'memory'.",
                fixes=(
                    setting((job.where("optimize"), "speed")),
                    removing(job.where("prescaled_batch")),
                ),
            )
        )
    if not (mp.sharded_data_parallel_degree or 1) > 1:
        problems.extend(
            warning(
                job.where(name),
                f"{name} has no effect without sharded data parallelism "
                "(sharded_data_parallel_degree > 1).",
                "set sharded_data_parallel_degree.",
                fixes=(removing(job.where(name)),),
            )
            for name in SDP_OPTIONS
            if getattr(mp, name) is not None
        )
    return problems


def _rule_not_launch_options(job: JobV1) -> list[Problem]:
    """Options the PyTorch library ignores: TensorFlow-only options, and overlapping_allreduce
    where it has no effect (warnings)."""
    mp, problems = job.mp, []
    if mp.overlapping_allreduce is not None:
        problems += _overlapping_allreduce(job)
    problems.extend(
        warning(
            job.where(name),
            f"{name} only affects TensorFlow; this is a PyTorch job.",
            fixes=(removing(job.where(name)),),
        )
        for name in TENSORFLOW_ONLY
        if getattr(mp, name) is not None
    )
    return problems


def _overlapping_allreduce(job: JobV1) -> list[Problem]:
    library, value = job.library, job.mp.overlapping_allreduce
    script = f"smp.DistributedModel(model, overlapping_allreduce={value})"
    if library is not None and library <= parse_version(OVERLAPPING_ALLREDUCE_LAUNCH_UNTIL):
        return []  # a launch parameter of this release (AWS's BERT tutorial, PyTorch 1.6.0)
    if library is not None and library >= parse_version(LAUNCH_KEYS_VALIDATED_FROM):
        return [
            Problem(
                job.where("overlapping_allreduce"),
                f"library {library} (the PyTorch {job.pytorch_version} container) refuses "
                "unknown launch parameters, and overlapping_allreduce is not one: it is an "
                "argument of smp.DistributedModel(...) in the training script.",
                f"remove it here and write {script} in the script.",
            )
        ]
    release = f"library {library}" if library else "this container's library"
    return [
        warning(
            job.where("overlapping_allreduce"),
            f"overlapping_allreduce was a launch parameter of the library's first releases "
            f"(1.1 ran it); later ones take it in smp.DistributedModel(...) and refuse unknown "
            f"launch parameters. Whether {release} still reads it here is not documented.",
            f"if the job fails with an unrecognised parameter, remove it here and write "
            f"{script} in the script.",
        )
    ]


def _rule_v2_options(job: JobV1) -> list[Problem]:
    """Options of the library v2 on a container with the library v1."""
    problems = []
    for name in set_options(job.mp):
        if name not in V2_PARAMETERS or name in PARAMETERS:
            continue
        counterpart = V1_COUNTERPARTS.get(name)
        container = (
            f"the PyTorch {job.pytorch_version} container"
            if job.pytorch_version
            else ("this container")
        )
        problems.append(
            Problem(
                job.where(name),
                f"{name} is an option of the model parallel library v2 (PyTorch containers "
                f"{', '.join(smp_pytorch_versions())}), but {container} runs the library v1, "
                "which does not know it.",
                (f"in the library v1 write {counterpart}, or " if counterpart else "")
                + f"use framework_version {smp_pytorch_versions()[-1]} for the library v2.",
            )
        )
    return problems


def _rule_torchrun_on_v1(job: JobV1) -> list[Problem]:
    """torch_distributed launches the library v2; a container with the library v1 is launched by
    MPI."""
    if job.mp._torch_distributed is None or job.pytorch_version is None:
        return []
    return [
        Problem(
            "distribution.torch_distributed",
            f"torch_distributed launches the model parallel library v2, but the PyTorch "
            f"{job.pytorch_version} container has the library v1, which MPI launches.",
            "remove torch_distributed (MPI is set up for you), or use framework_version "
            f"{smp_pytorch_versions()[-1]} for the library v2.",
        )
    ]


def _rule_bf16_hardware(job: JobV1) -> list[Problem]:
    """bf16 needs GPUs that compute in bfloat16 (Ampere or newer) among the instance types the
    library supports."""
    if not job.mp.bf16:
        return []
    return bf16_hardware_problems(job.instance_type, job.where("bf16"), SUPPORTED_INSTANCES)


_RULES: tuple[_Rule, ...] = (
    _rule_instance,
    _rule_container,
    _rule_parameters_available,
    _rule_processes_per_host,
    _rule_degrees_divide_world,
    _rule_sharded_data_parallel,
    _rule_ddp,
    _rule_precision,
    _rule_partitioning,
    _rule_placement,
    _rule_microbatches,
    _rule_batch_size,
    _rule_option_combinations,
    _rule_not_launch_options,
    _rule_v2_options,
    _rule_torchrun_on_v1,
    _rule_bf16_hardware,
)


def check_v1(job: JobV1) -> list[Problem]:
    """Run every SMP v1 rule and return all problems (errors and warnings).

    Does not check the Training Compiler or ``instance_groups``; the caller does.
    """
    return run_rules(_RULES, job)
