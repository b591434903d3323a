"""An organisation's SageMaker SDK config defaults still apply to the jobs safe_estimators builds.

A real config file (the YAML that ``SAGEMAKER_USER_CONFIG_OVERRIDE`` names) sets tags, KMS keys,
a VPC, network isolation, environment entries, and explicitly turns inter-container encryption
and the profiler off. The assertions are on what SageMaker receives: the plan's request, and the
CreateTrainingJob call that ``fit()`` makes (to moto).
"""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest
import sagemaker
import yaml
from moto import mock_aws

import safe_estimators

# Every test here builds or plans an estimator (a Training Compiler or SMP v1 job, the
# estimator's sagemaker.Session). ModelTrainer's plan under the same organisation config is a
# gap still to test: on sagemaker 3 it sends none of its tags, KMS keys or VPC.
pytestmark = pytest.mark.sdk2_only

EXAMPLES = Path(__file__).parent.parent / "examples"
REGION = "us-west-2"
ROLE = "arn:aws:iam::111122223333:role/SageMakerRole"
OUTPUT_KEY = "arn:aws:kms:us-west-2:111122223333:key/11111111-aaaa-bbbb-cccc-000000000001"
VOLUME_KEY = "arn:aws:kms:us-west-2:111122223333:key/11111111-aaaa-bbbb-cccc-000000000002"
VPC = {
    "SecurityGroupIds": ["sg-0123456789abcdef0"],
    "Subnets": ["subnet-0123456789abcdef0", "subnet-0fedcba9876543210"],
}
ORG_TAGS = [
    {"Key": "org:cost-centre", "Value": "ml-research"},
    {"Key": "org:data-classification", "Value": "internal"},
]
ORG_ENVIRONMENT = {"HTTPS_PROXY": "http://proxy.corp.internal:3128", "ORG_TEAM": "ml-research"}

ORG_CONFIG = {
    "SchemaVersion": "1.0",
    "SageMaker": {
        "PythonSDK": {"Modules": {"TelemetryOptOut": True}},
        "TrainingJob": {
            "Tags": ORG_TAGS,
            "OutputDataConfig": {"KmsKeyId": OUTPUT_KEY},
            "ResourceConfig": {"VolumeKmsKeyId": VOLUME_KEY},
            "VpcConfig": VPC,
            "EnableNetworkIsolation": True,
            "EnableInterContainerTrafficEncryption": False,
            "ProfilerConfig": {"DisableProfiler": False},
            "Environment": ORG_ENVIRONMENT,
        },
    },
}


def use_org_config(tmp_path, monkeypatch):
    """Write the organisation's config file; it is in force for every session created later."""
    path = tmp_path / "sagemaker-config.yaml"
    path.write_text(yaml.safe_dump(ORG_CONFIG, sort_keys=False))
    monkeypatch.setenv("SAGEMAKER_USER_CONFIG_OVERRIDE", str(path))
    monkeypatch.setenv("SAGEMAKER_ADMIN_CONFIG_OVERRIDE", str(path))
    return path


def assert_org_defaults_applied(request):
    assert all(tag in request["Tags"] for tag in ORG_TAGS)
    assert request["OutputDataConfig"]["KmsKeyId"] == OUTPUT_KEY
    assert request["ResourceConfig"]["VolumeKmsKeyId"] == VOLUME_KEY
    assert request["VpcConfig"] == VPC
    assert request["EnableNetworkIsolation"] is True
    # The organisation's explicit "false" wins over our multi-instance default (True); the SDK
    # leaves a false value out of the request.
    assert request.get("EnableInterContainerTrafficEncryption", False) is False
    assert request["ProfilerConfig"]["DisableProfiler"] is False


def assert_explained(explanation):
    injected = {i.path: i for i in explanation.injections}
    encryption = injected["encrypt_inter_container_traffic"]
    assert encryption.value is False
    assert "SageMaker SDK config" in encryption.reason
    assert "instead of the default True" in encryption.reason
    assert injected["disable_profiler"].value is False
    assert "SageMaker SDK config" in injected["disable_profiler"].reason
    assert injected["environment"].value == sorted(ORG_ENVIRONMENT)


def test_org_config_changes_the_plan_request(monkeypatch, tmp_path):
    # The same job, planned without and then with the organisation's config file.
    job = EXAMPLES / "compiler-multi-gpu" / "job.yaml"
    baseline = safe_estimators.plan(job, instance_count=2).request
    assert "Tags" not in baseline
    assert "KmsKeyId" not in baseline["OutputDataConfig"]
    assert "VpcConfig" not in baseline
    assert baseline["Environment"] == {"GPU_NUM_DEVICES": "4"}
    assert baseline["EnableInterContainerTrafficEncryption"] is True

    use_org_config(tmp_path, monkeypatch)
    planned = safe_estimators.plan(job, instance_count=2)

    assert_org_defaults_applied(planned.request)
    assert planned.request["Environment"] == {**ORG_ENVIRONMENT, "GPU_NUM_DEVICES": "4"}
    assert_explained(planned.explanation)
    document = planned.to_dict()
    assert any(i["path"] == "encrypt_inter_container_traffic" for i in document["injected"])


@pytest.fixture
def org_session(tmp_path, monkeypatch):
    """A session created after the config is in place, with moto behind every AWS call.

    Yields the session and the list of CreateTrainingJob parameters sent to SageMaker.
    """
    use_org_config(tmp_path, monkeypatch)
    with mock_aws():
        boto_session = boto3.Session(region_name=REGION)
        boto_session.client("s3").create_bucket(
            Bucket="org-training-bucket", CreateBucketConfiguration={"LocationConstraint": REGION}
        )
        sent: list[dict] = []
        boto_session.events.register(
            "provide-client-params.sagemaker.CreateTrainingJob",
            lambda params, **_: sent.append(params),
        )
        yield (
            sagemaker.Session(boto_session=boto_session, default_bucket="org-training-bucket"),
            sent,
        )


def test_factory_estimator_sends_the_org_defaults(org_session):
    session, sent = org_session
    est = safe_estimators.huggingface(
        entry_point="train.py",
        source_dir=str(EXAMPLES / "compiler-single-gpu"),
        role=ROLE,
        instance_type="ml.p3.8xlarge",
        instance_count=2,
        transformers_version="4.21.1",
        pytorch_version="1.11.0",
        py_version="py38",
        training_compiler=True,
        environment={"ORG_TEAM": "nlp"},  # the user's own value wins over the organisation's
        sagemaker_session=session,
    )
    est.fit({"train": "s3://org-training-bucket/train/"}, wait=False, logs=False)

    (request,) = sent
    assert_org_defaults_applied(request)
    assert request["Environment"] == {
        "HTTPS_PROXY": ORG_ENVIRONMENT["HTTPS_PROXY"],
        "ORG_TEAM": "nlp",
        "GPU_NUM_DEVICES": "4",
    }
    assert request["HyperParameters"]["sagemaker_pytorch_xla_multi_worker_enabled"] == "true"
    explanation = safe_estimators.explain(est)
    assert_explained(explanation)
    assert "SageMaker SDK config" in str(explanation)


def test_user_argument_wins_over_the_org_config(org_session):
    session, _ = org_session
    est = safe_estimators.pytorch(
        entry_point=str(EXAMPLES / "model-parallel-fp16" / "train.py"),
        role=ROLE,
        instance_type="ml.p3.16xlarge",
        instance_count=2,
        framework_version="1.13.1",
        py_version="py39",
        model_parallel={"pipeline_parallel_degree": 2, "microbatches": 4},
        encrypt_inter_container_traffic=True,
        sagemaker_session=session,
    )

    assert est.encrypt_inter_container_traffic is True
    assert est.output_kms_key == OUTPUT_KEY
    assert est.subnets == VPC["Subnets"]
    injected = safe_estimators.explain(est).injected
    assert "encrypt_inter_container_traffic" not in injected
