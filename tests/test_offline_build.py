"""Building a job in Python makes no AWS call (issue 31): ``pytorch()`` and ``model_trainer()``
on a machine with no AWS configuration either build or raise our ConfigError naming the
setting; ``fit()`` and ``train()`` are where AWS is called.

Each case runs in a fresh interpreter with no AWS_* variables, an empty home (no ~/.aws) and
an audit hook that fails on any name lookup or connection, so "no attempt" is asserted, not
"no successful connection". With fake credentials a call would be signed and sent, so the same
cases are run with them too: nothing may reach the hook.

botocore looks credentials up when a client is created, its last place being the instance
metadata endpoint (a connection). The factories' sessions look them up on the first request
instead, which is all it takes on sagemaker 3. sagemaker 2 creates clients on boto3's default
session when it is imported (JumpStart's default Session) and in the estimator's constructor
(``TensorBoardApp``), so there the endpoint is turned off (AWS_EC2_METADATA_DISABLED:
configuration, not a call).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from safe_estimators._facts.sdk_files import sdk_generation

ROOT = Path(__file__).parent.parent
ROLE = "arn:aws:iam::111122223333:role/SageMakerRole"

CHILD = r"""
import json, os, sys

def _audit(event, args):
    if event in ("socket.connect", "socket.getaddrinfo"):
        os.write(1, f"NETWORK {event} {args!r:.200}\n".encode())
        os._exit(7)

sys.addaudithook(_audit)
factory, arguments = sys.argv[1], json.loads(sys.argv[2])
import safe_estimators

try:
    built = getattr(safe_estimators, factory)(**arguments)
except safe_estimators.ConfigError as error:
    print("CONFIGERROR", json.dumps([[p.path, p.message, p.hint] for p in error.problems]))
else:
    # The credentials, looked up now as the first request would: the environment's, or none
    # (this machine is not on EC2: the metadata endpoint is not asked, as it would be then).
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
    from botocore.exceptions import NoCredentialsError
    try:
        key = built.sagemaker_session.boto_session.get_credentials().get_frozen_credentials()
        key = key.access_key
    except NoCredentialsError:
        key = "no-credentials"
    if factory == "model_trainer":
        output = built.output_data_config.s3_output_path
        print("BUILT", built.training_image, output, built.role, key)
    else:
        print("BUILT", built.training_image_uri(), built.sagemaker_session.boto_region_name, key)
"""


def _build(
    tmp_path: Path, factory: str, env: dict[str, str] | None = None, **arguments: Any
) -> tuple[str, Any]:
    # sagemaker 2's own clients on boto3's default session look credentials up (see above).
    metadata = {"AWS_EC2_METADATA_DISABLED": "true"} if sdk_generation() < 3 else {}
    """("BUILT", the printed fields) or ("CONFIGERROR", {path: (message, hint)})."""
    (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / "train.py").write_text("print('hello')\n")
    (tmp_path / "home").mkdir(exist_ok=True)
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SAGEMAKER_"))}
    clean.update(
        HOME=str(tmp_path / "home"),
        PYTHONPATH=str(ROOT),
        SAGEMAKER_SUPPRESS_V2_WARNING="1",
        **{**metadata, **(env or {})},
    )
    job = {
        "entry_point": "train.py",
        "instance_type": "ml.g5.xlarge",
        "framework_version": "2.3.0",
        "py_version": "py311",
        **arguments,
    }
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, factory, json.dumps(job)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=clean,
        timeout=300,  # a hang detector only
    )
    out = proc.stdout
    assert "NETWORK" not in out, out
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    kind, _, rest = out.strip().splitlines()[-1].partition(" ")
    if kind == "CONFIGERROR":
        return kind, {path: (message, hint) for path, message, hint in json.loads(rest)}
    return kind, rest.split()


FAKE_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "AKIAFAKE", "AWS_SECRET_ACCESS_KEY": "fake"}
CREDENTIALS = pytest.mark.parametrize(
    "credentials", [{}, FAKE_CREDENTIALS], ids=["no-credentials", "fake-credentials"]
)
estimator_sdk = pytest.mark.sdk2_only  # estimators need sagemaker 2


# --- the estimator (sagemaker 2) ------------------------------------------------------------


@estimator_sdk
def test_pytorch_without_a_region_is_our_config_error_at_region(tmp_path: Path) -> None:
    kind, problems = _build(tmp_path, "pytorch", role=ROLE)
    assert kind == "CONFIGERROR" and list(problems) == ["region"]
    message, hint = problems["region"]
    assert "no AWS region" in message and "AWS_REGION" in message
    assert "export AWS_REGION=" in hint and "sagemaker_session=" in hint


@estimator_sdk
@CREDENTIALS
def test_pytorch_builds_in_the_region_of_aws_region_with_no_call(
    tmp_path: Path, credentials: dict[str, str]
) -> None:
    # botocore reads AWS_DEFAULT_REGION only; AWS_REGION counts here as it does for plan.
    kind, (image, region, key) = _build(
        tmp_path, "pytorch", {"AWS_REGION": "eu-west-1", **credentials}, role=ROLE
    )
    assert kind == "BUILT"
    assert region == "eu-west-1"
    assert key == credentials.get("AWS_ACCESS_KEY_ID", "no-credentials")
    assert image == "763104351884.dkr.ecr.eu-west-1.amazonaws.com/pytorch-training:2.3.0-gpu-py311"


# --- ModelTrainer (sagemaker 2 and 3) -------------------------------------------------------


@pytest.mark.both_sdks
def test_model_trainer_without_a_region_is_our_config_error_at_region(tmp_path: Path) -> None:
    kind, problems = _build(tmp_path, "model_trainer", role=ROLE, output_path="s3://b/out")
    assert kind == "CONFIGERROR" and list(problems) == ["region"]


@pytest.mark.both_sdks
@CREDENTIALS
def test_model_trainer_with_role_arn_and_output_path_builds_with_no_call(
    tmp_path: Path, credentials: dict[str, str]
) -> None:
    # sagemaker 3.27 would check the role through IAM here (SimulatePrincipalPolicy): the role
    # is checked by CreateTrainingJob when train() runs instead.
    kind, (image, output, role, key) = _build(
        tmp_path,
        "model_trainer",
        {"AWS_DEFAULT_REGION": "us-west-2", **credentials},
        role=ROLE,
        output_path="s3://bucket/out",
    )
    assert kind == "BUILT"
    assert image == "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.3.0-gpu-py311"
    assert (output, role) == ("s3://bucket/out", ROLE)
    # Looked up when asked for (the first request), from the environment as boto3 would.
    assert key == credentials.get("AWS_ACCESS_KEY_ID", "no-credentials")


NO_CREDENTIALS = {"AWS_REGION": "us-west-2", "AWS_EC2_METADATA_DISABLED": "true"}


@pytest.mark.both_sdks
def test_model_trainer_names_each_argument_whose_lookup_failed(tmp_path: Path) -> None:
    # Without a role and an output path ModelTrainer looks both up while it is built; with no
    # credentials those lookups fail, and the failure names the arguments that spare them.
    kind, problems = _build(tmp_path, "model_trainer", NO_CREDENTIALS)
    assert kind == "CONFIGERROR" and sorted(problems) == ["output_path", "role"]
    role_message, role_hint = problems["role"]
    assert "through STS and IAM" in role_message and "NoCredentialsError" in role_message
    assert "role='arn:aws:iam::" in role_hint
    output_message, output_hint = problems["output_path"]
    assert "default bucket" in output_message and "through STS and S3" in output_message
    assert "output_path='s3://" in output_hint


@pytest.mark.both_sdks
def test_model_trainer_names_a_role_name_it_cannot_use(tmp_path: Path) -> None:
    kind, problems = _build(
        tmp_path, "model_trainer", NO_CREDENTIALS, role="SageMakerRole",
        output_path="s3://bucket/out",
    )  # fmt: skip
    # sagemaker 2's ModelTrainer would send the name (a rule refuses it); 3's looks it up in
    # IAM while it is built, which fails here without credentials.
    assert kind == "CONFIGERROR" and list(problems) == ["role"]
    message, hint = problems["role"]
    assert "'SageMakerRole'" in message and "a role name" in message
    assert "arn:aws:iam::<account>:role/SageMakerRole" in hint


@pytest.mark.both_sdks
def test_model_trainer_makes_and_records_its_lookups_with_credentials(tmp_path, monkeypatch):
    # The same job with credentials (moto's account, in process) is built, not refused: the
    # lookups ModelTrainer makes at build are recorded with the argument that spares them.
    from moto import mock_aws

    import safe_estimators

    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("print('hello')\n")
    with mock_aws():
        trainer = safe_estimators.model_trainer(
            entry_point="train.py", instance_type="ml.g5.xlarge", framework_version="2.3.0",
            py_version="py311", role=ROLE,
        )  # fmt: skip
    assert trainer.output_data_config.s3_output_path.startswith("s3://sagemaker-us-west-2-")
    injected = safe_estimators.explain(trainer).injected
    assert injected["output_path"] == "<the default bucket>"
    assert "role" not in injected


BARE_MODEL_TRAINER = r"""
import os, sys

def _audit(event, args):
    if event in ("socket.connect", "socket.getaddrinfo"):
        os.write(1, b"NETWORK\n")
        os._exit(7)

from safe_estimators._targets.model_trainer import _sdk
sdk = _sdk()
sys.addaudithook(_audit)
sdk.ModelTrainer(
    training_image="763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.3.0-gpu-py311",
    role="arn:aws:iam::111122223333:role/SageMakerRole",
)
print("BUILT")
"""


@pytest.mark.both_sdks
def test_the_bare_sdk_model_trainer_calls_aws_while_it_is_built(tmp_path: Path) -> None:
    # Why the refusals above exist: without an output path the SDK's constructor reaches for
    # the default bucket (and sagemaker 3 for IAM), with whatever credentials it finds.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SAGEMAKER_"))}
    env.update(
        HOME=str(tmp_path), PYTHONPATH=str(ROOT), AWS_DEFAULT_REGION="us-west-2",
        AWS_EC2_METADATA_DISABLED="true", **FAKE_CREDENTIALS,
    )  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-c", BARE_MODEL_TRAINER],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 7, proc.stdout[-2000:] + proc.stderr[-2000:]  # the hook's exit
    assert proc.stdout.splitlines()[-1] == "NETWORK" and "BUILT" not in proc.stdout


@pytest.mark.both_sdks
def test_the_first_request_signs_with_the_credentials_it_looks_up(tmp_path: Path) -> None:
    # The deferred lookup is the session's own: under moto, the default bucket's STS and S3
    # calls are signed with the suite's credentials and answered.
    from moto import mock_aws

    import safe_estimators

    (tmp_path / ".git").mkdir()
    (tmp_path / "train.py").write_text("print('hello')\n")
    with mock_aws():
        trainer = safe_estimators.model_trainer(
            entry_point=str(tmp_path / "train.py"),
            instance_type="ml.g5.xlarge",
            framework_version="2.3.0",
            py_version="py311",
            role=ROLE,
            output_path="s3://bucket/out",
        )
        session = trainer.sagemaker_session
        # moto's own environment inside mock_aws: the credentials the environment has now.
        assert session.boto_session.get_credentials().access_key == os.environ["AWS_ACCESS_KEY_ID"]
        assert session.default_bucket() == "sagemaker-us-west-2-123456789012"
