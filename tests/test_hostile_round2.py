"""Hostile input, round 2 (issue 22): the holes a second campaign found, as CI meets them.

Every case runs in its own subprocess under the bounds of ``test_hostile`` (address space,
a timeout, an audit hook that kills the process on a connection or subprocess), with its own
environment where it needs one (a scratch cache folder, an SDK config file, a umask). Each ends
with exit 0 or 1, under 500 MB, prints no traceback and nothing from outside the project; the
work-bound cases also end well within the CPU time their unbounded searches took.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hostile_corpus import Case2, generate_round2
from test_hostile import run_all, what_went_wrong

Result = tuple[int, str, str, int, float]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Case2]]:
    yield {case.name: case for case in generate_round2(tmp_path_factory.mktemp("hostile2"))}


@pytest.fixture(scope="module")
def results(corpus: dict[str, Case2]) -> dict[tuple[str, str], Result]:
    return run_all(corpus)


def test_the_corpus_covers_every_class_of_the_second_campaign(corpus: dict[str, Case2]) -> None:
    names = (
        "colon-source-dir", "colon-entry-point", "colon-dependency", "dependency-folder-link",
        "tree-past-the-bound", "planted-cache-mode-666", "planted-cache-folder-777",
        "planted-cache-slow-pattern", "cache-file-is-a-fifo", "cache-file-links-to-dev-zero",
        "cache-file-of-3-gb", "cache-under-umask-000", "micro-batch-1e9",
        "instance-count-1e20-with-model", "4000-ifs-4000-saves", "500kb-of-fstrings",
        "2000-specs-beside-train-py", "nul-in-entry-point", "hidden-size-1e300",
        "config-json-deep", "config-json-5000-digits", "source-dir-link-loop",
        "sdk-config-not-yaml", "file-url-input", "dependency-is-a-number",
        "empty-instance-groups", "bare-role-name", "instance-count-1e100",
        "latin-1-byte-in-a-comment", "json-one-huge-value", "json-9000-unknown-keys",
    )  # fmt: skip
    assert set(names) <= set(corpus)


def test_every_case_ends_in_bounds_with_a_clear_problem_and_leaks_nothing(
    corpus: dict[str, Case2], results: dict[tuple[str, str], Result]
) -> None:
    failures = []
    for (name, command), result in results.items():
        case, out, seconds = corpus[name], result[1], result[4]
        why = what_went_wrong(case, command, result)
        if case.max_seconds is not None and seconds > case.max_seconds:
            why.append(f"{seconds:.1f} s of CPU (bound {case.max_seconds} s)")
        if case.expected and command == case.commands[0] and case.expected not in out:
            why.append(f"no {case.expected!r}")
        if why:
            failures.append(f"{name} / {command}: {', '.join(why)}\n{(out + result[2])[-600:]}")
    assert not failures, "\n\n".join(failures)


def test_a_planted_cache_never_changes_the_verdict(
    corpus: dict[str, Case2], results: dict[tuple[str, str], Result]
) -> None:
    for name in corpus:
        if "cache" in name:
            code, out, *_ = results[(name, "validate")]
            assert code == 1 and "hyperparameters: has 150 entries" in out, (name, out)


def test_a_cache_folder_made_under_umask_000_is_private(corpus: dict[str, Case2]) -> None:
    folder = Path(dict(corpus["cache-under-umask-000"].env)["SAFE_ESTIMATORS_CACHE_DIR"])
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    found = list(folder.rglob("*"))
    files = [f for f in found if f.is_file()]
    assert files and all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in files)
    folders = [f for f in found if f.is_dir()]  # the verdict cache's shards too
    assert all(stat.S_IMODE(f.stat().st_mode) == 0o700 for f in folders), folders


def test_json_output_is_bounded_and_parses(results: dict[tuple[str, str], Result]) -> None:
    for name, command in results:
        if command.startswith("json-"):
            out = results[(name, command)][1]
            assert len(out) < 100_000, (name, command, len(out))
            json.loads(out)
    document = json.loads(results[("json-9000-unknown-keys", "json-validate")][1])
    assert document["files"][0]["omitted"] == 9_000 - 50


_INTERRUPTED = """
import os, signal, sys
sys.argv[0] = "/usr/bin/safe-estimators"
import safe_estimators._cli
os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C after the imports, before main() runs
signal.pause()
"""


def _sigint_as_at_a_terminal() -> None:
    # A shell starts background jobs (and CI's jobs without a terminal) with SIGINT ignored, and
    # a child inherits that: Python then installs no KeyboardInterrupt handler and the Ctrl-C
    # below would be lost. The child gets the default disposition a terminal gives a command.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_while_the_command_loads_prints_no_traceback() -> None:
    before = signal.getsignal(signal.SIGINT)
    proc = subprocess.run(
        [sys.executable, "-c", _INTERRUPTED],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=_sigint_as_at_a_terminal,
    )
    assert proc.returncode == 130
    assert "Traceback" not in proc.stderr and "KeyboardInterrupt" not in proc.stderr
    assert signal.getsignal(signal.SIGINT) is before  # this process: as it was
    assert os.environ.get("HOSTILE_UMASK") is None
