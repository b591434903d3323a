"""sagemaker 3's fine-tuning trainers (SFTTrainer, DPOTrainer, RLVRTrainer, RLAIFTrainer,
CPTTrainer) as checked factories and ``target: fine_tuning`` spec files: refused offline where
the trainer would refuse only after reaching the hub or at train(), built without a socket
where they are right (the SDK's trainer is made on first use, since its constructor reads the
hub).

The recipes collection here is our own minimal YAML with the keys AWS's fine-tuning recipes
carry (instance_types, the base model, peft_config, max_len, trainer_type); pytest-socket keeps
every test off the network.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import safe_estimators
from safe_estimators import ConfigError
from safe_estimators._commands.validate import validate_file
from safe_estimators._facts.sdk_files import sdk_generation

SDK3 = sdk_generation() >= 3
pytestmark = pytest.mark.both_sdks
needs_sdk3 = pytest.mark.sdk3_only  # the fine-tuning trainers are sagemaker 3's

ROLE = "arn:aws:iam::111122223333:role/SageMakerRole"
MODEL = "meta-textgeneration-llama-3-2-1b-instruct"  # the hub's name for it
LISTED = ["ml.p4d.24xlarge", "ml.p5.48xlarge", "ml.g5.12xlarge"]
PLAN = "arn:aws:sagemaker:us-west-2:111122223333:training-plan/my-plan"


def _recipe(model: str, technique: str, lora: bool, types: list[str], length: int) -> dict:
    config: dict[str, Any] = {"model_name_or_path": model}
    if lora:
        config["peft_config"] = {"peft_type": "lora", "r": 16}
    return {
        "instance_types": types,
        "run": {"name": "ours", "model_type": "llm_finetuning_aws"},
        "training_config": {
            "model_config": config,
            "training_args": {"max_len": length, "trainer_type": technique.lower()},
        },
    }


@pytest.fixture
def collection(tmp_path, monkeypatch):
    """A recipes collection with the SFT LoRA and full recipes of Llama 3.2 1B Instruct."""
    folder = tmp_path / "collection" / "recipes_collection" / "recipes" / "fine-tuning" / "llama"
    folder.mkdir(parents=True)
    recipes = {
        "llmft_llama3_2_1b_instruct_seq4k_gpu_sft_lora": _recipe(
            "meta-llama/Llama-3.2-1B-Instruct", "SFT", True, LISTED, 4096
        ),
        "llmft_llama3_2_1b_instruct_seq4k_gpu_sft_fft": _recipe(
            "meta-llama/Llama-3.2-1B-Instruct", "SFT", False, ["ml.p5.48xlarge"], 4096
        ),
        "llmft_llama3_2_1b_instruct_seq4k_gpu_dpo": _recipe(
            "meta-llama/Llama-3.2-1B-Instruct", "DPO", True, ["ml.g6e.12xlarge"], 4096
        ),
    }
    for name, recipe in recipes.items():
        (folder / f"{name}.yaml").write_text(yaml.safe_dump(recipe))
    monkeypatch.setenv("SAFE_ESTIMATORS_RECIPES", str(tmp_path / "collection"))
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    return tmp_path / "collection"


def _compute(instance_type: str, count: int = 1, **fields: Any) -> Any:
    from sagemaker.core.training.configs import TrainingJobCompute

    return TrainingJobCompute(instance_type=instance_type, instance_count=count, **fields)


def _errors(problems) -> list:
    return [p for p in problems if p.severity == "error"]


def _spec(tmp_path: Path, **options: Any) -> Path:
    data = {"target": "fine_tuning", "trainer": "SFT", "model": MODEL, "role": ROLE, **options}
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


# --- the done-when: a type the recipes do not list, and one they do ------------------------------


@needs_sdk3
def test_sft_on_a_type_its_recipes_do_not_list_is_refused_with_the_types_they_list(collection):
    with pytest.raises(ConfigError) as raised:
        safe_estimators.sft_trainer(model=MODEL, compute=_compute("ml.g6.2xlarge"), role=ROLE)
    [problem] = raised.value.problems
    assert problem.path == "compute.instance_type"
    assert "is ml.g6.2xlarge" in problem.message
    assert "ml.g5.12xlarge, ml.p4d.24xlarge, ml.p5.48xlarge" in problem.message
    assert "llama/llmft_llama3_2_1b_instruct_seq4k_gpu_sft_lora" in problem.message
    assert problem.hint == "use one of ml.g5.12xlarge, ml.p4d.24xlarge, ml.p5.48xlarge."


@needs_sdk3
def test_the_same_job_on_a_listed_type_builds_as_the_real_trainer_without_a_socket(collection):
    from sagemaker.core.training.configs import TrainingJobCompute
    from sagemaker.train.sft_trainer import SFTTrainer

    checked = safe_estimators.sft_trainer(
        model=MODEL, compute=_compute("ml.p5.48xlarge", 2), role=ROLE
    )
    assert checked.trainer_class is SFTTrainer
    # The SDK's own constructor takes exactly these arguments (it is made on first use).
    bound = inspect.signature(SFTTrainer).bind(**checked.kwargs)
    assert isinstance(bound.arguments["compute"], TrainingJobCompute)
    assert bound.arguments["compute"].instance_count == 2
    explanation = safe_estimators.explain(checked)
    assert explanation.instance_type == "ml.p5.48xlarge"
    assert explanation.gpus_per_instance == 8
    [hub, *_] = explanation.not_checked
    assert "DescribeHubContent(HubName=SageMakerPublicHub, HubContentType=Model, " in hub
    assert f"HubContentName={MODEL})" in hub


@needs_sdk3
def test_full_fine_tuning_reads_the_full_recipes_and_dpo_its_own(collection):
    with pytest.raises(ConfigError) as raised:
        safe_estimators.sft_trainer(
            model=MODEL, training_type="FULL", compute=_compute("ml.p4d.24xlarge"), role=ROLE
        )
    assert "use one of ml.p5.48xlarge." in raised.value.problems[0].hint
    with pytest.raises(ConfigError) as raised:
        safe_estimators.dpo_trainer(model=MODEL, compute=_compute("ml.p5.48xlarge"), role=ROLE)
    assert "no DPO LoRA fine-tuning recipe" in raised.value.problems[0].message
    assert (
        safe_estimators.dpo_trainer(
            model=MODEL, compute=_compute("ml.g6e.12xlarge"), role=ROLE
        ).technique
        == "DPO"
    )


@needs_sdk3
def test_without_a_collection_the_instance_type_is_left_to_the_hub_and_said_so(monkeypatch):
    monkeypatch.delenv("SAFE_ESTIMATORS_RECIPES", raising=False)
    from safe_estimators._recipes import modes

    monkeypatch.setattr(modes, "recipes_folder", lambda: None)
    checked = safe_estimators.sft_trainer(model=MODEL, compute=_compute("ml.g6.2xlarge"), role=ROLE)
    [note] = [n for n in safe_estimators.explain(checked).not_checked if "instance types" in n]
    assert "no copy of the recipes collection was given" in note


# --- spec files: validate and plan, offline ---


@needs_sdk3
def test_a_spec_file_validates_with_the_same_refusal(collection, tmp_path):
    path = _spec(tmp_path, compute={"instance_type": "ml.g6.2xlarge", "instance_count": 1})
    [problem] = _errors(validate_file(str(path)))
    assert problem.path == "compute.instance_type"
    assert problem.rule == "fine-tuning-recipe-types"


@needs_sdk3
def test_a_listed_type_plans_offline_with_the_request_its_arguments_settle(collection, tmp_path):
    path = _spec(
        tmp_path,
        compute={"instance_type": "ml.p5.48xlarge", "instance_count": 2, "training_plan_arn": PLAN},
        hyperparameters={"learning_rate": 0.0001},
    )
    assert _errors(validate_file(str(path))) == []
    plan = safe_estimators.plan(path)
    assert plan.request["ResourceConfig"] == {
        "InstanceType": "ml.p5.48xlarge",
        "InstanceCount": 2,
        "VolumeSizeInGB": 30,
        "TrainingPlanArn": PLAN,
    }
    assert plan.request["HyperParameters"] == {"learning_rate": "0.0001"}
    assert plan.request["RoleArn"] == ROLE
    assert any("TrainingImage" in p and "from the hub" in p for p in plan.placeholders)


@needs_sdk3
def test_a_serverless_job_plans_its_serverless_config(collection, tmp_path):
    path = _spec(tmp_path, model_package_group="my-models", sequence_length="4K")
    plan = safe_estimators.plan(path)
    assert plan.request["ServerlessJobConfig"] == {
        "JobType": "FineTuning",
        "CustomizationTechnique": "SFT",
        "Peft": "LORA",
        "SequenceLength": "4K",
    }
    assert "ResourceConfig" not in plan.request


@needs_sdk3
def test_build_of_a_spec_file_is_the_checked_trainer(collection, tmp_path):
    path = _spec(tmp_path, compute={"instance_type": "ml.p4d.24xlarge"})
    checked = safe_estimators.build(path)
    assert checked.technique == "SFT"
    assert checked.kwargs["compute"].instance_type == "ml.p4d.24xlarge"


# --- the trainer's own refusals, said before the hub ---


@needs_sdk3
@pytest.mark.parametrize(
    ("options", "path", "words"),
    [
        ({"instance_type": "ml.p5.48xlarge"}, "instance_type", "did you mean 'training_type'"),
        ({"training_type": "QLORA"}, "training_type", "must be LORA or FULL"),
        ({"sequence_length": "4096"}, "sequence_length", "number of K tokens"),
        ({"compute": {"instance_typ": "ml.p5.48xlarge"}}, "compute.instance_typ", "instance_type"),
    ],
)
def test_options_the_trainer_refuses(collection, tmp_path, options, path, words):
    spec = {"model_package_group": "g", **options}
    problems = _errors(validate_file(str(_spec(tmp_path, **spec))))
    assert problems[0].path == path
    assert words in problems[0].message + problems[0].hint


@needs_sdk3
def test_rlaif_takes_no_compute(collection):
    with pytest.raises(ConfigError) as raised:
        safe_estimators.rlaif_trainer(model=MODEL, compute=_compute("ml.p5.48xlarge"), role=ROLE)
    # RLAIF is serverless only: no compute keyword, and so a model package group is needed.
    assert [p.path for p in raised.value.problems] == ["compute", "model_package_group"]


@needs_sdk3
def test_more_than_100_hyperparameters_are_refused_and_100_pass(collection):
    many = {f"h{i}": i for i in range(101)}
    with pytest.raises(ConfigError) as raised:
        safe_estimators.sft_trainer(
            model=MODEL, compute=_compute("ml.p5.48xlarge"), role=ROLE, hyperparameters=many
        )
    [problem] = raised.value.problems
    assert "sets 101 hyperparameters" in problem.message and "at most 100" in problem.message
    del many["h100"]
    safe_estimators.sft_trainer(
        model=MODEL, compute=_compute("ml.p5.48xlarge"), role=ROLE, hyperparameters=many
    )


@needs_sdk3
def test_overrides_count_toward_the_cap(collection):
    overrides = {"training_config": {f"k{i}": i for i in range(60)}}
    with pytest.raises(ConfigError) as raised:
        safe_estimators.sft_trainer(
            model=MODEL,
            compute=_compute("ml.p5.48xlarge"),
            role=ROLE,
            hyperparameters={f"h{i}": i for i in range(41)},
            overrides=overrides,
        )
    assert "sets 101 hyperparameters" in raised.value.problems[0].message


@needs_sdk3
def test_a_hyperparameter_value_with_characters_the_trainer_refuses(collection):
    with pytest.raises(ConfigError) as raised:
        safe_estimators.sft_trainer(
            model=MODEL,
            compute=_compute("ml.p5.48xlarge"),
            role=ROLE,
            hyperparameters={"prompt": "a;b"},
        )
    assert [p.path for p in raised.value.problems] == ["hyperparameters.prompt"]


@needs_sdk3
def test_a_region_without_model_customization_is_refused(collection, monkeypatch):
    monkeypatch.setenv("AWS_REGION", "eu-central-1")
    with pytest.raises(ConfigError) as raised:
        safe_estimators.sft_trainer(model=MODEL, compute=_compute("ml.p5.48xlarge"), role=ROLE)
    [problem] = raised.value.problems
    assert problem.path == "region"
    assert "us-east-1, us-west-2, ap-northeast-1, eu-west-1" in problem.message


@needs_sdk3
def test_a_serverless_job_needs_a_model_package_group(collection):
    with pytest.raises(ConfigError) as raised:
        safe_estimators.sft_trainer(model=MODEL, role=ROLE)
    assert [p.path for p in raised.value.problems] == ["model_package_group"]
    checked = safe_estimators.sft_trainer(model=MODEL, role=ROLE, model_package_group="g")
    assert safe_estimators.explain(checked).instance_type == "serverless"


# --- compute fields, training plans ---


@needs_sdk3
def test_compute_fields_the_serverful_path_drops_are_warned(collection):
    key = "arn:aws:kms:us-west-2:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    checked = safe_estimators.sft_trainer(
        model=MODEL, compute=_compute("ml.g5.12xlarge", volume_kms_key_id=key), role=ROLE
    )
    [dropped] = safe_estimators.explain(checked).warnings
    assert dropped.path == "compute.volume_kms_key_id"
    assert "runs without volume_kms_key_id" in dropped.message


@needs_sdk3
def test_the_installed_sdk_forwards_the_plan_and_an_older_one_is_warned(collection, monkeypatch):
    from safe_estimators._facts import fine_tuning

    assert fine_tuning.plan_arn_forwarded()  # sagemaker-train 1.27.0 has PR #6258
    compute = _compute("ml.p5.48xlarge", training_plan_arn=PLAN)
    assert (
        safe_estimators.explain(
            safe_estimators.sft_trainer(model=MODEL, compute=compute, role=ROLE)
        ).warnings
        == ()
    )
    monkeypatch.setattr(fine_tuning, "plan_arn_forwarded", lambda: False)
    checked = safe_estimators.sft_trainer(model=MODEL, compute=compute, role=ROLE)
    [dropped] = safe_estimators.explain(checked).warnings
    assert dropped.path == "compute.training_plan_arn"
    assert "PR #6258" in dropped.message and "sagemaker 3.22.1" in dropped.message
    assert dropped.hint == "pip install 'sagemaker>=3.22.1'."


@needs_sdk3
def test_a_plan_of_another_region_is_refused(collection, tmp_path):
    other = PLAN.replace("us-west-2", "eu-west-1")
    with pytest.raises(ConfigError) as raised:
        safe_estimators.sft_trainer(
            model=MODEL, compute=_compute("ml.p5.48xlarge", training_plan_arn=other), role=ROLE
        )
    [problem] = raised.value.problems
    assert problem.path == "compute.training_plan_arn"
    assert "a training plan of eu-west-1" in problem.message and "in us-west-2" in problem.message
    path = _spec(tmp_path, compute={"instance_type": "ml.p5.48xlarge", "training_plan_arn": other})
    with pytest.raises(ConfigError):
        safe_estimators.plan(path)


@needs_sdk3
def test_a_plan_on_a_type_plans_cannot_reserve_is_refused(collection):
    with pytest.raises(ConfigError) as raised:
        safe_estimators.sft_trainer(
            model=MODEL, compute=_compute("ml.g5.12xlarge", training_plan_arn=PLAN), role=ROLE
        )
    [problem] = raised.value.problems
    assert "ReservedCapacityInstanceType" in problem.message


# --- sagemaker 2 ---


@pytest.mark.sdk2_only  # the refusal of the fine-tuning trainers on sagemaker 2
def test_sagemaker_2_refuses_the_fine_tuning_trainers_with_the_fix(tmp_path):
    with pytest.raises(ConfigError) as raised:
        safe_estimators.sft_trainer(model=MODEL, role=ROLE)
    [problem] = raised.value.problems
    assert problem.path == "target"
    assert "needs the SageMaker SDK 3.x" in problem.message
    assert "sagemaker>=3" in problem.hint
    [problem] = validate_file(str(_spec(tmp_path)))
    assert problem.rule == "fine-tuning-needs-sdk3"


# --- any mapping of arguments: the trainer, or our ConfigError ---

_KEYS = st.sampled_from(
    [
        "model", "training_type", "compute", "sequence_length", "hyperparameters", "overrides",
        "model_package_group", "role", "instance_type", "recipe", "accept_eula", "environment",
        "tags", "base_job_name", "kms_key_id", "nonsense",
    ]
)  # fmt: skip
_LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 200), st.floats(allow_nan=True),
    st.text(max_size=12), st.sampled_from(["LORA", "FULL", "4K", "ml.p5.48xlarge", MODEL]),
)  # fmt: skip
_VALUES = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.one_of(
                st.sampled_from(["instance_type", "instance_count", "training_plan_arn"]),
                st.text(max_size=8),
            ),
            inner,
            max_size=4,
        ),
    ),
    max_leaves=8,
)


@needs_sdk3
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.dictionaries(_KEYS, _VALUES, max_size=8), st.sampled_from(["sft", "dpo", "rlaif", "cpt"]))
def test_any_arguments_give_a_trainer_or_a_config_error(collection, arguments, trainer):
    factory = getattr(safe_estimators, f"{trainer}_trainer")
    try:
        checked = factory(**arguments)
    except ConfigError as exc:
        assert exc.problems
        return
    inspect.signature(checked.trainer_class).bind(**checked.kwargs)


# --- the real trainer, made on first use, with the hub answered locally ---

_HUB_DOCUMENT = {  # our own minimal hub document: one SFT LoRA recipe for training jobs
    "GatedBucket": False,
    "RecipeCollection": [
        {
            "CustomizationTechnique": "SFT",
            "Peft": "LORA",
            "SequenceLength": "4K",
            "SmtjRecipeTemplateS3Uri": "s3://hub-bucket/recipe.yaml",
            "SmtjOverrideParamsS3Uri": "s3://hub-bucket/override.json",
        }
    ],
}


def _hub_session(calls: list[str]) -> Any:
    """A real sagemaker 3 Session whose boto3 calls are answered here (moto has no hub): the
    model's hub content and its recipe's override parameters; any other call fails the test."""
    import datetime
    import io
    import json

    import boto3
    from botocore.awsrequest import AWSResponse
    from botocore.response import StreamingBody
    from sagemaker.core.helper.session_helper import Session

    ok = AWSResponse("https://localhost", 200, {}, None)
    arn = "arn:aws:sagemaker:us-west-2:aws:hub"

    def answer(model: Any, params: dict[str, Any], **_: Any) -> Any:
        calls.append(model.name)
        if model.name == "DescribeHubContent":
            assert json.loads(params["body"])["HubContentName"] == MODEL
            return ok, {
                "HubContentName": MODEL, "HubContentVersion": "1.0.0",
                "HubContentArn": f"{arn}-content/SageMakerPublicHub/Model/{MODEL}/1.0.0",
                "HubContentType": "Model", "DocumentSchemaVersion": "2.0.0",
                "HubName": "SageMakerPublicHub", "HubArn": f"{arn}/SageMakerPublicHub",
                "HubContentDocument": json.dumps(_HUB_DOCUMENT), "HubContentStatus": "Available",
                "CreationTime": datetime.datetime(2026, 1, 1),
            }  # fmt: skip
        if model.name == "GetObject":
            body = json.dumps({"learning_rate": {"default": 0.0001, "type": "float"}}).encode()
            return ok, {"Body": StreamingBody(io.BytesIO(body), len(body))}
        raise AssertionError(f"the trainer called {model.name}")

    boto_session = boto3.Session(region_name="us-west-2")
    boto_session.events.register("before-call", answer)
    return Session(boto_session=boto_session)


@needs_sdk3
def test_the_real_sft_trainer_is_made_on_first_use_with_the_hub_calls_explain_names(collection):
    from sagemaker.train.sft_trainer import SFTTrainer

    calls: list[str] = []
    checked = safe_estimators.sft_trainer(
        model=MODEL,
        compute=_compute("ml.p5.48xlarge", 2),
        role=ROLE,
        hyperparameters={"learning_rate": 0.0002},
        sagemaker_session=_hub_session(calls),
    )
    assert calls == []  # checking and building asked nothing
    trainer = checked.trainer()
    assert isinstance(trainer, SFTTrainer) and checked.trainer() is trainer
    assert trainer.compute.instance_type == "ml.p5.48xlarge"
    assert trainer.compute.instance_count == 2
    assert trainer.hyperparameters.to_dict() == {"learning_rate": "0.0002"}
    assert calls == ["DescribeHubContent", "DescribeHubContent", "GetObject"]
    notes = " ".join(safe_estimators.explain(checked).not_checked)
    assert "DescribeHubContent" in notes and "S3 GetObject" in notes


@needs_sdk3
def test_the_cli_verdict_follows_an_edit_of_the_collection(collection, tmp_path, capsys):
    from safe_estimators._cli import main

    path = _spec(tmp_path, compute={"instance_type": "ml.g6e.12xlarge"})
    assert main(["validate", "--recipes", str(collection), str(path)]) == 1
    assert "ml.g6e.12xlarge" in capsys.readouterr().out
    recipe = next(collection.rglob("llmft_llama3_2_1b_instruct_seq4k_gpu_sft_lora.yaml"))
    data = yaml.safe_load(recipe.read_text())
    data["instance_types"].append("ml.g6e.12xlarge")
    recipe.write_text(yaml.safe_dump(data))
    assert main(["validate", "--recipes", str(collection), str(path)]) == 0


@needs_sdk3
def test_a_model_package_arn_is_left_to_the_account(collection, monkeypatch):
    monkeypatch.setenv("AWS_REGION", "eu-west-1")  # open-weight models customize here
    package = "arn:aws:sagemaker:eu-west-1:111122223333:model-package/my-models/3"
    checked = safe_estimators.sft_trainer(
        model=package, compute=_compute("ml.g6.2xlarge"), role=ROLE
    )
    notes = safe_estimators.explain(checked).not_checked
    assert notes[0].startswith("the model package and its base model: DescribeModelPackage")
    assert any("no fine-tuning recipe of the collection names this model" in n for n in notes)
