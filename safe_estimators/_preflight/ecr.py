"""A custom training image in ECR: it exists, and an image in another account lets this
account (or SageMaker) pull it.

AWS's own images (the Deep Learning Containers and the SDK's other image tables) are in AWS's
accounts and are not checked: their registries are read from the installed SDK's
``image_uri_config`` tables.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

import attrs

from safe_estimators._preflight.context import Context, error_code
from safe_estimators._problems import Problem

IMAGE = re.compile(
    r"^(?P<account>\d{12})\.dkr\.ecr(?:-fips)?\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(?:\.cn)?"
    r"/(?P<repository>[^:@]+)(?::(?P<tag>[^@]+))?(?:@(?P<digest>sha256:[0-9a-f]+))?$"
)
PULL = ("ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer")


@attrs.frozen
class Image:
    account: str
    region: str
    repository: str
    tag: str | None
    digest: str | None


def parse(uri: str) -> Image | None:
    found = IMAGE.match(uri)
    if found is None:
        return None
    return Image(*found.group("account", "region", "repository", "tag", "digest"))


@functools.cache
def aws_registries() -> frozenset[str]:
    """The accounts of AWS's image registries, as the installed SageMaker SDK lists them."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("sagemaker")  # finds the package; runs none of it
    accounts: set[str] = set()
    for root in spec.submodule_search_locations or () if spec else ():
        for folder in ("image_uri_config", "core/image_uri_config"):
            for path in Path(root, folder).glob("*.json"):
                _walk(json.loads(path.read_text(encoding="utf-8")), accounts)
    return frozenset(accounts)


def _walk(node: Any, accounts: set[str]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "registries" and isinstance(value, dict):
                accounts.update(v for v in value.values() if isinstance(v, str))
            else:
                _walk(value, accounts)
    elif isinstance(node, list):
        for item in node:
            _walk(item, accounts)


def check(ctx: Context) -> list[Problem]:
    job = ctx.job
    image = parse(job.image) if job.image and job.remote else None
    if image is None or image.account in aws_registries():
        return []
    if image.account == ctx.account:
        return _exists(ctx, image)
    return _pullable(ctx, image)


def _exists(ctx: Context, image: Image) -> list[Problem]:
    wanted = {"imageDigest": image.digest} if image.digest else {"imageTag": image.tag or "latest"}
    try:
        ctx.call(
            "image_uri", "ecr", "DescribeImages", region=image.region,
            registryId=image.account, repositoryName=image.repository, imageIds=[wanted],
        )  # fmt: skip
    except Exception as exc:
        code = error_code(exc)
        if code == "RepositoryNotFoundException":
            return [_no_repository(image, "push the image first, or fix the repository name.")]
        if code == "ImageNotFoundException":
            what = image.digest or f"tag {image.tag or 'latest'!r}"
            return [
                Problem(
                    "image_uri",
                    f"the ECR repository {image.repository!r} has no image with {what}: "
                    "SageMaker cannot pull it ('Cannot pull algorithm container').",
                    "push the image with that tag, or name a tag the repository has.",
                )
            ]
        raise
    return []


def _no_repository(image: Image, hint: str) -> Problem:
    """The image's repository does not exist (in its own account or another's)."""
    return Problem(
        "image_uri",
        f"the ECR repository {image.repository!r} does not exist in account "
        f"{image.account}, {image.region}: SageMaker cannot pull the image.",
        hint,
    )


def _grants(policy: dict[str, Any], account: str | None) -> bool:
    statements = policy.get("Statement", [])
    for statement in statements if isinstance(statements, list) else [statements]:
        if statement.get("Effect") != "Allow":
            continue
        actions = statement.get("Action", [])
        actions = [actions] if isinstance(actions, str) else actions
        if not any(a in ("*", "ecr:*", *PULL) for a in actions):
            continue
        principal = statement.get("Principal", {})
        if principal == "*":
            return True
        names: list[str] = []
        for value in principal.values() if isinstance(principal, dict) else ():
            names += [value] if isinstance(value, str) else list(value)
        if "*" in names or "sagemaker.amazonaws.com" in names:
            return True
        if account and any(account == n or f":{account}:" in n for n in names):
            return True
    return False


def _pullable(ctx: Context, image: Image) -> list[Problem]:
    try:
        answer = ctx.call(
            "image_uri", "ecr", "GetRepositoryPolicy", region=image.region,
            registryId=image.account, repositoryName=image.repository,
        )  # fmt: skip
    except Exception as exc:
        code = error_code(exc)
        if code == "RepositoryNotFoundException":
            return [
                _no_repository(
                    image,
                    "fix the image URI, or ask the account's owner for the repository's name.",
                )
            ]
        if code != "RepositoryPolicyNotFoundException":
            raise
        answer = {"policyText": "{}"}  # no policy: no other account may pull
    if _grants(json.loads(answer.get("policyText") or "{}"), ctx.account):
        return []
    return [
        Problem(
            "image_uri",
            f"the image is in account {image.account}, whose repository {image.repository!r} "
            f"grants no pull ({', '.join(PULL)}) to this account ({ctx.account}) or to "
            "sagemaker.amazonaws.com: SageMaker cannot pull it.",
            "add a repository policy statement allowing ecr:BatchGetImage and "
            "ecr:GetDownloadUrlForLayer to this account, or copy the image into it.",
        )
    ]
