"""A fine-tuning trainer's job, checked and resolved: kept out of ``_resolve`` so that a validate
of an estimator or ModelTrainer spec does not build its class at start."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from safe_estimators._facts.sdk_files import sdk_generation
from safe_estimators._problems import Problem, tagged
from safe_estimators._resolve import _lookup, _refuse_or_log
from safe_estimators._resolved import Explanation


@attrs.frozen
class ResolvedFineTuning:
    """A checked fine-tuning job: the trainer (its technique), its keyword arguments as the
    user gave them, and what ``explain`` shows (with what only the hub or account can say)."""

    spec: Any
    technique: str
    kwargs: dict[str, Any]
    explanation: Explanation
    region: str | None = None


def fine_tuning_technique(arguments: Mapping[str, Any]) -> tuple[str | None, list[Problem]]:
    """The trainer a fine-tuning spec names (``trainer: SFT``, or the class name)."""
    from safe_estimators._facts.fine_tuning import TRAINERS

    given = arguments.get("trainer")
    names = {cls.lower(): t for t, (_, cls) in TRAINERS.items()}
    names.update({t.lower(): t for t in TRAINERS})
    if isinstance(given, str) and given.lower() in names:
        return names[given.lower()], []
    choices = ", ".join(TRAINERS)
    return None, [
        Problem(
            "trainer",
            f"must name a fine-tuning trainer ({choices}, or the class: SFTTrainer, ...), got "
            f"{given!r}." if given is not None else f"is missing: name the trainer ({choices}).",
            "write trainer: SFT (or DPO, RLVR, RLAIF, CPT).",
        )
    ]


def check_fine_tuning_arguments(
    arguments: Mapping[str, Any], technique: str | None = None, region: str | None = None
) -> tuple[Any, list[Problem]]:
    """Structure and check a fine-tuning job's keyword arguments; never raises. Returns the
    fine-tuning context (None when no spec could be built) and every problem."""
    from safe_estimators._rules.targets import fine_tuning_needs_sdk3

    if technique is None:
        technique, problems = fine_tuning_technique(arguments)
        if technique is None:
            return None, problems
    if sdk_generation() < 3:
        return None, tagged(fine_tuning_needs_sdk3, [fine_tuning_needs_sdk3(technique)])
    from safe_estimators._facts.fine_tuning import trainer_keywords
    from safe_estimators._recipes.fine_tuning import model_recipes, read_collection
    from safe_estimators._recipes.modes import recipes_folder
    from safe_estimators._rules.fine_tuning import FineTuningContext, check_fine_tuning
    from safe_estimators._spec.fine_tuning import structure_fine_tuning

    spec, problems = structure_fine_tuning(arguments, technique, trainer_keywords(technique))
    problems = tagged(structure_fine_tuning, problems)
    if spec is None:
        return None, problems
    name = spec.compute.instance_type
    folder = recipes_folder()
    recipes, unread = None, None
    if folder and spec.model_name:
        collection, unread = read_collection(folder)
        lora = None if technique == "CPT" else spec.training_type != "FULL"
        recipes = model_recipes(collection, spec.model_name, technique, lora) or None
    instance = _lookup(name) if name else None
    ctx = FineTuningContext(spec, instance, region, recipes, folder, unread)
    return ctx, problems + check_fine_tuning(ctx)


def resolve_fine_tuning_arguments(
    arguments: Mapping[str, Any],
    technique: str | None = None,
    source: str | None = None,
    region: str | None = None,
) -> ResolvedFineTuning:
    """A checked fine-tuning job, or ConfigError with every error."""
    from safe_estimators._facts.fine_tuning import TRAINERS
    from safe_estimators._rules.fine_tuning import not_checked

    ctx, problems = check_fine_tuning_arguments(arguments, technique, region)
    warnings = _refuse_or_log(ctx is None, problems, source)
    spec = ctx.spec
    kwargs = {
        k: v
        for k, v in arguments.items()
        if k not in ("target", "trainer", "accept_exposure") and v is not None
    }
    entry = ctx.instance
    compute = spec.compute
    explanation = Explanation(
        estimator=TRAINERS[spec.technique][1],
        instance_type=compute.instance_type or compute.kind,
        instance_count=compute.instance_count,
        gpus_per_instance=entry.gpu_count if entry is not None else None,
        warnings=warnings,
        neuron_cores=entry.neuron_cores if entry is not None and entry.neuron_cores else None,
        not_checked=not_checked(ctx),
    )
    return ResolvedFineTuning(spec, spec.technique, kwargs, explanation, region)


