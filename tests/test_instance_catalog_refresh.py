"""`python -m instance_catalog.refresh`, run offline against moto's EC2 emulation.

The shipped data file is exactly what this command writes against moto (plus the supplement for
the types moto lacks), apart from the header's ``botocore_version``: that names the botocore
that wrote the file, not a fact of the catalog, so a botocore release that changes no answer
changes no verdict here. If a moto or botocore upgrade changes the answers (a type's facts, the
enum's types), the reproduction test below fails: regenerate with the command in its failure
message and review the diff.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import botocore
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.server import ThreadedMotoServer

from instance_catalog import refresh as refresh_module
from instance_catalog.refresh import DEFAULT_OUTPUT, refresh

SHIPPED = DEFAULT_OUTPUT.read_bytes()
SHIPPED_HEADER: dict[str, str] = json.loads(SHIPPED)["header"]
# The shipped file as this botocore would write it: the same bytes but the version of the
# botocore that wrote it.
AS_WRITTEN_HERE = SHIPPED.replace(
    json.dumps({"botocore_version": SHIPPED_HEADER["botocore_version"]})[1:-1].encode(),
    json.dumps({"botocore_version": botocore.__version__})[1:-1].encode(),
    1,
)
MOTO_LACKS = [
    "ml.p2.16xlarge",
    "ml.p2.8xlarge",
    "ml.p2.xlarge",
    "ml.p3.16xlarge",
    "ml.p3.2xlarge",
    "ml.p3.8xlarge",
    "ml.p6e-gb200.36xlarge",
]
REGENERATE = (
    "python -m instance_catalog.refresh --ec2-source 'moto <version> (...)' with "
    "AWS_ENDPOINT_URL pointing at a moto server (moto_server -H 127.0.0.1)"
)


@pytest.fixture
def ec2() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("ec2", region_name="us-east-1")


def _run(ec2: Any, output: Path, **kwargs: Any) -> refresh_module.RefreshReport:
    # The shipped header's date and EC2 label, so outputs can be compared byte for byte.
    kwargs.setdefault("date", SHIPPED_HEADER["generated"])
    kwargs.setdefault("ec2_source", SHIPPED_HEADER["ec2_source"])
    return refresh(output=output, ec2_client=ec2, **kwargs)


def _empty_supplement(tmp_path: Path) -> Path:
    path = tmp_path / "supplement.json"
    path.write_text('{"instance_types": {}}')
    return path


def test_regenerating_against_moto_reproduces_the_shipped_file(ec2: Any, tmp_path: Path) -> None:
    report = _run(ec2, tmp_path / "instances.json")
    assert report.output.read_bytes() == AS_WRITTEN_HERE, f"shipped data is stale: run {REGENERATE}"
    written = json.loads(report.output.read_bytes())
    assert written["header"] == {**SHIPPED_HEADER, "botocore_version": botocore.__version__}
    assert written["instance_types"] == json.loads(SHIPPED)["instance_types"]


def test_the_header_version_is_the_only_part_set_aside() -> None:
    # The replacement above changed one field of the header and nothing else.
    here, shipped = json.loads(AS_WRITTEN_HERE), json.loads(SHIPPED)
    assert here["header"].pop("botocore_version") == botocore.__version__
    assert shipped["header"].pop("botocore_version") == SHIPPED_HEADER["botocore_version"]
    assert here == shipped


def test_two_runs_write_identical_bytes(ec2: Any, tmp_path: Path) -> None:
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    _run(ec2, first)
    _run(ec2, second)
    assert first.read_bytes() == second.read_bytes()
    _run(ec2, first)  # over its own previous output
    assert first.read_bytes() == second.read_bytes()


def test_report_lists_the_types_moto_lacks_and_where_their_facts_came_from(
    ec2: Any, tmp_path: Path
) -> None:
    report = _run(ec2, tmp_path / "instances.json")
    assert sorted(report.from_supplement) == MOTO_LACKS
    assert report.from_supplement["ml.p3.8xlarge"] == "supplement:aws-docs-p2-p3"
    assert report.missing == ()
    everything = refresh_module.training_instance_types()
    assert sorted(report.from_api) == sorted(set(everything) - set(MOTO_LACKS))
    text = report.format()
    assert all(name in text for name in MOTO_LACKS)


def test_types_the_api_does_not_return_keep_their_previous_entry(ec2: Any, tmp_path: Path) -> None:
    output = tmp_path / "instances.json"
    previous = json.loads(SHIPPED)
    previous["instance_types"]["ml.p3.8xlarge"]["source"] = "a-previous-run"
    output.write_text(json.dumps(previous))

    report = _run(ec2, output, supplement=_empty_supplement(tmp_path))

    assert sorted(report.kept_previous) == MOTO_LACKS
    assert report.kept_previous["ml.p3.8xlarge"] == "a-previous-run"
    assert "ml.p3.8xlarge  [a-previous-run]" in report.format()
    written = json.loads(output.read_text())["instance_types"]
    assert written["ml.p3.8xlarge"] == previous["instance_types"]["ml.p3.8xlarge"]


def test_types_found_nowhere_are_reported_missing_and_not_written(ec2: Any, tmp_path: Path) -> None:
    output = tmp_path / "instances.json"
    report = _run(ec2, output, supplement=_empty_supplement(tmp_path))
    assert list(report.missing) == MOTO_LACKS
    assert "MISSING" in report.format()
    assert not set(MOTO_LACKS) & set(json.loads(output.read_text())["instance_types"])


def test_the_api_answer_wins_over_a_supplement_row(ec2: Any, tmp_path: Path) -> None:
    supplement = tmp_path / "supplement.json"
    row = {
        "accelerator_count": 0,
        "accelerator_kind": None,
        "accelerator_memory_mib": None,
        "accelerator_name": None,
        "efa_supported": False,
        "memory_mib": 1,
        "source": "wrong",
        "vcpus": 1,
    }
    supplement.write_text(json.dumps({"instance_types": {"ml.m5.xlarge": row}}))
    output = tmp_path / "instances.json"
    _run(ec2, output, supplement=supplement)
    entry = json.loads(output.read_text())["instance_types"]["ml.m5.xlarge"]
    assert (entry["source"], entry["vcpus"]) == ("ec2-describe-instance-types", 4)


def test_types_no_longer_in_the_enum_are_dropped_and_reported(ec2: Any, tmp_path: Path) -> None:
    output = tmp_path / "instances.json"
    previous = json.loads(SHIPPED)
    previous["instance_types"]["ml.retired.xlarge"] = previous["instance_types"]["ml.m5.xlarge"]
    output.write_text(json.dumps(previous))
    report = _run(ec2, output)
    assert report.removed == ("ml.retired.xlarge",)
    assert output.read_bytes() == AS_WRITTEN_HERE


def test_asks_for_at_most_100_types_per_call(ec2: Any, tmp_path: Path) -> None:
    sizes: list[int] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        sizes.append(len(params["InstanceTypes"]))

    ec2.meta.events.register("provide-client-params.ec2.DescribeInstanceTypes", record)
    _run(ec2, tmp_path / "instances.json")
    assert max(sizes) <= 100
    assert sum(size for size in sizes if size == 100) >= 200  # full chunks were tried first


def test_other_ec2_errors_are_not_swallowed(tmp_path: Path) -> None:
    class Denied:
        def get_paginator(self, _: str) -> Any:
            raise ClientError(
                {"Error": {"Code": "UnauthorizedOperation", "Message": "no"}},
                "DescribeInstanceTypes",
            )

    with pytest.raises(ClientError, match="UnauthorizedOperation"):
        _run(Denied(), tmp_path / "instances.json")


def test_the_command_honours_aws_endpoint_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://{host}:{port}")
        output = tmp_path / "instances.json"
        status = refresh_module.main(
            [
                "--output",
                str(output),
                "--date",
                SHIPPED_HEADER["generated"],
                "--ec2-source",
                SHIPPED_HEADER["ec2_source"],
            ]
        )
    finally:
        server.stop()
    assert status == 0
    assert output.read_bytes() == AS_WRITTEN_HERE
    assert "ml.p6e-gb200.36xlarge" in capsys.readouterr().out


def test_the_command_rejects_a_malformed_date(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        refresh_module.main(["--date", "last tuesday"])
    assert "--date" in capsys.readouterr().err
