"""Bytes per accelerator: model states as ZeRO counts them, activations as Korthikanti et al.

Pure arithmetic over a ``CompleteShape`` and a ``MemoryLayout``; the constants and their sources
are in ``facts``.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from safe_estimators._memory.complete import CompleteShape
from safe_estimators._memory.facts import (
    ACTIVATION_BYTES,
    CUDA_CONTEXT_BYTES,
    DEQUANTIZED_BYTES_PER_WEIGHT,
    GATHERED_LAYER_BYTES_PER_PARAMETER,
    LOGITS_BYTES,
    PURE_16_BIT_STATE_BYTES,
    QUANTIZED_WEIGHT_BYTES,
    STATE_BYTES,
    WARNING_FRACTION,
)
from safe_estimators._memory.layout import MemoryLayout

MIB = 1024 * 1024


def gb(size: float) -> str:
    """Bytes as decimal gigabytes, the unit the papers use: ``120.0 GB``."""
    return f"{size / 1e9:.1f} GB"


@attrs.frozen(kw_only=True)
class MemoryEstimate:
    """The estimated peak memory of one accelerator of a training job, in bytes.

    ``weights``, ``gradients`` and ``optimizer_states`` are the model states as the ZeRO paper
    counts them, divided as the job's layout divides them; ``activations`` follow Korthikanti
    et al. 2022 (0 when the architecture is not known: ``activations_estimated`` says which);
    ``overhead`` is the CUDA context plus, when sharded, the one layer gathered at a time.
    ``device_memory`` is the accelerator's memory as EC2 reports it (None for CPU instances
    and local mode), and ``fits`` compares it with ``total`` (None when unknown). ``layout``
    describes the division and ``notes`` what was assumed or read from elsewhere.
    """

    weights: int
    gradients: int
    optimizer_states: int
    activations: int
    overhead: int
    device_memory: int | None = None
    instance_type: str | None = None
    accelerator: str | None = None
    layout: str = ""
    activations_estimated: bool = True
    notes: tuple[str, ...] = ()

    @property
    def model_states(self) -> int:
        """Weights + gradients + optimizer states."""
        return self.weights + self.gradients + self.optimizer_states

    @property
    def total(self) -> int:
        """Everything one accelerator holds at the peak."""
        return self.model_states + self.activations + self.overhead

    @property
    def fits(self) -> bool | None:
        """``total`` is within the device memory (None when the device is unknown)."""
        return None if self.device_memory is None else self.total <= self.device_memory

    @property
    def fraction(self) -> float | None:
        """``total`` as a share of the device memory."""
        return None if not self.device_memory else self.total / self.device_memory

    @property
    def tight(self) -> bool:
        """Fits, but above the share of device memory that leaves the allocator its headroom."""
        share = self.fraction
        return bool(self.fits) and share is not None and share > WARNING_FRACTION

    def breakdown(self) -> str:
        """``weights 13.5 GB + gradients ... = 16.4 GB``: the sum, in one line."""
        acts = gb(self.activations) if self.activations_estimated else "not estimated"
        return (
            f"weights {gb(self.weights)} + gradients {gb(self.gradients)} + optimizer states "
            f"{gb(self.optimizer_states)} + activations {acts} + overhead {gb(self.overhead)} "
            f"= {gb(self.total)}"
        )

    def device(self) -> str:
        """``42.9 GB per A100 of ml.p4d.24xlarge`` (GB of 10^9 bytes, as every output)."""
        if self.device_memory is None:
            return "an unknown device memory"
        what = f" per {self.accelerator}" if self.accelerator else " per accelerator"
        where = f" of {self.instance_type}" if self.instance_type else ""
        return f"{gb(self.device_memory)}{what}{where}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready document: every byte count, the totals, ``fits`` and the notes."""
        return {
            "weights": self.weights,
            "gradients": self.gradients,
            "optimizer_states": self.optimizer_states,
            "activations": self.activations if self.activations_estimated else None,
            "overhead": self.overhead,
            "model_states": self.model_states,
            "total": self.total,
            "device_memory": self.device_memory,
            "fits": self.fits,
            "instance_type": self.instance_type,
            "accelerator": self.accelerator,
            "layout": self.layout,
            "notes": list(self.notes),
        }

    def __str__(self) -> str:
        share = f" ({self.fraction:.0%} of {self.device()})" if self.fraction else ""
        return f"{gb(self.total)} per accelerator{share}: {self.breakdown()}"


# --------------------------------------------------------------------------------------------
# Activations (Korthikanti et al. 2022, section 4 and Table 2)
# --------------------------------------------------------------------------------------------


def layer_activations(
    s: float,
    b: int,
    h: int,
    a: int,
    *,
    tensor: int = 1,
    sequence_parallel: bool = False,
    attention_scores: bool = True,
    mlp_width: int | None = None,
    gated_mlp: bool = False,
    value_bytes: int = 2,
) -> float:
    """Bytes one transformer layer keeps for its backward pass (the paper's Table 2).

    The paper's 34sbh splits into 10sbh outside the tensor-parallel regions (the two layer
    norms' inputs, the inputs of the QKV and first MLP matrices, two dropout masks) and 24sbh
    inside (Q, K, V and the attention output's input: 8; the MLP's activation and second
    matrix inputs: 16 at width 4h, 4 x width/h in general); the attention scores add 5as^2b.
    Tensor parallelism divides the inside part, sequence parallelism the outside part too;
    selective recomputation (or a fused attention kernel) removes the scores. A gated MLP
    (SwiGLU: Llama, Mistral) keeps four width-sized tensors instead of two: the gate and up
    outputs, the activation's output and the product fed to the down matrix.
    """
    width = mlp_width or 4 * h
    sbh = s * b * h
    outside = 10 * sbh
    inside = (8 + (8 if gated_mlp else 4) * width / h) * sbh
    scores = 5 * a * s * s * b if attention_scores else 0.0
    if sequence_parallel:
        outside /= tensor
    return (outside + (inside + scores) / tensor) * value_bytes / 2


def checkpointed_layer(
    s: float, b: int, h: int, *, tensor: int = 1, sequence_parallel: bool = False,
    value_bytes: int = 2,
) -> float:  # fmt: skip
    """Bytes per layer with full recomputation: the layer's input only, 2sbh (Table 2)."""
    return 2 * s * b * h * value_bytes / 2 / (tensor if sequence_parallel else 1)


def activations(shape: CompleteShape, layout: MemoryLayout) -> int:
    """Activation bytes of the busiest pipeline stage."""
    assert shape.has_architecture
    layers, h, a = shape.layers, shape.hidden_size, shape.attention_heads
    s, b = shape.sequence_length, shape.micro_batch_size
    assert layers and h and a and s and b
    s_local = s / layout.context  # context parallelism splits the sequence
    b = -(-b // layout.batch_split)  # DataParallel scatters the process's batch over its GPUs
    value_bytes = ACTIVATION_BYTES[shape.precision]
    tp, sp = layout.tensor, layout.sequence_parallel
    full = layer_activations(
        s_local, b, h, a, tensor=tp, sequence_parallel=sp,
        attention_scores=not shape.fused_attention, mlp_width=shape.mlp_width,
        gated_mlp=shape.gated_mlp, value_bytes=value_bytes,
    )  # fmt: skip
    per_layer = (
        checkpointed_layer(s_local, b, h, tensor=tp, sequence_parallel=sp, value_bytes=value_bytes)
        if shape.activation_checkpointing
        else full
    )
    # During recomputation one layer's full activations exist again (its checkpointed input
    # among them, so that layer counts once).
    recompute = full - per_layer if shape.activation_checkpointing else 0.0
    stage_layers = math.ceil(layers / layout.pipeline)
    # 1F1B: the first stage holds its layers for up to `pipeline` micro-batches in flight (so
    # about all L layers' worth whatever the degree, section 4.2.3); the last stage holds one.
    in_flight = layout.in_flight or layout.pipeline

    def held(layers_in_flight: int) -> int:
        if shape.activation_checkpointing and layout.offload_horizon:
            return min(layers_in_flight, layout.offload_horizon)  # the rest is in CPU memory
        return layers_in_flight

    first = held(stage_layers * in_flight) * per_layer + recompute
    logits = LOGITS_BYTES * s_local * b * (shape.vocab_size or 0) / tp
    # DataParallel gathers every replica's output (the logits) into one tensor on GPU 0, beside
    # the logits its own replica keeps for the backward pass.
    logits += LOGITS_BYTES * s_local * b * (shape.vocab_size or 0) * (
        layout.gathered_outputs if layout.gathered_outputs > 1 else 0
    )
    last = held(stage_layers) * per_layer + recompute + logits
    return math.ceil(max(first + (logits if layout.pipeline == 1 else 0.0), last))


# --------------------------------------------------------------------------------------------
# The estimate
# --------------------------------------------------------------------------------------------


def estimate(
    shape: CompleteShape,
    layout: MemoryLayout,
    *,
    device_memory: int | None = None,
    instance_type: str | None = None,
    accelerator: str | None = None,
) -> MemoryEstimate:
    """The per-accelerator estimate of ``shape`` trained with ``layout``."""
    assert shape.parameters is not None
    per_param = (
        STATE_BYTES[(shape.precision, shape.optimizer)]
        if shape.master_weights
        else PURE_16_BIT_STATE_BYTES[shape.optimizer]
    )
    model_split = layout.tensor * layout.pipeline
    params = shape.parameters / model_split
    trainable = shape.trainable / model_split
    notes = list(shape.notes) + list(layout.notes)
    overhead = float(CUDA_CONTEXT_BYTES)
    if layout.shard > 1:
        layer = shape.layer_parameters
        if layer is not None:
            # No more than the stage holds (a shape may under-state its parameters).
            gathered = min(layer / layout.tensor, params)
            overhead += GATHERED_LAYER_BYTES_PER_PARAMETER * gathered
        else:
            notes.append("the layer gathered at a time by sharding is not counted (no hidden_size)")
    weights = params * per_param.weights
    if shape.frozen_weight_bytes is not None and shape.quantization is None:
        weights += (params - trainable) * (shape.frozen_weight_bytes - per_param.weights)
    quantized = _quantized_weights(shape, params, trainable, model_split, notes)
    if quantized:
        assert shape.quantization is not None
        weights -= quantized * (per_param.weights - QUANTIZED_WEIGHT_BYTES[shape.quantization])
        if shape.hidden_size is not None:
            overhead += DEQUANTIZED_BYTES_PER_WEIGHT * shape.hidden_size * shape.mlp_width
    estimated = shape.has_architecture
    if not estimated:
        notes.append(
            "activations not estimated: give layers, hidden_size, attention_heads, "
            "sequence_length and micro_batch_size (or config)"
        )
    # Offloaded states live in CPU memory (DeepSpeed offload_optimizer/offload_param, FSDP
    # CPUOffload): nothing of them stays on the accelerator but the layer being computed.
    on_gpu = 0 if layout.offload == "parameters" else 1
    on_gpu_optimizer = 0 if layout.offload else 1
    return MemoryEstimate(
        weights=math.ceil(on_gpu * weights / layout.shard),
        gradients=math.ceil(
            on_gpu * trainable * per_param.gradients / layout.shard / layout.gradient_shard
        ),
        optimizer_states=math.ceil(
            on_gpu_optimizer * trainable * per_param.optimizer / layout.shard
            / layout.optimizer_shard
        ),
        activations=activations(shape, layout) if estimated else 0,
        overhead=math.ceil(overhead),
        device_memory=device_memory,
        instance_type=instance_type,
        accelerator=accelerator,
        layout=str(layout),
        activations_estimated=estimated,
        notes=tuple(notes),
    )


def _quantized_weights(
    shape: CompleteShape, params: float, trainable: float, model_split: int, notes: list[str]
) -> float:
    """How many of this accelerator's weights bitsandbytes holds quantized: the frozen ones
    outside the embeddings (0 without ``quantization``)."""
    if shape.quantization is None:
        return 0.0
    if not shape.trains_adapters:
        notes.append(
            f"quantization {shape.quantization} not counted: every parameter is trainable "
            "(give trainable_parameters, the adapters' count)"
        )
        return 0.0
    frozen = params - trainable
    embeddings = shape.embedding_parameters
    if embeddings is None:
        notes.append(
            f"frozen weights counted at {shape.quantization}, the embeddings among them "
            "(vocab_size and hidden_size not known)"
        )
        return frozen
    notes.append(f"frozen weights counted at {shape.quantization}, except the embeddings")
    return max(frozen - embeddings / model_split, 0.0)
