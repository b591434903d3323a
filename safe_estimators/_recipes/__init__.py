"""HyperPod training recipes (``training_recipe=``, ``recipe_overrides=``) as checked jobs.

``load`` reads the recipe offline and merges the overrides as the SDK does; ``check`` holds the
rules over the merged recipe and what the SDK derives from it; ``offline`` lets ``plan`` build
the real estimator without cloning anything; ``facts`` is what the SDK does, as data.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from safe_estimators._lazy import names_from
from safe_estimators._problems import Problem, problem_source

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


# The SDK's refusal without an instance count, by the recipe key it reads
# (sagemaker/pytorch/estimator.py: the Nova setup, and the GPU and Trainium setups).
_NO_COUNT = {
    "run.replicas": "Must set either instance_count argument for estimator or set run -> "
    "replicas in recipe for nova jobs.",
    "trainer.num_nodes": "Must set either instance_count argument for estimator or set "
    "trainer -> num_nodes in recipe.",
}


@problem_source(
    "recipe-instance-count",
    "A recipe job without instance_count takes it from the recipe (trainer.num_nodes, "
    "run.replicas for Nova), as the SDK does; the SDK fails when neither is set.",
)
def recipe_arguments(arguments: Mapping[str, Any]) -> tuple[Mapping[str, Any], list[Problem]]:
    """The arguments with the instance count the SDK takes from the recipe when none is given.

    Without instance_count the SDK reads ``trainer.num_nodes`` (``run.replicas`` for Nova) and
    fails when the recipe has neither.
    """
    recipe_name = arguments.get("training_recipe")
    if arguments.get("estimator") != "pytorch" or recipe_name is None:
        return arguments, []
    if arguments.get("instance_count") is not None or _compute_count(arguments) is not None:
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
    section, _, name = key.partition(".")
    given = (
        f"the recipe has no {name} in its {section} section" if value is None
        else f"the recipe's {key} is {value!r}, not a whole number of instances"
    )
    return arguments, [
        Problem(
            "instance_count",
            f"is not given, and {given}: the SDK takes the instance count from one of them and "
            f"refuses the job without (\"{_NO_COUNT[key]}\").",
            f"pass instance_count, or set {key} in recipe_overrides "
            f"(recipe_overrides={{{section!r}: {{{name!r}: 1}}}}).",
        )
    ]


def _compute_count(arguments: Mapping[str, Any]) -> object:
    """The instance count of ModelTrainer's ``compute`` (a Compute or its mapping), if given."""
    compute = arguments.get("compute")
    if isinstance(compute, Mapping):
        return compute.get("instance_count")
    return getattr(compute, "instance_count", None)
