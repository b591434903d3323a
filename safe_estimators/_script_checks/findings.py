"""What the training-script checks take and give back: the job as they see it
(:class:`ScriptContext`) and one problem in a script (:class:`Finding`)."""

from __future__ import annotations

import attrs

from safe_estimators._problems import Severity


@attrs.frozen
class ScriptContext:
    """What the checks need to know about the job, resolved from its configuration.

    Attributes:
        training_compiler: SageMaker Training Compiler is on.
        xla_distributed: a compiler job with the ``pytorchxla`` distribution (more than one GPU in
            total): the container launches the entry point through torch_xla's ``xla_spawn``.
        gpus_per_instance: GPUs on each instance; ``None`` when unknown (local mode, a pipeline
            parameter).
        model_parallel: the SageMaker model parallel library (``smdistributed.modelparallel``)
            is on.
        model_parallel_fp16: model parallelism with ``fp16`` on.
    """

    training_compiler: bool = False
    xla_distributed: bool = False
    gpus_per_instance: int | None = None
    model_parallel: bool = False
    model_parallel_fp16: bool = False


@attrs.frozen
class Finding:
    """One problem found in a training script.

    Attributes:
        file: the script's path as given, or relative to ``source_dir`` when one was given.
        line: 1-based line; 0 when the finding is about the whole file.
        severity: ``"error"`` (the job would fail or train wrongly) or ``"warning"``.
        rule: a short stable id naming the check (``"xla-missing-mp-fn"``), for filtering and
            for tests; an id never changes meaning.
        message: what is wrong, with the numbers involved.
        hint: how to fix it.
    """

    file: str
    line: int
    severity: Severity
    rule: str
    message: str
    hint: str

    def __str__(self) -> str:
        text = f"{self.file}:{self.line}: {self.severity}: {self.message}"
        if self.hint:
            text += f" Fix: {self.hint}"
        return text
