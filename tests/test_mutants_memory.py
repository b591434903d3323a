"""The memory verdict's words where ``./dev mutate`` found them unpinned: an error that holds
under every reading says, word for word, what the most optimistic reading assumed.

The job is test_memory_verdicts' DeepSpeed ZeRO-3 one without bf16 (Llama-3.3-70B on 2 x
ml.p4d.24xlarge): over the A100's memory even at 8 bytes per parameter. The others are an
error under each other reading (adapters of unknown count, float32 frozen weights, a load whose
quantization is out of sight, a script that may shard), each named in its words.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest
import test_memory_script_adapters as adapters
import test_memory_verdicts as verdicts
import yaml
from test_memory import on_p4d

import safe_estimators
from safe_estimators import ConfigError, ModelShape
from safe_estimators._facts.sdk_files import sdk_generation
from safe_estimators._memory.layout import MemoryLayout
from safe_estimators._memory.rule import memory_problems
from safe_estimators._resolve import check_arguments
from safe_estimators._rules.preferences import _processes_per_node
from safe_estimators._spec_files.read import read_spec

SDK3 = sdk_generation() >= 3


def test_an_error_under_every_reading_names_the_8_bytes_reading_in_full(tmp_path: Path) -> None:
    script = verdicts.DEEPSPEED_ZERO_3.replace(', "bf16": {"enabled": True}', "")
    problem = verdicts.refused(tmp_path, script, verdicts.LLAMA_3_3_70B, "ml.p4d.24xlarge", 2)
    assert (
        "It cannot fit under any reading of what the checks cannot see: even at 8 bytes per "
        "parameter (16-bit weights with no fp32 master copy, 16-bit Adam moments), it needs "
    ) in problem.message


def _model_error(build: Any) -> str:
    with pytest.raises(ConfigError) as raised:
        build()
    [problem] = [p for p in raised.value.problems if p.path == "model"]
    assert problem.severity == "error"
    return problem.message


def test_adapters_of_unknown_count_that_cannot_fit_even_untrained_are_an_error(tmp_path):
    # Llama-3.1-8B's frozen bf16 weights alone (16.1 GB) and activations overflow a 16 GB T4.
    script = adapters.Q_AND_V.replace("r=16", 'r=int(os.environ["RANK_R"])').replace(
        "import torch\n", "import os\nimport torch\n", 1
    )
    message = _model_error(lambda: adapters.build(tmp_path, script, "ml.g4dn.xlarge"))
    assert message.endswith(
        "It cannot fit under any reading of what the checks cannot see: even with no parameter "
        "trained but the frozen weights held, it needs 30.1 GB per accelerator."
    )


def test_float32_frozen_weights_that_overflow_even_in_16_bits_are_an_error(tmp_path):
    options = {"precision": "bf16", "activation_checkpointing": True}
    message = _model_error(
        lambda: adapters.build(tmp_path, adapters.FP32_LOAD, "ml.g4dn.xlarge", **options)
    )
    assert message.endswith(
        "It cannot fit under any reading of what the checks cannot see: even with the frozen "
        "weights in 16 bits, it needs 18.8 GB per accelerator."
    )


def _lora_70b(folder: Path) -> Any:
    (folder / "train.py").write_text(
        verdicts.LORA.format(load="torch_dtype=torch.bfloat16, **loading")
    )
    (folder / "config.json").write_text(json.dumps(verdicts.LLAMA_3_3_70B))
    return safe_estimators.pytorch(
        entry_point="train.py", source_dir=str(folder), role=verdicts.ROLE,
        instance_type="ml.g4dn.xlarge", instance_count=1, framework_version="2.3.0",
        py_version="py311",
        model={"config": str(folder / "config.json"), "sequence_length": 2048,
               "micro_batch_size": 1, "precision": "bf16", "activation_checkpointing": True},
    )  # fmt: skip


def test_adapters_on_70b_that_overflow_even_in_4_bits_are_an_error(tmp_path):
    message = _model_error(lambda: _lora_70b(tmp_path))
    assert message.endswith(
        "It cannot fit under any reading of what the checks cannot see: even with the frozen "
        "weights in 4 bits (QLoRA), it needs 48.8 GB per accelerator."
    )


def test_a_load_out_of_sight_names_the_quantization_it_turns_on_in_full(tmp_path):
    [warning] = verdicts.memory_warnings(
        verdicts.lora_job(tmp_path, "torch_dtype=torch.bfloat16, **loading")
    )
    assert warning.endswith(
        ", unless the script loads the frozen weights quantized (bitsandbytes 4-bit, as QLoRA "
        "does): model.quantization does not say."
    )


def test_a_script_that_may_shard_and_cannot_fit_even_sharded_is_an_error(tmp_path):
    script = verdicts.DDP + "import my_trainer_lib\nmy_trainer_lib.wrap(model)\n"
    message = _model_error(
        lambda: verdicts.job(
            tmp_path, script, verdicts.LLAMA_2_70B, "ml.g5.12xlarge", 1, precision="bf16"
        )
    )
    assert message.endswith(
        "It cannot fit under any reading of what the checks cannot see: even with the model "
        "states sharded over all 4 GPUs, it needs 283.7 GB per accelerator."
    )


# --- the rule over hand-made jobs: the whole message and hint of each kind of verdict --------

P4D_DATA_PARALLEL = MemoryLayout(world_size=8, gpus_per_instance=8)
P4D_SMP_V2 = MemoryLayout(world_size=8, gpus_per_instance=8, launcher="SMP v2")


def _verdict(parameters: str, layout: MemoryLayout) -> tuple[str, str, str]:
    job = on_p4d(ModelShape(parameters=parameters, precision="bf16"), layout)
    [problem] = memory_problems(job, job.estimate())
    return problem.severity, problem.message, problem.hint


def test_a_job_above_90_percent_is_a_warning_whose_fixes_leave_headroom():
    assert _verdict("2.5B", P4D_SMP_V2) == (
        "warning",
        "the job needs about 40.7 GB per accelerator, 95% of the 42.9 GB per A100 of "
        "ml.p4d.24xlarge, above 90%: the allocator's fragmentation may still run it out of "
        "memory. weights 5.0 GB + gradients 5.0 GB + optimizer states 30.0 GB + activations not "
        "estimated + overhead 0.7 GB = 40.7 GB (SMP v2 over 8 accelerators).",
        "use ml.p4de.24xlarge: 85.9 GB per A100, 8 per instance (-> 40.7 GB per accelerator); "
        "or any one of: set hybrid_shard_degree: 2 in the SMP parameters (-> 20.7 GB per "
        "accelerator); set tensor_parallel_degree: 2 in the SMP parameters (-> 20.7 GB per "
        "accelerator).",
    )


def test_an_error_with_one_fix_names_it_alone():
    assert _verdict("20B", P4D_DATA_PARALLEL) == (
        "error",
        "the job needs about 320.7 GB per accelerator, more than the 42.9 GB per A100 of "
        "ml.p4d.24xlarge: model states 320.0 GB (weights + gradients + optimizer states); "
        "weights 40.0 GB + gradients 40.0 GB + optimizer states 240.0 GB + activations not "
        "estimated + overhead 0.7 GB = 320.7 GB (data-parallel over 8 accelerators).",
        "shard the model states over 8 GPUs (SMP v2 hybrid_shard_degree: 8, or FSDP FULL_SHARD "
        "/ DeepSpeed ZeRO-3 in the script) (-> 40.7 GB per accelerator).",
    )


def test_an_error_no_single_change_fixes_says_what_is_left():
    severity, message, hint = _verdict("2000B", P4D_DATA_PARALLEL)
    assert severity == "error"
    assert message.endswith(" = 32000.7 GB (data-parallel over 8 accelerators).")
    assert hint == (
        "no single change found makes it fit; shard over more instances, use tensor or "
        "pipeline parallelism, or a smaller model."
    )


# --- Compute.instance_preferences: one process count per node for every preferred type -------
# The list's own checks run on sagemaker 3 only (test_instance_preferences); the processes per
# node are judged here on the context of a ModelTrainer spec, which both generations read.


def _trainer_context(folder: Path, kinds: list[str], **options: Any) -> Any:
    (folder / "train.py").write_text(
        "import torch.distributed as dist\ndist.init_process_group('nccl')\n"
    )
    data = {
        "estimator": "pytorch", "target": "model_trainer", "entry_point": "train.py",
        "framework_version": "2.3.0", "py_version": "py311", "role": verdicts.ROLE,
        "compute": {"instance_preferences": [{"instance_type": k} for k in kinds],
                    "instance_count": 2},
        **options,
    }  # fmt: skip
    (folder / "job.yaml").write_text(yaml.safe_dump(data))
    arguments, _ = read_spec(folder / "job.yaml")
    ctx, _, _ = check_arguments(arguments)
    assert [kind for kind, _ in ctx.spec.trainer.preferences] == kinds
    return ctx


def _per_node(ctx: Any) -> list[tuple[str, str, str, str]]:
    kinds = [kind for kind, _ in ctx.spec.trainer.preferences]
    return [(p.severity, p.path, p.message, p.hint) for p in _processes_per_node(ctx, kinds)]


TORCHRUN = {"distribution": {"torch_distributed": {"enabled": True}}}
PER_NODE_HINT = (
    "prefer types with the same accelerator count (ml.p5.48xlarge and ml.p5en.48xlarge, say), "
    "or give one ModelTrainer job per count."
)


@pytest.mark.both_sdks
def test_preferred_types_with_other_gpu_counts_under_torchrun_are_an_error(tmp_path):
    ctx = _trainer_context(tmp_path, ["ml.p4d.24xlarge", "ml.g6e.12xlarge"], **TORCHRUN)
    assert _per_node(ctx) == [(
        "error",
        "compute.instance_preferences",
        "lists types with different accelerator counts (ml.p4d.24xlarge has 8 GPUs, "
        "ml.g6e.12xlarge has 4 GPUs); the job's launcher starts one number of processes per "
        "node, fixed in the request (8, from ml.p4d.24xlarge): on a type with fewer the extra "
        "processes have no accelerator, on one with more they sit idle.",
        PER_NODE_HINT,
    )]  # fmt: skip


@pytest.mark.both_sdks
def test_the_count_sent_is_the_first_preferences_and_neuroncores_count(tmp_path):
    kinds = ["ml.trn1.2xlarge", "ml.trn1.32xlarge", "ml.trn2.48xlarge"]
    [(_, _, message, _)] = _per_node(_trainer_context(tmp_path, kinds, distributed={"mpi": {}}))
    assert message.startswith(
        "lists types with different accelerator counts (ml.trn1.2xlarge has 2 NeuronCores, "
        "ml.trn1.32xlarge has 32 NeuronCores, ml.trn2.48xlarge has 64 NeuronCores); the job's "
        "launcher starts one number of processes per node, fixed in the request (2, from "
        "ml.trn1.2xlarge): "
    )


@pytest.mark.both_sdks
@pytest.mark.parametrize(
    "kinds",
    [
        ["ml.p5.48xlarge", "ml.p4d.24xlarge", "ml.g5.48xlarge"],  # 8 GPUs each
        ["ml.p4d.24xlarge", "ml.c5.18xlarge"],  # the CPU type starts no GPU process
    ],
)
def test_preferred_types_with_one_accelerator_count_are_not_refused(tmp_path, kinds):
    assert _per_node(_trainer_context(tmp_path, kinds, **TORCHRUN)) == []


@pytest.mark.both_sdks
def test_different_counts_without_a_launcher_are_not_refused(tmp_path):
    # One process per instance: the script's own, whatever the type's accelerators.
    assert _per_node(_trainer_context(tmp_path, ["ml.p4d.24xlarge", "ml.g6e.12xlarge"])) == []


@pytest.mark.both_sdks
@pytest.mark.parametrize("launcher", ["torchrun", "mpi"])
def test_a_process_count_the_spec_file_gives_is_the_users_to_size(tmp_path, launcher):
    # Sent as given (distributed.json says 4): not the first type's 8 GPUs the error would claim.
    given = {"distributed": {launcher: {"process_count_per_node": 4}}}
    ctx = _trainer_context(tmp_path, ["ml.p4d.24xlarge", "ml.g6e.12xlarge"], **given)
    assert _per_node(ctx) == []
    unsized = {"distributed": {launcher: {"mpi_additional_options": ["-x", "A"]}}}
    ctx = _trainer_context(tmp_path, ["ml.p4d.24xlarge", "ml.g6e.12xlarge"], **unsized)
    assert [severity for severity, *_ in _per_node(ctx)] == ["error"]


@pytest.mark.both_sdks
def test_a_process_count_a_torchrun_object_gives_is_the_users_to_size(tmp_path):
    ctx = _trainer_context(tmp_path, ["ml.p4d.24xlarge", "ml.g6e.12xlarge"], **TORCHRUN)
    words = ctx.spec.trainer

    def given(distributed: Any) -> Any:
        trainer = attrs.evolve(words, given={**words.given, "distributed": distributed})
        return attrs.evolve(ctx, spec=attrs.evolve(ctx.spec, trainer=trainer))

    assert _per_node(given(_torchrun_class()(process_count_per_node=4))) == []
    assert [severity for severity, *_ in _per_node(given(_torchrun_class()()))] == ["error"]


def _torchrun_class() -> Any:
    if SDK3:
        from sagemaker.train.distributed import Torchrun
    else:
        from sagemaker.modules.distributed import Torchrun
    return Torchrun
