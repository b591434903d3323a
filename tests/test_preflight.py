"""The preflight against an emulated account: moto's server on 127.0.0.1 for what it emulates
(IAM GetRole, S3, ECR, EC2, KMS, SageMaker's job listings, STS), botocore's Stubber for what it
does not (Service Quotas' sagemaker quotas, IAM's policy simulation, DescribeTrainingPlan, the
Price List), with responses in the service model's shapes (the Stubber validates them).

Every call of every test here goes through the read-only guard, which refuses any call it does
not declare; ``test_every_call_was_declared`` (last in the file) checks what it saw.
"""

from __future__ import annotations

import json
import threading
import urllib.request
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from safe_estimators._preflight import PreflightResult, run_job
from safe_estimators._preflight.guard import ALLOWED, Clients, ReadOnlyViolation, seen_calls
from safe_estimators._preflight.job import Instances, Job, from_request, from_trainer
from safe_estimators._preflight.runner import run

REGION = "us-west-2"
ACCOUNT = "123456789012"  # moto's account
ROLE_TRUST_SAGEMAKER = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": "sagemaker.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }
    ],
}
_SEEN_BEFORE = seen_calls()


@pytest.fixture(scope="module")
def endpoint():
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


class Account:
    """The emulated account of one test: ``aws`` (unguarded boto3 clients, to set it up),
    ``clients`` (the preflight's guarded ones), stubs for what moto lacks."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.clients = Clients(session, REGION)
        self.stubs: dict[tuple[str, str], Stubber] = {}

    def aws(self, service: str, region: str = REGION) -> Any:
        return self.session.client(service, region_name=region)

    def stub(self, service: str, lane: str = "", region: str | None = None) -> Stubber:
        key = (service, lane)
        if key not in self.stubs:
            stubber = Stubber(self.clients.get(service, lane, region))
            stubber.activate()
            self.stubs[key] = stubber
        return self.stubs[key]

    def quotas(self, listed: dict[str, tuple[str, float]]) -> Stubber:
        """Service Quotas' listing of the sagemaker quotas: name -> (code, default)."""
        stub = self.stub("service-quotas")
        stub.add_response(
            "list_aws_default_service_quotas",
            {
                "Quotas": [
                    {"QuotaName": name, "QuotaCode": code, "Value": value}
                    for name, (code, value) in listed.items()
                ]
            },
            {"ServiceCode": "sagemaker", "MaxResults": 100},
        )
        return stub

    def applied(self, code: str, value: float | None) -> None:
        """GetServiceQuota's answer for ``code`` (None: never changed, the default holds)."""
        stub = self.stub("service-quotas")
        expected = {"ServiceCode": "sagemaker", "QuotaCode": code}
        if value is None:
            stub.add_client_error(
                "get_service_quota", "NoSuchResourceException", expected_params=expected
            )
        else:
            stub.add_response("get_service_quota", {"Quota": {"QuotaCode": code, "Value": value}},
                              expected)  # fmt: skip

    def no_pending_increase(self, code: str) -> None:
        self.stub("service-quotas").add_response(
            "list_requested_service_quota_change_history_by_quota",
            {"RequestedQuotas": []},
            {"ServiceCode": "sagemaker", "QuotaCode": code, "MaxResults": 20},
        )

    def run(self, request: dict[str, Any] | Job, **options: Any) -> PreflightResult:
        job = request if isinstance(request, Job) else from_request(request, REGION)
        if job.instances and ("service-quotas", "") not in self.stubs:
            self.quotas({})  # no quota listed: nothing to compare
        result = run_job(job, clients=self.clients, **options)
        for stub in self.stubs.values():
            stub.assert_no_pending_responses()
        return result


@pytest.fixture
def account(endpoint, monkeypatch, tmp_path) -> Account:
    request = urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST")
    urllib.request.urlopen(request).close()
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    monkeypatch.setenv("SAFE_ESTIMATORS_CACHE_DIR", str(tmp_path / "cache"))
    return Account(boto3.Session(region_name=REGION))


def _job(instance_type: str = "ml.g5.12xlarge", count: int = 1, **fields: Any) -> dict[str, Any]:
    request: dict[str, Any] = {
        "ResourceConfig": {"InstanceType": instance_type, "InstanceCount": count,
                           "VolumeSizeInGB": 30},
        "StoppingCondition": {"MaxRuntimeInSeconds": 86400},
    }  # fmt: skip
    for key, value in fields.items():
        if isinstance(value, dict) and isinstance(request.get(key), dict):
            request[key] = {**request[key], **value}
        else:
            request[key] = value
    return request


def _only(result: PreflightResult, severity: str = "error") -> Any:
    found = [p for p in result.problems if p.severity == severity]
    assert len(found) == 1, result.problems
    return found[0]


# --- quotas ---------------------------------------------------------------------------------

ON_DEMAND_P4D = "ml.p4d.24xlarge for training job usage"
ALL = "Number of instances across all training jobs"


def test_a_type_whose_quota_is_0_is_refused_with_the_quota_its_value_and_the_console(account):
    account.quotas({ON_DEMAND_P4D: ("L-0P4D0001", 0.0), ALL: ("L-00C91CB5", 4.0)})
    account.applied("L-0P4D0001", None)  # never raised: the default 0 holds
    account.applied("L-00C91CB5", None)
    account.no_pending_increase("L-0P4D0001")
    result = account.run(_job("ml.p4d.24xlarge"))
    problem = _only(result)
    assert problem.path == "instance_type"
    assert f"'{ON_DEMAND_P4D}' is 0 in {REGION}" in problem.message
    assert "the job needs 1 (1 for this job + 0 running)" in problem.message
    assert "ResourceLimitExceeded" in problem.message
    assert (
        f"https://{REGION}.console.aws.amazon.com/servicequotas/home/services/sagemaker/quotas/"
        "L-0P4D0001" in problem.hint
    )
    assert not result.ok


def _running(
    account: Account, name: str, instance_type: str, count: int, spot: bool = False,
    pooled: bool = False,
):  # fmt: skip
    """A training job of the account that is still running (moto completes jobs at once), or
    (``pooled``) one that ended and keeps its instances in an available warm pool."""
    from moto.sagemaker.models import sagemaker_backends

    account.aws("sagemaker").create_training_job(
        TrainingJobName=name,
        AlgorithmSpecification={"TrainingImage": "img", "TrainingInputMode": "File"},
        RoleArn=f"arn:aws:iam::{ACCOUNT}:role/r",
        OutputDataConfig={"S3OutputPath": "s3://out/x"},
        ResourceConfig={"InstanceType": instance_type, "InstanceCount": count,
                        "VolumeSizeInGB": 30},
        StoppingCondition={"MaxRuntimeInSeconds": 3600},
        EnableManagedSpotTraining=spot,
    )  # fmt: skip
    job = sagemaker_backends[ACCOUNT][REGION].training_jobs[name]
    if pooled:
        job.warm_pool_status = {"Status": "Available", "ResourceRetainedBillableTimeInSeconds": 60}
    else:
        job.training_job_status = "InProgress"


def test_running_jobs_count_two_running_and_a_quota_of_3_refuse_a_2_instance_job(account):
    name = "ml.g5.12xlarge for training job usage"
    _running(account, "already-running", "ml.g5.12xlarge", 2)
    _running(account, "other-type", "ml.m5.xlarge", 5)
    account.aws("sagemaker").create_training_job(
        TrainingJobName="finished",
        AlgorithmSpecification={"TrainingImage": "img", "TrainingInputMode": "File"},
        RoleArn=f"arn:aws:iam::{ACCOUNT}:role/r",
        OutputDataConfig={"S3OutputPath": "s3://out/x"},
        ResourceConfig={"InstanceType": "ml.g5.12xlarge", "InstanceCount": 4,
                        "VolumeSizeInGB": 30},
        StoppingCondition={"MaxRuntimeInSeconds": 3600},
    )  # fmt: skip  (Completed at once in moto: it holds nothing)
    account.quotas({name: ("L-G512XL01", 1.0), ALL: ("L-00C91CB5", 100.0)})
    account.applied("L-G512XL01", 3.0)
    account.applied("L-00C91CB5", None)
    account.no_pending_increase("L-G512XL01")
    problem = _only(account.run(_job("ml.g5.12xlarge", 2)))
    assert f"'{name}' is 3 in {REGION}, and the job needs 4" in problem.message
    assert "(2 for this job + 2 in 1 running training job)" in problem.message
    assert "or wait for the running jobs to end" in problem.hint


def test_the_same_job_fits_when_the_quota_covers_the_running_jobs(account):
    name = "ml.g5.12xlarge for training job usage"
    _running(account, "already-running", "ml.g5.12xlarge", 2)
    account.quotas({name: ("L-G512XL01", 1.0)})
    account.applied("L-G512XL01", 4.0)
    assert account.run(_job("ml.g5.12xlarge", 2)).problems == ()


def test_instances_kept_in_a_warm_pool_make_a_warning_the_job_may_reuse_the_pool(account):
    name = "ml.g5.12xlarge for training job usage"
    _running(account, "pooled", "ml.g5.12xlarge", 2, pooled=True)
    account.quotas({name: ("L-G512XL01", 1.0)})
    account.applied("L-G512XL01", 3.0)
    problem = _only(account.run(_job("ml.g5.12xlarge", 2)), "warning")
    assert "2 more are kept in warm pools: unless the job reuses one of them" in problem.message


def test_a_pending_increase_is_a_warning_not_an_error(account):
    account.quotas({ON_DEMAND_P4D: ("L-0P4D0001", 0.0)})
    account.applied("L-0P4D0001", 0.0)
    account.stub("service-quotas").add_response(
        "list_requested_service_quota_change_history_by_quota",
        {"RequestedQuotas": [{"QuotaCode": "L-0P4D0001", "DesiredValue": 2.0,
                              "Status": "CASE_OPENED"}]},
    )  # fmt: skip
    problem = _only(account.run(_job("ml.p4d.24xlarge")), "warning")
    assert "An increase to 2 is pending (status CASE_OPENED)" in problem.message


SPOT = "ml.g5.12xlarge for spot training job usage"
WARM = "ml.g5.12xlarge for training warm pool usage"
ON_DEMAND = "ml.g5.12xlarge for training job usage"
EVERY_QUOTA = {ON_DEMAND: ("L-OD000001", 1.0), SPOT: ("L-SP000001", 1.0),
               WARM: ("L-WP000001", 0.0), ALL: ("L-00C91CB5", 4.0)}  # fmt: skip


def test_an_on_demand_job_asks_neither_the_spot_nor_the_warm_pool_quota(account):
    account.quotas(EVERY_QUOTA)
    account.applied("L-OD000001", 4.0)  # the Stubber fails on any other quota asked
    account.applied("L-00C91CB5", 4.0)
    assert account.run(_job()).problems == ()


def test_a_spot_job_is_checked_against_the_spot_quota_only(account):
    account.quotas(EVERY_QUOTA)
    account.applied("L-SP000001", 0.0)
    account.no_pending_increase("L-SP000001")
    result = account.run(_job(EnableManagedSpotTraining=True))
    assert f"'{SPOT}' is 0" in _only(result).message


def test_a_warm_pool_beyond_its_quota_is_a_warning_the_job_still_runs(account):
    account.quotas(EVERY_QUOTA)
    account.applied("L-OD000001", 4.0)
    account.applied("L-00C91CB5", 4.0)
    account.applied("L-WP000001", None)  # AWS's default: 0
    result = account.run(_job(ResourceConfig={"KeepAlivePeriodInSeconds": 1800}))
    problem = _only(result, "warning")
    assert result.ok
    assert problem.path == "keep_alive_period_in_seconds"
    assert f"'{WARM}' is 0" in problem.message and "no warm pool is kept" in problem.message


def test_the_quota_table_is_listed_once_per_account_and_region(account):
    account.quotas({ON_DEMAND: ("L-OD000001", 1.0)})
    account.applied("L-OD000001", 4.0)
    assert account.run(_job()).problems == ()
    account.applied("L-OD000001", 4.0)  # the second run asks the value only: no listing
    assert account.run(_job()).problems == ()


def test_a_type_the_region_does_not_list_for_training_is_a_warning(account):
    account.quotas({ON_DEMAND: ("L-OD000001", 1.0)})
    problem = _only(account.run(_job("ml.p2.xlarge")), "warning")
    assert problem.path == "instance_type"
    assert "ml.p2.xlarge is not offered for training in us-west-2" in problem.message


def test_access_denied_on_our_own_call_is_a_warning_naming_the_permission(account):
    account.stub("service-quotas").add_client_error(
        "list_aws_default_service_quotas", "AccessDeniedException", "not allowed"
    )
    result = account.run(_job())
    problem = _only(result, "warning")
    assert result.ok
    assert problem.message == (
        "could not check: AccessDeniedException on servicequotas:ListAWSDefaultServiceQuotas."
    )
    assert "allow servicequotas:ListAWSDefaultServiceQuotas" in problem.hint


def test_a_quota_is_still_compared_when_the_running_jobs_cannot_be_listed(account):
    account.quotas({ON_DEMAND_P4D: ("L-0P4D0001", 0.0)})
    account.applied("L-0P4D0001", None)
    account.no_pending_increase("L-0P4D0001")
    account.stub("sagemaker").add_client_error("list_training_jobs", "AccessDeniedException")
    result = account.run(_job("ml.p4d.24xlarge"))
    assert f"'{ON_DEMAND_P4D}' is 0" in _only(result).message  # the job alone exceeds it
    denied = _only(result, "warning")
    assert denied.message == (
        "could not check: AccessDeniedException on sagemaker:ListTrainingJobs."
    )


# --- S3 -------------------------------------------------------------------------------------


def test_a_bucket_in_another_region_is_refused(account):
    account.aws("s3", "eu-west-1").create_bucket(
        Bucket="elsewhere", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"}
    )
    result = account.run(_job(OutputDataConfig={"S3OutputPath": "s3://elsewhere/models"}))
    problem = _only(result)
    assert problem.path == "output_path"
    assert "is in eu-west-1, the job in us-west-2" in problem.message
    assert "BucketRegionError" in problem.message


def test_an_input_prefix_must_hold_an_object_and_a_missing_bucket_is_refused(account):
    s3 = account.aws("s3")
    s3.create_bucket(Bucket="data", CreateBucketConfiguration={"LocationConstraint": REGION})
    s3.put_object(Bucket="data", Key="train/part-0", Body=b"x")
    channels = [
        {"ChannelName": name, "DataSource": {"S3DataSource": {
            "S3DataType": "S3Prefix", "S3Uri": uri}}}
        for name, uri in (("train", "s3://data/train"), ("test", "s3://data/test"),
                          ("extra", "s3://missing-bucket/x"))
    ]  # fmt: skip
    result = account.run(_job(InputDataConfig=channels))
    paths = {p.path: p.message for p in result.problems}
    assert set(paths) == {"inputs.test", "inputs.extra"}
    assert "s3://data/test holds no object" in paths["inputs.test"]
    assert "'missing-bucket' of s3://missing-bucket/x does not exist" in paths["inputs.extra"]


# --- the role -------------------------------------------------------------------------------


def _simulation(account: Account, *decisions: tuple[str, str, str]) -> None:
    account.stub("iam", "simulation").add_response(
        "simulate_principal_policy",
        {"EvaluationResults": [
            {"EvalActionName": action, "EvalResourceName": resource, "EvalDecision": decision}
            for action, resource, decision in decisions
        ]},
    )  # fmt: skip


LOGS = f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/aws/sagemaker/TrainingJobs:*"


def test_a_role_sagemaker_may_not_assume_is_refused(account):
    trust = {**ROLE_TRUST_SAGEMAKER, "Statement": [
        {**ROLE_TRUST_SAGEMAKER["Statement"][0], "Principal": {"Service": "ec2.amazonaws.com"}}]}
    arn = account.aws("iam").create_role(
        RoleName="NotForSageMaker", AssumeRolePolicyDocument=json.dumps(trust)
    )["Role"]["Arn"]  # fmt: skip
    _simulation(account, ("logs:CreateLogStream", LOGS, "allowed"))
    problem = _only(account.run(_job(RoleArn=arn)))
    assert problem.path == "role"
    assert "does not let sagemaker.amazonaws.com assume it" in problem.message


def test_a_missing_role_is_refused(account):
    problem = _only(account.run(_job(RoleArn=f"arn:aws:iam::{ACCOUNT}:role/Nobody")))
    assert problem.message == f"the role 'Nobody' does not exist in account {ACCOUNT}."


def test_a_denied_simulation_is_a_warning_that_says_what_it_cannot_see(account):
    arn = account.aws("iam").create_role(
        RoleName="SageMakerRole", AssumeRolePolicyDocument=json.dumps(ROLE_TRUST_SAGEMAKER)
    )["Role"]["Arn"]
    s3 = account.aws("s3")
    s3.create_bucket(Bucket="out", CreateBucketConfiguration={"LocationConstraint": REGION})
    _simulation(
        account,
        ("s3:PutObject", "arn:aws:s3:::out/models*", "implicitDeny"),
        ("s3:PutObject", LOGS, "implicitDeny"),  # a pair the job does not need: not reported
        ("logs:CreateLogStream", LOGS, "allowed"),
    )
    result = account.run(_job(RoleArn=arn, OutputDataConfig={"S3OutputPath": "s3://out/models"}))
    problem = _only(result, "warning")
    assert result.ok
    assert problem.path == "output_path"
    assert "do not allow s3:PutObject on arn:aws:s3:::out/models*" in problem.message
    assert "service control policies, permission boundaries" in problem.message


def test_a_denied_simulation_leaves_the_trust_policys_verdict(account):
    trust = {**ROLE_TRUST_SAGEMAKER, "Statement": [
        {**ROLE_TRUST_SAGEMAKER["Statement"][0], "Principal": {"Service": "ec2.amazonaws.com"}}]}
    arn = account.aws("iam").create_role(
        RoleName="NotForSageMaker", AssumeRolePolicyDocument=json.dumps(trust)
    )["Role"]["Arn"]  # fmt: skip
    account.stub("iam", "simulation").add_client_error(
        "simulate_principal_policy", "AccessDenied", http_status_code=403
    )
    result = account.run(_job(RoleArn=arn))
    assert "does not let sagemaker.amazonaws.com assume it" in _only(result).message
    assert _only(result, "warning").message == (
        "could not check: AccessDenied on iam:SimulatePrincipalPolicy."
    )


# --- network --------------------------------------------------------------------------------


def _vpc(account: Account) -> tuple[str, str, str]:
    ec2 = account.aws("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.1.0/24")["Subnet"]["SubnetId"]
    group = ec2.create_security_group(GroupName="job", Description="job", VpcId=vpc)["GroupId"]
    return vpc, subnet, group


def test_a_subnet_with_no_route_to_s3_and_one_that_does_not_exist_are_refused(account):
    _, subnet, group = _vpc(account)
    vpc_config = {"Subnets": [subnet, "subnet-0123456789abcdef0"], "SecurityGroupIds": [group]}
    result = account.run(_job(VpcConfig=vpc_config))
    paths = {p.path: p.message for p in result.problems if p.severity == "error"}
    assert set(paths) == {"subnets.0", "subnets.1"}
    assert f"the subnet {subnet!r} has no route to S3" in paths["subnets.0"]
    assert "'subnet-0123456789abcdef0' does not exist" in paths["subnets.1"]


def test_an_s3_gateway_endpoint_on_the_route_table_is_a_route(account):
    vpc, subnet, group = _vpc(account)
    ec2 = account.aws("ec2")
    tables = ec2.describe_route_tables(Filters=[{"Name": "vpc-id", "Values": [vpc]}])
    ec2.create_vpc_endpoint(
        VpcId=vpc, ServiceName=f"com.amazonaws.{REGION}.s3", VpcEndpointType="Gateway",
        RouteTableIds=[tables["RouteTables"][0]["RouteTableId"]],
    )  # fmt: skip
    vpc_config = {"Subnets": [subnet], "SecurityGroupIds": [group]}
    assert account.run(_job(VpcConfig=vpc_config)).problems == ()


def test_a_nat_route_is_a_route_and_a_missing_security_group_is_refused(account):
    vpc, subnet, group = _vpc(account)
    ec2 = account.aws("ec2")
    table = ec2.create_route_table(VpcId=vpc)["RouteTable"]["RouteTableId"]
    ec2.associate_route_table(RouteTableId=table, SubnetId=subnet)
    nat = ec2.create_nat_gateway(SubnetId=subnet)["NatGateway"]["NatGatewayId"]
    ec2.create_route(RouteTableId=table, DestinationCidrBlock="0.0.0.0/0", NatGatewayId=nat)
    vpc_config = {"Subnets": [subnet], "SecurityGroupIds": [group, "sg-0123456789abcdef0"]}
    problem = _only(account.run(_job(VpcConfig=vpc_config)))
    assert problem.path == "security_group_ids.1"


# --- KMS, ECR, training plans ---------------------------------------------------------------


def test_a_disabled_kms_key_is_refused(account):
    kms = account.aws("kms")
    metadata = kms.create_key()["KeyMetadata"]
    kms.disable_key(KeyId=metadata["KeyId"])
    key = metadata["Arn"]
    problem = _only(account.run(_job(OutputDataConfig={"S3OutputPath": "", "KmsKeyId": key})))
    assert problem.path == "output_kms_key"
    assert "is Disabled, not Enabled" in problem.message


def test_an_enabled_key_passes_and_one_in_another_region_is_refused(account):
    key = account.aws("kms").create_key()["KeyMetadata"]["Arn"]
    elsewhere = key.replace(REGION, "eu-west-1")
    result = account.run(_job(ResourceConfig={"VolumeKmsKeyId": elsewhere},
                              OutputDataConfig={"KmsKeyId": key}))  # fmt: skip
    problem = _only(result)
    assert problem.path == "volume_kms_key"
    assert "is in eu-west-1, the job in us-west-2" in problem.message


def test_an_image_missing_from_the_accounts_repository_is_refused(account):
    ecr = account.aws("ecr")
    ecr.create_repository(repositoryName="trainer")
    base = f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com"
    spec = {"TrainingInputMode": "File", "TrainingImage": f"{base}/trainer:v1"}
    result = account.run(_job(AlgorithmSpecification=spec))
    assert "has no image with tag 'v1'" in _only(result).message
    spec["TrainingImage"] = f"{base}/nope:v1"
    result = account.run(_job(AlgorithmSpecification=spec))
    assert "the ECR repository 'nope' does not exist" in _only(result).message


def test_an_aws_framework_image_is_not_checked(account):
    image = "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.1.0-gpu-py310"
    request = _job(AlgorithmSpecification={"TrainingImage": image, "TrainingInputMode": "File"})
    assert account.run(request).problems == ()


SHARED = "999999999999.dkr.ecr.us-west-2.amazonaws.com/shared:v1"


@pytest.mark.parametrize(
    ("principal", "pullable"),
    [
        ({"Service": "sagemaker.amazonaws.com"}, True),
        ({"AWS": f"arn:aws:iam::{ACCOUNT}:root"}, True),
        ({"AWS": "arn:aws:iam::111111111111:root"}, False),
    ],
)
def test_an_image_in_another_account_needs_a_policy_that_lets_this_account_pull(
    account, principal, pullable
):
    # moto keeps each account's registry to itself: the cross-account read is stubbed.
    policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": principal,
              "Action": ["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"]}]}  # fmt: skip
    account.stub("ecr").add_response(
        "get_repository_policy",
        {"registryId": "999999999999", "repositoryName": "shared",
         "policyText": json.dumps(policy)},
        {"registryId": "999999999999", "repositoryName": "shared"},
    )  # fmt: skip
    spec = {"TrainingInputMode": "File", "TrainingImage": SHARED}
    result = account.run(_job(AlgorithmSpecification=spec))
    if pullable:
        assert result.problems == ()
    else:
        problem = _only(result)
        assert problem.path == "image_uri"
        assert (
            "grants no pull (ecr:BatchGetImage, ecr:GetDownloadUrlForLayer) to this account "
            f"({ACCOUNT}) or to sagemaker.amazonaws.com" in problem.message
        )


PLAN = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:training-plan/p5-week"


def _plan(account: Account, **answer: Any) -> None:
    account.stub("sagemaker", "plans").add_response(
        "describe_training_plan",
        {"TrainingPlanArn": PLAN, "TrainingPlanName": "p5-week", "Status": "Active",
         "TargetResources": ["training-job"], "AvailableInstanceCount": 2,
         "TotalInstanceCount": 2,
         "ReservedCapacitySummaries": [{
             "ReservedCapacityArn": f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:reserved-capacity/r",
             "InstanceType": "ml.p5.48xlarge", "TotalInstanceCount": 2, "Status": "Active"}],
         **answer},
        {"TrainingPlanName": "p5-week"},
    )  # fmt: skip


def test_a_training_plan_for_another_instance_type_is_refused(account):
    _plan(account)
    problem = _only(account.run(_job("ml.p4d.24xlarge", ResourceConfig={"TrainingPlanArn": PLAN})))
    assert problem.path == "instance_type"
    assert "the training plan 'p5-week' reserves ml.p5.48xlarge" in problem.message


def test_a_training_plan_with_fewer_free_instances_is_a_warning(account):
    _plan(account, AvailableInstanceCount=1)
    request = _job("ml.p5.48xlarge", 2, ResourceConfig={"TrainingPlanArn": PLAN})
    problem = _only(account.run(request), "warning")
    assert "has 1 free instance now (of 2); the job asks for 2" in problem.message


def _price_list(account: Account, rates: dict[str, float]) -> Stubber:
    stub = account.stub("pricing", region="us-east-1")
    products = [
        json.dumps({
            "product": {"attributes": {"instanceName": name, "regionCode": REGION,
                                       "component": "Training"}},
            "terms": {"OnDemand": {"T": {"priceDimensions": {"D": {
                "unit": "Hrs", "pricePerUnit": {"USD": str(rate)}}}}}},
        })
        for name, rate in rates.items()
    ]  # fmt: skip
    stub.add_response("get_products", {"PriceList": products})
    return stub


def test_the_price_is_the_training_rate_times_instances_times_max_run(account):
    _price_list(account, {"ml.g5.12xlarge": 7.09, "ml.g5.48xlarge": 20.36, "ml.g6.12xlarge": 5.6})
    result = account.run(
        _job("ml.g5.48xlarge", 2), price=True,
        fits=[("ml.g5.12xlarge", 4), ("ml.g6.12xlarge", 8), ("ml.p5.48xlarge", 1)],
    )  # fmt: skip
    price = result.price
    assert price is not None and price.ceiling == pytest.approx(2 * 20.36 * 24)
    # 4 x 7.09 x 24 = 680.64 < 977.28; 8 x 5.6 x 24 = 1075.2 is dearer; p5 has no rate here
    assert [(f.instance_type, f.count) for f in price.cheaper] == [("ml.g5.12xlarge", 4)]
    assert price.lines()[1] == "ceiling: $977.28 if the job runs its whole max_run of 24 h"


def test_the_regions_price_table_is_read_once_a_month(account):
    _price_list(account, {"ml.g5.12xlarge": 7.09})
    first = account.run(_job(), price=True).price
    second = account.run(_job(), price=True).price  # no answer queued: from the user cache
    assert first is not None and first == second and first.ceiling == pytest.approx(7.09 * 24)


def test_a_denied_price_list_is_a_warning_naming_the_permission(account):
    account.stub("pricing", region="us-east-1").add_client_error(
        "get_products", "AccessDeniedException"
    )
    result = account.run(_job(), price=True)
    assert result.price is None
    assert _only(result, "warning").message == (
        "could not read the price: AccessDeniedException on pricing:GetProducts."
    )


# --- the public entry points ---------------------------------------------------------------

SCRIPT = str(__import__("pathlib").Path(__file__).parent / "fixtures" / "jobs" / "train.py")


@pytest.mark.sdk2_only
def test_a_factory_with_preflight_true_refuses_what_the_account_settles(account):
    import sagemaker

    import safe_estimators
    from safe_estimators import ConfigError

    account.aws("s3", "eu-west-1").create_bucket(
        Bucket="elsewhere", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"}
    )
    session = sagemaker.Session(boto_session=account.session, default_bucket="elsewhere")
    arguments = dict(
        entry_point=SCRIPT, role=f"arn:aws:iam::{ACCOUNT}:role/Nobody", py_version="py310",
        instance_type="ml.g5.2xlarge", framework_version="2.0", sagemaker_session=session,
        output_path="s3://elsewhere/models",
    )  # fmt: skip
    estimator = safe_estimators.pytorch(**arguments)  # offline by default: built
    with pytest.raises(ConfigError) as caught:
        safe_estimators.pytorch(**arguments, preflight=True)
    errors = {p.path: p.message for p in caught.value.problems if p.severity == "error"}
    assert set(errors) == {"output_path", "role"}
    assert "is in eu-west-1, the job in us-west-2" in errors["output_path"]

    result = safe_estimators.preflight(estimator)  # the same, on an estimator built before
    assert {p.path for p in result.errors} == {"output_path", "role"}
    assert result.region == REGION and result.account == ACCOUNT


def test_a_model_trainer_is_read_for_its_account_facing_values(account, monkeypatch, tmp_path):
    import safe_estimators
    from safe_estimators._targets.model_trainer import offline_trainer_session

    monkeypatch.setenv("SAGEMAKER_VALIDATE_ROLE", "false")
    s3 = account.aws("s3")
    s3.create_bucket(Bucket="data", CreateBucketConfiguration={"LocationConstraint": REGION})
    account.aws("s3", "eu-west-1").create_bucket(
        Bucket="elsewhere", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"}
    )
    (tmp_path / "train.py").write_text("print('hello')\n")
    trainer = safe_estimators.model_trainer(
        entry_point="train.py", source_dir=str(tmp_path), instance_type="ml.g5.2xlarge",
        framework_version="2.3.0", py_version="py311", role=f"arn:aws:iam::{ACCOUNT}:role/R",
        inputs={"train": "s3://data/empty"}, output_path="s3://elsewhere/out",
        use_spot_instances=True, max_wait=7200, max_run=3600,
        checkpoint_s3_uri="s3://data/checkpoints",
        sagemaker_session=offline_trainer_session(REGION),
    )  # fmt: skip
    job = from_trainer(trainer, REGION)
    assert (job.spot, job.max_run_seconds) == (True, 3600)
    assert [(loc.path, loc.kind) for loc in job.locations] == [
        ("output_path", "output"), ("checkpoint_s3_uri", "output"), ("inputs.train", "input")
    ]  # fmt: skip
    result = account.run(job)
    errors = {p.path: p.message for p in result.errors}
    assert set(errors) == {"inputs.train", "output_path", "role"}
    assert "s3://data/empty holds no object" in errors["inputs.train"]


def test_a_result_shows_as_a_table_in_a_notebook(account):
    account.aws("s3", "eu-west-1").create_bucket(
        Bucket="elsewhere", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"}
    )
    result = account.run(_job(OutputDataConfig={"S3OutputPath": "s3://elsewhere/models"}))
    table = result._repr_markdown_()
    assert table.splitlines()[0] == "| | path | problem | fix |"
    assert "| error | `output_path` | the bucket 'elsewhere'" in table
    assert str(result).startswith(f"preflight ({REGION}, account {ACCOUNT}): 1 error(s)")


# --- a fine-tuning trainer's job (sagemaker 3) ---------------------------------------------

FT_MODEL = "meta-textgeneration-llama-3-2-1b-instruct"
needs_trainers = pytest.mark.sdk3_only  # the fine-tuning trainers are sagemaker 3's


@pytest.fixture
def fine_tuning_region(monkeypatch):
    """The job's region for the trainers' offline checks; no recipes collection."""
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.delenv("SAFE_ESTIMATORS_RECIPES", raising=False)
    from safe_estimators._recipes import modes

    monkeypatch.setattr(modes, "recipes_folder", lambda: None)


@pytest.mark.both_sdks
@needs_trainers
def test_a_fine_tuning_job_is_checked_on_the_instances_plan_and_data_the_trainer_sends(
    account, fine_tuning_region
):
    from sagemaker.core.training.configs import TrainingJobCompute

    import safe_estimators
    from safe_estimators._preflight.job import from_fine_tuning

    s3 = account.aws("s3")
    s3.create_bucket(Bucket="data", CreateBucketConfiguration={"LocationConstraint": REGION})
    compute = TrainingJobCompute(
        instance_type="ml.p4d.24xlarge", instance_count=2, training_plan_arn=PLAN,
        keep_alive_period_in_seconds=600, enable_managed_spot_training=True,
    )  # fmt: skip
    checked = safe_estimators.sft_trainer(
        model=FT_MODEL, compute=compute, role=f"arn:aws:iam::{ACCOUNT}:role/Nobody",
        training_dataset="s3://data/sft/train.jsonl", s3_output_path="s3://data/out/",
    )  # fmt: skip
    job = from_fine_tuning(checked._job, REGION)
    # What the serverful path sends: the type, count, warm pool and plan, never spot.
    assert job.instances[0].path == "compute.instance_type"
    assert (job.instances[0].count, job.keep_alive_seconds, job.spot) == (2, 600, False)
    assert job.training_plan == PLAN
    _plan(account)
    result = account.run(job)
    errors = {p.path: p.message for p in result.errors}
    assert set(errors) == {"compute.instance_type", "training_dataset", "role"}
    assert "the training plan 'p5-week' reserves ml.p5.48xlarge" in errors["compute.instance_type"]
    assert "s3://data/sft/train.jsonl holds no object" in errors["training_dataset"]
    assert repr(checked).endswith("made=False)")  # the SDK's trainer (the hub) never made


@pytest.mark.both_sdks
@needs_trainers
def test_a_serverless_fine_tuning_job_and_its_spec_file_are_preflighted_without_the_hub(
    account, fine_tuning_region, tmp_path
):
    import yaml

    import safe_estimators

    account.aws("s3", "eu-west-1").create_bucket(
        Bucket="elsewhere", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"}
    )
    arguments = {
        "model": FT_MODEL, "model_package_group": "mine", "role":
        f"arn:aws:iam::{ACCOUNT}:role/Nobody", "s3_output_path": "s3://elsewhere/out/",
    }  # fmt: skip
    checked = safe_estimators.sft_trainer(**arguments)
    before = seen_calls()
    result = safe_estimators.preflight(checked, account.session)
    assert {p.path for p in result.errors} == {"role", "s3_output_path"}
    assert "is in eu-west-1, the job in us-west-2" in _message(result, "s3_output_path")
    assert repr(checked).endswith("made=False)")
    # No instance of the job's own: no quota is the job's (no Service Quotas call was made).
    made = {key for key, n in seen_calls().items() if n > before.get(key, 0)}
    assert ("iam", "GetRole") in made and not any(s == "service-quotas" for s, _ in made)
    spec = tmp_path / "job.yaml"
    spec.write_text(yaml.safe_dump({"target": "fine_tuning", "trainer": "SFT", **arguments}))
    from_file = safe_estimators.preflight(spec, account.session)
    assert [(p.path, p.message) for p in from_file.problems] == [
        (p.path, p.message) for p in result.problems
    ]
    assert from_file.source == str(spec)


def test_a_fine_tuning_jobs_vpc_and_plan_are_reported_where_the_trainer_takes_them(account):
    # A fine-tuning trainer takes them as networking= and compute=: the estimator's keywords
    # (subnets, training_plan) are no argument of it.
    _, subnet, group = _vpc(account)
    _plan(account, Status="Expired")
    job = Job(
        region=REGION,
        instances=(Instances("ml.p5.48xlarge", 1, "compute.instance_type"),),
        subnets=(subnet, "subnet-0123456789abcdef0"),
        security_groups=(group, "sg-0123456789abcdef0"),
        training_plan=PLAN,
        paths=(
            ("subnets", "networking.subnets"),
            ("security_group_ids", "networking.security_group_ids"),
            ("training_plan", "compute.training_plan_arn"),
        ),
    )
    errors = {p.path: p.message for p in account.run(job).errors}
    assert set(errors) == {
        "networking.subnets.0",
        "networking.subnets.1",
        "networking.security_group_ids.1",
        "compute.training_plan_arn",
    }
    assert "has no route to S3" in errors["networking.subnets.0"]
    assert "the training plan 'p5-week' is Expired" in errors["compute.training_plan_arn"]
    # and a check that could not finish is named there too
    assert job.written("subnets") == "networking.subnets"
    assert job.written("role") == "role"


@pytest.mark.both_sdks
@needs_trainers
def test_a_fine_tuning_trainers_networking_and_plan_are_read_at_their_own_paths(
    fine_tuning_region,
):
    from sagemaker.core.shapes import VpcConfig
    from sagemaker.core.training.configs import TrainingJobCompute

    import safe_estimators
    from safe_estimators._preflight.job import from_fine_tuning

    compute = TrainingJobCompute(
        instance_type="ml.p5.48xlarge", instance_count=1, training_plan_arn=PLAN
    )
    networking = VpcConfig(subnets=["subnet-0123456789abcdef0"], security_group_ids=["sg-1"])
    checked = safe_estimators.sft_trainer(
        model=FT_MODEL, compute=compute, role=f"arn:aws:iam::{ACCOUNT}:role/Nobody",
        networking=networking,
    )  # fmt: skip
    job = from_fine_tuning(checked._job, REGION)
    assert job.subnets == ("subnet-0123456789abcdef0",)
    written = ("subnets", "security_group_ids", "training_plan")
    assert tuple(job.written(path) for path in written) == (
        "networking.subnets",
        "networking.security_group_ids",
        "compute.training_plan_arn",
    )


def _message(result: PreflightResult, path: str) -> str:
    return next(p.message for p in result.problems if p.path == path)


# --- the guard and the time bound -----------------------------------------------------------


def test_the_guard_refuses_a_write_before_it_is_sent(account):
    s3 = account.aws("s3")
    s3.create_bucket(Bucket="kept", CreateBucketConfiguration={"LocationConstraint": REGION})
    with pytest.raises(ReadOnlyViolation, match="s3:PutObject is not a read-only call"):
        account.clients.get("s3").put_object(Bucket="kept", Key="x", Body=b"x")
    assert s3.list_objects_v2(Bucket="kept")["KeyCount"] == 0


def test_the_guard_sees_stubbed_calls_too(account):
    stub = account.stub("iam", "simulation")
    stub.add_response("delete_role", {})
    with pytest.raises(ReadOnlyViolation, match="iam:DeleteRole"):
        account.clients.get("iam", "simulation").delete_role(RoleName="x")


def test_a_check_that_does_not_finish_in_time_is_named(account):
    release = threading.Event()

    def stuck(ctx):
        release.wait()
        return []

    job = from_request(_job(), REGION)
    try:
        problems, unfinished, _, _ = run(
            job, account.clients, time_limit=0.0, checks=[("slow check", "x", stuck)]
        )
    finally:
        release.set()
    assert unfinished == ["slow check"]
    assert "did not finish within 0 s: slow check" in problems[-1].message


def test_every_call_was_declared():
    """Last in the file: every call the tests above made went through the guard, and each was
    declared (the guard refused the two undeclared calls made on purpose above)."""
    seen = seen_calls()
    made = {key: n - _SEEN_BEFORE.get(key, 0) for key, n in seen.items()}
    made = {key: n for key, n in made.items() if n}
    assert set(made) - ALLOWED == {("s3", "PutObject"), ("iam", "DeleteRole")}
    assert len(set(made) & ALLOWED) >= 15, sorted(made)
