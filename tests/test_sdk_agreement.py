"""Our tables of SageMaker facts agree with the installed SDK and botocore.

An SDK or botocore upgrade that changes one of these fails here first, with the table to edit.
"""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest
from sagemaker.estimator import EstimatorBase, Framework
from sagemaker.huggingface import HuggingFace
from sagemaker.huggingface.training_compiler.config import TrainingCompilerConfig as HFCompiler
from sagemaker.pytorch import PyTorch
from sagemaker.pytorch.training_compiler.config import TrainingCompilerConfig as PTCompiler

from safe_estimators._facts import sdk_arguments as _sdk_arguments
from safe_estimators._facts import tables


def _keywords(*classes: type) -> set[str]:
    names: set[str] = set()
    for cls in classes:
        names |= {
            name
            for name, p in inspect.signature(cls.__init__).parameters.items()
            if name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
        }
    return names


@pytest.mark.parametrize(
    ("kind", "cls"), [("pytorch", PyTorch), ("huggingface", HuggingFace)]
)
def test_estimator_keyword_tables_match_the_sdk(kind, cls):
    assert _sdk_arguments.BY_ESTIMATOR[kind] == _keywords(EstimatorBase, Framework, cls)


def test_the_v1_names_are_the_ones_the_sdk_renames():
    import ast
    import textwrap

    tree = ast.parse(textwrap.dedent(inspect.getsource(EstimatorBase.__init__)))
    renamed = {
        call.args[0].value: call.args[1].value
        for call in ast.walk(tree)
        if isinstance(call, ast.Call)
        and getattr(call.func, "id", None) == "renamed_kwargs"
        and all(isinstance(a, ast.Constant) for a in call.args[:2])
    }
    assert renamed == _sdk_arguments.RENAMED


def test_compiler_families_match_the_sdk():
    assert set(tables.COMPILER_FAMILIES) == set(HFCompiler.SUPPORTED_INSTANCE_CLASS_PREFIXES)
    assert set(tables.COMPILER_FAMILIES) == set(PTCompiler.SUPPORTED_INSTANCE_CLASS_PREFIXES)


def test_importing_and_validating_does_not_import_sagemaker(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("def _mp_fn(index):\n    print(index)\n")
    code = f"""
import sys
import safe_estimators
from safe_estimators._resolve import resolve_arguments
job = resolve_arguments(dict(estimator="pytorch", entry_point={str(script)!r},
    instance_type="ml.p3.8xlarge", instance_count=2, framework_version="1.13.1",
    py_version="py39", training_compiler=True))
assert job.kwargs["environment"]["GPU_NUM_DEVICES"] == "4"
assert "sagemaker" not in sys.modules, "sagemaker was imported"
"""
    subprocess.run([sys.executable, "-c", code], check=True)
