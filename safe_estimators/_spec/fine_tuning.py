"""A fine-tuning trainer's job (sagemaker 3's ``sagemaker.train`` SFTTrainer, DPOTrainer, ...):
its typed options and their loader, kept out of ``_spec`` so that a validate of an estimator or
ModelTrainer spec does not build these classes at start."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from safe_estimators._bounds import quote
from safe_estimators._problems import Problem, closest, join_path, problem_source
from safe_estimators._spec import ExposedPaths, _as_mapping, _shown, _type_name

# The fields of the trainers' two compute classes (sagemaker/core/training/configs.py:
# HyperPodCompute, and TrainingJobCompute = Compute, ModelTrainer's own).
HYPERPOD_COMPUTE_FIELDS = ("cluster_name", "instance_type", "namespace", "node_count")
TRAINING_JOB_COMPUTE_FIELDS = (
    "instance_type", "instance_count", "volume_size_in_gb", "volume_kms_key_id",
    "keep_alive_period_in_seconds", "instance_groups", "training_plan_arn",
    "instance_placement_config", "instance_preferences", "enable_managed_spot_training",
)  # fmt: skip


@attrs.frozen
class FineTuningCompute:
    """Where a fine-tuning job runs: ``serverless`` (``compute=None``), ``training_job``
    (TrainingJobCompute) or ``hyperpod`` (HyperPodCompute), with the fields set on it."""

    kind: str
    fields: dict[str, Any] = attrs.field(factory=dict)
    given: Any = None  # the SDK object or mapping as the user passed it

    @property
    def instance_type(self) -> str | None:
        value = self.fields.get("instance_type")
        return value if isinstance(value, str) else None

    @property
    def instance_count(self) -> int:
        value = self.fields.get("node_count" if self.kind == "hyperpod" else "instance_count")
        return value if type(value) is int else 1


@attrs.frozen
class FineTuningSpec:
    """A fine-tuning trainer's job in the trainer's own words (``technique``: SFT, DPO, RLVR,
    RLAIF or CPT, the trainer's ``_customization_technique``). The options the rules read are
    typed here; the trainer's other keywords are passed through as given in ``extra``."""

    technique: str
    model: Any
    training_type: str | None = None
    compute: FineTuningCompute = FineTuningCompute("serverless")
    sequence_length: str | None = None
    hyperparameters: dict[str, Any] = attrs.field(factory=dict)
    overrides: dict[str, Any] | None = None
    accept_exposure: ExposedPaths = attrs.field(default=ExposedPaths(()))
    extra: dict[str, Any] = attrs.field(factory=dict)

    @property
    def model_name(self) -> str | None:
        """The model's name as the trainer reads it (a string, or a ModelPackage's name is only
        known to the account)."""
        return self.model if isinstance(self.model, str) else None


def _compute(value: object, path: str) -> tuple[FineTuningCompute | None, list[Problem]]:
    if value is None:
        return FineTuningCompute("serverless"), []
    name = type(value).__name__
    if isinstance(value, Mapping):
        kind = "hyperpod" if "cluster_name" in value or "node_count" in value else "training_job"
        given: dict[str, Any] = dict(value)
    elif name in ("HyperPodCompute", "Compute", "TrainingJobCompute"):
        kind = "hyperpod" if name == "HyperPodCompute" else "training_job"
        given = {k: v for k, v in vars(value).items() if v is not None}
    else:
        return None, [
            Problem(
                path,
                f"must be TrainingJobCompute, HyperPodCompute or None (serverless), got {name} "
                "(the trainer raises TypeError).",
                "pass compute=TrainingJobCompute(instance_type=..., instance_count=...), "
                "HyperPodCompute(cluster_name=..., instance_type=...), or leave it out.",
            )
        ]
    names = HYPERPOD_COMPUTE_FIELDS if kind == "hyperpod" else TRAINING_JOB_COMPUTE_FIELDS
    problems = []
    for key in given:
        if key not in names and not (kind == "training_job" and key.startswith("selected_")):
            meant = closest(key, names)
            problems.append(
                Problem(
                    join_path(path, _shown(key)),
                    f"{quote(key)} is not a field of "
                    f"{'HyperPodCompute' if kind == 'hyperpod' else 'TrainingJobCompute'}.",
                    f"did you mean {meant!r}?" if meant else f"use one of {', '.join(names)}.",
                )
            )
    fields = {k: v for k, v in given.items() if v is not None}
    for key in ("instance_count", "node_count"):
        count = fields.get(key)
        if count is not None and (type(count) is not int or count < 1):
            problems.append(
                Problem(
                    join_path(path, key),
                    f"must be a whole number of 1 or more, got {quote(count)}.",
                    f"set {key} to 1 or more.",
                )
            )
    instance_type = fields.get("instance_type")
    if instance_type is not None and not isinstance(instance_type, str):
        problems.append(
            Problem(
                join_path(path, "instance_type"),
                f"must be a string, got {_type_name(instance_type)}.",
                "name an instance type such as ml.p5.48xlarge.",
            )
        )
    return FineTuningCompute(kind, fields, value), problems


@problem_source(
    "fine-tuning-options",
    "A fine-tuning trainer's options are its constructor's keywords (with BaseTrainer's, "
    "which it takes through **kwargs), each of its type: BaseTrainer takes no other keyword "
    "(a TypeError at construction); training_type is LORA or FULL; sequence_length is a "
    "number of K tokens ('8K'), as finetune_utils._parse_sequence_length reads it.",
)
def structure_fine_tuning(
    data: object, technique: str, keywords: tuple[str, ...], *, path: str = ""
) -> tuple[FineTuningSpec | None, list[Problem]]:
    """Load a FineTuningSpec from a trainer's keyword arguments (``keywords``: the names the
    installed trainer takes). Never raises for bad input."""
    mapping, not_a_mapping = _as_mapping(data, path)
    if mapping is None:
        return None, not_a_mapping
    data = mapping
    problems: list[Problem] = []
    extra: dict[str, Any] = {}
    for key, value in data.items():
        if key in ("target", "trainer", "accept_exposure") or value is None:
            continue
        if not isinstance(key, str):
            problems.append(
                Problem(path or "<spec>", f"option names must be strings, got {quote(key)}.")
            )
        elif key not in keywords:
            meant = closest(key, keywords)
            problems.append(
                Problem(
                    join_path(path, _shown(key)),
                    f"{quote(key)} is not an option of the {technique} trainer (BaseTrainer "
                    "takes no other keyword arguments: Python raises TypeError when the trainer "
                    "is constructed).",
                    f"did you mean {meant!r}?" if meant else "remove it; see help() of the "
                    "trainer class for its options.",
                )
            )
        else:
            extra[key] = value
    model = extra.pop("model", None)
    if model is None or model == "":
        problems.append(
            Problem(join_path(path, "model"), "is required but missing.", "name the base model.")
        )
    training_type = extra.pop("training_type", None)
    training_type = getattr(training_type, "value", training_type)
    if training_type is not None and training_type not in ("LORA", "FULL"):
        problems.append(
            Problem(
                join_path(path, "training_type"),
                f"must be LORA or FULL (TrainingType), got {quote(training_type)}.",
                "use TrainingType.LORA (the default) or TrainingType.FULL.",
            )
        )
    compute, found = _compute(extra.pop("compute", None), join_path(path, "compute"))
    problems += found
    length = extra.pop("sequence_length", None)
    if length is not None and (
        not isinstance(length, str)
        or not length.strip().upper().endswith("K")
        or not length.strip()[:-1].isdigit()
    ):
        problems.append(
            Problem(
                join_path(path, "sequence_length"),
                f"must be a number of K tokens such as '4K' or '32K', got {quote(length)} "
                "(the trainer's _parse_sequence_length raises ValueError).",
                "write it as the recipes do: '1K', '2K', '4K', '8K', '16K', '32K', '64K' or "
                "'128K'.",
            )
        )
        length = None
    recipe = extra.get("recipe")
    if recipe is not None and (
        not isinstance(recipe, str) or recipe.startswith(("http://", "https://"))
    ):
        problems.append(
            Problem(
                join_path(path, "recipe"),
                f"is {quote(recipe)}: the trainers read a recipe from a local YAML file or an "
                "s3:// URI only, and raise ValueError at train() for anything else (HTTP(S) "
                "URLs \"are not supported for security reasons\": recipe_resolver."
                "_load_user_recipe).",
                "copy the recipe into the project (or to S3) and name that file.",
            )
        )
    hyperparameters = extra.pop("hyperparameters", None) or {}
    if not isinstance(hyperparameters, Mapping):
        problems.append(
            Problem(
                join_path(path, "hyperparameters"),
                f"must be a mapping of names to values, got {_type_name(hyperparameters)}.",
                "pass a dict.",
            )
        )
        hyperparameters = {}
    overrides = extra.pop("overrides", None)
    if overrides is not None and not isinstance(overrides, Mapping):
        problems.append(
            Problem(
                join_path(path, "overrides"),
                f"must be a nested mapping in the recipe's layout, got {_type_name(overrides)}.",
                'pass a dict such as {"training_config": {"learning_rate": 2e-5}}.',
            )
        )
        overrides = None
    exposure = data.get("accept_exposure") or ()
    if isinstance(exposure, str) or not all(isinstance(e, str) for e in exposure):
        problems.append(
            Problem(
                join_path(path, "accept_exposure"),
                "must be a list of dotted paths.",
                'write ["environment.NAME"].',
            )
        )
        exposure = ()
    if compute is None or model is None or model == "":
        return None, problems
    spec = FineTuningSpec(
        technique=technique,
        model=model,
        training_type=training_type if training_type in ("LORA", "FULL") else None,
        compute=compute,
        sequence_length=length,
        hyperparameters=dict(hyperparameters),
        overrides=dict(overrides) if overrides is not None else None,
        accept_exposure=ExposedPaths(tuple(exposure)),
        extra=extra,
    )
    return spec, problems


