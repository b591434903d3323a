"""The input side of the third hostile campaign (issue 32): what a pull request's recipes,
configuration files and folders could make a CI check read, resolve or spend.

Each case is a project folder (with ``.git``) holding a spec and what it names, and the
command lines to run on it. ``python tests/hostile_round3.py DIR`` writes them for a look by
hand; ``tests/test_hostile_round3.py`` runs them in the bounded subprocesses of round 2.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import attrs

ROOT = Path(__file__).parent.parent
RECIPE = (ROOT / "examples" / "hyperpod-recipe" / "recipes" / "llama3_8b_pretrain.yaml").read_text()
# A fake runner secret, set in every child's environment: no output may ever hold it.
RUNNER_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"
OUTSIDE = "SECRETBYTES-from-outside-the-project"
FORMATS = ("text", "json", "github", "sarif", "codeclimate")
ROLE = "role: arn:aws:iam::123456789012:role/x\n"
RECIPE_JOB = (
    "estimator: pytorch\n"
    "training_recipe: recipes/r.yaml\n"
    "instance_type: ml.p5.48xlarge\n" + ROLE + "recipe_overrides:\n"
    "  run: {results_dir: /opt/ml/model}\n"
    "  exp_manager: {exp_dir: /opt/ml/output, checkpoint_dir: /opt/ml/checkpoints}\n"
    "  model: {data: {train_dir: /opt/ml/input/data/train}}\n"
)


@attrs.frozen
class Case3:
    """One attack: a project, the command lines to run in it (argv after the program name, the
    spec last), and what a good outcome prints."""

    name: str
    folder: Path
    commands: tuple[tuple[str, ...], ...]
    expected: str = ""  # text the first command must print
    exits: tuple[int, ...] = (0, 1)
    forbidden: tuple[str, ...] = (RUNNER_SECRET, OUTSIDE)


def _project(d: Path, spec: str, recipe: str | None = RECIPE, **files: str) -> Path:
    (d / ".git").mkdir(parents=True)
    (d / "job.yaml").write_text(spec)
    if recipe is not None:
        (d / "recipes").mkdir()
        (d / "recipes" / "r.yaml").write_text(recipe)
    for name, text in files.items():
        (d / name).parent.mkdir(parents=True, exist_ok=True)
        (d / name).write_text(text)
    return d


def everywhere(*extra: str) -> tuple[tuple[str, ...], ...]:
    """validate in every output format, lint and plan (text and JSON): where a value of the
    runner could be printed."""
    return (
        *(("validate", "--no-cache", "--format", f, *extra, "job.yaml") for f in FORMATS),
        ("lint", *extra, "job.yaml"),
        ("plan", *extra, "job.yaml"),
        ("plan", "--json", *extra, "job.yaml"),
    )


CHECKED = (("validate", "--no-cache", "job.yaml"), ("plan", "job.yaml"))
# Where plan reads the recipe exactly as validate does and stops at the same problem.
VALIDATED = (("validate", "--no-cache", "job.yaml"),)
RESOLVED_AT_BUILD = "the SageMaker SDK resolves it when it builds the job"


def _env_in_overrides(name: str, value: str) -> Callable[[Path], Case3]:
    def make(d: Path) -> Case3:
        spec = RECIPE_JOB + f"  trainer: {{precision: {json.dumps(value)}}}\n"
        shown = json.dumps(value)
        spec = spec.replace("  model: {data: {", f"  model: {{model_type: {shown}, data: {{")
        return Case3(name, _project(d, spec), everywhere(), RESOLVED_AT_BUILD)

    return make


def _env_in_recipe(d: Path) -> Case3:
    recipe = RECIPE.replace("model_type: llama_v3", "model_type: ${oc.env:AWS_SECRET_ACCESS_KEY}")
    return Case3("env-in-recipe-file", _project(d, RECIPE_JOB, recipe), everywhere(),
                 RESOLVED_AT_BUILD)  # fmt: skip


def _escaped_decode(d: Path) -> Case3:
    # A literal "${oc.env:...}" made an interpolation again by oc.decode.
    recipe = RECIPE + "hidden: \\${oc.env:AWS_SECRET_ACCESS_KEY}\nshown: ${oc.decode:${hidden}}\n"
    return Case3("oc-decode-of-escaped-env", _project(d, RECIPE_JOB, recipe), everywhere(),
                 "calls oc.decode")  # fmt: skip


def _outside(d: Path) -> Path:
    (d / "outside").mkdir(parents=True)
    text = RECIPE.replace("model_type: llama_v3", f"model_type: {OUTSIDE}")
    (d / "outside" / "r.yaml").write_text(text)
    (d / "outside" / "mp.json").write_text(json.dumps({"partitions": OUTSIDE}))
    return d / "project"


def _colon_recipe(d: Path) -> Case3:
    project = _outside(d)
    spec = RECIPE_JOB.replace("recipes/r.yaml", "'x://../../outside/r.yaml'")
    _project(project, spec)
    (project / "x:").mkdir()
    return Case3("colon-recipe", project, everywhere(), "outside the project")


def _git_config_outside(d: Path) -> Case3:
    project = _outside(d)
    spec = RECIPE_JOB.replace("recipes/r.yaml", "../outside/r.yaml") + (
        "git_config: {repo: 'https://github.com/aws/sagemaker-python-sdk.git'}\n"
    )
    _project(project, spec)
    return Case3("git-config-recipe-outside", project, CHECKED, "outside the project")


def _git_config_parameters(d: Path) -> Case3:
    project = _outside(d)
    spec = (
        "estimator: pytorch\nentry_point: train.py\ninstance_type: ml.p4d.24xlarge\n"
        "framework_version: '1.13.1'\npy_version: py39\n" + ROLE
        + "git_config: {repo: 'https://github.com/aws/sagemaker-python-sdk.git'}\n"
        "distribution: {smdistributed: {modelparallel: {enabled: true, "
        "parameters: ../outside/mp.json}}, mpi: {enabled: true}}\n"
    )
    _project(project, spec, None)
    return Case3("git-config-parameters-outside", project, CHECKED, "outside the project")


def _recipe_numbers(
    name: str, *changes: tuple[str, str], expected: str = ""
) -> Callable[[Path], Case3]:
    def make(d: Path) -> Case3:
        recipe = RECIPE
        for old, new in changes:
            assert old in recipe, old
            recipe = recipe.replace(old, new)
        return Case3(name, _project(d, RECIPE_JOB, recipe), CHECKED, expected)

    return make


DS_SCRIPT = (
    "import deepspeed\nimport torch\n"
    "engine, *_ = deepspeed.initialize(model=m, config='ds_config.json')\n"
)


DS_JOB = (
    "estimator: pytorch\nentry_point: train.py\nsource_dir: .\ninstance_type: ml.p5.48xlarge\n"
    "instance_count: 2\nframework_version: '2.3.0'\npy_version: py311\n" + ROLE
    + "distribution: {torch_distributed: {enabled: true}}\n"
    "model: {config: config.json, parameters: 8.03B, sequence_length: 4096, micro_batch_size: 1,"
    " precision: bf16}\n"
)
# Llama-3.1-8B's architecture (its config.json's numbers).
LLAMA_CONFIG = json.dumps({
    "model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096,
    "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
    "vocab_size": 128256, "tie_word_embeddings": False,
})  # fmt: skip


def _ds_config(name: str, target: str) -> Callable[[Path], Case3]:
    def make(d: Path) -> Case3:
        _project(d, DS_JOB, None, **{"train.py": DS_SCRIPT, "config.json": LLAMA_CONFIG})
        if target == "fifo":
            os.mkfifo(d / "ds_config.json")
        else:
            (d / "ds_config.json").symlink_to(target)
        commands = (("validate", "--no-cache", "job.yaml"), ("lint", "job.yaml"),
                    ("plan", "job.yaml"))  # fmt: skip
        return Case3(name, d, commands)

    return make


def _deep_recipe(levels: int, expected: str) -> Callable[[Path], Case3]:
    def make(d: Path) -> Case3:
        recipe = RECIPE + "deep: " + "[" * levels + "]" * levels + "\n"
        commands = CHECKED if levels > 1000 else VALIDATED
        case = Case3(f"recipe-{levels}-deep", _project(d, RECIPE_JOB, recipe), commands, expected)
        return case

    return make


def _deep_block_recipe(d: Path) -> Case3:
    lines = "".join(" " * i + f"k{i}:\n" for i in range(300))
    recipe = RECIPE + "deep:\n" + "".join(" " + line for line in lines.splitlines(True))
    return Case3("recipe-300-deep-block", _project(d, RECIPE_JOB, recipe), VALIDATED,
                 "nested deeper than 64 levels")  # fmt: skip


def _deep_interpolation(d: Path) -> Case3:
    value = "${oc.select:nope," * 450 + "1" + "}" * 450
    recipe = RECIPE + f"deep: '{value}'\n"
    return Case3("interpolation-450-deep", _project(d, RECIPE_JOB, recipe), VALIDATED,
                 "nests interpolations over 16 deep")  # fmt: skip


def _select_chain(d: Path) -> Case3:
    chain = "a0: aaaaaaaaaa\n" + "".join(
        f"a{i}: ${{oc.select:recipes.a{i - 1}}}${{oc.select:recipes.a{i - 1}}}\n"
        for i in range(22, 0, -1)
    )
    return Case3("oc-select-chain-22", _project(d, RECIPE_JOB, RECIPE + chain), VALIDATED,
                 "more than 100,000 characters")  # fmt: skip


def _empty_select_chain(d: Path) -> Case3:
    # No growth at all (the leaf is empty): only the number of evaluations explodes, as
    # OmegaConf evaluates a reference to a value not resolved yet each time it is named.
    chain = "b0: ''\n" + "".join(
        f"b{i}: ${{recipes.b{i - 1}}}${{recipes.b{i - 1}}}\n" for i in range(24, 0, -1)
    )
    return Case3("empty-select-chain-24", _project(d, RECIPE_JOB, RECIPE + chain), VALIDATED,
                 "past 10,000 evaluations")  # fmt: skip


def _resolver_then_copies(d: Path) -> Case3:
    copies = "".join(f"c{i}: ${{recipes.c{i - 1}}}${{recipes.c{i - 1}}}\n" for i in range(1, 12))
    recipe = RECIPE + "c0: ${multiply:'aaaaaaaaaa',2000}\n" + copies
    return Case3("resolver-result-copied", _project(d, RECIPE_JOB, recipe), VALIDATED,
                 "more than 100,000 characters")  # fmt: skip


def _self_link(d: Path) -> Case3:
    spec = (
        "estimator: pytorch\nentry_point: train.py\nsource_dir: code\n"
        "instance_type: ml.p3.2xlarge\nframework_version: '2.0'\npy_version: py310\n" + ROLE
    )
    _project(d, spec, None, **{"code/train.py": "import torch\nprint('training')\n"})
    (d / "code" / "x").symlink_to(".")
    commands = (("validate", "--no-cache", "job.yaml"), ("plan", "job.yaml"),
                ("plan", "--json", "job.yaml"))  # fmt: skip
    return Case3("source-dir-links-to-itself", d, commands, "is a link to a folder that holds it")


MAKERS: tuple[Callable[[Path], Case3], ...] = (
    _env_in_overrides("env-in-overrides", "${oc.env:AWS_SECRET_ACCESS_KEY}"),
    _env_in_overrides("env-with-default", "${oc.env:AWS_SECRET_ACCESS_KEY,llama_v3}"),
    _env_in_overrides("env-nested-in-select", "${oc.select:nope,${oc.env:AWS_SECRET_ACCESS_KEY}}"),
    _env_in_overrides("env-in-text", "x${oc.env:AWS_SECRET_ACCESS_KEY}y"),
    _env_in_overrides("custom-resolver", "${my_resolver:AWS_SECRET_ACCESS_KEY}"),
    _env_in_recipe,
    _escaped_decode,
    _colon_recipe,
    _git_config_outside,
    _git_config_parameters,
    _recipe_numbers(
        "num-nodes-1e12-shard-3",
        ("  num_nodes: 2 ", "  num_nodes: 1000000000000 "),
        ("shard_degree: 8 ", "shard_degree: 3 "),
        expected="must divide the world size",
    ),
    _recipe_numbers(
        "multiply-450-mb",
        ("model_type: hf", "model_type: ${multiply:'aaaaaaaaaa',45000000}"),
        expected="multiply would repeat 10 characters 45,000,000 times",
    ),
    _ds_config("ds-config-is-stdout", "/proc/self/fd/1"),
    _ds_config("ds-config-is-dev-zero", "/dev/zero"),
    _ds_config("ds-config-is-a-fifo", "fifo"),
    _ds_config("ds-config-outside", "/etc/passwd"),
    _deep_recipe(3000, "training_recipe: "),
    _deep_recipe(500, "nested deeper than 64 levels"),
    _deep_block_recipe,
    _deep_interpolation,
    _select_chain,
    _empty_select_chain,
    _resolver_then_copies,
    _self_link,
)


def generate(root: Path) -> list[Case3]:
    """Write every case under ``root`` (one folder each) and return them."""
    return [make(root / f"c{i:02d}") for i, make in enumerate(MAKERS)]


if __name__ == "__main__":  # pragma: no cover - by hand
    for case in generate(Path(sys.argv[1])):
        print(case.name, case.folder)
