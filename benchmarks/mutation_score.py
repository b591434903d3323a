"""The mutation score of ``./dev mutate``, per mutated module, as a Markdown table.

    python benchmarks/mutation_score.py [MUTANTS_DIR[=MODULE,...] ...]

Reads mutmut's result files (``mutants/**/*.py.meta``: each mutant's exit code). With several
folders (copies of one run, in each of which some modules were run again), each folder given
with modules supplies those modules' results, overriding the folders before it.

The score counts a mutant as killed when a test failed on it or it timed out (mutmut's own
score); a mutant no test of its module calls, or one not run, is not killed.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

# mutmut 3.8.1's exit codes (mutmut/stats.py: status_by_exit_code)
_STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", None: "not run"}
_TIMEOUT = {-24, 24, 152, 255, 36}
_COLUMNS = ("killed", "timeout", "survived", "no tests", "not run", "other")


def _status(code: int | None) -> str:
    if code in _TIMEOUT:
        return "timeout"
    return _STATUS.get(code, "other")


def results(folders: list[str]) -> dict[str, dict[str, int | None]]:
    """module -> mutant -> exit code (None: not run)."""
    merged: dict[str, dict[str, int | None]] = {}
    for given in folders:
        name, _, listed = given.partition("=")
        folder, wanted = Path(name), tuple(m for m in listed.split(",") if m)
        for meta in sorted(folder.rglob("*.py.meta")):
            module = ".".join(meta.relative_to(folder).with_suffix("").with_suffix("").parts)
            module = module.removesuffix(".__init__")
            if not wanted or module in wanted:
                merged[module] = json.loads(meta.read_text())["exit_code_by_key"]
    return dict(sorted(merged.items()))


def table(merged: dict[str, dict[str, int | None]]) -> str:
    """The Markdown table: a row per module and the total."""
    head = "| module | mutants | " + " | ".join(_COLUMNS) + " | score |"
    rows = [head, "|" + " --- |" * (len(_COLUMNS) + 3)]
    total: Counter[str] = Counter()
    for module in sorted(merged):
        counts = Counter(_status(code) for code in merged[module].values())
        total.update(counts)
        rows.append(_row(f"`{module}`", counts))
    rows.append(_row("**all**", total))
    return "\n".join(rows)


def _row(name: str, counts: Counter[str]) -> str:
    mutants = sum(counts.values())
    score = (counts["killed"] + counts["timeout"]) / mutants if mutants else 0.0
    cells = " | ".join(f"{counts[c]:,}" for c in _COLUMNS)
    return f"| {name} | {mutants:,} | {cells} | {score:.1%} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="*", default=["mutants"])
    print(table(results(parser.parse_args().folders)))


if __name__ == "__main__":
    main()
