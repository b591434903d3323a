"""What both targets share: the refusal of an SDK error we did not foresee, and for offline
plans the placeholders for what a spec does not give and a botocore session whose calls never
leave the machine."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from safe_estimators._distributions.instance_groups.spec import describe, total_instances
from safe_estimators._problems import ConfigError, Problem, tagged
from safe_estimators._resolved import Explanation, Injection
from safe_estimators._spec import count_of, instance_type_name

if TYPE_CHECKING:
    from safe_estimators._resolve import ResolvedJob


def _sdk_refused(exc: Exception, what: str) -> ConfigError:
    # The rule _plan.sdk_refused documents (_build is below _plan: it cannot import it).
    return ConfigError(tagged("sdk-refused", [Problem(
        "<sagemaker>",
        f"the SageMaker SDK refused the job while {what}: {exc}",
        "this is a case safe_estimators does not check yet; please report it with the spec "
        "that caused it.",
    )]))  # fmt: skip

REGION_SOURCES = "AWS_REGION, AWS_DEFAULT_REGION or the AWS config"


def job_region() -> str | None:
    """The region plan, submit and the factories use; no network call.

    botocore reads AWS_DEFAULT_REGION and the AWS config file only; AWS_REGION, which the AWS
    CLI v2, most AWS SDKs and many CI systems set, is honoured too and wins, as in the AWS CLI.
    """
    region = os.environ.get("AWS_REGION")
    if region:
        return region
    import boto3

    found: str | None = boto3.Session().region_name
    return found


def known_region() -> str | None:
    """``job_region``, or None where the configuration cannot say (a profile that does not
    exist: the caller's own checks report that)."""
    from botocore.exceptions import BotoCoreError

    try:
        return job_region()
    except BotoCoreError:
        return None


def no_region() -> ConfigError:
    """What building a job without a session says when no region is configured, in place of the
    SDK's ``ValueError: Must setup local AWS configuration with a region...``."""
    return ConfigError(
        [
            Problem(
                "region",
                f"no AWS region: none is set in {REGION_SOURCES}, and the SageMaker SDK needs one "
                "to build the job (its container images and endpoints are per region).",
                "export AWS_REGION=us-east-1 (your region), run `aws configure`, or pass "
                "sagemaker_session=sagemaker.Session(boto_session=boto3.Session("
                "region_name='us-east-1')).",
            )
        ]
    )


def default_boto_session() -> Any:
    """The boto3 session the SDK's default Session takes (``boto3.DEFAULT_SESSION`` or a new
    one), in the region ``job_region`` finds (AWS_REGION counts, as for plan and submit), with
    its credentials looked up when a request is first signed.

    botocore looks credentials up when a client is created, and the SDK creates its clients
    while a job is built; the last place it looks, the instance metadata endpoint, is a
    connection. Here the lookup waits for the first request (``fit()``, ``train()``), and is
    that session's own. Raises ConfigError at ``region`` when no region is configured.
    """
    import boto3
    import botocore.session

    session = boto3.DEFAULT_SESSION or boto3.Session()
    region = os.environ.get("AWS_REGION") or session.region_name
    if not region:
        raise no_region()
    # The same profile, where one is named (profile_name says "default" when none is).
    profile = session.profile_name if session.profile_name in session.available_profiles else None
    core = botocore.session.Session(profile=profile)
    core.register_component("credential_provider", _OnFirstRequest(session.get_credentials))
    return boto3.Session(botocore_session=core, region_name=region)


class _OnFirstRequest:
    """A credential resolver (botocore's ``credential_provider`` component) whose credentials
    are looked up, by ``lookup``, when botocore first asks for their values."""

    def __init__(self, lookup: Any) -> None:
        self._lookup = lookup

    def load_credentials(self) -> Any:
        import threading

        from botocore.credentials import Credentials
        from botocore.exceptions import NoCredentialsError

        lookup, lock = self._lookup, threading.Lock()
        found: list[Any] = []

        def credentials() -> Any:
            with lock:
                if not found:
                    resolved = lookup()
                    if resolved is None:
                        raise NoCredentialsError()
                    found.append(resolved)
            return found[0]

        class Deferred(Credentials):  # type: ignore[misc]
            method = "safe-estimators-on-first-request"

            def __init__(self) -> None:  # no values yet
                pass

            access_key = property(lambda self: credentials().access_key)
            secret_key = property(lambda self: credentials().secret_key)
            token = property(lambda self: credentials().token)
            account_id = property(lambda self: getattr(credentials(), "account_id", None))

            def get_frozen_credentials(self) -> Any:
                return credentials().get_frozen_credentials()

        return Deferred()


PLACEHOLDER_REGION = "us-east-1"
PLACEHOLDER_BUCKET = "sagemaker-plan-placeholder-bucket"
PLACEHOLDER_ROLE = "arn:aws:iam::000000000000:role/SageMakerExecutionRolePlaceholder"


class OfflineCallRefused(RuntimeError):
    """A plan tried to reach an AWS API other than the (simulated) S3 code upload."""


class _EmptyBody:
    def stream(self, **_: Any) -> Any:
        yield b""


def _offline_send(request: Any, event_name: str = "", **_: Any) -> Any:
    """Answer S3 uploads locally and refuse everything else: a plan never leaves the machine.

    The service comes from the event name (``before-send.s3.PutObject``), not the host, so an
    ``AWS_ENDPOINT_URL`` in the environment changes nothing.
    """
    from botocore.awsrequest import AWSResponse

    if event_name.startswith("before-send.s3."):
        return AWSResponse(request.url, 200, {"ETag": '"plan"'}, _EmptyBody())
    raise OfflineCallRefused(f"plan is offline and does not call {request.method} {request.url}")


def _sdk_loader(core: Any) -> Any:
    """The data loader of the SDK's import-time session, if ``core`` (a botocore session) reads
    the same data path; else None.

    Importing sagemaker creates a Session (JumpStart's default), which loads the SageMaker, S3
    and runtime service models: about 0.4 s. A botocore loader holds only parsed data files, and
    every client of a session shares it, so other sessions can borrow it; their credentials,
    events and clients stay their own.
    """
    try:
        from sagemaker.jumpstart import constants

        loaded = constants.DEFAULT_JUMPSTART_SAGEMAKER_SESSION.boto_session._session
        loader = loaded.get_component("data_loader")
    except (ImportError, AttributeError, ValueError):  # no such session in this SDK version
        return None
    if loaded.get_config_variable("data_path") != core.get_config_variable("data_path"):
        return None
    return loader


def _botocore_session() -> Any:
    """A new botocore session that reads service models the SDK has parsed already, if any."""
    import botocore.session

    # Offline plans send nothing and carry their own placeholder credentials: no AWS profile
    # applies. The session is reused across plans, and would otherwise read $AWS_PROFILE anew
    # against the config files it read for the first plan (a profile added or switched to since
    # then is "not found"), so the profile is read from nowhere.
    core = botocore.session.Session(session_vars={"profile": (None, None, None, None)})
    loader = _sdk_loader(core)
    if loader is not None:
        core.register_component("data_loader", loader)
    return core


def job_explanation(
    job: ResolvedJob, estimator: str, injections: Sequence[Injection], image_source: Any
) -> Explanation:
    """What ``explain`` shows for a built job, on either target."""
    groups = job.spec.instance_groups
    return Explanation(
        estimator=estimator,
        instance_type=describe(groups)
        if groups
        else instance_type_name(job.spec.instance_type) or "<pipeline parameter>",
        instance_count=total_instances(groups) if groups else count_of(job.spec.instance_count),
        gpus_per_instance=job.instance.gpu_count if job.instance and not groups else None,
        injections=tuple(injections),
        warnings=job.warnings,
        layout=job.layout,
        memory=job.memory,
        image_source=image_source,
        script_findings=job.script_findings,
        neuron_cores=job.instance.neuron_cores if job.instance else None,
    )


class _Captured(Exception):
    """Raised by the request hook: the request is kept and nothing is sent."""

    def __init__(self, request: dict[str, Any]) -> None:
        super().__init__("captured")
        self.request = request


def _capture(params: dict[str, Any], **_: Any) -> None:
    import copy

    raise _Captured(copy.deepcopy(params))


def capturing_session(region: str | None) -> Any:
    """A boto3 session whose calls never leave the machine: S3 uploads are answered locally,
    CreateTrainingJob's parameters are captured (``_Captured``) where boto3 would send them, and
    any other call is refused. What an offline plan builds its SDK session on."""
    import boto3

    boto_session = boto3.Session(
        botocore_session=_botocore_session(),
        region_name=region or PLACEHOLDER_REGION,
        aws_access_key_id="PLAN",
        aws_secret_access_key="PLAN",  # never sent: every call is answered locally
    )
    boto_session.events.register("before-send", _offline_send)
    boto_session.events.register("provide-client-params.sagemaker.CreateTrainingJob", _capture)
    return boto_session
