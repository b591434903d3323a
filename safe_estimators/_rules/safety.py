"""Rules about cost and safety: spot training, secrets, CreateTrainingJob limits."""

from __future__ import annotations

import json
import math
import operator
import os
from collections.abc import Iterator, Mapping

import attrs

from safe_estimators._bounds import (
    MAX_PROBLEMS,
    MAX_TREE_ENTRIES,
    Tree,
    is_inside,
    project_folder,
    quote,
    too_wide_to_package,
    walk_tree,
)
from safe_estimators._context import Context
from safe_estimators._facts import tables
from safe_estimators._facts.code_paths import remote_source_dir
from safe_estimators._facts.limits import MapLimit, environment_limit, hyperparameters_limit
from safe_estimators._facts.reserved import sdk_hyperparameters
from safe_estimators._problems import Problem, join_path, setting, warning
from safe_estimators._secrets import secrets_in_options
from safe_estimators._spec import JobSpec, is_pipeline_variable, value_of


def spot_training(ctx: Context) -> Iterator[Problem]:
    """Managed spot needs max_wait >= max_run and checkpoints, or an interruption loses work."""
    spec = ctx.spec
    if value_of(spec.use_spot_instances) is not True:
        return  # a pipeline parameter is checked through its default
    given_run, max_wait = value_of(spec.max_run), value_of(spec.max_wait)
    max_run = given_run if type(given_run) is int else tables.DEFAULT_MAX_RUN
    if spec.max_wait is None:
        yield Problem(
            "max_wait",
            "is required with use_spot_instances=True (time to wait for spot capacity plus "
            "training time).",
            "",
            fixes=(setting(("max_wait", max_run), why=f"at least max_run, {max_run} s"),),
        )
    elif type(max_wait) is int and max_wait < max_run and not _unknown(spec.max_run):
        yield Problem(
            "max_wait",
            f"is {max_wait} s, less than max_run ({max_run} s"
            f"{'' if spec.max_run else ', the SDK default'}); SageMaker rejects the job.",
            "",
            fixes=(setting(("max_wait", max_run)), setting(("max_run", max_wait))),
        )
    if spec.checkpoint_s3_uri is None:
        yield Problem(
            "checkpoint_s3_uri",
            "is required with use_spot_instances=True: without checkpoints a spot "
            "interruption restarts training from scratch.",
            "set checkpoint_s3_uri='s3://<bucket>/<prefix>/checkpoints' and save checkpoints "
            "to /opt/ml/checkpoints in the script.",
        )


def _unknown(max_run: object) -> bool:
    # A pipeline parameter without a default: its value is given to each execution, so max_wait
    # cannot be compared with it here (unknown_pipeline_values names the check skipped).
    return max_run is not None and type(value_of(max_run)) is not int


# Spec options that hold no value of the job's.
_NOT_VALUES = frozenset(
    ["accept_exposure", "check_script", "estimator", "model", "training_compiler", "extra"]
)
# The spec's options that may (most of a job's are None), read at once.
_VALUE_OPTIONS = tuple(a.name for a in attrs.fields(JobSpec) if a.name not in _NOT_VALUES)
_values_of = operator.attrgetter(*_VALUE_OPTIONS)


def no_secrets(ctx: Context) -> Iterator[Problem]:
    """Every value that reaches the request (hyperparameters, environment, tags, container
    arguments, the distribution's options, URIs, ...): credentials are refused or warned
    about (see ``secrets_in``)."""
    spec = ctx.spec
    options = list(zip(_VALUE_OPTIONS, _values_of(spec), strict=True))
    options += [(name, value) for name, value in spec.extra.items() if name not in _NOT_VALUES]
    yield from secrets_in_options(options, spec.accept_exposure)


def source_dir_contents(ctx: Context) -> Iterator[Problem]:
    """The SDK uploads all of source_dir, following links: not the disk, not files elsewhere."""
    source_dir = ctx.source_folder
    if source_dir is None:
        return
    wide = ctx.source_too_wide
    if wide:
        yield Problem(
            "source_dir",
            f"{quote(source_dir)} {wide}; the SDK would package and upload all of it.",
            "point source_dir at the folder that holds the training code.",
        )
        return
    tree = ctx.source_tree
    if tree is None:
        return
    yield from _tree_problems("source_dir", source_dir, tree)


def dependency_contents(ctx: Context) -> Iterator[Problem]:
    """The SDK packages each dependency as source_dir is packaged (``sagemaker.utils.
    create_tar_file`` follows links), so a dependency folder is walked and checked the same way.
    """
    dependencies = ctx.spec.extra.get("dependencies")
    if not isinstance(dependencies, list | tuple) or ctx.spec.extra.get("git_config"):
        return
    if remote_source_dir(ctx.spec.source_dir):
        return  # the SDK packages nothing then (fw_utils.tar_and_upload_dir)
    for i, dependency in enumerate(dependencies[:MAX_PROBLEMS]):
        path = f"dependencies.{i}"
        if not isinstance(dependency, str | os.PathLike):
            yield Problem(
                path,
                f"is {quote(dependency)}; the SDK packages each dependency from a local path "
                "and fails on anything else.",
                "give the path of a folder or file to copy into /opt/ml/code, as a string.",
            )
        elif "\0" not in os.fspath(dependency) and os.path.isdir(dependency):
            wide = too_wide_to_package(dependency)
            if wide:
                yield Problem(
                    path,
                    f"{quote(os.fspath(dependency))} {wide}; the SDK would package all of it.",
                    "name the folder of the library the job needs.",
                )
            else:
                yield from _tree_problems(path, os.fspath(dependency), walk_tree(dependency))


def _tree_problems(path: str, folder: str, tree: Tree) -> Iterator[Problem]:
    """What a walk of a folder the SDK packages found: links out of it, a tree too large."""
    # The project is looked up only for a link that leaves the folder: it costs a stat per level.
    project = project_folder(folder) if tree.outside_links else None  # pragma: no mutate
    name = "source_dir" if path == "source_dir" else "the dependency folder"
    for link, target in tree.outside_links[:MAX_PROBLEMS]:
        outside_project = project is None or not is_inside(target, project)
        yield Problem(
            path,
            f"{quote(link)} links to a file outside "
            f"{'the project' if outside_project else name}; the SDK follows links "
            f"when it packages {name}, so it would upload that file.",
            f"copy what the job needs into {name} and remove the link.",
            "error" if outside_project else "warning",
        )
    for link in tree.broken_links[:MAX_PROBLEMS]:
        yield Problem(
            path,
            f"{quote(link)} is a link to nothing (a missing file, or a loop of links); the SDK "
            f"packages {name} following links, and fails on it.",
            "remove the link, or point it at a file inside the folder.",
        )
    for link in tree.looping_links[:MAX_PROBLEMS]:
        yield Problem(
            path,
            f"{quote(link)} is a link to a folder that holds it; the SDK packages {name} "
            "following links, so it would descend into it again and again until the system "
            'refuses the path ("Too many levels of symbolic links").',
            "remove the link.",
        )
    if tree.too_deep:
        yield Problem(
            path,
            f"{quote(folder)} has {tree.truncated}; the SDK packages it with Python's "
            "tarfile, which recurses once per level and fails on trees this deep.",
            "point it at the folder with the training code only.",
        )
    elif tree.truncated:
        # Not checked to the end: a link out of the project may lie beyond the bound.
        yield Problem(
            path,
            f"{quote(folder)} has {tree.truncated}, too many to check for links that leave the "
            f"project ({MAX_TREE_ENTRIES:,} at most); the SDK would package and upload all of "
            "it.",
            "point it at the folder with the training code only (keep data in S3).",
        )


# The name patterns of the request's maps in words (botocore's SageMaker model has them as Java
# regular expressions: a user should not have to read one).
_NAME_PATTERNS = {
    ".*": "any characters but a line break",
    "[a-zA-Z_][a-zA-Z0-9_]*": "letters, digits and underscores, not starting with a digit",
}


def _map_limits(
    name: str, entries: Mapping[str, str], limit: MapLimit, added: frozenset[str]
) -> Iterator[Problem]:
    reserved = sorted(added - set(entries))
    if len(entries) + len(reserved) > limit.max_entries:
        extra = (
            f" and the SageMaker SDK adds {len(reserved)} more for this job "
            f"({', '.join(reserved)}), {len(entries) + len(reserved)} in all"
            if reserved
            else ""
        )
        yield Problem(
            name,
            f"has {len(entries)} entries{extra}; CreateTrainingJob accepts "
            f"{limit.max_entries} ({limit.shape} in botocore's SageMaker model).",
            f"keep at most {limit.max_entries - len(reserved)}; move the rest into a "
            "configuration file in source_dir.",
        )
    for key, value in entries.items():
        path = f"{name}.{key}"
        if len(key) > limit.key_max:
            yield Problem(path, f"name is {len(key)} characters; the limit is {limit.key_max}.")
        elif not limit.key_pattern.fullmatch(key):
            allowed = _NAME_PATTERNS.get(limit.key_pattern.pattern)
            yield Problem(
                path,
                f"{key!r} is not a valid name: CreateTrainingJob takes "
                + (allowed or f"names matching {limit.key_pattern.pattern}")
                + f" ({limit.shape} in botocore's SageMaker model).",
                f"use {allowed}." if allowed else "rename it.",
            )
        if len(value) > limit.value_max:
            yield Problem(
                path,
                f"value is {len(value)} characters as sent; the limit is {limit.value_max}.",
                "put large values in a file in source_dir or S3 and pass its path.",
            )


def _encoded(value: object) -> str | None:
    # The SDK JSON-encodes every hyperparameter value (a string "x" is sent as "\"x\"").
    # Not mutated: a shortcut, json.dumps below writes the same text for an int and a finite
    # float, so dropping either test of it changes nothing a user can see.
    kind = type(value)  # pragma: no mutate
    if kind is int or (kind is float and math.isfinite(value)):  # type: ignore[arg-type]  # pragma: no mutate
        return repr(value)  # what json.dumps writes for them, without its machinery
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return None


def api_limits(ctx: Context) -> Iterator[Problem]:
    """Environment and hyperparameters must fit CreateTrainingJob's limits (botocore's model)."""
    hyper: dict[str, str] = {}
    for key, value in ctx.spec.hyperparameters.items():
        encoded = _encoded(value) if not hasattr(value, "to_string") else ""
        if type(value) is str and ctx.target != "estimator":
            encoded = value  # ModelTrainer sends a string as it is (safe_serialize)
        if encoded is None:
            yield Problem(
                join_path("hyperparameters", key),
                f"{type(value).__name__} values cannot be sent: the SDK JSON-encodes every "
                "hyperparameter.",
                "use a string, number, boolean, list or dict.",
            )
        else:
            hyper[str(key)] = encoded
    added = sdk_hyperparameters(ctx.launchers, ctx.target)
    yield from _map_limits("hyperparameters", hyper, hyperparameters_limit(), added)
    yield from _parameter_defaults(
        "hyperparameters", ctx.spec.hyperparameters, hyperparameters_limit()
    )
    env = {k: v for k, v in ctx.spec.environment.items() if isinstance(v, str)}
    injected = frozenset({"GPU_NUM_DEVICES"} if ctx.compiler and ctx.gpus_per_instance else ())
    yield from _map_limits("environment", env, environment_limit(), injected)
    yield from _parameter_defaults("environment", ctx.spec.environment, environment_limit())


def _parameter_defaults(
    name: str, entries: Mapping[str, object], limit: MapLimit
) -> Iterator[Problem]:
    """A pipeline parameter is sent as its value at each execution (the SDK writes its reference,
    not its JSON): a default over the limit fails every execution that keeps it."""
    for key, value in entries.items():
        default = value_of(value) if is_pipeline_variable(value) else None
        if default is None or len(str(default)) <= limit.value_max:
            continue
        yield warning(
            join_path(name, str(key)),
            f"the pipeline parameter's default is {len(str(default))} characters; "
            f"CreateTrainingJob takes {limit.value_max} at most, so every execution that keeps "
            "the default fails.",
            "give a shorter default (put large values in a file in source_dir or S3 and pass "
            "its path), or override it at each execution.",
        )
