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

import pytest
from conftest import ROLE

from safe_estimators._context import Context
from safe_estimators._problems import REMOVE, Problem
from safe_estimators._resolve import _lookup, _model_parallel
from safe_estimators._rules import compiler, construction
from safe_estimators._spec import instance_type_name, structure_spec

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
        (("distribution.pytorchxla", REMOVE), ("distribution.torch_distributed", {"enabled": True})),
    ]


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
    [problem] = compiler.compiler_hardware(context(**{**PT, name: value}, instance_type="local_gpu"))
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
