"""The JSON Schema editors use agrees with the spec files the loader accepts and refuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import instance_catalog
from safe_estimators._distributions.model_parallel import ModelParallel
from safe_estimators._facts.sdk_arguments import BY_ESTIMATOR, MISPLACED, OTHER_ESTIMATORS, RENAMED
from safe_estimators._memory.shape import ModelShape
from safe_estimators._spec import SPEC_FIELDS, JobSpec, TrainingCompiler
from safe_estimators._spec_files.read import read_spec_data
from safe_estimators._spec_files.schema import JOB, spec_schema

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*/job.*"))
SPECS = Path(__file__).parent / "fixtures" / "specs"


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return spec_schema()


@pytest.fixture(scope="module")
def job(schema) -> dict[str, Any]:
    """The schema of an estimator or ModelTrainer job (no target, or one of those two)."""
    return schema["$defs"][JOB]


@pytest.fixture(scope="module")
def validator(schema) -> jsonschema.Draft202012Validator:
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _data(path: Path) -> dict[str, Any]:
    data, problems = read_spec_data(path)
    assert data is not None, problems
    return data


def _errors(validator, data) -> list[str]:
    """Each error as `path: message`, as an editor shows it (the best match of an anyOf)."""
    return [
        f"{'.'.join(map(str, best.absolute_path))}: {best.message}"
        for best in (jsonschema.exceptions.best_match([e]) for e in validator.iter_errors(data))
        if best is not None
    ]


def test_the_schema_is_draft_2020_12(schema, job):
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert job["additionalProperties"] is True  # the SDK drops other keys: validate warns
    assert set(job["required"]) == {"estimator"}
    # entry_point, unless a training recipe or ModelTrainer's source_code names the script
    script = {"anyOf": [{"required": ["entry_point"]}, {"required": ["training_recipe"]},
                        {"required": ["source_code"]}]}  # fmt: skip
    assert script in job["allOf"]
    assert job["properties"]["estimator"]["enum"] == ["huggingface", "pytorch"]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.parent.name)
def test_every_example_validates_against_the_schema(example, validator):
    assert _errors(validator, _data(example)) == []


def test_an_unknown_key_passes_the_schema_and_only_the_loader_tells_a_typo(validator):
    """JSON Schema cannot tell a close misspelling (an error) from any other name (a warning)."""
    data = _data(SPECS / "unknown-key.yaml")
    assert _errors(validator, data) == []
    assert not _loader_accepts(data)  # instance_cout: did you mean instance_count?
    for key in ("model_dir", "env", "datasets_version", "train_instance_count", "x_y_z"):
        variant = {**_data(EXAMPLES[0]), key: 2}
        assert _loader_accepts(variant), key
        assert _errors(validator, variant) == [], key


def test_the_names_the_loader_warns_about_are_marked_deprecated(job):
    properties = job["properties"]
    for name in ("env", "model_dir", "processes_per_host", "train_instance_type", "use_mpi"):
        assert properties[name]["deprecated"] is True, name
    assert "deprecated" not in properties["environment"]


def test_a_string_instance_count_fails_the_schema(validator):
    errors = _errors(validator, _data(SPECS / "wrong-type.yaml"))
    assert errors == ["instance_count: '2' is not of type 'integer', 'null'"]


def test_a_misspelt_model_parallel_option_fails_the_schema(validator):
    data = _data(EXAMPLES[-1])
    data["model_parallel"]["tensor_parallel_degre"] = 2
    assert any("'tensor_parallel_degre' was unexpected" in e for e in _errors(validator, data))


def test_instance_groups_replace_instance_type(validator):
    data = {"estimator": "pytorch", "entry_point": "train.py"}
    groups = [{"instance_group_name": "gpu", "instance_type": "ml.p4d.24xlarge",
               "instance_count": 1}]  # fmt: skip
    assert _errors(validator, data)  # neither
    assert _errors(validator, {**data, "instance_groups": groups}) == []
    assert _errors(validator, {**data, "instance_groups": groups, "instance_type": "ml.c5.xlarge"})


def test_an_instance_type_typo_fails_the_schema_and_local_mode_passes(validator):
    data = _data(EXAMPLES[0])
    assert _errors(validator, {**data, "instance_type": "ml.p3.8xl"})
    assert _errors(validator, {**data, "instance_type": "local_gpu"}) == []


def test_the_schema_accepts_what_the_loader_accepts(validator):
    """Shorthands and nulls the cattrs hooks accept must not be flagged by the editor."""
    data = _data(EXAMPLES[0])
    for variant in (
        {"training_compiler": {"debug": True}},
        {"training_compiler": False},
        {"role": None, "max_run": None, "inputs": "s3://bucket/train/"},
        {"model_parallel": {"partitions": 2, "memory_weight": 1}},
        {"model_parallel": {"hybrid_shard_degree": 16, "sm_activation_offloading": True}},
        {"volume_size": 100, "tags": [{"Key": "team", "Value": "nlp"}]},
        {"model": {"parameters": "7B", "trainable_parameters": 4.2e6, "precision": "bf16"}},
        {"model": {"parameters": 6.7e9, "layers": 32, "optimizer": "sgd", "config": None}},
    ):
        assert _errors(validator, {**data, **variant}) == [], variant


def test_one_estimators_keywords_pass_the_others_spec_as_the_loader_warns(validator):
    data = {**_data(EXAMPLES[0]), "training_recipe": "x"}
    for kind in ("huggingface", "pytorch"):
        data["estimator"] = kind
        assert _errors(validator, data) == []
    data["estimator"] = "huggingface"
    assert _loader_accepts({**data, "transformers_version": "4.28.1", "pytorch_version": "2.0.0",
                            "py_version": "py310"})  # fmt: skip


def test_the_schema_lists_every_spec_field_and_sdk_keyword(job):
    names = set(job["properties"])
    # trainer holds ModelTrainer's words as read from their own keys, never a key itself.
    assert {a.name for a in attrs.fields(JobSpec)} - {"extra", "trainer"} <= names
    assert "trainer" not in names
    assert set().union(*BY_ESTIMATOR.values()) <= names
    assert "extra" not in names


def test_the_schema_lists_every_model_parallel_and_compiler_field(schema):
    model_parallel = schema["$defs"]["ModelParallel"]
    public = {a.name for a in attrs.fields(ModelParallel) if not a.name.startswith("_")}
    assert public <= set(model_parallel["properties"])
    assert model_parallel["additionalProperties"] is False
    assert set(schema["$defs"]["TrainingCompiler"]["properties"]) == {
        a.name for a in attrs.fields(TrainingCompiler)
    }


def test_instance_type_enumerates_the_catalog(job):
    enum = job["properties"]["instance_type"]["enum"]
    assert {t.name for t in instance_catalog.instance_types()} | {"local", "local_gpu"} == set(enum)


def test_a_new_field_appears_without_touching_the_schema_module(monkeypatch):
    """The schema is generated from the classes, not a copy of them."""
    import safe_estimators._spec_files.schema as module

    @attrs.frozen(kw_only=True)
    class Extended(JobSpec):
        spot_fallback_instance_type: str | None = None

    monkeypatch.setattr(module, "JobSpec", Extended)
    monkeypatch.setattr(module, "SPEC_FIELDS", SPEC_FIELDS | {"spot_fallback_instance_type"})
    properties = module.spec_schema()["$defs"][JOB]["properties"]
    assert properties["spot_fallback_instance_type"] == {"type": ["string", "null"]}


# --- model: the schema takes every spelling the loader takes ---------------------------------

_MODEL_BASE = {"estimator": "pytorch", "entry_point": "train.py",
               "instance_type": "ml.p4d.24xlarge"}  # fmt: skip

# Parameter counts as people write them in a YAML file, each accepted by the loader.
ACCEPTED_COUNTS = [
    "6738415616", "6.7e9", "6.7E9", "7e9", "7B", "7b", "6.7B", '"6.7B"', "125M", "1.5T", "350k",
    '"1_000_000"', '" 7 B "', "'13G'", "7.0", "1",
]  # fmt: skip
# And spellings both must refuse.
REFUSED_COUNTS = ["0", "-1", "6.5", "seven", '""', "7X", "-7B", "7 B B", "true", "[7]", "{b: 7}",
                  ".inf", ".nan", "1e", "B7"]  # fmt: skip


def _model_file(tmp_path: Path, model: str) -> dict[str, Any]:
    spec = tmp_path / "job.yaml"
    spec.write_text(
        "estimator: pytorch\nentry_point: train.py\ninstance_type: ml.p4d.24xlarge\n"
        f"model:\n  {model}\n"
    )
    return _data(spec)


def _loader_accepts(data: dict[str, Any]) -> bool:
    from safe_estimators._spec import structure_spec

    spec, problems = structure_spec(data)
    return spec is not None and not [p for p in problems if p.severity == "error"]


@pytest.mark.parametrize("field", ["parameters", "trainable_parameters"])
@pytest.mark.parametrize("written", ACCEPTED_COUNTS)
def test_every_parameter_count_the_loader_accepts_validates(field, written, validator, tmp_path):
    data = _model_file(tmp_path, f"{field}: {written}")
    assert _loader_accepts(data), data
    assert _errors(validator, data) == []


@pytest.mark.parametrize("field", ["parameters", "trainable_parameters"])
@pytest.mark.parametrize("written", REFUSED_COUNTS)
def test_a_parameter_count_both_refuse(field, written, validator, tmp_path):
    data = _model_file(tmp_path, f"{field}: {written}")
    assert not _loader_accepts(data), data
    assert _errors(validator, data), data


@pytest.mark.parametrize(
    "model",
    ["layers: 0", "hidden_size: -4096", "micro_batch_size: 0", "precision: fp8",
     "precision: FP16", "optimizer: lion", 'config: ""'],
)  # fmt: skip
def test_other_model_fields_both_refuse(model, validator, tmp_path):
    data = _model_file(tmp_path, model)
    assert not _loader_accepts(data), data
    assert _errors(validator, data), data


_MODEL_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 10**13), st.floats(allow_nan=True),
    st.sampled_from([6.7e9, 7.0, "7B", "6.7e9", "125m", "1_000", " 2 T ", "0B", "fp16", "bf16",
                     "fp32", "adamw", "adam", "sgd", "config.json", "", "x"]),
    st.from_regex(r"\A\s?[0-9][0-9_]{0,3}(\.[0-9]{1,2})?([eE][+-]?[0-9])?\s?[kKmMbBgGtTx]?\Z"),
    st.text(max_size=6), st.lists(st.integers(), max_size=2),
)  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    model=st.dictionaries(
        st.sampled_from([a.name for a in attrs.fields(ModelShape)]), _MODEL_VALUES, max_size=3
    )
)
def test_whatever_model_the_loader_accepts_the_schema_accepts(model):
    """The other way round only where JSON Schema can say it (not 7.0 for an int, not "0.4")."""
    data = {**_MODEL_BASE, "model": model}
    if _loader_accepts(data):
        assert _MODEL_VALIDATOR.is_valid(data), model


_MODEL_VALIDATOR = jsonschema.Draft202012Validator(spec_schema())


_KNOWN = set().union(*BY_ESTIMATOR.values()) | SPEC_FIELDS
# Names no estimator option has: random ones, near-typos, other estimators' and misplaced ones.
_KEYS = st.one_of(
    st.from_regex(r"\A[a-z_][a-z0-9_]{0,20}\Z"),
    st.sampled_from(sorted(set(MISPLACED).union(*OTHER_ESTIMATORS.values(), RENAMED))),
    st.sampled_from(sorted(_KNOWN)).map(lambda name: name[:-1]),
    st.text(max_size=8),
).filter(lambda name: name not in _KNOWN)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(extra=st.dictionaries(_KEYS, st.integers(1, 3), max_size=3))
def test_whatever_top_level_key_the_loader_accepts_the_schema_accepts(extra):
    """Unknown keys the loader warns about (the SDK drops them) must not fail in the editor."""
    data = {**_MODEL_BASE, **{k: v for k, v in extra.items() if k not in _MODEL_BASE}}
    if _loader_accepts(data):
        assert _MODEL_VALIDATOR.is_valid(data), extra


# --- every target: the schema picks the job's schema by target ----------------------------------

TARGET_SPECS = [
    *EXAMPLES,
    *(p for p in sorted((EXAMPLES[0].parents[1] / "model-trainer").glob("*.yaml"))
      if p.name != "own-words-hyperparameters.yaml"),  # a hyperparameters file, not a spec
    *sorted((Path(__file__).parent / "fixtures" / "targets").glob("*.yaml")),
]  # fmt: skip
SDK3 = pytest.mark.sdk3_only  # the fine-tuning trainers are sagemaker 3's


def _loader_errors(data: dict[str, Any]) -> list[str]:
    """The loader's errors for a spec of any target (paths only)."""
    from safe_estimators._resolve import check_arguments

    return [p.path for p in check_arguments(data)[1] if p.severity == "error"]


@pytest.mark.both_sdks
@pytest.mark.parametrize("spec", TARGET_SPECS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_example_and_fixture_of_every_target_validates_against_the_schema(spec, validator):
    data = _data(spec)
    assert _errors(validator, data) == []


@pytest.mark.both_sdks
def test_the_target_picks_the_schema(schema, validator):
    targets = {"remote_function", "fine_tuning"}
    assert set(schema["properties"]["target"]["enum"]) == {"estimator", "model_trainer",
                                                           *targets, None}  # fmt: skip
    # A fine-tuning spec's model is a name, not the estimator's model shape, and it has no
    # estimator or entry point: valid as a fine-tuning job only.
    fine_tuning = _data(Path(__file__).parent / "fixtures" / "targets" / "fine-tuning-sft.yaml")
    assert _errors(validator, {**fine_tuning, "target": "model_trainer"})
    remote = _data(Path(__file__).parent / "fixtures" / "targets" / "remote-torchrun.yaml")
    assert _errors(validator, {**remote, "target": "fine_tuning"})


REMOTE = {"target": "remote_function", "instance_type": "ml.p4d.24xlarge",
          "image_uri": "111122223333.dkr.ecr.us-west-2.amazonaws.com/mine:py311"}  # fmt: skip


@pytest.mark.both_sdks
@pytest.mark.parametrize(
    ("change", "refused"),
    [
        ({}, False),
        ({"use_torchrun": True, "nproc_per_node": 8}, False),
        ({"not_an_option": None}, False),  # null is "not given", for the loader too
        ({"instance_typ": "ml.p4d.24xlarge"}, True),  # the decorator takes no other keyword
        ({"instance_count": 0}, True),
        ({"keep_alive_period_in_seconds": -1}, True),
        ({"instance_type": "ml.p4d.24xl"}, True),
        ({"instance_type": None}, True),
    ],
)
def test_a_remote_spec_is_refused_by_the_schema_where_the_loader_refuses_it(
    validator, change, refused
):
    data = {**REMOTE, **change}
    assert bool(_errors(validator, data)) is refused, _errors(validator, data)
    assert bool(_loader_errors(data)) is refused, _loader_errors(data)


FINE_TUNING = {"target": "fine_tuning", "trainer": "SFT", "model": "meta-llama/Llama-3.2-1B",
               "compute": {"instance_type": "ml.p5.48xlarge"}}  # fmt: skip


@pytest.mark.both_sdks
@SDK3
@pytest.mark.parametrize(
    ("change", "refused"),
    [
        ({}, False),
        ({"trainer": "sfttrainer", "training_type": "FULL", "sequence_length": "8K"}, False),
        ({"compute": None, "model_package_group": "mine"}, False),  # serverless
        ({"compute": {"cluster_name": "c", "instance_type": "ml.p5.48xlarge"}}, False),
        ({"recipe": "s3://bucket/r.yaml", "overrides": {"a": {"b": 1}}}, False),
        ({"not_an_option": None}, False),
        ({"trainer": "RLAIF", "compute": None, "model_package_group": "g"}, False),
        ({"trainer": "XYZ"}, True),
        ({"trainer": "RLAIF"}, True),  # RLAIFTrainer takes no compute
        ({"trainer": "CPT", "training_type": "LORA"}, True),  # nor CPTTrainer a training_type
        ({"training_type": "QLORA"}, True),
        ({"sequence_length": "4096"}, True),
        ({"recipe": "https://example.com/r.yaml"}, True),
        ({"compute": {"cluster_name": "c", "instance_count": 2}}, True),
        ({"compute": {"instance_typ": "ml.p5.48xlarge"}}, True),
        ({"compute": {"instance_type": "ml.p5.48xlarge", "instance_count": 0}}, True),
        ({"model": ""}, True),
        ({"not_an_option": 1}, True),
        ({"accept_exposure": "environment.X"}, True),
    ],
)
def test_a_fine_tuning_spec_is_refused_by_the_schema_where_the_loader_refuses_it(
    validator, change, refused, monkeypatch
):
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    data = {**FINE_TUNING, **change}
    assert bool(_errors(validator, data)) is refused, _errors(validator, data)
    assert bool(_loader_errors(data)) is refused, _loader_errors(data)
