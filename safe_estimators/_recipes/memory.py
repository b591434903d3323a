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

import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from safe_estimators._context import Context
from safe_estimators._memory.shape import ModelShape
from safe_estimators._problems import Problem, own_hint, problem_source
from safe_estimators._recipes import facts
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
    "num_key_value_heads": "key_value_heads",
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
        heads, kv_heads = fields.get("attention_heads"), fields.get("key_value_heads")
        # k and v: key/value heads x head size where the recipe gives them (grouped-query),
        # else hidden wide.
        kv = kv_heads * (hidden // heads) if heads and kv_heads else hidden
        # Every attention and MLP projection of every layer (the adapter's default targets,
        # counted at their widest): rank x (inputs + outputs) each.
        per_layer = rank * (2 * 2 * hidden + 2 * (hidden + kv) + 3 * (hidden + inner))
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

    if ctx.instance is None or not ctx.instance.gpu_count:
        return None, None
    if recipe.kind == "llmft":
        return fine_tuning_estimate(ctx, recipe)
    if recipe.kind != "standard":
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
    if job is None or result is None:
        return None, None
    # The recipe's peft_type says how the frozen weights load (lora, qlora_4bit).
    known = attrs.evolve(job.shape, quantization_known=True, quantization_fixable=False)
    return attrs.evolve(job, shape=known), result


# FSDP sharding strategies of a fine-tuning recipe's fsdp_config: what they shard over.
_FSDP_SPAN = {"FULL_SHARD": "world", "HYBRID_SHARD": "instance", "SHARD_GRAD_OP": "world",
              "_HYBRID_SHARD_ZERO2": "instance", "HYBRID_SHARD_ZERO2": "instance"}  # fmt: skip


def _get(data: Any, dotted: str) -> Any:
    for key in dotted.split("."):
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


def fine_tuning_estimate(ctx: Context, recipe: Recipe) -> tuple[Any, MemoryEstimate | None]:
    """An LLM fine-tuning (llmft) or verl recipe's estimate per GPU: its base model (by name,
    ``facts.FINE_TUNING_MODELS``) in bf16 under the recipe's FSDP sharding, its LoRA adapters
    as peft builds them, its sequence and micro-batch. None where the model or the sharding is
    not one the estimate knows.

    A full fine-tune is counted at mixed precision's 16 bytes per parameter, with the reading
    that the image trains the bf16 weights without fp32 master copies (8 bytes); a recipe that
    names no adapters and no full fine-tune is counted with its frozen weights only."""
    from types import SimpleNamespace

    from safe_estimators._memory.adapters import lora_parameters
    from safe_estimators._memory.complete import complete_shape
    from safe_estimators._memory.fixes import Job
    from safe_estimators._memory.layout import MemoryLayout

    config = recipe.data.get("training_config")
    verl = _get(recipe.data, "run.model_type") == "verl"
    if verl:
        model = _get(config, "actor_rollout_ref.model")
        name = _get(model, "path")
        rank, targets = _get(model, "lora_rank"), _get(model, "target_modules")
        fsdp = _get(config, "actor_rollout_ref.actor.fsdp_config")
        span = "world" if _get(fsdp, "fsdp_size") in (-1, None) else None
        offload = "parameters" if _get(fsdp, "param_offload") is True else (
            "optimizer" if _get(fsdp, "optimizer_offload") is True else None
        )
        sequence, batch, checkpointing = None, None, _get(model, "enable_gradient_checkpointing")
        lora = type(rank) is int and rank > 0
        full = type(rank) is int and rank == 0
    else:
        model = _get(config, "model_config")
        name = _get(model, "model_name_or_path")
        peft = _get(model, "peft_config")
        rank, targets = _get(peft, "r"), _get(peft, "target_modules")
        arguments = _get(config, "training_args")
        fsdp = _get(arguments, "strategy.fsdp_config")
        span = _FSDP_SPAN.get(str(_get(fsdp, "sharding_strategy")))
        offload = "parameters" if _get(fsdp, "cpu_offload") is True else None
        sequence = _get(arguments, "max_len")
        batch = _get(arguments, "micro_train_batch_size")
        checkpointing = _get(arguments, "gradient_checkpointing")
        lora = _get(peft, "peft_type") == "lora" and type(rank) is int
        full = isinstance(model, Mapping) and "peft_config" in model and peft is None
    architecture = facts.fine_tuning_model(name)
    if architecture is None or span is None or not isinstance(fsdp, Mapping):
        return None, None
    fields = dict(architecture)
    if type(sequence) is int and sequence > 0 and type(batch) is int and batch > 0:
        fields.update(sequence_length=sequence, micro_batch_size=batch)
    shape = ModelShape(
        precision="bf16", activation_checkpointing=checkpointing is True, **fields
    )
    complete, _ = complete_shape(shape, {})
    assert ctx.instance is not None and complete.parameters is not None
    # peft_type says how the frozen weights load, in the recipe's own keys.
    complete = attrs.evolve(complete, quantization_known=True, quantization_fixable=False)
    if lora:
        targets = tuple(targets) if isinstance(targets, list) else targets
        adapters = SimpleNamespace(r=rank, target_modules=targets, modules_to_save=())
        count, _ = lora_parameters(adapters, complete)
        if count is None:
            return None, None
        complete = attrs.evolve(complete, trainable_parameters=count)
    elif not full:
        complete = attrs.evolve(complete, trainable_parameters=1)  # the frozen weights only
    gpus = ctx.instance.gpu_count
    world = gpus * ctx.instance_count
    over = () if not full else (
        "a full fine-tune is counted with fp32 master weights; the image may train the bf16 "
        "weights without them (8 bytes per parameter)",
    )
    layout = MemoryLayout(
        world_size=world, gpus_per_instance=gpus, shard=world if span == "world" else gpus,
        offload=offload, launcher="FSDP (the recipe's fsdp_config)", over_counted=over,
    )  # fmt: skip
    job = Job(complete, layout, ctx.instance, ctx.instance_count)
    return job, job.estimate()


@problem_source("recipe-memory")
def recipe_memory(ctx: Context, recipe: Recipe) -> Iterator[Problem]:
    """The estimate's verdict on one GPU at ``recipe.model``: an error where the job cannot
    fit under any reading, else a warning."""
    from safe_estimators._memory.rule import memory_problems

    job, result = recipe_estimate(ctx, recipe)
    if job is None or result is None:
        return
    for problem in memory_problems(job, result):
        message, severity = problem.message, problem.severity
        if severity == "error" and job.shape.trains_adapters and recipe.kind == "standard":
            # The adapters were counted at their widest: a certain verdict holds with none.
            fewer = attrs.evolve(job, shape=attrs.evolve(job.shape, trainable_parameters=1))
            if fewer.estimate().fits:
                severity = "warning"
                message = message.rstrip(".") + (
                    ", unless the LoRA adapters are fewer than counted (every attention and MLP "
                    "projection of every layer at the recipe's rank)."
                )
        own, fixes = own_hint(problem), problem.fixes  # the fixes are checked as the job's
        if recipe.kind == "llmft":
            yield Problem("recipe.training_config", message, _fsdp_hint(own), severity, fixes=fixes)
        else:
            yield Problem("recipe.model", message, _recipe_hint(own), severity, fixes=fixes)


def job_memory(ctx: Context, training_recipe: object) -> MemoryEstimate | None:
    """A recipe job's estimate for ``explain(est).memory`` (None where none is made)."""
    from safe_estimators._recipes.load import load_recipe

    recipe, _ = load_recipe(training_recipe, ctx.spec.extra.get("recipe_overrides"))
    return None if recipe is None else recipe_estimate(ctx, recipe)[1]


def _fsdp_hint(hint: str) -> str:
    """The memory fixes in a fine-tuning recipe's own keys."""
    return re.sub(
        r"shard the model states over (\d+) GPUs \([^)]*\)",
        r"shard over all \1 GPUs (fsdp_config.sharding_strategy: FULL_SHARD)",
        hint,
    )


def _recipe_hint(hint: str) -> str:
    for key, ours in _SMP_KEYS.items():
        hint = hint.replace(f"model_parallel.{ours}", f"model.{key}").replace(ours, key)
    return hint
