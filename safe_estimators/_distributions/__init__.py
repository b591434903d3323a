"""Distribution strategies: one module (or folder, when it is large) per way of launching.

Each strategy holds everything about itself: its typed options, parsing from the raw SageMaker
``distribution`` dict as AWS writes it, its facts (library versions, option histories), its rules
and its resolution into what the SDK expects (recorded as injections with reasons).

- ``model_parallel/``: the SageMaker model parallel library, v1 (over MPI) and v2 (over
  torchrun), one intent chosen by the container.

A new launcher (torchrun, SMDDP, MPI, heterogeneous clusters) is a new module here, whose rules
``_resolve`` runs beside the job-level rules of ``_rules/``.
"""
