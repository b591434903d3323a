"""Tests written against the surviving mutants of ./dev mutate (tests/mutation_scope.py names
the modules these are tests of): the instance type and container rules
(``_rules/instance.py``) and the platform rules (``_rules/platform.py``), each called on the
Context of a small job, as the rules stage builds it. Each case pins what the user reads: the
verdict, the path, the whole message and hint, and the fixes offered (before the checks try
them), so a changed word, number, boundary or branch changes a case's outcome.

The versions and builds are the installed sagemaker 2 SDK's image tables (the sagemaker 3
lane's tables differ: these cases are of the sagemaker 2 lane, marked sdk2_only).
"""

from __future__ import annotations

from typing import Any

import pytest
from sdk_generations import ParameterString

from safe_estimators._context import Context
from safe_estimators._resolve import _lookup, _model_parallel, launch_group
from safe_estimators._rules import instance, platform
from safe_estimators._spec import instance_type_name, structure_spec

try:
    from sagemaker.workflow.execution_variables import ExecutionVariables  # sagemaker 2
    from sagemaker.workflow.functions import Join
except ImportError:  # sagemaker 3
    from sagemaker.core.workflow.execution_variables import (  # type: ignore[no-redef]
        ExecutionVariables,
    )
    from sagemaker.core.workflow.functions import Join  # type: ignore[no-redef]

# The versions, builds and fixes pinned here are the sagemaker 2 SDK's image tables; sagemaker 3
# ships other tables.
pytestmark = pytest.mark.sdk2_only

Seen = list[tuple[str, str, str, str, tuple[tuple[tuple[str, Any], ...], ...]]]


def _context(**options: Any) -> Context:
    """The Context the rules stage makes of a job with these options (resolve._job_rules)."""
    data = {"estimator": "pytorch", "entry_point": "train.py", "check_script": False, **options}
    if "instance_groups" not in data:
        data.setdefault("instance_count", 1)
    spec, problems = structure_spec(data)
    assert spec is not None and not problems, problems
    model_parallel, rest, _ = _model_parallel(spec)
    group = launch_group(spec.instance_groups, rest)
    name = group.instance_type if group else instance_type_name(spec.instance_type)
    return Context(spec, _lookup(name), rest, model_parallel, group)


def _check(problems: Any, expected: Seen) -> None:
    """The problems found are the expected ones: what a user reads of each (verdict, path,
    message, hint) and the fixes' changes. A difference names the first problem that differs,
    whole (pytest's diff of such lists costs seconds under load, per mutant of ./dev mutate)."""
    seen = [
        (p.severity, p.path, p.message, p.hint, tuple(fix.changes for fix in p.fixes))
        for p in problems
    ]
    if seen == expected:
        return
    for index, (one, other) in enumerate(zip(seen, expected, strict=False)):
        if one != other:
            raise AssertionError(f"problem {index}: found\n{one!r}\nexpected\n{other!r}")
    raise AssertionError(f"found {len(seen)} problems, expected {len(expected)}:\n{seen!r}")


# ---- known_type
KNOWN_TYPE = [
    pytest.param(
        dict(instance_type="ml.p3.2xlarg"),
        [
            (
                "error",
                "instance_type",
                "'ml.p3.2xlarg' is not a SageMaker training instance type.",
                "set instance_type='ml.p3.2xlarge'; or set instance_type='ml.t3.2xlarge'; or set "
                "instance_type='ml.p3.8xlarge'; or see `safe-estimators catalog` for the types.",
                (
                    (("instance_type", "ml.p3.2xlarge"),),
                    (("instance_type", "ml.t3.2xlarge"),),
                    (("instance_type", "ml.p3.8xlarge"),),
                ),
            ),
        ],
        id="a misspelt type: the three closest offered",
    ),
    pytest.param(
        dict(instance_type="zzzz"),
        [
            (
                "error",
                "instance_type",
                "'zzzz' is not a SageMaker training instance type.",
                "see `safe-estimators catalog` for the types.",
                (),
            ),
        ],
        id="no close name: the catalog named",
    ),
    pytest.param(
        dict(instance_type=ParameterString("T", default_value="ml.p3.2xlarg")),
        [
            (
                "error",
                "instance_type",
                "'ml.p3.2xlarg' is not a SageMaker training instance type.",
                "set instance_type='ml.p3.2xlarge'; or set instance_type='ml.t3.2xlarge'; or set "
                "instance_type='ml.p3.8xlarge'; or see `safe-estimators catalog` for the types.",
                (
                    (("instance_type", "ml.p3.2xlarge"),),
                    (("instance_type", "ml.t3.2xlarge"),),
                    (("instance_type", "ml.p3.8xlarge"),),
                ),
            ),
        ],
        id="a parameter's misspelt default",
    ),
    pytest.param(
        dict(instance_type="ml.p3.2xlarge"),
        [],
        id="a known type",
    ),
    pytest.param(
        dict(instance_type="local"),
        [],
        id="local mode",
    ),
    pytest.param(
        dict(instance_type="local_gpu"),
        [],
        id="local GPU mode",
    ),
    pytest.param(
        dict(instance_type=ParameterString("T")),
        [],
        id="a parameter without a default",
    ),
    pytest.param(
        dict(
            instance_groups=[
                {"instance_group_name": "a", "instance_type": "ml.p3.2xlarg", "instance_count": 1}
            ]
        ),
        [],
        id="instance groups: checked per group",
    ),
]

# ---- pipeline_type
PIPELINE_TYPE = [
    pytest.param(
        dict(
            instance_type=ParameterString("TrainingType"),
            training_compiler=True,
            framework_version="2.3.0",
            py_version="py311",
        ),
        [
            (
                "error",
                "instance_type",
                "is the pipeline parameter 'TrainingType' without a default_value; the values "
                "derived from its GPU count, fixed in the pipeline definition now, cannot be "
                "computed.",
                "give it a default: ParameterString('TrainingType', "
                "default_value='ml.p3.8xlarge').",
                (),
            ),
        ],
        id="no default, GPU-derived values",
    ),
    pytest.param(
        dict(
            instance_type=ParameterString("TrainingType"),
            framework_version="2.3.0",
            py_version="py311",
        ),
        [
            (
                "error",
                "instance_type",
                "is the pipeline parameter 'TrainingType' without a default_value; the SageMaker "
                "SDK picks the container image (CPU or GPU) from the instance type when the "
                "pipeline is defined, and refuses an empty one (ValueError: Empty SageMaker "
                "instance type).",
                "give it a default: ParameterString('TrainingType', "
                "default_value='ml.p3.8xlarge'), or give image_uri.",
                (),
            ),
        ],
        id="no default, the SDK picks the image",
    ),
    pytest.param(
        dict(instance_type=ParameterString("TrainingType"), image_uri="1.dkr.ecr/x:1"),
        [
            (
                "warning",
                "instance_type",
                "is the pipeline parameter 'TrainingType' without a default_value, known only "
                "when the pipeline runs: the instance type check and the checks that read its "
                "GPUs are skipped.",
                "give it a default: ParameterString('TrainingType', "
                "default_value='ml.p3.8xlarge').",
                (),
            ),
        ],
        id="no default, image_uri given: a warning",
    ),
    pytest.param(
        dict(
            instance_type=ParameterString(
                "TrainingType",
                default_value="ml.p3.2xlarge",
                enum_values=["ml.p3.8xlarge", "ml.g5.xlarge"],
            ),
            framework_version="2.3.0",
            py_version="py311",
        ),
        [
            (
                "error",
                "instance_type",
                "the pipeline parameter 'TrainingType' defaults to 'ml.p3.2xlarge', which is not "
                "one of its enum_values (ml.p3.8xlarge, ml.g5.xlarge).",
                "add the default to enum_values, or pick a default among them.",
                (),
            ),
        ],
        id="a default outside enum_values",
    ),
    pytest.param(
        dict(
            instance_type=ParameterString(
                "TrainingType",
                default_value="ml.p3.2xlarge",
                enum_values=["ml.p3.2xlarge", "ml.p3.2xlarg"],
            ),
            framework_version="2.3.0",
            py_version="py311",
        ),
        [
            (
                "error",
                "instance_type.enum_values.ml.p3.2xlarg",
                "'ml.p3.2xlarg' is not a SageMaker training instance type.",
                "did you mean 'ml.p3.2xlarge'?",
                (),
            ),
        ],
        id="a misspelt enum value",
    ),
    pytest.param(
        dict(
            instance_type=ParameterString(
                "TrainingType",
                default_value="ml.p3.2xlarge",
                enum_values=["ml.p3.2xlarge", "ml.g6.xlarge"],
            ),
            training_compiler=True,
            framework_version="2.3.0",
            py_version="py311",
        ),
        [
            (
                "error",
                "instance_type.enum_values.ml.g6.xlarge",
                "Training Compiler does not support the g6 family.",
                "allow only p3, p3dn, g4dn, p4d, g5 instance types.",
                (),
            ),
        ],
        id="compiler: an enum value of a family it does not support",
    ),
    pytest.param(
        dict(
            instance_type=ParameterString(
                "TrainingType",
                default_value="ml.p3.2xlarge",
                enum_values=["ml.p3.2xlarge", "ml.g4dn.xlarge", "ml.p3.8xlarge"],
            ),
            training_compiler=True,
            framework_version="2.3.0",
            py_version="py311",
        ),
        [
            (
                "error",
                "instance_type.enum_values.ml.p3.8xlarge",
                "has 4 GPUs but the default ml.p3.2xlarge has 1; the GPU-derived values fixed in "
                "the pipeline definition would be wrong for it.",
                "allow only instance types with 1 GPU, or build one step per GPU count.",
                (),
            ),
        ],
        id="compiler: enum values of another GPU count",
    ),
    pytest.param(
        dict(
            instance_type=ParameterString("TrainingType", default_value="ml.p3.8xlarge"),
            training_compiler=True,
            framework_version="2.3.0",
            py_version="py311",
        ),
        [
            (
                "error",
                "instance_type",
                "is the pipeline parameter 'TrainingType'; values derived from its default "
                "ml.p3.8xlarge (4 GPUs) would be wrong at run time for an instance with another "
                "GPU count.",
                "pin the choices: ParameterString('TrainingType', default_value='ml.p3.8xlarge', "
                "enum_values=[...types with 4 GPUs...]).",
                (),
            ),
        ],
        id="GPU-derived, no enum_values, 4 GPUs",
    ),
    pytest.param(
        dict(
            instance_type=ParameterString("TrainingType", default_value="ml.p3.2xlarge"),
            training_compiler=True,
            framework_version="2.3.0",
            py_version="py311",
        ),
        [
            (
                "error",
                "instance_type",
                "is the pipeline parameter 'TrainingType'; values derived from its default "
                "ml.p3.2xlarge (1 GPU) would be wrong at run time for an instance with another "
                "GPU count.",
                "pin the choices: ParameterString('TrainingType', default_value='ml.p3.2xlarge', "
                "enum_values=[...types with 1 GPU...]).",
                (),
            ),
        ],
        id="GPU-derived, no enum_values, 1 GPU",
    ),
    pytest.param(
        dict(
            instance_type=ParameterString(
                "TrainingType",
                default_value="ml.p3.8xlarge",
                enum_values=["ml.p3.8xlarge", "ml.g5.12xlarge", "ml.p3.2xlarge", "ml.m5.xlarge"],
            ),
            distribution={"mpi": {"enabled": True}},
            framework_version="2.3.0",
            py_version="py311",
        ),
        [
            (
                "error",
                "instance_type.enum_values.ml.p3.2xlarge",
                "has 1 GPU but the default ml.p3.8xlarge has 4; the GPU-derived values fixed in "
                "the pipeline definition would be wrong for it.",
                "allow only instance types with 4 GPUs, or build one step per GPU count.",
                (),
            ),
            (
                "error",
                "instance_type.enum_values.ml.m5.xlarge",
                "has 0 GPUs but the default ml.p3.8xlarge has 4; the GPU-derived values fixed in "
                "the pipeline definition would be wrong for it.",
                "allow only instance types with 4 GPUs, or build one step per GPU count.",
                (),
            ),
        ],
        id="MPI processes derived, enum values of other GPU counts",
    ),
    pytest.param(
        dict(
            instance_type=ParameterString(
                "TrainingType",
                default_value="ml.p3.2xlarge",
                enum_values=["ml.p3.2xlarge", "ml.p3.2xlarg", "ml.p3.8xlarge"],
            ),
            training_compiler=True,
            framework_version="2.3.0",
            py_version="py311",
        ),
        [
            (
                "error",
                "instance_type.enum_values.ml.p3.2xlarg",
                "'ml.p3.2xlarg' is not a SageMaker training instance type.",
                "did you mean 'ml.p3.2xlarge'?",
                (),
            ),
            (
                "error",
                "instance_type.enum_values.ml.p3.8xlarge",
                "has 4 GPUs but the default ml.p3.2xlarge has 1; the GPU-derived values fixed in "
                "the pipeline definition would be wrong for it.",
                "allow only instance types with 1 GPU, or build one step per GPU count.",
                (),
            ),
        ],
        id="compiler: a misspelt enum value before one of another GPU count",
    ),
    pytest.param(
        dict(
            instance_type=ParameterString(
                "TrainingType",
                default_value="ml.p3.8xlarge",
                enum_values=["ml.p3.8xlarge", "ml.p3.2xlarge"],
            ),
            framework_version="2.3.0",
            py_version="py311",
        ),
        [],
        id="nothing GPU-derived: enum values of any count",
    ),
    pytest.param(
        dict(
            instance_type=ParameterString("TrainingType", default_value="ml.m5.xlarge"),
            distribution={"mpi": {"enabled": True}},
            framework_version="2.3.0",
            py_version="py311",
        ),
        [],
        id="MPI on a CPU default: nothing derived",
    ),
    pytest.param(
        dict(
            instance_type="ml.p3.2xlarge",
            training_compiler=True,
            framework_version="2.3.0",
            py_version="py311",
        ),
        [],
        id="not a parameter",
    ),
    pytest.param(
        dict(
            instance_type=Join(on="", values=["ml.", "p3.2xlarge"]),
            training_compiler=True,
            framework_version="2.3.0",
            py_version="py311",
        ),
        [
            (
                "error",
                "instance_type",
                "is a Join without a default_value; the values derived from its GPU count, fixed "
                "in the pipeline definition now, cannot be computed.",
                "pass a pipeline parameter with a default instead: "
                "ParameterString('TrainingInstanceType', default_value='ml.p3.8xlarge').",
                (),
            ),
        ],
        id="a Join: GPU-derived values",
    ),
    pytest.param(
        dict(
            instance_type=Join(on="", values=["ml.", "p3.2xlarge"]),
            framework_version="2.3.0",
            py_version="py311",
        ),
        [
            (
                "error",
                "instance_type",
                "is a Join without a default_value; the SageMaker SDK picks the container image "
                "(CPU or GPU) from the instance type when the pipeline is defined, and refuses "
                "an empty one (ValueError: Empty SageMaker instance type).",
                "pass a pipeline parameter with a default instead: "
                "ParameterString('TrainingInstanceType', default_value='ml.p3.8xlarge'), or give "
                "image_uri.",
                (),
            ),
        ],
        id="a Join: the SDK picks the image",
    ),
    pytest.param(
        dict(instance_type=ExecutionVariables.PIPELINE_EXECUTION_ID, image_uri="1.dkr.ecr/x:1"),
        [
            (
                "warning",
                "instance_type",
                "is the ExecutionVariable 'PipelineExecutionId' without a default_value, known "
                "only when the pipeline runs: the instance type check and the checks that read "
                "its GPUs are skipped.",
                "pass a pipeline parameter with a default instead: "
                "ParameterString('TrainingInstanceType', default_value='ml.p3.8xlarge').",
                (),
            ),
        ],
        id="an execution variable, image_uri given",
    ),
]

# ---- versions
VERSIONS = [
    pytest.param(
        dict(instance_type="ml.g5.xlarge"),
        [
            (
                "error",
                "framework_version",
                "is required to pick a pytorch training container (no image_uri given).",
                "set framework_version='2.8.0', py_version='py312' (the newest); or set "
                "framework_version: the SDK knows PyTorch 2.8.0, 2.7.1, 2.6.0, 2.5.1, 2.4.0, "
                "2.3.0, 2.2.0, 2.1.0, 2.0.1, 2.0.0, 1.13.1, 1.12.1 and 17 older.",
                ((("framework_version", "2.8.0"), ("py_version", "py312")),),
            ),
            (
                "error",
                "py_version",
                "is required to pick a pytorch training container (no image_uri given).",
                "set py_version: it depends on the framework versions, pick those first (the SDK "
                "knows PyTorch 2.8.0, 2.7.1, 2.6.0, 2.5.1, 2.4.0, 2.3.0, 2.2.0, 2.1.0, 2.0.1, "
                "2.0.0, 1.13.1, 1.12.1 and 17 older).",
                (),
            ),
        ],
        id="pytorch: no versions",
    ),
    pytest.param(
        dict(instance_type="ml.g5.xlarge", framework_version="2.3.0"),
        [
            (
                "error",
                "py_version",
                "is required to pick a pytorch training container (no image_uri given).",
                "set py_version='py311'; or set py_version: the SDK knows for PyTorch 2.3.0: "
                "py311.",
                ((("py_version", "py311"),),),
            ),
        ],
        id="pytorch: no py_version",
    ),
    pytest.param(
        dict(instance_type="ml.g5.xlarge", py_version="py311"),
        [
            (
                "error",
                "framework_version",
                "is required to pick a pytorch training container (no image_uri given).",
                "set framework_version='2.8.0', py_version='py312' (the newest); or set "
                "framework_version: the SDK knows PyTorch 2.8.0, 2.7.1, 2.6.0, 2.5.1, 2.4.0, "
                "2.3.0, 2.2.0, 2.1.0, 2.0.1, 2.0.0, 1.13.1, 1.12.1 and 17 older.",
                ((("framework_version", "2.8.0"), ("py_version", "py312")),),
            ),
        ],
        id="pytorch: no framework_version",
    ),
    pytest.param(
        dict(instance_type="ml.g5.xlarge", py_version="py312"),
        [
            (
                "error",
                "framework_version",
                "is required to pick a pytorch training container (no image_uri given).",
                "set framework_version='2.8.0' (the newest); or set framework_version: the SDK "
                "knows PyTorch 2.8.0, 2.7.1, 2.6.0, 2.5.1, 2.4.0, 2.3.0, 2.2.0, 2.1.0, 2.0.1, "
                "2.0.0, 1.13.1, 1.12.1 and 17 older.",
                ((("framework_version", "2.8.0"),),),
            ),
        ],
        id="pytorch: no framework_version, its py_version",
    ),
    pytest.param(
        dict(instance_type="ml.g5.xlarge", framework_version="9.9", py_version="py311"),
        [
            (
                "error",
                "framework_version",
                "the SageMaker SDK has no PyTorch 9.9 training container.",
                "set framework_version='2.8.0', py_version='py312'; or use one of: 0.4.0, 1.0.0, "
                "1.1.0, 1.2.0, 1.3.1, 1.4.0, 1.5.0, 1.6.0, 1.7.1, 1.8.0, 1.8.1, 1.9.0, 1.9.1, "
                "1.10.0, 1.10.2, 1.11.0, 1.12.0, 1.12.1, 1.13.1, 2.0.0, 2.0.1, 2.1.0, 2.2.0, "
                "2.3.0, 2.4.0, 2.5.1, 2.6.0, 2.7.1, 2.8.0.",
                ((("framework_version", "2.8.0"), ("py_version", "py312")),),
            ),
        ],
        id="pytorch: an unknown version",
    ),
    pytest.param(
        dict(instance_type="ml.g5.xlarge", framework_version="2.3.1", py_version="py311"),
        [
            (
                "error",
                "framework_version",
                "the SageMaker SDK has no PyTorch 2.3.1 training container.",
                "set framework_version='2.3.0'; or set framework_version='2.4.0'; or use one of: "
                "0.4.0, 1.0.0, 1.1.0, 1.2.0, 1.3.1, 1.4.0, 1.5.0, 1.6.0, 1.7.1, 1.8.0, 1.8.1, "
                "1.9.0, 1.9.1, 1.10.0, 1.10.2, 1.11.0, 1.12.0, 1.12.1, 1.13.1, 2.0.0, 2.0.1, "
                "2.1.0, 2.2.0, 2.3.0, 2.4.0, 2.5.1, 2.6.0, 2.7.1, 2.8.0.",
                ((("framework_version", "2.3.0"),), (("framework_version", "2.4.0"),)),
            ),
        ],
        id="pytorch: between two versions",
    ),
    pytest.param(
        dict(instance_type="ml.g5.xlarge", framework_version="2.3", py_version="py39"),
        [
            (
                "error",
                "py_version",
                "PyTorch 2.3.0 containers are built for py311, not 'py39'.",
                "set py_version='py311'; or pass image_uri= with a container built for py39.",
                ((("py_version", "py311"),),),
            ),
        ],
        id="pytorch: a short version with the wrong python",
    ),
    pytest.param(
        dict(
            instance_type="ml.g5.xlarge",
            framework_version="2.0.0",
            training_compiler=True,
            py_version="py310",
        ),
        [
            (
                "error",
                "framework_version",
                "the SageMaker SDK has no PyTorch 2.0.0 Training Compiler training container.",
                "set framework_version='1.13.1', py_version='py39'; or PyTorch 2.0.0 exists only "
                "without Training Compiler; use one of: 1.12.0, 1.13.1.",
                ((("framework_version", "1.13.1"), ("py_version", "py39")),),
            ),
        ],
        id="compiler: a version only without it",
    ),
    pytest.param(
        dict(
            instance_type="ml.g5.xlarge",
            framework_version="1.99.0",
            training_compiler=True,
            py_version="py39",
        ),
        [
            (
                "error",
                "framework_version",
                "the SageMaker SDK has no PyTorch 1.99.0 Training Compiler training container.",
                "set framework_version='1.13.1'; or use one of: 1.12.0, 1.13.1.",
                ((("framework_version", "1.13.1"),),),
            ),
        ],
        id="compiler: a version that exists nowhere",
    ),
    pytest.param(
        dict(instance_type="ml.g5.xlarge", training_compiler=True),
        [
            (
                "error",
                "framework_version",
                "is required to pick a pytorch training container (no image_uri given).",
                "set framework_version='1.13.1', py_version='py39' (the newest); or set "
                "framework_version: the SDK knows PyTorch 1.13.1, 1.12.0.",
                ((("framework_version", "1.13.1"), ("py_version", "py39")),),
            ),
            (
                "error",
                "py_version",
                "is required to pick a pytorch training container (no image_uri given).",
                "set py_version: it depends on the framework versions, pick those first (the SDK "
                "knows PyTorch 1.13.1, 1.12.0).",
                (),
            ),
        ],
        id="compiler: no versions",
    ),
    pytest.param(
        dict(
            instance_type="ml.g5.xlarge",
            framework_version="1.13.1",
            training_compiler=True,
            py_version="py39",
        ),
        [],
        id="compiler: a valid job",
    ),
    pytest.param(
        dict(
            instance_type="ml.m5.xlarge",
            framework_version="1.13.1",
            training_compiler=True,
            py_version="py39",
        ),
        [
            (
                "error",
                "instance_type",
                "PyTorch 1.13.1 containers exist for GPU instances only, and ml.m5.xlarge is a "
                "CPU instance.",
                "set instance_type='ml.g5.xlarge'; or set instance_type='ml.p3.2xlarge'; or pick "
                "a GPU instance type.",
                ((("instance_type", "ml.g5.xlarge"),), (("instance_type", "ml.p3.2xlarge"),)),
            ),
        ],
        id="compiler on a CPU type",
    ),
    pytest.param(
        dict(
            instance_type="local_gpu",
            framework_version="1.13.1",
            training_compiler=True,
            py_version="py39",
        ),
        [],
        id="compiler in local GPU mode",
    ),
    pytest.param(
        dict(
            instance_type="local",
            framework_version="1.13.1",
            training_compiler=True,
            py_version="py39",
        ),
        [],
        id="compiler in local mode",
    ),
    pytest.param(
        dict(
            instance_type="ml.g5.xlarg",
            framework_version="1.13.1",
            training_compiler=True,
            py_version="py39",
        ),
        [],
        id="compiler on an unknown type",
    ),
    pytest.param(
        dict(
            instance_type="ml.g5.xlarge",
            framework_version="2.3.0",
            py_version="py39",
            image_uri="x/y:1",
        ),
        [],
        id="image_uri: nothing to pick",
    ),
    pytest.param(
        dict(instance_type=ParameterString("TrainingType"), framework_version="2.3.0"),
        [
            (
                "error",
                "py_version",
                "is required to pick a pytorch training container (no image_uri given).",
                "set py_version='py311'; or set py_version: the SDK knows for PyTorch 2.3.0: "
                "py311.",
                ((("py_version", "py311"),),),
            ),
        ],
        id="a parameter without default: py_version still needed",
    ),
    pytest.param(
        dict(
            instance_type="ml.p4d.24xlarge",
            framework_version="2.3.1",
            py_version="py311",
            distribution={"torch_distributed": {"enabled": True}},
            model_parallel={"tensor_parallel_degree": 2},
        ),
        [],
        id="SMP v2: its own image table",
    ),
    pytest.param(
        dict(instance_type="ml.trn1.2xlarge", framework_version="1.11.0", py_version="py38"),
        [],
        id="trn1: the Neuron container, right python",
    ),
    pytest.param(
        dict(instance_type="ml.trn1.2xlarge", framework_version="1.11.0", py_version="py39"),
        [
            (
                "error",
                "py_version",
                "PyTorch 1.11.0 Neuron containers are built for py38, not 'py39'.",
                "set py_version='py38'; or pass image_uri= with a container built for py39.",
                ((("py_version", "py38"),),),
            ),
        ],
        id="trn1: the Neuron container, wrong python",
    ),
    pytest.param(
        dict(instance_type="ml.trn1.2xlarge", framework_version="1.13.1", py_version="py38"),
        [
            (
                "error",
                "framework_version",
                "the SageMaker SDK has Trainium (Neuron) training containers for PyTorch 1.11.0 "
                "only; for '1.13.1' on ml.trn1.2xlarge it would silently start PyTorch 1.11.0.",
                "set framework_version='1.11.0'; or pass the image_uri of a newer Neuron deep "
                "learning container (pytorch-training-neuronx).",
                ((("framework_version", "1.11.0"),),),
            ),
        ],
        id="trn1: an unknown Neuron version silently replaced",
    ),
    pytest.param(
        dict(instance_type="ml.trn1.2xlarge", framework_version="1.13.1", py_version="py310"),
        [
            (
                "error",
                "framework_version",
                "the SageMaker SDK has Trainium (Neuron) training containers for PyTorch 1.11.0 "
                "only; for '1.13.1' on ml.trn1.2xlarge with py_version='py310' it refuses "
                'the job ("Unsupported Python version: py310. ... Supported Python version(s): '
                'py38."); with py38 it would silently start PyTorch 1.11.0.',
                "set framework_version='1.11.0', py_version='py38'; or pass the image_uri of a "
                "newer Neuron deep learning container (pytorch-training-neuronx).",
                ((("framework_version", "1.11.0"), ("py_version", "py38")),),
            ),
        ],
        id="trn1: an unknown Neuron version refused for its python",
    ),
    pytest.param(
        dict(instance_type="ml.trn2.48xlarge", framework_version="1.13.1", py_version="py38"),
        [
            (
                "error",
                "framework_version",
                "the SageMaker SDK has Trainium (Neuron) training containers for PyTorch 1.11.0 "
                "only; for '1.13.1' on ml.trn2.48xlarge it would silently start PyTorch 1.11.0.",
                "set framework_version='1.11.0'; or pass the image_uri of a "
                "pytorch-training-neuronx container of Neuron SDK 2.21.0 or later (Trainium2 "
                "needs it).",
                ((("framework_version", "1.11.0"),),),
            ),
        ],
        id="trn2: an unknown Neuron version",
    ),
    pytest.param(
        dict(instance_type="ml.trn2.48xlarge", framework_version="1.11.0", py_version="py38"),
        [
            (
                "error",
                "instance_type",
                "ml.trn2.48xlarge is Trainium2, and the SageMaker SDK's PyTorch 1.11.0 Neuron "
                "container is built on Neuron SDK 2.4.0; Trainium2 needs Neuron SDK 2.21.0 or "
                "later (its NeuronCore-v3 arrived in that release), so this container's runtime "
                "cannot drive the instance's NeuronCores.",
                "set instance_type='ml.trn1.32xlarge' (Trainium1 runs this container); or pass "
                "image_uri= with a pytorch-training-neuronx container of Neuron SDK 2.21.0 or "
                "later (the Neuron deep learning containers list names them).",
                ((("instance_type", "ml.trn1.32xlarge"),),),
            ),
        ],
        id="trn2: a Neuron SDK before Trainium2",
    ),
    pytest.param(
        dict(
            estimator="huggingface",
            instance_type="ml.trn1.2xlarge",
            transformers_version="4.49.0",
            pytorch_version="2.5.1",
            py_version="py311",
        ),
        [
            (
                "error",
                "instance_type",
                "ml.trn1.2xlarge is a Trainium instance, and the SageMaker SDK finds Trainium "
                "training images for pytorch only: the huggingface estimator cannot pick one (it "
                "fails while resolving the image, whatever transformers_version and "
                "pytorch_version say).",
                "pass image_uri= with a Hugging Face Neuron training container "
                "(huggingface-pytorch-training-neuronx), or use the pytorch estimator with that "
                "image_uri.",
                (),
            ),
        ],
        id="trn1: Hugging Face cannot pick an image",
    ),
    pytest.param(
        dict(
            estimator="huggingface",
            instance_type="ml.inf2.xlarge",
            transformers_version="4.49.0",
            pytorch_version="2.5.1",
            py_version="py311",
        ),
        [],
        id="inf2: Hugging Face resolved by the build",
    ),
    pytest.param(
        dict(estimator="huggingface", instance_type="ml.g5.xlarge"),
        [
            (
                "error",
                "transformers_version",
                "is required to pick a huggingface training container (no image_uri given).",
                "set transformers_version: the SDK knows transformers 4.56.2, 4.55.0, 4.49.0, "
                "4.48.0, 4.46.1, 4.36.0, 4.28.1, 4.26.0, 4.17.0, 4.12.3, 4.11.0, 4.10.2 and 3 "
                "older.",
                (),
            ),
            (
                "error",
                "py_version",
                "is required to pick a huggingface training container (no image_uri given).",
                "set py_version: it depends on the framework versions, pick those first (the SDK "
                "knows transformers 4.56.2, 4.55.0, 4.49.0, 4.48.0, 4.46.1, 4.36.0, 4.28.1, "
                "4.26.0, 4.17.0, 4.12.3, 4.11.0, 4.10.2 and 3 older).",
                (),
            ),
            (
                "error",
                "pytorch_version",
                "is required to pick a huggingface training container (no image_uri given).",
                "set pytorch_version: it depends on the framework versions, pick those first "
                "(the SDK knows transformers 4.56.2, 4.55.0, 4.49.0, 4.48.0, 4.46.1, 4.36.0, "
                "4.28.1, 4.26.0, 4.17.0, 4.12.3, 4.11.0, 4.10.2 and 3 older).",
                (),
            ),
        ],
        id="hf: no versions",
    ),
    pytest.param(
        dict(estimator="huggingface", instance_type="ml.g5.xlarge", transformers_version="4.49.0"),
        [
            (
                "error",
                "py_version",
                "is required to pick a huggingface training container (no image_uri given).",
                "set py_version: it depends on the framework versions, pick those first (the SDK "
                "knows PyTorch 2.5.1).",
                (),
            ),
            (
                "error",
                "pytorch_version",
                "is required to pick a huggingface training container (no image_uri given).",
                "set pytorch_version: the SDK knows for transformers 4.49.0: PyTorch 2.5.1.",
                (),
            ),
        ],
        id="hf: transformers only",
    ),
    pytest.param(
        dict(
            estimator="huggingface",
            instance_type="ml.g5.xlarge",
            transformers_version="4.49.0",
            py_version="py311",
        ),
        [
            (
                "error",
                "pytorch_version",
                "is required to pick a huggingface training container (no image_uri given).",
                "set pytorch_version: the SDK knows for transformers 4.49.0: PyTorch 2.5.1.",
                (),
            ),
        ],
        id="hf: no pytorch_version",
    ),
    pytest.param(
        dict(
            estimator="huggingface",
            instance_type="ml.g5.xlarge",
            transformers_version="4.49.0",
            pytorch_version="2.5.1",
        ),
        [
            (
                "error",
                "py_version",
                "is required to pick a huggingface training container (no image_uri given).",
                "set py_version: the SDK knows for PyTorch 2.5.1: py311.",
                (),
            ),
        ],
        id="hf: no py_version",
    ),
    pytest.param(
        dict(
            estimator="huggingface",
            instance_type="ml.g5.xlarge",
            transformers_version="4.11",
            pytorch_version="1.9",
        ),
        [
            (
                "error",
                "py_version",
                "is required to pick a huggingface training container (no image_uri given).",
                "set py_version: the SDK knows for PyTorch 1.9.0: py38.",
                (),
            ),
        ],
        id="hf: no py_version, short versions",
    ),
    pytest.param(
        dict(
            estimator="huggingface",
            instance_type="ml.g5.xlarge",
            transformers_version="4.99",
            pytorch_version="1.9",
        ),
        [
            (
                "error",
                "py_version",
                "is required to pick a huggingface training container (no image_uri given).",
                "set py_version: it depends on the framework versions, pick those first (the SDK "
                "knows transformers 4.56.2, 4.55.0, 4.49.0, 4.48.0, 4.46.1, 4.36.0, 4.28.1, "
                "4.26.0, 4.17.0, 4.12.3, 4.11.0, 4.10.2 and 3 older).",
                (),
            ),
        ],
        id="hf: no py_version, unknown transformers",
    ),
    pytest.param(
        dict(
            estimator="huggingface",
            instance_type="ml.g5.xlarge",
            transformers_version="4.49.0",
            tensorflow_version="2.5",
        ),
        [
            (
                "error",
                "py_version",
                "is required to pick a huggingface training container (no image_uri given).",
                "set py_version: it depends on the framework versions, pick those first (the SDK "
                "has no TensorFlow container for transformers 4.49.0).",
                (),
            ),
        ],
        id="hf: no py_version, no tensorflow container",
    ),
    pytest.param(
        dict(
            estimator="huggingface",
            instance_type="ml.g5.xlarge",
            transformers_version="4.11.0",
            tensorflow_version="2.4",
        ),
        [
            (
                "error",
                "py_version",
                "is required to pick a huggingface training container (no image_uri given).",
                "set py_version: it depends on the framework versions, pick those first (the SDK "
                "knows TensorFlow 2.5.1).",
                (),
            ),
        ],
        id="hf: no py_version, tensorflow",
    ),
    pytest.param(
        dict(
            estimator="huggingface",
            instance_type="ml.g5.xlarge",
            transformers_version="4.99.0",
            pytorch_version="2.5.1",
            py_version="py311",
        ),
        [
            (
                "error",
                "transformers_version",
                "the SageMaker SDK has no Hugging Face training container for transformers 4.99.0.",
                "set transformers_version='4.56.2'; or use one of: 4.4.2, 4.5.0, 4.6.1, 4.10.2, "
                "4.11.0, 4.12.3, 4.17.0, 4.26.0, 4.28.1, 4.36.0, 4.46.1, 4.48.0, 4.49.0, 4.55.0, "
                "4.56.2.",
                ((("transformers_version", "4.56.2"),),),
            ),
        ],
        id="hf: unknown transformers",
    ),
    pytest.param(
        dict(
            estimator="huggingface",
            instance_type="ml.g5.xlarge",
            transformers_version="4.49.0",
            pytorch_version="2.4.0",
            py_version="py311",
        ),
        [
            (
                "error",
                "pytorch_version",
                "the Hugging Face container for transformers 4.49.0 is built with PyTorch 2.5.1, "
                "not 2.4.0.",
                "set pytorch_version='2.5.1'; or set pytorch_version to one of: 2.5.1.",
                ((("pytorch_version", "2.5.1"),),),
            ),
        ],
        id="hf: another pytorch",
    ),
    pytest.param(
        dict(
            estimator="huggingface",
            instance_type="ml.g5.xlarge",
            transformers_version="4.49.0",
            tensorflow_version="2.5.1",
            py_version="py311",
        ),
        [
            (
                "error",
                "tensorflow_version",
                "the Hugging Face container for transformers 4.49.0 is built with no TensorFlow, "
                "not 2.5.1.",
                "use pytorch_version.",
                (),
            ),
        ],
        id="hf: tensorflow where there is none",
    ),
    pytest.param(
        dict(
            estimator="huggingface",
            instance_type="ml.g5.xlarge",
            transformers_version="4.11.0",
            tensorflow_version="2.4.1",
            py_version="py37",
        ),
        [
            (
                "error",
                "tensorflow_version",
                "the Hugging Face container for transformers 4.11.0 is built with TensorFlow "
                "2.5.1, not 2.4.1.",
                "set tensorflow_version='2.5.1'; or set tensorflow_version to one of: 2.5.1.",
                ((("tensorflow_version", "2.5.1"),),),
            ),
        ],
        id="hf: another tensorflow",
    ),
    pytest.param(
        dict(
            estimator="huggingface",
            instance_type="ml.g5.xlarge",
            transformers_version="4.4.2",
            pytorch_version="1.6.0",
            py_version="py37",
        ),
        [
            (
                "error",
                "py_version",
                "transformers 4.4.2 with PyTorch 1.6.0 containers are built for py36, not 'py37'.",
                "set py_version='py36'; or pass image_uri= with a container built for py37.",
                ((("py_version", "py36"),),),
            ),
        ],
        id="hf: pytorch where there is only tensorflow",
    ),
    pytest.param(
        dict(
            estimator="huggingface",
            instance_type="ml.g5.xlarge",
            transformers_version="4.6.1",
            pytorch_version="1.5.0",
            py_version="py36",
        ),
        [
            (
                "error",
                "pytorch_version",
                "the Hugging Face container for transformers 4.6.1 is built with PyTorch 1.6.0, "
                "1.7.1, 1.8.1, not 1.5.0.",
                "set pytorch_version='1.6.0'; or set pytorch_version to one of: 1.6.0, 1.7.1, "
                "1.8.1.",
                ((("pytorch_version", "1.6.0"),),),
            ),
        ],
        id="hf: a pytorch below the container's three",
    ),
    pytest.param(
        dict(instance_type="ml.g5.xlarge", framework_version="1.4.0", py_version="py37"),
        [
            (
                "error",
                "py_version",
                "PyTorch 1.4.0 containers are built for py2, py3, py36, not 'py37'.",
                "set py_version='py36'; or pass image_uri= with a container built for py37.",
                ((("py_version", "py36"),),),
            ),
        ],
        id="pytorch: a python none of its three builds has",
    ),
    pytest.param(
        dict(
            estimator="huggingface",
            instance_type="ml.g5.xlarge",
            transformers_version="4.49.0",
            pytorch_version="2.5.1",
            py_version="py39",
        ),
        [
            (
                "error",
                "py_version",
                "transformers 4.49.0 with PyTorch 2.5.1 containers are built for py311, not "
                "'py39'.",
                "set py_version='py311'; or pass image_uri= with a container built for py39.",
                ((("py_version", "py311"),),),
            ),
        ],
        id="hf: wrong python",
    ),
    pytest.param(
        dict(
            estimator="huggingface",
            instance_type="ml.m5.xlarge",
            transformers_version="4.49.0",
            pytorch_version="2.5.1",
            py_version="py311",
        ),
        [
            (
                "error",
                "instance_type",
                "transformers 4.49.0 with PyTorch 2.5.1 containers exist for GPU instances only, "
                "and ml.m5.xlarge is a CPU instance.",
                "set instance_type='ml.g5.xlarge'; or set instance_type='ml.p3.2xlarge'; or pick "
                "a GPU instance type.",
                ((("instance_type", "ml.g5.xlarge"),), (("instance_type", "ml.p3.2xlarge"),)),
            ),
        ],
        id="hf: on a CPU type",
    ),
    pytest.param(
        dict(
            estimator="huggingface",
            instance_type="ml.g5.xlarge",
            transformers_version="4.49.0",
            pytorch_version="2.5.1",
            tensorflow_version="2.5.1",
            py_version="py311",
        ),
        [],
        id="hf: both frameworks",
    ),
    pytest.param(
        dict(
            estimator="huggingface",
            instance_type="ml.g5.xlarge",
            transformers_version="4.28.1",
            pytorch_version="2.0.0",
            py_version="py310",
            training_compiler=True,
        ),
        [
            (
                "error",
                "transformers_version",
                "the SageMaker SDK has no Hugging Face Training Compiler training container for "
                "transformers 4.28.1.",
                "set transformers_version='4.21.1'; or transformers 4.28.1 exists only without "
                "Training Compiler; use one of: 4.11.0, 4.17.0, 4.21.1.",
                ((("transformers_version", "4.21.1"),),),
            ),
        ],
        id="hf compiler: a version only without it",
    ),
    pytest.param(
        dict(
            estimator="huggingface",
            instance_type="ml.g5.xlarge",
            transformers_version="4.99.0",
            pytorch_version="2.0.0",
            py_version="py310",
            training_compiler=True,
        ),
        [
            (
                "error",
                "transformers_version",
                "the SageMaker SDK has no Hugging Face Training Compiler training container for "
                "transformers 4.99.0.",
                "set transformers_version='4.21.1'; or use one of: 4.11.0, 4.17.0, 4.21.1.",
                ((("transformers_version", "4.21.1"),),),
            ),
        ],
        id="hf compiler: a version that exists nowhere",
    ),
    pytest.param(
        dict(
            estimator="huggingface",
            instance_type="ml.g5.xlarge",
            transformers_version="4.21.1",
            pytorch_version="1.11.0",
            py_version="py38",
        ),
        [
            (
                "error",
                "transformers_version",
                "the SageMaker SDK has no Hugging Face training container for transformers 4.21.1.",
                "set transformers_version='4.17.0'; or set transformers_version='4.26.0'; or "
                "transformers 4.21.1 exists only with Training Compiler "
                "(training_compiler=True); use one of: 4.4.2, 4.5.0, 4.6.1, 4.10.2, 4.11.0, "
                "4.12.3, 4.17.0, 4.26.0, 4.28.1, 4.36.0, 4.46.1, 4.48.0, 4.49.0, 4.55.0, 4.56.2.",
                ((("transformers_version", "4.17.0"),), (("transformers_version", "4.26.0"),)),
            ),
        ],
        id="hf compiler: a version only with it",
    ),
    pytest.param(
        dict(
            estimator="huggingface",
            instance_type="ml.g5.xlarge",
            transformers_version="4.21.1",
            pytorch_version="1.11.0",
            py_version="py38",
            training_compiler=True,
        ),
        [],
        id="hf compiler: valid",
    ),
]

# ---- deprecation
DEPRECATION = [
    pytest.param(
        dict(instance_type="ml.p2.xlarge", framework_version="1.13.1", py_version="py39"),
        [
            (
                "error",
                "instance_type",
                "the SageMaker SDK refuses P2 instances (ml.p2.xlarge) for PyTorch 1.13 and "
                "later (image_uris._validate_instance_deprecation), and framework_version is "
                "1.13.1.",
                "set instance_type='ml.g5.xlarge' (1 A10G); or set framework_version='1.12.1', "
                "py_version='py38'; or use a current GPU type.",
                (
                    (("instance_type", "ml.g5.xlarge"),),
                    (("framework_version", "1.12.1"), ("py_version", "py38")),
                ),
            ),
        ],
        id="P2 with PyTorch 1.13.1",
    ),
    pytest.param(
        dict(instance_type="ml.p2.xlarge", framework_version="1.13", py_version="py39"),
        [
            (
                "error",
                "instance_type",
                "the SageMaker SDK refuses P2 instances (ml.p2.xlarge) for PyTorch 1.13 and "
                "later (image_uris._validate_instance_deprecation), and framework_version is "
                "1.13.",
                "set instance_type='ml.g5.xlarge' (1 A10G); or set framework_version='1.12.1', "
                "py_version='py38'; or use a current GPU type.",
                (
                    (("instance_type", "ml.g5.xlarge"),),
                    (("framework_version", "1.12.1"), ("py_version", "py38")),
                ),
            ),
        ],
        id="P2 with PyTorch 1.13",
    ),
    pytest.param(
        dict(instance_type="ml.p2.xlarge", framework_version="1.12.1", py_version="py38"),
        [],
        id="P2 with PyTorch 1.12.1",
    ),
    pytest.param(
        dict(instance_type="ml.p2.xlarge", framework_version="latest", py_version="py39"),
        [],
        id="P2 with a version that is no version",
    ),
    pytest.param(
        dict(
            instance_type="ml.p2.xlarge",
            framework_version="2.5.1",
            py_version="py311",
            image_uri="x:1",
        ),
        [],
        id="P2 with an image_uri",
    ),
    pytest.param(
        dict(
            estimator="huggingface",
            instance_type="ml.p2.xlarge",
            transformers_version="4.49.0",
            pytorch_version="2.5.1",
            py_version="py311",
        ),
        [],
        id="P2 with Hugging Face",
    ),
    pytest.param(
        dict(instance_type="ml.p3.2xlarge", framework_version="2.5.1", py_version="py311"),
        [],
        id="P3",
    ),
    pytest.param(
        dict(instance_type="ml.p2.xlarge", py_version="py311"),
        [],
        id="P2 without framework_version",
    ),
    pytest.param(
        dict(
            instance_type="ml.p2.xlarge",
            framework_version="2.3.1",
            py_version="py311",
            distribution={"torch_distributed": {"enabled": True}},
            model_parallel={"tensor_parallel_degree": 2},
        ),
        [],
        id="P2 with SMP v2",
    ),
    pytest.param(
        dict(instance_type="ml.p2.xlarg", framework_version="2.5.1", py_version="py311"),
        [],
        id="an unknown type",
    ),
]

# ---- host
HOST = [
    pytest.param(
        dict(instance_type="ml.p6e-gb200.36xlarge", framework_version="2.5.1", py_version="py311"),
        [
            (
                "error",
                "instance_type",
                "ml.p6e-gb200.36xlarge has arm64 host CPUs, and every training image in the "
                "SageMaker SDK's tables is built for x86_64: its container cannot start there.",
                "set instance_type='ml.p6-b200.48xlarge' (an x86_64 type, 8 B200 GPUs); or pass "
                "image_uri= with a training image built for arm64.",
                ((("instance_type", "ml.p6-b200.48xlarge"),),),
            ),
        ],
        id="GB200 with the SDK's image",
    ),
    pytest.param(
        dict(instance_type="ml.p6e-gb200.36xlarge", image_uri="1.dkr.ecr/img:latest"),
        [
            (
                "warning",
                "image_uri",
                "ml.p6e-gb200.36xlarge has arm64 host CPUs; nothing in the image URI says it is "
                "built for arm64, and an x86_64 image cannot start there.",
                "make sure the image (or its manifest list) has a linux/arm64 build.",
                (),
            ),
        ],
        id="GB200 with an image of unknown architecture",
    ),
    pytest.param(
        dict(instance_type="ml.p6e-gb200.36xlarge", image_uri="1.dkr.ecr/img:arm64"),
        [],
        id="GB200 with an arm64 image",
    ),
    pytest.param(
        dict(instance_type="ml.p6e-gb200.36xlarge", image_uri="1.dkr.ecr/img:aarch64"),
        [],
        id="GB200 with an aarch64 image",
    ),
    pytest.param(
        dict(
            instance_type="ml.p6e-gb200.36xlarge",
            image_uri=ParameterString("Image", default_value="1.dkr.ecr/img:latest"),
        ),
        [],
        id="GB200 with an image parameter",
    ),
    pytest.param(
        dict(instance_type="ml.p5.48xlarge", image_uri="1.dkr.ecr/img:latest"),
        [],
        id="P5 with any image",
    ),
    pytest.param(
        dict(instance_type="ml.p5.48xlarg", framework_version="2.5.1", py_version="py311"),
        [],
        id="an unknown type",
    ),
]

# ---- gpu
GPU = [
    pytest.param(
        dict(instance_type="ml.p3.2xlarge", framework_version="2.7.1", py_version="py312"),
        [
            (
                "error",
                "framework_version",
                "the PyTorch 2.7.1 image (CUDA 12.8) has no kernel that runs on ml.p3.2xlarge's "
                "V100 (compute capability 7.0): its PyTorch build compiles 7.5, 8.0, 8.6, 9.0, "
                "10.0, 12.0; PTX: 12.0 (pytorch/pytorch .ci/manywheel/build_cuda.sh on "
                "release/2.7), so the job fails at its first CUDA call ('no kernel image is "
                "available for execution on the device').",
                "use an image built for the V100: framework_version='2.8.0', py_version='py312', "
                "or framework_version='2.6.0', py_version='py312'.",
                (),
            ),
        ],
        id="PyTorch 2.7.1 on a V100",
    ),
    pytest.param(
        dict(instance_type="ml.p3.2xlarge", framework_version="2.8.0", py_version="py312"),
        [],
        id="PyTorch 2.8.0 on a V100",
    ),
    pytest.param(
        dict(instance_type="ml.p2.xlarge", framework_version="2.5.1", py_version="py311"),
        [],
        id="PyTorch 2.5.1 on a K80: the SDK refuses first",
    ),
    pytest.param(
        dict(instance_type="ml.p2.xlarge", framework_version="1.12.1", py_version="py38"),
        [],
        id="PyTorch 1.12.1 on a K80",
    ),
    pytest.param(
        dict(instance_type="ml.p6-b200.48xlarge", framework_version="1.5.0", py_version="py3"),
        [],
        id="PyTorch 1.5.0 on a B200",
    ),
    pytest.param(
        dict(instance_type="ml.p6-b200.48xlarge", framework_version="2.5.1", py_version="py311"),
        [
            (
                "warning",
                "framework_version",
                "the PyTorch 2.5.1 image (CUDA 12.4) may have no kernel for "
                "ml.p6-b200.48xlarge's B200 (compute capability 10.0): its PyTorch wheel is "
                "AWS's own, whose compiled architectures no source lists, and its CUDA predates "
                "the GPU, so only PTX JIT-compiled at start could run it.",
                "use an image built for the B200: framework_version='2.7.1', py_version='py312'.",
                (),
            ),
        ],
        id="PyTorch 2.5.1 on a B200",
    ),
    pytest.param(
        dict(instance_type="ml.p6-b200.48xlarge", framework_version="2.0.1", py_version="py310"),
        [
            (
                "warning",
                "framework_version",
                "the PyTorch 2.0.1 image (CUDA 11.8 or CUDA 12.1) may have no kernel for "
                "ml.p6-b200.48xlarge's B200 (compute capability 10.0): its PyTorch wheel is "
                "AWS's own, whose compiled architectures no source lists, and its CUDA predates "
                "the GPU, so only PTX JIT-compiled at start could run it.",
                "use an image built for the B200: framework_version='2.7.1', py_version='py312'.",
                (),
            ),
        ],
        id="PyTorch 2.0.1 on a B200: either of two CUDA builds",
    ),
    pytest.param(
        dict(instance_type="ml.p6-b200.48xlarge", framework_version="2.6.0", py_version="py312"),
        [
            (
                "warning",
                "framework_version",
                "the PyTorch 2.6.0 image (CUDA 12.6 or CUDA 12.8) may have no kernel for "
                "ml.p6-b200.48xlarge's B200 (compute capability 10.0): its PyTorch wheel is "
                "AWS's own, whose compiled architectures no source lists: the CUDA 12.6 build "
                "predates the GPU (only PTX JIT-compiled at start could run it), the CUDA 12.8 "
                "build is new enough for it, and no source says which of them the image is.",
                "use an image built for the B200: framework_version='2.7.1', py_version='py312'.",
                (),
            ),
        ],
        id="PyTorch 2.6.0 on a B200: one build predates it, the other does not",
    ),
    pytest.param(
        dict(instance_type="ml.p5.48xlarge", framework_version="2.5.1", py_version="py311"),
        [],
        id="PyTorch 2.5.1 on an H100",
    ),
    pytest.param(
        dict(instance_type="ml.p3.2xlarge", framework_version="9.9", py_version="py312"),
        [],
        id="an unknown PyTorch on a V100",
    ),
    pytest.param(
        dict(
            instance_type="ml.p3.2xlarge",
            framework_version="2.7.1",
            py_version="py312",
            image_uri="x:1",
        ),
        [],
        id="an image_uri on a V100",
    ),
    pytest.param(
        dict(
            instance_type="ml.p3.2xlarge",
            framework_version="1.13.1",
            py_version="py39",
            training_compiler=True,
        ),
        [],
        id="compiler on a V100",
    ),
    pytest.param(
        dict(instance_type="ml.trn1.2xlarge", framework_version="1.11.0", py_version="py38"),
        [],
        id="Trainium",
    ),
    pytest.param(
        dict(instance_type="ml.m5.xlarge", framework_version="2.7.1", py_version="py312"),
        [],
        id="a CPU type",
    ),
    pytest.param(
        dict(
            instance_type="ml.p3.16xlarge",
            framework_version="2.7.1",
            py_version="py312",
            distribution={"torch_distributed": {"enabled": True}},
            model_parallel={"tensor_parallel_degree": 2},
        ),
        [],
        id="SMP v2 on a V100",
    ),
    pytest.param(
        dict(
            estimator="huggingface",
            instance_type="ml.p5.4xlarge",
            transformers_version="4.26.0",
            pytorch_version="1.13.1",
            py_version="py39",
        ),
        [
            (
                "warning",
                "pytorch_version",
                "the Hugging Face transformers 4.26.0 with PyTorch 1.13.1 image (CUDA 11.7) may "
                "have no kernel for ml.p5.4xlarge's H100 (compute capability 9.0): its PyTorch "
                "wheel is AWS's own, whose compiled architectures no source lists, and its CUDA "
                "predates the GPU, so only PTX JIT-compiled at start could run it.",
                "use an image built for the H100: transformers_version='4.28.1', "
                "pytorch_version='2.0.0', py_version='py310'.",
                (),
            ),
        ],
        id="hf: H100 on CUDA 11.7",
    ),
    pytest.param(
        dict(
            estimator="huggingface",
            instance_type="ml.p3.2xlarge",
            transformers_version="4.55.0",
            pytorch_version="2.7.1",
            py_version="py312",
        ),
        [
            (
                "error",
                "pytorch_version",
                "the Hugging Face transformers 4.55.0 with PyTorch 2.7.1 image (CUDA 12.8) has "
                "no kernel that runs on ml.p3.2xlarge's V100 (compute capability 7.0): its "
                "PyTorch build compiles 7.5, 8.0, 8.6, 9.0, 10.0, 12.0; PTX: 12.0 "
                "(huggingface.json cu128-ubuntu22.04), so the job fails at its first CUDA call "
                "('no kernel image is available for execution on the device').",
                "use an image built for the V100: transformers_version='4.56.2', "
                "pytorch_version='2.8.0', py_version='py312', or transformers_version='4.49.0', "
                "pytorch_version='2.5.1', py_version='py311'.",
                (),
            ),
        ],
        id="hf: 2.7.1 on a V100",
    ),
    pytest.param(
        dict(
            estimator="huggingface",
            instance_type="ml.p2.xlarge",
            transformers_version="4.49.0",
            pytorch_version="2.5.1",
            py_version="py311",
        ),
        [
            (
                "error",
                "pytorch_version",
                "the Hugging Face transformers 4.49.0 with PyTorch 2.5.1 image (CUDA 12.4) has "
                "no kernel that runs on ml.p2.xlarge's K80 (compute capability 3.7): CUDA 12.4 "
                "runs nothing below compute capability 5.0, so the job fails at its first CUDA "
                "call ('no kernel image is available for execution on the device').",
                "use an image built for the K80: transformers_version='4.28.1', "
                "pytorch_version='2.0.0', py_version='py310'.",
                (),
            ),
        ],
        id="hf: CUDA 12.4 on a K80",
    ),
    pytest.param(
        dict(
            estimator="huggingface",
            instance_type="ml.p6-b200.48xlarge",
            transformers_version="4.11.0",
            tensorflow_version="2.5.1",
            py_version="py37",
        ),
        [
            (
                "warning",
                "tensorflow_version",
                "the Hugging Face transformers 4.11.0 with TensorFlow 2.5.1 image (CUDA 11.2) "
                "may have no kernel for ml.p6-b200.48xlarge's B200 (compute capability 10.0): "
                "its TensorFlow build is AWS's own, whose compiled architectures no source "
                "lists, and its CUDA predates the GPU, so only PTX JIT-compiled at start could "
                "run it.",
                "use an image built for the B200: transformers_version='4.56.2', "
                "pytorch_version='2.8.0', py_version='py312'.",
                (),
            ),
        ],
        id="hf: tensorflow on a B200",
    ),
    pytest.param(
        dict(
            estimator="huggingface",
            instance_type="ml.p5.48xlarge",
            transformers_version="4.11.0",
            tensorflow_version="2.5.1",
            py_version="py37",
        ),
        [
            (
                "warning",
                "tensorflow_version",
                "the Hugging Face transformers 4.11.0 with TensorFlow 2.5.1 image (CUDA 11.2) "
                "may have no kernel for ml.p5.48xlarge's H100 (compute capability 9.0): its "
                "TensorFlow build is AWS's own, whose compiled architectures no source lists, "
                "and its CUDA predates the GPU, so only PTX JIT-compiled at start could run it.",
                "use an image built for the H100: transformers_version='4.56.2', "
                "pytorch_version='2.8.0', py_version='py312'.",
                (),
            ),
        ],
        id="hf: tensorflow on an H100: the newest PyTorch image offered",
    ),
    pytest.param(
        dict(
            estimator="huggingface",
            instance_type="ml.p6-b200.48xlarge",
            transformers_version="4.49.0",
            pytorch_version="2.5.1",
            py_version="py311",
        ),
        [
            (
                "warning",
                "pytorch_version",
                "the Hugging Face transformers 4.49.0 with PyTorch 2.5.1 image (CUDA 12.4) may "
                "have no kernel for ml.p6-b200.48xlarge's B200 (compute capability 10.0): its "
                "PyTorch wheel is AWS's own, whose compiled architectures no source lists, and "
                "its CUDA predates the GPU, so only PTX JIT-compiled at start could run it.",
                "use an image built for the B200: transformers_version='4.55.0', "
                "pytorch_version='2.7.1', py_version='py312'.",
                (),
            ),
        ],
        id="hf: 2.5.1 on a B200",
    ),
    pytest.param(
        dict(
            estimator="huggingface",
            instance_type="ml.p2.xlarge",
            transformers_version="4.11.0",
            tensorflow_version="2.5.1",
            py_version="py37",
        ),
        [],
        id="hf: tensorflow on a K80",
    ),
    pytest.param(
        dict(
            estimator="huggingface",
            instance_type="ml.p3.2xlarge",
            transformers_version="4.55",
            pytorch_version="2.7",
            py_version="py312",
        ),
        [
            (
                "error",
                "pytorch_version",
                "the Hugging Face transformers 4.55.0 with PyTorch 2.7.1 image (CUDA 12.8) has "
                "no kernel that runs on ml.p3.2xlarge's V100 (compute capability 7.0): its "
                "PyTorch build compiles 7.5, 8.0, 8.6, 9.0, 10.0, 12.0; PTX: 12.0 "
                "(huggingface.json cu128-ubuntu22.04), so the job fails at its first CUDA call "
                "('no kernel image is available for execution on the device').",
                "use an image built for the V100: transformers_version='4.56.2', "
                "pytorch_version='2.8.0', py_version='py312', or transformers_version='4.49.0', "
                "pytorch_version='2.5.1', py_version='py311'.",
                (),
            ),
        ],
        id="hf: short versions on a V100",
    ),
    pytest.param(
        dict(
            estimator="huggingface",
            instance_type="ml.p3.2xlarge",
            pytorch_version="2.7.1",
            py_version="py312",
        ),
        [],
        id="hf: no transformers_version",
    ),
    pytest.param(
        dict(
            estimator="huggingface",
            instance_type="ml.p3.2xlarge",
            transformers_version="4.55.0",
            py_version="py312",
        ),
        [],
        id="hf: no pytorch_version",
    ),
    pytest.param(
        dict(
            estimator="huggingface",
            instance_type="ml.p3.2xlarge",
            transformers_version="4.99.0",
            pytorch_version="2.7.1",
            py_version="py312",
        ),
        [],
        id="hf: an unknown transformers",
    ),
    pytest.param(
        dict(
            estimator="huggingface",
            instance_type="ml.p3.2xlarge",
            transformers_version="4.55.0",
            pytorch_version="2.5.1",
            py_version="py312",
        ),
        [],
        id="hf: another pytorch",
    ),
]


@pytest.mark.parametrize(("options", "expected"), KNOWN_TYPE)
def test_the_instance_type_is_one_sagemaker_trains_on(options, expected):
    _check(instance.instance_type_known(_context(**options)), expected)


@pytest.mark.parametrize(("options", "expected"), PIPELINE_TYPE)
def test_a_pipeline_parameter_instance_type(options, expected):
    _check(instance.pipeline_parameter_instance_type(_context(**options)), expected)


@pytest.mark.parametrize(("options", "expected"), VERSIONS)
def test_the_versions_name_a_container_the_sdk_resolves(options, expected):
    _check(instance.framework_versions(_context(**options)), expected)


@pytest.mark.parametrize(("options", "expected"), DEPRECATION)
def test_the_sdk_refuses_p2_for_pytorch_1_13_and_later(options, expected):
    _check(platform.sdk_instance_deprecation(_context(**options)), expected)


@pytest.mark.parametrize(("options", "expected"), HOST)
def test_the_image_is_built_for_the_host_cpu(options, expected):
    _check(platform.host_architecture(_context(**options)), expected)


@pytest.mark.parametrize(("options", "expected"), GPU)
def test_the_image_has_a_kernel_for_the_gpu(options, expected):
    _check(platform.container_runs_on_gpu(_context(**options)), expected)


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("ml.p3.2xlarg", "did you mean ml.p3.2xlarge, ml.t3.2xlarge, ml.p3.8xlarge?"),
        ("zzzz", "see `safe-estimators catalog` for the types."),
    ],
)
def test_an_unknown_type_elsewhere_than_instance_type_names_the_closest_in_its_hint(name, hint):
    # an instance group's type: the names are said, not offered as a change to instance_type
    path = "instance_groups.0.instance_type"
    _check(
        [instance.unknown_type_problem(path, name)],
        [("error", path, f"{name!r} is not a SageMaker training instance type.", hint, ())],
    )


def test_a_known_type_anywhere_is_no_problem():
    assert instance.unknown_type_problem("instance_groups.0.instance_type", "ml.p3.2xlarge") is None


RECIPE_FIX = (
    "pass image_uri= with an image{newer} for this GPU, or use an instance type whose GPU the "
    "recipe image supports (ml.p5.48xlarge, H100)."
)


@pytest.mark.parametrize(
    ("cuda_version", "instance_type", "image_uri", "expected"),
    [
        pytest.param(
            "12.1",
            "ml.p2.xlarge",
            None,
            [
                (
                    "error",
                    "image_uri",
                    "the recipe image (CUDA 12.1) has no kernel that runs on ml.p2.xlarge's K80 "
                    "(compute capability 3.7): CUDA 12.1 runs nothing below compute capability "
                    "5.0, so the job fails at its first CUDA call ('no kernel image is available "
                    "for execution on the device').",
                    RECIPE_FIX.format(newer=""),  # no CUDA release runs a K80 again
                    (),
                ),
            ],
            id="a K80: no kernel",
        ),
        pytest.param(
            "12.1",
            "ml.p6-b200.48xlarge",
            None,
            [
                (
                    "warning",
                    "image_uri",
                    "the recipe image (CUDA 12.1) may have no kernel for ml.p6-b200.48xlarge's "
                    "B200 (compute capability 10.0): its PyTorch wheel is AWS's own, whose "
                    "compiled architectures no source lists, and its CUDA predates the GPU, so "
                    "only PTX JIT-compiled at start could run it.",
                    RECIPE_FIX.format(newer=" built with CUDA 12.8 or later"),
                    (),
                ),
            ],
            id="a B200: only PTX",
        ),
        pytest.param(
            "11.0",
            "ml.p5.48xlarge",
            None,
            [
                (
                    "warning",
                    "image_uri",
                    "the recipe image (CUDA 11.0) may have no kernel for ml.p5.48xlarge's H100 "
                    "(compute capability 9.0): its PyTorch wheel is AWS's own, whose compiled "
                    "architectures no source lists, and its CUDA predates the GPU, so only PTX "
                    "JIT-compiled at start could run it.",
                    RECIPE_FIX.format(newer=" built with CUDA 11.8 or later"),
                    (),
                ),
            ],
            id="an H100 on CUDA 11.0: only PTX",
        ),
        pytest.param("12.1", "ml.p5.48xlarge", None, [], id="an H100 on CUDA 12.1"),
        pytest.param("12.1", "ml.p6-b200.48xlarge", "1.dkr.ecr/img:1", [], id="an image_uri"),
        pytest.param("12.1", "ml.m5.xlarge", None, [], id="a CPU type"),
        pytest.param("12.1", "ml.p6-b200.48xlarg", None, [], id="an unknown type"),
    ],
)
def test_the_recipe_image_has_a_kernel_for_the_gpu(
    cuda_version, instance_type, image_uri, expected
):
    options = {"instance_type": instance_type, "framework_version": "2.3.0", "py_version": "py311"}
    if image_uri is not None:
        options["image_uri"] = image_uri
    found = platform.recipe_image_runs_on_gpu(_context(**options), "recipe", cuda_version, "2.2.0")
    _check(found, expected)


@pytest.mark.parametrize(
    ("versions", "listed"),
    [
        (12, "the SDK knows PyTorch 1.11, 1.10, 1.9, 1.8, 1.7, 1.6, 1.5, 1.4, 1.3, 1.2, 1.1, 1.0"),
        (
            13,
            "the SDK knows PyTorch 1.12, 1.11, 1.10, 1.9, 1.8, 1.7, 1.6, 1.5, 1.4, 1.3, 1.2, 1.1 "
            "and 1 older",
        ),
    ],
)
def test_a_hint_lists_the_12_newest_versions_and_counts_the_rest(versions, listed):
    # at the boundary: 12 versions are all shown, the 13th is counted
    assert instance._listed(tuple(f"1.{i}" for i in range(versions)), "PyTorch") == listed


def test_the_recipe_image_is_judged_as_aws_builds_it_not_as_pytorchs_wheel():
    # PyTorch's own 2.7.1 cu128 wheel has no Volta kernel (test_the_image_has_a_kernel_for_the_gpu);
    # the recipe image's PyTorch is AWS's build, whose architectures no source lists: a V100
    # with CUDA 12.8 is no verdict, not an error
    ctx = _context(instance_type="ml.p3.2xlarge", framework_version="2.3.0", py_version="py311")
    _check(platform.recipe_image_runs_on_gpu(ctx, "recipe", "12.8", "2.7.1"), [])


@pytest.mark.parametrize(
    ("current", "expected"),
    [
        ("2.0", ["3.0", "1.0"]),  # the job's own version is neither above nor below it
        ("3.0", ["4.0", "2.0"]),  # a key that is no version is passed over, not the end
        ("latest", ["4.0"]),  # no version to compare with: the newest
    ],
)
def test_the_fixes_offered_are_the_nearest_versions_strictly_above_and_below(current, expected):
    options = ["1.0", "2.0", "3.0", "not-a-version", "4.0"]
    assert platform._around(options, current, key=str) == expected


def test_builds_read_apart_say_each_reading_and_name_no_source_where_one_is_known() -> None:
    # No image of the SDK's tables mixes a known build with a missing kernel today: the rule's
    # wording is pinned on builds made for it.
    from safe_estimators._facts.cuda import Build
    from safe_estimators._rules.platform import _image_verdict

    ctx = _context(instance_type="ml.p3.2xlarge", framework_version="2.7.1", py_version="py312")
    known = (Build("12.8", ("7.5", "8.0"), (), "a"), Build("12.9", ("7.0",), (), "b"))
    [problem] = _image_verdict(ctx, "7.0", "X", known, "framework_version", lambda c, v: "fix.")
    assert (problem.severity, problem.message) == (
        "warning",
        "the X image (CUDA 12.8 or CUDA 12.9) may have no kernel for ml.p3.2xlarge's V100 "
        "(compute capability 7.0): the CUDA 12.8 build has no kernel for it, the CUDA 12.9 "
        "build is new enough for it, and no source says which of them the image is.",
    )
    # one build has no kernel, the other none listed: that one's source is named
    unknown = (Build("12.8", ("7.5",), (), "a"), Build("12.9"))
    [problem] = _image_verdict(ctx, "7.0", "X", unknown, "framework_version", lambda c, v: "f.")
    assert "the CUDA 12.8 build has no kernel for it, the CUDA 12.9 build is new enough" in (
        problem.message
    )
    assert "AWS's own" not in problem.message
    # the error names its build's architectures for the capability
    only = (Build("12.8", ("7.5",), (), "a source"),)
    [problem] = _image_verdict(ctx, "7.0", "X", only, "framework_version", lambda c, v: "f.")
    assert "its PyTorch build compiles 7.5; no PTX (a source)" in problem.message
