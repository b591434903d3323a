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

    Shared by the whole run: building one loads several service models (about 2 s). It is the
    estimator's session: a test that asks for it builds an estimator, whose classes exist only
    in sagemaker 2, and is skipped on sagemaker 3 (as if marked sdk2_only).
    """
    if sdk_major() >= 3:
        pytest.skip("builds the estimator, whose classes exist only in sagemaker 2")
    import boto3
    import sagemaker

    return sagemaker.Session(
        boto_session=boto3.Session(region_name="us-west-2"), default_bucket=BUCKET
    )


# Both lanes run the whole suite (`./dev test`: sagemaker 2 in .venv, 3 in .venv-sdk3) except
# what only sagemaker 2 has: the estimator classes (sagemaker 3 removed Estimator and all its
# subclasses). A test of them is marked sdk2_only; a module that is about them as a whole is
# listed here (it is not even collected on sagemaker 3, where its imports would fail) and its
# tests are marked sdk2_only on sagemaker 2. Every other test (the spec reader, the CLI,
# validate, lint, the secrets policy, the CI formats, the verdict cache, the ModelTrainer
# target) runs on both.
SDK2_ONLY_MODULES = frozenset(
    {
        "test_aws_examples.py",
        "test_compiler_mp_sdk_agreement.py",
        "test_construction_checks.py",
        "test_differential.py",
        "test_factories.py",
        "test_factories_compiler.py",
        "test_factories_model_parallel.py",
        "test_factories_property.py",
        "test_hostile_round2.py",
        "test_hostile_round3.py",
        "test_injections_recorded.py",
        "test_launchers.py",
        "test_launchers_sdk_agreement.py",
        "test_messages_issue34.py",
        "test_model_parallel.py",
        "test_model_parallel_aliases.py",
        "test_model_parallel_properties.py",
        "test_model_parallel_v2.py",
        "test_pipeline_variables.py",
        "test_pipelines.py",
        "test_preflight_cli.py",
        "test_recipe_corpus.py",
        "test_recipe_fine_tuning.py",
        "test_recipes.py",
        "test_sdk_agreement.py",
        "test_sdk_config.py",
        "test_sdk_config_once.py",
        "test_verdict.py",
        # Estimator projects and requests: the notebook's, the golden requests', the template's
        # (a ModelTrainer kind of project is still to do).
        "test_notebook.py",
        "test_plan_golden.py",
        "test_template.py",
    }
)


MIXED_MODULES = frozenset(
    {
        "test_model_trainer.py",
        "test_plan_faithful.py",
        "test_sdk_layouts.py",
        "test_targets_differential.py",
    }
)


def sdk_major() -> int:
    """The installed SageMaker SDK's major version (2 or 3)."""
    import importlib.metadata

    return int(importlib.metadata.version("sagemaker").split(".", 1)[0])


SDK3 = sdk_major() >= 3

if SDK3:
    collect_ignore = sorted(SDK2_ONLY_MODULES)


@pytest.fixture(autouse=True)
def _estimator_factories_skip_on_sdk3(request, monkeypatch):
    """On sagemaker 3 a test that calls safe_estimators.pytorch() or huggingface() builds the
    estimator, whose classes exist only in sagemaker 2: it is skipped there, as if marked
    sdk2_only (a test marked estimator_refused checks the refusal itself)."""
    if not SDK3 or request.node.get_closest_marker("estimator_refused") is not None:
        return
    from safe_estimators._commands import factories as _factories

    def skip() -> None:
        pytest.skip("builds the estimator, whose classes exist only in sagemaker 2")

    monkeypatch.setattr(_factories, "_estimator_available", skip)


def pytest_collection_modifyitems(config, items):
    """Mark the tests of the estimator-only modules sdk2_only; on sagemaker 3 skip every test
    marked sdk2_only (``-m "not sdk2_only"`` leaves them out altogether)."""
    skip = pytest.mark.skip(reason="its subject, the estimator classes, exists only in sagemaker 2")
    for item in items:
        # MIXED_MODULES ran on sagemaker 3 before every test did: there only their tests
        # marked both_sdks are about ModelTrainer; the others build estimators.
        mixed = item.path.name in MIXED_MODULES and item.get_closest_marker("both_sdks") is None
        if item.path.name in SDK2_ONLY_MODULES or mixed:
            item.add_marker(pytest.mark.sdk2_only)
        if SDK3 and item.get_closest_marker("sdk2_only") is not None:
            item.add_marker(skip)


# The examples only the estimator can run (Training Compiler, the model parallel library v1,
# SMDDP on a heterogeneous cluster; the HyperPod recipe runs on both, as sagemaker 3's
# ModelTrainer.from_recipe there). On sagemaker 3, where the default target
# is ModelTrainer, their verdict is the ModelTrainer target's documented refusal of each of
# these (README, "The same job as a ModelTrainer"); the differential test checks exactly that.
ESTIMATOR_ONLY_EXAMPLES = frozenset(
    {
        "compiler-multi-gpu",
        "compiler-multi-node",
        "compiler-single-gpu",
        "heterogeneous-smddp",
        "memory-fit",
        "model-parallel-fp16",
    }
)


def runs_here(example: Path) -> bool:
    """Whether the example (examples/<name>/job.*) builds on the installed SDK generation."""
    return not SDK3 or example.parent.name not in ESTIMATOR_ONLY_EXAMPLES
