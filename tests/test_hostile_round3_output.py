"""Hostile input, round 3 (issue 32), the output side: what a CI check prints for a stranger's
pull request neither forges the runner's annotations, nor runs the input's code, nor prints a
credential, nor grows without bound.

Findings 2, 3, 7, 8 and 10, and from finding 9 the f-string and the over-long value. Each case
runs in its own subprocess in the bounds of ``test_hostile`` (address space, a timeout, an audit
hook that ends the process on a connection or a subprocess), as round 2 runs them; the port and
secrets cases that need the SDK's objects run in this process.

What the GitHub Actions runner reads as a command is taken from actions/runner
(src/Runner.Common/ActionCommand.cs): ``TryParseV2`` reads ``::name props::data`` once the line's
leading white space is trimmed; ``TryParse`` the legacy ``##[name props]data`` anywhere in it.
After ``::stop-commands::TOKEN`` it ignores every command up to ``::TOKEN::``.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hostile_corpus import BASE, ROLE, TRAIN, Case2, _project
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hostile import ADDRESS_SPACE, CHILD, HANG_SECONDS, ROOT, RSS_LIMIT_KB

import safe_estimators
from safe_estimators._cli import main
from safe_estimators._report import MAX_RUN_RESULTS

Result = tuple[int, str, str, int, float]

TOKEN = "hf_" + "Qw3rTy" * 6  # 39 characters: a Hugging Face token's shape
GITHUB = "ghp_" + "Zx8" * 12
PASSWORD_KEY = "password=Xk9#mP2vL8qR4wT6"
FORMATS = ("text", "json", "github", "sarif", "codeclimate")
# A spec file name that is a Python statement inside a triple-quoted docstring (finding 2).
PWNED = 'a""";__import__("os").system("echo PWNED");""".yaml'
# Control and separator characters a terminal or a CI log reads: ESC, BEL, NEL, the line and
# paragraph separators, a right-to-left override, a no-break space, CR.
CONTROLS = "\x1b]0;x\x07\x1b[31m\u0085\u2028\u2029\u202e\u00a0\r"


# --- what the runner reads ------------------------------------------------------------------


def runner_command(line: str) -> str | None:
    """The command actions/runner reads in ``line`` (TryParseV2, then TryParse), or None."""
    trimmed = line.lstrip()  # .NET's TrimStart: every Unicode white space
    if trimmed.startswith("::"):
        end = trimmed.find("::", 2)
        if end >= 0:
            return trimmed[2:end].split(" ", 1)[0]
    start = line.find("##[")
    if start >= 0:
        end = line.find("]", start)
        if end >= 0:
            return line[start + 3 : end].split(" ", 1)[0]
    return None


# Our annotations: ``::error file=F,line=L,col=C,title=T::message``; a property escapes ":" and
# ",", so none can end the command's head or add a property.
_PROPERTY = r"(file|line|col|title)=[^:,]*"
_OURS = re.compile(rf"::(error|warning) {_PROPERTY}(,{_PROPERTY})*::")


def unsafe_lines(printed: str, annotations: bool) -> list[str]:
    """The lines of ``printed`` a CI log must not hold: a raw control or separator character,
    or a workflow command that is not one of our annotations (``annotations``: the format is
    github)."""
    bad = []
    for line in printed.split("\n"):
        command = runner_command(line)
        ours = annotations and _OURS.match(line) is not None
        if not line.isprintable() or (command is not None and not ours) or "##[" in line:
            bad.append(line)
    return bad


def test_the_runner_model_reads_what_the_campaign_forged() -> None:
    assert runner_command("::stop-commands::pwn.yaml: valid") == "stop-commands"
    assert runner_command("  \u2028::error::x") == "error"
    assert runner_command("jobs/a##[error title=forged]x.yaml: valid") == "error"
    assert runner_command('  HyperParameters.x = "##[stop-commands]tok"') == "stop-commands"
    assert runner_command("\\u003a:stop-commands::pwn.yaml: valid") is None
    assert runner_command("jobs/a\\u0023#[error title=forged]x.yaml: valid") is None


# --- the subprocess harness (round 2's, with any command line) -------------------------------

# The child of test_hostile, running ``main(ARGUMENTS + [target])`` for a command written as its
# words joined by "|" ("validate|--format|github").
CHILD3 = CHILD.replace(
    'json_flag = ["--json"] if command.startswith("json-") else []\n'
    '        code = main([*json_flag, command.removeprefix("json-"), target])',
    'code = main([*command.split("|"), target])',
)
assert CHILD3 != CHILD


def run3(case: Case2, command: str) -> Result:
    """One case through one command line: (exit code, stdout, stderr, peak RSS in kB, seconds)."""
    env = {**os.environ, **dict(case.env)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(ROOT), env.get("PYTHONPATH"))))
    proc = subprocess.run(
        [sys.executable, "-c", CHILD3.format(limit=ADDRESS_SPACE), command, case.target.name],
        capture_output=True,
        text=True,
        errors="surrogateescape",
        timeout=HANG_SECONDS,
        cwd=case.target.parent,
        env=env,
    )
    found = re.search(r"HOSTILE maxrss_kb=(\d+) seconds=([\d.]+)", proc.stderr)
    rss, seconds = (int(found[1]), float(found[2])) if found else (0, 0.0)
    err = proc.stderr[: found.start()] if found else proc.stderr
    return proc.returncode, proc.stdout, err, rss, seconds


def _every_format(command: str) -> tuple[str, ...]:
    return tuple(f"{command}|--format|{name}" for name in FORMATS)


def _forged(d: Path) -> Case2:
    """Finding 3: valid specs whose names are workflow commands, hyperparameters whose values
    are, and a spec in error whose name holds control characters (annotations name it in
    ``file=``)."""
    project = d / "forged"
    _project(project, BASE + ROLE, script=TRAIN)
    (project / "job.yaml").rename(project / "::stop-commands::pwn.yaml")
    (project / "jobs").mkdir()
    (project / "jobs" / "a##[error title=forged]x.yaml").write_text(
        BASE.replace("train.py", "../train.py") + ROLE
    )
    values = "hyperparameters: {x: '##[stop-commands]tok', y: '##[error title=forged]z', "
    values += "'::warning::k': '::error::v'}\n"
    (project / "values.yaml").write_text(BASE + ROLE + values)
    (project / f"bad{CONTROLS}.yaml").write_text(BASE.replace("ml.p3.2xlarge", "ml.nope"))
    # The folder, and the names given as they are (a name starts the line "NAME: valid").
    named = "|.|::stop-commands::pwn.yaml|jobs/a##[error title=forged]x.yaml"
    commands = _every_format("validate|--no-cache") + _every_format("lint")
    commands = tuple(command + named for command in commands)
    return Case2("forged-commands", project / "values.yaml", commands, exits=(0, 1))


def _forged_plan(d: Path) -> Case2:
    project = d / "forged-plan"
    values = "hyperparameters: {x: '##[stop-commands]tok', y: '##[error title=forged]z'}\n"
    spec = _project(project, BASE + ROLE + values)
    commands = ("plan|--format|text", "plan|--format|github", "plan|--format|json", "port")
    return Case2("forged-plan-values", spec, commands, exits=(0,))


def _not_utf8(d: Path) -> Case2:
    """Finding 7: a spec named with the byte 0xff, under validate --format sarif ."""
    project = d / "xff"
    _project(project, BASE.replace("ml.p3.2xlarge", "ml.nope"))
    os.rename(project / "job.yaml", os.fsencode(project) + b"/j\xffob.yaml")
    commands = _every_format("validate|--no-cache")
    return Case2("name-not-utf8", project, commands, exits=(1,))


def _huge_value(d: Path) -> Case2:
    """Finding 9: one 900 kB instance_type (the spec bound is 1 MB)."""
    text = BASE.replace("ml.p3.2xlarge", "ml." + "p3" * 450_000) + ROLE
    spec = _project(d / "huge", text)
    commands = (*_every_format("validate|--no-cache")[:4], "plan|--json")
    return Case2("900kb-instance-type", spec, commands, exits=(0, 1))


def _unknown_keys(d: Path) -> Case2:
    """Finding 10: three specs with 9,000 unknown keys each."""
    project = d / "keys"
    _project(project, BASE + ROLE)
    keys = "".join(f"unknown_{i}: 0\n" for i in range(9_000))
    for i in range(3):
        (project / f"job{i}.yaml").write_text(BASE + ROLE + keys)
    commands = tuple(f"validate|--no-cache|--format|{f}" for f in ("sarif", "codeclimate", "json"))
    return Case2("3x9000-unknown-keys", project, commands, exits=(0,))


def _fstring(d: Path) -> Case2:
    """Finding 9: a 500 kB entry point holding one f-string of 166,000 fields, beside a 250 kB
    helper it imports."""
    script = "import torch\nimport helper\nx = f'" + "{a}" * 166_000 + "'\n"
    spec = _project(d / "fstring", BASE + ROLE, script=script)
    (spec.parent / "helper.py").write_text("y = 1\n" * (250_000 // 6))
    # Not a timed bound (CI machines vary): the file is not parsed, whatever the clock says.
    expected = "holds an f-string of about 166,000 fields"
    commands = ("validate|--no-cache", "lint")
    return Case2("166000-fstring-fields", spec, commands, exits=(0,), expected=expected)


def _secrets_out(d: Path) -> Case2:
    """Finding 8: a token as a file name (lint --json paths), a secret as a hyperparameter's
    name, an accepted token (plan and port print neither whole)."""
    project = d / "secrets"
    _project(project, BASE + ROLE, script=None)
    (project / "job.yaml").unlink()
    (project / f"{GITHUB}.py").write_text("def (\n")  # a finding names the file
    (project / "train.py").write_text(TRAIN)
    (project / "token-name.yaml").write_text(BASE.replace("train.py", f"{GITHUB}.py") + ROLE)
    accepted = (
        f"hyperparameters: {{'{PASSWORD_KEY}': 1}}\nenvironment: {{HF_TOKEN: {TOKEN}}}\n"
        # The paths as the problems name them: a name that is a secret is shown cut short.
        "accept_exposure: ['hyperparameters.password=Xk9…', environment.HF_TOKEN]\n"
    )
    spec = project / "accepted.yaml"
    spec.write_text(BASE + ROLE + accepted)
    commands = (
        "plan|--format|text", "plan|--format|json", "port",
        "lint|--json|token-name.yaml", "lint|--format|sarif|token-name.yaml",
        "lint|--format|codeclimate|token-name.yaml", "lint|--format|github|token-name.yaml",
        "validate|--no-cache|--format|sarif|token-name.yaml",
    )  # fmt: skip
    forbidden = (TOKEN[4:], GITHUB[4:], "Xk9#mP2vL8qR4wT6")
    return Case2("secrets-in-names-and-accepted", spec, commands, forbidden=forbidden,
                 exits=(0, 1))  # fmt: skip


MAKERS = (_forged, _forged_plan, _not_utf8, _huge_value, _unknown_keys, _fstring, _secrets_out)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Case2]]:
    root = tmp_path_factory.mktemp("hostile3out")
    yield {case.name: case for case in (make(root) for make in MAKERS)}


@pytest.fixture(scope="module")
def results(corpus: dict[str, Case2]) -> dict[tuple[str, str], Result]:
    from concurrent.futures import ThreadPoolExecutor

    jobs = [(case, command) for case in corpus.values() for command in case.commands]
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = list(pool.map(lambda job: run3(*job), jobs))
    pairs = zip(jobs, done, strict=True)
    return {(case.name, command): result for (case, command), result in pairs}


def test_every_case_ends_in_bounds_prints_no_command_and_leaks_nothing(
    corpus: dict[str, Case2], results: dict[tuple[str, str], Result]
) -> None:
    failures = []
    for (name, command), (code, out, err, rss, seconds) in results.items():
        case = corpus[name]
        why = []
        if code not in case.exits:
            why.append(f"exit {code}")
        if rss > RSS_LIMIT_KB:
            why.append(f"{rss // 1024} MB")
        if case.max_seconds is not None and seconds > case.max_seconds:
            why.append(f"{seconds:.1f} s (bound {case.max_seconds} s)")
        printed = out + err
        why += [f"printed {text!r}" for text in case.forbidden if text in printed]
        if "Traceback" in printed or "internal error" in printed:
            why.append("an internal error")
        if case.expected and command == case.commands[0] and case.expected not in out:
            why.append(f"no {case.expected!r}")
        unsafe = unsafe_lines(out, "github" in command) + unsafe_lines(err, False)
        why += [f"unsafe line {line[:160]!r}" for line in unsafe[:3]]
        if why:
            failures.append(f"{name} / {command}: {', '.join(why)}\n{printed[-600:]}")
    assert not failures, "\n\n".join(failures)


def test_forged_names_are_printed_neutral_and_read_back_whole_from_json(
    results: dict[tuple[str, str], Result],
) -> None:
    named = "|.|::stop-commands::pwn.yaml|jobs/a##[error title=forged]x.yaml"
    text = results[("forged-commands", "validate|--no-cache|--format|text" + named)][1]
    assert "\\u003a:stop-commands::pwn.yaml: valid" in text
    assert "a\\u0023#[error title=forged]x.yaml: valid" in text
    as_json = results[("forged-commands", "validate|--no-cache|--format|json" + named)][1]
    document = json.loads(as_json)
    sources = {os.path.basename(f["source"]) for f in document["files"]}
    assert {"::stop-commands::pwn.yaml", "a##[error title=forged]x.yaml"} <= sources
    assert f"bad{CONTROLS}.yaml" in sources  # JSON escapes them; the value is whole
    github = results[("forged-commands", "validate|--no-cache|--format|github" + named)][1]
    annotations = [line for line in github.splitlines() if runner_command(line)]
    assert annotations and all(_OURS.match(line) for line in annotations)
    assert any("bad\\x1b]0;x\\x07" in line for line in annotations)  # file= escaped


@pytest.mark.sdk2_only
def test_plan_values_are_neutral_and_port_and_json_read_them_back(
    results: dict[tuple[str, str], Result],
) -> None:
    text = results[("forged-plan-values", "plan|--format|github")][1]
    assert '"\\u0023#[stop-commands]tok"' in text
    document = json.loads(results[("forged-plan-values", "plan|--format|json")][1])
    assert document["request"]["HyperParameters"]["x"] == '"##[stop-commands]tok"'
    code = results[("forged-plan-values", "port")][1]
    hyperparameters = _keyword(ast.parse(code), "hyperparameters")
    assert ast.literal_eval(hyperparameters)["x"] == "##[stop-commands]tok"


def test_a_name_python_cannot_decode_gives_sarif_that_names_its_bytes(
    results: dict[tuple[str, str], Result],
) -> None:
    log = json.loads(results[("name-not-utf8", "validate|--no-cache|--format|sarif")][1])
    uris = {
        location["physicalLocation"]["artifactLocation"]["uri"]
        for result in log["runs"][0]["results"]
        for location in result.get("locations", ())
        if "physicalLocation" in location
    }
    assert uris == {"xff/j%FFob.yaml"}  # the bytes of the name, as the file system has them
    assert json.loads(results[("name-not-utf8", "validate|--no-cache|--format|codeclimate")][1])


def test_one_over_long_value_gives_output_of_a_few_kilobytes(
    results: dict[tuple[str, str], Result],
) -> None:
    # 1.8 MB of --json before (the value quoted whole, twice).
    for (name, command), (_, out, *_) in results.items():
        if name == "900kb-instance-type":
            assert len(out) < 20_000, (command, len(out))
    out = results[("900kb-instance-type", "validate|--no-cache|--format|text")][1]
    assert "… (900,005 characters) is not a SageMaker training instance type" in out


def test_sarif_and_codeclimate_are_capped_per_file_and_say_what_they_left_out(
    results: dict[tuple[str, str], Result],
) -> None:
    # 27,000 results and 9,000 rules before: GitHub rejects a run of over 25,000 results.
    log = json.loads(results[("3x9000-unknown-keys", "validate|--no-cache|--format|sarif")][1])
    run = log["runs"][0]
    assert len(run["results"]) == 3 * 51 <= MAX_RUN_RESULTS
    assert len(run["tool"]["driver"]["rules"]) <= 52
    omitted = [r for r in run["results"] if r["ruleId"] == "omitted"]
    assert len(omitted) == 3
    assert "8,950 more problems in this file" in omitted[0]["message"]["text"]
    codeclimate = ("3x9000-unknown-keys", "validate|--no-cache|--format|codeclimate")
    issues = json.loads(results[codeclimate][1])
    assert len(issues) == 3 * 51
    assert sum(i["check_name"] == "omitted" for i in issues) == 3


def test_a_run_past_its_bound_says_how_many_were_left_out() -> None:
    import io

    from safe_estimators._report import Entry, Reporter

    report = Reporter("sarif", io.StringIO())
    for file in range(120):  # 120 files of 60 problems: 6,000 after the per-file cap
        report.add([Entry(f"f{file}.yaml", f"k{i}", "is unknown.") for i in range(60)])
    report.finish()
    results = json.loads(report.out.getvalue())["runs"][0]["results"]  # type: ignore[attr-defined]
    assert len(results) == MAX_RUN_RESULTS + 1
    assert "1,120 more problems in other files" in results[-1]["message"]["text"]


def test_the_fstring_entry_point_is_reported_not_parsed(
    results: dict[tuple[str, str], Result],
) -> None:
    # 41.6 s before (ast.parse of the entry point alone: 17.5 s, and it was parsed twice).
    for command in ("validate|--no-cache", "lint"):
        code, out, *_ = results[("166000-fstring-fields", command)]
        assert code == 0 and "at most 5,000 fields" in out, (command, out[-500:])


def test_secrets_in_names_are_masked_in_every_output(
    results: dict[tuple[str, str], Result],
) -> None:
    text = results[("secrets-in-names-and-accepted", "lint|--json|token-name.yaml")][1]
    lint = json.loads(text)
    # The entry point's name is a token: its findings are placed in "ghp_…" (the JSON keeps
    # path and line apart), and the whole token is printed nowhere.
    assert "ghp_…" in [p["path"] for p in lint["problems"]]
    assert "ghp_…" in [p["file"] for p in lint["problems"]]
    assert GITHUB not in text
    plan = results[("secrets-in-names-and-accepted", "plan|--format|text")][1]
    assert "HyperParameters.password=Xk9…" in plan
    port = results[("secrets-in-names-and-accepted", "port")][1]
    environment = ast.literal_eval(_keyword(ast.parse(port), "environment"))
    assert environment == {"HF_TOKEN": "hf_Q…"}  # accepted in the job, never in our output


# --- port: no code of the input's -----------------------------------------------------------

# Every call port's template writes: the ModelTrainer, its configs and launchers, the with_*
# methods, and the __main__ block's model_trainer().train().
_TEMPLATE_CALLS = frozenset(
    ["ModelTrainer", "SourceCode", "Compute", "StoppingCondition", "Networking",
     "OutputDataConfig", "CheckpointConfig", "Tag", "InputData", "RetryStrategy",
     "MetricDefinition", "Torchrun", "MPI", "SMP", "model_trainer", "train",
     "with_retry_strategy", "with_metric_definitions"]
)  # fmt: skip


def _keyword(tree: ast.Module, name: str) -> str:
    """The source of ModelTrainer's ``name=`` argument in port's program."""
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == name:
            return ast.unparse(node.value)
    raise AssertionError(f"no {name}=")


def calls_and_names(code: str) -> tuple[set[str], set[str]]:
    """The names of the functions ``code`` calls and of every name it reads or writes; raises
    SyntaxError if it does not compile."""
    tree = ast.parse(code)
    compile(tree, "ported.py", "exec")
    calls, names = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            calls.add(func.id if isinstance(func, ast.Name) else getattr(func, "attr", "?"))
        elif isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
    return calls, names


_HOSTILE_VALUES = [
    'x"""y', "x'''y", "back\\slash", "new\nline", "nul\0byte", "surrogate\udcff\ud800",
    '")\nimport os\nos.system("echo PWNED")\n#', "{__import__('os')}", "\\N{BULLET}",
    "##[stop-commands]tok", "::error::x", CONTROLS,
]  # fmt: skip


def _hostile_spec(folder: Path, name: str) -> Path:
    (folder / ".git").mkdir(parents=True, exist_ok=True)
    (folder / "train.py").write_text(TRAIN)
    data = {
        "estimator": "pytorch", "entry_point": "train.py", "instance_type": "ml.p3.2xlarge",
        "framework_version": "2.0", "py_version": "py310", "role": ROLE.split(": ")[1].strip(),
        # Names CreateTrainingJob accepts (no control characters), values it accepts.
        "hyperparameters": {f"k{i}": v for i, v in enumerate(_HOSTILE_VALUES) if "\n" not in v}
        | {'a"b\\c': 1, "'''": 2, "x y": 3},
        "environment": {f"E{i}": v for i, v in enumerate(_HOSTILE_VALUES)},
        "inputs": {"train": "s3://bucket/x'\"\"\"y"},
        "base_job_name": "x",
    }  # fmt: skip
    path = folder / name
    # JSON, which can write a lone surrogate; the .yaml suffix reads it as YAML, which cannot.
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.both_sdks
@pytest.mark.parametrize("name", [PWNED.replace(".yaml", ".json"), "plain.json"])
def test_port_output_holds_no_call_of_the_inputs_and_sends_its_values(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from safe_estimators._targets.model_trainer import (
        capture_train_request,
        offline_trainer_session,
    )

    monkeypatch.setenv("SAGEMAKER_VALIDATE_ROLE", "false")
    spec = _hostile_spec(tmp_path, name)
    monkeypatch.chdir(tmp_path)
    assert main(["port", spec.name]) == 0
    code = capsys.readouterr().out
    calls, names = calls_and_names(code)
    assert calls <= _TEMPLATE_CALLS, calls - _TEMPLATE_CALLS
    assert not {"__import__", "os", "system", "eval", "exec"} & names
    # Run, it sends every value as given (the CI-safe escapes read back whole).
    namespace: dict[str, Any] = {"__name__": "ported"}
    exec(compile(code, "ported.py", "exec"), namespace)
    request, _ = capture_train_request(namespace["model_trainer"](offline_trainer_session(None)))
    environment = request["Environment"]
    assert [environment[f"E{i}"] for i in range(len(_HOSTILE_VALUES))] == _HOSTILE_VALUES


# A recipe job is written as ModelTrainer.from_recipe, its overrides as a dict or, where the
# bare from_recipe cannot read them from one, OmegaConf.create of one.
_RECIPE_CALLS = _TEMPLATE_CALLS | {"from_recipe", "create"}


@pytest.mark.sdk3_only  # ModelTrainer.from_recipe is sagemaker 3's
@pytest.mark.parametrize("interpolated", [False, True], ids=["dict", "omegaconf"])
def test_port_of_a_recipe_job_holds_no_call_of_the_inputs_and_sends_its_values(
    interpolated: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import yaml
    from recipe_fixtures import gpu_recipe, local_repositories, redirect_environment, write_recipe

    from safe_estimators._targets.model_trainer import (
        capture_train_request,
        offline_trainer_session,
    )

    for key, value in redirect_environment(local_repositories(tmp_path / "repos", {})).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("SAGEMAKER_VALIDATE_ROLE", "false")
    project = tmp_path / "p"
    (project / ".git").mkdir(parents=True)
    # Recipe keys and values a YAML file holds (no NUL, no lone surrogate).
    hostile = [v for v in _HOSTILE_VALUES if "\0" not in v and "\udcff" not in v]
    recipe = gpu_recipe(nodes=1, fp8=False)
    recipe["run"]["results_dir"] = "${base_results_dir}/x" if interpolated else "/results"
    recipe["exp_manager"]["checkpoint_dir"] = "/checkpoints"
    recipe["extra"] = {v: "x" for v in hostile}
    recipe_name = PWNED  # a recipe file whose name is a statement in a docstring
    write_recipe(project / recipe_name, recipe)
    data = {
        "estimator": "pytorch", "training_recipe": recipe_name, "instance_type": "ml.p4d.24xlarge",
        "role": ROLE.split(": ")[1].strip(), "base_job_name": "x",
        "recipe_overrides": {
            "run": {"results_dir": "/opt/ml/model"},
            "model": {"data": {"train_dir": "/opt/ml/input/data/train"}},
            "extra": {v: v for v in hostile},
        },
        "environment": {f"E{i}": v for i, v in enumerate(_HOSTILE_VALUES)},
        "inputs": {"train": "s3://bucket/x'\"\"\"y"},
    }  # fmt: skip
    spec = project / PWNED.replace(".yaml", ".json")
    spec.write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.chdir(project)
    assert main(["port", spec.name]) == 0
    code = capsys.readouterr().out
    calls, names = calls_and_names(code)
    assert calls <= _RECIPE_CALLS, calls - _RECIPE_CALLS
    assert not {"__import__", "os", "system", "eval", "exec"} & names
    assert ("OmegaConf.create(" in code) is interpolated
    namespace: dict[str, Any] = {"__name__": "ported"}
    exec(compile(code, "ported.py", "exec"), namespace)
    trainer = namespace["model_trainer"](offline_trainer_session(None))
    # The recipe from_recipe saved for the job holds the overrides as given.
    saved = Path(trainer.source_code.source_dir) / "recipe.yaml"
    assert yaml.safe_load(saved.read_text())["extra"] == {v: v for v in hostile}
    request, _ = capture_train_request(trainer)
    environment = request["Environment"]
    assert [environment[f"E{i}"] for i in range(len(_HOSTILE_VALUES))] == _HOSTILE_VALUES


def test_port_writes_a_name_that_is_no_keyword_argument_as_data() -> None:
    from safe_estimators._commands.port import _call

    code = _call("SMP", {"ok": 1, "a=__import__('os')": 2, "class": 3})
    call = ast.parse(code, mode="eval").body
    assert isinstance(call, ast.Call) and [k.arg for k in call.keywords] == ["ok", None]
    assert ast.literal_eval(call.keywords[1].value) == {"a=__import__('os')": 2, "class": 3}


def test_port_masks_an_accepted_token_and_a_secret_name(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "p"
    accepted = f"environment: {{HF_TOKEN: {TOKEN}}}\naccept_exposure: [environment.HF_TOKEN]\n"
    spec = _project(folder, BASE + ROLE + accepted)
    assert main(["port", str(spec)]) == 0
    code = capsys.readouterr().out
    assert TOKEN not in code and "'hf_Q…'" in code and "cut to their first characters" in code


# --- secrets: raw arguments, keys, every output ----------------------------------------------

_JOB = dict(
    entry_point="train.py", instance_type="ml.p3.2xlarge", framework_version="2.0",
    py_version="py310", role="arn:aws:iam::123456789012:role/x",
)  # fmt: skip

# Finding 8: a credential beside a malformed entry, in each place a value reaches the request
# (6 of 7 were not reported: the type error stopped the job before the rules ran).
_BESIDE_A_BAD_ENTRY = {
    "environment": {"environment": {"HF_TOKEN": TOKEN, "BAD_NUMBER": 5}},
    "environment-hf-token": {"environment": {"hf-token": TOKEN}},
    "environment-hf-token-by-name": {"environment": {"hf-token": "Abcdefgh12345678"}},
    "hyperparameters": {"hyperparameters": {"hub_token": TOKEN, "bad": object()}},
    "tags": {"tags": [{"Key": "t", "Value": TOKEN}, {"Key": 5}]},
    "container_arguments": {"container_arguments": ["--token", TOKEN, 5]},
    "container_entry_point": {"container_entry_point": ["python", TOKEN, 5]},
    "distribution": {
        "distribution": {"mpi": {"enabled": True, "custom_mpi_options": f"-x HF_TOKEN={TOKEN}"}},
        "instance_count": "x",
    },
    "output_path": {"output_path": f"s3://bucket/{TOKEN}", "volume_size": "x"},
    "entry_point-missing": {"environment": {"HF_TOKEN": TOKEN}, "entry_point": None},
}


@pytest.mark.parametrize("extra", _BESIDE_A_BAD_ENTRY.values(), ids=_BESIDE_A_BAD_ENTRY.keys())
def test_a_credential_beside_a_malformed_entry_is_reported_in_python(
    extra: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(TRAIN)
    arguments = {**_JOB, **extra}
    arguments = {k: v for k, v in arguments.items() if v is not None}
    with pytest.raises(safe_estimators.ConfigError) as raised:
        safe_estimators.pytorch(**arguments)
    text = str(raised.value)
    assert "looks like" in text, text
    assert TOKEN not in text and "Abcdefgh12345678" not in text


def test_a_secret_as_a_hyperparameter_name_is_reported_and_never_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _project(tmp_path, BASE + ROLE + f"hyperparameters: {{'{PASSWORD_KEY}': 1}}\n")
    for command in (["validate"], ["plan"], ["--json", "plan"], ["port"]):
        assert main([*command, str(spec)]) == 1
        out = capsys.readouterr().out
        assert "looks like a secret (by its name)" in out, (command, out)
        assert "Xk9#mP2vL8qR4wT6" not in out


# --- every line of every format, for any name and value ---------------------------------------

_HOSTILE_CHARACTERS = ":#[] %,=\\'\"ab\x1b\x07\x85\u2028\u2029\u202e\u00a0\t\r\n"
_NAMES = st.text(alphabet=_HOSTILE_CHARACTERS, min_size=1, max_size=24).filter(
    lambda n: n not in (".", "..")
)
_VALUES = st.text(alphabet=_HOSTILE_CHARACTERS, max_size=24)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(name=_NAMES, key=_NAMES, value=_VALUES, valid=st.booleans())
def test_no_output_line_of_any_format_holds_a_command_or_a_control_character(
    name: str, key: str, value: str, valid: bool, tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder = tmp_path_factory.mktemp("lines")
    (folder / ".git").mkdir()
    (folder / "train.py").write_text(TRAIN)
    data = {
        **_JOB, "estimator": "pytorch", "hyperparameters": {key: value},
        **({} if valid else {"instance_type": name}),
    }  # fmt: skip
    spec = folder / f"{name}.yaml"
    spec.write_text(json.dumps(data))  # JSON escapes every character: YAML reads it back
    runs = [["validate", "--no-cache", "--format", f] for f in FORMATS]
    runs += [["lint", "--format", f] for f in ("text", "github")]
    runs += [["plan", "--format", f] for f in ("text", "github", "json")]
    for arguments in runs:
        out, err = _run_main([*arguments, str(spec)])
        unsafe = unsafe_lines(out, "github" in arguments) + unsafe_lines(err, False)
        assert unsafe == [], (arguments, unsafe)
        if "json" in arguments or "sarif" in arguments or "codeclimate" in arguments:
            json.loads(out)


def _run_main(arguments: list[str]) -> tuple[str, str]:
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(arguments)
    assert code in (0, 1), (arguments, code, out.getvalue()[-500:], err.getvalue()[-500:])
    return out.getvalue(), err.getvalue()


def test_the_ci_safe_line_is_idempotent_and_keeps_plain_lines() -> None:
    from safe_estimators._report import ci_safe_line

    for line in ("job.yaml: valid", '  "source": "a.yaml",', "x = f'{a}'", ""):
        assert ci_safe_line(line) == line
    forged = f"  ::stop-commands::x ##[error]{CONTROLS}"
    once = ci_safe_line(forged)
    assert ci_safe_line(once) == once and runner_command(once) is None and once.isprintable()
