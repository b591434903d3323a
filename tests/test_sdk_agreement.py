"""Our tables of SageMaker facts agree with the installed SDK and botocore.

An SDK or botocore upgrade that changes one of these fails here first, with the table to edit.
"""

from __future__ import annotations

import importlib
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

    renamed = {}
    for cls in (EstimatorBase, Framework, PyTorch, HuggingFace):
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls.__init__)))
        renamed.update(
            {
                call.args[0].value: call.args[1].value
                for call in ast.walk(tree)
                if isinstance(call, ast.Call)
                and getattr(call.func, "id", None) == "renamed_kwargs"
                and all(isinstance(a, ast.Constant) for a in call.args[:2])
            }
        )
    assert renamed == _sdk_arguments.RENAMED


def _sdk_class(dotted: str) -> type:
    module, name = dotted.rsplit(".", 1)
    cls: type = getattr(importlib.import_module(module), name)
    return cls


@pytest.mark.parametrize("dotted", sorted(_sdk_arguments.OTHER_ESTIMATORS))
def test_other_estimators_keyword_tables_match_the_sdk(dotted):
    assert _sdk_arguments.OTHER_ESTIMATORS[dotted] == _keywords(_sdk_class(dotted)) - set(
        _sdk_arguments.COMMON
    )


def test_the_other_estimators_are_every_estimator_class_of_the_sdk():
    """Every estimator class of the SDK's framework packages is in the table."""
    import sagemaker.algorithm
    import sagemaker.chainer
    import sagemaker.jumpstart.estimator
    import sagemaker.mxnet
    import sagemaker.rl
    import sagemaker.sklearn
    import sagemaker.tensorflow
    import sagemaker.xgboost

    modules = (sagemaker.algorithm, sagemaker.chainer, sagemaker.jumpstart.estimator,
               sagemaker.mxnet, sagemaker.rl, sagemaker.sklearn, sagemaker.tensorflow,
               sagemaker.xgboost, sagemaker.estimator)  # fmt: skip
    found = {
        cls
        for module in modules
        for cls in vars(module).values()
        if isinstance(cls, type) and issubclass(cls, EstimatorBase)
    } - {EstimatorBase, Framework}
    assert found == {_sdk_class(dotted) for dotted in _sdk_arguments.OTHER_ESTIMATORS}


def test_the_sdk_drops_keywords_it_does_not_take(role, sagemaker_session):
    """The fact the verdicts rest on: EstimatorBase's **kwargs swallows any other name."""
    (var_keyword,) = [
        p for p in inspect.signature(EstimatorBase.__init__).parameters.values()
        if p.kind is p.VAR_KEYWORD
    ]  # fmt: skip
    est = PyTorch(
        entry_point="train.py", role=role, sagemaker_session=sagemaker_session,
        instance_type="ml.p3.2xlarge", instance_count=1, framework_version="2.0",
        py_version="py310", hyperparamters={"epochs": 3}, env={"A": "1"}, model_dir=False,
    )  # fmt: skip
    assert var_keyword.name == "kwargs"
    assert est.hyperparameters() == {}
    assert est.environment is None


def test_the_misplaced_names_are_what_the_table_says():
    from sagemaker.model import Model
    from sagemaker.tensorflow import TensorFlow

    ours = _sdk_arguments.BY_ESTIMATOR["pytorch"] | _sdk_arguments.BY_ESTIMATOR["huggingface"]
    assert not set(_sdk_arguments.MISPLACED) & ours  # dropped by both estimators
    assert "env" in _keywords(Model) and "environment" in ours
    assert "model_dir" in _keywords(TensorFlow)
    assert "processes_per_host" in tables.DISTRIBUTION_KEYS["mpi"]
    assert "script_mode" not in _keywords(TensorFlow)  # removed in SDK v2.0.0
    launchers = set().union(*(set(hints) for hints in _sdk_arguments.MISPLACED.values()))
    assert {name.split(".")[0] for name in launchers - {""}} <= set(tables.DISTRIBUTION_KEYS)


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
