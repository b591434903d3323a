"""How an SMP v1 job's processes split into pipeline, tensor and data parallelism."""

from __future__ import annotations

import attrs

from safe_estimators._distributions.model_parallel.options import ModelParallel


@attrs.frozen
class ParallelLayout:
    """How the job's processes split into pipeline, tensor and data parallelism."""

    instance_count: int
    processes_per_host: int
    world_size: int
    pipeline: int
    tensor: int
    data_parallel: int
    sharded_data_parallel: int | None = None

    def __str__(self) -> str:
        hosts = f"{self.instance_count} instance{'s' if self.instance_count != 1 else ''}"
        text = (
            f"world {self.world_size} = {hosts} x {self.processes_per_host} processes; "
            f"pipeline {self.pipeline} x tensor {self.tensor} x data-parallel {self.data_parallel}"
        )
        if self.sharded_data_parallel:
            text += f" (sharded over {self.sharded_data_parallel})"
        return text


def layout_of(mp: ModelParallel, gpus_per_instance: int, instance_count: int) -> ParallelLayout:
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
