"""Rules about the training code: a local entry point and source folder must exist.

The SDK finds out only at ``fit()``, when it packs the code for upload. Sources it does not read
from this machine (S3, a git repository, a SageMaker Pipelines variable) are left alone.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from safe_estimators._bounds import quote
from safe_estimators._context import Context
from safe_estimators._facts.code_paths import remote_source_dir, s3_entry_point
from safe_estimators._problems import Problem
from safe_estimators._spec import is_pipeline_variable


def _remote(value: object) -> bool:
    return not isinstance(value, str) or remote_source_dir(value)


def source_code_exists(ctx: Context) -> Iterator[Problem]:
    """A local source_dir is a folder and the entry point a regular file in it (or on its own)."""
    spec = ctx.spec
    # The checks below skip a pipeline variable as well (it is not a string, and a remote
    # source_dir), so no test can tell this early return's mutants apart; it says why.
    # pragma: no mutate start
    if is_pipeline_variable(spec.entry_point) or is_pipeline_variable(spec.source_dir):
        return  # the code is read from S3 when the pipeline runs (_rules.pipelines)
    # pragma: no mutate end
    entry_point = spec.entry_point
    if s3_entry_point(spec.entry_point):
        yield Problem(
            "entry_point",
            f"{quote(spec.entry_point)} is an S3 URI; the SDK takes only a local entry point "
            "(it raises 'Must be a path to a local file').",
            "give source_dir the S3 URI of a sourcedir.tar.gz and entry_point the script's "
            "name inside it, or a local script.",
        )
        return
    if spec.extra.get("git_config") or not isinstance(entry_point, str) or not entry_point:
        return
    source_dir = spec.source_dir
    if source_dir is not None:
        if _remote(source_dir):
            return
        if ctx.source_folder is None:  # not a folder on this machine
            exists = os.path.exists(str(source_dir))
            what = "is a file, not a folder" if exists else "does not exist"
            yield Problem(
                "source_dir",
                f"{quote(source_dir)} {what}; the SDK packs this folder with the entry point at "
                "fit().",
                "give the folder that holds the training script (relative to the spec file, or "
                "to the current directory in Python), or an S3 URI of a sourcedir.tar.gz.",
            )
            return
    if _remote(spec.entry_point):
        return
    path = os.path.join(str(source_dir or ""), entry_point)
    if not os.path.isfile(path):
        where = f" in source_dir {quote(source_dir)}" if source_dir else ""
        what = "is not a regular file" if os.path.exists(path) else "does not exist"
        yield Problem(
            "entry_point",
            f"{quote(spec.entry_point)}{where} {what} ({quote(os.path.abspath(path), 200)}).",
            "give the training script's path"
            + (" relative to source_dir." if source_dir else ", or set source_dir to its folder."),
        )
