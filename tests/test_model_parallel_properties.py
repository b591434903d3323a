"""Random model parallel inputs: problems (never an exception), or an estimator the SDK accepts.

Both library generations: PyTorch up to 2.0.0 runs the library v1 (MPI), from 2.0.1 the library
v2 (torchrun, its own image); the SDK must accept whatever passes, and build its image.
"""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from safe_estimators._distributions.model_parallel import (
    ModelParallel,
    check_model_parallel,
    parse_model_parallel,
    resolve_model_parallel,
    split_distribution,
)
from safe_estimators._problems import ConfigError, Problem

OPTION_NAMES = [a.name for a in attrs.fields(ModelParallel) if not a.name.startswith("_")]
KEYS = [*OPTION_NAMES, "partitions", "process_per_host", "tensor_paralel_degree"]
GPUS = {
    "ml.p3.16xlarge": 8,
    "ml.p3.8xlarge": 4,
    "ml.g4dn.12xlarge": 4,
    "ml.p4d.24xlarge": 8,
    "ml.p3.2xlarge": 1,
    "ml.c5.xlarge": 0,
}
PY_VERSION = {
    "1.6.0": "py3",
    "1.7.1": "py3",
    "1.8.1": "py3",
    "1.9.1": "py38",
    "1.10.2": "py38",
    "1.11.0": "py38",
    "1.12.0": "py38",
    "1.12.1": "py38",
    "1.13.1": "py39",
    "2.0.0": "py310",
    "2.1.0": "py310",
    # The library v2's images (and 2.8.0, a library version the SDK's table takes for one).
    "2.0.1": "py310",
    "2.1.2": "py310",
    "2.2.0": "py310",
    "2.3.1": "py311",
    "2.4.1": "py311",
    "2.5.1": "py311",
    "2.8.0": "py311",
}

anything = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 40),
    st.floats(-1, 5, allow_nan=False),
    st.sampled_from(
        ["cluster", "spread", "DPT", "TPD", "PDT", "interleaved", "simple", "speed", "memory",
         "auto", "nccl", "true", "-verbose", ""]
    ),
    st.text(max_size=4),
)  # fmt: skip

# Values of the right kind, so that many examples get past the single-value checks and
# exercise the relations and the SDK.
degree = st.sampled_from([1, 2, 4, 8])
plausible_value = {
    "pipeline_parallel_degree": degree,
    "tensor_parallel_degree": degree,
    "sharded_data_parallel_degree": degree,
    "microbatches": degree,
    "active_microbatches": degree,
    "pipeline": st.sampled_from(["interleaved", "simple"]),
    "placement_strategy": st.sampled_from(["cluster", "spread", "DPT", "TPD", "PDT"]),
    "ddp_port": st.integers(1024, 65535),
    "ddp_dist_backend": st.sampled_from(["auto", "nccl"]),
    "default_partition": st.integers(0, 3),
    "optimize": st.sampled_from(["speed", "memory"]),
    "memory_weight": st.one_of(st.floats(0, 1), st.sampled_from([0, 1])),
    "partition_file": st.just("partitions.json"),
    "activation_loading_horizon": st.integers(0, 8),
    "tensor_parallel_seed": st.integers(0, 100),
    "sdp_reduce_bucket_size": st.integers(1, 10**9),
    "sdp_param_persistence_threshold": st.integers(1, 10**7),
    "sdp_max_live_parameters": st.integers(1, 10**9),
    "sdp_gradient_clipping": st.floats(0.1, 5),
    "processes_per_host": st.sampled_from([1, 2, 4, 8]),
    "custom_mpi_options": st.sampled_from(["-verbose", "-x NCCL_DEBUG=WARN"]),
    "hybrid_shard_degree": st.sampled_from([0, 1, 2, 4, 8, 16, 32]),
    "context_parallel_degree": degree,
    "expert_parallel_degree": degree,
    "random_seed": st.integers(-5, 10**6),
}  # fmt: skip
plausible_value.update({n: st.booleans() for n in OPTION_NAMES if n not in plausible_value})

random_options = st.dictionaries(st.sampled_from(KEYS), anything, max_size=8)
plausible_options = st.lists(st.sampled_from(OPTION_NAMES), max_size=6, unique=True).flatmap(
    lambda names: st.fixed_dictionaries({n: plausible_value[n] for n in names})
)
options = st.one_of(random_options, plausible_options, plausible_options)
jobs = st.fixed_dictionaries(
    {
        "instance": st.sampled_from(sorted(GPUS)),
        "count": st.integers(1, 3),
        "pytorch": st.sampled_from(sorted(PY_VERSION)),
        "hyperparameters": st.dictionaries(
            st.sampled_from(["batch_size", "train_batch_size", "epochs"]),
            st.one_of(st.integers(1, 64), st.sampled_from(["32", "30", "auto"])),
            max_size=2,
        ),
    }
)


@pytest.fixture
def sdk_session(sagemaker_session):
    """The suite's offline session without the SDK defaults file.

    These tests only construct estimators; the SDK sends telemetry on fit(), which they never
    call. With a defaults file the SDK re-validates its JSON schema on every config lookup
    (about 5 s per estimator), which would make 100 examples take minutes.
    """
    sagemaker_session.sagemaker_config = {}
    return sagemaker_session


@pytest.fixture
def entry_point(tmp_path: Path) -> str:
    script = tmp_path / "train.py"
    script.write_text("print('training')\n")
    return str(script)


def bare_sdk_estimator(instance, count, pytorch, distribution, entry_point, role, session):
    """The SageMaker SDK's own PyTorch estimator for the distribution we resolved."""
    from sagemaker.pytorch import PyTorch

    return PyTorch(
        entry_point=entry_point,
        role=role,
        instance_type=instance,
        instance_count=count,
        framework_version=pytorch,
        py_version=PY_VERSION[pytorch],
        distribution=distribution,
        sagemaker_session=session,
    )


def assert_well_formed(problems: list[Problem]) -> None:
    for problem in problems:
        assert isinstance(problem, Problem)
        assert problem.path and problem.message
        assert problem.severity in ("error", "warning")


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(raw=options, job=jobs)
def test_random_options_give_problems_or_an_estimator_the_sdk_accepts(
    raw, job, entry_point, role, sdk_session
):
    instance, count, pytorch = job["instance"], job["count"], job["pytorch"]
    mp, problems = parse_model_parallel(raw)
    assert mp is not None
    problems += check_model_parallel(
        mp,
        instance_type=instance,
        gpus_per_instance=GPUS[instance],
        instance_count=count,
        pytorch_version=pytorch,
        hyperparameters=job["hyperparameters"],
        py_version=PY_VERSION[pytorch],
        entry_point=entry_point,
    )
    assert_well_formed(problems)
    if any(p.severity == "error" for p in problems):
        event("refused with problems")
        return

    distribution, injections, layout = resolve_model_parallel(
        mp, gpus_per_instance=GPUS[instance], instance_count=count, pytorch_version=pytorch
    )
    event(f"built by the SDK (library v{layout.library})")
    if layout.library == 1:
        assert layout.world_size == layout.pipeline * layout.tensor * layout.data_parallel
    else:
        shard = (mp.hybrid_shard_degree or 1) * layout.tensor * layout.expert
        assert layout.world_size == shard * layout.data_parallel
    assert all(i.reason for i in injections)
    estimator = bare_sdk_estimator(
        instance, count, pytorch, distribution, entry_point, role, sdk_session
    )
    hyperparameters = estimator.hyperparameters()  # runs the SDK's validate_mp_config
    parameters = distribution["smdistributed"]["modelparallel"]["parameters"]
    assert json.loads(hyperparameters["mp_parameters"]) == parameters
    assert layout.processes_per_host <= GPUS[instance]
    if layout.library == 1:
        assert hyperparameters["sagemaker_mpi_num_of_processes_per_host"] == str(
            layout.processes_per_host
        )
    else:
        assert hyperparameters["sagemaker_torch_distributed_enabled"] == "true"
        assert "sagemaker_mpi_enabled" not in hyperparameters
        image = estimator.training_image_uri()  # the SDK resolves the SMP v2 image
        assert f"smdistributed-modelparallel:{pytorch}-gpu-{PY_VERSION[pytorch]}-" in image


@settings(max_examples=200, deadline=None)
@given(kwargs=st.dictionaries(st.sampled_from(OPTION_NAMES), anything, max_size=6))
def test_direct_construction_raises_only_config_error(kwargs):
    try:
        ModelParallel(**kwargs)
    except ConfigError as error:
        assert all(path.startswith("model_parallel.") for path in error.paths)


nested = st.recursive(
    anything,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.one_of(
                st.sampled_from(
                    ["smdistributed", "modelparallel", "mpi", "enabled", "parameters",
                     "torch_distributed",
                     "processes_per_host", "process_per_host", "custom_mpi_options",
                     "partitions", "dataparallel", *OPTION_NAMES]
                ),
                st.integers(0, 3),
            ),
            inner,
            max_size=4,
        ),
    ),
    max_leaves=12,
)  # fmt: skip


notebook_shaped = st.builds(
    lambda parameters, mpi, enabled: {
        "smdistributed": {"modelparallel": {"enabled": enabled, "parameters": parameters}},
        "mpi": mpi,
    },
    st.one_of(random_options, plausible_options, nested),
    st.one_of(st.dictionaries(st.sampled_from(["enabled", *KEYS]), anything, max_size=3), nested),
    st.one_of(st.just(True), anything),
)
v2_shaped = st.builds(
    lambda parameters, launcher, enabled: {
        "torch_distributed": launcher,
        "smdistributed": {"modelparallel": {"enabled": enabled, "parameters": parameters}},
    },
    st.one_of(random_options, plausible_options, nested),
    st.one_of(st.just({"enabled": True}), st.dictionaries(st.just("enabled"), anything), nested),
    st.one_of(st.just(True), anything),
)


@settings(max_examples=200, deadline=None)
@given(distribution=st.one_of(nested, notebook_shaped, v2_shaped), job=jobs)
def test_any_raw_distribution_parses_and_checks_without_raising(distribution, job):
    mp, rest, problems = split_distribution(distribution)
    assert isinstance(rest, dict)
    assert_well_formed(problems)
    if mp is not None:
        assert_well_formed(
            check_model_parallel(
                mp,
                instance_type=job["instance"],
                gpus_per_instance=GPUS[job["instance"]],
                instance_count=job["count"],
                pytorch_version=job["pytorch"],
                hyperparameters=job["hyperparameters"],
                py_version=PY_VERSION[job["pytorch"]],
            )
        )


V2_NAMES = [
    "hybrid_shard_degree", "sm_activation_offloading", "activation_loading_horizon",
    "fsdp_cache_flush_warnings", "allow_empty_shards", "tensor_parallel_degree",
    "context_parallel_degree", "expert_parallel_degree", "random_seed",
    "delayed_parameter_initialization", "ddp",
]  # fmt: skip
v2_options = st.lists(st.sampled_from(V2_NAMES), max_size=5, unique=True).flatmap(
    lambda names: st.fixed_dictionaries({n: plausible_value[n] for n in names})
)
v2_jobs = st.fixed_dictionaries(
    {
        "instance": st.sampled_from(["ml.p4d.24xlarge", "ml.p5.48xlarge", "ml.g5.12xlarge"]),
        "count": st.integers(1, 4),
        "pytorch": st.sampled_from(["2.0.1", "2.1.2", "2.2.0", "2.3.1", "2.4.1", "2.5.1"]),
    }
)
V2_GPUS = {"ml.p4d.24xlarge": 8, "ml.p5.48xlarge": 8, "ml.g5.12xlarge": 4}


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(raw=v2_options, job=v2_jobs)
def test_v2_options_give_problems_or_a_torchrun_job_with_the_smp_image(
    raw, job, entry_point, role, sdk_session
):
    instance, count, pytorch = job["instance"], job["count"], job["pytorch"]
    gpus = V2_GPUS[instance]
    mp, problems = parse_model_parallel(raw)
    assert mp is not None and not problems
    problems = check_model_parallel(
        mp,
        instance_type=instance,
        gpus_per_instance=gpus,
        instance_count=count,
        pytorch_version=pytorch,
        hyperparameters={},
        py_version=PY_VERSION[pytorch],
        entry_point=entry_point,
    )
    assert_well_formed(problems)
    tensor, context = raw.get("tensor_parallel_degree", 1), raw.get("context_parallel_degree", 1)
    expert, shard = raw.get("expert_parallel_degree", 1), raw.get("hybrid_shard_degree")
    must_refuse = (
        gpus % tensor or gpus % context or gpus % expert
        or (expert > 1 and tensor > 1)
        or (shard or 1) > gpus * count
        or (gpus * count) % ((shard or 1) * tensor * expert)
        or (context > 1 and shard and context > shard)
    )  # fmt: skip
    errors = [p for p in problems if p.severity == "error"]
    if must_refuse:
        assert errors
    if errors:
        event("refused")
        return
    event("built")
    distribution, _, layout = resolve_model_parallel(
        mp, gpus_per_instance=gpus, instance_count=count, pytorch_version=pytorch
    )
    assert layout.library == 2
    estimator = bare_sdk_estimator(
        instance, count, pytorch, distribution, entry_point, role, sdk_session
    )
    hyperparameters = estimator.hyperparameters()
    assert hyperparameters["sagemaker_torch_distributed_enabled"] == "true"
    sent = json.loads(hyperparameters["mp_parameters"])
    assert sent == {k: v for k, v in raw.items() if k in V2_NAMES[:9]} or sent == {
        "hybrid_shard_degree": 0
    }
    assert f"smdistributed-modelparallel:{pytorch}-" in estimator.training_image_uri()


# --- differential: our factory against the bare SDK, for SMP v2 distributions -------------------

SMP_VERSIONS = ["2.0.1", "2.1.2", "2.2.0", "2.3.1", "2.4.1", "2.5.1"]
raw_v2_jobs = st.fixed_dictionaries(
    {
        # Mostly versions with an SMP image and their own Python, sometimes a trap: the
        # library-version keys (2.3.0, 2.5.0, 2.8.0), versions without an image, short ones.
        "framework_version": st.sampled_from(
            [*SMP_VERSIONS, *SMP_VERSIONS, "2.3.0", "2.5.0", "2.8.0", "2.6.0", "2.1.0", "2.2"]
        ),
        "instance_type": st.sampled_from(
            ["ml.p4d.24xlarge", "ml.p4d.24xlarge", "ml.p5.48xlarge", "ml.g5.12xlarge",
             "ml.c5.xlarge"]
        ),
        "instance_count": st.integers(1, 3),
        "distribution": st.builds(
            lambda parameters, launcher, enabled: {
                "torch_distributed": launcher,
                "smdistributed": {"modelparallel": {"enabled": enabled, "parameters": parameters}},
            },
            v2_options,
            st.sampled_from([{"enabled": True}, {"enabled": True}, {"enabled": False}, {}]),
            # A switched-off modelparallel block is not an SMP job (other launchers' rules).
            st.just(True),
        ),
        "right_python": st.sampled_from([True, True, True, False]),
    }
).map(
    lambda job: {
        **{k: v for k, v in job.items() if k != "right_python"},
        "py_version": PY_VERSION.get(job["framework_version"], "py310")
        if job["right_python"]
        else "py39",
    }
)  # fmt: skip


def _bare_sdk_refuses(job, entry_point, role, session) -> bool:
    from sagemaker.pytorch import PyTorch

    try:
        estimator = PyTorch(
            entry_point=entry_point, role=role, sagemaker_session=session, **json_copy(job)
        )
        estimator.hyperparameters()
        estimator.training_image_uri()
    except (ValueError, KeyError, TypeError):
        return True
    return False


def json_copy(value):
    return json.loads(json.dumps(value))


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(job=raw_v2_jobs)
def test_every_sdk_refusal_of_an_smp_v2_job_is_our_config_error_first(
    job, entry_point, role, sdk_session
):
    import safe_estimators

    sdk_refuses = _bare_sdk_refuses(job, entry_point, role, sdk_session)
    try:
        ours = safe_estimators.pytorch(
            entry_point=entry_point,
            role=role,
            sagemaker_session=sdk_session,
            check_script=False,
            **json_copy(job),
        )
    except ConfigError as error:
        event("we refuse" + (" (so does the SDK)" if sdk_refuses else ""))
        assert "<sagemaker>" not in error.paths, error
        return
    event("we build")
    assert not sdk_refuses, "the SDK refuses what we built"
    assert ours.hyperparameters()["sagemaker_torch_distributed_enabled"] == "true"
    assert "smdistributed-modelparallel" in ours.training_image_uri()
