"""Patterns of published training scripts that the script checks once misread (found by
running them on AWS's, Hugging Face's, NeMo's and Megatron-LM's examples under torchrun): each
a minimal script of our own, beside its twin that keeps the finding."""

from __future__ import annotations

import pytest

from safe_estimators._script_checks import ScriptContext, check_source

TORCHRUN = ScriptContext(
    gpus_per_instance=8, launcher="torchrun", processes=16, instance_type="ml.p4d.24xlarge",
    pytorch_version="2.3.0",
)  # fmt: skip


def rules(source: str) -> list[tuple[str, int]]:
    return [(f.rule, f.line) for f in check_source(source, TORCHRUN, filename="train.py")]


# NeMo's transcribe_speech.py and process_audio.py: 1 is the CPU branch's device count for
# Lightning (a branch a GPU job never runs, even where the name reaches a `device=` keyword),
# and speech_to_text_structured.py sets cfg.trainer.devices = 1.
LIGHTNING_DEVICE_COUNTS = '''
import torch
import torch.distributed as dist
import lightning.pytorch as pl

dist.init_process_group("nccl")
if torch.cuda.is_available():
    device = [0]
    accelerator = "gpu"
else:
    device = 1
    accelerator = "cpu"
cfg.trainer.devices = 1
trainer = pl.Trainer(devices=device, accelerator=accelerator)
timer.start(device=device)
'''


def test_a_device_count_is_not_a_hard_coded_gpu() -> None:
    assert not [r for r in rules(LIGHTNING_DEVICE_COUNTS) if r[0] == "hard-coded-device"]


@pytest.mark.parametrize(
    "use", ["model.to(device)", "model.cuda(device)", "torch.cuda.set_device(device)",
            "torch.load('m.pt', map_location=device)"],
)  # fmt: skip
def test_a_number_used_as_a_device_still_is(use: str) -> None:
    script = f"import torch\nimport torch.distributed as dist\ndist.init_process_group()\n" \
             f"device = 1\n{use}\n"
    assert ("hard-coded-device", 4) in rules(script)


def test_a_cuda_string_is_a_device_wherever_it_goes() -> None:
    script = "import torch\nimport torch.distributed as dist\ndist.init_process_group()\n" \
             "device = 'cuda:0'\n"
    assert ("hard-coded-device", 4) in rules(script)


# Megatron-LM's examples/mimo and train_rl.py: pretrain() builds the training loaders with
# batch samplers over the data-parallel rank; the script's own DataLoader is a side path (mock
# data in a __main__ demo, per-rank rollouts).
MEGATRON = '''
import torch
from torch.utils.data import DataLoader, TensorDataset
from megatron.training import pretrain


def logprobs(local_rollouts):
    return DataLoader(TensorDataset(torch.arange(len(local_rollouts))), batch_size=1)


pretrain(train_valid_test_datasets_provider, model_provider, model_type, forward_step)
'''


def test_megatron_pretrain_shards_the_training_data() -> None:
    assert not [r for r in rules(MEGATRON) if r[0] == "no-distributed-sampler"]


def test_without_pretrain_the_loader_still_needs_a_sampler() -> None:
    script = MEGATRON.replace("from megatron.training import pretrain\n", "").replace(
        "pretrain(train_valid_test_datasets_provider, model_provider, model_type, forward_step)",
        "import torch.distributed as dist\ndist.init_process_group()\nlogprobs([])",
    )
    assert ("no-distributed-sampler", 7) in rules(script)


# AWS's sagemaker-debugger pt_res50_cifar10_distributed.py: DDP with a shuffled DataLoader and
# no sampler. Each process shuffles on its own: the whole dataset each, not the same order.
def test_a_shuffled_loader_without_a_sampler_is_described_as_such() -> None:
    script = (
        "import torch\nimport torch.distributed as dist\ndist.init_process_group('nccl')\n"
        "loader = torch.utils.data.DataLoader(trainset, batch_size=64, shuffle=True)\n"
    )
    [finding] = check_source(script, TORCHRUN, filename="train.py")
    assert finding.rule == "no-distributed-sampler"
    assert "each shuffled on its own" in finding.message
    assert "same order" not in finding.message
