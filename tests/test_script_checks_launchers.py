"""The launcher-aware script checks through the real paths: the job's configuration decides the
launcher the checks see, `safe-estimators lint` reports the findings with their lines, and an
error-severity finding refuses the job in the factory.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from safe_estimators import ConfigError, pytorch
from safe_estimators._cli import main
from safe_estimators._resolve import check_arguments, script_context
from safe_estimators._script_checks import ScriptContext, check_source

FIXTURES = Path(__file__).parent / "fixtures" / "scripts"
ROLE = "arn:aws:iam::111111111111:role/SageMakerRole"
TORCHRUN = {"torch_distributed": {"enabled": True}}


@pytest.fixture(autouse=True)
def _restore_logging():
    previous = logging.root.manager.disable
    yield
    logging.disable(previous)


def context_of(**arguments: Any) -> ScriptContext:
    job = {
        "estimator": "pytorch", "entry_point": "train.py", "instance_type": "ml.p4d.24xlarge",
        "framework_version": "2.3.0", "py_version": "py311", **arguments,
    }
    ctx, _, _ = check_arguments(job)
    assert ctx is not None
    return script_context(ctx)


def smp_v2(parameters: dict[str, Any]) -> dict[str, Any]:
    return {**TORCHRUN, "smdistributed": {"modelparallel": {"enabled": True,
                                                            "parameters": parameters}}}


@pytest.mark.parametrize(
    ("arguments", "launcher", "processes"),
    [
        ({"distribution": TORCHRUN, "instance_count": 2}, "torchrun", 16),
        # The PyTorch estimator runs pytorchddp as SMDDP.
        ({"distribution": {"pytorchddp": {"enabled": True}}}, "smddp", 8),
        ({"distribution": {"smdistributed": {"dataparallel": {"enabled": True}}}}, "smddp", 8),
        ({"distribution": {"mpi": {"enabled": True, "processes_per_host": 4}},
          "instance_count": 3}, "mpi", 12),
        # No count: one process per GPU, as the toolkit starts them (and as is injected).
        ({"distribution": {"mpi": {"enabled": True}}}, "mpi", 8),
        ({"distribution": smp_v2({"tensor_parallel_degree": 8}), "framework_version": "2.2.0"},
         "smp-v2", 8),
        ({"distribution": TORCHRUN, "model_parallel": {"tensor_parallel_degree": 8},
          "framework_version": "2.4.1"}, "smp-v2", 8),
        ({"model_parallel": {"pipeline_parallel_degree": 2}, "framework_version": "1.13.1",
          "py_version": "py39"}, "smp-v1", 8),
        # AWS's SMP image as image_uri (no framework version): v2, as the rules judge it.
        ({"model_parallel": {"tensor_parallel_degree": 8}, "framework_version": None,
          "py_version": None, "image_uri": "658645717510.dkr.ecr.us-west-2.amazonaws.com/"
          "smdistributed-modelparallel:2.2.0-gpu-py310-cu121"}, "smp-v2", 8),
        ({"distribution": TORCHRUN, "instance_type": "ml.trn1.32xlarge",
          "framework_version": "2.0.0", "py_version": "py310"}, "torchrun", 32),
        ({"distribution": {"torch_distributed": {"enabled": False}}}, None, None),
        ({}, None, None),
    ],
    ids=["torchrun", "pytorchddp", "smddp", "mpi", "mpi-default", "smp-v2-distribution",
         "smp-v2-argument", "smp-v1", "smp-v2-image", "trainium", "torchrun-off", "single"],
)
def test_the_launcher_follows_the_distribution(
    arguments: dict[str, Any], launcher: str | None, processes: int | None
) -> None:
    context = context_of(**arguments)
    assert (context.launcher, context.processes) == (launcher, processes)


def test_smp_v2_degrees_and_options_reach_the_checks() -> None:
    context = context_of(
        distribution=smp_v2({"tensor_parallel_degree": 4, "hybrid_shard_degree": 1,
                             "context_parallel_degree": "2", "sm_activation_offloading": False}),
        framework_version="2.4.1",
    )
    assert context.launcher == "smp-v2"
    assert context.pytorch_version == "2.4.1"
    assert (context.tensor_parallel_degree, context.hybrid_shard_degree) == (4, 1)
    assert context.context_parallel_degree == 1  # a string is not a degree: unread, default
    assert context.activation_offloading_set
    assert not context.model_parallel  # the SMP v1 rules stay out of an SMP v2 job


def test_spot_and_the_checkpoint_folder_reach_the_checks() -> None:
    context = context_of(
        use_spot_instances=True, checkpoint_local_path="/local/ckpt",
        hyperparameters={"output_dir": "/local/ckpt/run1"},
    )
    assert context.use_spot_instances
    assert context.checkpoint_dir == "/local/ckpt"
    assert context.checkpoint_in_hyperparameters


def write_job(tmp_path: Path, script: str, **job: Any) -> Path:
    shutil.copy(FIXTURES / script, tmp_path / "train.py")
    spec = {
        "estimator": "pytorch", "entry_point": "train.py", "source_dir": ".",
        "instance_type": "ml.p4d.24xlarge", "instance_count": 2, "framework_version": "2.3.0",
        "py_version": "py311", "role": ROLE, "distribution": TORCHRUN, **job,
    }
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


SPOT = {"use_spot_instances": True, "max_run": 36_000, "max_wait": 72_000,
        "checkpoint_s3_uri": "s3://bucket/checkpoints/"}


def test_lint_on_the_torchrun_spot_job_reports_the_five_mistakes_with_their_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = write_job(tmp_path, "fsdp_llama_bad.py", **SPOT)

    code = main(["lint", str(job)])
    out = capsys.readouterr().out

    assert code == 1
    # Each line names the script where it is (inside source_dir), as editors link it.
    lines = [line.removeprefix(f"{tmp_path}/") for line in out.splitlines()]
    assert len(lines) == 5
    assert lines[0].startswith(
        "train.py: error: the job's launcher (torchrun) starts 16 processes "
        "(2 x ml.p4d.24xlarge, 8 GPUs each)"
    )
    assert "process group" in lines[0]
    assert lines[1].startswith("train.py: warning: this is a spot job")
    assert lines[2].startswith("train.py:37: warning: `torch.device('cuda:0')`")
    assert lines[3].startswith("train.py:52: warning: `DataLoader(...)` at line 52 has no ")
    assert lines[4].startswith("train.py:64: warning: `torch.save(...)` at line 64 writes the "
                               "model to '/tmp/llama-finetuned.pt'")
    assert all(" Fix: " in line for line in lines)


def test_the_missing_process_group_refuses_the_job(tmp_path: Path) -> None:
    write_job(tmp_path, "fsdp_llama_bad.py")
    with pytest.raises(ConfigError) as raised:
        pytorch(entry_point="train.py", source_dir=str(tmp_path), role=ROLE,
                instance_type="ml.p4d.24xlarge", instance_count=2, framework_version="2.3.0",
                py_version="py311", distribution=TORCHRUN)
    [problem] = raised.value.problems
    assert problem.path == "entry_point"
    assert problem.message.startswith("train.py: the job's launcher (torchrun) starts 16")


@pytest.mark.parametrize("spot", [True, False], ids=["spot", "on-demand"])
def test_a_correct_trainer_script_under_torchrun_has_no_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spot: bool
) -> None:
    job = write_job(tmp_path, "hf_trainer_torchrun_good.py", **(SPOT if spot else {}))
    assert main(["lint", str(job)]) == 0
    assert capsys.readouterr().out.strip().endswith("no findings")


def test_and_the_factory_builds_it(tmp_path: Path) -> None:
    write_job(tmp_path, "hf_trainer_torchrun_good.py")
    estimator = pytorch(
        entry_point="train.py", source_dir=str(tmp_path), role=ROLE,
        instance_type="ml.p4d.24xlarge", instance_count=2, framework_version="2.3.0",
        py_version="py311", distribution=TORCHRUN, **SPOT,
    )
    assert estimator.distribution == TORCHRUN
    assert estimator.hyperparameters()["sagemaker_torch_distributed_enabled"] == "true"


SMP_V2_NO_TRANSFORM = '''
import torch
import torch.sagemaker as tsm
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

tsm.init()


def main(build_model):
    return FSDP(build_model(), device_id=torch.cuda.current_device())
'''


@pytest.mark.parametrize(
    "where", ["distribution", "model_parallel"], ids=["in-distribution", "model_parallel="]
)
def test_smp_v2_tensor_parallel_without_transform_is_refused_at_entry_point(
    tmp_path: Path, where: str
) -> None:
    (tmp_path / "train.py").write_text(SMP_V2_NO_TRANSFORM)
    parameters = {"tensor_parallel_degree": 8}
    placed: dict[str, Any] = (
        {"distribution": smp_v2(parameters)} if where == "distribution"
        else {"distribution": TORCHRUN, "model_parallel": parameters}
    )
    with pytest.raises(ConfigError) as raised:
        pytorch(entry_point="train.py", source_dir=str(tmp_path), role=ROLE,
                instance_type="ml.p4d.24xlarge", instance_count=2, framework_version="2.2.0",
                py_version="py310", **placed)
    # Until SMP v2 options are accepted by the launcher modules, the SMP v1 rules refuse this
    # job too; the script finding must be there either way.
    [problem] = [p for p in raised.value.problems if p.path == "entry_point"]
    assert problem.severity == "error"
    assert problem.message.startswith("train.py:6: the job sets tensor_parallel_degree 8")
    assert "would do nothing" in problem.message
    assert "tsm.transform(model)" in problem.hint


def test_the_same_script_with_transform_has_no_smp_finding() -> None:
    source = SMP_V2_NO_TRANSFORM.replace(
        "return FSDP(build_model()", "return FSDP(tsm.transform(build_model())"
    )
    context = ScriptContext(launcher="smp-v2", processes=16, tensor_parallel_degree=8)
    assert check_source(source, context) == []


@pytest.mark.parametrize(
    ("pytorch_version", "release"), [("2.4.1", "2.7.0"), ("2.5.1", "2.8.0"), ("2.3.1", None)]
)
def test_the_removed_checkpoint_module_names_the_release(
    pytorch_version: str, release: str | None
) -> None:
    source = "import torch.sagemaker as tsm\nimport torch.sagemaker.distributed.fsdp.checkpoint\n"
    source += "tsm.init()\n"
    context = ScriptContext(launcher="smp-v2", pytorch_version=pytorch_version)
    findings = [f for f in check_source(source, context) if f.rule == "smp-v2-removed-module"]
    if release is None:
        assert findings == []
    else:
        [finding] = findings
        assert (finding.line, finding.severity) == (2, "error")
        assert f"runs SMP {release}" in finding.message
        assert "state_dict_saver" in finding.hint


SINGLE_GPU_SCRIPT = '''
import torch
from torch.utils.data import DataLoader

device = torch.device("cuda:0")
loader = DataLoader(range(10), batch_size=2)
torch.save({}, "/opt/ml/model/model.pt")
'''


@pytest.mark.parametrize(
    "context",
    [ScriptContext(), ScriptContext(launcher="torchrun", processes=1),
     ScriptContext(launcher="mpi", processes=1)],
    ids=["no-launcher", "torchrun-one-gpu", "mpi-one-process"],
)
def test_a_single_process_job_gets_no_launcher_finding(context: ScriptContext) -> None:
    assert check_source(SINGLE_GPU_SCRIPT, context) == []


def test_an_unknown_process_count_warns_instead_of_refusing() -> None:
    context = ScriptContext(launcher="torchrun", processes=None)
    [finding] = [f for f in check_source(SINGLE_GPU_SCRIPT, context)
                 if f.rule == "no-process-group"]
    assert finding.severity == "warning"
    assert "one process per GPU" in finding.message


@pytest.mark.parametrize(
    "initialiser",
    [
        "import deepspeed\ndeepspeed.init_distributed()",
        "import horovod.torch as hvd\nhvd.init()",
        "from accelerate import Accelerator\naccelerator = Accelerator()",
        "from mylib.dist import init_distributed_mode\ninit_distributed_mode(args)",
        "from torch.distributed.device_mesh import init_device_mesh\n"
        "mesh = init_device_mesh('cuda', (16,))",
        "from common import ddp_setup\nddp_setup()",
        "import subprocess\nsubprocess.run(['python', 'train_impl.py'], check=True)",
    ],
    ids=["deepspeed", "horovod", "accelerate", "helper", "device-mesh", "ddp-setup",
         "wrapper-script"],
)
def test_frameworks_that_initialise_the_process_group_count(initialiser: str) -> None:
    source = f"import torch\n{initialiser}\n"
    context = ScriptContext(launcher="torchrun", processes=16)
    assert [f.rule for f in check_source(source, context)] == []


def test_a_script_that_is_not_torch_gets_no_process_group_finding() -> None:
    source = "import tensorflow as tf\nimport horovod.tensorflow as hvd\n"
    assert check_source(source, ScriptContext(launcher="mpi", processes=16)) == []


@pytest.mark.parametrize(
    "source",
    [
        "from torch.utils.data import DataLoader, IterableDataset\n"
        "class Shards(IterableDataset):\n    pass\nDataLoader(Shards())\n",
        "from datasets.distributed import split_dataset_by_node\n"
        "from torch.utils.data import DataLoader\n"
        "DataLoader(split_dataset_by_node(ds, rank=r, world_size=w))\n",
        "from torch.utils.data import DataLoader\nDataLoader(ds, **loader_args)\n",
        "from torch.utils.data import DataLoader\n"
        "DataLoader(files[dist.get_rank()::dist.get_world_size()])\n",
    ],
    ids=["own-iterable-dataset", "split-by-node", "unreadable-arguments", "sliced-by-rank"],
)
def test_data_sharded_another_way_is_not_reported(source: str) -> None:
    source = "import torch\nimport torch.distributed as dist\ndist.init_process_group()\n" + source
    findings = check_source(source, ScriptContext(launcher="torchrun", processes=16))
    assert [f.rule for f in findings] == []


def test_smp_v2_tensor_parallel_over_the_whole_world_needs_no_sampler() -> None:
    source = "import torch.sagemaker as tsm\nfrom torch.utils.data import DataLoader\n"
    source += "tsm.init()\nmodel = tsm.transform(m)\nDataLoader(ds)\n"
    context = ScriptContext(launcher="smp-v2", processes=8, tensor_parallel_degree=8)
    assert check_source(source, context) == []
    wider = ScriptContext(launcher="smp-v2", processes=16, tensor_parallel_degree=8)
    assert [f.rule for f in check_source(source, wider)] == ["no-distributed-sampler"]


def test_an_unreadable_backend_is_not_a_trainium_finding() -> None:
    source = "import torch.distributed as dist\ndist.init_process_group(args.backend)\n"
    context = ScriptContext(launcher="torchrun", processes=32, instance_type="ml.trn1.32xlarge")
    assert check_source(source, context) == []


def test_cuda_visible_devices_per_process_makes_cuda_0_right() -> None:
    source = "import os\nimport torch\nimport torch.distributed as dist\n"
    source += "os.environ['CUDA_VISIBLE_DEVICES'] = os.environ['LOCAL_RANK']\n"
    source += "dist.init_process_group('nccl')\nmodel.to('cuda:0')\n"
    assert check_source(source, ScriptContext(launcher="torchrun", processes=16)) == []


def test_a_spot_job_with_its_own_checkpoint_folder() -> None:
    context = ScriptContext(use_spot_instances=True, checkpoint_dir="/local/ckpt")
    [finding] = check_source("import torch\ntorch.save(m, '/opt/ml/checkpoints/x.pt')\n", context)
    assert (finding.rule, finding.line) == ("spot-without-checkpoints", 0)
    assert "never reads or writes /local/ckpt" in finding.message
    assert check_source("import torch\ntorch.save(m, '/local/ckpt/x.pt')\n", context) == []


# A Trainer script whose helper saves behind TrainingArguments.should_save (true on process
# zero only), called unguarded from the training function: the save is guarded, not every rank.
SHOULD_SAVE_SCRIPT = '''
from transformers import Trainer


def finish(trainer, tokenizer, folder):
    if trainer.args.should_save:
        trainer.save_model(folder)
        tokenizer.save_pretrained(folder)


trainer = Trainer(model=None)
trainer.train()
finish(trainer, trainer.tokenizer, "/opt/ml/model")
trainer.tokenizer.save_pretrained("/opt/ml/model")
'''


def test_a_save_behind_should_save_runs_on_one_process() -> None:
    context = ScriptContext(launcher="torchrun", processes=16)
    findings = [f for f in check_source(SHOULD_SAVE_SCRIPT, context)
                if f.rule == "save-on-every-rank"]
    assert [f.line for f in findings] == [14]  # the unguarded save after it is still reported


MAIN_PROCESS_FIRST_SCRIPT = '''
from transformers import Trainer, TrainingArguments

arguments = TrainingArguments(output_dir="/opt/ml/checkpoints")
trainer = Trainer(model=None, args=arguments)
trainer.train()
with arguments.main_process_first(desc="save"):
    trainer.model.save_pretrained("/opt/ml/model")
'''


@pytest.mark.parametrize(("processes", "lines"), [(2, []), (8, [8])])
def test_a_save_inside_main_process_first_races_only_among_the_waiting_processes(
    processes: int, lines: list[int]
) -> None:
    # Two processes: the main one saves, then the other; with more, the waiting ones save at once.
    context = ScriptContext(launcher="torchrun", processes=processes)
    findings = [f for f in check_source(MAIN_PROCESS_FIRST_SCRIPT, context)
                if f.rule == "save-on-every-rank"]
    assert [f.line for f in findings] == lines


# --- device_map="auto" under a launcher -----------------------------------------------------

DEVICE_MAP_TRAINER = """\
import os
from transformers import AutoModelForCausalLM, Trainer

model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", device_map={device_map})
Trainer(model=model, args=training_args, train_dataset=dataset).train()
"""


def hf_context(**arguments: Any) -> ScriptContext:
    job = {
        "estimator": "huggingface", "entry_point": "train.py", "instance_type": "ml.g5.12xlarge",
        "transformers_version": "4.36.0", "pytorch_version": "2.1.0", "py_version": "py310",
        "distribution": TORCHRUN, **arguments,
    }  # fmt: skip
    ctx, _, _ = check_arguments(job)
    assert ctx is not None
    return script_context(ctx)


def device_map_findings(device_map: str, context: ScriptContext) -> list[tuple[str, str]]:
    source = DEVICE_MAP_TRAINER.format(device_map=device_map)
    return [(f.rule, f.severity) for f in check_source(source, context)]


def test_a_trainer_model_on_every_gpu_under_torchrun_is_refused_as_accelerate_refuses_it() -> None:
    findings = device_map_findings('"auto"', hf_context())
    assert ("device-map-under-launcher", "error") in findings
    [finding] = [
        f for f in check_source(DEVICE_MAP_TRAINER.format(device_map='"auto"'), hf_context())
        if f.rule == "device-map-under-launcher"
    ]
    assert finding.line == 4 and "starts 4 processes" in finding.message
    assert "device_map={'': int(os.environ['LOCAL_RANK'])}" in finding.hint


@pytest.mark.parametrize(
    "context",
    [
        hf_context(transformers_version="4.28.1", pytorch_version="2.0.0"),
        hf_context(environment={"ACCELERATE_BYPASS_DEVICE_MAP": "true"}),
        context_of(instance_type="ml.g5.12xlarge", distribution=TORCHRUN),  # accelerate unpinned
    ],
    ids=["transformers-4.28", "bypass", "pytorch-estimator"],
)
def test_where_accelerate_may_not_refuse_it_is_a_warning(context: ScriptContext) -> None:
    assert ("device-map-under-launcher", "warning") in device_map_findings('"auto"', context)


@pytest.mark.parametrize(
    ("device_map", "context"),
    [
        ("{'': int(os.environ['LOCAL_RANK'])}", hf_context()),  # one GPU per process
        ('"auto"', hf_context(distribution=None)),  # one process over the GPUs: what it is for
        ('"auto"', hf_context(instance_type="ml.g5.2xlarge", instance_count=2)),  # one GPU each
    ],
    ids=["per-process", "no-launcher", "one-gpu-instances"],
)
def test_device_map_where_it_fits_the_launcher_is_not_reported(
    device_map: str, context: ScriptContext
) -> None:
    rules = [rule for rule, _ in device_map_findings(device_map, context)]
    assert "device-map-under-launcher" not in rules


def test_and_the_factory_refuses_the_job_at_entry_point(tmp_path: Path) -> None:
    from safe_estimators import huggingface

    (tmp_path / "train.py").write_text(DEVICE_MAP_TRAINER.format(device_map='"auto"'))
    with pytest.raises(ConfigError) as raised:
        huggingface(entry_point="train.py", source_dir=str(tmp_path), role=ROLE,
                    instance_type="ml.g5.12xlarge", transformers_version="4.36.0",
                    pytorch_version="2.1.0", py_version="py310", distribution=TORCHRUN)
    assert [p.path for p in raised.value.problems] == ["entry_point"]
    assert "train.py:4: `" in raised.value.problems[0].message
