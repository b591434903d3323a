"""SageMaker Pipelines: estimators from the factories in a TrainingStep, definitions made offline.

The instance type is a pipeline parameter, known only when an execution starts. The GPU-derived
values (GPU_NUM_DEVICES, the XLA distribution, MPI processes) are written into the definition
now, so the job is checked against the parameter's default and, where such values are injected,
every allowed value must have the default's GPU count. The source upload goes to moto's S3.
"""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest
from moto import mock_aws
from sagemaker.inputs import TrainingInput
from sagemaker.workflow.parameters import ParameterString
from sagemaker.workflow.pipeline import Pipeline
from sagemaker.workflow.pipeline_context import PipelineSession
from sagemaker.workflow.steps import TrainingStep

import safe_estimators
from safe_estimators import ConfigError

EXAMPLES = Path(__file__).parent.parent / "examples"
SCRIPT = str(Path(__file__).parent / "fixtures" / "jobs" / "train.py")
REGION = "us-west-2"
BUCKET = "safe-estimators-pipeline-bucket"
ROLE = "arn:aws:iam::111122223333:role/SageMakerRole"
INSTANCE_TYPE = {"Get": "Parameters.TrainingInstanceType"}

# The SDK says so on every fit() with a PipelineSession.
pytestmark = pytest.mark.filterwarnings("ignore:Running within a PipelineSession:UserWarning")

HF_COMPILER = {
    "entry_point": "train.py",
    "source_dir": str(EXAMPLES / "compiler-single-gpu"),
    "transformers_version": "4.21.1",
    "pytorch_version": "1.11.0",
    "py_version": "py38",
    "training_compiler": True,
}


@pytest.fixture(scope="module")
def pipeline_session():
    """A PipelineSession whose S3 (the source upload at definition time) is moto's."""
    with mock_aws():
        boto_session = boto3.Session(region_name=REGION)
        boto_session.client("s3").create_bucket(
            Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION}
        )
        yield PipelineSession(boto_session=boto_session, default_bucket=BUCKET)


def instance_type_parameter(default=None, enum_values=None):
    return ParameterString("TrainingInstanceType", default_value=default, enum_values=enum_values)


def definition(session, parameter, estimator, inputs=None):
    """The pipeline definition SageMaker would receive, as a dict."""
    step = TrainingStep(name="Train", step_args=estimator.fit(inputs))
    pipeline = Pipeline(
        name="safe-estimators-test", parameters=[parameter], steps=[step], sagemaker_session=session
    )
    return json.loads(pipeline.definition())


def training_arguments(document):
    (step,) = document["Steps"]
    assert step["Type"] == "Training"
    return step["Arguments"]


def test_compiler_step_carries_gpu_num_devices_and_xla_distribution(pipeline_session):
    # Two 4-GPU instances; an execution may switch to another 4-GPU type of a compiler family.
    parameter = instance_type_parameter(
        "ml.p3.8xlarge", ["ml.p3.8xlarge", "ml.g4dn.12xlarge", "ml.g5.12xlarge"]
    )
    est = safe_estimators.huggingface(
        **HF_COMPILER,
        role=ROLE,
        instance_type=parameter,
        instance_count=2,
        sagemaker_session=pipeline_session,
    )
    document = definition(
        pipeline_session, parameter, est, {"train": TrainingInput("s3://data-bucket/train/")}
    )

    arguments = training_arguments(document)
    assert arguments["Environment"]["GPU_NUM_DEVICES"] == "4"
    assert arguments["HyperParameters"]["sagemaker_pytorch_xla_multi_worker_enabled"] == "true"
    assert arguments["HyperParameters"]["sagemaker_training_compiler_enabled"] == "true"
    assert arguments["ResourceConfig"]["InstanceType"] == INSTANCE_TYPE
    assert arguments["ResourceConfig"]["InstanceCount"] == 2
    assert arguments["EnableInterContainerTrafficEncryption"] is True
    assert arguments["ProfilerConfig"]["DisableProfiler"] is True
    assert "trcomp" in arguments["AlgorithmSpecification"]["TrainingImage"]
    assert document["Parameters"] == [
        {
            "Name": "TrainingInstanceType",
            "Type": "String",
            "DefaultValue": "ml.p3.8xlarge",
            "EnumValues": ["ml.p3.8xlarge", "ml.g4dn.12xlarge", "ml.g5.12xlarge"],
        }
    ]
    # The source was uploaded where the definition says (moto's S3).
    uri = json.loads(arguments["HyperParameters"]["sagemaker_submit_directory"])
    key = uri.removeprefix(f"s3://{BUCKET}/")
    pipeline_session.boto_session.client("s3").head_object(Bucket=BUCKET, Key=key)

    # The run-time assumption is stated where the value was injected.
    reasons = {i.path: i.reason for i in safe_estimators.explain(est).injections}
    assert "every allowed instance type has 4 GPUs" in reasons["environment.GPU_NUM_DEVICES"]


def test_model_parallel_spec_step_carries_the_mpi_processes(pipeline_session):
    # The example spec file, with its instance type turned into a pipeline parameter.
    parameter = instance_type_parameter(
        "ml.p3.16xlarge", ["ml.p3.16xlarge", "ml.p3dn.24xlarge", "ml.p4d.24xlarge"]
    )
    est = safe_estimators.build(
        EXAMPLES / "model-parallel-fp16" / "job.yaml",
        instance_type=parameter,
        role=ROLE,
        sagemaker_session=pipeline_session,
    )
    arguments = training_arguments(definition(pipeline_session, parameter, est))

    hyper = arguments["HyperParameters"]
    assert hyper["sagemaker_mpi_num_of_processes_per_host"] == "8"
    assert json.loads(hyper["mp_parameters"]) == {
        "pipeline_parallel_degree": 2,
        "tensor_parallel_degree": 2,
        "microbatches": 4,
        "fp16": True,
        "ddp": True,
    }
    assert arguments["ResourceConfig"]["InstanceType"] == INSTANCE_TYPE


def test_plain_job_needs_only_a_default(pipeline_session):
    # Nothing is derived from the GPU count: any instance type may be chosen at run time.
    parameter = instance_type_parameter("ml.g5.2xlarge")
    est = safe_estimators.pytorch(
        entry_point=SCRIPT,
        role=ROLE,
        instance_type=parameter,
        framework_version="2.1.0",
        py_version="py310",
        sagemaker_session=pipeline_session,
    )
    arguments = training_arguments(definition(pipeline_session, parameter, est))

    assert arguments["ResourceConfig"]["InstanceType"] == INSTANCE_TYPE
    assert "GPU_NUM_DEVICES" not in (arguments.get("Environment") or {})
    image = arguments["AlgorithmSpecification"]["TrainingImage"]
    assert image.endswith("pytorch-training:2.1.0-gpu-py310")


HF_MODEL_PARALLEL = {
    "entry_point": str(EXAMPLES / "model-parallel-fp16" / "train.py"),
    "framework_version": "1.13.1",
    "py_version": "py39",
    "model_parallel": {"pipeline_parallel_degree": 2, "microbatches": 4},
}

REFUSED = [
    pytest.param(
        "huggingface",
        HF_COMPILER,
        instance_type_parameter(),
        {"instance_type": "without a default_value"},
        id="parameter-without-default",
    ),
    pytest.param(
        "pytorch",
        {"entry_point": SCRIPT, "framework_version": "2.1.0", "py_version": "py310"},
        instance_type_parameter(),
        {"instance_type": "without a default_value"},
        id="plain-job-parameter-without-default",
    ),
    pytest.param(
        "huggingface",
        HF_COMPILER,
        instance_type_parameter("ml.p3.8xlarge"),
        {"instance_type": "would be wrong at run time"},
        id="compiler-without-enum-values",
    ),
    pytest.param(
        "huggingface",
        HF_COMPILER,
        instance_type_parameter("ml.p3.8xlarge", ["ml.p3.8xlarge", "ml.p3.2xlarge"]),
        {"instance_type.enum_values.ml.p3.2xlarge": "has 1 GPU but the default ml.p3.8xlarge"},
        id="compiler-enum-with-another-gpu-count",
    ),
    pytest.param(
        "huggingface",
        HF_COMPILER,
        instance_type_parameter("ml.p3.8xlarge", ["ml.p3.8xlarge", "ml.g6.12xlarge"]),
        {"instance_type.enum_values.ml.g6.12xlarge": "does not support the g6 family"},
        id="compiler-enum-with-unsupported-family",
    ),
    pytest.param(
        "huggingface",
        HF_COMPILER,
        instance_type_parameter("ml.p3.8xlarge", ["ml.p3.2xlarge", "ml.g6.12xlarge"]),
        {
            "instance_type.enum_values.ml.p3.2xlarge": "has 1 GPU ",
            "instance_type.enum_values.ml.g6.12xlarge": "does not support the g6 family",
        },
        id="every-problem-at-once",
    ),
    pytest.param(
        "pytorch",
        HF_MODEL_PARALLEL,
        instance_type_parameter("ml.p3.16xlarge"),
        {"instance_type": "(8 GPUs) would be wrong at run time"},
        id="model-parallel-without-enum-values",
    ),
    pytest.param(
        "pytorch",
        HF_MODEL_PARALLEL,
        instance_type_parameter("ml.p3.16xlarge", ["ml.p3.16xlarge", "ml.g5.12xlarge"]),
        {"instance_type.enum_values.ml.g5.12xlarge": "has 4 GPUs but the default"},
        id="model-parallel-enum-with-another-gpu-count",
    ),
]


@pytest.mark.parametrize(("factory", "arguments", "parameter", "expected"), REFUSED)
def test_parameterised_instance_type_refused(
    pipeline_session, factory, arguments, parameter, expected
):
    with pytest.raises(ConfigError) as caught:
        getattr(safe_estimators, factory)(
            **arguments,
            role=ROLE,
            instance_type=parameter,
            instance_count=2,
            sagemaker_session=pipeline_session,
        )
    messages = {p.path: p.message for p in caught.value.problems}
    for path, text in expected.items():
        assert text in messages.get(path, ""), caught.value


# --- issue 34: what a pipeline step sends, and what its definition() cannot take ----------------

HF_DEMO = {
    "entry_point": "train.py",
    "source_dir": str(EXAMPLES / "compiler-single-gpu"),
    "transformers_version": "4.28.1",
    "pytorch_version": "2.0.0",
    "py_version": "py310",
    "instance_type": "ml.g5.2xlarge",
}


def test_a_pipeline_steps_base_job_name_is_not_held_to_the_job_name_pattern(pipeline_session):
    # AWS's Hugging Face pipeline demo names its step's jobs with a slash; the step sends no
    # TrainingJobName (trim_request_dict pops it), so the bare SDK builds it and so do we.
    parameter = ParameterString("Epochs", default_value="1")
    est = safe_estimators.huggingface(
        **HF_DEMO,
        role=ROLE,
        base_job_name="hugging-face-pipeline-demo/training",
        hyperparameters={"epochs": parameter},
        sagemaker_session=pipeline_session,
    )
    arguments = training_arguments(definition(pipeline_session, parameter, est))
    assert "TrainingJobName" not in arguments
    warned = [p for p in safe_estimators.explain(est).warnings if p.path == "base_job_name"]
    assert len(warned) == 1 and "use_custom_job_prefix=True" in warned[0].message


def test_the_same_base_job_name_outside_a_pipeline_is_refused(sagemaker_session):
    with pytest.raises(ConfigError) as error:
        safe_estimators.huggingface(
            **HF_DEMO,
            role=ROLE,
            base_job_name="hugging-face-pipeline-demo/training",
            sagemaker_session=sagemaker_session,
        )
    assert [p.path for p in error.value.problems] == ["base_job_name"]


def _source_variables():
    from sagemaker.workflow.properties import Properties

    return [
        ParameterString("SourceDir", default_value=f"s3://{BUCKET}/code/sourcedir.tar.gz"),
        Properties(step_name="Package", path="ProcessingOutputConfig.Outputs[0].S3Output.S3Uri"),
    ]


@pytest.mark.parametrize("variable", _source_variables(), ids=["ParameterString", "Properties"])
def test_a_variable_source_dir_without_base_job_name_is_refused_with_the_fix(
    pipeline_session, variable
):
    # The bare SDK builds it, and the pipeline's definition() fails naming the job.
    from sagemaker.pytorch import PyTorch

    arguments = {
        "entry_point": "train.py",
        "source_dir": variable,
        "role": ROLE,
        "instance_type": "ml.g5.2xlarge",
        "framework_version": "2.1.0",
        "py_version": "py310",
        "sagemaker_session": pipeline_session,
    }
    parameter = ParameterString("Unused", default_value="x")
    bare = PyTorch(**arguments)
    with pytest.raises(AttributeError, match="has no attribute 'decode'"):
        definition(pipeline_session, parameter, bare)

    with pytest.raises(ConfigError) as error:
        safe_estimators.pytorch(**arguments)
    (problem,) = [p for p in error.value.problems if p.severity == "error"]
    assert problem.path == "source_dir"
    assert "has no attribute 'decode'" in problem.message
    assert "base_job_name" in problem.hint

    # The fix, applied, builds (into a definition, where the variable needs no other step).
    est = safe_estimators.pytorch(**arguments, base_job_name="train")
    if isinstance(variable, ParameterString):
        sent = training_arguments(definition(pipeline_session, variable, est))
        assert sent["HyperParameters"]["sagemaker_submit_directory"] == variable.expr
