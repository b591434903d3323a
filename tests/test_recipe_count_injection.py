"""The recipe's instance count is an injection only when it changes what is sent (issue 34).

A recipe job without instance_count is sent the recipe's trainer.num_nodes (the bare SDK takes
the same number from the recipe): recorded, with the recipe key. A job that passes the same
number sends what it wrote: nothing of ours to record.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from safe_estimators._cli import main

EXAMPLE = Path(__file__).parent.parent / "examples" / "hyperpod-recipe"

pytestmark = pytest.mark.sdk2_only  # a recipe job is built by the estimator


def planned(tmp_path: Path, capsys, extra: str = "") -> dict:
    folder = tmp_path / "job"
    shutil.copytree(EXAMPLE, folder)
    spec = folder / "job.yaml"
    spec.write_text(spec.read_text() + extra)
    assert main(["plan", str(spec), "--json"]) == 0, capsys.readouterr()
    return json.loads(capsys.readouterr().out)


def test_the_count_taken_from_the_recipe_is_recorded(tmp_path, capsys):
    document = planned(tmp_path, capsys)
    injected = {i["path"]: i for i in document["injected"]}
    assert injected["instance_count"]["value"] == 2
    assert "trainer.num_nodes" in injected["instance_count"]["reason"]
    assert document["request"]["ResourceConfig"]["InstanceCount"] == 2


def test_the_same_count_given_by_the_user_is_not_an_injection(tmp_path, capsys):
    document = planned(tmp_path, capsys, "instance_count: 2\n")
    assert "instance_count" not in {i["path"] for i in document["injected"]}
    assert document["request"]["ResourceConfig"]["InstanceCount"] == 2
