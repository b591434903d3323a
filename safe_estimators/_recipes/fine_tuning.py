"""The fine-tuning recipes of the user's copy of the HyperPod recipes collection, as the facts the
fine-tuning trainers' checks need: for each recipe its base model, technique, LoRA or full, the
instance types it lists and its sequence length.

Why the collection: the SDK ships no table of which instance types a model's fine-tuning
recipes run on. ``training_recipes.json`` holds repository URLs and image pins; the trainers ask
the hub (DescribeHubContent) for the recipes at construction, and the serverful path validates
the instance type against the HyperPod override spec's ``instance_type`` enum only at
``train()`` (``base_trainer.py`` ``_validate_instance_type``; ``finetune_utils.py``
``_get_smhp_instance_type_enum`` notes the training-job hub content has none). The collection's
``recipes_collection/recipes/fine-tuning`` recipes (``llmft_*`` and ``verl-*``) list their
``instance_types`` and carry the base model (``training_config.model_config.
model_name_or_path``, or verl's ``actor_rollout_ref.model.path``) and the sequence length
(``training_args.max_len``; verl's ``data.max_prompt_length`` + ``max_response_length``).
Nothing here is downloaded: the collection is the folder of ``--recipes DIR`` or
``$SAFE_ESTIMATORS_RECIPES``; without one, the check says what it could not see.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from typing import Any

import attrs

from safe_estimators._bounds import quote

FOLDER = os.path.join("recipes_collection", "recipes", "fine-tuning")
# A recipe file is a few kilobytes; a larger one is not a recipe of the collection (skipped).
MAX_RECIPE_BYTES = 1 << 20
# The collection's fine-tuning folder held 671 recipes of about 1.8 KB each (1.2 MB) when this
# was written; a folder with more files or bytes than these is no copy of it, and is not read:
# every recipe is parsed on the first check (0.37 s for the 671), and the bounds keep that to
# about a second whatever the folder holds (4,652 recipes of 1.8 KB, 8 MB: 0.98 s of CPU).
MAX_RECIPE_FILES = 5_000
MAX_COLLECTION_BYTES = 8 << 20
# What a recipe's instance type and a shown recipe name may be: they reach messages.
_TYPE = re.compile(r"ml\.[a-z0-9][a-z0-9-]*\.[a-z0-9]+")
_SHOWN_NAME = re.compile(r"[A-Za-z0-9_.+/-]+")
# The name tokens of each technique in the collection's file names (llmft_..._gpu_sft_lora,
# verl-grpo-rlvr-...): the trainers' CustomizationTechnique values.
TECHNIQUES = ("SFT", "DPO", "RLVR", "RLAIF", "CPT")


@attrs.frozen
class FineTuningRecipe:
    """One fine-tuning recipe of the collection, by what the trainers' checks read."""

    name: str  # the path under recipes/fine-tuning, without .yaml
    model: str  # the base model's Hugging Face name
    technique: str | None
    lora: bool | None
    instance_types: tuple[str, ...]
    sequence_length: int | None


def model_key(name: str) -> str:
    """A model name without its organisation, case, punctuation or ``dot`` spellings:
    ``meta-llama/Llama-3.2-1B-Instruct`` and ``llama-3-dot-2-1b-instruct`` both give
    ``llama321binstruct``."""
    base = name.rsplit("/", 1)[-1].lower().replace("-dot-", "")
    return re.sub(r"[^a-z0-9]", "", base)


def _get(data: Any, dotted: str) -> Any:
    for key in dotted.split("."):
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


def _technique(stem: str, data: Mapping[str, Any]) -> str | None:
    tokens = {t.upper() for t in re.split(r"[-_]", stem)}
    found = [t for t in TECHNIQUES if t in tokens]
    if len(found) == 1:
        return found[0]
    kind = _get(data, "training_config.training_args.trainer_type")
    return kind.upper() if isinstance(kind, str) and kind.upper() in TECHNIQUES else None


def _lora(stem: str, data: Mapping[str, Any]) -> bool | None:
    peft = _get(data, "training_config.model_config.peft_config")
    if isinstance(peft, Mapping):
        return True
    rank = _get(data, "training_config.actor_rollout_ref.model.lora_rank")
    if isinstance(rank, int):
        return rank > 0
    tokens = set(re.split(r"[-_]", stem.lower()))
    if "fft" in tokens:
        return False
    return True if "lora" in tokens else None


def _sequence_length(data: Mapping[str, Any]) -> int | None:
    length = _get(data, "training_config.training_args.max_len")
    if isinstance(length, int):
        return length
    prompt = _get(data, "training_config.data.max_prompt_length")
    response = _get(data, "training_config.data.max_response_length")
    if isinstance(prompt, int) and isinstance(response, int):
        return prompt + response
    return None


def _recipe(path: str, stem: str, root: str) -> FineTuningRecipe | None:
    import yaml

    from safe_estimators._bounds import NotRegular, read_contained
    from safe_estimators._yaml import load_yaml  # bounded: aliases, depth and nodes

    try:
        # Bounded and inside the fine-tuning folder once its links are followed, checked on
        # the open file: a recipe swapped for a link out, a FIFO or a device is not read.
        text = read_contained(path, MAX_RECIPE_BYTES, root).decode("utf-8")
        data, refused = load_yaml(text)
    except (NotRegular, OSError, ValueError, RecursionError, yaml.YAMLError):
        return None
    if refused or not isinstance(data, Mapping):
        return None
    types = data.get("instance_types")
    model = _get(data, "training_config.model_config.model_name_or_path") or _get(
        data, "training_config.actor_rollout_ref.model.path"
    )
    if not isinstance(types, list) or not isinstance(model, str):
        return None
    return FineTuningRecipe(
        name=stem if _SHOWN_NAME.fullmatch(stem) else quote(stem),
        model=model,
        technique=_technique(os.path.basename(stem), data),
        lora=_lora(os.path.basename(stem), data),
        # Only what is an instance type's name: the types reach messages, and a recipe is
        # text from a folder a pull request may hold.
        instance_types=tuple(t for t in types if isinstance(t, str) and _TYPE.fullmatch(t)),
        sequence_length=_sequence_length(data),
    )


@attrs.frozen
class _Files:
    """The collection's fine-tuning recipe files as (path, stem, size, modification time), in
    path order (what the parsed recipes are remembered by), the real fine-tuning folder they
    must stay in, and why none is read (None: they are)."""

    files: tuple[tuple[str, str, int, int], ...]
    root: str
    unread: str | None = None


def _recipe_files(folder: str) -> _Files:
    """The fine-tuning recipe files of the collection at ``folder``, walked as a training
    script's folder is (``_bounds.walk_tree``: bounded in entries and depth, links followed
    only while they stay inside), and bounded in number and bytes: a folder past the bounds
    is no copy of the collection, and none of it is read."""
    from safe_estimators._bounds import is_inside, real_path, walk_tree

    root = os.path.join(folder, FOLDER)
    real_root = real_path(root)
    if not is_inside(real_root, real_path(folder)):
        return _Files((), real_root, f"its {FOLDER} folder links outside the collection")
    if not os.path.isdir(real_root):
        return _Files((), real_root)
    tree = walk_tree(real_root, resolved=True)
    if tree.truncated:
        return _Files((), real_root, f"its {FOLDER} folder holds {tree.truncated}")
    paths = [path for path in tree.files if path.endswith(".yaml")]
    if len(paths) > MAX_RECIPE_FILES:
        return _Files(
            (), real_root, f"its {FOLDER} folder holds {len(paths):,} YAML files, more than the "
            f"{MAX_RECIPE_FILES:,} read"
        )
    found = []
    total = 0
    for path in sorted(paths):
        try:
            status = os.stat(path)
        except (OSError, ValueError):
            continue
        if status.st_size <= MAX_RECIPE_BYTES:  # a larger one is skipped, unread
            total += status.st_size
        if total > MAX_COLLECTION_BYTES:
            return _Files(
                (), real_root, f"its {FOLDER} folder holds more than "
                f"{MAX_COLLECTION_BYTES:,} bytes of recipes, more than are read"
            )
        stem = os.path.relpath(path, real_root)[: -len(".yaml")]
        found.append((path, stem, status.st_size, status.st_mtime_ns))
    return _Files(tuple(found), real_root)


def read_collection(folder: str) -> tuple[tuple[FineTuningRecipe, ...], str | None]:
    """Every fine-tuning recipe under ``folder`` (a copy of the collection) that names its
    instance types and base model, in path order, and why none is read (a folder past the
    bounds, or one whose fine-tuning folder links out of it; else None). Parsed again when a
    file changes (a notebook's process outlives a ``git pull`` of the collection)."""
    found = _recipe_files(folder)
    if found.unread is not None:
        return (), found.unread
    return _parsed(found.files, found.root), None


@functools.lru_cache(maxsize=4)
def _parsed(
    files: tuple[tuple[str, str, int, int], ...], root: str
) -> tuple[FineTuningRecipe, ...]:
    recipes = (_recipe(path, stem, root) for path, stem, _, _ in files)
    return tuple(recipe for recipe in recipes if recipe is not None)


def model_recipes(
    recipes: tuple[FineTuningRecipe, ...], model: str, technique: str, lora: bool | None
) -> tuple[FineTuningRecipe, ...]:
    """The recipes (``read_collection``'s) for ``model`` (its Hugging Face name, or a hub
    content name that ends in the same model: ``meta-textgeneration-llama-3-2-1b-instruct``)
    with this technique, and LoRA or full when that is known (``lora`` None: either)."""
    wanted = model_key(model)
    if not wanted:
        return ()
    return tuple(
        recipe
        for recipe in recipes
        if wanted.endswith(model_key(recipe.model))
        and recipe.technique == technique
        and (lora is None or recipe.lora is None or recipe.lora == lora)
    )
