"""``@remote(include_local_workdir=True)`` copies the folder the function is called from into the
job at every call (``shutil.copytree``, following links): a link to a folder that holds it fails
the call, a Python environment under it is copied whole. The failure is the installed SDK's own,
called against moto."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from moto import mock_aws

from safe_estimators import _bounds
from safe_estimators._facts.sdk_files import sdk_generation
from safe_estimators._problems import Problem
from safe_estimators._resolve.remote import check_remote_arguments
from safe_estimators._targets.remote import sdk_remote

ROLE = "arn:aws:iam::111122223333:role/SageMakerRole"
IMAGE = "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.3.0-gpu-py311"
BUCKET = "remote-workdir-bucket"
OPTIONS: dict[str, Any] = {
    "instance_type": "ml.g5.2xlarge",
    "role": ROLE,
    "image_uri": IMAGE,
    "s3_root_uri": f"s3://{BUCKET}/remote",
    "include_local_workdir": True,
}
LOOP = (
    "in the working directory is a link to a folder that holds it; the SDK copies the working "
    "directory following links (shutil.copytree), so it copies that folder into itself again "
    "at every level"
)
LOOP_HINT = "remove the link, or start Python in a folder without it."
HINT = (
    "start Python in the project's folder (or os.chdir to it) before calling the function, or "
    "pass custom_file_filter=CustomFileFilter(ignore_name_patterns=[...]) naming what to leave "
    "out."
)


def _custom_file_filter(patterns: list[str]) -> Any:
    if sdk_generation() < 3:
        from sagemaker.remote_function.custom_file_filter import CustomFileFilter
    else:
        from sagemaker.train.remote_function.custom_file_filter import CustomFileFilter
    return CustomFileFilter(ignore_name_patterns=patterns)


def _workdir_problems(**options: Any) -> list[Problem]:
    _, problems = check_remote_arguments({**OPTIONS, **options})
    return [p for p in problems if p.path == "include_local_workdir"]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder with a script and a package, the working directory."""
    folder = tmp_path / "project"
    (folder / "pkg").mkdir(parents=True)
    (folder / "train.py").write_text("import pkg.util\n")
    (folder / "pkg" / "util.py").write_text("x = 1\n")
    monkeypatch.chdir(folder)
    return folder


def _call_bare_sdk(**options: Any) -> None:
    """The installed SDK's own decorator, called against moto."""
    with mock_aws():
        boto3.client("s3", region_name="us-west-2").create_bucket(
            Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "us-west-2"}
        )

        @sdk_remote("us-west-2")(**{**OPTIONS, **options})
        def train() -> int:
            return 1

        train()


def test_a_project_folder_is_no_problem(project: Path) -> None:
    assert _workdir_problems() == []


# The SDK's own calls are tests of their own: mutation testing runs a rule's mutants only
# against the tests that call the rule, and these take seconds each.


def test_the_sdk_copies_a_project_folder_and_goes_on(project: Path) -> None:
    # moto completes the job at once with no results: the call gets that far.
    with pytest.raises(Exception, match="results"):
        _call_bare_sdk()


def test_the_sdks_call_goes_through_a_link_back_with_its_default_filter(project: Path) -> None:
    (project / "pkg" / "again").symlink_to(project)
    with pytest.raises(Exception, match="results"):  # a waste, not a failure
        _call_bare_sdk()


def test_the_sdks_call_fails_on_a_link_back_with_a_custom_filter(project: Path) -> None:
    (project / "pkg" / "again").symlink_to(project)
    with pytest.raises(shutil.Error):
        _call_bare_sdk(custom_file_filter=_custom_file_filter(["*.txt"]))


def test_a_link_back_copies_the_folder_40_times_over_with_the_default_filter(
    project: Path,
) -> None:
    (project / "pkg" / "again").symlink_to(project)
    assert _workdir_problems() == [
        Problem(
            "include_local_workdir",
            f"'pkg/again' {LOOP}, until the path holds more links than the system resolves (40 "
            "on Linux): the job gets those .py files about 40 times over.",
            "remove the link, or start Python in a folder without it.",
            "warning",
        )
    ]
    # without include_local_workdir nothing is copied
    assert _workdir_problems(include_local_workdir=False) == []
    assert _workdir_problems(include_local_workdir=None) == []


def test_a_link_back_fails_a_custom_filters_copy_unless_it_ignores_the_link(
    project: Path,
) -> None:
    (project / "pkg" / "again").symlink_to(project)
    custom = _custom_file_filter(["*.txt"])
    assert _workdir_problems(custom_file_filter=custom) == [
        Problem(
            "include_local_workdir",
            f"'pkg/again' {LOOP}, until the system refuses the path (too many levels of links); "
            "with a CustomFileFilter that fails the call.",
            "remove the link, or start Python in a folder without it.",
        )
    ]
    assert _workdir_problems(custom_file_filter=_custom_file_filter(["again"])) == []
    assert _workdir_problems(custom_file_filter=_custom_file_filter(["pkg"])) == []


def test_two_links_back_multiply_the_copies_and_the_call_never_ends(project: Path) -> None:
    # Not called through the SDK: it would copy 2^40 folders.
    (project / "pkg" / "again").symlink_to(project)
    (project / "back").symlink_to(project)
    said = (
        "and with the other links back beside it the copies multiply at every level: the call "
        "never ends."
    )
    assert [(p.severity, p.message, p.hint) for p in _workdir_problems()] == [
        ("error", f"'back' {LOOP}, {said}", LOOP_HINT),
        ("error", f"'pkg/again' {LOOP}, {said}", LOOP_HINT),
    ]
    # Two links that each loop in a folder of its own copy each folder 40 times, no more.
    os.remove(project / "back")
    (project / "lib").mkdir()
    (project / "lib" / "ops.py").write_text("")
    (project / "lib" / "self").symlink_to(project / "lib")
    (project / "pkg" / "again").unlink()
    (project / "pkg" / "again").symlink_to(project / "pkg")
    assert [p.severity for p in _workdir_problems()] == ["warning", "warning"]
    # a folder without a .py file copied 40 times over is 40 empty folders (walked first here:
    # the links after it are still read)
    (project / "lib" / "self").unlink()
    (project / "zdata").mkdir()
    (project / "zdata" / "rows.csv").write_text("1\n")
    (project / "zdata" / "self").symlink_to(project / "zdata")
    assert [p.message.split(" ")[0] for p in _workdir_problems()] == ["'pkg/again'"]
    assert [p.severity for p in _workdir_problems(custom_file_filter=_custom_file_filter([]))] == [
        "error",
        "error",
    ]
    # A link back to the top beside one that loops in its own folder: polynomial, not endless.
    (project / "zdata" / "self").unlink()
    (project / "pkg" / "again").unlink()
    (project / "pkg" / "again").symlink_to(project)
    (project / "lib" / "self").symlink_to(project / "lib")
    assert [p.severity for p in _workdir_problems()] == ["warning", "warning"]


def test_a_link_to_nothing_fails_only_a_custom_filters_copy(project: Path) -> None:
    (project / "missing.py").symlink_to(project / "gone.py")
    # the default filter skips what is neither a file nor a folder
    assert _workdir_problems() == []
    [problem] = _workdir_problems(custom_file_filter=_custom_file_filter(["*.txt"]))
    assert problem.severity == "error"
    assert (problem.message, problem.hint) == (
        "'missing.py' in the working directory is a link to nothing; with a "
        "CustomFileFilter the SDK copies it too (shutil.copytree), and the call fails.",
        "remove the link, or add its name to ignore_name_patterns.",
    )
    assert _workdir_problems(custom_file_filter=_custom_file_filter(["missing*"])) == []


def test_a_python_environment_in_the_working_directory_is_a_warning(project: Path) -> None:
    packages = project / ".venv" / "lib" / "python3.11" / "site-packages" / "torch"
    packages.mkdir(parents=True)
    for n in range(3):
        (packages / f"m{n}.py").write_text("")
    assert _workdir_problems() == [
        Problem(
            "include_local_workdir",
            f"the working directory {str(project)!r} holds a Python environment: 3 of the 5 .py "
            "files the SDK copies into the job at every call are under site-packages.",
            HINT,
            "warning",
        )
    ]
    # a filter of the user's own decides what is copied
    assert _workdir_problems(custom_file_filter=lambda path, names: names) == []


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder of its own, the working directory."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.chdir(folder)
    return folder


def test_a_home_folder_as_the_working_directory_is_a_warning(home: Path) -> None:
    assert _workdir_problems() == [
        Problem(
            "include_local_workdir",
            f"the working directory {str(home)!r} is a home folder; the SDK copies every .py "
            "file under it into the job at every call.",
            HINT,
            "warning",
        )
    ]


def test_a_removed_working_directory_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    os.rmdir(gone)
    assert _workdir_problems() == []


def test_a_custom_filter_reads_the_folder_it_was_made_in_and_names_paths_from_there(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "pkg" / "again").symlink_to(project)
    custom = _custom_file_filter(["project"])  # a name above the folder copied: ignores nothing
    monkeypatch.chdir(project.parent)
    [problem] = _workdir_problems(custom_file_filter=custom)
    assert problem.message.startswith("'pkg/again' in the working directory")
    (project / "missing.py").symlink_to(project / "gone.py")
    assert [p.message.split(" ")[0] for p in _workdir_problems(custom_file_filter=custom)] == [
        "'pkg/again'",
        "'missing.py'",
    ]
    # patterns of None (the SDK's default) ignore nothing
    assert len(_workdir_problems(custom_file_filter=_custom_file_filter(None))) == 2


def test_a_filter_without_patterns_or_of_another_shape_is_read_safely(project: Path) -> None:
    (project / "pkg" / "again").symlink_to(project)
    bare = SimpleNamespace(workdir=str(project))  # no ignore_name_patterns at all
    assert [p.severity for p in _workdir_problems(custom_file_filter=bare)] == ["error"]
    odd = SimpleNamespace(workdir=str(project), ignore_name_patterns=5)
    assert [p.severity for p in _workdir_problems(custom_file_filter=odd)] == ["error"]


def test_a_custom_filters_home_folder_says_every_file_is_copied(home: Path) -> None:
    [problem] = _workdir_problems(custom_file_filter=_custom_file_filter([]))
    assert problem.message == (
        f"the working directory {str(home)!r} is a home folder; the SDK copies every file under "
        "it into the job at every call."
    )


@pytest.mark.parametrize(
    ("custom", "copied"), [(False, "every .py file"), (True, "every file")], ids=["py", "all"]
)
def test_a_working_directory_too_large_to_walk_is_a_warning(
    project: Path, monkeypatch: pytest.MonkeyPatch, custom: bool, copied: str
) -> None:
    monkeypatch.setattr(_bounds, "MAX_TREE_ENTRIES", 3)
    monkeypatch.setattr(_bounds, "_WALKS", {})
    for n in range(3):
        (project / f"m{n}.py").write_text("")
    options = {"custom_file_filter": _custom_file_filter([])} if custom else {}
    assert _workdir_problems(**options) == [
        Problem(
            "include_local_workdir",
            f"the working directory {str(project)!r} has more than 3 entries; the SDK copies "
            f"{copied} under it into the job at every call.",
            HINT,
            "warning",
        )
    ]
