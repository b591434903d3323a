"""``./dev mutate``'s narrowing (tests/mutation_scope.py): every mutated module names its own
test files, those files exist, and ordinary test runs are left exactly as they were."""

from __future__ import annotations

import json
from pathlib import Path

import mutation_scope
import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

pytestmark = pytest.mark.both_sdks

ROOT = Path(__file__).parent.parent
MUTMUT = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]


def _mutated_modules() -> set[str]:
    modules = set()
    for pattern in MUTMUT["only_mutate"]:
        for path in ROOT.glob(pattern):
            if path.suffix == ".py":
                parts = path.relative_to(ROOT).with_suffix("").parts
                modules.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return modules


def test_every_mutated_module_names_its_tests_and_nothing_else_is_named() -> None:
    assert _mutated_modules() == set(mutation_scope.TESTS_OF)


@pytest.mark.parametrize("module", sorted(mutation_scope.TESTS_OF))
def test_the_files_a_module_names_exist(module: str) -> None:
    files = mutation_scope.TESTS_OF[module]
    assert files, module
    assert [name for name in files if not (ROOT / "tests" / name).is_file()] == []


def test_mutmut_collects_the_tests_folder_and_conftest_narrows_it() -> None:
    assert MUTMUT["pytest_add_cli_args_test_selection"] == ["tests/"]


@pytest.mark.parametrize(
    ("mutant", "module"),
    [
        (
            "safe_estimators._rules.resources.x_warm_pool__mutmut_12",
            "safe_estimators._rules.resources",
        ),
        ("safe_estimators._rules.x_run_rules__mutmut_1", "safe_estimators._rules"),
        ("safe_estimators._bounds.xǁNotRegularǁ__init____mutmut_2", "safe_estimators._bounds"),
        ("stats", None),
        ("", None),
        ("fail", None),
    ],
)
def test_the_module_of_a_mutant(mutant: str, module: str | None) -> None:
    assert mutation_scope.mutated_module(mutant) == module


def test_ordinary_runs_leave_out_no_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MUTANT_UNDER_TEST", raising=False)
    assert not mutation_scope.left_out(ROOT / "tests" / "test_cli.py")


def test_under_mutmut_only_the_named_files_are_collected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MUTANT_UNDER_TEST", "stats")
    assert mutation_scope.left_out(ROOT / "tests" / "test_cli.py")
    assert not mutation_scope.left_out(ROOT / "tests" / "test_memory.py")
    assert not mutation_scope.left_out(ROOT / "tests" / "conftest.py")


class _Item:
    def __init__(self, name: str) -> None:
        self.path = ROOT / "tests" / name
        self.nodeid = f"tests/{name}::t"


def test_a_mutant_runs_only_its_modules_files(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)  # no mutmut-stats.json: the order is the collected one
    items = [_Item("test_cli.py"), _Item("test_memory.py"), _Item("test_mutants_memory.py")]
    kept, dropped = mutation_scope.narrowed(items, "safe_estimators._memory.rule.x_f__mutmut_1")
    assert [i.path.name for i in kept] == ["test_memory.py", "test_mutants_memory.py"]
    assert [i.path.name for i in dropped] == ["test_cli.py"]


def test_a_mutants_tests_run_fastest_first(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mutmut-stats.json").write_text(
        json.dumps(
            {
                "duration_by_test": {
                    "tests/test_memory.py::t": 2.5,
                    "tests/test_mutants_memory.py::t": 0.1,
                }
            }
        )
    )
    items = [_Item("test_memory.py"), _Item("test_mutants_memory.py")]
    kept, _ = mutation_scope.narrowed(items, "safe_estimators._memory.rule.x_f__mutmut_1")
    assert [i.path.name for i in kept] == ["test_mutants_memory.py", "test_memory.py"]


def test_a_module_missing_from_the_table_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(LookupError, match=r"safe_estimators\._new_rules is in"):
        mutation_scope.narrowed([], "safe_estimators._new_rules.x_f__mutmut_1")
