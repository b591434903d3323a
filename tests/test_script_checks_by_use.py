"""Absences judged by the names a script uses, not by the libraries it imports (issue 34).

torchvision never initialises a process group; transformers' AutoConfig, AutoModelForCausalLM
and default_data_collator never call ``torch.sagemaker.init()``: a script that uses only such
names of a library is judged as fully visible, so what it misses is an error. A name of the
library the tables do not know keeps today's warning, and says which name.
"""

from __future__ import annotations

import attrs
import pytest

from safe_estimators._script_checks import ScriptContext, check_source
from safe_estimators._script_checks.libraries import INERT_NAMES, SMP_V1_INITIALISERS

TORCHRUN = ScriptContext(
    gpus_per_instance=8, launcher="torchrun", processes=16, instance_type="ml.p4d.24xlarge",
    pytorch_version="2.3.0",
)
SMP_V1 = ScriptContext(
    model_parallel=True, launcher="smp-v1", gpus_per_instance=8, processes=16,
    instance_type="ml.p4d.24xlarge", pytorch_version="1.13.1",
)
SMP_V2 = attrs.evolve(
    TORCHRUN, launcher="smp-v2", pytorch_version="2.3.1", tensor_parallel_degree=8,
    hybrid_shard_degree=2,
)

# A ResNet-50 DDP script of the usual shape that forgot init_process_group.
TORCHVISION_DDP = '''
import os
import torch
import torchvision
from torchvision import datasets, transforms
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    data = datasets.FakeData(transform=transforms.ToTensor())
    loader = DataLoader(data, batch_size=32, sampler=DistributedSampler(data))
    model = torchvision.models.resnet50().cuda(local_rank)
    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda()).backward()
        optimizer.step()


main()
'''

SMDDP_NOT_IMPORTED = '''
import torch
import torch.distributed as dist
from torchvision import models


def main():
    dist.init_process_group(backend="smddp")
    model = models.resnet50().cuda()
    model(torch.zeros(1, 3, 224, 224).cuda()).sum().backward()


main()
'''

# The SMP v2 Llama script of the issue: transformers for the model only.
SMP_V2_NO_INIT = '''
import torch
from transformers import AutoConfig, AutoModelForCausalLM, default_data_collator
from torch.utils.data import DataLoader


def main():
    config = AutoConfig.from_pretrained("meta-llama/Llama-2-7b-hf")
    model = AutoModelForCausalLM.from_config(config)
    model = torch.distributed.fsdp.FullyShardedDataParallel(model)
    loader = DataLoader([], collate_fn=default_data_collator)
    for batch in loader:
        model(**batch).loss.backward()


main()
'''

SMP_V1_NO_INIT = '''
import torch
import smdistributed.modelparallel.torch as smp
from torchvision import datasets, transforms


@smp.step
def train_step(model, data, target):
    output = model(data)
    loss = torch.nn.functional.nll_loss(output, target)
    model.backward(loss)
    return loss


def main():
    data = datasets.MNIST("/opt/ml/input/data", transform=transforms.ToTensor())
    model = smp.DistributedModel(torch.nn.Linear(784, 10))
    optimizer = smp.DistributedOptimizer(torch.optim.Adadelta(model.parameters()))
    for x, y in torch.utils.data.DataLoader(data):
        train_step(model, x, y)
        optimizer.step()


main()
'''

SMP_V2_NO_TRANSFORM = '''
import torch
import torch.sagemaker as tsm
from transformers import AutoConfig, AutoModelForCausalLM


def main():
    tsm.init()
    model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained("gpt2"))
    model = torch.distributed.fsdp.FullyShardedDataParallel(model)
    model(torch.zeros(1, 8, dtype=torch.long)).logits.sum().backward()


main()
'''

CASES = [
    ("torchrun-no-process-group", TORCHVISION_DDP, TORCHRUN, "no-process-group"),
    ("smddp-not-imported", SMDDP_NOT_IMPORTED, TORCHRUN, "smddp-backend-not-imported"),
    ("smp-v2-no-init", SMP_V2_NO_INIT, SMP_V2, "smp-v2-no-init"),
    ("smp-v1-no-init", SMP_V1_NO_INIT, SMP_V1, "smp-no-init"),
    ("smp-v2-tp8-no-transform", SMP_V2_NO_TRANSFORM, SMP_V2, "smp-v2-no-transform"),
]


def found(source: str, context: ScriptContext, rule: str):
    return [f for f in check_source(source, context) if f.rule == rule]


@pytest.mark.parametrize(("source", "context", "rule"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_an_absence_with_only_non_acting_names_is_an_error(source, context, rule):
    [finding] = found(source, context, rule)
    assert finding.severity == "error", finding.message
    assert "cannot see into" not in finding.message


@pytest.mark.parametrize(("source", "context", "rule"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_an_unknown_name_of_the_same_library_keeps_the_warning_and_names_it(
    source, context, rule
):
    library = "torchvision" if "torchvision" in source else "transformers"
    used = source + f"\nimport {library}\n{library}.some_new_helper()\n"
    [finding] = found(used, context, rule)
    assert finding.severity == "warning"
    assert f"{library} ({library}.some_new_helper" in finding.message


def test_an_unknown_library_stays_a_warning_even_unused():
    # Importing it may act (module-level code): judged by its name alone.
    [finding] = found("import myframework\n" + TORCHVISION_DDP, TORCHRUN, "no-process-group")
    assert finding.severity == "warning" and "myframework" in finding.message


def test_the_library_used_as_a_whole_is_not_judged_by_names():
    used = TORCHVISION_DDP + "\nregistry = {'lib': torchvision}\n"
    [finding] = found(used, TORCHRUN, "no-process-group")
    assert finding.severity == "warning"


def test_transformers_training_arguments_calls_smp_init_itself():
    # training_args.py calls smp.init() at import under SMP v1: nothing is missing.
    source = SMP_V1_NO_INIT.replace(
        "import torch\n", "import torch\nfrom transformers import TrainingArguments\n", 1
    ) + "\nargs = TrainingArguments(output_dir='/opt/ml/model')\n"
    assert found(source, SMP_V1, "smp-no-init") == []


def test_every_name_table_says_where_its_behaviour_is_shown():
    for names in INERT_NAMES.values():
        assert names and all(len(source) > 40 for source in names.values())
    assert all(len(source) > 20 for source in SMP_V1_INITIALISERS.values())


# --- the sampler and the model folder, by what the code does -----------------------------------

SAMPLER_ON_EVAL_ONLY = '''
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def main():
    dist.init_process_group("nccl")
    train_ds, eval_ds = list(range(100)), list(range(10))
    train_loader = DataLoader(train_ds, batch_size=8, shuffle=True)
    eval_sampler = DistributedSampler(eval_ds, shuffle=False)
    eval_loader = DataLoader(eval_ds, batch_size=8, sampler=eval_sampler)
    model = torch.nn.Linear(1, 1)
    for batch in train_loader:
        model(batch).sum().backward()
    for batch in eval_loader:
        model(batch)


main()
'''


def test_a_sampler_used_only_for_evaluation_leaves_the_training_loader_found():
    [finding] = found(SAMPLER_ON_EVAL_ONLY, TORCHRUN, "no-distributed-sampler")
    assert finding.line == 11
    assert "serves only the evaluation data" in finding.message


def test_a_sampler_imported_and_only_named_in_a_comment_is_no_sampler():
    source = SAMPLER_ON_EVAL_ONLY.replace(
        "    eval_sampler = DistributedSampler(eval_ds, shuffle=False)\n", ""
    ).replace("sampler=eval_sampler", "shuffle=False").replace(
        "    model = torch", "    # DistributedSampler: not needed here\n    model = torch"
    )
    [finding] = found(source, TORCHRUN, "no-distributed-sampler")
    assert finding.line == 11 and "nothing else in the script shards" in finding.message


def test_a_sampler_on_the_training_data_is_enough():
    source = SAMPLER_ON_EVAL_ONLY.replace(
        "DataLoader(train_ds, batch_size=8, shuffle=True)",
        "DataLoader(train_ds, batch_size=8, sampler=DistributedSampler(train_ds))",
    )
    assert found(source, TORCHRUN, "no-distributed-sampler") == []


def test_a_sampler_whose_purpose_cannot_be_read_keeps_the_rule_quiet():
    source = SAMPLER_ON_EVAL_ONLY.replace("eval_sampler = DistributedSampler(eval_ds",
                                          "sampler = DistributedSampler(data")
    assert found(source, TORCHRUN, "no-distributed-sampler") == []


# The DDP ResNet-50 of the issue: SM_MODEL_DIR only in an argparse default never read, a
# checkpoint path the checks cannot follow, the model saved to /tmp.
MODEL_IN_TMP = '''
import argparse
import os
import torch
import torch.distributed as dist


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model-dir", type=str, default=os.environ.get("SM_MODEL_DIR"))
    parser.add_argument("--checkpoint", type=str)
    args = parser.parse_args()
    dist.init_process_group("nccl")
    model = torch.nn.Linear(8, 8)
    if dist.get_rank() == 0 and args.checkpoint:
        torch.save({"model": model.state_dict()}, args.checkpoint + "-last")
    if dist.get_rank() == 0:
        torch.save(model.state_dict(), "/tmp/resnet50.pt")


main()
'''


def test_a_model_dir_option_never_read_does_not_hide_the_model_saved_to_tmp():
    [finding] = found(MODEL_IN_TMP, TORCHRUN, "model-outside-model-dir")
    assert finding.line == 18 and "'/tmp/resnet50.pt'" in finding.message


@pytest.mark.parametrize("reading", [
    "print(args.model_dir)", "print(vars(args))", "print(os.environ['SM_MODEL_DIR'])",
])
def test_a_model_dir_that_is_read_may_be_where_the_unread_path_goes(reading):
    source = MODEL_IN_TMP.replace('        torch.save(model.state_dict(), "/tmp/resnet50.pt")',
                                  f'        torch.save(model.state_dict(), "/tmp/resnet50.pt")\n'
                                  f'    {reading}')
    assert found(source, TORCHRUN, "model-outside-model-dir") == []
