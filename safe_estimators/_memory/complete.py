"""Fill in a ``ModelShape``: from its Hugging Face ``config.json``, then the hyperparameters.

Explicit fields win; each value taken from elsewhere is noted, so the estimate can say what it
assumed. Never raises: a config file that cannot be read is a problem at ``model.config``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import attrs

from safe_estimators._bounds import (
    MAX_CONFIG_BYTES,
    MAX_MODEL_NUMBER,
    NotRegular,
    printable,
    quote,
    read_regular,
)
from safe_estimators._memory.adapters import lora_parameters
from safe_estimators._memory.facts import DEFAULT_MLP_RATIO
from safe_estimators._memory.shape import ModelShape
from safe_estimators._problems import Problem

# Hugging Face config.json keys for each architecture number, in the order they are tried
# (Llama/BERT style first, then GPT-2 and T5/BART spellings).
CONFIG_KEYS: dict[str, tuple[str, ...]] = {
    "layers": ("num_hidden_layers", "n_layer", "num_layers"),
    "hidden_size": ("hidden_size", "n_embd", "d_model"),
    "attention_heads": ("num_attention_heads", "n_head", "num_heads"),
    "vocab_size": ("vocab_size",),
    "intermediate_size": ("intermediate_size", "n_inner", "ffn_dim", "d_ff"),
}

# model_type values whose MLP has three matrices (gate, up, down: SwiGLU/GeGLU), per their
# Transformers modeling files; every other model is counted with the paper's two.
GATED_MLP_MODEL_TYPES = frozenset(
    {"llama", "mistral", "mixtral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text", "phi3",
     "olmo", "olmo2", "cohere", "granite", "starcoder2", "deepseek_v2", "internlm2"}
)  # fmt: skip

# Hyperparameter names that set the sequence length and the per-process batch, in the order
# they are tried (Hugging Face Trainer and example scripts, Megatron, DeepSpeed, nanoGPT).
SEQUENCE_HYPERPARAMETERS = (
    "max_seq_length", "max_seq_len", "seq_length", "seq_len", "sequence_length", "block_size",
    "max_length", "max_source_length", "context_length",
)  # fmt: skip
BATCH_HYPERPARAMETERS = (
    "per_device_train_batch_size", "micro_batch_size", "train_micro_batch_size_per_gpu",
    "per_gpu_train_batch_size", "train_batch_size", "batch_size",
)  # fmt: skip
CHECKPOINTING_HYPERPARAMETERS = ("gradient_checkpointing", "activation_checkpointing")


@attrs.frozen
class CountedHigh:
    """Something the script does that the estimate counts high, and which: ``"adapters"`` (only
    adapters train, their count unknown) or ``"frozen_dtype"`` (frozen weights counted in
    float32 that may load in 16 bits). The rule reads the most optimistic reading of each."""

    kind: str
    text: str

    def __str__(self) -> str:
        return self.text


@attrs.frozen
class CompleteShape:
    """A shape with every number the accounting reads: None where it stays unknown."""

    parameters: int | None
    layers: int | None
    hidden_size: int | None
    attention_heads: int | None
    vocab_size: int | None
    intermediate_size: int | None
    sequence_length: int | None
    micro_batch_size: int | None
    precision: str
    optimizer: str
    activation_checkpointing: bool
    fused_attention: bool
    gated_mlp: bool = False
    tied_embeddings: bool = True
    kv_heads: int | None = None
    head_dim: int | None = None
    model_type: str | None = None
    trainable_parameters: int | None = None
    quantization: str | None = None
    notes: tuple[str, ...] = ()
    # What the script does that this shape counts high (adapters it trains whose count is not
    # known: every parameter is counted as trainable), for the rule's verdict.
    counted_high: tuple[CountedHigh, ...] = ()
    # Bytes of each frozen weight when the script loads them unlike the training precision
    # (float32 under bf16/fp16 autocast: 4), None when they are counted at that precision.
    frozen_weight_bytes: int | None = None
    # False: the weights are 16-bit and no fp32 master copy is kept (the rule's optimistic
    # reading of a script that loads 16-bit weights): PURE_16_BIT_STATE_BYTES per parameter.
    master_weights: bool = True
    # True: how the frozen weights load is stated (a recipe's peft_type says LoRA or QLoRA), so
    # quantized loading is not something the checks cannot see.
    quantization_known: bool = False
    # False: the job cannot change how they load in the script's terms (a recipe's keys).
    quantization_fixable: bool = True

    @property
    def trainable(self) -> int:
        """The parameters with gradients and optimizer states: all, unless said otherwise."""
        assert self.parameters is not None
        return min(self.trainable_parameters or self.parameters, self.parameters)

    @property
    def trains_adapters(self) -> bool:
        """Only some parameters train (LoRA-style adapters); the rest are frozen weights."""
        return self.parameters is not None and self.trainable < self.parameters

    @property
    def embedding_parameters(self) -> int | None:
        """The input (and, untied, output) embeddings: bitsandbytes leaves them unquantized."""
        if self.vocab_size is None or self.hidden_size is None:
            return None
        return self.vocab_size * self.hidden_size * (1 if self.tied_embeddings else 2)

    @property
    def has_architecture(self) -> bool:
        """Enough is known for the activations."""
        return None not in (
            self.layers, self.hidden_size, self.attention_heads, self.sequence_length,
            self.micro_batch_size,
        )  # fmt: skip

    @property
    def mlp_width(self) -> int:
        assert self.hidden_size is not None
        return self.intermediate_size or DEFAULT_MLP_RATIO * self.hidden_size

    @property
    def layer_parameters(self) -> int | None:
        """Parameters of one transformer layer (attention, MLP, two norms), without biases."""
        h = self.hidden_size
        if h is None:
            return None
        kv = self.kv_heads or self.attention_heads
        head_dim = self.head_dim or (h // self.attention_heads if self.attention_heads else h)
        kv_width = kv * head_dim if kv else h
        q_width = self.attention_heads * head_dim if self.attention_heads else h
        attention = 2 * h * q_width + 2 * h * kv_width
        mlp = (3 if self.gated_mlp else 2) * h * self.mlp_width
        return attention + mlp + 2 * h


def _whole(value: object) -> int | None:
    """A positive whole number from a config or hyperparameter value ("4" counts; "²", which
    str.isdigit accepts, does not), at most MAX_MODEL_NUMBER (a larger one is not used)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip()
        if not (text.isascii() and text.isdigit() and len(text) <= 16):
            return None
        value = int(text)
    if isinstance(value, int):
        return value if 0 < value <= MAX_MODEL_NUMBER else None
    return None


def _truthy(value: object) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "1", "yes"):
        return True
    if isinstance(value, str) and value.strip().lower() in ("false", "0", "no"):
        return False
    return None


def read_config(path: str) -> tuple[dict[str, Any], list[Problem]]:
    """A Hugging Face config.json as a mapping, or a problem at ``model.config``."""
    where = "model.config"
    shown = quote(path, 200)
    try:
        data = json.loads(read_regular(path, MAX_CONFIG_BYTES).decode("utf-8"))
    except FileNotFoundError:
        return {}, [Problem(where, f"{shown} does not exist.", "check the path of config.json.")]
    except NotRegular as exc:
        return {}, [Problem(where, f"{shown} {exc}.", "point it at the model's config.json.")]
    except json.JSONDecodeError as exc:
        return {}, [
            Problem(
                where,
                f"{shown} is not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}.",
                "point it at the model's config.json as Hugging Face saves it.",
                at=(path, exc.lineno, exc.colno),
            )
        ]
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        return {}, [Problem(where, f"{shown} cannot be read: {reason}.", "check the file.")]
    except ValueError as exc:  # a number of over 4,300 digits (Python's int limit)
        detail = printable(str(exc))[:100]
        return {}, [
            Problem(
                where,
                f"{shown} holds a value Python cannot read: {detail}.",
                "point it at the model's config.json as Hugging Face saves it.",
            )
        ]
    except RecursionError:
        return {}, [Problem(where, f"{shown} is nested too deeply to read.", "check the file.")]
    if not isinstance(data, dict):
        return {}, [
            Problem(
                where,
                f"{shown} must hold a JSON object, got {type(data).__name__}.",
                "point it at the model's config.json as Hugging Face saves it.",
            )
        ]
    text_config = data.get("text_config")
    if isinstance(text_config, dict) and not any(k in data for k in CONFIG_KEYS["layers"]):
        data = {**data, **text_config}  # multimodal configs keep the language model here
    return data, []


def _from_config(config: Mapping[str, Any], field: str) -> int | None:
    for key in CONFIG_KEYS[field]:
        value = _whole(config.get(key))
        if value is not None:
            return value
    return None


def _from_hyperparameters(
    hyperparameters: Mapping[str, Any], names: tuple[str, ...]
) -> tuple[str, int] | None:
    for name in names:
        value = _whole(hyperparameters.get(name))
        if value is not None:
            return name, value
    return None


def complete_shape(
    shape: ModelShape,
    hyperparameters: Mapping[str, Any],
    *,
    mixed_precision: str | None = None,
    microbatches: int | None = None,
    script: Any = None,
) -> tuple[CompleteShape, list[Problem]]:
    """Fill in ``shape`` from its config file and the hyperparameters.

    ``mixed_precision`` is what the launcher's options say (SMP v1 ``fp16``/``bf16``), used when
    neither the shape nor the hyperparameters name a precision. ``microbatches``: the SMP v1
    pipeline splits each process's batch (the hyperparameter) into that many micro-batches.
    ``script``: what the training script does (``_script_checks.ScriptMemoryFacts``): its
    precision, activation checkpointing and quantized loading count where the shape says
    nothing, before the hyperparameters' names; where the shape says otherwise, the shape wins
    (it is what the user stated) and a note says so.
    """
    problems: list[Problem] = []
    notes: list[str] = []
    config: dict[str, Any] = {}
    if shape.config is not None:
        config, problems = read_config(shape.config)
    numbers: dict[str, int | None] = {}
    read: list[str] = []
    for field in CONFIG_KEYS:
        given = getattr(shape, field)
        found = _from_config(config, field) if given is None else None
        numbers[field] = given if given is not None else found
        if found is not None:
            read.append(f"{field} {found}")
    if read:
        notes.append(f"{', '.join(read)} from {shape.config}")
    sequence = shape.sequence_length
    hit = _from_hyperparameters(hyperparameters, SEQUENCE_HYPERPARAMETERS)
    if sequence is None and hit:
        notes.append(f"sequence_length {hit[1]} from hyperparameters.{hit[0]}")
        sequence = hit[1]
    batch = shape.micro_batch_size
    hit = _from_hyperparameters(hyperparameters, BATCH_HYPERPARAMETERS)
    if batch is None and hit:
        batch = -(-hit[1] // (microbatches or 1))
        split = f" / {microbatches} microbatches" if microbatches and microbatches > 1 else ""
        notes.append(f"micro_batch_size {batch} from hyperparameters.{hit[0]}{split}")
    precision = _scripted(shape, "precision", script, notes)
    if precision is None:
        for name in ("bf16", "fp16"):
            if _truthy(hyperparameters.get(name)):
                precision = name
                notes.append(f"precision {name} from hyperparameters.{name}")
                break
    if precision is None and mixed_precision is not None:
        precision = mixed_precision
        notes.append(f"precision {mixed_precision} from the model-parallel options")
    if precision is None:
        precision = "fp32"
        notes.append("precision fp32 (no bf16/fp16 given)")
    checkpointing = _scripted(shape, "activation_checkpointing", script, notes)
    if checkpointing is None:
        for name in CHECKPOINTING_HYPERPARAMETERS:
            flag = _truthy(hyperparameters.get(name))
            if flag is not None:
                checkpointing = flag
                notes.append(f"activation_checkpointing {flag} from hyperparameters.{name}")
                break
    model_type = shape.model_type or config.get("model_type")
    model_type = model_type if isinstance(model_type, str) else None
    tied = shape.tied_embeddings
    if tied is None:
        tied = _truthy(config.get("tie_word_embeddings")) is not False
    kv_heads = shape.key_value_heads
    if kv_heads is None and (kv_heads := _kv_heads(config)) is not None:
        notes.append(f"key_value_heads {kv_heads} from {shape.config}")
    head_dim = shape.head_dim
    if head_dim is None and (head_dim := _whole(config.get("head_dim"))) is not None:
        notes.append(f"head_dim {head_dim} from {shape.config}")
    complete = CompleteShape(
        parameters=shape.parameters,
        trainable_parameters=shape.trainable_parameters,
        quantization=_scripted(shape, "quantization", script, notes),
        sequence_length=sequence,
        micro_batch_size=batch,
        precision=precision,
        optimizer=shape.optimizer or "adamw",
        activation_checkpointing=bool(checkpointing),
        fused_attention=True if shape.fused_attention is None else shape.fused_attention,
        gated_mlp=model_type in GATED_MLP_MODEL_TYPES,
        tied_embeddings=tied,
        kv_heads=kv_heads,
        head_dim=head_dim,
        model_type=model_type,
        notes=tuple(notes),
        counted_high=(),
        frozen_weight_bytes=None,
        layers=numbers["layers"],
        hidden_size=numbers["hidden_size"],
        attention_heads=numbers["attention_heads"],
        vocab_size=numbers["vocab_size"],
        intermediate_size=numbers["intermediate_size"],
    )
    if complete.parameters is None:
        counted = architecture_parameters(complete)
        if counted is not None:
            complete = attrs.evolve(
                complete,
                parameters=counted,
                notes=(
                    *complete.notes,
                    f"parameters {counted:,} counted from the architecture"
                    + _assumed(complete, shape, config),
                ),
            )
    unquantized = getattr(script, "loads_unquantized", None) if script is not None else None
    if unquantized is not None and complete.quantization is None:
        complete = attrs.evolve(
            complete,
            quantization_known=True,
            notes=(*complete.notes, f"frozen weights not quantized: {unquantized} asks for none"),
        )
    return _with_frozen_weights(_with_adapters(complete, shape, script), script), problems


def _assumed(complete: CompleteShape, shape: ModelShape, config: Mapping[str, Any]) -> str:
    """What a count from the architecture assumed where neither the model section nor the
    config said (" (assuming ...)"), or ""."""
    assumed = []
    if complete.kv_heads is None:
        assumed.append("as many key/value heads as attention heads (give key_value_heads)")
    if complete.intermediate_size is None:
        assumed.append("an MLP 4 x hidden_size wide (give intermediate_size)")
    if complete.model_type is None:
        assumed.append("an MLP of two matrices (give model_type: a gated one has three)")
    if shape.tied_embeddings is None and "tie_word_embeddings" not in config:
        assumed.append("tied input and output embeddings (give tied_embeddings)")
    return f" (assuming {'; '.join(assumed)})" if assumed else ""


def _with_frozen_weights(complete: CompleteShape, script: Any) -> CompleteShape:
    """Frozen weights the script loads in float32 (``ScriptMemoryFacts.frozen_weights``) while
    mixed precision counts them at 2 bytes: under autocast they stay float32, 4 bytes each."""
    fact = getattr(script, "frozen_weights", None) if script is not None else None
    if (
        fact is None or not complete.trains_adapters or complete.quantization is not None
        or complete.precision == "fp32"
    ):  # fmt: skip
        return complete
    note = f"frozen weights counted in float32, 4 bytes each, from the script ({fact})"
    high: tuple[CountedHigh, ...] = ()
    if fact.value == "default":
        high = (
            CountedHigh(
                "frozen_dtype",
                f"the frozen weights are counted in float32 ({fact}), transformers 4's default; "
                "from transformers 5 they load in the checkpoint's dtype, often bfloat16",
            ),
        )
    return attrs.evolve(
        complete, frozen_weight_bytes=4, notes=(*complete.notes, note),
        counted_high=(*complete.counted_high, *high),
    )  # fmt: skip


def _with_adapters(complete: CompleteShape, shape: ModelShape, script: Any) -> CompleteShape:
    """The trainable count of the LoRA adapters the script trains (``ScriptMemoryFacts.
    adapters``), where ``model.trainable_parameters`` does not say; where it does, it wins."""
    fact = getattr(script, "adapters", None) if script is not None else None
    if fact is None or complete.parameters is None:
        return complete
    count, how = (None, "its configuration is not readable") if fact.value is None else (
        lora_parameters(fact.value, complete)
    )
    given = shape.trainable_parameters
    if given is not None:
        if count is not None and count != given:
            note = (
                f"model.trainable_parameters {given:,} wins over the script's {count:,} ({fact}): "
                "the model section is what was stated"
            )
            return attrs.evolve(complete, notes=(*complete.notes, note))
        return complete
    if count is None:
        high = CountedHigh(
            "adapters",
            f"only adapters train ({fact}), and their count is not known ({how}): every "
            "parameter is counted with gradients and optimizer states",
        )
        return attrs.evolve(complete, counted_high=(*complete.counted_high, high))
    note = f"trainable_parameters {count:,} from the script ({fact}: {how})"
    return attrs.evolve(complete, trainable_parameters=count, notes=(*complete.notes, note))


# ModelShape field -> the script fact that says it (``ScriptMemoryFacts``).
_SCRIPT_FACTS = {
    "precision": "precision",
    "activation_checkpointing": "checkpointing",
    "quantization": "quantization",
}


def _scripted(shape: ModelShape, field: str, script: Any, notes: list[str]) -> Any:
    """The shape's ``field``, else what the script says (noted with its line)."""
    given = getattr(shape, field)
    fact = getattr(script, _SCRIPT_FACTS[field], None) if script is not None else None
    if fact is None:
        return given
    if given is None:
        notes.append(f"{field} {fact.value} from the script ({fact})")
        return fact.value
    if given != fact.value:
        notes.append(
            f"model.{field} {given} wins over the script's {fact.value} ({fact}): the model "
            "section is what was stated"
        )
    return given


def _kv_heads(config: Mapping[str, Any]) -> int | None:
    """Key/value heads: ``num_key_value_heads``; for Falcon one shared head with ``multi_query``
    outside its new decoder architecture, else ``num_kv_heads`` (transformers
    models/falcon/modeling_falcon.py, FalconAttention)."""
    heads = _whole(config.get("num_key_value_heads"))
    if heads is not None:
        return heads
    if config.get("multi_query") is True and config.get("new_decoder_architecture") is not True:
        return 1
    return _whole(config.get("num_kv_heads"))


def architecture_parameters(shape: CompleteShape) -> int | None:
    """The parameter count of a decoder of this shape: layers, embeddings, final norm."""
    per_layer = shape.layer_parameters
    if per_layer is None or shape.layers is None:
        return None
    assert shape.hidden_size is not None
    embeddings = (shape.vocab_size or 0) * shape.hidden_size
    if not shape.tied_embeddings:
        embeddings *= 2
    return shape.layers * per_layer + embeddings + shape.hidden_size
