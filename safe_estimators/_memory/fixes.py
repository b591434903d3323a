"""The smallest changes that make a job fit, each verified by estimating the changed job again.

One search per kind of change, each returning its smallest change that fits: a larger sharding
degree, a larger tensor degree, activation checkpointing, a smaller micro-batch, frozen weights
loaded quantized (jobs that train adapters only), the nearest
instance type with more memory per accelerator, and (only when nothing of the same size fits)
more instances to shard over; when no single change fits, checkpointing with one of those.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import attrs

import instance_catalog
from safe_estimators._bounds import divisors as _divisors
from safe_estimators._memory.accounting import MIB, MemoryEstimate, estimate, gb
from safe_estimators._memory.complete import CompleteShape
from safe_estimators._memory.layout import MemoryLayout
from safe_estimators._memory.neuron import per_core

# How far the instance-count search looks (the largest SageMaker training clusters AWS
# documents run 32-64 ml.p4d instances: the SMP v2 best-practices table, launcher-facts 1.6).
MAX_INSTANCE_COUNT = 64


@attrs.frozen
class Fix:
    """One change, in words the user can apply, and the estimate of the changed job."""

    change: str
    estimate: MemoryEstimate
    # The change as job options, when it is one (another instance type, more instances with
    # the same parallel layout): the checks offer it only once the changed job passes them all.
    options: tuple[tuple[str, object], ...] = ()

    def __str__(self) -> str:
        return f"{self.change} (-> {gb(self.estimate.total)} per accelerator)"


@attrs.frozen
class Job:
    """What the estimate of one job reads; the searches vary one part at a time."""

    shape: CompleteShape
    layout: MemoryLayout
    instance: instance_catalog.InstanceType
    instance_count: int

    def estimate(self) -> MemoryEstimate:
        mib = self.instance.accelerator_memory_mib
        return estimate(
            self.shape,
            self.layout,
            device_memory=None if mib is None else mib * MIB,
            instance_type=self.instance.name,
            accelerator=self.instance.accelerator_name,
        )


def valid(layout: MemoryLayout) -> bool:
    """The degrees tile the world, as SMP and the recipe adapter require (launcher-facts 1.3)."""
    w = layout.world_size
    return (
        layout.tensor <= layout.gpus_per_instance
        and w % (layout.tensor * layout.pipeline * layout.shard) == 0
        and w % (layout.tensor * layout.pipeline * layout.context) == 0
    )


def _first_fit(jobs: Iterator[tuple[str, Job]], base: Job | None = None) -> Fix | None:
    for change, job in jobs:
        result = job.estimate()
        if result.fits:
            return Fix(change, result, _options(base, job) if base is not None else ())
    return None


def _options(base: Job, job: Job) -> tuple[tuple[str, object], ...]:
    """The job options that turn ``base`` into ``job``, when only the instance type or count
    changed (and the degrees the options set stay as they are); else none."""
    if job.shape != base.shape:
        return ()
    same = attrs.evolve(job.layout, world_size=base.layout.world_size,
                        gpus_per_instance=base.layout.gpus_per_instance)
    if same != base.layout:
        return ()
    options: list[tuple[str, object]] = []
    if job.instance.name != base.instance.name:
        options.append(("instance_type", job.instance.name))
    if job.instance_count != base.instance_count:
        options.append(("instance_count", job.instance_count))
    return tuple(options)


def _shard_names(layout: MemoryLayout, degree: int) -> str:
    if layout.launcher == "SMP v2":
        return f"set hybrid_shard_degree: {degree} in the SMP parameters"
    if layout.launcher == "SMP v1":
        return f"set model_parallel.sharded_data_parallel_degree={degree}"
    return (
        f"shard the model states over {degree} GPUs (SMP v2 hybrid_shard_degree: {degree}, or "
        "FSDP FULL_SHARD / DeepSpeed ZeRO-3 in the script)"
    )


def _smallest_fit(candidates: list[tuple[str, Job]]) -> Iterator[tuple[str, Job]]:
    """The first candidate that fits, of candidates ordered so that once one fits every later
    one does (memory falls as the change grows): found by bisection, in about log2(n) estimates,
    and yielded alone (or the last one, which then fits nowhere either)."""
    low, high = 0, len(candidates) - 1
    if high < 0:
        return
    while low < high:
        middle = (low + high) // 2
        if candidates[middle][1].estimate().fits:
            high = middle
        else:
            low = middle + 1
    yield candidates[low]


def _shard(job: Job) -> Iterator[tuple[str, Job]]:
    layout = job.layout
    if layout.launcher == "SMP v1" and (layout.tensor > 1 or layout.pipeline > 1):
        return  # SMP v1 sharded data parallelism needs tensor and pipeline degree 1
    ranks = layout.world_size // (layout.tensor * layout.pipeline)
    # Only divisors of the ranks tile the world; more sharding never needs more memory.
    candidates = []
    for degree in _divisors(ranks):
        changed = attrs.evolve(layout, shard=degree, optimizer_shard=1, gradient_shard=1)
        if degree > layout.shard and valid(changed):
            candidates.append((_shard_names(layout, degree), attrs.evolve(job, layout=changed)))
    yield from _smallest_fit(candidates)


def _tensor(job: Job) -> Iterator[tuple[str, Job]]:
    layout = job.layout
    if layout.launcher not in ("SMP v1", "SMP v2"):
        return  # tensor parallelism needs the library's transform of the model
    if layout.launcher == "SMP v1" and layout.shard > 1:
        return
    for degree in range(layout.tensor + 1, layout.gpus_per_instance + 1):
        changed = attrs.evolve(layout, tensor=degree)
        if valid(changed):
            change = (
                f"set model_parallel.tensor_parallel_degree={degree}"
                if layout.launcher == "SMP v1"
                else f"set tensor_parallel_degree: {degree} in the SMP parameters"
            )
            yield change, attrs.evolve(job, layout=changed)


def _checkpointing(job: Job) -> Iterator[tuple[str, Job]]:
    if job.shape.has_architecture and not job.shape.activation_checkpointing:
        shape = attrs.evolve(job.shape, activation_checkpointing=True)
        yield (
            "turn on activation checkpointing (model.activation_checkpointing: true, and "
            "gradient_checkpointing in the script)",
            attrs.evolve(job, shape=shape),
        )


def _micro_batch(job: Job) -> Iterator[tuple[str, Job]]:
    batch = job.shape.micro_batch_size
    if not job.shape.has_architecture or not batch or batch < 2:
        return
    # Activations grow with the micro-batch: the largest smaller one that fits, by bisection
    # (a batch of 10^9 is 30 estimates, not 10^9).
    low, high = 1, batch - 1
    while low < high:
        middle = (low + high + 1) // 2
        if _with_batch(job, middle).estimate().fits:
            low = middle
        else:
            high = middle - 1
    yield (
        f"lower the micro-batch from {batch} to {low} per process (raise gradient "
        "accumulation to keep the global batch)",
        _with_batch(job, low),
    )


def _with_batch(job: Job, batch: int) -> Job:
    return attrs.evolve(job, shape=attrs.evolve(job.shape, micro_batch_size=batch))


def _quantize(job: Job) -> Iterator[tuple[str, Job]]:
    # Frozen weights only (LoRA-style jobs): bitsandbytes' quantized layers take no gradients.
    shape = job.shape
    if not shape.trains_adapters or not shape.quantization_fixable:
        return  # a recipe's peft_type says how they load, in its own keys
    steps = {None: ("8bit", "4bit"), "8bit": ("4bit",)}.get(shape.quantization, ())
    for bits in steps:
        flag = "load_in_4bit=True, as QLoRA does" if bits == "4bit" else "load_in_8bit=True"
        yield (
            f"load the frozen weights in {bits} (BitsAndBytesConfig({flag}) in the script) and "
            f"set model.quantization: {bits}",
            attrs.evolve(job, shape=attrs.evolve(shape, quantization=bits)),
        )


def relaid(layout: MemoryLayout, gpus: int, count: int) -> MemoryLayout:
    """The same options on another cluster: sharding over "everything" follows the world."""
    world = gpus * count
    whole = layout.shard > 1 and layout.shard == layout.world_size // layout.tensor
    return attrs.evolve(
        layout,
        world_size=world,
        gpus_per_instance=gpus,
        shard=world // layout.tensor if whole else layout.shard,
        optimizer_shard=world // (layout.tensor * layout.pipeline)
        if layout.optimizer_shard > 1
        else 1,
        gradient_shard=world // (layout.tensor * layout.pipeline)
        if layout.gradient_shard > 1
        else 1,
    )


def library_instances(launcher: str) -> frozenset[str] | None:
    """The instance types the model parallel library runs on (None: any GPU type)."""
    if launcher == "SMP v1":
        from safe_estimators._distributions.model_parallel import facts

        return frozenset(facts.SUPPORTED_INSTANCES)
    if launcher == "SMP v2":
        try:
            from safe_estimators._distributions.model_parallel import facts_v2  # type: ignore[attr-defined]
        except ImportError:  # a build without the library v2 options
            return None
        return frozenset(facts_v2.SUPPORTED_INSTANCES)
    return None


def _bigger_accelerator(job: Job) -> Iterator[tuple[str, Job]]:
    # The catalog's figure: the headroom search (rule._tighter) lowers the job's own.
    current = instance_catalog.get(job.instance.name).accelerator_memory_mib or 0
    allowed = library_instances(job.layout.launcher)
    candidates = sorted(
        (
            t
            for t in map(per_core, instance_catalog.instance_types())
            if t.accelerator_kind == job.instance.accelerator_kind
            and (allowed is None or t.name in allowed)
            and (t.accelerator_memory_mib or 0) > current
            and t.accelerator_count > 0
        ),
        # Nearest memory first; among equals, the same accelerators per instance (the layout
        # carries over), then the fewest.
        key=lambda t: (
            t.accelerator_memory_mib,
            t.accelerator_count != job.layout.gpus_per_instance,
            t.accelerator_count,
            t.name,
        ),
    )
    for candidate in candidates:
        layout = relaid(job.layout, candidate.accelerator_count, job.instance_count)
        if valid(layout):
            change = (
                f"use {candidate.name}: {gb((candidate.accelerator_memory_mib or 0) * MIB)} per "
                f"{candidate.accelerator_name}, {candidate.accelerator_count} per instance"
            )
            yield change, attrs.evolve(job, instance=candidate, layout=layout)


def _more_instances(job: Job) -> Iterator[tuple[str, Job]]:
    layout = job.layout
    if layout.launcher == "SMP v1" and (layout.tensor > 1 or layout.pipeline > 1):
        return
    gpus = layout.gpus_per_instance
    for count in range(job.instance_count + 1, MAX_INSTANCE_COUNT + 1):
        world = gpus * count
        ranks = world // (layout.tensor * layout.pipeline)
        changed = attrs.evolve(
            layout, world_size=world, shard=ranks, optimizer_shard=1, gradient_shard=1
        )
        if valid(changed):
            change = (
                f"use instance_count={count} ({world} GPUs) and "
                f"{_shard_names(layout, ranks).replace('set ', '', 1)}"
            )
            yield change, attrs.evolve(job, layout=changed, instance_count=count)


SEARCHES: tuple[Callable[[Job], Iterator[tuple[str, Job]]], ...] = (
    _checkpointing,
    _micro_batch,
    _quantize,
    _shard,
    _tensor,
    _bigger_accelerator,
)


def fixes(job: Job) -> list[Fix]:
    """The smallest change of each kind that makes ``job`` fit, verified by re-estimating.

    When no single change fits, two together: activation checkpointing (if it is off) with
    each other kind, then more instances to shard over.
    """
    found = [fix for search in SEARCHES if (fix := _first_fit(search(job), job)) is not None]
    if found:
        return found
    bases = [("", job)]
    for change, checkpointed in _checkpointing(job):
        bases.insert(0, (f"{change}, and ", checkpointed))
    for prefix, base in bases:
        searches = (*SEARCHES[2:], _more_instances) if prefix else (_more_instances,)
        for search in searches:
            fix = _first_fit(search(base))
            if fix is not None:
                found.append(attrs.evolve(fix, change=prefix + fix.change))
        if found:
            return found
    return found
