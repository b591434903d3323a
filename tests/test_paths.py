"""The fast path resolver agrees with ``os.path.realpath`` on every kind of path a spec can name.

Containment (a path that leaves the project is refused) and the upload rule rest on it, so a
disagreement would either refuse a job whose files are inside or let one through that uploads
files from elsewhere.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from safe_estimators._bounds import is_inside, project_folder, real_path, walk_tree


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Folders, files, links inside and out, a dangling link, a loop, a link to a link."""
    root = tmp_path_factory.mktemp("paths")
    (root / "project" / "src" / "pkg").mkdir(parents=True)
    (root / "project" / "src" / "train.py").write_text("print('hi')\n")
    (root / "project" / "src" / "pkg" / "mod.py").write_text("")
    (root / "outside").mkdir()
    (root / "outside" / "secret.txt").write_text("x")
    links = {
        "project/src/up": "..",
        "project/src/out": "../../outside",
        "project/src/out_file": "../../outside/secret.txt",
        "project/src/dangling": "missing/target",
        "project/src/loop_a": "loop_b",
        "project/src/loop_b": "loop_a",
        "project/src/chain": "out",
        "project/src/absolute": str(root / "project" / "src" / "pkg"),
        "project/alias": "src",
    }
    for link, target in links.items():
        os.symlink(target, root / link)
    return root


NAMES = st.sampled_from(
    ["project", "src", "pkg", "train.py", "mod.py", "outside", "secret.txt", "up", "out",
     "out_file", "dangling", "loop_a", "chain", "absolute", "alias", "missing", ".", "..", ""]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(NAMES, max_size=6))
def test_real_path_is_realpath(tree: Path, parts: list[str]) -> None:
    path = os.path.join(str(tree), *parts) if parts else str(tree)
    assert real_path(path) == os.path.realpath(path)


def test_relative_paths_resolve_from_the_working_directory(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tree / "project")
    for path in ("src", "alias/pkg/mod.py", "src/out", "missing/file", "."):
        assert real_path(path) == os.path.realpath(path)


def test_walk_reports_links_that_leave_the_folder(tree: Path) -> None:
    src = tree / "project" / "src"
    walked = walk_tree(src)
    # Each real folder once: pkg is reached through the first of its names (the link).
    assert sorted(os.path.relpath(os.path.realpath(f), src) for f in walked.files) == [
        "pkg/mod.py",
        "train.py",
    ]
    left = {os.path.basename(link): target for link, target in walked.outside_links}
    assert left["out"] == str(tree / "outside")
    assert left["out_file"] == str(tree / "outside" / "secret.txt")
    assert left["chain"] == str(tree / "outside")
    assert is_inside(str(src / "pkg"), str(src)) and not is_inside(str(tree / "outside"), str(src))
    assert not is_inside(str(src) + "x", str(src))  # a sibling sharing the prefix


def test_project_is_the_nearest_folder_with_git(tree: Path) -> None:
    assert project_folder(tree / "project" / "src") == tree / "project" / "src"
    (tree / "project" / ".git").mkdir(exist_ok=True)
    assert project_folder(tree / "project" / "src" / "pkg") == tree / "project"
