"""How a job's parallel layout divides memory: one small record, computed from the job.

``memory_layout`` is the one adapter from a job's launcher options (SMP v1 ``ModelParallel``,
SMP v2 parameters, plain data parallelism) to ``MemoryLayout``; the accounting reads only the
record, so a new launcher is one more branch here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from safe_estimators._memory.facts import FP32_MASTER_WEIGHTS

Launcher = str  # "smp-v1", "smp-v2" or "data-parallel"


@attrs.frozen
class MemoryLayout:
    """The degrees that divide one accelerator's share of the model and its activations.

    ``tensor`` and ``pipeline`` divide the weights and what follows them; ``shard`` divides
    weights, gradients and optimizer states (ZeRO-3, FSDP, SMP sharding); ``optimizer_shard``
    divides only the optimizer states (ZeRO-1, SMP v1 ``shard_optimizer_state``); ``context``
    divides the sequence; ``in_flight`` caps the micro-batches the first pipeline stage holds;
    ``offload_horizon``: checkpointed activations go to CPU memory, with at most this many
    layers' worth on the GPU at once.
    ``script_may_shard``: the launcher leaves sharding to the script (torchrun with FSDP or
    DeepSpeed) and the script cannot be read or decides at run time (``script_unknown`` says
    why, when it was read), so an estimate that only sharding would fix is a warning, not an
    error. ``gradient_shard`` divides the gradients besides ``optimizer_shard`` (ZeRO-2, FSDP
    SHARD_GRAD_OP); ``offload``: ``"optimizer"`` states, or ``"parameters"`` with their gradients
    and optimizer states, in CPU memory; ``from_script``: the script facts used, with their lines;
    ``over_counted``: what the script does that the estimate counts high (a verdict that rests
    on it is a warning). ``gathered_outputs``: one process replicates the model over this many
    GPUs (``torch.nn.DataParallel``) and gathers their outputs on GPU 0, the device counted;
    ``batch_split``: it scatters each micro-batch over that many GPUs (a script's own
    DataParallel splits the DataLoader's batch; the Trainer's batch is already per device).
    """

    world_size: int = 1
    gpus_per_instance: int = 1
    tensor: int = 1
    pipeline: int = 1
    context: int = 1
    shard: int = 1
    optimizer_shard: int = 1
    sequence_parallel: bool = False
    in_flight: int | None = None
    offload_horizon: int | None = None
    launcher: Launcher = "data-parallel"
    script_may_shard: bool = False
    notes: tuple[str, ...] = ()
    gradient_shard: int = 1
    offload: str | None = None
    from_script: tuple[str, ...] = ()
    script_unknown: tuple[str, ...] = ()
    over_counted: tuple[str, ...] = ()
    gathered_outputs: int = 1
    batch_split: int = 1

    @property
    def data_parallel(self) -> int:
        """Model replicas: the world over tensor x pipeline (x context)."""
        return max(1, self.world_size // (self.tensor * self.pipeline * self.context))

    def __str__(self) -> str:
        parts = [f"{self.launcher} over {self.world_size} accelerators"]
        for name, degree in (
            ("tensor", self.tensor), ("pipeline", self.pipeline), ("context", self.context),
            ("sharded", self.shard),
        ):  # fmt: skip
            if degree > 1:
                parts.append(f"{name} {degree}")
        if self.optimizer_shard > 1:
            what = "gradients and optimizer states" if self.gradient_shard > 1 else (
                "optimizer states"
            )
            parts.append(f"{what} sharded {self.optimizer_shard}")
        if self.offload:
            parts.append(f"{self.offload} offloaded to CPU")
        if self.gathered_outputs > 1:
            parts.append(
                f"GPU 0 counted: the full model states and the outputs of its "
                f"{self.gathered_outputs} replicas"
            )
        text = ", ".join(parts)
        if self.from_script:
            text += f" (from the script: {'; '.join(self.from_script)})"
        return text


def _degree(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


_V2_KEYS = (
    "tensor_parallel_degree", "hybrid_shard_degree", "context_parallel_degree",
    "sm_activation_offloading", "activation_loading_horizon",
)  # fmt: skip


def smp_v2_parameters(
    distribution: Mapping[str, Any] | None, model_parallel: Any, library: int | None = None
) -> dict[str, Any] | None:
    """The SMP v2 parameters of a job, or None when it does not run SMP v2.

    ``library`` is the generation the rules decided from the container (1 or 2), when known.
    Otherwise SMP v2 is ``torch_distributed`` plus ``smdistributed.modelparallel``
    (launcher-facts 1.1), or options that carry a ``hybrid_shard_degree``.
    """
    if library == 1:
        return None
    if library == 2 and model_parallel is not None and not isinstance(model_parallel, Mapping):
        return {n: getattr(model_parallel, n, None) for n in _V2_KEYS}
    distribution = distribution if isinstance(distribution, Mapping) else {}
    smd = distribution.get("smdistributed")
    mp = smd.get("modelparallel") if isinstance(smd, Mapping) else None
    if "torch_distributed" in distribution and isinstance(mp, Mapping):
        parameters = mp.get("parameters")
        return dict(parameters) if isinstance(parameters, Mapping) else {}
    if isinstance(model_parallel, Mapping) and "hybrid_shard_degree" in model_parallel:
        return dict(model_parallel)
    if getattr(model_parallel, "hybrid_shard_degree", None) is not None:
        return {n: getattr(model_parallel, n, None) for n in _V2_KEYS}
    return None


def memory_layout(
    *,
    gpus_per_instance: int,
    instance_count: int,
    distribution: Mapping[str, Any] | None = None,
    model_parallel: Any = None,
    library: int | None = None,
    spread_by_script: bool = False,
    script: Any = None,
) -> MemoryLayout:
    """The layout of a job from its launcher options (the typed model-parallel options, if
    any, and the library generation they run as, when the rules know it).

    ``spread_by_script``: the script's one process spreads the model over its instance's GPUs
    (``device_map="auto"``), which counts only for a job without a launcher. ``script``: what
    the script does (``_script_checks.ScriptMemoryFacts``), which decides the sharding under a
    data-parallel launcher; None when it cannot be read.
    """
    gpus = max(1, gpus_per_instance)
    v2 = smp_v2_parameters(distribution, model_parallel, library)
    if v2 is not None:
        return _smp_v2(v2, gpus, instance_count)
    if model_parallel is not None and hasattr(model_parallel, "sharded_data_parallel_degree"):
        return _smp_v1(model_parallel, gpus, instance_count)
    launched = bool(set(distribution or {}) & _SCRIPT_SHARDING_LAUNCHERS)
    if spread_by_script and not launched and gpus > 1:
        # Accelerate's big-model loading splits the layers over the GPUs, and one batch passes
        # through them in turn: a pipeline of the instance's GPUs with one micro-batch in flight.
        return MemoryLayout(
            world_size=gpus * instance_count,
            gpus_per_instance=gpus,
            pipeline=gpus,
            in_flight=1,
            launcher="one process over the GPUs (device_map)",
            notes=("the layers are counted as split evenly over the GPUs by device_map",),
        )
    replicated = getattr(script, "data_parallel", None) if script is not None else None
    if replicated is not None and not launched and gpus > 1:
        return _replicated(replicated, gpus, instance_count)
    plain = MemoryLayout(
        world_size=gpus * instance_count,
        gpus_per_instance=gpus,
        launcher="data-parallel",
        # A distributed launcher runs whatever the script does: FSDP or DeepSpeed ZeRO shard
        # without the launcher knowing, unless the script says.
        script_may_shard=launched,
    )
    if not launched or script is None:
        return plain
    if script.undecided:
        return attrs.evolve(plain, script_unknown=tuple(script.undecided))
    return _scripted(plain, script)


def _replicated(fact: Any, gpus: int, instance_count: int) -> MemoryLayout:
    # torch.nn.DataParallel (torch/nn/parallel/data_parallel.py): the module lives on GPU 0
    # (device_ids[0]), is copied to the others for each forward, their outputs are gathered on
    # GPU 0 (output_device) and their gradients summed into its parameters; the optimizer steps
    # there. GPU 0 holds the full model states, unsharded, and is the one counted.
    # The Trainer scatters per_device_train_batch_size x n_gpu (TrainingArguments.
    # train_batch_size); a script's own DataParallel scatters its DataLoader's batch.
    split = 1 if fact.value == "Trainer" else gpus
    batch = "each GPU's share of the micro-batch" if split > 1 else "the micro-batch per GPU"
    return MemoryLayout(
        world_size=gpus * instance_count,
        gpus_per_instance=gpus,
        launcher="torch.nn.DataParallel in one process per instance",
        gathered_outputs=gpus,
        batch_split=split,
        from_script=(str(fact),),
        notes=(
            f"GPU 0 is counted: it holds the full model states (DataParallel shards nothing), "
            f"the activations of {batch} and the outputs of all {gpus} replicas ({fact})",
        ),
    )


def _scripted(plain: MemoryLayout, script: Any) -> MemoryLayout:
    """The data-parallel layout as the script's sharding and offload divide it."""
    used: list[str] = []
    changes: dict[str, Any] = {"script_may_shard": False}
    sharding = script.sharding
    if sharding is not None:
        what, over = sharding.value
        degree = plain.gpus_per_instance if over == "instance" else plain.world_size
        if what == "all":
            changes["shard"] = degree
        elif what in ("gradients", "optimizer"):
            changes["optimizer_shard"] = degree
            changes["gradient_shard"] = degree if what == "gradients" else 1
        used.append(str(sharding))
    if script.offload is not None:
        changes["offload"] = script.offload.value
        used.append(str(script.offload))
    over_counted = tuple(script.over_counted)
    master = getattr(script, "master_weights", None)
    if over_counted and master is not None and master.value in FP32_MASTER_WEIGHTS:
        # The 16-bit weights get fp32 master copies all the same: 16 bytes per parameter hold.
        over_counted = ()
        used.append(
            f"16 bytes per parameter although the weights load in 16 bits: "
            f"{FP32_MASTER_WEIGHTS[master.value]} ({master})"
        )
    return attrs.evolve(
        plain, from_script=tuple(used), over_counted=over_counted, **changes
    )


_SCRIPT_SHARDING_LAUNCHERS = frozenset({"torch_distributed", "pytorchddp", "mpi", "smdistributed"})


def _smp_v1(mp: Any, gpus: int, instance_count: int) -> MemoryLayout:
    per_host = getattr(mp, "processes_per_host", None) or gpus
    world = per_host * instance_count
    tensor = mp.tensor_parallel_degree or 1
    pipeline = mp.pipeline_parallel_degree or 1
    replicas = max(1, world // (tensor * pipeline))
    sharded = mp.sharded_data_parallel_degree or 1
    return MemoryLayout(
        world_size=world,
        gpus_per_instance=gpus,
        tensor=tensor,
        pipeline=pipeline,
        shard=sharded,
        optimizer_shard=replicas if mp.shard_optimizer_state and sharded == 1 else 1,
        in_flight=_in_flight(mp, pipeline),
        # Offloading works on top of checkpointing; the horizon defaults to 4 (config.yaml).
        offload_horizon=(getattr(mp, "activation_loading_horizon", None) or 4)
        if getattr(mp, "offload_activations", None)
        else None,
        launcher="SMP v1",
    )


def _in_flight(mp: Any, pipeline: int) -> int:
    # SMP v1 splits each batch into `microbatches` (default 1) and executes at most
    # `active_microbatches` of them at once (default pipeline degree + 2: "limits the
    # activation memory footprint"), whichever pipeline schedule (the library's
    # backend/config.yaml).
    microbatches = getattr(mp, "microbatches", None) or 1
    active = getattr(mp, "active_microbatches", None) or pipeline + 2
    return min(microbatches, active)


def _smp_v2(parameters: Mapping[str, Any], gpus: int, instance_count: int) -> MemoryLayout:
    world = gpus * instance_count
    tensor = _degree(parameters.get("tensor_parallel_degree")) or 1
    context = _degree(parameters.get("context_parallel_degree")) or 1
    hybrid = _degree(parameters.get("hybrid_shard_degree"))
    notes: tuple[str, ...] = ()
    if not hybrid:
        # 0 (the default): native FSDP; with FULL_SHARD (FSDP's default strategy) sharding
        # spans the whole cluster, and with TP SMP takes the largest degree TP allows (SMPREF).
        shard = max(1, world // tensor)
        notes = (f"hybrid_shard_degree 0: sharded over all {shard} data-parallel ranks "
                 "(FSDP FULL_SHARD, its default)",)  # fmt: skip
    else:
        shard = hybrid
    # sm_activation_offloading (default True) acts only when the script wraps the model in
    # offload_wrapper, so only an explicit True counts; the horizon defaults to 2 (SMPREF).
    offload = parameters.get("sm_activation_offloading") is True
    return MemoryLayout(
        world_size=world,
        gpus_per_instance=gpus,
        tensor=tensor,
        context=context,
        shard=shard,
        offload_horizon=(_degree(parameters.get("activation_loading_horizon")) or 2)
        if offload
        else None,
        launcher="SMP v2",
        notes=notes,
    )
