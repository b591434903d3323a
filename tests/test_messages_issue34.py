"""Messages of issue 34 that said something other than what happens.

A Nova recipe without ``run.replicas`` (and no instance_count) was told "run.replicas is None";
the message now names the missing key and quotes the SDK's own refusal. The trn2 refusal's
"Unsupported Python version" is pinned in test_fixes_hold.py.
"""

from __future__ import annotations

import pytest
from conftest import ROLE
from recipe_fixtures import write_recipe
from sagemaker.pytorch import PyTorch

from safe_estimators import ConfigError
from safe_estimators._resolve import resolve_arguments

NOVA = {
    "run": {"name": "n", "model_type": "amazon.nova-micro-v1:0:128k",
            "model_name_or_path": "nova-micro/prod"},
    "training_config": {"max_length": 8192},
}  # fmt: skip
IMAGE = "111122223333.dkr.ecr.us-east-1.amazonaws.com/nova:1"


def test_a_nova_recipe_without_replicas_gets_the_sdks_words(tmp_path, sagemaker_session):
    recipe = str(write_recipe(tmp_path / "nova.yaml", NOVA))
    arguments = {"training_recipe": recipe, "image_uri": IMAGE, "role": ROLE,
                 "instance_type": "ml.p5.48xlarge"}
    with pytest.raises(ValueError) as bare:
        PyTorch(**arguments, sagemaker_session=sagemaker_session)
    with pytest.raises(ConfigError) as ours:
        resolve_arguments({"estimator": "pytorch", **arguments})
    [problem] = [p for p in ours.value.problems if p.path == "instance_count"]
    assert "None" not in problem.message
    assert "the recipe has no replicas in its run section" in problem.message
    assert str(bare.value) in problem.message  # the SDK's refusal, quoted
    assert "recipe_overrides={'run': {'replicas': 1}}" in problem.hint
