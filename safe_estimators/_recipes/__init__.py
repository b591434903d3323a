"""HyperPod training recipes (``training_recipe=``, ``recipe_overrides=``) as checked jobs.

``load`` reads the recipe offline and merges the overrides as the SDK does; ``check`` holds the
rules over the merged recipe and what the SDK derives from it; ``offline`` lets ``plan`` build
the real estimator without cloning anything; ``facts`` is what the SDK does, as data.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from safe_estimators._lazy import names_from
from safe_estimators._problems import Problem

if TYPE_CHECKING:
    from safe_estimators._recipes.check import (
        check_recipe,
        dropped_arguments,
        recipe_injections,
    )
    from safe_estimators._recipes.load import Recipe, load_recipe
    from safe_estimators._recipes.modes import RECIPES_VARIABLE, offline_recipes
    from safe_estimators._spec import JobSpec

# Loaded from their modules on first use: a job without a recipe (most of them) reads neither.
_HOMES = {
    "check_recipe": "check",
    "dropped_arguments": "check",
    "recipe_injections": "check",
    "recipe_instance_count": "check",
    "RECIPES_VARIABLE": "modes",
    "Recipe": "load",
    "load_recipe": "load",
    "offline_recipes": "modes",
}


__getattr__ = names_from(__name__, _HOMES)


def recipe_of(spec: JobSpec) -> object:
    """The ``training_recipe`` a PyTorch job names (None without one)."""
    return spec.extra.get("training_recipe") if spec.estimator == "pytorch" else None


__all__ = [
    "RECIPES_VARIABLE",
    "Recipe",
    "check_recipe",
    "dropped_arguments",
    "load_recipe",
    "offline_recipes",
    "recipe_arguments",
    "recipe_injections",
    "recipe_of",
]


def recipe_arguments(arguments: Mapping[str, Any]) -> tuple[Mapping[str, Any], list[Problem]]:
    """The arguments with the instance count the SDK takes from the recipe when none is given.

    Without instance_count the SDK reads ``trainer.num_nodes`` (``run.replicas`` for Nova) and
    fails when the recipe has neither.
    """
    recipe_name = arguments.get("training_recipe")
    if arguments.get("estimator") != "pytorch" or recipe_name is None:
        return arguments, []
    if arguments.get("instance_count") is not None:
        return arguments, []
    from safe_estimators._recipes.check import recipe_instance_count
    from safe_estimators._recipes.load import load_recipe

    recipe, _ = load_recipe(recipe_name, arguments.get("recipe_overrides"))
    if recipe is None:
        return arguments, []  # the rules report why it cannot be read
    value, key = recipe_instance_count(recipe)
    if type(value) is int and value >= 1:
        return {**arguments, "instance_count": value}, []
    from safe_estimators._recipes.interpolation import UNRESOLVED

    if isinstance(value, str) and UNRESOLVED in value:
        return arguments, []  # resolved at build: its warning says so
    return arguments, [
        Problem(
            "instance_count",
            f"is not given and the recipe's {key} is {value!r}; the SDK needs one of them "
            "(\"Must set either instance_count argument for estimator or set trainer -> "
            "num_nodes\").",
            f"pass instance_count, or set {key} in recipe_overrides.",
        )
    ]
