"""One verdict: the cases of issue 15 through the Python API and spec files.

AWS's own spellings cannot bypass the checks, injected defaults never break fit(), request
values the API would refuse are refused up front with botocore's limit in the message, and every
path (validate, load_spec, build, plan, the factories) reports the same problems in one order.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import SDK3
from sdk_generations import ParameterBoolean, ParameterInteger, ParameterString

import safe_estimators
from safe_estimators import ConfigError
from safe_estimators._commands.validate import validate_file
from safe_estimators._facts.limits import member_shape, shape_problems

EXAMPLES = Path(__file__).parent.parent / "examples"
XLA_SCRIPT = str(EXAMPLES / "compiler-multi-gpu" / "train.py")
TRAINER_SCRIPT = str(EXAMPLES / "compiler-single-gpu" / "train.py")
PT = {"framework_version": "1.13.1", "py_version": "py39"}


def pytorch(sagemaker_session, role, **overrides):
    arguments = {
        "entry_point": XLA_SCRIPT,
        "role": role,
        "instance_type": "ml.p3.8xlarge",
        "instance_count": 2,
        "sagemaker_session": sagemaker_session,
        **PT,
        **overrides,
    }
    return safe_estimators.pytorch(**arguments)


def write_spec(folder: Path, **options) -> Path:
    # The code is copied beside the spec: a spec's paths must stay inside its project.
    if not (folder / "code").exists():
        shutil.copytree(EXAMPLES / "compiler-multi-gpu", folder / "code")
    data = {
        "estimator": "pytorch",
        "entry_point": "train.py",
        "source_dir": "code",
        "instance_type": "ml.p3.8xlarge",
        **PT,
        **options,
    }
    path = folder / "job.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def errors(problems):
    return [p for p in problems if p.severity == "error"]


# --- 2. the compiler cannot be bypassed -------------------------------------------------------


def test_aws_spelling_of_the_compiler_gets_the_same_safe_defaults(sagemaker_session, role):
    from sagemaker.pytorch import TrainingCompilerConfig  # sagemaker 2's

    est = pytorch(sagemaker_session, role, compiler_config=TrainingCompilerConfig())
    same = pytorch(sagemaker_session, role, training_compiler=True)

    assert est.environment["GPU_NUM_DEVICES"] == "4"
    assert est.distribution == {"pytorchxla": {"enabled": True}}
    assert est.disable_profiler is True
    assert est.hyperparameters() == same.hyperparameters()
    note = safe_estimators.explain(est).injected
    assert note["training_compiler"] is True
    assert any("compiler_config" in i.reason for i in safe_estimators.explain(est).injections)


def test_aws_spelling_with_debug_keeps_debug(sagemaker_session, role):
    from sagemaker.pytorch import TrainingCompilerConfig  # sagemaker 2's

    est = pytorch(sagemaker_session, role, compiler_config=TrainingCompilerConfig(debug=True))
    assert est.hyperparameters()["sagemaker_training_compiler_debug_mode"] == "true"


def test_a_disabled_compiler_config_is_off(sagemaker_session, role):
    from sagemaker.pytorch import TrainingCompilerConfig  # sagemaker 2's

    est = pytorch(
        sagemaker_session, role, compiler_config=TrainingCompilerConfig(enabled=False)
    )
    assert "GPU_NUM_DEVICES" not in (est.environment or {})
    assert "sagemaker_training_compiler_enabled" not in est.hyperparameters()


def test_the_aws_spelling_is_checked_like_ours(sagemaker_session, role):
    from sagemaker.pytorch import TrainingCompilerConfig  # sagemaker 2's

    with pytest.raises(ConfigError) as error:
        pytorch(
            sagemaker_session,
            role,
            instance_type="ml.c5.xlarge",
            compiler_config=TrainingCompilerConfig(),
        )
    assert "Training Compiler does not support the c5 family" in str(error.value)


def test_both_spellings_disagreeing_is_an_error(sagemaker_session, role):
    from sagemaker.pytorch import TrainingCompilerConfig  # sagemaker 2's

    with pytest.raises(ConfigError) as error:
        pytorch(
            sagemaker_session,
            role,
            training_compiler=False,
            compiler_config=TrainingCompilerConfig(),
        )
    assert error.value.paths == ["compiler_config"]


@pytest.mark.sdk2_only  # Training Compiler: the estimator's
def test_a_compiler_config_mapping_in_a_spec_file_is_the_compiler(tmp_path):
    path = write_spec(tmp_path, compiler_config={"enabled": True})
    assert errors(validate_file(path)) == []
    plan = safe_estimators.plan(path)
    assert plan.request["Environment"]["GPU_NUM_DEVICES"] == "4"
    assert plan.request["HyperParameters"]["sagemaker_pytorch_xla_multi_worker_enabled"] == "true"
    assert "compiler_config" in str(plan)


def test_a_malformed_compiler_config_mapping_is_refused_everywhere(tmp_path):
    path = write_spec(tmp_path, compiler_config={"enabled": "yes", "speed": 11})
    problems = errors(validate_file(path))
    assert {p.path for p in problems} == {"compiler_config.enabled", "compiler_config.speed"}
    with pytest.raises(ConfigError) as error:
        safe_estimators.plan(path)
    assert [str(p) for p in error.value.problems] == [str(p) for p in problems]


# --- 3. no injected default that the SDK refuses later ----------------------------------------


@pytest.mark.sdk2_only  # Training Compiler and sagemaker.debugger
def test_compiler_with_a_profiler_config_builds_and_fits(tmp_path, role):
    from sagemaker.debugger import ProfilerConfig  # sagemaker 2's

    profiler = ProfilerConfig(system_monitor_interval_millis=500)
    est = safe_estimators.pytorch(
        entry_point=XLA_SCRIPT,
        role=role,
        instance_type="ml.p3.8xlarge",
        training_compiler=True,
        profiler_config=profiler,
        **PT,
    )
    assert est.disable_profiler is False
    explanation = safe_estimators.explain(est)
    assert "disable_profiler" not in explanation.injected
    assert [w.path for w in explanation.warnings] == ["profiler_config"]
    # fit() itself, through the plan's capturing session.
    spec = safe_estimators.load_spec(write_spec(tmp_path, training_compiler=True))
    request = safe_estimators.plan(spec, profiler_config=profiler, role=role).request
    assert request["ProfilerConfig"]["ProfilingIntervalInMilliseconds"] == 500


@pytest.mark.sdk2_only  # Training Compiler and sagemaker.debugger
def test_compiler_with_profiler_rules_keeps_the_profiler(tmp_path, role):
    from sagemaker.debugger import ProfilerRule, rule_configs  # sagemaker 2's

    spec = safe_estimators.load_spec(write_spec(tmp_path, training_compiler=True))
    rules = [ProfilerRule.sagemaker(rule_configs.ProfilerReport())]
    request = safe_estimators.plan(spec, rules=rules).request
    assert request["ProfilerRuleConfigurations"][0]["RuleConfigurationName"].startswith(
        "ProfilerReport"
    )


def test_a_profiler_config_that_disables_the_profiler_is_no_conflict(sagemaker_session, role):
    from sagemaker.debugger import ProfilerConfig  # sagemaker 2's

    est = pytorch(
        sagemaker_session,
        role,
        training_compiler=True,
        profiler_config=ProfilerConfig(disable_profiler=True),
    )
    assert safe_estimators.explain(est).injected["disable_profiler"] is True


# --- 4. request values checked against botocore's model ---------------------------------------

REFUSED = [
    ("volume_size", -5, "the minimum is 0"),
    ("tags", [{"Key": f"k{i}", "Value": "v"} for i in range(51)], "the maximum is 50"),
    ("base_job_name", "my_job.v1", "[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}"),
    ("checkpoint_s3_uri", "my-bucket/ckpt", "(https|s3)://([^/]+)/?(.*)"),
    ("output_path", "/tmp/out", "(https|s3)://([^/]+)/?(.*)"),
    ("input_mode", "file", "Pipe, File, FastFile"),
    ("max_retry_attempts", 31, "the maximum is 30"),
    ("subnets", ["subnet-1"] * 17, "the maximum is 16"),
    ("enable_network_isolation", "yes", "must be true or false"),
    ("metric_definitions", [{"Name": "loss"}], "Regex"),
]


@pytest.mark.parametrize(("name", "value", "limit"), REFUSED, ids=[r[0] for r in REFUSED])
def test_a_value_the_api_refuses_is_refused_by_validate_and_the_factory(
    name, value, limit, tmp_path, sagemaker_session, role
):
    extra = {"security_group_ids": ["sg-1"]} if name == "subnets" else {}
    problems = errors(validate_file(write_spec(tmp_path, **{name: value}, **extra)))
    assert [p.path.split(".")[0] for p in problems] == [name]
    assert limit in str(problems[0])
    assert "botocore" in problems[0].message or "must be" in problems[0].message
    with pytest.raises(ConfigError) as error:
        pytorch(sagemaker_session, role, instance_count=1, **{name: value}, **extra)
    assert [str(p) for p in error.value.problems] == [str(p) for p in problems]


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("volume_size", 0),
        ("tags", {"team": "nlp", "cost-centre": "ml:research/2"}),
        ("tags", [{"Key": "Projekt Übersetzung", "Value": "ja"}] * 50),
        ("base_job_name", "a" * 80),
        ("base_job_name", "my-job--v1"),
        ("checkpoint_s3_uri", "s3://my-bucket/ckpt"),
        ("input_mode", "FastFile"),
        ("role", "SageMakerRole"),
        ("volume_kms_key", "alias/training"),
    ],
)
def test_a_value_the_api_accepts_is_not_refused(name, value, tmp_path):
    assert errors(validate_file(write_spec(tmp_path, **{name: value}))) == []


def test_translated_unicode_patterns_accept_what_the_service_accepts():
    tag = member_shape("Tags")
    assert shape_problems([{"Key": "Ärger @ Büro", "Value": "ok: 1+1=2"}], tag) == []
    assert shape_problems([{"Key": "bad,comma", "Value": ""}], tag) != []


def test_vpc_half_given_is_an_error_as_the_sdk_refuses_it(tmp_path):
    # EstimatorBase.__init__ raises RuntimeError for subnets without security_group_ids.
    problems = validate_file(write_spec(tmp_path, subnets=["subnet-0123"]))
    # (4 GPUs without a launcher is warned about too: only the first GPU would train.)
    assert [(p.path, p.severity) for p in problems] == [
        ("distribution", "warning"),
        ("subnets", "error"),
    ]


@pytest.mark.sdk2_only  # ModelTrainer sends the config's tags only without the job's
def test_the_planned_request_is_checked_too(tmp_path, monkeypatch):
    """A limit broken by the organisation's config (not the spec) is caught in plan."""
    config = tmp_path / "config.yaml"
    tags = [{"Key": f"org{i}", "Value": "x"} for i in range(50)]
    config.write_text(
        yaml.safe_dump(
            {"SchemaVersion": "1.0", "SageMaker": {"TrainingJob": {"Tags": tags}}}
        )
    )
    monkeypatch.setenv("SAGEMAKER_USER_CONFIG_OVERRIDE", str(config))
    monkeypatch.setenv("SAGEMAKER_ADMIN_CONFIG_OVERRIDE", str(config))
    path = write_spec(tmp_path, tags=[{"Key": "team", "Value": "nlp"}])
    with pytest.raises(ConfigError) as error:
        safe_estimators.plan(path)
    assert error.value.paths == ["request.Tags"]
    assert "the maximum is 50" in str(error.value)


@pytest.mark.sdk2_only  # the estimator's SDK-added hyperparameters
def test_torchrun_hyperparameters_count_what_the_sdk_adds(tmp_path):
    hyper = {f"h{i}": i for i in range(94)}
    path = write_spec(
        tmp_path,
        instance_type="ml.p4d.24xlarge",
        instance_count=2,
        framework_version="2.0.1",
        py_version="py310",
        distribution={"torch_distributed": {"enabled": True}},
        hyperparameters=hyper,
        check_script=False,  # an XLA script; the launcher's script checks are not the point
    )
    (problem,) = errors(validate_file(path))
    assert problem.path == "hyperparameters"
    assert "94 entries and the SageMaker SDK adds 7 more" in problem.message
    assert "101 in all" in problem.message


# --- 1. local sources, pipeline variables ------------------------------------------------------


def test_missing_entry_point_and_source_dir_are_refused(tmp_path, sagemaker_session, role):
    path = write_spec(tmp_path, entry_point="missing.py", source_dir="nosuchdir")
    problems = errors(validate_file(path))
    assert [p.path for p in problems] == ["source_dir"]
    with pytest.raises(ConfigError) as error:
        pytorch(
            sagemaker_session, role, entry_point="missing.py", source_dir=str(tmp_path / "no")
        )
    assert error.value.paths == ["source_dir"]
    with pytest.raises(ConfigError) as error:
        pytorch(sagemaker_session, role, entry_point=str(tmp_path / "missing.py"))
    assert error.value.paths == ["entry_point"]


def test_entry_point_must_be_a_file_and_source_dir_a_folder(tmp_path):
    (tmp_path / "code.py").write_text("print(1)\n")
    (tmp_path / "folder.py").mkdir()
    assert [p.path for p in errors(validate_file(write_spec(
        tmp_path, source_dir=str(tmp_path / "code.py")
    )))] == ["source_dir"]  # fmt: skip
    assert [p.path for p in errors(validate_file(write_spec(
        tmp_path, source_dir=str(tmp_path), entry_point="folder.py"
    )))] == ["entry_point"]  # fmt: skip


def test_remote_sources_are_left_alone(tmp_path):
    path = write_spec(tmp_path, source_dir="s3://my-bucket/code/sourcedir.tar.gz")
    assert errors(validate_file(path)) == []


@pytest.mark.sdk2_only  # an estimator in a sagemaker 2 PipelineSession
def test_pipeline_variables_where_the_sdk_accepts_them(role):
    from sagemaker.workflow.pipeline_context import PipelineSession

    session = PipelineSession(default_bucket="pipeline-bucket")
    est = safe_estimators.pytorch(
        entry_point=XLA_SCRIPT,
        role=ParameterString("Role", default_value=role),
        instance_type="ml.p3.8xlarge",
        instance_count=ParameterInteger("Count", default_value=2),
        max_run=ParameterInteger("MaxRun", default_value=3600),
        use_spot_instances=ParameterBoolean("Spot", default_value=False),
        environment={"MODE": ParameterString("Mode", default_value="fast")},
        training_compiler=True,
        sagemaker_session=session,
        **PT,
    )
    # Checked through the defaults: 2 instances, so the multi-instance defaults apply.
    assert est.distribution == {"pytorchxla": {"enabled": True}}
    assert safe_estimators.explain(est).injected["encrypt_inter_container_traffic"] is True


def test_pipeline_variables_are_checked_through_their_default(role):
    with pytest.raises(ConfigError) as error:
        safe_estimators.pytorch(
            entry_point=XLA_SCRIPT,
            role=role,
            instance_type="ml.p3.8xlarge",
            instance_count=ParameterInteger("Count", default_value=0),
            use_spot_instances=ParameterBoolean("Spot", default_value=True),
            **PT,
        )
    assert error.value.paths == ["instance_count", "max_wait", "checkpoint_s3_uri"]


# --- 5. all problems at once, on every path, in one order --------------------------------------

FIVE = {
    "instance_cout": 2,  # structural
    "max_run": "3600",  # structural
    "volume_size": -5,
    "base_job_name": "my_job.v1",
    "checkpoint_s3_uri": "my-bucket/ckpt",
}


def test_every_path_lists_every_problem_in_validates_order(tmp_path, role):
    path = write_spec(tmp_path, **FIVE)
    expected = [str(p) for p in errors(validate_file(path))]
    assert len(expected) == 5
    for call in (
        lambda: safe_estimators.load_spec(path),
        lambda: safe_estimators.build(path, role=role),
        lambda: safe_estimators.plan(path),
    ):
        with pytest.raises(ConfigError) as error:
            call()
        assert [str(p) for p in error.value.problems] == expected
    with pytest.raises(ConfigError) as error:
        safe_estimators.pytorch(
            entry_point="train.py",
            source_dir=str(EXAMPLES / "compiler-multi-gpu"),
            role=role,
            instance_type="ml.p3.8xlarge",
            **PT,
            **FIVE,
        )
    assert [str(p) for p in error.value.problems] == expected


def test_overrides_can_fix_what_the_file_gets_wrong(tmp_path, role):
    path = write_spec(tmp_path, volume_size=-5)
    assert safe_estimators.plan(path, volume_size=50).request["ResourceConfig"][
        "VolumeSizeInGB"
    ] == 50


# --- 8. encryption ---------------------------------------------------------------------------


def test_the_encryption_reason_says_what_it_costs_and_what_a_vpc_needs(tmp_path):
    plain = safe_estimators.plan(write_spec(tmp_path, instance_count=2))
    reason = {i.path: i.reason for i in plain.explanation.injections}[
        "encrypt_inter_container_traffic"
    ]
    assert "training time" in reason and "cost" in reason
    assert "UDP" not in reason
    vpc = safe_estimators.plan(
        write_spec(
            tmp_path, instance_count=2, subnets=["subnet-0abc"], security_group_ids=["sg-0abc"]
        )
    )
    reason = {i.path: i.reason for i in vpc.explanation.injections}[
        "encrypt_inter_container_traffic"
    ]
    assert "UDP port 500" in reason and "protocol 50 (ESP)" in reason


def test_text_plan_shows_every_non_default_field(tmp_path):
    path = write_spec(
        tmp_path,
        subnets=["subnet-0abc"],
        security_group_ids=["sg-0abc"],
        tags={"team": "nlp"},
        output_kms_key="alias/out",
        volume_size=100,
    )
    text = str(safe_estimators.plan(path))
    assert 'VpcConfig.Subnets = ["subnet-0abc"]' in text
    assert 'Tags.0.Key = "team"' in text
    assert 'OutputDataConfig.KmsKeyId = "alias/out"' in text
    assert "100 GB volume" in text
    assert "StoppingCondition.MaxRuntimeInSeconds" not in text  # the SDK's default


@pytest.mark.sdk2_only  # sagemaker.estimator's defaults
def test_sdk_defaults_table_matches_the_sdk():
    import inspect

    from sagemaker.estimator import EstimatorBase

    from safe_estimators._commands.plan import SDK_DEFAULTS

    parameters = inspect.signature(EstimatorBase.__init__).parameters
    assert {
        "ResourceConfig.VolumeSizeInGB": parameters["volume_size"].default,
        "StoppingCondition.MaxRuntimeInSeconds": parameters["max_run"].default,
        "AlgorithmSpecification.TrainingInputMode": parameters["input_mode"].default,
    } == SDK_DEFAULTS


@pytest.fixture(autouse=True)
def _quiet_sdk():
    logging.getLogger("sagemaker").setLevel(logging.ERROR)
    yield


def test_plan_json_carries_the_problems(tmp_path):
    from safe_estimators._cli import main

    path = write_spec(tmp_path, **FIVE)
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["plan", str(path), "--json"])
    document = json.loads(out.getvalue())
    assert code == 1
    assert document["ok"] is False
    assert len(document["problems"]) == 5
    assert set(document["problems"][0]) >= {"path", "message", "hint", "severity"}


def test_instance_groups_beside_instance_type_are_refused_by_validate_as_plan_would(tmp_path):
    groups = [{"instance_group_name": "a", "instance_type": "ml.p3.8xlarge", "instance_count": 1}]
    path = write_spec(tmp_path, instance_groups=groups)
    problems = errors(validate_file(path))
    assert [p.path for p in problems] == ["instance_type"]
    with pytest.raises(ConfigError) as error:
        safe_estimators.plan(path)
    assert [str(p) for p in error.value.problems] == [str(p) for p in problems]


def test_instance_groups_alone_pass_validate_and_plan_alike(tmp_path):
    groups = [{"instance_group_name": "a", "instance_type": "ml.p3.8xlarge", "instance_count": 1}]
    path = write_spec(tmp_path, instance_groups=groups)
    data = yaml.safe_load(path.read_text())
    del data["instance_type"]
    path.write_text(yaml.safe_dump(data))
    assert errors(validate_file(path)) == []
    request = safe_estimators.plan(path).request
    assert [g["InstanceType"] for g in request["ResourceConfig"]["InstanceGroups"]] == [
        "ml.p3.8xlarge"
    ]


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("profiler_config", {"system_monitor_interval_millis": 500}),
        ("debugger_hook_config", {"s3_output_path": "s3://b/d"}),
        ("rules", ["ProfilerReport"]),
    ],
)
def test_sdk_objects_written_as_mappings_are_refused(name, value, tmp_path):
    problems = errors(validate_file(write_spec(tmp_path, **{name: value})))
    assert [p.path for p in problems] == [name]
    # The estimator takes the sagemaker.debugger object; ModelTrainer has no such option.
    assert ("target: estimator" if SDK3 else "in Python") in problems[0].hint
