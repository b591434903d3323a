"""Every fix a rule offers as a change to the job holds when applied (issue 34).

The harness: a problem's ``fixes`` are option changes (``Fix.changes``: an option, or a dotted
key inside one, set or removed); each is applied to the job's arguments and the job is checked
again. A fix holds when its problem (an error or a warning) is gone and no new error appears.
Run over the examples, the corpora the tests hold (the AWS and Hugging Face notebooks, the SDK's
own unit-test configurations), local recipes, and generated jobs (instance types x versions x
launchers x the options the rules read), with the cases where a fix that would be refused is
not offered pinned: ml.trn2.48xlarge with PyTorch 2.1.0 under torchrun is never offered
framework_version='1.11.0', whose container (Neuron SDK 2.4.0) predates Trainium2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from safe_estimators._problems import changed
from safe_estimators._resolve import check_arguments
from safe_estimators._spec_files.read import read_spec

HERE = Path(__file__).parent
EXAMPLES = HERE.parent / "examples"
SCRIPT = str(HERE / "fixtures" / "jobs" / "train.py")
ROLE = "arn:aws:iam::111122223333:role/SageMakerRole"
TORCHRUN = {"torch_distributed": {"enabled": True}}


def errors(arguments: dict[str, Any]) -> list[Any]:
    _, problems, _ = check_arguments({**arguments, "check_script": False})
    return [p for p in problems if p.severity == "error"]


def found(arguments: dict[str, Any]) -> list[Any]:
    return check_arguments({**arguments, "check_script": False})[1]


def broken_fixes(arguments: dict[str, Any]) -> list[str]:
    """Each offered fix (of an error or a warning) applied to the job's arguments and checked
    again: what breaks, in words (empty: all hold). A fix holds when its problem is gone and no
    new error appears."""
    before = found(arguments)
    seen = {(p.path, p.message) for p in before if p.severity == "error"}
    broken = []
    for problem in before:
        for fix in problem.fixes:
            after = found(changed(arguments, fix.changes))
            if (problem.path, problem.message) in {(p.path, p.message) for p in after}:
                broken.append(f"{fix.text}: leaves {problem.path}: {problem.message}")
            broken += [
                f"{fix.text}: brings {p}" for p in after
                if p.severity == "error" and (p.path, p.message) not in seen
            ]
    return broken


def fixes_of(arguments: dict[str, Any]) -> list[Any]:
    return [fix for p in found(arguments) for fix in p.fixes]


def offered(arguments: dict[str, Any]) -> list[str]:
    return [fix.text for p in errors(arguments) for fix in p.fixes]


@pytest.mark.sdk2_only
def test_the_trn2_job_is_not_offered_a_container_older_than_trainium2():
    job = {
        "estimator": "pytorch", "entry_point": SCRIPT, "role": ROLE,
        "instance_type": "ml.trn2.48xlarge", "framework_version": "2.1.0",
        "py_version": "py310", "distribution": TORCHRUN,
    }
    found = errors(job)
    assert [p.path for p in found] == ["framework_version", "framework_version"]
    assert not any("1.11.0" in p.hint for p in found)
    assert any("Neuron SDK 2.21.0 or later" in p.hint for p in found)
    assert "Unsupported Python version: py310" in found[0].message  # what the SDK says
    assert broken_fixes(job) == []
    # On ml.trn1 the same container runs: there the fix is offered, and holds.
    on_trn1 = {**job, "instance_type": "ml.trn1.32xlarge"}
    assert "set framework_version='1.11.0', py_version='py38'" in offered(on_trn1)
    assert broken_fixes(on_trn1) == []
    assert errors({**on_trn1, "framework_version": "1.11.0", "py_version": "py38"}) == []


def _example_arguments() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted(EXAMPLES.glob("*/*.yaml")):
        arguments, problems = read_spec(path)
        if arguments is not None and not problems:
            found.append((f"{path.parent.name}/{path.name}", arguments))
    return found


@pytest.mark.parametrize(("name", "arguments"), _example_arguments(),
                         ids=[n for n, _ in _example_arguments()])
def test_no_fix_offered_for_an_example_is_refused(name, arguments):
    assert broken_fixes(arguments) == []


def _corpus() -> list[dict[str, Any]]:
    jobs = []
    for name in ("aws_example_jobs.json", "hf_example_jobs.json"):
        for job in json.loads((HERE / "fixtures" / name).read_text())["jobs"]:
            kwargs = {k: v for k, v in job["kwargs"].items() if isinstance(v, str | int | dict)}
            kwargs.pop("compiler_config", None)
            jobs.append({**kwargs, "estimator": job["estimator"], "entry_point": SCRIPT,
                         "role": ROLE, "source_dir": None})
    return jobs


def test_no_fix_offered_for_the_notebook_corpora_is_refused():
    corpus = _corpus()
    checked = [broken for job in corpus for broken in broken_fixes(
        {k: v for k, v in job.items() if v is not None}
    )]
    assert len(corpus) > 100 and checked == []


def _versions(table: str) -> list[str]:
    from safe_estimators._facts.versions import framework_container

    return list(framework_container(table, "0").known)


INSTANCES = ["ml.trn2.48xlarge", "ml.trn1.32xlarge", "ml.trn1.2xlarge", "ml.g5.12xlarge",
             "ml.p4d.24xlarge", "ml.p5.48xlarge", "ml.c5.xlarge"]
PYTHON = ["py38", "py39", "py310", "py311", "py312"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    instance=st.sampled_from(INSTANCES),
    version=st.sampled_from(_versions("pytorch") + _versions("pytorch-neuron") + ["2.1", "9.9"]),
    python=st.sampled_from(PYTHON),
    launcher=st.sampled_from([None, TORCHRUN, {"mpi": {"enabled": True}}]),
    count=st.integers(1, 3),
)
def test_no_fix_offered_for_a_generated_job_is_refused(instance, version, python, launcher, count):
    job = {"estimator": "pytorch", "entry_point": SCRIPT, "role": ROLE,
           "instance_type": instance, "instance_count": count, "framework_version": version,
           "py_version": python}
    if launcher is not None:
        job["distribution"] = launcher
    assert broken_fixes(job) == []


def test_every_offered_fix_is_named_in_the_hint():
    job = {"estimator": "pytorch", "entry_point": SCRIPT, "role": ROLE,
           "instance_type": "ml.g5.12xlarge", "framework_version": "2.2.0",
           "py_version": "py310", "distribution": {"mpi": {"enabled": True,
                                                          "processes_per_host": 8}}}
    [problem] = [p for p in found(job) if p.path == "distribution.mpi.processes_per_host"]
    assert problem.hint == (
        "set distribution.mpi.processes_per_host=4 (one process per GPU); or pick an instance "
        "type with 8 GPUs."
    )
    assert [fix.changes for fix in problem.fixes] == [
        (("distribution.mpi.processes_per_host", 4),)
    ]
    assert broken_fixes(job) == []


@pytest.mark.sdk2_only
def test_an_instance_type_that_brings_another_error_is_not_offered():
    # Training Compiler on a CPU type: of the compiler's types, only the 8-GPU one keeps
    # GPU_NUM_DEVICES=8 right; the 1-GPU types would be refused for it.
    job = {"estimator": "huggingface", "entry_point": SCRIPT, "role": ROLE,
           "instance_type": "ml.c5.4xlarge", "transformers_version": "4.21.1",
           "pytorch_version": "1.11.0", "py_version": "py38", "training_compiler": True,
           "environment": {"GPU_NUM_DEVICES": "8"}}
    [problem] = [p for p in errors(job) if "Training Compiler does not support" in p.message]
    assert [fix.changes for fix in problem.fixes] == [(("instance_type", "ml.p4d.24xlarge"),)]
    assert "ml.g5.xlarge" not in problem.hint and "ml.p3.2xlarge" not in problem.hint
    assert errors({**job, "instance_type": "ml.g5.xlarge"}) != []  # what was not offered
    assert broken_fixes(job) == []


@pytest.mark.sdk2_only
def test_a_trainium_type_without_a_container_for_the_version_is_not_offered():
    # torchrun on a CPU type: GPU and Trainium types are the fixes, but the SDK has no Neuron
    # container for PyTorch 2.2.0, so ml.trn1.32xlarge is left out.
    job = {"estimator": "pytorch", "entry_point": SCRIPT, "role": ROLE,
           "instance_type": "ml.m5.xlarge", "framework_version": "2.2.0", "py_version": "py310",
           "distribution": TORCHRUN}
    [problem] = [p for p in errors(job) if p.path == "instance_type"]
    offered_types = [dict(fix.changes).get("instance_type") for fix in problem.fixes]
    assert offered_types == ["ml.g5.12xlarge", "ml.p4d.24xlarge", None]
    assert "ml.trn1.32xlarge" not in problem.hint
    assert errors({**job, "instance_type": "ml.trn1.32xlarge"}) != []
    assert broken_fixes(job) == []


def _sdk_unit_test_cases() -> list[tuple[str, dict[str, Any]]]:
    from test_launchers_sdk_agreement import ACCEPTED, REFUSED, _arguments

    return [(str(case["id"]), _arguments(case, ROLE)) for case in [*REFUSED, *ACCEPTED]]


@pytest.mark.sdk2_only
def test_no_fix_offered_for_the_sdk_unit_test_configurations_is_refused():
    cases = _sdk_unit_test_cases()
    broken = {name: found for name, arguments in cases if (found := broken_fixes(arguments))}
    assert len(cases) > 30 and broken == {}


@pytest.mark.sdk2_only
def test_no_fix_offered_for_a_local_recipe_is_refused(tmp_path):
    from recipe_fixtures import gpu_recipe, write_recipe

    recipe = write_recipe(tmp_path / "recipe.yaml", gpu_recipe(nodes=2, shard=16, tensor=1))
    base = {"estimator": "pytorch", "training_recipe": str(recipe), "role": ROLE,
            "recipe_overrides": {"run": {"results_dir": "/opt/ml/model"}}}
    jobs = [
        {**base, "instance_type": "ml.g5.48xlarge", "instance_count": 3},
        {**base, "instance_type": "ml.p4d.24xlarge", "instance_count": 2},
        {**base, "instance_type": "ml.p3.16xlarge", "instance_count": 2},
        {**base, "instance_type": "ml.g5.12xlarge", "instance_count": 2},
    ]
    offered = [fix for job in jobs for fix in fixes_of(job)]
    assert offered, "the recipe jobs have fixes to check"
    broken = {job["instance_type"]: b for job in jobs if (b := broken_fixes(job))}
    assert broken == {}


GPU_TYPES = ["ml.g5.xlarge", "ml.g5.12xlarge", "ml.p3.16xlarge", "ml.p4d.24xlarge",
             "ml.p5.48xlarge", "ml.g4dn.12xlarge"]
OTHER_TYPES = ["ml.c5.xlarge", "ml.m5.xlarge", "ml.trn1.32xlarge", "ml.trn2.48xlarge",
               "ml.p4d.24xlarg", "ml.g5.12xlarg", "local_gpu"]
DISTRIBUTIONS = [
    None,
    TORCHRUN,
    {"mpi": {"enabled": True}},
    {"mpi": {"enabled": True, "processes_per_host": 16}},
    {"mpi": {"enabled": True, "processes_per_host": 2}},
    {"smdistributed": {"dataparallel": {"enabled": True}}},
    {"pytorchxla": {"enabled": True}},
    {"pytorchxla": {"enabled": False}},
    {"torchxla": {"enabled": True}},
    {**TORCHRUN, "mpi": {"enabled": True}},
    {"parameter_server": {"enabled": True}},
    {"instance_groups": ["gpu"], "mpi": {"enabled": True}},
]
MODEL_PARALLEL = [
    None,
    {"pipeline_parallel_degree": 2, "microbatches": 4},
    {"pipeline_parallel_degree": 3},
    {"sharded_data_parallel_degree": 16, "pipeline_parallel_degree": 2},
    {"sharded_data_parallel_degree": 3},
    {"tensor_parallel_degree": 2, "ddp": False},
    {"pipeline_parallel_degree": 2, "auto_partition": False},
    {"pipeline_parallel_degree": 2, "placement_strategy": "PDT"},
    {"hybrid_shard_degree": 64},
    {"tensor_parallel_degree": 3},
]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    instance=st.sampled_from(GPU_TYPES + OTHER_TYPES),
    count=st.integers(1, 3),
    version=st.sampled_from(["1.11.0", "1.13.1", "2.0.0", "2.1.0", "2.2.0", "2.3.0", "2.1",
                             "9.9", None]),
    python=st.sampled_from(["py38", "py39", "py310", "py311", None]),
    distribution=st.sampled_from(DISTRIBUTIONS),
    model_parallel=st.sampled_from(MODEL_PARALLEL),
    compiler=st.booleans(),
    devices=st.sampled_from([None, "1", "8"]),
    spot=st.sampled_from([None, (None, None), (3600, 7200), (86400, 3600)]),
    keep_alive=st.sampled_from([None, 600, 7200]),
    volume=st.sampled_from([None, 100, 4000]),
)
def test_no_fix_offered_for_a_generated_pytorch_job_is_refused(
    instance, count, version, python, distribution, model_parallel, compiler, devices, spot,
    keep_alive, volume,
):
    job: dict[str, Any] = {"estimator": "pytorch", "entry_point": SCRIPT, "role": ROLE,
                           "instance_type": instance, "instance_count": count}
    options = {"framework_version": version, "py_version": python,
               "distribution": distribution, "model_parallel": model_parallel,
               "keep_alive_period_in_seconds": keep_alive, "volume_size": volume}
    job.update({k: v for k, v in options.items() if v is not None})
    if compiler:
        job["training_compiler"] = True
    if devices is not None:
        job["environment"] = {"GPU_NUM_DEVICES": devices}
    if spot is not None:
        job["use_spot_instances"] = True
        job.update({k: v for k, v in zip(("max_run", "max_wait"), spot, strict=True) if v})
    if distribution is not None and "instance_groups" in distribution:
        del job["instance_type"], job["instance_count"]
        job["instance_groups"] = [
            {"instance_group_name": "data", "instance_type": "ml.c5.xlarge", "instance_count": 1},
            {"instance_group_name": "gpu", "instance_type": instance, "instance_count": count},
        ]
    assert broken_fixes(job) == []


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    instance=st.sampled_from([*GPU_TYPES, "ml.c5.xlarge", "ml.p4d.24xlarg"]),
    count=st.integers(1, 2),
    versions=st.sampled_from([("4.21.1", "1.11.0", "py38"), ("4.28.1", "2.0.0", "py310"),
                              ("4.36.0", "2.1.0", "py310"), ("4.36", "2.1.0", "py310"),
                              ("4.99.0", "2.1.0", "py310"), ("4.28.1", "1.9.0", "py38"),
                              ("4.36.0", "2.1.0", "py37")]),
    distribution=st.sampled_from([*DISTRIBUTIONS[:9], {"pytorchddp": {"enabled": True},
                                                        **TORCHRUN}]),
    compiler=st.booleans(),
)
def test_no_fix_offered_for_a_generated_huggingface_job_is_refused(
    instance, count, versions, distribution, compiler
):
    transformers, pytorch, python = versions
    job: dict[str, Any] = {"estimator": "huggingface", "entry_point": SCRIPT, "role": ROLE,
                           "instance_type": instance, "instance_count": count,
                           "transformers_version": transformers, "pytorch_version": pytorch,
                           "py_version": python}
    if distribution is not None:
        job["distribution"] = distribution
    if compiler:
        job["training_compiler"] = True
    assert broken_fixes(job) == []


def remote_found(arguments: dict[str, Any]) -> list[Any]:
    from safe_estimators._resolve.remote import check_remote_arguments

    return check_remote_arguments({"target": "remote_function", **arguments})[1]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    instance=st.sampled_from(["ml.g5.12xlarge", "ml.p4d.24xlarge", "ml.c5.xlarge",
                              "ml.trn1.32xlarge"]),
    count=st.integers(1, 2),
    launcher=st.sampled_from([{}, {"use_torchrun": True}, {"use_mpirun": True},
                              {"use_torchrun": True, "use_mpirun": True}]),
    processes=st.sampled_from([None, 1, 4, 16]),
    spot=st.sampled_from([None, {}, {"max_wait_time_in_seconds": 60},
                          {"keep_alive_period_in_seconds": 600}]),
)
def test_no_fix_offered_for_a_generated_remote_function_is_refused(
    instance, count, launcher, processes, spot
):
    job: dict[str, Any] = {"instance_type": instance, "instance_count": count, **launcher,
                           "image_uri": "my-image:latest"}
    if processes is not None:
        job["nproc_per_node"] = processes
    if spot is not None:
        job.update({"use_spot_instances": True, **spot})
    before = remote_found(job)
    seen = {(p.path, p.message) for p in before if p.severity == "error"}
    for problem in before:
        assert problem.hint.startswith("; or ".join(f.text for f in problem.fixes))
        for fix in problem.fixes:
            after = remote_found(changed(job, fix.changes))
            assert (problem.path, problem.message) not in {(p.path, p.message) for p in after}
            assert not [p for p in after if p.severity == "error"
                        and (p.path, p.message) not in seen], fix.text
