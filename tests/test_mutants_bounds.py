"""The bounded, contained reader (``_bounds.read_contained``) at its boundaries: a file of
exactly the limit is read and one byte more is refused with both sizes; each kind of file that
is not a regular one is named; a link that leaves the project is refused, one that stays in is
read, and without a project anything regular is read. Every file a check reads goes through it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from safe_estimators import _bounds
from safe_estimators._bounds import (
    MAX_DEPTH,
    MAX_DIVISOR_TRIALS,
    MAX_INT_DIGITS,
    MAX_NODES,
    MAX_TREE_DEPTH,
    NotRegular,
    Tree,
    divisors,
    file_kind,
    is_inside,
    markdown_code,
    markdown_text,
    note_read,
    printable,
    project_folder,
    quote,
    read_at_most,
    read_contained,
    read_regular,
    real_path,
    real_project_folder,
    recording_reads,
    shape_problems,
    too_wide_to_package,
    walk_tree,
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


# --- file_kind: the words for each kind of file that is not a regular one --------------------


@pytest.mark.parametrize(
    ("mode", "words"),
    [
        (stat.S_IFDIR, "a folder"),
        (stat.S_IFIFO, "a FIFO"),
        (stat.S_IFCHR, "a device"),
        (stat.S_IFBLK, "a device"),
        (stat.S_IFSOCK, "a socket"),
        (0, "not a regular file"),
    ],
)
def test_each_kind_of_file_has_its_words(mode: int, words: str) -> None:
    # Sockets and block devices cannot be made here (pytest-socket, the container): the mode
    # fstat would give is enough.
    assert file_kind(mode) == words


def test_reading_without_a_project_is_reading_a_regular_file(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_bytes(b"12345")
    assert read_regular(path, 5) == b"12345"
    with pytest.raises(NotRegular) as refused:
        read_regular(path, 4)
    assert str(refused.value) == "is 5 bytes, more than 4"
    with recording_reads() as reads:
        read_regular(path, 5)
    assert reads == [str(path)]


def test_a_read_made_outside_a_recording_is_not_recorded(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_bytes(b"{}")
    with recording_reads() as reads:
        pass
    read_contained(path, 10, tmp_path)
    assert reads == []
    with recording_reads() as reads:
        note_read("relative.json")  # looked for, maybe missing: recorded absolute
    assert reads == [os.path.abspath("relative.json")]


# --- read_at_most: up to the end or the limit ---------------------------------------------------


@pytest.mark.parametrize(
    ("size", "said", "limit", "read"),
    [
        (10, 10, 100, 10),  # what fstat said
        (10, 10, 10, 10),  # exactly the limit
        (10, 10, 4, 4),  # stops at the limit
        (10, 3, 100, 10),  # grew since fstat: read to the end all the same
        (200_000, 10, 150_000, 150_000),  # many reads, stopped at the limit
        (200_000, 200_000, 1_000_000, 200_000),
        (0, 0, 10, 0),
    ],
)
def test_read_at_most_reads_to_the_end_or_the_limit(
    tmp_path: Path, size: int, said: int, limit: int, read: int
) -> None:
    data = bytes(range(256)) * (size // 256) + bytes(range(size % 256))
    path = tmp_path / "data.bin"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert read_at_most(fd, said, limit) == data[:read]
    finally:
        os.close(fd)


# --- divisors -----------------------------------------------------------------------------------


def test_divisors_in_increasing_order_each_once() -> None:
    assert divisors(1) == [1]
    assert divisors(7) == [1, 7]
    assert divisors(12) == [1, 2, 3, 4, 6, 12]
    assert divisors(16) == [1, 2, 4, 8, 16]  # a square's root once
    assert divisors(0) == []
    assert all(type(d) is int for d in divisors(12))


def _paired(number: int) -> list[int]:
    small = [d for d in range(1, MAX_DIVISOR_TRIALS + 1) if number % d == 0]
    return sorted({*small, *(number // d for d in small)})


def test_divisors_past_the_trials_are_those_paired_with_a_small_one() -> None:
    assert MAX_DIVISOR_TRIALS == 100_000
    # 10^5 itself is tried (and 100,001 found as its pair)...
    assert divisors(100_000 * 100_001) == _paired(100_000 * 100_001)
    assert 100_000 in divisors(100_000 * 100_001)
    # ... but not 100,001, the root of 100,001^2, which has no small pair of its own
    assert divisors(100_001**2) == _paired(100_001**2)
    assert 100_001 not in divisors(100_001**2)


# --- printable, markdown_text, markdown_code: what reaches a terminal or a notebook ---------


def test_printable_escapes_control_characters_only() -> None:
    assert printable("plain text, é, \\ and 'quotes'") == "plain text, é, \\ and 'quotes'"
    assert printable("a\nb\x1b[31m\tc\\d ") == "a\\nb\\x1b[31m\\tc\\d "


def test_markdown_text_renders_as_the_text_itself() -> None:
    assert markdown_text("a <b> & [c](https://x.com) | `d` \\ www.e.org\n") == (
        "a &lt;b&gt; &amp; \\[c\\](https\\://x.com) \\| \\`d\\` \\\\ www\\.e.org\\\\n"
    )


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("a|b", "`a\\|b`"),
        ("x `y` z", "``x `y` z``"),
        ("x ```y", "````x ```y````"),
        ("`a", "`` `a ``"),
        ("a`", "`` a` ``"),
        ("`a`", "`` `a` ``"),
        ("a\nb", "`a\\nb`"),
        ("", "``"),
    ],
)
def test_markdown_code_keeps_its_span_closed(text: str, shown: str) -> None:
    assert markdown_code(text) == shown


# --- quote: a value in a message --------------------------------------------------------------

HUB = "hf_" + "A" * 36


class _PipelineVariable:
    """Shaped as a SageMaker Pipelines parameter: an expression, a default, ``to_string``."""

    expr = {"Get": "Parameters.Token"}

    def __init__(self, default: str) -> None:
        self.default_value = default

    def to_string(self) -> _PipelineVariable:
        return self

    def __repr__(self) -> str:
        return f"Param(default_value={self.default_value!r})"


class _BadRepr:
    def __repr__(self) -> str:
        raise ValueError("no")


def test_quote_shows_an_integer_of_more_than_256_bits_by_its_digits() -> None:
    assert quote(2**256) == "an integer of about 77 digits"  # 257 bits
    assert quote(2**255) == str(2**255)  # 256 bits: printed
    assert quote(2**256 - 1) == str(2**256 - 1)
    assert quote(10**1000) == "an integer of about 1,000 digits"


def test_quote_hides_what_looks_like_a_credential_wherever_it_is() -> None:
    hidden = "'hf_A'… (39 characters)"
    assert quote(HUB) == hidden
    assert quote(["--hub_token", HUB]) == f"['--hub_token', {hidden}]"
    assert quote(("--hub_token", HUB)) == f"('--hub_token', {hidden})"
    assert quote({"password": "hunter2", "x": 1}) == "{'password': 'h'… (7 characters), 'x': 1}"
    assert quote(_PipelineVariable(HUB)) == hidden
    assert quote(_PipelineVariable("x")) == "Param(default_value='x')"
    assert quote("plain") == "'plain'"


def test_quote_cuts_at_the_limit_with_the_length() -> None:
    assert quote("abcdefgh", 10) == "'abcdefgh'"  # exactly 10 characters
    assert quote("abcdefghi", 10) == "'abcdefgh… (11 characters)"
    assert quote("a\x1b", 10) == "'a\\x1b'"


def test_quote_never_raises_for_a_users_object() -> None:
    assert quote(_BadRepr()) == "<_BadRepr object whose repr() raised ValueError>"
    assert quote(None) == "None"


# --- shape_problems: what CreateTrainingJob could not carry -----------------------------------


def _shapes(data: object, path: str = "") -> list[tuple[str, str, str]]:
    return [(p.path, p.message, p.hint) for p in shape_problems(data, path)]


TOO_MANY = (
    f"holds more than {MAX_NODES:,} values; CreateTrainingJob cannot carry that many.",
    "move data into a file in source_dir or S3 and pass its path.",
)


def test_exactly_max_nodes_values_pass_and_one_more_is_refused_where_the_bulk_is() -> None:
    # The spec itself, "distribution", "x" and the values: MAX_NODES in all.
    values = {f"k{i}": "v" for i in range(MAX_NODES - 3)}
    assert _shapes({"distribution": {"x": values}}) == []
    values["one more"] = "v"
    assert _shapes({"distribution": {"x": values}}) == [("distribution", *TOO_MANY)]
    assert _shapes({"distribution": {"x": values}}, "job") == [("job.distribution", *TOO_MANY)]
    # counted the same when the values are containers, and when the bulk is at the top
    containers = {f"k{i}": {} for i in range(MAX_NODES - 1)}
    assert _shapes({"x": containers}) == [("x", *TOO_MANY)]
    assert _shapes(["v"] * MAX_NODES, "hyperparameters") == [("hyperparameters.19999", *TOO_MANY)]
    assert _shapes(["v"] * (MAX_NODES - 1)) == []


def test_too_many_values_counted_out_on_an_empty_key_are_the_specs() -> None:
    values = {f"k{i}": "v" for i in range(MAX_NODES - 1)}
    values[""] = "v"  # the last value, the one over, has no name
    assert _shapes(values) == [("<spec>", *TOO_MANY)]
    assert _shapes(values, "job") == [("job", *TOO_MANY)]
    assert _shapes({"XLA": ["v"] * MAX_NODES}) == [("XLA", *TOO_MANY)]


def _nested(levels: int) -> object:
    value: object = "leaf"
    for _ in range(levels):
        value = {"a": value}
    return value


def test_nesting_of_exactly_max_depth_levels_passes_and_one_more_is_refused() -> None:
    assert MAX_DEPTH == 64
    assert _shapes(_nested(MAX_DEPTH)) == []
    # refused once, at the container that is one level too deep, however deep it goes on
    deep = ".".join(["a"] * MAX_DEPTH)
    expected = (
        deep,
        f"is nested more than {MAX_DEPTH} levels deep.",
        "flatten it, or put the structure in a file in source_dir.",
    )
    assert _shapes(_nested(MAX_DEPTH + 1)) == [expected]
    assert _shapes(_nested(MAX_DEPTH + 5)) == [expected]


def _too_long(path: str, shown: str) -> tuple[str, str, str]:
    return (
        path,
        f"is {shown}: longer than any number CreateTrainingJob accepts (2,500 characters at "
        "most, as a hyperparameter).",
        "write the number you mean.",
    )


def _not_finite(path: str, shown: str) -> tuple[str, str, str]:
    return (
        path,
        f"is {shown}; the CreateTrainingJob request is JSON, which has no NaN or Infinity.",
        "write a finite number.",
    )


def test_numbers_json_cannot_carry_are_refused_each_where_it_is() -> None:
    assert MAX_INT_DIGITS == 2_500
    longest = 2**8325 - 1  # 8,325 bits: 2,500 decimal digits times 3.33 bits each
    assert _shapes({"x": [longest, 1.5, True, None]}) == []
    assert _shapes({"hyperparameters": {"n": longest + 1, "lr": float("nan")}}) == [
        _too_long("hyperparameters.n", "an integer of about 2,506 digits"),
        _not_finite("hyperparameters.lr", "nan"),
    ]
    assert _shapes([float("inf"), 2**9000]) == [
        _not_finite("0", "inf"),
        _too_long("1", "an integer of about 2,709 digits"),
    ]
    assert _shapes(float("-inf")) == [_not_finite("<spec>", "-inf")]
    assert _shapes(2**9000, "hyperparameters") == [
        _too_long("hyperparameters", "an integer of about 2,709 digits")
    ]
    assert _shapes(2**9000) == [_too_long("<spec>", "an integer of about 2,709 digits")]


def test_a_value_that_contains_itself_is_refused_once_and_a_shared_one_is_not() -> None:
    cycle: dict[str, object] = {"a": 1}
    cycle["self"] = cycle
    expected = (
        "self",
        "contains itself (a cycle); it cannot be encoded for CreateTrainingJob.",
        "pass plain data without self-references.",
    )
    assert _shapes(cycle) == [expected]
    assert _shapes({"x": cycle}) == [("x.self", *expected[1:])]
    loop: list[object] = []
    loop.append(loop)
    assert _shapes(loop) == [("0", *expected[1:])]
    shared = {"k": [1, 2]}
    assert _shapes({"a": shared, "b": shared, "c": [shared, shared]}) == []


def test_every_kind_of_container_is_walked_and_other_objects_are_left_alone() -> None:
    from types import MappingProxyType

    nan = float("nan")
    assert _shapes({"a": MappingProxyType({"b": nan})}) == [_not_finite("a.b", "nan")]
    assert _shapes({"a": frozenset([nan])}) == [_not_finite("a.0", "nan")]
    assert _shapes({"a": (1, nan)}) == [_not_finite("a.1", "nan")]
    assert _shapes({"a": {}, "b": [], "c": nan}) == [_not_finite("c", "nan")]
    assert _shapes([object(), nan]) == [_not_finite("1", "nan")]
    # a key that is not a string is shown quoted (cut to 40 characters)
    assert _shapes({5: {None: nan}}) == [_not_finite("5.None", "nan")]
    key = ("k" * 50,)
    assert _shapes({key: nan}) == [_not_finite("('" + "k" * 37 + "… (55 characters)", "nan")]


def test_a_mapping_that_cannot_be_read_is_one_problem_at_the_top() -> None:
    from collections import UserDict

    class Broken(UserDict):  # type: ignore[type-arg]
        def items(self):  # type: ignore[no-untyped-def]
            raise RuntimeError("no")

    expected = (
        "could not be read: RuntimeError raised by one of the values passed.",
        "pass plain dicts, lists, strings and numbers.",
    )
    assert _shapes({"a": Broken()}) == [("<spec>", *expected)]
    assert _shapes({"a": Broken()}, "environment") == [("environment", *expected)]


# --- real_path, is_inside, too_wide_to_package, the project folder ----------------------------


def test_real_path_resolves_links_and_keeps_what_names_no_file(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f.txt").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "a")
    real = os.path.realpath(tmp_path)
    assert real_path(tmp_path / "link" / "f.txt") == f"{real}/a/f.txt"
    assert real_path(tmp_path / "link") == f"{real}/a"
    assert real_path(tmp_path / "link" / "missing") == f"{real}/a/missing"
    assert real_path(tmp_path / "dangling") == f"{real}/dangling"
    assert real_path("a\0b") == os.path.abspath("a\0b")  # names no file: not resolved


def test_real_path_of_a_fifo_does_not_wait_for_a_writer(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "to-pipe").symlink_to(tmp_path / "pipe")
    assert real_path(tmp_path / "to-pipe") == os.path.realpath(tmp_path / "pipe")


def test_is_inside_the_root_of_the_file_system() -> None:
    assert is_inside("/work/x", "/")
    assert is_inside("/", "/")
    assert not is_inside("/work", "/work/x")


def test_the_root_and_home_folders_are_too_wide_to_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    (tmp_path / "to-root").symlink_to("/")
    assert too_wide_to_package("/") == "is the root of the file system"
    assert too_wide_to_package(tmp_path / "to-root") == "is the root of the file system"
    assert too_wide_to_package(home) == "is a home folder"
    assert too_wide_to_package("/home/alice", resolved=True) == "is a home folder"
    assert too_wide_to_package("/root", resolved=True) == "is a home folder"
    assert too_wide_to_package(tmp_path) is None
    assert too_wide_to_package("/home", resolved=True) is None
    assert too_wide_to_package("/root/project", resolved=True) is None


def test_the_project_is_the_nearest_folder_above_holding_git(tmp_path: Path) -> None:
    repository = tmp_path / "repo"
    (repository / ".git").mkdir(parents=True)
    (repository / "a" / "b").mkdir(parents=True)
    (tmp_path / "loose").mkdir()
    (tmp_path / "link").symlink_to(repository / "a")
    assert real_project_folder(repository / "a" / "b") == os.path.realpath(repository)
    assert real_project_folder(repository) == os.path.realpath(repository)
    assert real_project_folder(tmp_path / "link" / "b") == os.path.realpath(repository)
    assert project_folder(repository / "a") == Path(os.path.realpath(repository))
    # without one, the folder itself (tmp_path is in no repository)
    assert real_project_folder(tmp_path / "loose") == os.path.realpath(tmp_path / "loose")


# --- walk_tree: what the SDK would package from source_dir ---------------------------------


def _source_tree(base: Path) -> Path:
    root = base / "root"
    for folder in ("sub/inner", "zeta"):
        (root / folder).mkdir(parents=True)
    (base / "out").mkdir()
    for name in ("out/secret.txt", "root/a.py", "root/b.txt", "root/sub/c.py"):
        (base / name).write_text("x")
    (root / "sub" / "inner" / "d.py").write_text("x")
    (root / "zeta" / "e.txt").write_text("x")
    (root / "a_out").symlink_to(base / "out" / "secret.txt")  # leaves the root
    (root / "b_broken").symlink_to("nowhere")
    (root / "c_loop").symlink_to(".")
    (root / "a_link").symlink_to("sub")  # reached first: sub is walked through it
    (root / "sub" / "inner" / "up").symlink_to("..")  # the folder it is in, reached by a link
    (root / "d_file_link").symlink_to("b.txt")
    os.mkfifo(root / "f_fifo")
    return root


def test_a_walk_lists_files_and_each_kind_of_link_it_did_not_follow(tmp_path: Path) -> None:
    root = _source_tree(tmp_path)
    r = os.path.realpath(root)
    assert walk_tree(root) == Tree(
        files=(
            f"{r}/a.py",
            f"{r}/b.txt",
            f"{r}/d_file_link",
            f"{r}/zeta/e.txt",
            f"{r}/a_link/c.py",
            f"{r}/a_link/inner/d.py",
        ),
        outside_links=((f"{r}/a_out", os.path.realpath(tmp_path / "out" / "secret.txt")),),
        truncated=None,
        too_deep=False,
        python_files=(f"{r}/a.py", f"{r}/a_link/c.py", f"{r}/a_link/inner/d.py"),
        broken_links=(f"{r}/b_broken",),
        looping_links=(f"{r}/c_loop", f"{r}/a_link/inner/up"),
    )
    # through a link to it, the same real paths
    (tmp_path / "to-root").symlink_to(root)
    assert walk_tree(tmp_path / "to-root") == walk_tree(root)
    assert walk_tree(r, resolved=True) == walk_tree(root)


def test_a_walk_stops_past_max_tree_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text("x")
    (tmp_path / "d_out").symlink_to("/")
    (tmp_path / "e_broken").symlink_to("nowhere")
    (tmp_path / "f_loop").symlink_to(".")
    r = os.path.realpath(tmp_path)
    monkeypatch.setattr(_bounds, "MAX_TREE_ENTRIES", 6)
    assert walk_tree(tmp_path).truncated is None  # exactly the limit
    (tmp_path / "g.py").write_text("x")
    assert walk_tree(tmp_path) == Tree(
        files=(f"{r}/a.py", f"{r}/b.py", f"{r}/c.py"),
        outside_links=((f"{r}/d_out", "/"),),
        truncated="more than 6 entries",
        too_deep=False,
        python_files=(f"{r}/a.py", f"{r}/b.py", f"{r}/c.py"),
        broken_links=(f"{r}/e_broken",),
        looping_links=(f"{r}/f_loop",),
    )


def test_a_walk_stops_at_max_tree_depth(tmp_path: Path) -> None:
    assert MAX_TREE_DEPTH == 100
    (tmp_path / "a_out").symlink_to("/")
    (tmp_path / "b_broken").symlink_to("nowhere")
    (tmp_path / "c_loop").symlink_to(".")
    r = os.path.realpath(tmp_path)
    deepest = tmp_path.joinpath(*["d"] * (MAX_TREE_DEPTH - 1))  # 99 folders below the root
    deepest.mkdir(parents=True)
    (deepest / "x.py").write_text("x")
    found = walk_tree(tmp_path)
    assert (found.truncated, found.too_deep) == (None, False)
    assert found.files == (os.path.join(r, *["d"] * (MAX_TREE_DEPTH - 1), "x.py"),)
    (deepest / "e").mkdir()  # the 100th
    assert walk_tree(tmp_path) == Tree(
        files=(),
        outside_links=((f"{r}/a_out", "/"),),
        truncated="folders nested over 100 deep",
        too_deep=True,
        python_files=(),
        broken_links=(f"{r}/b_broken",),
        looping_links=(f"{r}/c_loop",),
    )


def _settled(folder: Path) -> None:
    """Give ``folder`` a modification time an hour ago: a folder no one is changing."""
    hour_ago = os.stat(folder).st_mtime_ns - 3600 * 10**9
    os.utime(folder, ns=(hour_ago, hour_ago))


def test_a_settled_folder_is_walked_once_until_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_bounds, "_WALKS", {})
    (tmp_path / "a.py").write_text("x")
    _settled(tmp_path)
    first = walk_tree(tmp_path)
    assert walk_tree(tmp_path) is first
    (tmp_path / "b.py").write_text("x")  # moves the folder's time
    changed = walk_tree(tmp_path)
    assert changed.files == (f"{tmp_path}/a.py", f"{tmp_path}/b.py")


def test_a_folder_changed_just_now_is_walked_again_even_if_its_time_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A file system with coarse timestamps may not move the folder's time for a change made
    # within its granularity: such a walk is not remembered.
    monkeypatch.setattr(_bounds, "_WALKS", {})
    (tmp_path / "a.py").write_text("x")
    now = os.stat(tmp_path).st_mtime_ns
    assert walk_tree(tmp_path).files == (f"{tmp_path}/a.py",)
    (tmp_path / "b.py").write_text("x")
    os.utime(tmp_path, ns=(now, now))
    assert walk_tree(tmp_path).files == (f"{tmp_path}/a.py", f"{tmp_path}/b.py")


def test_at_most_16_walks_are_remembered_the_oldest_forgotten_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_bounds, "_WALKS", {})
    folders = [tmp_path / str(i) for i in range(20)]
    walks = []
    for folder in folders:
        folder.mkdir()
        _settled(folder)
        walks.append(walk_tree(folder))
        assert len(_bounds._WALKS) <= 16
    assert walk_tree(folders[19]) is walks[19]
    assert walk_tree(folders[4]) is walks[4]
    assert walk_tree(folders[3]) is not walks[3]


def test_a_folder_the_walk_cannot_list_is_skipped_and_the_others_walked(tmp_path: Path) -> None:
    # Seventeen folders of 255-character names: the deepest path is longer than PATH_MAX (4,096),
    # so listing it fails (ENAMETOOLONG); the walk goes on with the folders left.
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f.py").write_text("x")
    name = "z" * 255
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        for _ in range(17):
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
    finally:
        os.close(fd)
    found = walk_tree(tmp_path)
    assert found.files == (f"{os.path.realpath(tmp_path)}/a/f.py",)
    assert (found.truncated, found.too_deep) == (None, False)


def test_a_file_larger_than_fstat_said_is_refused_once_read_past_the_limit() -> None:
    # procfs files say 0 bytes and hold more: the size is checked again on what was read
    with pytest.raises(NotRegular) as refused:
        read_regular("/proc/self/status", 10)
    assert str(refused.value) == "is more than 10 bytes"
    assert read_regular("/proc/self/status", 100_000).startswith(b"Name:")


def test_the_limits_hold_at_the_boundary_for_containers_and_a_lone_number() -> None:
    # MAX_NODES values with the last one a container (counted where containers are opened)
    assert _shapes({"x": {f"k{i}": {} for i in range(MAX_NODES - 2)}}) == []
    # the longest number CreateTrainingJob accepts, given on its own
    assert _shapes(2**8325 - 1) == []


def test_the_walk_stops_at_a_cycle_or_at_the_depth_limit() -> None:
    # one problem per kind: past a value that contains itself, or one nested too deep, the rest
    # is not read (it may be the same structure again)
    cycle: dict[str, object] = {}
    cycle["self"] = cycle
    found = _shapes({"a": cycle, "b": float("nan")})
    assert [path for path, _, _ in found] == ["a.self"]
    found = _shapes({"a": _nested(MAX_DEPTH + 1), "b": float("nan")})
    assert [path for path, _, _ in found] == [".".join(["a"] * MAX_DEPTH)]
