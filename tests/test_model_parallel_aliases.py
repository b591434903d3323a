"""Both names of the pipeline degree, as AWS's gpt-neo notebook writes them (issue 34).

aws-samples/amazon-sagemaker-generativeai, x_archive/instruction-fine-tuning/gpt-neo: SMP v1
with ``pipeline_parallel_degree: 1`` and ``partitions: 1`` beside
``sharded_data_parallel_degree: 4``. The SDK sends ``parameters`` as written (both names); the
library reads ``partitions`` as an alias and accepts both when they agree. Ours sends both too,
so nothing differs from the bare SDK and nothing needs recording.
"""

from __future__ import annotations

import json

import pytest
from sagemaker.pytorch import PyTorch

import safe_estimators
from safe_estimators import ConfigError

PARAMETERS = {
    "pipeline_parallel_degree": 1, "ddp": True, "ddp_dist_backend": "auto",
    "sharded_data_parallel_degree": 4, "partitions": 1, "offload_activations": True,
    "fp16": True, "skip_tracing": True,
}


def arguments(sagemaker_session, role, parameters):
    return {
        "entry_point": "train.py", "role": role, "instance_type": "ml.p4d.24xlarge",
        "instance_count": 1, "framework_version": "2.0.0", "py_version": "py310",
        "disable_profiler": True, "sagemaker_session": sagemaker_session,
        "distribution": {
            "smdistributed": {"modelparallel": {"enabled": True, "parameters": parameters}},
            "mpi": {"enabled": True, "processes_per_host": 8},
        },
    }


def test_both_names_are_sent_as_the_sdk_sends_them(sagemaker_session, role, tmp_path):
    (tmp_path / "train.py").write_text("print('train')\n")
    given = arguments(sagemaker_session, role, PARAMETERS)
    bare = PyTorch(**given, source_dir=str(tmp_path))
    ours = safe_estimators.pytorch(**given, source_dir=str(tmp_path), check_script=False)
    sent = json.loads(ours.hyperparameters()["mp_parameters"])
    assert sent == json.loads(bare.hyperparameters()["mp_parameters"])
    assert sent["partitions"] == sent["pipeline_parallel_degree"] == 1
    injected = [i.path for i in safe_estimators.explain(ours).injections]
    assert not [p for p in injected if "partitions" in p or "pipeline_parallel" in p]


@pytest.mark.parametrize("name", ["partitions", "pipeline_parallel_degree"])
def test_one_name_alone_is_sent_as_written(sagemaker_session, role, tmp_path, name):
    (tmp_path / "train.py").write_text("print('train')\n")
    parameters = {k: v for k, v in PARAMETERS.items()
                  if k not in {"partitions", "pipeline_parallel_degree"} - {name}}
    given = arguments(sagemaker_session, role, parameters)
    ours = safe_estimators.pytorch(**given, source_dir=str(tmp_path), check_script=False)
    sent = json.loads(ours.hyperparameters()["mp_parameters"])
    assert sent[name] == 1 and len({"partitions", "pipeline_parallel_degree"} & set(sent)) == 1


def test_two_names_with_two_values_are_refused(sagemaker_session, role, tmp_path):
    (tmp_path / "train.py").write_text("print('train')\n")
    given = arguments(sagemaker_session, role, {**PARAMETERS, "partitions": 2})
    with pytest.raises(ConfigError, match="name the same option with different values"):
        safe_estimators.pytorch(**given, source_dir=str(tmp_path), check_script=False)
