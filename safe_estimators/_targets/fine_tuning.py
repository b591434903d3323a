"""The fine-tuning target: a checked job as one of sagemaker 3's trainers (``sagemaker.train``
SFTTrainer, DPOTrainer, RLVRTrainer, RLAIFTrainer, CPTTrainer).

The SDK's trainers reach the hub in their constructor (``_resolve_model_and_name`` and
``_get_fine_tuning_options_and_model_arn``: DescribeHubContent for the model and its recipes, S3
GetObject for the recipe's override parameters), so a bare ``SFTTrainer(...)`` cannot be made
offline. The checked job is therefore a ``CheckedTrainer`` that holds the trainer's keyword
arguments and makes the real trainer when it is first used (``train()``, or any attribute of
the trainer): where the job needs the hub anyway. ``explain()`` lists those calls.
"""

from __future__ import annotations

import importlib
import threading
from typing import Any

from safe_estimators._facts.fine_tuning import TRAINERS
from safe_estimators._facts.targets import FINE_TUNING
from safe_estimators._resolve import ResolvedFineTuning
from safe_estimators._targets.estimator import EXPLANATION_ATTRIBUTE

_MODULE = {
    technique: "sagemaker." + path.removesuffix(".py").replace("/", ".")
    for technique, (path, _) in TRAINERS.items()
}


def trainer_class(technique: str) -> type:
    """The installed SDK's trainer class for ``technique`` (SFT -> SFTTrainer).

    Importing the trainers' module makes a boto3 client (``sagemaker.ai_registry.air_hub``'s
    AIRHub class attribute, on boto3's default session), and botocore looks credentials up when
    a client is made: the metadata endpoint, a connection, when none is configured. The first
    import therefore runs with a default session whose credentials are looked up on the first
    request (``shared.default_boto_session``); no request is made then.
    """
    import sys

    name = _MODULE[technique]
    if name not in sys.modules:
        import boto3

        from safe_estimators._targets.shared import default_boto_session

        with _IMPORT_LOCK:
            before = boto3.DEFAULT_SESSION
            boto3.DEFAULT_SESSION = default_boto_session()
            try:
                importlib.import_module(name)
            finally:
                boto3.DEFAULT_SESSION = before
    return getattr(sys.modules[name], TRAINERS[technique][1])  # type: ignore[no-any-return]


_IMPORT_LOCK = threading.Lock()


def compute_object(compute: Any) -> Any:
    """The compute as the SDK's own object: a spec file's mapping becomes a TrainingJobCompute
    or HyperPodCompute (pydantic models: no AWS call); an SDK object is passed as given."""
    given = compute.given
    if compute.kind == "serverless" or not isinstance(given, dict):
        return given
    from sagemaker.core.training.configs import HyperPodCompute, TrainingJobCompute

    cls = HyperPodCompute if compute.kind == "hyperpod" else TrainingJobCompute
    return cls(**given)


def trainer_kwargs(job: ResolvedFineTuning, sagemaker_session: Any = None) -> dict[str, Any]:
    """The keyword arguments the real trainer is made with: the user's, with the compute as
    the SDK's object and the session when one is given."""
    kwargs = dict(job.kwargs)
    if "compute" in kwargs:
        kwargs["compute"] = compute_object(job.spec.compute)
    if sagemaker_session is not None:
        kwargs["sagemaker_session"] = sagemaker_session
    return kwargs


class CheckedTrainer:
    """A checked fine-tuning job; the SDK's trainer is made on first use (``train()``, or any of
    the trainer's attributes), since its constructor reaches the hub.

    ``trainer_class`` is the SDK's class, ``kwargs`` what it is made with, ``trainer()`` makes
    (once) and returns it; ``safe_estimators.explain(checked)`` tells what was checked and what
    only the hub or the account can say.
    """

    target = FINE_TUNING

    def __init__(self, job: ResolvedFineTuning, sagemaker_session: Any = None) -> None:
        self._job = job
        self._session = sagemaker_session
        self._made: list[Any] = []
        self._lock = threading.Lock()
        setattr(self, EXPLANATION_ATTRIBUTE, job.explanation)

    @property
    def technique(self) -> str:
        """SFT, DPO, RLVR, RLAIF or CPT."""
        return self._job.technique

    @property
    def trainer_class(self) -> type:
        """The installed SDK's trainer class."""
        return trainer_class(self._job.technique)

    @property
    def kwargs(self) -> dict[str, Any]:
        """The keyword arguments the trainer is made with."""
        return trainer_kwargs(self._job, self._session)

    def trainer(self) -> Any:
        """The SDK's trainer for this job, made on the first call (its constructor calls the
        hub: DescribeHubContent, S3 GetObject)."""
        with self._lock:
            if not self._made:
                self._made.append(self.trainer_class(**self.kwargs))
        return self._made[0]

    def train(self, *args: Any, **kwargs: Any) -> Any:
        """The trainer's ``train()``: makes the trainer, then starts the job."""
        return self.trainer().train(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.trainer(), name)

    def __repr__(self) -> str:
        return f"CheckedTrainer({TRAINERS[self._job.technique][1]}, made={bool(self._made)})"


def build_fine_tuning(job: ResolvedFineTuning, sagemaker_session: Any = None) -> CheckedTrainer:
    """The checked fine-tuning job (no AWS call: see CheckedTrainer)."""
    return CheckedTrainer(job, sagemaker_session)


def plan_fine_tuning(job: ResolvedFineTuning) -> tuple[dict[str, Any], tuple[str, ...]]:
    """What the job's CreateTrainingJob request holds that is known offline, and, for each part
    the hub supplies, what supplies it. The trainer's constructor cannot run offline (it reads
    the hub), so this is the request as far as the job's own arguments settle it."""
    spec = job.spec
    compute = spec.compute
    request: dict[str, Any] = {}
    if compute.kind == "training_job":
        # The SDK's object (its defaults: a 30 GB volume), as the serverful path reads it.
        sdk = compute_object(compute)
        resources: dict[str, Any] = {
            "InstanceType": sdk.instance_type,
            # ModelTrainer's default when the compute names none (train/defaults.py:146-147).
            "InstanceCount": sdk.instance_count or 1,
            "VolumeSizeInGB": sdk.volume_size_in_gb,
            "KeepAlivePeriodInSeconds": sdk.keep_alive_period_in_seconds,
            "TrainingPlanArn": sdk.training_plan_arn,
        }
        from safe_estimators._facts.fine_tuning import plan_arn_forwarded

        if not plan_arn_forwarded():
            resources.pop("TrainingPlanArn")  # the installed SDK drops it (warned)
        request["ResourceConfig"] = {k: v for k, v in resources.items() if v is not None}
    elif compute.kind == "serverless":
        serverless: dict[str, Any] = {
            "JobType": "FineTuning",
            "CustomizationTechnique": spec.technique,
        }
        if spec.technique != "CPT" and spec.training_type != "FULL":
            serverless["Peft"] = "LORA"
        if spec.sequence_length:
            serverless["SequenceLength"] = spec.sequence_length
        request["ServerlessJobConfig"] = serverless
    role = spec.extra.get("role")
    if isinstance(role, str) and role.startswith("arn:"):
        request["RoleArn"] = role  # both paths pass the trainer's role as given
    user = {str(k): str(v) for k, v in spec.hyperparameters.items()}
    if user:
        request["HyperParameters"] = user
    stopping = spec.extra.get("stopping_condition")
    seconds = (
        stopping.get("max_runtime_in_seconds")
        if isinstance(stopping, dict)
        else getattr(stopping, "max_runtime_in_seconds", None)
    )
    if isinstance(seconds, int):
        request["StoppingCondition"] = {"MaxRuntimeInSeconds": seconds}
    if compute.kind == "hyperpod":
        # No CreateTrainingJob: the trainer submits the job to the cluster (its recipe, helm).
        return {}, (
            f"no CreateTrainingJob: a HyperPodCompute job is submitted to the HyperPod cluster "
            f"{compute.fields.get('cluster_name')!r} with the hub's recipe at train()",
        )
    supplied = [
        "ServerlessJobConfig.BaseModelArn: the model's hub content ARN, from the hub "
        "(DescribeHubContent) when the trainer is made"
        if compute.kind == "serverless"
        else "AlgorithmSpecification.TrainingImage: the model's recipe image, from the hub "
        "(DescribeHubContent) at train(), unless training_image is given",
        "HyperParameters: the recipe's defaults besides the ones given, from the hub (S3 "
        "GetObject of its override parameters) when the trainer is made",
        "TrainingJobName, OutputDataConfig (and RoleArn when no role ARN is given): made by "
        "the SDK at train(), as for any job",
    ]
    return request, tuple(supplied)
