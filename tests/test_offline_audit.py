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
_O_PATH = getattr(os, "O_PATH", 0)
_ATTEMPTS = ("socket.connect", "subprocess.Popen", "os.posix_spawn", "os.system")


def _audit(event: str, args: tuple[object, ...]) -> None:
    if _events is None:
        return
    if event in _ATTEMPTS:
        _events.append((event, repr(args)[:200]))
    elif event == "open" and isinstance(args[0], str | bytes | os.PathLike):
        flags = args[2] if len(args) > 2 and isinstance(args[2], int) else 0
        # An O_PATH descriptor reads nothing: it names a file (to resolve its real path).
        _events.append(("resolve" if flags & _O_PATH else event, os.fsdecode(args[0])))
    elif event == "shutil.rmtree" and isinstance(args[0], str | bytes | os.PathLike):
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


def _attempts(events: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The connections and processes started (what no offline command may do)."""
    return [e for e in events if e[0] in _ATTEMPTS]


def _in_scratch(path: Path, scratch: Path) -> bool:
    """Below a tempfile.mkstemp()/mkdtemp() name (tmpXXXXXXXX) of the temporary folder, at any
    depth: the SDK packages the code there (sagemaker 2's source.tar.gz; sagemaker 3's
    ModelTrainer copies the source_dir and its own drivers, from site-packages, into one)."""
    parents = [path, *path.parents]
    return any(p.parent == scratch and p.name.startswith("tmp") for p in parents[:-1])


def _outside(events: list[tuple[str, str]], folder: Path) -> list[str]:
    # The home folder is resolved (O_PATH, nothing read) to refuse it as a source_dir.
    home = Path.home().resolve()
    resolved = {Path(name).resolve() for event, name in events if event == "resolve"}
    opened = {
        Path(os.path.abspath(name))
        for event, name in events
        if event == "open"
        and not name.endswith("__path_hook__")  # the editable install's
        and not _in_the_cache(name)
    }
    scratch = Path(tempfile.gettempdir()).resolve()
    # shutil.rmtree of a scratch folder opens its subfolders by bare name (dir_fd): a bare
    # name is the rmtree's when a scratch folder was removed and holds a folder of that name.
    removed = [Path(name).resolve() for event, name in events if event == "shutil.rmtree"]
    removed = [p for p in removed if _in_scratch(p, scratch)]
    names_in_removed = {
        part
        for event, name in events
        if event == "open" and os.sep in name
        for p in [Path(os.path.abspath(name)).resolve()]
        if any(root in p.parents for root in removed)
        for part in p.relative_to(next(r for r in removed if r in p.parents)).parts[:-1]
    }
    bare = {
        Path(os.path.abspath(name))
        for event, name in events
        if event == "open" and os.sep not in name and name in names_in_removed
    }
    opened = {p for p in opened - bare if not _in_scratch(p.resolve(), scratch)}
    opened |= {p for p in resolved if p != home and not _in_scratch(p, scratch)}
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
        "plan",
    ],
)
def test_no_connection_no_subprocess_and_no_file_outside_the_project(
    command: str, tmp_path: Path, recording: list[tuple[str, str]], capsys: pytest.CaptureFixture
) -> None:
    spec = _project(tmp_path)
    assert main([command, str(spec)]) == 0, capsys.readouterr().out
    assert _attempts(recording) == []
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
    assert _attempts(recording) == []


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
    assert _attempts(recording) == []
    # validate never reads the SDK config: it has nothing to refuse.
    assert main(["validate", str(spec)]) == 0
