"""Tests written against the surviving mutants of ./dev mutate (tests/mutation_scope.py names
the modules these are tests of): the request rules (each option that becomes a CreateTrainingJob
member, the options' types, the VPC pair), the SageMaker Pipelines rules, the safety rules
(spot training, secrets, source_dir's contents, the API's map limits) and the ModelTrainer
target's rules.

Each rule is called on the Context of a small spec, as the checks call it, and its problems are
compared whole (path, message, hint and severity): the message is what the user reads.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from sdk_generations import ParameterBoolean, ParameterInteger, ParameterString

from safe_estimators._bounds import MAX_PROBLEMS, Tree, quote
from safe_estimators._context import Context
from safe_estimators._distributions.instance_groups.spec import launch_group
from safe_estimators._facts.sdk_files import sdk_generation, sdk_version
from safe_estimators._problems import REMOVE, Problem, warning
from safe_estimators._resolve import _lookup, _model_parallel
from safe_estimators._rules import pipelines, request, safety, targets
from safe_estimators._spec import instance_type_name, own_words, structure_spec

try:  # sagemaker 2
    from sagemaker.workflow.execution_variables import ExecutionVariables
    from sagemaker.workflow.functions import Join
except ImportError:  # sagemaker 3
    from sagemaker.core.workflow.execution_variables import (  # type: ignore[no-redef]
        ExecutionVariables,
    )
    from sagemaker.core.workflow.functions import Join  # type: ignore[no-redef]

pytestmark = pytest.mark.both_sdks

ROLE = "arn:aws:iam::111122223333:role/SageMakerRole"
BASE: dict[str, Any] = {
    "estimator": "pytorch",
    "entry_point": "train.py",
    "instance_type": "ml.g5.xlarge",
    "framework_version": "2.3.0",
    "py_version": "py311",
    "role": ROLE,
    "target": "estimator",
}
LEFT_OUT: Any = object()  # an option of BASE the job does not give


def context(**options: Any) -> Context:
    """The Context the checks make for BASE with ``options`` (LEFT_OUT drops one of BASE's)."""
    data = {k: v for k, v in {**BASE, **options}.items() if v is not LEFT_OUT}
    data, problems = own_words(data)
    spec, more = structure_spec(data)
    assert spec is not None and problems == more == [], problems + more
    # as _resolve._job_rules makes it: the model parallel options and the launch group apart
    model_parallel, rest, _ = _model_parallel(spec)
    group = launch_group(spec.instance_groups, rest)
    name = group.instance_type if group else instance_type_name(spec.instance_type)
    return Context(spec, _lookup(name), rest, model_parallel, group)


def found(rule: Any, **options: Any) -> list[Problem]:
    return list(rule(context(**options)))


def by_path(rule: Any, **options: Any) -> list[Problem]:
    """``found``, in the order of the problems' paths."""
    return sorted(rule(context(**options)), key=lambda problem: problem.path)


# --- request: each option that becomes one CreateTrainingJob member ---------------------------

JOB_NAME_PATTERN = (
    "does not match the pattern [a-zA-Z0-9](-*[a-zA-Z0-9]){0,62} (CreateTrainingJob's "
    "TrainingJobName in botocore's SageMaker model)."
)
JOB_NAME_HINT = (
    "use letters, digits and hyphens only, starting with a letter or digit (e.g. my-job-v1); "
    "the SDK appends a timestamp."
)
IN_A_STEP = (
    " A pipeline step sends no job name (SageMaker Pipelines names the job), so this one is not "
    "used, unless the pipeline is defined with PipelineDefinitionConfig(use_custom_job_prefix="
    "True), where it is refused."
)
ROLE_HINT = "give the role's ARN (arn:aws:iam::<account>:role/<name>) or its name."
ROLE_PATTERN = (
    "does not match the pattern arn:aws[a-z\\-]*:iam::\\d{12}:role/?[a-zA-Z_0-9+=,.@\\-_/]+ "
    "(CreateTrainingJob's RoleArn in botocore's SageMaker model)."
)
S3_HINT = "write an S3 URI such as s3://my-bucket/prefix/ (with the s3:// scheme)."
S3_PATTERN = (
    "does not match the pattern (https|s3)://([^/]+)/?(.*) (CreateTrainingJob's S3Uri in "
    "botocore's SageMaker model)."
)
TAGS_HINT = "give at most 50 tags as [{'Key': ..., 'Value': ...}] or {key: value}."


def test_a_valid_job_sends_nothing_the_api_refuses() -> None:
    assert found(
        request.request_members,
        base_job_name="my-job-v1",
        tags={"team": "nlp", "cost-center": 42},
        max_run=2_419_200,
        max_retry_attempts=30,
        volume_size=0,
        checkpoint_s3_uri="s3://bucket/checkpoints",
        output_path="s3://bucket/output",
        subnets=["subnet-1"],
        security_group_ids=["sg-1"] * 5,
        input_mode="FastFile",
    ) == []


def test_each_option_is_checked_against_its_member_in_the_tables_order() -> None:
    assert found(
        request.request_members,
        max_retry_attempts=31,
        input_mode="file",
        security_group_ids=["sg-1"] * 6,
        volume_size=-1,
    ) == [
        Problem(
            "volume_size",
            "is -1; the minimum is 0 (CreateTrainingJob's OptionalVolumeSizeInGB in botocore's "
            "SageMaker model).",
            "give the size in GB, e.g. 100.",
        ),
        Problem(
            "security_group_ids",
            "has 6 entries; the maximum is 5 (CreateTrainingJob's VpcSecurityGroupIds in "
            "botocore's SageMaker model).",
            "give 1 to 5 security group ids (sg-...).",
        ),
        Problem(
            "input_mode",
            "is 'file'; it must be one of Pipe, File, FastFile (CreateTrainingJob's "
            "TrainingInputMode in botocore's SageMaker model).",
            "use File, FastFile or Pipe.",
        ),
        Problem(
            "max_retry_attempts",
            "is 31; the maximum is 30 (CreateTrainingJob's MaximumRetryAttempts in botocore's "
            "SageMaker model).",
            "use 1 to 30 attempts.",
        ),
    ]


def test_a_problem_inside_an_option_is_at_its_path_within() -> None:
    assert found(request.request_members, container_arguments=["--epochs", 3]) == [
        Problem(
            "container_arguments.1",
            "must be a string, got int 3 (CreateTrainingJob's TrainingContainerArgument in "
            "botocore's SageMaker model).",
            "give a list of strings.",
        )
    ]


def test_tags_as_a_mapping_are_sent_as_key_value_pairs_of_strings() -> None:
    # sagemaker.utils.format_tags: {"cost-center": 42} is sent as {"Key": ..., "Value": "42"}.
    assert found(request.request_members, tags={"cost-center": 42, "k" * 129: "v"}) == [
        Problem(
            "tags.1.Key",
            "has 129 characters; the maximum is 128 (CreateTrainingJob's TagKey in botocore's "
            "SageMaker model).",
            TAGS_HINT,
        )
    ]


@pytest.mark.parametrize(
    "tags",
    [{"db_password": "hunter2!secret"}, [{"Key": "db_password", "Value": "hunter2!secret"}]],
)
def test_a_tag_under_a_secrets_name_is_not_shown_in_its_problem(tags: Any) -> None:
    assert found(request.request_members, tags=tags) == [
        Problem(
            "tags.0.Value",
            "'hu'… (14 characters) does not match the pattern ([\\p{L}\\p{Z}\\p{N}_.:/=+\\-@]*) "
            "(CreateTrainingJob's TagValue in botocore's SageMaker model).",
            TAGS_HINT,
        )
    ]


def test_a_role_name_is_looked_up_by_the_sdk_and_not_checked() -> None:
    assert found(request.request_members, role="SageMakerRole") == []
    # the options after it are checked
    [retries] = found(request.request_members, role="SageMakerRole", max_retry_attempts=31)
    assert retries.path == "max_retry_attempts"


@pytest.mark.parametrize(
    ("role", "length"),
    [("service-role/MyRole", 19), ("arn:aws:iam::1:MyRole", None), ("arn:x", 5)],
)
def test_a_role_that_is_no_name_is_checked_as_the_arn_it_is_sent_as(
    role: str, length: int | None
) -> None:
    expected = [Problem("role", f"{role!r} {ROLE_PATTERN}", ROLE_HINT)]
    if length is not None:
        short = (
            f"has {length} characters; the minimum is 20 (CreateTrainingJob's RoleArn in "
            "botocore's SageMaker model)."
        )
        expected.insert(0, Problem("role", short, ROLE_HINT))
    assert found(request.request_members, role=role) == expected


def test_a_job_name_is_checked_with_the_sdks_timestamp_and_quoted_as_given() -> None:
    assert found(request.request_members, base_job_name="my_job") == [
        Problem("base_job_name", f"'my_job' (with the SDK's timestamp) {JOB_NAME_PATTERN}",
                JOB_NAME_HINT)
    ]  # fmt: skip


def test_the_sdk_keeps_39_characters_of_a_job_name_before_its_timestamp() -> None:
    # sagemaker.utils.name_from_base: base[: 63 - len("2000-01-01-00-00-00-000") - 1]
    kept = "a" * 38 + "_" + "b" * 10  # the underscore is the 39th character: sent
    dropped = "a" * 39 + "_" + "b" * 10  # the 40th: trimmed away
    assert found(request.request_members, base_job_name=kept) == [
        Problem("base_job_name", f"{kept!r} (with the SDK's timestamp) {JOB_NAME_PATTERN}",
                JOB_NAME_HINT)
    ]  # fmt: skip
    assert found(request.request_members, base_job_name=dropped) == []
    assert found(request.request_members, base_job_name="a" * 100) == []


def test_a_job_name_in_a_pipeline_is_a_warning_the_step_drops_it() -> None:
    expected = [
        warning(
            "base_job_name",
            f"'my_job' (with the SDK's timestamp) {JOB_NAME_PATTERN}{IN_A_STEP}",
            JOB_NAME_HINT,
        )
    ]
    with_variable = {"output_path": ParameterString("OutputPath")}
    assert found(request.request_members, base_job_name="my_job", **with_variable) == expected

    class PipelineSession:  # known by its class name: sagemaker is not imported to check it
        pass

    class LocalPipelineSession(PipelineSession):
        pass

    assert request.in_pipeline_step() is False
    with request.pipeline_step(LocalPipelineSession()):
        assert request.in_pipeline_step() is True
        assert found(request.request_members, base_job_name="my_job") == expected
    assert request.in_pipeline_step() is False
    with request.pipeline_step(object()):
        assert request.in_pipeline_step() is False
        assert found(request.request_members, base_job_name="my_job")[0].severity == "error"


def test_the_step_is_forgotten_when_the_build_fails() -> None:
    class PipelineSession:
        pass

    with pytest.raises(RuntimeError), request.pipeline_step(PipelineSession()):
        raise RuntimeError("the build failed")
    assert request.in_pipeline_step() is False


@pytest.mark.parametrize("option", ["checkpoint_s3_uri", "output_path"])
def test_local_mode_writes_file_uris_the_api_never_sees(option: str) -> None:
    assert found(request.request_members, instance_type="local", **{option: "file:///tmp/x"}) == []
    assert found(request.request_members, **{option: "file:///tmp/x"}) == [
        Problem(option, f"'file:///tmp/x' {S3_PATTERN}", S3_HINT)
    ]
    assert found(request.request_members, instance_type="local", **{option: "bucket/x"}) == [
        Problem(option, f"'bucket/x' {S3_PATTERN}", S3_HINT)
    ]


def test_a_pipeline_parameter_is_checked_through_its_default() -> None:
    assert found(
        request.request_members, max_retry_attempts=ParameterInteger("Retries", default_value=31)
    ) == [
        Problem(
            "max_retry_attempts",
            "is 31; the maximum is 30 (CreateTrainingJob's MaximumRetryAttempts in botocore's "
            "SageMaker model).",
            "use 1 to 30 attempts.",
        )
    ]
    without_default = {
        "max_retry_attempts": ParameterInteger("Retries"),
        "max_run": ParameterInteger("MaxRun"),
        "base_job_name": Join(on="-", values=["job", ExecutionVariables.PIPELINE_EXECUTION_ID]),
    }
    assert found(request.request_members, **without_default) == []


TWENTY_EIGHT_DAYS = 28 * 24 * 3600


def test_max_run_past_the_documented_28_days_is_refused_with_the_maximum_as_the_fix() -> None:
    assert found(request.request_members, max_run=TWENTY_EIGHT_DAYS) == []
    [problem] = found(request.request_members, max_run=TWENTY_EIGHT_DAYS + 1)
    assert problem == Problem(
        "max_run",
        "is 2,419,201 s (28.0 days); the maximum is 2,419,200 s (28 days), as botocore's "
        "SageMaker model documents StoppingCondition.MaxRuntimeInSeconds: CreateTrainingJob "
        "refuses the job.",
        "give max_run=2419200 or less; or save checkpoints (checkpoint_s3_uri) and continue in "
        "a new job.",
    )
    assert [fix.changes for fix in problem.fixes] == [(("max_run", 2_419_200),)]
    [longer] = found(request.request_members, max_run=30 * 86400 + 43200)
    assert longer.message.startswith("is 2,635,200 s (30.5 days); the maximum is 2,419,200 s")
    [rounded] = found(request.request_members, max_run=2_587_681)  # 29.95001 days
    assert rounded.message.startswith("is 2,587,681 s (30.0 days); the maximum is 2,419,200 s")
    parameter = ParameterInteger("MaxRun", default_value=TWENTY_EIGHT_DAYS + 1)
    assert found(request.request_members, max_run=parameter) == [problem]


# --- request: options the SDK passes on with no check but their type --------------------------


def test_options_passed_on_unchecked_have_the_type_the_sdk_expects() -> None:
    assert found(
        request.option_types,
        container_log_level="20",
        disable_output_compression=1,
        enable_remote_debug="x",
        enable_infra_check=0,
        enable_session_tag_chaining=None,
        code_location=5,
        dependencies="lib",
        git_config=["x"],
    ) == [
        Problem("container_log_level", "must be int, got str '20'.",
                "e.g. container_log_level=logging.INFO (20)"),
        Problem("disable_output_compression", "must be bool, got int 1.", "give a bool."),
        Problem("enable_remote_debug", "must be bool, got str 'x'.", "give a bool."),
        Problem("enable_infra_check", "must be bool, got int 0.", "give a bool."),
        Problem("code_location", "must be str, got int 5.", "give a str."),
        Problem("dependencies", "must be list or tuple, got str 'lib'.", "give a list or tuple."),
        Problem("git_config", "must be dict, got list ['x'].", "give a dict."),
    ]  # fmt: skip


def test_a_bool_is_no_log_level_and_the_right_types_pass() -> None:
    assert found(request.option_types, container_log_level=True) == [
        Problem("container_log_level", "must be int, got bool True.",
                "e.g. container_log_level=logging.INFO (20)")
    ]  # fmt: skip
    assert found(
        request.option_types,
        container_log_level=20,
        disable_output_compression=True,
        enable_remote_debug=False,
        code_location="s3://bucket/code",
        dependencies=("lib",),
        git_config={"repo": "https://github.com/aws/sagemaker-python-sdk.git"},
        container_entry_point=ParameterString("Entry"),
    ) == []
    assert found(request.option_types, code_location=ParameterString("CodeLocation")) == []


def test_the_debugger_options_from_a_spec_file_are_refused_for_the_estimator() -> None:
    assert found(
        request.option_types,
        profiler_config={"a": 1},
        debugger_hook_config={"b": 1},
        tensorboard_output_config="x",
        rules=["r"],
    ) == [
        Problem(
            "profiler_config",
            "must be a ProfilerConfig object, got dict {'a': 1}; the SDK reads its attributes "
            "at fit().",
            "pass sagemaker.debugger.ProfilerConfig(...) in Python; spec files cannot hold it "
            "(leave profiler_config out).",
        ),
        Problem(
            "debugger_hook_config",
            "must be a DebuggerHookConfig object, got dict {'b': 1}; the SDK reads its "
            "attributes at fit().",
            "pass sagemaker.debugger.DebuggerHookConfig(...) in Python; spec files cannot hold "
            "it (leave debugger_hook_config out).",
        ),
        Problem(
            "tensorboard_output_config",
            "must be a TensorBoardOutputConfig object, got str 'x'; the SDK reads its "
            "attributes at fit().",
            "pass sagemaker.debugger.TensorBoardOutputConfig(...) in Python; spec files cannot "
            "hold it (leave tensorboard_output_config out).",
        ),
        Problem(
            "rules",
            "must be a list of sagemaker.debugger Rule or ProfilerRule objects, got ['r'].",
            "pass e.g. [Rule.sagemaker(rule_configs.loss_not_decreasing())] in Python.",
        ),
    ]
    # debugger_hook_config=False turns the hook off: the options after it are still checked
    [tensorboard] = found(
        request.option_types, debugger_hook_config=False, tensorboard_output_config="x"
    )
    assert tensorboard.path == "tensorboard_output_config"
    assert found(request.option_types, debugger_hook_config=False, rules="x") == [
        Problem(
            "rules",
            "must be a list of sagemaker.debugger Rule or ProfilerRule objects, got 'x'.",
            "pass e.g. [Rule.sagemaker(rule_configs.loss_not_decreasing())] in Python.",
        )
    ]


def test_the_debugger_options_are_the_model_trainer_counterparts_rules_there() -> None:
    assert found(
        request.option_types,
        target="model_trainer",
        profiler_config={"a": 1},
        rules=["r"],
    ) == []


@pytest.mark.sdk2_only
def test_the_sdks_own_debugger_objects_pass() -> None:
    from sagemaker.debugger import (
        DebuggerHookConfig,
        ProfilerConfig,
        Rule,
        TensorBoardOutputConfig,
        rule_configs,
    )

    rule = Rule.sagemaker(rule_configs.loss_not_decreasing())
    assert found(
        request.option_types,
        profiler_config=ProfilerConfig(),
        debugger_hook_config=DebuggerHookConfig(),
        tensorboard_output_config=TensorBoardOutputConfig(s3_output_path="s3://b/t"),
        rules=[rule],
    ) == []
    assert found(request.option_types, rules=(rule,)) == []
    [problem] = found(request.option_types, rules=[rule, "r"])
    assert problem.path == "rules"


def test_code_location_must_be_an_s3_uri_unless_local() -> None:
    assert found(request.option_types, code_location="bucket/code") == [
        Problem(
            "code_location",
            "'bucket/code' is not an S3 URI; the SDK uploads the source code there and accepts "
            "only s3://.",
            S3_HINT,
        )
    ]
    assert found(request.option_types, code_location="file:///x", instance_type="local") == []


@pytest.mark.parametrize(
    ("given", "missing"), [("subnets", "security_group_ids"), ("security_group_ids", "subnets")]
)
def test_subnets_and_security_groups_come_together(given: str, missing: str) -> None:
    assert found(request.vpc_pair, **{given: ["x-1"]}) == [
        Problem(
            given,
            f"is given without {missing}: the SageMaker SDK refuses that when it builds the "
            "estimator (RuntimeError: both subnets and security_group_ids must be set), even "
            "when the SageMaker SDK config supplies the other.",
            f"give {missing} too.",
        )
    ]
    assert found(request.vpc_pair, subnets=["subnet-1"], security_group_ids=["sg-1"]) == []
    assert found(request.vpc_pair) == []


# --- pipelines: values known only when the pipeline runs ---------------------------------------

NEEDS_DEFAULT = "give the parameter a default_value to have it checked now."
ONLY_SAGEMAKER = "nothing to change if its run-time value is valid: only SageMaker can check it."


def _unknown(path: str, what: str, skipped: str, hint: str = NEEDS_DEFAULT) -> Problem:
    return warning(
        path,
        f"is {what}, known only when the pipeline runs (no default_value); skipped for it: "
        f"{skipped}.",
        hint,
    )


def test_a_value_known_only_at_run_time_is_a_warning_naming_the_check_skipped() -> None:
    assert by_path(
        pipelines.unknown_pipeline_values,
        max_run=ParameterInteger("MaxRun"),
        instance_count=ParameterInteger("Count"),
        entry_point=ParameterString("Entry"),
        source_dir=ParameterString("Source"),
        environment={"TOKEN_FILE": ParameterString("TokenFile")},
        hyperparameters={"run.id": ExecutionVariables.PIPELINE_EXECUTION_ID},
        instance_type=ParameterString("InstanceType"),  # its own rule says so
        image_uri=ParameterString("Image"),  # no check is skipped for it
        volume_size=ParameterInteger("Volume", default_value=100),  # checked through its default
    ) == [  # by path
        _unknown(
            "entry_point",
            "the pipeline parameter 'Entry'",
            "the entry point's checks (torchrun's .py entry point, the training-script checks)",
        ),
        _unknown(
            "environment.TOKEN_FILE",
            "the pipeline parameter 'TokenFile'",
            "its secrets check and the API's length limits",
        ),
        _unknown(
            "hyperparameters.run.id",
            "the ExecutionVariable 'PipelineExecutionId'",
            "its secrets check and the API's length limits",
            ONLY_SAGEMAKER,
        ),
        _unknown(
            "instance_count",
            "the pipeline parameter 'Count'",
            "the checks that count instances (they assume 1)",
        ),
        _unknown(
            "max_run",
            "the pipeline parameter 'MaxRun'",
            "its check against CreateTrainingJob's StoppingCondition.MaxRuntimeInSeconds "
            "constraints",
        ),
        _unknown("source_dir", "the pipeline parameter 'Source'", "the source code checks"),
    ]


def test_a_variable_without_a_name_is_described_by_its_kind() -> None:
    join = Join(on="/", values=["s3://bucket", ExecutionVariables.PIPELINE_EXECUTION_ID])
    assert found(pipelines.unknown_pipeline_values, output_path=join) == [
        _unknown(
            "output_path",
            "a Join",
            "its check against CreateTrainingJob's OutputDataConfig.S3OutputPath constraints",
            ONLY_SAGEMAKER,
        )
    ]
    assert pipelines.described(ParameterBoolean("Spot")) == "the pipeline parameter 'Spot'"


def _holds(name: str, member: str) -> Problem:
    return warning(
        name,
        "holds a pipeline variable known only when the pipeline runs; skipped for it: its check "
        f"against CreateTrainingJob's {member} constraints.",
        NEEDS_DEFAULT,
    )


def test_a_list_or_mapping_holding_an_unknown_value_is_a_warning() -> None:
    assert found(
        pipelines.unknown_pipeline_values,
        subnets=[ParameterString("Subnet")],
        security_group_ids=(ParameterString("Group", default_value="sg-1"),),
        tags={"team": ParameterString("Team")},
        metric_definitions=[{"Name": "loss", "Regex": ParameterString("Regex")}],
    ) == [
        _holds("subnets", "VpcConfig.Subnets"),
        _holds("tags", "Tags"),
        _holds("metric_definitions", "AlgorithmSpecification.MetricDefinitions"),
    ]
    assert found(
        pipelines.unknown_pipeline_values,
        security_group_ids=[ParameterString("Group")],
        tags=[{"Key": "team", "Value": ParameterString("Team", default_value="nlp")}],
        metric_definitions=[{"Name": "loss", "Regex": "loss=(.*)"}],
        subnets="subnet-1",
    ) == [_holds("security_group_ids", "VpcConfig.SecurityGroupIds")]


def test_an_option_that_is_itself_a_variable_is_named_once() -> None:
    assert found(
        pipelines.unknown_pipeline_values,
        subnets=ParameterString("Subnets"),
        tags=ParameterString("Tags", default_value="[]"),
    ) == [
        _unknown(
            "subnets",
            "the pipeline parameter 'Subnets'",
            "its check against CreateTrainingJob's VpcConfig.Subnets constraints",
        )
    ]


ISOLATION = (
    "is a pipeline variable while enable_network_isolation is True or a pipeline variable; the "
    "SageMaker SDK refuses that (TypeError)."
)
ISOLATION_HINT = "give entry_point and source_dir as strings, or enable_network_isolation=False."
UPLOADED = "s3://bucket/code/sourcedir.tar.gz"


def test_a_variable_entry_point_or_source_dir_with_network_isolation_is_refused() -> None:
    assert found(
        pipelines.pipeline_source_code,
        entry_point=ParameterString("Entry"),
        source_dir=UPLOADED,
        enable_network_isolation=True,
        base_job_name="train",
    ) == [Problem("entry_point", ISOLATION, ISOLATION_HINT)]
    assert found(
        pipelines.pipeline_source_code,
        source_dir=ParameterString("Source", default_value=UPLOADED),
        enable_network_isolation=ParameterBoolean("Isolation"),
        base_job_name="train",
    ) == [Problem("source_dir", ISOLATION, ISOLATION_HINT)]
    assert found(
        pipelines.pipeline_source_code,
        entry_point=ParameterString("Entry"),
        source_dir=UPLOADED,
        enable_network_isolation=False,
        base_job_name="train",
    ) == []
    # strings: the SDK checks nothing of this
    assert found(
        pipelines.pipeline_source_code,
        source_dir="code",
        enable_network_isolation=True,
        git_config={"repo": "https://github.com/aws/sagemaker-python-sdk.git"},
    ) == []


@pytest.mark.parametrize(
    ("variables", "path"),
    [
        ({"entry_point": ParameterString("Entry"), "source_dir": UPLOADED}, "entry_point"),
        ({"source_dir": ParameterString("Source", default_value=UPLOADED)}, "source_dir"),
    ],
)
def test_a_variable_entry_point_or_source_dir_beside_git_config_is_refused(
    variables: dict[str, Any], path: str
) -> None:
    assert found(
        pipelines.pipeline_source_code,
        git_config={"repo": "https://github.com/aws/sagemaker-python-sdk.git"},
        base_job_name="train",
        **variables,
    ) == [
        Problem(
            path,
            "is a pipeline variable beside git_config; the SageMaker SDK refuses that "
            "(TypeError).",
            "give entry_point and source_dir as strings with git_config.",
        )
    ]


def test_a_variable_entry_point_needs_an_uploaded_source_dir() -> None:
    entry = ParameterString("Entry")
    assert found(pipelines.pipeline_source_code, entry_point=entry) == [
        Problem(
            "entry_point",
            "is the pipeline parameter 'Entry' without a source_dir; the SageMaker SDK refuses "
            "that (TypeError): the script must come from an uploaded source.",
            "upload the code as sourcedir.tar.gz and give source_dir='s3://.../sourcedir.tar.gz' "
            "(or a ParameterString), or give entry_point as a string.",
        )
    ]
    assert found(pipelines.pipeline_source_code, entry_point=entry, source_dir="code") == [
        Problem(
            "entry_point",
            "is the pipeline parameter 'Entry' with the local source_dir 'code'; the SageMaker "
            "SDK refuses that (TypeError): a local folder is packed at definition, before the "
            "entry point's value is known.",
            "give entry_point as a string, or upload the code and give source_dir as its S3 URI.",
        )
    ]
    # fw_utils compares source_dir.lower() with "s3://"
    for uploaded in (UPLOADED, "S3://BUCKET/code/sourcedir.tar.gz"):
        assert found(pipelines.pipeline_source_code, entry_point=entry, source_dir=uploaded) == []


def test_a_source_dir_variable_whose_default_is_a_local_path_fails_when_run_with_it() -> None:
    assert found(
        pipelines.pipeline_source_code,
        source_dir=ParameterString("Source", default_value="code"),
        base_job_name="train",
    ) == [
        warning(
            "source_dir",
            "is the pipeline parameter 'Source' whose default_value 'code' is a local path; the "
            "SDK uploads nothing for a pipeline variable, and at run time its value must be the "
            "S3 URI of a sourcedir.tar.gz, so an execution with the default fails.",
            "upload the code (sagemaker.s3.S3Uploader) and make the default its S3 URI, or give "
            "source_dir as a string (the SDK then packs and uploads the folder).",
        )
    ]
    for default in (UPLOADED, "S3://BUCKET/sourcedir.tar.gz", None):
        source = ParameterString("Source", default_value=default)
        assert found(pipelines.pipeline_source_code, source_dir=source, base_job_name="j") == []


def _names_the_job(verb: str) -> str:
    return (
        "is the pipeline parameter 'Source' and base_job_name is not given: the SageMaker SDK "
        "names the job from source_dir (jumpstart.utils.is_jumpstart_model_uri passes it to "
        "urllib.parse.urlparse), which fails on a pipeline variable, so the pipeline's "
        f"definition() {verb} \"AttributeError: 'ParameterString' object has no attribute "
        "'decode'\"."
    )


NAMES_THE_JOB_HINT = (
    "give base_job_name (letters, digits and hyphens, e.g. base_job_name='train'), as the SDK's "
    "own pipeline tests do; Pipelines names the job at run time anyway."
)


def test_a_source_dir_variable_without_base_job_name_fails_the_definition() -> None:
    source = ParameterString("Source", default_value=UPLOADED)
    assert found(pipelines.pipeline_source_code, source_dir=source) == [
        Problem("source_dir", _names_the_job("raises"), NAMES_THE_JOB_HINT)
    ]
    assert found(pipelines.pipeline_source_code, source_dir=source, target="model_trainer") == [
        warning("source_dir", _names_the_job("may raise"), NAMES_THE_JOB_HINT)
    ]


def test_a_variable_entry_point_with_torchrun_fails_the_sdks_check() -> None:
    assert found(
        pipelines.pipeline_source_code,
        entry_point=ParameterString("Entry"),
        source_dir=UPLOADED,
        base_job_name="train",
        instance_type="ml.g5.12xlarge",
        distribution={"torch_distributed": {"enabled": True}},
    ) == [
        Problem(
            "entry_point",
            "is the pipeline parameter 'Entry' with torch_distributed; the SageMaker SDK's "
            "torchrun check reads the entry point as a string (entry_point.endswith('.py')) and "
            "fails on a pipeline variable.",
            "give entry_point as a string (a .py script).",
        )
    ]


KEY = ParameterString("OutputKey")
KEY_IN_UPLOAD = Problem(
    "output_kms_key",
    "is the pipeline parameter 'OutputKey' while the SDK packs the local source code and "
    "uploads it to output_path's bucket encrypted with this key; it needs the key as a string "
    "there, so the pipeline definition fails (TypeError).",
    "give output_kms_key as a string, upload the code first and give source_dir as its S3 URI, "
    "or set code_location to another bucket than output_path's.",
)
KEY_MAY_BE_IN_UPLOAD = warning(
    "output_kms_key",
    "is a pipeline variable and code_location is given; if code_location is in the session's "
    "default bucket the SDK encrypts the code upload with this key and fails (TypeError).",
    "give output_kms_key as a string, or code_location in another bucket.",
)


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({}, [KEY_IN_UPLOAD]),
        ({"output_path": "s3://bucket/out"}, [KEY_IN_UPLOAD]),
        ({"output_path": "s3://bucket/out", "code_location": "s3://bucket/code"}, [KEY_IN_UPLOAD]),
        ({"output_path": "s3://bucket", "code_location": "s3://bucket"}, [KEY_IN_UPLOAD]),
        ({"output_path": "s3://bucket/out", "code_location": "s3://other/code"}, []),
        ({"output_path": "s3://bucket/out", "code_location": "s3://bucket-2/code"}, []),
        ({"output_path": "https://bucket/out", "code_location": "s3://bucket/code"}, []),
        ({"output_path": "gs://bucket/out", "code_location": "s3://bucket/code"}, []),
        (
            {"output_path": "s3://bucket/a/out", "code_location": "s3://bucket/code"},
            [KEY_IN_UPLOAD],
        ),
        ({"code_location": "s3://other/code"}, [KEY_MAY_BE_IN_UPLOAD]),
        ({"output_path": ParameterString("Out")}, []),
        (
            {"output_path": ParameterString("Out"), "code_location": "s3://other/code"},
            [KEY_MAY_BE_IN_UPLOAD],
        ),
        ({"source_dir": UPLOADED}, []),
        ({"source_dir": "S3://BUCKET/sourcedir.tar.gz"}, []),
        ({"source_dir": ParameterString("Source"), "base_job_name": "train"}, []),
        ({"entry_point": ParameterString("Entry"), "source_dir": UPLOADED}, []),
        ({"entry_point": ParameterString("Entry"), "source_dir": "code"}, []),
        ({"instance_type": "local", "output_path": "file:///tmp/out"}, []),
    ],
)
def test_a_variable_output_kms_key_fails_the_code_upload_into_its_bucket(
    options: dict[str, Any], expected: list[Problem]
) -> None:
    assert found(pipelines.pipeline_output_kms_key, output_kms_key=KEY, **options) == expected


def test_a_string_output_kms_key_encrypts_the_upload() -> None:
    assert found(pipelines.pipeline_output_kms_key, output_kms_key="alias/training") == []


HF_COMPILER: dict[str, Any] = {
    "estimator": "huggingface",
    "transformers_version": "4.21.1",
    "pytorch_version": "1.11.0",
    "py_version": "py38",
    "framework_version": LEFT_OUT,
    "training_compiler": True,
    "instance_type": "ml.p3.2xlarge",
}
FOLLOWS_DEFAULT_HINT = (
    "give instance_count as a number (one pipeline per count), or keep the parameter at its "
    "default."
)


def _follows_default(derived: str) -> Problem:
    return warning(
        "instance_count",
        f"is the pipeline parameter 'Count'; {derived} follow its default (2), fixed in the "
        "pipeline definition, and would be wrong for an execution with another count.",
        FOLLOWS_DEFAULT_HINT,
    )


XLA = "whether the PyTorch/XLA distribution is injected (more than one GPU)"
SMP = "the model parallel layout (its data-parallel degree and DDP)"


def test_a_compiler_job_without_distribution_cannot_take_a_count_variable() -> None:
    expected = Problem(
        "instance_count",
        "is the pipeline parameter 'Count' in a Training Compiler job without a distribution; "
        "the SageMaker SDK's compiler check then compares instance_count > 1 and fails on a "
        "pipeline variable (TypeError).",
        "give instance_count as a number.",
    )
    unknown, two = ParameterInteger("Count"), ParameterInteger("Count", default_value=2)
    # One GPU: the count decides whether the XLA distribution is injected (more than one GPU)
    on_one_gpu = {"instance_type": "ml.p3.2xlarge", **HF_COMPILER}
    assert found(pipelines.pipeline_instance_count, instance_count=unknown, **on_one_gpu) == [
        expected
    ]
    assert found(pipelines.pipeline_instance_count, instance_count=two, **on_one_gpu) == [
        _follows_default(XLA)
    ]
    # Four: it is injected whatever the count
    on_four = {**HF_COMPILER, "instance_type": "ml.p3.8xlarge"}
    for count in (unknown, two):
        assert found(pipelines.pipeline_instance_count, instance_count=count, **on_four) == []


def test_values_derived_from_the_count_follow_its_default() -> None:
    count = ParameterInteger("Count", default_value=2)
    xla = {"distribution": {"pytorchxla": {"enabled": True}}}
    assert found(
        pipelines.pipeline_instance_count, instance_count=count, **HF_COMPILER, **xla
    ) == [_follows_default(XLA)]
    smp_v1 = {
        "framework_version": "1.13.1",
        "py_version": "py39",
        "instance_type": "ml.p4d.24xlarge",
        "distribution": {
            "smdistributed": {"modelparallel": {"enabled": True, "parameters": {"partitions": 2}}},
            "mpi": {"enabled": True},
        },
    }
    assert found(pipelines.pipeline_instance_count, instance_count=count, **smp_v1) == [
        _follows_default(SMP)
    ]
    assert found(pipelines.pipeline_instance_count, instance_count=count) == []
    assert found(pipelines.pipeline_instance_count, instance_count=2, **HF_COMPILER) == []


# --- safety: spot training ---------------------------------------------------------------------

CHECKPOINTS = Problem(
    "checkpoint_s3_uri",
    "is required with use_spot_instances=True: without checkpoints a spot interruption restarts "
    "training from scratch.",
    "set checkpoint_s3_uri='s3://<bucket>/<prefix>/checkpoints' and save checkpoints to "
    "/opt/ml/checkpoints in the script.",
)


def _max_wait_required(max_run: int) -> Problem:
    return Problem(
        "max_wait",
        "is required with use_spot_instances=True (time to wait for spot capacity plus training "
        "time).",
        f"set max_wait={max_run} (at least max_run, {max_run} s).",
    )


def _max_wait_short(max_wait: int, max_run: str, fix_run: int) -> Problem:
    return Problem(
        "max_wait",
        f"is {max_wait} s, less than max_run ({max_run}); SageMaker rejects the job.",
        f"set max_wait={fix_run}; or set max_run={max_wait}.",
    )


def test_spot_training_needs_max_wait_and_checkpoints() -> None:
    [wait, checkpoints] = found(safety.spot_training, use_spot_instances=True)
    assert (wait, checkpoints) == (_max_wait_required(86400), CHECKPOINTS)
    assert [fix.changes for fix in wait.fixes] == [(("max_wait", 86400),)]
    [wait, _] = found(safety.spot_training, use_spot_instances=True, max_run=7200)
    assert wait == _max_wait_required(7200)
    assert [fix.changes for fix in wait.fixes] == [(("max_wait", 7200),)]
    for off in (False, ParameterBoolean("Spot"), ParameterBoolean("Spot", default_value=False)):
        assert found(safety.spot_training, use_spot_instances=off) == []


SPOT = {"use_spot_instances": True, "checkpoint_s3_uri": "s3://bucket/checkpoints"}


def test_max_wait_under_max_run_is_refused_at_the_boundary() -> None:
    [short] = found(safety.spot_training, max_run=7200, max_wait=7199, **SPOT)
    assert short == _max_wait_short(7199, "7200 s", 7200)
    assert [fix.changes for fix in short.fixes] == [(("max_wait", 7200),), (("max_run", 7199),)]
    assert found(safety.spot_training, max_run=7200, max_wait=7200, **SPOT) == []
    # the SDK's default max_run, 24 hours
    assert found(safety.spot_training, max_wait=86399, **SPOT) == [
        _max_wait_short(86399, "86400 s, the SDK default", 86400)
    ]
    assert found(safety.spot_training, max_wait=86400, **SPOT) == []


def test_spot_options_that_are_parameters_are_checked_through_their_defaults() -> None:
    spot = ParameterBoolean("Spot", default_value=True)
    options = {"use_spot_instances": spot, "checkpoint_s3_uri": "s3://bucket/checkpoints"}
    assert found(
        safety.spot_training,
        max_wait=ParameterInteger("MaxWait", default_value=10),
        max_run=ParameterInteger("MaxRun", default_value=20),
        **options,
    ) == [_max_wait_short(10, "20 s", 20)]
    # without a default, the value comes with each execution: nothing to compare
    assert found(
        safety.spot_training,
        max_wait=ParameterInteger("MaxWait"),
        max_run=ParameterInteger("MaxRun", default_value=20),
        **options,
    ) == []
    assert found(
        safety.spot_training, max_wait=20, max_run=ParameterInteger("MaxRun"), **options
    ) == []


# --- safety: secrets --------------------------------------------------------------------------

HF_TOKEN = "hf_" + "a" * 34


def _exposed(path: str, where: str) -> Problem:
    return warning(
        path,
        f"looks like a Hugging Face token: 'hf_a'… (37 characters); DescribeTrainingJob, the "
        f"console and CloudTrail show {where} in plain text to anyone who may read the job.",
        "store it in AWS Secrets Manager and pass the secret's name or ARN instead (read it in "
        f"the script with boto3); accept_exposure=['{path}'] accepts the exposure.",
    )


def test_a_credential_in_any_value_sent_is_a_warning_unless_accepted() -> None:
    assert by_path(
        safety.no_secrets,
        environment={"HF_TOKEN": HF_TOKEN},
        container_arguments=["--token", HF_TOKEN],
        image_uri=HF_TOKEN,
    ) == [
        _exposed("container_arguments.1", "container arguments"),
        _exposed("environment.HF_TOKEN", "environment variables"),
        _exposed("image_uri", "image_uri (in the request)"),
    ]
    assert found(
        safety.no_secrets,
        environment={"HF_TOKEN": HF_TOKEN},
        container_arguments=["--token", HF_TOKEN],
        accept_exposure=["environment.HF_TOKEN", "container_arguments.1"],
    ) == []


# --- safety: the API's limits on hyperparameters and environment ------------------------------

ADDED = (
    "sagemaker_container_log_level, sagemaker_job_name, sagemaker_program, sagemaker_region, "
    "sagemaker_submit_directory"
)


def _too_many(name: str, given: int, added: str, count: int, keep: int, shape: str) -> Problem:
    more = (
        f" and the SageMaker SDK adds {count} more for this job ({added}), {given + count} in all"
        if added
        else ""
    )
    return Problem(
        name,
        f"has {given} entries{more}; CreateTrainingJob accepts 100 ({shape} in botocore's "
        "SageMaker model).",
        f"keep at most {keep}; move the rest into a configuration file in source_dir.",
    )


def test_hyperparameters_count_with_those_the_sdk_adds_at_the_boundary() -> None:
    hyper = {f"h{i}": i for i in range(96)}
    assert found(safety.api_limits, hyperparameters=hyper) == [
        _too_many("hyperparameters", 96, ADDED, 5, 95, "HyperParameters")
    ]
    del hyper["h95"]
    assert found(safety.api_limits, hyperparameters=hyper) == []
    # one of the SDK's own given by the user: counted once
    own = {**hyper, "sagemaker_program": "train.py"}
    assert found(safety.api_limits, hyperparameters=own) == []
    assert found(safety.api_limits, hyperparameters={**own, "h95": 95}) == [
        _too_many(
            "hyperparameters",
            97,
            ADDED.replace("sagemaker_program, ", ""),
            4,
            96,
            "HyperParameters",
        )
    ]
    torchrun = {
        "instance_type": "ml.g5.12xlarge",
        "distribution": {"torch_distributed": {"enabled": True}},
    }
    with_parameter = {**{f"h{i}": i for i in range(93)}, "p": ParameterString("P")}
    assert found(safety.api_limits, hyperparameters=with_parameter, **torchrun) == [
        _too_many(
            "hyperparameters",
            94,
            "sagemaker_container_log_level, sagemaker_instance_type, sagemaker_job_name, "
            "sagemaker_program, sagemaker_region, sagemaker_submit_directory, "
            "sagemaker_torch_distributed_enabled",
            7,
            93,
            "HyperParameters",
        )
    ]


def test_environment_counts_the_gpu_count_a_compiler_job_adds() -> None:
    env = {f"E{i}": "1" for i in range(100)}
    assert found(safety.api_limits, environment=env) == []
    assert found(safety.api_limits, environment={**env, "E100": "1"}) == [
        _too_many("environment", 101, "", 0, 100, "TrainingEnvironmentMap")
    ]
    compiler = {**HF_COMPILER, "instance_type": "ml.p3.2xlarge"}
    assert found(safety.api_limits, environment=env, **compiler) == [
        _too_many("environment", 100, "GPU_NUM_DEVICES", 1, 99, "TrainingEnvironmentMap")
    ]
    on_cpu = {**HF_COMPILER, "instance_type": "ml.c5.xlarge"}
    assert found(safety.api_limits, environment=env, **on_cpu) == []
    del env["E99"]
    assert found(safety.api_limits, environment={**env, "GPU_NUM_DEVICES": "1"}, **compiler) == []
    # a pipeline variable is not counted as a string
    assert found(safety.api_limits, environment={**env, "V": ParameterString("V")}) == []


def _too_long(path: str, length: int, limit: int) -> Problem:
    return Problem(
        path,
        f"value is {length} characters as sent; the limit is {limit}.",
        "put large values in a file in source_dir or S3 and pass its path.",
    )


def test_a_hyperparameter_is_measured_as_the_sdk_sends_it() -> None:
    # the estimator JSON-encodes every value (a string gains its quotes, "é" is sent as \\u00e9)
    assert found(safety.api_limits, hyperparameters={"v": "x" * 2498}) == []
    assert found(safety.api_limits, hyperparameters={"v": "x" * 2499}) == [
        _too_long("hyperparameters.v", 2501, 2500)
    ]
    assert found(safety.api_limits, hyperparameters={"v": "é" * 416}) == []
    assert found(safety.api_limits, hyperparameters={"v": "é" * 417}) == [
        _too_long("hyperparameters.v", 2504, 2500)
    ]
    assert found(safety.api_limits, hyperparameters={"v": [1] * 833}) == []  # "[1, 1, ...]"
    assert found(safety.api_limits, hyperparameters={"v": [1] * 834}) == [
        _too_long("hyperparameters.v", 2502, 2500)
    ]
    assert found(safety.api_limits, hyperparameters={"v": 10**2499}) == []
    assert found(safety.api_limits, hyperparameters={"v": 0.1 + 0.2}) == []
    # ModelTrainer sends a string as it is
    trainer = {"target": "model_trainer"}
    assert found(safety.api_limits, hyperparameters={"v": "é" * 2500}, **trainer) == []
    assert found(safety.api_limits, hyperparameters={"v": "x" * 2501}, **trainer) == [
        _too_long("hyperparameters.v", 2501, 2500)
    ]


def _long_default(path: str, length: int, limit: int) -> Problem:
    return warning(
        path,
        f"the pipeline parameter's default is {length} characters; CreateTrainingJob takes "
        f"{limit} at most, so every execution that keeps the default fails.",
        "give a shorter default (put large values in a file in source_dir or S3 and pass its "
        "path), or override it at each execution.",
    )


@pytest.mark.parametrize("target", ["estimator", "model_trainer"])
def test_a_pipeline_parameters_default_is_measured_as_each_execution_sends_it(
    target: str,
) -> None:
    # The SDK sends the parameter's reference (no JSON quotes); each execution its value.
    at_limit = {
        "hyperparameters": {"v": ParameterString("V", default_value="x" * 2500)},
        "environment": {"E": ParameterString("E", default_value="y" * 512)},
    }
    assert found(safety.api_limits, target=target, **at_limit) == []
    over = {
        "hyperparameters": {"v": ParameterString("V", default_value="x" * 2501)},
        "environment": {"E": ParameterString("E", default_value="y" * 513)},
    }
    assert found(safety.api_limits, target=target, **over) == [
        _long_default("hyperparameters.v", 2501, 2500),
        _long_default("environment.E", 513, 512),
    ]
    # each parameter on its own: a short default before a long one
    short_first = {
        "a": ParameterString("A", default_value="x"),
        "v": ParameterString("V", default_value="x" * 2501),
    }
    assert found(safety.api_limits, target=target, hyperparameters=short_first) == [
        _long_default("hyperparameters.v", 2501, 2500)
    ]
    # no default: each execution gives the value, nothing to measure
    unknown = {"v": ParameterString("V")}
    assert found(safety.api_limits, target=target, hyperparameters=unknown) == []


@pytest.mark.parametrize("value", [object(), {1, 2}])
def test_a_value_json_cannot_encode_is_refused(value: object) -> None:
    assert found(safety.api_limits, hyperparameters={"v": value}) == [
        Problem(
            "hyperparameters.v",
            f"{type(value).__name__} values cannot be sent: the SDK JSON-encodes every "
            "hyperparameter.",
            "use a string, number, boolean, list or dict.",
        )
    ]


def test_names_are_checked_against_the_maps_limits() -> None:
    assert found(safety.api_limits, hyperparameters={"k" * 257: 1, "k" * 256: 2, "a b": 3}) == [
        Problem("hyperparameters." + "k" * 257, "name is 257 characters; the limit is 256.")
    ]
    assert found(
        safety.api_limits, environment={"1BAD": "x", "OK": "y" * 513, "K" * 513: "v"}
    ) == [
        Problem(
            "environment.1BAD",
            "'1BAD' is not a valid name: CreateTrainingJob takes letters, digits and "
            "underscores, not starting with a digit (TrainingEnvironmentMap in botocore's "
            "SageMaker model).",
            "use letters, digits and underscores, not starting with a digit.",
        ),
        _too_long("environment.OK", 513, 512),
        Problem("environment." + "K" * 513, "name is 513 characters; the limit is 512."),
    ]
    assert found(safety.api_limits, environment={"_OK_1": "y" * 512, "K" * 512: "v"}) == []


# --- safety: what the SDK packages from source_dir and the dependencies -----------------------


def _project(tmp_path: Path) -> Path:
    """A project (a git checkout) whose code folder links out of itself in every way."""
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    code = project / "code"
    code.mkdir()
    (code / "train.py").write_text("print('training')\n")
    (project / "data.txt").write_text("inside the project\n")
    (tmp_path / "credentials").write_text("outside the project\n")
    os.symlink(tmp_path / "credentials", code / "out_of_project")
    os.symlink(project / "data.txt", code / "out_of_code")
    os.symlink(code / "missing", code / "broken")
    os.symlink(code, code / "loop")
    return code


def _links(path: str, code: Path, name: str) -> list[Problem]:
    out_of_code, out_of_project, broken, loop = (
        quote(str(code / link)) for link in ("out_of_code", "out_of_project", "broken", "loop")
    )
    return [
        warning(
            path,
            f"{out_of_code} links to a file outside {name}; the SDK follows links when it "
            f"packages {name}, so it would upload that file.",
            f"copy what the job needs into {name} and remove the link.",
        ),
        Problem(
            path,
            f"{out_of_project} links to a file outside the project; the SDK follows links when "
            f"it packages {name}, so it would upload that file.",
            f"copy what the job needs into {name} and remove the link.",
        ),
        Problem(
            path,
            f"{broken} is a link to nothing (a missing file, or a loop of links); the SDK "
            f"packages {name} following links, and fails on it.",
            "remove the link, or point it at a file inside the folder.",
        ),
        Problem(
            path,
            f"{loop} is a link to a folder that holds it; the SDK packages {name} following "
            "links, so it would descend into it again and again until the system refuses the "
            'path ("Too many levels of symbolic links").',
            "remove the link.",
        ),
    ]


def test_links_out_of_source_dir_are_named_by_where_they_lead(tmp_path: Path) -> None:
    code = _project(tmp_path)
    expected = _links("source_dir", code, "source_dir")
    assert found(safety.source_dir_contents, source_dir=str(code)) == expected
    # ModelTrainer without source_dir uploads the entry point's folder
    assert found(
        safety.source_dir_contents,
        target="model_trainer",
        entry_point=str(code / "train.py"),
    ) == expected
    assert found(safety.source_dir_contents, source_dir="s3://bucket/sourcedir.tar.gz") == []
    clean = tmp_path / "clean"
    clean.mkdir()
    (clean / "train.py").write_text("print('training')\n")
    os.symlink(clean / "train.py", clean / "main.py")
    assert found(safety.source_dir_contents, source_dir=str(clean)) == []


def test_a_link_out_of_a_folder_outside_any_project_leaves_the_project(tmp_path: Path) -> None:
    code = tmp_path / "code"
    code.mkdir()
    (tmp_path / "data.txt").write_text("beside the code\n")
    os.symlink(tmp_path / "data.txt", code / "data.txt")
    assert found(safety.source_dir_contents, source_dir=str(code)) == [
        Problem(
            "source_dir",
            f"{quote(str(code / 'data.txt'))} links to a file outside the project; the SDK "
            "follows links when it packages source_dir, so it would upload that file.",
            "copy what the job needs into source_dir and remove the link.",
        )
    ]


def test_the_disk_root_is_not_packaged() -> None:
    assert found(safety.source_dir_contents, source_dir="/") == [
        Problem(
            "source_dir",
            "'/' is the root of the file system; the SDK would package and upload all of it.",
            "point source_dir at the folder that holds the training code.",
        )
    ]


def _nested(root: Path, depth: int) -> Path:
    folder = root
    for _ in range(depth):
        folder = folder / "d"
    folder.mkdir(parents=True)
    return root


def test_a_tree_deeper_than_tarfile_recurses_is_refused_at_the_boundary(tmp_path: Path) -> None:
    deep = _nested(tmp_path / "deep", 100)
    assert found(safety.source_dir_contents, source_dir=str(deep)) == [
        Problem(
            "source_dir",
            f"'{deep}' has folders nested over 100 deep; the SDK packages it with Python's "
            "tarfile, which recurses once per level and fails on trees this deep.",
            "point it at the folder with the training code only.",
        )
    ]
    assert found(safety.source_dir_contents, source_dir=str(_nested(tmp_path / "ok", 99))) == []


def test_a_tree_with_too_many_entries_to_check_is_refused() -> None:
    tree = Tree((), (), "more than 20,000 entries")
    assert list(safety._tree_problems("dependencies.0", "/data", tree)) == [
        Problem(
            "dependencies.0",
            "'/data' has more than 20,000 entries, too many to check for links that leave the "
            "project (20,000 at most); the SDK would package and upload all of it.",
            "point it at the folder with the training code only (keep data in S3).",
        )
    ]


def test_at_most_the_bound_of_problems_of_each_kind_is_reported(tmp_path: Path) -> None:
    links = tuple(f"{tmp_path}/link{i}" for i in range(MAX_PROBLEMS + 1))
    tree = Tree(
        (),
        tuple((link, "/etc/passwd") for link in links),
        None,
        broken_links=links,
        looping_links=links,
    )
    problems = list(safety._tree_problems("source_dir", str(tmp_path), tree))
    assert len(problems) == 3 * MAX_PROBLEMS
    assert {problem.message.split("'")[1] for problem in problems} == set(links[:-1])


def test_each_dependency_folder_is_checked_as_source_dir_is(tmp_path: Path) -> None:
    code = _project(tmp_path)
    file = tmp_path / "project" / "data.txt"
    assert found(
        safety.dependency_contents,
        dependencies=[str(code), 5, "/", str(file), "a\0b", str(tmp_path / "missing"), code],
    ) == [
        *_links("dependencies.0", code, "the dependency folder"),
        Problem(
            "dependencies.1",
            "is 5; the SDK packages each dependency from a local path and fails on anything "
            "else.",
            "give the path of a folder or file to copy into /opt/ml/code, as a string.",
        ),
        Problem(
            "dependencies.2",
            "'/' is the root of the file system; the SDK would package all of it.",
            "name the folder of the library the job needs.",
        ),
        *_links("dependencies.6", code, "the dependency folder"),
    ]


def test_dependencies_the_sdk_does_not_package_are_not_walked(tmp_path: Path) -> None:
    code = _project(tmp_path)
    assert found(
        safety.dependency_contents,
        dependencies=[str(code)],
        source_dir="s3://bucket/sourcedir.tar.gz",
    ) == []
    assert found(
        safety.dependency_contents,
        dependencies=[str(code)],
        git_config={"repo": "https://github.com/aws/sagemaker-python-sdk.git"},
    ) == []
    assert found(safety.dependency_contents, dependencies=str(code)) == []


def test_only_the_first_dependencies_up_to_the_bound_are_checked() -> None:
    dependencies = [*([5] * MAX_PROBLEMS), "/"]
    problems = found(safety.dependency_contents, dependencies=dependencies)
    assert [problem.path for problem in problems] == [
        f"dependencies.{i}" for i in range(MAX_PROBLEMS)
    ]


# --- targets: what the ModelTrainer target cannot build -----------------------------------------

ESTIMATOR_INSTEAD = "or build the job as the estimator (target: estimator, with sagemaker 2.x)."
TRAINER: dict[str, Any] = {"target": "model_trainer"}
GENERATION = sdk_generation()
VERSION = sdk_version()


def _no_counterpart(path: str, what: str, fix: str) -> Problem:
    return Problem(
        path, f"{what}; ModelTrainer has no counterpart for it.", f"{fix}, {ESTIMATOR_INSTEAD}"
    )


COMPILER_REMOVED = (
    "SageMaker Training Compiler runs through the estimator's compiler containers and "
    "hyperparameters (sagemaker 3's migration guide lists it as removed)"
)


@pytest.mark.parametrize(
    ("option", "value"), [("training_compiler", True), ("compiler_config", {"enabled": True})]
)
def test_training_compiler_has_no_counterpart_where_it_is_written(option: str, value: Any) -> None:
    compiler = {k: v for k, v in HF_COMPILER.items() if k != "training_compiler"}
    assert found(
        targets.model_trainer_counterparts, **TRAINER, **compiler, **{option: value}
    ) == [_no_counterpart(option, COMPILER_REMOVED, "remove it to train without the compiler")]


SMP_V1 = {
    "framework_version": "1.13.1",
    "py_version": "py39",
    "instance_type": "ml.p4d.24xlarge",
    "distribution": {
        "smdistributed": {"modelparallel": {"enabled": True, "parameters": {"partitions": 2}}},
        "mpi": {"enabled": True},
    },
}


def test_the_model_parallel_library_v1_has_no_counterpart() -> None:
    assert found(targets.model_trainer_counterparts, **TRAINER, **SMP_V1) == [
        _no_counterpart(
            "model_parallel",
            "these options run the model parallel library v1 (smdistributed over MPI, PyTorch "
            "<= 2.0.0); ModelTrainer configures the library v2 only (Torchrun(smp=SMP(...)))",
            "use a PyTorch version with the library v2 (2.0.1 or later) and its v2 options",
        )
    ]


P4D = {"instance_type": "ml.p4d.24xlarge"}


@pytest.mark.parametrize(
    ("launcher", "what", "fix"),
    [
        (
            "pytorchddp",
            "pytorchddp is the estimators' DDP-over-mpirun launcher",
            "use torch_distributed or mpi",
        ),
        (
            "pytorchxla",
            "the PyTorch/XLA launcher is the estimator's Training Compiler launcher",
            "use torch_distributed or mpi",
        ),
        (
            "parameter_server",
            "the parameter server is the estimator's TensorFlow launcher",
            "use torch_distributed or mpi",
        ),
        *(
            (misspelt, f"{misspelt!r} is a spelling of pytorchxla", "use torch_distributed or mpi")
            for misspelt in ("torchxla", "pytorch_xla", "torch_xla", "xla")
        ),
    ],
)
def test_the_estimators_own_launchers_have_no_counterpart(
    launcher: str, what: str, fix: str
) -> None:
    distribution = {"distribution": {launcher: {"enabled": True}}}
    assert found(targets.model_trainer_counterparts, **TRAINER, **P4D, **distribution) == [
        _no_counterpart(f"distribution.{launcher}", what, fix)
    ]


def test_smddp_has_no_counterpart() -> None:
    smddp = {"distribution": {"smdistributed": {"dataparallel": {"enabled": True}}}}
    assert found(targets.model_trainer_counterparts, **TRAINER, **P4D, **smddp) == [
        _no_counterpart(
            "distribution.smdistributed.dataparallel",
            "SMDDP is started by the estimator's containers from its hyperparameters",
            "use torch_distributed (torchrun, NCCL) instead",
        )
    ]
    off = {"distribution": {"smdistributed": {"dataparallel": {"enabled": False}}}}
    assert found(targets.model_trainer_counterparts, **TRAINER, **P4D, **off) == []


def test_the_compilers_launcher_is_refused_once_with_the_compiler() -> None:
    xla = {**HF_COMPILER, "distribution": {"pytorchxla": {"enabled": True}}}
    assert found(targets.model_trainer_counterparts, **TRAINER, **xla) == [
        _no_counterpart("training_compiler", COMPILER_REMOVED, "remove it to train without the "
                        "compiler")
    ]  # fmt: skip


def test_torchrun_and_mpi_together_are_one_launcher_too_many() -> None:
    both = {"distribution": {"torch_distributed": {"enabled": True}, "mpi": {"enabled": True}}}
    [problem] = found(targets.model_trainer_counterparts, **TRAINER, **P4D, **both)
    assert problem == Problem(
        "distribution.mpi",
        "and torch_distributed are both enabled; ModelTrainer takes one launcher "
        "(distributed=Torchrun(...) or MPI(...)), and the estimator would ignore mpi here.",
        "remove distribution.mpi (torchrun starts one process per GPU); or remove "
        "distribution.torch_distributed.",
    )
    assert [fix.changes for fix in problem.fixes] == [
        (("distribution.mpi", REMOVE),),
        (("distribution.torch_distributed", REMOVE),),
    ]
    for one in ({"mpi": {"enabled": True}}, {"torch_distributed": {"enabled": True}}):
        assert found(
            targets.model_trainer_counterparts, **TRAINER, **P4D, distribution=one
        ) == []
    mpi_off = {"torch_distributed": {"enabled": True}, "mpi": {"enabled": False}}
    assert found(targets.model_trainer_counterparts, **TRAINER, **P4D, distribution=mpi_off) == []
    # the model parallel library v2 runs on torchrun: only mpi is there to remove
    smp_v2 = {"framework_version": "2.2.0", "py_version": "py310", **P4D}
    [problem] = found(
        targets.model_trainer_counterparts,
        **TRAINER,
        **smp_v2,
        model_parallel={"hybrid_shard_degree": 2},
        distribution={"mpi": {"enabled": True}},
    )
    assert problem == Problem(
        "distribution.mpi",
        "is enabled with SMP v2, which runs under torchrun only (ModelTrainer: "
        "distributed=Torchrun(smp=SMP(...))); ModelTrainer takes one launcher.",
        "remove distribution.mpi (torchrun starts one process per GPU).",
    )
    assert [fix.changes for fix in problem.fixes] == [(("distribution.mpi", REMOVE),)]


def test_local_mode_and_a_parameter_instance_type_have_no_counterpart() -> None:
    assert found(targets.model_trainer_counterparts, **TRAINER, instance_type="local_gpu") == [
        _no_counterpart(
            "instance_type",
            "'local_gpu' is the estimator's local mode (ModelTrainer runs locally with "
            "training_mode=Mode.LOCAL_CONTAINER, which safe_estimators does not build)",
            "use a SageMaker instance type",
        )
    ]
    parameter = ParameterString("InstanceType", default_value="ml.g5.xlarge")
    assert found(targets.model_trainer_counterparts, **TRAINER, instance_type=parameter) == [
        _no_counterpart(
            "instance_type",
            "is a SageMaker Pipelines parameter; ModelTrainer's Compute takes a plain instance "
            "type (its pydantic model refuses a ParameterString)",
            "pass the instance type itself",
        )
    ]


def test_a_role_name_is_sent_as_it_is_by_sagemaker_2s_model_trainer() -> None:
    expected = [
        Problem(
            "role",
            f"is 'MyRole', a role name; sagemaker {VERSION}'s ModelTrainer sends it as it is, "
            "and CreateTrainingJob takes an ARN (the estimator and sagemaker 3's ModelTrainer "
            "look the name up in IAM).",
            "give the role's ARN: arn:aws:iam::<account>:role/MyRole.",
        )
    ]
    assert found(targets.model_trainer_counterparts, **TRAINER, role="MyRole") == (
        expected if GENERATION < 3 else []
    )
    assert found(targets.model_trainer_counterparts, **TRAINER) == []  # an ARN


def test_code_the_model_trainer_target_cannot_build_source_code_from() -> None:
    variables = {"entry_point": ParameterString("Entry"), "source_dir": ParameterString("Src")}
    assert found(targets.model_trainer_counterparts, **TRAINER, **variables) == [
        _no_counterpart(
            name,
            "is a SageMaker Pipelines variable; the ModelTrainer target builds SourceCode from a "
            "path known now",
            f"pass the {name} itself",
        )
        for name in ("entry_point", "source_dir")
    ]
    assert found(targets.model_trainer_counterparts, **TRAINER, source_dir="git://host/repo") == [
        _no_counterpart(
            "source_dir",
            "'git://host/repo' is not a local folder or S3 location",
            "use a local folder or an s3:// location",
        )
    ]
    for source_dir in ("s3://bucket/code", "code"):
        assert found(targets.model_trainer_counterparts, **TRAINER, source_dir=source_dir) == []


@pytest.mark.parametrize("entry_point", ["run.bash", "train.PY", "train"])
def test_model_trainer_runs_py_and_sh_entry_scripts_only(entry_point: str) -> None:
    assert found(targets.model_trainer_counterparts, **TRAINER, entry_point=entry_point) == [
        Problem(
            "entry_point",
            f"is {entry_point!r}; ModelTrainer runs .py and .sh entry scripts only (its "
            "sm_train.sh refuses anything else).",
            "point entry_point at the Python or shell script that starts training.",
        )
    ]


def test_a_command_needs_no_entry_script() -> None:
    for entry_point in ("train.py", "train.sh"):
        assert found(targets.model_trainer_counterparts, **TRAINER, entry_point=entry_point) == []
    command = {"source_code": {"command": "python train.py", "source_dir": "code"}}
    assert found(
        targets.model_trainer_counterparts, **TRAINER, **command, entry_point=LEFT_OUT
    ) == []


def test_estimator_keywords_are_refused_unless_carried_or_as_model_trainer_does() -> None:
    assert found(
        targets.model_trainer_counterparts,
        **TRAINER,
        disable_profiler=True,
        debugger_hook_config=False,
        base_job_name="train",
        tags={"team": "nlp"},
    ) == []
    assert found(
        targets.model_trainer_counterparts,
        **TRAINER,
        base_job_name="train",  # carried, before one that is not
        container_log_level=20,
        disable_profiler=False,
        debugger_hook_config={"a": 1},
    ) == [
        _no_counterpart(
            "container_log_level",
            "is an estimator option that the ModelTrainer target does not carry over",
            "remove container_log_level",
        ),
        _no_counterpart(
            "disable_profiler",
            "ModelTrainer sends no profiler configuration",
            "remove disable_profiler",
        ),
        _no_counterpart(
            "debugger_hook_config",
            "ModelTrainer sends no Debugger configuration",
            "remove debugger_hook_config",
        ),
    ]


GROUPS = {
    "instance_type": LEFT_OUT,
    "instance_groups": [
        {"instance_group_name": "gpu", "instance_type": "ml.g5.xlarge", "instance_count": 1},
        {"instance_group_name": "cpu", "instance_type": "ml.c5.xlarge", "instance_count": 1},
    ],
}
SCOPED = _no_counterpart(
    "distribution.instance_groups",
    "a launcher scoped to one instance group",
    "remove it",
)


@pytest.fixture(params=[("2.257.7", 2), ("3.27.0", 3)], ids=["sagemaker-2", "sagemaker-3"])
def generation(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    """The rules of the target module as they read an installed SDK of each generation (each
    lane runs the real one's tests too: the role and the recipe tests above)."""
    version, major = request.param
    monkeypatch.setattr(targets, "sdk_version", lambda: version)
    monkeypatch.setattr(targets, "sdk_generation", lambda: major)
    return int(major)


def test_only_sagemaker_3s_model_trainer_runs_a_heterogeneous_cluster(generation: int) -> None:
    heterogeneous = _no_counterpart(
        "instance_groups",
        "a heterogeneous cluster: sagemaker 2.257.7's ModelTrainer sends ml.m5.xlarge x 1 "
        "beside the groups (Compute's default instance type, set whenever instance_type is "
        "missing), which CreateTrainingJob refuses",
        "use instance_type and instance_count, or sagemaker 3.x's ModelTrainer",
    )
    assert found(targets.model_trainer_counterparts, **TRAINER, **GROUPS) == (
        [heterogeneous] if generation == 2 else []
    )


def test_no_launcher_runs_on_one_group_of_a_model_trainers_cluster(generation: int) -> None:
    on_every_group = _no_counterpart(
        "instance_groups",
        "a launcher on a heterogeneous cluster: ModelTrainer's Torchrun and MPI start on every "
        "instance of every group, where the estimator's distribution['instance_groups'] runs "
        "them on one group",
        "use instance_type and instance_count, or no launcher",
    )
    # the group alone is no launcher
    alone = {"instance_groups": ["gpu"]}
    assert found(
        targets.model_trainer_counterparts, **TRAINER, **GROUPS, distribution=alone
    )[-1:] == [SCOPED]
    if generation == 3:
        assert found(
            targets.model_trainer_counterparts, **TRAINER, **GROUPS, distribution=alone
        ) == [SCOPED]
    for launcher in ("torch_distributed", "mpi"):
        scoped = {launcher: {"enabled": True}, "instance_groups": ["gpu"]}
        [first, second] = found(
            targets.model_trainer_counterparts, **TRAINER, **GROUPS, distribution=scoped
        )
        assert second == SCOPED
        if generation == 3:
            assert first == on_every_group
        else:
            assert first.path == "instance_groups" and "sagemaker 2.257.7" in first.message


def test_a_role_name_on_each_generations_model_trainer(generation: int) -> None:
    problems = found(targets.model_trainer_counterparts, **TRAINER, role="MyRole")
    assert [p.message.split(";")[0] for p in problems] == (
        ["is 'MyRole', a role name"] if generation == 2 else []
    )
    assert found(targets.model_trainer_counterparts, **TRAINER, role="arn:MyRole") == []


def test_a_recipe_job_on_each_generation(generation: int) -> None:
    assert targets.recipe_needs_estimator().message == (
        "with sagemaker 2.257.7 the ModelTrainer target does not build recipe jobs; the "
        "estimator does."
        if generation == 2
        else "is a Nova, evaluation or LLM fine-tuning recipe; the ModelTrainer target builds "
        "GPU and Trainium pre-training and fine-tuning recipes (ModelTrainer.from_recipe) only."
    )


OWN_WORD_HINT = (
    "build the job as a ModelTrainer (target: model_trainer, or "
    "safe_estimators.model_trainer(...)), or write it in the estimator's words."
)


def _own_word(name: str) -> Problem:
    return Problem(
        name,
        "is ModelTrainer's own word; the estimator takes its own keywords (its **kwargs would "
        "drop this one).",
        OWN_WORD_HINT,
    )


def test_model_trainers_words_are_refused_for_the_estimator(tmp_path: Path) -> None:
    compute = {"compute": {"instance_type": "ml.g5.xlarge"}, "instance_type": LEFT_OUT}
    assert found(targets.model_trainer_words, **compute) == [_own_word("compute")]
    hyperparameters = tmp_path / "hyperparameters.json"
    hyperparameters.write_text('{"epochs": 3}')
    assert found(
        targets.model_trainer_words, **compute, hyperparameters=str(hyperparameters)
    ) == [_own_word("compute"), _own_word("hyperparameters")]
    assert found(targets.model_trainer_words, hyperparameters={"epochs": 3}) == []


def test_the_estimator_target_on_sagemaker_3_says_how_to_build_the_same_job() -> None:
    assert targets.estimator_needs_sdk2() == Problem(
        "target",
        f"the estimator target needs the SageMaker SDK 2.x, and sagemaker {VERSION} is "
        "installed: sagemaker 3 removed Estimator and all its subclasses (HuggingFace, PyTorch).",
        "build the same job as a ModelTrainer: safe_estimators.model_trainer(...) with the same "
        "arguments, or target: model_trainer in a spec file (the default under sagemaker 3); or "
        "install sagemaker>=2.250,<3 for the estimator.",
    )


def test_a_fine_tuning_trainer_on_sagemaker_2_says_how_to_get_one() -> None:
    assert targets.fine_tuning_needs_sdk3("SFTTrainer") == Problem(
        "target",
        f"the SFTTrainer fine-tuning trainer needs the SageMaker SDK 3.x, and sagemaker {VERSION} "
        "is installed: sagemaker 2.x has no fine-tuning trainers (sagemaker.train.SFTTrainer and "
        "its siblings came with sagemaker 3).",
        "install sagemaker>=3 (pip install 'sagemaker>=3.27'), or on sagemaker 2.x fine-tune "
        "with a HyperPod recipe: safe_estimators.pytorch(training_recipe=...).",
    )


def test_a_recipe_the_model_trainer_target_does_not_build_names_the_generation() -> None:
    what = (
        f"with sagemaker {VERSION} the ModelTrainer target does not build recipe jobs; the "
        "estimator does"
        if GENERATION < 3
        else "is a Nova, evaluation or LLM fine-tuning recipe; the ModelTrainer target builds "
        "GPU and Trainium pre-training and fine-tuning recipes (ModelTrainer.from_recipe) only"
    )
    assert targets.recipe_needs_estimator() == Problem(
        "training_recipe",
        f"{what}.",
        "build it as the estimator (target: estimator, with sagemaker 2.x), or call "
        "ModelTrainer.from_recipe yourself.",
    )
