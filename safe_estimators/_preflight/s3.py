"""Every S3 location the job names: the bucket exists and is in the job's region, and an input
prefix holds at least one object.

A bucket in another region fails the job (``BucketRegionError``), for outputs only at the end,
when the artifacts are uploaded after the run is paid for. GetBucketLocation answers with an
empty constraint for us-east-1 and ``EU`` for eu-west-1 (S3's legacy names).
"""

from __future__ import annotations

from typing import Any

from safe_estimators._preflight.context import Context, error_code
from safe_estimators._preflight.job import Location
from safe_estimators._problems import Problem

_LEGACY = {"": "us-east-1", "EU": "eu-west-1"}


def _region(answer: dict[str, Any]) -> str:
    constraint = str(answer.get("LocationConstraint") or "")
    return _LEGACY.get(constraint, constraint)


def check(ctx: Context) -> list[Problem]:
    job = ctx.job
    placeholder = "bucket" in job.placeholders
    locations = [
        loc for loc in job.locations
        if loc.bucket and not (placeholder and loc.bucket == _placeholder_bucket())
    ]  # fmt: skip
    if not locations or not job.remote:
        return []
    by_bucket: dict[str, list[Location]] = {}
    for location in locations:
        by_bucket.setdefault(location.bucket, []).append(location)
    problems = ctx.each(lambda b: _bucket(ctx, b, by_bucket[b]), sorted(by_bucket))
    inputs = [loc for loc in locations if loc.kind == "input" and not _missing(problems, loc)]
    return problems + ctx.each(lambda loc: _holds(ctx, loc), inputs)


def _placeholder_bucket() -> str:
    from safe_estimators._targets.shared import PLACEHOLDER_BUCKET

    return PLACEHOLDER_BUCKET


def _missing(problems: list[Problem], location: Location) -> bool:
    return any(p.path == location.path and p.severity == "error" for p in problems)


def _bucket(ctx: Context, bucket: str, locations: list[Location]) -> list[Problem]:
    first = locations[0]
    try:
        answer = ctx.call(first.path, "s3", "GetBucketLocation", Bucket=bucket)
    except Exception as exc:
        if error_code(exc) == "NoSuchBucket":
            return [
                Problem(
                    loc.path,
                    f"the bucket {bucket!r} of {loc.uri} does not exist.",
                    f"create it in {ctx.job.region}, or use an existing bucket in that region.",
                )
                for loc in locations
            ]
        raise
    region = _region(answer)
    if region == ctx.job.region:
        return []
    return [
        Problem(
            loc.path,
            f"the bucket {bucket!r} of {loc.uri} is in {region}, the job in {ctx.job.region}: "
            "SageMaker refuses it (BucketRegionError), for an output only at the end of the "
            "run, when the artifacts are uploaded.",
            f"use a bucket in {ctx.job.region}, or run the job in {region}.",
        )
        for loc in locations
    ]


def _holds(ctx: Context, location: Location) -> list[Problem]:
    answer = ctx.call(
        location.path, "s3", "ListObjectsV2", Bucket=location.bucket, Prefix=location.prefix,
        MaxKeys=1,
    )  # fmt: skip
    if answer.get("KeyCount", len(answer.get("Contents", []))):
        return []
    return [
        Problem(
            location.path,
            f"{location.uri} holds no object: SageMaker fails the job when it downloads the "
            "channel ('No S3 objects found under S3 URL').",
            "upload the data first, or fix the prefix.",
        )
    ]
