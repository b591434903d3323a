"""The only package that imports ``sagemaker``: a resolved job built as its target.

One module per target: ``estimator`` (the SDK's HuggingFace / PyTorch estimator classes,
sagemaker 2.x) and ``model_trainer`` (ModelTrainer: ``sagemaker.modules.train`` in 2.x,
``sagemaker.train`` in 3.x); ``shared`` holds what both targets share. Every
module imports ``sagemaker`` inside its functions only, so importing this package is cheap.
"""

from __future__ import annotations

from typing import Any

from safe_estimators._facts.targets import MODEL_TRAINER
from safe_estimators._resolve import ResolvedJob
from safe_estimators._resolved import Explanation
from safe_estimators._targets.estimator import (
    EXPLANATION_ATTRIBUTE,
    build_estimator,
    capture_request,
    configured_bucket,
    configured_role,
    offline_session,
    submitting_session,
)
from safe_estimators._targets.model_trainer import build_model_trainer, trainer_explanation
from safe_estimators._targets.shared import (
    PLACEHOLDER_BUCKET,
    PLACEHOLDER_REGION,
    PLACEHOLDER_ROLE,
    OfflineCallRefused,
)

__all__ = [
    "EXPLANATION_ATTRIBUTE",
    "PLACEHOLDER_BUCKET",
    "PLACEHOLDER_REGION",
    "PLACEHOLDER_ROLE",
    "OfflineCallRefused",
    "build",
    "build_estimator",
    "build_model_trainer",
    "capture_request",
    "configured_bucket",
    "configured_role",
    "explain",
    "offline_session",
    "submitting_session",
]


def build(job: ResolvedJob, sagemaker_session: Any = None, target: str | None = None) -> Any:
    """The job built as ``target`` (default: the job's own target)."""
    if (target or job.target) == MODEL_TRAINER:
        return build_model_trainer(job, sagemaker_session)
    return build_estimator(job, sagemaker_session)


def explain(built: Any) -> Explanation:
    """The Explanation of an estimator or ModelTrainer built by safe_estimators."""
    explanation = getattr(built, EXPLANATION_ATTRIBUTE, None)
    if explanation is None:
        explanation = trainer_explanation(built)
    if not isinstance(explanation, Explanation):
        raise ValueError(
            f"{type(built).__name__} object was not built by safe_estimators; build it with "
            "safe_estimators.huggingface(), pytorch(), model_trainer() or remote()."
        )
    return explanation
