"""The model-outside-model-dir rule by the names that save a model, per library (issue 34).

The calls that write a model are a table per library with its source
(``libraries.MODEL_SAVING_FUNCTIONS`` and ``MODEL_SAVING_METHODS``): a library's function by its
resolved name, a method when the script imports its library. Each saver below writes to /tmp
and nothing reaches SM_MODEL_DIR: the model is lost with the instance.
"""

from __future__ import annotations

import pytest

from safe_estimators._script_checks import ScriptContext, check_source
from safe_estimators._script_checks.libraries import MODEL_SAVING_FUNCTIONS, MODEL_SAVING_METHODS

RULE = "model-outside-model-dir"


def found(source: str) -> list:
    return [f for f in check_source(source, ScriptContext()) if f.rule == RULE]


LOST = {
    "deepspeed": """
import deepspeed
engine, _, _, _ = deepspeed.initialize(model=model, config="ds.json")
engine.save_checkpoint("/tmp/checkpoints", tag="final")
""",
    "lightning": """
import lightning as L
trainer = L.Trainer(max_epochs=1)
trainer.fit(model)
trainer.save_checkpoint("/tmp/final.ckpt")
""",
    "torch_xla, the destination by its keyword": """
import torch_xla.core.xla_model as xm
xm.save(model.state_dict(), file_or_path="/tmp/model.pt")
""",
    "safetensors": """
from safetensors.torch import save_model
save_model(model, "/tmp/model.safetensors")
""",
    "accelerate": """
from accelerate import Accelerator
accelerator = Accelerator()
accelerator.save_model(model, "/tmp/out")
""",
    "SMP v1": """
import smdistributed.modelparallel.torch as smp
smp.save_checkpoint("/tmp/ckpt", tag="final", partial=False, model=model)
""",
    "peft": """
from peft import get_peft_model
model = get_peft_model(model, config)
model.save_pretrained("/tmp/adapter")
""",
}


@pytest.mark.parametrize("library", sorted(LOST))
def test_a_model_saved_outside_the_model_folder_is_found_per_library(library):
    [finding] = found(LOST[library])
    assert "/tmp/" in finding.message and "SM_MODEL_DIR" in finding.hint


@pytest.mark.parametrize("library", sorted(LOST))
def test_the_same_saver_into_the_model_folder_is_clean(library):
    source = "import os\n" + LOST[library].replace('"/tmp/', 'os.environ["SM_MODEL_DIR"] + "/')
    assert found(source) == []


def test_a_method_of_a_library_the_script_does_not_import_is_no_save():
    # A save_pretrained of the script's own class: no library the tables know writes a model.
    source = "from mylib import Index\nindex = Index()\nindex.save_pretrained('/tmp/index')\n"
    assert found(source) == []


def test_an_object_that_is_not_a_model_is_no_save():
    source = (
        "from accelerate import Accelerator\naccelerator = Accelerator()\n"
        "accelerator.save({'step': 3}, '/tmp/progress.pt')\n"
    )
    assert found(source) == []
    assert found(source.replace("{'step': 3}", "model.state_dict()")) != []


def test_every_saver_names_its_source():
    for name, (_, keyword, _, source) in MODEL_SAVING_FUNCTIONS.items():
        assert keyword and len(source) > 20, name
    for key, (_, keyword, _, source) in MODEL_SAVING_METHODS.items():
        assert keyword and len(source) > 20, key
