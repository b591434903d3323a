"""Importing the package and validating a spec load only what they use, and the public API stays
the same for code and for type checkers.

Fresh interpreters, because the test process has imported everything already.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import sdk_major

import safe_estimators

ROOT = Path(__file__).parent.parent
EXAMPLES = ROOT / "examples"
HEAVY = [
    "safe_estimators._targets",
    "safe_estimators._commands.plan",
    "safe_estimators._commands.factories",
]
SCRIPT_CHECKS = "safe_estimators._script_checks"
# The other targets' typed options: an estimator or ModelTrainer spec never needs their classes.
OTHER_JOBS = [
    f"safe_estimators.{stage}.{target}"
    for stage in ("_spec", "_resolve")
    for target in ("remote", "fine_tuning")
]


def _loaded_after(code: str, *args: str) -> set[str]:
    """The modules a fresh interpreter has loaded after running ``code``."""
    program = code + "\nimport sys\nprint(' '.join(sorted(sys.modules)))\n"
    result = subprocess.run(
        [sys.executable, "-c", program, *args], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return set(result.stdout.splitlines()[-1].split())


def test_importing_the_package_loads_none_of_its_modules():
    loaded = _loaded_after("import safe_estimators")
    assert {m for m in loaded if m.startswith("safe_estimators.")} == set()
    assert "sagemaker" not in loaded


def test_validating_a_spec_without_a_local_script_loads_neither_builder_nor_script_checks(
    tmp_path,
):
    spec = tmp_path / "job.yaml"
    spec.write_text(
        "estimator: pytorch\n"
        "entry_point: train.py\n"
        "source_dir: s3://my-bucket/code/sourcedir.tar.gz\n"
        "instance_type: ml.p3.8xlarge\n"
        'framework_version: "1.13.1"\n'
        "py_version: py39\n"
    )
    code = "from safe_estimators._cli import main\nassert main(['validate', sys.argv[1]]) == 0"
    loaded = _loaded_after("import sys\n" + code, str(spec))
    assert [m for m in [*HEAVY, SCRIPT_CHECKS, *OTHER_JOBS, "sagemaker"] if m in loaded] == []


# A plain YAML job with a local script that builds on the installed SDK (on sagemaker 3 the
# compiler example is the estimator's only).
LOCAL_SCRIPT_JOB = EXAMPLES / (
    "model-trainer/torchrun-fsdp.yaml" if sdk_major() >= 3 else "compiler-multi-gpu/job.yaml"
)


def test_validating_a_spec_with_a_local_script_checks_it_without_the_builder():
    # --no-cache: an unchanged spec's verdict would be read back without checking its script.
    code = (
        "from safe_estimators._cli import main\n"
        "assert main(['validate', '--no-cache', sys.argv[1]]) == 0"
    )
    loaded = _loaded_after("import sys\n" + code, str(LOCAL_SCRIPT_JOB))
    assert SCRIPT_CHECKS in loaded
    assert [m for m in [*HEAVY, "sagemaker"] if m in loaded] == []


# What a plain YAML job (no model=, no model parallelism) does not need, and so never loads.
FOR_OTHER_JOBS = [
    "logging",  # only commands that load the SDK, and resolved jobs with warnings, log
    "tomllib",  # TOML spec files
    "safe_estimators._memory.rule",  # model=
    "safe_estimators._memory.accounting",
    "safe_estimators._distributions.model_parallel.rules",  # model parallelism
    "safe_estimators._distributions.model_parallel.rules_v2",
    "safe_estimators._distributions.model_parallel.resolve",
    "safe_estimators._recipes.load",  # training_recipe=
    # Costly standard modules every validate used to load for one small use each (about 23 ms
    # of a 136 ms one-file validate): the SDK's version, a Markdown escape, the SIGINT handler.
    "importlib.metadata",
    "email",
    "html",
    "signal",
    "shutil",  # argparse's formatter sizes itself with it (ours asks the terminal itself)
]


def test_validating_a_plain_yaml_job_loads_only_what_it_uses():
    code = "from safe_estimators._cli import main\nassert main(['validate', sys.argv[1]]) == 0"
    job = LOCAL_SCRIPT_JOB
    loaded = _loaded_after("import sys\n" + code, str(job))
    assert [m for m in FOR_OTHER_JOBS if m in loaded] == []


@pytest.mark.parametrize("name", safe_estimators.__all__)
def test_every_public_name_is_the_object_of_its_module(name):
    import importlib

    home = importlib.import_module(f"safe_estimators.{safe_estimators._HOMES[name]}")
    assert getattr(safe_estimators, name) is getattr(home, name)


def test_every_public_name_has_a_home_and_nothing_else_does():
    assert sorted(safe_estimators._HOMES) == sorted(safe_estimators.__all__)
    with pytest.raises(AttributeError, match="has no attribute 'plann'"):
        _ = safe_estimators.plann  # type: ignore[attr-defined]


def test_star_import_gives_the_public_names():
    namespace: dict[str, object] = {}
    exec("from safe_estimators import *", namespace)
    assert {n for n in namespace if not n.startswith("__")} == set(safe_estimators.__all__)


def test_type_checkers_see_the_public_api_and_nothing_more(tmp_path):
    user = tmp_path / "user.py"
    user.write_text(
        textwrap.dedent(
            """
            import safe_estimators
            from safe_estimators import ConfigError, JobSpec, ModelParallel, plan

            result: safe_estimators.Plan = plan("job.yaml")
            request: dict = result.request
            spec: JobSpec = safe_estimators.load_spec("job.yaml")
            mp = ModelParallel(pipeline_parallel_degree=2)
            error: type[ValueError] = ConfigError
            safe_estimators.plann("job.yaml")
            """
        )
    )
    # In a process of its own (mypy raises the recursion limit of the process it runs in), from
    # the project root (mypy searches the working directory), reporting on user.py only.
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            str(user),
            "--follow-imports=silent",
            "--cache-dir",
            str(tmp_path / "cache"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out, status = result.stdout, result.returncode
    assert status == 1, out
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert len(errors) == 1, out
    assert 'Module has no attribute "plann"' in errors[0]


def test_importing_the_cli_as_a_module_leaves_the_garbage_collector_as_it_was():
    """Only the ``safe-estimators`` command's own process pauses the collector while it loads;
    a program that imports the package keeps it as it was."""
    code = (
        "import gc\nbefore = gc.get_threshold()\nimport safe_estimators._cli\n"
        "assert gc.isenabled() and gc.get_threshold() == before, gc.get_threshold()"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr
