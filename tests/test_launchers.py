"""torchrun, SMDDP/pytorchddp, MPI and heterogeneous clusters, built through the real SDK."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sdk_generations import ParameterString

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


# --- the Hugging Face estimator drops launcher settings beside torchrun and pytorchddp --------

_SDK_KEYS = ("sagemaker_torch_distributed_enabled", "sagemaker_distributed_dataparallel_enabled",
             "sagemaker_pytorch_ddp_enabled", "sagemaker_mpi_enabled")  # fmt: skip


def _launch_flags(est) -> dict[str, str]:
    return {k: v for k, v in est.hyperparameters().items() if k in _SDK_KEYS}


def test_the_sdk_drops_smddp_beside_torchrun_in_hugging_face_only(sagemaker_session, role):
    """The fact the rule stands on, from the bare SDK (huggingface/estimator.py)."""
    import sagemaker.huggingface
    import sagemaker.pytorch

    common = {"entry_point": SCRIPT, "role": role, "instance_type": "ml.p4d.24xlarge",
              "instance_count": 2, "py_version": "py310", "sagemaker_session": sagemaker_session,
              "distribution": {**TORCHRUN, **SMDDP}}  # fmt: skip
    bare_hf = sagemaker.huggingface.HuggingFace(
        transformers_version="4.28.1", pytorch_version="2.0.0", **common
    )
    assert _launch_flags(bare_hf) == {"sagemaker_torch_distributed_enabled": "true"}
    bare_pt = sagemaker.pytorch.PyTorch(framework_version="2.0.0", **common)
    assert _launch_flags(bare_pt) == {
        "sagemaker_torch_distributed_enabled": "true",
        "sagemaker_distributed_dataparallel_enabled": "true",
    }


def test_hugging_face_torchrun_with_smddp_is_refused_with_what_works(sagemaker_session, role):
    full = {"transformers_version": "4.28.1", "pytorch_version": "2.0.0"}  # torchrun: no aliases
    error = refusal(hf, sagemaker_session, role, instance_count=2, **full,
                    distribution={**TORCHRUN, **SMDDP})  # fmt: skip
    problem = problem_at(error, "distribution.smdistributed")
    assert "dropped" in problem.message
    assert "sagemaker_distributed_dataparallel_enabled" in problem.message
    assert "plain torchrun" in problem.message
    assert "remove torch_distributed" in problem.hint
    assert "PyTorch estimator" in problem.hint and "framework_version='2.0.0'" in problem.hint
    # Each fix it names builds, and SageMaker receives what the fix promises.
    smddp = hf(sagemaker_session, role, instance_count=2, **full, distribution=SMDDP)
    assert _launch_flags(smddp) == {"sagemaker_distributed_dataparallel_enabled": "true"}
    both = pt(sagemaker_session, role, instance_count=2, framework_version="2.0.0",
              py_version="py310", distribution={**TORCHRUN, **SMDDP})  # fmt: skip
    assert _launch_flags(both) == {
        "sagemaker_torch_distributed_enabled": "true",
        "sagemaker_distributed_dataparallel_enabled": "true",
    }
    plain = hf(sagemaker_session, role, instance_count=2, **full, distribution=TORCHRUN)
    assert _launch_flags(plain) == {"sagemaker_torch_distributed_enabled": "true"}


def test_hugging_face_on_p5_names_the_pytorch_estimator_not_mpirun(sagemaker_session, role):
    # Without torchrun the SDK refuses smdistributed on P5; with it, Hugging Face drops SMDDP.
    for distribution in ({**TORCHRUN, **SMDDP}, SMDDP):
        error = refusal(hf, sagemaker_session, role, instance_type="ml.p5.48xlarge",
                        distribution=distribution)  # fmt: skip
        problem = problem_at(error, "distribution.smdistributed")
        assert "PyTorch estimator" in problem.hint, problem
        assert "remove torch_distributed" not in problem.hint
    est = pt(sagemaker_session, role, instance_type="ml.p5.48xlarge", framework_version="2.0.0",
             py_version="py310", distribution={**TORCHRUN, **SMDDP})  # fmt: skip
    assert _launch_flags(est)["sagemaker_distributed_dataparallel_enabled"] == "true"


def test_hugging_face_pytorchddp_with_smddp_is_refused(sagemaker_session, role):
    error = refusal(hf, sagemaker_session, role,
                    distribution={"pytorchddp": {"enabled": True}, **SMDDP})  # fmt: skip
    problem = problem_at(error, "distribution.smdistributed")
    assert "sagemaker_pytorch_ddp_enabled" in problem.message
    assert "remove pytorchddp" in problem.hint


@pytest.mark.parametrize("pytorchddp", [True, False])
def test_hugging_face_pytorchddp_hides_torchrun(sagemaker_session, role, pytorchddp):
    import sagemaker.huggingface

    distribution = {"pytorchddp": {"enabled": pytorchddp}, **TORCHRUN}
    bare = sagemaker.huggingface.HuggingFace(
        entry_point=SCRIPT, role=role, instance_type="ml.p4d.24xlarge", instance_count=1,
        transformers_version="4.28.1", pytorch_version="2.0.0", py_version="py310",
        sagemaker_session=sagemaker_session, distribution=distribution,
    )  # fmt: skip
    assert "sagemaker_torch_distributed_enabled" not in bare.hyperparameters()
    full = {"transformers_version": "4.28.1", "pytorch_version": "2.0.0"}
    error = refusal(hf, sagemaker_session, role, **full, distribution=distribution)
    problem = problem_at(error, "distribution.torch_distributed")
    assert "torchrun" in problem.message and "pytorchddp" in problem.hint
    est = hf(sagemaker_session, role, **full, distribution=TORCHRUN)
    assert _launch_flags(est) == {"sagemaker_torch_distributed_enabled": "true"}


def test_hugging_face_pytorchddp_with_mpi_warns_that_mpi_is_dropped(sagemaker_session, role):
    mpi = {"enabled": True, "custom_mpi_options": "-x NCCL_DEBUG=INFO"}
    est = hf(sagemaker_session, role, instance_type="ml.g5.12xlarge",
             distribution={"pytorchddp": {"enabled": True}, "mpi": mpi})  # fmt: skip
    assert "is ignored" in warnings_of(est)["distribution.mpi"]
    assert _launch_flags(est) == {"sagemaker_pytorch_ddp_enabled": "true"}
    assert "distribution.mpi.processes_per_host" not in safe_estimators.explain(est).injected


# Hugging Face with SMDDP as AWS and Hugging Face document it: smdistributed.dataparallel alone.
# Sources: amazon-sagemaker-examples advanced_functionality/sentiment_parallel_batch (4.28.1,
# PyTorch 2.0.0, 2 x ml.p3.16xlarge), huggingface.co/docs/sagemaker/train "Data parallelism"
# (4.4.2, PyTorch 1.6.0, 2 x ml.p3dn.24xlarge), AWS "data-parallel-config" (custom_mpi_options).
DOCUMENTED_HF_SMDDP = [
    ("4.28.1", "2.0.0", "py310", "ml.p3.16xlarge", {}),
    ("4.4.2", "1.6.0", "py36", "ml.p3dn.24xlarge", {}),
    ("4.26.0", "1.13.1", "py39", "ml.p4d.24xlarge",
     {"custom_mpi_options": "-verbose -x NCCL_DEBUG=VERSION"}),
]  # fmt: skip


@pytest.mark.parametrize("case", DOCUMENTED_HF_SMDDP, ids=lambda c: f"{c[0]}-{c[3]}")
def test_documented_hugging_face_smddp_jobs_build_and_send_smddp(sagemaker_session, role, case):
    transformers, pytorch, py, instance_type, options = case
    est = hf(
        sagemaker_session, role, instance_type=instance_type, instance_count=2,
        transformers_version=transformers, pytorch_version=pytorch, py_version=py,
        distribution={"smdistributed": {"dataparallel": {"enabled": True, **options}}},
    )  # fmt: skip
    hyperparameters = est.hyperparameters()
    assert hyperparameters["sagemaker_distributed_dataparallel_enabled"] == "true"
    sent = json.loads(hyperparameters["sagemaker_distributed_dataparallel_custom_mpi_options"])
    assert sent == options.get("custom_mpi_options", "")


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


@pytest.mark.parametrize(
    ("program", "quiet"),
    [
        ("neuron_parallel_compile torchrun --nproc_per_node=32 train.py --steps 10\n", True),
        ("pip install -r requirements.txt\npython train.py\n", False),
    ],
    ids=["runs torchrun", "runs one python"],
)
def test_a_shell_entry_point_that_runs_its_own_launcher_uses_every_neuroncore(
    program, quiet, sagemaker_session, role, tmp_path
):
    # Neuron's ahead-of-time compile step is a shell script around torchrun, with no
    # distribution: its 32 processes use the 32 NeuronCores.
    script = tmp_path / "compile.sh"
    script.write_text(program)
    est = pt(
        sagemaker_session, role, instance_type="ml.trn1.32xlarge", framework_version="1.11.0",
        py_version="py38", entry_point=str(script),
    )  # fmt: skip
    assert ("distribution" not in warnings_of(est)) is quiet


def test_the_hugging_face_estimator_on_trainium_needs_an_image_uri(sagemaker_session, role):
    # The SDK's image lookup takes only PyTorch on Trainium: our rule says so before the build.
    arguments = {
        "instance_type": "ml.trn1.32xlarge", "transformers_version": "4.36.2",
        "pytorch_version": "1.13.1", "py_version": "py310", "distribution": TORCHRUN,
    }
    error = refusal(hf, sagemaker_session, role, **arguments)
    assert "image_uri" in problem_at(error, "instance_type").hint
    image = (
        "763104351884.dkr.ecr.us-east-1.amazonaws.com/huggingface-pytorch-training-neuronx:"
        "1.13.1-transformers4.36.2-neuronx-py310-sdk2.18.0-ubuntu20.04"
    )
    est = hf(sagemaker_session, role, **arguments, image_uri=image)
    assert est.training_image_uri() == image
    assert est.hyperparameters()["sagemaker_torch_distributed_enabled"] == "true"


def test_the_sdk_s_neuron_container_predates_trainium2(sagemaker_session, role):
    # The SDK resolves its one Neuron training container (Neuron SDK 2.4.0) for ml.trn2 too,
    # whose runtime predates Trainium2 (Neuron SDK 2.21.0 added it): the job cannot run.
    arguments = {
        "instance_type": "ml.trn2.48xlarge", "framework_version": "1.11.0", "py_version": "py38",
        "distribution": TORCHRUN,
    }
    found = problem_at(refusal(pt, sagemaker_session, role, **arguments), "instance_type")
    assert "Neuron SDK 2.4.0" in found.message and "2.21.0 or later" in found.hint
    image = (
        "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training-neuronx:"
        "2.7.0-neuronx-py310-sdk2.24.1-ubuntu22.04"
    )
    est = pt(sagemaker_session, role, **arguments, image_uri=image)
    assert "instance_type" not in warnings_of(est)
    on_trn1 = pt(sagemaker_session, role, **{**arguments, "instance_type": "ml.trn1.32xlarge"})
    assert "pytorch-training-neuron:1.11.0" in on_trn1.training_image_uri()
    assert "instance_type" not in warnings_of(on_trn1)


def test_one_idle_neuroncore_is_counted_in_the_singular(sagemaker_session, role):
    # ml.trn1.2xlarge has 2 NeuronCores: a single-process script leaves one of them idle.
    est = pt(
        sagemaker_session, role, instance_type="ml.trn1.2xlarge", framework_version="1.11.0",
        py_version="py38",
    )  # fmt: skip
    warning = warnings_of(est)["distribution"]
    assert "1 NeuronCore sits idle" in warning
    # No Trainium type has a single NeuronCore to switch to.
    assert "use a single NeuronCore" not in warning and "written for one NeuronCore" in warning


# Jobs that get the no-launcher warning, where torchrun as-is is refused by our own rules (and
# two where it is not): each fix the warning names must silence it without a new error.
NO_LAUNCHER_JOBS = [
    ("pytorch-1.12.1-g5", {"framework_version": "1.12.1", "py_version": "py38",
                           "instance_type": "ml.g5.12xlarge"}),
    ("pytorch-2.4.0-p4d", {"framework_version": "2.4.0", "py_version": "py311",
                           "instance_type": "ml.p4d.24xlarge", "instance_count": 2}),
    ("pytorch-alias-2.2", {"framework_version": "2.2", "py_version": "py310",
                           "instance_type": "ml.p3.8xlarge"}),
    ("pytorch-1.10.0-trn1", {"framework_version": "1.10.0", "py_version": "py38",
                             "instance_type": "ml.trn1.32xlarge"}),
    ("pytorch-shell-script", {"framework_version": "2.2.0", "py_version": "py310",
                              "instance_type": "ml.p4d.24xlarge", "entry_point": "train.sh"}),
    ("huggingface-4.17-p3", {"estimator": "huggingface", "transformers_version": "4.17.0",
                             "pytorch_version": "1.10.2", "py_version": "py38",
                             "instance_type": "ml.p3.8xlarge", "instance_count": 2}),
    ("pytorch-2.3.0-p4d", {"framework_version": "2.3.0", "py_version": "py311",
                           "instance_type": "ml.p4d.24xlarge"}),
    ("huggingface-4.28-g5", {"estimator": "huggingface", "transformers_version": "4.28.1",
                             "pytorch_version": "2.0.0", "py_version": "py310",
                             "instance_type": "ml.g5.12xlarge"}),
]  # fmt: skip


def _no_launcher_job(job: dict, tmp_path: Path) -> dict:
    arguments = {"estimator": "pytorch", "entry_point": SCRIPT, "check_script": False, **job}
    if arguments["entry_point"] == "train.sh":
        (tmp_path / "train.sh").write_text("python train.py\n")
        arguments["entry_point"] = str(tmp_path / "train.sh")
    return arguments


@pytest.mark.parametrize(
    "job", [j for _, j in NO_LAUNCHER_JOBS], ids=[i for i, _ in NO_LAUNCHER_JOBS]
)
def test_the_no_launcher_fix_works_for_that_job(job, tmp_path):
    from safe_estimators._resolve import check_arguments
    from safe_estimators._rules.distribution import launcher_fixes

    arguments = _no_launcher_job(job, tmp_path)
    ctx, problems, _ = check_arguments(arguments)
    assert "distribution" in {p.path for p in problems}
    assert launcher_fixes(ctx)
    _assert_fixes_work(arguments)


def test_no_launcher_fixes_build_through_the_sdk(sagemaker_session, role):
    est = pt(sagemaker_session, role, instance_type="ml.g5.12xlarge", framework_version="1.12.1",
             py_version="py38")  # fmt: skip
    assert "framework_version='1.13.1'" in warnings_of(est)["distribution"]
    upgraded = pt(sagemaker_session, role, instance_type="ml.g5.12xlarge",
                  framework_version="1.13.1", py_version="py39", distribution=TORCHRUN)  # fmt: skip
    assert upgraded.hyperparameters()["sagemaker_torch_distributed_enabled"] == "true"
    assert "distribution" not in warnings_of(upgraded)
    mpi = pt(sagemaker_session, role, instance_type="ml.g5.12xlarge", framework_version="1.12.1",
             py_version="py38", distribution={"mpi": {"enabled": True}})  # fmt: skip
    assert mpi.hyperparameters()["sagemaker_mpi_num_of_processes_per_host"] == "4"
    assert "distribution" not in warnings_of(mpi)


def test_a_shell_script_on_trainium_is_told_to_use_a_python_entry_point(tmp_path):
    from safe_estimators._resolve import check_arguments

    arguments = _no_launcher_job({"framework_version": "1.11.0", "py_version": "py38",
                                  "instance_type": "ml.trn1.32xlarge", "entry_point": "train.sh"},
                                 tmp_path)  # fmt: skip
    _, problems, _ = check_arguments(arguments)
    warning = next(p for p in problems if p.path == "distribution")
    assert ".py training script" in warning.hint and "mpi" not in warning.hint


def _assert_fixes_work(arguments: dict) -> None:
    from safe_estimators._resolve import check_arguments
    from safe_estimators._rules.distribution import launcher_fixes

    ctx, problems, _ = check_arguments(arguments)
    warning = next((p for p in problems if p.path == "distribution"), None)
    if ctx is None or warning is None:
        return
    errors = {p.path for p in problems if p.severity == "error"}
    for fix in launcher_fixes(ctx):
        for key, value in fix.items():  # the text names what is applied
            assert f"{key}={value!r}" in warning.hint, (fix, warning.hint)
        _, after, _ = check_arguments({**arguments, **fix})
        assert "distribution" not in {p.path for p in after}, (fix, after)
        new = [p for p in after if p.severity == "error" and p.path not in errors]
        assert not new, (arguments, fix, new)


@pytest.mark.sdk2_only  # the estimator's torchrun checks of the instance kind (ModelTrainer: none)
def test_a_pipeline_parameter_with_a_cpu_choice_is_told_to_narrow_it():
    from safe_estimators._resolve import check_arguments

    parameter = ParameterString("Type", default_value="ml.p4d.24xlarge",
                                enum_values=["ml.p4d.24xlarge", "ml.c5.xlarge"])  # fmt: skip
    arguments = {"estimator": "pytorch", "entry_point": SCRIPT, "check_script": False,
                 "framework_version": "2.3.0", "py_version": "py311",
                 "instance_type": parameter}  # fmt: skip
    _, problems, _ = check_arguments(arguments)
    hint = next(p for p in problems if p.path == "distribution").hint
    assert "enum_values" in hint and "mpi" not in hint  # MPI would need one GPU count too
    _assert_fixes_work(arguments)


@settings(max_examples=60, deadline=None)
@given(
    version=st.sampled_from(["1.10.0", "1.11.0", "1.12.1", "1.13.1", "2.0.1", "2.2", "2.3.0",
                             "2.4.0", "2.5.1"]),
    instance_type=st.sampled_from(["ml.g5.12xlarge", "ml.p3.8xlarge", "ml.p4d.24xlarge",
                                   "ml.p5.48xlarge", "ml.trn1.32xlarge", "ml.trn1.2xlarge"]),
    instance_count=st.integers(1, 2),
    shell=st.booleans(),
)  # fmt: skip
def test_every_no_launcher_fix_silences_the_warning_without_a_new_error(
    version, instance_type, instance_count, shell, tmp_path_factory
):
    from safe_estimators._facts.versions import framework_container

    table = "pytorch-neuron" if "trn" in instance_type else "pytorch"
    py_versions = framework_container(table, version).py_versions or ("py310",)
    entry = SCRIPT
    if shell:
        entry = str(tmp_path_factory.mktemp("job") / "train.sh")
        Path(entry).write_text("python train.py\n")
    _assert_fixes_work({"estimator": "pytorch", "entry_point": entry, "check_script": False,
                        "framework_version": version, "py_version": py_versions[-1],
                        "instance_type": instance_type,
                        "instance_count": instance_count})  # fmt: skip


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
    from sagemaker.instance_group import InstanceGroup  # sagemaker 2's

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


# --- parameter_server: sent by the SDK, read by no PyTorch container --------------------------


@pytest.mark.parametrize("factory", [pt, hf])
def test_parameter_server_is_sent_but_ignored(factory, sagemaker_session, role):
    est = factory(
        sagemaker_session,
        role,
        instance_count=2,
        distribution={"parameter_server": {"enabled": True}},
    )
    # What SageMaker receives: the flag, which only the TensorFlow and MXNet toolkits read.
    assert est.hyperparameters()["sagemaker_parameter_server_enabled"] == "true"
    found = warnings_of(est)
    assert "is ignored" in found["distribution.parameter_server"]
    assert "(2 here)" in found["distribution.parameter_server"]
    # And what one process per instance does with the GPUs is named (the fixture is a Trainer
    # script: DataParallel over each instance's 8), with a launcher our rules accept.
    assert "torch.nn.DataParallel over the instance's GPUs" in found["distribution"]


def test_a_disabled_parameter_server_says_nothing(sagemaker_session, role):
    est = pt(
        sagemaker_session,
        role,
        instance_type="ml.g5.xlarge",
        distribution={"parameter_server": {"enabled": False}},
    )
    assert "distribution.parameter_server" not in warnings_of(est)


# --- one process over every GPU: device_map="auto", DataParallel ----------------------------

SPREADING_SCRIPTS = {
    "device_map": """
        from transformers import AutoModelForCausalLM
        model = AutoModelForCausalLM.from_pretrained("tiiuae/falcon-40b", device_map="auto")
    """,
    "device_map through a name": """
        from transformers import AutoModelForCausalLM
        placement = "balanced_low_0"
        model = AutoModelForCausalLM.from_pretrained(name, device_map=placement)
    """,
    "data_parallel": """
        import torch
        model = torch.nn.DataParallel(build_model()).cuda()
    """,
    "xmp.spawn": """
        import torch_xla.distributed.xla_multiprocessing as xmp
        xmp.spawn(train_worker, args=(flags,))
    """,
    "torch.multiprocessing.spawn": """
        import torch.multiprocessing as mp
        mp.spawn(train_worker, nprocs=4)
    """,
    "a launcher it runs": """
        import subprocess
        subprocess.run(["tune", "run", "--nproc_per_node", "4", "lora_finetune"], check=True)
    """,
}


def _script(tmp_path: Path, source: str) -> str:
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(source))
    return str(path)


@pytest.mark.parametrize("source", SPREADING_SCRIPTS.values(), ids=SPREADING_SCRIPTS.keys())
def test_one_process_over_every_gpu_of_one_instance_is_not_told_to_add_a_launcher(
    source, sagemaker_session, role, tmp_path
):
    # A launcher would start that process once per GPU: a 40B model loaded four times.
    est = hf(sagemaker_session, role, instance_type="ml.g5.12xlarge",
             entry_point=_script(tmp_path, source))  # fmt: skip
    assert "distribution" not in warnings_of(est)
    assert est.distribution in (None, {})


def test_one_process_over_the_gpus_on_two_instances_trains_two_copies(
    sagemaker_session, role, tmp_path
):
    est = hf(sagemaker_session, role, instance_type="ml.g5.12xlarge", instance_count=2,
             entry_point=_script(tmp_path, SPREADING_SCRIPTS["device_map"]))  # fmt: skip
    found = warnings_of(est)["distribution"]
    assert "spreads its model (device_map) in one process over each instance's 4 GPUs" in found
    assert "the 2 instances (ml.g5.12xlarge) train independent copies" in found
    assert "Fix: set instance_count=1; or give each GPU its own process" in found


@pytest.mark.parametrize(
    "source",
    [
        'model = AutoModelForCausalLM.from_pretrained(name, device_map={"": local_rank})\n',
        "model = build_model().to('cuda')\n",
        'import subprocess\nsubprocess.run(["python", "prepare.py"], check=True)\n',
    ],
    ids=["per-process device_map", "one gpu", "another program, no launcher"],
)
def test_a_script_on_one_gpu_still_leaves_the_others_idle(
    source, sagemaker_session, role, tmp_path
):
    est = hf(sagemaker_session, role, instance_type="ml.g5.12xlarge",
             entry_point=_script(tmp_path, source))  # fmt: skip
    assert "3 GPUs sit idle" in warnings_of(est)["distribution"]


def test_with_the_script_checks_off_the_script_is_not_read(sagemaker_session, role, tmp_path):
    est = hf(sagemaker_session, role, instance_type="ml.g5.12xlarge", check_script=False,
             entry_point=_script(tmp_path, SPREADING_SCRIPTS["device_map"]))  # fmt: skip
    assert "3 GPUs sit idle" in warnings_of(est)["distribution"]
