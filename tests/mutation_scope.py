"""``./dev mutate``: which of the tests that call a mutated function run against its mutant.

mutmut runs, for each mutant, every test of its selection that called the mutated function
while it timed the selection. ``validate`` calls every rule of the rulebook on every job, so
without this a rule's mutant would run every test that validates anything: a surviving one
then costs the whole selection (about a minute on 2 cores), and the scope took 7 to 18 hours
(benchmarks/mutation.md). Here each mutated module names the test files that are its tests; its
mutants run only those of mutmut's tests that are in them, fastest first by mutmut's own
timings, so a killed mutant stops at its first failing test and a surviving one costs seconds.

The mapping is by module, not by function: a module's test files are the ones written about
what it checks (its rules' verdicts, messages and fixes), not the sweeps that happen to pass
through it. A mutant none of its module's tests calls counts as "no tests", which is not a kill.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# module (as mutmut names its mutants) -> the test files (names in tests/) that are its tests
TESTS_OF: dict[str, tuple[str, ...]] = {
    # secrets
    "safe_estimators._secrets": (
        "test_secrets.py",
        "test_secrets_policy.py",
        "test_mutants_secrets.py",
    ),
    "safe_estimators._secret_formats": (
        "test_secrets.py",
        "test_secrets_policy.py",
        "test_mutants_secrets.py",
    ),
    # memory, and the rules on storage, warm pools, capacity and instance preferences
    "safe_estimators._memory.accounting": (
        "test_memory.py",
        "test_memory_lora_counts.py",
        "test_mutants_memory.py",
    ),
    "safe_estimators._memory.rule": (
        "test_memory.py",
        "test_memory_verdicts.py",
        "test_mutants_memory.py",
    ),
    "safe_estimators._rules.resources": ("test_platform.py", "test_mutants_memory.py"),
    "safe_estimators._rules.capacity": (
        "test_capacity.py",
        "test_plan_region.py",
        "test_mutants_memory.py",
    ),
    "safe_estimators._rules.preferences": (
        "test_instance_preferences.py",
        "test_preference_memory.py",
        "test_mutants_memory.py",
    ),
    # containment and reading the spec
    "safe_estimators._spec_files.read": (
        "test_spec_loading.py",
        "test_paths.py",
        "test_trainer_file_containment.py",
        "test_mutants_containment.py",
        "test_empty_entry_point.py",
    ),
    # _bounds' own tests call each function at its limits (under a second in all); the spec
    # readers' tests would add two seconds to every surviving mutant of quote or real_path
    "safe_estimators._bounds": ("test_mutants_bounds.py",),
    # the runner and these two rules are pinned whole in test_mutants_containment.py (1.5 s);
    # test_verdict.py (3.4 s) validates whole jobs and would run for every survivor
    "safe_estimators._rules": ("test_mutants_containment.py",),
    "safe_estimators._rules.cache": ("test_mutants_containment.py",),
    "safe_estimators._rules.inputs": ("test_mutants_containment.py",),
    "safe_estimators._rules.source": ("test_spec_loading.py", "test_mutants_containment.py"),
    # model parallelism, launchers, Training Compiler, construction
    "safe_estimators._distributions.model_parallel.rules": (
        "test_model_parallel.py",
        "test_model_parallel_v2.py",
        "test_model_parallel_aliases.py",
        "test_factories_model_parallel.py",
        "test_mutants_rules_parallel.py",
    ),
    "safe_estimators._rules.distribution": ("test_launchers.py", "test_mutants_rules_parallel.py"),
    "safe_estimators._rules.compiler": (
        "test_factories_compiler.py",
        "test_mutants_rules_parallel.py",
    ),
    # test_verdict.py calls these rules in 47 tests (3.4 s) and tests none of their verdicts
    "safe_estimators._rules.construction": ("test_mutants_rules_parallel.py",),
    # instance types, framework versions, containers
    # their verdicts, messages and fixes case by case, under a second per function (with
    # test_platform.py's catalog sweeps a surviving mutant cost 4 s)
    "safe_estimators._rules.instance": ("test_mutants_rules_instance.py",),
    "safe_estimators._rules.platform": ("test_mutants_rules_instance.py",),
    # the request: pipelines, API members and limits, safety, targets. Their rules called on the
    # Context of a small spec (2.5 s for the file); test_pipelines (moto and PipelineSession
    # builds), test_request_documented_limits, test_unknown_options, test_secrets_policy and
    # test_one_verdict validate whole specs: 14 to 36 s a file on the shared machine, which
    # every surviving mutant would run.
    "safe_estimators._rules.pipelines": ("test_mutants_rules_request.py",),
    "safe_estimators._rules.request": ("test_mutants_rules_request.py",),
    "safe_estimators._rules.safety": ("test_mutants_rules_request.py",),
    "safe_estimators._rules.targets": ("test_mutants_rules_request.py",),
    # @remote and the fine-tuning trainers: their rules on the decorator's arguments and on the
    # Context (1.5 s). test_remote.py (a minute: the SDK's decorator against moto) and
    # test_fine_tuning.py (sagemaker 3's trainers; mutmut runs in the sagemaker 2 venv, where
    # they are refused before the rules run) would add cost and no kill.
    "safe_estimators._rules.remote": ("test_mutants_rules_remote.py", "test_remote_workdir.py"),
    "safe_estimators._rules.fine_tuning": ("test_mutants_rules_remote.py",),
}


def mutated_module(mutant: str) -> str | None:
    """The module of a mutant's name (``pkg.mod.x_function__mutmut_3``, a method's
    ``pkg.mod.xǁClassǁmethod__mutmut_3``), or None when no mutant is under test: mutmut's
    timing, clean and forced-fail runs set other names."""
    if "__mutmut_" not in mutant:
        return None
    module, _, _ = mutant.rpartition(".x")
    return module or None


def narrowed(items: Sequence[Any], mutant: str) -> tuple[list[Any], list[Any]]:
    """``items`` split into (those to run, those to deselect) for ``mutant``, the kept ones
    fastest first."""
    module = mutated_module(mutant)
    if module is None:
        return list(items), []
    files = TESTS_OF.get(module)
    if files is None:
        raise LookupError(
            f"{module} is in [tool.mutmut] only_mutate but not in tests/mutation_scope.py's "
            "TESTS_OF: name the test files that are its tests"
        )
    kept = [item for item in items if item.path.name in files]
    dropped = [item for item in items if item.path.name not in files]
    durations = _durations()
    kept.sort(key=lambda item: durations.get(item.nodeid, 0.0))
    return kept, dropped


def _durations() -> dict[str, float]:
    # mutmut keeps its timing pass's per-test durations beside the mutants (cwd is mutants/)
    try:
        stats = json.loads(Path("mutmut-stats.json").read_text())
    except (OSError, ValueError):
        return {}
    durations = stats.get("duration_by_test", {})
    return durations if isinstance(durations, dict) else {}


def under_test() -> str:
    """The mutant mutmut's worker is running, or ""."""
    return os.environ.get("MUTANT_UNDER_TEST", "")


def left_out(path: Path) -> bool:
    """Whether mutmut's runs (its timing pass and clean run included) leave out this test
    file: one no mutated module names. Ordinary runs of pytest leave out nothing."""
    if "MUTANT_UNDER_TEST" not in os.environ:
        return False
    return path.name.startswith("test_") and path.suffix == ".py" and path.name not in _NAMED


_NAMED = frozenset(name for names in TESTS_OF.values() for name in names)
