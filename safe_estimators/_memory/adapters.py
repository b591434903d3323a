"""How many parameters LoRA adapters train, counted from the model's shape as peft builds them.

peft puts two matrices beside each adapted linear layer of ``in_features`` x ``out_features``:
``lora_A = nn.Linear(in_features, r, bias=False)`` and ``lora_B = nn.Linear(r, out_features)``
(src/peft/tuners/lora/layer.py, ``LoraLayer.update_layer``): r x (in + out) parameters per
adapted matrix, in every layer. A name in ``target_modules`` adapts each module whose name is it
or ends with ``.<name>`` (``check_target_module_exists``, src/peft/tuners/tuners_utils.py);
``"all-linear"`` adapts every linear layer but the output layer (``_maybe_include_all_linear_
layers``); ``modules_to_save`` trains a full copy of those modules.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# (in, out) of each adapted matrix a module name reaches in one decoder layer: "h" the hidden
# size, "q" the query width (attention heads x head size: h unless head_dim says otherwise),
# "kv" the key/value width (key/value heads x head size: grouped-query attention), "qkv" a fused
# query-key-value output (q + 2 kv), "i" the MLP width, "v" the vocabulary (the output layer,
# once for the whole model). GPT-2's ``c_proj`` names both the attention output and
# the MLP's second matrix. Names not here (mixture-of-experts ``w1``, T5's ``q``, BERT's
# ``dense``, which names matrices of three shapes) are not counted: the estimate then says it
# counts every parameter as trainable.
MODULE_SHAPES: Mapping[str, tuple[tuple[str, str], ...]] = {
    "q_proj": (("h", "q"),), "query": (("h", "q"),),
    "k_proj": (("h", "kv"),), "key": (("h", "kv"),),
    "v_proj": (("h", "kv"),), "value": (("h", "kv"),),
    "o_proj": (("q", "h"),), "out_proj": (("q", "h"),),
    "query_key_value": (("h", "qkv"),), "c_attn": (("h", "qkv"),), "qkv_proj": (("h", "qkv"),),
    "gate_proj": (("h", "i"),), "up_proj": (("h", "i"),), "down_proj": (("i", "h"),),
    "fc1": (("h", "i"),), "fc2": (("i", "h"),), "c_fc": (("h", "i"),),
    "dense_h_to_4h": (("h", "i"),), "dense_4h_to_h": (("i", "h"),),
    "c_proj": (("h", "h"), ("i", "h")),
    "lm_head": (("h", "v"),),
}  # fmt: skip
# Modules of the whole model, not of each layer.
_ONCE = frozenset({"lm_head"})

# Names whose shape depends on the model type: in Falcon, BLOOM and GPT-NeoX ``dense`` is the
# attention output (their MLP matrices are ``dense_h_to_4h``/``dense_4h_to_h``, which
# ``.dense`` does not reach); in BERT it names three matrices, so elsewhere it is not counted.
MODEL_TYPE_SHAPES: Mapping[tuple[str, str], tuple[tuple[str, str], ...]] = {
    (model_type, "dense"): (("h", "h"),) for model_type in ("falcon", "bloom", "gpt_neox")
}

# What "all-linear" adapts in a decoder layer: the four attention matrices and the MLP's (three
# when it is gated). A fused query-key-value layer has fewer inputs; the separate ones are
# counted, the larger figure.
ALL_LINEAR = "all-linear"
_ALL_LINEAR_ATTENTION = ("q_proj", "k_proj", "v_proj", "o_proj")
_ALL_LINEAR_MLP = {True: ("gate_proj", "up_proj", "down_proj"), False: ("fc1", "fc2")}

# LoraConfig(target_modules=None): peft's table for the model type
# (TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING, src/peft/utils/constants.py).
DEFAULT_TARGETS: Mapping[str, tuple[str, ...]] = {
    **dict.fromkeys(
        ("llama", "mistral", "mixtral", "gemma", "gemma2", "gemma3_text", "qwen2", "qwen3",
         "opt", "gptj"),
        ("q_proj", "v_proj"),
    ),
    **dict.fromkeys(("bloom", "gpt_neox", "falcon"), ("query_key_value",)),
    "gpt2": ("c_attn",),
}  # fmt: skip

# modules_to_save entries trained whole: the embeddings and the output layer, vocab x hidden.
_EMBEDDINGS = frozenset({"lm_head", "embed_tokens", "wte", "word_embeddings", "embed_out"})


def lora_parameters(adapters: Any, shape: Any) -> tuple[int | None, str]:
    """The trainable parameters of ``adapters`` (``_script_checks.Adapters``) on a model of
    ``shape`` (a ``CompleteShape``), and how they were counted (with what was assumed where the
    shape does not say); ``(None, why)`` when the shape or a module name does not say."""
    model_type = shape.model_type
    h, layers = shape.hidden_size, shape.layers
    if h is None or layers is None:
        return None, "the model's layers and hidden_size are not known"
    targets = adapters.target_modules
    if targets is None:
        targets = DEFAULT_TARGETS.get(model_type or "")
        if targets is None:
            return None, (
                f"peft's default target modules for model type {model_type!r} are not known"
            )
    elif targets == ALL_LINEAR:
        # peft leaves the output layer out (_maybe_include_all_linear_layers: the model's
        # get_output_embeddings()), tied or not.
        targets = (*_ALL_LINEAR_ATTENTION, *_ALL_LINEAR_MLP[bool(shape.gated_mlp)])
    shapes = {
        name: MODEL_TYPE_SHAPES.get((model_type or "", name)) or MODULE_SHAPES.get(name)
        for name in targets
    }
    unknown = [name for name, shape_of in shapes.items() if shape_of is None]
    if unknown:
        return None, f"the shape of {', '.join(unknown)} is not known"
    heads = shape.attention_heads or 1
    head_dim = shape.head_dim or h // heads
    kv = (shape.kv_heads or heads) * head_dim
    q = heads * head_dim if shape.attention_heads else h
    widths = {"h": h, "q": q, "kv": kv, "qkv": q + 2 * kv, "i": shape.mlp_width,
              "v": shape.vocab_size}  # fmt: skip
    used = {w for matrices in shapes.values() for pair in matrices or () for w in pair}
    if "v" in used and shape.vocab_size is None:
        return None, "the vocabulary size (for lm_head) is not known"

    def total(names: list[str]) -> int:
        return sum(
            widths[into] + widths[out]  # type: ignore[operator]
            for name in names for into, out in shapes[name] or ()
        )  # fmt: skip

    per_layer = total([n for n in shapes if n not in _ONCE])
    count = adapters.r * (per_layer * layers + total([n for n in shapes if n in _ONCE]))
    assumed = []
    if used & {"kv", "qkv"} and shape.kv_heads is None:
        assumed.append(f"key/value projections {h} x {kv} (no key_value_heads given)")
    if "i" in used and shape.intermediate_size is None:
        assumed.append(f"the MLP {shape.mlp_width} wide, 4 x hidden (no intermediate_size given)")
    if adapters.target_modules == ALL_LINEAR and model_type is None:
        assumed.append("an MLP of two matrices (no model_type given)")
    saved = ""
    if adapters.modules_to_save:
        whole = [name for name in adapters.modules_to_save if name in _EMBEDDINGS]
        if len(whole) < len(adapters.modules_to_save) or shape.vocab_size is None:
            shown = ", ".join(adapters.modules_to_save)
            return None, f"the size of modules_to_save {shown} is not known"
        count += len(whole) * shape.vocab_size * h
        saved = f" + {', '.join(whole)} ({shape.vocab_size} x {h} each)"
    how = f"r x (in + out) per adapted matrix, {layers} layers{saved}"
    return count, how + (f"; assuming {', '.join(assumed)}" if assumed else "")
