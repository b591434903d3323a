"""SageMaker Pipelines variables wherever the installed SDK's signatures take them.

Each option the SDK types ``... | PipelineVariable`` (read from its signatures by
``_facts.pipeline_variables``) is given as a parameter with a valid default: ours builds, and the
pipeline definition SageMaker would receive is the bare SDK's, but for the values we inject and
record. Values known only at run time (no default, Join, Properties, JsonGet, execution variables)
are warnings naming the check skipped. The SDK's own definition-time refusals are ours, before the
build. Definitions are made offline: the code upload goes to moto's S3.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import boto3
import pytest
from moto import mock_aws
from sagemaker import Session
from sagemaker.debugger import DebuggerHookConfig, Rule, rule_configs
from sagemaker.huggingface import HuggingFace
from sagemaker.huggingface import TrainingCompilerConfig as HFCompiler
from sagemaker.inputs import TrainingInput
from sagemaker.pytorch import PyTorch
from sagemaker.workflow.execution_variables import ExecutionVariables
from sagemaker.workflow.functions import Join, JsonGet
from sagemaker.workflow.parameters import (
    ParameterBoolean,
    ParameterFloat,
    ParameterInteger,
    ParameterString,
)
from sagemaker.workflow.pipeline import Pipeline
from sagemaker.workflow.pipeline_context import PipelineSession
from sagemaker.workflow.steps import TrainingStep

import safe_estimators
from safe_estimators import ConfigError
from safe_estimators._facts.pipeline_variables import pipeline_options

SCRIPT = str(Path(__file__).parent / "fixtures" / "jobs" / "train.py")
SCRIPTS = str(Path(__file__).parent / "fixtures" / "jobs")
REGION = "us-west-2"
BUCKET = "safe-estimators-pipeline-bucket"
ROLE = "arn:aws:iam::111122223333:role/SageMakerRole"
KMS = "arn:aws:kms:us-west-2:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
SOURCE = "s3://data-bucket/code/sourcedir.tar.gz"
PLAIN = {
    "entry_point": SCRIPT,
    "role": ROLE,
    "instance_type": "ml.g5.2xlarge",
    "framework_version": "2.1.0",
    "py_version": "py310",
}

pytestmark = pytest.mark.filterwarnings("ignore:Running within a PipelineSession:UserWarning")


@pytest.fixture(scope="module")
def boto_session():
    with mock_aws():
        session = boto3.Session(region_name=REGION)
        session.client("s3").create_bucket(
            Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION}
        )
        yield session


@pytest.fixture
def pipeline_session(boto_session):
    return PipelineSession(boto_session=boto_session, default_bucket=BUCKET)


def arguments_of(session, estimator, inputs=None, *, step_args=True, before=()):
    """The training step's arguments in the pipeline definition SageMaker would receive
    (``before``: the steps whose properties it reads)."""
    if step_args:
        step = TrainingStep(name="Train", step_args=estimator.fit(inputs))
    else:  # the older form, with the estimator in the step (the SDK warns it is deprecated)
        step = TrainingStep(name="Train", estimator=estimator, inputs=inputs)
    pipeline = Pipeline(name="p", steps=[*before, step], sagemaker_session=session)
    steps = json.loads(pipeline.definition())["Steps"]
    return next(s for s in steps if s["Name"] == "Train")["Arguments"]


def upstream_step(session, name):
    """A step whose properties a training step reads (its model artifacts, say)."""
    estimator = PyTorch(
        entry_point=SCRIPT, role=ROLE, instance_type="ml.m5.xlarge", instance_count=1,
        framework_version="2.1.0", py_version="py310", sagemaker_session=session,
        base_job_name="prepare",
    )  # fmt: skip
    return TrainingStep(name=name, estimator=estimator)


def _unrecorded(ours, bare, estimator):
    """Request members that differ from the bare SDK's and are not recorded injections."""
    injected = {i.path for i in safe_estimators.explain(estimator).injections}
    members = {"encrypt_inter_container_traffic": "EnableInterContainerTrafficEncryption"}
    recorded = {members.get(path, path) for path in injected}
    return {
        key: (bare.get(key), ours.get(key))
        for key in set(ours) | set(bare)
        if ours.get(key) != bare.get(key) and key not in recorded
    }


# A valid default for every option the SDK types "| PipelineVariable", in the shape it takes
# there (the option, a mapping's values, a list's elements, a list's mappings' values).
VALID = {
    "instance_count": ParameterInteger("P", default_value=2),
    "instance_type": ParameterString("P", default_value="ml.g5.2xlarge"),
    "keep_alive_period_in_seconds": ParameterInteger("P", default_value=60),
    "volume_size": ParameterInteger("P", default_value=30),
    "volume_kms_key": ParameterString("P", default_value=KMS),
    "max_run": ParameterInteger("P", default_value=3600),
    "input_mode": ParameterString("P", default_value="FastFile"),
    "output_path": ParameterString("P", default_value="s3://data-bucket/output"),
    "output_kms_key": ParameterString("P", default_value=KMS),
    "tags": [{"Key": "team", "Value": ParameterString("P", default_value="ml")}],
    "subnets": [ParameterString("P", default_value="subnet-0123456789abcdef0")],
    "security_group_ids": [ParameterString("P", default_value="sg-0123456789abcdef0")],
    "model_channel_name": ParameterString("P", default_value="model"),
    "metric_definitions": [{"Name": "loss", "Regex": ParameterString("P", default_value="l=(.*)")}],
    "encrypt_inter_container_traffic": ParameterBoolean("P", default_value=True),
    "use_spot_instances": ParameterBoolean("P", default_value=False),
    "max_wait": ParameterInteger("P", default_value=7200),
    "checkpoint_s3_uri": ParameterString("P", default_value="s3://data-bucket/checkpoints"),
    "checkpoint_local_path": ParameterString("P", default_value="/opt/ml/checkpoints"),
    "enable_sagemaker_metrics": ParameterBoolean("P", default_value=True),
    "enable_network_isolation": ParameterBoolean("P", default_value=False),
    "environment": {"MODE": ParameterString("P", default_value="fast")},
    "max_retry_attempts": ParameterInteger("P", default_value=2),
    "source_dir": ParameterString("P", default_value=SOURCE),
    "hyperparameters": {"epochs": ParameterInteger("P", default_value=3)},
    "container_log_level": ParameterInteger("P", default_value=20),
    "entry_point": ParameterString("P", default_value="train.py"),
    "training_repository_access_mode": ParameterString("P", default_value="Platform"),
    "training_repository_credentials_provider_arn": ParameterString(
        "P", default_value="arn:aws:lambda:us-west-2:111122223333:function:creds"
    ),
    "enable_infra_check": ParameterBoolean("P", default_value=True),
    "enable_remote_debug": ParameterBoolean("P", default_value=False),
    "enable_session_tag_chaining": ParameterBoolean("P", default_value=False),
    "training_plan": ParameterString(
        "P", default_value="arn:aws:sagemaker:us-west-2:111122223333:training-plan/plan"
    ),
    "image_uri": ParameterString(
        "P",
        default_value="763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.1.0-gpu-py310",
    ),
}

# What each option needs beside it to build at all, in the bare SDK too.
NEEDS = {
    "subnets": {"security_group_ids": ["sg-0123456789abcdef0"]},
    "security_group_ids": {"subnets": ["subnet-0123456789abcdef0"]},
    "max_wait": {
        "use_spot_instances": True,
        "max_run": 3600,
        "checkpoint_s3_uri": "s3://data-bucket/checkpoints",
    },
    "source_dir": {"entry_point": "train.py", "base_job_name": "train"},
    "entry_point": {"source_dir": SOURCE},
    # The SDK encrypts the code upload with output_kms_key: the code must be uploaded already.
    "output_kms_key": {"source_dir": SOURCE, "entry_point": "train.py"},
    # A training plan reserves only some types (ml.g5.2xlarge is not one): see test_capacity.py.
    "training_plan": {"instance_type": "ml.p5.48xlarge"},
    # The API refuses a volume key on local NVMe storage, which ml.g5.2xlarge has.
    "volume_kms_key": {"instance_type": "ml.p3.2xlarge"},
}


def test_the_table_covers_every_option_the_sdk_types_as_a_pipeline_variable():
    # 34 in SDK 2.257 (33 of EstimatorBase.__init__ plus image_uri); read from the signatures.
    for estimator in ("pytorch", "huggingface"):
        assert set(pipeline_options(estimator)) == set(VALID)


@pytest.mark.parametrize("option", sorted(VALID))
def test_each_option_as_a_parameter_builds_the_bare_sdks_definition(pipeline_session, option):
    arguments = {
        "entry_point": SCRIPT,
        "role": ROLE,
        "instance_type": "ml.g5.2xlarge",
        "instance_count": 1,
        "framework_version": "2.1.0",
        "py_version": "py310",
        **NEEDS.get(option, {}),
        option: VALID[option],
    }
    bare = arguments_of(pipeline_session, PyTorch(**arguments, sagemaker_session=pipeline_session))
    est = safe_estimators.pytorch(**arguments, sagemaker_session=pipeline_session)
    ours = arguments_of(pipeline_session, est)
    assert _unrecorded(ours, bare, est) == {}
    warnings = safe_estimators.explain(est).warnings
    assert not [w for w in warnings if "pipeline" in w.message], warnings


def test_a_parameters_default_is_what_a_message_judges(pipeline_session):
    with pytest.raises(ConfigError) as caught:
        safe_estimators.pytorch(
            **PLAIN,
            max_retry_attempts=ParameterInteger("Retries", default_value=40),
            max_run=ParameterString("MaxRun", default_value="3600"),
            sagemaker_session=pipeline_session,
        )
    messages = {p.path: p.message for p in caught.value.problems}
    assert "default_value of the pipeline parameter 'Retries'" in messages["max_retry_attempts"]
    assert "default_value of the pipeline parameter 'MaxRun'" in messages["max_run"]
    assert "expected int, got str '3600'" in messages["max_run"]


def _warnings(est):
    return {w.path: w.message for w in safe_estimators.explain(est).warnings}


def test_a_json_get_value_warns_naming_the_check_skipped(pipeline_session):
    est = safe_estimators.pytorch(
        **PLAIN,
        environment={
            "THRESHOLD": JsonGet(step_name="Eval", property_file="stats", json_path="t"),
            "RUN_ID": ExecutionVariables.PIPELINE_EXECUTION_ID,
        },
        sagemaker_session=pipeline_session,
    )
    warned = _warnings(est)
    assert "is a JsonGet, known only when the pipeline runs" in warned["environment.THRESHOLD"]
    assert "the ExecutionVariable 'PipelineExecutionId'" in warned["environment.RUN_ID"]
    hints = {w.path: w.hint for w in safe_estimators.explain(est).warnings}
    assert "only SageMaker can check it" in hints["environment.RUN_ID"]


def test_values_known_only_at_run_time_warn_naming_the_check_skipped(pipeline_session):
    run_id = ExecutionVariables.PIPELINE_EXECUTION_ID
    prepare = upstream_step(pipeline_session, "Prepare")
    est = safe_estimators.pytorch(
        **PLAIN,
        output_path=Join(on="/", values=["s3://data-bucket/output", run_id]),
        checkpoint_s3_uri=ParameterString("CheckpointUri"),
        hyperparameters={
            "data": prepare.properties.ModelArtifacts.S3ModelArtifacts,
            "rate": ParameterFloat("Rate", default_value=0.1),
        },
        sagemaker_session=pipeline_session,
    )
    warned = _warnings(est)
    assert "a Join, known only when the pipeline runs" in warned["output_path"]
    assert "OutputDataConfig.S3OutputPath constraints" in warned["output_path"]
    assert "checked in its place" not in warned["output_path"]  # a Join has no default
    assert "pipeline parameter 'CheckpointUri'" in warned["checkpoint_s3_uri"]
    assert "its secrets check and the API's length limits" in warned["hyperparameters.data"]
    assert "hyperparameters.rate" not in warned  # a default: checked, nothing skipped
    arguments = arguments_of(pipeline_session, est, before=[prepare])
    assert arguments["HyperParameters"]["data"] == {
        "Std:Join": {"On": "", "Values": [{"Get": "Steps.Prepare.ModelArtifacts.S3ModelArtifacts"}]}
    }
    assert arguments["OutputDataConfig"]["S3OutputPath"] == {
        "Std:Join": {
            "On": "/",
            "Values": ["s3://data-bucket/output", {"Get": "Execution.PipelineExecutionId"}],
        }
    }


def test_a_plain_jobs_instance_type_without_default_is_a_warning(pipeline_session):
    est = safe_estimators.pytorch(
        entry_point=SCRIPT,
        role=ROLE,
        instance_type=ParameterString("TrainingInstanceType"),
        image_uri="763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.1.0-gpu-py310",
        sagemaker_session=pipeline_session,
    )
    assert "the instance type check" in _warnings(est)["instance_type"]
    arguments = arguments_of(pipeline_session, est)
    assert arguments["ResourceConfig"]["InstanceType"] == {"Get": "Parameters.TrainingInstanceType"}


def test_the_sdks_integration_test_with_entry_point_and_source_dir_as_parameters(boto_session):
    # tests/integ/sagemaker/workflow/test_training_steps.py::
    # test_training_job_with_debugger_and_profiler, offline (role as an ARN: no IAM lookup).
    session = Session(boto_session=boto_session, default_bucket=BUCKET)

    def configuration():
        return {
            "entry_point": ParameterString(name="EntryPoint"),
            "source_dir": ParameterString(name="SourceDir"),
            "role": ROLE,
            "framework_version": "2.1.0",
            "py_version": "py310",
            "instance_count": ParameterInteger(name="InstanceCount", default_value=1),
            "instance_type": "ml.m5.xlarge",
            "sagemaker_session": session,
            "rules": [
                Rule.sagemaker(rule_configs.vanishing_gradient()),
                Rule.sagemaker(
                    base_config=rule_configs.all_zero(), rule_parameters={"tensor_regex": ".*"}
                ),
                Rule.sagemaker(rule_configs.loss_not_decreasing()),
            ],
            "debugger_hook_config": DebuggerHookConfig(s3_output_path=f"s3://{BUCKET}/tensors"),
            "base_job_name": "TestJob",
        }

    inputs = TrainingInput(s3_data=f"s3://{BUCKET}/integ-test-data/pytorch_mnist/training")
    bare = arguments_of(session, PyTorch(**configuration()), inputs, step_args=False)
    est = safe_estimators.pytorch(**configuration())
    ours = arguments_of(session, est, inputs, step_args=False)
    assert ours == bare
    warned = _warnings(est)
    assert "pipeline parameter 'EntryPoint'" in warned["entry_point"]
    assert "pipeline parameter 'SourceDir'" in warned["source_dir"]


def workshop_3(session):
    """Hugging Face's workshop_3_mlops lab_1_sagemaker_pipeline, its training step."""
    return {
        "entry_point": ParameterString(name="TrainingEntryPoint", default_value="train.py"),
        "source_dir": ParameterString(name="TrainingSourceDir", default_value="./scripts"),
        "base_job_name": "hugging-face-pipeline-demo/training",
        "instance_type": ParameterString(
            name="TrainingInstanceType", default_value="ml.p3.2xlarge"
        ),
        "instance_count": ParameterInteger(name="TrainingInstanceCount", default_value=1),
        "role": ROLE,
        "transformers_version": "4.11.0",
        "pytorch_version": "1.9.0",
        "py_version": "py38",
        "hyperparameters": {
            "epochs": ParameterString(name="Epochs", default_value="1"),
            "eval_batch_size": ParameterString(name="EvalBatchSize", default_value="32"),
            "train_batch_size": ParameterString(name="TrainBatchSize", default_value="16"),
            "learning_rate": ParameterString(name="LearningRate", default_value="3e-5"),
            "model_id": ParameterString(name="ModelId", default_value="distilbert-base-uncased"),
            "fp16": ParameterString(name="Fp16", default_value="True"),
        },
        "sagemaker_session": session,
    }


def test_workshop_3_mlops_pipeline_builds_the_bare_sdks_definition(boto_session):
    session = Session(boto_session=boto_session, default_bucket=BUCKET)
    # The workshop's processing step writes the data; a step's property stands for it here.
    prepare = upstream_step(session, "ProcessDataForTraining")
    data = prepare.properties.ModelArtifacts.S3ModelArtifacts
    inputs = {"train": TrainingInput(s3_data=data), "test": TrainingInput(s3_data=data)}
    bare = arguments_of(
        session, HuggingFace(**workshop_3(session)), inputs, step_args=False, before=[prepare]
    )
    est = safe_estimators.huggingface(**workshop_3(session))
    ours = arguments_of(session, est, inputs, step_args=False, before=[prepare])
    assert ours == bare
    assert "TrainingJobName" not in ours  # the step drops it: the "/" never reaches the API
    warned = _warnings(est)
    assert "A pipeline step sends no job name" in warned["base_job_name"]
    assert "use_custom_job_prefix=True" in warned["base_job_name"]
    assert "default_value './scripts' is a local path" in warned["source_dir"]


def test_base_job_name_outside_a_pipeline_is_still_refused():
    with pytest.raises(ConfigError) as caught:
        safe_estimators.pytorch(
            **PLAIN,
            base_job_name="demo/training",
        )
    assert [p.path for p in caught.value.problems] == ["base_job_name"]


def _refused_by_both(pipeline_session, arguments, sdk_says):
    """Our problems for a job the bare SDK refuses when the pipeline is defined (or built), for
    the reason ``sdk_says`` (its words)."""
    arguments = {
        "role": ROLE,
        "instance_type": "ml.g5.2xlarge",
        "instance_count": 1,
        "framework_version": "2.1.0",
        "py_version": "py310",
        "base_job_name": "train",
        **arguments,
    }
    with pytest.raises(TypeError, match=re.escape(sdk_says)):
        arguments_of(pipeline_session, PyTorch(**arguments, sagemaker_session=pipeline_session))
    with pytest.raises(ConfigError) as caught:
        safe_estimators.pytorch(**arguments, sagemaker_session=pipeline_session)
    return {p.path: p.message for p in caught.value.problems}


SDK_REFUSALS = [
    pytest.param(
        {"entry_point": SCRIPT, "output_kms_key": ParameterString("Key", default_value=KMS)},
        "output_kms_key",
        "uploads it to output_path's bucket encrypted with this key",
        "Pipeline variables do not support __str__ operation",
        id="output-kms-key-parameter-with-local-code",
    ),
    pytest.param(
        {"entry_point": ParameterString("EntryPoint", default_value="train.py")},
        "entry_point",
        "without a source_dir",
        "The entry_point should not be a pipeline variable when source_dir is missing.",
        id="entry-point-parameter-without-source-dir",
    ),
    pytest.param(
        {"entry_point": ParameterString("EntryPoint"), "source_dir": SCRIPTS},
        "entry_point",
        "with the local source_dir",
        "The entry_point should not be a pipeline variable when source_dir is a local path.",
        id="entry-point-parameter-with-local-source-dir",
    ),
    pytest.param(
        {
            "entry_point": ParameterString("EntryPoint", default_value="train.py"),
            "source_dir": SOURCE,
            "enable_network_isolation": True,
        },
        "entry_point",
        "enable_network_isolation",
        "entry_point, source_dir should not be pipeline variables when "
        "enable_network_isolation is a pipeline variable or it is set to True.",
        id="entry-point-parameter-with-network-isolation",
    ),
]


@pytest.mark.parametrize(("arguments", "path", "text", "sdk_says"), SDK_REFUSALS)
def test_the_sdks_definition_time_refusals_are_ours(
    pipeline_session, arguments, path, text, sdk_says
):
    assert text in _refused_by_both(pipeline_session, arguments, sdk_says).get(path, "")


def test_output_kms_key_parameter_with_uploaded_code_builds(pipeline_session):
    est = safe_estimators.pytorch(
        entry_point="train.py",
        source_dir=SOURCE,
        role=ROLE,
        instance_type="ml.g5.2xlarge",
        framework_version="2.1.0",
        py_version="py310",
        output_kms_key=ParameterString("Key", default_value=KMS),
        sagemaker_session=pipeline_session,
    )
    arguments = arguments_of(pipeline_session, est)
    assert arguments["OutputDataConfig"]["KmsKeyId"] == {"Get": "Parameters.Key"}


HF_COMPILER = {
    "entry_point": SCRIPT,
    "role": ROLE,
    "transformers_version": "4.21.1",
    "pytorch_version": "1.11.0",
    "py_version": "py38",
    "training_compiler": True,
}


def test_a_count_parameter_in_a_one_gpu_compiler_job_is_refused_as_the_sdk_refuses_it(
    pipeline_session,
):
    # Without a distribution, TrainingCompilerConfig.validate compares instance_count > 1.
    arguments = {
        **HF_COMPILER,
        "instance_type": "ml.g5.xlarge",
        "instance_count": ParameterInteger("TrainingInstanceCount", default_value=1),
    }
    bare = {k: v for k, v in arguments.items() if k != "training_compiler"}
    # TrainingCompilerConfig.validate's comparison, the bare SDK's refusal.
    compared = "'>' not supported between instances of 'ParameterInteger'"
    with pytest.raises(TypeError, match=compared):
        HuggingFace(**bare, sagemaker_session=pipeline_session, compiler_config=HFCompiler())
    with pytest.raises(ConfigError) as caught:
        safe_estimators.huggingface(**arguments, sagemaker_session=pipeline_session)
    assert caught.value.paths == ["instance_count"]


def test_a_count_parameter_warns_where_the_model_parallel_layout_follows_its_default(
    pipeline_session,
):
    est = safe_estimators.pytorch(
        **{
            **PLAIN,
            "instance_type": "ml.p3.16xlarge",
            "framework_version": "1.13.1",
            "py_version": "py39",
        },
        instance_count=ParameterInteger("TrainingInstanceCount", default_value=2),
        model_parallel={"pipeline_parallel_degree": 2, "microbatches": 4},
        sagemaker_session=pipeline_session,
    )
    assert "the model parallel layout" in _warnings(est)["instance_count"]


def test_a_torchrun_job_takes_a_count_parameter_without_a_word(pipeline_session):
    est = safe_estimators.pytorch(
        **PLAIN,
        instance_count=ParameterInteger("TrainingInstanceCount", default_value=2),
        distribution={"torch_distributed": {"enabled": True}},
        sagemaker_session=pipeline_session,
    )
    assert "instance_count" not in _warnings(est)
    arguments = arguments_of(pipeline_session, est)
    assert arguments["ResourceConfig"]["InstanceCount"] == {
        "Get": "Parameters.TrainingInstanceCount"
    }


def test_an_entry_point_parameter_under_torchrun_is_refused_as_the_sdk_refuses_it(
    pipeline_session,
):
    # fw_utils.validate_torch_distributed_distribution reads entry_point.endswith(".py").
    arguments = {
        **PLAIN,
        "entry_point": ParameterString("EntryPoint", default_value="train.py"),
        "source_dir": SOURCE,
        "base_job_name": "train",
        "instance_count": 1,
        "distribution": {"torch_distributed": {"enabled": True}},
    }
    with pytest.raises(AttributeError):
        PyTorch(**arguments, sagemaker_session=pipeline_session)
    with pytest.raises(ConfigError) as caught:
        safe_estimators.pytorch(**arguments, sagemaker_session=pipeline_session)
    assert caught.value.paths == ["entry_point"]
    assert "entry_point.endswith('.py')" in caught.value.problems[0].message
