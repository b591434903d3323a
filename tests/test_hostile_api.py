"""The Python API and the process it runs in, against hostile values: every failure is a
ConfigError with a path, caches stay bounded, and main() leaves no state behind, even from
several threads at once."""

from __future__ import annotations

import logging
import os
import threading
import warnings
from pathlib import Path
from typing import Any

import pytest
from conftest import SDK3

import safe_estimators
from safe_estimators._cli import main
from safe_estimators._facts import versions

BASE: dict[str, Any] = {
    "entry_point": "train.py",
    "instance_type": "ml.p3.2xlarge",
    "framework_version": "2.0",
    "py_version": "py310",
    "check_script": False,
    "role": "arn:aws:iam::111122223333:role/SageMakerRole",
}


class Hostile:
    """A user object whose every dunder raises."""

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("eq")

    def __hash__(self) -> int:
        raise RuntimeError("hash")

    def __repr__(self) -> str:
        raise RuntimeError("repr")

    def __str__(self) -> str:
        raise RuntimeError("str")


def _cycle() -> dict[str, Any]:
    loop: dict[str, Any] = {"a": 1}
    loop["self"] = loop
    return loop


def _deep(levels: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    node = root
    for _ in range(levels):
        node["x"] = {}
        node = node["x"]
    return root


@pytest.mark.parametrize(
    ("options", "path", "words"),
    [
        ({"hyperparameters": {"x": Hostile()}}, "hyperparameters.x", "cannot be sent"),
        ({"environment": {"X": Hostile()}}, "environment.X", "expected str"),
        ({"instance_type": Hostile()}, "instance_type", "instance type name"),
        ({"hyperparameters": _cycle()}, "hyperparameters.self", "contains itself"),
        ({"distribution": _deep(900)}, "distribution", "nested more than 64 levels"),
        ({"instance_count": 10**10000}, "instance_count", "about 10,000 digits"),
        ({"volume_size": float("nan")}, "volume_size", "no NaN"),
        ({"training_compiler": {1: "x", "a": 2}}, "training_compiler", "unknown option"),
        ({"hyperparameters": {i: i for i in range(30_000)}}, "hyperparameters", "20,000 values"),
    ],
)
def test_hostile_values_become_one_config_error_with_a_path(
    options: dict[str, Any], path: str, words: str
) -> None:
    with pytest.raises(safe_estimators.ConfigError) as caught:
        safe_estimators.pytorch(**{**BASE, **options})
    assert any(p.path.startswith(path) and words in p.message for p in caught.value.problems), (
        caught.value
    )
    assert len(str(caught.value)) < 20_000


class HostileKey(Hostile):
    """Hashable (it can be a key), and nothing else works."""

    __hash__ = object.__hash__


def test_a_hostile_key_is_a_problem_not_a_crash() -> None:
    for options in ({"hyperparameters": {HostileKey(): 1}}, {"environment": {HostileKey(): "1"}}):
        with pytest.raises(safe_estimators.ConfigError):
            safe_estimators.pytorch(**BASE, **options)


def test_source_dir_root_or_home_is_refused_from_python_too() -> None:
    for folder in ("/", str(Path.home())):
        with pytest.raises(safe_estimators.ConfigError) as caught:
            safe_estimators.pytorch(**{**BASE, "source_dir": folder})
        assert "source_dir" in caught.value.paths


def test_a_config_error_shows_fifty_problems_and_counts_the_rest() -> None:
    problems = [safe_estimators.Problem(f"p{i}", "is wrong.") for i in range(120)]
    text = str(safe_estimators.ConfigError(problems))
    assert text.count("\n  - ") == 50
    assert text.endswith("... and 70 more (the first 50 are shown)")


def test_version_caches_stay_bounded_whatever_users_write() -> None:
    for i in range(600):
        versions.framework_container("pytorch", f"{i}.0")
        versions.parse_version(f"{i}.0")
    for cached in (versions._framework_container, versions._parse_version):
        info = cached.cache_info()
        assert info.maxsize is not None and info.currsize <= info.maxsize
    before = versions._framework_container.cache_info().currsize
    assert versions.framework_container("pytorch", "1" * 1_000_000).version is None
    assert versions._framework_container.cache_info().currsize == before  # never kept


def test_main_from_several_threads_leaves_logging_and_warnings_as_they_were(tmp_path: Path):
    (tmp_path / "train.py").write_text("print('train')\n")
    spec = tmp_path / "job.yaml"
    spec.write_text(
        "estimator: pytorch\nentry_point: train.py\ninstance_type: ml.p3.2xlarge\n"
        "framework_version: '2.0'\npy_version: py310\n"
    )
    disabled, filters = logging.root.manager.disable, list(warnings.filters)
    had_variable = "SAGEMAKER_SUPPRESS_V2_WARNING" in os.environ
    codes: list[int] = []
    threads = [
        threading.Thread(target=lambda: codes.append(main(["validate", str(spec)])))
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert codes == [0] * 8
    assert logging.root.manager.disable == disabled
    assert list(warnings.filters) == filters
    assert ("SAGEMAKER_SUPPRESS_V2_WARNING" in os.environ) == had_variable


def test_validate_and_plan_together_leave_logging_and_warnings_as_they_were(tmp_path: Path):
    # validate quiets only warnings (it loads nothing that logs); plan also silences logging.
    # Whichever enters first, the last to leave restores both.
    # A job that builds on the installed SDK (the compiler is the estimator's only).
    example = "model-trainer/qlora.yaml" if SDK3 else "compiler-single-gpu/job.yaml"
    spec = Path(__file__).parent.parent / "examples" / example
    disabled, filters = logging.root.manager.disable, list(warnings.filters)
    codes: list[int] = []
    commands = ["validate", "plan", "validate", "validate", "plan", "validate"]
    threads = [
        threading.Thread(target=lambda c=command: codes.append(main([c, str(spec)])))
        for command in commands
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert codes == [0] * len(commands)
    assert logging.root.manager.disable == disabled
    assert list(warnings.filters) == filters


def test_remote_code_is_only_what_the_sdk_reads_remotely() -> None:
    from safe_estimators._distributions._sdk_source import sdk_constant
    from safe_estimators._facts import code_paths

    # sagemaker 2 keeps it in sagemaker/utils.py, 3 in sagemaker/core/common_utils.py.
    module = "common_utils.py" if SDK3 else "utils.py"
    assert sdk_constant(module, "S3_PREFIX") == code_paths.S3_PREFIX
    assert code_paths.remote_source_dir("S3://bucket/code/sourcedir.tar.gz")  # lower() in the SDK
    assert not code_paths.remote_source_dir("x://../../secret")  # a folder named "x:"
    assert not code_paths.remote_source_dir("file:///etc")
    assert code_paths.s3_entry_point("s3://bucket/train.py")
    assert not code_paths.s3_entry_point("S3://bucket/train.py")  # startswith in the SDK


@pytest.mark.sdk2_only  # reads the estimator's JSON-encoded hyperparameters
def test_a_plan_renders_an_attackers_values_as_text_in_a_notebook(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "train.py").write_text("print('train')\n")
    (tmp_path / "job.yaml").write_text(
        "estimator: pytorch\nentry_point: train.py\ninstance_type: ml.p3.2xlarge\n"
        "framework_version: '2.0'\npy_version: py310\n"
        "role: arn:aws:iam::123456789012:role/x\nhyperparameters:\n"
        "  img: '<img src=x onerror=alert(1)>'\n"
        "  link: '[click](https://evil.example/x)'\n"
        "  ticks: 'a`|`b'\n"
    )
    markdown = safe_estimators.plan(tmp_path / "job.yaml")._repr_markdown_()
    rows = {
        line.split("`")[1]: line for line in markdown.splitlines() if "HyperParameters." in line
    }
    # Each value is one code span in its own cell (neither HTML nor links are read in one); the
    # backticks and the bar cannot close it or the cell.
    assert rows["HyperParameters.img"].endswith('| `"<img src=x onerror=alert(1)>"` |')
    assert rows["HyperParameters.link"].endswith('| `"[click](https://evil.example/x)"` |')
    assert rows["HyperParameters.ticks"].endswith('| ``"a`\\|`b"`` |')
    # Outside code spans (messages, placeholders), HTML and links are escaped.
    from safe_estimators._bounds import markdown_text

    assert (
        markdown_text("<img src=x> [a](https://e.x)") == "&lt;img src=x&gt; \\[a\\](https\\://e.x)"
    )
