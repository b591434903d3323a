"""Will a GPU recipe fit? Its model section through the memory accounting of ``_memory``.

A recipe of the adapter describes the whole model (layers, hidden size, heads,
vocabulary, context width, micro-batch, checkpointing); its degrees map to SMP v2's as the
adapter maps them (``fsdp_strategy._setup_smp_config``: shard_degree -> hybrid_shard_degree,
tensor/expert/context degrees, offload_activations -> sm_activation_offloading). Where the model
section does not describe the whole model (a mixture of experts, whose experts it does not
count), no estimate is made: the estimate must never refuse a job that would run. LoRA adapters
count as trainable at their widest (every projection, the recipe's rank), QLoRA's frozen
weights at 4 bits. A job over its GPUs' memory is an error where it cannot fit whatever the
adapters' true count (the adapter keeps fp32 master weights under FSDP mixed precision, as
the memory rule counts them); a warning where it turns on that count.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from safe_estimators._context import Context
from safe_estimators._memory.shape import ModelShape
from safe_estimators._problems import Problem
from safe_estimators._recipes.load import Recipe

if TYPE_CHECKING:
    from safe_estimators._memory.accounting import MemoryEstimate

# The adapter's LoRA rank when a recipe gives none (config_schemas.py, BaseModelPeftConfig).
_LORA_RANK = 32
# The recipe's model keys -> ModelShape's.
_SHAPE_KEYS = {
    "num_hidden_layers": "layers",
    "hidden_size": "hidden_size",
    "num_attention_heads": "attention_heads",
    "vocab_size": "vocab_size",
    "intermediate_size": "intermediate_size",
    "max_context_width": "sequence_length",
    "train_batch_size": "micro_batch_size",
    "activation_checkpointing": "activation_checkpointing",
    "use_flash_attention": "fused_attention",
}
# The adapter's recipe key -> SMP v2 parameter (launcher-facts 1.3, fsdp_strategy.py).
_SMP_KEYS = {
    "shard_degree": "hybrid_shard_degree",
    "tensor_model_parallel_degree": "tensor_parallel_degree",
    "expert_model_parallel_degree": "expert_parallel_degree",
    "context_parallel_degree": "context_parallel_degree",
    "offload_activations": "sm_activation_offloading",
    "activation_loading_horizon": "activation_loading_horizon",
}


# Model types whose recipes describe a mixture of experts without counting it (DeepSeek V3 and
# R1 671B and gpt-oss say moe: false; their experts are not in the numbers).
_PARTIAL_MODEL_TYPES = ("deepseek_r1", "deepseek_v3", "gpt_oss")


def recipe_shape(model: Mapping[str, Any]) -> tuple[ModelShape | None, str]:
    """The model as the accounting counts it, or None and why not."""
    if model.get("moe") or model.get("num_local_experts") or model.get("num_experts_per_tok"):
        return None, "a mixture of experts, whose experts the model section does not count"
    if model.get("model_type") in _PARTIAL_MODEL_TYPES:
        return None, "the model section does not describe the whole model (its experts)"
    if model.get("multi_modal"):
        return None, "a multi-modal model, whose vision layers the model section does not count"
    fields: dict[str, Any] = {
        ours: model[key]
        for key, ours in _SHAPE_KEYS.items()
        if model.get(key) is not None and type(model[key]) is (bool if ours in (
            "activation_checkpointing", "fused_attention") else int)
    }  # fmt: skip
    if "layers" not in fields or "hidden_size" not in fields or "vocab_size" not in fields:
        return None, "the model section gives no layers, hidden_size and vocab_size"
    found = model.get("peft")
    peft: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    kind = peft.get("peft_type")
    if kind in ("lora", "qlora_4bit"):
        rank = peft.get("rank") if type(peft.get("rank")) is int else _LORA_RANK
        hidden = fields["hidden_size"]
        inner = fields.get("intermediate_size", 4 * hidden)
        # Every attention and MLP projection of every layer (the adapter's default targets,
        # counted at their widest): rank x (inputs + outputs) each.
        per_layer = rank * (4 * 2 * hidden + 3 * (hidden + inner))
        fields["trainable_parameters"] = fields["layers"] * per_layer
        if kind == "qlora_4bit":
            fields["quantization"] = "4bit"
    elif kind is not None:
        return None, f"a peft_type ({kind!r}) the estimate does not count"
    try:
        return ModelShape(precision="bf16", **fields), ""
    except Exception as exc:  # a value the accounting does not take
        return None, f"the model section is not one the estimate reads ({exc})"


def recipe_estimate(ctx: Context, recipe: Recipe) -> tuple[Any, MemoryEstimate | None]:
    """The accounting's job and its estimate per GPU (None, None where none is made)."""
    from safe_estimators._memory.rule import job_estimate

    if recipe.kind != "standard" or ctx.instance is None or not ctx.instance.gpu_count:
        return None, None
    model = recipe.data.get("model")
    if not isinstance(model, Mapping):
        return None, None
    shape, _ = recipe_shape(model)
    if shape is None:
        return None, None
    parameters = {ours: model[key] for key, ours in _SMP_KEYS.items() if key in model}
    distribution = {
        "torch_distributed": {"enabled": True},
        "smdistributed": {"modelparallel": {"enabled": True, "parameters": parameters}},
    }
    job, result, _ = job_estimate(
        shape,
        instance=ctx.instance,
        instance_count=ctx.instance_count,
        hyperparameters={},
        distribution=distribution,
        model_parallel=None,
        library=2,
    )
    return (job, result) if job is not None and result is not None else (None, None)


def recipe_memory(ctx: Context, recipe: Recipe) -> Iterator[Problem]:
    """The estimate's verdict on one GPU at ``recipe.model``: an error where the job cannot
    fit under any reading, else a warning."""
    from safe_estimators._memory.rule import memory_problems

    job, result = recipe_estimate(ctx, recipe)
    if job is None or result is None:
        return
    for problem in memory_problems(job, result):
        message, severity = problem.message, problem.severity
        if severity == "error" and job.shape.trains_adapters:
            # The adapters were counted at their widest: a certain verdict holds with none.
            fewer = attrs.evolve(job, shape=attrs.evolve(job.shape, trainable_parameters=1))
            if fewer.estimate().fits:
                severity = "warning"
                message = message.rstrip(".") + (
                    ", unless the LoRA adapters are fewer than counted (every attention and MLP "
                    "projection of every layer at the recipe's rank)."
                )
        yield Problem("recipe.model", message, _recipe_hint(problem.hint), severity)


def job_memory(ctx: Context, training_recipe: object) -> MemoryEstimate | None:
    """A recipe job's estimate for ``explain(est).memory`` (None where none is made)."""
    from safe_estimators._recipes.load import load_recipe

    recipe, _ = load_recipe(training_recipe, ctx.spec.extra.get("recipe_overrides"))
    return None if recipe is None else recipe_estimate(ctx, recipe)[1]


def _recipe_hint(hint: str) -> str:
    for key, ours in _SMP_KEYS.items():
        hint = hint.replace(f"model_parallel.{ours}", f"model.{key}").replace(ours, key)
    return hint
