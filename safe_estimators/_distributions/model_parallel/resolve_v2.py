"""Turning checked SMP v2 options into the ``distribution`` the SageMaker SDK expects.

The SDK picks the ``smdistributed-modelparallel`` image when the distribution holds both
``torch_distributed`` and ``smdistributed.modelparallel``, starts torchrun when
``torch_distributed.enabled`` is true, and sends the options as ``mp_parameters`` only when
``modelparallel.enabled`` is literally True and the parameters are not empty
(launcher-facts.md 1.1). Nothing here imports ``sagemaker``.
"""

from __future__ import annotations

from typing import Any

from safe_estimators._distributions.model_parallel.facts_v2 import PARAMETERS
from safe_estimators._distributions.model_parallel.layout import ParallelLayout, layout_v2_of
from safe_estimators._distributions.model_parallel.options import ModelParallel, set_options
from safe_estimators._resolved import Injection

_MP = "distribution.smdistributed.modelparallel"


def resolve_v2(
    mp: ModelParallel, *, gpus_per_instance: int, instance_count: int
) -> tuple[dict, list[Injection], ParallelLayout]:
    """The v2 distribution (torchrun plus the library's parameters), injections and layout.

    Only the library v2's own options go into the parameters (v1-only options were reported as
    having no effect). Call only when the v2 rules found no error.
    """
    parameters: dict[str, Any] = {
        name: value for name, value in set_options(mp).items() if name in PARAMETERS
    }
    injections = [
        Injection(
            f"{_MP}.enabled",
            True,
            "written out: the SageMaker SDK picks the model parallel v2 image without it but "
            "sends the parameters (mp_parameters) only when enabled is True",
        )
    ]
    if mp._torch_distributed is not True:
        injections.append(
            Injection(
                "distribution.torch_distributed.enabled",
                True,
                "the model parallel library v2 runs under torchrun (one process per GPU, "
                f"{gpus_per_instance} per instance)",
            )
        )
    if not parameters:
        parameters["hybrid_shard_degree"] = 0
        injections.append(
            Injection(
                f"{_MP}.parameters.hybrid_shard_degree",
                0,
                "the library's default (FSDP over the whole cluster), written out: with no "
                "parameters the SageMaker SDK sends no mp_parameters",
            )
        )
    distribution = {
        "torch_distributed": {"enabled": True},
        "smdistributed": {"modelparallel": {"enabled": True, "parameters": parameters}},
    }
    return distribution, injections, layout_v2_of(mp, gpus_per_instance, instance_count)
