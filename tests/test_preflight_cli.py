"""The preflight through the command line: `preflight SPEC`, `submit` (preflight first, unless
--no-preflight) and `plan --price`, against moto's server on 127.0.0.1, with botocore's Stubber
for what moto does not emulate (Service Quotas' sagemaker quotas, the Price List)."""

from __future__ import annotations

import json
import logging
import shutil
import urllib.request
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from conftest import SDK3

from safe_estimators._cli import main
from safe_estimators._preflight import guard
from safe_estimators._spec_files.read import read_spec_data

EXAMPLES = Path(__file__).parent.parent / "examples"
REGION = "us-west-2"
ROLE = "arn:aws:iam::111122223333:role/SageMakerRole"  # another account's: not looked up
# The job each lane builds by default: the estimator on sagemaker 2, a ModelTrainer on 3.
EXAMPLE = EXAMPLES / (
    "model-trainer/torchrun-fsdp.yaml" if SDK3 else "compiler-single-gpu/job.yaml"
)


@pytest.fixture(autouse=True)
def _restore_logging():
    previous = logging.root.manager.disable
    yield
    logging.disable(previous)


@pytest.fixture(scope="module")
def endpoint():
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def _product(instance_type: str, rate: float) -> str:
    """A Price List product as GetProducts returns it (a JSON document in a string)."""
    return json.dumps(
        {
            "product": {
                "productFamily": "ML Instance",
                "attributes": {"instanceName": instance_type, "regionCode": REGION,
                               "component": "Training"},
            },
            "terms": {"OnDemand": {"T.JRTCKXETXF": {"priceDimensions": {"T.JRTCKXETXF.6YS6EN2CT7": {
                "unit": "Hrs", "pricePerUnit": {"USD": f"{rate:.4f}"}}}}}},
        }
    )  # fmt: skip


RATES = {
    "ml.p4d.24xlarge": 37.688,
    "ml.g5.12xlarge": 7.09,
    "ml.g5.48xlarge": 20.36,
    "ml.g6.12xlarge": 5.65,
    "ml.p5e.48xlarge": 80.0,
}


@pytest.fixture
def stubbed(monkeypatch, endpoint, tmp_path):
    """Every preflight client talks to moto; Service Quotas lists no sagemaker quota and the
    Price List answers with ``RATES`` (stubs, on the clients the preflight makes)."""
    request = urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST")
    urllib.request.urlopen(request).close()
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setenv("SAFE_ESTIMATORS_CACHE_DIR", str(tmp_path / "cache"))
    if SDK3:  # ModelTrainer's Session: the bucket from the SDK config (else STS, not moto's),
        config = tmp_path / "sdk-config.yaml"  # and no IAM look-up of the role
        config.write_text(
            "SchemaVersion: '1.0'\nSageMaker:\n  PythonSDK:\n    Modules:\n"
            "      TelemetryOptOut: true\n      Session:\n        DefaultS3Bucket: here\n"
        )
        monkeypatch.setenv("SAGEMAKER_USER_CONFIG_OVERRIDE", str(config))
        monkeypatch.setenv("SAGEMAKER_VALIDATE_ROLE", "false")
    stubs: list[Stubber] = []
    original = guard.Clients.get

    def get(self: guard.Clients, service: str, lane: str = "", region: str | None = None) -> Any:
        fresh = (service, lane, region or self.region) not in self._clients
        client = original(self, service, lane, region)
        if fresh and service == "service-quotas":
            stub = Stubber(client)
            stub.add_response("list_aws_default_service_quotas", {"Quotas": []})
            stub.activate()
            stubs.append(stub)
        if fresh and service == "pricing":
            stub = Stubber(client)
            filters = [
                {"Type": "TERM_MATCH", "Field": "regionCode", "Value": REGION},
                {"Type": "TERM_MATCH", "Field": "component", "Value": "Training"},
            ]
            stub.add_response(
                "get_products",
                {"PriceList": [_product(t, r) for t, r in RATES.items()]},
                {"ServiceCode": "AmazonSageMaker", "FormatVersion": "aws_v1",
                 "MaxResults": 100, "Filters": filters},
            )  # fmt: skip
            stub.activate()
            stubs.append(stub)
        return client

    monkeypatch.setattr(guard.Clients, "get", get)
    return stubs


def _spec(folder: Path, **changes: Any) -> Path:
    data, problems = read_spec_data(EXAMPLE)
    assert data is not None, problems
    shutil.copytree(EXAMPLE.parent, folder / "code")
    data.update(source_dir="code", role=ROLE, **changes)
    data.pop("inputs", None)
    if SDK3:  # the estimator's code_location; ModelTrainer uploads the code beside the output
        data.pop("code_location", None)
    spec = folder / "job.json"
    spec.write_text(json.dumps(data, indent=2))
    return spec


def _buckets() -> None:
    s3 = boto3.Session(region_name=REGION).client("s3")
    s3.create_bucket(Bucket="here", CreateBucketConfiguration={"LocationConstraint": REGION})
    boto3.Session(region_name="eu-west-1").client("s3").create_bucket(
        Bucket="far-away", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"}
    )


def test_preflight_refuses_a_bucket_in_another_region_in_every_format(stubbed, tmp_path, capsys):
    _buckets()
    spec = _spec(tmp_path, output_path="s3://far-away/models", code_location="s3://here/code")
    assert main(["preflight", str(spec)]) == 1
    out = capsys.readouterr().out
    assert f"{spec}:" in out and "output_path: the bucket 'far-away'" in out
    assert "is in eu-west-1, the job in us-west-2" in out

    assert main(["preflight", str(spec), "--json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert not document["ok"]
    errors = [p for p in document["problems"] if p["severity"] == "error"]
    assert [(p["path"], p["rule"]) for p in errors] == [("output_path", "preflight")]
    assert errors[0]["line"] is not None  # placed where the spec writes output_path

    assert main(["preflight", str(spec), "--format", "sarif"]) == 1
    results = json.loads(capsys.readouterr().out)["runs"][0]["results"]
    assert any(r["ruleId"] == "preflight" and r["level"] == "error" for r in results)


def test_preflight_passes_a_job_whose_account_is_ready(stubbed, tmp_path, capsys):
    _buckets()
    spec = _spec(tmp_path, output_path="s3://here/models", code_location="s3://here/code")
    assert main(["preflight", str(spec)]) == 0
    out = capsys.readouterr().out
    assert f"{spec}: preflight passed (us-west-2)" in out
    assert "role: warning: is in account 111122223333" in out  # not ours to look at


def test_preflight_runs_after_the_offline_checks(stubbed, tmp_path, capsys):
    spec = _spec(tmp_path, volume_size=-5)
    before = guard.seen_calls()
    assert main(["preflight", str(spec), "--json"]) == 1
    problems = json.loads(capsys.readouterr().out)["problems"]
    assert [p["path"] for p in problems] == ["volume_size"]
    assert guard.seen_calls() == before  # the account was not asked


def _jobs() -> list[str]:
    client = boto3.Session(region_name=REGION).client("sagemaker")
    return [s["TrainingJobName"] for s in client.list_training_jobs()["TrainingJobSummaries"]]


def test_submit_runs_the_preflight_first_and_sends_nothing_it_refuses(stubbed, tmp_path, capsys):
    _buckets()
    spec = _spec(tmp_path, output_path="s3://far-away/models", code_location="s3://here/code")
    assert main(["submit", str(spec)]) == 1
    assert "output_path: the bucket 'far-away'" in capsys.readouterr().out
    assert _jobs() == []

    assert main(["submit", str(spec), "--no-preflight"]) == 0
    name = capsys.readouterr().out.strip()
    assert _jobs() == [name]


def test_submit_prints_the_preflights_warnings_apart_from_the_job_name(
    stubbed, tmp_path, capsys
):
    _buckets()
    spec = _spec(tmp_path, output_path="s3://here/models", code_location="s3://here/code")
    assert main(["submit", str(spec)]) == 0
    captured = capsys.readouterr()
    assert _jobs() == [captured.out.strip()]
    assert "role: warning: is in account 111122223333" in captured.err


# The numbers are memory-fit's, an SMP v1 job (the estimator's); the price itself is read for
# any job: test_plan_price_that_cannot_be_read_is_a_warning_and_the_plan_stands runs on both.
@pytest.mark.sdk2_only
def test_plan_price_shows_the_ceiling_and_cheaper_types_that_fit(stubbed, capsys):
    spec = EXAMPLES / "memory-fit" / "job.yaml"
    assert main(["plan", str(spec), "--price"]) == 0
    out = capsys.readouterr().out
    assert (
        "price: 1 x ml.p4d.24xlarge at $37.69/h on demand for training in us-west-2" in out
    )
    assert "ceiling: $904.51 if the job runs its whole max_run of 24 h" in out
    # 2 x 5.65 x 24 = 271.20; 2 x 7.09 x 24 = 340.32; 1 x 20.36 x 24 = 488.64
    cheaper = [line for line in out.splitlines() if line.startswith("cheaper fit:")]
    assert cheaper == [
        "cheaper fit: 2 x ml.g6.12xlarge at $5.65/h: ceiling $271.20",
        "cheaper fit: 2 x ml.g5.12xlarge at $7.09/h: ceiling $340.32",
        "cheaper fit: 1 x ml.g5.48xlarge at $20.36/h: ceiling $488.64",
    ]
    for stub in stubbed:
        stub.assert_no_pending_responses()


@pytest.mark.sdk2_only  # memory-fit's numbers, as above
def test_plan_price_in_json_and_plan_without_it_asks_nothing(stubbed, capsys):
    spec = EXAMPLES / "memory-fit" / "job.yaml"
    before = guard.seen_calls().get(("pricing", "GetProducts"), 0)
    assert main(["plan", str(spec), "--json"]) == 0
    assert "price" not in json.loads(capsys.readouterr().out)
    assert guard.seen_calls().get(("pricing", "GetProducts"), 0) == before
    assert main(["plan", str(spec), "--json", "--price"]) == 0
    price = json.loads(capsys.readouterr().out)["price"]
    assert price["ceiling"] == pytest.approx(904.512)
    cheaper = [f["instance_type"] for f in price["cheaper"]]
    assert cheaper == ["ml.g6.12xlarge", "ml.g5.12xlarge", "ml.g5.48xlarge"]


def test_plan_price_that_cannot_be_read_is_a_warning_and_the_plan_stands(
    monkeypatch, capsys, tmp_path
):
    monkeypatch.setenv("SAFE_ESTIMATORS_CACHE_DIR", str(tmp_path / "cache"))  # nothing cached
    original = guard.Clients.get

    def get(self: guard.Clients, service: str, lane: str = "", region: str | None = None) -> Any:
        fresh = (service, lane, region or self.region) not in self._clients
        client = original(self, service, lane, region)
        if fresh and service == "pricing":
            stub = Stubber(client)
            stub.add_client_error("get_products", "AccessDeniedException")
            stub.activate()
        return client

    monkeypatch.setattr(guard.Clients, "get", get)
    monkeypatch.setenv("AWS_REGION", REGION)
    spec = EXAMPLE if SDK3 else EXAMPLES / "memory-fit" / "job.yaml"
    assert main(["plan", str(spec), "--price"]) == 0
    out = capsys.readouterr().out
    assert "CreateTrainingJob request:" in out
    assert (
        "instance_type: warning: could not read the price: AccessDeniedException on "
        "pricing:GetProducts." in out
    )
