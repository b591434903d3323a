"""The limits read from botocore's model are the same whether they come from the cache or not.

The cache (safe_estimators._facts.limits) holds the shapes reachable from ``limits.ROOTS``; a
later process reads it instead of botocore's whole model. Whatever happens to the cache file, the
limits (and so every verdict) must be the ones botocore's file gives.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from safe_estimators import _cache
from safe_estimators._facts import limits
from safe_estimators._resolve import check_arguments
from safe_estimators._rules.request import MEMBERS
from safe_estimators._spec_files.read import read_spec_data, relative_to_file

EXAMPLES = Path(__file__).parent.parent / "examples"
GOLDEN = Path(__file__).parent / "fixtures" / "golden-requests.json"
_CACHED = (
    limits._subset,
    limits._pattern,
    limits.environment_limit,
    limits.hyperparameters_limit,
    limits.instance_groups_limit,
)


def _forget() -> None:
    """Forget what this process loaded, as a fresh process would."""
    for function in _CACHED:
        function.cache_clear()
    _cache.take_doubts()  # what this test's cache files caused is not a later test's warning


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty cache folder for one test; the process's caches forgotten before and after."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("SAFE_ESTIMATORS_CACHE_DIR", str(cache))
    _forget()
    yield cache
    _forget()


def _reference() -> dict[str, Any]:
    """The subset derived from botocore's own file, without any cache."""
    return limits.derive_subset(limits._model())


def _cache_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """From here on, reading botocore's whole model fails the test, except for the patterns
    that are not linear to match: those are always taken from botocore's file."""
    model = limits._model()

    def refuse() -> dict[str, Any]:
        raise AssertionError("read botocore's whole model")

    monkeypatch.setattr(limits, "_model", refuse)
    monkeypatch.setattr(limits, "_source_pattern", lambda name: model[name].get("pattern"))


def _the_cache_file(folder: Path) -> Path:
    (path,) = folder.iterdir()
    return path


def _limits() -> tuple[object, ...]:
    return (
        limits.hyperparameters_limit(),
        limits.environment_limit(),
        limits.instance_groups_limit(),
        limits.training_instance_types(),
        {name: limits.member_shape(member.member) for name, member in MEMBERS.items()},
    )


# --- the subset --------------------------------------------------------------------------------


def test_the_subset_is_closed_and_is_botocores_shapes_without_documentation():
    model = limits._model()
    subset = _reference()
    assert limits._well_formed(subset)
    assert set(limits.ROOTS) <= set(subset)
    for name, shape in subset.items():
        assert "documentation" not in shape
        assert {k: v for k, v in model[name].items() if k not in ("documentation", "members")} == {
            k: v for k, v in shape.items() if k != "members"
        }
        for member, entry in shape.get("members", {}).items():
            # Beside each member, only the maximum its documentation states in words.
            expected = {
                k: v for k, v in model[name]["members"][member].items() if k != "documentation"
            }
            if limits.DOCUMENTED_MAXIMUM in entry:
                expected[limits.DOCUMENTED_MAXIMUM] = entry[limits.DOCUMENTED_MAXIMUM]
            assert entry == expected
    # A few percent of the model, which is the point.
    assert len(subset) < len(model) / 10


def test_the_cache_holds_the_subset_derived_from_botocore(folder, monkeypatch):
    derived = limits._subset()
    assert derived == _reference()
    path = _the_cache_file(folder)
    assert path.stat().st_size < 100_000
    _forget()
    _cache_only(monkeypatch)
    assert limits._subset() == derived


def test_every_limit_and_member_the_rules_ask_for_is_in_the_subset(folder, monkeypatch):
    cold = _limits()
    _forget()
    _cache_only(monkeypatch)
    assert _limits() == cold


def _jobs() -> list[dict[str, Any]]:
    jobs = []
    for spec in sorted(EXAMPLES.glob("*/job.*")):
        data, problems = read_spec_data(spec)
        assert data is not None, problems
        data.pop("inputs", None)
        jobs.append(relative_to_file(spec.parent, data))
    wrong = dict(jobs[0])
    wrong.update(
        base_job_name="bert_mlm!",
        volume_size=0,
        max_run=-5,
        max_retry_attempts=31,
        tags=[{"Key": "bad,comma", "Value": "x"}] * 51,
        subnets=[],
        security_group_ids=[f"sg-{i}" for i in range(6)],
        input_mode="Stream",
        output_path="my-bucket/out",
        checkpoint_s3_uri="s3://bucket/ckpt",
        metric_definitions=[{"Name": "loss", "Regex": "x"}] * 41,
        hyperparameters={f"h{i}": i for i in range(101)},
        environment={"K" * 600: "v"},
        role="arn:aws:iam::111122223333:role/Role",
    )
    groups = dict(jobs[0])
    groups.pop("instance_type")
    groups.pop("instance_count")
    groups["instance_groups"] = [
        {"instance_group_name": "g" * 70, "instance_type": "ml.p3.2xlarge", "instance_count": 1},
        *(
            {"instance_group_name": f"g{i}", "instance_type": "ml.p3.2xlarge", "instance_count": 1}
            for i in range(6)
        ),
    ]
    return [*jobs, wrong, groups]


def _verdicts() -> list[list[str]]:
    return [
        sorted(f"{p.severity} {p.path}: {p.message} Fix: {p.hint}" for p in check_arguments(job)[1])
        for job in _jobs()
    ]


def _request_problems() -> list[list[tuple[str, str]]]:
    # The recorded requests, with a real job name for the placeholder.
    requests = {
        name: {**request, "TrainingJobName": "job-2000-01-01-00-00-00-000"}
        for name, request in json.loads(GOLDEN.read_text()).items()
    }
    broken = dict(next(iter(requests.values())))
    broken["ResourceConfig"] = {**broken["ResourceConfig"], "VolumeSizeInGB": 0, "Bogus": 1}
    broken["Tags"] = [{"Key": "", "Value": "x" * 300}]
    return [
        limits.shape_problems(request, limits.REQUEST_SHAPE)
        for request in [*requests.values(), broken]
    ]


def test_verdicts_are_the_same_from_the_cache_and_from_botocores_whole_model(folder, monkeypatch):
    limits._subset()  # writes the cache
    _forget()
    with monkeypatch.context() as whole:
        whole.setattr(limits, "_subset", limits._model)  # the cache forced off
        verdicts, requests = _verdicts(), _request_problems()
        limits._pattern.cache_clear()
    _forget()
    _cache_only(monkeypatch)  # the cache forced on: nothing may need the whole model
    assert _verdicts() == verdicts
    assert _request_problems() == requests
    # The jobs exercise the checks: the wrong ones are refused, with limits from the model.
    assert verdicts[-1] and any("maximum" in p for p in verdicts[-2])
    assert requests[-1] and not any(requests[:-1])


def test_a_shape_outside_the_subset_is_read_from_the_whole_model(folder):
    outside = next(name for name in limits._model() if name not in _reference())
    assert limits._shape(outside) == limits._model()[outside]


# --- falling back ------------------------------------------------------------------------------


def _botocore_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of botocore's model file that the limits are read from."""
    copy = tmp_path / "botocore" / "service-2.json.gz"
    copy.parent.mkdir()
    shutil.copy2(limits._model_file(), copy)
    monkeypatch.setattr(limits, "_model_file", lambda: copy)
    monkeypatch.setattr(limits, "_model", limits._model.__wrapped__)  # never keep a stale model
    return copy


def _rewrite(model: Path, edit: Any) -> None:
    with gzip.open(model, "rt", encoding="utf-8") as file:
        document = json.load(file)
    edit(document["shapes"])
    with gzip.open(model, "wt", encoding="utf-8") as file:
        json.dump(document, file)


def test_an_upgraded_botocore_is_never_served_from_a_stale_cache(folder, tmp_path, monkeypatch):
    model = _botocore_copy(tmp_path, monkeypatch)
    assert limits.hyperparameters_limit().max_entries == 100
    assert _the_cache_file(folder).exists()

    def edit(shapes: dict[str, Any]) -> None:
        shapes["HyperParameters"]["max"] = 7

    _rewrite(model, edit)
    _forget()
    assert limits.hyperparameters_limit().max_entries == 7
    _forget()
    _cache_only(monkeypatch)
    assert limits.hyperparameters_limit().max_entries == 7  # and the cache was renewed


def test_a_model_file_with_a_new_mtime_is_derived_again(folder, tmp_path, monkeypatch):
    # Same size, same bytes: the modification time alone must invalidate the cache.
    model = _botocore_copy(tmp_path, monkeypatch)
    limits._subset()
    old = json.loads(_the_cache_file(folder).read_bytes().partition(b"\n")[0])["key"]
    later = model.stat().st_mtime_ns + 1_000_000_000
    os.utime(model, ns=(later, later))
    _forget()
    reads = []
    whole = limits._model
    monkeypatch.setattr(limits, "_model", lambda: reads.append(1) or whole())
    assert limits._subset() == _reference()
    assert reads
    new = json.loads(_the_cache_file(folder).read_bytes().partition(b"\n")[0])["key"]
    assert new == {**old, "mtime_ns": later}


def test_a_changed_set_of_roots_is_derived_again(folder, monkeypatch):
    limits._subset()
    _forget()
    monkeypatch.setattr(limits, "ROOTS", (*limits.ROOTS, "AlgorithmSpecification"))
    assert "TrainingInputMode" in limits._subset()  # AlgorithmSpecification's members, derived
    assert limits._read_cache(_the_cache_file(folder), limits._cache_key(limits._model_file()))


def _valid_file(folder: Path) -> tuple[bytes, dict[str, Any]]:
    limits._subset()
    header, _, body = _the_cache_file(folder).read_bytes().partition(b"\n")
    return body, json.loads(header)


def _with_checksum(body: bytes, header: dict[str, Any]) -> bytes:
    return json.dumps({**header, "crc32": zlib.crc32(body)}).encode() + b"\n" + body


def _corruptions(body: bytes, header: dict[str, Any]) -> dict[str, bytes]:
    subset = json.loads(body)
    no_root = {k: v for k, v in subset.items() if k != "HyperParameters"}
    dangling = {k: v for k, v in subset.items() if k != "HyperParameterKey"}
    no_type = {**subset, "VolumeSizeInGB": {"max": 10**9}}
    whole = json.dumps(header).encode() + b"\n" + body
    return {
        "empty": b"",
        "truncated": whole[: len(whole) // 2],
        "not json": b"\x00\xff garbage\n{",
        "a flipped byte": whole.replace(b'"max":100', b'"max":900', 1),
        "header is a list": b"[1, 2]\n" + body,
        "body is a list": _with_checksum(b"[]", header),
        "a root missing": _with_checksum(json.dumps(no_root).encode(), header),
        "a dangling reference": _with_checksum(json.dumps(dangling).encode(), header),
        "a shape without a type": _with_checksum(json.dumps(no_type).encode(), header),
        "deeply nested": _with_checksum(b"[" * 100_000, header),
    }


@pytest.mark.parametrize("corruption", list(_corruptions(b"{}", {})))
def test_a_corrupt_cache_file_falls_back_to_botocore_and_is_rewritten(
    corruption, folder, monkeypatch
):
    body, header = _valid_file(folder)
    expected = _limits()
    path = _the_cache_file(folder)
    corrupt = _corruptions(body, header)[corruption]
    assert corrupt != path.read_bytes()
    path.write_bytes(corrupt)
    _forget()
    assert _limits() == expected
    assert limits._subset() == _reference()
    _forget()
    _cache_only(monkeypatch)
    assert _limits() == expected


@pytest.mark.parametrize("where", ["under a file", "a file", "a NUL in the name", "no home"])
def test_an_unusable_cache_folder_falls_back_silently(where, folder, tmp_path, monkeypatch):
    expected = _limits()
    _forget()
    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder")
    if where == "under a file":
        monkeypatch.setenv("SAFE_ESTIMATORS_CACHE_DIR", str(blocker / "cache"))
    elif where == "a file":
        monkeypatch.setenv("SAFE_ESTIMATORS_CACHE_DIR", str(blocker))
    elif where == "a NUL in the name":
        monkeypatch.setattr(limits, "cache_folder", lambda: tmp_path / "ca\0che")
    else:
        monkeypatch.setattr(limits, "cache_folder", lambda: None)
    assert _limits() == expected
    assert limits._subset() == _reference()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blocker", folder.name]
    assert blocker.read_text() == "not a folder"


def test_a_read_only_cache_folder_falls_back_silently(folder, monkeypatch):
    expected = _limits()
    _forget()

    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError("read-only file system")

    monkeypatch.setattr(_cache.os, "replace", refuse)
    shutil.rmtree(folder)
    assert _limits() == expected
    assert list(folder.iterdir()) == []  # the temporary file is removed


def test_concurrent_writers_leave_one_whole_file(folder):
    subset = _reference()
    model = limits._model_file()
    key = limits._cache_key(model)
    path = limits._cache_file(folder, model)
    writers = [
        threading.Thread(target=limits._write_cache, args=(path, key, subset)) for _ in range(8)
    ]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    assert [p.name for p in folder.iterdir()] == [path.name]
    assert limits._read_cache(path, key) == subset


# --- where the cache lives ---------------------------------------------------------------------


def test_the_cache_folder_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SAFE_ESTIMATORS_CACHE_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert limits.cache_folder() == tmp_path / "home" / ".cache" / "safe-estimators"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # ignored, as the XDG spec says
    assert limits.cache_folder() == tmp_path / "home" / ".cache" / "safe-estimators"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert limits.cache_folder() == tmp_path / "xdg" / "safe-estimators"
    monkeypatch.setenv("SAFE_ESTIMATORS_CACHE_DIR", str(tmp_path / "mine"))
    assert limits.cache_folder() == tmp_path / "mine"


_PROBE = """
import sys
opened = []
sys.addaudithook(lambda event, args: event == "open" and opened.append(str(args[0])))
from safe_estimators import _cache
from safe_estimators._facts import limits
limits.hyperparameters_limit(), limits.member_shape("ResourceConfig.VolumeSizeInGB")
print(sum(name.endswith("service-2.json.gz") for name in opened))
"""


def test_a_later_process_reads_the_cache_and_not_botocores_file(tmp_path):
    env = {**os.environ, "SAFE_ESTIMATORS_CACHE_DIR": str(tmp_path)}
    reads = [
        subprocess.run(
            [sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, check=True
        ).stdout.strip()
        for _ in range(2)
    ]
    assert reads == ["1", "0"]


def test_a_vetted_pattern_is_botocores_and_runs_in_linear_time():
    # Run from the cache without botocore's model: each is one the installed botocore has, and
    # a crafted 100 kB value is refused at once (no backtracking over the ways to split it).
    import time

    model = limits._model()
    patterns = {s.get("pattern") for s in model.values() if isinstance(s, dict)}
    for pattern in limits._VETTED:
        assert pattern in patterns
        compiled = re.compile(pattern)
        start = time.process_time()
        for crafted in ("a" + "-" * 100_000 + "!", "a-" * 50_000 + "-!", "a" * 100_000 + "--"):
            assert compiled.fullmatch(crafted) is None
        assert time.process_time() - start < 1.0
