"""Distribution strategies: one module (or folder, when it is large) per way of launching.

Each strategy holds everything about itself: its typed options, parsing from the raw SageMaker
``distribution`` dict as AWS writes it, its facts (library versions, option histories), its rules
and its resolution into what the SDK expects (recorded as injections with reasons).

- ``model_parallel/``: the SageMaker model parallel library, v1 (over MPI) and v2 (over
  torchrun), one intent chosen by the container.
- ``torchrun``: ``torch_distributed`` (GPU and Trainium; the SDK's version lists; the Pipelines
  parameter the SDK misreads); Trainium's torchrun-only rule.
- ``smddp``: ``smdistributed.dataparallel`` and ``pytorchddp`` (SMDDP in the PyTorch estimator).
- ``mpi``: ``mpi``, with the process count per host made explicit.
- ``instance_groups``: heterogeneous clusters, their typed groups and the launch group.
- ``launchers``: the table of the launchers' rules and resolutions that ``_resolve`` runs beside
  the job-level rules of ``_rules/``; ``_sdk_source`` reads the SDK's constants without importing
  it.

A new launcher is a new module here plus one line in ``launchers``.
"""

from collections.abc import Mapping
from typing import Any, TypeGuard


def is_enabled(block: object) -> TypeGuard[Mapping[Any, Any]]:
    """A strategy block the SDK turns on: a mapping with ``enabled: True`` (it defaults to off)."""
    return isinstance(block, Mapping) and block.get("enabled") is True
