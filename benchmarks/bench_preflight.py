"""How long does a preflight take? Run by hand: ``python benchmarks/bench_preflight.py [--runs 3]
[--delay 0.1]``.

A typical job (2 x ml.g5.12xlarge on spot-less on-demand capacity, a role of the account, an
input channel, output and checkpoints in one bucket, a VPC with a subnet and a security group,
an output KMS key, a custom image in the account's ECR, one other job running) is checked
against moto's server on 127.0.0.1, with botocore's Stubber for Service Quotas and the IAM
policy simulation (which moto does not emulate). Every call is made to wait ``--delay`` seconds
(100 ms by default) before it is answered: a hook on each client's ``before-call``, so the
emulated and the stubbed calls are delayed alike, as a remote API would be.

Prints the number of calls and the median wall time of the preflight as it runs (checks and
calls concurrent) next to the same calls made one after another (every pool replaced by one
that runs each task at once, in the caller's thread), the same with a new boto3 session (which
parses botocore's service models during the run), and with no delay (the cost of the
preflight's own work and moto's). The quota table is listed on every run
(the user cache is emptied). Target (issue 36): within 1.5 s at 100 ms a call. This is a
measurement, not a test: nothing here asserts a threshold.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

REGION = "us-west-2"
ACCOUNT = "123456789012"  # moto's


class Inline:
    """A stand-in for ThreadPoolExecutor that runs each task at once in the caller's thread."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def submit(self, function: Any, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(function(*args, **kwargs))
        except BaseException as exc:
            future.set_exception(exc)
        return future

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        pass


def _account(in_process: bool) -> dict[str, Any]:
    """Set up the emulated account; return the job's CreateTrainingJob request."""
    import boto3

    session = boto3.Session(region_name=REGION)
    iam = session.client("iam")
    trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
             "Principal": {"Service": "sagemaker.amazonaws.com"}}]}  # fmt: skip
    role = iam.create_role(RoleName="Bench", AssumeRolePolicyDocument=json.dumps(trust))
    s3 = session.client("s3")
    s3.create_bucket(Bucket="bench", CreateBucketConfiguration={"LocationConstraint": REGION})
    s3.put_object(Bucket="bench", Key="data/train/part-0", Body=b"x")
    ec2 = session.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.1.0/24")["Subnet"]["SubnetId"]
    group = ec2.create_security_group(GroupName="g", Description="g", VpcId=vpc)["GroupId"]
    table = ec2.describe_route_tables(Filters=[{"Name": "vpc-id", "Values": [vpc]}])
    ec2.create_vpc_endpoint(
        VpcId=vpc, ServiceName=f"com.amazonaws.{REGION}.s3", VpcEndpointType="Gateway",
        RouteTableIds=[table["RouteTables"][0]["RouteTableId"]],
    )  # fmt: skip
    key = session.client("kms").create_key()["KeyMetadata"]["Arn"]
    ecr = session.client("ecr")
    ecr.create_repository(repositoryName="trainer")
    manifest = json.dumps({"schemaVersion": 2, "mediaType":
                           "application/vnd.docker.distribution.manifest.v2+json",
                           "config": {}, "layers": []})  # fmt: skip
    ecr.put_image(repositoryName="trainer", imageManifest=manifest, imageTag="v1")
    if in_process:  # a running job (moto completes jobs at once: its state is set in place)
        _running_job(session, role["Role"]["Arn"])
    image = f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/trainer:v1"
    return {
        "RoleArn": role["Role"]["Arn"],
        "AlgorithmSpecification": {"TrainingImage": image, "TrainingInputMode": "File"},
        "ResourceConfig": {"InstanceType": "ml.g5.12xlarge", "InstanceCount": 2,
                           "VolumeSizeInGB": 30},
        "InputDataConfig": [{"ChannelName": "train", "DataSource": {"S3DataSource": {
            "S3DataType": "S3Prefix", "S3Uri": "s3://bench/data/train"}}}],
        "OutputDataConfig": {"S3OutputPath": "s3://bench/out", "KmsKeyId": key},
        "CheckpointConfig": {"S3Uri": "s3://bench/checkpoints"},
        "VpcConfig": {"Subnets": [subnet], "SecurityGroupIds": [group]},
        "StoppingCondition": {"MaxRuntimeInSeconds": 86400},
    }  # fmt: skip


def _running_job(session: Any, role: str) -> None:
    sagemaker = session.client("sagemaker")
    sagemaker.create_training_job(
        TrainingJobName="running", RoleArn=role,
        AlgorithmSpecification={"TrainingImage": "img", "TrainingInputMode": "File"},
        OutputDataConfig={"S3OutputPath": "s3://bench/out"},
        ResourceConfig={"InstanceType": "ml.g5.12xlarge", "InstanceCount": 1, "VolumeSizeInGB": 30},
        StoppingCondition={"MaxRuntimeInSeconds": 3600},
    )  # fmt: skip
    from moto.sagemaker.models import sagemaker_backends

    sagemaker_backends[ACCOUNT][REGION].training_jobs["running"].training_job_status = "InProgress"


def _clients(delay: float, session: Any) -> Any:
    """Guarded clients whose every call waits ``delay`` seconds, with the stubs moto lacks."""
    from botocore.stub import Stubber

    from safe_estimators._preflight.guard import Clients

    class Delayed(Clients):
        def get(self, service: str, lane: str = "", region: str | None = None) -> Any:
            fresh = (service, lane, region or self.region) not in self._clients
            client = super().get(service, lane, region)
            if fresh:
                client.meta.events.register_first("before-call.*.*", lambda **_: time.sleep(delay))
                stubbed = {("service-quotas", ""): _quota_stub, ("iam", "simulation"): _simulation}
                if (service, lane) in stubbed:
                    stub = Stubber(client)
                    stubbed[(service, lane)](stub)
                    stub.activate()
            return client

    return Delayed(session, REGION)


def _quota_stub(stub: Any) -> None:
    name = "ml.g5.12xlarge for training job usage"
    every = "Number of instances across all training jobs"
    stub.add_response("list_aws_default_service_quotas", {"Quotas": [
        {"QuotaName": name, "QuotaCode": "L-G512XL01", "Value": 0.0},
        {"QuotaName": every, "QuotaCode": "L-00C91CB5", "Value": 4.0}]})  # fmt: skip
    stub.add_response("get_service_quota", {"Quota": {"QuotaCode": "L-G512XL01", "Value": 8.0}})
    stub.add_response("get_service_quota", {"Quota": {"QuotaCode": "L-00C91CB5", "Value": 20.0}})


def _simulation(stub: Any) -> None:
    stub.add_response("simulate_principal_policy", {"EvaluationResults": []})


def _once(
    request: dict[str, Any], delay: float, sequential: bool, session: Any = None
) -> tuple[float, int, list[Any]]:
    """One preflight; ``session``: a boto3 session whose service models are parsed already
    (None: a new one, which parses them during the run)."""
    import boto3

    from safe_estimators._preflight import guard, runner
    from safe_estimators._preflight.job import from_request

    clients = _clients(delay, session or boto3.Session(region_name=REGION))
    before = sum(guard.seen_calls().values())
    saved = runner.ThreadPoolExecutor
    if sequential:
        runner.ThreadPoolExecutor = Inline  # type: ignore[misc,assignment]
    try:
        os.environ["SAFE_ESTIMATORS_CACHE_DIR"] = tempfile.mkdtemp()  # the listing every time
        start = time.perf_counter()
        problems, unfinished, _, _ = runner.run(from_request(request, REGION), clients)
        elapsed = time.perf_counter() - start
    finally:
        runner.ThreadPoolExecutor = saved  # type: ignore[misc]
    return elapsed, sum(guard.seen_calls().values()) - before, [*problems, *unfinished]


def _emulator(kind: str) -> Any:
    """Start moto's server on 127.0.0.1; set AWS_ENDPOINT_URL; return what stops it."""
    import logging
    import socket
    import subprocess
    import urllib.request

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    if kind == "thread":
        from moto.server import ThreadedMotoServer

        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        host, port = server.get_host_and_port()
        os.environ["AWS_ENDPOINT_URL"] = f"http://{host}:{port}"
        return server.stop
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    os.environ["AWS_ENDPOINT_URL"] = f"http://127.0.0.1:{port}"
    for _ in range(300):  # up to 30 s to start
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/moto-api/").close()
            break
        except OSError:
            time.sleep(0.1)

    def stop() -> None:
        process.terminate()
        process.wait(10)

    return stop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--delay", type=float, default=0.1, help="seconds added to every call")
    parser.add_argument(
        "--emulator",
        choices=("process", "thread"),
        default="process",
        help="moto's server in its own process (default: its work does not compete with the "
        "preflight's threads for this interpreter's lock), or in this one (then one job is "
        "also running, whose state is set in moto's backend)",
    )
    args = parser.parse_args()
    os.environ.update(
        AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_DEFAULT_REGION=REGION,
        AWS_EC2_METADATA_DISABLED="true",
    )  # fmt: skip
    stop = _emulator(args.emulator)
    try:
        import boto3

        request = _account(args.emulator == "thread")
        warm = boto3.Session(region_name=REGION)
        _once(request, 0.0, False, warm)  # the session's service models parsed once
        figures: dict[str, list[float]] = {
            "concurrent": [], "sequential": [], "concurrent, models parsed in the run": [],
            "concurrent, 0 ms added (our own cost)": [],
        }  # fmt: skip
        calls = 0
        for _ in range(args.runs):  # interleaved, so all see the same machine load
            for mode in figures:
                delay = 0.0 if "0 ms" in mode else args.delay
                elapsed, made, found = _once(
                    request, delay, mode == "sequential", None if "parsed" in mode else warm
                )
                assert not found, found  # the account is ready: nothing to report
                figures[mode].append(elapsed)
                calls = max(calls, made)
    finally:
        stop()
    where = "this process" if args.emulator == "thread" else "its own process"
    print(f"emulator: moto's server in {where}")
    print(f"preflight of a typical job: {calls} calls, {args.delay * 1000:g} ms added to each, "
          f"median of {args.runs} runs")  # fmt: skip
    for mode, times in figures.items():
        print(f"  {mode:<37} {statistics.median(times):6.3f} s wall   (runs: "
              + ", ".join(f"{t:.3f}" for t in times) + ")")  # fmt: skip
    print(f"  target: concurrent within 1.5 s; load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} CPUs")  # fmt: skip


if __name__ == "__main__":
    main()
