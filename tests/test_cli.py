"""The `safe-estimators` command as a CI job or a reviewer uses it: exit codes and what it prints.

Most tests call `safe_estimators._cli.main([...])` in-process; two run real processes, to see
what a fresh interpreter imports and prints. Planning builds real SageMaker estimators offline,
which is slow (seconds each), so each example is planned once per output format.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SDK3, runs_here

import instance_catalog
from safe_estimators._cli import main, size_order
from safe_estimators._spec_files.schema import spec_schema

ROOT = Path(__file__).parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*/job.*"))
# The examples that build on the installed SDK (on sagemaker 3, not the estimator-only ones).
BUILDABLE = [path for path in EXAMPLES if runs_here(path)]
SPECS = Path(__file__).parent / "fixtures" / "specs"


@pytest.fixture(autouse=True)
def _restore_logging():
    """main() silences logging for the process, as a command should; give it back to pytest."""
    previous = logging.root.manager.disable
    yield
    logging.disable(previous)


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _example_id(path: Path) -> str:
    return path.parent.name


# --- validate -------------------------------------------------------------------------------


def test_every_example_is_valid(capsys):
    code, out, err = run(capsys, "validate", *BUILDABLE)
    assert code == 0, out
    assert [line for line in out.splitlines() if line.endswith(": valid")] == [
        f"{path}: valid" for path in BUILDABLE
    ]
    assert err == ""


@pytest.mark.sdk2_only  # a Training Compiler job: the estimator's only
def test_warnings_are_printed_but_do_not_fail_validation(capsys):
    code, out, _ = run(capsys, "validate", ROOT / "examples/compiler-multi-node/job.toml")
    assert code == 0
    assert "distribution.torchxla: warning: 'torchxla' is not read by the SageMaker SDK" in out


# (fixture, the problem line validate prints after "<file>" and the line and column it names)
BROKEN = [
    ("yaml-syntax-error.yaml", ":6:1: <file>: is not valid YAML at line 6, column 1:"),
    (
        "unknown-key.yaml",
        ":6:1: instance_cout: 'instance_cout' is not an option of the pytorch estimator, and "
        "the SDK would silently ignore it (the estimator's **kwargs drops it): the job would run "
        "without that setting. (did you mean 'instance_count'?)",
    ),
    (
        "wrong-type.yaml",
        ":6:1: instance_count: expected int, got str '2'. (write a whole number without quotes, "
        "e.g. 4)",
    ),
    (
        "too-many-processes.yaml",
        ":10:3: model_parallel.processes_per_host: 16 processes per host, but ml.p3.16xlarge "
        "has 8 GPUs",
    ),
    pytest.param(
        "compiler-on-cpu.yaml",
        ":5:1: instance_type: Training Compiler does not support the c5 family (ml.c5.xlarge)",
        marks=pytest.mark.sdk2_only,  # Training Compiler: the estimator's only
    ),
    ("not-a-mapping.yaml", ": <file>: must hold a mapping of options at the top level, got list."),
    ("does-not-exist.yaml", ": <file>: '{path}' does not exist. (check the path.)"),
]


def _broken_id(case: object) -> str:
    return str(case.values[0] if hasattr(case, "values") else case[0])  # type: ignore[index]


@pytest.mark.parametrize(("name", "expected"), BROKEN, ids=[_broken_id(b) for b in BROKEN])
def test_validate_reports_a_broken_file_with_its_path_and_exits_1(capsys, name, expected):
    path = SPECS / name
    code, out, err = run(capsys, "validate", path)
    assert code == 1
    assert f"{path}{expected.format(path=path)}" in out
    assert "Traceback" not in out + err
    assert "valid" not in out.splitlines()[-1].rsplit(":", 1)[-1]


@pytest.mark.parametrize(("name", "expected"), BROKEN, ids=[_broken_id(b) for b in BROKEN])
def test_plan_refuses_a_broken_file_the_same_way(capsys, name, expected):
    path = SPECS / name
    code, text, err = run(capsys, "plan", path)
    assert code == 1
    assert f"{path}{expected.format(path=path)}" in text
    assert "Traceback" not in text + err
    code, out, err = run(capsys, "plan", path, "--json")
    assert code == 1
    document = json.loads(out)
    assert document["ok"] is False
    where = [
        f"{p['file']}:{p['line']}:{p['column']}" if "line" in p else p["source"]
        for p in document["problems"]
    ]
    lines = [
        f"{at}: {p['path']}: {p['message']}" + (f" ({p['hint']})" if p["hint"] else "")
        for at, p in zip(where, document["problems"], strict=True)
    ]
    assert lines == text.splitlines()


def test_three_mistakes_are_three_problems_with_their_paths(capsys):
    path = SPECS / "three-mistakes.yaml"
    code, out, _ = run(capsys, "validate", path)
    assert code == 1
    lines = out.splitlines()
    assert len(lines) == 3
    assert lines == [
        f"{path}:10:1: hyperparameter: 'hyperparameter' is not an option of the pytorch estimator, "
        "and the SDK would silently ignore it (the estimator's **kwargs drops it): the job would "
        "run without that setting. (did you mean 'hyperparameters'?)",
        f"{path}:7:1: instance_count: must be a positive whole number, got 0. (use 1 or more)",
        f"{path}:12:1: max_run: expected int, got str '3600'. "
        "(write a whole number without quotes, e.g. 4)",
    ]


def test_a_typo_does_not_hide_a_rule_problem_in_the_same_file(capsys):
    code, out, _ = run(capsys, "validate", SPECS / "typo-and-rule.yaml")
    assert code == 1
    assert "hyperparameter: 'hyperparameter' is not an option" in out
    assert "model_parallel.processes_per_host: 16 processes per host" in out


def test_validate_checks_every_file_and_fails_if_any_is_invalid(capsys):
    good, bad = BUILDABLE[0], SPECS / "wrong-type.yaml"
    code, out, _ = run(capsys, "validate", good, bad)
    assert code == 1
    assert f"{good}: valid" in out
    assert f"{bad}:6:1: instance_count:" in out


def test_validate_does_not_import_sagemaker():
    """A fresh interpreter: validate of every example leaves the SageMaker SDK unimported."""
    code = (
        "import sys\n"
        "from safe_estimators._cli import main, size_order\n"
        "status = main(['validate', *sys.argv[1:]])\n"
        "assert 'sagemaker' not in sys.modules, 'validate imported sagemaker'\n"
        "sys.exit(status)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, *map(str, BUILDABLE)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.count(": valid") == len(BUILDABLE)


# --- usage errors and internal errors -------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [[], ["validate"], ["frobnicate"], ["plan"], ["catalog", "--min-gpus", "many"]],
    ids=["no-command", "validate-without-files", "unknown-command", "plan-without-file", "nan"],
)
def test_usage_errors_exit_2(capsys, argv):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert "usage: safe-estimators" in err
    assert out == ""


def test_help_exits_0(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    assert "validate" in out and "plan" in out and "catalog" in out


def test_an_internal_error_exits_3_with_a_one_line_report(capsys, monkeypatch):
    import safe_estimators._commands.plan

    def broken(*_args, **_kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(safe_estimators._commands.plan, "plan", broken)
    code, out, err = run(capsys, "plan", EXAMPLES[0])
    assert code == 3
    assert out == ""
    assert "internal error: RuntimeError: boom" in err
    assert "--verbose" in err
    assert "Traceback" not in err


# --- plan -----------------------------------------------------------------------------------


@pytest.mark.sdk2_only  # the estimator's request (sagemaker_program, ...)
@pytest.mark.parametrize("example", EXAMPLES, ids=_example_id)
def test_every_example_plans_offline_as_json(capsys, example):
    code, out, err = run(capsys, "plan", example, "--json")
    assert code == 0, out + err
    document = json.loads(out)
    request = document["request"]
    assert {"AlgorithmSpecification", "ResourceConfig", "HyperParameters", "RoleArn"} <= set(
        request
    )
    assert request["AlgorithmSpecification"]["TrainingImage"] == document["image_uri"]
    # The recipe example runs the script its recipe names (an injection); the others train.py.
    script = {i["path"]: i["value"] for i in document["injected"]}.get("entry_point", "train.py")
    assert request["HyperParameters"]["sagemaker_program"] == f'"{script}"'
    # What was injected is what the request carries.
    assert document["injected"], "every example relies on an injected value"
    for injection in document["injected"]:
        section, _, key = injection["path"].partition(".")
        if section == "environment":
            assert request["Environment"][key] == injection["value"]
    # No account: the placeholders are said out loud.
    assert any(p.startswith("role = ") for p in document["placeholders"])
    assert request["RoleArn"].endswith("role/SageMakerExecutionRolePlaceholder")
    assert err == ""


# What each example's summary must say: the layout, what was injected, and the request.
SUMMARIES = {
    "heterogeneous-smddp": [
        "pytorch on 3 x instance groups (data: 1 x ml.c5.2xlarge, gpu: 2 x ml.p4d.24xlarge)\n",
        "  ResourceConfig: data: 1 x ml.c5.2xlarge, gpu: 2 x ml.p4d.24xlarge, 30 GB volume",
        "  HyperParameters.sagemaker_distribution_instance_groups = [\"gpu\"]",
        "  HyperParameters.sagemaker_distributed_dataparallel_enabled = true",
    ],
    "compiler-single-gpu": [
        "huggingface on 1 x ml.p3.2xlarge, 1 GPU",
        "injected environment.GPU_NUM_DEVICES = '1': ml.p3.2xlarge has 1 GPU",
        "  Environment.GPU_NUM_DEVICES = 1",
        "  HyperParameters.sagemaker_training_compiler_enabled = true",
    ],
    "compiler-multi-gpu": [
        "pytorch on 1 x ml.p3.8xlarge, 4 GPUs each",
        "injected environment.GPU_NUM_DEVICES = '4'",
        "injected distribution.pytorchxla = {'enabled': True}",
        "  HyperParameters.sagemaker_pytorch_xla_multi_worker_enabled = true",
    ],
    "compiler-multi-node": [
        "huggingface on 2 x ml.p4d.24xlarge, 8 GPUs each",
        "injected environment.GPU_NUM_DEVICES = '8': ml.p4d.24xlarge has 8 GPUs",
        "injected distribution.pytorchxla = {'enabled': True}: rewritten from 'torchxla'",
        "warning distribution.torchxla: 'torchxla' is not read by the SageMaker SDK",
        "  ResourceConfig: 2 x ml.p4d.24xlarge",
        "  EnableInterContainerTrafficEncryption: True",
        "  HyperParameters.sagemaker_pytorch_xla_multi_worker_enabled = true",
    ],
    "model-parallel-fp16": [
        "pytorch on 1 x ml.p3.16xlarge, 8 GPUs each",
        "parallel layout: world 8 = 1 instance x 8 processes; pipeline 2 x tensor 2",
        "injected distribution.mpi.processes_per_host = 8: one process per GPU",
        "  HyperParameters.sagemaker_mpi_num_of_processes_per_host = 8",
    ],
    "memory-fit": [
        "pytorch on 1 x ml.p4d.24xlarge, 8 GPUs each",
        "memory: 17.2 GB per accelerator (40% of 42.9 GB per A100 of ml.p4d.24xlarge)",
        "memory note: parameters 6,738,415,616 counted from the architecture",
    ],
    "hyperpod-recipe": [
        "pytorch on 2 x ml.p5.48xlarge, 8 GPUs each",
        "smdistributed-modelparallel:2.4.1-gpu-py311-cu121",
        "injected instance_count = 2: the recipe's trainer.num_nodes",
        "injected entry_point = 'llama_pretrain.py'",
        '  HyperParameters.mp_parameters = {"placement_strategy": "cluster"}',
        "  HyperParameters.config-name = \"llama3_8b_pretrain_",
    ],
    "model-parallel-v2": [
        "pytorch on 2 x ml.p4d.24xlarge, 8 GPUs each",
        "smdistributed-modelparallel:2.2.0-gpu-py310-cu121",
        "parallel layout: world 16 = 2 instances x 8 processes (torchrun",
        "injected distribution.torch_distributed.enabled = True",
        '  HyperParameters.mp_parameters = {"hybrid_shard_degree": 16, '
        '"sm_activation_offloading": true}',
        "  HyperParameters.sagemaker_torch_distributed_enabled = true",
    ],
}


@pytest.mark.sdk2_only  # the estimator's request and layout
@pytest.mark.parametrize("example", EXAMPLES, ids=_example_id)
def test_every_example_plans_offline_as_a_summary(capsys, example):
    code, out, err = run(capsys, "plan", example)
    assert code == 0, out + err
    assert out.startswith(f"plan for {example}\n")
    for expected in SUMMARIES[_example_id(example)]:
        assert expected in out
    assert "CreateTrainingJob request:" in out
    assert "placeholder role = " in out
    assert "(use --json for the complete request)" in out
    assert err == ""


def test_every_example_has_an_expected_summary():
    assert set(SUMMARIES) == {_example_id(path) for path in EXAMPLES}


@pytest.mark.sdk2_only  # the model parallel library v1: the estimator's only
def test_a_plan_renders_as_a_markdown_table_with_the_injected_values():
    from safe_estimators._commands.plan import plan

    result = plan(ROOT / "examples/model-parallel-fp16/job.yaml")
    markdown = result._repr_markdown_()
    assert markdown.startswith("| | |\n|---|---|\n")
    injected = result.explanation.injections
    assert {i.path for i in injected} >= {
        "distribution.mpi.processes_per_host",
        "distribution.smdistributed.modelparallel.parameters.ddp",
    }
    for injection in injected:
        assert f"| `{injection.path}` = `{injection.value!r}` | {injection.reason} |" in markdown
    assert "| parallel layout | world 8 = 1 instance x 8 processes" in markdown
    assert "| request `HyperParameters.sagemaker_mpi_num_of_processes_per_host` | `8` |" in markdown
    assert "| placeholder | role = " in markdown


def test_plan_output_is_clean_in_a_fresh_process(tmp_path):
    """The real console script, as a newcomer runs it: no SDK banners, INFO lines or warnings.

    Nothing here silences the SDK for it (no SAGEMAKER_SUPPRESS_V2_WARNING, no SDK config file),
    and a proxy that refuses every connection makes any attempt to reach the network fail.
    """
    script = Path(sys.executable).parent / "safe-estimators"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("SAGEMAKER_") and not k.startswith("PYTEST")
    }
    dead_proxy = "http://127.0.0.1:9"
    env.update(HOME=str(tmp_path), HTTP_PROXY=dead_proxy, HTTPS_PROXY=dead_proxy, NO_PROXY="")
    # On sagemaker 3, a job ModelTrainer runs (the compiler is the estimator's only).
    example = "model-trainer/qlora.yaml" if SDK3 else "compiler-single-gpu/job.yaml"
    result = subprocess.run(
        [str(script), "plan", str(ROOT / "examples" / example)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr == ""
    assert result.stdout.startswith("plan for ")
    for noise in ("INFO", "sagemaker.config", "Warning", "deprecat", "telemetry"):
        assert noise.lower() not in result.stdout.lower(), noise


# --- catalog and schema ---------------------------------------------------------------------


def _table(out: str) -> tuple[list[str], list[list[str]]]:
    header, *rows = out.splitlines()
    return header.split("  "), [row.split() for row in rows]


def test_catalog_lists_every_training_instance_type(capsys):
    code, out, _ = run(capsys, "catalog")
    assert code == 0
    header, rows = _table(out)
    assert header[0] == "instance type"
    names = [t.name for t in instance_catalog.instance_types()]
    assert [row[0] for row in rows] == sorted(names, key=size_order)
    p3 = next(row for row in rows if row[0] == "ml.p3.8xlarge")
    assert p3[1:3] == ["4", "V100"]


def test_catalog_says_neuron_cores_and_precision(capsys):
    code, out, _ = run(capsys, "catalog", "--accelerator", "Trainium")
    assert code == 0
    header, rows = _table(out)
    assert header[-3:] == ["NeuronCores", "bf16", "fp8"]
    trn1 = next(row for row in rows if row[0] == "ml.trn1.32xlarge")
    assert trn1[-3:] == ["32", "yes", "yes"]
    _, rows = _table(run(capsys, "catalog", "--accelerator", "V100")[1])
    assert all(row[-3:] == ["-", "no", "no"] for row in rows)


def test_catalog_min_gpus_keeps_the_big_instances(capsys):
    code, out, _ = run(capsys, "catalog", "--min-gpus", 8)
    assert code == 0
    _, rows = _table(out)
    names = [row[0] for row in rows]
    assert "ml.p4d.24xlarge" in names and "ml.p3.16xlarge" in names
    assert "ml.p3.8xlarge" not in names
    assert all(int(row[1]) >= 8 for row in rows)


def test_catalog_filters_by_accelerator(capsys):
    code, out, _ = run(capsys, "catalog", "--accelerator", "a100")
    assert code == 0
    _, rows = _table(out)
    assert "ml.p4d.24xlarge" in [row[0] for row in rows]
    assert all(row[2] == "A100" for row in rows)


def test_catalog_as_json_is_the_catalog(capsys):
    code, out, _ = run(capsys, "catalog", "--json", "--min-gpus", 1, "--accelerator", "A100")
    assert code == 0
    entries = json.loads(out)
    assert entries
    for entry in entries:
        known = instance_catalog.get(entry["name"])
        assert entry["gpu_count"] == known.gpu_count >= 1
        assert entry["accelerator_name"] == "A100"


def test_schema_prints_the_json_schema(capsys):
    code, out, err = run(capsys, "schema")
    assert code == 0
    assert err == ""
    assert json.loads(out) == spec_schema()


@pytest.mark.parametrize("argv", [["bogus"], ["bogus", "plan"], ["--json", "bogus", "lint"]])
def test_an_unknown_command_is_told_every_command_there_is(capsys, argv):
    # The parser fills in only the commands named on the line; a line that does not parse is
    # parsed again by the whole one, whatever words it holds.
    code, out, err = run(capsys, *argv)
    text = out + err
    assert code == 2
    assert "invalid choice: 'bogus'" in text
    for command in ("validate", "plan", "submit", "lint", "catalog", "schema", "port"):
        assert f"'{command}'" in text


def test_help_lists_every_command(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for command in ("validate", "plan", "submit", "lint", "catalog", "schema", "port"):
        assert command in out


def test_help_is_as_wide_as_the_terminal_says(capsys, monkeypatch):
    # argparse sizes its help by shutil.get_terminal_size; ours reads $COLUMNS the same way.
    monkeypatch.setenv("COLUMNS", "60")
    narrow = run(capsys, "validate", "--help")[1].splitlines()
    monkeypatch.setenv("COLUMNS", "200")
    wide = run(capsys, "validate", "--help")[1].splitlines()
    assert len(narrow) > len(wide)
    helps = narrow[narrow.index("options:") + 1 : narrow.index("exit codes:")]
    assert helps and max(map(len, helps)) <= 58  # argparse leaves two columns
