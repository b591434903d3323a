"""Reading a training recipe offline: the file, the overrides merged and resolved as the SDK does.

The SDK (``PyTorch._recipe_load``) reads a ``training_recipe`` that ends in ``.yaml`` as a local
file or, failing that, downloads it as a URL; any other value names a recipe of the recipes
collection, which it clones. Here nothing is downloaded or cloned: a predefined recipe is read
from a local copy of the collection (``--recipes DIR`` or ``$SAFE_ESTIMATORS_RECIPES``). The
recipe is a file from a pull request like a spec file, so it is read bounded (size, values,
depth, interpolations) and, from a spec file, only inside the project. ``recipe_overrides`` are
merged with OmegaConf (which the SDK depends on and uses itself), then resolved with the SDK's
resolvers and its three attempts, so the recipe checked is the recipe the job gets; nothing that
reads outside the merged document (``oc.env``, ``oc.decode``, a resolver the program registered)
is resolved here, on the machine that checks it (``interpolation``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from typing import Any

import attrs

from safe_estimators._bounds import (
    MAX_DEPTH,
    MAX_NODES,
    is_inside,
    note_read,
    quote,
    real_path,
)
from safe_estimators._facts.sdk_files import sdk_generation, sdk_version
from safe_estimators._problems import Problem, problem_source, warning
from safe_estimators._recipes import interpolation
from safe_estimators._recipes.interpolation import MAX_NESTING, nesting
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
    """A recipe as the job gets it: ``merged`` (YAML, before resolution: what the SDK is
    handed to build the job, which it resolves on the machine that builds it), ``data``
    (resolved here, plain), ``resolved`` (``data`` as YAML with its interpolation marks
    escaped: what ``plan`` hands the SDK, which reads it back as ``data``), the kind the SDK
    sees in it, and the values only the build can resolve (``UNRESOLVED`` in ``data``; see
    ``interpolation``)."""

    name: str
    source: str
    merged: str
    data: Mapping[str, Any]  # a dict (a read-only view while a rule runs: check._Tracked)
    kind: str  # "standard", "nova", "eval" or "llmft"
    resolved: str = ""
    unresolved: frozenset[tuple[str, ...]] = frozenset()
    # Overridden keys whose own value sagemaker 3's from_recipe cannot read (an interpolation
    # of a key outside the recipe): it fails on them where the merged recipe handed builds.
    unreadable_overrides: tuple[str, ...] = ()
    # The overrides sagemaker 3's from_recipe merges: the given ones less the keys it drops
    # (on sagemaker 2, the given ones).
    kept_overrides: Mapping[str, Any] = attrs.field(factory=dict)


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
    except (TypeError, ValueError, RecursionError) as exc:
        return None, [Problem("recipe_overrides", f"cannot be read: {quote(str(exc))}.")]
    text, problems = _read(path)
    if text is None:
        return None, problems
    # Remembered by the recipe's bytes, not its name and time: an edit within the file system's
    # timestamp granularity, or a file swapped for another of the same size, is read again.
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
    found = (training_recipe, path, key, digest)
    if found not in _LOADED:
        if len(_LOADED) >= _MAX_LOADED:
            _LOADED.pop(next(iter(_LOADED)))
        _LOADED[found] = _merge_and_resolve(training_recipe, path, text, json.loads(key))
    return _LOADED[found]


_LOADED: dict[tuple[str, str, str, bytes], tuple[Recipe | None, list[Problem]]] = {}
_MAX_LOADED = 64


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
    from safe_estimators._spec_files.read import RemoteRecipe

    if is_file_recipe(training_recipe):
        # A spec's URL is never looked for here (_files decided it names no file beside it).
        if not isinstance(training_recipe, RemoteRecipe):
            note_read(training_recipe)  # looked for: a verdict depends on it being there
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
        note_read(candidate)
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


def _read(path: str) -> tuple[str | None, list[Problem]]:
    from safe_estimators._bounds import MAX_SPEC_BYTES, NotRegular, read_contained

    try:
        text = read_contained(path, MAX_SPEC_BYTES, _containing_root(path)).decode("utf-8")
    except NotRegular as exc:
        return None, [Problem("training_recipe", f"{quote(path)} {exc}; it was not read.")]
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        return None, [Problem("training_recipe", f"cannot be read: {quote(reason)}.")]
    found = _yaml_shape(text)
    if found:
        return None, [Problem("training_recipe", found, "keep the recipe to its settings.")]
    return text, []


def _containing_root(path: str) -> str | None:
    """The folder a recipe file must stay in: the ``--recipes`` copy for a predefined name
    (its real path), else none here (a spec's recipe is contained by ``_files``)."""
    folder = recipes_folder()
    if folder is None:
        return None
    root = real_path(folder)
    return root if is_inside(real_path(path), root) else None


def _yaml_shape(text: str) -> str | None:
    """Why the YAML is too large to load (values counted as aliases repeat them), or None."""
    import yaml

    if text.count("${") > MAX_INTERPOLATIONS:
        return f"has {text.count('${'):,} interpolations; at most {MAX_INTERPOLATIONS} are read."
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        # The parser's events first (iterative): yaml.compose recurses once per level.
        depth = 0
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    return f"is nested deeper than {MAX_DEPTH} levels."
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
        root = yaml.compose(text, Loader=loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        return f"is not valid YAML{where}: {quote(getattr(exc, 'problem', None) or str(exc))}."
    except RecursionError:  # pragma: no cover - the depth is checked first
        return f"is nested deeper than {MAX_DEPTH} levels."
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
        elif "${" in node.value and nesting(node.value) > MAX_NESTING:
            # OmegaConf parses every interpolation when it reads the file, recursing per level.
            line = node.start_mark.line + 1
            return f"nests interpolations over {MAX_NESTING} deep (at line {line})."
    return None


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
    deep = interpolation.nesting_problem(overrides)
    if deep is not None:  # OmegaConf parses them when it merges them
        return None, [Problem(_dotted(deep[0]), deep[1], "write the value out instead.")]
    notes: list[Problem] = []
    unreadable: list[str] = []
    if sdk_generation() >= 3:
        overrides, notes = dropped_overrides(overrides, loaded, name, unreadable=unreadable)
    try:
        merged = OmegaConf.merge(loaded, overrides)
    except OmegaConfBaseException as exc:
        message = f"cannot be merged into the recipe: {quote(str(exc), 200)}."
        return None, [Problem("recipe_overrides", message)]
    plain = OmegaConf.to_container(merged, resolve=False)
    deep = interpolation.nesting_problem(plain)
    if deep is not None:
        return None, [Problem(_dotted(deep[0]), deep[1], "write the value out instead.")]
    outside = interpolation.outside_values(plain)
    plain = interpolation.replaced(plain, {o.path for o in outside})
    grown = interpolation.growth_problem(plain)
    if grown is not None:
        return None, [Problem(_dotted(grown[0]), grown[1], "write the value out instead.")]
    notes += [_outside_warning(found) for found in outside]
    # The SDK's attempts (_recipe_resolve_and_save): the recipe itself, then under the key
    # "recipes", then under "training". OmegaConf.resolve works in place, as there.
    errors: list[tuple[str | None, Exception]] = []
    resolved = None
    with interpolation.sandboxed() as refused:
        for key in (None, "recipes", "training"):
            attempt = OmegaConf.create(plain)
            target: Any = attempt if key is None else DictConfig({key: attempt})
            try:
                OmegaConf.resolve(target)
            except OmegaConfBaseException as exc:
                errors.append((key, exc))
                continue
            except RecursionError:  # pragma: no cover - nesting and growth are bounded first
                return None, [Problem("training_recipe", "is nested too deeply to resolve.")]
            resolved = target if key is None else target.get(key)
            break
    if refused:
        wrapped, failure = errors[-1] if errors else (None, None)
        where = str(getattr(failure, "full_key", "") or "").split(".")
        if wrapped and where[0] == wrapped:
            where = where[1:]  # the attempt's wrapping key
        return None, [
            Problem(
                _dotted(tuple(where)),
                f"cannot be resolved here: {refused[0]}. A recipe's arithmetic makes numbers.",
                "write the value out instead.",
            )
        ]
    if resolved is None:
        return None, [*notes, _unresolved(errors, OmegaConf.to_yaml(merged))]
    data: Any = OmegaConf.to_container(resolved)
    if not isinstance(data, dict):
        return None, [Problem("training_recipe", "must hold a mapping at the top level.")]
    unresolved = frozenset(interpolation.unresolved_paths(data))
    handed = OmegaConf.to_yaml(OmegaConf.create(_escaped(data)))
    merged_text = OmegaConf.to_yaml(merged)
    recipe = Recipe(
        name,
        path,
        merged_text,
        data,
        recipe_kind(data),
        handed,
        unresolved,
        tuple(unreadable),
        kept_overrides=overrides,
    )
    return recipe, notes


def dropped_overrides(
    overrides: Mapping[str, Any],
    base: Mapping[str, Any],
    name: str,
    at: str = "",
    *,
    unreadable: list[str],
) -> tuple[dict[str, Any], list[Problem]]:
    """The overrides sagemaker 3 merges, and a warning for each key it drops: its
    ``_drop_unknown_recipe_overrides`` keeps only keys the recipe has at the same place (where
    sagemaker 2's estimator merged them in). It reads the recipe's own value of each key it
    keeps, which resolves an interpolation: the keys where that fails go to ``unreadable``."""
    import difflib

    from omegaconf.errors import OmegaConfBaseException

    kept: dict[str, Any] = {}
    notes: list[Problem] = []
    for key, value in overrides.items():
        dotted = f"{at}.{key}" if at else str(key)
        if not (isinstance(base, Mapping) and key in base):
            known = [str(k) for k in base] if isinstance(base, Mapping) else []
            close = difflib.get_close_matches(str(key), known, n=1)
            notes.append(
                warning(
                    f"recipe_overrides.{dotted}",
                    f"is not a key of the recipe {name}; sagemaker {sdk_version()}'s "
                    "ModelTrainer.from_recipe drops it (\"Recipe override key "
                    f"'{dotted}' does not exist in the recipe and will be dropped.\"), so it "
                    "changes nothing.",
                    (f"did you mean {close[0]!r}? " if close else "")
                    + "override a key the recipe has, or remove this one.",
                )
            )
            continue
        try:
            own = base[key]  # as the SDK reads it
        except OmegaConfBaseException:
            unreadable.append(dotted)
            kept[key] = value
            continue
        if isinstance(value, Mapping) and isinstance(own, Mapping):
            kept[key], found = dropped_overrides(
                value, own, name, dotted, unreadable=unreadable
            )
            notes += found
        else:
            kept[key] = value
    return kept, notes


def _dotted(path: tuple[str, ...]) -> str:
    return ".".join(("recipe", *(p for p in path if p)))


def _escaped(value: Any) -> Any:
    """Resolved data whose text OmegaConf reads back as that text: ``${`` becomes ``\\${``."""
    if isinstance(value, dict):
        return {k: _escaped(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_escaped(v) for v in value]
    if isinstance(value, str) and "${" in value:
        # Backslashes before an interpolation escape each other (OmegaConf's grammar): doubled.
        return _MARK.sub(lambda found: found.group(1) * 2 + "\\${", value)
    return value


_MARK = re.compile(r"(\\*)\$\{")


def _outside_warning(found: Any) -> Problem:
    """A value the SDK resolves at build from outside the recipe: named, masked, unchecked."""
    from safe_estimators._recipes.interpolation import DOCUMENT_RESOLVERS, SDK_RESOLVERS
    from safe_estimators._secret_formats import redacted

    calls = ", ".join(found.resolvers)
    what = []
    if "oc.env" in found.resolvers:
        what.append("oc.env reads an environment variable of that machine")
    if {"oc.decode", "oc.create"} & set(found.resolvers):
        what.append("oc.decode and oc.create make new values, and interpolations, from text")
    unknown = [r for r in found.resolvers if not r.startswith("oc.") or r == "${...}"]
    if unknown:
        known = ", ".join((*SDK_RESOLVERS, *DOCUMENT_RESOLVERS, "oc.env", "oc.decode", "oc.create"))
        what.append(
            f"{', '.join(unknown)} is none of the resolvers the SDK and OmegaConf register "
            f"({known}): the SDK resolves it only if the program that builds the job registers "
            "it (OmegaConf.register_new_resolver), and otherwise stops with \"Could not resolve "
            "provided recipe.\""
        )
    return warning(
        _dotted(found.path),
        f"is {redacted(found.text)}, which calls {calls}: the SageMaker SDK resolves it when it "
        f"builds the job, on the machine that builds it ({'; '.join(what)}). validate, lint and "
        "plan never resolve it on this machine, so its value is unknown here and the checks "
        "that read it were skipped.",
        "write the value itself in the recipe or in recipe_overrides to have it checked (and "
        "keep credentials out of recipes: the resolved recipe is uploaded with the job).",
    )


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
