"""Tests written against the surviving mutants of ./dev mutate (tests/mutation_scope.py names
the modules these are tests of): the @remote rules (``_rules/remote.py``) and the fine-tuning
trainers' rules (``_rules/fine_tuning.py``).

Each pins what a user reads: the rule, the verdict, the path, the whole message and hint, and
the changes each offered fix makes. The @remote jobs go through ``check_remote_arguments`` (the
decorator's keyword arguments, each fix applied and checked again, as ``safe_estimators.remote``
does; no SDK call). The fine-tuning rules are called on the Context they take: on sagemaker 2
the trainers are refused before their rules run, and the rules need no sagemaker 3. The facts
they read from sagemaker 3's source are pinned here (``sdk3_facts``), and
``test_the_pinned_facts_are_the_installed_sdks`` checks them against the installed SDK.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any

import pytest

import instance_catalog
from safe_estimators._facts import fine_tuning as facts
from safe_estimators._facts.remote_function import STUDIO_IMAGE_VARIABLE
from safe_estimators._problems import REMOVE
from safe_estimators._recipes.fine_tuning import FineTuningRecipe
from safe_estimators._resolve.remote import check_remote_arguments
from safe_estimators._rules.fine_tuning import FineTuningContext, check_fine_tuning, not_checked
from safe_estimators._rules.remote import RemoteContext, check_remote, remote_injections
from safe_estimators._spec.fine_tuning import FineTuningCompute, FineTuningSpec
from safe_estimators._spec.remote import RemoteFunctionSpec

pytestmark = pytest.mark.both_sdks

IMAGE = "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.3.0-gpu-py311"
TOKEN = "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ012345"
SHOWN_TOKEN = "'hf_a'… (35 characters)"
SECRET_HINT = (
    "store it in AWS Secrets Manager and pass the secret's name or ARN instead (read it in the "
    "script with boto3); accept_exposure=['{}'] accepts the exposure."
)


def _said(problems: Any) -> list[tuple[Any, ...]]:
    """Each problem as a user meets it: rule, verdict, path, message, hint, and the changes of
    each fix offered."""
    return [
        (p.rule, p.severity, p.path, p.message, p.hint, [f.changes for f in p.fixes])
        for p in problems
    ]


def _remote(**options: Any) -> list[tuple[Any, ...]]:
    options.setdefault("image_uri", IMAGE)
    return _said(check_remote_arguments(options)[1])


# --- @remote: processes per node against the accelerators -------------------------------------


def test_processes_without_a_launcher_are_a_warning_with_both_ways_out():
    assert _remote(instance_type="ml.g5.12xlarge", nproc_per_node=4) == [
        (
            "remote-processes", "warning", "nproc_per_node",
            "is 4, but neither use_torchrun nor use_mpirun is set: the job runs the function in "
            "one process and nothing reads it.",
            "set use_torchrun=True (to start that many processes); or remove nproc_per_node; or "
            "set use_mpirun=True to start that many processes.",
            [(("use_torchrun", True),), (("nproc_per_node", REMOVE),)],
        )
    ]  # fmt: skip


def test_one_process_more_than_the_gpus_is_an_error_and_as_many_is_none():
    assert _remote(instance_type="ml.g5.12xlarge", use_torchrun=True, nproc_per_node=5) == [
        (
            "remote-processes", "error", "nproc_per_node",
            "is 5 with use_torchrun, but ml.g5.12xlarge has 4 GPUs: 1 process per instance "
            "would share or lack an accelerator, which NCCL refuses and cuda:<local rank> cannot "
            "name.",
            "set nproc_per_node=4; or remove nproc_per_node (the job counts the GPUs); or use an "
            "instance type with 5 GPUs.",
            [(("nproc_per_node", 4),), (("nproc_per_node", REMOVE),)],
        )
    ]  # fmt: skip
    assert _remote(instance_type="ml.g5.12xlarge", use_mpirun=True, nproc_per_node=4) == []


def test_fewer_processes_than_the_gpus_warn_of_the_idle_ones():
    assert _remote(instance_type="ml.g5.12xlarge", use_mpirun=True, nproc_per_node=3) == [
        (
            "remote-processes", "warning", "nproc_per_node",
            "is 3 with use_mpirun, and ml.g5.12xlarge has 4 GPUs: 1 sits idle while the job is "
            "billed for all.",
            "set nproc_per_node=4; or remove nproc_per_node; or use a smaller instance type.",
            [(("nproc_per_node", 4),), (("nproc_per_node", REMOVE),)],
        )
    ]  # fmt: skip
    [(*_, message, _, _)] = _remote(
        instance_type="ml.p4d.24xlarge", use_torchrun=True, nproc_per_node=2
    )
    assert message == (
        "is 2 with use_torchrun, and ml.p4d.24xlarge has 8 GPUs: 6 sit idle while the job is "
        "billed for all."
    )


def test_neuroncores_are_counted_on_trainium():
    assert _remote(instance_type="ml.trn1.32xlarge", use_torchrun=True, nproc_per_node=34) == [
        (
            "remote-processes", "error", "nproc_per_node",
            "is 34 with use_torchrun, but ml.trn1.32xlarge has 32 NeuronCores: 2 processes per "
            "instance would share or lack an accelerator, which NCCL refuses and cuda:<local "
            "rank> cannot name.",
            "set nproc_per_node=32; or remove nproc_per_node (the job counts the NeuronCores); or "
            "use an instance type with 34 NeuronCores.",
            [(("nproc_per_node", 32),), (("nproc_per_node", REMOVE),)],
        )
    ]  # fmt: skip


def test_a_launcher_or_nothing_on_an_accelerated_type_without_processes_is_no_problem():
    assert _remote(instance_type="ml.g5.12xlarge", use_torchrun=True) == []
    assert _remote(instance_type="ml.g5.12xlarge") == []
    assert _remote(instance_type="ml.m5.xlarge") == []


# --- @remote: a launcher on a CPU type -----------------------------------------------------------

_CPU_HINT = (
    "use an accelerated instance type (ml.g5.12xlarge, ml.p4d.24xlarge, ...), or keep this type "
    "for a CPU (gloo) function."
)


def test_a_launcher_on_a_cpu_type_starts_one_process_per_vcpu():
    assert _remote(instance_type="ml.m5.4xlarge", use_mpirun=True) == [
        (
            "remote-launcher-on-cpu", "warning", "use_mpirun",
            "is set on ml.m5.4xlarge, which has no GPU or NeuronCore: the job starts 16 "
            "processes per instance (one per vCPU), and a function that trains on cuda or with "
            "NCCL fails there.",
            _CPU_HINT,
            [],
        )
    ]  # fmt: skip


def test_a_launcher_on_a_cpu_type_with_processes_starts_those():
    assert _remote(instance_type="ml.m5.4xlarge", use_torchrun=True, nproc_per_node=2) == [
        (
            "remote-launcher-on-cpu", "warning", "use_torchrun",
            "is set on ml.m5.4xlarge, which has no GPU or NeuronCore: the job starts 2 processes "
            "per instance (nproc_per_node), and a function that trains on cuda or with NCCL "
            "fails there.",
            _CPU_HINT,
            [],
        )
    ]  # fmt: skip


def test_an_unknown_type_is_named_with_its_closest_types_and_nothing_else():
    assert _remote(instance_type="ml.p4d.24xlarg", use_torchrun=True) == [
        (
            "remote-instance-type", "error", "instance_type",
            "'ml.p4d.24xlarg' is not a SageMaker training instance type.",
            "set instance_type='ml.p4d.24xlarge'; or set instance_type='ml.p4de.24xlarge'; or "
            "set instance_type='ml.p3dn.24xlarge'; or see `safe-estimators catalog` for the "
            "types.",
            [
                (("instance_type", "ml.p4d.24xlarge"),),
                (("instance_type", "ml.p4de.24xlarge"),),
                (("instance_type", "ml.p3dn.24xlarge"),),
            ],
        )
    ]  # fmt: skip
    # neither the launcher nor the volume key is judged on a type the catalog does not know
    unknown = _remote(instance_type="ml.m5.xlarg", use_mpirun=True, volume_kms_key="alias/k")
    assert [p[2] for p in unknown] == ["instance_type"]


# --- @remote: several instances ------------------------------------------------------------------

_SEVERAL = (
    "is 2, and the SDK's @remote runs several instances only with exactly one of spark_config, "
    "use_torchrun and use_mpirun ({} given): calling the function raises ValueError before any "
    "job starts."
)


def test_two_instances_without_a_launcher_are_refused_with_torchrun_or_one_instance():
    assert _remote(instance_type="ml.p4d.24xlarge", instance_count=2) == [
        (
            "remote-several-instances", "error", "instance_count",
            _SEVERAL.format("none of them"),
            "set use_torchrun=True alone; or set instance_count=1; or set use_mpirun=True alone.",
            [(("use_torchrun", True),), (("instance_count", 1),)],
        )
    ]  # fmt: skip


def test_two_instances_with_both_launchers_turn_mpirun_off():
    both = _remote(
        instance_type="ml.p4d.24xlarge", instance_count=2, use_torchrun=True, use_mpirun=True
    )
    assert both == [
        (
            "remote-several-instances", "error", "instance_count",
            _SEVERAL.format("use_torchrun and use_mpirun"),
            "set use_torchrun=True alone; or set instance_count=1; or set use_mpirun=True alone.",
            [(("use_torchrun", True), ("use_mpirun", False)), (("instance_count", 1),)],
        )
    ]  # fmt: skip


def test_two_instances_with_spark_and_mpirun_keep_spark_out_of_the_fixes():
    problems = _remote(
        instance_type="ml.m5.xlarge", instance_count=2, spark_config={"c": 1}, use_mpirun=True,
        image_uri=None,
    )  # fmt: skip
    assert [p for p in problems if p[0] == "remote-several-instances"] == [
        (
            "remote-several-instances", "error", "instance_count",
            _SEVERAL.format("spark_config and use_mpirun"),
            "set instance_count=1; or set use_mpirun=True alone.",
            [(("instance_count", 1),)],
        )
    ]  # fmt: skip


def test_two_instances_with_one_launcher_and_one_instance_with_none_are_right():
    assert _remote(instance_type="ml.p4d.24xlarge", instance_count=2, use_mpirun=True) == []
    assert _remote(
        instance_type="ml.m5.xlarge", instance_count=2, spark_config={}, image_uri=None
    ) == []
    assert _remote(instance_type="ml.m5.xlarge", instance_count=1) == []


# --- @remote: Spark, the default image -----------------------------------------------------------

_SPARK = (
    "is set with spark_config; the SDK's @remote raises ValueError when the function is "
    "decorated: a Spark job runs in the SageMaker Spark image."
)


def test_spark_refuses_an_image_and_a_conda_environment_each_by_name(monkeypatch):
    # in Studio (its image named), removing spark_config leaves no default-image error
    monkeypatch.setenv(STUDIO_IMAGE_VARIABLE, IMAGE)
    assert _remote(instance_type="ml.m5.xlarge", spark_config={}) == [
        (
            "remote-spark", "error", "image_uri", _SPARK, "remove image_uri; or remove "
            "spark_config.", [(("image_uri", REMOVE),), (("spark_config", REMOVE),)],
        )
    ]  # fmt: skip
    assert _remote(
        instance_type="ml.m5.xlarge", spark_config={}, image_uri=None, job_conda_env="env"
    ) == [
        (
            "remote-spark", "error", "job_conda_env", _SPARK, "remove job_conda_env; or remove "
            "spark_config.", [(("job_conda_env", REMOVE),), (("spark_config", REMOVE),)],
        )
    ]  # fmt: skip
    assert _remote(instance_type="ml.m5.xlarge", job_conda_env="env") == []


def _image_context(local_python: str, studio: bool = False, **options: Any) -> RemoteContext:
    spec = RemoteFunctionSpec(instance_type="ml.m5.xlarge", **options)
    return RemoteContext(spec, instance_catalog.get("ml.m5.xlarge"), local_python, studio)


def test_without_an_image_a_python_the_sdk_has_no_image_for_is_refused():
    # The SDK's _get_default_image lists 3.10 and 3.8 (both generations).
    assert _said(check_remote(_image_context("311"))) == [
        (
            "remote-default-image", "error", "image_uri",
            "is not set, and this Python is 3.11: the SDK's default image exists only for "
            "Python 3.10, 3.8, so calling the function raises ValueError (the image must run "
            "the function with the Python that pickled it).",
            "pass image_uri= an image with Python 3.11 (a SageMaker PyTorch training image, or "
            "your own), or define the function under Python 3.10.",
            [],
        )
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("local_python", "studio", "options"),
    [
        ("310", False, {}),
        ("38", False, {}),
        ("311", True, {}),  # Studio names its own image
        ("311", False, {"image_uri": IMAGE}),
        ("311", False, {"spark_config": {}}),  # the Spark image
    ],
)
def test_the_default_image_is_no_problem_where_the_sdk_has_one(local_python, studio, options):
    assert check_remote(_image_context(local_python, studio, **options)) == []


# --- @remote: spot, warm pools, volume keys, secrets ---------------------------------------------

_WARM = (
    "is {} s with use_spot_instances=True; warm pools cannot be used with managed spot training "
    "(AWS's 'Train Using SageMaker Managed Warm Pools' page, Considerations): no pool is "
    "retained, or CreateTrainingJob refuses the job."
)


def test_a_spot_job_without_a_wait_is_given_the_runtime_as_its_wait():
    assert _remote(
        instance_type="ml.m5.xlarge", use_spot_instances=True, max_runtime_in_seconds=7200
    ) == [
        (
            "remote-spot", "error", "max_wait_time_in_seconds",
            "is required with use_spot_instances=True: the SDK sends no MaxWaitTimeInSeconds, "
            "and CreateTrainingJob refuses a managed spot job without it.",
            "set max_wait_time_in_seconds=7200 (at least max_runtime_in_seconds, 7200 s).",
            [(("max_wait_time_in_seconds", 7200),)],
        )
    ]  # fmt: skip


def test_a_spot_wait_one_second_short_of_the_runtime_is_refused_and_equal_is_right():
    spot = {"instance_type": "ml.m5.xlarge", "use_spot_instances": True}
    assert _remote(**spot, max_runtime_in_seconds=7200, max_wait_time_in_seconds=7199) == [
        (
            "remote-spot", "error", "max_wait_time_in_seconds",
            "is 7199 s, less than max_runtime_in_seconds (7200 s); CreateTrainingJob refuses the "
            "job.",
            "set max_wait_time_in_seconds=7200; or set max_runtime_in_seconds=7199.",
            [(("max_wait_time_in_seconds", 7200),), (("max_runtime_in_seconds", 7199),)],
        )
    ]  # fmt: skip
    assert _remote(**spot, max_runtime_in_seconds=7200, max_wait_time_in_seconds=7200) == []
    assert _remote(instance_type="ml.m5.xlarge", max_runtime_in_seconds=7200) == []


def test_a_warm_pool_of_one_second_beside_spot_warns_and_none_or_on_demand_do_not():
    spot = {"instance_type": "ml.m5.xlarge", "use_spot_instances": True,
            "max_wait_time_in_seconds": 86400}  # fmt: skip
    assert _remote(**spot, keep_alive_period_in_seconds=1) == [
        (
            "remote-warm-pool", "warning", "keep_alive_period_in_seconds", _WARM.format(1),
            "remove keep_alive_period_in_seconds; or train on on-demand instances "
            "(use_spot_instances=False, without max_wait_time_in_seconds).",
            [
                (("keep_alive_period_in_seconds", REMOVE),),
                (("use_spot_instances", False), ("max_wait_time_in_seconds", REMOVE)),
            ],
        )
    ]  # fmt: skip
    assert _remote(**spot, keep_alive_period_in_seconds=0) == []
    assert _remote(instance_type="ml.m5.xlarge", keep_alive_period_in_seconds=600) == []


def test_a_volume_key_is_refused_on_local_storage_only():
    assert _remote(instance_type="ml.p4d.24xlarge", volume_kms_key="alias/k") == [
        (
            "remote-volume-key", "error", "volume_kms_key",
            "is set, and instance_type ml.p4d.24xlarge has local NVMe storage (8 x 1000 GB), "
            "which SageMaker encrypts with the instance's hardware module; botocore's "
            "documentation of ResourceConfig.VolumeKmsKeyId: a VolumeKmsKeyId cannot be "
            "requested with an instance type that has local storage, so CreateTrainingJob "
            "refuses the job.",
            "remove volume_kms_key (ml.p4d.24xlarge's storage is encrypted by the instance); or "
            "pick an EBS-backed instance type to encrypt the volume with your key.",
            [(("volume_kms_key", REMOVE),)],
        )
    ]  # fmt: skip
    assert _remote(instance_type="ml.m5.xlarge", volume_kms_key="alias/k") == []
    assert _remote(instance_type="ml.p4d.24xlarge") == []


def test_a_token_in_the_environment_or_the_tags_is_a_warning_unless_accepted():
    assert _remote(
        instance_type="ml.m5.xlarge",
        environment_variables={"HF_TOKEN": TOKEN},
        tags=[{"Key": "t", "Value": TOKEN}],
    ) == [
        (
            "remote-secrets", "warning", "environment_variables.HF_TOKEN",
            f"looks like a Hugging Face token: {SHOWN_TOKEN}; DescribeTrainingJob, the console "
            "and CloudTrail show environment_variables (in the request) in plain text to anyone "
            "who may read the job.",
            SECRET_HINT.format("environment_variables.HF_TOKEN"),
            [],
        ),
        (
            "remote-secrets", "warning", "tags.0.Value",
            f"looks like a Hugging Face token: {SHOWN_TOKEN}; DescribeTrainingJob, the console "
            "and CloudTrail show tags in plain text to anyone who may read the job.",
            SECRET_HINT.format("tags.0.Value"),
            [],
        ),
    ]  # fmt: skip
    assert _remote(
        instance_type="ml.m5.xlarge",
        environment_variables={"HF_TOKEN": TOKEN},
        accept_exposure=["environment_variables.HF_TOKEN"],
    ) == []


# --- @remote: the processes per node the request shows -------------------------------------------


def _context(**options: Any) -> Any:
    ctx, problems = check_remote_arguments({"image_uri": IMAGE, **options})
    assert [p for p in problems if p.severity == "error"] == []
    return ctx


def test_a_launcher_on_gpus_without_processes_sends_one_per_gpu_and_says_why():
    injected, (injection,) = remote_injections(
        _context(instance_type="ml.g5.12xlarge", use_mpirun=True)
    )
    assert injected == {"nproc_per_node": 4}
    assert (injection.path, injection.value, injection.reason) == (
        "nproc_per_node",
        4,
        "ml.g5.12xlarge has 4 GPUs: one process each under use_mpirun. The job's bootstrap "
        "would count them at run time; set here, the request shows it (--user_nproc_per_node).",
    )


@pytest.mark.parametrize(
    "options",
    [
        {"instance_type": "ml.g5.12xlarge"},  # no launcher: one process
        {"instance_type": "ml.g5.12xlarge", "use_torchrun": True, "nproc_per_node": 4},  # given
        {"instance_type": "ml.m5.4xlarge", "use_torchrun": True},  # no accelerator to count
    ],
)
def test_nothing_is_injected_without_a_launcher_with_processes_given_or_on_a_cpu(options):
    assert remote_injections(_context(**options)) == ({}, [])


# --- fine-tuning: the facts of sagemaker 3's source, pinned --------------------------------------

# sagemaker-train 1.27.0, train/common_utils/finetune_utils.py: NOVA_REGIONS,
# OPEN_WEIGHTS_REGIONS, and _validate_hyperparameter_values' allowed_chars.
_LISTS = {
    "NOVA_REGIONS": ("us-east-1", "us-west-2"),
    "OPEN_WEIGHTS_REGIONS": ("us-east-1", "us-west-2", "ap-northeast-1", "eu-west-1"),
}
_ALLOWED = "^[a-zA-Z0-9/_.:,\\-\\s'\\\"\\[\\]]*$"
OPEN = "us-east-1, us-west-2, ap-northeast-1, eu-west-1"


@pytest.fixture
def sdk3_facts(monkeypatch):
    """The facts the fine-tuning rules read from sagemaker 3's files, as sagemaker-train 1.27.0
    has them (sagemaker 2 has no such files); the installed SDK forwards a plan's ARN."""
    monkeypatch.setattr(facts, "_module_lists", lambda: _LISTS)
    monkeypatch.setattr(facts, "hyperparameter_value_pattern", lambda: re.compile(_ALLOWED))
    monkeypatch.setattr(facts, "plan_arn_forwarded", lambda: True)
    monkeypatch.delenv(facts.HUB_VARIABLE, raising=False)


@pytest.mark.sdk3_only  # sagemaker 2 has no fine-tuning trainers
def test_the_pinned_facts_are_the_installed_sdks():
    lists = facts._module_lists()
    assert {name: lists[name] for name in _LISTS} == _LISTS
    pattern = facts.hyperparameter_value_pattern()
    assert pattern is not None and pattern.pattern == _ALLOWED
    assert facts.plan_arn_forwarded()


MODEL = "meta-textgeneration-llama-3-2-1b-instruct"
PACKAGE = "arn:aws:sagemaker:eu-central-1:111122223333:model-package/my-models/3"
PLAN = "arn:aws:sagemaker:us-west-2:111122223333:training-plan/p"


def _recipe(name: str, types: list[str], length: int | None = 4096) -> FineTuningRecipe:
    return FineTuningRecipe(
        f"llama/{name}", "meta-llama/Llama-3.2-1B-Instruct", "SFT", True, tuple(types), length
    )


RECIPES = (
    _recipe("a_seq4k_lora", ["ml.p5.48xlarge", "ml.g5.12xlarge"]),
    _recipe("b_seq8k_lora", ["ml.p4d.24xlarge", "ml.g5.12xlarge"], 8192),
)


def _job(**fields: Any) -> FineTuningCompute:
    return FineTuningCompute("training_job", fields)


def _ft(
    compute: FineTuningCompute | None = None,
    recipes: tuple[FineTuningRecipe, ...] | None = RECIPES,
    region: str | None = "us-west-2",
    model: Any = MODEL,
    collection: str | None = "/recipes",
    unread: str | None = None,
    **options: Any,
) -> FineTuningContext:
    compute = compute or FineTuningCompute("serverless")
    name = compute.instance_type
    instance = None
    if name is not None:
        with contextlib.suppress(LookupError):  # the instance type rule reports it
            instance = instance_catalog.get(name)
    spec = FineTuningSpec("SFT", model, compute=compute, **options)
    return FineTuningContext(spec, instance, region, recipes, collection, unread)


def _checked(ctx: FineTuningContext) -> list[tuple[Any, ...]]:
    return [p[:5] for p in _said(check_fine_tuning(ctx))]


uses_sdk3_facts = pytest.mark.usefixtures("sdk3_facts")

# --- fine-tuning: instance types against the recipes ---------------------------------------------

_TYPES = "ml.g5.12xlarge, ml.p4d.24xlarge, ml.p5.48xlarge"
_NOT_LISTED = (
    "is {}, which no SFT LoRA fine-tuning recipe of " + MODEL + " lists: they run on " + _TYPES
    + " (the recipes collection: {}). The trainer refuses any other type at train() "
    '("Instance type ... is not supported").'
)


@uses_sdk3_facts
def test_a_listed_type_is_right_and_another_is_refused_with_the_types_listed():
    assert _checked(_ft(_job(instance_type="ml.g5.12xlarge", instance_count=1))) == []
    assert _checked(_ft(_job(instance_type="ml.g6.2xlarge"))) == [
        (
            "fine-tuning-recipe-types", "error", "compute.instance_type",
            _NOT_LISTED.format("ml.g6.2xlarge", "llama/a_seq4k_lora, llama/b_seq8k_lora"),
            f"use one of {_TYPES}.",
        )
    ]  # fmt: skip


@uses_sdk3_facts
def test_the_recipes_named_are_the_first_four():
    recipes = tuple(_recipe(f"r{i}", ["ml.p5.48xlarge"]) for i in range(5))
    [(*_, message, _)] = _checked(_ft(_job(instance_type="ml.g5.12xlarge"), recipes))
    assert "(the recipes collection: llama/r0, llama/r1, llama/r2, llama/r3). " in message


@uses_sdk3_facts
def test_without_recipes_or_types_in_them_the_type_is_left_to_the_hub():
    job = _job(instance_type="ml.g6.2xlarge")
    assert _checked(_ft(job, recipes=None, collection=None)) == []
    assert _checked(_ft(job, recipes=(_recipe("x", []),))) == []


@uses_sdk3_facts
def test_a_training_job_without_an_instance_type_is_refused_and_hyperpod_is_not():
    missing = (
        "fine-tuning-instance-type", "error", "compute.instance_type",
        "is missing: the trainer's serverful path builds its TrainingJobCompute from "
        "instance_type and instance_count only (instance_preferences and instance_groups are "
        "not passed on), so the job has no instance type.",
        "set compute.instance_type to one type its recipes list.",
    )  # fmt: skip
    assert _checked(_ft(_job(instance_count=2))) == [missing]
    hyperpod = FineTuningCompute("hyperpod", {"cluster_name": "c"})
    assert _checked(_ft(hyperpod)) == []
    # instance_preferences without a type is said once, as the missing type
    assert _checked(_ft(_job(instance_preferences=["ml.p5.48xlarge"]))) == [missing]


@uses_sdk3_facts
def test_an_unknown_type_gets_the_closest_names_as_well_as_the_recipes_types():
    assert _checked(_ft(_job(instance_type="ml.p5.48xlarg"))) == [
        (
            "fine-tuning-instance-type", "error", "compute.instance_type",
            "'ml.p5.48xlarg' is not a SageMaker training instance type.",
            "did you mean ml.p5.48xlarge, ml.p5e.48xlarge, ml.p5.4xlarge?",
        ),
        (
            "fine-tuning-recipe-types", "error", "compute.instance_type",
            _NOT_LISTED.format("ml.p5.48xlarg", "llama/a_seq4k_lora, llama/b_seq8k_lora"),
            f"use one of {_TYPES}.",
        ),
    ]  # fmt: skip


# --- fine-tuning: sequence lengths ---------------------------------------------------------------


@uses_sdk3_facts
def test_a_sequence_length_no_recipe_has_is_a_warning_naming_those_they_have():
    recipes = (*RECIPES, _recipe("c_lora", ["ml.p5.48xlarge"], 2000), _recipe("d", [], None))
    assert _checked(_ft(_job(instance_type="ml.g5.12xlarge"), recipes, sequence_length="16K")) == [
        (
            "fine-tuning-sequence-length", "warning", "sequence_length",
            "is 16K (16384 tokens), and the SFT LoRA recipes of " + MODEL + " in the collection "
            "are written for 2000, 4K, 8K; the trainer picks the hub recipe whose SequenceLength "
            "equals it and raises ValueError when there is none.",
            "use 2000, 4K, 8K, or leave sequence_length out for the recipe's default.",
        )
    ]  # fmt: skip


@pytest.mark.parametrize("length", ["8k", "4K", None, "8192"])
@uses_sdk3_facts
def test_a_length_a_recipe_has_or_none_or_one_the_spec_refuses_gets_no_warning(length):
    # "8192" is not a number of K tokens: the spec's own check refuses it (test_fine_tuning.py)
    job = _job(instance_type="ml.g5.12xlarge")
    assert _checked(_ft(job, sequence_length=length)) == []
    assert _checked(_ft(job, recipes=None, sequence_length="16K")) == []


# --- fine-tuning: hyperparameters ----------------------------------------------------------------

_TOO_MANY = (
    "with overrides sets {} hyperparameters, and CreateTrainingJob takes at most 100 (botocore's "
    "HyperParameters map); the trainer sends each one it is given (serverless jobs only these; "
    "serverful jobs the whole recipe besides)."
)


@uses_sdk3_facts
def test_101_hyperparameters_with_the_overrides_leaves_are_refused_and_100_pass():
    job = _job(instance_type="ml.g5.12xlarge")
    given = {f"h{i}": i for i in range(60)}
    overrides = {"training_config": {"a": {f"k{i}": i for i in range(40)}, "lr": 0.1}}
    assert _checked(_ft(job, hyperparameters=given, overrides=overrides)) == [
        (
            "fine-tuning-hyperparameters", "error", "hyperparameters", _TOO_MANY.format(101),
            "move settings into a recipe file (recipe=...) that the container reads, or set "
            "fewer of them.",
        )
    ]  # fmt: skip
    del given["h0"]
    assert _checked(_ft(job, hyperparameters=given, overrides=overrides)) == []
    # the same key in both is sent once
    assert _checked(_ft(job, hyperparameters={**given, "lr": 1}, overrides=overrides)) == []


@uses_sdk3_facts
def test_overrides_count_as_the_sdk_flattens_them_lists_left_out():
    # flatten_resolved_recipe: each leaf by its own name (the last one wins); a list, or an
    # empty mapping, sends nothing
    job = _job(instance_type="ml.g5.12xlarge")
    given = {f"h{i}": i for i in range(99)}
    overrides = {
        "a": {"lr": 1, "layers": [1, 2], "empty": {}},
        "b": {"lr": 2, "stages": [{"warmup": 3}]},
    }
    assert _checked(_ft(job, hyperparameters=given, overrides=overrides)) == []
    given["h99"] = 99
    [(*_, message, _)] = _checked(_ft(job, hyperparameters=given, overrides=overrides))
    assert message == _TOO_MANY.format(101)


@uses_sdk3_facts
def test_a_string_with_a_character_the_trainer_refuses_is_refused_by_its_key():
    values = {"prompt": "a;b", "fine": "a-b [c], 'd' \"e\" f/g_h.i:j", "steps": 3, "on": True}
    assert _checked(_ft(_job(instance_type="ml.g5.12xlarge"), hyperparameters=values)) == [
        (
            "fine-tuning-hyperparameters", "error", "hyperparameters.prompt",
            "is 'a;b', with characters the trainer refuses at train() (its "
            "_validate_hyperparameter_values allows letters, digits, spaces and / _ . : , - ' \" "
            "[ ]).",
            "remove the other characters.",
        )
    ]  # fmt: skip


# --- fine-tuning: regions, model package groups --------------------------------------------------


def _region_problem(region: str, model: str, regions: str) -> tuple[Any, ...]:
    return (
        "fine-tuning-region", "error", "region",
        f"is {region}, where the trainers offer no model customization for {model} (the SDK's "
        f"list: {regions}); the constructor raises ValueError.",
        f"create the job in one of {regions}.",
    )  # fmt: skip


@uses_sdk3_facts
def test_a_region_outside_the_sdks_list_for_the_model_is_refused():
    job = _job(instance_type="ml.g5.12xlarge")
    assert _checked(_ft(job, region="eu-central-1")) == [
        _region_problem("eu-central-1", MODEL, OPEN)
    ]
    assert _checked(_ft(job, region="eu-west-1")) == []
    assert _checked(_ft(job, region=None)) == []  # validate knows no region
    nova = _ft(job, recipes=None, region="eu-west-1", model="amazon-nova-micro")
    assert _checked(nova) == [
        _region_problem("eu-west-1", "amazon-nova-micro", "us-east-1, us-west-2")
    ]


@uses_sdk3_facts
def test_a_model_package_is_refused_only_where_neither_list_has_the_region():
    job = _job(instance_type="ml.g5.12xlarge")
    assert _checked(_ft(job, recipes=None, region="eu-central-1", model=PACKAGE)) == [
        _region_problem("eu-central-1", PACKAGE, OPEN)
    ]
    assert _checked(_ft(job, recipes=None, region="ap-northeast-1", model=PACKAGE)) == []
    # a ModelPackage object: its base model is known to the account only
    assert _checked(_ft(job, recipes=None, region="eu-central-1", model=object())) == []


@uses_sdk3_facts
def test_a_serverless_job_needs_a_model_package_group_unless_the_model_brings_one():
    assert _checked(_ft()) == [
        (
            "fine-tuning-model-package-group", "error", "model_package_group",
            "is missing, and the job is serverless (no compute): the trainer stores the "
            "fine-tuned model in a model package group and raises ValueError without one.",
            "pass model_package_group='<group name or ARN>', or compute=TrainingJobCompute(...) "
            "to train on instances of your own.",
        )
    ]  # fmt: skip
    assert _checked(_ft(extra={"model_package_group": "g"})) == []
    assert _checked(_ft(model=object())) == []  # a ModelPackage
    assert _checked(_ft(_job(instance_type="ml.g5.12xlarge"))) == []


# --- fine-tuning: compute fields the serverful path drops, training plans ------------------------

_FORWARDED = (
    "instance_type, instance_count, volume_size_in_gb, keep_alive_period_in_seconds, "
    "training_plan_arn"
)


def _dropped(key: str, kept: str = _FORWARDED) -> tuple[Any, ...]:
    return (
        "fine-tuning-compute-dropped", "warning", f"compute.{key}",
        "is not passed on: the trainer's serverful path builds its own TrainingJobCompute from "
        f"{kept} only, so the job runs without {key}.",
        f"remove {key}, or train with ModelTrainer if the job needs it.",
    )  # fmt: skip


@uses_sdk3_facts
def test_each_compute_field_the_serverful_path_drops_is_warned_and_the_kept_ones_are_not():
    job = _job(
        instance_type="ml.g5.12xlarge", instance_count=2, volume_size_in_gb=100,
        keep_alive_period_in_seconds=60, enable_managed_spot_training=True,
        instance_preferences=["ml.p5.48xlarge"], selected_instance_type="ml.g5.12xlarge",
        volume_kms_key_id="k",
    )  # fmt: skip
    assert _checked(_ft(job)) == [
        _dropped("enable_managed_spot_training"),
        _dropped("instance_preferences"),
        _dropped("volume_kms_key_id"),
    ]


@uses_sdk3_facts
def test_without_a_type_the_other_dropped_fields_are_still_warned():
    job = _job(instance_preferences=["ml.p5.48xlarge"], volume_kms_key_id="k")
    [(rule, *_), dropped] = _checked(_ft(job))
    assert rule == "fine-tuning-instance-type"
    assert dropped == _dropped("volume_kms_key_id")


@uses_sdk3_facts
def test_an_sdk_that_drops_the_plan_is_warned_with_the_release_that_keeps_it(monkeypatch):
    monkeypatch.setattr(facts, "plan_arn_forwarded", lambda: False)
    job = _job(instance_type="ml.p5.48xlarge", training_plan_arn=PLAN, volume_kms_key_id="k")
    kept = "instance_type, instance_count, volume_size_in_gb, keep_alive_period_in_seconds"
    assert _checked(_ft(job)) == [
        (
            "fine-tuning-compute-dropped", "warning", "compute.training_plan_arn",
            "is dropped by the installed SDK: its serverful path rebuilds the compute without "
            "training_plan_arn, so the job runs on on-demand capacity, not your plan's (fixed by "
            "aws/sagemaker-python-sdk PR #6258, in sagemaker 3.22.1).",
            "pip install 'sagemaker>=3.22.1'.",
        ),
        _dropped("volume_kms_key_id", kept),
    ]  # fmt: skip


@uses_sdk3_facts
def test_a_plan_on_a_type_plans_cannot_reserve_is_refused():
    reservable = (
        "ml.p4d.24xlarge, ml.p4de.24xlarge, ml.p5.48xlarge, ml.p5.4xlarge, ml.p5e.48xlarge, "
        "ml.p5en.48xlarge, ml.p6-b200.48xlarge, ml.p6-b300.48xlarge, ml.p6e-gb200.36xlarge, "
        "ml.trn1.32xlarge, ml.trn2.48xlarge"
    )
    assert _checked(_ft(_job(instance_type="ml.g5.12xlarge", training_plan_arn=PLAN))) == [
        (
            "fine-tuning-training-plan", "error", "compute.instance_type",
            f"is ml.g5.12xlarge, and the job runs on training plan '{PLAN}'; a training plan "
            f"reserves only {reservable} (botocore's ReservedCapacityInstanceType), and the "
            "job's instance type must match its plan's (AWS's user guide, 'Create a training "
            "job using the API, AWS CLI, SageMaker SDK').",
            "run on the instance type your plan reserved, or remove training_plan_arn.",
        )
    ]  # fmt: skip


@pytest.mark.parametrize(
    "fields",
    [
        {"instance_type": "ml.p5.48xlarge", "training_plan_arn": PLAN},  # a type plans reserve
        {"instance_type": "ml.g5.12xlarge", "training_plan_arn": ""},  # no plan
        {"instance_type": "ml.g5.12xlarge"},
        {"instance_preferences": ["ml.g5.12xlarge"], "training_plan_arn": PLAN},  # no type
    ],
)
@uses_sdk3_facts
def test_no_plan_error_without_a_plan_a_type_or_on_a_reservable_type(fields):
    problems = _checked(_ft(_job(**fields)))
    assert [p for p in problems if p[0] == "fine-tuning-training-plan"] == []


@uses_sdk3_facts
def test_an_unknown_type_or_a_hyperpod_compute_with_a_plan_gets_no_plan_error():
    unknown = _ft(_job(instance_type="ml.g5.12xlarg", training_plan_arn=PLAN), recipes=None)
    assert [p[0] for p in _checked(unknown)] == ["fine-tuning-instance-type"]
    hyperpod = FineTuningCompute("hyperpod", {"instance_type": "ml.g5.12xlarge",
                                              "training_plan_arn": PLAN})  # fmt: skip
    assert _checked(_ft(hyperpod, recipes=None)) == []


@uses_sdk3_facts
def test_a_plan_of_another_region_is_refused_at_the_plan():
    other = PLAN.replace("us-west-2", "eu-west-1")
    job = _job(instance_type="ml.p5.48xlarge", training_plan_arn=other)
    assert _checked(_ft(job, recipes=None)) == [
        (
            "fine-tuning-training-plan", "error", "compute.training_plan_arn",
            "is a training plan of eu-west-1 (its ARN says so), and the job is created in "
            "us-west-2: a plan reserves capacity in its own region only, so CreateTrainingJob "
            "in us-west-2 cannot run on it.",
            "create the job in eu-west-1 (AWS_REGION, or the session's region), or use a "
            "training plan of us-west-2.",
        )
    ]  # fmt: skip
    assert _checked(_ft(job, recipes=None, region=None)) == []


# --- fine-tuning: secrets ------------------------------------------------------------------------


@uses_sdk3_facts
def test_a_token_in_the_hyperparameters_or_another_option_is_a_warning_unless_accepted():
    ctx = _ft(
        hyperparameters={"token": TOKEN},
        extra={"model_package_group": "g", "environment": {"K": TOKEN}, "tags": [TOKEN], "n": 3},
    )
    shown = "DescribeTrainingJob, the console and CloudTrail show {} in plain text"
    assert [(p[2], p[3]) for p in _checked(ctx)] == [
        ("hyperparameters.token", f"looks like a Hugging Face token: {SHOWN_TOKEN}; "
         + shown.format("hyperparameters") + " to anyone who may read the job."),
        ("environment.K", f"looks like a Hugging Face token: {SHOWN_TOKEN}; "
         + shown.format("environment variables") + " to anyone who may read the job."),
        ("tags.0", f"looks like a Hugging Face token: {SHOWN_TOKEN}; "
         + shown.format("tags") + " to anyone who may read the job."),
    ]  # fmt: skip
    accepted = _ft(
        hyperparameters={"token": TOKEN},
        extra={"model_package_group": "g"},
        accept_exposure=["hyperparameters.token"],
    )
    assert _checked(accepted) == []


# --- fine-tuning: what only the hub or the account can say ---------------------------------------

_HUB = (
    "that {model} exists and has SFT LoRA recipes: DescribeHubContent(HubName={hub}, "
    "HubContentType=Model, HubContentName={model}), made by the trainer's constructor"
)
_GATED = "whether the model is gated (accept_eula=True needed): the same hub document's GatedBucket"
_DEFAULTS = (
    "the recipe's hyperparameters and their defaults: S3 GetObject of the hub recipe's override "
    "parameters, made by the constructor"
)
_TEMPLATE = (
    "the recipe template and training image: DescribeHubContent and an S3 download at train()"
)
_TYPES_LEFT = (
    "the instance types and sequence lengths its recipes allow ({}): the trainer reads them from "
    "the hub at train()"
)
_PACKAGE_NOTE = (
    "the model package and its base model: DescribeModelPackage (ModelPackage.get), made by the "
    "trainer's constructor"
)


@uses_sdk3_facts
def test_a_training_job_with_the_models_recipes_leaves_the_hub_its_four_answers():
    assert not_checked(_ft(_job(instance_type="ml.g5.12xlarge"))) == (
        _HUB.format(model=MODEL, hub="SageMakerPublicHub"), _GATED, _DEFAULTS, _TEMPLATE,
    )  # fmt: skip


@uses_sdk3_facts
def test_a_serverless_job_has_no_template_or_instance_types_to_leave(monkeypatch):
    monkeypatch.setenv(facts.HUB_VARIABLE, "MyHub")
    ctx = _ft(recipes=None, collection=None, extra={"notifications": {"email": "a@b.c"}})
    assert not_checked(ctx) == (
        _HUB.format(model=MODEL, hub="MyHub"), _GATED, _DEFAULTS,
        "notifications: an EventBridge rule is created by the constructor",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("collection", "unread", "where"),
    [
        (None, None,
         "no copy of the recipes collection was given (--recipes DIR or $SAFE_ESTIMATORS_RECIPES)"),
        ("/recipes", None, "no fine-tuning recipe of the collection names this model"),
        ("/recipes", "it holds 20001 files", "the recipes collection was not read: it holds 20001 "
         "files"),
    ],
)  # fmt: skip
@uses_sdk3_facts
def test_without_the_models_recipes_the_instance_types_are_left_to_the_hub_saying_why(
    collection, unread, where
):
    ctx = _ft(_job(instance_type="ml.g5.12xlarge"), None, collection=collection, unread=unread)
    assert not_checked(ctx)[-1] == _TYPES_LEFT.format(where)


@uses_sdk3_facts
def test_a_model_package_is_looked_up_first_and_its_base_model_is_named_so():
    base = "the model package's base model"
    hub = _HUB.format(model=base, hub="SageMakerPublicHub")
    ctx = _ft(_job(instance_type="ml.g5.12xlarge"), region=None, model=PACKAGE)
    assert not_checked(ctx) == (_PACKAGE_NOTE, hub, _GATED, _DEFAULTS, _TEMPLATE)
    # a ModelPackage object: the same words without the lookup of an ARN
    ctx = _ft(_job(instance_type="ml.g5.12xlarge"), region=None, model=object())
    assert not_checked(ctx) == (hub, _GATED, _DEFAULTS, _TEMPLATE)
    # an ARN of another kind (hub content) is a model name, not a package
    content = "arn:aws:sagemaker:us-west-2:aws:hub-content/SageMakerPublicHub/Model/m/1.0.0"
    ctx = _ft(_job(instance_type="ml.g5.12xlarge"), region=None, model=content)
    assert not_checked(ctx)[0] == _HUB.format(model=content, hub="SageMakerPublicHub")
