"""Shell entry points that run a launcher themselves (issue 34): ``accelerate launch`` in all its
process-count forms, ``torchrun``, ``tune run``, ``deepspeed``, ``mpirun``.

The job of aws-samples/sagemaker-distributed-training-workshop folder 23 (GPT-OSS fine-tuning):
a PyTorch estimator on one ml.p4de.24xlarge whose entry point is a shell script running
``accelerate launch --config_file ... --num_processes "$NUM_GPUS" sft.py``, with NUM_GPUS from
SM_NUM_GPUS. The script here is ours, of the same shape.
"""

from __future__ import annotations

import pytest

import safe_estimators
from safe_estimators._script_checks.shell import LAUNCHERS, launchers_run, runs_launcher_per_device

IMAGE = (
    "763104351884.dkr.ecr.us-west-2.amazonaws.com/"
    "pytorch-training:2.7.1-gpu-py312-cu128-ubuntu22.04-sagemaker"
)
WORKSHOP_SCRIPT = """#!/bin/bash
set -euo pipefail
GPUS=""
resolve_gpus() {
    if [[ -n "${SM_NUM_GPUS:-}" ]]; then GPUS="$SM_NUM_GPUS"; return; fi
    GPUS=$(nvidia-smi -L | wc -l)
}
train() {
    # the launcher takes the count from the host
    accelerate launch \\
        --config_file configs/accelerate/ds_zero3.yaml \\
        --num_processes "$GPUS" \\
        sft.py \\
        --config "$CONFIG"
    echo "accelerate launch finished"
}
resolve_gpus
train
"""


def workshop_job(folder, sagemaker_session, role, script=WORKSHOP_SCRIPT):
    (folder / "sm_accelerate_train.sh").write_text(script)
    (folder / "sft.py").write_text("print('training')\n")
    return safe_estimators.pytorch(
        image_uri=IMAGE,
        entry_point="sm_accelerate_train.sh",
        source_dir=str(folder),
        instance_type="ml.p4de.24xlarge",
        instance_count=1,
        base_job_name="oss-recipe-sft",
        role=role,
        py_version="py312",
        keep_alive_period_in_seconds=3600,
        hyperparameters={"config": "hf_recipes/openai/gpt-oss-20b--vanilla-spectrum.yaml"},
        sagemaker_session=sagemaker_session,
    )


def test_the_workshop_accelerate_job_is_clean(tmp_path, sagemaker_session, role):
    est = workshop_job(tmp_path, sagemaker_session, role)
    assert safe_estimators.explain(est).warnings == ()


def test_one_process_asked_for_leaves_seven_gpus_idle(tmp_path, sagemaker_session, role):
    one = WORKSHOP_SCRIPT.replace('"$GPUS"', "1")
    est = workshop_job(tmp_path, sagemaker_session, role, one)
    [warning] = [w for w in safe_estimators.explain(est).warnings if w.path == "distribution"]
    assert "7 GPUs sit idle" in warning.message


FORMS = [
    ('accelerate launch --num_processes "$NUM_GPUS" sft.py', True),
    ("accelerate launch --num_processes 8 sft.py", True),
    ("accelerate launch --num_processes=8 sft.py", True),
    ("accelerate launch --multi_gpu sft.py", True),
    ("accelerate launch sft.py", True),  # every GPU of the host, accelerate's default
    ("accelerate launch --num_processes 1 sft.py", False),
    ("accelerate launch --num_processes=1 sft.py --num_processes 8", False),  # sft.py's own
    ("torchrun --nproc_per_node=8 train.py", True),
    ("torchrun --nproc-per-node $SM_NUM_GPUS train.py", True),
    ("torchrun train.py", False),  # torchrun's default: one process
    ("python -m torch.distributed.run --nproc_per_node 8 train.py", True),
    ("tune run --nproc_per_node 8 full_finetune_distributed --config llama3/8B_full", True),
    ("tune run lora_finetune_single_device --config llama3/8B_lora_single_device", False),
    ("deepspeed train.py --deepspeed ds.json", True),
    ("deepspeed --num_gpus 1 train.py", False),
    ("mpirun -np 8 python train.py", True),
    ("mpirun -np 1 python train.py", False),
    ("time uv run accelerate launch --num_processes $N sft.py", True),
    ('echo "torchrun --nproc_per_node 8 train.py"', False),
    ("# torchrun --nproc_per_node 8 train.py", False),
    ("python train.py", False),
]


@pytest.mark.parametrize(("command", "many"), FORMS, ids=[f[0][:50] for f in FORMS])
def test_each_launcher_form_is_read(command, many):
    assert runs_launcher_per_device(f"#!/bin/bash\nset -e\n{command}\n") is many


def test_continued_lines_are_one_command():
    text = "accelerate \\\n  launch \\\n  --multi_gpu x.py\n"
    assert launchers_run(text) == ["accelerate launch"]


def test_every_launcher_says_where_its_default_is_shown():
    assert all(len(launcher.source) > 10 for launcher in LAUNCHERS)
