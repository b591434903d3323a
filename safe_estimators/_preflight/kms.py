"""The job's KMS keys exist, are enabled, are symmetric encryption keys and are in its region.

A disabled key or one in another region fails the job, for the output key only when the
artifacts are encrypted at the end of the run.
"""

from __future__ import annotations

from safe_estimators._preflight.context import Context, error_code
from safe_estimators._problems import Problem


def check(ctx: Context) -> list[Problem]:
    job = ctx.job
    if not job.remote:
        return []
    return ctx.each(lambda key: _key(ctx, *key), job.keys)


def _key(ctx: Context, path: str, key: str) -> list[Problem]:
    region = ctx.job.region
    if key.startswith("arn:"):
        key_region = key.split(":")[3]
        if key_region != region:
            return [
                Problem(
                    path,
                    f"the KMS key {key} is in {key_region}, the job in {region}: KMS keys are "
                    "regional and SageMaker cannot use it.",
                    f"use a key in {region} (a multi-Region replica of it, or another key).",
                )
            ]
    try:
        answer = ctx.call(path, "kms", "DescribeKey", KeyId=key)
    except Exception as exc:
        if error_code(exc) == "NotFoundException":
            return [
                Problem(
                    path,
                    f"the KMS key {key} does not exist in {region}.",
                    "use the ARN of an existing key in the job's region.",
                )
            ]
        raise
    metadata = answer["KeyMetadata"]
    state = metadata.get("KeyState")
    if state != "Enabled":
        return [
            Problem(
                path,
                f"the KMS key {key} is {state}, not Enabled: SageMaker cannot encrypt with it.",
                "enable the key (kms enable-key), cancel its deletion, or use another key.",
            )
        ]
    spec = metadata.get("KeySpec", metadata.get("CustomerMasterKeySpec"))
    usage = metadata.get("KeyUsage")
    if usage not in (None, "ENCRYPT_DECRYPT") or spec not in (None, "SYMMETRIC_DEFAULT"):
        return [
            Problem(
                path,
                f"the KMS key {key} is a {spec} key for {usage}: SageMaker "
                "encrypts with symmetric encryption keys only.",
                "use a symmetric encryption key (KeySpec SYMMETRIC_DEFAULT).",
            )
        ]
    return []
