"""The copier project template: rendered with non-default answers, then validated and planned.

The template lives in examples/template (a plain folder inside this repository: copier treats
only a repository's root as a git template, so it renders the working tree as it is).
"""

from __future__ import annotations

import importlib.util
import json
import logging
from pathlib import Path

import boto3
import copier
import pytest
import yaml
from conftest import SDK3
from moto import mock_aws

import instance_catalog
import safe_estimators
from safe_estimators._cli import main
from safe_estimators._facts.limits import training_instance_types
from safe_estimators._facts.tables import COMPILER_FAMILIES

TEMPLATE = Path(__file__).parent.parent / "examples" / "template"
REGION = "us-west-2"
BUCKET = "template-pipeline-bucket"
ROLE = "arn:aws:iam::111122223333:role/SageMakerRole"

# The SDK says so on every fit() with a PipelineSession.
pytestmark = pytest.mark.filterwarnings("ignore:Running within a PipelineSession:UserWarning")

# Every answer differs from the template's default.
ANSWERS = {
    "project_name": "review-sentiment",
    "estimator": "pytorch",
    "training_compiler": True,
    "instance_type": "ml.g5.12xlarge",
    "instance_count": 2,
}


def render(destination: Path, **answers: object) -> Path:
    copier.run_copy(
        str(TEMPLATE), destination, data=answers, defaults=True, quiet=True, vcs_ref=None
    )
    return destination


@pytest.fixture(autouse=True)
def _restore_logging():
    # The CLI silences logging process-wide (logging.disable); give it back after each test.
    yield
    logging.disable(logging.NOTSET)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return render(tmp_path_factory.mktemp("generated") / "review-sentiment", **ANSWERS)


def run_cli(capsys, *argv: object) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out + err


def test_template_questions_have_defaults_that_differ_from_the_answers():
    questions = yaml.safe_load((TEMPLATE / "copier.yml").read_text())
    for name, answer in ANSWERS.items():
        assert questions[name]["default"] != answer, name


def _derive():
    spec = importlib.util.spec_from_file_location("derive_choices", TEMPLATE / "derive_choices.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_derived_choices_are_current():
    # The instance types and versions come from the catalog and the SDK's image tables.
    assert _derive().main(["--check"]) == 0, "run python examples/template/derive_choices.py"


def test_the_choices_are_todays_gpu_types_grouped_by_gpu_count():
    questions = yaml.safe_load((TEMPLATE / "copier.yml").read_text())
    offered = set(questions["instance_type"]["choices"].values())
    trainable = set(training_instance_types())
    gpu_types = {t.name for t in instance_catalog.instance_types() if t.gpu_count}
    kepler = {n for n in gpu_types if instance_catalog.get(n).accelerator_name == "K80"}
    assert kepler and not kepler & offered  # no K80: today's containers do not run on it
    # no Arm hosts (ml.p6e-gb200): the SDK's training images are x86_64 only
    arm = {n for n in gpu_types if instance_catalog.get(n).cpu_architecture != "x86_64"}
    assert arm and not arm & offered
    assert offered == (gpu_types & trainable) - kepler - arm
    assert {"ml.g6e.12xlarge", "ml.p5.48xlarge", "ml.g6.xlarge"} <= offered
    groups = questions["same_gpu_count"]["default"]
    assert offered == {name for group in groups for name in group}
    for group in groups:
        assert len({instance_catalog.gpu_count(name) for name in group}) == 1, group
    compiler = set(questions["compiler_types"]["default"])
    assert compiler == {n for n in offered if instance_catalog.get(n).family in COMPILER_FAMILIES}


def test_generated_project_has_its_files_and_answers(project):
    for name in ("job.yaml", "pipeline.py", "README.md", "src/train.py", "src/requirements.txt"):
        assert (project / name).is_file(), name
    recorded = yaml.safe_load((project / ".copier-answers.yml").read_text())
    assert {k: recorded[k] for k in ANSWERS} == ANSWERS
    spec = yaml.safe_load((project / "job.yaml").read_text())
    assert spec["estimator"] == "pytorch"
    assert spec["instance_type"] == "ml.g5.12xlarge"
    assert spec["instance_count"] == 2
    assert spec["training_compiler"] is True
    assert spec["framework_version"] == "1.13.1"
    assert "transformers==" in (project / "src" / "requirements.txt").read_text()
    assert "safe-estimators plan job.yaml" in (project / "README.md").read_text()


# The answers' project (like every project with training_compiler) is an estimator job: on
# sagemaker 3 it is refused naming the estimator target. The template has no target question:
# its plain projects (every other kind below) build as ModelTrainer jobs there.
@pytest.mark.sdk2_only
def test_generated_spec_validates_and_its_script_passes_the_checks(project, capsys):
    code, out = run_cli(capsys, "validate", project / "job.yaml")
    assert code == 0, out
    assert out.strip().endswith("job.yaml: valid"), out
    code, out = run_cli(capsys, "lint", project / "job.yaml")
    assert code == 0, out
    assert "no findings" in out, out


@pytest.mark.sdk2_only  # the answers' Training Compiler project, as above
def test_generated_spec_plans_with_the_injected_values(project, capsys):
    code, out = run_cli(capsys, "plan", "--json", project / "job.yaml")
    assert code == 0, out
    plan = json.loads(out)
    injected = {i["path"]: i["value"] for i in plan["injected"]}
    assert injected["environment.GPU_NUM_DEVICES"] == "4"
    assert injected["distribution.pytorchxla"] == {"enabled": True}
    assert injected["encrypt_inter_container_traffic"] is True
    request = plan["request"]
    assert request["Environment"] == {"GPU_NUM_DEVICES": "4"}
    assert request["HyperParameters"]["sagemaker_pytorch_xla_multi_worker_enabled"] == "true"
    assert request["ResourceConfig"]["InstanceType"] == "ml.g5.12xlarge"
    assert request["ResourceConfig"]["InstanceCount"] == 2
    assert "pytorch-trcomp-training:1.13.1" in request["AlgorithmSpecification"]["TrainingImage"]
    assert request["InputDataConfig"][0]["ChannelName"] == "train"


def pipeline_definition(project: Path) -> dict:
    """The generated pipeline.py's definition, made offline (the code upload goes to moto)."""
    from sagemaker.workflow.pipeline_context import PipelineSession

    module_spec = importlib.util.spec_from_file_location(
        f"{project.name}_pipeline", project / "pipeline.py"
    )
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    with mock_aws():
        boto_session = boto3.Session(region_name=REGION)
        boto_session.client("s3").create_bucket(
            Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION}
        )
        session = PipelineSession(boto_session=boto_session, default_bucket=BUCKET)
        return json.loads(module.get_pipeline(session, ROLE).definition())


@pytest.mark.sdk2_only  # pipeline.py: an estimator TrainingStep (sagemaker 2's sagemaker.workflow)
def test_generated_pipeline_defines_offline(project):
    document = pipeline_definition(project)
    parameters = {p["Name"]: p for p in document["Parameters"]}
    choices = parameters["TrainingInstanceType"]["EnumValues"]
    assert parameters["TrainingInstanceType"]["DefaultValue"] == "ml.g5.12xlarge"
    assert {instance_catalog.gpu_count(name) for name in choices} == {4}
    (step,) = document["Steps"]
    arguments = step["Arguments"]
    assert arguments["Environment"]["GPU_NUM_DEVICES"] == "4"
    assert arguments["HyperParameters"]["sagemaker_pytorch_xla_multi_worker_enabled"] == "true"
    assert arguments["ResourceConfig"]["InstanceType"] == {"Get": "Parameters.TrainingInstanceType"}
    channel = arguments["InputDataConfig"][0]["DataSource"]["S3DataSource"]["S3Uri"]
    assert channel == {"Get": "Parameters.TrainData"}


@pytest.mark.parametrize(
    "answers",
    [
        pytest.param({}, id="defaults"),
        pytest.param(
            {"training_compiler": True, "instance_type": "ml.p4d.24xlarge", "instance_count": 2},
            id="huggingface-compiler-multi-node",
            marks=pytest.mark.sdk2_only,  # Training Compiler: the estimator's
        ),
        pytest.param(
            {"estimator": "pytorch", "training_compiler": True},
            id="pytorch-compiler-single-gpu",
            marks=pytest.mark.sdk2_only,
        ),
        pytest.param(
            {"estimator": "pytorch", "instance_type": "ml.g5.48xlarge"}, id="pytorch-8-gpus"
        ),
        pytest.param({"instance_type": "ml.g6e.12xlarge"}, id="huggingface-g6e"),
        pytest.param(
            {"sharding": "fsdp", "instance_type": "ml.p5.48xlarge", "instance_count": 2},
            id="huggingface-fsdp-two-p5",
        ),
        pytest.param(
            {"sharding": "qlora", "instance_type": "ml.g6e.12xlarge", "instance_count": 2},
            id="huggingface-qlora-two-g6e",
        ),
        pytest.param(
            {"estimator": "pytorch", "sharding": "qlora", "instance_type": "ml.g4dn.xlarge"},
            id="pytorch-qlora-t4",
        ),
        pytest.param(
            {"estimator": "pytorch", "instance_type": "ml.p5.48xlarge", "instance_count": 2},
            id="pytorch-p5-two-nodes",
        ),
    ],
)
def test_every_kind_of_project_validates_without_findings(tmp_path, answers):
    # No SageMaker objects are built here: validation and the script checks are fast.
    from safe_estimators._commands.validate import lint_target, validate_file

    project = render(tmp_path / "project", **answers)
    assert validate_file(project / "job.yaml") == []
    assert lint_target(project / "job.yaml") == ([], [])  # no spec problems, no findings
    spec = safe_estimators.load_spec(project / "job.yaml")
    assert spec.estimator == answers.get("estimator", "huggingface")
    assert (spec.training_compiler is not None) == answers.get("training_compiler", False)
    fsdp = answers.get("sharding") == "fsdp"
    assert (spec.hyperparameters.get("fsdp") == "full_shard auto_wrap") is fsdp
    qlora = answers.get("sharding") == "qlora"
    assert (spec.hyperparameters.get("qlora") is True) is qlora
    requirements = project / "src" / "requirements.txt"
    assert ("peft" in (requirements.read_text() if requirements.exists() else "")) is qlora


def _offered() -> list[str]:
    questions = yaml.safe_load((TEMPLATE / "copier.yml").read_text())
    return list(questions["instance_type"]["choices"].values())


@pytest.mark.parametrize("instance_type", _offered())
def test_any_offered_gpu_type_renders_a_project_that_validates_and_lints_clean(
    tmp_path, instance_type
):
    from safe_estimators._commands.validate import lint_target, validate_file

    # Alternate the estimators so both meet every GPU count.
    estimator = ("huggingface", "pytorch")[_offered().index(instance_type) % 2]
    project = render(tmp_path / "project", estimator=estimator, instance_type=instance_type)
    assert validate_file(project / "job.yaml") == []
    assert lint_target(project / "job.yaml") == ([], [])  # no spec problems, no findings


def test_copier_copy_with_a_g6e_type_on_the_command_line_plans_offline(tmp_path, capsys):
    # copier copy --defaults -d instance_type=ml.g6e.12xlarge failed with a traceback before.
    import subprocess
    import sys

    copier_cli = Path(sys.executable).with_name("copier")
    destination = tmp_path / "g6e"
    subprocess.run(
        [str(copier_cli), "copy", "--defaults", "--vcs-ref", "HEAD", "-d",
         "instance_type=ml.g6e.12xlarge", str(TEMPLATE), str(destination)],
        check=True, capture_output=True,
    )  # fmt: skip
    code, out = run_cli(capsys, "plan", "--json", destination / "job.yaml")
    assert code == 0, out
    request = json.loads(out)["request"]
    assert request["ResourceConfig"]["InstanceType"] == "ml.g6e.12xlarge"
    if SDK3:  # a ModelTrainer: torchrun is started by its driver, one process per GPU
        assert "sm_drivers" in [c["ChannelName"] for c in request["InputDataConfig"]]
    else:
        assert request["HyperParameters"]["sagemaker_torch_distributed_enabled"] == "true"


@pytest.mark.sdk2_only  # pipeline.py, as above
def test_a_plain_projects_pipeline_takes_count_and_hyperparameters_as_parameters(tmp_path):
    project = render(tmp_path / "plain", instance_type="ml.g6e.12xlarge", instance_count=2)
    document = pipeline_definition(project)
    parameters = {p["Name"]: p for p in document["Parameters"]}
    assert parameters["TrainingInstanceCount"] == {
        "Name": "TrainingInstanceCount", "Type": "Integer", "DefaultValue": 2
    }  # fmt: skip
    assert parameters["Epochs"]["Type"] == "Integer"
    assert parameters["LearningRate"]["Type"] == "Float"
    assert parameters["ModelNameOrPath"]["DefaultValue"] == "distilbert-base-uncased"
    (step,) = document["Steps"]
    arguments = step["Arguments"]
    assert arguments["ResourceConfig"]["InstanceCount"] == {
        "Get": "Parameters.TrainingInstanceCount"
    }
    assert arguments["EnableInterContainerTrafficEncryption"] is True
    assert arguments["HyperParameters"]["sagemaker_torch_distributed_enabled"] == "true"
    assert "Parameters.Epochs" in json.dumps(arguments["HyperParameters"]["epochs"])
