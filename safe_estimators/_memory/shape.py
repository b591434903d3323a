"""``ModelShape``: what the memory estimate needs to know about the model and its training step.

Single values are checked here (attrs validators raise ``ConfigError`` at ``model.<field>``);
what is missing is filled in later from a Hugging Face ``config.json`` and the hyperparameters
(``config``), and the relations with the job's layout and instance are the rule's business.
"""

from __future__ import annotations

import math
import re
from typing import Any

import attrs

from safe_estimators._bounds import MAX_MODEL_NUMBER, quote
from safe_estimators._problems import ConfigError, Problem, did_you_mean

PRECISIONS: tuple[str, ...] = ("fp32", "fp16", "bf16")
OPTIMIZERS: tuple[str, ...] = ("adamw", "adam", "sgd")
QUANTIZATIONS: tuple[str, ...] = ("4bit", "8bit")

PATH = "model"

_SUFFIXES = {"k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}
# A written count ("7B", "6.7e9", "125m"). Both cases spelt out instead of re.I: the spec files'
# JSON Schema uses the same pattern, and JSON Schema patterns take no flags.
COUNT_PATTERN = r"^\s*([0-9][0-9_]*(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)\s*([kKmMbBgGtT]?)\s*$"
_COUNT = re.compile(COUNT_PATTERN)

# What a spec file may hold for a field, beyond its annotation (``_schema`` merges it in): the
# validators refuse counts below 1 and names outside the tables, and a parameter count may be
# written as a string. The schema cannot tell 7.0 from 7 (JSON has one number type), nor
# compare a string's value with 1 ("0.4" passes it; the loader refuses it).
SCHEMA_KEY = "json_schema"
_POSITIVE_SCHEMA = {SCHEMA_KEY: {"minimum": 1}}
_COUNT_SCHEMA = {
    SCHEMA_KEY: {"type": ["integer", "string", "null"], "minimum": 1, "pattern": COUNT_PATTERN}
}


def _problem(name: str, message: str, hint: str) -> ConfigError:
    return ConfigError([Problem(f"{PATH}.{name}", message, hint)])


def parameter_count(value: object) -> int | None:
    """A parameter count as people write it: ``6738415616``, ``6.7e9``, ``"7B"``, ``"125M"``.

    Returns None for a value that is not one (the validator then reports it).
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) and value.is_integer() else None
    if isinstance(value, str):
        match = _COUNT.match(value)
        if match:
            number = float(match.group(1).replace("_", "")) * _SUFFIXES.get(
                match.group(2).lower(), 1
            )
            return round(number) if math.isfinite(number) else None
    return None


def _convert_parameters(value: object) -> object:
    counted = parameter_count(value)
    return value if counted is None else counted


COUNT_FIELDS = ("parameters", "trainable_parameters")


def parameters_problem(value: object, name: str = "parameters") -> ConfigError:
    """The complaint about a value that is not a parameter count."""
    return _problem(
        name,
        f"must be the model's parameter count, got {type(value).__name__} {quote(value)}.",
        'write a whole number such as 6738415616, or a string such as "6.7B" or "125M".',
    )


def _check_parameters(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and (type(value) is not int or value < 1):
        raise parameters_problem(value, attribute.name)
    _plausible(attribute.name, value)


def _positive(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and (type(value) is not int or value < 1):
        raise _problem(
            attribute.name,
            f"must be a positive whole number, got {type(value).__name__} {quote(value)}.",
            f"write {attribute.name} as a whole number of 1 or more, without quotes.",
        )
    _plausible(attribute.name, value)


def _plausible(name: str, value: object) -> None:
    if type(value) is int and value > MAX_MODEL_NUMBER:
        raise _problem(
            name,
            f"is {quote(value)}, more than any model has ({MAX_MODEL_NUMBER:.0e} at most).",
            f"write the model's real {name}.",
        )


def _choice(choices: tuple[str, ...]) -> Any:
    def check(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if value is not None and value not in choices:
            hint = did_you_mean(value, choices) if isinstance(value, str) else ""
            raise _problem(
                attribute.name,
                f"must be one of {', '.join(choices)}, got {value!r}.",
                hint or f"write one of {', '.join(choices)}.",
            )

    return check


def _flag(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and type(value) is not bool:
        raise _problem(
            attribute.name,
            f"must be true or false, got {type(value).__name__} {value!r}.",
            "write true or false without quotes.",
        )


def _path(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise _problem(
            "config",
            f"must be the path of a local Hugging Face config.json, got {value!r}.",
            'write config: "path/to/config.json" (relative to the spec file).',
        )


def _name(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise _problem(
            attribute.name,
            f"must be a model type name, got {type(value).__name__} {quote(value)}.",
            "write the model_type of the model's config.json, e.g. llama, mistral or qwen2.",
        )


def _count() -> Any:
    return attrs.field(default=None, validator=_positive, metadata=_POSITIVE_SCHEMA)


@attrs.frozen(kw_only=True)
class ModelShape:
    """The model and training step whose memory safe_estimators estimates before launch.

    Pass it as ``model=`` to a factory (or a ``model:`` mapping with the same keys in a spec
    file). Every field is optional; what is missing is read from ``config`` or the
    hyperparameters, and what stays unknown is left out of the estimate.

    - ``parameters``: total parameter count (``6738415616``, ``6.7e9`` or ``"6.7B"``). Enough
      on its own for the model states (weights, gradients, optimizer states).
    - ``trainable_parameters``: the parameters that get gradients and optimizer states, when
      most are frozen (LoRA adapters: a few million); defaults to all.
    - ``quantization``: ``"4bit"`` or ``"8bit"`` when the script loads the frozen weights
      quantized (bitsandbytes through Transformers' ``BitsAndBytesConfig(load_in_4bit=True)``
      or ``load_in_8bit``, as QLoRA does); the frozen linear-layer weights are then counted at
      that size. Without it they are counted at the training precision, and a PEFT job that
      fits only quantized is a warning, not an error.
    - ``layers``, ``hidden_size``, ``attention_heads``, ``vocab_size``, ``intermediate_size``:
      the transformer's architecture, for the activations (and for ``parameters`` when it is
      not given). ``intermediate_size`` defaults to 4 x ``hidden_size``.
    - ``key_value_heads`` (config.json ``num_key_value_heads``: grouped-query attention),
      ``head_dim``, ``model_type`` (``llama``, ``mistral``, ``qwen2``: says whether the MLP is
      gated, three matrices, and peft's default LoRA targets) and ``tied_embeddings``
      (``tie_word_embeddings``): what a LoRA count and the parameter count need; a count made
      without them says what it assumed (key/value heads as many as the attention heads, an
      MLP of two matrices, tied embeddings).
    - ``sequence_length`` and ``micro_batch_size`` (samples per forward pass of one process):
      default to the hyperparameters ``max_seq_length``, ``block_size``, ...,
      ``per_device_train_batch_size``, ``train_batch_size``, ...
    - ``precision``: ``"bf16"`` or ``"fp16"`` (mixed precision) or ``"fp32"``; defaults to the
      ``bf16``/``fp16`` hyperparameters or model-parallel options, else fp32.
    - ``optimizer``: ``"adamw"`` (default), ``"adam"`` or ``"sgd"`` (with momentum).
    - ``activation_checkpointing``: defaults to the ``gradient_checkpointing`` hyperparameter.
    - ``fused_attention``: the attention kernel keeps no sequence x sequence scores
      (FlashAttention, PyTorch's scaled_dot_product_attention, which Hugging Face Transformers
      picks by default); default True. Set False for eager attention.
    - ``config``: a local Hugging Face ``config.json`` to read the architecture from.
    """

    parameters: int | None = attrs.field(
        default=None,
        converter=_convert_parameters,
        validator=_check_parameters,
        metadata=_COUNT_SCHEMA,
    )
    trainable_parameters: int | None = attrs.field(
        default=None,
        converter=_convert_parameters,
        validator=_check_parameters,
        metadata=_COUNT_SCHEMA,
    )
    layers: int | None = _count()
    hidden_size: int | None = _count()
    attention_heads: int | None = _count()
    vocab_size: int | None = _count()
    intermediate_size: int | None = _count()
    key_value_heads: int | None = _count()
    head_dim: int | None = _count()
    model_type: str | None = attrs.field(
        default=None, validator=_name, metadata={SCHEMA_KEY: {"minLength": 1}}
    )
    tied_embeddings: bool | None = attrs.field(default=None, validator=_flag)
    sequence_length: int | None = _count()
    micro_batch_size: int | None = _count()
    # Typed str, not Literal: the validator's message (with did-you-mean) is the better one.
    precision: str | None = attrs.field(
        default=None,
        validator=_choice(PRECISIONS),
        metadata={SCHEMA_KEY: {"enum": [*PRECISIONS, None]}},
    )
    optimizer: str | None = attrs.field(
        default=None,
        validator=_choice(OPTIMIZERS),
        metadata={SCHEMA_KEY: {"enum": [*OPTIMIZERS, None]}},
    )
    quantization: str | None = attrs.field(
        default=None,
        validator=_choice(QUANTIZATIONS),
        metadata={SCHEMA_KEY: {"enum": [*QUANTIZATIONS, None]}},
    )
    activation_checkpointing: bool | None = attrs.field(default=None, validator=_flag)
    fused_attention: bool | None = attrs.field(default=None, validator=_flag)
    config: str | None = attrs.field(
        default=None, validator=_path, metadata={SCHEMA_KEY: {"minLength": 1}}
    )


FIELDS: tuple[str, ...] = tuple(a.name for a in attrs.fields(ModelShape))
