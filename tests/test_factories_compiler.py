"""Training Compiler jobs built through the factories and the real SageMaker SDK."""

from __future__ import annotations

from pathlib import Path

import pytest

import safe_estimators
from safe_estimators import ConfigError

SCRIPT = str(Path(__file__).parent / "fixtures" / "jobs" / "train.py")

HF_XLA = {"transformers_version": "4.21.1", "pytorch_version": "1.11.0", "py_version": "py38"}


def hf(sagemaker_session, role, **overrides):
    arguments = {
        "entry_point": SCRIPT,
        "role": role,
        "instance_type": "ml.p3.8xlarge",
        "instance_count": 1,
        "training_compiler": True,
        "sagemaker_session": sagemaker_session,
        **HF_XLA,
    }
    arguments.update(overrides)
    return safe_estimators.huggingface(**arguments)


def test_multi_node_compiler_job_gets_every_safe_default(sagemaker_session, role):
    est = hf(sagemaker_session, role, instance_count=2)

    assert est.environment["GPU_NUM_DEVICES"] == "4"
    assert est.distribution == {"pytorchxla": {"enabled": True}}
    hyper = est.hyperparameters()
    assert hyper["sagemaker_pytorch_xla_multi_worker_enabled"] == "true"
    assert hyper["sagemaker_training_compiler_enabled"] == "true"
    assert est.disable_profiler is True
    assert est.debugger_hook_config is False
    assert est.encrypt_inter_container_traffic is True
    assert "huggingface-pytorch-trcomp-training" in est.training_image_uri()


def test_explanation_says_what_was_injected_and_why(sagemaker_session, role):
    est = hf(sagemaker_session, role, instance_count=2)
    explanation = safe_estimators.explain(est)

    assert explanation.injected["environment.GPU_NUM_DEVICES"] == "4"
    assert explanation.injected["distribution.pytorchxla"] == {"enabled": True}
    reasons = {i.path: i.reason for i in explanation.injections}
    assert "4 GPUs" in reasons["environment.GPU_NUM_DEVICES"]
    assert "8 GPUs" in reasons["distribution.pytorchxla"]
    assert "trcomp" in explanation.image_uri
    assert "GPU_NUM_DEVICES" in explanation._repr_markdown_()


def test_single_gpu_job_gets_no_xla_distribution(sagemaker_session, role):
    est = hf(sagemaker_session, role, instance_type="ml.p3.2xlarge")

    assert est.environment["GPU_NUM_DEVICES"] == "1"
    assert not est.distribution
    assert "sagemaker_pytorch_xla_multi_worker_enabled" not in est.hyperparameters()
    assert est.encrypt_inter_container_traffic is False  # one instance: nothing crosses a network


def test_single_node_multi_gpu_job_gets_xla_distribution(sagemaker_session, role):
    est = hf(sagemaker_session, role, instance_type="ml.g5.12xlarge")

    assert est.environment["GPU_NUM_DEVICES"] == "4"
    assert est.distribution == {"pytorchxla": {"enabled": True}}


@pytest.mark.parametrize(
    ("instance_type", "gpus"),
    [
        ("ml.p3.2xlarge", "1"),
        ("ml.p3.16xlarge", "8"),
        ("ml.p3dn.24xlarge", "8"),
        ("ml.g4dn.12xlarge", "4"),
        ("ml.p4d.24xlarge", "8"),
        ("ml.g5.48xlarge", "8"),
    ],
)
def test_every_supported_family_builds(sagemaker_session, role, instance_type, gpus):
    est = hf(sagemaker_session, role, instance_type=instance_type)
    assert est.environment["GPU_NUM_DEVICES"] == gpus


def test_pytorch_estimator_compiler_job(sagemaker_session, role):
    est = safe_estimators.pytorch(
        entry_point=SCRIPT,
        role=role,
        instance_type="ml.p4d.24xlarge",
        instance_count=2,
        framework_version="1.13",
        py_version="py39",
        training_compiler=True,
        sagemaker_session=sagemaker_session,
    )
    assert est.environment["GPU_NUM_DEVICES"] == "8"
    assert est.hyperparameters()["sagemaker_pytorch_xla_multi_worker_enabled"] == "true"
    assert "pytorch-trcomp-training:1.13" in est.training_image_uri()


def test_agreeing_gpu_num_devices_is_kept(sagemaker_session, role):
    est = hf(sagemaker_session, role, environment={"GPU_NUM_DEVICES": "4", "A": "b"})
    assert est.environment == {"GPU_NUM_DEVICES": "4", "A": "b"}
    assert "environment.GPU_NUM_DEVICES" not in safe_estimators.explain(est).injected


def test_disagreeing_gpu_num_devices_names_both_numbers(sagemaker_session, role):
    with pytest.raises(ConfigError) as caught:
        hf(sagemaker_session, role, environment={"GPU_NUM_DEVICES": "8"})
    (problem,) = caught.value.problems
    assert problem.path == "environment.GPU_NUM_DEVICES"
    assert "'8'" in problem.message and "4 GPUs" in problem.message


def test_integer_gpu_num_devices_is_refused_with_the_quoted_fix(sagemaker_session, role):
    with pytest.raises(ConfigError) as caught:
        hf(sagemaker_session, role, environment={"GPU_NUM_DEVICES": 4})
    (problem,) = caught.value.problems
    assert problem.path == "environment.GPU_NUM_DEVICES"
    assert '"4"' in problem.hint


def test_aws_docs_spelling_torchxla_is_rewritten_with_a_warning(sagemaker_session, role, caplog):
    est = hf(sagemaker_session, role, distribution={"torchxla": {"enabled": True}})

    assert est.distribution == {"pytorchxla": {"enabled": True}}
    assert "sagemaker_pytorch_xla_multi_worker_enabled" in est.hyperparameters()
    warnings = safe_estimators.explain(est).warnings
    assert [w.path for w in warnings] == ["distribution.torchxla"]
    assert "pytorchxla" in caplog.text


def test_explicit_profiler_and_debugger_are_kept_with_warnings(sagemaker_session, role):
    est = hf(sagemaker_session, role, disable_profiler=False, debugger_hook_config=None)
    assert est.disable_profiler is False
    paths = [w.path for w in safe_estimators.explain(est).warnings]
    assert paths == ["disable_profiler"]


def test_done_when_every_problem_of_a_broken_compiler_job_at_once(sagemaker_session, role):
    with pytest.raises(ConfigError) as caught:
        hf(
            sagemaker_session,
            role,
            instance_type="ml.c5.xlarge",
            instance_count=2,
            image_uri="123456789012.dkr.ecr.us-west-2.amazonaws.com/custom:latest",
        )
    paths = caught.value.paths
    assert "instance_type" in paths  # c5 is not a compiler family
    assert "image_uri" in paths
    assert isinstance(caught.value, ValueError)
    assert "c5" in str(caught.value)


@pytest.mark.parametrize(
    ("overrides", "path", "words"),
    [
        ({"instance_type": "local_gpu"}, "instance_type", "local mode"),
        (
            {
                "instance_groups": [
                    {
                        "instance_group_name": "g",
                        "instance_type": "ml.p3.8xlarge",
                        "instance_count": 1,
                    }
                ]
            },
            "instance_groups",
            "heterogeneous",
        ),
        (
            {"distribution": {"pytorchddp": {"enabled": True}}},
            "distribution.pytorchddp",
            "only the PyTorch/XLA",
        ),
        (
            {"distribution": {"pytorchxla": {"enabled": False}}, "instance_count": 2},
            "distribution.pytorchxla.enabled",
            "1 of its 8 GPUs",
        ),
        (
            {"transformers_version": "4.26.0", "pytorch_version": "1.13.1", "py_version": "py39"},
            "transformers_version",
            "no Hugging Face Training Compiler training container",
        ),
        ({"py_version": "py39"}, "py_version", "py38"),
        ({"model_parallel": {"pipeline_parallel_degree": 2}}, "training_compiler", "smdistributed"),
    ],
)
def test_compiler_refusals(sagemaker_session, role, overrides, path, words):
    with pytest.raises(ConfigError) as caught:
        hf(sagemaker_session, role, **overrides)
    assert path in caught.value.paths
    assert words in str(caught.value)


def test_pytorch_compiler_version_that_only_exists_without_the_compiler(sagemaker_session, role):
    with pytest.raises(ConfigError) as caught:
        safe_estimators.pytorch(
            entry_point=SCRIPT,
            role=role,
            instance_type="ml.p3.2xlarge",
            framework_version="2.0.1",
            py_version="py310",
            training_compiler=True,
            sagemaker_session=sagemaker_session,
        )
    (problem,) = caught.value.problems
    assert problem.path == "framework_version"
    assert "1.12.0, 1.13.1" in problem.hint
    assert "only without Training Compiler" in problem.hint


def test_a_distributed_compiler_job_whose_script_has_no_mp_fn_is_refused(
    sagemaker_session, role, tmp_path
):
    script = tmp_path / "train.py"
    script.write_text(
        "import torch_xla.core.xla_model as xm\n\n"
        "def main():\n    print(xm.xla_device())\n\n"
        "if __name__ == '__main__':\n    main()\n"
    )
    with pytest.raises(ConfigError) as caught:
        hf(sagemaker_session, role, entry_point=str(script), instance_count=2)
    (problem,) = caught.value.problems
    assert problem.path == "entry_point"
    assert str(script) in problem.message or "train.py" in problem.message
    assert "_mp_fn(index)" in problem.message
    assert "independently" in problem.message

    # The checks can be turned off for a script the checker cannot judge.
    est = hf(sagemaker_session, role, entry_point=str(script), instance_count=2, check_script=False)
    assert est.environment["GPU_NUM_DEVICES"] == "4"


def test_script_warnings_are_recorded_in_the_explanation(sagemaker_session, role, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "from transformers import AutoTokenizer, Trainer\n\n"
        "tok = AutoTokenizer.from_pretrained('bert-base-uncased')\n"
        "def encode(batch):\n    return tok(batch['text'], padding=True)\n\n"
        "def _mp_fn(index):\n    Trainer().train()\n"
    )
    est = hf(sagemaker_session, role, entry_point=str(script))
    findings = safe_estimators.explain(est).script_findings
    assert [f.rule for f in findings] == ["dynamic-padding"]
    assert findings[0].line == 5


OLD_COMPILER = {"transformers_version": "4.11.0", "pytorch_version": "1.9.0", "py_version": "py38"}


def test_an_old_compiler_container_on_several_gpus_builds_with_a_warning(sagemaker_session, role):
    # AWS's multi-GPU notebooks for PyTorch 1.9 start one process per GPU from their own
    # launcher script: the SDK builds it, so do we, and say what a plain script would do.
    est = hf(sagemaker_session, role, **OLD_COMPILER)
    assert est.distribution in (None, {})  # no pytorchxla: the SDK refuses it below 1.11
    assert est.environment["GPU_NUM_DEVICES"] == "4"
    warned = {w.path: str(w) for w in safe_estimators.explain(est).warnings}
    assert "trains on one GPU" in warned["pytorch_version"]


def test_an_old_compiler_container_on_several_instances_builds_with_a_warning(
    sagemaker_session, role
):
    # AWS's multi-node notebook for PyTorch 1.9 (2 x ml.p3.16xlarge) starts the processes on
    # every instance from its own launcher script: the SDK builds it, so do we.
    est = hf(sagemaker_session, role, instance_type="ml.p3.16xlarge", instance_count=2,
             **OLD_COMPILER)  # fmt: skip
    assert est.instance_count == 2
    assert est.distribution in (None, {})
    warned = {w.path: str(w) for w in safe_estimators.explain(est).warnings}
    assert "independent copies" in warned["pytorch_version"]
    assert "sm_dist" in warned["pytorch_version"]


def test_pytorchxla_on_an_old_compiler_container_is_refused_first(sagemaker_session, role):
    import sagemaker.huggingface

    distribution = {"pytorchxla": {"enabled": True}}
    # The bare SDK's own refusal, for this reason (sagemaker 2.257's words).
    old_pytorch = r"'pytorchxla' is currently only supported for PyTorch >= 1\.11"
    with pytest.raises(ValueError, match=old_pytorch):
        sagemaker.huggingface.HuggingFace(
            entry_point=SCRIPT, role=role, instance_type="ml.p3.8xlarge", instance_count=1,
            compiler_config=sagemaker.huggingface.TrainingCompilerConfig(),
            distribution=distribution, sagemaker_session=sagemaker_session, **OLD_COMPILER,
        )  # fmt: skip
    with pytest.raises(ConfigError) as caught:
        hf(sagemaker_session, role, distribution=distribution, **OLD_COMPILER)
    assert "distribution.pytorchxla" in caught.value.paths


@pytest.mark.parametrize(("instance_type", "count"), [("ml.p3.2xlarge", 2), ("ml.g5.12xlarge", 1)])
def test_multi_gpu_tensorflow_compiler_job_gets_no_pytorch_xla_launcher(
    sagemaker_session, role, instance_type, count
):
    """The SDK refuses pytorchxla with tensorflow_version; a TensorFlow job distributes inside
    its script, so nothing is injected for it (we injected pytorchxla and the SDK raised)."""
    est = hf(
        sagemaker_session,
        role,
        instance_type=instance_type,
        instance_count=count,
        transformers_version="4.17.0",
        pytorch_version=None,
        tensorflow_version="2.6.3",
        py_version="py38",
    )
    assert "pytorchxla" not in (est.distribution or {})
    assert "huggingface-tensorflow-trcomp-training:2.6.3" in est.training_image_uri()
    assert "distribution.pytorchxla" not in safe_estimators.explain(est).injected


def test_tensorflow_compiler_job_with_pytorch_xla_is_refused_with_a_fix(sagemaker_session, role):
    with pytest.raises(ConfigError) as caught:
        hf(
            sagemaker_session,
            role,
            instance_count=2,
            transformers_version="4.17.0",
            pytorch_version=None,
            tensorflow_version="2.6.3",
            py_version="py38",
            distribution={"pytorchxla": {"enabled": True}},
        )
    (problem,) = caught.value.problems
    assert problem.path == "distribution.pytorchxla"
    assert "TensorFlow 2.6.3" in problem.message and "pytorch_version" in problem.hint
