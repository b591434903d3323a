"""validate, lint and plan are offline and stay in the project: an audit hook records every
connection attempt, every subprocess and every file opened outside the spec's folder.

pytest-socket would refuse a connection anyway; the audit hook sees the attempt before that, so
"no attempt" is what is asserted, not "no successful connection".
"""

from __future__ import annotations

import os
import re
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from safe_estimators._cli import main
from safe_estimators._facts.sdk_files import sdk_generation

SDK3 = sdk_generation() >= 3

_events: list[tuple[str, str]] | None = None


def _audit(event: str, args: tuple[object, ...]) -> None:
    if _events is None:
        return
    if event in ("socket.connect", "subprocess.Popen", "os.posix_spawn", "os.system"):
        _events.append((event, repr(args)[:200]))
    elif event == "open" and isinstance(args[0], str | bytes | os.PathLike):
        _events.append((event, os.fsdecode(args[0])))


sys.addaudithook(_audit)  # cannot be removed: it records only while `recording` is active


@pytest.fixture
def recording() -> Iterator[list[tuple[str, str]]]:
    global _events
    _events = []
    try:
        yield _events
    finally:
        _events = None


SPEC = """\
estimator: pytorch
entry_point: train.py
instance_type: ml.p3.2xlarge
framework_version: "2.0"
py_version: py310
"""
ROOT = Path(__file__).parent.parent
# Where an offline command may read besides the spec's folder: Python and the installed
# packages, this repository's package data and the SDK config the tests point at, the AWS
# config files (boto3 looks the region up there), and the kernel's pseudo-files.
ALLOWED = [
    Path(p).resolve()
    for p in {
        sys.prefix,
        sys.base_prefix,
        sysconfig.get_paths()["purelib"],
        ROOT / "safe_estimators",
        ROOT / "instance_catalog",
        ROOT / "safe_estimators.egg-info",  # the editable install's own metadata
        ROOT / "tests" / "sdk-config.yaml",
        Path.home() / ".aws",
        os.environ["SAFE_ESTIMATORS_CACHE_DIR"],  # the limits cache, in a folder of the test run
        "/dev/null",
        "/proc",
        "/sys",
        "/etc/localtime",
        "/usr/share/zoneinfo",
    }
]


_CACHE_TEMPORARY = re.compile(r"^\.(?P<name>.+)\.\d+\.[0-9a-f]{8}\.tmp$")


def _in_the_cache(name: str) -> bool:
    """A bare file name the caches open relative to their folder's descriptor (``dir_fd``: the
    audit event carries the name alone): the cache file itself, or its temporary twin."""
    if os.sep in name:
        return False
    temporary = _CACHE_TEMPORARY.match(name)
    name = temporary["name"] if temporary else name
    return any(Path(os.environ["SAFE_ESTIMATORS_CACHE_DIR"]).rglob(name))


def _outside(events: list[tuple[str, str]], folder: Path) -> list[str]:
    opened = {
        Path(os.path.abspath(name))
        for event, name in events
        if event == "open"
        and not name.endswith("__path_hook__")  # the editable install's
        and not _in_the_cache(name)
    }
    # The SDK packages the code into tempfile.mkstemp()/mkdtemp() names (tmpXXXXXXXX).
    scratch = Path(tempfile.gettempdir()).resolve()
    opened = {
        p
        for p in opened
        if not (p.parent.resolve() == scratch and p.name.startswith("tmp"))
        and not (p.parent.parent.resolve() == scratch and p.parent.name.startswith("tmp"))
    }
    inside = [folder.resolve(), *ALLOWED]
    return sorted(
        str(p)
        for p in opened
        if not any(p.resolve() == root or root in p.resolve().parents for root in inside)
    )


def _project(tmp_path: Path, extra: str = "") -> Path:
    (tmp_path / "train.py").write_text("import torch\nprint('train')\n")
    (tmp_path / "job.yaml").write_text(SPEC + extra)
    return tmp_path / "job.yaml"


@pytest.mark.parametrize(
    "command",
    [
        "validate",
        "lint",
        # sagemaker 3's plan opens files outside the project (about 27, issue 33's note).
        pytest.param("plan", marks=pytest.mark.xfail(SDK3, reason="sagemaker 3 reads more")),
    ],
)
def test_no_connection_no_subprocess_and_no_file_outside_the_project(
    command: str, tmp_path: Path, recording: list[tuple[str, str]], capsys: pytest.CaptureFixture
) -> None:
    spec = _project(tmp_path)
    assert main([command, str(spec)]) == 0, capsys.readouterr().out
    assert [e for e in recording if e[0] != "open"] == []
    assert _outside(recording, tmp_path) == []
    assert str(spec) in {name for event, name in recording if event == "open"}


@pytest.mark.parametrize("command", ["validate", "lint", "plan"])
def test_a_git_config_source_is_refused_without_cloning(
    command: str, tmp_path: Path, recording: list[tuple[str, str]], capsys: pytest.CaptureFixture
) -> None:
    spec = _project(
        tmp_path, "git_config: {repo: 'https://github.com/aws/sagemaker-python-sdk.git'}\n"
    )
    assert main([command, str(spec)]) == 1
    out = capsys.readouterr().out
    assert "never use the network" in out and "submit" in out
    assert [e for e in recording if e[0] != "open"] == []


def test_an_s3_sdk_config_override_is_refused_by_plan_without_connecting(
    tmp_path: Path,
    recording: list[tuple[str, str]],
    capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SAGEMAKER_USER_CONFIG_OVERRIDE", "s3://org-bucket/sagemaker/config.yaml")
    spec = _project(tmp_path)
    assert main(["plan", str(spec)]) == 1
    out = capsys.readouterr().out
    assert "$SAGEMAKER_USER_CONFIG_OVERRIDE: is 's3://org-bucket/sagemaker/config.yaml'" in out
    assert "aws s3 cp" in out
    assert [e for e in recording if e[0] != "open"] == []
    # validate never reads the SDK config: it has nothing to refuse.
    assert main(["validate", str(spec)]) == 0
