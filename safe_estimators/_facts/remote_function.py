"""The SageMaker SDK's ``@remote`` decorator, read from the installed SDK's source.

sagemaker 2.x ships it as ``sagemaker.remote_function`` (``remote_function/client.py``,
``remote_function/job.py``); sagemaker 3.x as ``sagemaker.core.remote_function`` (re-exported by
the deprecated ``sagemaker.train.remote_function``). ``sdk_file`` finds either layout, so the
keyword names and the facts below are the installed generation's own.
"""

from __future__ import annotations

import ast
import functools
import sys

from safe_estimators._distributions._sdk_source import sdk_parameters
from safe_estimators._facts.sdk_files import sdk_file

CLIENT = "remote_function/client.py"
JOB = "remote_function/job.py"

# The decorator's keyword defaults (client.py ``def remote``; the same in 2.257 and 3.27):
# ``max_runtime_in_seconds: int = 24 * 60 * 60``, ``volume_size: int = 30``,
# ``instance_count: int = 1``, ``keep_alive_period_in_seconds: int = 0``.
DEFAULT_MAX_RUNTIME = 24 * 60 * 60
DEFAULT_INSTANCE_COUNT = 1

# The environment variable that names the Studio image the SDK uses instead of its default
# (job.py ``_JobSettings._get_default_image``).
STUDIO_IMAGE_VARIABLE = "SAGEMAKER_INTERNAL_IMAGE_URI"


@functools.cache
def remote_keywords() -> tuple[str, ...]:
    """The keyword names ``remote()`` takes in the installed SDK (``_func`` left out)."""
    names = sdk_parameters(CLIENT, "remote", annotated=False)
    return tuple(name for name in names if not name.startswith("_"))


@functools.cache
def default_image_python_versions() -> tuple[str, ...]:
    """The local Python versions (``"310"``) for which the SDK has a default image: without
    ``image_uri`` (and outside Studio) any other version makes the SDK raise when the job
    starts. Read from the literal list in ``_JobSettings._get_default_image``."""
    tree = ast.parse(sdk_file(JOB).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "_get_default_image":
            for item in ast.walk(node):
                if (
                    isinstance(item, ast.Compare)
                    and isinstance(item.left, ast.Name)
                    and item.left.id == "py_version"
                    and isinstance(item.ops[0], ast.NotIn)
                ):
                    return tuple(ast.literal_eval(item.comparators[0]))
    raise LookupError(f"sagemaker/{JOB} has no default-image Python list")


def local_python() -> str:
    """This interpreter's version as the SDK writes it (``"311"``): the default image follows
    the Python that defines and submits the function."""
    return f"{sys.version_info[0]}{sys.version_info[1]}"
