"""The code attrs generates is compiled once and read back by the next run, with the same effect.

Fresh interpreters with different hash seeds: attrs writes a per-process number into each
frozen class's ``__hash__``, which the cached code must carry over.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

# A class's hash, eq and repr as attrs defines them, and whether its code came from the cache.
_PROGRAM = """
import attrs
from safe_estimators import _codecache

@attrs.frozen
class Point:
    x: int
    y: str = "a"

from_cache = not _codecache._added
_codecache.save()
expected = hash((hash("<attrs generated hash __main__.Point>"), 1, "b"))
assert hash(Point(1, "b")) == expected, (hash(Point(1, "b")), expected)
assert Point(1) == Point(1) and Point(1) != Point(2), "eq"
assert repr(Point(1)) == "Point(x=1, y='a')", repr(Point(1))
print("cached" if from_cache else "compiled")
"""


def _run(cache: str, seed: str) -> str:
    env = {**os.environ, "SAFE_ESTIMATORS_CACHE_DIR": cache, "PYTHONHASHSEED": seed}
    result = subprocess.run(
        [sys.executable, "-c", _PROGRAM], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_the_second_run_reads_the_code_back_with_its_own_hash(tmp_path):
    assert _run(str(tmp_path), "1") == "compiled"
    assert _run(str(tmp_path), "2") == "cached"  # another seed: another number in __hash__
    assert _run(str(tmp_path), "3") == "cached"


@pytest.mark.parametrize("content", [b"", b"\x00garbage", b"\xe3" * 64])
def test_a_corrupt_or_empty_file_is_compiled_again(tmp_path, content):
    _run(str(tmp_path), "1")
    (written,) = tmp_path.glob("generated-code-*.marshal")
    written.write_bytes(content)
    assert _run(str(tmp_path), "2") == "compiled"
    assert _run(str(tmp_path), "3") == "cached"


def test_a_file_others_may_write_is_not_read(tmp_path):
    _run(str(tmp_path), "1")
    (written,) = tmp_path.glob("generated-code-*.marshal")
    written.chmod(0o666)
    assert _run(str(tmp_path), "2") == "compiled"
