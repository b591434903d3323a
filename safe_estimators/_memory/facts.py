"""The numbers the memory estimate rests on, each with its source.

Bytes per parameter follow the ZeRO paper's accounting (Rajbhandari et al. 2020, "ZeRO: Memory
Optimizations Toward Training Trillion Parameter Models", arXiv:1910.02054, section 3.1 and
Figure 1); activations follow Korthikanti et al. 2022, "Reducing Activation Recomputation in
Large Transformer Models" (arXiv:2205.05198, section 4 and Table 2), in ``accounting``.
"""

from __future__ import annotations

import attrs


@attrs.frozen
class StateBytes:
    """Bytes per parameter of the three model states, before any division."""

    weights: int
    gradients: int
    optimizer: int


# (precision, optimizer) -> bytes per parameter.
# - Mixed precision Adam: fp16/bf16 weights (2) and gradients (2), plus K = 12 bytes of optimizer
#   state: the fp32 master weights, momentum and variance (ZeRO section 3.1: "2Ψ + 2Ψ + KΨ",
#   K = 12; 7.5B parameters -> 120 GB). AdamW keeps the same two moments (decoupled decay adds
#   no state).
# - fp32 Adam: weights 4 + gradients 4 + momentum and variance 8 = 16, which is accelerate's
#   "4 x the fp32 model size" for Adam training (accelerate estimate-memory,
#   `estimate_training_usage`; DeepSpeed docs `memory.rst` count the same 4 + 4 + 8).
# - SGD: counted with momentum (one fp32 buffer, 4 bytes), since LLM fine-tuning with SGD almost
#   always sets it; in mixed precision the fp32 master copy (4) is kept as with Adam. PyTorch's
#   SGD without momentum keeps no state, so this over-counts that case by 4 bytes/param.
STATE_BYTES: dict[tuple[str, str], StateBytes] = {
    ("bf16", "adamw"): StateBytes(2, 2, 12),
    ("bf16", "adam"): StateBytes(2, 2, 12),
    ("fp16", "adamw"): StateBytes(2, 2, 12),
    ("fp16", "adam"): StateBytes(2, 2, 12),
    ("fp32", "adamw"): StateBytes(4, 4, 8),
    ("fp32", "adam"): StateBytes(4, 4, 8),
    ("bf16", "sgd"): StateBytes(2, 2, 8),
    ("fp16", "sgd"): StateBytes(2, 2, 8),
    ("fp32", "sgd"): StateBytes(4, 4, 4),
}

# Weights loaded in 16 bits (``torch_dtype=torch.bfloat16``, ``model.half()``) and trained with
# no fp32 copy: PyTorch's Adam and AdamW create ``exp_avg`` and ``exp_avg_sq`` with
# ``torch.zeros_like(p)`` and SGD its ``momentum_buffer`` from the gradient (torch/optim/adam.py,
# adamw.py, sgd.py ``_init_group``), all in the parameter's dtype: 2 + 2 + 2 x 2 = 8 bytes per
# parameter with Adam, accelerate's "2 x the fp32 model size" for 16-bit Adam training
# (estimate_training_usage). The optimistic reading of a job whose script loads 16-bit weights
# and keeps no fp32 master copy that the checks can see.
PURE_16_BIT_STATE_BYTES: dict[str, StateBytes] = {
    "adamw": StateBytes(2, 2, 4),
    "adam": StateBytes(2, 2, 4),
    "sgd": StateBytes(2, 2, 2),
}

# Wrappers that keep fp32 master weights of a model loaded in 16 bits, so mixed precision's 16
# bytes per parameter hold whatever dtype the script loads (``ScriptMemoryFacts.master_weights``
# names the one a script uses):
# - accelerate's FSDP (and the Hugging Face Trainer's ``fsdp=``, which prepares the model
#   through Accelerate): with mixed precision on, ``Accelerator._prepare_fsdp`` casts every
#   trainable FSDP flat parameter that is not float32 to float32 (accelerate/accelerator.py,
#   "Upcasted low precision parameters in ... because mixed precision turned on in FSDP"),
#   following DeepSpeed's ZeRO-3, so weights, gradients and Adam's moments are fp32 shards.
# - DeepSpeed with ``bf16`` or ``fp16`` enabled: its 16-bit optimizers hold an fp32 copy of the
#   parameters beside the 16-bit ones (the ZeRO paper's mixed-precision Adam, section 3.1:
#   2 + 2 + K with K = 12 counting the fp32 master weights; DeepSpeed's ZeRO stage 3 builds
#   them in ``_create_fp32_partitions``).
FP32_MASTER_WEIGHTS: dict[str, str] = {
    "accelerate-fsdp": "accelerate keeps the trainable FSDP parameters in float32 under mixed "
    "precision (accelerate/accelerator.py, Accelerator._prepare_fsdp: \"Upcasted low precision "
    "parameters ... because mixed precision turned on in FSDP\")",
    "deepspeed": "DeepSpeed's bf16/fp16 optimizer keeps fp32 master weights (ZeRO paper, "
    "section 3.1: 2 + 2 + 12 bytes per parameter)",
}

# Bytes per frozen weight that bitsandbytes stores quantized (Transformers' BitsAndBytesConfig),
# constants included:
# - 4bit (NF4 or FP4): 4 bits per value plus one fp32 absmax constant per block of 64 values,
#   32 / 64 = 0.5 bits (Dettmers et al. 2023, "QLoRA", arXiv:2305.14314, section 3, "Double
#   Quantization"). Double quantization lowers the constants to 0.127 bits, but it is off by
#   default (bnb_4bit_use_double_quant=False), so the larger figure is counted: 4.5 bits.
# - 8bit (LLM.int8(), Dettmers et al. 2022, arXiv:2208.07339): one int8 value per weight plus
#   one fp32 scale per row, under 0.1% more for the hidden sizes that need it.
# Only linear layers are replaced; embeddings and norms keep the training precision.
QUANTIZED_WEIGHT_BYTES = {"4bit": 4.5 / 8, "8bit": 1.0}

# A quantized linear layer is dequantized to 16 bits for each matmul, one weight matrix at a
# time (bitsandbytes' matmul_4bit / MatMul8bitLt): the largest one, held transiently.
DEQUANTIZED_BYTES_PER_WEIGHT = 2

# Bytes of one stored activation value: Korthikanti et al. count 16-bit activations (section
# 4.1); fp32 training stores twice as much.
ACTIVATION_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}

# The CUDA context of a PyTorch process with every kernel of its libraries loaded: 666,632,192
# bytes measured with eager module loading (PyTorch PR #86509, which made lazy loading the
# default from 1.13: 287,047,680 bytes before any kernel runs). A training step ends up loading
# most kernels (cuBLAS, cuDNN, NCCL, attention), so the eager figure is the one to plan with.
CUDA_CONTEXT_BYTES = 666_632_192

# Fully sharded data parallelism (ZeRO-3, FSDP FULL_SHARD, SMP sharding) gathers one layer's
# 16-bit weights and, in the backward pass, its 16-bit gradients at a time: 4 bytes per
# parameter of the largest layer (DeepSpeed's `estimate_zero3_model_states_mem_needs` counts
# 4 x largest_layer_params on the GPU, deepspeed/runtime/zero/stage3.py).
GATHERED_LAYER_BYTES_PER_PARAMETER = 4

# The caching allocator's fragmentation depends on the allocation pattern, not on the model's
# shape (PyTorch's CUDA-semantics docs on `expandable_segments`), so it is not guessed into the
# estimate: an estimate above this share of the device memory is a warning instead.
WARNING_FRACTION = 0.90

# Layers per transformer block are counted as in the paper: an MLP of two matrices whose width
# defaults to 4 x hidden (section 4.1).
DEFAULT_MLP_RATIO = 4

# Cross entropy over the vocabulary keeps the logits in fp32: 4 bytes per value, 4sbv/t on the
# last pipeline stage (Korthikanti et al. section 4.3, the output layer and cross entropy).
LOGITS_BYTES = 4
