"""The bounded, contained reader (``_bounds.read_contained``) at its boundaries: a file of
exactly the limit is read and one byte more is refused with both sizes; each kind of file that
is not a regular one is named; a link that leaves the project is refused, one that stays in is
read, and without a project anything regular is read. Every file a check reads goes through it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from safe_estimators._bounds import (
    NotRegular,
    is_inside,
    read_contained,
    read_regular,
    recording_reads,
)

pytestmark = pytest.mark.both_sdks


def test_a_file_of_exactly_the_limit_is_read(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(b"x" * 1000)
    assert read_contained(path, 1000, tmp_path) == b"x" * 1000
    assert read_regular(path, 1000) == b"x" * 1000


def test_one_byte_over_the_limit_is_refused_with_both_sizes(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(b"x" * 1001)
    with pytest.raises(NotRegular) as refused:
        read_contained(path, 1000, tmp_path)
    assert str(refused.value) == "is 1,001 bytes, more than 1,000"


def test_an_empty_file_is_read_as_empty(tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    path.write_bytes(b"")
    assert read_contained(path, 1000, tmp_path) == b""


def test_a_file_larger_than_one_read_is_read_whole(tmp_path: Path) -> None:
    data = bytes(range(256)) * 1024  # 256 kB: several reads of 64 kB
    path = tmp_path / "big.bin"
    path.write_bytes(data)
    assert read_contained(path, len(data), tmp_path) == data


def test_a_folder_is_named_a_folder(tmp_path: Path) -> None:
    with pytest.raises(NotRegular) as refused:
        read_contained(tmp_path, 1000, tmp_path)
    assert str(refused.value) == "is a folder, not a regular file"


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(NotRegular) as refused:
        read_contained(fifo, 1000, tmp_path)
    assert str(refused.value) == "is a FIFO, not a regular file"


def test_a_device_is_refused(tmp_path: Path) -> None:
    with pytest.raises(NotRegular) as refused:
        read_contained("/dev/null", 1000, None)
    assert str(refused.value) == "is a device, not a regular file"


def test_a_link_leaving_the_project_is_refused_and_one_inside_is_read(tmp_path: Path) -> None:
    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("outside")
    (project / "data.txt").write_text("inside")
    (project / "out.txt").symlink_to(outside / "secret.txt")
    (project / "in.txt").symlink_to(project / "data.txt")
    with pytest.raises(NotRegular) as refused:
        read_contained(project / "out.txt", 1000, project)
    assert str(refused.value) == "links to a file outside the project"
    assert read_contained(project / "in.txt", 1000, project) == b"inside"
    # Without a project (root None) any regular file is read, wherever a link points.
    assert read_contained(project / "out.txt", 1000, None) == b"outside"


def test_a_sibling_folder_sharing_the_projects_name_as_prefix_is_outside(tmp_path: Path) -> None:
    project, sibling = tmp_path / "project", tmp_path / "project-old"
    project.mkdir()
    sibling.mkdir()
    (sibling / "x.txt").write_text("x")
    (project / "x.txt").symlink_to(sibling / "x.txt")
    with pytest.raises(NotRegular):
        read_contained(project / "x.txt", 1000, project)
    assert is_inside(str(project), str(project))
    assert is_inside(str(project / "a"), str(project) + os.sep)
    assert not is_inside(str(sibling), str(project))


def test_a_missing_file_is_the_open_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_contained(tmp_path / "missing.json", 1000, tmp_path)


def test_every_file_read_is_recorded_for_the_verdict_cache(tmp_path: Path) -> None:
    # The verdict cache keys a verdict by the bytes of every file it read, refused ones too.
    (tmp_path / "a.json").write_text("{}")
    with recording_reads() as reads:
        read_contained(tmp_path / "a.json", 1000, tmp_path)
        with pytest.raises(NotRegular):
            read_contained(tmp_path, 1000, tmp_path)
    assert reads == [str(tmp_path / "a.json"), str(tmp_path)]
