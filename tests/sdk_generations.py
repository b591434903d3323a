"""What tests need from whichever SageMaker SDK generation is installed.

sagemaker 2 keeps the pipeline parameters in ``sagemaker.workflow.parameters``, sagemaker 3 in
``sagemaker.core.workflow.parameters`` (the same classes: ``ParameterBoolean`` is a
``functools.partial`` of ``Parameter`` in both).
"""

from __future__ import annotations

try:
    from sagemaker.workflow.parameters import (  # sagemaker 2
        ParameterBoolean,
        ParameterInteger,
        ParameterString,
    )
except ImportError:  # sagemaker 3
    from sagemaker.core.workflow.parameters import (  # type: ignore[no-redef]
        ParameterBoolean,
        ParameterInteger,
        ParameterString,
    )

__all__ = ["ParameterBoolean", "ParameterInteger", "ParameterString"]
