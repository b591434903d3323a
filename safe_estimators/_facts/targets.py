"""What a job is built as (its target), and the rules that hold for one target only.

Targets: ``"estimator"`` (the SDK's HuggingFace / PyTorch estimator classes, sagemaker 2.x) and
``"model_trainer"`` (ModelTrainer: ``sagemaker.modules.train`` in 2.x, ``sagemaker.train`` in
3.x). Some rules exist only because one target refuses or drops something (the estimator's
torchrun version list, its SMDDP instance list, the Hugging Face estimator's dropped launcher
flags); they are marked with the targets they hold for, and skipped for the others.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

ESTIMATOR = "estimator"
MODEL_TRAINER = "model_trainer"

_RuleT = TypeVar("_RuleT", bound=Callable[..., Any])


def only_for(*targets: str) -> Callable[[_RuleT], _RuleT]:
    """Mark a rule that holds for these targets only; ``applies`` says whether it runs."""

    def mark(rule: _RuleT) -> _RuleT:
        rule.targets = targets  # type: ignore[attr-defined]
        return rule

    return mark


def applies(rule: Callable[..., Any], target: str) -> bool:
    """Whether ``rule`` holds for ``target`` (a rule holds for every target unless marked)."""
    targets = getattr(rule, "targets", None)
    return targets is None or target in targets
# A @remote function's job (the SDK's decorator, sagemaker.remote_function in 2.x,
# sagemaker.core.remote_function in 3.x): checked by its own rules (_rules/remote.py).
REMOTE_FUNCTION = "remote_function"
# A fine-tuning trainer's job (sagemaker 3's sagemaker.train SFTTrainer, DPOTrainer, RLVRTrainer,
# RLAIFTrainer, CPTTrainer; the spec names which with ``trainer:``): its own rules
# (_rules/fine_tuning.py).
FINE_TUNING = "fine_tuning"
