"""A JSON Schema of spec files, generated from the typed spec so that it cannot drift from it.

The schema is derived from the attrs classes the loader structures into (``JobSpec``,
``TrainingCompiler``, ``ModelParallel``) and from the SDK keyword tables in
``_facts.sdk_arguments``: a field added to one of them appears here without touching this
module. What cannot be read from the types (the shorthands the cattrs hooks accept, the instance
catalog) is in the small tables below. Editors use it through the YAML language server::

    safe-estimators schema > spec.schema.json
    # yaml-language-server: $schema=./spec.schema.json      (first line of job.yaml)

This module does not import ``sagemaker``.
"""

from __future__ import annotations

import collections.abc
import inspect
import types
import typing
from typing import Any, Literal, Union

import attrs

from safe_estimators._context import LOCAL_TYPES
from safe_estimators._distributions.model_parallel import ModelParallel
from safe_estimators._distributions.model_parallel.facts import ALIASES as MODEL_PARALLEL_ALIASES
from safe_estimators._facts.sdk_arguments import (
    BY_ESTIMATOR,
    MISPLACED,
    OTHER_ESTIMATORS,
    RENAMED,
)
from safe_estimators._memory.shape import SCHEMA_KEY
from safe_estimators._spec import (
    SPEC_FIELDS,
    CompilerConfig,
    CountValue,
    FlagValue,
    JobSpec,
    PositiveInt,
    TextValue,
    TrainingCompiler,
)

Schema = dict[str, Any]

DIALECT = "https://json-schema.org/draft/2020-12/schema"

_PRIMITIVES: dict[object, Schema] = {
    str: {"type": "string"},
    bool: {"type": "boolean"},
    int: {"type": "integer"},
    float: {"type": "number"},
    type(None): {"type": "null"},
}

# Constraints a NewType adds to its base type (the structure hook enforces them).
_NEWTYPE_CONSTRAINTS: dict[object, Schema] = {PositiveInt: {"minimum": 1}}

# Types that also take a SageMaker Pipelines variable in Python: a file holds the plain value.
_IN_A_FILE: dict[object, Any] = {CountValue: PositiveInt, FlagValue: bool, TextValue: str}

# Older option names the loader accepts, by class.
_ALIASES: dict[type, dict[str, str]] = {ModelParallel: MODEL_PARALLEL_ALIASES}

# Other forms the cattrs structure hooks accept for an attrs class.
_SHORTHANDS: dict[type, list[Schema]] = {
    TrainingCompiler: [
        {"type": "boolean", "description": "true is the same as {debug: false}; false is off."}
    ],
}

# JobSpec fields whose annotation is looser than what a file may hold: model_parallel is parsed
# after structuring, so JobSpec types it Any. (instance_type, which may be a Pipelines object in
# Python, is a string from the catalog in a file: see _spec_properties.)
_FIELD_TYPES: dict[str, Any] = {
    "model_parallel": ModelParallel | None,
    "compiler_config": CompilerConfig | None,
    "accept_exposure": str | list[str],
}

# Spec-file options that are not SageMaker estimator keywords.
_DESCRIPTIONS: dict[str, str] = {
    "estimator": "The SageMaker estimator to build: sagemaker.huggingface.HuggingFace or "
    "sagemaker.pytorch.PyTorch.",
    "entry_point": "The training script, relative to source_dir (or to this file).",
    "instance_type": "A SageMaker training instance type (safe-estimators catalog lists them), "
    "or local / local_gpu.",
    "training_compiler": "Turn on SageMaker Training Compiler with its safe defaults.",
    "compiler_config": "The SageMaker SDK's TrainingCompilerConfig as a mapping; read as "
    "training_compiler (enabled: true turns the compiler on with the same safe defaults).",
    "model_parallel": "Options of the SageMaker model parallel library: v1 on PyTorch <= 2.0.0 "
    "(smdistributed over MPI), v2 on PyTorch >= 2.0.1 (smdistributed over torchrun, its own "
    "image); the distribution is derived from them.",
    "model": "The model's shape, for the per-accelerator memory estimate (safe_estimators."
    "ModelShape): a job that cannot fit is refused with the smallest fixes.",
    "check_script": "Check the entry point for known pitfalls before launch.",
    "target": "What the job is built as: estimator (the SDK's estimator class, sagemaker 2.x "
    "only) or model_trainer (ModelTrainer); by default the estimator on sagemaker 2.x and "
    "ModelTrainer on 3.x. estimator names the training container either way.",
    "inputs": "The channels passed to fit(): an S3 URI, or a mapping of channel name to S3 URI.",
    "accept_exposure": "Dotted paths (environment.HF_TOKEN) of suspected secrets to send anyway, "
    "accepting that DescribeTrainingJob shows them to whoever may read the job.",
}
_PASSTHROUGH = "Passed unchanged to the SageMaker estimator."


def _is_union(tp: object) -> bool:
    return typing.get_origin(tp) in (Union, types.UnionType)


def _type_schema(tp: Any, defs: Schema) -> Schema:
    """The JSON Schema of one Python type annotation; attrs classes go to ``defs``."""
    if tp is Any or tp is object:
        return {}
    if tp in _PRIMITIVES:
        return dict(_PRIMITIVES[tp])
    if tp in _IN_A_FILE:
        return _type_schema(_IN_A_FILE[tp], defs)
    supertype = getattr(tp, "__supertype__", None)  # typing.NewType
    if supertype is not None:
        return {**_type_schema(supertype, defs), **_NEWTYPE_CONSTRAINTS.get(tp, {})}
    if attrs.has(tp):
        if tp.__name__ not in defs:
            defs[tp.__name__] = {}  # placeholder: a class may refer to itself
            defs[tp.__name__] = _class_schema(tp, defs)
        return _any_of([{"$ref": f"#/$defs/{tp.__name__}"}, *_SHORTHANDS.get(tp, [])])
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Literal:
        return {"enum": list(args)}
    if _is_union(tp):
        return _any_of([_type_schema(arg, defs) for arg in args])
    if origin in (dict, collections.abc.Mapping):
        values = _type_schema(args[1], defs) if args else {}
        return {"type": "object", **({"additionalProperties": values} if values else {})}
    if origin in (list, tuple, collections.abc.Sequence):
        items = _type_schema(args[0], defs) if args else {}
        return {"type": "array", **({"items": items} if items else {})}
    raise TypeError(
        f"safe_estimators._spec_files.schema has no JSON Schema for {tp!r}; add it there."
    )


def _kinds(schema: Schema) -> list[str]:
    kind = schema.get("type", [])
    return list(kind) if isinstance(kind, list) else [kind]


# Keywords that constrain one JSON type only, so alternatives carrying them can share a type list.
_TYPE_SPECIFIC = frozenset({"type", "minimum", "maximum", "additionalProperties", "items"})


def _any_of(options: list[Schema]) -> Schema:
    """One schema for alternatives: ``{"type": [...]}`` where the alternatives allow it."""
    if {} in options:
        return {}
    flat = [
        option
        for alternative in options
        for option in (alternative["anyOf"] if alternative.keys() == {"anyOf"} else [alternative])
    ]
    if len(flat) == 1:
        return flat[0]
    kinds = [kind for option in flat for kind in _kinds(option)]
    keywords = [key for option in flat for key in option if key != "type"]
    mergeable = all("type" in option and option.keys() <= _TYPE_SPECIFIC for option in flat)
    if mergeable and len(set(kinds)) == len(kinds) and len(set(keywords)) == len(keywords):
        merged: Schema = {"type": kinds}
        for option in flat:
            merged.update((key, value) for key, value in option.items() if key != "type")
        return merged
    return {"anyOf": flat}


def _allows_null(schema: Schema) -> bool:
    return "null" in _kinds(schema) or any(_allows_null(o) for o in schema.get("anyOf", []))


def _nullable(schema: Schema) -> Schema:
    """Allow null too: in a spec file, ``key: null`` means "not given"."""
    if schema == {} or _allows_null(schema):
        return schema
    if "type" in schema and not schema.keys() & {"enum", "const", "anyOf"}:
        return {**schema, "type": [*_kinds(schema), "null"]}
    return _any_of([schema, {"type": "null"}])


def _default(field: attrs.Attribute[Any]) -> Schema:
    value = field.default
    return {"default": value} if isinstance(value, bool | int | float | str) else {}


def _doc(cls: type) -> str:
    """The first paragraph of a class docstring, on one line."""
    return " ".join((inspect.getdoc(cls) or "").split("\n\n")[0].split())


def _class_schema(cls: type, defs: Schema) -> Schema:
    """An object schema with one property per public attrs field of ``cls``.

    A field's ``metadata[SCHEMA_KEY]`` adds what its validator or converter decides beyond the
    annotation (a minimum, the names it accepts, the strings it converts), over the annotation's.
    """
    hints = typing.get_type_hints(cls)
    properties: Schema = {}
    for field in attrs.fields(cls):
        if not field.name.startswith("_"):
            properties[field.name] = {
                **_type_schema(hints[field.name], defs),
                **field.metadata.get(SCHEMA_KEY, {}),
                **_default(field),
            }
    for old, new in _ALIASES.get(cls, {}).items():
        properties[old] = {**properties[new], "description": f"The older name of {new}."}
    return {
        "type": "object",
        "description": _doc(cls),
        "properties": properties,
        "additionalProperties": False,
    }


def _instance_types() -> list[str]:
    import instance_catalog

    return [entry.name for entry in instance_catalog.instance_types()] + list(LOCAL_TYPES)


def _spec_properties(defs: Schema) -> tuple[Schema, list[str]]:
    """The typed options of JobSpec (``extra`` is the SDK passthrough, described apart)."""
    hints = typing.get_type_hints(JobSpec)
    properties: Schema = {}
    required: list[str] = []
    for field in attrs.fields(JobSpec):
        if field.name not in SPEC_FIELDS:
            continue
        schema = _type_schema(_FIELD_TYPES.get(field.name, hints[field.name]), defs)
        if field.default is attrs.NOTHING:
            required.append(field.name)
        else:
            schema = _nullable(schema)
        description = field.metadata.get("description") or _DESCRIPTIONS.get(field.name)
        properties[field.name] = {
            **schema,
            **_default(field),
            **({"description": description} if description else {}),
        }
    properties["instance_type"].update(type="string", enum=_instance_types())
    return properties, required


def _passthrough_properties(known: set[str]) -> Schema:
    names = sorted(set().union(*BY_ESTIMATOR.values()) - known)
    return {name: {"description": _PASSTHROUGH} for name in names}


def _ignored_properties(known: set[str]) -> Schema:
    """Names the loader takes with a warning: the SDK v1 names it renames, and the keywords of
    other estimators and misplaced names the SDK drops (marked deprecated for editors)."""
    ignored: Schema = {
        old: {"description": f"The SageMaker SDK v1 name of {new}; renamed, with a warning.",
              "deprecated": True}
        for old, new in RENAMED.items()
    }  # fmt: skip
    for name in sorted(set(MISPLACED).union(*OTHER_ESTIMATORS.values()) - known):
        ignored[name] = {"description": _IGNORED, "deprecated": True}
    return ignored


_IGNORED = "Not an option of this estimator: the SDK ignores it, so it has no effect (a warning)."


def spec_schema() -> Schema:
    """The JSON Schema (draft 2020-12) of a ``safe-estimators`` spec file.

    Keys are the factories' keyword arguments: the typed options of ``JobSpec`` (with
    ``training_compiler`` and ``model_parallel`` described in full), every other keyword the
    chosen SageMaker estimator accepts (loosely typed: they go to the SDK unchanged), plus
    ``estimator`` and ``inputs``. Other keys are allowed, as ``validate`` allows them: the SDK
    drops a keyword it does not take, so ``validate`` warns about one, and refuses only a close
    misspelling of an option (which JSON Schema cannot tell apart from any other name).
    """
    defs: Schema = {}
    properties, required = _spec_properties(defs)
    properties.update(_passthrough_properties(set(properties)))
    properties.update(_ignored_properties(set(properties)))
    schema: Schema = {
        "$schema": DIALECT,
        "title": "safe-estimators job spec",
        "description": "A SageMaker training job for safe_estimators: the keyword arguments of "
        "safe_estimators.huggingface() or .pytorch(), plus estimator and inputs.",
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": True,
    }
    # A heterogeneous cluster (instance_groups) replaces instance_type and instance_count.
    required.remove("instance_type")
    machines = {"oneOf": [{"required": ["instance_type"]}, {"required": ["instance_groups"]}]}
    # A training recipe names its own entry point.
    required.remove("entry_point")
    script = {"anyOf": [{"required": ["entry_point"]}, {"required": ["training_recipe"]}]}
    schema["allOf"] = [machines, script]
    schema["$defs"] = defs
    return schema
