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
from test_memory import LLAMA_2_7B, complete, on_p4d

import instance_catalog
import safe_estimators
from safe_estimators import ConfigError, MemoryEstimate, ModelShape
from safe_estimators._facts.limits import training_plan_instance_types
from safe_estimators._facts.sdk_files import sdk_generation
from safe_estimators._memory.accounting import checkpointed_layer, estimate
from safe_estimators._memory.layout import MemoryLayout
from safe_estimators._memory.rule import job_estimate, memory_problems, shape_of_job
from safe_estimators._problems import REMOVE
from safe_estimators._resolve import check_arguments
from safe_estimators._rules.capacity import (
    job_created_in,
    max_pending_on_cpu,
    plan_region_problem,
    training_plan_instance_type,
    training_plan_region,
    volume_key_on_local_storage,
)
from safe_estimators._rules.preferences import _processes_per_node
from safe_estimators._rules.resources import instance_storage, warm_pool, warm_pool_injections
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
        # First a CPU type: the request fixes no count (distributed.json's is null), so each
        # node's driver starts one process per GPU it has.
        ["ml.c5.18xlarge", "ml.p4d.24xlarge", "ml.g6e.12xlarge"],
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


# --- warm pools and instance storage (_rules/resources) --------------------------------------


def _context(folder: Path, **options: Any) -> Any:
    """The rules' context of a job in the estimator's words, built as a ModelTrainer (both
    generations of the SDK have it)."""
    (folder / "train.py").write_text("print('hello')\n")
    data = {
        "estimator": "pytorch", "target": "model_trainer", "entry_point": "train.py",
        "framework_version": "2.3.0", "py_version": "py311", "role": verdicts.ROLE, **options,
    }  # fmt: skip
    (folder / "job.yaml").write_text(yaml.safe_dump(data))
    arguments, _ = read_spec(folder / "job.yaml")
    ctx, _, _ = check_arguments(arguments)
    return ctx


def _said(problems: Any) -> list[tuple[str, str, str, str, list[Any]]]:
    return [(p.severity, p.path, p.message, p.hint, [f.changes for f in p.fixes]) for p in problems]


SPOT = {"use_spot_instances": True, "max_wait": 90000, "checkpoint_s3_uri": "s3://b/ckpt"}
GROUPS = [
    {"instance_group_name": "train", "instance_type": "ml.g5.xlarge", "instance_count": 1},
    {"instance_group_name": "data", "instance_type": "ml.c5.xlarge", "instance_count": 1},
]
WARM_POOLS = "AWS's 'Train Using SageMaker Managed Warm Pools' page"


@pytest.mark.both_sdks
def test_a_warm_pool_beside_spot_and_past_the_hour_says_both_in_full(tmp_path):
    ctx = _context(
        tmp_path, instance_type="ml.g5.xlarge", keep_alive_period_in_seconds=3601, **SPOT
    )
    assert _said(warm_pool(ctx)) == [
        (
            "warning",
            "keep_alive_period_in_seconds",
            f"is 3601 s with use_spot_instances=True; warm pools cannot be used with managed "
            f"spot training ({WARM_POOLS}, Considerations): no pool is retained, or "
            "CreateTrainingJob refuses the job.",
            "remove keep_alive_period_in_seconds; or train on on-demand instances "
            "(use_spot_instances=False, without max_wait).",
            [
                (("keep_alive_period_in_seconds", REMOVE),),
                (("use_spot_instances", False), ("max_wait", REMOVE)),
            ],
        ),
        (
            "warning",
            "keep_alive_period_in_seconds",
            f"is 3601 s; {WARM_POOLS} limits the keep-alive period to 3600 s, though the API "
            "accepts up to 21600 s.",
            "set keep_alive_period_in_seconds=3600; or keep it only if your account is known to "
            "accept more.",
            [(("keep_alive_period_in_seconds", 3600),)],
        ),
    ]


@pytest.mark.both_sdks
def test_a_warm_pool_with_instance_groups_says_so_in_full(tmp_path):
    ctx = _context(tmp_path, instance_groups=GROUPS, keep_alive_period_in_seconds=1)
    assert _said(warm_pool(ctx)) == [
        (
            "warning",
            "keep_alive_period_in_seconds",
            f"is 1 s with instance_groups; warm pools cannot be used with heterogeneous "
            f"clusters ({WARM_POOLS}, Considerations): no pool is retained, or "
            "CreateTrainingJob refuses the job.",
            "remove keep_alive_period_in_seconds; or use one instance_type and instance_count.",
            [(("keep_alive_period_in_seconds", REMOVE),)],
        )
    ]


@pytest.mark.both_sdks
@pytest.mark.parametrize("seconds", [0, 3600])
def test_no_warm_pool_or_one_within_the_hour_on_demand_is_not_warned_about(tmp_path, seconds):
    ctx = _context(tmp_path, instance_type="ml.g5.xlarge", keep_alive_period_in_seconds=seconds)
    assert list(warm_pool(ctx)) == []


@pytest.mark.both_sdks
def test_a_keep_alive_of_0_is_no_warm_pool_even_beside_spot(tmp_path):
    ctx = _context(tmp_path, instance_type="ml.g5.xlarge", keep_alive_period_in_seconds=0, **SPOT)
    assert list(warm_pool(ctx)) == []
    assert warm_pool_injections(ctx) == []


@pytest.mark.both_sdks
def test_the_smallest_warm_pool_is_recorded_with_the_quota_it_needs(tmp_path):
    ctx = _context(tmp_path, instance_type="ml.g5.xlarge", keep_alive_period_in_seconds=1)
    [injection] = warm_pool_injections(ctx)
    assert (injection.path, injection.value, injection.reason) == (
        "keep_alive_period_in_seconds",
        1,
        "kept as given: a warm pool of ml.g5.xlarge for 1 s after the job. The default "
        "warm-pool quota of an account is 0 per instance type: the job runs either way, but "
        "nothing is retained until a Service Quotas increase for 'ml.g5.xlarge for training "
        "warm pool usage' is granted.",
    )


def _storage_verdicts(folder: Path, instance_type: str, size: Any) -> list[str]:
    ctx = _context(folder, instance_type=instance_type, volume_size=size)
    return [p.severity for p in instance_storage(ctx)]


@pytest.mark.both_sdks
@pytest.mark.parametrize(
    ("instance_type", "size", "expected"),
    [
        ("ml.g5.2xlarge", 450, []),  # one 450 GB disk: exactly its size
        ("ml.g5.2xlarge", 451, ["error"]),
        ("ml.g6.12xlarge", 940, []),  # 4 x 940 GB
        ("ml.g6.12xlarge", 941, ["warning"]),
        ("ml.g6.12xlarge", 3760, ["warning"]),  # all four disks, exactly
        ("ml.g6.12xlarge", 3761, ["error"]),
        ("ml.p3.16xlarge", 5000, []),  # EBS only
        ("ml.m5.xlarge", 5000, []),
    ],
)
def test_volume_size_at_the_nvme_boundaries(tmp_path, instance_type, size, expected):
    assert _storage_verdicts(tmp_path, instance_type, size) == expected


@pytest.mark.both_sdks
def test_a_volume_above_one_nvme_disk_of_several_is_a_warning_in_full(tmp_path):
    ctx = _context(tmp_path, instance_type="ml.g6.12xlarge", volume_size=941)
    assert _said(instance_storage(ctx)) == [
        (
            "warning",
            "volume_size",
            "is 941 GB, more than one NVMe disk of ml.g6.12xlarge (4 x 940 GB, 3760 GB in all); "
            "SageMaker refuses a volume_size above the NVMe volume's size, and the documentation "
            "does not say whether that is one disk or all of them.",
            "remove volume_size (SageMaker uses all of ml.g6.12xlarge's NVMe storage); or pick "
            "an EBS-backed type for a larger volume.",
            [(("volume_size", REMOVE),)],
        )
    ]


@pytest.mark.both_sdks
def test_two_nvme_disks_are_counted_as_two(tmp_path):
    ctx = _context(tmp_path, instance_type="ml.g6e.12xlarge", volume_size=1901)
    [problem] = instance_storage(ctx)
    assert problem.message.startswith(
        "is 1901 GB, more than one NVMe disk of ml.g6e.12xlarge (2 x 1900 GB, 3800 GB in all); "
    )


@pytest.mark.both_sdks
def test_a_volume_above_the_only_nvme_disk_is_an_error_in_full(tmp_path):
    ctx = _context(tmp_path, instance_type="ml.g5.2xlarge", volume_size=451)
    assert _said(instance_storage(ctx)) == [
        (
            "error",
            "volume_size",
            "is 451 GB, more than the NVMe instance storage of ml.g5.2xlarge (one 450 GB disk, "
            "450 GB in all), which SageMaker uses instead of an EBS volume; it refuses the job "
            "(Invalid VolumeSizeInGB).",
            "remove volume_size (SageMaker uses all of ml.g5.2xlarge's NVMe storage); or pick "
            "an EBS-backed type for a larger volume.",
            [(("volume_size", REMOVE),)],
        )
    ]


@pytest.mark.both_sdks
def test_the_volume_is_checked_against_every_instance_group(tmp_path):
    groups = [
        {"instance_group_name": "a", "instance_type": "ml.g5.2xlarge", "instance_count": 1},
        {"instance_group_name": "b", "instance_type": "ml.g5.xlarge", "instance_count": 1},
        {"instance_group_name": "c", "instance_type": "ml.m5.xlarge", "instance_count": 1},
    ]
    ctx = _context(tmp_path, instance_groups=groups, volume_size=300)
    [problem] = instance_storage(ctx)  # 300 GB: within g5.2xlarge's 450, over g5.xlarge's 250
    assert problem.message.startswith("is 300 GB, more than the NVMe instance storage of ml.g5.xl")


@pytest.mark.both_sdks
def test_a_warm_pool_or_volume_not_given_as_a_number_is_left_to_the_type_checks(tmp_path):
    ctx = _context(
        tmp_path, instance_type="ml.g5.xlarge", keep_alive_period_in_seconds="1800",
        volume_size="1000", **SPOT,
    )  # fmt: skip
    assert (list(warm_pool(ctx)), warm_pool_injections(ctx), list(instance_storage(ctx))) == (
        [],
        [],
        [],
    )


# --- training plans, volume keys, pending time (_rules/capacity) -----------------------------

PLAN = "arn:aws:sagemaker:us-west-2:111122223333:training-plan/my-plan"
EU_PLAN = "arn:aws:sagemaker:eu-west-1:111122223333:training-plan/my-plan"
KEY = "arn:aws:kms:us-west-2:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
MIXED_GROUPS = [
    {"instance_group_name": "a", "instance_type": "ml.p5.48xlarge", "instance_count": 1},
    {"instance_group_name": "b", "instance_type": "ml.nope.xlarge", "instance_count": 1},
    {"instance_group_name": "c", "instance_type": "ml.g5.xlarge", "instance_count": 1},
]


@pytest.mark.both_sdks
def test_a_plan_on_a_group_no_plan_reserves_is_refused_at_that_group_in_full(tmp_path):
    # The unknown ml.nope.xlarge is the instance_groups rules' to report, not this one's.
    ctx = _context(tmp_path, instance_groups=MIXED_GROUPS, training_plan=PLAN)
    reservable = ", ".join(sorted(training_plan_instance_types()))
    assert "ml.p5.48xlarge" in reservable and "ml.g5.xlarge" not in reservable
    assert _said(training_plan_instance_type(ctx)) == [
        (
            "error",
            "instance_groups.2.instance_type",
            f"is ml.g5.xlarge, and the job runs on training plan {PLAN!r}; a training plan "
            f"reserves only {reservable} (botocore's ReservedCapacityInstanceType), and the "
            "job's instance type must match its plan's (AWS's user guide, 'Create a training "
            "job using the API, AWS CLI, SageMaker SDK'): CreateTrainingJob refuses this job.",
            "remove training_plan (on-demand capacity); or run on the instance type your plan "
            "reserved.",
            [(("training_plan", REMOVE),)],
        )
    ]


@pytest.mark.both_sdks
@pytest.mark.parametrize("plan", ["", None])
def test_no_plan_is_no_plan_problem(tmp_path, plan):
    ctx = _context(tmp_path, instance_type="ml.g5.xlarge", training_plan=plan)
    assert list(training_plan_instance_type(ctx)) == []


@pytest.mark.both_sdks
def test_a_volume_key_is_refused_on_each_group_with_local_storage_in_full(tmp_path):
    ctx = _context(tmp_path, instance_groups=MIXED_GROUPS, volume_kms_key=KEY)

    def refused(at: str, kind: str, storage: str) -> tuple[Any, ...]:
        return (
            "error",
            "volume_kms_key",
            f"is set, and {at} {kind} has local NVMe storage ({storage}), which SageMaker "
            "encrypts with the instance's hardware module; botocore's documentation of "
            "ResourceConfig.VolumeKmsKeyId: a VolumeKmsKeyId cannot be requested with an "
            "instance type that has local storage, so CreateTrainingJob refuses the job.",
            f"remove volume_kms_key ({kind}'s storage is encrypted by the instance); or pick an "
            "EBS-backed instance type to encrypt the volume with your key.",
            [(("volume_kms_key", REMOVE),)],
        )

    assert _said(volume_key_on_local_storage(ctx)) == [
        refused("instance_groups.0.instance_type", "ml.p5.48xlarge", "8 x 3800 GB"),
        refused("instance_groups.2.instance_type", "ml.g5.xlarge", "1 x 250 GB"),
    ]


@pytest.mark.both_sdks
@pytest.mark.parametrize(
    ("instance_type", "key"),
    [("ml.p3.16xlarge", KEY), ("ml.nope.xlarge", KEY), ("ml.g5.xlarge", ""), ("ml.g5.xlarge", 7)],
)
def test_no_volume_key_problem_without_local_storage_or_a_key(tmp_path, instance_type, key):
    ctx = _context(tmp_path, instance_type=instance_type, volume_kms_key=key)
    assert list(volume_key_on_local_storage(ctx)) == []


def _trainer_words_context(folder: Path, instance_type: str, stopping: Any) -> Any:
    ctx = _context(folder, compute={"instance_type": instance_type})
    words = ctx.spec.trainer
    trainer = attrs.evolve(words, given={**words.given, "stopping_condition": stopping})
    return attrs.evolve(ctx, spec=attrs.evolve(ctx.spec, trainer=trainer))


PENDING_ON_CPU = (
    "warning",
    "stopping_condition.max_pending_time_in_seconds",
    "is 7200 s, and instance_type ml.m5.xlarge has no GPU or other accelerator; botocore's "
    "documentation of MaxPendingTimeInSeconds: it has no effect on jobs that request CPU-only "
    "instance types, so the job may wait longer.",
    "remove it on a CPU instance type (it limits the wait for accelerated capacity, such as a "
    "training plan's).",
    [],
)


@pytest.mark.both_sdks
def test_a_pending_limit_on_a_cpu_type_is_a_warning_in_full_from_a_file_or_an_object(tmp_path):
    as_written = {"max_runtime_in_seconds": 3600, "max_pending_time_in_seconds": 7200}
    ctx = _trainer_words_context(tmp_path, "ml.m5.xlarge", as_written)
    assert _said(max_pending_on_cpu(ctx)) == [PENDING_ON_CPU]
    ctx = _trainer_words_context(
        tmp_path, "ml.m5.xlarge", _stopping_condition_class()(**as_written)
    )
    assert _said(max_pending_on_cpu(ctx)) == [PENDING_ON_CPU]


@pytest.mark.both_sdks
@pytest.mark.parametrize(
    ("instance_type", "stopping"),
    [
        ("ml.g5.xlarge", {"max_pending_time_in_seconds": 7200}),  # a GPU type: it applies
        ("ml.m5.xlarge", {"max_runtime_in_seconds": 3600}),
        ("ml.m5.xlarge", {"max_pending_time_in_seconds": "7200"}),
        ("ml.m5.xlarge", None),
    ],
)
def test_no_pending_limit_problem_where_it_applies_or_is_absent(tmp_path, instance_type, stopping):
    ctx = _trainer_words_context(tmp_path, instance_type, stopping)
    assert list(max_pending_on_cpu(ctx)) == []


@pytest.mark.both_sdks
def test_a_pending_limit_in_the_estimators_words_is_not_modeltrainers(tmp_path):
    ctx = _context(tmp_path, instance_type="ml.m5.xlarge", target="estimator")
    assert ctx.spec.trainer is None
    assert list(max_pending_on_cpu(ctx)) == []


def _stopping_condition_class() -> Any:
    if SDK3:
        from sagemaker.core.training.configs import StoppingCondition
    else:
        from sagemaker.modules.configs import StoppingCondition
    return StoppingCondition


@pytest.mark.both_sdks
def test_a_plan_of_another_region_says_where_to_create_the_job_in_full():
    problem = plan_region_problem("compute.training_plan_arn", EU_PLAN, "us-west-2")
    assert problem is not None
    assert (problem.severity, problem.path, problem.message, problem.hint) == (
        "error",
        "compute.training_plan_arn",
        "is a training plan of eu-west-1 (its ARN says so), and the job is created in "
        "us-west-2: a plan reserves capacity in its own region only, so CreateTrainingJob in "
        "us-west-2 cannot run on it.",
        "create the job in eu-west-1 (AWS_REGION, or the session's region), or use a training "
        "plan of us-west-2.",
    )


@pytest.mark.both_sdks
@pytest.mark.parametrize(
    ("plan", "region"),
    [
        (EU_PLAN, None),  # validate: no region known
        (EU_PLAN, ""),
        (PLAN, "us-west-2"),  # the plan's own region
        ("my-plan", "us-west-2"),  # a name, not an ARN
        (EU_PLAN.replace("111122223333", "11112222333"), "us-west-2"),  # 11-digit account
        (EU_PLAN.replace("arn:", "xarn:"), "us-west-2"),
        (EU_PLAN.replace(":training-plan/", ":training-job/"), "us-west-2"),
        (EU_PLAN.replace("my-plan", ""), "us-west-2"),
        (7, "us-west-2"),
    ],
)
def test_no_region_problem_unless_a_plan_arn_names_another_region(plan, region):
    assert plan_region_problem("training_plan", plan, region) is None


@pytest.mark.both_sdks
def test_a_plan_arn_of_another_partition_names_its_region():
    plan = "arn:aws-cn:sagemaker:cn-north-1:111122223333:training-plan/my-plan"
    problem = plan_region_problem("training_plan", plan, "cn-northwest-1")
    assert problem is not None and problem.message.startswith("is a training plan of cn-north-1 ")


@pytest.mark.both_sdks
def test_the_plan_region_rule_speaks_only_where_the_jobs_region_is_known(tmp_path):
    ctx = _context(tmp_path, instance_type="ml.p5.48xlarge", training_plan=EU_PLAN)
    assert list(training_plan_region(ctx)) == []
    with job_created_in("us-west-2"):
        [problem] = training_plan_region(ctx)
    assert problem.path == "training_plan"
    assert problem.message == plan_region_problem("training_plan", EU_PLAN, "us-west-2").message
    with job_created_in("eu-west-1"):
        assert list(training_plan_region(ctx)) == []


# --- the estimate as plan, --json and the notebook show it (_memory/accounting) --------------


def test_the_estimate_of_llama_2_7b_sharded_over_a_p4d_reads_in_full():
    # 6,442,717,184 parameters (counted from the architecture), bf16 Adam over 8 shards: 2 + 2
    # + 12 bytes each / 8. Activations: 32 checkpointed layer inputs (2sbh each) plus one layer's
    # 34sbh while it is recomputed (a fused attention keeps no scores). Overhead: the CUDA
    # context and one gathered layer at 4 bytes per parameter.
    job = on_p4d(
        LLAMA_2_7B, MemoryLayout(world_size=8, gpus_per_instance=8, launcher="SMP v2", shard=8)
    )
    result = job.estimate()
    sbh = 4096 * 4096
    assert result.activations == 32 * 2 * sbh + 34 * sbh - 2 * sbh
    assert str(result) == (
        "16.0 GB per accelerator (37% of 42.9 GB per A100 of ml.p4d.24xlarge): weights 1.6 GB "
        "+ gradients 1.6 GB + optimizer states 9.7 GB + activations 1.6 GB + overhead 1.5 GB "
        "= 16.0 GB"
    )
    assert result.to_dict() == {
        "weights": 1_610_679_296,
        "gradients": 1_610_679_296,
        "optimizer_states": 9_664_075_776,
        "activations": 1_610_612_736,
        "overhead": 1_471_971_328,
        "model_states": 12_885_434_368,
        "total": 15_968_018_432,
        "device_memory": 40 * 1024**3,
        "fits": True,
        "instance_type": "ml.p4d.24xlarge",
        "accelerator": "A100",
        "layout": "SMP v2 over 8 accelerators, sharded 8",
        "notes": [
            "parameters 6,442,717,184 counted from the architecture (assuming as many key/value "
            "heads as attention heads (give key_value_heads); an MLP 4 x hidden_size wide (give "
            "intermediate_size); an MLP of two matrices (give model_type: a gated one has "
            "three); tied input and output embeddings (give tied_embeddings))"
        ],
    }


def test_an_estimate_without_the_architecture_says_what_it_left_out():
    # Quantization on a full fine-tune, sharding with no hidden_size, no activations: each noted.
    shape = complete(ModelShape(parameters="7B", precision="bf16", quantization="4bit"))
    result = estimate(shape, MemoryLayout(world_size=8, shard=8))
    assert result.notes == (
        "the layer gathered at a time by sharding is not counted (no hidden_size)",
        "quantization 4bit not counted: every parameter is trainable (give "
        "trainable_parameters, the adapters' count)",
        "activations not estimated: give layers, hidden_size, attention_heads, sequence_length "
        "and micro_batch_size (or config)",
    )
    assert (result.weights, result.overhead) == (7e9 * 2 / 8, 666_632_192)
    assert str(result) == (
        "14.7 GB per accelerator: weights 1.8 GB + gradients 1.8 GB + optimizer states 10.5 GB "
        "+ activations not estimated + overhead 0.7 GB = 14.7 GB"
    )
    assert result.to_dict()["activations"] is None
    assert (result.to_dict()["device_memory"], result.to_dict()["fits"]) == (None, None)


@pytest.mark.parametrize(
    ("shape", "note"),
    [
        (
            ModelShape(parameters="7B", trainable_parameters="20M", precision="bf16",
                       hidden_size=4096, vocab_size=32000, quantization="4bit"),
            "frozen weights counted at 4bit, except the embeddings",
        ),
        (
            ModelShape(parameters="7B", trainable_parameters="20M", precision="bf16",
                       quantization="8bit"),
            "frozen weights counted at 8bit, the embeddings among them (vocab_size and "
            "hidden_size not known)",
        ),
    ],
)  # fmt: skip
def test_quantized_frozen_weights_are_noted_with_what_was_counted(shape, note):
    assert note in estimate(complete(shape), MemoryLayout()).notes


def _bare(total: int, device: int | None, **where: Any) -> MemoryEstimate:
    return MemoryEstimate(
        weights=total, gradients=0, optimizer_states=0, activations=0, overhead=0,
        device_memory=device, **where,
    )  # fmt: skip


def test_an_estimate_fits_up_to_the_last_byte_and_is_tight_above_90_percent():
    assert (_bare(1000, 1000).fits, _bare(1001, 1000).fits) == (True, False)
    assert (_bare(900, 1000).tight, _bare(901, 1000).tight) == (False, True)
    assert _bare(1001, 1000).tight is False  # not fitting is not tight, it is over
    assert (_bare(500, 1000).fraction, _bare(500, None).fraction) == (0.5, None)
    assert (_bare(500, None).fits, _bare(500, None).tight) == (None, False)


def test_the_device_is_named_as_far_as_it_is_known():
    gb_40 = 40 * 1024**3
    assert _bare(1, gb_40, accelerator="A100", instance_type="ml.p4d.24xlarge").device() == (
        "42.9 GB per A100 of ml.p4d.24xlarge"
    )
    assert _bare(1, gb_40).device() == "42.9 GB per accelerator"
    assert _bare(1, None).device() == "an unknown device memory"
    assert str(_bare(10**9, gb_40)).startswith("1.0 GB per accelerator (2% of 42.9 GB per ")


# --- the job's estimate: what the launcher's options and the instance add (_memory/rule) -----

BATCH_8 = {"per_device_train_batch_size": 8}


@pytest.mark.parametrize(
    ("options", "batch", "precision", "notes"),
    [
        (
            {"microbatches": 4, "fp16": True, "pipeline_parallel_degree": 2},
            2,
            "fp16",
            ("micro_batch_size 2 from hyperparameters.per_device_train_batch_size / 4 "
             "microbatches", "precision fp16 from the model-parallel options"),
        ),
        (
            {"bf16": True},
            8,
            "bf16",
            ("micro_batch_size 8 from hyperparameters.per_device_train_batch_size",
             "precision bf16 from the model-parallel options"),
        ),
        (
            {"fp16_params": True},
            8,
            "fp16",
            ("micro_batch_size 8 from hyperparameters.per_device_train_batch_size",
             "precision fp16 from the model-parallel options"),
        ),
        (
            None,
            8,
            "fp32",
            ("micro_batch_size 8 from hyperparameters.per_device_train_batch_size",
             "precision fp32 (no bf16/fp16 given)"),
        ),
    ],
)  # fmt: skip
def test_the_model_parallel_options_give_the_precision_and_split_the_batch(
    options, batch, precision, notes
):
    model_parallel = None if options is None else safe_estimators.ModelParallel(**options)
    shape, problems = shape_of_job(ModelShape(parameters="7B"), BATCH_8, model_parallel)
    assert (shape.micro_batch_size, shape.precision, shape.notes, problems) == (
        batch,
        precision,
        notes,
        [],
    )


def _job_estimate(shape: ModelShape | None, instance: str | None, count: int = 2) -> Any:
    return job_estimate(
        shape, instance=None if instance is None else instance_catalog.get(instance),
        instance_count=count, hyperparameters={}, distribution=None, model_parallel=None,
    )  # fmt: skip


def test_a_model_with_nothing_to_count_is_a_warning_and_no_estimate():
    job, result, [problem] = _job_estimate(ModelShape(layers=2), "ml.g5.xlarge")
    assert (job, result) == (None, None)
    assert (problem.severity, problem.path, problem.message, problem.hint) == (
        "warning",
        "model",
        "gives neither parameters nor the architecture to count them from, so no memory "
        "estimate is made.",
        'add parameters (e.g. "7B"), or layers and hidden_size, or config.',
    )
    assert _job_estimate(None, "ml.g5.xlarge") == (None, None, [])


@pytest.mark.parametrize("instance", ["ml.m5.xlarge", None])
def test_a_cpu_or_unknown_instance_gets_an_estimate_but_no_verdict(instance):
    job, result, problems = _job_estimate(ModelShape(parameters="7B"), instance)
    assert (job, problems) == (None, [])
    assert (result.device_memory, result.instance_type, result.fits) == (None, None, None)
    assert result.model_states == 7e9 * 16


def test_a_trainium_job_is_estimated_per_neuroncore_of_every_instance():
    job, result, problems = _job_estimate(ModelShape(parameters="7B"), "ml.trn1.32xlarge")
    assert problems == [] and job is not None and job.instance_count == 2
    assert (result.layout, result.accelerator, result.device_memory) == (
        "data-parallel over 64 accelerators",
        "Trainium NeuronCore",
        16 * 1024**3,
    )
    assert memory_problems(job, result)[0].message.startswith(
        "the job needs about 112.7 GB per accelerator, more than the 17.2 GB per Trainium "
        "NeuronCore of ml.trn1.32xlarge: "
    )


# --- several unseen things at once: how the verdict joins them --------------------------------

SHARDS_UNSEEN = "import my_trainer_lib\nmy_trainer_lib.wrap(model)\n"
QUANTIZED_UNLESS = (
    "the script loads the frozen weights quantized (bitsandbytes 4-bit, as QLoRA does): "
    "model.quantization does not say"
)
SHARDED_UNLESS = (
    "the training script shards the model states itself (FSDP FULL_SHARD, DeepSpeed ZeRO-3): "
    "the launcher does not say, and the script cannot tell: it imports my_trainer_lib, which "
    "may shard"
)


def _lora_under_torchrun(folder: Path, config: dict[str, Any], instance_type: str) -> Any:
    # LoRA adapters on weights loaded with arguments out of sight, wrapped by a library the
    # checks cannot read: the 4-bit load and the sharding are both unseen.
    load = "torch_dtype=torch.bfloat16, **loading"
    (folder / "train.py").write_text(verdicts.LORA.format(load=load) + SHARDS_UNSEEN)
    (folder / "config.json").write_text(json.dumps(config))
    return safe_estimators.pytorch(
        entry_point="train.py", source_dir=str(folder), role=verdicts.ROLE,
        instance_type=instance_type, instance_count=1, framework_version="2.3.0",
        py_version="py311", distribution=verdicts.TORCHRUN,
        model={"config": str(folder / "config.json"), "sequence_length": 2048,
               "micro_batch_size": 1, "precision": "bf16", "activation_checkpointing": True},
    )  # fmt: skip


def test_either_unseen_thing_alone_would_fit_so_the_warning_names_each(tmp_path):
    # Llama-3.1-8B's 16.1 GB of frozen bf16 weights on 4 T4s: in 4 bits, or sharded over 4.
    estimator = _lora_under_torchrun(tmp_path, verdicts.LLAMA_3_1_8B, "ml.g4dn.12xlarge")
    assert verdicts.memory_warnings(estimator) == [
        "the job needs about 18.8 GB per accelerator, more than the 17.2 GB per T4 of "
        "ml.g4dn.12xlarge: model states 16.2 GB (weights + gradients + optimizer states); "
        "weights 16.1 GB + gradients 0.0 GB + optimizer states 0.1 GB + activations 2.0 GB + "
        "overhead 0.7 GB = 18.8 GB (data-parallel over 4 accelerators), unless "
        f"{QUANTIZED_UNLESS}; or unless {SHARDED_UNLESS}."
    ]


def test_only_both_unseen_things_together_fit_so_the_warning_says_all_must_hold(tmp_path):
    # Llama-3.3-70B on 8 A10Gs: 141 GB of frozen weights, 17.6 GB each sharded (beside 4.5 GB
    # of activations), 40 GB in 4 bits; both: about 5 GB.
    estimator = _lora_under_torchrun(tmp_path, verdicts.LLAMA_3_3_70B, "ml.g5.48xlarge")
    assert verdicts.memory_warnings(estimator) == [
        "the job needs about 146.7 GB per accelerator, more than the 24.0 GB per A10G of "
        "ml.g5.48xlarge: model states 141.6 GB (weights + gradients + optimizer states); "
        "weights 141.1 GB + gradients 0.1 GB + optimizer states 0.4 GB + activations 4.5 GB + "
        "overhead 0.7 GB = 146.7 GB (data-parallel over 8 accelerators), unless all of these "
        f"hold: {QUANTIZED_UNLESS}; and {SHARDED_UNLESS}."
    ]


def test_an_error_under_both_unseen_things_names_each_reading_assumed(tmp_path):
    message = _model_error(
        lambda: _lora_under_torchrun(tmp_path, verdicts.LLAMA_3_3_70B, "ml.g4dn.12xlarge")
    )
    assert message.endswith(
        " = 146.7 GB (data-parallel over 4 accelerators). It cannot fit under any reading of "
        "what the checks cannot see: even with the frozen weights in 4 bits (QLoRA); with the "
        "model states sharded over all 4 GPUs, it needs 19.8 GB per accelerator."
    )


def test_a_tight_warnings_fixes_bring_the_job_under_90_percent_not_just_under_the_device():
    # Llama-2-7B's shape at micro-batch 22 (sequence 3072): 95% of an A100. A micro-batch of 21
    # would fit the device at 39.7 GB (93%), still above 90%; the fix offered is 20 (38.5 GB).
    shape = ModelShape(
        layers=32, hidden_size=4096, attention_heads=32, sequence_length=3072,
        micro_batch_size=22, precision="bf16", activation_checkpointing=True,
    )  # fmt: skip
    job = on_p4d(shape, attrs.evolve(P4D_SMP_V2, shard=8))
    [problem] = memory_problems(job, job.estimate())
    assert (problem.severity, problem.hint) == (
        "warning",
        "use ml.p4de.24xlarge: 85.9 GB per A100, 8 per instance (-> 40.9 GB per accelerator); "
        "or lower the micro-batch from 22 to 20 per process (raise gradient accumulation to "
        "keep the global batch) (-> 38.5 GB per accelerator).",
    )
    assert problem.message.startswith(
        "the job needs about 40.9 GB per accelerator, 95% of the 42.9 GB per A100 of "
        "ml.p4d.24xlarge, above 90%: "
    )


@pytest.mark.both_sdks
def test_a_distributed_block_naming_no_launcher_leaves_the_estimators_distribution_judged(
    tmp_path,
):
    # `distributed: {}` is refused by the spec's own check; the torchrun distribution beside it
    # still fixes 8 processes per node from the first type.
    options = {**TORCHRUN, "distributed": {}}
    ctx = _trainer_context(tmp_path, ["ml.p4d.24xlarge", "ml.g6e.12xlarge"], **options)
    assert [severity for severity, *_ in _per_node(ctx)] == ["error"]


def test_a_checkpointed_layer_input_is_divided_by_tensor_parallelism_only_with_sequence_parallel():
    # Table 2: full recomputation keeps 2sbh per layer; only sequence parallelism splits it
    # over the tensor-parallel ranks.
    s, b, h = 4096, 1, 4096
    assert checkpointed_layer(s, b, h) == 2 * s * b * h
    assert checkpointed_layer(s, b, h, tensor=2) == 2 * s * b * h
    assert checkpointed_layer(s, b, h, sequence_parallel=True) == 2 * s * b * h
    assert checkpointed_layer(s, b, h, tensor=2, sequence_parallel=True) == s * b * h


def _activations(layout: MemoryLayout, **shape: Any) -> int:
    given = {
        "parameters": "1B", "layers": 2, "hidden_size": 1024, "attention_heads": 8,
        "sequence_length": 512, "micro_batch_size": 3, "precision": "bf16", **shape,
    }  # fmt: skip
    return estimate(complete(ModelShape(**given)), layout).activations


def test_activations_without_checkpointing_follow_table_2_in_every_layout_term():
    # Two layers of 34sbh + 5as^2b (Korthikanti et al., Table 2) at 2 bytes per value; no
    # vocabulary, so no logits.
    s, b, h, a = 512, 3, 1024, 8
    sbh, scores = s * b * h, 5 * a * s * s * b
    unfused = {"fused_attention": False}
    assert _activations(MemoryLayout(), **unfused) == 2 * (34 * sbh + scores)
    assert _activations(MemoryLayout(), precision="fp32", **unfused) == 2 * 2 * (
        34 * sbh + scores
    )
    # Tensor parallelism over 2 splits the 24sbh inside and the scores; sequence parallelism the
    # 10sbh outside too.
    assert _activations(MemoryLayout(tensor=2), **unfused) == 2 * (
        10 * sbh + (24 * sbh + scores) / 2
    )
    assert _activations(MemoryLayout(tensor=2, sequence_parallel=True), **unfused) == 2 * (
        (34 * sbh + scores) / 2
    )
    # DataParallel scatters the micro-batch of 3 over 2 GPUs: 2 on the first (fused attention).
    assert _activations(MemoryLayout(batch_split=2)) == 2 * 34 * s * 2 * h


def test_checkpointed_activations_in_fp32_split_by_sequence_parallelism():
    # Per layer 2sbh at 4 bytes over 2 tensor ranks (2sbh bytes), plus one layer recomputed in
    # full: 34sbh at 4 bytes over 2 ranks, less its input counted already.
    sbh = 512 * 3 * 1024
    layout = MemoryLayout(tensor=2, sequence_parallel=True)
    got = _activations(layout, precision="fp32", activation_checkpointing=True)
    assert got == 2 * 2 * sbh + (34 * sbh - 2 * sbh)
