"""Rules about the data channels given to ``fit()`` (``inputs:`` in a spec file).

The SDK turns a string channel into an S3 source when it starts with ``s3://`` and into a local
file source when it starts with ``file://`` (``sagemaker.job._Job._format_string_uri_input``),
and raises on anything else. A local file source exists only in local mode: CreateTrainingJob's
DataSource has no such member, so a ``file://`` channel on a SageMaker instance is refused there.
"""

from __future__ import annotations

from collections.abc import Iterator

from safe_estimators._bounds import quote
from safe_estimators._context import Context
from safe_estimators._facts.code_paths import S3_PREFIX
from safe_estimators._problems import Problem

FILE_PREFIX = "file://"


def input_channels(ctx: Context) -> Iterator[Problem]:
    """Every string channel is an S3 URI, or a local ``file://`` one in local mode."""
    inputs = ctx.spec.inputs
    channels = {"": inputs} if isinstance(inputs, str) else inputs or {}
    for name, uri in channels.items():
        path = f"inputs.{name}" if name else "inputs"
        if not isinstance(uri, str) or uri.startswith(S3_PREFIX):
            continue
        if uri.startswith(FILE_PREFIX):
            if not ctx.local:
                yield Problem(
                    path,
                    f"{quote(uri)} is a local file:// channel, which only local mode reads; "
                    "CreateTrainingJob takes S3 (or EFS, FSx) sources, not local files.",
                    "upload the data to S3 and give its s3:// URI, or use instance_type "
                    "'local' to train on this machine.",
                )
        else:
            yield Problem(
                path,
                f"{quote(uri)} is neither an s3:// nor a file:// URI; the SDK raises 'must be a "
                "valid S3 or FILE URI' at fit().",
                "write the channel's S3 URI, such as s3://my-bucket/train/.",
            )
