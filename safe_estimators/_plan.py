"""An offline plan: the resolved job and the exact CreateTrainingJob request the SDK would send."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

import attrs

from safe_estimators._bounds import printable
from safe_estimators._files import load_spec, offline_problems, sdk_config_problems
from safe_estimators._problems import ConfigError, Problem
from safe_estimators._resolve import resolve_arguments
from safe_estimators._resolved import Explanation
from safe_estimators._spec import JobSpec, spec_arguments


@attrs.frozen
class Plan:
    """What a spec would launch, computed offline by the SageMaker SDK's own request code.

    ``request`` is the CreateTrainingJob parameters exactly as the SDK passes them to boto3;
    ``explanation`` says what safe_estimators injected and why; ``placeholders`` lists the values
    (region, bucket, role) that were made up because the spec gives none.
    """

    request: dict[str, Any]
    explanation: Explanation
    placeholders: tuple[str, ...] = ()
    source: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready document: ``request``, ``injected``, ``warnings``, ``layout``,
        ``memory`` (the per-accelerator estimate of a job given ``model``), ..."""
        e = self.explanation
        return {
            "source": self.source,
            "estimator": e.estimator,
            "image_uri": e.image_uri,
            "layout": str(e.layout) if e.layout is not None else None,
            "memory": e.memory.to_dict() if e.memory is not None else None,
            "injected": [
                {"path": i.path, "value": i.value, "reason": i.reason} for i in e.injections
            ],
            "warnings": [
                {"path": w.path, "message": w.message, "hint": w.hint} for w in e.warnings
            ],
            "script_findings": [str(f) for f in e.script_findings],
            "placeholders": list(self.placeholders),
            "request": self.request,
        }

    def to_json(self) -> str:
        """``to_dict()`` as indented JSON."""
        # Strict JSON: NaN/Infinity are not JSON (the spec refuses them; this is the backstop).
        return json.dumps(self.to_dict(), indent=2, default=str, allow_nan=False)

    def __str__(self) -> str:
        r = self.request
        resources = r.get("ResourceConfig", {})
        lines = [f"plan for {self.source}" if self.source else "plan", *self.explanation.lines()]
        lines += [f"placeholder {p}" for p in self.placeholders]
        machines = f"{resources.get('InstanceCount')} x {resources.get('InstanceType')}"
        if resources.get("InstanceGroups"):
            machines = ", ".join(
                f"{g['InstanceGroupName']}: {g['InstanceCount']} x {g['InstanceType']}"
                for g in resources["InstanceGroups"]
            )
        lines += [
            "CreateTrainingJob request:",
            f"  TrainingImage: {r.get('AlgorithmSpecification', {}).get('TrainingImage')}",
            f"  ResourceConfig: {machines}, {resources.get('VolumeSizeInGB')} GB volume",
            f"  RoleArn: {r.get('RoleArn')}",
            f"  EnableInterContainerTrafficEncryption: "
            f"{r.get('EnableInterContainerTrafficEncryption', False)}",
        ]
        for section in ("Environment", "HyperParameters"):
            for key, value in sorted((r.get(section) or {}).items()):
                lines.append(f"  {section}.{key} = {value}")
        lines.append("(use --json for the complete request)")
        # Keys and values are the user's: none may start a line of its own or reach the terminal.
        return "\n".join(printable(line) for line in lines)

    def _repr_markdown_(self) -> str:
        r = self.request
        rows = [self.explanation._repr_markdown_()]
        rows += [f"| placeholder | {p} |" for p in self.placeholders]
        for section in ("Environment", "HyperParameters"):
            rows += [
                f"| request `{section}.{k}` | `{v}` |"
                for k, v in sorted((r.get(section) or {}).items())
            ]
        return "\n".join(rows)


def _region() -> str | None:
    """The region boto3 would use (environment or AWS config profile); no network call."""
    import boto3

    region: str | None = boto3.Session().region_name
    return region


def plan(spec_or_path: JobSpec | str | os.PathLike[str], **overrides: Any) -> Plan:
    """Plan a job offline: no AWS account, no credentials, no network.

    Takes a spec file path or a ``JobSpec`` (from ``load_spec``); keyword ``overrides`` replace
    the spec's options. Raises ConfigError with every problem when the job is not valid.
    """
    from safe_estimators._build import (
        PLACEHOLDER_BUCKET,
        PLACEHOLDER_REGION,
        PLACEHOLDER_ROLE,
        build_estimator,
        capture_request,
        offline_session,
    )

    source = None
    if isinstance(spec_or_path, JobSpec):
        spec = spec_or_path
    else:
        source = os.fspath(spec_or_path)
        spec = load_spec(source)
    arguments = {**spec_arguments(spec), **overrides}
    offline = offline_problems(arguments) + sdk_config_problems(os.environ)
    if offline:
        raise ConfigError(offline, source=source)
    placeholders = []
    if not arguments.get("role"):
        arguments["role"] = PLACEHOLDER_ROLE
        placeholders.append(f"role = {PLACEHOLDER_ROLE} (the spec sets no role)")
    region = _region()
    if region is None:
        placeholders.append(
            f"region = {PLACEHOLDER_REGION} (no region in AWS_REGION or the AWS config)"
        )
    if not arguments.get("output_path") or not arguments.get("code_location"):
        placeholders.append(
            f"bucket = {PLACEHOLDER_BUCKET} (the SDK's default bucket; no account is asked)"
        )
    job = resolve_arguments({"estimator": spec.estimator, **arguments})
    session = offline_session(region, None)
    estimator = build_estimator(job, session)
    try:
        request = capture_request(estimator, _inputs(spec.inputs))
    except ValueError as exc:
        raise ConfigError(
            [
                Problem(
                    "<sagemaker>",
                    f"the SageMaker SDK refused the job at fit(): {exc}",
                    "report this spec: safe_estimators should have caught it.",
                )
            ],
            source=source,
        ) from exc
    return Plan(request, estimator.safe_estimators, tuple(placeholders), source)


def _inputs(inputs: str | Mapping[str, str] | None) -> Any:
    return dict(inputs) if isinstance(inputs, Mapping) else inputs

