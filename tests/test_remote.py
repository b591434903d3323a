"""``safe_estimators.remote``: the SDK's @remote decorator, checked when the function is
decorated (offline), and sent through the SDK's own decorator on the first call. The calls run
against moto's in-process AWS, so the assertions are on the CreateTrainingJob request the SDK
really made."""

from __future__ import annotations

import subprocess
import sys

import boto3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto import mock_aws

import instance_catalog
import safe_estimators
from safe_estimators import ConfigError
from safe_estimators._facts.remote_function import default_image_python_versions, remote_keywords
from safe_estimators._rules.remote import RemoteContext, check_remote
from safe_estimators._spec.remote import RemoteFunctionSpec

pytestmark = pytest.mark.both_sdks

ROLE = "arn:aws:iam::111122223333:role/SageMakerRole"
IMAGE = "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.3.0-gpu-py311"
BUCKET = "remote-test-bucket"


def _options(**options):
    return {"role": ROLE, "image_uri": IMAGE, "s3_root_uri": f"s3://{BUCKET}/remote", **options}


def _sent(decorated, *args):
    """Call the decorated function against moto; the CreateTrainingJob request moto received."""
    with mock_aws():
        boto3.client("s3", region_name="us-west-2").create_bucket(
            Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "us-west-2"}
        )
        # moto marks the job Completed at once, with no results: the SDK then fails to read them.
        with pytest.raises(Exception, match="results"):
            decorated(*args)
        client = boto3.client("sagemaker", region_name="us-west-2")
        (job,) = client.list_training_jobs()["TrainingJobSummaries"]
        return client.describe_training_job(TrainingJobName=job["TrainingJobName"])


def test_more_processes_than_gpus_is_refused_when_the_function_is_decorated():
    with pytest.raises(ConfigError) as caught:

        @safe_estimators.remote(
            **_options(instance_type="ml.g5.12xlarge", use_torchrun=True, nproc_per_node=8)
        )
        def train():
            return 1

    (problem,) = caught.value.problems
    assert problem.path == "nproc_per_node"
    assert "ml.g5.12xlarge has 4 GPUs" in problem.message
    assert "nproc_per_node=4" in problem.hint


def test_the_same_job_on_a_p4d_is_sent_through_the_sdks_decorator():
    @safe_estimators.remote(
        **_options(
            instance_type="ml.p4d.24xlarge", instance_count=2, use_torchrun=True, nproc_per_node=8
        )
    )
    def train(x):
        return x + 1

    assert safe_estimators.explain(train).injections == ()
    sent = _sent(train, 1)
    assert sent["ResourceConfig"]["InstanceType"] == "ml.p4d.24xlarge"
    assert sent["ResourceConfig"]["InstanceCount"] == 2
    arguments = sent["AlgorithmSpecification"]["ContainerArguments"]
    assert arguments[-4:] == ["--distribution", "torchrun", "--user_nproc_per_node", "8"]


def test_the_processes_per_node_come_from_the_catalog_and_are_recorded():
    @safe_estimators.remote(**_options(instance_type="ml.g5.12xlarge", use_torchrun=True))
    def train():
        return 1

    (injection,) = safe_estimators.explain(train).injections
    assert (injection.path, injection.value) == ("nproc_per_node", 4)
    assert "4 GPUs" in injection.reason
    arguments = _sent(train)["AlgorithmSpecification"]["ContainerArguments"]
    assert arguments[-2:] == ["--user_nproc_per_node", "4"]


def test_trainium_is_counted_in_neuroncores():
    @safe_estimators.remote(**_options(instance_type="ml.trn1.32xlarge", use_torchrun=True))
    def train():
        return 1

    (injection,) = safe_estimators.explain(train).injections
    assert injection.value == instance_catalog.get("ml.trn1.32xlarge").neuron_cores == 32


def test_decorating_makes_no_aws_call(monkeypatch):
    import safe_estimators._targets.remote as built

    def refuse():
        raise AssertionError("the SDK's decorator was applied at decoration time")

    monkeypatch.setattr(built, "sdk_remote", refuse)

    @safe_estimators.remote(**_options(instance_type="ml.p4d.24xlarge", use_torchrun=True))
    def train():
        return 1

    assert callable(train) and train.__name__ == "train"


def test_fewer_processes_than_gpus_warns_about_idle_gpus():
    decorated = safe_estimators.remote(
        **_options(instance_type="ml.p4d.24xlarge", use_torchrun=True, nproc_per_node=2)
    )(lambda: 1)
    (warned,) = safe_estimators.explain(decorated).warnings
    assert warned.path == "nproc_per_node" and "6 sit idle" in warned.message


def test_a_warm_pool_with_spot_warns_and_spot_needs_its_wait():
    with pytest.raises(ConfigError) as caught:
        safe_estimators.remote(
            **_options(
                instance_type="ml.p4d.24xlarge",
                keep_alive_period_in_seconds=600,
                use_spot_instances=True,
            )
        )
    assert [p.path for p in caught.value.problems] == ["max_wait_time_in_seconds"]
    decorated = safe_estimators.remote(
        **_options(
            instance_type="ml.p4d.24xlarge",
            keep_alive_period_in_seconds=600,
            use_spot_instances=True,
            max_wait_time_in_seconds=86400,
        )
    )(lambda: 1)
    (warned,) = safe_estimators.explain(decorated).warnings
    assert warned.path == "keep_alive_period_in_seconds" and "spot" in warned.message


@pytest.mark.parametrize(("wait", "refused"), [(3599, True), (3600, False)])
def test_the_spot_wait_is_compared_at_the_boundary(wait, refused):
    options = _options(
        instance_type="ml.m5.xlarge",
        use_spot_instances=True,
        max_runtime_in_seconds=3600,
        max_wait_time_in_seconds=wait,
    )
    if refused:
        with pytest.raises(ConfigError, match="less than max_runtime_in_seconds"):
            safe_estimators.remote(**options)
    else:
        safe_estimators.remote(**options)


def test_several_instances_need_exactly_one_launcher():
    with pytest.raises(ConfigError) as caught:
        safe_estimators.remote(**_options(instance_type="ml.p4d.24xlarge", instance_count=2))
    assert [p.path for p in caught.value.problems] == ["instance_count"]
    with pytest.raises(ConfigError, match="use_torchrun and use_mpirun given"):
        safe_estimators.remote(
            **_options(
                instance_type="ml.p4d.24xlarge", instance_count=2, use_torchrun=True,
                use_mpirun=True,
            )
        )


def test_a_launcher_on_a_cpu_type_warns():
    decorated = safe_estimators.remote(
        **_options(instance_type="ml.m5.4xlarge", use_torchrun=True)
    )(lambda: 1)
    (warned,) = safe_estimators.explain(decorated).warnings
    assert warned.path == "use_torchrun" and "16 processes" in warned.message


def _context(local_python, **options):
    spec = RemoteFunctionSpec(instance_type="ml.g5.2xlarge", **options)
    return RemoteContext(spec, instance_catalog.get("ml.g5.2xlarge"), local_python, False)


def test_the_default_image_follows_the_local_python_as_the_sdk_lists_it():
    listed = default_image_python_versions()
    assert listed == ("310", "38")  # the SDK's _get_default_image, both generations
    assert [p.path for p in check_remote(_context("311"))] == ["image_uri"]
    assert check_remote(_context("310")) == []
    assert check_remote(_context("311", image_uri=IMAGE)) == []


def test_a_misspelt_keyword_gets_the_closest_name_and_every_other_problem_too():
    with pytest.raises(ConfigError) as caught:
        safe_estimators.remote(
            **_options(instance_type="ml.g5.12xlarge", use_torchrun=True, nproc_per_node=8),
            instance_cont=2,
        )
    problems = {p.path: p for p in caught.value.problems}
    assert set(problems) == {"instance_cont", "nproc_per_node"}
    assert problems["instance_cont"].hint == "did you mean 'instance_count'?"


def test_a_value_of_the_wrong_type_is_our_error_with_its_path():
    with pytest.raises(ConfigError) as caught:
        safe_estimators.remote(**_options(instance_type="ml.g5.12xlarge", nproc_per_node="8"))
    assert [p.path for p in caught.value.problems] == ["nproc_per_node"]


def test_an_unknown_instance_type_gets_a_did_you_mean():
    with pytest.raises(ConfigError) as caught:
        safe_estimators.remote(**_options(instance_type="ml.p4d.24xlarg"))
    (problem,) = caught.value.problems
    assert problem.path == "instance_type" and "ml.p4d.24xlarge" in problem.hint


def test_a_volume_key_on_local_storage_is_refused():
    with pytest.raises(ConfigError, match="local NVMe storage"):
        safe_estimators.remote(
            **_options(instance_type="ml.p4d.24xlarge", volume_kms_key="alias/training")
        )


def test_a_token_in_the_environment_is_a_warning_in_python():
    decorated = safe_estimators.remote(
        **_options(
            instance_type="ml.m5.xlarge",
            environment_variables={"HF_TOKEN": "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ012345"},
        )
    )(lambda: 1)
    (warned,) = safe_estimators.explain(decorated).warnings
    assert warned.path == "environment_variables.HF_TOKEN"
    assert "aBcDeFgHiJkLmNoPqRsTuVwXyZ012345" not in str(warned)


VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 10**6), st.text(max_size=30),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.text(max_size=5)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from([*remote_keywords(), "bogus", "instnce_type"]), VALUES))
def test_any_arguments_are_built_or_refused_with_our_error(arguments):
    arguments = {k: v for k, v in arguments.items() if k != "sagemaker_session"}
    try:
        decorated = safe_estimators.remote(**arguments)
    except ConfigError as exc:
        assert exc.problems and all(p.path and p.message for p in exc.problems)
    else:
        assert callable(decorated)


def test_a_spec_file_is_validated_with_the_same_rules(tmp_path):
    spec = tmp_path / "job.yaml"
    spec.write_text(
        "target: remote_function\ninstance_type: ml.g5.12xlarge\nuse_torchrun: true\n"
        "nproc_per_node: 8\nkeep_alive_period_in_seconds: 600\nuse_spot_instances: true\n"
        f"max_wait_time_in_seconds: 86400\nimage_uri: {IMAGE}\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "safe_estimators._cli", "validate", "--no-cache", str(spec)],
        capture_output=True, text=True, check=False,
    )
    assert done.returncode == 1, done.stderr
    assert "job.yaml:4:1: nproc_per_node: is 8 with use_torchrun" in done.stdout
    assert "keep_alive_period_in_seconds: warning:" in done.stdout


def test_a_spec_file_plans_offline_through_the_sdks_decorator(tmp_path):
    spec = tmp_path / "job.yaml"
    spec.write_text(
        "target: remote_function\ninstance_type: ml.p4d.24xlarge\ninstance_count: 2\n"
        f"use_torchrun: true\nimage_uri: {IMAGE}\nrole: {ROLE}\n"
    )
    plan = safe_estimators.plan(spec)
    request = plan.request
    assert request["ResourceConfig"]["InstanceType"] == "ml.p4d.24xlarge"
    assert request["ResourceConfig"]["InstanceCount"] == 2
    assert request["RoleArn"] == ROLE
    arguments = request["AlgorithmSpecification"]["ContainerArguments"]
    assert arguments[-4:] == ["--distribution", "torchrun", "--user_nproc_per_node", "8"]
    assert [i.path for i in plan.explanation.injections] == ["nproc_per_node"]
    assert any("bucket" in p for p in plan.placeholders)


def test_a_refused_spec_file_is_not_planned(tmp_path):
    spec = tmp_path / "job.yaml"
    spec.write_text(
        "target: remote_function\ninstance_type: ml.g5.12xlarge\nuse_torchrun: true\n"
        f"nproc_per_node: 8\nimage_uri: {IMAGE}\n"
    )
    with pytest.raises(ConfigError, match=r"ml\.g5\.12xlarge has 4 GPUs"):
        safe_estimators.plan(spec)


# --- the files a @remote spec names: relative to the spec, inside the project -----------------


def _remote_project(tmp_path):
    project = tmp_path / "project"
    (project / "jobs").mkdir(parents=True)
    (project / ".git").mkdir()
    (project / "jobs" / "requirements.txt").write_text("transformers==4.44.0\n")
    (project / "jobs" / "setup.sh").write_text("echo ready\n")
    (tmp_path / "outside.txt").write_text("sk-outside-value-never-read\n")
    return project


def _remote_spec(folder, **options):
    lines = [f"target: remote_function\ninstance_type: ml.p4d.24xlarge\nimage_uri: {IMAGE}\n"]
    lines += [f"{key}: {value}\n" for key, value in options.items()]
    spec = folder / "job.yaml"
    spec.write_text("".join(lines))
    return spec


def test_a_spec_files_dependencies_and_script_are_relative_to_it(tmp_path, monkeypatch):
    from safe_estimators._commands.validate import validate_spec

    project = _remote_project(tmp_path)
    spec = _remote_spec(
        project / "jobs", dependencies="requirements.txt", pre_execution_script="setup.sh"
    )
    monkeypatch.chdir(tmp_path)  # the SDK would look for them here
    arguments, problems = validate_spec(spec)
    assert [p for p in problems if p.severity == "error"] == []
    assert arguments["dependencies"] == str(project / "jobs" / "requirements.txt")
    assert arguments["pre_execution_script"] == str(project / "jobs" / "setup.sh")
    spec = _remote_spec(project / "jobs", dependencies="auto_capture")
    assert validate_spec(spec)[0]["dependencies"] == "auto_capture"  # a keyword, not a file


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("dependencies", "../../outside.txt"),
        ("dependencies", "ABSOLUTE"),
        ("pre_execution_script", "../../outside.txt"),
        ("pre_execution_script", "linked.sh"),
    ],
)
def test_a_file_outside_the_project_is_refused_and_not_planned(tmp_path, option, value):
    from safe_estimators._commands.validate import validate_file

    project = _remote_project(tmp_path)
    if value == "ABSOLUTE":
        value = str(tmp_path / "outside.txt")
    if value == "linked.sh":
        (project / "jobs" / "linked.sh").symlink_to(tmp_path / "outside.txt")
    spec = _remote_spec(project / "jobs", **{option: value})
    [problem] = [p for p in validate_file(spec) if p.severity == "error"]
    assert (problem.path, problem.rule) == (option, "project-containment")
    assert "outside the project" in problem.message
    with pytest.raises(ConfigError) as raised:
        safe_estimators.plan(spec)
    assert "sk-outside" not in str(raised.value)
