"""What the training script does that decides its memory: sharding, CPU offload, activation
checkpointing, mixed precision and quantized loading, each with the line that shows it.

Read from the program, never run, and from the job's hyperparameters where the script takes a
value from its command line (argparse options, ``HfArgumentParser`` over ``TrainingArguments``).
The sources of each reading:

- FSDP (``torch.distributed.fsdp.FullyShardedDataParallel``): ``sharding_strategy`` defaults to
  FULL_SHARD (torch/distributed/fsdp/fully_sharded_data_parallel.py); HYBRID_SHARD shards within
  a node; SHARD_GRAD_OP shards gradients and optimizer states only. ``CPUOffload(offload_params=
  True)`` keeps parameters, gradients and optimizer states in CPU memory. With
  ``MixedPrecision(param_dtype=bfloat16)`` FSDP keeps fp32 shards (16 bytes per parameter with
  Adam, as mixed precision counts them) and computes in bf16.
- FSDP2 ``fully_shard``: public as ``torch.distributed.fsdp.fully_shard`` from PyTorch 2.6, under
  ``torch.distributed._composable.fsdp`` in 2.4-2.5; it reshards after forward by default
  (FULL_SHARD), ``reshard_after_forward=False`` keeps the parameters gathered (SHARD_GRAD_OP).
- Accelerate's ``FullyShardedDataParallelPlugin``: without ``sharding_strategy`` it reads
  ``FSDP_SHARDING_STRATEGY`` from the environment, else FULL_SHARD
  (src/accelerate/utils/dataclasses.py).
- DeepSpeed: ``zero_optimization.stage`` defaults to 0 (deepspeed/runtime/zero/config.py);
  stage 1 shards the optimizer states, 2 the gradients too, 3 the parameters too;
  ``offload_optimizer``/``offload_param`` with device cpu or nvme move them off the GPU.
- peft LoRA: ``LoraConfig(r=..., target_modules=..., modules_to_save=...)`` with
  ``get_peft_model`` (or ``model.add_adapter``, TRL's ``SFTTrainer(peft_config=...)``,
  ``prepare_model_for_kbit_training``) trains only the adapters; ``r`` defaults to 8 and
  ``target_modules`` to peft's per-model table (src/peft/tuners/lora/config.py,
  src/peft/utils/constants.py). The memory estimate counts them from the model's shape
  (``_memory.adapters``).
- ``torch.nn.DataParallel``, or the Hugging Face Trainer in one process with several GPUs
  (``Trainer._wrap_model`` wraps when ``args.n_gpu > 1``): GPU 0 holds the model states and
  gathers the replicas' outputs.
- Hugging Face ``TrainingArguments``: ``fsdp`` takes the words full_shard, shard_grad_op,
  hybrid_shard, hybrid_shard_zero2, no_shard, offload, auto_wrap (FSDPOption,
  src/transformers/trainer_utils.py); ``deepspeed`` a config file or dict;
  ``gradient_checkpointing``, ``bf16`` and ``fp16``.

A script that shards nowhere in sight (plain ``DistributedDataParallel``, or no wrapper at all)
does not shard, but only when the whole program is visible (the severity policy of the package):
an unknown library, an unread local module, a Trainer or Accelerate (either can shard through
a config file or the environment), or a value computed at run time leave it ``undecided``.
"""

from __future__ import annotations

import ast
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from safe_estimators._script_checks.libraries import NEUTRAL
from safe_estimators._script_checks.program import (
    _ACCELERATE_TRAINER_PACKAGES,
    _DATA_PARALLEL,
    _Program,
)
from safe_estimators._script_checks.summary import _Call, _dotted, _keyword, _Module, _short
from safe_estimators._script_checks.values import UNKNOWN, _Values

# How a script divides the model states: what is sharded, and over which ranks.
ALL, GRADIENTS, OPTIMIZER, NONE = "all", "gradients", "optimizer", "none"
WORLD, INSTANCE = "world", "instance"

# FSDP's ShardingStrategy members (and accelerate's 1-based integers, in that order).
_FSDP_STRATEGIES = {
    "FULL_SHARD": (ALL, WORLD),
    "SHARD_GRAD_OP": (GRADIENTS, WORLD),
    "NO_SHARD": (NONE, WORLD),
    "HYBRID_SHARD": (ALL, INSTANCE),
    "_HYBRID_SHARD_ZERO2": (GRADIENTS, INSTANCE),
    "HYBRID_SHARD_ZERO2": (GRADIENTS, INSTANCE),
}
_ACCELERATE_ORDER = ("FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD",
                     "HYBRID_SHARD_ZERO2")  # fmt: skip
# TrainingArguments(fsdp=...) words (FSDPOption).
_TRAINER_FSDP_WORDS = {
    "full_shard": (ALL, WORLD),
    "shard_grad_op": (GRADIENTS, WORLD),
    "hybrid_shard": (ALL, INSTANCE),
    "hybrid_shard_zero2": (GRADIENTS, INSTANCE),
    "no_shard": (NONE, WORLD),
}
_MIXED = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16"}
# Tensor and pipeline parallelism of PyTorch's own: they split the weights, which the
# data-parallel layout does not model.
_OTHER_PARALLELISM = (
    "torch.distributed.tensor", "torch.distributed._tensor", "torch.distributed.pipelining",
    "torch.distributed.pipeline",
)  # fmt: skip
_ZERO_STAGES = {0: NONE, 1: OPTIMIZER, 2: GRADIENTS, 3: ALL}
_FSDP_PREFIX = "torch.distributed.fsdp"
_FULLY_SHARD = frozenset({
    "torch.distributed.fsdp.fully_shard",
    "torch.distributed._composable.fsdp.fully_shard",
    "torch.distributed._composable.fsdp.fully_shard.fully_shard",
})  # fmt: skip
_DDP = frozenset({
    "torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed."
    "DistributedDataParallel", "torch.nn.DistributedDataParallel",
})  # fmt: skip
_CHECKPOINTING_TAILS = frozenset({
    "gradient_checkpointing_enable", "apply_activation_checkpointing", "checkpoint_wrapper",
})  # fmt: skip
# Calls that turn a model into one that trains adapters only (peft; transformers' PEFT
# integration ``model.add_adapter``); TRL's trainers take ``peft_config=`` and call
# get_peft_model themselves.
_ADAPTER_CALLS = frozenset({"get_peft_model", "prepare_model_for_kbit_training", "add_adapter"})
# LoraConfig's default rank (peft src/peft/tuners/lora/config.py: ``r: int = field(default=8)``).
_LORA_DEFAULT_RANK = 8
# The classes whose from_pretrained loads a model (not a tokenizer, processor or config).
_MODEL_CLASSES = ("Model", "LM", "ForCausalLM", "ForSeq2SeqLM", "ForConditionalGeneration",
                  "ForSequenceClassification", "ForTokenClassification", "ForQuestionAnswering")
_TRAINING_ARGUMENTS = ("TrainingArguments", "Seq2SeqTrainingArguments", "SFTConfig")
# The TrainingArguments fields HfArgumentParser fills from the command line.
_TRAINER_FIELDS = ("fsdp", "deepspeed", "gradient_checkpointing", "bf16", "fp16")
# Libraries whose part in sharding the readings above know; any other import may shard.
_KNOWN: Mapping[str, str] = {
    **NEUTRAL,
    "torch": "FSDP, fully_shard and DistributedDataParallel are read above",
    "transformers": "TrainingArguments(fsdp=..., deepspeed=...) read above",
    "accelerate": "FullyShardedDataParallelPlugin read above",
    "deepspeed": "deepspeed.initialize's config read above",
}


# Libraries outside ``_KNOWN`` whose part in sharding is known name by name: only these names
# (dotted prefixes) shard; a script that uses none of them shards nothing through the library.
# torch_xla: its FSDP (torch_xla/distributed/fsdp: XlaFullyShardedDataParallel), SPMD sharding
# (torch_xla.distributed.spmd, formerly torch_xla.experimental.xla_sharding: mark_sharding, and
# its SpmdFullyShardedDataParallel) and ZeroRedundancyOptimizer; xla_model (xla_device,
# optimizer_step, mark_step), the parallel loader and xmp.spawn place and step, never shard.
_SHARDING_NAMES: Mapping[str, tuple[str, ...]] = {
    "torch_xla": (
        "torch_xla.distributed.fsdp", "torch_xla.distributed.spmd",
        "torch_xla.experimental.xla_sharding", "torch_xla.experimental.spmd_fully_sharded",
        "torch_xla.distributed.zero_redundancy_optimizer",
    ),
}  # fmt: skip


@attrs.frozen
class ScriptFact:
    """One thing the script does, and where: ``value`` as the memory estimate reads it."""

    value: Any
    file: str
    line: int
    how: str

    def __str__(self) -> str:
        where = f"at {self.file}:{self.line}" if self.line else f"in {self.file}"
        return f"{self.how} {where}"


@attrs.frozen
class Adapters:
    """A LoRA configuration as peft reads it: the rank, the modules adapted (``None``: peft's
    default for the model type; ``"all-linear"``) and the modules trained whole beside them."""

    r: int
    target_modules: tuple[str, ...] | str | None
    modules_to_save: tuple[str, ...] = ()

    def __str__(self) -> str:
        targets = self.target_modules
        shown = "peft's default modules" if targets is None else (
            targets if isinstance(targets, str) else ", ".join(targets)
        )
        saved = self.modules_to_save
        whole = f", training {', '.join(saved)} whole" if saved else ""
        return f"LoRA r={self.r} on {shown}{whole}"


@attrs.frozen
class ScriptMemoryFacts:
    """What the script does that the memory estimate counts; None where it does not say.

    ``sharding`` holds ``(what, over)``: what is sharded (``"all"`` model states,
    ``"gradients"`` and optimizer states, ``"optimizer"`` states, ``"none"``) over which ranks
    (``"world"`` or each ``"instance"``'s GPUs). ``offload``: ``"optimizer"`` or
    ``"parameters"`` (with their gradients and optimizer states) in CPU memory.
    ``undecided``: why the sharding cannot be told from the script (empty when it can).
    ``over_counted``: what the script does that the estimate counts high (weights loaded in 16
    bits train without fp32 master weights: about 8 bytes per parameter with Adam, not 16).
    ``adapters``: only LoRA adapters train; its value is an ``Adapters``, or None when the
    script trains adapters with a configuration the checks cannot read. ``frozen_weights``:
    how the model the adapters train on is loaded, when not quantized and not in 16 bits:
    ``"fp32"`` (``torch_dtype=torch.float32``) or ``"default"`` (no dtype: float32 in
    transformers 4, the checkpoint's dtype from transformers 5). ``data_parallel``: one
    process replicates the model over its GPUs (``"DataParallel"``, or ``"Trainer"`` for the
    Hugging Face Trainer's own wrapping), so GPU 0 holds the most. ``master_weights``: the
    wrapper that keeps fp32 master copies of 16-bit weights (``"accelerate-fsdp"``: the
    Trainer's ``fsdp=`` or Accelerate's FSDP plugin with mixed precision on; ``"deepspeed"``:
    a DeepSpeed config with bf16 or fp16 enabled); the memory estimate's facts say why each does.
    ``loads_unquantized``: an adapter-training script whose every model load is in sight and
    asks for no quantization (no ``quantization_config``, ``load_in_4bit``/``8bit`` or ``**``
    arguments, no ``prepare_model_for_kbit_training``): its frozen weights are not quantized.
    """

    sharding: ScriptFact | None = None
    offload: ScriptFact | None = None
    checkpointing: ScriptFact | None = None
    precision: ScriptFact | None = None
    quantization: ScriptFact | None = None
    undecided: tuple[str, ...] = ()
    over_counted: tuple[str, ...] = ()
    adapters: ScriptFact | None = None
    data_parallel: ScriptFact | None = None
    frozen_weights: ScriptFact | None = None
    master_weights: ScriptFact | None = None
    loads_unquantized: ScriptFact | None = None


def memory_facts(
    program: _Program, hyperparameters: Mapping[str, object], base: Path | None
) -> ScriptMemoryFacts:
    """The facts of ``program`` run with ``hyperparameters`` (``base``: where its files are)."""
    reader = _Reader(program, _Values(program, hyperparameters), base)
    return reader.facts()


class _Reader:
    def __init__(self, program: _Program, values: _Values, base: Path | None) -> None:
        self.program = program
        self.values = values
        self.base = base if base is not None else (
            program.entry.path.parent if program.entry.path is not None else None
        )
        self.sharding: list[ScriptFact] = []
        self.offload: list[ScriptFact] = []
        self.checkpointing: list[ScriptFact] = []
        self.precision: list[ScriptFact] = []
        self.quantization: list[ScriptFact] = []
        self.undecided: list[str] = []
        self.over_counted: list[str] = []
        self.lora_configs: list[ScriptFact] = []
        self.adapter_uses: list[ScriptFact] = []
        self.model_loads: list[ScriptFact] = []
        self.master_weights: list[ScriptFact] = []
        # Model loads that ask for quantization, or may (``**`` arguments).
        self.quantizing_loads: list[ScriptFact] = []
        # Accelerate's FSDP plugin and Accelerator(mixed_precision=...): together, fp32 masters.
        self.accelerate_fsdp: list[ScriptFact] = []
        self.accelerate_mixed: list[ScriptFact] = []

    def facts(self) -> ScriptMemoryFacts:
        program = self.program
        for module, call in program.calls():
            self._read_call(module, call)
        self._read_argument_parser()
        sharding = self._one_sharding()
        if sharding is None and not self.undecided:
            if program.runs_other_programs:
                self.undecided.append("it runs another program, which the checks do not read")
            elif program.trainer_based or program.accelerate_prepared:
                self.undecided.append(
                    "the Trainer/Accelerate may shard through a config file or the environment"
                )
            else:
                hidden = self._may_shard_unseen()
                if hidden:
                    self.undecided.append(f"it imports {', '.join(hidden)}, which may shard")
                else:
                    sharding = self._no_sharding()
        return ScriptMemoryFacts(
            sharding=None if self.undecided else sharding,
            offload=self.offload[0] if self.offload and not self.undecided else None,
            checkpointing=_first(self.checkpointing),
            precision=_first(self.precision),
            quantization=_first(self.quantization),
            undecided=tuple(dict.fromkeys(self.undecided)),
            over_counted=tuple(dict.fromkeys(self.over_counted)),
            adapters=self._adapters(),
            data_parallel=self._data_parallel(),
            frozen_weights=self._frozen_weights(),
            master_weights=self._master_weights(),
            loads_unquantized=self._loads_unquantized(),
        )

    def _loads_unquantized(self) -> ScriptFact | None:
        if not self.adapter_uses or not self.model_loads or self.quantization or self.undecided:
            return None
        kbit = "`prepare_model_for_kbit_training"
        if any(fact.how.startswith(kbit) for fact in self.adapter_uses):
            return None
        if self.quantizing_loads:
            return None
        return self.model_loads[0]

    def _master_weights(self) -> ScriptFact | None:
        if self.accelerate_fsdp and self.accelerate_mixed:
            fsdp, mixed = self.accelerate_fsdp[0], self.accelerate_mixed[0]
            return attrs.evolve(fsdp, value="accelerate-fsdp", how=f"{fsdp.how} with {mixed.how}")
        return _first(self.master_weights)

    def _may_shard_unseen(self) -> list[str]:
        """What the program imports that may shard out of sight: a library the readings above
        do not know whose names the script uses (an import never used does nothing), or one
        whose sharding names (``_SHARDING_NAMES``) it uses; and local modules left unread."""
        program = self.program
        hidden = []
        for library in program.unseen(_KNOWN):
            if library not in program.libraries:
                hidden.append(library)  # the unread local modules
                continue
            used = _names_used(program, library)
            acting = _SHARDING_NAMES.get(library)
            if acting is not None:
                used = [n for n in used if n.startswith(acting)]
                if used:
                    hidden.append(f"{library} (`{used[0]}`)")
            elif used:
                hidden.append(library)
        return hidden

    def _frozen_weights(self) -> ScriptFact | None:
        """The dtype of the frozen weights, where every model load of an adapter-training
        script says the same and none is quantized or 16-bit."""
        if not self.adapter_uses or self.quantization or self.over_counted:
            return None
        kinds = {fact.value for fact in self.model_loads}
        return self.model_loads[0] if len(kinds) == 1 and None not in kinds else None

    def _adapters(self) -> ScriptFact | None:
        """The LoRA adapters the script trains: the configuration when exactly one readable
        ``LoraConfig`` is in sight, else a fact without one."""
        if not self.adapter_uses:
            return None
        use = self.adapter_uses[0]
        configs = {fact.value for fact in self.lora_configs}
        if len(configs) == 1 and None not in configs:
            config = self.lora_configs[0]
            how = f"{config.how} ({config.file}:{config.line}) with {use.how}"
            return attrs.evolve(use, value=config.value, how=how)
        return ScriptFact(None, use.file, use.line, use.how)

    def _data_parallel(self) -> ScriptFact | None:
        """Where one process replicates the model over its GPUs (``_Program.device_use``)."""
        use = self.program.device_use
        if use == "data_parallel":
            for module, call in self.program.calls():
                if call.name in _DATA_PARALLEL:
                    return self._fact(module, call, "DataParallel", f"`{_short(call)}`")
        elif use == "trainer":
            for module, call in self.program.calls():
                library = call.name.partition(".")[0]
                if library in _ACCELERATE_TRAINER_PACKAGES and call.tail.endswith("Trainer"):
                    return self._fact(
                        module, call, "Trainer",
                        f"`{_short(call)}` in one process (Trainer._wrap_model: DataParallel)",
                    )
        return None

    def _fact(self, module: _Module, call: _Call, value: Any, how: str) -> ScriptFact:
        return ScriptFact(value, module.file, call.line, how)

    def _add(
        self, facts: list[ScriptFact], module: _Module, call: _Call, value: Any, how: str
    ) -> None:
        facts.append(self._fact(module, call, value, how))

    def _runtime(self, module: _Module, call: _Call, what: str) -> None:
        self.undecided.append(f"{what} at {module.file}:{call.line} is decided at run time")

    def _one_sharding(self) -> ScriptFact | None:
        kinds = {fact.value for fact in self.sharding}
        if len(kinds) > 1:
            self.undecided.append(
                "the script shards in more than one way ("
                + "; ".join(str(f) for f in self.sharding) + "), chosen at run time"
            )
            return None
        return self.sharding[0] if self.sharding else None

    def _no_sharding(self) -> ScriptFact:
        for module, call in self.program.calls():
            if call.name in _DDP or call.tail == "DistributedDataParallel":
                return self._fact(module, call, (NONE, WORLD), "plain DistributedDataParallel")
        return ScriptFact((NONE, WORLD), self.program.entry.file, 0, "no sharding anywhere")

    def _read_call(self, module: _Module, call: _Call) -> None:
        name, tail, node = call.name, call.tail, call.node
        self._read_adapters(module, call)
        if tail == "FullyShardedDataParallel" and (
            name.startswith(_FSDP_PREFIX) or name == tail
        ):
            self._fsdp(module, call, _keyword(node, "sharding_strategy"), "FSDP")
            offload = _keyword(node, "cpu_offload")
            if isinstance(offload, ast.Call) and self.values.of(
                module, call, _keyword(offload, "offload_params", 0)
            ) is True:
                self.offload.append(self._fact(module, call, "parameters", "FSDP CPUOffload"))
            self._precision_policy(module, call, _keyword(node, "mixed_precision"), "param_dtype")
        elif tail == "FullyShardedDataParallelPlugin":
            strategy = _keyword(node, "sharding_strategy")
            self._fsdp(module, call, strategy, "Accelerate's FSDP plugin")
            self._add(self.accelerate_fsdp, module, call, True, "Accelerate's FSDP plugin")
        elif name in _FULLY_SHARD:
            self._fully_shard(module, call)
        elif tail == "initialize" and name.startswith("deepspeed"):
            self._deepspeed(module, call)
        elif tail in _TRAINING_ARGUMENTS:
            self._training_arguments(module, call)
        elif tail in _CHECKPOINTING_TAILS or name == "torch.utils.checkpoint.checkpoint":
            self.checkpointing.append(self._fact(module, call, True, f"`{_short(call)}`"))
        elif tail in ("BitsAndBytesConfig", "from_pretrained"):
            self._quantized(module, call)
            dtype = _keyword(node, "torch_dtype") or _keyword(node, "dtype")
            self._sixteen_bits(module, call, dtype)
            if tail == "from_pretrained" and call.receiver.endswith(_MODEL_CLASSES):
                self._model_load(module, call, dtype)
        elif tail in ("half", "bfloat16") and not node.args:
            self._sixteen_bits(module, call, None)
        elif tail == "to" and node.args:
            self._sixteen_bits(module, call, node.args[0])
        elif tail == "ZeroRedundancyOptimizer":
            self._add(self.sharding, module, call, (OPTIMIZER, WORLD), "ZeroRedundancyOptimizer")
        elif name.startswith(_OTHER_PARALLELISM):
            self.undecided.append(
                f"`{_short(call)}` at {module.file}:{call.line} splits the model in a way the "
                "estimate does not read (tensor or pipeline parallelism)"
            )
        elif tail == "autocast" and name.startswith("torch"):
            dtype = self.values.of(module, call, _keyword(node, "dtype"))
            mixed = _MIXED.get(str(dtype)) if dtype is not UNKNOWN else None
            if mixed:
                self.precision.append(self._fact(module, call, mixed, f"`{_short(call)}`"))
        elif tail == "Accelerator" and name.startswith("accelerate"):
            mixed = self.values.of(module, call, _keyword(node, "mixed_precision"))
            if mixed in ("bf16", "fp16"):
                self._add(self.precision, module, call, mixed, "Accelerator(mixed_precision)")
                self._add(
                    self.accelerate_mixed, module, call, mixed,
                    f"Accelerator(mixed_precision={mixed!r})",
                )

    def _read_adapters(self, module: _Module, call: _Call) -> None:
        tail, node = call.tail, call.node
        if tail == "LoraConfig":
            config = self._lora_config(module, call)
            how = f"`{_short(call)}`" if config is None else str(config)
            self._add(self.lora_configs, module, call, config, how)
        elif tail in _ADAPTER_CALLS or (
            tail.endswith("Trainer") and _keyword(node, "peft_config") is not None
        ):
            self._add(self.adapter_uses, module, call, True, f"`{_short(call)}`")

    def _lora_config(self, module: _Module, call: _Call) -> Adapters | None:
        """The configuration, or None where a value is decided at run time."""
        node = call.node
        if any(kw.arg is None for kw in node.keywords) or node.args:
            return None
        given = _keyword(node, "r")
        r = _LORA_DEFAULT_RANK if given is None else _whole(self.values.of(module, call, given))
        targets = self._names(module, call, _keyword(node, "target_modules"), lower=True)
        saved = self._names(module, call, _keyword(node, "modules_to_save"))
        if r is None or targets is UNKNOWN or saved is UNKNOWN or isinstance(saved, str):
            return None
        return Adapters(r, targets, saved or ())

    def _names(
        self, module: _Module, call: _Call, node: ast.expr | None, lower: bool = False
    ) -> Any:
        """Module names as peft takes them: a list, ``"all-linear"``, or None (the default);
        UNKNOWN for a regular expression or a value decided at run time."""
        if node is None:
            return None
        value = self.values.of(module, call, node)
        if value is None:
            return None
        if isinstance(value, str):
            return "all-linear" if lower and value.lower() == "all-linear" else UNKNOWN
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
        return UNKNOWN

    def _fsdp(self, module: _Module, call: _Call, strategy: ast.expr | None, what: str) -> None:
        value = "FULL_SHARD" if strategy is None else self.values.of(module, call, strategy)
        if isinstance(value, int) and 1 <= value <= len(_ACCELERATE_ORDER):
            value = _ACCELERATE_ORDER[value - 1]
        kind = _FSDP_STRATEGIES.get(str(value).upper()) if isinstance(value, str) else None
        if kind is None:
            self._runtime(module, call, f"{what}'s sharding_strategy")
            return
        self.sharding.append(self._fact(module, call, kind, f"{what} {str(value).upper()}"))

    def _fully_shard(self, module: _Module, call: _Call) -> None:
        node = call.node
        if _keyword(node, "mesh") is not None:
            self._runtime(module, call, "fully_shard's mesh")
            return
        reshard = self.values.of(module, call, _keyword(node, "reshard_after_forward"))
        if reshard is UNKNOWN and _keyword(node, "reshard_after_forward") is not None:
            self._runtime(module, call, "fully_shard's reshard_after_forward")
            return
        kind = (GRADIENTS, WORLD) if reshard is False else (ALL, WORLD)
        self.sharding.append(self._fact(module, call, kind, "FSDP2 fully_shard"))
        policy = _keyword(node, "offload_policy")
        if isinstance(policy, ast.Call) and policy.func is not None and "CPUOffload" in ast.unparse(
            policy.func
        ):
            self._add(self.offload, module, call, "parameters", "fully_shard CPUOffloadPolicy")
        self._precision_policy(module, call, _keyword(node, "mp_policy"), "param_dtype")

    def _precision_policy(
        self, module: _Module, call: _Call, policy: ast.expr | None, field: str
    ) -> None:
        if isinstance(policy, ast.Name):
            policy = module.latest_value(policy.id, call.scope, call.pos)
        if not isinstance(policy, ast.Call):
            return
        dtype = self.values.of(module, call, _keyword(policy, field))
        mixed = _MIXED.get(str(dtype))
        if mixed:
            self.precision.append(self._fact(module, call, mixed, f"mixed precision {dtype}"))

    def _deepspeed(self, module: _Module, call: _Call) -> None:
        node = call.node
        config = _keyword(node, "config") or _keyword(node, "config_params")
        if config is not None:
            value = self.values.of(module, call, config)
        else:
            value = self.values.option("deepspeed_config")
            if value is None:
                value = UNKNOWN
        self._deepspeed_config(module, call, value, "deepspeed.initialize")

    def _deepspeed_config(self, module: _Module, call: _Call, value: Any, what: str) -> None:
        if isinstance(value, str):
            loaded = self._json(value)
            if loaded is None:
                self.undecided.append(
                    f"{what} at {module.file}:{call.line} reads {value!r}, which is not a JSON "
                    "file in source_dir"
                )
                return
            what, value = f"{what} ({value})", loaded
        if not isinstance(value, dict):
            self._runtime(module, call, f"{what}'s config")
            return
        zero = value.get("zero_optimization", {})
        stage = zero.get("stage", 0) if isinstance(zero, dict) else UNKNOWN
        if stage not in _ZERO_STAGES or isinstance(stage, bool):
            self._runtime(module, call, f"{what}'s ZeRO stage")
            return
        self.sharding.append(
            self._fact(module, call, (_ZERO_STAGES[stage], WORLD), f"{what}: ZeRO stage {stage}")
        )
        for key, offloaded in (("offload_param", "parameters"), ("offload_optimizer", "optimizer")):
            target = zero.get(key) if isinstance(zero, dict) else None
            if isinstance(target, dict) and target.get("device") in ("cpu", "nvme"):
                self.offload.append(self._fact(module, call, offloaded, f"{what}: {key}"))
                break
        for mixed in ("bf16", "fp16"):
            section = value.get(mixed)
            if isinstance(section, dict) and section.get("enabled") is True:
                self.precision.append(self._fact(module, call, mixed, f"{what}: {mixed}"))
                self._add(self.master_weights, module, call, "deepspeed", f"{what}: {mixed}")

    def _json(self, name: str) -> dict[str, Any] | None:
        if self.base is None or os.path.isabs(name) or ".." in Path(name).parts:
            return None
        from safe_estimators._bounds import MAX_CONFIG_BYTES, read_contained, real_path

        # Bounded and contained: a link to /proc/self/fd/1 (the CI log's pipe), a FIFO or
        # /dev/zero hung the check or filled the memory, and a link out of source_dir is
        # what SageMaker would upload, never read here.
        try:
            raw = read_contained(self.base / name, MAX_CONFIG_BYTES, real_path(self.base))
            data = json.loads(raw.decode("utf-8"))
        except (OSError, ValueError, UnicodeDecodeError, RecursionError):
            return None
        return data if isinstance(data, dict) else None

    def _training_arguments(self, module: _Module, call: _Call) -> None:
        node = call.node
        if any(kw.arg is None for kw in node.keywords):
            fields = {f: self.values.hyperparameters.get(f) for f in _TRAINER_FIELDS}
            if not any(v is not None for v in fields.values()):
                self._runtime(module, call, f"`{_short(call)}` (its ** arguments)")
                return
            self._trainer_fields(module, call, fields, "hyperparameters")
            return
        fields = {
            f: (self.values.of(module, call, v) if (v := _keyword(node, f)) is not None else None)
            for f in _TRAINER_FIELDS
        }
        self._trainer_fields(module, call, fields, "TrainingArguments")

    def _read_argument_parser(self) -> None:
        # HfArgumentParser((..., TrainingArguments)).parse_args_into_dataclasses(): the fields
        # are the command line, i.e. the hyperparameters.
        parsers = self.program.find("HfArgumentParser")
        if not parsers:
            return
        module, call = parsers[0]
        if self.program.find(
            "parse_json_file", "parse_yaml_file", "parse_dict"
        ) and not self.program.find("parse_args_into_dataclasses"):
            self._runtime(module, call, "HfArgumentParser's arguments (a file)")
            return
        fields = {f: self.values.hyperparameters.get(f) for f in _TRAINER_FIELDS}
        self._trainer_fields(module, call, fields, "hyperparameters")

    def _trainer_fields(
        self, module: _Module, call: _Call, fields: Mapping[str, Any], source: str
    ) -> None:
        fsdp, deepspeed = fields.get("fsdp"), fields.get("deepspeed")
        if fsdp is UNKNOWN or deepspeed is UNKNOWN:
            self._runtime(module, call, "TrainingArguments' fsdp/deepspeed")
        elif fsdp:
            words = fsdp if isinstance(fsdp, list) else (
                ["full_shard"] if fsdp is True else str(fsdp).replace(",", " ").split()
            )
            kinds = [_TRAINER_FSDP_WORDS[w] for w in map(str, words) if w in _TRAINER_FSDP_WORDS]
            if kinds:
                self.sharding.append(self._fact(module, call, kinds[0], f"{source} fsdp={fsdp!r}"))
            if "offload" in map(str, words):
                self._add(self.offload, module, call, "parameters", f"{source} fsdp offload")
        elif deepspeed:
            self._deepspeed_config(module, call, deepspeed, f"{source} deepspeed")
        checkpointing = _truth(fields.get("gradient_checkpointing"))
        if checkpointing is not None:
            self.checkpointing.append(
                self._fact(module, call, checkpointing, f"{source} gradient_checkpointing")
            )
        for mixed in ("bf16", "fp16"):
            if _truth(fields.get(mixed)):
                self.precision.append(self._fact(module, call, mixed, f"{source} {mixed}"))
                if fsdp and fsdp is not UNKNOWN and deepspeed is not UNKNOWN:
                    # The Trainer prepares its FSDP model through Accelerate.
                    self._add(
                        self.master_weights, module, call, "accelerate-fsdp",
                        f"{source} fsdp={fsdp!r} with {mixed}",
                    )

    def _sixteen_bits(self, module: _Module, call: _Call, dtype: ast.expr | None) -> None:
        """Weights loaded (``from_pretrained(torch_dtype=...)``) or cast (``model.half()``,
        ``model.to(torch.bfloat16)``) to 16 bits: the optimizer may keep no fp32 copy."""
        if call.tail == "from_pretrained":
            if dtype is None or str(self.values.of(module, call, dtype)) not in _MIXED:
                return
        elif "model" not in call.receiver.lower() or (
            dtype is not None and str(self.values.of(module, call, dtype)) not in _MIXED
        ):
            return
        self.over_counted.append(
            f"the weights are 16-bit ({_short(call)} at {module.file}:{call.line}): trained "
            "without fp32 master weights they take about 8 bytes per parameter with Adam, not "
            "the 16 counted"
        )

    def _model_load(self, module: _Module, call: _Call, dtype: ast.expr | None) -> None:
        node = call.node
        if any(kw.arg is None for kw in node.keywords) or any(
            _keyword(node, name) is not None
            for name in ("quantization_config", "load_in_4bit", "load_in_8bit")
        ):
            self._add(self.quantizing_loads, module, call, True, f"`{_short(call)}`")
        if dtype is None:
            value: str | None = "default"
            how = f"`{_short(call)}` without torch_dtype"
        else:
            found = self.values.of(module, call, dtype)
            value = "fp32" if str(found) in ("float32", "float") else None
            how = f"`{_short(call)}` with torch_dtype {found}"
        self._add(self.model_loads, module, call, value, how)

    def _quantized(self, module: _Module, call: _Call) -> None:
        for flag, bits in (("load_in_4bit", "4bit"), ("load_in_8bit", "8bit")):
            if _truth(self.values.of(module, call, _keyword(call.node, flag))):
                self.quantization.append(self._fact(module, call, bits, f"{flag}=True"))


def _names_used(program: _Program, library: str) -> list[str]:
    """The dotted names of ``library`` the program's code uses (not its import lines):
    ``torch_xla.core.xla_model.xla_device`` for ``xm.xla_device()``."""
    found: list[str] = []
    prefix = library + "."
    for module in program.modules:
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Attribute | ast.Name) and not isinstance(
                getattr(node, "ctx", None), ast.Store
            ):
                dotted = _dotted(node, module.aliases)
                if dotted == library or dotted.startswith(prefix):
                    found.append(dotted)
    return found


def _whole(value: Any) -> int | None:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _first(facts: list[ScriptFact]) -> ScriptFact | None:
    return facts[0] if facts else None


def _truth(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


def iter_facts(facts: ScriptMemoryFacts) -> Iterator[tuple[str, ScriptFact]]:
    """The facts that were found, by name, for messages and notes."""
    for name in (
        "sharding", "offload", "checkpointing", "precision", "quantization", "adapters",
        "data_parallel", "frozen_weights", "master_weights", "loads_unquantized",
    ):  # fmt: skip
        fact = getattr(facts, name)
        if fact is not None:
            yield name, fact
