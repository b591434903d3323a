"""Reading a training recipe offline: the file, the overrides merged and resolved as the SDK does.

The SDK (``PyTorch._recipe_load``) reads a ``training_recipe`` that ends in ``.yaml`` as a local
file or, failing that, downloads it as a URL; any other value names a recipe of the recipes
collection, which it clones. Here nothing is downloaded or cloned: a predefined recipe is read
from a local copy of the collection (``--recipes DIR`` or ``$SAFE_ESTIMATORS_RECIPES``). The
recipe is a file from a pull request like a spec file, so it is read bounded (size, values,
depth, interpolations) and, from a spec file, only inside the project. ``recipe_overrides`` are
merged with OmegaConf (which the SDK depends on and uses itself), then resolved with the SDK's
resolvers and its three attempts, so the recipe checked is the recipe the job gets.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
from collections.abc import Mapping
from typing import Any

import attrs

from safe_estimators._bounds import (
    MAX_DEPTH,
    MAX_NODES,
    is_inside,
    quote,
    real_path,
)
from safe_estimators._problems import Problem, problem_source, warning
from safe_estimators._recipes.modes import RECIPES_VARIABLE, reading_offline, recipes_folder

# Where a predefined name lives inside a copy of aws/sagemaker-hyperpod-recipes.
COLLECTION_FOLDER = os.path.join("recipes_collection", "recipes")
# Interpolations in one recipe (AWS's hold up to a few dozen): resolution concatenates strings,
# so a chain of interpolations that repeat each other could grow without bound.
MAX_INTERPOLATIONS = 500

_SETUP = (
    "clone aws/sagemaker-hyperpod-recipes once (the branch or commit your jobs use) and pass "
    f"--recipes DIR (or set {RECIPES_VARIABLE}=DIR)"
)

@attrs.frozen
class Recipe:
    """A recipe as the job gets it: ``merged`` (YAML, before resolution, what the SDK is handed
    offline) and ``data`` (resolved, plain), with the kind the SDK sees in it."""

    name: str
    source: str
    merged: str
    data: dict[str, Any]
    kind: str  # "standard", "nova", "eval" or "llmft"


def is_file_recipe(value: str) -> bool:
    """The SDK reads a recipe ending in ``.yaml`` as a file (or URL); anything else is a name."""
    return value.endswith(".yaml")


def is_url(value: str) -> bool:
    return "://" in value


@problem_source(
    "recipe-file",
    "training_recipe must name a recipe that can be read offline (a local YAML file, or a "
    "predefined recipe in a local copy of the recipes collection) and that merges and "
    "resolves with recipe_overrides as the SDK merges them (OmegaConf).",
)
def load_recipe(
    training_recipe: object, overrides: object
) -> tuple[Recipe | None, list[Problem]]:
    """The merged, resolved recipe, or the problems that keep it from being read."""
    if not isinstance(training_recipe, str) or not training_recipe:
        return None, [
            Problem(
                "training_recipe",
                f"must be a recipe name, a .yaml file or a URL, got {quote(training_recipe)}.",
                "write training_recipe='training/llama/hf_llama3_8b_seq8k_gpu_p5x16_pretrain' or "
                "a path such as 'recipes/my_recipe.yaml'.",
            )
        ]
    if overrides is not None and not isinstance(overrides, Mapping):
        return None, [
            Problem(
                "recipe_overrides",
                f"must be a mapping of recipe keys, got {quote(overrides)}.",
                "write recipe_overrides={'trainer': {'num_nodes': 2}}.",
            )
        ]
    from safe_estimators._spec_files.read import RefusedRecipeFile

    if isinstance(training_recipe, RefusedRecipeFile):
        return None, []  # the containment problem says why; nothing of the file is read
    path, problems = _locate(training_recipe)
    if path is None:
        return None, problems
    try:
        key = json.dumps(overrides or {}, sort_keys=True, default=repr)
        info = os.stat(path)
    except (TypeError, ValueError, OSError) as exc:
        return None, [Problem("recipe_overrides", f"cannot be read: {quote(str(exc))}.")]
    return _load_cached(training_recipe, path, key, info.st_size, info.st_mtime_ns)


def _unreadable(training_recipe: str, message: str, hint: str) -> list[Problem]:
    if reading_offline():
        return [Problem("training_recipe", message, hint)]
    return [
        warning(
            "training_recipe",
            message + " The recipe is not checked; the SageMaker SDK fetches it at build.",
            hint,
        )
    ]


def _locate(training_recipe: str) -> tuple[str | None, list[Problem]]:
    if is_file_recipe(training_recipe):
        if os.path.isfile(training_recipe):
            return training_recipe, []
        if is_url(training_recipe):
            return None, _unreadable(
                training_recipe,
                f"{quote(training_recipe)} is a URL: the SDK downloads it, and validate, lint "
                "and plan never use the network.",
                "download the recipe into the project and name the file (the SDK takes a local "
                ".yaml path the same way).",
            )
        return None, [
            Problem(
                "training_recipe",
                f"{quote(training_recipe)} ends in .yaml but is not a file; the SDK would try "
                "it as a URL and fail (\"Could not fetch the provided recipe\").",
                "check the path (relative to the spec file, or to the current folder in Python).",
            )
        ]
    if training_recipe.endswith(".yml"):
        return None, [
            Problem(
                "training_recipe",
                f"{quote(training_recipe)} ends in .yml: the SDK reads only names ending in "
                ".yaml as files, and looks this one up as a predefined recipe name.",
                "rename the file to .yaml.",
            )
        ]
    parts = training_recipe.replace("\\", "/").split("/")
    if os.path.isabs(training_recipe) or any(p in ("", ".", "..") for p in parts):
        return None, [
            Problem(
                "training_recipe",
                f"{quote(training_recipe)} is not a recipe name of the collection "
                "(names look like training/llama/hf_llama3_8b_seq8k_gpu_p5x16_pretrain).",
                "name a recipe of the collection, or a local .yaml file.",
            )
        ]
    folder = recipes_folder()
    if folder is None:
        return None, _unreadable(
            training_recipe,
            f"{quote(training_recipe)} is a predefined recipe, which the SDK clones from "
            "GitHub; validate, lint and plan never use the network, and no local copy of the "
            "recipes collection is named (nor does git's url.<copy>.insteadOf point the SDK's "
            "clone to one).",
            _SETUP + ".",
        )
    root = real_path(folder)
    for base in (os.path.join(root, COLLECTION_FOLDER), root):
        candidate = os.path.join(base, *parts) + ".yaml"
        if os.path.isfile(candidate) and is_inside(real_path(candidate), root):
            return candidate, []
    return None, [
        Problem(
            "training_recipe",
            f"{quote(training_recipe)} is not in the recipes collection at {quote(folder)} "
            f"(looked for {COLLECTION_FOLDER}/{training_recipe}.yaml); the SDK would say "
            f"\"Recipe {training_recipe} not found\".",
            "check the name against the collection (the pre-training recipes are on its v1 "
            "branch, the fine-tuning and Nova recipes on main), or point --recipes at the copy "
            "that has it.",
        )
    ]


@functools.lru_cache(maxsize=64)
def _load_cached(
    training_recipe: str, path: str, overrides: str, _size: int, _mtime: int
) -> tuple[Recipe | None, list[Problem]]:
    text, problems = _read(path)
    if text is None:
        return None, problems
    return _merge_and_resolve(training_recipe, path, text, json.loads(overrides))


def _read(path: str) -> tuple[str | None, list[Problem]]:
    from safe_estimators._spec_files.read import _NotASpec, _read_bounded

    try:
        text = _read_bounded(path).decode("utf-8")  # type: ignore[arg-type]
    except _NotASpec as exc:
        return None, [Problem("training_recipe", str(exc), exc.hint)]
    except (OSError, UnicodeDecodeError) as exc:
        return None, [Problem("training_recipe", f"cannot be read: {quote(str(exc))}.")]
    found = _yaml_shape(text)
    if found:
        return None, [Problem("training_recipe", found, "keep the recipe to its settings.")]
    return text, []


def _yaml_shape(text: str) -> str | None:
    """Why the YAML is too large to load (values counted as aliases repeat them), or None."""
    import yaml

    if text.count("${") > MAX_INTERPOLATIONS:
        return f"has {text.count('${'):,} interpolations; at most {MAX_INTERPOLATIONS} are read."
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        return f"is not valid YAML{where}: {quote(getattr(exc, 'problem', None) or str(exc))}."
    nodes = 0
    stack = [(root, 1)] if root is not None else []
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            return f"holds more than {MAX_NODES:,} values (YAML aliases count as what they repeat)."
        if depth > MAX_DEPTH:
            return f"is nested deeper than {MAX_DEPTH} levels."
        if isinstance(node, yaml.MappingNode):
            stack += [(v, depth + 1) for pair in node.value for v in pair]
        elif isinstance(node, yaml.SequenceNode):
            stack += [(v, depth + 1) for v in node.value]
    return None


def _setup_resolvers() -> None:
    """The SDK's resolvers (``_setup_omegaconf_resolvers``), registered as it registers them."""
    import warnings

    from omegaconf import OmegaConf

    with warnings.catch_warnings():  # OmegaConf 2.4 calls the SDK's way of registering old
        warnings.simplefilter("ignore", UserWarning)
        _register(OmegaConf)


def _register(OmegaConf: Any) -> None:
    if not OmegaConf.has_resolver("multiply"):
        OmegaConf.register_new_resolver("multiply", lambda x, y: x * y, replace=True)
    if not OmegaConf.has_resolver("divide_ceil"):
        OmegaConf.register_new_resolver(
            "divide_ceil", lambda x, y: math.ceil(x / y), replace=True
        )
    if not OmegaConf.has_resolver("divide_floor"):
        OmegaConf.register_new_resolver(
            "divide_floor", lambda x, y: math.floor(x / y), replace=True
        )
    if not OmegaConf.has_resolver("add"):
        OmegaConf.register_new_resolver("add", lambda *numbers: sum(numbers))


def _merge_and_resolve(
    training_recipe: str, path: str, text: str, overrides: Mapping[str, Any]
) -> tuple[Recipe | None, list[Problem]]:
    from omegaconf import DictConfig, OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    name = os.path.splitext(os.path.basename(training_recipe))[0]
    try:
        loaded = OmegaConf.create(text)
    except Exception as exc:  # OmegaConf's own YAML reading: what the SDK would meet
        message = f"cannot be read as a recipe: {quote(str(exc))}."
        return None, [Problem("training_recipe", message)]
    if not isinstance(loaded, DictConfig):
        return None, [Problem("training_recipe", "must hold a mapping at the top level.")]
    try:
        merged = OmegaConf.merge(loaded, overrides)
    except OmegaConfBaseException as exc:
        message = f"cannot be merged into the recipe: {quote(str(exc), 200)}."
        return None, [Problem("recipe_overrides", message)]
    merged_text = OmegaConf.to_yaml(merged)
    grown = _expansion(OmegaConf.to_container(merged, resolve=False))
    if grown is not None:
        return None, [Problem(grown[0], grown[1], "write the value out instead.")]
    _setup_resolvers()
    # The SDK's attempts (_recipe_resolve_and_save): the recipe itself, then under the key
    # "recipes", then under "training". OmegaConf.resolve works in place, as there.
    attempt = OmegaConf.create(merged_text)
    errors: list[tuple[str | None, Exception]] = []
    resolved = None
    for key in (None, "recipes", "training"):
        target: Any = attempt if key is None else DictConfig({key: attempt})
        try:
            OmegaConf.resolve(target)
        except OmegaConfBaseException as exc:
            errors.append((key, exc))
            continue
        resolved = target if key is None else target.get(key)
        break
    if resolved is None:
        return None, [_unresolved(errors, merged_text)]
    data: Any = OmegaConf.to_container(resolved)
    if not isinstance(data, dict):
        return None, [Problem("training_recipe", "must hold a mapping at the top level.")]
    return Recipe(name, path, merged_text, data, recipe_kind(data)), []


# The longest resolved string read: interpolations that repeat each other could grow without end.
MAX_RESOLVED_CHARS = 100_000
_INNERMOST = re.compile(r"\$\{([^${}]*)\}")
_SHORT = 32  # a number, or what a resolver returns


def _expansion(root: Any) -> tuple[str, str] | None:
    """The first value whose interpolations would resolve to more than MAX_RESOLVED_CHARS
    characters (its path and the message), or None. Sizes are over-estimated: a reference
    counts as its target's whole size, a resolver call as a number."""
    sizes: dict[tuple[str, ...], int] = {}
    visiting: set[tuple[str, ...]] = set()

    def node(path: tuple[str, ...]) -> Any:
        value = root
        for key in path:
            if isinstance(value, Mapping) and key in value:
                value = value[key]
            elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
                value = value[int(key)]
            else:
                return None
        return value

    def target(where: tuple[str, ...], key: str) -> tuple[str, ...]:
        if key.startswith("."):
            dots = len(key) - len(key.lstrip("."))
            base = where[: max(0, len(where) - (dots - 1))]
            return base + tuple(k for k in key.lstrip(".").split(".") if k)
        parts = tuple(key.split("."))
        if parts[0] in ("recipes", "training") and parts[0] not in root:
            parts = parts[1:]  # the SDK's second and third attempts wrap the recipe in that key
        return parts

    def size(path: tuple[str, ...]) -> int:
        if path in sizes:
            return sizes[path]
        if path in visiting:
            return _SHORT  # a cycle: OmegaConf refuses it
        visiting.add(path)
        value = node(path)
        if isinstance(value, Mapping):
            total = sum(size((*path, str(k))) + len(str(k)) + 4 for k in value)
        elif isinstance(value, list):
            total = sum(size((*path, str(i))) + 2 for i in range(len(value)))
        elif isinstance(value, str) and "${" in value:
            total = text_size(path[:-1], value)
        else:
            total = len(str(value))
        visiting.discard(path)
        sizes[path] = min(total, MAX_RESOLVED_CHARS + 1)
        return sizes[path]

    def text_size(where: tuple[str, ...], text: str) -> int:
        total = 0
        while True:
            found = _INNERMOST.search(text)
            if found is None:
                return total + len(text)
            inner = found.group(1).strip()
            if ":" in inner or not inner:
                total += _SHORT
            else:
                total += size(target(where, inner))
            if total > MAX_RESOLVED_CHARS:
                return total
            text = text[: found.start()] + text[found.end() :]

    def walk(path: tuple[str, ...], value: Any) -> tuple[str, str] | None:
        if isinstance(value, Mapping):
            items: Any = ((str(k), v) for k, v in value.items())
        elif isinstance(value, list):
            items = ((str(i), v) for i, v in enumerate(value))
        else:
            if isinstance(value, str) and "${" in value and size(path) > MAX_RESOLVED_CHARS:
                return (
                    "recipe." + ".".join(path),
                    f"would resolve to more than {MAX_RESOLVED_CHARS:,} characters: its "
                    "interpolations repeat values that repeat others.",
                )
            return None
        for key, item in items:
            found = walk((*path, key), item)
            if found is not None:
                return found
        return None

    return walk((), root)


def _unresolved(errors: list[tuple[str | None, Exception]], text: str) -> Problem:
    """The interpolation that failed, from the attempt the recipe was written for."""
    wanted = "recipes" if "${recipes." in text else "training" if "${training." in text else None
    key, exc = next(((k, e) for k, e in errors if k == wanted), errors[0])
    full_key = str(getattr(exc, "full_key", "") or "")
    if key and full_key.startswith(key + "."):
        full_key = full_key[len(key) + 1 :]
    reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    path = f"recipe.{full_key}" if full_key else "recipe"
    nested = _nested(full_key, "<value>") if full_key else "{...}"
    return Problem(
        path,
        f"cannot be resolved: {quote(reason, 200)}; the SDK stops with \"Could not resolve "
        "provided recipe.\"",
        f"give it a value in recipe_overrides, e.g. recipe_overrides={nested}"
        + (" (SageMaker keeps /opt/ml/model)" if full_key == "run.results_dir" else "")
        + ".",
    )


def _nested(dotted: str, value: str) -> str:
    out = f"'{value}'" if value != "<value>" else "..."
    if dotted == "run.results_dir":
        out = "'/opt/ml/model'"
    for part in reversed(dotted.split(".")):
        out = f"{{'{part}': {out}}}"
    return out


def recipe_kind(recipe: Mapping[str, Any]) -> str:
    """What the SDK takes the recipe for (``_is_nova_recipe``, ``_is_eval_recipe``,
    ``_is_llmft_recipe``), in its order: Nova and evaluation first."""
    run = recipe.get("run") or {}
    run = run if isinstance(run, Mapping) else {}
    model_type = str(run.get("model_type") or "").lower()
    training = recipe.get("training_config") or {}
    training = training if isinstance(training, Mapping) else {}
    nova = bool(model_type and "amazon.nova" in model_type and "model_name_or_path" in run)
    if nova or training.get("distillation_data") is not None:
        return "nova"
    if recipe.get("evaluation"):
        return "eval"
    if model_type in ("llm_finetuning_aws", "verl") and training:
        return "llmft"
    return "standard"
