"""The README's install section keeps its promise (issue 31), checked offline by resolution.

``pip install --dry-run --report`` would need the package index; the same answer comes from the
requirements pip reads: each extra, together with the base dependency, admits exactly one
sagemaker generation; every extra the README names exists with the range its table states;
and the constraints ``./dev`` installs pin a sagemaker that the lane's extra admits.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
README = (ROOT / "README.md").read_text(encoding="utf-8")
INSTALL = README.split("\n## Install\n", 1)[1].split("\n## ", 1)[0]


def _sagemaker(requirements: list[str]) -> SpecifierSet:
    """The sagemaker range of a list of requirement strings (one entry expected)."""
    found = [Requirement(r) for r in requirements if Requirement(r).name == "sagemaker"]
    assert len(found) == 1, requirements
    return found[0].specifier


BASE = _sagemaker(PROJECT["dependencies"])
EXTRAS = PROJECT["optional-dependencies"]

# Releases on both sides of each boundary, pre-releases of the next major included.
SAMPLES = [
    "2.249.9", "2.250.0", "2.257.7", "2.999", "3.0.0rc1", "3.0.0", "3.27.0", "4.0.0rc1", "4.0",
]  # fmt: skip


@pytest.mark.parametrize(
    ("extra", "admitted"),
    [
        ("sdk2", ["2.250.0", "2.257.7", "2.999"]),
        ("sdk3", ["3.0.0", "3.27.0"]),
    ],
)
def test_each_extra_admits_exactly_one_sagemaker_generation(
    extra: str, admitted: list[str]
) -> None:
    both = BASE & _sagemaker(EXTRAS[extra])  # what pip must satisfy with the extra
    assert [v for v in SAMPLES if both.contains(v, prereleases=True)] == admitted


def test_the_readme_install_section_comes_right_after_the_opening() -> None:
    headings = re.findall(r"^## (.+)$", README, flags=re.MULTILINE)
    assert headings[0] == "Install"


def test_every_extra_the_readme_installs_exists() -> None:
    named = set(re.findall(r"safe-estimators\[([\w,]+)\]", INSTALL))
    named |= set(re.findall(r'"\.\[([\w,]+)\]"', INSTALL))
    assert named, "the install section names no extra"
    for extras in named:
        assert set(extras.split(",")) <= set(EXTRAS), extras


def test_the_readme_table_states_each_extras_range() -> None:
    rows = re.findall(r"^\| `\[(\w+)\]` \| `([^`]+)` \|", INSTALL, flags=re.MULTILINE)
    assert {extra for extra, _ in rows} == {"sdk2", "sdk3"}
    for extra, stated in rows:
        assert Requirement(stated).specifier == _sagemaker(EXTRAS[extra]), extra


def test_the_pre_commit_pin_in_the_readme_is_a_version_the_project_takes() -> None:
    pins = re.findall(r'additional_dependencies: \["sagemaker==([\d.]+)"\]', README)
    assert pins
    for version in pins:
        assert BASE.contains(version)


@pytest.mark.parametrize("lane", ["sdk2", "sdk3"])
def test_the_locked_lane_installs_a_sagemaker_its_extra_admits(lane: str) -> None:
    text = (ROOT / "constraints" / f"{lane}.txt").read_text(encoding="utf-8")
    pinned = re.search(r"^sagemaker==(\S+)$", text, flags=re.MULTILINE)
    assert pinned is not None
    assert (BASE & _sagemaker(EXTRAS[lane])).contains(pinned[1])
    dev = (ROOT / "dev").read_text(encoding="utf-8")
    assert f"{lane} constraints/{lane}.txt)" in dev  # ./dev installs .[dev,<lane>] with them
