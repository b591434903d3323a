"""The typed job specification and the cattrs converter that loads it from plain data.

Keyword arguments and spec files both become a ``JobSpec`` here. Single values are checked by
the attrs validators and the strict structure hooks; relations between values belong to the rules.
Every failure becomes a ``Problem`` with the path where the user wrote the value.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Mapping
from typing import Any, Literal, NewType

import attrs
import cattrs
from cattrs.errors import ClassValidationError, ForbiddenExtraKeysError, IterableValidationError
from cattrs.gen import make_dict_structure_fn

from safe_estimators._bounds import MAX_PROBLEMS, quote, shape_problems
from safe_estimators._distributions import is_enabled
from safe_estimators._distributions.instance_groups.spec import (
    InstanceGroupSpec,
    conflicting_arguments,
    structure_instance_groups,
)
from safe_estimators._facts.model_trainer import LAUNCHERS, OWN_VALUES, OWN_WORDS
from safe_estimators._facts.sdk_arguments import (
    BY_ESTIMATOR,
    MISPLACED,
    OTHER_ESTIMATORS,
    RENAMED,
)
from safe_estimators._memory.shape import (
    COUNT_FIELDS,
    ModelShape,
    parameter_count,
    parameters_problem,
)
from safe_estimators._problems import (
    ConfigError,
    Problem,
    closest,
    did_you_mean,
    fix_hint,
    join_path,
    own_hint,
    problem_source,
    value_at,
    warning,
)

EstimatorKind = Literal["huggingface", "pytorch"]
ESTIMATORS: tuple[str, ...] = ("huggingface", "pytorch")
# What the job is built as: the SDK's estimator class, or a ModelTrainer (sagemaker.modules.train
# in sagemaker 2.x, sagemaker.train in 3.x). None: the estimator on sagemaker 2.x, ModelTrainer
# on 3.x, which has no estimators.
TargetKind = Literal["estimator", "model_trainer"]
TARGETS: tuple[str, ...] = ("estimator", "model_trainer")


PositiveInt = NewType("PositiveInt", int)
# A positive int, or a SageMaker Pipelines variable (ParameterInteger) the SDK accepts there.
CountValue = NewType("CountValue", object)
# A bool, or a Pipelines variable (ParameterBoolean).
FlagValue = NewType("FlagValue", object)
# A str, or a Pipelines variable (ParameterString, an execution property).
TextValue = NewType("TextValue", object)
# A str, or a SageMaker Pipelines parameter (ParameterString) resolved only at run time.
InstanceTypeValue = NewType("InstanceTypeValue", object)
# Dotted paths of values whose exposure in DescribeTrainingJob is accepted (see _secrets).
ExposedPaths = NewType("ExposedPaths", tuple)  # type: ignore[type-arg]


def is_pipeline_variable(value: object) -> bool:
    """A SageMaker Pipelines variable (parameter, property, function), known without importing
    sagemaker: they all carry an ``expr`` and ``to_string``."""
    return hasattr(value, "expr") and callable(getattr(value, "to_string", None))


def value_of(value: object) -> Any:
    """The value to check: the value itself, or a pipeline variable's default (None if it has
    none)."""
    if is_pipeline_variable(value):
        return getattr(value, "default_value", None)
    return value


def count_of(value: object, unknown: int = 1) -> int:
    """A count to compute with: the int, or a pipeline parameter's default (``unknown`` if it
    has none)."""
    number = value_of(value)
    return number if type(number) is int else unknown


def instance_type_name(value: object) -> str:
    """The instance type to check: the string, or a pipeline parameter's default value."""
    if isinstance(value, str):
        return value
    default = getattr(value, "default_value", None)
    return default if isinstance(default, str) else ""


def _positive_int(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    value = value_of(value)
    if value is not None and (type(value) is not int or value < 1):
        raise ConfigError(
            [
                Problem(
                    attribute.name,
                    f"must be a positive whole number, got {quote(value)}.",
                    f"set {attribute.name} to 1 or more.",
                )
            ]
        )


class _BadValue(ValueError):
    """A structure hook's complaint, with the fix to show the user."""

    def __init__(self, message: str, hint: str):
        super().__init__(message)
        self.hint = hint


def _or_pipeline_variable(check: Any, what: str = "") -> Any:
    """A hook for values the SDK also takes as a pipeline variable (checked via its default);
    ``what`` names the variable's type in the complaint."""

    def hook(value: object, _type: object) -> object:
        if is_pipeline_variable(value):
            default = value_of(value)
            if default is not None:
                check(default, _type)
            return value
        try:
            return check(value, _type)
        except _BadValue as exc:
            if not what:
                raise
            raise _BadValue(f"{exc} (or a SageMaker Pipelines {what})", exc.hint) from None

    return hook


def _structure_positive_int(value: object, _type: object) -> int:
    if type(value) is not int:
        raise _BadValue(f"expected int, got {_type_name(value)} {quote(value)}", _HINTS[int])
    if value < 1:
        raise _BadValue(f"must be a positive whole number, got {value}", "use 1 or more")
    return value


def _bool_at(prefix: str) -> Any:
    def check(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if type(value) is not bool:
            raise ConfigError(
                [
                    Problem(
                        join_path(prefix, attribute.name),
                        f"must be true or false, got {quote(value)}.",
                        f"write {attribute.name}=True or False.",
                    )
                ]
            )

    return check


@attrs.frozen(kw_only=True)
class TrainingCompiler:
    """Turn on SageMaker Training Compiler for a job.

    ``debug=True`` asks the compiler to keep its debug artifacts (slower; for support cases).
    Passing ``training_compiler=True`` to a factory is the same as ``TrainingCompiler()``.
    """

    debug: bool = attrs.field(default=False, validator=_bool_at("training_compiler"))


@attrs.frozen(kw_only=True)
class CompilerConfig:
    """The SageMaker SDK's ``TrainingCompilerConfig`` as a spec file writes it.

    ``compiler_config`` (this mapping, or the SDK object in Python) is AWS's spelling of
    ``training_compiler``: ``enabled: true`` gets the same checks and safe defaults.
    """

    enabled: bool = attrs.field(default=True, validator=_bool_at("compiler_config"))
    debug: bool = attrs.field(default=False, validator=_bool_at("compiler_config"))


@attrs.frozen
class TrainerWords:
    """What a job said in ModelTrainer's own words (``model_trainer()`` or a spec file).

    ``given``: ModelTrainer's arguments as given (its config objects, or mappings of their
    fields), by name, built as given; ``paths``: where each estimator keyword the rules check
    was written (``instance_type`` -> ``compute.instance_type``); ``command`` and
    ``requirements``: SourceCode's, which the estimator has no word for; ``hyperparameters_file``:
    the JSON or YAML file the hyperparameters were read from; ``launcher``: the class name of
    the ``distributed`` given (a custom driver's is recorded, its processes not checked).
    """

    given: dict[str, Any] = attrs.field(factory=dict)
    paths: dict[str, str] = attrs.field(factory=dict)
    command: str | None = None
    requirements: str | None = None
    hyperparameters_file: str | None = None
    launcher: str | None = None
    # Compute.instance_preferences (sagemaker 3.x): each preferred instance type with its own
    # instance count (None: the top-level count); the first stands in instance_type.
    preferences: tuple[tuple[str, int | None], ...] = ()


@attrs.frozen(kw_only=True)
class JobSpec:
    """Everything the user asked for, typed. ``extra`` holds other estimator keywords unchanged."""

    estimator: EstimatorKind
    entry_point: TextValue
    instance_type: InstanceTypeValue
    role: TextValue | None = None
    instance_count: CountValue = attrs.field(default=CountValue(1), validator=_positive_int)
    source_dir: TextValue | None = None
    py_version: str | None = None
    framework_version: str | None = None
    transformers_version: str | None = None
    pytorch_version: str | None = None
    tensorflow_version: str | None = None
    hyperparameters: dict[str, Any] = attrs.field(factory=dict)
    environment: dict[str, TextValue] = attrs.field(factory=dict)
    distribution: dict[str, Any] | None = None
    training_compiler: TrainingCompiler | None = None
    compiler_config: Any = None
    model_parallel: Any = None
    model: ModelShape | None = None
    image_uri: TextValue | None = None
    instance_groups: tuple[InstanceGroupSpec, ...] | None = None
    disable_profiler: bool | None = None
    debugger_hook_config: Any = None
    encrypt_inter_container_traffic: FlagValue | None = None
    use_spot_instances: FlagValue | None = None
    max_run: CountValue | None = attrs.field(default=None, validator=_positive_int)
    max_wait: CountValue | None = attrs.field(default=None, validator=_positive_int)
    checkpoint_s3_uri: TextValue | None = None
    check_script: bool = True
    target: TargetKind | None = None
    inputs: str | dict[str, str] | None = None
    accept_exposure: ExposedPaths = ExposedPaths(())
    extra: dict[str, Any] = attrs.field(factory=dict)
    # Set when the job is written in ModelTrainer's own words (never read from a file as is).
    trainer: TrainerWords | None = None


SPEC_FIELDS = frozenset(a.name for a in attrs.fields(JobSpec)) - {"extra", "trainer"}


def _type_name(value: object) -> str:
    return type(value).__name__


_HINTS = {
    int: "write a whole number without quotes, e.g. 4",
    float: "write a number without quotes, e.g. 0.5",
    str: "write it as a string in quotes, e.g. \"4\"",
    bool: "write true or false without quotes",
}


def _strict(expected: type) -> Any:
    # cattrs' default hooks coerce (int("4"), bool("false") is True); a spec checker must not.
    def hook(value: object, _type: object) -> object:
        ok = isinstance(value, expected) and not (expected is not bool and type(value) is bool)
        if expected is float and type(value) is int:
            ok = True
        if not ok:
            raise _BadValue(
                f"expected {expected.__name__}, got {_type_name(value)} {quote(value)}",
                _HINTS[expected],
            )
        return value

    return hook


def _training_compiler_hook(value: object, _type: object) -> TrainingCompiler | None:
    if value is None or value is False:
        return None
    if value is True:
        return TrainingCompiler()
    if isinstance(value, TrainingCompiler):
        return value
    if isinstance(value, Mapping):
        return _dict_structure(TrainingCompiler)(dict(value), TrainingCompiler)
    raise _BadValue(
        f"expected true, false or TrainingCompiler(...), got {_type_name(value)} {quote(value)}",
        "write training_compiler=True, or TrainingCompiler(debug=True) in Python",
    )


def _instance_type_hook(value: object, _type: object) -> object:
    if isinstance(value, str) or is_pipeline_variable(value):
        return value
    raise _BadValue(
        f"expected an instance type name such as 'ml.p3.8xlarge', got {_type_name(value)} "
        f"{quote(value)}",
        "write the SageMaker name, e.g. instance_type='ml.g5.2xlarge'",
    )


def _inputs_hook(value: object, _type: object) -> str | dict[str, str] | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, Mapping) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        return dict(value)
    raise _BadValue(
        f"expected an S3 URI or a mapping of channel name to S3 URI, got {quote(value)}",
        "write inputs: {train: s3://bucket/train/, validation: s3://bucket/validation/}",
    )


def _exposed_paths_hook(value: object, _type: object) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list | tuple) and all(isinstance(item, str) for item in value):
        return tuple(value)
    raise _BadValue(
        f"expected a dotted path or a list of them, got {quote(value)}",
        "write accept_exposure: [environment.HF_TOKEN]",
    )


def _compiler_config_intent(value: object, path: str) -> tuple[object, list[Problem]]:
    """What ``compiler_config`` asks for, as a ``training_compiler`` value (False: off)."""
    if isinstance(value, Mapping):
        try:
            config = _dict_structure(CompilerConfig)(dict(value), CompilerConfig)
        except Exception as exc:
            return None, problems_from_exception(exc, path)
    elif type(value).__name__ == "TrainingCompilerConfig":  # the SDK's, without importing it
        enabled, debug = getattr(value, "enabled", True), getattr(value, "debug", False)
        config = CompilerConfig(enabled=bool(enabled), debug=bool(debug))
    else:
        return None, [
            Problem(
                path,
                f"expected TrainingCompilerConfig(...) or a mapping such as {{enabled: true}}, got "
                f"{_type_name(value)} {value!r}.",
                "write compiler_config={'enabled': True}, or simply training_compiler=True.",
            )
        ]
    return (TrainingCompiler(debug=config.debug) if config.enabled else False), []


def _compiler_intent_key(value: object) -> tuple[bool, bool] | None:
    """(enabled, debug) of a training_compiler value, or None when it is malformed."""
    if value is None or value is False:
        return (False, False)
    if value is True:
        return (True, False)
    if isinstance(value, TrainingCompiler):
        return (True, value.debug)
    if isinstance(value, Mapping) and set(value) <= {"debug"}:
        debug = value.get("debug", False)
        return (True, debug) if type(debug) is bool else None
    return None


def _merge_compiler_config(fields: dict[str, Any], path: str) -> list[Problem]:
    """Read ``compiler_config`` as the compiler intent; both spellings must agree."""
    if fields.get("compiler_config") is None:
        return []
    where = join_path(path, "compiler_config")
    wanted, problems = _compiler_config_intent(fields["compiler_config"], where)
    if problems:
        return problems
    if "training_compiler" not in fields:
        fields["training_compiler"] = wanted
        return []
    given = _compiler_intent_key(fields["training_compiler"])
    if given is not None and given != _compiler_intent_key(wanted):
        return [
            Problem(
                where,
                f"says the compiler is {'on' if wanted else 'off'}"
                + (f" with debug={wanted.debug}" if isinstance(wanted, TrainingCompiler) else "")
                + f", but training_compiler={fields['training_compiler']!r} says otherwise.",
                "give one of them: training_compiler=True (or False), or compiler_config.",
            )
        ]
    return []


def _model_hook(value: object, _type: object) -> ModelShape | None:
    if value is None or isinstance(value, ModelShape):
        return value
    if isinstance(value, Mapping):
        data = dict(value)
        for name in COUNT_FIELDS:
            if data.get(name) is not None:
                count = parameter_count(data[name])
                if count is None or count < 1:
                    raise parameters_problem(data[name], name)
                data[name] = count
        return _dict_structure(ModelShape)(data, ModelShape)
    raise _BadValue(
        f"expected ModelShape(...) or a mapping of its fields, got {_type_name(value)} {value!r}",
        "write model: {parameters: 7B, layers: 32, hidden_size: 4096, ...}",
    )


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    for kind in (int, float, str, bool):
        conv.register_structure_hook(kind, _strict(kind))
    conv.register_structure_hook(PositiveInt, _structure_positive_int)
    conv.register_structure_hook(CountValue, _or_pipeline_variable(_structure_positive_int))
    flag = _or_pipeline_variable(_strict(bool), "ParameterBoolean")
    conv.register_structure_hook(FlagValue, flag)
    text = _or_pipeline_variable(_strict(str), "ParameterString")
    conv.register_structure_hook(TextValue, text)
    conv.register_structure_hook(InstanceTypeValue, _instance_type_hook)
    conv.register_structure_hook(TrainingCompiler | None, _training_compiler_hook)
    conv.register_structure_hook(ModelShape | None, _model_hook)
    conv.register_structure_hook(str | dict[str, str] | None, _inputs_hook)
    conv.register_structure_hook(ExposedPaths, _exposed_paths_hook)
    conv.register_structure_hook_func(lambda t: t == dict[str, TextValue], _string_map_hook)
    conv.register_structure_hook(
        tuple[InstanceGroupSpec, ...] | None,
        lambda value, _type: None if value is None else structure_instance_groups(value),
    )
    return conv


def _string_map_hook(value: object, _type: object) -> dict[str, Any]:
    # Each entry on its own: one bad entry must not hide the others (nor print a secret).
    from safe_estimators._secret_formats import secret_name

    if not isinstance(value, Mapping):
        raise _BadValue(
            f"expected a mapping of names to strings, got {_type_name(value)} {quote(value)}",
            "write NAME: \"value\" entries",
        )
    out: dict[str, Any] = {}
    problems = []
    for key, item in value.items():
        if is_pipeline_variable(item) and isinstance(key, str):
            item = value_of(item) if value_of(item) is not None else ""
            if isinstance(item, str):
                out[key] = value[key]  # the SDK takes a ParameterString; its default is checked
                continue
        if not isinstance(key, str):
            problems.append(Problem(quote(key, 40), f"names must be strings, got {quote(key)}.",
                                    "quote the name."))  # fmt: skip
        elif not isinstance(item, str):
            shown = "" if secret_name(key) else f" {quote(item)}"
            problems.append(Problem(_shown(key), f"expected str, got {_type_name(item)}{shown} "
                                    "(or a SageMaker Pipelines ParameterString).",
                                    _HINTS[str]))  # fmt: skip
        else:
            out[key] = item
    if problems:
        raise ConfigError(problems)
    return out


converter = _make_converter()


@functools.cache
def _dict_structure(cls: type) -> Any:
    """The strict structure function of a nested options class, generated on first use: most
    specs write none of them as a mapping."""
    return make_dict_structure_fn(cls, converter, _cattrs_forbid_extra_keys=True)


def _shown(key: object) -> str:
    """A key as it appears in a problem's path; an empty key must still be visible."""
    return '""' if key == "" else str(key)


def _attrs_fields(cls: type) -> list[str]:
    return [a.name for a in attrs.fields(cls)]


def problems_from_exception(exc: BaseException, path: str) -> list[Problem]:
    """Turn what cattrs or a validator raised into problems with the user's paths."""
    if isinstance(exc, ConfigError):
        return [
            p if p.path == path or p.path.startswith(path + ".") or not path
            else attrs.evolve(p, path=join_path(path, p.path))
            for p in exc.problems
        ]  # fmt: skip
    if isinstance(exc, ForbiddenExtraKeysError):
        names = _attrs_fields(exc.cl)
        return [
            Problem(
                join_path(path, _shown(key)),
                f"unknown option {quote(key)}.",
                did_you_mean(key, names) or f"the known options are: {', '.join(names)}.",
            )
            for key in sorted(exc.extra_fields, key=repr)
        ]
    if isinstance(exc, ClassValidationError | IterableValidationError):
        found: list[Problem] = []
        with_notes, without_notes = exc.group_exceptions()
        for sub, note in with_notes:
            key = getattr(note, "name", None)
            if key is None:
                key = _shown(getattr(note, "index", ""))
            found += problems_from_exception(sub, join_path(path, key))
        for sub in without_notes:
            found += problems_from_exception(sub, path)
        return found
    if isinstance(exc, KeyError):
        return [Problem(path, "is required but missing.", "add it.")]
    text = str(exc) if isinstance(exc, _BadValue) else f"{type(exc).__name__}: {quote(str(exc))}"
    return [Problem(path or "<spec>", f"{text}.", getattr(exc, "hint", ""))]


@problem_source(
    "spec-options",
    "Every option of a spec must be one the chosen estimator (or ModelTrainer) takes, with a "
    "value of the type the SDK expects: an unknown option would be dropped silently by the "
    "estimator's **kwargs, and a wrong type fails late or is sent as written. A required "
    "option (estimator, entry_point, instance_type, ...) must be given.",
)
def structure_spec(data: object, *, path: str = "") -> tuple[JobSpec | None, list[Problem]]:
    """Load a JobSpec from a mapping of keyword arguments. Never raises for bad input.

    With problems, the spec (when there is one) is partial: the options in error are left out,
    so the rules can still run over the rest and one run reports every problem. Such a spec
    must never be built; ``skipped_paths`` says which options were left out.
    """
    shape = shape_problems(data, path)
    if shape:
        return None, [Problem(p.path, p.message, p.hint) for p in shape]
    try:
        return _structure_spec(data, path=path)
    except Exception as exc:  # a user object whose __eq__, __hash__ or __iter__ raises
        return None, [
            Problem(
                path or "<spec>",
                f"reading the arguments failed: {type(exc).__name__} {quote(str(exc))}, raised "
                "by one of the values passed.",
                "pass plain strings, numbers, lists and dicts (or SageMaker pipeline "
                "parameters); report it if they are.",
            )
        ]


def _structure_spec(data: object, *, path: str = "") -> tuple[JobSpec | None, list[Problem]]:
    if not isinstance(data, Mapping):
        return None, [
            Problem(path or "<spec>", f"must be a mapping of options, got {_type_name(data)}.")
        ]
    problems: list[Problem] = []
    if any(key in RENAMED for key in data if isinstance(key, str)):
        data, problems = _v2_names(data, path)
    data, own_problems = own_words(data, path)
    problems += own_problems
    words = data.pop(WORDS_KEY) if isinstance(data.get(WORDS_KEY), TrainerWords) else None
    kind = data.get("estimator")
    if kind not in ESTIMATORS:
        problems.append(
            Problem(
                join_path(path, "estimator"),
                f"must be one of {', '.join(ESTIMATORS)}, got {quote(kind)}.",
                did_you_mean(kind, ESTIMATORS) or "pick the estimator your script needs.",
            )
        )
        known_sdk: frozenset[str] = frozenset().union(*BY_ESTIMATOR.values())
    else:
        known_sdk = BY_ESTIMATOR[kind]
    target = data.get("target")
    if target is not None and target not in TARGETS:
        problems.append(
            Problem(
                join_path(path, "target"),
                f"must be one of {', '.join(TARGETS)}, got {quote(target)}.",
                did_you_mean(target, TARGETS) or "leave it out for the installed SDK's default.",
            )
        )
        data = {k: v for k, v in data.items() if k != "target"}
    fields: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    unknown = 0
    for key, value in data.items():
        if not isinstance(key, str):
            problems.append(
                Problem(path or "<spec>", f"option names must be strings, got {quote(key)}.")
            )
        elif key in SPEC_FIELDS:
            if value is not None:
                fields[key] = value
        elif key in known_sdk:
            extra[key] = value
        else:  # left out of the estimator's arguments: the SDK would drop it anyway
            unknown += 1
            problems.append(
                _not_an_option(key, value, data, known_sdk, path, unknown <= MAX_PROBLEMS)
            )
    compiler_problems = _merge_compiler_config(fields, path)
    problems += compiler_problems
    if compiler_problems:
        fields.pop("compiler_config")
    problems += conflicting_arguments(data, path)
    grouped = "instance_groups" in fields
    # With a training recipe the SDK picks the entry point itself (and warns about one given).
    recipe = kind == "pytorch" and extra.get("training_recipe") is not None
    names_its_script = recipe or (words is not None and bool(words.command))
    if names_its_script:
        fields.setdefault("entry_point", "")  # a recipe or a command names the script
    for required in ("entry_point", *(() if grouped else ("instance_type",))):
        if required not in fields:
            problems.append(
                Problem(join_path(path, required), "is required but missing.", "add it.")
            )
    if fields.get("entry_point") == "" and not names_its_script:
        # The SDK packs no script (fit() fails to add "" to the archive, or the container is
        # told to run sagemaker_program "" and exits): nothing of the job can run.
        problems.append(
            Problem(
                join_path(path, "entry_point"),
                "is empty: there is no training script to upload or run.",
                "give the training script's path (train.py), relative to source_dir if set.",
            )
        )
    runnable = kind in ESTIMATORS and "entry_point" in fields
    runnable = runnable and ("instance_type" in fields or grouped)
    machines = "instance_type" if "instance_type" in fields else "instance_groups"
    variables = _pipeline_variables(fields, fields.get("estimator", kind))
    fields["estimator"] = kind if kind in ESTIMATORS else "pytorch"
    fields.setdefault("entry_point", "")
    fields.setdefault("instance_type", "")
    try:
        spec = _structure_with(fields, extra, variables)
    except Exception as exc:
        found = judged_by_default(problems_from_exception(exc, path), variables, path)
        problems += found
        # Leave out the options in error and try once more, for the rules' sake.
        bad = {_top_level(p.path, path) for p in found}
        runnable = runnable and not bad & {"estimator", "entry_point", machines}
        try:
            kept = {k: v for k, v in fields.items() if k not in bad}
            kept_variables = {k: v for k, v in variables.items() if k not in bad}
            spec = _structure_with(kept, extra, kept_variables)
        except Exception:
            return None, problems
    if words is not None:
        spec = attrs.evolve(spec, trainer=words)
        problems = in_own_words(problems, words)
    return (spec if runnable else None), problems


def in_own_words(problems: list[Problem], words: TrainerWords | None) -> list[Problem]:
    """Problems about an estimator keyword read from ModelTrainer's words at the path the user
    wrote (``max_run`` -> ``stopping_condition.max_runtime_in_seconds``)."""
    if words is None or not words.paths:
        return problems
    out = []
    for problem in problems:
        head, dot, rest = problem.path.partition(".")
        where = words.paths.get(head)
        if where is not None and where != head:
            problem = attrs.evolve(
                problem, path=where if where == "distributed" else where + dot + rest
            )
        if problem.fixes:
            # The fixes change the estimator's keywords the rules check; the user reads them
            # in the words they wrote (max_run=... as stopping_condition.max_runtime_in_seconds).
            fixes = tuple(
                attrs.evolve(fix, text=_said_in_own_words(fix.text, words.paths))
                for fix in problem.fixes
            )
            own = _said_in_own_words(own_hint(problem), words.paths)
            problem = attrs.evolve(problem, fixes=fixes, hint=fix_hint(fixes, own))
        out.append(problem)
    return out


def _said_in_own_words(text: str, paths: Mapping[str, str]) -> str:
    """``text`` with each estimator keyword that was written in ModelTrainer's words named as
    written (whole words only; ``distributed`` takes another shape, so it is left)."""
    import re

    for keyword, where in paths.items():
        if where != keyword and where != "distributed":
            text = re.sub(rf"(?<![\w.]){re.escape(keyword)}\b", where, text)
    return text


def _pipeline_variables(fields: dict[str, Any], kind: object) -> dict[str, Any]:
    """Take out the typed options given as a pipeline variable where the installed SDK takes
    one (its signatures say so), leaving their default (if any) to be checked in their place."""
    if not any(is_pipeline_variable(v) for v in fields.values()):
        return {}
    from safe_estimators._facts.pipeline_variables import pipeline_options

    taken = pipeline_options(kind if kind in ESTIMATORS else "pytorch")
    variables = {
        name: value
        for name, value in fields.items()
        if is_pipeline_variable(value) and taken.get(name) == "value"
    }
    for name, variable in variables.items():
        default = value_of(variable)
        if default is None:
            del fields[name]
        else:
            fields[name] = default
    return variables


# Where own_words leaves its TrainerWords among the arguments: no option's name (a file's key of
# that name holds no TrainerWords, so it is judged as any unknown key).
WORDS_KEY = "(ModelTrainer's words)"
# ModelTrainer's own arguments, read into the estimator's words for the rules.
OWN_ARGUMENTS = frozenset({*OWN_WORDS, *OWN_VALUES, "distributed"})


def _fields_of(value: object) -> dict[str, Any] | None:
    """A config's fields as given: a mapping's items, or the fields a pydantic config object
    was given (``model_fields_set``: its defaults are ModelTrainer's, not the user's words)."""
    if isinstance(value, Mapping):
        return dict(value)
    given = getattr(value, "model_fields_set", None)
    if isinstance(given, (set, frozenset)):
        return {name: getattr(value, name) for name in given}
    return None


def own_words(
    data: Mapping[Any, Any], path: str = "", *, read_files: bool = True
) -> tuple[dict[Any, Any], list[Problem]]:
    """ModelTrainer's own arguments in ``data`` (``source_code``, ``compute``, ``distributed``,
    a hyperparameters file, ...) read into the estimator's words the rules check, with a
    ``TrainerWords`` under ``WORDS_KEY`` that keeps them as given. A spec file's are read
    before its paths are resolved (``read_files=False``: its hyperparameters file is read
    after). Never raises."""
    given = {k: data[k] for k in data if isinstance(k, str) and k in OWN_ARGUMENTS}
    if data.get("training_recipe") is not None and "requirements" in data:
        given["requirements"] = data["requirements"]  # ModelTrainer.from_recipe's keyword
    hyperparameters = data.get("hyperparameters")
    previous = data.get(WORDS_KEY)
    if not given and not isinstance(hyperparameters, str):
        return dict(data), []
    out = {k: v for k, v in data.items() if k not in given}
    words = previous if isinstance(previous, TrainerWords) else TrainerWords()
    paths = dict(words.paths)
    problems: list[Problem] = []
    found: dict[str, Any] = {}

    def put(keyword: str, value: object, where: str) -> None:
        if keyword in out and keyword not in paths and out[keyword] != value:
            problems.append(
                Problem(
                    join_path(path, where),
                    f"says {quote(value)}, and {keyword} says {quote(out[keyword])}.",
                    f"give it once: {where} (ModelTrainer's word) or {keyword} (the estimator's).",
                )
            )
            return
        out[keyword] = value
        paths[keyword] = where

    for name, value in given.items():
        if name == "requirements":
            if isinstance(value, str):
                found["requirements"] = value
            else:
                problems.append(
                    Problem(
                        join_path(path, name),
                        f"must be the path of a requirements file, got {_type_name(value)}.",
                        "write requirements='requirements.txt'.",
                    )
                )
        elif name in OWN_VALUES:
            _own_value(name, value, put, path, problems)
        elif name == "distributed":
            found["launcher"] = _own_launcher(value, put, path, problems)
        else:
            _own_config(name, value, put, path, problems, found)
    if isinstance(hyperparameters, str) and read_files:
        loaded = _hyperparameters_file(hyperparameters, join_path(path, "hyperparameters"))
        if isinstance(loaded, Problem):
            problems.append(loaded)
            out.pop("hyperparameters")
        elif loaded is not None:
            out["hyperparameters"] = loaded
            found["hyperparameters_file"] = hyperparameters
    out[WORDS_KEY] = attrs.evolve(words, given={**words.given, **given}, paths=paths, **found)
    return out, problems


def _own_config(
    name: str, value: object, put: Any, path: str, problems: list[Problem], found: dict[str, Any]
) -> None:
    """One config (``compute``, ``source_code``, ...) read field by field."""
    fields = _fields_of(value)
    if fields is None:
        problems.append(
            Problem(
                join_path(path, name),
                f"must be ModelTrainer's {name} config or a mapping of its fields, got "
                f"{_type_name(value)}.",
                f"write {name} as a mapping of its fields, e.g. {_OWN_EXAMPLES[name]}.",
            )
        )
        return
    table = OWN_WORDS[name]
    for field, given in fields.items():
        where = f"{name}.{field}"
        if field not in table:
            problems.append(
                Problem(
                    join_path(path, where),
                    f"is not a field of ModelTrainer's {name} config.",
                    did_you_mean(field, table) or f"its fields are {', '.join(sorted(table))}.",
                )
            )
        elif given is None:
            continue
        elif name == "source_code" and field in ("command", "requirements"):
            found[field] = given
            script = _command_script(given) if field == "command" else None
            if script is not None and not fields.get("entry_script"):
                put("entry_point", script, where)  # checked as the entry point is
        elif name == "output_data_config" and field == "compression_type":
            if given == "NONE":
                put("disable_output_compression", True, where)
        elif field == "instance_groups" and isinstance(given, (list, tuple)):
            put("instance_groups", [_fields_of(g) or g for g in given], where)
        elif field == "instance_preferences":
            _own_preferences(given, put, join_path(path, where), problems, found)
        elif table[field] is not None:
            put(table[field], given, where)


def _own_preferences(
    value: object, put: Any, at: str, problems: list[Problem], found: dict[str, Any]
) -> None:
    """Compute.instance_preferences: the preferred types in order, each with its count. The
    first (what SageMaker tries first) stands in ``instance_type`` for the rules, which the
    check runs again for each of the others (``_resolve``)."""
    items = [_fields_of(item) for item in value] if isinstance(value, (list, tuple)) else None
    preferences = []
    for index, item in enumerate(items or ()):
        kind = item.get("instance_type") if item is not None else None
        count = item.get("instance_count") if item is not None else None
        if not isinstance(kind, str) or not (count is None or type(count) is int):
            problems.append(
                Problem(
                    f"{at}.{index}",
                    "must be an InstancePreference: an instance_type (a string) and an optional "
                    "instance_count (a whole number).",
                    "write {instance_type: ml.p5.48xlarge, instance_count: 2}.",
                )
            )
            return
        preferences.append((kind, count))
    if not preferences:
        problems.append(
            Problem(at, "must be a non-empty list of InstancePreference.", "list the types.")
        )
        return
    found["preferences"] = tuple(preferences)
    put("instance_type", preferences[0][0], "compute.instance_preferences.0.instance_type")
    if preferences[0][1] is not None:
        put("instance_count", preferences[0][1], "compute.instance_preferences.0.instance_count")


def _command_script(command: object) -> str | None:
    """The Python script a SourceCode command runs (``torchrun ... train.py --lr 1``: the first
    word ending in .py), which the script checks read; None when there is none."""
    import shlex

    if not isinstance(command, str):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    return next((w for w in words if w.endswith(".py") and not w.startswith("-")), None)


_OWN_EXAMPLES = {
    "source_code": "{source_dir: ., entry_script: train.py}",
    "compute": "{instance_type: ml.g5.12xlarge, instance_count: 1}",
    "stopping_condition": "{max_runtime_in_seconds: 7200}",
    "networking": "{subnets: [subnet-1], security_group_ids: [sg-1]}",
    "checkpoint_config": "{s3_uri: s3://bucket/checkpoints}",
    "output_data_config": "{s3_output_path: s3://bucket/output}",
}


def _own_value(name: str, value: object, put: Any, path: str, problems: list[Problem]) -> None:
    """``training_image`` (the estimator's image_uri) and ``input_data_config`` (fit's inputs:
    channels whose data source is a URI; other data sources are sent as given)."""
    keyword = OWN_VALUES[name]
    if name == "training_image":
        put(keyword, value, name)
        return
    if not isinstance(value, (list, tuple)):
        problems.append(
            Problem(
                join_path(path, name),
                f"must be a list of channels (InputData or mappings), got {_type_name(value)}.",
                "write input_data_config: [{channel_name: train, data_source: s3://bucket/train}].",
            )
        )
        return
    channels = {}
    for channel in value:
        fields = _fields_of(channel) or {}
        source = fields.get("data_source")
        if isinstance(fields.get("channel_name"), str) and isinstance(source, str):
            channels[fields["channel_name"]] = source
    if channels:
        put(keyword, channels, name)


def _own_launcher(value: object, put: Any, path: str, problems: list[Problem]) -> str | None:
    """``distributed``: Torchrun (with SMP) and MPI as the estimator's distribution that starts
    the same processes; any other DistributedConfig is the user's own driver, recorded."""
    if isinstance(value, Mapping):  # a spec file: {torchrun: {...}} or {mpi: {...}}
        kinds = {k.lower(): k for k in LAUNCHERS}
        if len(value) != 1 or str(next(iter(value))).lower() not in kinds:
            problems.append(
                Problem(
                    join_path(path, "distributed"),
                    "must name one launcher, torchrun or mpi, with its fields.",
                    "write distributed: {torchrun: {process_count_per_node: 8}} (or mpi: ...); "
                    "a custom DistributedConfig driver is given in Python.",
                )
            )
            return None
        (key, fields) = next(iter(value.items()))
        kind, fields = kinds[str(key).lower()], _fields_of(fields or {}) or {}
    else:
        kind, fields = type(value).__name__, _fields_of(value) or {}
    if kind not in LAUNCHERS:
        return kind  # the user's own driver: sent as given
    block: dict[str, Any] = {"enabled": True}
    distribution: dict[str, Any] = {LAUNCHERS[kind]: block}
    count = fields.get("process_count_per_node")
    if kind == "MPI":
        if count is not None:
            block["processes_per_host"] = count
        options = fields.get("mpi_additional_options")
        if isinstance(options, (list, tuple)) and options:
            block["custom_mpi_options"] = " ".join(str(o) for o in options)
    smp = fields.get("smp")
    if smp is not None:
        parameters = _fields_of(smp) or {}
        block = {"enabled": True, "parameters": parameters}
        distribution["smdistributed"] = {"modelparallel": block}
    put("distribution", distribution, "distributed")
    return kind


def _hyperparameters_file(name: str, at: str) -> dict[str, Any] | Problem | None:
    """The hyperparameters of a JSON or YAML file, read as ModelTrainer reads it (JSON, then
    YAML; a mapping); a Problem when it cannot be."""
    import json

    import yaml

    try:
        with open(name, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        return Problem(
            at,
            f"names the hyperparameters file {quote(name)}, which cannot be read "
            f"({exc.strerror or type(exc).__name__}).",
            "give the path of a JSON or YAML file of hyperparameters, or a mapping.",
        )
    try:
        loaded = json.loads(text)
    except ValueError:
        try:
            loaded = yaml.safe_load(text)
        except yaml.YAMLError:
            loaded = None
    if not isinstance(loaded, dict):
        return Problem(
            at,
            f"names {quote(name)}, which is not a JSON or YAML mapping of hyperparameters "
            "(ModelTrainer refuses it).",
            "write the file as a mapping: {epochs: 3, lr: 0.0001}.",
        )
    return loaded


def spec_variables(spec: JobSpec) -> dict[str, Any]:
    """The pipeline variables of a spec by path: its options and its mappings' values."""
    if not _may_hold_variables(spec):
        return {}
    found = {
        name: value
        for name, value in spec_arguments(spec).items()
        if is_pipeline_variable(value)
    }
    for name in ("environment", "hyperparameters"):
        found.update(
            (f"{name}.{key}", value)
            for key, value in getattr(spec, name).items()
            if is_pipeline_variable(value)
        )
    return found


# Values of these exact types are never pipeline variables (none has an ``expr``): a spec made
# only of them, as every spec file is, has none, known from the types alone.
_PLAIN_TYPES = frozenset(
    (str, int, float, bool, type(None), dict, list, tuple, TrainingCompiler, ModelShape)
)
_FIELD_VALUES = operator.attrgetter(*sorted(SPEC_FIELDS))


def _may_hold_variables(spec: JobSpec) -> bool:
    types = set(map(type, _FIELD_VALUES(spec)))
    for values in (spec.extra.values(), spec.environment.values(), spec.hyperparameters.values()):
        types.update(map(type, values))
    return not types <= _PLAIN_TYPES


def _structure_with(
    fields: dict[str, Any], extra: dict[str, Any], variables: dict[str, Any]
) -> JobSpec:
    """The spec of ``fields``, with the pipeline variables back in place of their defaults."""
    spec = converter.structure({**fields, "extra": extra}, JobSpec)
    return attrs.evolve(spec, **variables) if variables else spec


def judged_by_default(
    problems: list[Problem], variables: Mapping[str, Any], base: str = ""
) -> list[Problem]:
    """Problems about an option given as a pipeline parameter say that its default was judged."""
    if not variables:
        return problems
    out = []
    for problem in problems:
        # Only a problem at the variable's own path judged its default (not, say, one of an
        # instance type parameter's enum_values).
        variable = variables.get(problem.path.removeprefix(f"{base}.") if base else problem.path)
        judged = variable is not None and value_of(variable) is not None
        if judged and "pipeline parameter" not in problem.message:
            name = getattr(variable, "name", None) or type(variable).__name__
            problem = attrs.evolve(
                problem,
                message=f"{problem.message} (This is the default_value of the pipeline parameter "
                f"{name!r}, checked in its place.)",
            )
        out.append(problem)
    return out


def _not_an_option(
    key: str,
    value: object,
    data: Mapping[Any, Any],
    known: frozenset[str],
    path: str,
    check_spelling: bool,
) -> Problem:
    """The verdict on a keyword the estimator does not take, which its ``**kwargs`` drops.

    A close misspelling of one of its options is an error: the job would run without the
    setting the user meant. A keyword of another estimator, a known misplaced name
    (``MISPLACED``) or any other name is a warning: it is left out of the estimator's arguments,
    which changes nothing the SDK sends. Past ``MAX_PROBLEMS`` such keywords the spelling is not
    compared (difflib costs up to a millisecond per name), so those are warnings too.
    """
    kind = data.get("estimator")
    where = f"the {kind} estimator" if kind in ESTIMATORS else "this estimator"
    factory = kind if kind in ESTIMATORS else "pytorch"
    at = join_path(path, _shown(key))
    dropped = "so it has no effect and is left out of the estimator's arguments."
    if _is_fit_keyword(key):
        return _fit_keyword(at, key, data, dropped)
    owners = [owner for owner, names in _KEYWORD_OWNERS if key in names]
    hints = MISPLACED.get(key)
    meant = None if hints or owners or not check_spelling else closest(key, SPEC_FIELDS | known)
    if meant is not None:
        return Problem(
            at,
            f"{quote(key)} is not an option of {where}, and the SDK would silently ignore it "
            "(the estimator's **kwargs drops it): the job would run without that setting.",
            f"did you mean {meant!r}?",
        )
    if not hints and not owners:
        return warning(
            at,
            f"{quote(key)} is not an option of {where}; the SDK ignores unknown keyword "
            f"arguments, {dropped}",
            f"remove it, or see help(safe_estimators.{factory}) for the options (a setting for "
            "your script goes in hyperparameters or environment).",
        )
    taken = f"an option of {' and '.join(owners)}, not of" if owners else "not an option of"
    hint = (
        _misplaced_hint(hints, value, data.get("distribution"))
        if hints
        else f"remove it; see help(safe_estimators.{factory}) for the options of {where}."
    )
    return warning(
        at,
        f"{quote(key)} is {taken} {where}; the SDK ignores it (the estimator's **kwargs drops "
        f"it), {dropped}",
        hint,
    )


def _is_fit_keyword(key: str) -> bool:
    from safe_estimators._facts.pipeline_variables import fit_keywords

    return key in fit_keywords()


def _fit_keyword(at: str, key: str, data: Mapping[Any, Any], dropped: str) -> Problem:
    """A keyword of ``fit()`` given to the estimator: its ``**kwargs`` drops it, harmlessly."""
    base = data.get("base_job_name")
    named = (
        f" (base_job_name {quote(base)} names the job)"
        if key == "job_name" and isinstance(base, str)
        else ""
    )
    return warning(
        at,
        f"{quote(key)} is a keyword of fit(), not of the estimator; the SDK ignores it here (the "
        f"estimator's **kwargs drops it){named}, {dropped}",
        f"pass it to fit(): est.fit({key}=...).",
    )


# Who else takes a keyword: our other estimator, then the SDK's other estimator classes.
_KEYWORD_OWNERS: tuple[tuple[str, frozenset[str]], ...] = (
    *((f"the {kind} estimator", BY_ESTIMATOR[kind]) for kind in ESTIMATORS),
    *OTHER_ESTIMATORS.items(),
)


def _misplaced_hint(hints: Mapping[str, str], value: object, distribution: object) -> str:
    """The table's hint for the launcher the job enables (``""``: any other job)."""
    launchers = (name for name in hints if name and is_enabled(value_at(distribution, name)))
    enabled = next(launchers, "")
    shown = quote(value)
    quoted = isinstance(value, str) and len(shown) > 1 and shown[0] == shown[-1] in "'\""
    return hints[enabled].format(value=shown, text=shown[1:-1] if quoted else shown)


def _v2_names(data: Mapping[Any, Any], path: str) -> tuple[dict[Any, Any], list[Problem]]:
    """The SDK v1 spellings (``train_instance_type``) under their v2 names, as the SDK renames
    them; a warning for each, saying which value wins when both names are given."""
    renamed = dict(data)
    problems = []
    for old, new in RENAMED.items():
        if old not in renamed:
            continue
        value = renamed.pop(old)
        both = new in data and data[new] is not None and data[new] != value
        renamed[new] = value  # the SDK takes the old name's value (sagemaker.deprecations)
        problems.append(
            warning(
                join_path(path, old),
                f"is the SageMaker SDK v1 name of {new}; the SDK still takes it, as {new}"
                + (f", over the {new} also given ({quote(data[new])})" if both else "")
                + ".",
                f"write {new}" + (" and remove this one." if both else " instead."),
            )
        )
    return renamed, problems


def _top_level(problem_path: str, base: str) -> str:
    if base and problem_path.startswith(base + "."):
        problem_path = problem_path[len(base) + 1 :]
    return problem_path.split(".", 1)[0]


def skipped_paths(problems: list[Problem]) -> set[str]:
    """The top-level options a partial spec left out (see ``structure_spec``)."""
    return {_top_level(p.path, "") for p in problems}


def spec_arguments(spec: JobSpec) -> dict[str, Any]:
    """The keyword arguments a spec stands for (the inverse of ``structure_spec``)."""
    arguments = {
        name: getattr(spec, name)
        for name in SPEC_FIELDS
        if name != "inputs" and getattr(spec, name) is not None
    }
    if spec.instance_groups is not None:  # the groups stand for instance_type and count
        del arguments["instance_type"], arguments["instance_count"]
    if spec.trainer is not None:  # ModelTrainer's words, kept as given
        arguments[WORDS_KEY] = spec.trainer
    return {**arguments, **spec.extra}


def _as_mapping(data: object, path: str) -> tuple[Mapping[Any, Any] | None, list[Problem]]:
    """``data`` as a mapping of keyword arguments, or None and why it cannot be read as one
    (too deep, too large, or not a mapping)."""
    shape = shape_problems(data, path)
    if shape:
        return None, [Problem(p.path, p.message, p.hint) for p in shape]
    if not isinstance(data, Mapping):
        message = f"must be a mapping of options, got {_type_name(data)}."
        return None, [Problem(path or "<spec>", message)]
    return data, []
