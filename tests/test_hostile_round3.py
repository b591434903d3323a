"""Hostile input, round 3 (issue 32), the input side: a pull request's recipes, configuration
files and folders never make the CI check print the runner's secrets or outside files, hang,
exhaust memory, crash, or talk the verdict cache out of a verdict.

Every case runs in its own subprocess under the bounds of round 2 (address space, a timeout, an
audit hook that kills the process on a connection, or on a subprocess other than the ``git``
that plan's stand-in repositories need), with a fake ``AWS_SECRET_ACCESS_KEY`` in its
environment that no output format may ever hold. Each ends with exit 0 or 1, under 500 MB,
prints no traceback and nothing from outside the project.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hostile_round3 import DS_JOB, DS_SCRIPT, LLAMA_CONFIG, RECIPE, RUNNER_SECRET, Case3, generate
from test_hostile import ADDRESS_SPACE, HANG_SECONDS, ROOT, RSS_LIMIT_KB

Result = tuple[int, str, str, int, float]

CHILD = r"""
import json, os, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))

def _audit(event, args):
    forbidden = event == "socket.connect" or event == "os.posix_spawn"
    if event == "subprocess.Popen":  # plan's stand-in repositories run git, nothing else
        forbidden = os.path.basename(str(args[0] or (args[1] or ["?"])[0])) != "git"
    if forbidden:
        os.write(2, f"\nHOSTILE forbidden {{event}} {{args!r:.200}}\n".encode())
        os._exit(5)

sys.addaudithook(_audit)
from safe_estimators._cli import main

# The case's command lines one after another in this process (one interpreter start and one
# SDK import per case, not per command): each one's output, exit code, time and peak memory.
for argv in json.loads(sys.argv[1]):
    start = time.monotonic()
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    with open("/proc/self/status") as status:
        peak = next(int(l.split()[1]) for l in status if l.startswith("VmHWM:"))
    sys.stdout.flush()
    sys.stderr.flush()
    took = time.monotonic() - start
    line = f"\nHOSTILE-END exit={{code}} maxrss_kb={{peak}} seconds={{took:.2f}}\n"
    sys.stdout.write(line)
    sys.stderr.write(line)
    sys.stdout.flush()
    sys.stderr.flush()
"""
_END = re.compile(r"\nHOSTILE-END exit=(\S+) maxrss_kb=(\d+) seconds=([\d.]+)\n")


def run_all(
    folder: Path, commands: tuple[tuple[str, ...], ...], cache: Path
) -> dict[tuple[str, ...], Result]:
    """The command lines in ``folder``, in one process: each one's (exit code, stdout, stderr,
    peak RSS in kB, seconds); a command the process did not finish gets exit code -1 and the
    rest of the output."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH")))),
        "AWS_SECRET_ACCESS_KEY": RUNNER_SECRET,
        "SAFE_ESTIMATORS_CACHE_DIR": str(cache),
    }
    proc = subprocess.run(
        [sys.executable, "-c", CHILD.format(limit=ADDRESS_SPACE), json.dumps(commands)],
        capture_output=True,
        text=True,
        errors="replace",
        timeout=HANG_SECONDS * len(commands),
        cwd=folder,
        env=env,
    )
    outs, errs = _END.split(proc.stdout), _END.split(proc.stderr)
    found: dict[tuple[str, ...], Result] = {}
    for i, argv in enumerate(commands):
        if 4 * i + 3 < len(outs):
            code, rss, seconds = outs[4 * i + 1 : 4 * i + 4]
            err = errs[4 * i] if 4 * i < len(errs) else ""
            found[argv] = (int(code), outs[4 * i], err, int(rss), float(seconds))
        else:  # the process ended (or was killed) in this command
            found[argv] = (-1, outs[-1], errs[-1] + f" (process exit {proc.returncode})", 0, 0.0)
            break
    return found


def run(folder: Path, argv: tuple[str, ...], cache: Path) -> Result:
    """One command line in ``folder``, in a process of its own."""
    return run_all(folder, (argv,), cache)[argv]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Case3]]:
    yield {case.name: case for case in generate(tmp_path_factory.mktemp("hostile3"))}


@pytest.fixture(scope="module")
def results(
    corpus: dict[str, Case3], tmp_path_factory: pytest.TempPathFactory
) -> dict[tuple[str, tuple[str, ...]], Result]:
    cache = tmp_path_factory.mktemp("cache3")
    cases = list(corpus.values())
    with ThreadPoolExecutor(max_workers=2) as pool:  # the CI box has 2 cores
        done = pool.map(lambda case: run_all(case.folder, case.commands, cache), cases)
        return {
            (case.name, argv): result
            for case, found in zip(cases, done, strict=True)
            for argv, result in found.items()
        }


def test_the_corpus_covers_the_input_side_of_the_campaign(corpus: dict[str, Case3]) -> None:
    names = (
        "env-in-overrides", "env-nested-in-select", "env-in-recipe-file", "colon-recipe",
        "git-config-recipe-outside", "git-config-parameters-outside", "num-nodes-1e12-shard-3",
        "ds-config-is-stdout", "ds-config-is-a-fifo", "ds-config-is-dev-zero",
        "multiply-450-mb", "oc-select-chain-22", "recipe-3000-deep",
        "source-dir-links-to-itself",
    )  # fmt: skip
    assert set(names) <= set(corpus)


def test_every_case_ends_in_bounds_and_prints_no_secret_and_no_outside_file(
    corpus: dict[str, Case3], results: dict[tuple[str, tuple[str, ...]], Result]
) -> None:
    failures = [
        f"{name}: {' '.join(argv)} never ran"
        for name, case in corpus.items()
        for argv in case.commands
        if (name, argv) not in results
    ]
    for (name, argv), (code, out, err, rss, _) in results.items():
        case, printed = corpus[name], out + err
        why = [f"exit {code}"] if code not in case.exits else []
        if rss > RSS_LIMIT_KB:
            why.append(f"{rss // 1024} MB")
        why += [f"printed {text[:12]!r}..." for text in case.forbidden if text in printed]
        if "Traceback" in printed or "internal error" in printed:
            why.append("an internal error")
        if case.expected and argv == case.commands[0] and case.expected not in out:
            why.append(f"no {case.expected!r}")
        if why:
            failures.append(f"{name} / {' '.join(argv)}: {', '.join(why)}\n{printed[-600:]}")
    assert not failures, "\n\n".join(failures)


def test_a_value_only_the_build_resolves_is_named_masked_and_never_planned(
    results: dict[tuple[str, tuple[str, ...]], Result],
) -> None:
    code, out, *_ = results[("env-in-overrides", ("validate", "--no-cache", "--format", "text",
                                                   "job.yaml"))]  # fmt: skip
    assert "recipe.model.model_type: warning: is '${oc'… (31 characters), which calls oc.env" in out
    assert "oc.env reads an environment variable of that machine" in out
    assert "${oc.env:AWS_SECRET_ACCESS_KEY}" not in out  # its text is masked like a secret
    # The rules that read it say nothing of the stand-in: no "Model type ... not supported".
    assert "adapter script" not in out and code == 0
    code, out, *_ = results[("env-in-overrides", ("plan", "job.yaml"))]
    assert code == 1 and "plan never resolves it on this machine" in out
    _, out, *_ = results[("custom-resolver", ("validate", "--no-cache", "--format", "text",
                                              "job.yaml"))]  # fmt: skip
    assert "my_resolver is none of the resolvers the SDK and OmegaConf register" in out


def test_the_self_linking_source_folder_is_a_problem_not_a_crash(
    results: dict[tuple[str, tuple[str, ...]], Result],
) -> None:
    for argv in (("validate", "--no-cache", "job.yaml"), ("plan", "job.yaml")):
        code, out, *_ = results[("source-dir-links-to-itself", argv)]
        assert code == 1 and "code/x' is a link to a folder that holds it" in out


# --- the verdict cache: a cached verdict is never looser than a fresh one -------------------


def _recipe_project(folder: Path) -> Path:
    (folder / ".git").mkdir(parents=True)
    (folder / "recipes").mkdir()
    (folder / "recipes" / "r.yaml").write_text(RECIPE)
    spec = (ROOT / "examples" / "hyperpod-recipe" / "job.yaml").read_text()
    spec = spec.replace("recipes/llama3_8b_pretrain.yaml", "recipes/r.yaml")
    (folder / "job.yaml").write_text(spec)
    return folder


def _collection(folder: Path, devices: int) -> Path:
    recipes = folder / "recipes_collection" / "recipes" / "training"
    recipes.mkdir(parents=True)
    (recipes / "r.yaml").write_text(RECIPE.replace("  devices: 8 ", f"  devices: {devices} "))
    return folder


def _ds_project(folder: Path) -> Path:
    (folder / ".git").mkdir(parents=True)
    (folder / "job.yaml").write_text(DS_JOB)
    (folder / "train.py").write_text(DS_SCRIPT)
    (folder / "config.json").write_text(LLAMA_CONFIG)
    (folder / "ds_config.json").write_text(json.dumps({"zero_optimization": {"stage": 3}}))
    return folder


def _verdicts(folder: Path, cache: Path, *options: str) -> tuple[Result, Result]:
    cached = run(folder, ("validate", *options, "job.yaml"), cache)
    fresh = run(folder, ("validate", "--no-cache", *options, "job.yaml"), cache)
    return cached, fresh


def test_editing_the_recipe_file_is_never_hidden_by_the_cache(tmp_path: Path) -> None:
    project = _recipe_project(tmp_path / "p")
    assert run(project, ("validate", "job.yaml"), tmp_path / "cache")[0] == 0
    recipe = project / "recipes" / "r.yaml"
    recipe.write_text(recipe.read_text().replace("  devices: 8 ", "  devices: 3 "))
    cached, fresh = _verdicts(project, tmp_path / "cache")
    assert cached[:2] == fresh[:2]
    assert cached[0] == 1 and "recipe.trainer.devices: is 3" in cached[1]


def test_switching_the_recipes_collection_is_never_hidden_by_the_cache(tmp_path: Path) -> None:
    good, bad = _collection(tmp_path / "a", 8), _collection(tmp_path / "b", 3)
    project = _recipe_project(tmp_path / "p")
    spec = project / "job.yaml"
    spec.write_text(spec.read_text().replace("recipes/r.yaml", "training/r"))
    assert run(project, ("validate", "--recipes", str(good), "job.yaml"), tmp_path / "c")[0] == 0
    cached, fresh = _verdicts(project, tmp_path / "c", "--recipes", str(bad))
    assert cached[:2] == fresh[:2] and cached[0] == 1


def test_a_deepspeed_config_of_the_same_size_is_keyed_by_its_bytes(tmp_path: Path) -> None:
    project = _ds_project(tmp_path / "p")
    assert run(project, ("validate", "job.yaml"), tmp_path / "cache")[0] == 0
    config = project / "ds_config.json"
    config.write_text(config.read_text().replace('"stage": 3', '"stage": 0'))  # same length
    cached, fresh = _verdicts(project, tmp_path / "cache")
    assert cached[:2] == fresh[:2]
    assert cached[0] == 1 and "155.9 GB per accelerator" in cached[1]


# --- the build itself still resolves what only the build can ---------------------------------


def test_the_build_resolves_oc_env_on_the_machine_that_builds_the_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sagemaker_session: object
) -> None:
    # Checking never resolves it; building (fit, submit, a factory) hands the SDK the merged
    # recipe, which it resolves where it runs, as the bare SDK does.
    from conftest import ROLE
    from recipe_fixtures import README_OVERRIDES as OVERRIDES
    from recipe_fixtures import gpu_recipe, local_repositories, redirect_environment

    import safe_estimators

    name = "training/llama/ours_p5_pretrain"
    found = local_repositories(tmp_path / "repos", {name: gpu_recipe(nodes=1, shard=8)})
    for variable, value in redirect_environment(found).items():
        monkeypatch.setenv(variable, value)
    monkeypatch.setenv("SAFE_ESTIMATORS_RECIPES", str(found["launcher"]))
    monkeypatch.setenv("OURS_MODEL_TYPE", "llama_v3")
    model = {**OVERRIDES["model"], "model_type": "${oc.env:OURS_MODEL_TYPE}"}
    overrides = {**OVERRIDES, "model": model}
    (tmp_path / "code").mkdir()
    estimator = safe_estimators.pytorch(
        training_recipe=name, recipe_overrides=overrides, instance_type="ml.p5.48xlarge",
        role=ROLE, sagemaker_session=sagemaker_session, source_dir=str(tmp_path / "code"),
    )  # fmt: skip
    assert estimator.entry_point == "llama_pretrain.py"  # the adapter's script for llama_v3
    warnings = safe_estimators.explain(estimator).warnings
    [warning] = [w for w in warnings if w.path.startswith("recipe")]
    assert warning.path == "recipe.model.model_type" and "calls oc.env" in warning.message
