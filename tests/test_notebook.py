"""The example notebook runs, headless and offline, so that it cannot rot.

nbclient starts an ipykernel in a subprocess; the test talks to it over ZeroMQ on 127.0.0.1
(native sockets, which pytest-socket neither sees nor needs to). pytest-socket does not reach into
the kernel, so the kernel gets the same guard itself: a first cell, added here and not saved,
lets its Python sockets connect to 127.0.0.1 only. Its environment has the SageMaker SDK config
that turns telemetry off, and no AWS credentials, profile or endpoint.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from conftest import SDK3
from nbclient import NotebookClient

from safe_estimators import ConfigError, Problem

EXAMPLES = Path(__file__).parent.parent / "examples"
NOTEBOOK = EXAMPLES / "notebook.ipynb"
SDK_CONFIG = Path(__file__).parent / "sdk-config.yaml"

# Runs in the kernel before the notebook's own cells.
GUARD = """\
import pytest_socket
pytest_socket.socket_allow_hosts(["127.0.0.1", "localhost"], allow_unix_socket=True)
"""


def kernel_environment(nowhere: Path) -> dict[str, str]:
    """No AWS credentials, profile or endpoint at all: the notebook claims it needs none."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        SAGEMAKER_USER_CONFIG_OVERRIDE=str(SDK_CONFIG),
        SAGEMAKER_ADMIN_CONFIG_OVERRIDE=str(SDK_CONFIG),
        AWS_CONFIG_FILE=str(nowhere / "aws-config"),
        AWS_SHARED_CREDENTIALS_FILE=str(nowhere / "aws-credentials"),
        AWS_EC2_METADATA_DISABLED="true",
        AWS_DEFAULT_REGION="us-west-2",
        PYDEVD_DISABLE_FILE_VALIDATION="1",
    )
    return env


def text_of(output: dict) -> str:
    if output["output_type"] == "stream":
        return str(output["text"])
    if output["output_type"] == "error":
        return "\n".join(output["traceback"])
    data = output.get("data", {})
    return "\n".join(str(data[kind]) for kind in ("text/markdown", "text/plain") if kind in data)


# The notebook builds estimators (the factories, sagemaker.Session): sagemaker 2's. The
# tests of what a notebook user sees of our calls below run on both lanes, on each lane's jobs.
@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """The notebook after a headless run from examples/ (as a reader would run it)."""
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    notebook.cells.insert(0, nbformat.v4.new_code_cell(GUARD))
    client = NotebookClient(
        notebook,
        kernel_name="python3",
        timeout=300,
        startup_timeout=120,
        resources={"metadata": {"path": str(EXAMPLES)}},
    )
    # Raises CellExecutionError on any cell error.
    client.execute(env=kernel_environment(tmp_path_factory.mktemp("no-aws")))
    return notebook.cells[1:]


def outputs(cells) -> list[str]:
    return [text_of(o) for cell in cells if cell.cell_type == "code" for o in cell.outputs]


@pytest.mark.sdk2_only
def test_notebook_shows_the_injected_values(executed):
    text = "\n".join(outputs(executed))
    # The compiler job: its explanation and its plan.
    assert "environment:  {'GPU_NUM_DEVICES': '4'}" in text
    assert "distribution: {'pytorchxla': {'enabled': True}}" in text
    assert "`environment.GPU_NUM_DEVICES` = `'4'`" in text
    assert "| request `Environment.GPU_NUM_DEVICES` | `4` |" in text
    assert "sagemaker_pytorch_xla_multi_worker_enabled" in text
    # The model-parallel job: 8 processes on the 8 GPUs of one ml.p3.16xlarge.
    assert "`distribution.mpi.processes_per_host` = `8`" in text
    assert "| request `HyperParameters.sagemaker_mpi_num_of_processes_per_host` | `8` |" in text


@pytest.mark.sdk2_only
def test_notebook_shows_one_error_with_every_problem(executed):
    text = "\n".join(outputs(executed))
    assert "5 problems in the training job configuration" in text
    for path in (
        "pytorch_version",
        "environment.GPU_NUM_DEVICES",
        "max_wait",
        "checkpoint_s3_uri",
        "output_path",
    ):
        assert f"  - {path}: " in text


# --- what a notebook user sees of our calls (no kernel: a fresh interpreter each) -----------

# A user's own logging: the root logger at INFO, as many notebooks configure it, and a logger
# of theirs. Our calls must not print the SDK's INFO lines or banners through it (nor by the
# SDK's own handlers), and must leave it as it was.
USER_LOGGING = """\
import json, logging, os, sys
logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="USER %(name)s: %(message)s")
handlers = list(logging.root.handlers)
mine = logging.getLogger("my_notebook")
mine.info("before")
import safe_estimators
safe_estimators.plan("{first}")
safe_estimators.plan("{second}")
mine.info("after")
print(json.dumps({{
    "root": [logging.root.level, logging.root.handlers == handlers],
    "variable": os.environ.get("SAGEMAKER_SUPPRESS_V2_WARNING"),
    "excepthook": sys.excepthook is sys.__excepthook__,
}}))
"""
# Two jobs of each lane's default target: estimators on sagemaker 2, ModelTrainers on 3.
LANE_JOBS = (
    {"first": "model-trainer/torchrun-fsdp.yaml", "second": "model-trainer/smp-v2.yaml"}
    if SDK3
    else {"first": "compiler-single-gpu/job.yaml", "second": "model-parallel-fp16/job.yaml"}
)


def _fresh_python(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = kernel_environment(tmp_path)
    env.pop("SAGEMAKER_SUPPRESS_V2_WARNING", None)  # the SDK's banner is on, as by default
    env["PYTHONPATH"] = str(EXAMPLES.parent) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, "-c", code], cwd=EXAMPLES, env=env, capture_output=True, text=True,
        check=False, timeout=600,
    )  # fmt: skip


def test_our_calls_print_no_sdk_info_lines_or_banners_and_leave_logging_as_it_was(tmp_path):
    done = _fresh_python(USER_LOGGING.format(**LANE_JOBS), tmp_path)
    assert done.returncode == 0, done.stderr
    printed = done.stdout + done.stderr
    *lines, state = done.stdout.splitlines()
    assert lines == ["USER my_notebook: before", "USER my_notebook: after"], printed
    assert "sagemaker.config INFO" not in printed
    assert "deprecation" not in printed.lower() and "SageMakerV2" not in printed
    assert json.loads(state) == {
        "root": [logging.INFO, True], "variable": None, "excepthook": True
    }  # fmt: skip


def test_a_config_error_renders_as_its_problem_list_in_ipython():
    error = ConfigError(
        [Problem("max_wait", "is required with use_spot_instances=True.", "set it.")],
        source="job.yaml",
    )
    assert error._render_traceback_() == [
        "ConfigError: 1 problem in job.yaml:",
        "  - max_wait: is required with use_spot_instances=True. Fix: set it.",
    ]


# After plan() has imported the SDK (and with it sagemaker_core's rich tracebacks), a refused
# job in an IPython shell still shows as the list of its problems.
IPYTHON = """\
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
shell.run_cell("import safe_estimators\\nsafe_estimators.plan('{job}')")
print("=====")
shell.run_cell(
    "safe_estimators.{factory}(entry_point='compiler-single-gpu/train.py', "
    "instance_type='ml.p3.2xlarg', framework_version='2.1.0', py_version='py310', "
    "use_spot_instances=True)"
)
"""


def test_a_config_error_shows_as_its_problems_in_ipython_after_the_sdk_is_loaded(tmp_path):
    lane = {"job": LANE_JOBS["first"], "factory": "model_trainer" if SDK3 else "pytorch"}
    done = _fresh_python(IPYTHON.format(**lane), tmp_path)
    assert done.returncode == 0, done.stderr
    shown = done.stdout.split("=====\n", 1)[1]
    assert shown.startswith("ConfigError: 3 problems in the training job configuration:\n")
    assert "  - max_wait: is required with use_spot_instances=True" in shown
    assert "Traceback" not in shown and "╭" not in shown  # no rich box of frames
