"""Regenerate the catalog data file from EC2 ``DescribeInstanceTypes``.

Usage::

    python -m instance_catalog.refresh [--region R] [--output PATH] [--date YYYY-MM-DD]
                                       [--ec2-source TEXT]

The types are the values of the ``TrainingInstanceType`` enum in the installed botocore's
SageMaker model; ``ml.X`` is EC2 type ``X``. EC2 is called through boto3, so ``AWS_ENDPOINT_URL``
points the command at moto or another emulator. The file is rewritten deterministically: sorted,
one line per type, with a header naming the botocore version, region and date.

Types the API does not return take their row from ``data/supplement.json``, else keep their
previous entry (and its source); the report lists them. Types found nowhere are reported as
missing and the command exits with status 1.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import boto3
import botocore
import botocore.loaders
from botocore.exceptions import ClientError

from instance_catalog._model import InstanceType

EC2_SOURCE = "ec2-describe-instance-types"
SUPPLEMENT_PREFIX = "supplement:"
DEFAULT_REGION = "us-east-1"  # a fixed default keeps regenerations comparable
DATA_DIR = Path(__file__).parent / "data"
DEFAULT_OUTPUT = DATA_DIR / "instances.json"
DEFAULT_SUPPLEMENT = DATA_DIR / "supplement.json"
COMMAND = "python -m instance_catalog.refresh"

_MAX_TYPES_PER_CALL = 100  # DescribeInstanceTypes rejects more InstanceTypes in one request

# NeuronInfo reports physical NeuronCores (CoreInfo.Count per device, CoreInfo.Version). The Neuron
# runtime's default logical NeuronCore configuration (LNC) groups that many physical cores into
# the one core a training process drives: 1 for NeuronCore-v2 (Trainium), 2 for NeuronCore-v3
# (Trainium2: 8 physical cores per chip, 4 logical), so ml.trn2.48xlarge runs 64 processes, not
# 128. Source: AWS Neuron docs, "Logical NeuronCore configuration" and "Developer Guide for
# Training with PyTorch NeuronX" (Trn2: 8 NeuronCores per chip, 4 logical by default). A core
# version missing here leaves neuron_cores unknown (None) rather than guessed.
_DEFAULT_LOGICAL_CORE_GROUPING: dict[int, int] = {1: 1, 2: 1, 3: 2}


@attrs.frozen
class RefreshReport:
    """What a refresh wrote and where each type's facts came from."""

    output: Path
    header: dict[str, Any]
    from_api: tuple[str, ...]
    from_supplement: dict[str, str]  # name -> source, for types the API did not return
    kept_previous: dict[str, str]  # name -> source, ditto, with no supplement row either
    missing: tuple[str, ...]  # in the enum but in none of the above: not written
    removed: tuple[str, ...]  # in the previous file but no longer in the enum

    def format(self) -> str:
        """Render the report the command prints."""
        written = len(self.from_api) + len(self.from_supplement) + len(self.kept_previous)
        lines = [
            f"Wrote {self.output}: {written} training instance types "
            f"(botocore {self.header['botocore_version']}, region {self.header['region']}).",
            f"  {len(self.from_api)} from EC2 DescribeInstanceTypes.",
        ]
        sections = (
            ("Not returned by the API, taken from the supplement", self.from_supplement),
            ("Not returned by the API, previous entry kept", self.kept_previous),
        )
        for title, sources in sections:
            if sources:
                lines.append(f"  {title} ({len(sources)}):")
                lines += [f"    {name}  [{source}]" for name, source in sorted(sources.items())]
        if self.missing:
            lines.append(
                f"  MISSING, not written ({len(self.missing)}): in the enum but returned by "
                "neither the API nor found in the supplement or the previous file. Add a row "
                "with its source to data/supplement.json:"
            )
            lines += [f"    {name}" for name in self.missing]
        if self.removed:
            lines.append(f"  Removed, no longer in botocore's enum ({len(self.removed)}):")
            lines += [f"    {name}" for name in self.removed]
        return "\n".join(lines)


def training_instance_types() -> list[str]:
    """Every value of ``TrainingInstanceType`` in the installed botocore's SageMaker model."""
    model = botocore.loaders.Loader().load_service_model("sagemaker", "service-2")
    return sorted(model["shapes"]["TrainingInstanceType"]["enum"])


def refresh(
    *,
    region: str = DEFAULT_REGION,
    output: Path = DEFAULT_OUTPUT,
    supplement: Path = DEFAULT_SUPPLEMENT,
    date: str | None = None,
    ec2_source: str = "aws",
    ec2_client: Any = None,
) -> RefreshReport:
    """Query EC2 for every training type, merge the fallbacks, and rewrite ``output``.

    ``date`` (ISO, default today in UTC) and ``ec2_source`` (what answered the EC2 calls) go in
    the header; pass the old values to reproduce a file byte for byte.
    """
    names = training_instance_types()
    client = ec2_client or boto3.client("ec2", region_name=region)
    answers = _describe(client, [name.removeprefix("ml.") for name in names])
    supplement_rows = _supplement_entries(supplement)
    corrections = _supplement_corrections(supplement)
    previous = _previous_entries(output)

    entries: dict[str, InstanceType] = {}
    from_supplement: dict[str, str] = {}
    kept_previous: dict[str, str] = {}
    missing: list[str] = []
    for name in names:
        info = answers.get(name.removeprefix("ml."))
        if info is not None:
            entries[name] = _corrected(_from_ec2(name, info), corrections.get(name))
        elif name in supplement_rows:
            entries[name] = supplement_rows[name]
            from_supplement[name] = entries[name].source
        elif name in previous:
            entries[name] = previous[name]
            kept_previous[name] = entries[name].source
        else:
            missing.append(name)

    header = {
        "botocore_version": botocore.__version__,
        "command": COMMAND,
        "ec2_source": ec2_source,
        "enum": "botocore sagemaker service-2 TrainingInstanceType",
        "generated": date or datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
        "region": region,
    }
    output.write_text(_render(header, entries), encoding="utf-8", newline="\n")
    return RefreshReport(
        output=output,
        header=header,
        from_api=tuple(name for name in names if name.removeprefix("ml.") in answers),
        from_supplement=from_supplement,
        kept_previous=kept_previous,
        missing=tuple(missing),
        removed=tuple(sorted(set(previous) - set(names))),
    )


def _describe(ec2: Any, ec2_names: list[str]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for start in range(0, len(ec2_names), _MAX_TYPES_PER_CALL):
        found.update(_describe_chunk(ec2, ec2_names[start : start + _MAX_TYPES_PER_CALL]))
    return found


def _describe_chunk(ec2: Any, ec2_names: list[str]) -> dict[str, dict[str, Any]]:
    # One name EC2 does not know in this region (retired, or not offered there) fails the whole
    # call with InvalidInstanceType. Splitting the chunk in halves until the bad names stand
    # alone costs a few extra calls but does not depend on the wording of the error message.
    try:
        pages = ec2.get_paginator("describe_instance_types").paginate(InstanceTypes=ec2_names)
        return {info["InstanceType"]: info for page in pages for info in page["InstanceTypes"]}
    except ClientError as exc:
        if not exc.response.get("Error", {}).get("Code", "").startswith("InvalidInstanceType"):
            raise
        if len(ec2_names) == 1:
            return {}
        half = len(ec2_names) // 2
        return {**_describe_chunk(ec2, ec2_names[:half]), **_describe_chunk(ec2, ec2_names[half:])}


def _from_ec2(name: str, info: dict[str, Any]) -> InstanceType:
    # GpuInfo is NVIDIA/AMD GPUs; NeuronInfo is Trainium/Inferentia (accelerators, not GPUs).
    # Training types carry no InferenceAcceleratorInfo (inf1's old form), so it is not read.
    kind: str | None = None
    devices: list[dict[str, Any]] = []
    if info.get("GpuInfo"):
        kind, devices = "gpu", info["GpuInfo"].get("Gpus", [])
    elif info.get("NeuronInfo"):
        kind, devices = "neuron", info["NeuronInfo"].get("NeuronDevices", [])
    # Every training type has one device model; should EC2 ever list two, count both and keep
    # the per-device memory only if they agree.
    count = sum(device["Count"] for device in devices)
    models = sorted({device["Name"] for device in devices})
    memories = {device.get("MemoryInfo", {}).get("SizeInMiB") for device in devices}
    return _entry(
        name,
        accelerator_kind=kind if count else None,
        accelerator_name="/".join(models) or None,
        accelerator_count=count,
        accelerator_memory_mib=memories.pop() if len(memories) == 1 else None,
        vcpus=info["VCpuInfo"]["DefaultVCpus"],
        memory_mib=info["MemoryInfo"]["SizeInMiB"],
        efa_supported=bool(info.get("NetworkInfo", {}).get("EfaSupported", False)),
        source=EC2_SOURCE,
        neuron_cores=_neuron_cores(devices) if kind == "neuron" and count else None,
        cpu_architecture=_architecture(info),
        **_nvme_storage(info),
    )


def _architecture(info: dict[str, Any]) -> str:
    # x86_64 where the type runs it (i386 beside it on old types), else the first listed (arm64).
    supported = info.get("ProcessorInfo", {}).get("SupportedArchitectures") or ["x86_64"]
    return "x86_64" if "x86_64" in supported else str(supported[0])


def _nvme_storage(info: dict[str, Any]) -> dict[str, int]:
    # InstanceStorageInfo: the instance store SageMaker trains on (it "uses the NVMe volume"
    # there, the SDK's volume_size docstring). EBS-only types answer InstanceStorageSupported
    # false and no InstanceStorageInfo: 0 disks.
    storage = info.get("InstanceStorageInfo")
    if not info.get("InstanceStorageSupported") or not storage:
        return {"nvme_disks": 0, "nvme_disk_gb": 0}
    disks = storage.get("Disks") or []
    sizes = {disk["SizeInGB"] for disk in disks}
    if storage.get("NvmeSupport") == "unsupported" or len(sizes) != 1:
        return {}  # not NVMe, or disks of several sizes: not recorded
    return {"nvme_disks": sum(disk["Count"] for disk in disks), "nvme_disk_gb": sizes.pop()}


def _neuron_cores(devices: list[dict[str, Any]]) -> int | None:
    cores = 0
    for device in devices:
        core = device.get("CoreInfo", {})
        grouping = _DEFAULT_LOGICAL_CORE_GROUPING.get(core.get("Version", 0))
        if grouping is None or "Count" not in core:
            return None
        cores += device["Count"] * core["Count"] // grouping
    return cores


def _entry(name: str, **fields: Any) -> InstanceType:
    # The one place gpu_count is derived, for API answers and supplement rows alike.
    gpu_count = fields["accelerator_count"] if fields["accelerator_kind"] == "gpu" else 0
    fields.setdefault("neuron_cores", None)
    return InstanceType(name=name, gpu_count=gpu_count, **fields)


def _supplement_entries(path: Path) -> dict[str, InstanceType]:
    rows = json.loads(path.read_text(encoding="utf-8"))["instance_types"]
    return {
        name: _entry(name, **{**row, "source": SUPPLEMENT_PREFIX + row["source"]})
        for name, row in rows.items()
    }


def _supplement_corrections(path: Path) -> dict[str, dict[str, Any]]:
    """Read the supplement's ``corrections``, by type, each with its ``source``.

    They are fields whose API answer a primary source contradicts (moto's Trainium2 memory).
    """
    rows: dict[str, dict[str, Any]] = json.loads(path.read_text(encoding="utf-8")).get(
        "corrections", {}
    )
    return rows


def _corrected(entry: InstanceType, row: dict[str, Any] | None) -> InstanceType:
    if row is None:
        return entry
    fields = {key: value for key, value in row.items() if key != "source"}
    return attrs.evolve(entry, **fields, corrections=SUPPLEMENT_PREFIX + row["source"])


def _previous_entries(path: Path) -> dict[str, InstanceType]:
    if not path.exists():
        return {}
    rows = json.loads(path.read_text(encoding="utf-8"))["instance_types"]
    return {name: InstanceType(name=name, **fields) for name, fields in rows.items()}


def _render(header: dict[str, Any], entries: dict[str, InstanceType]) -> str:
    # Hand-laid JSON: one line per header field and per instance type, keys sorted, so a
    # refresh diff shows exactly the types whose facts changed.
    def fields(entry: InstanceType) -> dict[str, Any]:
        return attrs.asdict(entry, filter=lambda attribute, _: attribute.name != "name")

    head = ",\n".join(f"  {json.dumps(key)}: {json.dumps(header[key])}" for key in sorted(header))
    rows = ",\n".join(
        f"  {json.dumps(name)}: {json.dumps(fields(entries[name]), sort_keys=True)}"
        for name in sorted(entries)
    )
    return f'{{\n "header": {{\n{head}\n }},\n "instance_types": {{\n{rows}\n }}\n}}\n'


def main(argv: Sequence[str] | None = None) -> int:
    """Run the refresh from the command line; print the report; 1 if any type is missing."""
    parser = argparse.ArgumentParser(
        prog=COMMAND, description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    parser.add_argument("--region", default=DEFAULT_REGION, help="EC2 region to ask")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="file to rewrite")
    parser.add_argument(
        "--date",
        type=datetime.date.fromisoformat,
        help="date for the header (YYYY-MM-DD; default: today, UTC)",
    )
    parser.add_argument(
        "--ec2-source",
        default="aws",
        help="what answered the EC2 calls, recorded in the header (e.g. 'moto 5.2.5')",
    )
    args = parser.parse_args(argv)
    report = refresh(
        region=args.region,
        output=args.output,
        date=args.date.isoformat() if args.date else None,
        ec2_source=args.ec2_source,
    )
    print(report.format())
    return 1 if report.missing else 0


if __name__ == "__main__":
    sys.exit(main())
