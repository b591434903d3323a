"""HyperPod training recipes: built as the SDK builds them, checked offline, planned offline.

Every recipe here is our own (tests/recipe_fixtures.py); the repositories the SDK clones are
local ones made in tmp, so the bare SDK runs beside ours without the network.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import sagemaker
from conftest import ROLE
from recipe_fixtures import (
    README_OVERRIDES,
    SDK_CONFIG,
    gpu_recipe,
    local_repositories,
    mutated,
    redirect_environment,
    trainium_recipe,
    write_recipe,
)
from sagemaker.pytorch import PyTorch

import safe_estimators
from safe_estimators._cli import main

README_NAME = "training/llama/hf_llama3_8b_seq8k_gpu_p5x16_pretrain"
P5X16 = gpu_recipe(nodes=16, shard=64, tensor=2, fp8=True)
TRN1X4 = trainium_recipe(nodes=4)


@pytest.fixture
def repos(tmp_path, monkeypatch):
    """The recipes collection (the README recipe and a Trainium one), the adapter and the
    Neuron repository, with the SDK's clones redirected to them."""
    found = local_repositories(
        tmp_path / "repos",
        {README_NAME: P5X16, "training/llama/ours_trn1x4_pretrain": TRN1X4},
    )
    for name, value in redirect_environment(found).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("SAFE_ESTIMATORS_RECIPES", str(found["launcher"]))
    return found


def _built_alike(ours: Any, bare: Any, recipe: str) -> None:
    assert ours.training_image_uri() == bare.training_image_uri()
    assert ours.entry_point == bare.entry_point
    assert ours.distribution == bare.distribution
    assert ours.instance_count == bare.instance_count
    ours_hp, bare_hp = ours.hyperparameters(), bare.hyperparameters()
    # The SDK saves the resolved recipe as <recipe name>_<random>.yaml.
    prefix = f'"{recipe.rsplit("/", 1)[-1]}_'
    for hyperparameters in (ours_hp, bare_hp):
        name = hyperparameters.pop("config-name")
        assert name.startswith(prefix) and name.endswith('.yaml"')
    assert ours_hp == bare_hp


def sdk_url(key: str) -> str:
    return str(SDK_CONFIG[key])


def _folder(tmp_path: Path, name: str) -> str:
    folder = tmp_path / name
    folder.mkdir()
    return str(folder)


def test_the_readme_recipe_builds_as_the_bare_sdk_builds_it(repos, tmp_path, sagemaker_session):
    arguments = dict(
        training_recipe=README_NAME,
        recipe_overrides=README_OVERRIDES,
        instance_type="ml.p5.48xlarge",
        role=ROLE,
        sagemaker_session=sagemaker_session,
    )
    bare = PyTorch(**arguments, source_dir=_folder(tmp_path, "bare"))
    ours = safe_estimators.pytorch(**arguments, source_dir=_folder(tmp_path, "ours"))
    _built_alike(ours, bare, README_NAME)
    assert ours.instance_count == 16  # the recipe's trainer.num_nodes
    assert ours.entry_point == "llama_pretrain.py"
    injected = {i.path: i for i in safe_estimators.explain(ours).injections}
    assert {"instance_count", "image_uri", "entry_point", "distribution"} <= set(injected)
    assert "trainer.num_nodes" in injected["instance_count"].reason
    # The image URI that is sent, not a label of it.
    assert injected["image_uri"].value == ours.training_image_uri()
    assert injected["image_uri"].value.endswith("smdistributed-modelparallel:2.4.1-gpu-py311-cu121")


def test_a_trainium_recipe_builds_as_the_bare_sdk_builds_it(repos, tmp_path, sagemaker_session):
    arguments = dict(
        training_recipe="training/llama/ours_trn1x4_pretrain",
        recipe_overrides={"run": {"results_dir": "/opt/ml/model"}},
        instance_type="ml.trn1.32xlarge",
        role=ROLE,
        sagemaker_session=sagemaker_session,
    )
    bare = PyTorch(**arguments, source_dir=_folder(tmp_path, "bare"))
    ours = safe_estimators.pytorch(**arguments, source_dir=_folder(tmp_path, "ours"))
    _built_alike(ours, bare, arguments["training_recipe"])
    assert ours.distribution == {"torch_distributed": {"enabled": True}}
    assert ours.entry_point == "training_orchestrator.py"
    injected = {i.path: i for i in safe_estimators.explain(ours).injections}
    assert injected["entry_point"].value == "training_orchestrator.py"
    assert "neuronx-distributed-training" in injected["entry_point"].reason
    assert injected["image_uri"].value == ours.training_image_uri()
    assert injected["instance_count"].value == 4  # the recipe's trainer.num_nodes


def test_a_local_recipe_needs_no_entry_point_nor_framework_versions(tmp_path, capsys):
    write_recipe(tmp_path / "recipes" / "mine.yaml", P5X16)
    spec = tmp_path / "job.yaml"
    spec.write_text(
        "estimator: pytorch\ntraining_recipe: recipes/mine.yaml\ninstance_type: ml.p5.48xlarge\n"
        f"recipe_overrides: {json.dumps(README_OVERRIDES)}\n"
    )
    assert main(["validate", str(spec)]) == 0, capsys.readouterr().out


def test_dropped_arguments_are_warnings_that_name_the_recipe_keys(repos, tmp_path):
    problems = _problems(
        hyperparameters={"lr": 0.1},
        distribution={"torch_distributed": {"enabled": True}},
        entry_point="train.py",
    )
    assert {p.path: p.severity for p in problems} == {
        "entry_point": "warning",
        "hyperparameters": "warning",
        "distribution": "warning",
    }
    by_path = {p.path: p for p in problems}
    assert "recipe_overrides" in by_path["hyperparameters"].hint
    assert "model.shard_degree" in by_path["distribution"].hint


def _problems(recipe: str = README_NAME, **arguments: Any) -> list[Any]:
    from safe_estimators._resolve import check_arguments

    given = {
        "estimator": "pytorch",
        "training_recipe": recipe,
        "recipe_overrides": README_OVERRIDES,
        "instance_type": "ml.p5.48xlarge",
        "role": ROLE,
        **arguments,
    }
    return check_arguments({k: v for k, v in given.items() if v is not None})[1]


def _spec(tmp_path: Path, recipe: str, **extra: Any) -> Path:
    spec = tmp_path / "project" / "job.yaml"
    spec.parent.mkdir(exist_ok=True)
    lines = ["estimator: pytorch", f"training_recipe: {recipe}", "instance_type: ml.p5.48xlarge"]
    lines += [f"{k}: {json.dumps(v)}" for k, v in extra.items()]
    spec.write_text("\n".join(lines) + "\n")
    return spec


def test_a_predefined_recipe_without_a_local_copy_is_one_problem_with_the_fix(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.delenv("SAFE_ESTIMATORS_RECIPES", raising=False)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)  # no insteadOf of the developer's
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    code = main(["--json", "validate", str(_spec(tmp_path, README_NAME))])
    problems = json.loads(capsys.readouterr().out)["problems"]
    assert code == 1
    assert [(p["path"], p["severity"]) for p in problems] == [("training_recipe", "error")]
    assert "--recipes DIR" in problems[0]["hint"]


@pytest.mark.parametrize("form", ["exact", "prefix"])
def test_a_predefined_recipe_is_read_where_the_users_git_configuration_points(
    form, tmp_path, capsys, monkeypatch, sagemaker_session
):
    """git's url.<copy>.insteadOf sends the SDK's clone of the collection to a local copy:
    the recipe is read from that copy, and the bare SDK builds from it too."""
    found = local_repositories(tmp_path / "mirrors" / "aws", {README_NAME: P5X16})
    launcher = found["launcher"].rename(found["launcher"].parent / "sagemaker-hyperpod-recipes")
    home = tmp_path / "home"
    home.mkdir()
    if form == "exact":  # the user's ~/.gitconfig, as `git config --global` writes it
        rewrite = f'[url "{launcher}"]\n\tinsteadOf = {sdk_url("launcher_repo")}\n'
        monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
        (home / ".gitconfig").write_text(rewrite)
    else:  # a file:// mirror of all of github.com, named by GIT_CONFIG_GLOBAL
        rewrite = f'[url "file://{tmp_path / "mirrors"}/"]\n\tinsteadOf = https://github.com/\n'
        (home / "other.gitconfig").write_text(rewrite)
        monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / "other.gitconfig"))
        launcher.rename(launcher.with_suffix(".git"))  # .../aws/sagemaker-hyperpod-recipes.git
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in ("SAFE_ESTIMATORS_RECIPES", "GIT_CONFIG_COUNT", "TRAINING_LAUNCHER_GIT"):
        monkeypatch.delenv(name, raising=False)
    spec = _spec(tmp_path, README_NAME, recipe_overrides=README_OVERRIDES, role=ROLE)
    assert main(["--json", "validate", str(spec)]) == 0
    assert json.loads(capsys.readouterr().out)["problems"] == []
    code = main(["--json", "plan", str(spec)])
    plan = json.loads(capsys.readouterr().out)
    assert code == 0, plan
    assert plan["request"]["ResourceConfig"]["InstanceCount"] == 16  # the copy's num_nodes
    # The bare SDK clones the same copy through the same configuration (the adapter too).
    adapter = f'[url "{found["adapter"]}"]\n\tinsteadOf = {sdk_url("adapter_repo")}\n'
    config = home / (".gitconfig" if form == "exact" else "other.gitconfig")
    config.write_text(rewrite + adapter)
    monkeypatch.setenv("GIT_ALLOW_PROTOCOL", "file")
    bare = PyTorch(
        training_recipe=README_NAME, recipe_overrides=README_OVERRIDES, role=ROLE,
        instance_type="ml.p5.48xlarge", sagemaker_session=sagemaker_session,
        source_dir=_folder(tmp_path, "bare"),
    )  # fmt: skip
    assert bare.instance_count == 16


def test_no_git_redirect_of_another_url_counts_as_a_local_copy(tmp_path, capsys, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        f'[url "{tmp_path}/x"]\n\tinsteadOf = https://github.com/aws/other.git\n'
        '[url "https://mirror.example.com/"]\n\tinsteadOf = https://github.com/\n'
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in ("SAFE_ESTIMATORS_RECIPES", "GIT_CONFIG_COUNT", "GIT_CONFIG_GLOBAL"):
        monkeypatch.delenv(name, raising=False)
    assert main(["--json", "validate", str(_spec(tmp_path, README_NAME))]) == 1
    (problem,) = json.loads(capsys.readouterr().out)["problems"]
    assert "insteadOf" in problem["message"] and "--recipes DIR" in problem["hint"]


def test_a_recipe_url_is_one_problem_and_plan_exits_1(tmp_path, capsys):
    spec = _spec(tmp_path, "https://example.com/recipes/mine.yaml", instance_count=1)
    assert main(["plan", str(spec)]) == 1
    out = capsys.readouterr().out
    assert "training_recipe" in out and "never use the network" in out


def test_a_recipe_file_outside_the_project_is_refused_without_being_read(tmp_path, capsys):
    # Values the rules would quote: a devices value, an interpolation that cannot resolve.
    planted = mutated(P5X16, "trainer.devices", "planted-devices-value")
    planted = mutated(planted, "model.hf_model_name_or_path", "${planted_undefined_key}")
    outside = write_recipe(tmp_path / "elsewhere.yaml", planted)
    (tmp_path / "project").mkdir()
    spec = _spec(tmp_path, "../elsewhere.yaml", role=ROLE)
    events: list[tuple[str, Any]] = []
    _audit.append(events)
    try:
        codes = [main(["--json", command, str(spec)]) for command in ("validate", "plan", "lint")]
        codes.append(main(["validate", str(spec)]))
    finally:
        _audit.remove(events)
    out = capsys.readouterr()
    assert codes == [1, 1, 1, 1]
    assert "training_recipe: '../elsewhere.yaml' resolves to" in out.out
    assert "planted" not in out.out + out.err and "recipe." not in out.out
    opened = [a for e, a in events if e == "open" and str(a[0]).endswith("elsewhere.yaml")]
    assert opened  # its location is resolved (os.open with O_PATH), its content never read
    assert all(flags is not None and flags & os.O_PATH for _, _, flags in opened), opened
    assert outside.read_text()  # the file is there to be read


def test_the_p5x16_recipe_on_2_nodes_is_refused_with_both_numbers(repos):
    problems = _problems(instance_count=2)
    assert [p.path for p in problems] == ["recipe.trainer.num_nodes"]
    assert "is 16, but the job has 2 instances" in problems[0].message
    assert "64 x tensor 2 x expert 1 = 128) to divide 16" in problems[0].hint
    # With num_nodes fixed, the degrees no longer divide the 16 GPUs of 2 nodes.
    overrides = {**README_OVERRIDES, "trainer": {"num_nodes": 2}}
    problems = _problems(instance_count=2, recipe_overrides=overrides)
    assert [p.path for p in problems] == ["recipe.model.shard_degree"]
    assert "= 128 must divide the world size, 2 node(s) x 8 GPUs = 16" in problems[0].message


def test_an_unresolved_interpolation_is_one_problem_where_the_bare_sdk_stops(
    repos, tmp_path, sagemaker_session
):
    overrides = {k: v for k, v in README_OVERRIDES.items() if k != "run"}
    problems = _problems(recipe_overrides=overrides)
    assert [p.path for p in problems] == ["recipe.run.results_dir"]
    assert "'run': {'results_dir': '/opt/ml/model'}" in problems[0].hint
    with pytest.raises(RuntimeError, match="Could not resolve provided recipe"):
        PyTorch(
            training_recipe=README_NAME,
            recipe_overrides=overrides,
            instance_type="ml.p5.48xlarge",
            role=ROLE,
            sagemaker_session=sagemaker_session,
            source_dir=_folder(tmp_path, "bare"),
        )


@pytest.mark.parametrize(
    ("instance_type", "path", "value", "at"),
    [
        ("ml.p5.48xlarge", "trainer.devices", 4, "recipe.trainer.devices"),
        ("ml.p5.48xlarge", "model.shard_degree", 3, "recipe.model.shard_degree"),
        ("ml.p5.48xlarge", "model.context_parallel_degree", 128,
         "recipe.model.context_parallel_degree"),
        ("ml.p5.48xlarge", "use_smp_model", False, "recipe.model.tensor_model_parallel_degree"),
        ("ml.p5.48xlarge", "model.do_finetune", True, "recipe.model.do_finetune"),
        ("ml.p4d.24xlarge", "model.fp8", True, "recipe.model.fp8"),
        ("ml.g5.48xlarge", "model.model_type", "gpt2", "recipe.model.model_type"),
        ("ml.c5.18xlarge", "model.fp8", False, "instance_type"),
    ],
)  # fmt: skip
def test_a_recipe_mistake_is_refused_at_its_recipe_path(
    tmp_path, instance_type, path, value, at
):
    recipe = mutated(gpu_recipe(nodes=16, shard=64, tensor=2, fp8=False), path, value)
    file = write_recipe(tmp_path / "mine.yaml", recipe)
    problems = _problems(str(file), instance_type=instance_type, instance_count=16)
    errors = [p.path for p in problems if p.severity == "error"]
    assert errors == [at]


def test_fp8_is_on_by_default_with_the_smp_model_and_refused_on_an_a100(tmp_path):
    file = write_recipe(tmp_path / "mine.yaml", gpu_recipe(fp8=None))
    (problem,) = _problems(str(file), instance_type="ml.p4d.24xlarge")
    assert problem.path == "recipe.model.fp8"
    assert "the adapter's default when it is absent" in problem.message
    assert "compute capability 8.0" in problem.message
    assert _problems(str(file), instance_type="ml.p5.48xlarge") == []
    fp8_off = {**README_OVERRIDES, "model": {"fp8": False, "data": {"train_dir": "/d"}}}
    assert _problems(str(file), instance_type="ml.p4d.24xlarge", recipe_overrides=fp8_off) == []


def test_bf16_on_a_v100_is_a_warning(tmp_path):
    file = write_recipe(tmp_path / "mine.yaml", gpu_recipe(fp8=False))
    (problem,) = _problems(str(file), instance_type="ml.p3.16xlarge")
    assert (problem.path, problem.severity) == ("recipe.trainer.precision", "warning")


def test_real_data_needs_train_dir(tmp_path):
    file = write_recipe(tmp_path / "mine.yaml", gpu_recipe(fp8=True))
    overrides = {"run": {"results_dir": "/opt/ml/model"}}
    assert [p.path for p in _problems(str(file), recipe_overrides=overrides)] == [
        "recipe.model.data.train_dir"
    ]


def test_trainium_degrees_and_devices_are_checked(tmp_path):
    overrides = {"run": {"results_dir": "/opt/ml/model"}}
    for recipe, at in (
        (trainium_recipe(devices=16), "recipe.trainer.devices"),
        (trainium_recipe(tensor=3), "recipe.distributed_strategy.tensor_model_parallel_size"),
    ):
        file = write_recipe(tmp_path / "trn.yaml", recipe)
        problems = _problems(
            str(file), instance_type="ml.trn1.32xlarge", recipe_overrides=overrides
        )
        assert [p.path for p in problems] == [at]


def test_trainium_devices_are_lightnings_one_or_the_device_count(tmp_path):
    overrides = {"run": {"results_dir": "/opt/ml/model"}}
    found = {}
    for devices in (32, 16, 1):
        file = write_recipe(tmp_path / f"trn{devices}.yaml", trainium_recipe(devices=devices))
        problems = _problems(
            str(file), instance_type="ml.trn1.32xlarge", recipe_overrides=overrides
        )
        found[devices] = [(p.path, p.severity) for p in problems]
    assert found[32] == []
    assert found[16] == [("recipe.trainer.devices", "error")]  # Lightning's XLA parser refuses
    assert found[1] == [("recipe.trainer.devices", "warning")]  # accepted; ranks mislabelled


def _llmft(**trainer: Any) -> dict[str, Any]:
    return {**LLMFT, "trainer": {**LLMFT["trainer"], **trainer}}


def test_fine_tuning_recipes_get_the_launchers_checks_and_no_device_count_check(tmp_path):
    image = "111122223333.dkr.ecr.us-west-2.amazonaws.com/r:1"
    # AWS's devices: 8 recipes list 4-GPU types: the image starts its own processes.
    file = write_recipe(tmp_path / "eight.yaml", _llmft(devices=8))
    for instance_type in ("ml.g5.12xlarge", "ml.p5.48xlarge"):
        assert _problems(str(file), recipe_overrides=None, image_uri=image,
                         instance_type=instance_type) == []  # fmt: skip
    zero = write_recipe(tmp_path / "zero.yaml", _llmft(devices=0))
    batches = {"training_args": {"micro_train_batch_size": 8, "train_batch_size": 4}}
    small = write_recipe(
        tmp_path / "small.yaml",
        {**LLMFT, "training_config": {**LLMFT["training_config"], **batches}},
    )
    found = [
        [(p.path, p.severity) for p in _problems(str(f), recipe_overrides=None, image_uri=image)]
        for f in (zero, small)
    ]
    assert found == [
        [("recipe.trainer.devices", "warning")],
        [("recipe.training_config.training_args.train_batch_size", "warning")],
    ]


def test_nova_and_fine_tuning_recipes_need_an_image_and_take_their_node_keys(tmp_path):
    nova = {
        "run": {"name": "n", "model_type": "amazon.nova-micro-v1:0:128k",
                "model_name_or_path": "nova-micro/prod", "replicas": 2},
        "training_config": {"max_length": 8192},
    }  # fmt: skip
    file = write_recipe(tmp_path / "nova.yaml", nova)
    problems = _problems(str(file), recipe_overrides=None)
    assert [p.path for p in problems] == ["image_uri"]
    assert _problems(str(file), recipe_overrides=None, image_uri="1.dkr.ecr/x:1") == []
    from safe_estimators._resolve import resolve_arguments

    arguments = {"training_recipe": str(file), "image_uri": "1.dkr.ecr/x:1", "role": ROLE}
    job = resolve_arguments(
        {"estimator": "pytorch", "instance_type": "ml.p5.48xlarge", **arguments}
    )
    assert job.kwargs["instance_count"] == 2  # run.replicas


def test_plan_builds_the_real_estimator_offline_and_writes_nothing_into_the_project(
    repos, tmp_path, capfd, monkeypatch
):
    project = tmp_path / "project"
    spec = _spec(tmp_path, README_NAME, recipe_overrides=README_OVERRIDES)
    before = sorted(p.name for p in project.iterdir())
    # No redirect of our own: plan makes it (only the recipes folder is given, by option).
    for name in list(redirect_environment(repos)):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("SAFE_ESTIMATORS_RECIPES")
    monkeypatch.chdir(project)
    events: list[tuple[str, Any]] = []
    _audit.append(events)
    try:
        code = main(["--json", "plan", "--recipes", str(repos["launcher"]), str(spec)])
    finally:
        _audit.remove(events)
    out, err = capfd.readouterr()
    assert code == 0, out
    assert "Cloning into" not in err  # the SDK's clone of the adapter runs quiet
    assert "SAFE_ESTIMATORS_RECIPES" not in os.environ  # --recipes stays in this thread
    plan = json.loads(out)
    request = plan["request"]
    assert request["HyperParameters"]["sagemaker_program"] == '"llama_pretrain.py"'
    assert request["ResourceConfig"]["InstanceCount"] == 16
    assert "smdistributed-modelparallel:2.4.1-gpu-py311-cu121" in (
        request["AlgorithmSpecification"]["TrainingImage"]
    )
    assert {"instance_count", "image_uri", "entry_point", "distribution"} <= {
        i["path"] for i in plan["injected"]
    }
    assert sorted(p.name for p in project.iterdir()) == before
    connects = [args for event, args in events if event == "socket.connect"]
    loopback = ("127.0.0.1", "localhost", "::1")
    assert all(str(a[1][0]) in loopback for a in connects if a[1]), connects
    clones = [args for event, args in events if event == "subprocess.Popen" and "clone" in args[1]]
    assert len(clones) == 1  # the adapter's; the recipe itself is handed over as a file
    for _, argv, _, env in clones:
        assert env["GIT_ALLOW_PROTOCOL"] == "file"  # git can reach nothing but local files
        redirected = {env[f"GIT_CONFIG_VALUE_{i}"] for i in range(int(env["GIT_CONFIG_COUNT"]))}
        assert argv[2] in redirected


_audit: list[list[tuple[str, Any]]] = []


def test_recipes_dir_is_seen_by_this_thread_only(tmp_path, monkeypatch):
    import threading

    from safe_estimators._recipes.modes import recipes_folder, recipes_from

    monkeypatch.delenv("SAFE_ESTIMATORS_RECIPES", raising=False)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    seen: list[str | None] = []
    with recipes_from(str(tmp_path)):
        assert recipes_folder() == str(tmp_path)
        assert "SAFE_ESTIMATORS_RECIPES" not in os.environ
        other = threading.Thread(target=lambda: seen.append(recipes_folder()))
        other.start()
        other.join()
    assert seen == [None]
    assert recipes_folder() is None


def _hook(event: str, args: Any) -> None:
    if _audit and event in ("socket.connect", "subprocess.Popen", "open"):
        if event == "subprocess.Popen":
            args = (args[0], [str(a) for a in args[1]], args[2], dict(args[3] or {}))
        _audit[-1].append((event, args))


sys.addaudithook(_hook)
assert sagemaker  # imported for the bare SDK's side


def test_the_sdk_facts_are_the_installed_sdks(tmp_path):
    from omegaconf import OmegaConf
    from sagemaker.pytorch import estimator as sdk

    from safe_estimators._recipes import facts
    from safe_estimators._recipes.load import recipe_kind

    assert facts.recipes_config() == sdk._recipe_load_config()
    for device in ("gpu", "trainium", "cpu"):
        assert sdk._device_get_distribution(device) == facts.DISTRIBUTIONS.get(device, {})
    for name in ("ml.p5.48xlarge", "ml.g5.2xlarge", "ml.trn1.32xlarge", "ml.trn2.48xlarge",
                 "ml.c5.xlarge", "ml.inf2.xlarge", "ml.r5.24xlarge"):  # fmt: skip
        kwargs = {"instance_type": name}
        assert sdk.PyTorch._device_validate_and_get_type(kwargs, {"trainer": {}}) == (
            facts.device_type(name)
        )
    for model_type, (folder, script) in facts.GPU_SCRIPTS.items():
        code, source = tmp_path / model_type / "code", tmp_path / model_type / "source"
        (code / "examples" / folder).mkdir(parents=True)
        (code / "examples" / folder / script).write_text("")
        source.mkdir()
        recipe = {"model": {"model_type": model_type + "_variant"}}
        assert sdk._get_training_recipe_gpu_script(str(code), recipe, str(source)) == script
        assert facts.gpu_script(model_type + "_variant") == (folder, script)
    for recipe in (
        {"run": {"model_type": "amazon.nova-micro-v1:0:128k", "model_name_or_path": "x"}},
        {"training_config": {"distillation_data": "true"}},
        {"evaluation": {"task": "mmlu"}},
        {"run": {"model_type": "llm_finetuning_aws"}, "training_config": {"a": 1}},
        {"run": {"model_type": "verl"}, "training_config": {"a": 1}},
        {"run": {"model_type": "verl"}},
        {"run": {"model_type": "hf"}, "trainer": {"num_nodes": 1}},
    ):
        config = OmegaConf.create(recipe)
        expected = (
            "nova" if sdk._is_nova_recipe(config)
            else "eval" if sdk._is_eval_recipe(config)
            else "llmft" if sdk._is_llmft_recipe(config)
            else "standard"
        )  # fmt: skip
        assert recipe_kind(recipe) == expected, recipe


NOVA = {
    "run": {"name": "n", "model_type": "amazon.nova-micro-v1:0:128k",
            "model_name_or_path": "nova-micro/prod", "replicas": 2},
    "training_config": {"max_length": 8192},
}  # fmt: skip
LLMFT = {
    "run": {"name": "l", "model_type": "llm_finetuning_aws"},
    "trainer": {"num_nodes": 1, "devices": 8},
    "training_config": {"model_name_or_path": "x"},
}


@pytest.mark.parametrize(("recipe", "count"), [(NOVA, 2), (LLMFT, 1)], ids=["nova", "llmft"])
def test_nova_and_fine_tuning_jobs_plan_offline_with_their_recipe_channel(
    recipe, count, tmp_path, capsys
):
    write_recipe(tmp_path / "project" / "r.yaml", recipe)
    spec = _spec(tmp_path, "r.yaml", image_uri="111122223333.dkr.ecr.us-west-2.amazonaws.com/r:1")
    assert main(["--json", "plan", str(spec)]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["request"]["ResourceConfig"]["InstanceCount"] == count
    assert [c["ChannelName"] for c in plan["request"]["InputDataConfig"]] == ["recipe"]
    assert "inputs.recipe" in {i["path"] for i in plan["injected"]}


def test_a_missing_source_dir_and_an_adapter_url_the_sdk_skips_are_refused(
    repos, tmp_path, monkeypatch
):
    monkeypatch.setenv("TRAINING_ADAPTER_GIT", str(tmp_path / "adapter"))
    problems = _problems(source_dir=str(tmp_path / "missing"))
    assert [p.path for p in problems] == ["source_dir", "$TRAINING_ADAPTER_GIT"]


def test_a_recipe_job_gets_the_rules_about_what_it_uploads_and_reads(repos, tmp_path):
    # The SDK packages dependencies and reads inputs for a recipe job as for any other.
    libs = tmp_path / "libs"
    libs.mkdir()
    (libs / "passwd_link").symlink_to("/etc/passwd")
    problems = _problems(dependencies=[str(libs)], inputs={"train": "/data/train"})
    assert {p.path for p in problems if p.severity == "error"} >= {"dependencies.0", "inputs.train"}


def _dense_70b(nodes: int, shard: int) -> dict[str, Any]:
    recipe = gpu_recipe(nodes=nodes, shard=shard, fp8=True)
    recipe["model"].update(
        num_hidden_layers=80, hidden_size=8192, num_attention_heads=64, vocab_size=128256,
        intermediate_size=28672, activation_checkpointing=False,
    )  # fmt: skip
    return recipe


def test_a_recipe_that_cannot_fit_under_any_reading_is_refused_at_recipe_model(tmp_path):
    # Llama 3 70B full fine-tuning, shard 8 on one ml.p5.48xlarge: mixed-precision Adam's
    # model states alone are 16 bytes x 70.6e9 / 8, about 141 GB per 80 GB H100.
    file = write_recipe(tmp_path / "one-node.yaml", _dense_70b(nodes=1, shard=8))
    (problem,) = _problems(str(file), instance_count=1)
    assert (problem.path, problem.severity) == ("recipe.model", "error")
    assert "GB per accelerator" in problem.message and "H100" in problem.message
    states = float(re.search(r"model states ([\d.]+) GB", problem.message).group(1))
    assert states > 85.9  # over the H100's memory before any activation
    sharded = mutated(_dense_70b(8, 64), "model.activation_checkpointing", True)
    file = write_recipe(tmp_path / "many.yaml", sharded)
    assert _problems(str(file), instance_count=8) == []


def test_explain_shows_the_recipes_memory_estimate(repos, tmp_path, sagemaker_session):
    sharded = mutated(_dense_70b(8, 64), "model.activation_checkpointing", True)
    arguments = dict(
        recipe_overrides=README_OVERRIDES, instance_type="ml.p5.48xlarge", role=ROLE,
        sagemaker_session=sagemaker_session, source_dir=_folder(tmp_path, "ours"),
    )  # fmt: skip
    file = write_recipe(tmp_path / "many.yaml", sharded)
    ours = safe_estimators.pytorch(training_recipe=str(file), **arguments)
    memory = safe_estimators.explain(ours).memory  # per GPU, from the recipe's model section
    assert memory is not None and memory.instance_type == "ml.p5.48xlarge"
    assert 0 < memory.weights < memory.total < (memory.device_memory or 0)
    assert "memory per accelerator" in safe_estimators.explain(ours)._repr_markdown_()
    partial = mutated(sharded, "model.model_type", "deepseek_r1")
    file = write_recipe(tmp_path / "deepseek.yaml", partial)
    arguments["source_dir"] = _folder(tmp_path, "deepseek")
    ours = safe_estimators.pytorch(training_recipe=str(file), **arguments)
    assert safe_estimators.explain(ours).memory is None  # its experts are not counted


def test_no_estimate_where_the_model_section_does_not_describe_the_whole_model(tmp_path):
    recipe = mutated(_dense_70b(nodes=1, shard=8), "model.model_type", "deepseek_r1")
    file = write_recipe(tmp_path / "deepseek.yaml", recipe)
    assert _problems(str(file), instance_count=1) == []


@pytest.mark.parametrize("prefix", ["", "."], ids=["absolute", "relative"])
def test_interpolations_that_repeat_each_other_are_refused_before_they_are_resolved(
    tmp_path, prefix
):
    # 10 characters doubled 21 times: 20 MB if resolved; refused past 100,000 characters.
    lines = ["x:", "  a0: xxxxxxxxxx"]
    lines += [f"  a{i}: ${{{prefix or 'x.'}a{i - 1}}}${{{prefix or 'x.'}a{i - 1}}}"
              for i in range(1, 22)]  # fmt: skip
    file = tmp_path / "grows.yaml"
    file.write_text("\n".join(lines) + "\n")
    (problem,) = _problems(str(file), recipe_overrides=None, instance_count=1)
    assert problem.path == "recipe.x.a14"
    assert "more than 100,000 characters" in problem.message
