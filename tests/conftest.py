"""Test environment: offline AWS (region and fake credentials), SageMaker SDK telemetry off.

pytest-socket (configured in pyproject.toml) refuses every socket except 127.0.0.1.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

_HERE = Path(__file__).parent

# No verdict may depend on the machine's load: hypothesis's per-example deadline (200 ms) and its
# too_slow health check time the examples in wall seconds, which a busy 2-core box stretches
# tenfold. Settings a test gives override these, field by field.
settings.register_profile(
    "load-independent", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("load-independent")

# Set before anything imports boto3 or sagemaker.
os.environ.update(
    {
        "AWS_DEFAULT_REGION": "us-west-2",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SECURITY_TOKEN": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_EC2_METADATA_DISABLED": "true",
        "SAGEMAKER_USER_CONFIG_OVERRIDE": str(_HERE / "sdk-config.yaml"),
        "SAGEMAKER_ADMIN_CONFIG_OVERRIDE": str(_HERE / "sdk-config.yaml"),
        "SAGEMAKER_SUPPRESS_V2_WARNING": "1",
    }
)
# The limits cache (safe_estimators._facts.limits) goes to a folder of this run, never the real
# home; child processes inherit it.
_CACHE = tempfile.mkdtemp(prefix="safe-estimators-cache-")
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)
os.environ["SAFE_ESTIMATORS_CACHE_DIR"] = _CACHE
for _var in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
    os.environ.pop(_var, None)

ROLE = "arn:aws:iam::111122223333:role/SageMakerRole"
BUCKET = "safe-estimators-test-bucket"


@pytest.fixture
def role() -> str:
    return ROLE


@pytest.fixture(scope="session")
def sagemaker_session():
    """A real sagemaker.Session that needs no network: region and bucket given up front.

    Shared by the whole run: building one loads several service models (about 2 s).
    """
    import boto3
    import sagemaker

    return sagemaker.Session(
        boto_session=boto3.Session(region_name="us-west-2"), default_bucket=BUCKET
    )



# The sagemaker 3 lane (`./dev test` runs it in .venv-sdk3): sagemaker 3 has no estimators, so
# only these modules are collected there (their tests marked both_sdks run; the rest import or
# build estimators).
BOTH_SDKS_MODULES = (
    "test_model_trainer.py",
    "test_offline_build.py",
    "test_plan_faithful.py",
    "test_sdk_layouts.py",
    "test_targets_differential.py",
)


def _sdk_major() -> int:
    import importlib.metadata

    return int(importlib.metadata.version("sagemaker").split(".", 1)[0])


if _sdk_major() >= 3:
    collect_ignore = [p.name for p in _HERE.glob("test_*.py") if p.name not in BOTH_SDKS_MODULES]
