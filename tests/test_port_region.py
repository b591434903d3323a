"""`safe-estimators port` names the region whose training image it writes in its first line,
takes one with --region, refuses to guess when none is set, and writes no empty Networking."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from safe_estimators._cli import main

pytestmark = pytest.mark.both_sdks

EXAMPLE = Path(__file__).parent.parent / "examples" / "model-trainer" / "torchrun-fsdp.yaml"


def _spec(tmp_path: Path, **changes: object) -> Path:
    import yaml

    data = yaml.safe_load(EXAMPLE.read_text())
    data.update(source_dir=str(EXAMPLE.parent), **changes)
    path = tmp_path / "job.json"
    path.write_text(json.dumps(data))
    return path


def _port(capsys, *argv: str) -> tuple[int, str]:
    code = main(["port", *argv, "--project-root", str(EXAMPLE.parent.parent)])
    return code, capsys.readouterr().out


def test_port_names_the_region_it_took_from_the_environment(tmp_path, capsys):
    code, out = _port(capsys, str(_spec(tmp_path)))  # conftest: AWS_DEFAULT_REGION=us-west-2
    assert code == 0, out
    first = out.splitlines()[0]
    assert first.startswith("# Region us-west-2 (from AWS_REGION, AWS_DEFAULT_REGION")
    assert "dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.3.0-gpu-py311" in out


def test_port_takes_an_explicit_region(tmp_path, capsys):
    code, out = _port(capsys, str(_spec(tmp_path)), "--region", "eu-west-1")
    assert code == 0, out
    assert out.splitlines()[0].startswith("# Region eu-west-1 (given)")
    assert "dkr.ecr.eu-west-1.amazonaws.com/pytorch-training:" in out


def test_port_without_a_region_is_our_error_naming_aws_region(tmp_path, capsys, monkeypatch):
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    empty = tmp_path / "aws-config"
    empty.write_text("")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(empty))
    code, out = _port(capsys, "--format", "json", str(_spec(tmp_path)))
    assert code == 1
    (problem,) = json.loads(out)["problems"]
    assert "no AWS region" in problem["message"]
    assert "AWS_REGION" in problem["hint"] and "--region" in problem["hint"]


def test_port_writes_no_empty_networking(tmp_path, capsys):
    # One instance: no encryption to send, no VPC: ModelTrainer gets no Networking at all.
    code, out = _port(
        capsys, str(_spec(tmp_path, instance_count=1, enable_network_isolation=False))
    )
    assert code == 0, out
    assert "Networking(" not in out
    assert "subnets=[]" not in out
