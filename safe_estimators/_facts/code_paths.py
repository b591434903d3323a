"""Which code paths the SageMaker SDK reads from this machine, and which it leaves remote.

From the installed SDK's code (sagemaker 2.257): ``source_dir`` is remote when it starts with
``s3://`` in any case (``EstimatorBase._prepare_for_training`` and ``fw_utils.tar_and_upload_dir``
test ``directory.lower().startswith("s3://")``), or is a pipeline variable; then the entry point is
a name inside that archive. ``Framework.__init__`` refuses an ``entry_point`` that starts with
``s3://`` (case-sensitive). ``dependencies`` are always packaged from local disk
(``sagemaker.utils.create_tar_file``), and dropped when ``source_dir`` is remote
(``tar_and_upload_dir`` returns before packaging). Any other ``://`` (``x://../..``,
``file://``) is part of a local path: ``os.path`` reads ``x:`` as a folder name.
"""

from __future__ import annotations

from safe_estimators._spec import is_pipeline_variable

# S3_PREFIX of sagemaker/utils.py (2.x) and sagemaker/core/common_utils.py (3.x); a test keeps
# them equal.
S3_PREFIX = "s3://"


def remote_source_dir(value: object) -> bool:
    """``source_dir`` names code the SDK does not read from this machine (S3, a pipeline
    variable); anything else that is a string is a local folder."""
    if is_pipeline_variable(value):
        return True
    return isinstance(value, str) and value.lower().startswith(S3_PREFIX)


def s3_entry_point(value: object) -> bool:
    """An ``entry_point`` the SDK refuses at construction ("Must be a path to a local file")."""
    return isinstance(value, str) and value.startswith(S3_PREFIX)

