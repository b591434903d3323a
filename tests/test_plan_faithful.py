"""`plan` shows exactly what `submit` sends: the CreateTrainingJob request, checked against boto3.

(`submit --no-preflight` here: the account checks have their own tests, test_preflight*.py.)

A job is submitted through the CLI to moto's server on 127.0.0.1; a botocore event hook records
the CreateTrainingJob parameters boto3 actually sends, and they must equal `plan --json`'s
"request" once the job name (a timestamp) is set aside. The plan is computed for the same
region, role and bucket, so even the S3 location of the uploaded code must agree.
"""

from __future__ import annotations

import copy
import json
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import SDK3

from safe_estimators._cli import main
from safe_estimators._spec_files.read import read_spec_data

EXAMPLES = Path(__file__).parent.parent / "examples"
REGION = "us-west-2"
BUCKET = "faithful-plan-bucket"
ROLE = "arn:aws:iam::123456789012:role/SageMakerRole"
JOB = "<job name>"
# Built as the estimator on sagemaker 2 and as a ModelTrainer on 3 (each lane's default target).
PORTABLE = EXAMPLES / "model-trainer" / "torchrun-fsdp.yaml"


@pytest.fixture(autouse=True)
def _restore_logging():
    """main() silences logging for the process, as a command should; give it back to pytest."""
    previous = logging.root.manager.disable
    yield
    logging.disable(previous)


@pytest.fixture(scope="module")
def moto_endpoint():
    """moto's server on 127.0.0.1 (the only host pytest-socket lets through), on a free port,
    with the bucket the specs name."""
    import boto3
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    s3 = boto3.Session(region_name=REGION).client("s3", endpoint_url=endpoint)
    s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
    yield endpoint
    server.stop()


@pytest.fixture
def aws(moto_endpoint, monkeypatch):
    """A shell set up for submit: every boto3 client talks to moto, in one region.

    plan runs in the same environment and must ignore AWS_ENDPOINT_URL: it calls nothing.
    """
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_endpoint)
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    return moto_endpoint


@pytest.fixture
def sent(monkeypatch) -> list[dict[str, Any]]:
    """The CreateTrainingJob parameters boto3 sends, recorded by a botocore event hook.

    `submit` makes its own `boto3.Session()`; every session made during the test registers the
    hook on its event system, so the recording sees the real client call and nothing else
    changes: the parameters still go through botocore's validation and serialisation to moto.
    """
    import boto3

    recorded: list[dict[str, Any]] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        recorded.append(copy.deepcopy(params))

    class RecordingSession(boto3.Session):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.events.register("before-parameter-build.sagemaker.CreateTrainingJob", record)

    monkeypatch.setattr(boto3, "Session", RecordingSession)
    return recorded


def _spec_for_account(example: Path, folder: Path) -> Path:
    """The example as a JSON spec with a role and bucket, so plan and submit agree on both."""
    data, problems = read_spec_data(example)
    assert data is not None, problems
    # The code is copied beside the spec: a spec's paths must stay inside its project.
    shutil.copytree(example.parent / data.get("source_dir", "."), folder / "code")
    data.update(source_dir="code", role=ROLE, output_path=f"s3://{BUCKET}/output/")
    if not SDK3:  # the estimator's (sagemaker 2's default target); ModelTrainer has none
        data["code_location"] = f"s3://{BUCKET}/code"
    spec = folder / f"{example.parent.name}.json"
    spec.write_text(json.dumps(data, indent=2))
    return spec


def _without_job_name(request: dict[str, Any]) -> Any:
    """The request with its timestamped job name replaced wherever it appears."""
    name = request["TrainingJobName"]
    return json.loads(json.dumps(request, default=str).replace(name, JOB))


# The estimator's request; ModelTrainer's is checked by
# test_submit_sends_exactly_the_planned_model_trainer_request.
@pytest.mark.sdk2_only
@pytest.mark.parametrize(
    "example",
    [
        EXAMPLES / "compiler-multi-node" / "job.toml",
        EXAMPLES / "model-parallel-fp16" / "job.yaml",
        EXAMPLES / "heterogeneous-smddp" / "job.yaml",
    ],
    ids=lambda p: p.parent.name,
)
def test_submit_sends_exactly_the_planned_request(example, aws, sent, tmp_path, capsys):
    spec = _spec_for_account(example, tmp_path)
    assert main(["plan", str(spec), "--json"]) == 0, capsys.readouterr()
    planned = json.loads(capsys.readouterr().out)
    assert sent == [], "plan sends nothing"

    assert main(["submit", str(spec), "--no-preflight"]) == 0, capsys.readouterr()
    submitted_name = capsys.readouterr().out.strip()

    assert len(sent) == 1, "submit calls CreateTrainingJob once"
    actual = sent[0]
    assert actual["TrainingJobName"] == submitted_name
    assert planned["placeholders"] == []  # region, role and bucket are the real ones
    planned_request = _without_job_name(planned["request"])
    actual_request = _without_job_name(actual)
    assert planned_request == actual_request
    # The comparison is not vacuous: the request carries the job's substance.
    hyperparameters = actual_request["HyperParameters"]
    assert hyperparameters["sagemaker_submit_directory"] == json.dumps(
        f"s3://{BUCKET}/code/{JOB}/source/sourcedir.tar.gz"
    )
    resources, written = actual_request["ResourceConfig"], json.loads(spec.read_text())
    if "instance_groups" in written:  # a heterogeneous cluster: groups, no type or count
        assert "InstanceType" not in resources and "InstanceCount" not in resources
        assert [g["InstanceType"] for g in resources["InstanceGroups"]] == [
            g["instance_type"] for g in written["instance_groups"]
        ]
    else:
        assert resources["InstanceType"] == written["instance_type"]


@pytest.mark.sdk2_only  # ModelTrainer's: the model_trainer_request test below
def test_submitted_job_reaches_the_endpoint(aws, sent, tmp_path, capsys):
    """moto really received the job (the hook recorded a call that was then sent)."""
    import boto3

    spec = _spec_for_account(EXAMPLES / "compiler-single-gpu" / "job.yaml", tmp_path)
    assert main(["submit", str(spec), "--no-preflight"]) == 0, capsys.readouterr()
    name = capsys.readouterr().out.strip()
    assert name.startswith("bert-mlm-trcomp-")  # the spec's base_job_name

    job = boto3.Session().client("sagemaker").describe_training_job(TrainingJobName=name)
    assert job["ResourceConfig"]["InstanceType"] == "ml.p3.2xlarge"
    assert job["RoleArn"] == ROLE
    assert sent[0]["TrainingJobName"] == name


@pytest.mark.parametrize(
    "example",
    [pytest.param(EXAMPLES / "compiler-multi-gpu" / "job.yaml", marks=pytest.mark.sdk2_only),
     PORTABLE],
    ids=lambda p: p.parent.name,
)  # fmt: skip
def test_plan_opens_no_socket_at_all(example, capsys, monkeypatch):
    """With every socket refused (not even 127.0.0.1), plan works and tries none: it is offline."""
    import pytest_socket
    import urllib3  # noqa: F401  # its import probes IPv6 support with a local socket; not a call

    attempts: list[tuple[Any, ...]] = []

    class RecordedAttempt(pytest_socket.SocketBlockedError):
        # Recorded even if some library catches the error and carries on.
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            attempts.append(args)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(pytest_socket, "SocketBlockedError", RecordedAttempt)
    pytest_socket.disable_socket()
    try:
        code = main(["plan", str(example), "--json"])
    finally:
        pytest_socket.enable_socket()
    captured = capsys.readouterr()
    assert code == 0, captured
    assert attempts == []
    request = json.loads(captured.out)["request"]
    written, _ = read_spec_data(example)
    assert written is not None
    assert request["ResourceConfig"]["InstanceType"] == written["instance_type"]


LANE_EXAMPLES = pytest.mark.parametrize(
    "example",
    [pytest.param(EXAMPLES / "compiler-single-gpu" / "job.yaml", marks=pytest.mark.sdk2_only),
     PORTABLE],
    ids=lambda p: p.parent.name,
)  # fmt: skip


@LANE_EXAMPLES
@pytest.mark.parametrize(
    ("option", "value"),
    [("volume_size", -5), ("base_job_name", "my_job.v1"), ("checkpoint_s3_uri", "my-bucket/x")],
)
def test_submit_refuses_what_validate_refuses_and_sends_nothing(
    example, option, value, aws, sent, tmp_path, capsys
):
    from safe_estimators._commands.validate import validate_file

    spec = _spec_for_account(example, tmp_path)
    data = json.loads(spec.read_text())
    data[option] = value
    spec.write_text(json.dumps(data))
    expected = [p for p in validate_file(spec) if p.severity == "error"]
    assert [p.path for p in expected] == [option]

    assert main(["submit", str(spec), "--json", "--no-preflight"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert [(p["path"], p["message"]) for p in document["problems"]] == [
        (p.path, p.message) for p in expected
    ]
    assert sent == []


# ModelTrainer sends the organisation's tags only when the job has none (sagemaker 3's
# model_trainer.py: `if not self.tags`), so only the estimator's request can reach 51.
@pytest.mark.sdk2_only
def test_submit_checks_the_request_it_sends(aws, sent, tmp_path, capsys, monkeypatch):
    """A limit broken by the organisation's config is refused before CreateTrainingJob."""
    import yaml

    config = tmp_path / "config.yaml"
    tags = [{"Key": f"org{i}", "Value": "x"} for i in range(50)]
    config.write_text(
        yaml.safe_dump({"SchemaVersion": "1.0", "SageMaker": {"TrainingJob": {"Tags": tags}}})
    )
    monkeypatch.setenv("SAGEMAKER_USER_CONFIG_OVERRIDE", str(config))
    monkeypatch.setenv("SAGEMAKER_ADMIN_CONFIG_OVERRIDE", str(config))
    spec = _spec_for_account(EXAMPLES / "compiler-single-gpu" / "job.yaml", tmp_path)
    data = json.loads(spec.read_text())
    data["tags"] = {"team": "nlp"}  # one of the job's own: 51 with the organisation's 50
    spec.write_text(json.dumps(data))
    assert main(["submit", str(spec), "--no-preflight"]) == 1
    out = capsys.readouterr().out
    assert "request.Tags: has 51 entries; the maximum is 50" in out
    assert sent == []  # refused before the parameters were built


@pytest.mark.sdk2_only  # sagemaker_region is a hyperparameter only the estimator sends
def test_submit_honours_aws_region_like_plan(aws, sent, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    spec = _spec_for_account(EXAMPLES / "compiler-single-gpu" / "job.yaml", tmp_path)
    assert main(["plan", str(spec), "--json"]) == 0
    planned = json.loads(capsys.readouterr().out)
    assert main(["submit", str(spec), "--no-preflight"]) == 0, capsys.readouterr()
    assert planned["request"]["HyperParameters"]["sagemaker_region"] == json.dumps(REGION)
    assert sent[0]["HyperParameters"]["sagemaker_region"] == json.dumps(REGION)


@pytest.mark.both_sdks
@pytest.mark.parametrize(
    "example", ["torchrun-fsdp.yaml", "smp-v2.yaml", "qlora.yaml"], ids=lambda n: n.split(".")[0]
)
def test_submit_sends_exactly_the_planned_model_trainer_request(
    example, aws, sent, tmp_path, capsys, monkeypatch
):
    """The ModelTrainer target: submit runs ModelTrainer.train() against moto, plan the same
    train() offline; the requests are equal once the job name (a timestamp) is set aside."""
    import boto3

    monkeypatch.setenv("SAGEMAKER_VALIDATE_ROLE", "false")  # moto's IAM does not know the role
    # The SDK's default bucket from its config, as an organisation sets it: ModelTrainer's
    # Session would otherwise ask STS on its regional endpoint (not moto's) for the account.
    config = tmp_path / "sdk-config.yaml"
    config.write_text(
        "SchemaVersion: '1.0'\nSageMaker:\n  PythonSDK:\n    Modules:\n"
        f"      TelemetryOptOut: true\n      Session:\n        DefaultS3Bucket: {BUCKET}\n"
    )
    monkeypatch.setenv("SAGEMAKER_USER_CONFIG_OVERRIDE", str(config))
    example_path = EXAMPLES / "model-trainer" / example
    data, problems = read_spec_data(example_path)
    assert data is not None, problems
    shutil.copytree(example_path.parent / data["source_dir"], tmp_path / "code")
    data.update(
        source_dir="code", role=ROLE, output_path=f"s3://{BUCKET}/output/", target="model_trainer"
    )
    spec = tmp_path / "job.json"
    spec.write_text(json.dumps(data))

    assert main(["plan", str(spec), "--json"]) == 0, capsys.readouterr()
    planned = json.loads(capsys.readouterr().out)
    assert sent == [], "plan sends nothing"
    assert main(["submit", str(spec), "--no-preflight"]) == 0, capsys.readouterr()
    name = capsys.readouterr().out.strip()
    assert len(sent) == 1 and sent[0]["TrainingJobName"] == name

    assert planned["placeholders"] == []  # region, role and bucket are the real ones
    assert _without_job_name(planned["request"]) == _without_job_name(sent[0])
    code = sent[0]["InputDataConfig"][0]["DataSource"]["S3DataSource"]["S3Uri"]
    assert code.startswith(f"s3://{BUCKET}/")
    assert sent[0]["StoppingCondition"]["MaxRuntimeInSeconds"] == data.get("max_run", 86400)
    assert [c["ChannelName"] for c in sent[0]["InputDataConfig"]] == ["code", "sm_drivers"]
    job = boto3.Session().client("sagemaker").describe_training_job(TrainingJobName=name)
    assert job["ResourceConfig"]["InstanceType"] == data["instance_type"]
