"""Findings that follow values to their use: the sampler the DataLoader is given, the folder a
save writes to (through assignments, os.path.join, f-strings, argparse defaults, the job's
hyperparameters and SageMaker's SM_* variables). A name that is only imported, or only
mentioned, no longer silences a finding; the finding is at the line of the use."""

from __future__ import annotations

from safe_estimators._script_checks import ScriptContext, check_source

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
