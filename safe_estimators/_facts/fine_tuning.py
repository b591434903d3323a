"""The fine-tuning trainers of sagemaker 3 (``sagemaker.train``: SFTTrainer, DPOTrainer,
RLVRTrainer, RLAIFTrainer, CPTTrainer), read from the installed SDK's source.

Every fact below is read from the installed files (sagemaker-train 1.27.0 line numbers in the
comments) so that a newer SDK brings its own: the constructors' keywords (``sft_trainer.py``
and its siblings, with ``base_trainer.py``'s ``BaseTrainer.__init__`` for their ``**kwargs``),
the regions model customization runs in (``common_utils/finetune_utils.py:36-42``), the
characters a hyperparameter value may hold (``finetune_utils.py:1548``), and whether the
serverful path forwards the training plan ARN (``base_trainer.py:1275``, PR #6258).
"""

from __future__ import annotations

import ast
import functools
import os
import re

from safe_estimators._distributions._sdk_source import sdk_parameters
from safe_estimators._facts.sdk_files import sdk_file

# Customization technique -> (module under sagemaker/, class). The technique is each class's
# ``_customization_technique`` (CustomizationTechnique in train/common.py).
TRAINERS: dict[str, tuple[str, str]] = {
    "SFT": ("train/sft_trainer.py", "SFTTrainer"),
    "DPO": ("train/dpo_trainer.py", "DPOTrainer"),
    "RLVR": ("train/rlvr_trainer.py", "RLVRTrainer"),
    "RLAIF": ("train/rlaif_trainer.py", "RLAIFTrainer"),
    "CPT": ("train/cpt_trainer.py", "CPTTrainer"),
}
BASE = ("train/base_trainer.py", "BaseTrainer")
FINETUNE_UTILS = "train/common_utils/finetune_utils.py"

# TrainingType in train/common.py: LORA (the default of every trainer that takes it) or FULL.
TRAINING_TYPES = ("LORA", "FULL")

# The hub the trainers ask for the model (train/constants.py ``get_sagemaker_hub_name``:
# $SAGEMAKER_HUB_NAME, else this).
PUBLIC_HUB = "SageMakerPublicHub"
HUB_VARIABLE = "SAGEMAKER_HUB_NAME"

# The PR that made the serverful path forward ``Compute.training_plan_arn`` (merged
# 2026-09-10; sagemaker 3.21.0 of 2026-08-25 still rebuilds TrainingJobCompute from four fields,
# and 3.22.1 of 2026-09-18 is the first release dated after the merge).
PLAN_FIX_PR = "aws/sagemaker-python-sdk PR #6258"
PLAN_FIX_RELEASE = "3.22.1"
_PLAN_FORWARDED = "training_plan_arn=compute.training_plan_arn"


def hub_name() -> str:
    """The hub the installed SDK's trainers look the model up in."""
    return os.environ.get(HUB_VARIABLE) or PUBLIC_HUB


@functools.cache
def trainer_keywords(technique: str) -> tuple[str, ...]:
    """The keywords the trainer for ``technique`` takes: its own and, through ``**kwargs``,
    BaseTrainer's (``sagemaker_session``, ``role``, ``hyperparameters``, ...)."""
    module, name = TRAINERS[technique]
    own = [k for k in sdk_parameters(module, f"{name}.__init__", annotated=False) if k != "kwargs"]
    base = sdk_parameters(BASE[0], f"{BASE[1]}.__init__", annotated=False)
    return tuple(dict.fromkeys([*own, *base]))


@functools.cache
def _module_lists() -> dict[str, tuple[str, ...]]:
    tree = ast.parse(sdk_file(FINETUNE_UTILS).read_text(encoding="utf-8"))
    found: dict[str, tuple[str, ...]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and isinstance(node.value, ast.List):
                try:
                    found[target.id] = tuple(ast.literal_eval(node.value))
                except ValueError:
                    continue
    return found


def customization_regions(model: str) -> tuple[str, ...]:
    """The regions the trainers accept for ``model`` (``_validate_model_region_availability``:
    NOVA_REGIONS for a Nova model, OPEN_WEIGHTS_REGIONS otherwise); the constructor raises
    ValueError in any other region."""
    lists = _module_lists()
    return lists.get("NOVA_REGIONS" if "nova" in model.lower() else "OPEN_WEIGHTS_REGIONS", ())


@functools.cache
def hyperparameter_value_pattern() -> re.Pattern[str] | None:
    """``_validate_hyperparameter_values``' pattern: a string value with any other character
    makes ``train()`` raise ValueError."""
    tree = ast.parse(sdk_file(FINETUNE_UTILS).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "_validate_hyperparameter_values":
            for item in ast.walk(node):
                if (
                    isinstance(item, ast.Assign)
                    and isinstance(item.targets[0], ast.Name)
                    and item.targets[0].id == "allowed_chars"
                    and isinstance(item.value, ast.Constant)
                ):
                    return re.compile(str(item.value.value))
    return None


@functools.cache
def plan_arn_forwarded() -> bool:
    """Whether the installed SDK's serverful path passes the Compute's ``training_plan_arn`` on
    to the ModelTrainer it builds (before PR #6258 it was silently dropped)."""
    return _PLAN_FORWARDED in sdk_file(BASE[0]).read_text(encoding="utf-8")


def sequence_tokens(value: str) -> int | None:
    """``"8K"`` -> 8192, as ``_parse_sequence_length`` reads it; None where it raises."""
    text = value.strip().upper()
    if not text.endswith("K"):
        return None
    try:
        return int(text[:-1]) * 1024
    except ValueError:
        return None
