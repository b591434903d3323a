"""Will it fit? The per-accelerator memory estimate, against the published figures."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import instance_catalog
import safe_estimators
from safe_estimators import ConfigError, MemoryEstimate, ModelShape
from safe_estimators._cli import main
from safe_estimators._memory import job_of
from safe_estimators._memory.accounting import (
    checkpointed_layer,
    estimate,
    layer_activations,
)
from safe_estimators._memory.complete import complete_shape
from safe_estimators._memory.fixes import Job
from safe_estimators._memory.layout import MemoryLayout, memory_layout
from safe_estimators._memory.rule import job_estimate, memory_problems
from safe_estimators._resolve import check_arguments

ROOT = Path(__file__).parents[1]
SCRIPT = str(ROOT / "examples" / "model-parallel-fp16" / "train.py")
EXAMPLE = ROOT / "examples" / "memory-fit" / "job.yaml"
P4D = instance_catalog.get("ml.p4d.24xlarge")
GB = 1e9

LLAMA_2_7B = ModelShape(
    layers=32,
    hidden_size=4096,
    attention_heads=32,
    sequence_length=4096,
    micro_batch_size=1,
    precision="bf16",
    activation_checkpointing=True,
)


def complete(shape: ModelShape, hyperparameters: dict | None = None):
    filled, problems = complete_shape(shape, hyperparameters or {})
    assert problems == []
    return filled


def on_p4d(shape: ModelShape, layout: MemoryLayout, count: int = 1) -> Job:
    return Job(complete(shape), layout, P4D, count)


# ---------------------------------------------------------------------------------------------
# Model states: the ZeRO paper's example and accelerate's rule
# ---------------------------------------------------------------------------------------------

ZERO_MODEL = ModelShape(parameters="7.5B", precision="fp16", optimizer="adam")


@pytest.mark.parametrize(
    ("layout", "model_states_gb"),
    [
        pytest.param(MemoryLayout(world_size=64), 120.0, id="baseline data parallelism"),
        pytest.param(MemoryLayout(world_size=64, optimizer_shard=64), 31.4, id="ZeRO-1 P_os"),
        pytest.param(MemoryLayout(world_size=64, shard=64), 1.9, id="ZeRO-3 P_os+g+p"),
    ],
)
def test_model_states_match_the_zero_papers_7_5b_example_on_64_gpus(layout, model_states_gb):
    # Rajbhandari et al., Figure 1: 7.5B parameters, N_d = 64, K = 12.
    result = estimate(complete(ZERO_MODEL), layout)
    assert result.model_states / GB == pytest.approx(model_states_gb, abs=0.05)


def test_fp32_adam_is_four_times_the_fp32_weights_as_accelerate_counts_it():
    shape = complete(ModelShape(parameters=1_000_000_000, precision="fp32", optimizer="adamw"))
    result = estimate(shape, MemoryLayout())
    fp32_weights = 4 * 1_000_000_000
    assert result.model_states == 4 * fp32_weights
    assert (result.weights, result.gradients, result.optimizer_states) == (
        fp32_weights, fp32_weights, 2 * fp32_weights,
    )  # fmt: skip


def test_mixed_precision_adam_is_2_plus_2_plus_12_bytes_per_parameter():
    result = estimate(complete(ModelShape(parameters=10**9, precision="bf16")), MemoryLayout())
    assert (result.weights, result.gradients, result.optimizer_states) == (2e9, 2e9, 12e9)


def test_tensor_and_pipeline_divide_the_weights_and_what_follows_them():
    shape = complete(ModelShape(parameters=8 * 10**9, precision="bf16"))
    result = estimate(shape, MemoryLayout(world_size=8, tensor=2, pipeline=4))
    assert (result.weights, result.gradients, result.optimizer_states) == (2e9, 2e9, 12e9)


def test_smp_v1_optimizer_state_sharding_divides_only_the_optimizer_states():
    mp = safe_estimators.ModelParallel(
        tensor_parallel_degree=2, shard_optimizer_state=True, ddp=True
    )
    layout = memory_layout(gpus_per_instance=8, instance_count=2, model_parallel=mp)
    assert (layout.tensor, layout.optimizer_shard, layout.shard) == (2, 8, 1)


def test_smp_v2_hybrid_shard_degree_zero_shards_over_the_whole_cluster():
    distribution = {
        "torch_distributed": {"enabled": True},
        "smdistributed": {"modelparallel": {"enabled": True, "parameters": {
            "hybrid_shard_degree": 0, "tensor_parallel_degree": 2,
        }}},
    }  # fmt: skip
    layout = memory_layout(gpus_per_instance=8, instance_count=4, distribution=distribution)
    assert (layout.launcher, layout.tensor, layout.shard) == ("SMP v2", 2, 16)
    assert "FULL_SHARD" in layout.notes[0]


def test_plain_ddp_divides_nothing():
    layout = memory_layout(
        gpus_per_instance=8, instance_count=4, distribution={"pytorchddp": {"enabled": True}}
    )
    result = estimate(complete(ModelShape(parameters=10**9, precision="bf16")), layout)
    assert result.model_states == 16e9


# ---------------------------------------------------------------------------------------------
# Activations: Korthikanti et al. 2022, Table 2, one case at a time
# ---------------------------------------------------------------------------------------------

# GPT-3 175B as in the paper's Table 3: s = 2048, h = 12288, a = 96, t = 8; micro-batch 1.
S, B, H, A, T = 2048, 1, 12288, 96, 8
SBH = S * B * H


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        pytest.param({}, SBH * (34 + 5 * A * S / H), id="no parallelism"),
        pytest.param(
            {"tensor": T}, SBH * (10 + 24 / T + 5 * A * S / (H * T)), id="tensor parallel"
        ),
        pytest.param(
            {"tensor": T, "sequence_parallel": True},
            SBH / T * (34 + 5 * A * S / H),
            id="tensor + sequence parallel",
        ),
        pytest.param(
            {"tensor": T, "attention_scores": False},
            SBH * (10 + 24 / T),
            id="tensor parallel + selective recomputation",
        ),
        pytest.param(
            {"tensor": T, "sequence_parallel": True, "attention_scores": False},
            SBH * 34 / T,
            id="tensor + sequence parallel + selective recomputation",
        ),
    ],
)
def test_per_layer_activations_follow_table_2(options, expected):
    assert layer_activations(S, B, H, A, **options) == pytest.approx(expected)


def test_full_recomputation_keeps_the_layer_input_only():
    assert checkpointed_layer(S, B, H) == 2 * SBH


def test_first_pipeline_stage_holds_about_all_layers_whatever_the_degree():
    shape = complete(attrs.evolve(LLAMA_2_7B, activation_checkpointing=False, vocab_size=None))
    one = estimate(shape, MemoryLayout(world_size=8)).activations
    four = estimate(shape, MemoryLayout(world_size=8, pipeline=4)).activations
    assert four == pytest.approx(one, rel=1e-6)


def test_context_parallelism_divides_the_sequence():
    eager = attrs.evolve(LLAMA_2_7B, activation_checkpointing=False, fused_attention=False)
    whole, halved = complete(eager), complete(attrs.evolve(eager, sequence_length=2048))
    split = estimate(whole, MemoryLayout(world_size=8, context=2)).activations
    alone = estimate(halved, MemoryLayout(world_size=8)).activations
    assert split == pytest.approx(alone, rel=1e-6)


# ---------------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------------

shapes = st.builds(
    ModelShape,
    parameters=st.integers(10**6, 10**12),
    layers=st.integers(1, 128),
    hidden_size=st.sampled_from([256, 1024, 4096, 8192, 12288]),
    attention_heads=st.sampled_from([8, 16, 32, 64]),
    vocab_size=st.one_of(st.none(), st.integers(1000, 256_000)),
    sequence_length=st.integers(1, 32768),
    micro_batch_size=st.integers(1, 64),
    precision=st.sampled_from(["fp32", "fp16", "bf16"]),
    optimizer=st.sampled_from(["adamw", "adam", "sgd"]),
    activation_checkpointing=st.booleans(),
    fused_attention=st.booleans(),
)
layouts = st.builds(
    MemoryLayout,
    world_size=st.just(64),
    tensor=st.sampled_from([1, 2, 4]),
    pipeline=st.sampled_from([1, 2, 4]),
    context=st.sampled_from([1, 2]),
    shard=st.sampled_from([1, 2, 4, 8]),
    sequence_parallel=st.booleans(),
)


@settings(max_examples=200, deadline=None)
@given(shapes, layouts, st.sampled_from(["shard", "tensor"]))
def test_more_sharding_or_tensor_parallelism_never_increases_the_estimate(shape, layout, field):
    filled = complete(shape)
    before = estimate(filled, layout).total
    larger = attrs.evolve(layout, **{field: getattr(layout, field) * 2})
    assert estimate(filled, larger).total <= before


@settings(max_examples=200, deadline=None)
@given(shapes, layouts)
def test_checkpointing_never_increases_activations(shape, layout):
    off = complete(attrs.evolve(shape, activation_checkpointing=False))
    on = complete(attrs.evolve(shape, activation_checkpointing=True))
    assert estimate(on, layout).activations <= estimate(off, layout).activations


@settings(max_examples=200, deadline=None)
@given(shapes, layouts, st.sampled_from(["sequence_length", "micro_batch_size"]))
def test_the_estimate_grows_with_sequence_length_and_micro_batch(shape, layout, field):
    filled = complete(shape)
    larger = attrs.evolve(filled, **{field: getattr(filled, field) * 2})
    assert estimate(larger, layout).activations > estimate(filled, layout).activations
    assert estimate(larger, layout).total > estimate(filled, layout).total


# ---------------------------------------------------------------------------------------------
# The rule and its fixes (the layout record directly)
# ---------------------------------------------------------------------------------------------


def test_llama_2_7b_with_hybrid_shard_degree_8_fits_one_p4d():
    # AWS's SMP v2 best-practice table: Llama 2 7B, 1 x ml.p4d.24xlarge, hybrid shard 8,
    # activation checkpointing.
    job = on_p4d(LLAMA_2_7B, MemoryLayout(world_size=8, gpus_per_instance=8, shard=8,
                                          launcher="SMP v2"))  # fmt: skip
    result = job.estimate()
    assert result.fits is True and not result.tight
    assert memory_problems(job, result) == []


def test_llama_2_7b_unsharded_is_refused_with_a_sharding_degree_that_fits():
    unsharded = MemoryLayout(world_size=8, gpus_per_instance=8, shard=1, launcher="SMP v2")
    job = on_p4d(LLAMA_2_7B, unsharded)
    [problem] = memory_problems(job, job.estimate())
    assert (problem.path, problem.severity) == ("model", "error")
    assert "more than the 42.9 GB per A100 of ml.p4d.24xlarge" in problem.message
    assert "hybrid_shard_degree: 4" in problem.hint
    applied = attrs.evolve(job, layout=attrs.evolve(unsharded, shard=4))
    assert applied.estimate().fits


def test_a_job_above_90_percent_is_a_warning_with_what_would_leave_headroom():
    shape = ModelShape(parameters="2.5B", precision="bf16")
    job = on_p4d(shape, MemoryLayout(world_size=8, gpus_per_instance=8, launcher="SMP v2"))
    result = job.estimate()
    assert result.fits and result.tight
    [problem] = memory_problems(job, result)
    assert problem.severity == "warning" and "above 90%" in problem.message
    assert "hybrid_shard_degree: 2" in problem.hint


def test_torchrun_without_smp_may_shard_in_the_script_so_a_shardable_job_is_a_warning():
    layout = memory_layout(
        gpus_per_instance=8, instance_count=1, distribution={"torch_distributed": {"enabled": True}}
    )
    job = on_p4d(LLAMA_2_7B, layout)
    [problem] = memory_problems(job, job.estimate())
    assert problem.severity == "warning" and "unless the training script shards" in problem.message


# ---------------------------------------------------------------------------------------------
# Through the factories and the real SageMaker SDK
# ---------------------------------------------------------------------------------------------


def build(sagemaker_session, role, **arguments):
    base = {
        "entry_point": SCRIPT,
        "role": role,
        "instance_type": "ml.p4d.24xlarge",
        "framework_version": "1.13.1",
        "py_version": "py39",
        "sagemaker_session": sagemaker_session,
    }
    return safe_estimators.pytorch(**{**base, **arguments})


SHARDED_BF16 = {"bf16": True, "ddp": True}
UNSHARDED_FP16 = {"fp16": True, "ddp": True}  # SMP v1 takes bf16 only with sharding


def test_7_5b_fully_sharded_over_64_a100s_holds_about_1_9_gb_of_model_states(
    sagemaker_session, role
):
    est = build(
        sagemaker_session, role, instance_count=8, model={"parameters": "7.5B"},
        model_parallel={**SHARDED_BF16, "sharded_data_parallel_degree": 64},
    )  # fmt: skip
    memory = safe_estimators.explain(est).memory
    assert isinstance(memory, MemoryEstimate)
    assert memory.model_states / GB == pytest.approx(1.9, abs=0.05)
    assert memory.fits is True
    assert memory.device_memory == 40960 * 1024 * 1024
    assert json.loads(est.hyperparameters()["mp_parameters"])["sharded_data_parallel_degree"] == 64


def test_7_5b_unsharded_over_64_a100s_is_refused_with_the_zero_papers_120_gb(
    sagemaker_session, role
):
    with pytest.raises(ConfigError) as raised:
        build(
            sagemaker_session, role, instance_count=8, model={"parameters": "7.5B"},
            model_parallel=UNSHARDED_FP16,
        )  # fmt: skip
    [problem] = raised.value.problems
    assert problem.path == "model"
    assert "model states 120.0 GB" in problem.message
    assert "sharded_data_parallel_degree=4" in problem.hint


def test_llama_2_7b_unsharded_is_refused_and_the_named_fix_applied_fits(sagemaker_session, role):
    with pytest.raises(ConfigError) as raised:
        build(sagemaker_session, role, model=LLAMA_2_7B, model_parallel=UNSHARDED_FP16)
    [problem] = raised.value.problems
    assert "sharded_data_parallel_degree=4" in problem.hint
    est = build(
        sagemaker_session, role, model=LLAMA_2_7B,
        model_parallel={**SHARDED_BF16, "sharded_data_parallel_degree": 4},
    )  # fmt: skip
    assert safe_estimators.explain(est).memory.fits is True


def test_70b_with_plain_ddp_on_one_p4d_is_refused_and_the_named_fix_applied_fits(
    sagemaker_session, role
):
    seventy_b = ModelShape(
        parameters="70B", layers=80, hidden_size=8192, attention_heads=64,
        sequence_length=4096, micro_batch_size=1, precision="bf16",
    )  # fmt: skip
    with pytest.raises(ConfigError) as raised:
        build(
            sagemaker_session, role, model=seventy_b, distribution={"pytorchddp": {"enabled": True}}
        )
    [problem] = raised.value.problems
    assert problem.path == "model" and "1120.0 GB" in problem.message
    assert "activation checkpointing" in problem.hint
    assert "instance_count=5 (40 GPUs)" in problem.hint
    est = build(
        sagemaker_session, role, instance_count=5,
        model=attrs.evolve(seventy_b, activation_checkpointing=True),
        model_parallel={**SHARDED_BF16, "sharded_data_parallel_degree": 40},
    )  # fmt: skip
    assert safe_estimators.explain(est).memory.fits is True


def test_without_model_nothing_changes(sagemaker_session, role):
    options = {**SHARDED_BF16, "sharded_data_parallel_degree": 8}
    est = build(sagemaker_session, role, model_parallel=options)
    assert safe_estimators.explain(est).memory is None


def test_sequence_and_batch_default_from_the_hyperparameters(sagemaker_session, role):
    shape = attrs.evolve(LLAMA_2_7B, sequence_length=None, micro_batch_size=None)
    est = build(
        sagemaker_session, role, model=shape,
        hyperparameters={"max_seq_length": 2048, "per_device_train_batch_size": "2"},
        model_parallel={**SHARDED_BF16, "sharded_data_parallel_degree": 8},
    )  # fmt: skip
    notes = safe_estimators.explain(est).memory.notes
    assert "sequence_length 2048 from hyperparameters.max_seq_length" in notes
    assert "micro_batch_size 2 from hyperparameters.per_device_train_batch_size" in notes


# ---------------------------------------------------------------------------------------------
# The config file and bad input
# ---------------------------------------------------------------------------------------------


def test_a_hugging_face_config_gives_llama_2_7bs_exact_parameter_count():
    config = str(EXAMPLE.with_name("config.json"))
    shape = complete(ModelShape(config=config))
    assert shape.parameters == 6_738_415_616  # the count Hugging Face reports for Llama-2-7b
    assert (shape.layers, shape.hidden_size, shape.attention_heads) == (32, 4096, 32)


@pytest.mark.parametrize(
    ("content", "needle"),
    [(None, "does not exist"), ("{nope", "not valid JSON"), ("[1, 2]", "JSON object")],
)
def test_an_unreadable_config_is_a_problem_at_model_config(tmp_path, content, needle):
    path = tmp_path / "config.json"
    if content is not None:
        path.write_text(content)
    _, problems = complete_shape(ModelShape(config=str(path)), {})
    assert [p.path for p in problems] == ["model.config"] and needle in problems[0].message


@pytest.mark.parametrize(
    ("model", "path"),
    [
        ({"parameters": "seven"}, "model.parameters"),
        ({"parameters": -1}, "model.parameters"),
        ({"layers": "32"}, "model.layers"),
        ({"layers": 0}, "model.layers"),
        ({"precision": "bf61"}, "model.precision"),
        ({"optimizer": "lion"}, "model.optimizer"),
        ({"quantization": "nf4"}, "model.quantization"),
        ({"activation_checkpointing": "yes"}, "model.activation_checkpointing"),
        ({"config": 3}, "model.config"),
        ({"hidden": 4096}, "model.hidden"),
        ([1, 2], "model"),
        ("7B", "model"),
    ],
)
def test_bad_model_input_is_a_problem_with_its_path(model, path):
    _, problems, _ = check_arguments(
        {"estimator": "pytorch", "entry_point": SCRIPT, "instance_type": "ml.p4d.24xlarge",
         "framework_version": "1.13.1", "py_version": "py39", "model": model}
    )  # fmt: skip
    assert path in [p.path for p in problems]
    assert all(p.hint for p in problems if p.path.startswith("model"))


def test_a_bad_model_shape_in_python_raises_config_error_with_its_path():
    with pytest.raises(ConfigError) as raised:
        ModelShape(hidden_size=-4)
    assert raised.value.paths == ["model.hidden_size"]


model_data = st.dictionaries(
    st.one_of(st.sampled_from([a.name for a in attrs.fields(ModelShape)]), st.text(max_size=6)),
    st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8),
        st.lists(st.integers(), max_size=2),
        st.sampled_from(["7B", "bf16", "adamw", "1e9", "4bit", "8bit"]),
    ),
    max_size=6,
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.one_of(model_data, st.integers(), st.text(max_size=5), st.lists(st.integers())))
def test_any_model_data_gives_problems_with_paths_never_exceptions(model):
    _, problems, _ = check_arguments(
        {"estimator": "pytorch", "entry_point": "train.py", "instance_type": "ml.p4d.24xlarge",
         "instance_count": 2, "model": model, "hyperparameters": {"block_size": 512}}
    )  # fmt: skip
    assert all(p.path and p.message for p in problems)


# ---------------------------------------------------------------------------------------------
# The CLI
# ---------------------------------------------------------------------------------------------


@pytest.mark.sdk2_only  # memory-fit runs the model parallel library v1 (estimator only)
def test_plan_shows_the_per_accelerator_breakdown(capsys):
    assert main(["plan", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert "memory: " in out and "per A100 of ml.p4d.24xlarge" in out
    assert "weights " in out and "optimizer states " in out and "activations " in out


@pytest.mark.sdk2_only  # memory-fit runs the model parallel library v1 (estimator only)
def test_plan_json_has_the_memory_document(capsys):
    assert main(["plan", str(EXAMPLE), "--json"]) == 0
    memory = json.loads(capsys.readouterr().out)["memory"]
    assert memory["fits"] is True and memory["device_memory"] == 40960 * 1024 * 1024
    assert memory["total"] == sum(
        memory[k] for k in ("weights", "gradients", "optimizer_states", "activations", "overhead")
    )


@pytest.mark.sdk2_only  # memory-fit runs the model parallel library v1 (estimator only)
def test_the_notebook_table_has_the_memory_row():
    rows = safe_estimators.plan(EXAMPLE)._repr_markdown_()
    assert "| memory per accelerator |" in rows


@pytest.mark.sdk2_only  # memory-fit runs the model parallel library v1 (estimator only)
def test_catalog_fits_lists_instance_types_and_counts_smallest_accelerator_first(capsys):
    assert main(["catalog", "--fits", str(EXAMPLE), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    by_type = {r["instance_type"]: r for r in rows}
    assert by_type["ml.p4d.24xlarge"]["instance_count"] == 1
    memories = [instance_catalog.get(r["instance_type"]).accelerator_memory_mib for r in rows]
    assert memories == sorted(memories)
    assert all(r["memory"]["fits"] for r in rows)
    assert main(["catalog", "--fits", str(EXAMPLE)]) == 0
    assert "ml.p4d.24xlarge" in capsys.readouterr().out


def test_catalog_fits_without_a_model_section_says_so(capsys):
    spec = ROOT / "examples" / "model-parallel-fp16" / "job.yaml"
    assert main(["catalog", "--fits", str(spec)]) == 1
    assert "model: is needed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("options", "in_flight"),
    [
        ({"pipeline_parallel_degree": 4}, 1),  # the library's default: one micro-batch
        ({"pipeline_parallel_degree": 4, "microbatches": 4}, 4),
        ({"pipeline_parallel_degree": 4, "microbatches": 16}, 6),  # active: degree + 2
        ({"pipeline_parallel_degree": 4, "microbatches": 16, "active_microbatches": 8}, 8),
    ],
)
def test_smp_v1_pipeline_holds_the_micro_batches_its_schedule_keeps_in_flight(options, in_flight):
    mp = safe_estimators.ModelParallel(**options, ddp=True)
    layout = memory_layout(gpus_per_instance=8, instance_count=1, model_parallel=mp)
    assert layout.in_flight == in_flight


def test_trainium_jobs_get_a_verdict_per_neuroncore():
    # 32 NeuronCores of 16 GiB (32 GiB per Trainium chip, 2 cores each): 70B does not fit.
    trn = instance_catalog.get("ml.trn1.32xlarge")
    job, result, problems = job_estimate(
        ModelShape(parameters="70B"), instance=trn, instance_count=1, hyperparameters={},
        distribution=None, model_parallel=None,
    )  # fmt: skip
    assert job is not None and problems == [] and result.fits is False
    assert result.device_memory == 16 * 1024**3


# ---------------------------------------------------------------------------------------------
# SMP v2 through the factories
# ---------------------------------------------------------------------------------------------

@pytest.fixture
def v2_build(sagemaker_session, role, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import torch.sagemaker as tsm\nfrom model import build_model\n\n"
        "tsm.init()\nmodel = tsm.transform(build_model())\n"
    )

    def build(**arguments):
        base = {
            "entry_point": str(script),
            "role": role,
            "instance_type": "ml.p4d.24xlarge",
            "framework_version": "2.2.0",
            "py_version": "py310",
            "sagemaker_session": sagemaker_session,
        }
        return safe_estimators.pytorch(**{**base, **arguments})

    return build


def test_smp_v2_llama_2_7b_with_hybrid_shard_degree_8_on_one_p4d_builds_and_fits(v2_build):
    est = v2_build(model=LLAMA_2_7B, model_parallel={"hybrid_shard_degree": 8})
    memory = safe_estimators.explain(est).memory
    assert memory.fits is True and memory.layout.startswith("SMP v2")
    assert json.loads(est.hyperparameters()["mp_parameters"])["hybrid_shard_degree"] == 8


def test_smp_v2_llama_2_7b_unsharded_is_refused_and_the_named_degree_applied_fits(v2_build):
    with pytest.raises(ConfigError) as raised:
        v2_build(model=LLAMA_2_7B, model_parallel={"hybrid_shard_degree": 1})
    [problem] = [p for p in raised.value.problems if p.path == "model"]
    assert "set hybrid_shard_degree: 4 in the SMP parameters" in problem.hint
    est = v2_build(model=LLAMA_2_7B, model_parallel={"hybrid_shard_degree": 4})
    assert safe_estimators.explain(est).memory.fits is True


def test_smp_v2_unset_hybrid_shard_degree_shards_over_the_whole_cluster(v2_build):
    est = v2_build(model=LLAMA_2_7B, model_parallel={"tensor_parallel_degree": 2}, instance_count=2)
    memory = safe_estimators.explain(est).memory
    assert memory.layout == "SMP v2 over 16 accelerators, tensor 2, sharded 8"


def test_frozen_parameters_hold_weights_only_as_with_lora_adapters():
    lora = complete(ModelShape(parameters="7B", trainable_parameters="20M", precision="bf16"))
    result = estimate(lora, MemoryLayout())
    assert (result.weights, result.gradients, result.optimizer_states) == (14e9, 40e6, 240e6)


def test_a_gated_mlp_keeps_four_width_sized_tensors_instead_of_two():
    plain = layer_activations(S, B, H, A, attention_scores=False, mlp_width=4 * H)
    gated = layer_activations(S, B, H, A, attention_scores=False, mlp_width=4 * H, gated_mlp=True)
    assert (plain, gated) == (34 * SBH, (34 + 16) * SBH)


def test_offloaded_activations_keep_only_the_loading_horizon_on_the_gpu():
    shape = complete(LLAMA_2_7B)
    kept = estimate(shape, MemoryLayout(world_size=8)).activations
    offloaded = estimate(shape, MemoryLayout(world_size=8, offload_horizon=2)).activations
    per_layer = checkpointed_layer(4096, 1, 4096)
    assert kept - offloaded == pytest.approx(30 * per_layer, rel=1e-6)  # 32 layers -> 2 held
    mp = safe_estimators.ModelParallel(
        offload_activations=True, pipeline_parallel_degree=2, ddp=True
    )
    layout = memory_layout(gpus_per_instance=8, instance_count=1, model_parallel=mp)
    assert layout.offload_horizon == 4


@pytest.mark.parametrize(
    ("offload", "weights_kept", "optimizer_kept"),
    [(None, True, True), ("optimizer", True, False), ("parameters", False, False)],
)
def test_cpu_offload_takes_its_states_off_the_accelerator(offload, weights_kept, optimizer_kept):
    # DeepSpeed offload_optimizer: the Adam states live in CPU memory, the weights and gradients
    # stay; FSDP CPUOffload (offload_params): weights, gradients and optimizer states all go.
    shape = complete(ModelShape(parameters="7B", precision="bf16", optimizer="adam"))
    on_gpu = estimate(shape, MemoryLayout(world_size=8, offload=offload))
    resident = estimate(shape, MemoryLayout(world_size=8))
    assert resident.optimizer_states > 0 and resident.weights > 0 and resident.gradients > 0
    assert on_gpu.optimizer_states == (resident.optimizer_states if optimizer_kept else 0)
    assert on_gpu.weights == (resident.weights if weights_kept else 0)
    assert on_gpu.gradients == (resident.gradients if weights_kept else 0)
    assert (on_gpu.total < resident.total) == (offload is not None)


def test_a_pipeline_parameter_instance_count_is_estimated_at_its_default(sagemaker_session, role):
    from sagemaker.workflow.parameters import ParameterInteger

    count = ParameterInteger(name="InstanceCount", default_value=2)
    est = build(
        sagemaker_session, role, instance_count=count, framework_version="2.2.0",
        py_version="py310", distribution={"torch_distributed": {"enabled": True}},
        model={"parameters": "1B", "precision": "bf16"}, check_script=False,
    )  # fmt: skip
    assert safe_estimators.explain(est).memory.layout == "data-parallel over 16 accelerators"


def test_with_instance_groups_the_launch_groups_accelerators_are_counted(sagemaker_session, role):
    groups = [
        {"instance_group_name": "data", "instance_type": "ml.c5.xlarge", "instance_count": 1},
        {"instance_group_name": "train", "instance_type": "ml.p4d.24xlarge", "instance_count": 4},
    ]
    est = build(
        sagemaker_session, role, instance_type=None, instance_groups=groups,
        framework_version="2.2.0", py_version="py310", check_script=False,
        distribution={"smdistributed": {"dataparallel": {"enabled": True}},
                      "instance_groups": ["train"]},
        model={"parameters": "1B", "precision": "bf16"},
    )  # fmt: skip
    assert safe_estimators.explain(est).memory.layout == "data-parallel over 32 accelerators"


# ---------------------------------------------------------------------------------------------
# Frozen weights loaded quantized (bitsandbytes, QLoRA)
# ---------------------------------------------------------------------------------------------

G5 = instance_catalog.get("ml.g5.2xlarge")  # one A10G, 22888 MiB
# Llama 2 13B's architecture (its config.json: 40 layers, hidden 5120, 40 heads, MLP 13824,
# vocabulary 32000, untied embeddings), LoRA adapters of rank 8 on q and v: 6.5M parameters.
LLAMA_2_13B_LORA = ModelShape(
    parameters="13B", trainable_parameters="6.5M", layers=40, hidden_size=5120,
    attention_heads=40, intermediate_size=13824, vocab_size=32000, sequence_length=2048,
    micro_batch_size=1, precision="bf16", activation_checkpointing=True,
)  # fmt: skip


def on_g5(shape: ModelShape) -> Job:
    return Job(complete(shape), MemoryLayout(), G5, 1)


def test_4bit_frozen_weights_count_4_5_bits_except_the_embeddings():
    shape = ModelShape(parameters="7B", trainable_parameters="20M", precision="bf16",
                       hidden_size=4096, vocab_size=32000, quantization="4bit")  # fmt: skip
    result = estimate(complete(shape), MemoryLayout())
    embeddings = 32000 * 4096  # tied: counted once, at bf16
    quantized = 7e9 - 20e6 - embeddings
    assert result.weights == pytest.approx((20e6 + embeddings) * 2 + quantized * 4.5 / 8, abs=1)
    assert (result.gradients, result.optimizer_states) == (40e6, 240e6)  # the adapters only
    # One 4096 x 16384 MLP matrix is dequantized to 16 bits at a time.
    assert result.overhead == pytest.approx(666_632_192 + 2 * 4096 * 16384, abs=1)


def test_8bit_frozen_weights_count_one_byte():
    shape = ModelShape(parameters="7B", trainable_parameters="20M", precision="bf16",
                       quantization="8bit")  # fmt: skip
    result = estimate(complete(shape), MemoryLayout())
    assert result.weights == pytest.approx(20e6 * 2 + (7e9 - 20e6) * 1)
    assert any("the embeddings among them" in note for note in result.notes)


def test_qlora_13b_on_one_a10g_fits_when_its_weights_are_4bit():
    job = on_g5(attrs.evolve(LLAMA_2_13B_LORA, quantization="4bit"))
    result = job.estimate()
    assert result.fits and not result.tight
    assert memory_problems(job, result) == []
    # The same job with the frozen weights at bf16 holds 26 GB of them: more than the A10G.
    assert not on_g5(LLAMA_2_13B_LORA).estimate().fits


def test_adapter_training_that_fits_only_quantized_is_a_warning_naming_the_quantization():
    # Nothing in the job's options shows how the script loads the frozen model, and QLoRA
    # scripts load it in 4 bits: refusing would refuse jobs that run.
    job = on_g5(LLAMA_2_13B_LORA)
    [problem] = memory_problems(job, job.estimate())
    assert problem.severity == "warning"
    assert "more than the 24.0 GB per A10G of ml.g5.2xlarge" in problem.message
    assert "unless the script loads the frozen weights quantized" in problem.message
    assert "set model.quantization: 8bit" in problem.hint  # the smaller change that fits


def test_a_quantization_that_is_given_and_still_does_not_fit_is_an_error():
    shape = attrs.evolve(LLAMA_2_13B_LORA, parameters="70B", layers=80, hidden_size=8192,
                         intermediate_size=28672, quantization="4bit")  # fmt: skip
    job = on_g5(shape)
    [problem] = memory_problems(job, job.estimate())
    assert problem.severity == "error"


def test_full_fine_tuning_gets_no_quantization_pass_or_fix():
    job = on_g5(attrs.evolve(LLAMA_2_13B_LORA, trainable_parameters=None))
    [problem] = memory_problems(job, job.estimate())
    assert problem.severity == "error" and "quantization" not in problem.hint
    everything = attrs.evolve(LLAMA_2_13B_LORA, trainable_parameters=None, quantization="4bit")
    ignored = estimate(complete(everything), MemoryLayout())
    assert ignored.weights == 26e9  # every parameter trains: nothing is held quantized
    assert any("every parameter is trainable" in note for note in ignored.notes)


def test_a_qlora_spec_builds_with_the_sdk_and_explains_its_quantized_weights(
    sagemaker_session, role
):
    est = safe_estimators.huggingface(
        entry_point=SCRIPT, role=role, instance_type="ml.g5.2xlarge",
        transformers_version="4.36.0", pytorch_version="2.1.0", py_version="py310",
        hyperparameters={"bf16": True, "gradient_checkpointing": True}, check_script=False,
        model={**attrs.asdict(LLAMA_2_13B_LORA), "quantization": "4bit"},
        sagemaker_session=sagemaker_session,
    )  # fmt: skip
    memory = safe_estimators.explain(est).memory
    assert memory.fits and memory.weights < 9e9
    assert "frozen weights counted at 4bit, except the embeddings" in memory.notes
    assert est.hyperparameters()["bf16"] == "true"


def test_a_model_spread_over_the_gpus_by_device_map_is_divided_among_them(tmp_path):
    # Falcon 40B with QLoRA on 4 x A10G (24 GB each): one process, device_map="auto".
    spread = tmp_path / "spread.py"
    spread.write_text(
        "from transformers import AutoModelForCausalLM\n"
        'model = AutoModelForCausalLM.from_pretrained(name, device_map="auto")\n'
    )
    plain = tmp_path / "plain.py"
    plain.write_text("model = build_model().to('cuda')\n")
    job = {
        "estimator": "huggingface", "instance_type": "ml.g5.12xlarge",
        "transformers_version": "4.36.0", "pytorch_version": "2.1.0", "py_version": "py310",
        "hyperparameters": {"bf16": True, "gradient_checkpointing": True,
                            "per_device_train_batch_size": 1, "max_seq_length": 2048},
        "model": {"parameters": "40B", "trainable_parameters": "30M", "layers": 60,
                  "hidden_size": 8192, "attention_heads": 128, "vocab_size": 65024,
                  "quantization": "4bit"},
    }  # fmt: skip
    ctx, problems, _ = check_arguments({**job, "entry_point": str(spread)})
    _, result, _ = job_of(ctx)
    assert result.layout == "one process over the GPUs (device_map) over 4 accelerators, pipeline 4"
    assert result.fits and [p.path for p in problems] == []
    # The same job whose script puts the model on one GPU holds all of it there.
    _, problems, _ = check_arguments({**job, "entry_point": str(plain)})
    assert ("model", "error") in [(p.path, p.severity) for p in problems]
