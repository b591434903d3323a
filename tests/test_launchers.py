"""torchrun, SMDDP/pytorchddp, MPI and heterogeneous clusters, built through the real SDK."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sagemaker.instance_group import InstanceGroup
from sagemaker.workflow.parameters import ParameterString

import safe_estimators
from safe_estimators import ConfigError

SCRIPT = str(Path(__file__).parent / "fixtures" / "jobs" / "train.py")
TORCHRUN = {"torch_distributed": {"enabled": True}}
SMDDP = {"smdistributed": {"dataparallel": {"enabled": True}}}


def pt(sagemaker_session, role, **overrides):
    arguments = {
        "entry_point": SCRIPT,
        "role": role,
        "instance_type": "ml.p4d.24xlarge",
        "framework_version": "2.3.0",
        "py_version": "py311",
        "sagemaker_session": sagemaker_session,
    }
    arguments.update(overrides)
    return safe_estimators.pytorch(**arguments)


def hf(sagemaker_session, role, **overrides):
    arguments = {
        "entry_point": SCRIPT,
        "role": role,
        "instance_type": "ml.p4d.24xlarge",
        "transformers_version": "4.28",
        "pytorch_version": "2.0",
        "py_version": "py310",
        "sagemaker_session": sagemaker_session,
    }
    arguments.update(overrides)
    return safe_estimators.huggingface(**arguments)


def refusal(call, *args, **overrides) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        call(*args, **overrides)
    assert "<sagemaker>" not in caught.value.paths, caught.value
    return caught.value


def problem_at(error: ConfigError, path: str):
    found = [p for p in error.problems if p.path == path]
    assert found, f"no problem at {path}: {error}"
    return found[0]


def reason(est, path: str) -> str:
    return next(i.reason for i in safe_estimators.explain(est).injections if i.path == path)


def warnings_of(est) -> dict[str, str]:
    return {w.path: str(w) for w in safe_estimators.explain(est).warnings}


# --- torchrun -------------------------------------------------------------------------------


def test_torchrun_on_two_p4d_with_pytorch_2_3_0_builds(sagemaker_session, role):
    est = pt(sagemaker_session, role, instance_count=2, distribution=TORCHRUN)
    assert est.distribution == TORCHRUN
    hyperparameters = est.hyperparameters()
    assert hyperparameters["sagemaker_torch_distributed_enabled"] == "true"
    assert json.loads(hyperparameters["sagemaker_instance_type"]) == "ml.p4d.24xlarge"
    assert "pytorch-training:2.3.0-gpu-py311" in est.training_image_uri()


def test_torchrun_on_a_cpu_instance_is_our_rule_not_the_sdk_fallback(sagemaker_session, role):
    error = refusal(
        pt, sagemaker_session, role, instance_type="ml.c5.xlarge", distribution=TORCHRUN
    )
    problem = problem_at(error, "instance_type")
    assert "ml.c5.xlarge" in problem.message and "GPU and Trainium" in problem.message
    assert "ml.p4d.24xlarge" in problem.hint


@pytest.mark.parametrize(
    ("version", "named"),
    [
        ("2.4.0", ["'2.3.0'", "'2.5.1'"]),  # a container, but not on the SDK's torchrun list
        ("1.12.1", ["'1.13.1'"]),
    ],
)
def test_torchrun_versions_the_sdk_refuses_name_runnable_ones(
    sagemaker_session, role, version, named
):
    error = refusal(pt, sagemaker_session, role, framework_version=version, distribution=TORCHRUN)
    problem = problem_at(error, "framework_version")
    assert version in problem.message
    for fix in named:
        assert fix in problem.hint


def test_torchrun_versions_without_a_plain_container_are_refused(sagemaker_session, role):
    # 2.3.1 and 2.4.1 are on the SDK's torchrun list, but only SMP v2 images exist for them.
    for version in ("2.3.1", "2.4.1"):
        error = refusal(
            pt, sagemaker_session, role, framework_version=version, distribution=TORCHRUN
        )
        assert "framework_version" in error.paths


def test_torchrun_short_alias_is_refused_with_the_full_version(sagemaker_session, role):
    error = refusal(pt, sagemaker_session, role, framework_version="2.3", distribution=TORCHRUN)
    assert "'2.3.0'" in problem_at(error, "framework_version").hint


def test_torchrun_disabled_does_not_check_versions(sagemaker_session, role):
    est = pt(
        sagemaker_session, role, framework_version="2.3",
        distribution={"torch_distributed": {"enabled": False}},
    )  # fmt: skip
    assert est.hyperparameters().get("sagemaker_torch_distributed_enabled") is None


def test_torchrun_needs_a_python_entry_point(sagemaker_session, role, tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("python train.py\n")
    error = refusal(pt, sagemaker_session, role, entry_point=str(script), distribution=TORCHRUN)
    assert ".py" in problem_at(error, "entry_point").message


def test_torchrun_with_a_pipeline_parameter_is_checked_through_its_default(sagemaker_session, role):
    # The SDK alone refuses this job as "CPU" (SDK issue #5515); it is a GPU job.
    parameter = ParameterString(
        "TrainingInstanceType",
        default_value="ml.g5.12xlarge",
        enum_values=["ml.g5.12xlarge", "ml.p3.8xlarge"],
    )
    est = pt(sagemaker_session, role, instance_type=parameter, distribution=TORCHRUN)
    assert est.instance_type is parameter
    assert est.hyperparameters()["sagemaker_torch_distributed_enabled"] == "true"

    cpu_allowed = ParameterString(
        "TrainingInstanceType",
        default_value="ml.g5.12xlarge",
        enum_values=["ml.g5.12xlarge", "ml.c5.xlarge"],
    )
    error = refusal(pt, sagemaker_session, role, instance_type=cpu_allowed, distribution=TORCHRUN)
    assert "instance_type.enum_values.ml.c5.xlarge" in error.paths
    cpu_default = ParameterString("TrainingInstanceType", default_value="ml.c5.xlarge")
    error = refusal(pt, sagemaker_session, role, instance_type=cpu_default, distribution=TORCHRUN)
    assert "instance_type" in error.paths


def test_torchrun_with_mpi_warns_that_mpi_is_dropped(sagemaker_session, role):
    est = pt(
        sagemaker_session, role,
        distribution={**TORCHRUN, "mpi": {"enabled": True, "processes_per_host": 8}},
    )  # fmt: skip
    assert "sagemaker_mpi_enabled" not in est.hyperparameters()
    assert "torchrun" in warnings_of(est)["distribution.mpi"]


# --- SMDDP and pytorchddp -------------------------------------------------------------------


def test_smddp_on_g5_is_refused_with_the_fix(sagemaker_session, role):
    error = refusal(
        pt, sagemaker_session, role, instance_type="ml.g5.12xlarge",
        framework_version="2.2.0", py_version="py310", distribution=SMDDP,
    )  # fmt: skip
    problem = problem_at(error, "distribution.smdistributed.dataparallel")
    assert "ml.g5.12xlarge" in problem.message and "ml.p4d.24xlarge" in problem.message
    assert "torch_distributed" in problem.hint


def test_smddp_on_p4d_builds(sagemaker_session, role):
    est = pt(
        sagemaker_session, role, instance_count=2, framework_version="2.2.0",
        py_version="py310", distribution=SMDDP,
    )  # fmt: skip
    hyperparameters = est.hyperparameters()
    assert hyperparameters["sagemaker_distributed_dataparallel_enabled"] == "true"
    assert "pytorch-training:2.2.0-gpu-py310" in est.training_image_uri()


def test_smddp_on_p3_16xlarge_builds_with_a_warning(sagemaker_session, role):
    est = pt(
        sagemaker_session, role, instance_type="ml.p3.16xlarge", framework_version="2.2.0",
        py_version="py310", distribution=SMDDP,
    )  # fmt: skip
    assert "no longer names" in warnings_of(est)["distribution.smdistributed.dataparallel"]


def test_smddp_version_the_sdk_refuses_names_the_aws_image(sagemaker_session, role):
    error = refusal(pt, sagemaker_session, role, distribution=SMDDP)  # PyTorch 2.3.0
    problem = problem_at(error, "framework_version")
    assert "'2.2.0'" in problem.hint and "pytorch-training:2.3.0" in problem.hint
    est = pt(
        sagemaker_session, role, distribution=SMDDP,
        image_uri="763104351884.dkr.ecr.us-west-2.amazonaws.com/"
        "pytorch-training:2.3.0-gpu-py311-cu121-ubuntu20.04-sagemaker",
    )  # fmt: skip
    assert est.hyperparameters()["sagemaker_distributed_dataparallel_enabled"] == "true"


def test_pytorchddp_in_the_pytorch_estimator_is_smddp(sagemaker_session, role):
    error = refusal(
        pt, sagemaker_session, role, instance_type="ml.g5.12xlarge",
        framework_version="2.2.0", py_version="py310",
        distribution={"pytorchddp": {"enabled": True}},
    )  # fmt: skip
    assert "distribution.pytorchddp" in error.paths
    est = pt(
        sagemaker_session, role, framework_version="2.2.0", py_version="py310",
        distribution={"pytorchddp": {"enabled": True}},
    )  # fmt: skip
    assert est.distribution == SMDDP
    assert est.hyperparameters()["sagemaker_distributed_dataparallel_enabled"] == "true"
    assert "pytorchddp" in reason(est, "distribution.smdistributed.dataparallel")


def test_pytorchddp_in_hugging_face_stays_plain_ddp(sagemaker_session, role):
    est = hf(sagemaker_session, role, instance_type="ml.g5.12xlarge",
             distribution={"pytorchddp": {"enabled": True}})  # fmt: skip
    hyperparameters = est.hyperparameters()
    assert hyperparameters["sagemaker_pytorch_ddp_enabled"] == "true"
    assert "sagemaker_distributed_dataparallel_enabled" not in hyperparameters


@pytest.mark.parametrize("instance_type", ["ml.p5.48xlarge", "ml.p5e.48xlarge", "ml.p5en.48xlarge"])
def test_smdistributed_on_p5_class_needs_torchrun(sagemaker_session, role, instance_type):
    error = refusal(
        pt, sagemaker_session, role, instance_type=instance_type, framework_version="2.2.0",
        py_version="py310", distribution=SMDDP,
    )  # fmt: skip
    assert "torch_distributed" in problem_at(error, "distribution.smdistributed").hint
    est = pt(
        sagemaker_session, role, instance_type=instance_type, framework_version="2.2.0",
        py_version="py310", distribution={**SMDDP, **TORCHRUN},
    )  # fmt: skip
    assert est.hyperparameters()["sagemaker_distributed_dataparallel_enabled"] == "true"
    assert "does not name" in warnings_of(est)["distribution.smdistributed.dataparallel"]


def test_bad_smddp_options_are_problems_where_written(sagemaker_session, role):
    error = refusal(
        pt, sagemaker_session, role, framework_version="2.2.0", py_version="py310",
        distribution={
            "smdistributed": {"dataparallel": {"enabeld": True, "custom_mpi_options": 3}}
        },
    )  # fmt: skip
    assert "'enabled'" in problem_at(error, "distribution.smdistributed.dataparallel.enabeld").hint
    assert "distribution.smdistributed.dataparallel.custom_mpi_options" in error.paths


# --- MPI ------------------------------------------------------------------------------------


def test_mpi_gets_one_process_per_gpu_recorded_with_its_reason(sagemaker_session, role):
    est = pt(sagemaker_session, role, instance_count=2, distribution={"mpi": {"enabled": True}})
    assert est.distribution["mpi"]["processes_per_host"] == 8
    assert est.hyperparameters()["sagemaker_mpi_num_of_processes_per_host"] == "8"
    assert safe_estimators.explain(est).injected["distribution.mpi.processes_per_host"] == 8
    why = reason(est, "distribution.mpi.processes_per_host")
    assert "8 GPUs" in why and "ml.p4d.24xlarge" in why


def test_mpi_with_fewer_processes_than_gpus_warns_about_idle_gpus(sagemaker_session, role):
    est = pt(
        sagemaker_session, role, instance_count=2,
        distribution={"mpi": {"enabled": True, "processes_per_host": 6}},
    )  # fmt: skip
    assert (
        "2 GPUs per instance (4 in total)"
        in warnings_of(est)["distribution.mpi.processes_per_host"]
    )
    error = refusal(
        pt,
        sagemaker_session,
        role,
        distribution={"mpi": {"enabled": True, "processes_per_host": 9}},
    )
    assert "distribution.mpi.processes_per_host" in error.paths


def test_mpi_on_trainium_is_refused_by_our_rule(sagemaker_session, role):
    error = refusal(
        pt, sagemaker_session, role, instance_type="ml.trn1.32xlarge", framework_version="1.11.0",
        py_version="py38", distribution={"mpi": {"enabled": True}},
    )  # fmt: skip
    assert "torch_distributed" in problem_at(error, "distribution.mpi").message


# --- no launcher ----------------------------------------------------------------------------


def test_several_gpus_without_a_launcher_warn(sagemaker_session, role):
    est = pt(sagemaker_session, role, instance_count=2)
    warning = warnings_of(est)["distribution"]
    assert "16 GPUs" in warning and "torch_distributed" in warning
    assert "distribution" not in warnings_of(
        pt(sagemaker_session, role, instance_type="ml.g5.xlarge")
    )
    assert "distribution" not in warnings_of(pt(sagemaker_session, role, distribution=TORCHRUN))


def test_trainium_without_torchrun_warns_in_neuroncores(sagemaker_session, role):
    # torchrun on Trainium starts one process per NeuronCore; without it, one per instance.
    est = pt(
        sagemaker_session, role, instance_type="ml.trn1.32xlarge", framework_version="1.11.0",
        py_version="py38",
    )  # fmt: skip
    warning = warnings_of(est)["distribution"]
    assert "32 NeuronCores" in warning and "31 NeuronCores sit idle" in warning
    est = pt(
        sagemaker_session, role, instance_type="ml.trn1.32xlarge", framework_version="1.11.0",
        py_version="py38", distribution=TORCHRUN,
    )  # fmt: skip
    assert est.hyperparameters()["sagemaker_torch_distributed_enabled"] == "true"
    assert "distribution" not in warnings_of(est)


# --- heterogeneous clusters -----------------------------------------------------------------

GROUPS = [
    {"instance_group_name": "data", "instance_type": "ml.c5.xlarge", "instance_count": 1},
    {"instance_group_name": "gpu", "instance_type": "ml.p4d.24xlarge", "instance_count": 2},
]


def grouped(sagemaker_session, role, **overrides):
    arguments = {
        "instance_type": None,
        "instance_groups": GROUPS,
        "framework_version": "2.2.0",
        "py_version": "py310",
        "distribution": {**SMDDP, "instance_groups": ["gpu"]},
    }
    arguments.update(overrides)
    return pt(sagemaker_session, role, **arguments)


def test_a_cpu_group_and_a_gpu_group_with_smddp_builds_and_plans(sagemaker_session, role, tmp_path):
    est = grouped(sagemaker_session, role)
    assert [g.instance_group_name for g in est.instance_groups] == ["data", "gpu"]
    assert est.instance_type is None and est.instance_count is None
    hyperparameters = est.hyperparameters()
    assert json.loads(hyperparameters["sagemaker_distribution_instance_groups"]) == ["gpu"]
    assert hyperparameters["sagemaker_distributed_dataparallel_enabled"] == "true"
    assert "pytorch-training:2.2.0-gpu-py310" in est.training_image_uri()

    spec = tmp_path / "job.yaml"
    (tmp_path / "train.py").write_text(Path(SCRIPT).read_text())
    spec.write_text(
        json.dumps(
            {
                "estimator": "pytorch",
                "entry_point": "train.py",
                "framework_version": "2.2.0",
                "py_version": "py310",
                "instance_groups": GROUPS,
                "distribution": {**SMDDP, "instance_groups": ["gpu"]},
            }
        )
    )
    plan = safe_estimators.plan(spec)
    resources = plan.request["ResourceConfig"]
    assert "InstanceType" not in resources and "InstanceCount" not in resources
    assert [g["InstanceGroupName"] for g in resources["InstanceGroups"]] == ["data", "gpu"]
    assert "gpu: 2 x ml.p4d.24xlarge" in str(plan)


def test_sdk_instance_group_objects_are_accepted(sagemaker_session, role):
    gpu = InstanceGroup("gpu", "ml.p4d.24xlarge", 2)
    est = grouped(
        sagemaker_session, role,
        instance_groups=[InstanceGroup("data", "ml.c5.xlarge", 1), gpu],
        distribution={"mpi": {"enabled": True}, "instance_groups": [gpu]},
    )  # fmt: skip
    assert est.hyperparameters()["sagemaker_mpi_num_of_processes_per_host"] == "8"
    assert "group 'gpu'" in reason(est, "distribution.mpi.processes_per_host")


def test_bad_groups_are_problems_at_the_users_paths_all_at_once(sagemaker_session, role):
    error = refusal(
        grouped, sagemaker_session, role,
        instance_groups=[
            {"instance_group_name": "data", "instance_type": "ml.c5.xlarge", "instance_count": 1},
            {"instance_group_nam": "gpu", "instance_type": 5, "instance_count": 0},
            "gpu",
        ],
    )  # fmt: skip
    assert set(error.paths) >= {
        "instance_groups.1.instance_group_nam",
        "instance_groups.1.instance_type",
        "instance_groups.1.instance_count",
        "instance_groups.2",
    }
    assert "'instance_group_name'" in problem_at(error, "instance_groups.1.instance_group_nam").hint


def test_group_rules(sagemaker_session, role):
    error = refusal(
        grouped, sagemaker_session, role, distribution={**SMDDP, "instance_groups": ["gpus"]}
    )
    assert "'gpu'" in problem_at(error, "distribution.instance_groups.0").hint
    error = refusal(
        grouped, sagemaker_session, role, distribution={**TORCHRUN, "instance_groups": ["gpu"]}
    )
    assert "distribution.torch_distributed" in error.paths
    error = refusal(grouped, sagemaker_session, role, distribution=SMDDP)
    assert "distribution.instance_groups" in error.paths
    twice = [GROUPS[1], {**GROUPS[1], "instance_type": "ml.p4d.24xlrge"}]
    error = refusal(grouped, sagemaker_session, role, instance_groups=twice)
    assert {"instance_groups.1.instance_group_name", "instance_groups.1.instance_type"} <= set(
        error.paths
    )
    many = [{**GROUPS[0], "instance_group_name": f"g{i}"} for i in range(6)]
    error = refusal(grouped, sagemaker_session, role, instance_groups=many, distribution=None)
    assert "at most 5" in problem_at(error, "instance_groups").message
    error = refusal(
        grouped, sagemaker_session, role, instance_type="ml.p4d.24xlarge", instance_count=2
    )
    assert {"instance_type", "instance_count"} <= set(error.paths)
    error = refusal(pt, sagemaker_session, role, distribution={**SMDDP, "instance_groups": ["gpu"]})
    assert "distribution.instance_groups" in error.paths
