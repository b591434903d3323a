"""Findings that follow values to their use: the sampler the DataLoader is given, the folder a
save writes to (through assignments, os.path.join, f-strings, argparse defaults, the job's
hyperparameters and SageMaker's SM_* variables). A name that is only imported, or only
mentioned, no longer silences a finding; the finding is at the line of the use."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import safe_estimators
from safe_estimators._script_checks import ScriptContext, check_source

ROLE = "arn:aws:iam::111111111111:role/SageMakerRole"

TORCHRUN = ScriptContext(launcher="torchrun", processes=16, gpus_per_instance=8,
                         instance_type="ml.p4d.24xlarge")

SAMPLER_IMPORTED_NOT_USED = '''
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def main(dataset, model):
    dist.init_process_group("nccl")
    loader = DataLoader(dataset, batch_size=8, shuffle=True)
    for batch in loader:
        model(batch).sum().backward()
'''


def test_a_distributed_sampler_imported_but_never_given_is_found_at_the_data_loader() -> None:
    [finding] = check_source(SAMPLER_IMPORTED_NOT_USED, TORCHRUN)
    assert (finding.rule, finding.line) == ("no-distributed-sampler", 10)


def test_the_sampler_given_to_the_loader_is_no_finding() -> None:
    source = SAMPLER_IMPORTED_NOT_USED.replace(
        "shuffle=True)", "sampler=DistributedSampler(dataset))"
    )
    assert check_source(source, TORCHRUN) == []


MODEL_DIR_IN_A_DEFAULT = '''
import argparse
import os

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--model_dir", default=os.environ["SM_MODEL_DIR"])
parser.add_argument("--scratch", default="/tmp/run")
args = parser.parse_args()


def main(model):
    path = os.path.join(args.scratch, "model.pt")
    torch.save(model.state_dict(), path)
'''


def test_a_model_saved_to_tmp_beside_an_unused_model_dir_option_is_found_at_the_save() -> None:
    [finding] = check_source(MODEL_DIR_IN_A_DEFAULT, ScriptContext())
    assert (finding.rule, finding.line) == ("model-outside-model-dir", 15)
    assert "'/tmp/run/model.pt'" in finding.message


def test_the_model_dir_option_followed_to_the_save_is_no_finding() -> None:
    source = MODEL_DIR_IN_A_DEFAULT.replace("args.scratch", "args.model_dir")
    assert check_source(source, ScriptContext()) == []


def test_the_hyperparameter_that_sets_the_option_is_followed() -> None:
    source = MODEL_DIR_IN_A_DEFAULT.replace("args.scratch", "args.model_dir")
    context = ScriptContext(hyperparameters=(("model_dir", "/tmp/elsewhere"),))
    [finding] = check_source(source, context)
    assert "'/tmp/elsewhere/model.pt'" in finding.message


def test_an_f_string_over_the_model_dir_variable_is_no_finding() -> None:
    source = (
        "import os\nimport torch\nout = os.environ.get('SM_MODEL_DIR')\n"
        "torch.save(model.state_dict(), f'{out}/model.pt')\n"
    )
    assert check_source(source, ScriptContext()) == []


# --- the Hugging Face Trainer: no launcher, spot resume ---------------------------------------

TRAINER = '''
import os

from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

args = TrainingArguments(output_dir="/opt/ml/checkpoints", save_steps=100)
model = AutoModelForCausalLM.from_pretrained("gpt2"{loading})
trainer = Trainer(model=model, args=args)
trainer.train({resume})
trainer.save_model(os.environ["SM_MODEL_DIR"])
'''
SPOT = ScriptContext(use_spot_instances=True)


def trainer(resume: str = "", loading: str = "") -> str:
    return TRAINER.format(resume=resume, loading=loading)


def test_a_spot_trainer_resuming_with_true_is_found_at_the_train_call() -> None:
    [finding] = check_source(trainer("resume_from_checkpoint=True"), SPOT)
    assert (finding.rule, finding.line, finding.severity) == (
        "spot-resume-without-checkpoint", 9, "warning"
    )
    assert "get_last_checkpoint" in finding.hint


def test_a_spot_trainer_that_never_resumes_is_a_warning() -> None:
    [finding] = check_source(trainer(), SPOT)
    assert (finding.rule, finding.line) == ("spot-trainer-never-resumes", 9)


def test_a_spot_trainer_resuming_from_the_last_checkpoint_is_no_finding() -> None:
    source = trainer("resume_from_checkpoint=last").replace(
        "trainer = Trainer", "last = get_last_checkpoint(args.output_dir)\ntrainer = Trainer"
    )
    assert check_source(source, SPOT) == []
    assert check_source(trainer("resume_from_checkpoint=True"), ScriptContext()) == []


def no_launcher_warning(folder: Path, script: str) -> Any:
    """The distribution warning of this script on one ml.g5.12xlarge (4 GPUs), no launcher."""
    (folder / "train.py").write_text(script)
    estimator = safe_estimators.pytorch(
        entry_point="train.py", source_dir=str(folder), role=ROLE,
        instance_type="ml.g5.12xlarge", framework_version="2.3.0", py_version="py311",
    )
    [warning] = [w for w in safe_estimators.explain(estimator).warnings
                 if w.path == "distribution"]
    return warning


def test_the_trainer_without_a_launcher_says_dataparallel_and_gpu_0(tmp_path: Path) -> None:
    warning = no_launcher_warning(tmp_path, trainer("resume_from_checkpoint=None"))
    assert "wraps the model in torch.nn.DataParallel" in warning.message
    assert "GPU 0 carries the most memory" in warning.message
    assert "sit idle" not in warning.message
    assert "torch_distributed" in warning.hint


def test_an_8_bit_model_is_not_wrapped_and_keeps_the_idle_wording(tmp_path: Path) -> None:
    warning = no_launcher_warning(tmp_path, trainer(loading=", load_in_8bit=True"))
    assert "3 GPUs sit idle" in warning.message
