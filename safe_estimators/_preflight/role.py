"""The execution role: it exists, SageMaker may assume it, and its policies allow what the job
does on the job's own resources.

The trust policy (GetRole) settles whether ``sagemaker.amazonaws.com`` may assume the role: a
role without it is refused (``unable to perform: sts:AssumeRole``). The policy simulation
(SimulatePrincipalPolicy) sees the role's identity policies only: not service control
policies, permission boundaries set elsewhere, or the buckets' and keys' resource policies,
any of which can still allow or deny. A denied action is therefore a warning, never an error.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import unquote

from safe_estimators._preflight.context import Context, CouldNotCheck, error_code
from safe_estimators._problems import Problem, warning

SAGEMAKER = "sagemaker.amazonaws.com"
ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::(\d{12}):role/(?:.*/)?([\w+=,.@-]+)$")


def _trusts_sagemaker(document: Any) -> bool:
    if isinstance(document, str):
        document = json.loads(unquote(document))
    statements = document.get("Statement", [])
    for statement in statements if isinstance(statements, list) else [statements]:
        if statement.get("Effect") != "Allow":
            continue
        actions = statement.get("Action", [])
        actions = [actions] if isinstance(actions, str) else actions
        if not any(a in ("sts:AssumeRole", "sts:*", "*") for a in actions):
            continue
        principal = statement.get("Principal", {})
        services = principal.get("Service", []) if isinstance(principal, dict) else []
        services = [services] if isinstance(services, str) else services
        if SAGEMAKER in services:
            return True
    return False


def check(ctx: Context) -> list[Problem]:
    job = ctx.job
    role = job.role
    if not role or "role" in job.placeholders or not job.remote:
        return []
    found = ROLE_ARN.match(role)
    if found is None:
        return []  # a role name: the SDK looks its ARN up; the offline rules judge the form
    owner, name = found.groups()
    if ctx.account is not None and owner != ctx.account:
        return [
            warning(
                "role",
                f"is in account {owner}, not the caller's ({ctx.account}): its trust and "
                "policies were not checked.",
                "run the preflight with credentials of the role's account to check it.",
            )
        ]
    # The trust policy and the simulation at once: they do not depend on each other.
    simulation = ctx.pool.submit(_simulated, ctx, role)
    try:
        answer = ctx.call("role", "iam", "GetRole", RoleName=name)
    except Exception as exc:
        simulation.cancel()
        if error_code(exc) == "NoSuchEntity":
            return [
                Problem(
                    "role",
                    f"the role {name!r} does not exist in account {owner}.",
                    "create it (with a trust policy for sagemaker.amazonaws.com), or name an "
                    "existing SageMaker execution role.",
                )
            ]
        raise
    problems = []
    if not _trusts_sagemaker(answer["Role"].get("AssumeRolePolicyDocument", {})):
        problems.append(
            Problem(
                "role",
                f"the trust policy of {name!r} does not let {SAGEMAKER} assume it: SageMaker "
                "refuses the job ('unable to perform: sts:AssumeRole').",
                f"add a statement allowing sts:AssumeRole to the service principal {SAGEMAKER} "
                "to the role's trust relationship.",
            )
        )
    try:
        return problems + simulation.result()
    except CouldNotCheck as denied:  # the trust policy's verdict stands
        return [*problems, denied.problem]


# What a training job does with the role on its own resources (AWS Knowledge Center,
# "sagemaker-s3-accessdenied-training": s3:GetObject, s3:PutObject and s3:ListBucket on the
# job's buckets; kms:Encrypt and kms:Decrypt with a KMS-encrypted output, kms:CreateGrant for a
# volume key), the image pull from ECR for a custom image, and the job's log streams.
_KEY_ACTIONS = {
    "output_kms_key": ["kms:Encrypt", "kms:Decrypt"],
    "volume_kms_key": ["kms:CreateGrant"],
}
_PULL = ["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"]


def _needs(ctx: Context) -> list[tuple[str, list[str], list[str]]]:
    """What the job does with its own resources: (path, actions, resource ARNs)."""
    from safe_estimators._preflight import ecr

    job = ctx.job
    partition = "aws-cn" if job.region.startswith("cn-") else "aws"
    needs = []
    for loc in job.locations:
        if not loc.bucket or ("bucket" in job.placeholders and loc.bucket == _placeholder()):
            continue
        objects = [f"arn:{partition}:s3:::{loc.bucket}/{loc.prefix}*"]
        if loc.kind == "output":
            needs.append((loc.path, ["s3:PutObject"], objects))
            continue
        needs.append((loc.path, ["s3:GetObject"], objects))  # an input, or the uploaded code
        if loc.kind == "input":
            needs.append((loc.path, ["s3:ListBucket"], [f"arn:{partition}:s3:::{loc.bucket}"]))
    for path, key in job.keys:
        if key.startswith("arn:") and path in _KEY_ACTIONS:
            needs.append((path, _KEY_ACTIONS[path], [key]))
    image = ecr.parse(job.image) if job.image else None
    if image is not None and image.account not in ecr.aws_registries():
        repository = (
            f"arn:{partition}:ecr:{image.region}:{image.account}:repository/{image.repository}"
        )
        needs.append(("image_uri", _PULL, [repository]))
        needs.append(("image_uri", ["ecr:GetAuthorizationToken"], ["*"]))
    if ctx.account is not None:
        group = (
            f"arn:{partition}:logs:{job.region}:{ctx.account}:log-group:"
            "/aws/sagemaker/TrainingJobs:*"
        )
        needs.append(("role", ["logs:CreateLogStream", "logs:PutLogEvents"], [group]))
    return needs


def _placeholder() -> str:
    from safe_estimators._targets.shared import PLACEHOLDER_BUCKET

    return PLACEHOLDER_BUCKET


MAX_SIMULATION_PAGES = 5


def _simulated(ctx: Context, role: str) -> list[Problem]:
    """One simulation of every action on every resource the job needs (IAM evaluates each
    action against each resource), read for the pairs the job actually needs."""
    needs = _needs(ctx)
    if not needs:
        return []
    actions = sorted({a for _, names, _ in needs for a in names})
    resources = sorted({r for _, _, arns in needs for r in arns})
    decisions: dict[tuple[str, str], str] = {}
    marker = None
    for _ in range(MAX_SIMULATION_PAGES):
        params: dict[str, Any] = {
            "PolicySourceArn": role,
            "ActionNames": actions,
            "ResourceArns": resources,
            "MaxItems": 1000,
        }
        if marker:
            params["Marker"] = marker
        answer = ctx.call("role", "iam", "SimulatePrincipalPolicy", lane="simulation", **params)
        for result in answer.get("EvaluationResults", []):
            key = (result.get("EvalActionName", ""), result.get("EvalResourceName", ""))
            decisions[key] = result.get("EvalDecision", "")
        marker = answer.get("Marker") if answer.get("IsTruncated") else None
        if not marker:
            break
    problems = []
    for path, names, arns in needs:
        for action in names:
            for resource in arns:
                decision = decisions.get((action, resource))
                if decision is None or decision == "allowed":
                    continue  # (not in the answer: nothing is known, nothing is said)
                problems.append(
                    warning(
                        path,
                        f"the role's policies do not allow {action} on {resource} (IAM policy "
                        f"simulation: {decision}); the simulation does not see service control "
                        "policies, permission boundaries set outside the role, or the "
                        "resource's own policy, which may allow it.",
                        f"grant {action} on that resource to the role, or confirm a bucket or "
                        "key policy grants it.",
                    )
                )
    return problems
