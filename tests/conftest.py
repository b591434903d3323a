"""Test environment: offline AWS (region and fake credentials), SageMaker SDK telemetry off.

pytest-socket (configured in pyproject.toml) refuses every socket except 127.0.0.1.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import mutation_scope
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
    in sagemaker 2, and is marked sdk2_only (pytest_collection_modifyitems).
    """
    import boto3
    import sagemaker

    return sagemaker.Session(
        boto_session=boto3.Session(region_name="us-west-2"), default_bucket=BUCKET
    )


# Both lanes run the whole suite (`./dev test`: sagemaker 2 in .venv, 3 in .venv-sdk3) except
# what only one generation has. The estimator classes exist only in sagemaker 2 (sagemaker 3
# removed Estimator and all its subclasses): a test of them is marked sdk2_only, and so is every
# test that asks for the estimator's ``sagemaker_session`` fixture. A subject that exists only in
# sagemaker 3 (Compute.instance_preferences, the estimator factories' refusal) is marked
# sdk3_only. `-m "not sdk2_only"` (the sagemaker 3 lane of ./dev test) leaves the first out;
# otherwise each lane skips the other generation's tests, and any other skip fails the run
# (pytest_sessionfinish below): a test that cannot run where it should is a failure, not a skip.
#
# The modules below are about the estimator as a whole and import sagemaker 2's estimator
# modules at the top, so sagemaker 3 cannot even collect them: not collected there, every test
# in them marked sdk2_only on sagemaker 2. Each says why.
SDK2_ONLY_MODULES: dict[str, str] = {
    "test_aws_examples.py": "mined PyTorch(...)/HuggingFace(...) calls replayed on the bare SDK",
    "test_compiler_mp_sdk_agreement.py": "Training Compiler and SMP v1 against the bare SDK",
    "test_construction_checks.py": "the bare estimator's constructor refusals",
    "test_factories.py": "the estimator factories against sagemaker.pytorch/huggingface",
    "test_injections_recorded.py": "mined notebook jobs against the bare estimators",
    "test_launchers_sdk_agreement.py": "the launchers the bare estimators send",
    "test_messages_issue34.py": "a Nova recipe message quoting the bare PyTorch estimator",
    "test_model_parallel_aliases.py": "SMP v1 aliases against the bare PyTorch estimator",
    "test_pipeline_variables.py": "estimators in a sagemaker 2 Pipeline (sagemaker.workflow)",
    "test_pipelines.py": "estimator TrainingSteps (sagemaker.workflow, sagemaker.inputs)",
    # ModelTrainer.from_recipe (sagemaker 3) has its own: test_recipes_model_trainer.py.
    "test_recipe_corpus.py": "recipes against the bare PyTorch estimator",
    "test_recipe_fine_tuning.py": "fine-tuning recipes (sagemaker/pytorch/training_recipes.json)",
    "test_recipes.py": "recipe jobs against the bare PyTorch estimator",
    "test_sdk_agreement.py": "our facts against sagemaker.estimator's classes",
    "test_sdk_config_once.py": "the estimator's config validated once (sagemaker.config)",
}


def sdk_major() -> int:
    """The installed SageMaker SDK's major version (2 or 3)."""
    import importlib.metadata

    return int(importlib.metadata.version("sagemaker").split(".", 1)[0])


SDK3 = sdk_major() >= 3

if SDK3:
    collect_ignore = sorted(SDK2_ONLY_MODULES)

# The mark of the tests each lane skips: the other generation's.
_OTHER_GENERATION = "sdk2_only" if SDK3 else "sdk3_only"
_EXPECTED_SKIP = pytest.StashKey[bool]()


@pytest.fixture(autouse=True)
def _estimator_factories_skip_on_sdk3(request, monkeypatch):
    """On sagemaker 3 a test that calls safe_estimators.pytorch() or huggingface() builds the
    estimator, whose classes exist only in sagemaker 2: it is skipped there, as if marked
    sdk2_only (a test marked estimator_refused checks the refusal itself)."""
    if not SDK3 or request.node.get_closest_marker("estimator_refused") is not None:
        return
    from safe_estimators._commands import factories as _factories

    def skip() -> None:
        request.node.stash[_EXPECTED_SKIP] = True
        pytest.skip("builds the estimator, whose classes exist only in sagemaker 2")

    monkeypatch.setattr(_factories, "_estimator_available", skip)


def pytest_ignore_collect(collection_path, config):
    """Under ./dev mutate, only the test files tests/mutation_scope.py names are collected."""
    return True if mutation_scope.left_out(collection_path) else None


def pytest_collection_modifyitems(config, items):
    """Mark sdk2_only the tests of the estimator-only modules and those that ask for the
    estimator's session; skip on each lane the tests marked for the other generation
    (``-m "not sdk2_only"`` leaves them out altogether)."""
    for item in items:
        if item.path.name in SDK2_ONLY_MODULES or "sagemaker_session" in item.fixturenames:
            item.add_marker(pytest.mark.sdk2_only)
        if item.get_closest_marker(_OTHER_GENERATION) is not None:
            item.stash[_EXPECTED_SKIP] = True
            reason = (
                "its subject, the estimator classes, exists only in sagemaker 2"
                if SDK3
                else "its subject exists only in sagemaker 3"
            )
            item.add_marker(pytest.mark.skip(reason=reason))
    # ./dev mutate: a mutant runs only its module's own tests (tests/mutation_scope.py)
    mutant = mutation_scope.under_test()
    if mutation_scope.mutated_module(mutant) is not None:
        kept, dropped = mutation_scope.narrowed(items, mutant)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = kept


_unexpected_skips: list[str] = []


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Note every skip that is not the other generation's test (an xfail is not a skip)."""
    report = yield
    if report.skipped and not hasattr(report, "wasxfail"):
        expected = item.stash.get(_EXPECTED_SKIP, False)
        opt_in = item.get_closest_marker("pre_commit") is not None and not os.environ.get(
            "SAFE_ESTIMATORS_TRY_REPO"
        )  # minutes long, run by hand (pyproject.toml's markers)
        if not (expected or opt_in):
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""
            _unexpected_skips.append(f"{item.nodeid}: {reason}")
    return report


def pytest_sessionfinish(session, exitstatus):
    """A skip other than the other generation's tests fails the run: a tool missing from the
    lane's extras, a fixture that could not be had, a case a test gave up on."""
    if _unexpected_skips and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter):
    if _unexpected_skips:
        terminalreporter.section("skipped where they should run (this fails the run)")
        for line in _unexpected_skips:
            terminalreporter.line(line)


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
