"""The instance catalog: every training type, checked against sources that do not share its code.

The independent sources are read at test time: botocore's SageMaker model (which types exist),
moto's snapshot of EC2 DescribeInstanceTypes answers, the SageMaker SDK's own GPU table, and the
counts written down in shared/reference/sagemaker-facts.md for the types moto lacks.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import botocore.loaders
import pytest
from hypothesis import given
from hypothesis import strategies as st

import instance_catalog
from instance_catalog import InstanceType, UnknownInstanceType
from safe_estimators._facts.sdk_files import sdk_file


def _package_dir(package: str) -> Path:
    # find_spec locates a top-level package without importing it (sagemaker is slow to import).
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.submodule_search_locations, f"{package} is not installed"
    return Path(next(iter(spec.submodule_search_locations)))


TRAINING_TYPES: list[str] = botocore.loaders.Loader().load_service_model("sagemaker", "service-2")[
    "shapes"
]["TrainingInstanceType"]["enum"]
MOTO_EC2: dict[str, dict[str, Any]] = json.loads(
    gzip.decompress((_package_dir("moto") / "ec2/resources/instance_types.json.gz").read_bytes())
)
SDK_GPU_INFO: dict[str, dict[str, dict[str, int]]] = json.loads(
    # sagemaker 2 keeps it at the top of the package, 3 under sagemaker/core/.
    sdk_file("image_uri_config/instance_gpu_info.json").read_text()
)
CATALOG = {entry.name: entry for entry in instance_catalog.instance_types()}


# --- the issue's "Done when" ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "gpus"),
    [
        ("ml.p3.8xlarge", 4),
        ("ml.g5.48xlarge", 8),
        ("ml.p4d.24xlarge", 8),
        ("ml.trn1.32xlarge", 0),
        ("ml.m5.xlarge", 0),
    ],
)
def test_gpu_count_of_the_types_the_issue_names(name: str, gpus: int) -> None:
    assert instance_catalog.gpu_count(name) == gpus


def test_trainium_devices_are_accelerators_not_gpus() -> None:
    trn1 = instance_catalog.get("ml.trn1.32xlarge")
    assert (trn1.gpu_count, trn1.accelerator_count, trn1.accelerator_kind) == (0, 16, "neuron")


# --- coverage ------------------------------------------------------------------------------------


def test_every_training_type_in_the_installed_botocore_has_an_entry() -> None:
    missing = sorted(set(TRAINING_TYPES) - set(CATALOG))
    extra = sorted(set(CATALOG) - set(TRAINING_TYPES))
    assert not missing, f"run `python -m instance_catalog.refresh` to add {missing}"
    assert not extra, f"not training types in this botocore: {extra}"


def test_instance_types_lists_every_entry_sorted_by_name() -> None:
    entries = instance_catalog.instance_types()
    assert [entry.name for entry in entries] == sorted(TRAINING_TYPES)
    assert all(isinstance(entry, InstanceType) for entry in entries)


@pytest.mark.parametrize("entry", instance_catalog.instance_types(), ids=lambda entry: entry.name)
def test_entry_is_self_consistent(entry: InstanceType) -> None:
    assert entry.gpu_count == (entry.accelerator_count if entry.accelerator_kind == "gpu" else 0)
    if entry.accelerator_kind is None:
        assert entry.accelerator_count == 0
        assert entry.accelerator_name is entry.accelerator_memory_mib is None
    else:
        assert entry.accelerator_count > 0 and entry.accelerator_name
    assert entry.vcpus > 0 and entry.memory_mib > 0
    assert entry.source == "ec2-describe-instance-types" or entry.source.startswith("supplement:")
    assert entry.name == f"ml.{entry.family}.{entry.size}"


@pytest.mark.parametrize(
    ("name", "family", "size"),
    [
        ("ml.p3.8xlarge", "p3", "8xlarge"),
        ("ml.p3dn.24xlarge", "p3dn", "24xlarge"),
        ("ml.g4dn.12xlarge", "g4dn", "12xlarge"),
        ("ml.p6-b200.48xlarge", "p6-b200", "48xlarge"),
        ("ml.m7i-flex.large", "m7i-flex", "large"),
    ],
)
def test_family_and_size_split_the_name(name: str, family: str, size: str) -> None:
    entry = instance_catalog.get(name)
    assert (entry.family, entry.size) == (family, size)


# --- cross-source: sagemaker-facts.md, for the types moto lacks and a few it has ------------------

# name, gpu_count, accelerator kind, accelerator name, devices, per-device MiB (None: not stated)
FACTS = [
    ("ml.p2.xlarge", 1, "gpu", "K80", 1, 12 * 1024),
    ("ml.p2.8xlarge", 8, "gpu", "K80", 8, None),
    ("ml.p2.16xlarge", 16, "gpu", "K80", 16, None),
    ("ml.p3.2xlarge", 1, "gpu", "V100", 1, 16 * 1024),
    ("ml.p3.8xlarge", 4, "gpu", "V100", 4, None),
    ("ml.p3.16xlarge", 8, "gpu", "V100", 8, None),
    ("ml.p3dn.24xlarge", 8, "gpu", "V100", 8, 32 * 1024),
    ("ml.p6e-gb200.36xlarge", 4, "gpu", "B200", 4, None),
    ("ml.trn1.32xlarge", 0, "neuron", "Trainium", 16, None),
    ("ml.trn2.48xlarge", 0, "neuron", "Trainium2", 16, None),
]


@pytest.mark.parametrize(("name", "gpus", "kind", "model", "devices", "mib"), FACTS)
def test_agrees_with_sagemaker_facts(
    name: str, gpus: int, kind: str, model: str, devices: int, mib: int | None
) -> None:
    entry = instance_catalog.get(name)
    assert (entry.gpu_count, entry.accelerator_kind) == (gpus, kind)
    assert (entry.accelerator_name, entry.accelerator_count) == (model, devices)
    if mib is not None:
        assert entry.accelerator_memory_mib == mib


# --- cross-source: moto's snapshot of DescribeInstanceTypes -------------------------------------


def _moto_facts(info: dict[str, Any]) -> dict[str, Any]:
    gpus = sum(gpu["Count"] for gpu in info.get("GpuInfo", {}).get("Gpus", []))
    neuron = sum(dev["Count"] for dev in info.get("NeuronInfo", {}).get("NeuronDevices", []))
    return {
        "gpu_count": gpus,
        "accelerator_count": gpus + neuron,
        "vcpus": info["VCpuInfo"]["DefaultVCpus"],
        "memory_mib": info["MemoryInfo"]["SizeInMiB"],
        "efa_supported": info["NetworkInfo"]["EfaSupported"],
    }


IN_MOTO = sorted(name for name in CATALOG if name.removeprefix("ml.") in MOTO_EC2)


@pytest.mark.parametrize("name", IN_MOTO)
def test_agrees_with_moto(name: str) -> None:
    entry = CATALOG[name]
    expected = _moto_facts(MOTO_EC2[name.removeprefix("ml.")])
    assert {key: getattr(entry, key) for key in expected} == expected


def test_only_the_types_moto_lacks_come_from_the_supplement() -> None:
    not_in_moto = sorted(set(CATALOG) - set(IN_MOTO))
    supplemented = sorted(n for n, e in CATALOG.items() if e.source.startswith("supplement:"))
    assert not_in_moto == supplemented
    # sagemaker-facts.md: moto lacks p2.*, p3.2xlarge/8xlarge/16xlarge and p6e-gb200.36xlarge.
    assert not_in_moto == sorted(
        f"ml.{t}"
        for t in (
            "p2.xlarge",
            "p2.8xlarge",
            "p2.16xlarge",
            "p3.2xlarge",
            "p3.8xlarge",
            "p3.16xlarge",
            "p6e-gb200.36xlarge",
        )
    )


# --- cross-source: the SageMaker SDK's own GPU table --------------------------------------------


def test_gpu_counts_agree_with_the_sdk_table_for_every_type_both_have() -> None:
    compared = 0
    for region, table in SDK_GPU_INFO.items():
        for name, info in table.items():
            if name in CATALOG:
                assert CATALOG[name].gpu_count == info["Count"], (region, name)
                compared += 1
    assert compared > 0


def test_sdk_table_lists_a_type_that_does_not_exist_and_lacks_g5_xlarge() -> None:
    """The SDK's table is wrong in two known ways; the catalog is not (see issue 2)."""
    sdk_types = {name for table in SDK_GPU_INFO.values() for name in table}
    assert "ml.g5n.xlarge" in sdk_types  # flagged: no such type
    assert "ml.g5n.xlarge" not in TRAINING_TYPES
    with pytest.raises(UnknownInstanceType):
        instance_catalog.get("ml.g5n.xlarge")
    assert "ml.g5.xlarge" not in sdk_types  # flagged: a real type the SDK misses
    g5 = instance_catalog.get("ml.g5.xlarge")
    assert (g5.gpu_count, g5.accelerator_name) == (1, "A10G")


# --- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [None, 42, 4.0, b"ml.p3.8xlarge", ["ml.p3.8xlarge"]])
@pytest.mark.parametrize("lookup", [instance_catalog.get, instance_catalog.gpu_count])
def test_a_non_string_is_a_type_error_that_says_what_was_given(lookup: Any, value: Any) -> None:
    with pytest.raises(TypeError, match=r"must be a string such as 'ml\.p3\.8xlarge'") as caught:
        lookup(value)
    assert type(value).__name__ in str(caught.value)


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [
        ("ml.p3.8xl", "ml.p3.8xlarge"),
        ("p3.8xlarge", "ml.p3.8xlarge"),
        (" ml.p3.8xlarge", "ml.p3.8xlarge"),
        ("ml.p3.8xlarge ", "ml.p3.8xlarge"),
        ("ML.P3.8XLARGE", "ml.p3.8xlarge"),
        ("ml.g5.48xl", "ml.g5.48xlarge"),
        ("ml.trn1.32xlage", "ml.trn1.32xlarge"),
    ],
)
def test_a_near_miss_names_the_real_type(name: str, suggestion: str) -> None:
    with pytest.raises(UnknownInstanceType) as caught:
        instance_catalog.get(name)
    assert isinstance(caught.value, LookupError)
    assert caught.value.name == name
    assert caught.value.suggestions[0] == suggestion
    assert f"did you mean {suggestion!r}" in str(caught.value)


@pytest.mark.parametrize("name", ["", "   ", "gpu", "ml.", "ml.g5n.xlarge"])
def test_an_unknown_string_is_a_lookup_error_with_a_way_forward(name: str) -> None:
    with pytest.raises(UnknownInstanceType) as caught:
        instance_catalog.gpu_count(name)
    message = str(caught.value)
    assert repr(name) in message
    assert "did you mean" in message or "instance_catalog.instance_types()" in message


def test_the_error_survives_pickling() -> None:
    with pytest.raises(UnknownInstanceType) as caught:
        instance_catalog.get("p3.8xlarge")
    copy = pickle.loads(pickle.dumps(caught.value))
    assert (copy.name, copy.suggestions, str(copy)) == (
        "p3.8xlarge",
        ["ml.p3.8xlarge"],
        str(caught.value),
    )


def _near_names() -> st.SearchStrategy[str]:
    """Real type names, and each with a character dropped, doubled or changed: the draws land on
    both sides of the lookup, not only on random text that names no type."""
    names = st.sampled_from(sorted(CATALOG))

    @st.composite
    def edited(draw: st.DrawFn) -> str:
        name = draw(names)
        i = draw(st.integers(0, len(name) - 1))
        dropped, doubled = name[:i] + name[i + 1 :], name[:i] + name[i] + name[i:]
        return draw(st.sampled_from([dropped, doubled, name[:i] + "x" + name[i + 1 :]]))

    return st.one_of(names, edited(), st.text())


@given(_near_names())
def test_any_string_is_an_entry_or_an_unknown_type(name: str) -> None:
    try:
        entry = instance_catalog.get(name)
    except UnknownInstanceType as exc:
        assert name not in CATALOG
        assert exc.name == name
        assert all(suggestion in CATALOG for suggestion in exc.suggestions)
    else:
        assert name in CATALOG
        assert entry.name == name


@given(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(),
        st.binary(),
        st.lists(st.text(), max_size=2),
        st.dictionaries(st.text(), st.text(), max_size=2),
    )
)
def test_any_non_string_is_a_type_error(value: object) -> None:
    with pytest.raises(TypeError):
        instance_catalog.get(value)  # type: ignore[arg-type]


# --- cheap import --------------------------------------------------------------------------------


def test_import_and_lookup_load_no_aws_or_sagemaker_module() -> None:
    code = (
        "import sys, instance_catalog\n"
        "heavy = ('boto3', 'botocore', 'sagemaker')\n"
        "print([m for m in heavy if m in sys.modules])\n"
        "instance_catalog.get('ml.p3.8xlarge')\n"
        "print([m for m in heavy if m in sys.modules])\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.split("\n")[:2] == ["[]", "[]"]


# --- NeuronCores (EC2 NeuronInfo) and precision per accelerator ----------------------------------


@pytest.mark.parametrize(
    ("name", "cores"),
    [
        ("ml.trn1.2xlarge", 2),
        ("ml.trn1.32xlarge", 32),
        ("ml.trn1n.32xlarge", 32),
        # NeuronInfo says 16 chips x 8 physical cores; the runtime pairs them by default (LNC 2),
        # which is AWS's "64 NeuronCores" and the number of training processes.
        ("ml.trn2.48xlarge", 64),
        ("ml.p4d.24xlarge", None),
        ("ml.m5.xlarge", None),
    ],
)
def test_neuron_cores_per_instance(name: str, cores: int | None) -> None:
    assert instance_catalog.get(name).neuron_cores == cores


@pytest.mark.parametrize("name", IN_MOTO)
def test_neuron_cores_come_from_moto_neuron_info(name: str) -> None:
    devices = MOTO_EC2[name.removeprefix("ml.")].get("NeuronInfo", {}).get("NeuronDevices", [])
    physical = sum(device["Count"] * device["CoreInfo"]["Count"] for device in devices)
    cores = CATALOG[name].neuron_cores
    if not physical:
        assert cores is None
    else:
        assert cores is not None and physical % cores == 0 and physical // cores in (1, 2)


def test_trainium_is_described_in_neuron_cores_not_gpus() -> None:
    assert instance_catalog.get("ml.trn1.32xlarge").describe_accelerators() == (
        "32 NeuronCores (16 Trainium)"
    )
    assert instance_catalog.get("ml.p3.16xlarge").describe_accelerators() == "8 V100 GPUs"
    assert instance_catalog.get("ml.c5.xlarge").describe_accelerators() == "no GPUs"


def test_every_accelerator_in_the_catalog_has_its_precision_facts() -> None:
    names = {entry.accelerator_name for entry in CATALOG.values() if entry.accelerator_name}
    assert names <= set(instance_catalog.accelerators())
    for entry in CATALOG.values():
        if entry.accelerator_name:
            assert entry.accelerator is not None and entry.accelerator.source


@pytest.mark.parametrize(
    ("name", "bf16", "fp8"),
    [
        ("ml.p3.16xlarge", False, False),  # V100, Volta
        ("ml.g4dn.12xlarge", False, False),  # T4, Turing
        ("ml.p2.xlarge", False, False),  # K80
        ("ml.g5.48xlarge", True, False),  # A10G, Ampere
        ("ml.p4d.24xlarge", True, False),  # A100, Ampere
        ("ml.g6e.48xlarge", True, True),  # L40S, Ada Lovelace (compute capability 8.9)
        ("ml.p5.48xlarge", True, True),  # H100, Hopper
        ("ml.p6-b200.48xlarge", True, True),
        ("ml.trn1.32xlarge", True, True),  # Trainium: BF16 and cFP8
    ],
)
def test_precision_support_by_accelerator(name: str, bf16: bool, fp8: bool) -> None:
    accelerator = instance_catalog.get(name).accelerator
    assert accelerator is not None
    assert (accelerator.bf16, accelerator.fp8) == (bf16, fp8)


def test_nvidia_precision_follows_compute_capability() -> None:
    for accelerator in instance_catalog.accelerators().values():
        if accelerator.vendor != "nvidia":
            continue
        assert accelerator.compute_capability is not None
        capability = tuple(int(part) for part in accelerator.compute_capability.split("."))
        assert accelerator.bf16 == (capability >= (8, 0)), accelerator.name
        assert accelerator.fp8 == (capability >= (8, 9)), accelerator.name


def test_a_looked_up_type_is_the_catalogs_own_entry():
    # Entries are built on first lookup; the listing and the lookup still share one object.
    import instance_catalog

    entry = instance_catalog.get("ml.p4d.24xlarge")
    (listed,) = [t for t in instance_catalog.instance_types() if t.name == "ml.p4d.24xlarge"]
    assert listed is entry and instance_catalog.get("ml.p4d.24xlarge") is entry
