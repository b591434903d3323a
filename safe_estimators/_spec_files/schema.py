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
import re
import types
import typing
from typing import Any, Literal, Union

import attrs

from safe_estimators._context import LOCAL_TYPES
from safe_estimators._distributions.model_parallel import ModelParallel
from safe_estimators._distributions.model_parallel.facts import ALIASES as MODEL_PARALLEL_ALIASES
from safe_estimators._facts.model_trainer import LAUNCHERS, OWN_VALUES, OWN_WORDS
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
    "ModelTrainer on 3.x. estimator names the training container either way. remote_function "
    "is a @remote function's job, fine_tuning a fine-tuning trainer's (sagemaker 3).",
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


def _instance_types(*, remote: bool = False) -> list[str]:
    """The catalog's training instance types, and local mode's (not for ``remote``: the
    ``@remote`` decorator and the fine-tuning trainers start a SageMaker job)."""
    import instance_catalog

    names = [entry.name for entry in instance_catalog.instance_types()]
    return names if remote else names + list(LOCAL_TYPES)


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


def _own_words_properties(properties: Schema) -> Schema:
    """ModelTrainer's own arguments (``source_code``, ``compute``, ..., ``distributed``), each
    field typed as the estimator option the loader reads it as (``compute.instance_type`` as
    ``instance_type``); a field with no counterpart is sent as given."""
    own: Schema = {}
    for name, table in OWN_WORDS.items():
        fields: Schema = {}
        for field, counterpart in table.items():
            typed = {k: v for k, v in properties.get(counterpart or "", {}).items()
                     if k != "description"}  # fmt: skip
            where = f"read as {counterpart}" if counterpart else "sent as given, not checked"
            fields[field] = {**typed, "description": f"ModelTrainer's {name}.{field}: {where}."}
        own[name] = {
            "type": ["object", "null"],
            "description": f"ModelTrainer's {name} config as a mapping of its fields "
            "(target: model_trainer).",
            "properties": fields,
            "additionalProperties": False,
        }
    for name, counterpart in OWN_VALUES.items():
        typed = {k: v for k, v in properties.get(counterpart, {}).items() if k != "description"}
        own[name] = {**typed, "description": f"ModelTrainer's {name}: read as {counterpart}."}
    own["distributed"] = {
        "type": ["object", "null"],
        "description": "ModelTrainer's launcher: {torchrun: {process_count_per_node: 8}} or "
        "{mpi: {...}}, read as the estimator's distribution that starts the same processes.",
        "propertyNames": {"pattern": _case_insensitive([name.lower() for name in LAUNCHERS])},
        "additionalProperties": {"type": ["object", "null"]},
        "minProperties": 1,
        "maxProperties": 1,
    }
    return own


def _job_schema(defs: Schema) -> Schema:
    """An estimator or ModelTrainer job (``target: estimator`` / ``model_trainer``, or none)."""
    properties, required = _spec_properties(defs)
    properties.update(_passthrough_properties(set(properties)))
    properties.update(_ignored_properties(set(properties)))
    for name, own in _own_words_properties(properties).items():
        properties.setdefault(name, own)
    # ModelTrainer's hyperparameters may be a YAML or JSON file's name (relative to the spec).
    properties["hyperparameters"] = {
        **_any_of([properties["hyperparameters"], {"type": "string"}]),
        "description": "The job's hyperparameters, or (ModelTrainer's form) the name of a YAML "
        "or JSON file that holds them, relative to this file.",
    }
    schema: Schema = {
        "type": "object",
        "description": "A SageMaker training job for safe_estimators: the keyword arguments of "
        "safe_estimators.huggingface() or .pytorch(), plus estimator and inputs; with target: "
        "model_trainer, ModelTrainer's own words (source_code, compute, ...) too.",
        "properties": properties,
        "required": required,
        "additionalProperties": True,
    }
    # A heterogeneous cluster (instance_groups) replaces instance_type and instance_count, and
    # ModelTrainer's compute says either.
    required.remove("instance_type")
    machines = {
        "oneOf": [
            {"required": ["instance_type"]},
            {"required": ["instance_groups"]},
            {"required": ["compute"]},
        ]
    }
    # A training recipe names its own entry point; ModelTrainer's source_code its script or
    # command.
    required.remove("entry_point")
    script = {
        "anyOf": [
            {"required": ["entry_point"]},
            {"required": ["training_recipe"]},
            {"required": ["source_code"]},
        ]
    }
    schema["allOf"] = [machines, script]
    return schema


def _case_insensitive(words: list[str]) -> str:
    """A pattern (ECMA 262, no flags) for any of ``words`` in any case."""
    def one(word: str) -> str:
        return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else re.escape(c) for c in word)

    return "^(?:" + "|".join(one(word) for word in words) + ")$"


def _typed_fields(cls: type, names: Any, defs: Schema) -> Schema:
    """The schemas of ``cls``'s attrs fields among ``names``, with their metadata and
    defaults (as ``_class_schema`` makes them), each nullable: null means "not given"."""
    hints = typing.get_type_hints(cls)
    out: Schema = {}
    for field in attrs.fields(cls):
        if field.name in names:
            schema = {**_type_schema(hints[field.name], defs), **_default(field)}
            out[field.name] = _nullable(schema)
    return out


_FILE_ONLY = ("sagemaker_session",)  # a Python object: no spec file holds one
_EXPOSURE: Schema = {
    "type": "array",
    "items": {"type": "string"},
    "description": _DESCRIPTIONS["accept_exposure"],
}


# The least value of the @remote job's whole-number options (RemoteFunctionSpec's validators).
_REMOTE_MINIMUMS = {
    "instance_count": 1, "nproc_per_node": 1, "keep_alive_period_in_seconds": 0,
    "max_wait_time_in_seconds": 1, "max_runtime_in_seconds": 1, "volume_size": 1,
}  # fmt: skip


def _remote_schema(defs: Schema) -> Schema:
    """A ``@remote`` function's job (``target: remote_function``): the installed SDK's
    decorator keywords, the ones the rules read typed; the decorator takes no other keyword
    (the loader refuses any other name that has a value)."""
    from safe_estimators._facts.remote_function import remote_keywords
    from safe_estimators._spec import RemoteFunctionSpec

    keywords = [k for k in remote_keywords() if k not in _FILE_ONLY]
    typed = _typed_fields(RemoteFunctionSpec, keywords, defs)
    for name, least in _REMOTE_MINIMUMS.items():  # what the spec's validators refuse below
        if name in typed:
            typed[name] = {**typed[name], "minimum": least}
    typed["instance_type"] = _training_instance_type(defs)
    properties: Schema = {
        "target": {"const": "remote_function"},
        **{k: typed.get(k, {"description": "Passed unchanged to the SDK's @remote."})
           for k in keywords},
        "accept_exposure": _nullable(_any_of([{"type": "string"}, _EXPOSURE])),
    }  # fmt: skip
    return {
        "type": "object",
        "description": "A @remote function's job: the keyword arguments of the SDK's remote() "
        "decorator (safe_estimators.remote()).",
        "properties": properties,
        "required": ["target", "instance_type"],
        "additionalProperties": {"type": "null"},  # another name: only as "not given"
    }


def _training_instance_type(defs: Schema) -> Schema:
    """A SageMaker training instance type of the catalog (once, in ``defs``)."""
    if TRAINING_TYPE not in defs:
        defs[TRAINING_TYPE] = {
            "type": "string",
            "enum": _instance_types(remote=True),
            "description": "A SageMaker training instance type (safe-estimators catalog lists "
            "them).",
        }
    return {"$ref": f"#/$defs/{TRAINING_TYPE}"}


def _fine_tuning_schema(defs: Schema) -> Schema:
    """A fine-tuning trainer's job (``target: fine_tuning``, ``trainer: SFT``): the typed
    options the rules read, and each trainer's other keywords where the installed SDK has the
    trainers (sagemaker 3); a keyword another trainer does not take is refused for it."""
    from safe_estimators._facts.fine_tuning import TRAINERS, TRAINING_TYPES, trainer_keywords
    from safe_estimators._spec import HYPERPOD_COMPUTE_FIELDS, TRAINING_JOB_COMPUTE_FIELDS

    names = [*TRAINERS, *(cls for _, cls in TRAINERS.values())]
    instance_type = _training_instance_type(defs)
    count = {"type": "integer", "minimum": 1}
    hyperpod = {
        "type": "object",
        "description": "HyperPodCompute: the job runs on a HyperPod cluster.",
        "properties": {
            **{field: {} for field in HYPERPOD_COMPUTE_FIELDS},
            "cluster_name": {"type": ["string", "null"]},
            "namespace": {"type": ["string", "null"]},
            "instance_type": _nullable(instance_type),
            "node_count": _nullable(count),
        },
        "anyOf": [{"required": ["cluster_name"]}, {"required": ["node_count"]}],
        "additionalProperties": False,
    }
    training_job = {
        "type": "object",
        "description": "TrainingJobCompute: a training job on instances of your own.",
        "properties": {
            **{field: {} for field in TRAINING_JOB_COMPUTE_FIELDS},
            "instance_type": _nullable(instance_type),
            "instance_count": _nullable(count),
        },
        "patternProperties": {"^selected_": {}},
        "additionalProperties": False,
    }
    properties: Schema = {
        "target": {"const": "fine_tuning"},
        "trainer": {
            "description": "The trainer: SFT, DPO, RLVR, RLAIF or CPT (or its class name), in "
            "any case.",
            "anyOf": [{"enum": names}, {"type": "string", "pattern": _case_insensitive(names)}],
        },
        "model": {
            "type": "string",
            "minLength": 1,
            "description": "The base model: its hub content name, Hugging Face name, or a model "
            "package ARN.",
        },
        "training_type": {"enum": [*TRAINING_TYPES, None]},
        "compute": {
            "description": "Where the job runs: TrainingJobCompute's fields, HyperPodCompute's, "
            "or none (null) for a serverless job.",
            "anyOf": [training_job, hyperpod, {"type": "null"}],
        },
        "sequence_length": {
            "type": ["string", "null"],
            "pattern": r"^\s*[0-9]+[kK]\s*$",
            "description": "A number of K tokens, as the recipes write it: '4K', '32K'.",
        },
        "hyperparameters": {"type": ["object", "null"]},
        "overrides": {
            "type": ["object", "null"],
            "description": "Recipe values in the recipe's nested layout.",
        },
        "recipe": {
            "type": ["string", "null"],
            "pattern": "^(?!https?://)",
            "description": "A recipe YAML file (relative to this file, inside the project) or "
            "an s3:// URI; HTTP(S) URLs are refused by the trainers.",
        },
        "accept_exposure": {**_EXPOSURE, "type": ["array", "null"]},
    }
    schema: Schema = {
        "type": "object",
        "description": "A fine-tuning trainer's job (sagemaker 3's sagemaker.train SFTTrainer, "
        "DPOTrainer, RLVRTrainer, RLAIFTrainer, CPTTrainer): its keyword arguments.",
        "properties": properties,
        "required": ["target", "trainer", "model"],
    }
    try:
        taken = {technique: trainer_keywords(technique) for technique in TRAINERS}
    except (OSError, SyntaxError, ValueError):  # sagemaker 2.x: no trainers to read
        schema["additionalProperties"] = True
        return schema
    every = sorted({k for keys in taken.values() for k in keys} - set(_FILE_ONLY))
    passed = {"description": "Passed unchanged to the trainer."}
    for name in every:
        properties.setdefault(name, passed)
    schema["additionalProperties"] = {"type": "null"}  # another name: only as "not given"
    schema["allOf"] = [
        {
            "if": {
                "required": ["trainer"],
                "properties": {"trainer": {"pattern": _case_insensitive([t, TRAINERS[t][1]])}},
            },
            "then": {"properties": {k: {"type": "null"} for k in every if k not in keys}},
        }
        for t, keys in taken.items()
    ]
    return schema


def _targets_schema(target: str) -> Schema:
    return {"required": ["target"], "properties": {"target": {"const": target}}}


# The names of the targets' schemas, and the instance types they share, in ``$defs``.
JOB, REMOTE, FINE_TUNING = "EstimatorJob", "RemoteFunctionJob", "FineTuningJob"
TRAINING_TYPE = "TrainingInstanceType"


def spec_schema() -> Schema:
    """The JSON Schema (draft 2020-12) of a ``safe-estimators`` spec file.

    ``target`` picks the job's schema (``$defs``): a ``remote_function`` one (the SDK's
    ``@remote`` keywords), a ``fine_tuning`` one (a fine-tuning trainer's keywords), else an
    estimator or ModelTrainer job: the factories' keyword arguments, the typed options of
    ``JobSpec`` (with ``training_compiler`` and ``model_parallel`` described in full), every
    other keyword the chosen SageMaker estimator accepts (loosely typed: they go to the SDK
    unchanged), ModelTrainer's own words, plus ``estimator`` and ``inputs``. Other keys of an
    estimator job are allowed, as ``validate`` allows them: the SDK drops a keyword it does not
    take, so ``validate`` warns about one, and refuses only a close misspelling of an option
    (which JSON Schema cannot tell apart from any other name).
    """
    defs: Schema = {}
    job = _job_schema(defs)
    remote = _remote_schema(defs)
    defs.update({JOB: job, REMOTE: remote, FINE_TUNING: _fine_tuning_schema(defs)})
    targets = ["estimator", "model_trainer", "remote_function", "fine_tuning"]
    return {
        "$schema": DIALECT,
        "title": "safe-estimators job spec",
        "description": "A SageMaker training job for safe_estimators: an estimator or "
        "ModelTrainer job, a @remote function's job (target: remote_function), or a fine-tuning "
        "trainer's (target: fine_tuning).",
        "type": "object",
        "properties": {
            "target": {
                "enum": [*targets, None],
                "description": _DESCRIPTIONS["target"],
            }
        },
        "if": _targets_schema("remote_function"),
        "then": {"$ref": f"#/$defs/{REMOTE}"},
        "else": {
            "if": _targets_schema("fine_tuning"),
            "then": {"$ref": f"#/$defs/{FINE_TUNING}"},
            "else": {"$ref": f"#/$defs/{JOB}"},
        },
        "$defs": defs,
    }
