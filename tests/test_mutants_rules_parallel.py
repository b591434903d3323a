"""Tests written against the surviving mutants of ./dev mutate (tests/mutation_scope.py names
the modules these are tests of): the construction checks, the distribution and launcher rules,
the Training Compiler's profiling defaults and the model parallel library v1's rules.

Each calls the rule on a job's Context (or the v1 rules on their options), so that a mutant runs
only the few tests about its rule, and pins what the user reads: the verdict, the path, the
whole message and hint, and the changes each fix offered would make to the job.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest
from conftest import ROLE

import instance_catalog
from safe_estimators._context import Context
from safe_estimators._distributions.model_parallel import check_model_parallel, parse_model_parallel
from safe_estimators._problems import REMOVE, Problem
from safe_estimators._resolve import _lookup, _model_parallel, _model_parallel_rules
from safe_estimators._rules import compiler, construction, distribution
from safe_estimators._spec import TrainerWords, instance_type_name, structure_spec

# The cases are the estimator target's (sagemaker 2's default, where ./dev mutate runs): the
# profiler and debugger objects and the messages these pin exist there; on sagemaker 3 the same
# rules speak of the ModelTrainer target, which tests of their own cover.
pytestmark = pytest.mark.sdk2_only

SCRIPT = str(Path(__file__).parent / "fixtures" / "jobs" / "train.py")
PT = {"estimator": "pytorch", "framework_version": "1.13.1", "py_version": "py39"}
HF = {
    "estimator": "huggingface",
    "transformers_version": "4.26.0",
    "pytorch_version": "1.13.1",
    "py_version": "py39",
}


def context(**fields: Any) -> Context:
    """The Context the rules see for a job (PyTorch 1.13.1 on one ml.p3.2xlarge unless told)."""
    data = {"entry_point": SCRIPT, "role": ROLE, "instance_type": "ml.p3.2xlarge", **PT}
    data.update(fields)
    spec, problems = structure_spec({k: v for k, v in data.items() if v is not None})
    assert spec is not None, problems
    model_parallel, rest, _ = _model_parallel(spec)
    return Context(spec, _lookup(instance_type_name(spec.instance_type)), rest, model_parallel)


def said(problems: Any) -> list[tuple[str, str]]:
    """Each problem as the user reads it: its verdict and its whole line."""
    return [(p.severity, str(p)) for p in problems]


def changes(problem: Problem) -> list[tuple[tuple[str, Any], ...]]:
    """What each fix offered would change in the job."""
    return [fix.changes for fix in problem.fixes]


# --- construction: what the SDK's estimators refuse when they are made ----------------------


def test_a_hugging_face_job_with_both_base_frameworks_is_refused_with_either_removed():
    [problem] = construction.huggingface_versions_agree(
        context(**HF, tensorflow_version="2.11.0", instance_type="ml.g5.xlarge")
    )
    assert said([problem]) == [
        (
            "error",
            "tensorflow_version: is given beside pytorch_version ('1.13.1'); the Hugging Face "
            "estimator runs one base framework and refuses both (ValueError). Fix: remove "
            "tensorflow_version (a PyTorch container); or remove pytorch_version (a TensorFlow "
            "container).",
        )
    ]
    assert changes(problem) == [
        (("tensorflow_version", REMOVE),),
        (("pytorch_version", REMOVE),),
    ]


@pytest.mark.parametrize(
    ("versions", "path", "message", "short"),
    [
        pytest.param(
            {"transformers_version": "4.26", "pytorch_version": "1.13.1"},
            "pytorch_version",
            "'1.13.1' and transformers_version '4.26' mix",
            (("transformers_version", "4.26"), ("pytorch_version", "1.13")),
            id="short-transformers-full-pytorch",
        ),
        pytest.param(
            {"transformers_version": "4.26.0", "pytorch_version": "1.13"},
            "pytorch_version",
            "'1.13' and transformers_version '4.26.0' mix",
            (("transformers_version", "4.26"), ("pytorch_version", "1.13")),
            id="full-transformers-short-pytorch",
        ),
        pytest.param(
            {"transformers_version": "4.17", "pytorch_version": None,
             "tensorflow_version": "2.6.3", "py_version": "py38"},
            "tensorflow_version",
            "'2.6.3' and transformers_version '4.17' mix",
            (("transformers_version", "4.17"), ("tensorflow_version", "2.6")),
            id="tensorflow",
        ),
    ],
)  # fmt: skip
def test_versions_mixing_full_and_short_are_refused_with_both_short_offered(
    versions, path, message, short
):
    [problem] = construction.huggingface_versions_agree(
        context(**{**HF, **versions}, instance_type="ml.g5.xlarge")
    )
    words = ", ".join(f"{name}={value!r}" for name, value in short)
    assert said([problem]) == [
        (
            "error",
            f"{path}: {message} a full and a short version; the Hugging Face estimator needs "
            f"both full or both short (ValueError). Fix: set {words} (both short); or write both "
            "in full.",
        )
    ]
    assert changes(problem) == [short]


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({**HF}, id="both-full"),
        pytest.param({**HF, "transformers_version": "4.26", "pytorch_version": "1.13"},
                     id="both-short"),
        pytest.param({**HF, "transformers_version": "4.26",
                      "image_uri": "111122223333.dkr.ecr.us-east-1.amazonaws.com/mine:1"},
                     id="own-image"),
        pytest.param({**HF, "transformers_version": None}, id="no-transformers-version"),
        pytest.param({**PT, "framework_version": "1.13"}, id="pytorch-estimator"),
    ],
)  # fmt: skip
def test_versions_the_hugging_face_estimator_takes_are_no_problem(fields):
    assert list(construction.huggingface_versions_agree(context(**fields))) == []


def test_pytorchxla_without_the_compiler_is_refused_with_the_compiler_or_torchrun_offered():
    xla = {"pytorchxla": {"enabled": True}}
    [problem] = construction.xla_needs_the_compiler(context(distribution=xla))
    assert said([problem]) == [
        (
            "error",
            "distribution.pytorchxla: runs only with SageMaker Training Compiler; without it the "
            "SageMaker SDK refuses the PyTorch/XLA distribution (ValueError). Fix: set "
            "training_compiler=True; or use distribution={'torch_distributed': {'enabled': "
            "True}} for plain multi-GPU training.",
        )
    ]
    assert changes(problem) == [
        (("training_compiler", True),),
        (("distribution.pytorchxla", REMOVE),
         ("distribution.torch_distributed", {"enabled": True})),
    ]  # fmt: skip


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({**HF, "transformers_version": "4.21.1", "pytorch_version": "1.11.0",
                      "py_version": "py38", "training_compiler": True,
                      "distribution": {"pytorchxla": {"enabled": True}}}, id="with-the-compiler"),
        pytest.param({"distribution": {"torch_distributed": {"enabled": True}}}, id="torchrun"),
        pytest.param({}, id="no-distribution"),
    ],
)  # fmt: skip
def test_pytorchxla_with_the_compiler_or_another_launcher_is_no_problem(fields):
    assert list(construction.xla_needs_the_compiler(context(**fields))) == []


def test_local_gpu_mode_on_two_instances_is_refused_with_one_or_cpu_local_mode_offered():
    [problem] = construction.local_gpu_single_instance(
        context(instance_type="local_gpu", instance_count=2)
    )
    assert said([problem]) == [
        (
            "error",
            "instance_count: is 2 with instance_type 'local_gpu'; the SageMaker SDK runs "
            "distributed training in local mode on CPU only ('local') and refuses this "
            "(RuntimeError). Fix: set instance_count=1; or set instance_type='local' (a "
            "multi-container test on CPU).",
        )
    ]
    assert changes(problem) == [(("instance_count", 1),), (("instance_type", "local"),)]


@pytest.mark.parametrize(
    ("instance_type", "count"), [("local_gpu", 1), ("local", 2), ("ml.p3.2xlarge", 2)]
)
def test_local_gpu_mode_on_one_instance_and_cpu_local_mode_on_two_are_no_problem(
    instance_type, count
):
    ctx = context(instance_type=instance_type, instance_count=count)
    assert list(construction.local_gpu_single_instance(ctx)) == []


# --- Training Compiler: turning it off, and the profiling the user asked for ------------------

COMPILER = {**PT, "training_compiler": True}


OFF = {
    "training_compiler": (True, "remove training_compiler", (("training_compiler", REMOVE),)),
    # The spec reads AWS's spelling into training_compiler too: the fix removes both.
    "compiler_config": (
        {"enabled": True},
        "remove compiler_config",
        (("compiler_config", REMOVE), ("training_compiler", REMOVE)),
    ),
}


@pytest.mark.parametrize("name", OFF)
def test_a_compiler_job_in_local_mode_offers_the_compiler_off_under_the_name_it_was_turned_on(
    name,
):
    value, _, off = OFF[name]
    ctx = context(**{**PT, name: value}, instance_type="local_gpu")
    [problem] = compiler.compiler_hardware(ctx)
    assert changes(problem)[0] == off
    assert said([problem]) == [
        (
            "error",
            "instance_type: Training Compiler does not run in local mode ('local_gpu'). Fix: "
            "test the script locally without Training Compiler (remove it); or set "
            "instance_type='ml.g5.xlarge'; or set instance_type='ml.p3.2xlarge'; or set "
            "instance_type='ml.p4d.24xlarge'.",
        )
    ]


@pytest.mark.parametrize("name", OFF)
def test_a_compiler_job_on_an_unsupported_family_offers_the_compiler_off_last(name):
    value, words, off = OFF[name]
    [problem] = compiler.compiler_hardware(
        context(**{**PT, name: value}, instance_type="ml.g6.2xlarge")
    )
    assert said([problem]) == [
        (
            "error",
            "instance_type: Training Compiler does not support the g6 family (ml.g6.2xlarge); it "
            "supports p3, p3dn, g4dn, p4d, g5. Fix: set instance_type='ml.g5.xlarge'; or set "
            "instance_type='ml.p3.2xlarge'; or set instance_type='ml.p4d.24xlarge'; or "
            f"{words} (Training Compiler off); or use another instance type of p3, p3dn, g4dn, "
            "p4d, g5.",
        )
    ]
    assert changes(problem)[-1] == off


def _profiler_rule() -> Any:
    from sagemaker.debugger import ProfilerRule, rule_configs

    return ProfilerRule.sagemaker(rule_configs.ProfilerReport())


def _debugger_rule() -> Any:
    from sagemaker.debugger import Rule, rule_configs

    return Rule.sagemaker(rule_configs.vanishing_gradient())


def _asked(**fields: Any) -> list[tuple[str, str]]:
    return said(compiler.compiler_profiling_asked(context(**COMPILER, **fields)))


PROFILER_KEPT = (
    "warning",
    "{what}: asks for the SageMaker Debugger profiler, so disable_profiler=True is not set for "
    "this compiler job (the SDK would refuse both at fit()); the profiler's overhead hides "
    "Training Compiler's speed-up. Fix: {fix}drop the profiler for compiled runs, or keep it "
    "knowingly.",
)
HOOK_KEPT = (
    "warning",
    "rules: has Debugger rules, which need the Debugger hook, so debugger_hook_config=False is "
    "not set for this compiler job; the hook's overhead hides the compiler's speed-up. Fix: drop "
    "the Debugger rules for compiled runs, or keep them knowingly.",
)


def test_a_profiler_config_that_profiles_keeps_the_profiler_with_a_warning():
    from sagemaker.debugger import ProfilerConfig

    found = _asked(profiler_config=ProfilerConfig(system_monitor_interval_millis=500))
    assert found == [
        (PROFILER_KEPT[0], PROFILER_KEPT[1].format(what="profiler_config",
                                                   fix="remove profiler_config; or "))
    ]  # fmt: skip


def test_a_profiler_config_that_disables_the_profiler_asks_for_nothing():
    from sagemaker.debugger import ProfilerConfig

    assert _asked(profiler_config=ProfilerConfig(disable_profiler=True)) == []


@pytest.mark.parametrize("kind", [list, tuple])
def test_profiler_rules_keep_the_profiler_and_debugger_rules_keep_the_hook(kind):
    profiler_kept = (PROFILER_KEPT[0], PROFILER_KEPT[1].format(what="rules", fix=""))
    assert _asked(rules=kind([_profiler_rule()])) == [profiler_kept]
    assert _asked(rules=kind([_debugger_rule()])) == [HOOK_KEPT]
    assert _asked(rules=kind([_debugger_rule(), _profiler_rule()])) == [profiler_kept, HOOK_KEPT]


def test_what_the_user_set_themselves_or_no_rules_ask_for_nothing():
    assert _asked() == []
    assert _asked(rules=[]) == []
    assert _asked(rules=[_profiler_rule()], disable_profiler=False) == []
    assert _asked(rules=[_debugger_rule()], debugger_hook_config=True) == []


def test_profiling_asked_reads_each_default_by_its_own_name():
    spec = context(**COMPILER, rules=[_profiler_rule(), _debugger_rule()]).spec
    assert compiler.profiling_asked(spec, "disable_profiler")
    assert compiler.profiling_asked(spec, "debugger_hook_config")
    assert not compiler.profiling_asked(spec, "environment")
    assert not compiler.profiling_asked(context(**COMPILER).spec, "debugger_hook_config")


# --- distribution: the strategies the SDK reads, and jobs that start one process per host -----

STRATEGIES = (
    "pytorchxla, pytorchddp, torch_distributed, parameter_server, mpi, smdistributed, "
    "instance_groups"
)
TORCHRUN_FIX = (
    "add distribution={'torch_distributed': {'enabled': True}} (torchrun: one process per GPU and "
    "one job across the instances)"
)
MPI_FIX = (
    "add distribution={'mpi': {'enabled': True}} (mpirun: one process per GPU; the script joins "
    "its process group from MPI's environment, as Horovod does)"
)


def _rule(rule: Any, **fields: Any) -> list[tuple[str, str]]:
    return said(rule(context(**fields)))


@pytest.mark.parametrize(
    ("block", "found"),
    [
        pytest.param(
            {"torchdistributed": {"enabled": True}},
            "distribution.torchdistributed: 'torchdistributed' is not a distribution strategy the "
            "SageMaker SDK reads; it would be ignored silently. Fix: did you mean "
            "'torch_distributed'? (write distribution.torch_distributed); or use one of: "
            f"{STRATEGIES}.",
            id="misspelt-strategy",
        ),
        pytest.param(
            {"foo": {"enabled": True}},
            "distribution.foo: 'foo' is not a distribution strategy the SageMaker SDK reads; it "
            f"would be ignored silently. Fix: use one of: {STRATEGIES}.",
            id="unknown-strategy",
        ),
        pytest.param(
            {"torch_distributed": True},
            "distribution.torch_distributed: must be a mapping like {'enabled': True}, got bool "
            "True. Fix: write torch_distributed: {enabled: true}.",
            id="not-a-mapping",
        ),
        pytest.param(
            {"smdistributed": "x"},
            "distribution.smdistributed: must be a mapping like {'enabled': True}, got str 'x'. "
            "Fix: write smdistributed: {enabled: true} (or {dataparallel: {enabled: true}}).",
            id="smdistributed-not-a-mapping",
        ),
        pytest.param(
            {"torch_distributed": {"enable": True}},
            "distribution.torch_distributed.enable: 'enable' is not read by the SageMaker SDK for "
            "torch_distributed; it would be ignored. Fix: did you mean 'enabled'?",
            id="misspelt-key",
        ),
        pytest.param(
            {"mpi": {"xyz": 1}},
            "distribution.mpi.xyz: 'xyz' is not read by the SageMaker SDK for mpi; it would be "
            "ignored. Fix: use: custom_mpi_options, enabled, processes_per_host.",
            id="unknown-key",
        ),
        pytest.param(
            {"torch_distributed": {"enabled": "true"}},
            "distribution.torch_distributed.enabled: must be true or false, got 'true'. Fix: set "
            "distribution.torch_distributed.enabled=True; or write enabled: true (a bool, not a "
            "string).",
            id="enabled-a-string",
        ),
        pytest.param(
            {"torch_distributed": {"enabled": 1}},
            "distribution.torch_distributed.enabled: must be true or false, got 1. Fix: set "
            "distribution.torch_distributed.enabled=True; or write enabled: true (a bool, not a "
            "string).",
            id="enabled-a-number",
        ),
    ],
)
def test_a_distribution_the_sdk_would_not_read_is_refused_with_the_key_it_reads(block, found):
    assert _rule(distribution.distribution_shape, distribution=block) == [("error", found)]


def test_a_misspelt_strategy_is_offered_under_the_name_the_sdk_reads():
    [problem] = distribution.distribution_shape(
        context(distribution={"torchdistributed": {"enabled": True}})
    )
    assert changes(problem) == [
        (("distribution.torchdistributed", REMOVE),
         ("distribution.torch_distributed", {"enabled": True})),
    ]  # fmt: skip


def test_the_xla_misspellings_are_left_to_the_compiler_rule_on_a_compiler_job_only():
    xla = {"torch_xla": {"enabled": True}}
    assert _rule(distribution.distribution_shape, training_compiler=True, distribution=xla) == []
    assert _rule(
        distribution.distribution_shape, training_compiler=True,
        distribution={"torch_xla": {"bogus": True}},
    ) == [
        ("error", "distribution.torch_xla.bogus: 'bogus' is not read by the SageMaker SDK for "
         "torch_xla; it would be ignored. Fix: use: enabled."),
    ]  # fmt: skip
    [(severity, message)] = _rule(distribution.distribution_shape, distribution=xla)
    assert severity == "error"
    assert message.startswith(
        "distribution.torch_xla: 'torch_xla' is not a distribution strategy the SageMaker SDK "
        "reads; it would be ignored silently. Fix: did you mean 'pytorchxla'?"
    )


def test_well_formed_strategies_are_no_problem():
    block = {
        "torch_distributed": {"enabled": True},
        "mpi": {"enabled": False, "processes_per_host": 2, "custom_mpi_options": "-v"},
        "smdistributed": {"dataparallel": {"enabled": True}},
        "instance_groups": [],
    }
    assert _rule(distribution.distribution_shape, distribution=block) == []


def _mpi(processes: object, instance_type: str = "ml.p3.8xlarge") -> list[tuple[str, str]]:
    block = {"mpi": {"enabled": True, "processes_per_host": processes}}
    return _rule(distribution.mpi_processes, instance_type=instance_type, distribution=block)


def test_more_mpi_processes_than_gpus_is_refused_at_one_more_than_the_gpus():
    assert _mpi(4) == []
    assert _mpi(5) == [
        ("error", "distribution.mpi.processes_per_host: is 5, but ml.p3.8xlarge has 4 GPUs: more "
         "node-local processes than devices fail at start-up. Fix: set "
         "distribution.mpi.processes_per_host=4 (one process per GPU); or pick an instance type "
         "with 5 GPUs."),
    ]  # fmt: skip
    [problem] = distribution.mpi_processes(
        context(instance_type="ml.p3.8xlarge",
                distribution={"mpi": {"enabled": True, "processes_per_host": 5}})
    )  # fmt: skip
    assert changes(problem) == [(("distribution.mpi.processes_per_host", 4),)]


@pytest.mark.parametrize("processes", [0, -1, "2", 2.0, True])
def test_mpi_processes_must_be_a_positive_whole_number(processes):
    assert _mpi(processes) == [
        ("error", "distribution.mpi.processes_per_host: must be a positive whole number, got "
         f"{processes!r}."),
    ]  # fmt: skip


def test_one_mpi_process_or_a_cpu_instance_or_no_count_is_no_problem():
    assert _mpi(1) == []
    assert _mpi(2, "ml.c5.xlarge") == []  # no GPUs to count: another rule's business
    assert _rule(distribution.mpi_processes, distribution={"mpi": {"enabled": True}}) == []
    assert _rule(distribution.mpi_processes, distribution={"mpi": True}) == []


@pytest.mark.parametrize(
    ("key", "block"),
    [
        ("pytorchxla", {"pytorchxla": {"enabled": True}}),
        ("pytorchddp", {"pytorchddp": {"enabled": True}}),
        ("smdistributed", {"smdistributed": {"dataparallel": {"enabled": True}}}),
    ],
)
def test_a_gpu_launcher_on_a_cpu_instance_is_refused_with_gpu_types_offered(key, block):
    [problem] = distribution.distribution_needs_gpus(
        context(instance_type="ml.c5.xlarge", distribution=block)
    )
    assert said([problem]) == [
        ("error", f"distribution.{key}: needs GPUs, but ml.c5.xlarge has none. Fix: set "
         "instance_type='ml.g5.12xlarge'; or set instance_type='ml.p4d.24xlarge'; or remove "
         f"distribution.{key}; or use a GPU instance."),
    ]  # fmt: skip
    assert changes(problem) == [
        (("instance_type", "ml.g5.12xlarge"),),
        (("instance_type", "ml.p4d.24xlarge"),),
        ((f"distribution.{key}", REMOVE),),
    ]


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"instance_type": "ml.p3.8xlarge",
                      "distribution": {"pytorchddp": {"enabled": True}}}, id="on-gpus"),
        pytest.param({**HF, "instance_type": "ml.c5.xlarge",
                      "distribution": {"pytorchddp": {"enabled": True}}}, id="hugging-face-ddp"),
        pytest.param({"instance_type": "ml.c5.xlarge",
                      "distribution": {"smdistributed": {"dataparallel": {"enabled": False}}}},
                     id="disabled"),
        pytest.param({"instance_type": "ml.c5.xlarge",
                      "distribution": {"smdistributed": {"modelparallel": {"enabled": True}}}},
                     id="not-dataparallel"),
        pytest.param({"instance_type": "local",
                      "distribution": {"pytorchddp": {"enabled": True}}}, id="local"),
    ],
)  # fmt: skip
def test_gpu_launchers_where_they_run_are_no_problem(fields):
    assert _rule(distribution.distribution_needs_gpus, **fields) == []


def test_a_parameter_server_on_a_pytorch_job_is_a_warning_that_counts_the_copies():
    block = {"parameter_server": {"enabled": True}}
    [problem] = distribution.parameter_server_ignored(
        context(instance_type="ml.c5.xlarge", instance_count=3, distribution=block)
    )
    assert said([problem]) == [
        ("warning", "distribution.parameter_server: is ignored: the SageMaker SDK sends "
         "sagemaker_parameter_server_enabled, but only the TensorFlow and MXNet containers start "
         "parameter servers; the PyTorch and Hugging Face containers never read it and run the "
         "script once per instance (3 here), each process training on its own. Fix: remove "
         "distribution.parameter_server; or for data parallelism use torch_distributed "
         "(torchrun), smdistributed.dataparallel (SMDDP) or mpi."),
    ]  # fmt: skip
    assert changes(problem) == [(("distribution.parameter_server", REMOVE),)]
    off = {"parameter_server": {"enabled": False}}
    assert _rule(distribution.parameter_server_ignored, distribution=off) == []


@pytest.fixture
def plain(tmp_path: Path) -> str:
    """A script that trains in its one process, on one device."""
    script = tmp_path / "train.py"
    script.write_text("print('training')\n")
    return str(script)


def _no_launcher(**fields: Any) -> list[tuple[str, str]]:
    return _rule(distribution.no_launcher, **fields)


def test_one_process_on_4_gpus_leaves_3_idle_and_torchrun_is_offered(plain):
    [problem] = distribution.no_launcher(context(entry_point=plain, instance_type="ml.p3.8xlarge"))
    assert said([problem]) == [
        ("warning", "distribution: is not set, but the job has 4 GPUs (1 x ml.p3.8xlarge, 4 GPUs "
         "each): SageMaker starts one training process per instance, so unless the script "
         f"spreads itself over them, 3 GPUs sit idle. Fix: {TORCHRUN_FIX}; or use a single GPU."),
    ]  # fmt: skip
    assert changes(problem) == [(("distribution.torch_distributed", {"enabled": True}),)]


def test_two_instances_of_4_gpus_idle_6_and_train_independent_copies(plain):
    assert _no_launcher(entry_point=plain, instance_type="ml.p3.8xlarge", instance_count=2) == [
        ("warning", "distribution: is not set, but the job has 8 GPUs (2 x ml.p3.8xlarge, 4 GPUs "
         "each): SageMaker starts one training process per instance, so unless the script "
         "spreads itself over them, 6 GPUs sit idle, and the 2 instances train independent "
         f"copies. Fix: {TORCHRUN_FIX}; or use a single GPU."),
    ]  # fmt: skip


def test_two_single_gpu_instances_idle_nothing_but_train_independent_copies(plain):
    assert _no_launcher(entry_point=plain, instance_type="ml.p3.2xlarge", instance_count=2) == [
        ("warning", "distribution: is not set, but the job has 2 GPUs (2 x ml.p3.2xlarge, 1 GPU "
         "each): SageMaker starts one training process per instance, so the 2 instances train "
         f"independent copies. Fix: {TORCHRUN_FIX}; or use a single GPU."),
    ]  # fmt: skip


def test_one_idle_neuroncore_sits_idle_and_trainium_offers_torchrun_only(plain):
    found = _no_launcher(
        entry_point=plain, instance_type="ml.trn1.2xlarge", framework_version="2.1.0",
        py_version="py310",
    )  # fmt: skip
    assert found == [
        ("warning", "distribution: is not set, but the job has 2 NeuronCores (1 x ml.trn1.2xlarge, "
         "2 NeuronCores each): SageMaker starts one training process per instance, so unless the "
         "script spreads itself over them, 1 NeuronCore sits idle. The SageMaker SDK refuses "
         "torchrun with framework_version='2.1.0' on ml.trn1.2xlarge. Fix: set "
         "framework_version='1.11.0', py_version='py38' (the nearest that torchrun takes) and add "
         "distribution={'torch_distributed': {'enabled': True}} (torchrun: one process per "
         "NeuronCore and one job across the instances); or keep one process per instance if the "
         "script is written for one NeuronCore."),
    ]  # fmt: skip


def test_an_old_container_is_offered_the_nearest_torchrun_version_and_mpi(plain):
    ctx = context(entry_point=plain, instance_type="ml.p3.8xlarge", framework_version="1.12.1",
                  py_version="py38")  # fmt: skip
    [problem] = distribution.no_launcher(ctx)
    assert said([problem]) == [
        ("warning", "distribution: is not set, but the job has 4 GPUs (1 x ml.p3.8xlarge, 4 GPUs "
         "each): SageMaker starts one training process per instance, so unless the script "
         "spreads itself over them, 3 GPUs sit idle. The SageMaker SDK refuses torchrun with "
         "framework_version='1.12.1' on ml.p3.8xlarge. Fix: set framework_version='1.13.1', "
         f"py_version='py39' (the nearest that torchrun takes) and {TORCHRUN_FIX}; or {MPI_FIX}; "
         "or use a single GPU."),
    ]  # fmt: skip
    assert changes(problem) == [
        (("framework_version", "1.13.1"), ("py_version", "py39"),
         ("distribution.torch_distributed", {"enabled": True})),
        (("distribution.mpi", {"enabled": True}),),
    ]  # fmt: skip


def test_a_shell_entry_point_is_offered_mpi_and_told_why_not_torchrun():
    assert _no_launcher(entry_point="run.sh", instance_type="ml.p3.8xlarge") == [
        ("warning", "distribution: is not set, but the job has 4 GPUs (1 x ml.p3.8xlarge, 4 GPUs "
         "each): SageMaker starts one training process per instance, so unless the script "
         "spreads itself over them, 3 GPUs sit idle. torchrun starts .py scripts only, and "
         f"entry_point is 'run.sh'. Fix: {MPI_FIX}; or use a single GPU."),
    ]  # fmt: skip


def test_the_hugging_face_trainer_in_one_process_is_data_parallel_with_gpu_0_loaded():
    trainer = (
        "distribution: is not set, but the job has {gpus} GPUs ({count} x ml.p3.8xlarge, 4 GPUs "
        "each) and the script trains with the Hugging Face Trainer in one process per instance: "
        "it wraps the model in torch.nn.DataParallel over the instance's GPUs, which uses them "
        "all but replicates the model from GPU 0 on every step and gathers the outputs there, so "
        "GPU 0 carries the most memory and the step runs slower than with one process per GPU "
        "(DDP, or FSDP to shard the model states){copies}. Fix: {fix}; or use a single GPU."
    ).replace("{fix}", TORCHRUN_FIX.replace("{", "{{").replace("}", "}}"))
    assert _no_launcher(instance_type="ml.p3.8xlarge") == [
        ("warning", trainer.format(gpus=4, count=1, copies=""))
    ]
    copies = "; and the 2 instances train independent copies"
    assert _no_launcher(instance_type="ml.p3.8xlarge", instance_count=2) == [
        ("warning", trainer.format(gpus=8, count=2, copies=copies))
    ]
    # A disabled SMDDP block launches nothing.
    smddp_off = {"smdistributed": {"dataparallel": {"enabled": False}}}
    found = _no_launcher(instance_type="ml.p3.8xlarge", instance_count=2, distribution=smddp_off)
    assert found == [("warning", trainer.format(gpus=8, count=2, copies=copies))]


def test_the_hugging_face_trainer_on_neuroncores_leaves_the_others_idle():
    [(severity, message)] = _no_launcher(
        instance_type="ml.trn1.2xlarge", framework_version="2.1.0", py_version="py310"
    )
    assert (severity, message.split(". ")[0]) == (
        "warning",
        "distribution: is not set, but the job has 2 NeuronCores (1 x ml.trn1.2xlarge, 2 "
        "NeuronCores each): SageMaker starts one training process per instance, so unless the "
        "script spreads itself over them, 1 NeuronCore sits idle",
    )


DATA_PARALLEL = "import torch\nmodel = torch.nn.DataParallel(torch.nn.Linear(2, 2)).cuda()\n"


def test_a_script_spreading_itself_on_two_instances_trains_independent_copies(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(DATA_PARALLEL)
    assert _no_launcher(entry_point=str(script), instance_type="ml.p3.8xlarge") == []
    [problem] = distribution.no_launcher(
        context(entry_point=str(script), instance_type="ml.p3.8xlarge", instance_count=2)
    )
    assert said([problem]) == [
        ("warning", "distribution: is not set, and the script replicates its model with "
         "torch.nn.DataParallel in one process over each instance's 4 GPUs; SageMaker starts one "
         "training process per instance, so the 2 instances (ml.p3.8xlarge) train independent "
         "copies. Fix: set instance_count=1; or give each GPU its own process (a launcher such as "
         "torch_distributed, with the model on that process's GPU) to train one model across the "
         "instances."),
    ]  # fmt: skip
    assert changes(problem) == [(("instance_count", 1),)]


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"instance_type": "ml.p3.2xlarge"}, id="one-gpu"),
        pytest.param({"instance_type": "ml.c5.xlarge", "instance_count": 1}, id="cpu"),
        pytest.param({"instance_type": "ml.p3.8xlarge",
                      "distribution": {"torch_distributed": {"enabled": True}}}, id="torchrun"),
        pytest.param({"instance_type": "ml.p3.8xlarge",
                      "distribution": {"smdistributed": {"dataparallel": {"enabled": True}}}},
                     id="smddp"),
        pytest.param({"instance_type": "ml.p3.8xlarge",
                      "distribution": {"smdistributed": {"dataparallel": {}}}},
                     id="smddp-without-enabled"),
        pytest.param({"instance_type": "ml.p3.8xlarge",
                      "distribution": {"mpi": {"enabled": True}}}, id="mpi"),
        pytest.param({"instance_type": "ml.p3.8xlarge", "training_compiler": True}, id="compiler"),
        pytest.param({"instance_type": "ml.p3.8xlarge",
                      "model_parallel": {"pipeline_parallel_degree": 2}}, id="model-parallel"),
        pytest.param({"instance_groups": [{"instance_group_name": "a",
                                           "instance_type": "ml.p3.8xlarge",
                                           "instance_count": 2}]}, id="instance-groups"),
    ],
)  # fmt: skip
def test_one_device_a_launcher_or_a_launch_of_its_own_is_no_problem(plain, fields):
    assert _no_launcher(entry_point=plain, **fields) == []


# --- the model parallel library v1's rules -----------------------------------------------------

MP = "model_parallel"
V1_TYPES = (
    "ml.g4dn.12xlarge, ml.p3.16xlarge, ml.p3dn.24xlarge, ml.p4d.24xlarge, ml.p4de.24xlarge"
)
NOT_LISTED = (
    "warning",
    "instance_type: {} is not among the instance types AWS lists for the model parallel library "
    f"v1 ({V1_TYPES}). Fix: use one of those unless you have tested this one.",
)
V2_CONTAINERS = "2.0.1, 2.1.2, 2.2.0, 2.3.1, 2.4.1, 2.5.1"
PIPELINE_2 = {"pipeline_parallel_degree": 2}


def problems_for(
    options: dict[str, Any],
    instance: str = "ml.p3.16xlarge",
    count: int = 1,
    pytorch: str | None = "1.13.1",
    hyperparameters: dict[str, Any] | None = None,
) -> list[Problem]:
    """Every problem the v1 rules find in these options (one ml.p3.16xlarge, PyTorch 1.13.1)."""
    mp, problems = parse_model_parallel(options)
    assert mp is not None and problems == [], problems
    return check_model_parallel(
        mp,
        instance_type=instance,
        gpus_per_instance=instance_catalog.get(instance).gpu_count,
        instance_count=count,
        pytorch_version=pytorch,
        hyperparameters=hyperparameters or {},
    )


def v1(options: dict[str, Any], **job: Any) -> list[tuple[str, str]]:
    return said(problems_for(options, **job))


def v1_fixes(options: dict[str, Any], **job: Any) -> list[list[tuple[tuple[str, Any], ...]]]:
    return [changes(p) for p in problems_for(options, **job)]


V1_VERDICTS = [
    pytest.param(
        PIPELINE_2, {"instance": "ml.c5.xlarge"},
        [("error", "instance_type: ml.c5.xlarge has no GPUs; the model parallel library runs one "
          "process per NVIDIA GPU. Fix: use a GPU instance such as ml.p4d.24xlarge (8 GPUs).")],
        id="no-gpus",
    ),
    pytest.param(
        PIPELINE_2, {"instance": "ml.p5.48xlarge"},
        [("error", "instance_type: the SageMaker SDK refuses smdistributed on ml.p5.48xlarge "
          "unless torch_distributed is enabled, which the model parallel library v1 does not use. "
          "Fix: set instance_type='ml.p4d.24xlarge'; or set instance_type='ml.p4de.24xlarge'; or "
          "move to the library v2 (PyTorch >= 2.0.1).")],
        id="p5",
    ),
    pytest.param(
        PIPELINE_2, {"instance": "ml.p3.8xlarge"},
        [(NOT_LISTED[0], NOT_LISTED[1].format("ml.p3.8xlarge"))],
        id="not-listed",
    ),
    pytest.param(
        PIPELINE_2, {"instance": "ml.p4de.24xlarge"}, [], id="listed-p4de",
    ),
    pytest.param(
        PIPELINE_2, {"pytorch": "1.12"},
        [("error", "model_parallel: PyTorch version '1.12' is a short alias; the library table is "
          "keyed by full container versions. Fix: resolve it first (the SDK's pytorch.json "
          "aliases, e.g. 1.12.1).")],
        id="short-alias",
    ),
    pytest.param(
        PIPELINE_2, {"pytorch": "1.5.0"},
        [("error", "model_parallel: the PyTorch 1.5.0 container does not ship the model parallel "
          "library v1 (the containers that do: PyTorch 1.6.0 to 2.0.0). Fix: use a "
          "framework_version from 1.6.0 to 2.0.0.")],
        id="older-container",
    ),
    pytest.param(
        PIPELINE_2, {"pytorch": "abc"},
        [("error", "model_parallel: cannot read the PyTorch version 'abc'. Fix: pass the "
          "container's full PyTorch version, such as '1.13.1'.")],
        id="unreadable-version",
    ),
    pytest.param(
        {**PIPELINE_2, "tensor_parallel_degree": 2}, {"pytorch": "1.8.0"},
        [("error", "model_parallel.tensor_parallel_degree: tensor_parallel_degree needs model "
          "parallel library >= 1.6, but the PyTorch 1.8.0 container ships 1.3.1. Fix: use "
          "framework_version 1.8.1 to 2.0.0.")],
        id="option-too-new",
    ),
    pytest.param(
        {**PIPELINE_2, "fp16_params": True}, {"pytorch": "1.11.0"},
        [("warning", "model_parallel.fp16_params: fp16_params is superseded by fp16 from library "
          "1.10 (the PyTorch 1.11.0 container ships 1.10.1). Fix: use fp16 instead.")],
        id="superseded-at-its-release",
    ),
    pytest.param(
        {**PIPELINE_2, "fp16_params": True}, {"pytorch": "1.10.2"}, [],
        id="not-yet-superseded",
    ),
    pytest.param(
        {**PIPELINE_2, "bf16": True, "fp16": True}, {"instance": "ml.p4d.24xlarge"},
        [("error", "model_parallel.bf16: bf16 and fp16 are both True; pick one precision. Fix: "
          "keep bf16 (needs sharded data parallelism) or fp16."),
         ("error", "model_parallel.bf16: bf16 works only with sharded data parallelism, and "
          "sharded_data_parallel_degree is 1. Fix: set sharded_data_parallel_degree > 1, or use "
          "fp16.")],
        id="bf16-and-fp16",
    ),
    pytest.param(
        {"bf16": True, "fp16_params": True, "sharded_data_parallel_degree": 2},
        {"instance": "ml.p4d.24xlarge"},
        [("warning", "model_parallel.fp16_params: fp16_params is superseded by fp16 from library "
          "1.10 (the PyTorch 1.13.1 container ships 1.15.0). Fix: use fp16 instead."),
         ("error", "model_parallel.bf16: bf16 and fp16_params are both True; pick one precision. "
          "Fix: keep bf16 (needs sharded data parallelism) or fp16.")],
        id="bf16-and-fp16-params",
    ),
    pytest.param(
        {"bf16": True, "sharded_data_parallel_degree": 2}, {"instance": "ml.p4d.24xlarge"}, [],
        id="bf16-sharded",
    ),
    pytest.param(
        {**PIPELINE_2, "auto_partition": False}, {},
        [("error", "model_parallel.auto_partition: auto_partition is False, so the library needs "
          "default_partition for modules outside smp.partition contexts. Fix: set "
          "model_parallel.default_partition=0; or add default_partition (0 to 1).")],
        id="no-default-partition",
    ),
    pytest.param(
        {**PIPELINE_2, "auto_partition": False, "default_partition": 2}, {},
        [("error", "model_parallel.default_partition: default_partition (2) must be less than the "
          "pipeline degree (2); partitions are numbered 0 to 1. Fix: set "
          "model_parallel.default_partition=1; or use a default_partition from 0 to 1.")],
        id="default-partition-at-the-degree",
    ),
    pytest.param(
        {**PIPELINE_2, "auto_partition": False, "default_partition": 1}, {}, [],
        id="last-partition",
    ),
    pytest.param(
        {**PIPELINE_2, "placement_strategy": "PDT"}, {},
        [("error", "model_parallel.placement_strategy: placement_strategy 'PDT' is documented by "
          "the library, but the SageMaker SDK's validate_mp_config accepts only 'cluster' (= "
          "'DPT') and 'spread' (= 'TPD'), so there is no way to launch it through the SDK. Fix: "
          "set model_parallel.placement_strategy='cluster' (the nearest accepted placement, = "
          "'DPT').")],
        id="placement-nearest-cluster",
    ),
    pytest.param(
        {**PIPELINE_2, "placement_strategy": "TDP"}, {},
        [("error", "model_parallel.placement_strategy: placement_strategy 'TDP' is documented by "
          "the library, but the SageMaker SDK's validate_mp_config accepts only 'cluster' (= "
          "'DPT') and 'spread' (= 'TPD'), so there is no way to launch it through the SDK. Fix: "
          "set model_parallel.placement_strategy='spread' (the nearest accepted placement, = "
          "'TPD').")],
        id="placement-nearest-spread",
    ),
    pytest.param({**PIPELINE_2, "placement_strategy": "DPT"}, {}, [], id="placement-accepted"),
    pytest.param(
        {**PIPELINE_2, "microbatches": 2, "active_microbatches": 3}, {},
        [("error", "model_parallel.active_microbatches: active_microbatches (3) exceeds "
          "microbatches (2). Fix: set model_parallel.active_microbatches=2; or use "
          "active_microbatches <= 2.")],
        id="active-microbatches-over",
    ),
    pytest.param(
        {**PIPELINE_2, "microbatches": 2, "active_microbatches": 2}, {}, [],
        id="active-microbatches-at",
    ),
    pytest.param(
        {**PIPELINE_2, "active_microbatches": 2}, {},
        [("error", "model_parallel.active_microbatches: active_microbatches (2) exceeds "
          "microbatches (1). Fix: set model_parallel.active_microbatches=1; or use "
          "active_microbatches <= 1.")],
        id="active-microbatches-over-the-default",
    ),
    pytest.param(
        {"pipeline_parallel_degree": 1, "microbatches": 2}, {},
        [("warning", "model_parallel.microbatches: microbatches is 2 but the pipeline degree is 1; "
          "microbatches overlap pipeline stages, so with one stage they only split the batch. "
          "Fix: set pipeline_parallel_degree > 1, or leave microbatches at 1.")],
        id="microbatches-without-a-pipeline",
    ),
    pytest.param(
        {"tensor_parallel_degree": 2, "microbatches": 2}, {},
        [("warning", "model_parallel.microbatches: microbatches is 2 but the pipeline degree is 1; "
          "microbatches overlap pipeline stages, so with one stage they only split the batch. "
          "Fix: set pipeline_parallel_degree > 1, or leave microbatches at 1.")],
        id="microbatches-with-the-default-pipeline",
    ),
    pytest.param(
        {**PIPELINE_2, "offload_activations": True}, {},
        [("warning", "model_parallel.offload_activations: offload_activations helps only with "
          "microbatches > 1 (and activation checkpointing); microbatches is 1. Fix: raise "
          "microbatches, or drop offload_activations.")],
        id="offload-without-microbatches",
    ),
    pytest.param(
        {**PIPELINE_2, "offload_activations": True, "microbatches": 2}, {}, [],
        id="offload-with-microbatches",
    ),
    pytest.param(
        {**PIPELINE_2, "microbatches": 4},
        {"hyperparameters": {"batch-size": "30", "Train_Batch_Size": 6, "lr": 3,
                             "per_device_train_batch_size": True, "micro_batch_size": "8",
                             "train_micro_batch_size_per_gpu": 2.0}},
        [("error", "hyperparameters.batch-size: batch size 30 is not divisible by microbatches "
          "(4); the library splits each batch into equal microbatches. Fix: use a multiple of 4 "
          "(e.g. 28), or microbatches that divide it."),
         ("error", "hyperparameters.Train_Batch_Size: batch size 6 is not divisible by "
          "microbatches (4); the library splits each batch into equal microbatches. Fix: use a "
          "multiple of 4 (e.g. 4), or microbatches that divide it.")],
        id="batch-sizes",
    ),
    pytest.param(
        {**PIPELINE_2, "microbatches": 4}, {"hyperparameters": {"batch_size": 3}},
        [("error", "hyperparameters.batch_size: batch size 3 is not divisible by microbatches "
          "(4); the library splits each batch into equal microbatches. Fix: use a multiple of 4 "
          "(e.g. 4), or microbatches that divide it.")],
        id="batch-size-below-microbatches",
    ),
    pytest.param(
        PIPELINE_2, {"hyperparameters": {"batch_size": 3}}, [], id="batch-size-one-microbatch",
    ),
    pytest.param(
        {**PIPELINE_2, "prescaled_batch": True, "optimize": "memory"}, {},
        [("error", "model_parallel.prescaled_batch: prescaled_batch requires optimize 'speed' (the "
          "library's schema), and optimize is 'memory'. Fix: set model_parallel.optimize='speed'; "
          "or remove model_parallel.prescaled_batch.")],
        id="prescaled-batch-for-memory",
    ),
    pytest.param(
        {**PIPELINE_2, "prescaled_batch": True, "optimize": "speed"}, {}, [],
        id="prescaled-batch-for-speed",
    ),
    pytest.param(
        {**PIPELINE_2, "sdp_reduce_bucket_size": 100, "sdp_gradient_clipping": 1.0}, {},
        [("warning", "model_parallel.sdp_reduce_bucket_size: sdp_reduce_bucket_size has no effect "
          "without sharded data parallelism (sharded_data_parallel_degree > 1). Fix: remove "
          "model_parallel.sdp_reduce_bucket_size; or set sharded_data_parallel_degree."),
         ("warning", "model_parallel.sdp_gradient_clipping: sdp_gradient_clipping has no effect "
          "without sharded data parallelism (sharded_data_parallel_degree > 1). Fix: remove "
          "model_parallel.sdp_gradient_clipping; or set sharded_data_parallel_degree.")],
        id="sdp-options-without-sharding",
    ),
    pytest.param(
        {"sharded_data_parallel_degree": 2, "sdp_reduce_bucket_size": 100},
        {"instance": "ml.p4d.24xlarge"}, [], id="sdp-options-with-sharding",
    ),
    pytest.param(
        {**PIPELINE_2, "contiguous": True}, {},
        [("warning", "model_parallel.contiguous: contiguous only affects TensorFlow; this is a "
          "PyTorch job. Fix: remove model_parallel.contiguous.")],
        id="tensorflow-only",
    ),
    pytest.param(
        {**PIPELINE_2, "overlapping_allreduce": True}, {},
        [("error", "model_parallel.overlapping_allreduce: library 1.15.0 (the PyTorch 1.13.1 "
          "container) refuses unknown launch parameters, and overlapping_allreduce is not one: it "
          "is an argument of smp.DistributedModel(...) in the training script. Fix: remove it "
          "here and write smp.DistributedModel(model, overlapping_allreduce=True) in the "
          "script.")],
        id="overlapping-allreduce-refused",
    ),
    pytest.param(
        {**PIPELINE_2, "overlapping_allreduce": True}, {"pytorch": "1.6.0"}, [],
        id="overlapping-allreduce-a-launch-parameter",
    ),
    pytest.param(
        {**PIPELINE_2, "overlapping_allreduce": False}, {"pytorch": "1.10.2"},
        [("warning", "model_parallel.overlapping_allreduce: overlapping_allreduce was a launch "
          "parameter of the library's first releases (1.1 ran it); later ones take it in "
          "smp.DistributedModel(...) and refuse unknown launch parameters. Whether library 1.7.0 "
          "still reads it here is not documented. Fix: if the job fails with an unrecognised "
          "parameter, remove it here and write smp.DistributedModel(model, "
          "overlapping_allreduce=False) in the script.")],
        id="overlapping-allreduce-undocumented",
    ),
    pytest.param(
        {**PIPELINE_2, "overlapping_allreduce": True}, {"pytorch": "1.12.1"},
        [("warning", "model_parallel.overlapping_allreduce: overlapping_allreduce was a launch "
          "parameter of the library's first releases (1.1 ran it); later ones take it in "
          "smp.DistributedModel(...) and refuse unknown launch parameters. Whether library 1.13.0 "
          "still reads it here is not documented. Fix: if the job fails with an unrecognised "
          "parameter, remove it here and write smp.DistributedModel(model, "
          "overlapping_allreduce=True) in the script.")],
        id="overlapping-allreduce-before-validation",
    ),
    pytest.param(
        {**PIPELINE_2, "overlapping_allreduce": True}, {"pytorch": None},
        [("warning", "model_parallel.overlapping_allreduce: overlapping_allreduce was a launch "
          "parameter of the library's first releases (1.1 ran it); later ones take it in "
          "smp.DistributedModel(...) and refuse unknown launch parameters. Whether this "
          "container's library still reads it here is not documented. Fix: if the job fails with "
          "an unrecognised parameter, remove it here and write smp.DistributedModel(model, "
          "overlapping_allreduce=True) in the script.")],
        id="overlapping-allreduce-own-image",
    ),
    pytest.param(
        {**PIPELINE_2, "hybrid_shard_degree": 2}, {},
        [("error", "model_parallel.hybrid_shard_degree: hybrid_shard_degree is an option of the "
          f"model parallel library v2 (PyTorch containers {V2_CONTAINERS}), but the PyTorch "
          "1.13.1 container runs the library v1, which does not know it. Fix: in the library v1 "
          "write sharded_data_parallel_degree, or use framework_version 2.5.1 for the library "
          "v2.")],
        id="v2-option-with-a-counterpart",
    ),
    pytest.param(
        {**PIPELINE_2, "activation_loading_horizon": 2, "sm_activation_offloading": True}, {},
        [("error", "model_parallel.sm_activation_offloading: sm_activation_offloading is an option "
          f"of the model parallel library v2 (PyTorch containers {V2_CONTAINERS}), but the "
          "PyTorch 1.13.1 container runs the library v1, which does not know it. Fix: in the "
          "library v1 write offload_activations, or use framework_version 2.5.1 for the library "
          "v2.")],
        id="v2-option-beside-a-v1-one",
    ),
    pytest.param(
        {**PIPELINE_2, "tensor_parallel_degree": 2, "ddp": False}, {},
        [("error", "model_parallel.ddp: ddp is False, but tensor parallelism (degree 2) and data "
          "parallelism across 2 model replicas needs DDP. Fix: set model_parallel.ddp=True; or "
          "remove model_parallel.ddp (it is set for you).")],
        id="ddp-off-with-tensor-and-data",
    ),
    pytest.param(
        {"pipeline_parallel_degree": 8, "ddp": False}, {"count": 2},
        [("error", "model_parallel.ddp: ddp is False, but data parallelism across 2 model replicas "
          "needs DDP. Fix: set model_parallel.ddp=True; or remove model_parallel.ddp (it is set "
          "for you).")],
        id="ddp-off-with-2-replicas",
    ),
    pytest.param({"pipeline_parallel_degree": 8, "ddp": False}, {}, [], id="ddp-off-one-replica"),
    pytest.param(
        {"pipeline_parallel_degree": 4, "tensor_parallel_degree": 2, "ddp": False}, {},
        [("error", "model_parallel.ddp: ddp is False, but tensor parallelism (degree 2) needs DDP. "
          "Fix: set model_parallel.ddp=True; or remove model_parallel.ddp (it is set for you).")],
        id="ddp-off-with-tensor",
    ),
    pytest.param(
        {**PIPELINE_2, "ddp": False, "horovod": True}, {"count": 2}, [],
        id="horovod-replicas-without-ddp",
    ),
    pytest.param(
        {**PIPELINE_2, "ddp_port": 1234, "horovod": True}, {},
        [("error", "model_parallel.ddp_port: ddp_port configures DDP, which is off (horovod is "
          "True). Fix: set model_parallel.ddp=True; or remove model_parallel.ddp_port.")],
        id="ddp-port-under-horovod",
    ),
    pytest.param(
        {"pipeline_parallel_degree": 8, "ddp_dist_backend": "nccl", "ddp": False}, {},
        [("error", "model_parallel.ddp_dist_backend: ddp_dist_backend configures DDP, which is off "
          "(ddp is False). Fix: set model_parallel.ddp=True; or remove "
          "model_parallel.ddp_dist_backend.")],
        id="ddp-backend-without-ddp",
    ),
    pytest.param(
        {**PIPELINE_2, "ddp_port": 1234, "ddp_dist_backend": "nccl", "ddp": True}, {}, [],
        id="ddp-options-with-ddp",
    ),
    pytest.param(
        {"pipeline_parallel_degree": 8, "ddp": True, "horovod": True}, {},
        [("error", "model_parallel.horovod: horovod cannot be combined with DDP (ddp is True). "
          "Fix: remove model_parallel.horovod (with PyTorch, ddp: True is the documented "
          "data-parallel engine).")],
        id="horovod-with-ddp",
    ),
    pytest.param(
        {"pipeline_parallel_degree": 4, "tensor_parallel_degree": 2, "horovod": True}, {},
        [("error", "model_parallel.horovod: horovod cannot be combined with DDP (tensor "
          "parallelism (degree 2) needs DDP). Fix: remove model_parallel.horovod (with PyTorch, "
          "ddp: True is the documented data-parallel engine).")],
        id="horovod-with-tensor",
    ),
    pytest.param(
        {"pipeline_parallel_degree": 8, "horovod": True}, {}, [], id="horovod-alone",
    ),
    pytest.param(
        {"pipeline_parallel_degree": 3}, {},
        [("error", "model_parallel.pipeline_parallel_degree: pipeline (3) x tensor (1) = 3 "
          "processes per model replica, but the job has 8 (1 x ml.p3.16xlarge, 8 GPUs each). "
          "Fix: lower the degrees so their product divides 8, or use more instances.")],
        id="replica-not-dividing",
    ),
    pytest.param(
        {"pipeline_parallel_degree": 8}, {"instance": "ml.g4dn.12xlarge"},
        [("error", "model_parallel.pipeline_parallel_degree: pipeline (8) x tensor (1) = 8 "
          "processes per model replica, but the job has 4 (1 x ml.g4dn.12xlarge, 4 GPUs each). "
          "Fix: lower the degrees so their product divides 4, or use ml.p3.16xlarge (8 GPUs).")],
        id="bigger-instance",
    ),
    pytest.param(
        {"pipeline_parallel_degree": 4}, {"instance": "ml.p3.2xlarge"},
        [(NOT_LISTED[0], NOT_LISTED[1].format("ml.p3.2xlarge")),
         ("error", "model_parallel.pipeline_parallel_degree: pipeline (4) x tensor (1) = 4 "
          "processes per model replica, but the job has 1 (1 x ml.p3.2xlarge, 1 GPU each). Fix: "
          "lower the degrees so their product divides 1, or use ml.p3.16xlarge (8 GPUs).")],
        id="bigger-instance-of-the-same-family-first",
    ),
    pytest.param(
        {"pipeline_parallel_degree": 2, "processes_per_host": 2}, {"instance": "ml.p3.2xlarge"},
        [(NOT_LISTED[0], NOT_LISTED[1].format("ml.p3.2xlarge")),
         ("error", "model_parallel.processes_per_host: 2 processes per host, but ml.p3.2xlarge has "
          "1 GPU; the library needs one GPU per process. Fix: set "
          "model_parallel.processes_per_host=1; or use ml.p3.16xlarge (8 GPUs).")],
        id="more-processes-than-gpus",
    ),
    pytest.param(
        {"pipeline_parallel_degree": 2, "processes_per_host": 16}, {},
        [("error", "model_parallel.processes_per_host: 16 processes per host, but ml.p3.16xlarge "
          "has 8 GPUs; the library needs one GPU per process. Fix: set "
          "model_parallel.processes_per_host=8; or use more instances.")],
        id="more-processes-than-any-instance-has",
    ),
    pytest.param(
        {"pipeline_parallel_degree": 2, "processes_per_host": 1}, {},
        [("error", "model_parallel.pipeline_parallel_degree: pipeline (2) x tensor (1) = 2 "
          "processes per model replica, but the job has 1 (1 x ml.p3.16xlarge, 1 process each). "
          "Fix: lower the degrees so their product divides 1, or use more instances.")],
        id="one-process-per-host",
    ),
    pytest.param(
        {"pipeline_parallel_degree": 3, "processes_per_host": 4}, {},
        [("error", "model_parallel.pipeline_parallel_degree: pipeline (3) x tensor (1) = 3 "
          "processes per model replica, but the job has 4 (1 x ml.p3.16xlarge, 4 processes "
          "each). Fix: lower the degrees so their product divides 4, or use more instances.")],
        id="fewer-processes-than-gpus",
    ),
    pytest.param(
        {"sharded_data_parallel_degree": 3}, {"instance": "ml.p4d.24xlarge"},
        [("error", "model_parallel.sharded_data_parallel_degree: sharded data parallel degree (3) "
          "does not divide the data-parallel degree (8 = world 8 / (pipeline 1 x tensor 1)). Fix: "
          "set model_parallel.sharded_data_parallel_degree=2; or use a degree that divides 8.")],
        id="sharded-not-dividing",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("options", "job", "expected"), V1_VERDICTS)
def test_v1_verdicts_whole(options, job, expected):
    assert v1(options, **job) == expected


def test_v1_fixes_change_the_option_at_its_path():
    assert v1_fixes(PIPELINE_2, instance="ml.p5.48xlarge") == [
        [(("instance_type", "ml.p4d.24xlarge"),), (("instance_type", "ml.p4de.24xlarge"),)]
    ]
    assert v1_fixes({**PIPELINE_2, "auto_partition": False}) == [
        [((f"{MP}.default_partition", 0),)]
    ]
    assert v1_fixes({**PIPELINE_2, "auto_partition": False, "default_partition": 3}) == [
        [((f"{MP}.default_partition", 1),)]
    ]
    assert v1_fixes({**PIPELINE_2, "placement_strategy": "PDT"}) == [
        [((f"{MP}.placement_strategy", "cluster"),)]
    ]
    assert v1_fixes({**PIPELINE_2, "placement_strategy": "TDP"}) == [
        [((f"{MP}.placement_strategy", "spread"),)]
    ]
    assert v1_fixes({**PIPELINE_2, "microbatches": 2, "active_microbatches": 3}) == [
        [((f"{MP}.active_microbatches", 2),)]
    ]
    assert v1_fixes({**PIPELINE_2, "prescaled_batch": True, "optimize": "memory"}) == [
        [((f"{MP}.optimize", "speed"),), ((f"{MP}.prescaled_batch", REMOVE),)]
    ]
    assert v1_fixes({**PIPELINE_2, "sdp_max_live_parameters": 10}) == [
        [((f"{MP}.sdp_max_live_parameters", REMOVE),)]
    ]
    assert v1_fixes({**PIPELINE_2, "load_partition": True}) == [
        [((f"{MP}.load_partition", REMOVE),)]
    ]
    assert v1_fixes({"pipeline_parallel_degree": 8, "ddp": False}, count=2) == [
        [((f"{MP}.ddp", True),), ((f"{MP}.ddp", REMOVE),)]
    ]
    assert v1_fixes({**PIPELINE_2, "ddp_port": 1234, "ddp": False}, count=2)[-1] == [
        ((f"{MP}.ddp", True),), ((f"{MP}.ddp_port", REMOVE),)
    ]
    assert v1_fixes({"pipeline_parallel_degree": 8, "ddp": True, "horovod": True}) == [
        [((f"{MP}.horovod", REMOVE),)]
    ]


def _v1_in_context(**fields: Any) -> list[tuple[str, str]]:
    return said(_model_parallel_rules(context(instance_type="ml.p3.16xlarge", **fields)))


def test_torchrun_beside_v1_options_is_refused_for_mpi():
    found = _v1_in_context(
        model_parallel=PIPELINE_2, distribution={"torch_distributed": {"enabled": True}}
    )
    assert found == [
        ("error", "distribution.torch_distributed: torch_distributed launches the model parallel "
         "library v2, but the PyTorch 1.13.1 container has the library v1, which MPI launches. "
         "Fix: remove torch_distributed (MPI is set up for you), or use framework_version 2.5.1 "
         "for the library v2."),
    ]  # fmt: skip
    assert _v1_in_context(model_parallel=PIPELINE_2) == []


def test_options_written_in_the_distribution_are_reported_where_they_were_written():
    parameters = {"pipeline_parallel_degree": 3, "microbatches": 2, "active_microbatches": 3}
    block = {
        "mpi": {"enabled": True},
        "smdistributed": {"modelparallel": {"enabled": True, "parameters": parameters}},
    }
    at = "distribution.smdistributed.modelparallel.parameters"
    assert _v1_in_context(distribution=block) == [
        ("error", f"{at}.pipeline_parallel_degree: pipeline (3) x tensor (1) = 3 processes per "
         "model replica, but the job has 8 (1 x ml.p3.16xlarge, 8 GPUs each). Fix: lower the "
         "degrees so their product divides 8, or use more instances."),
        ("error", f"{at}.active_microbatches: active_microbatches (3) exceeds microbatches (2). "
         f"Fix: set {at}.active_microbatches=2; or use active_microbatches <= 2."),
    ]  # fmt: skip


def test_a_shell_entry_point_on_trainium_is_told_to_point_at_the_script_first():
    found = _no_launcher(
        entry_point="run.sh", instance_type="ml.trn1.2xlarge", framework_version="2.1.0",
        py_version="py310",
    )  # fmt: skip
    assert found == [
        ("warning", "distribution: is not set, but the job has 2 NeuronCores (1 x ml.trn1.2xlarge, "
         "2 NeuronCores each): SageMaker starts one training process per instance, so unless the "
         "script spreads itself over them, 1 NeuronCore sits idle. torchrun starts .py scripts "
         "only, and entry_point is 'run.sh'. Fix: point entry_point at the .py training script, "
         "then add distribution={'torch_distributed': {'enabled': True}}; or keep one process per "
         "instance if the script is written for one NeuronCore."),
    ]  # fmt: skip


def test_an_old_hugging_face_container_names_its_pytorch_version_and_the_nearest_for_torchrun(
    plain,
):
    old = {"transformers_version": "4.17.0", "pytorch_version": "1.10.2", "py_version": "py38"}
    ctx = context(**{**HF, **old}, entry_point=plain, instance_type="ml.p3.8xlarge")
    [problem] = distribution.no_launcher(ctx)
    assert said([problem]) == [
        ("warning", "distribution: is not set, but the job has 4 GPUs (1 x ml.p3.8xlarge, 4 GPUs "
         "each): SageMaker starts one training process per instance, so unless the script "
         "spreads itself over them, 3 GPUs sit idle. The SageMaker SDK refuses torchrun with "
         "pytorch_version='1.10.2' on ml.p3.8xlarge. Fix: set transformers_version='4.26.0', "
         "pytorch_version='1.13.1', py_version='py39' (the nearest that torchrun takes) and "
         f"{TORCHRUN_FIX}; or {MPI_FIX}; or use a single GPU."),
    ]  # fmt: skip
    assert changes(problem) == [
        (("transformers_version", "4.26.0"), ("pytorch_version", "1.13.1"), ("py_version", "py39"),
         ("distribution.torch_distributed", {"enabled": True})),
        (("distribution.mpi", {"enabled": True}),),
    ]  # fmt: skip


def test_the_script_is_read_for_its_own_spreading_only_where_devices_would_idle():
    # Two single-GPU instances idle nothing: the Trainer's DataParallel has one GPU to use.
    assert _no_launcher(instance_type="ml.p3.2xlarge", instance_count=2) == [
        ("warning", "distribution: is not set, but the job has 2 GPUs (2 x ml.p3.2xlarge, 1 GPU "
         "each): SageMaker starts one training process per instance, so the 2 instances train "
         f"independent copies. Fix: {TORCHRUN_FIX}; or use a single GPU."),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("words", "warned"),
    [
        ({"command": "torchrun --nproc_per_node 4 train.py"}, False),
        ({"launcher": "Torchrun"}, False),
        ({"command": "torchrun --nproc_per_node 4 train.py", "launcher": "Torchrun"}, False),
        ({}, True),
    ],
)
def test_a_model_trainer_command_or_launcher_starts_the_processes_itself(plain, words, warned):
    ctx = context(entry_point=plain, instance_type="ml.p3.8xlarge")
    spec = attrs.evolve(ctx.spec, trainer=TrainerWords(**words))
    found = list(distribution.no_launcher(attrs.evolve(ctx, spec=spec)))
    assert [p.severity for p in found] == (["warning"] if warned else [])


def test_a_profiler_config_written_as_a_mapping_asks_for_the_profiler():
    # A spec file's mapping has no disable_profiler attribute: it asks for the profiler.
    found = _asked(profiler_config={"system_monitor_interval_millis": 500})
    assert found == [
        (PROFILER_KEPT[0], PROFILER_KEPT[1].format(what="profiler_config",
                                                   fix="remove profiler_config; or "))
    ]  # fmt: skip
