"""How a model parallel job's processes split into its kinds of parallelism (SMP v1 and v2)."""

from __future__ import annotations

import attrs

from safe_estimators._distributions.model_parallel.options import ModelParallel


@attrs.frozen
class ParallelLayout:
    """How the job's processes split into the kinds of parallelism of its library generation.

    ``library`` is 1 (SMP v1, MPI: pipeline x tensor x data parallel) or 2 (SMP v2, torchrun:
    hybrid shard x tensor x expert, with context parallelism inside the shard group). In both,
    ``world_size`` = ``instance_count`` x ``processes_per_host`` (one process per GPU), and
    ``data_parallel`` is the number of model replicas: world / (pipeline x tensor) for v1, world /
    (hybrid shard x tensor x expert) for v2 (a hybrid shard degree of 0, FSDP over the whole
    cluster, counts as 1 here). ``sharded_data_parallel`` is v1's sharded data parallel degree
    when above 1; ``hybrid_shard`` is v2's degree as the job sets it (None: not set).
    """

    instance_count: int
    processes_per_host: int
    world_size: int
    pipeline: int
    tensor: int
    data_parallel: int
    sharded_data_parallel: int | None = None
    library: int = 1
    hybrid_shard: int | None = None
    context: int = 1
    expert: int = 1

    def __str__(self) -> str:
        hosts = f"{self.instance_count} instance{'s' if self.instance_count != 1 else ''}"
        world = f"world {self.world_size} = {hosts} x {self.processes_per_host} processes"
        if self.library == 2:
            shard = "unset (0)" if self.hybrid_shard is None else str(self.hybrid_shard)
            text = (
                f"{world} (torchrun, model parallel library v2); hybrid shard {shard} x tensor "
                f"{self.tensor} x expert {self.expert}, {self.data_parallel} "
                f"replica{'s' if self.data_parallel != 1 else ''}"
            )
            if self.context > 1:
                text += f"; context parallel {self.context}"
            return text
        text = (
            f"{world}; pipeline {self.pipeline} x tensor {self.tensor} x data-parallel "
            f"{self.data_parallel}"
        )
        if self.sharded_data_parallel:
            text += f" (sharded over {self.sharded_data_parallel})"
        return text


def layout_of(mp: ModelParallel, gpus_per_instance: int, instance_count: int) -> ParallelLayout:
    """The SMP v1 layout: MPI processes (one per GPU unless set) into pipeline x tensor x data."""
    per_host = mp.processes_per_host or gpus_per_instance
    world = instance_count * per_host
    pipeline, tensor = mp.pipeline_parallel_degree or 1, mp.tensor_parallel_degree or 1
    sharded = mp.sharded_data_parallel_degree
    return ParallelLayout(
        instance_count=instance_count,
        processes_per_host=per_host,
        world_size=world,
        pipeline=pipeline,
        tensor=tensor,
        data_parallel=max(1, world // (pipeline * tensor)),
        sharded_data_parallel=sharded if sharded and sharded > 1 else None,
    )


def layout_v2_of(mp: ModelParallel, gpus_per_instance: int, instance_count: int) -> ParallelLayout:
    """The SMP v2 layout: torchrun starts one process per GPU; FSDP shards, TP/EP split layers."""
    world = instance_count * gpus_per_instance
    tensor, expert = mp.tensor_parallel_degree or 1, mp.expert_parallel_degree or 1
    group = (mp.hybrid_shard_degree or 1) * tensor * expert
    return ParallelLayout(
        instance_count=instance_count,
        processes_per_host=gpus_per_instance,
        world_size=world,
        pipeline=1,
        tensor=tensor,
        data_parallel=max(1, world // group),
        library=2,
        hybrid_shard=mp.hybrid_shard_degree,
        context=mp.context_parallel_degree or 1,
        expert=expert,
    )
