"""The severity policy of the script checks: a finding that rests on something missing is an
error only when the whole program is visible to the rule; otherwise a warning naming what the
checks could not see. Scripts here are minimal ones of our own, shaped like the published
examples they stand for (Megatron-LM's pretrain_gpt.py, Composer, NeMo 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from safe_estimators import pytorch
from safe_estimators._script_checks import ScriptContext, check_script, check_source, files
from safe_estimators._script_checks.libraries import (
    KNOWN_TO_PROCESS_GROUP_RULE,
    KNOWN_TO_SMDDP_RULE,
    KNOWN_TO_SMP_RULES,
    NEUTRAL,
    PROCESS_GROUP_INITIALISERS,
)

ROLE = "arn:aws:iam::111111111111:role/SageMakerRole"
TORCHRUN = {"torch_distributed": {"enabled": True}}
MPI = {"mpi": {"enabled": True, "processes_per_host": 8}}
IMAGE = "111111111111.dkr.ecr.us-east-1.amazonaws.com/megatron-lm:latest"
SIXTEEN = ScriptContext(launcher="torchrun", processes=16, gpus_per_instance=8,
                        instance_type="ml.p4d.24xlarge")

# Megatron-LM's entry points hand the whole run to pretrain(), which initialises the process
# group (megatron/training/training.py -> initialize.py).
PRETRAIN_GPT = '''
import torch
from megatron.core import mpu
from megatron.training import get_args, pretrain
from model_provider import model_provider


def forward_step(data_iterator, model):
    tokens = next(data_iterator)
    return model(tokens), None


if __name__ == "__main__":
    pretrain(None, model_provider, None, forward_step)
'''

# A local Megatron tree as the checkout has it (our own few lines, the same shape).
LOCAL_MEGATRON = {
    "megatron/__init__.py": "",
    "megatron/core/__init__.py": "from . import mpu\n",
    "megatron/core/mpu.py": "def get_rank():\n    return 0\n",
    "megatron/training/__init__.py": "from .training import get_args, pretrain\n",
    "megatron/training/training.py": (
        "from .initialize import initialize_megatron\n\n\ndef get_args():\n    return None\n\n\n"
        "def pretrain(*args):\n    initialize_megatron()\n"
    ),
    "megatron/training/initialize.py": (
        "import torch\n\n\ndef initialize_megatron():\n"
        "    torch.distributed.init_process_group(backend='nccl')\n"
    ),
    "model_provider.py": "def model_provider():\n    return None\n",
}

NEVER_INITIALISES = '''
import torch
from torch.utils.data import DataLoader


def main():
    model = torch.nn.Linear(8, 8).cuda()
    for batch in DataLoader(range(8), sampler=None):
        model(batch).sum().backward()


main()
'''


def megatron_job(folder: Path, **extra: object) -> object:
    return pytorch(
        entry_point="pretrain_gpt.py", source_dir=str(folder), role=ROLE,
        instance_type="ml.p4d.24xlarge", instance_count=2, image_uri=IMAGE, py_version="py310",
        distribution=MPI, **extra,
    )


@pytest.mark.parametrize(
    "tree", ["none", "package", "namespace"],
    ids=["installed-megatron", "local-megatron", "local-namespace-megatron"],
)
def test_the_megatron_lm_example_builds(tmp_path: Path, tree: str) -> None:
    (tmp_path / "pretrain_gpt.py").write_text(PRETRAIN_GPT)
    files = {} if tree == "none" else dict(LOCAL_MEGATRON)
    if tree == "namespace":  # Megatron-LM's checkout has no megatron/__init__.py
        del files["megatron/__init__.py"]
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    estimator = megatron_job(tmp_path)
    assert estimator.hyperparameters()["sagemaker_mpi_num_of_processes_per_host"] == "8"
    context = ScriptContext(launcher="mpi", processes=16, gpus_per_instance=8)
    assert check_script("pretrain_gpt.py", context, source_dir=tmp_path) == []


def test_a_script_of_torch_alone_that_never_initialises_is_refused() -> None:
    [finding] = check_source(NEVER_INITIALISES, SIXTEEN)
    assert (finding.rule, finding.severity) == ("no-process-group", "error")


def test_a_framework_the_checks_do_not_know_makes_it_a_warning_that_names_it() -> None:
    source = "from myframework import launch\n" + NEVER_INITIALISES
    [finding] = check_source(source, SIXTEEN)
    assert (finding.rule, finding.severity) == ("no-process-group", "warning")
    assert "cannot see into myframework" in finding.message


def test_a_local_module_left_unread_makes_it_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "train.py").write_text("import helpers\n" + NEVER_INITIALISES)
    (tmp_path / "helpers.py").write_text("X = 1\n")
    monkeypatch.setattr(files, "_MAX_FILES", 1)  # the entry point takes the whole budget
    found = {f.rule: f for f in check_script("train.py", SIXTEEN, source_dir=tmp_path)}
    assert found["no-process-group"].severity == "warning"
    assert "1 local module(s) not read (helpers.py)" in found["no-process-group"].message
    assert found["script-budget"].severity == "warning"


def test_a_local_namespace_package_is_read_like_a_package(tmp_path: Path) -> None:
    (tmp_path / "mylib").mkdir()  # no __init__.py: a namespace package, as Python imports it
    (tmp_path / "mylib" / "helpers.py").write_text("def build():\n    return None\n")
    (tmp_path / "train.py").write_text("from mylib.helpers import build\n" + NEVER_INITIALISES)
    [finding] = check_script("train.py", SIXTEEN, source_dir=tmp_path)
    assert (finding.rule, finding.severity) == ("no-process-group", "error")  # all in sight


def test_a_local_module_that_was_read_keeps_the_error(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("import helpers\n" + NEVER_INITIALISES)
    (tmp_path / "helpers.py").write_text("import numpy\nX = 1\n")
    [finding] = check_script("train.py", SIXTEEN, source_dir=tmp_path)
    assert (finding.rule, finding.severity) == ("no-process-group", "error")


@pytest.mark.parametrize(
    "initialiser",
    [
        "from composer import Trainer\nTrainer(model=None).fit()",
        "from ray.train.torch import TorchTrainer\nTorchTrainer(main).fit()",
        "from nemo.collections import llm\nllm.pretrain(model, data, trainer)",
        "from nemo.collections.nlp.parts.megatron_trainer_builder import "
        "MegatronTrainerBuilder\nMegatronTrainerBuilder(cfg).create_trainer().fit(model)",
        "from megatron.training.initialize import initialize_megatron\ninitialize_megatron()",
        "from transformers import AutoModelForCausalLM\n"
        "AutoModelForCausalLM.from_pretrained('m', tp_plan='auto')",
    ],
    ids=["composer", "ray-train", "nemo-2", "nemo-1", "initialize-megatron",
         "transformers-tp-plan"],
)
def test_frameworks_that_set_up_the_process_group_themselves(initialiser: str) -> None:
    assert check_source(f"import torch\n{initialiser}\n", SIXTEEN) == []


def test_an_smp_v1_script_that_imports_an_unknown_helper_is_warned_not_refused() -> None:
    source = (
        "import torch\nimport smdistributed.modelparallel.torch as smp\n"
        "from my_smp_helpers import setup\n\n"
        "@smp.step\ndef step(model, x):\n    model.backward(model(x))\n"
    )
    context = ScriptContext(launcher="smp-v1", processes=8, model_parallel=True)
    found = {f.rule: f.severity for f in check_source(source, context)}
    assert found["smp-no-init"] == "warning"
    assert found["smp-no-distributed-model"] == "warning"


def test_the_smddp_backend_without_its_import_is_an_error_only_in_sight() -> None:
    call = "import torch.distributed as dist\ndist.init_process_group(backend='smddp')\n"
    context = ScriptContext(launcher="smddp", processes=16)
    [seen] = check_source(call, context)
    [unseen] = check_source("import my_cluster_setup\n" + call, context)
    assert (seen.severity, unseen.severity) == ("error", "warning")
    assert "my_cluster_setup" in unseen.message


def test_the_mp_fn_behind_a_star_import_is_a_warning() -> None:
    context = ScriptContext(training_compiler=True, xla_distributed=True, gpus_per_instance=4)
    [finding] = [f for f in check_source("from trainer_lib import *\n", context)
                 if f.rule == "xla-missing-mp-fn"]
    assert finding.severity == "warning"
    assert "from trainer_lib import *" in finding.message


@pytest.mark.parametrize(
    "table",
    [NEUTRAL, KNOWN_TO_PROCESS_GROUP_RULE, KNOWN_TO_SMP_RULES, KNOWN_TO_SMDDP_RULE,
     PROCESS_GROUP_INITIALISERS],
    ids=["neutral", "process-group", "smp", "smddp", "initialisers"],
)
def test_every_known_library_says_where_its_behaviour_is_shown(table: dict[object, str]) -> None:
    assert table and all(isinstance(source, str) and len(source) > 10 for source in table.values())


def test_a_folder_named_like_a_library_does_not_shadow_it(tmp_path: Path) -> None:
    (tmp_path / "myframework").mkdir()  # a run's log folder, no Python in it
    (tmp_path / "myframework" / "run.log").write_text("step 1\n")
    (tmp_path / "train.py").write_text("import myframework\n" + NEVER_INITIALISES)
    [finding] = check_script("train.py", SIXTEEN, source_dir=tmp_path)
    assert finding.severity == "warning" and "myframework" in finding.message
