"""``safe-estimators port``: a spec as the Python code of a bare ModelTrainer.

For teams moving from the estimators (sagemaker 2.x) to ModelTrainer (sagemaker 3.x): the job
is checked and resolved as ``plan`` resolves it for the ModelTrainer target, then written out
as plain SDK code (no safe_estimators import) that builds the same ModelTrainer; a test runs the
code and compares its request with the plan's. A recipe job (``training_recipe``) is written as
``ModelTrainer.from_recipe(...)`` on sagemaker 3, with the recipe the spec names (a local file
as plan found it, or the predefined name), its overrides and the recipe image plan resolves;
on sagemaker 2 the ModelTrainer target does not build recipe jobs (the estimator does), and
port refuses them there as plan does.

The program is printed in a CI log and may be run: nothing the input chose is ever code in it
(``tests/test_hostile_round3_output.py`` compiles it for hostile names and values and reads its
calls), and no credential is printed whole.
"""

from __future__ import annotations

import ast
import keyword
import math
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from safe_estimators._bounds import quote
from safe_estimators._facts.sdk_files import sdk_generation, sdk_version
from safe_estimators._problems import ConfigError, Problem
from safe_estimators._secret_formats import mask_text, masked_plain
from safe_estimators._targets.trainer_args import TrainerArguments

if TYPE_CHECKING:
    from safe_estimators._resolve import ResolvedJob

# Where each SDK generation keeps ModelTrainer, its configs and its launchers.
_MODULES = {
    2: ("sagemaker.modules.train", "sagemaker.modules.configs", "sagemaker.modules.distributed"),
    3: ("sagemaker.train", "sagemaker.core.training.configs", "sagemaker.train.distributed"),
}
# ModelTrainer argument -> its config class (the others are plain values).
_CONFIG_CLASSES = {
    "source_code": "SourceCode",
    "compute": "Compute",
    "stopping_condition": "StoppingCondition",
    "networking": "Networking",
    "output_data_config": "OutputDataConfig",
    "checkpoint_config": "CheckpointConfig",
}
_WITH_CLASSES = {
    "with_retry_strategy": "RetryStrategy",
    "with_metric_definitions": "MetricDefinition",
}


def _call(name: str, fields: dict[str, Any], code: dict[str, str] | None = None) -> str:
    """``Name(field=value, ...)``: ``fields`` as literals, ``code`` (ours) as written. A field
    whose name is not a Python keyword argument (a user's SMP option ``"a b"``) is passed in
    ``**{...}``: no name the input chose is ever written as code."""
    named = {k: v for k, v in fields.items() if _is_keyword_name(k)}
    parts = [f"{k}={_literal(v)}" for k, v in named.items()]
    rest = {k: v for k, v in fields.items() if k not in named}
    if rest:
        parts.append(f"**{_literal(rest)}")
    parts += [f"{k}={v}" for k, v in (code or {}).items()]
    return f"{name}({', '.join(parts)})"


def _is_keyword_name(name: object) -> bool:
    return isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name)


class _NotLiteral(Exception):
    """A value port cannot write as a Python literal (a pipeline parameter, an object)."""

    def __init__(self, value: object) -> None:
        super().__init__(type(value).__name__)
        self.value = value


def _literal(value: Any) -> str:
    """``value`` as the text of a Python literal that evaluates to it: built by ``repr`` of a
    plain copy (a ``str`` or ``int`` subclass, whose ``repr`` may be anything, as its base
    type), and read back by ``ast.literal_eval`` before it is written, so that it can hold
    nothing but data."""
    text = repr(_plain(value))
    ast.literal_eval(text)  # raises on anything that is not a literal: never printed
    return text


def _plain(value: Any) -> Any:
    """A copy of ``value`` made only of str, int, float, bool, None, list and dict."""
    if value is None or isinstance(value, bool):
        return bool(value) if value is not None else None
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _NotLiteral(value)
        return float(value)
    if isinstance(value, Mapping):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    raise _NotLiteral(value)


def _docstring_text(text: str) -> str:
    """``text`` inside a ``\"\"\"`` docstring, reading back as itself: the body of its
    ``repr`` (every control character, quote and backslash escaped), its ``"`` escaped too."""
    return repr(str.__str__(text))[1:-1].replace('"', '\\"')


@attrs.frozen
class RecipeCall:
    """What port writes of a recipe job's ``ModelTrainer.from_recipe``: the recipe as the spec
    names it, its overrides, and whether they are handed as an OmegaConf config (``port``)."""

    training_recipe: str
    overrides: Mapping[str, Any] | None
    as_config: bool = False


def trainer_code(
    arguments: TrainerArguments,
    image: str | None,
    source: str | None,
    region: str,
    assumed: str = "",
    recipe: RecipeCall | None = None,
) -> str:
    """The Python code of a bare ModelTrainer with ``arguments`` (the installed generation's
    imports), as a function ``model_trainer(sagemaker_session=None)``; with ``recipe``, made by
    ``ModelTrainer.from_recipe`` (sagemaker 3).

    Every value of the job, and every text the input chose (the spec's file name, option and
    channel names), is written as a literal (``_literal``) or inside the docstring escaped; the
    calls, names and imports are the template's own. What looks like a credential is cut to its
    first characters, as every other output shows it, accepted in ``accept_exposure`` or not.
    """
    arguments, image, recipe, masked = _masked_arguments(arguments, image, recipe)
    generation = 3 if sdk_generation() >= 3 else 2
    trainer_module, configs_module, distributed_module = _MODULES[generation]
    classes: set[str] = set()
    lines = ["    trainer = ModelTrainer("] if recipe is None else _from_recipe_lines(recipe)
    lines.append("        sagemaker_session=sagemaker_session,")
    if image is not None:  # a recipe job without one: from_recipe's own (plan refuses it)
        lines.append(f"        training_image={_literal(image)},")
    keywords: dict[str, str] = {}
    for name, value in arguments.configs.items():
        if name == "source_code":
            value = {**value, "source_dir": os.path.normpath(value["source_dir"])}
        if value == {}:
            continue  # an empty environment or hyperparameters: ModelTrainer's default
        if name in _CONFIG_CLASSES:
            cls = _CONFIG_CLASSES[name]
            classes.add(cls)
            if name == "networking" and not any(value.values()):
                continue  # nothing ModelTrainer would send: no Networking at all
            if name == "networking" and generation == 2 and not value.get("subnets"):
                # 2.x's Networking requires both lists: empty ones send no VpcConfig, which is
                # the only way 2.x sends the encryption flag without a VPC.
                value = {"subnets": [], "security_group_ids": [], **value}
            keywords[name] = _call(cls, value)
        elif name == "tags":
            classes.add("Tag")
            keywords[name] = f"[{', '.join(_call('Tag', t) for t in value)}]"
        else:
            keywords[name] = _literal(value)
    launchers: set[str] = set()
    if arguments.distributed is not None:
        kind, fields = arguments.distributed
        if kind not in _LAUNCHERS:  # ours (see _trainer._launcher), never the input's
            raise ValueError(f"unknown launcher {kind!r}")
        launchers.add(kind)
        smp = {}
        if arguments.smp is not None:
            launchers.add("SMP")
            smp = {"smp": _call("SMP", arguments.smp)}
        keywords["distributed"] = _call(kind, fields, smp)
    if arguments.inputs:
        classes.add("InputData")
        channels = ", ".join(_call("InputData", channel) for channel in arguments.inputs)
        keywords["input_data_config"] = f"[{channels}]"
    for name, code in keywords.items():
        if not _is_keyword_name(name):  # ModelTrainer's own arguments (see _trainer)
            raise ValueError(f"not a ModelTrainer argument: {name!r}")
        lines.append(f"        {name}={code},")
    lines.append("    )")
    for method, value in arguments.with_calls.items():
        cls = _WITH_CLASSES[method]
        classes.add(cls)
        argument = (
            f"[{', '.join(_call(cls, item) for item in value)}]"
            if isinstance(value, list)
            else _call(cls, value)
        )
        lines.append(f"    trainer = trainer.{method}({argument})")
    lines.append("    return trainer")
    what = f"The job in {_docstring_text(mask_text(source))}" if source else "The job"
    made = "a bare ModelTrainer" if recipe is None else "ModelTrainer.from_recipe"
    picks = "picks" if recipe is None else "retrieves for the recipe"
    header = [
        f"# Region {_docstring_text(region)}{assumed}: the training image below is that region's.",
        f'"""{what} as {made} (written by safe-estimators port for sagemaker '
        f"{_docstring_text(sdk_version())}).",
        "",
        f"The training image is the one the SageMaker SDK's estimator {picks} in "
        f"{_docstring_text(region)}; paths",
        "are relative to the folder safe-estimators port ran in.",
    ]
    if masked:
        header += [
            "",
            "Values that look like credentials are cut to their first characters (…), as",
            "safe-estimators prints them everywhere: put them back, or better, pass the name of",
            "an AWS Secrets Manager secret and read it in the training script.",
        ]
    header += ['"""', ""]
    if recipe is not None and recipe.as_config:
        header.append("from omegaconf import OmegaConf")
    header.append(f"from {trainer_module} import ModelTrainer")
    if classes:
        header.append(f"from {configs_module} import {', '.join(sorted(classes))}")
    if launchers:
        header.append(f"from {distributed_module} import {', '.join(sorted(launchers))}")
    body = [
        "",
        "",
        "def model_trainer(sagemaker_session=None):",
        '    """The ModelTrainer; its train() starts the job."""',
        *lines,
        "",
        "",
        'if __name__ == "__main__":',
        "    model_trainer().train()",
    ]
    return "\n".join(header + body) + "\n"


# The launchers _trainer writes, as ModelTrainer's distributed module names them.
_LAUNCHERS = frozenset(("Torchrun", "MPI"))


def _from_recipe_lines(recipe: RecipeCall) -> list[str]:
    """The head of the from_recipe call: the recipe and its overrides."""
    lines = []
    if recipe.as_config:
        # Why the overrides are an OmegaConf config: said without any of their keys, which
        # are the input's text and could end the comment.
        lines += [
            f"    # sagemaker {_docstring_text(sdk_version())}'s from_recipe reads the recipe's "
            "own value of each key",
            "    # that a dict of overrides names, and fails where that value is an "
            "interpolation of a key",
            "    # outside the recipe; it merges an OmegaConf config without that read. The "
            "keys the recipe",
            "    # lacks, which it drops from a dict, are left out here.",
        ]
    lines += [
        "    trainer = ModelTrainer.from_recipe(",
        f"        training_recipe={_literal(recipe.training_recipe)},",
    ]
    if recipe.overrides is not None:
        overrides = _literal(recipe.overrides)
        if recipe.as_config:
            overrides = f"OmegaConf.create({overrides})"
        lines.append(f"        recipe_overrides={overrides},")
    return lines


def _masked_arguments(
    arguments: TrainerArguments, image: str | None, recipe: RecipeCall | None = None
) -> tuple[TrainerArguments, str | None, RecipeCall | None, bool]:
    """``arguments``, ``image`` and ``recipe`` with what looks like a credential cut short (see
    ``_secret_formats.masked_plain``), and whether anything was."""
    parts = {
        "configs": arguments.configs,
        "distributed": list(arguments.distributed) if arguments.distributed else None,
        "smp": arguments.smp,
        "inputs": list(arguments.inputs),
        "with_calls": arguments.with_calls,
        "image": image,
        "recipe": [recipe.training_recipe, recipe.overrides] if recipe else None,
    }
    shown = masked_plain(parts)
    if shown is parts:
        return arguments, image, recipe, False
    if recipe is not None:
        name, overrides = shown["recipe"]
        recipe = attrs.evolve(recipe, training_recipe=name, overrides=overrides)
    launcher = arguments.distributed
    changed = attrs.evolve(
        arguments,
        configs=shown["configs"],
        distributed=(launcher[0], shown["distributed"][1]) if launcher else None,
        smp=shown["smp"],
        inputs=tuple(shown["inputs"]),
        with_calls=shown["with_calls"],
    )
    return changed, shown["image"], recipe, True


def port(
    spec_or_path: Any,
    *,
    project_root: str | os.PathLike[str] | None = None,
    region: str | None = None,
    **overrides: Any,
) -> str:
    """The Python code of a bare ModelTrainer that builds the job a spec describes (a recipe
    job's through ``ModelTrainer.from_recipe``, on sagemaker 3), checked as ``plan`` checks it
    (raises ConfigError with every problem). The training image is the one of ``region``
    (default: the environment's, as plan finds it); with none, ConfigError: the image differs
    by region, and port does not guess one."""
    from safe_estimators._commands.plan import REGION_SOURCES, job_region
    from safe_estimators._commands.validate import offline
    from safe_estimators._resolve import resolve_arguments
    from safe_estimators._spec_files.read import job_arguments, offline_problems
    from safe_estimators._targets.model_trainer import recipe_training_image, training_image
    from safe_estimators._targets.trainer_args import trainer_arguments

    with offline():
        overrides = {**overrides, "target": "model_trainer"}
        arguments, source, prior = job_arguments(spec_or_path, overrides, project_root=project_root)
        prior += offline_problems(arguments)
        # A recipe job gets here on sagemaker 3 only: on 2 the checks refuse it, as for plan.
        job = resolve_arguments(arguments, source, prior)
        trainer = trainer_arguments(job)
        assumed = " (given)" if region else f" (from {REGION_SOURCES})"
        region = region or job_region()
        if not region:
            raise ConfigError(
                [
                    Problem(
                        "<aws>",
                        f"no AWS region: none is set in {REGION_SOURCES}, and the training "
                        "image port writes is one region's.",
                        "export AWS_REGION=us-east-1 (your region), or pass --region us-east-1.",
                    )
                ],
                source=source,
            )
        try:
            recipe = _recipe_call(job)
            if recipe is None:
                image = training_image(trainer, region)
            else:
                image = recipe_training_image(job, trainer.injections, region)
            return trainer_code(trainer, image, source, region, assumed, recipe)
        except _NotLiteral as exc:
            raise ConfigError(
                [
                    Problem(
                        "<port>",
                        f"{quote(exc.value)} ({type(exc.value).__name__}) cannot be written as "
                        "a Python literal.",
                        "pass plain values (a SageMaker Pipelines parameter as its value).",
                    )
                ],
                source=source,
            ) from None


def _recipe_call(job: ResolvedJob) -> RecipeCall | None:
    """The recipe of a recipe job as from_recipe is to be given it: a local file's path as
    plan found it (relative to where port runs), else the name or URL as the spec wrote it.
    Overrides the installed from_recipe cannot read from a dict (``Recipe.unreadable_overrides``:
    plan hands it the merged recipe instead) are written as an OmegaConf config of the
    overrides it keeps."""
    from safe_estimators._recipes.load import is_file_recipe, is_url, load_recipe

    name = job.kwargs.get("training_recipe")
    if name is None:
        return None
    overrides = job.kwargs.get("recipe_overrides")
    recipe, _ = load_recipe(name, overrides)
    if is_file_recipe(name) and not is_url(name):
        name = os.path.normpath(name)
    if recipe is not None and recipe.unreadable_overrides:
        return RecipeCall(name, dict(recipe.kept_overrides), as_config=True)
    return RecipeCall(name, overrides)
