"""An offline plan of the ModelTrainer target: ModelTrainer's own ``train()``, stopped where
sagemaker-core's ``TrainingJob.create`` hands CreateTrainingJob to boto3.

No AWS call is made: the session's default bucket is given (ModelTrainer asks S3, and STS, for
it when it is built), sagemaker 3.x's IAM role validation is off for the plan
(``SAGEMAKER_VALIDATE_ROLE=false``), the code uploads are answered locally and the request is
captured before it is sent. The plan also shows the files ModelTrainer writes into its
``sm_drivers`` channel: the launcher settings (``distributed.json``), the source settings
(``sourcecode.json``) and the container's entry point (``sm_train.sh``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from safe_estimators._build import explain
from safe_estimators._build.model_trainer import (
    configured_role,
    offline_trainer_session,
    plan_model_trainer,
)
from safe_estimators._build.shared import PLACEHOLDER_BUCKET, OfflineCallRefused
from safe_estimators._plan import Plan, request_problems, role_and_region_placeholders
from safe_estimators._problems import ConfigError, Problem
from safe_estimators._resolve import resolve_arguments


def plan_trainer(
    arguments: dict[str, Any], source: str | None, prior: Sequence[Problem], region: str | None
) -> Plan:
    """The plan of the job ``arguments`` describe, built as a ModelTrainer."""
    session = offline_trainer_session(region)
    placeholders = role_and_region_placeholders(arguments, configured_role(session), region)
    if session.default_bucket() == PLACEHOLDER_BUCKET:
        placeholders.append(
            f"bucket = {PLACEHOLDER_BUCKET} (the SDK's default bucket, where ModelTrainer "
            "uploads the code and its drivers; no account is asked)"
        )
    job = resolve_arguments(arguments, source, prior)
    try:
        trainer, request, files = plan_model_trainer(job, session)
    except OfflineCallRefused as exc:  # sagemaker 3 looks a role name up in IAM
        raise ConfigError(
            [
                Problem(
                    "role",
                    f"ModelTrainer would call AWS to plan this job ({exc}); a role name is "
                    "looked up in IAM.",
                    "give the role's ARN (arn:aws:iam::<account>:role/<name>) to plan offline.",
                )
            ],
            source=source,
        ) from exc
    except (ValueError, TypeError, RuntimeError) as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(
            [
                Problem(
                    "<sagemaker>",
                    f"the SageMaker SDK refused the job at train(): {exc}",
                    "report this spec: safe_estimators should have caught it.",
                )
            ],
            source=source,
        ) from exc
    operation = session.boto_session.client("sagemaker").meta.service_model
    problems = request_problems(request, operation.operation_model("CreateTrainingJob"))
    if problems:
        raise ConfigError(problems, source=source)
    return Plan(request, explain(trainer), tuple(placeholders), source, files)
