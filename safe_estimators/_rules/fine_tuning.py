"""The rules of a fine-tuning trainer's job (sagemaker 3's SFTTrainer, DPOTrainer, RLVRTrainer,
RLAIFTrainer and CPTTrainer): what the trainer itself refuses only after reaching the hub or at
``train()``, and what it silently drops, said before anything is built.

Sources, in the installed SDK (sagemaker-train 1.27.0 lines): ``train/base_trainer.py``
(``_train_serverful_smtj``: the instance type against the HyperPod recipe's enum, 1074; the
TrainingJobCompute it rebuilds from five fields, 1270-1276; ``_apply_recipe_to_hyperparameters``:
serverless jobs send only the user's keys because CreateTrainingJob takes at most 100
hyperparameters, 433); ``train/common_utils/finetune_utils.py`` (the regions, 36-42;
``_validate_and_resolve_model_package_group``, 1438; ``_validate_hyperparameter_values``, 1544);
botocore's ``HyperParameters`` map (its ``max``); the HyperPod recipes collection's fine-tuning
recipes (``_recipes.fine_tuning``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import attrs

import instance_catalog
from safe_estimators._bounds import quote
from safe_estimators._context import Rule
from safe_estimators._facts import fine_tuning as facts
from safe_estimators._facts.limits import hyperparameters_limit, training_plan_instance_types
from safe_estimators._problems import Problem, run_rules, warning
from safe_estimators._recipes.fine_tuning import FineTuningRecipe
from safe_estimators._rules.capacity import PLAN_DOCS, plan_region_problem
from safe_estimators._rules.instance import unknown_type_problem
from safe_estimators._secrets import secrets_in_options
from safe_estimators._spec.fine_tuning import FineTuningSpec

# What the serverful path keeps of a TrainingJobCompute (base_trainer.py:1270-1276); before
# PR #6258 training_plan_arn was not among them (facts.plan_arn_forwarded reads which).
FORWARDED = ("instance_type", "instance_count", "volume_size_in_gb", "keep_alive_period_in_seconds")
PLAN = "training_plan_arn"


@attrs.frozen
class FineTuningContext:
    """What the fine-tuning rules look at: the spec, the compute's catalog entry, the region the
    job is created in (when known), and the collection's recipes for the model (None: no copy
    of the collection to read, or a model known only to the account)."""

    spec: FineTuningSpec
    instance: instance_catalog.InstanceType | None
    region: str | None
    recipes: tuple[FineTuningRecipe, ...] | None
    collection: str | None
    unread: str | None = None  # why the collection's recipes were not read (too large)

    @property
    def lora(self) -> bool | None:
        """LoRA (True) or full (False); CPT takes no training_type and says neither."""
        if self.spec.technique == "CPT":
            return None
        return self.spec.training_type != "FULL"

    @property
    def describe(self) -> str:
        kind = {True: " LoRA", False: " full", None: ""}[self.lora]
        return f"{self.spec.technique}{kind}"


def _flat(data: Mapping[str, Any]) -> dict[str, Any]:
    """The hyperparameters ``overrides`` adds, as the SDK's ``flatten_resolved_recipe`` reads
    them (``train/recipe_resolver.py``): each leaf by its own key (a later one of the same name
    wins), mappings walked; a list is not sent."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping):
            out.update(_flat(value))
        elif not isinstance(value, list):
            out[str(key)] = value
    return out


def fine_tuning_instance_type(ctx: FineTuningContext) -> Iterator[Problem]:
    """The compute's instance type must be a SageMaker training type, and a serverful job must
    name one (the trainer validates ``compute.instance_type`` against the recipe's list)."""
    compute = ctx.spec.compute
    if compute.kind == "serverless":
        return
    name = compute.instance_type
    if name is None:
        if compute.kind == "training_job":
            yield Problem(
                "compute.instance_type",
                "is missing: the trainer's serverful path builds its TrainingJobCompute from "
                "instance_type and instance_count only (instance_preferences and instance_groups "
                "are not passed on), so the job has no instance type.",
                "set compute.instance_type to one type its recipes list.",
            )
        return
    if ctx.instance is None:
        problem = unknown_type_problem("compute.instance_type", name)
        if problem is not None:
            yield problem


def fine_tuning_recipe_types(ctx: FineTuningContext) -> Iterator[Problem]:
    """The instance type against the model's fine-tuning recipes: the trainer refuses a type
    its recipe does not list (``_validate_instance_type``, since PR #6124), but only at
    ``train()``, after reaching the hub; the collection's recipes for the same model, technique
    and LoRA/full list the same types offline."""
    name = ctx.spec.compute.instance_type
    if name is None or not ctx.recipes or ctx.spec.compute.kind == "serverless":
        return
    listed = sorted({t for r in ctx.recipes for t in r.instance_types})
    if not listed or name in listed:
        return
    names = ", ".join(r.name for r in ctx.recipes[:4])
    yield Problem(
        "compute.instance_type",
        f"is {name}, which no {ctx.describe} fine-tuning recipe of {ctx.spec.model} lists: "
        f"they run on {', '.join(listed)} (the recipes collection: {names}). The trainer "
        'refuses any other type at train() ("Instance type ... is not supported").',
        f"use one of {', '.join(listed)}.",
    )


def fine_tuning_sequence_length(ctx: FineTuningContext) -> Iterator[Problem]:
    """``sequence_length`` picks the hub recipe with that SequenceLength; the collection's
    recipes for the model say which lengths exist (a warning: the hub's list decides)."""
    given = ctx.spec.sequence_length
    if given is None or not ctx.recipes:
        return
    tokens = facts.sequence_tokens(given)
    lengths = sorted({r.sequence_length for r in ctx.recipes if r.sequence_length})
    if tokens is None or not lengths or tokens in lengths:
        return
    shown = ", ".join(f"{n // 1024}K" if n % 1024 == 0 else str(n) for n in lengths)
    yield warning(
        "sequence_length",
        f"is {given} ({tokens} tokens), and the {ctx.describe} recipes of {ctx.spec.model} in "
        f"the collection are written for {shown}; the trainer picks the hub recipe whose "
        "SequenceLength equals it and raises ValueError when there is none.",
        f"use {shown}, or leave sequence_length out for the recipe's default.",
    )


def fine_tuning_hyperparameters(ctx: FineTuningContext) -> Iterator[Problem]:
    """The hyperparameters the job sends: at least the user's (``hyperparameters`` and the
    leaves of ``overrides``), at most botocore's ``HyperParameters`` maximum; a string value
    outside the trainer's character set is refused at ``train()``."""
    spec = ctx.spec
    given = {**{str(k): v for k, v in spec.hyperparameters.items()}, **_flat(spec.overrides or {})}
    limit = hyperparameters_limit().max_entries
    if len(given) > limit:
        yield Problem(
            "hyperparameters",
            f"with overrides sets {len(given)} hyperparameters, and CreateTrainingJob takes at "
            f"most {limit} (botocore's HyperParameters map); the trainer sends each one it is "
            "given (serverless jobs only these; serverful jobs the whole recipe besides).",
            "move settings into a recipe file (recipe=...) that the container reads, or set "
            "fewer of them.",
        )
    pattern = facts.hyperparameter_value_pattern()
    if pattern is None:
        return
    for key, value in spec.hyperparameters.items():
        if isinstance(value, str) and not pattern.match(value):
            yield Problem(
                f"hyperparameters.{key}",
                f"is {quote(value)}, with characters the trainer refuses at train() (its "
                "_validate_hyperparameter_values allows letters, digits, spaces and "
                "/ _ . : , - ' \" [ ]).",
                "remove the other characters.",
            )


def _is_package_arn(name: str) -> bool:
    return name.startswith("arn:") and ":model-package/" in name


def fine_tuning_region(ctx: FineTuningContext) -> Iterator[Problem]:
    """Model customization runs in some regions only: the constructor raises ValueError in any
    other (``_validate_model_region_availability``; a model package is judged by its base
    model, known to the account only: then only a region neither list has is refused)."""
    model = ctx.spec.model_name
    if ctx.region is None or model is None:
        return
    if _is_package_arn(model):
        # customization_regions picks its list by whether the name holds "nova" in any case:
        # "NOVA" or "XXnovaXX" for "nova", or any other name for "", picks the same list.
        nova = facts.customization_regions("nova")  # pragma: no mutate
        other = facts.customization_regions("")  # pragma: no mutate
        regions = tuple(dict.fromkeys([*nova, *other]))
    else:
        regions = facts.customization_regions(model)
    if regions and ctx.region not in regions:
        yield Problem(
            "region",
            f"is {ctx.region}, where the trainers offer no model customization for {model} "
            f"(the SDK's list: {', '.join(regions)}); the constructor raises ValueError.",
            f"create the job in one of {', '.join(regions)}.",
        )


def fine_tuning_model_package_group(ctx: FineTuningContext) -> Iterator[Problem]:
    """A serverless job (no compute) stores the fine-tuned model in a model package group: the
    constructor raises without one unless the model is a ModelPackage object."""
    spec = ctx.spec
    if spec.compute.kind != "serverless" or spec.extra.get("model_package_group"):
        return
    if not isinstance(spec.model, str):
        return  # a ModelPackage brings its own group
    yield Problem(
        "model_package_group",
        "is missing, and the job is serverless (no compute): the trainer stores the fine-tuned "
        "model in a model package group and raises ValueError without one.",
        "pass model_package_group='<group name or ARN>', or compute=TrainingJobCompute(...) "
        "to train on instances of your own.",
    )


def fine_tuning_compute_dropped(ctx: FineTuningContext) -> Iterator[Problem]:
    """What the serverful path leaves out of the TrainingJobCompute it rebuilds: set on the
    compute, it never reaches the request (a warning: the job runs, without it)."""
    compute = ctx.spec.compute
    if compute.kind != "training_job":
        return
    kept = (*FORWARDED, PLAN) if facts.plan_arn_forwarded() else FORWARDED
    for key in sorted(compute.fields):
        if key in kept or key.startswith("selected_"):
            continue
        if key == PLAN:
            yield warning(
                f"compute.{PLAN}",
                "is dropped by the installed SDK: its serverful path rebuilds the compute "
                "without training_plan_arn, so the job runs on on-demand capacity, not your "
                f"plan's (fixed by {facts.PLAN_FIX_PR}, in sagemaker {facts.PLAN_FIX_RELEASE}).",
                f"pip install 'sagemaker>={facts.PLAN_FIX_RELEASE}'.",
            )
            continue
        if key == "instance_type" or (key == "instance_preferences" and not compute.instance_type):
            continue  # fine_tuning_instance_type says it
        yield warning(
            f"compute.{key}",
            "is not passed on: the trainer's serverful path builds its own TrainingJobCompute "
            f"from {', '.join(kept)} only, so the job runs without {key}.",
            f"remove {key}, or train with ModelTrainer if the job needs it.",
        )


def fine_tuning_training_plan(ctx: FineTuningContext) -> Iterator[Problem]:
    """A training plan reserves one instance type, among those plans can reserve, in its own
    region: the job's type and region must be the plan's."""
    compute = ctx.spec.compute
    plan = compute.fields.get(PLAN)
    if compute.kind != "training_job" or not isinstance(plan, str) or not plan:
        return
    name = compute.instance_type
    reservable = training_plan_instance_types()
    if name is not None and ctx.instance is not None and name not in reservable:
        yield Problem(
            "compute.instance_type",
            f"is {name}, and the job runs on training plan {plan!r}; a training plan reserves "
            f"only {', '.join(sorted(reservable))} (botocore's ReservedCapacityInstanceType), "
            f"and the job's instance type must match its plan's ({PLAN_DOCS}).",
            f"run on the instance type your plan reserved, or remove {PLAN}.",
        )
    problem = plan_region_problem(f"compute.{PLAN}", plan, ctx.region)
    if problem is not None:
        yield problem


def fine_tuning_secrets(ctx: FineTuningContext) -> Iterator[Problem]:
    """Credentials in the environment, hyperparameters or other values the request carries."""
    spec = ctx.spec
    options: list[tuple[str, Any]] = [("hyperparameters", spec.hyperparameters)]
    options += [(k, v) for k, v in spec.extra.items() if isinstance(v, (str, Mapping, list))]
    yield from secrets_in_options(options, tuple(spec.accept_exposure))


FINE_TUNING_RULES: tuple[Rule, ...] = (  # type: ignore[assignment]
    fine_tuning_instance_type,
    fine_tuning_recipe_types,
    fine_tuning_sequence_length,
    fine_tuning_hyperparameters,
    fine_tuning_region,
    fine_tuning_model_package_group,
    fine_tuning_compute_dropped,
    fine_tuning_training_plan,
    fine_tuning_secrets,
)


def check_fine_tuning(ctx: FineTuningContext) -> list[Problem]:
    """Every fine-tuning rule's problems, in the table's order."""
    return run_rules(FINE_TUNING_RULES, ctx)


def not_checked(ctx: FineTuningContext) -> tuple[str, ...]:
    """What only the hub or the account can say about this job, each with the call that will
    say it: left for the trainer's constructor and train(), or the preflight."""
    spec = ctx.spec
    hub = facts.hub_name()
    name = spec.model_name
    arn = name is not None and _is_package_arn(name)
    model = "the model package's base model" if name is None or arn else name
    out = []
    if arn:
        out.append(
            "the model package and its base model: DescribeModelPackage (ModelPackage.get), "
            "made by the trainer's constructor"
        )
    out += [
        f"that {model} exists and has {ctx.describe} recipes: DescribeHubContent(HubName={hub}, "
        f"HubContentType=Model, HubContentName={model}), made by the trainer's constructor",
        "whether the model is gated (accept_eula=True needed): the same hub document's GatedBucket",
        "the recipe's hyperparameters and their defaults: S3 GetObject of the hub recipe's "
        "override parameters, made by the constructor",
    ]
    if spec.compute.kind != "serverless":
        out.append(
            "the recipe template and training image: DescribeHubContent and an S3 download "
            "at train()"
        )
    if ctx.recipes is None and spec.compute.kind != "serverless":
        if ctx.unread:
            where = f"the recipes collection was not read: {ctx.unread}"
        elif ctx.collection:
            where = "no fine-tuning recipe of the collection names this model"
        else:
            where = (
                "no copy of the recipes collection was given (--recipes DIR or "
                "$SAFE_ESTIMATORS_RECIPES)"
            )
        out.append(
            f"the instance types and sequence lengths its recipes allow ({where}): the "
            "trainer reads them from the hub at train()"
        )
    if spec.extra.get("notifications"):
        out.append("notifications: an EventBridge rule is created by the constructor")
    return tuple(out)
