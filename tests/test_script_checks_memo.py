"""One process that checks many jobs (CI validating a folder of specs, a notebook building job
after job) parses each shared script once and reuses what its rules found: it still sees every
edit, and every job still gets its own findings, exactly those a fresh process would print."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import attrs
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from safe_estimators import ScriptContext, check_script
from safe_estimators._cli import main

FIXTURES = Path(__file__).parent / "fixtures" / "scripts"
ROLE = "arn:aws:iam::111111111111:role/SageMakerRole"
TORCHRUN = ScriptContext(
    gpus_per_instance=8, launcher="torchrun", processes=16, instance_type="ml.p4d.24xlarge",
    pytorch_version="2.3.0",
)  # fmt: skip

SAVES_TO_AN_OPTION = """\
import argparse
import os

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--model_dir", default="/opt/ml/model")
args = parser.parse_args()


def main(model):
    torch.save(model.state_dict(), os.path.join(args.model_dir, "model.pt"))
"""


# Scripts whose findings follow the job's hyperparameters (the option a save or a resume reads).
RESUMES_WITH_AN_OPTION = """\
import argparse

from transformers import Trainer, TrainingArguments

parser = argparse.ArgumentParser()
parser.add_argument("--resume", action="store_true")
parser.add_argument("--output_dir", default="/opt/ml/checkpoints")
args = parser.parse_args()
trainer = Trainer(model=None, args=TrainingArguments(output_dir=args.output_dir))
trainer.train(resume_from_checkpoint=args.resume)
"""
READS_HYPERPARAMETERS = {
    "saves_to_an_option.py": SAVES_TO_AN_OPTION,
    "resumes_with_an_option.py": RESUMES_WITH_AN_OPTION,
}


def settle(*paths: Path) -> None:
    """Date files and folders an hour back, as a checkout's are: what the checks remember."""
    past = time.time() - 3600
    for path in paths:
        os.utime(path, (past, past))


def rules(entry_point: Path, context: ScriptContext = TORCHRUN) -> list[str]:
    return [f.rule for f in check_script(entry_point.name, context, source_dir=entry_point.parent)]


def test_a_script_edited_between_two_checks_is_checked_again(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("import torch\nmodel = torch.nn.Linear(2, 2)\n")
    settle(script, tmp_path)
    assert rules(script) == ["no-process-group"]
    assert rules(script) == ["no-process-group"]  # remembered, the same

    script.write_text(script.read_text() + "torch.distributed.init_process_group('nccl')\n")
    assert rules(script) == []


def test_an_edit_of_the_same_size_within_the_clock_tick_is_seen(tmp_path: Path) -> None:
    # Same file, size and modification time: only a recent time tells the two versions apart,
    # so a file changed this recently is read again.
    script = tmp_path / "train.py"
    recent = time.time_ns() - 500_000_000
    script.write_text("import torch\ntorch.save(model.state_dict(), '/tmp/model.pt')\n")
    os.utime(script, ns=(recent, recent))
    assert rules(script, ScriptContext()) == ["model-outside-model-dir"]

    script.write_text("import torch\ntorch.save(model.state_dict(), '/opt/ml/mo.pt')\n")
    os.utime(script, ns=(recent, recent))
    assert rules(script, ScriptContext()) == []


def test_a_module_added_to_a_local_package_is_read(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("import torch\nfrom tools import dist_setup\n\ndist_setup.prepare()\n")
    package = tmp_path / "tools"
    package.mkdir()
    (package / "__init__.py").write_text("")
    settle(script, package / "__init__.py", package, tmp_path)
    assert rules(script) == ["no-process-group"]

    module = package / "dist_setup.py"
    module.write_text("import torch.distributed as dist\n\n\ndef prepare():\n"
                      "    dist.init_process_group('nccl')\n")  # fmt: skip
    settle(module)  # an old file copied in: only its folder's time moved
    assert rules(script) == []

    module.unlink()
    assert rules(script) == ["no-process-group"]


def test_jobs_sharing_a_script_each_get_their_own_findings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / ".git").mkdir()
    code = tmp_path / "src"
    code.mkdir()
    (code / "train.py").write_text(SAVES_TO_AN_OPTION)
    settle(code / "train.py", code)
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    base = {
        "estimator": "pytorch", "entry_point": "train.py", "source_dir": "../src",
        "instance_type": "ml.p4d.24xlarge", "instance_count": 2, "framework_version": "2.3.0",
        "py_version": "py311", "role": ROLE,
        "distribution": {"torch_distributed": {"enabled": True}},
    }  # fmt: skip
    varied = {
        "a": {"hyperparameters": {"model_dir": "/tmp/a", "seed": 1}},
        "b": {"hyperparameters": {"model_dir": "/tmp/b", "seed": 2}},
        "c": {"hyperparameters": {"model_dir": "/opt/ml/model", "seed": 3}},
        "d": {"hyperparameters": {"model_dir": "/tmp/a", "seed": 4}, "instance_count": 1},
        "e": {"instance_type": "ml.g5.12xlarge", "instance_count": 1},
    }
    for name, job in varied.items():
        (jobs / f"{name}.yaml").write_text(yaml.safe_dump({**base, **job}))

    main(["validate", "--no-cache", str(jobs)])
    out = capsys.readouterr().out
    lines = {name: [line for line in out.splitlines() if f"{name}.yaml" in line]
             for name in varied}  # fmt: skip

    def says(name: str, *texts: str) -> bool:
        return all(any(text in line for line in lines[name]) for text in texts)

    assert says("a", "'/tmp/a/model.pt'", "16 processes (2 x ml.p4d.24xlarge, 8 GPUs each)")
    assert says("b", "'/tmp/b/model.pt'", "16 processes (2 x ml.p4d.24xlarge")
    assert not says("c", "model.pt") and says("c", "16 processes (2 x ml.p4d.24xlarge")
    assert says("d", "'/tmp/a/model.pt'", "8 processes (1 x ml.p4d.24xlarge, 8 GPUs each)")
    assert not says("e", "model.pt") and says("e", "4 processes (1 x ml.g5.12xlarge, 4 GPUs")


# --- the findings are those of a first check, whatever was checked before ---------------------

_BASES = [
    ScriptContext(),
    TORCHRUN,
    attrs.evolve(TORCHRUN, launcher="smddp"),
    ScriptContext(training_compiler=True, xla_distributed=True, gpus_per_instance=4),
    ScriptContext(model_parallel=True, model_parallel_fp16=True, launcher="smp-v1", processes=8),
    attrs.evolve(TORCHRUN, launcher="smp-v2", pytorch_version="2.3.1", tensor_parallel_degree=8),
    ScriptContext(use_spot_instances=True, checkpoint_in_hyperparameters=True),
    attrs.evolve(TORCHRUN, instance_type="ml.trn1.32xlarge", gpus_per_instance=None),
]
_HYPERPARAMETERS = st.lists(
    st.tuples(
        st.sampled_from(["model_dir", "output_dir", "resume", "seed", "fsdp"]),
        st.sampled_from(["/opt/ml/model", "/tmp/out", "/opt/ml/checkpoints", "True", "false", ""]),
    ),
    max_size=3,
    unique_by=lambda pair: pair[0],
).map(lambda pairs: tuple(sorted(pairs)))
# Values a caller of the public API may pass that are equal and still print apart (1 and True).
_ODD = st.fixed_dictionaries({}, optional={
    "processes": st.sampled_from([1, True, 8]),
    "model_parallel_fp16": st.sampled_from([0, 1, False]),
    "gpus_per_instance": st.sampled_from([1, True]),
})  # fmt: skip
_CONTEXTS = st.builds(
    lambda base, hyperparameters, odd: attrs.evolve(base, hyperparameters=hyperparameters, **odd),
    st.sampled_from(_BASES),
    _HYPERPARAMETERS,
    _ODD,
)


@pytest.fixture(scope="module")
def settled_scripts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("settled")
    for script in FIXTURES.glob("*.py"):
        shutil.copy(script, folder / script.name)
    for name, text in READS_HYPERPARAMETERS.items():
        (folder / name).write_text(text)
    settle(*folder.iterdir(), folder)
    return folder


@settings(deadline=None, max_examples=120, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
])  # fmt: skip
@given(
    name=st.sampled_from(sorted(READS_HYPERPARAMETERS))
    | st.sampled_from(sorted(p.name for p in FIXTURES.glob("*.py"))),
    contexts=st.lists(_CONTEXTS, min_size=2, max_size=6),
)
def test_a_shared_script_gives_every_job_the_findings_of_a_first_check(
    settled_scripts: Path, tmp_path_factory: pytest.TempPathFactory, name: str,
    contexts: list[ScriptContext],
) -> None:
    fresh = tmp_path_factory.mktemp("fresh")  # written just now: never remembered
    shutil.copy(settled_scripts / name, fresh / name)
    for context in contexts:
        remembered = check_script(name, context, source_dir=settled_scripts)
        first = check_script(name, context, source_dir=fresh)
        assert remembered == first
