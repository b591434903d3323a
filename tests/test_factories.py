"""Safe defaults and checks of every estimator the factories build (with or without compiler)."""

from __future__ import annotations

from pathlib import Path

import pytest
import sagemaker.huggingface
import sagemaker.pytorch

import safe_estimators
from safe_estimators import ConfigError

SCRIPT = str(Path(__file__).parent / "fixtures" / "jobs" / "train.py")


def pt(sagemaker_session, role, **overrides):
    arguments = {
        "entry_point": SCRIPT,
        "role": role,
        "instance_type": "ml.g5.2xlarge",
        "framework_version": "2.0",
        "py_version": "py310",
        "sagemaker_session": sagemaker_session,
    }
    arguments.update(overrides)
    return safe_estimators.pytorch(**arguments)


def refused(call, **overrides) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        call(**overrides)
    return caught.value


def test_returns_the_real_sdk_estimators(sagemaker_session, role):
    est = pt(sagemaker_session, role)
    assert type(est) is sagemaker.pytorch.PyTorch
    assert est.framework_version == "2.0"
    assert "pytorch-training:2.0-gpu-py310" in est.training_image_uri()

    hf = safe_estimators.huggingface(
        entry_point=SCRIPT,
        role=role,
        instance_type="ml.g5.2xlarge",
        transformers_version="4.28",
        pytorch_version="2.0",
        py_version="py310",
        sagemaker_session=sagemaker_session,
    )
    assert type(hf) is sagemaker.huggingface.HuggingFace
    assert "huggingface-pytorch-training:2.0-transformers4.28-gpu-py310" in (
        hf.training_image_uri()
    )


def test_other_estimator_keywords_pass_through_unchanged(sagemaker_session, role):
    est = pt(
        sagemaker_session,
        role,
        volume_size=200,
        output_path="s3://bucket/out",
        tags=[{"Key": "team", "Value": "nlp"}],
        max_run=3600,
        hyperparameters={"epochs": 3, "lr": 0.1},
    )
    assert est.volume_size == 200
    assert est.output_path == "s3://bucket/out"
    assert est.max_run == 3600
    assert est.hyperparameters()["epochs"] == "3"


def test_multi_instance_jobs_encrypt_inter_container_traffic(sagemaker_session, role):
    assert pt(sagemaker_session, role, instance_count=2).encrypt_inter_container_traffic is True
    explicit = pt(
        sagemaker_session, role, instance_count=2, encrypt_inter_container_traffic=False
    )
    assert explicit.encrypt_inter_container_traffic is False
    assert "encrypt_inter_container_traffic" not in safe_estimators.explain(explicit).injected


def test_other_distributions_go_through_unchanged(sagemaker_session, role):
    est = pt(
        sagemaker_session,
        role,
        framework_version="2.0.1",
        instance_type="ml.p4d.24xlarge",
        instance_count=2,
        distribution={"torch_distributed": {"enabled": True}},
    )
    assert est.distribution == {"torch_distributed": {"enabled": True}}
    assert est.hyperparameters()["sagemaker_torch_distributed_enabled"] == "true"


def test_torch_distributed_with_a_short_version_is_refused_with_the_full_one(
    sagemaker_session, role
):
    # The SDK checks torch_distributed against full versions and refuses "2.0" at construction.
    error = refused(
        pt,
        sagemaker_session=sagemaker_session,
        role=role,
        entry_point=SCRIPT,
        instance_type="ml.p4d.24xlarge",
        framework_version="2.0",
        py_version="py310",
        distribution={"torch_distributed": {"enabled": True}},
    )
    assert error.paths == ["framework_version"]
    assert "'2.0.1'" in error.problems[0].hint


def test_local_mode_gets_a_local_session_and_no_gpu_derived_values(role):
    est = safe_estimators.pytorch(
        entry_point=SCRIPT,
        role=role,
        instance_type="local_gpu",
        framework_version="2.0",
        py_version="py310",
    )
    assert est.instance_type == "local_gpu"
    assert est.sagemaker_session.local_mode
    assert "GPU_NUM_DEVICES" not in (est.environment or {})


def test_local_mode_with_a_remote_session_is_refused(sagemaker_session, role):
    error = refused(pt, sagemaker_session=sagemaker_session, role=role, entry_point=SCRIPT,
                    instance_type="local", framework_version="2.0", py_version="py310")
    assert error.paths == ["sagemaker_session"]
    assert "LocalSession" in str(error)


@pytest.mark.parametrize(
    ("overrides", "path", "words"),
    [
        ({"instance_type": "ml.p3.8xl"}, "instance_type", "ml.p3.8xlarge"),
        ({"instance_type": "p3.8xlarge"}, "instance_type", "ml.p3.8xlarge"),
        ({"instance_count": 0}, "instance_count", "positive"),
        ({"instance_count": "2"}, "instance_count", "expected int"),
        ({"framework_version": "1.99"}, "framework_version", "2.0.1"),
        ({"py_version": "py27"}, "py_version", "py310"),
        ({"instance_type": "ml.c5.xlarge", "framework_version": "1.5"}, "py_version", "py3"),
        ({"instance_typ": "ml.p3.2xlarge"}, "instance_typ", "did you mean 'instance_type'"),
        ({"distribution": {"mpi": {"enabled": True, "processes_per_host": 8}}},
         "distribution.mpi.processes_per_host", "has 1 GPU:"),
        ({"distribution": {"mpi": {"enabled": True, "process_per_host": 1}}},
         "distribution.mpi.process_per_host", "processes_per_host"),
        ({"distribution": {"pytorch_ddp": {"enabled": True}}},
         "distribution.pytorch_ddp", "pytorchddp"),
        ({"distribution": {"pytorchddp": {"enabled": "yes"}}},
         "distribution.pytorchddp.enabled", "true or false"),
        ({"use_spot_instances": True}, "max_wait", "required"),
        ({"use_spot_instances": True, "max_wait": 60, "max_run": 3600}, "max_wait", "3600"),
        ({"use_spot_instances": True, "max_wait": 7200, "max_run": 3600},
         "checkpoint_s3_uri", "from scratch"),
        ({"environment": {"1BAD": "x"}}, "environment.1BAD", "not a valid name"),
        ({"environment": {"BIG": "x" * 513}}, "environment.BIG", "512"),
        ({"hyperparameters": {"blob": "x" * 2499}}, "hyperparameters.blob", "2501 characters"),
        ({"hyperparameters": {f"h{i}": i for i in range(96)}}, "hyperparameters", "100"),
    ],
)  # fmt: skip
def test_refusals_name_the_path_and_the_numbers(sagemaker_session, role, overrides, path, words):
    error = refused(pt, sagemaker_session=sagemaker_session, role=role,
                    **{"entry_point": SCRIPT, "instance_type": "ml.g5.2xlarge",
                       "framework_version": "2.0", "py_version": "py310", **overrides})
    assert path in error.paths, error
    assert words in str(error)


def test_a_container_that_exists_only_for_the_compiler_is_refused_up_front(
    sagemaker_session, role
):
    # The SDK itself accepts this and fails only at fit(): the image exists only for the compiler.
    error = refused(
        safe_estimators.huggingface,
        entry_point=SCRIPT,
        role=role,
        instance_type="ml.p3.2xlarge",
        transformers_version="4.21.1",
        pytorch_version="1.11.0",
        py_version="py38",
        sagemaker_session=sagemaker_session,
    )
    assert error.paths == ["transformers_version"]
    assert "only with Training Compiler" in error.problems[0].hint


def test_secret_references_and_tokenizer_settings_are_fine(sagemaker_session, role):
    est = pt(
        sagemaker_session,
        role,
        hyperparameters={"pad_token": "[PAD]", "max_tokens": 512},
        environment={"HF_TOKEN_SECRET": "arn:aws:secretsmanager:us-west-2:1:secret:hf"},
    )
    assert est.hyperparameters()["pad_token"] == '"[PAD]"'


def test_all_problems_are_reported_at_once(sagemaker_session, role):
    error = refused(
        pt,
        sagemaker_session=sagemaker_session,
        role=role,
        entry_point=SCRIPT,
        instance_type="ml.g5.2xlarge",
        framework_version="1.99",
        py_version="py310",
        use_spot_instances=True,
        environment={"1BAD": "x"},
    )
    assert set(error.paths) >= {"framework_version", "max_wait", "checkpoint_s3_uri",
                                "environment.1BAD"}
    assert str(error).startswith(f"{len(error.problems)} problems")


def test_a_malformed_option_does_not_hide_the_rules_problems(sagemaker_session, role):
    error = refused(
        pt,
        sagemaker_session=sagemaker_session,
        role=role,
        entry_point=SCRIPT,
        instance_type="ml.g5.2xlarge",
        framework_version="2.0",
        py_version="py310",
        max_run="3600",
        use_spot_instances=True,
        volume_sise=30,
    )
    # The type error and the typo, and the spot rule that still ran over the rest.
    assert set(error.paths) == {"max_run", "volume_sise", "max_wait", "checkpoint_s3_uri"}


def test_trainium_jobs_get_the_neuron_container_they_ask_for(sagemaker_session, role):
    # The SDK has one Neuron training container and takes it whatever version is asked for.
    error = refused(pt, sagemaker_session=sagemaker_session, role=role, entry_point=SCRIPT,
                    instance_type="ml.trn1.32xlarge", framework_version="1.13.1",
                    py_version="py39", check_script=False,
                    distribution={"torch_distributed": {"enabled": True}})
    assert error.paths == ["framework_version"]
    assert "silently start PyTorch 1.11.0" in str(error)

    est = pt(sagemaker_session, role, instance_type="ml.trn1.32xlarge", framework_version="1.11.0",
             py_version="py38", check_script=False,
             distribution={"torch_distributed": {"enabled": True}})
    assert "pytorch-training-neuron:1.11.0" in safe_estimators.explain(est).image_uri
    assert est.distribution == {"torch_distributed": {"enabled": True}}
    # Trainium in its own terms: NeuronCores, not "0 GPUs".
    assert "32 NeuronCores each" in str(safe_estimators.explain(est))


def test_sdk_v1_names_are_taken_as_the_sdk_takes_them(sagemaker_session, role):
    # AWS's older notebooks write train_instance_type etc.; the SDK still renames them.
    arguments = dict(
        entry_point=SCRIPT,
        role=role,
        framework_version="2.2.0",
        py_version="py310",
        sagemaker_session=sagemaker_session,
        train_instance_type="ml.g5.xlarge",
        train_instance_count=1,
        train_volume_size=100,
        train_max_run=7200,
    )
    est = safe_estimators.pytorch(**arguments)
    bare = sagemaker.pytorch.PyTorch(**arguments)
    for name in ("instance_type", "instance_count", "volume_size", "max_run"):
        assert getattr(est, name) == getattr(bare, name)
    warned = {w.path: str(w) for w in safe_estimators.explain(est).warnings}
    assert "SDK v1 name of instance_type" in warned["train_instance_type"]
    # Both names, different values: the v1 name's value wins in the SDK, and the warning says so.
    both = safe_estimators.pytorch(**{**arguments, "instance_type": "ml.g5.2xlarge"})
    assert both.instance_type == "ml.g5.xlarge"
    assert "over the instance_type also given" in {
        w.path: str(w) for w in safe_estimators.explain(both).warnings
    }["train_instance_type"]
