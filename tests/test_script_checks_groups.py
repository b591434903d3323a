"""A heterogeneous cluster runs the same script in every group (issue 34).

A c5 "data" group beside a p4d "gpu" group with SMDDP on "gpu": the training toolkit starts
the entry point on every host, and AWS's "Configure a training job with a heterogeneous
cluster" says the script "should be modified to detect which instance group it belongs to and
fork execution accordingly". A script that never reads its group is refused when the checks
see all of it, warned otherwise.
"""

from __future__ import annotations

import pytest

import safe_estimators
from safe_estimators import ConfigError
from safe_estimators._script_checks import ScriptContext, check_source

GROUPS = [
    {"instance_group_name": "data", "instance_type": "ml.c5.xlarge", "instance_count": 1},
    {"instance_group_name": "gpu", "instance_type": "ml.p4d.24xlarge", "instance_count": 2},
]
SMDDP = {"smdistributed": {"dataparallel": {"enabled": True}}, "instance_groups": ["gpu"]}

# SMDDP on every host, LOCAL_RANK and cuda: fails on the c5 host.
NEVER_CHECKS = """
import os
import torch
import torch.distributed as dist
import smdistributed.dataparallel.torch.torch_smddp  # noqa: F401
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def main():
    dist.init_process_group(backend="smddp")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = torch.nn.parallel.DistributedDataParallel(
        torch.nn.Linear(8, 8).cuda(local_rank), device_ids=[local_rank]
    )
    data = list(range(64))
    for batch in DataLoader(data, sampler=DistributedSampler(data)):
        model(batch.cuda()).sum().backward()
    if dist.get_rank() == 0:
        torch.save(model.state_dict(), os.path.join(os.environ["SM_MODEL_DIR"], "m.pt"))


if __name__ == "__main__":
    main()
"""

FORKS = NEVER_CHECKS.replace(
    'if __name__ == "__main__":\n    main()',
    'if __name__ == "__main__":\n'
    '    if os.environ["SM_CURRENT_INSTANCE_GROUP"] == "gpu":\n'
    "        main()",
)

CONTEXT = ScriptContext(
    launcher="smddp", processes=16, gpus_per_instance=8, instance_type="ml.p4d.24xlarge",
    instance_groups=("data: 1 x ml.c5.xlarge", "gpu: 2 x ml.p4d.24xlarge"),
)


def job(folder, sagemaker_session, role, source):
    (folder / "train.py").write_text(source)
    return safe_estimators.pytorch(
        entry_point="train.py",
        source_dir=str(folder),
        role=role,
        instance_groups=GROUPS,
        framework_version="2.2.0",
        py_version="py310",
        distribution=SMDDP,
        sagemaker_session=sagemaker_session,
    )


def test_a_script_that_never_reads_its_group_is_refused(tmp_path, sagemaker_session, role):
    with pytest.raises(ConfigError) as error:
        job(tmp_path, sagemaker_session, role, NEVER_CHECKS)
    [problem] = [p for p in error.value.problems if p.severity == "error"]
    assert "heterogeneous cluster (data: 1 x ml.c5.xlarge, gpu: 2 x ml.p4d.24xlarge)" in str(
        problem
    )
    assert "SM_CURRENT_INSTANCE_GROUP" in problem.hint


def test_a_script_that_forks_on_its_group_builds(tmp_path, sagemaker_session, role):
    est = job(tmp_path, sagemaker_session, role, FORKS)
    assert est.hyperparameters()["sagemaker_distribution_instance_groups"] == '["gpu"]'
    assert not [w for w in safe_estimators.explain(est).warnings if "heterogeneous" in str(w)]


@pytest.mark.parametrize("read", [
    "json.load(open('/opt/ml/input/config/resourceconfig.json'))['current_group_name']",
    "environment.Environment().current_instance_group",
    "os.environ['SM_INSTANCE_GROUPS']",
])
def test_every_way_of_reading_the_group_counts(read):
    helper = f"def group():\n    return {read}\n\n\ndef main():"
    source = NEVER_CHECKS.replace("def main():", helper)
    assert not [f for f in check_source(source, CONTEXT) if f.rule == "group-not-detected"]


def test_a_library_the_checks_cannot_see_makes_it_a_warning():
    source = "import myorchestrator\n" + NEVER_CHECKS
    [finding] = [f for f in check_source(source, CONTEXT) if f.rule == "group-not-detected"]
    assert finding.severity == "warning" and "myorchestrator" in finding.message


def test_a_hardware_test_makes_it_a_warning():
    test = "def main():\n    assert torch.cuda.is_available()"
    source = NEVER_CHECKS.replace("def main():", test)
    [finding] = [f for f in check_source(source, CONTEXT) if f.rule == "group-not-detected"]
    assert finding.severity == "warning"


def test_one_homogeneous_cluster_is_not_concerned():
    plain = ScriptContext(launcher="smddp", processes=16, gpus_per_instance=8,
                          instance_type="ml.p4d.24xlarge")
    assert not [f for f in check_source(NEVER_CHECKS, plain) if f.rule == "group-not-detected"]


@pytest.mark.sdk2_only
def test_the_heterogeneous_example_forks_on_its_group_and_validates_clean(capsys):
    from pathlib import Path

    from safe_estimators._cli import main

    example = Path(__file__).parent.parent / "examples" / "heterogeneous-smddp"
    source = (example / "train.py").read_text()
    assert "SM_CURRENT_INSTANCE_GROUP" in source and "current_group_name" in source
    assert main(["validate", str(example / "job.yaml")]) == 0
    out = capsys.readouterr().out
    assert out.strip() == f"{example / 'job.yaml'}: valid", out
