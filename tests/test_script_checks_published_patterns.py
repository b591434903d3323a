"""Patterns that AWS's published example scripts use and that run: the checks stay quiet on them.

Found by running the checks over the training scripts of aws/amazon-sagemaker-examples (model
parallelism v1 and v2, SMDDP, torchrun, Training Compiler). Every script here is a minimal one of
our own that reproduces the pattern; beside each quiet case, the nearest mistake is still reported.
"""

from __future__ import annotations

import textwrap

import attrs
import pytest

from safe_estimators._script_checks import ScriptContext, check_source

TORCHRUN = ScriptContext(
    gpus_per_instance=8, launcher="torchrun", processes=16, instance_type="ml.p4d.24xlarge",
    pytorch_version="2.3.0",
)
SMDDP = attrs.evolve(TORCHRUN, launcher="smddp", pytorch_version="1.8.1")
SMP_V1_FP16 = ScriptContext(
    model_parallel=True, model_parallel_fp16=True, launcher="smp-v1", gpus_per_instance=8,
    processes=8, instance_type="ml.p4d.24xlarge", pytorch_version="1.13.1",
)
# The model parallel library before v1.10.0 (PyTorch 1.10 containers): no fp16 API of its own.
SMP_V1_FP16_OLD = attrs.evolve(SMP_V1_FP16, pytorch_version="1.10.2")


def rules(source: str, context: ScriptContext) -> list[str]:
    return [f.rule for f in check_source(textwrap.dedent(source), context)]


# -- save-on-every-rank ----------------------------------------------------------------------

LONG_GUARD = """
    import torch
    import torch.distributed as dist

    def main(args, model):
        dist.init_process_group("nccl")
        if args.fine_tune > 0 and args.delayed_param > 0 and {test}:
            torch.save(model.state_dict(), "/opt/ml/model/full.pt")

    main(parse_args(), build_model())
"""


def test_a_rank_test_at_the_end_of_a_long_condition_guards_the_save() -> None:
    # The condition is longer than the messages' clipped excerpts: the rank test is still seen.
    source = LONG_GUARD.format(test="dist.get_rank() == 0")
    assert "save-on-every-rank" not in rules(source, TORCHRUN)


def test_a_long_condition_without_a_rank_test_still_does_not_guard_it() -> None:
    source = LONG_GUARD.format(test="args.save_final_model_now")
    assert "save-on-every-rank" in rules(source, TORCHRUN)


PER_RANK_NAME = """
    import os
    import torch
    import torch.distributed as dist

    def main(args, outputs):
        dist.init_process_group("nccl")
        name = {name}
        torch.save(outputs, os.path.join(args.model_dir, name))

    main(parse_args(), collect_outputs())
"""


def test_a_file_name_with_the_rank_in_a_variable_is_one_file_per_rank() -> None:
    source = PER_RANK_NAME.format(name='f"rank_{dist.get_rank()}_" + args.output_name')
    assert "save-on-every-rank" not in rules(source, TORCHRUN)


def test_a_shared_file_name_in_a_variable_is_still_every_rank() -> None:
    source = PER_RANK_NAME.format(name='"outputs_" + args.output_name')
    assert "save-on-every-rank" in rules(source, TORCHRUN)


# -- smddp-job-uses-nccl ---------------------------------------------------------------------

LEGACY_SMDDP = """
    import torch
    {import_line}

    dist.init_process_group()

    def main(model, loader):
        model = DDP(model.cuda(dist.get_local_rank()))
"""


def test_the_libraries_own_process_group_api_is_smddp() -> None:
    # SMDDP before its torch.distributed backend: its own init_process_group, no backend.
    source = LEGACY_SMDDP.format(
        import_line="import smdistributed.dataparallel.torch.distributed as dist\n"
        "    from smdistributed.dataparallel.torch.parallel.distributed import "
        "DistributedDataParallel as DDP"
    )
    assert "smddp-job-uses-nccl" not in rules(source, SMDDP)


def test_torch_distributed_without_a_backend_under_smddp_still_warns() -> None:
    source = LEGACY_SMDDP.format(
        import_line="import torch.distributed as dist\n"
        "    from torch.nn.parallel import DistributedDataParallel as DDP"
    )
    assert "smddp-job-uses-nccl" in rules(source, SMDDP)


# -- SMP v1 fp16 before the library's own fp16 API (v1.10.0) -----------------------------------

OWN_FP16 = """
    import torch
    import smdistributed.modelparallel.torch as smp
    from fp16 import FP16_Module, FP16_Optimizer

    smp.init()
    torch.cuda.set_device(smp.local_rank())

    @smp.step
    def train_step(model, batch):
        loss = model(batch)
        model.backward(loss)
        return loss

    def main(args, config, make_model):
        {creation}
        model = smp.DistributedModel(model)
        optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
        {wrapper}
        optimizer = smp.DistributedOptimizer(optimizer)
"""
HALF_DEFAULT = (
    "torch.set_default_dtype(torch.float16)\n"
    "        model = FP16_Module(make_model(config))\n"
    "        torch.set_default_dtype(torch.float32)"
)
OWN_DYNAMIC_SCALER = (
    "optimizer = FP16_Optimizer(model, optimizer, static_loss_scale=None, "
    "dynamic_loss_scale=True)"
)
FP16_RULES = {"smp-fp16-model-creation", "smp-fp16-static-loss-scale"}


@pytest.mark.parametrize(
    ("creation", "wrapper"),
    [(HALF_DEFAULT, OWN_DYNAMIC_SCALER), ("model = make_model(config)", "pass")],
)
def test_before_the_libraries_fp16_api_its_fp16_rules_do_not_apply(
    creation: str, wrapper: str
) -> None:
    # PyTorch 1.10 containers ship the library before v1.10.0: no smp.model_creation, no loss
    # scaling in smp.DistributedOptimizer; AWS's scripts brought their own fp16 wrappers.
    source = OWN_FP16.format(creation=creation, wrapper=wrapper)
    assert not FP16_RULES & set(rules(source, SMP_V1_FP16_OLD))


def test_a_model_built_with_float16_as_default_dtype_is_fp16() -> None:
    source = OWN_FP16.format(creation=HALF_DEFAULT, wrapper=OWN_DYNAMIC_SCALER)
    assert not FP16_RULES & set(rules(source, SMP_V1_FP16))


def test_the_same_script_without_either_is_still_reported_on_a_current_library() -> None:
    source = OWN_FP16.format(creation="model = make_model(config)", wrapper="pass")
    assert set(rules(source, SMP_V1_FP16)) >= FP16_RULES


def test_an_own_optimizer_wrapper_with_a_static_scale_is_still_reported() -> None:
    wrapper = OWN_DYNAMIC_SCALER.replace("dynamic_loss_scale=True", "dynamic_loss_scale=False")
    source = OWN_FP16.format(creation=HALF_DEFAULT, wrapper=wrapper)
    assert "smp-fp16-static-loss-scale" in rules(source, SMP_V1_FP16)


# -- a shell utility run through subprocess does not hide the training ------------------------

SMP_V2 = attrs.evolve(
    TORCHRUN, launcher="smp-v2", pytorch_version="2.3.1", tensor_parallel_degree=2,
    hybrid_shard_degree=8,
)
NO_TSM_INIT = """
    import subprocess
    import torch
    import torch.sagemaker as tsm

    def bus_bandwidth(log_file):
        {runner}

    def main(model):
        model = tsm.transform(model)
"""


@pytest.mark.parametrize(
    "runner",
    [
        'subprocess.Popen(f"grep \'Avg bus bandwidth\' {{log_file}}", shell=True)',
        'subprocess.check_output(["nvidia-smi", "-L"])',
        'subprocess.run("/usr/bin/df -h /opt/ml", shell=True)',
    ],
    ids=["grep", "nvidia-smi", "df"],
)
def test_a_utility_run_for_logs_leaves_the_whole_file_rules_on(runner: str) -> None:
    source = NO_TSM_INIT.format(runner=runner)
    assert "smp-v2-no-init" in rules(source, SMP_V2)


@pytest.mark.parametrize(
    "runner",
    [
        'subprocess.run(["python", "train_impl.py"], check=True)',
        "subprocess.run(command, shell=True)",
        'subprocess.run(f"{{sys.executable}} train_impl.py", shell=True)',
        'subprocess.run("env NCCL_DEBUG=INFO python train_impl.py", shell=True)',
        'subprocess.run("cat args.txt | xargs python train_impl.py", shell=True)',
        'os.system("mkdir -p /tmp/x && torchrun train_impl.py")',
        'subprocess.run(f"grep x {{log}} && {{launcher}} train_impl.py", shell=True)',
    ],
    ids=["python", "unreadable", "f-string-program", "env", "pipe", "and-list", "placeholder"],
)
def test_another_program_may_still_hold_the_training(runner: str) -> None:
    source = NO_TSM_INIT.format(runner=runner)
    assert "smp-v2-no-init" not in rules(source, SMP_V2)


# -- Trainium (torch-neuronx) and large-scale examples -----------------------------------------
# Found by running the checks over aws-neuron/aws-neuron-samples, aws-neuron/neuronx-distributed,
# aws-samples/sagemaker-trainium-examples and aws-samples/awsome-distributed-training.

TRAINIUM = ScriptContext(
    launcher="torchrun", processes=64, instance_type="ml.trn1.32xlarge", pytorch_version="1.11.0",
)

NEMO_TRAINER = """
    from nemo.collections.nlp.parts.nlp_overrides import NLPDDPStrategy, {trainer}

    def main(cfg):
        strategy = NLPDDPStrategy(find_unused_parameters=False)
        trainer = {trainer}(strategy=strategy, **cfg.trainer)
        trainer.fit(build_model(cfg, trainer))

    main(load_config())
"""


def test_a_nemo_trainer_sets_up_the_process_group_itself() -> None:
    # NeMo's trainers are Lightning Trainers: the strategy initialises torch.distributed.
    source = "import torch\n" + textwrap.dedent(NEMO_TRAINER.format(trainer="NLPTrainer"))
    assert "no-process-group" not in rules(source, TRAINIUM)


def test_a_nemo_helper_that_is_not_a_trainer_does_not_count() -> None:
    source = "import torch\n" + textwrap.dedent(NEMO_TRAINER.format(trainer="NLPRunner"))
    assert "no-process-group" in rules(source, TRAINIUM)


def test_the_missing_process_group_fix_on_trainium_is_the_xla_backend() -> None:
    source = "import torch\nmodel = torch.nn.Linear(4, 4)\n"
    (finding,) = [f for f in check_source(source, TRAINIUM) if f.rule == "no-process-group"]
    assert 'init_process_group("xla")' in finding.hint
    assert "nccl" not in finding.hint and "cuda" not in finding.hint
    (gpu,) = [f for f in check_source(source, TORCHRUN) if f.rule == "no-process-group"]
    assert "nccl" in gpu.hint


ROOT_FLAG = """
    import torch
    import torch.distributed as dist
    import torch_xla.core.xla_model as xm
    import torch_xla.distributed.xla_backend

    def train(flags, model):
        dist.init_process_group("xla")
        is_root = {flag}
        for step in range(flags.steps):
            if is_root and not flags.dry_run:
                torch.save({{"model": model.state_dict()}}, flags.output_dir + "/ckpt.pt")

    train(parse_flags(), build_model())
"""


def test_a_rank_test_kept_in_a_variable_guards_the_save() -> None:
    source = ROOT_FLAG.format(flag="xm.is_master_ordinal(local=False)")
    assert "save-on-every-rank" not in rules(source, TRAINIUM)


def test_a_variable_that_is_not_a_rank_test_still_does_not_guard_it() -> None:
    source = ROOT_FLAG.format(flag="flags.save_checkpoints")
    assert "save-on-every-rank" in rules(source, TRAINIUM)


def test_an_early_return_on_a_rank_variable_guards_the_save() -> None:
    source = """
        import torch
        import torch.distributed as dist

        def save(model, path):
            dist.init_process_group("xla")
            leader = dist.get_rank() == 0
            if not leader:
                return
            torch.save(model.state_dict(), path)

        save(build_model(), "/opt/ml/model/model.pt")
    """
    assert "save-on-every-rank" not in rules(source, TRAINIUM)
