"""The secrets policy: what a suspected credential in a job's values becomes.

DescribeTrainingJob shows hyperparameters, environment, tags, container arguments and URIs in
plain text to anyone who may read the job (and CloudTrail and the console keep them). What a
value looks like is ``_secret_formats``; what it means here (README, "Secrets"):

- written in a spec file (``SpecFileText`` and its numbers): an error. The file is committed
  to a repository, so the secret has leaked already; the fix is to revoke it.
- passed in Python (read from the environment or the Hub's login at run time, as published
  Hugging Face and AWS examples do): a warning with the Secrets Manager fix. The job runs.
- an S3 URI with a user and password: an error either way, since S3 refuses the bucket name.
- a path listed in ``accept_exposure``: nothing; the exposure is accepted explicitly, key by
  key. Every message shows the value cut to its first characters, in every case.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from safe_estimators._bounds import quote
from safe_estimators._problems import Problem, warning
from safe_estimators._secret_formats import (
    SPEC_FILE_TYPES,
    URL_PASSWORD,
    Suspect,
    accepted_paths,
    dotted,
    find_suspects,
    find_suspects_in,
    is_accepted,
    mask_text,
    redacted,
)

# What DescribeTrainingJob shows of each option, for the message.
_SHOWN_AS = {
    "hyperparameters": "hyperparameters",
    "environment": "environment variables",
    "tags": "tags",
    "distribution": "the distribution's options (the SDK sends them as hyperparameters)",
    "container_arguments": "container arguments",
    "container_entry_point": "the container entry point",
}
# Options that never reach the request: the SDK clones a git_config repository itself, with
# its token or password (its documented use). Only a spec file's literal is reported there.
_LOCAL_ONLY = frozenset(["git_config"])


def secrets_in(name: str, values: object, accepted: tuple[str, ...] = ()) -> list[Problem]:
    """A problem for every suspected secret under ``values`` (nested values included), except
    those ``accepted`` names; the message shows only the value's first characters and length.

    A secret written in a spec file (``SPEC_FILE_TYPES``) is an error: it is in the repository.
    One passed in Python is a warning: the job runs, and whoever may describe it reads the
    value. A URL with a password is an error where SageMaker would fail on it (an S3 URI).
    """
    found = find_suspects(name, values)
    # Equivalent when mutated to always call: no suspects make no problems either way.
    return _secret_problems(name, found, accepted) if found else []  # pragma: no mutate


def secrets_in_options(
    options: Iterable[tuple[str, object]], accepted: tuple[str, ...] = ()
) -> list[Problem]:
    """``secrets_in(name, values, accepted)`` of each (name, values) in turn, in one list."""
    problems = []
    for name, found in find_suspects_in(options):
        problems += _secret_problems(name, found, accepted)
    return problems


# Options that hold no value of the job's (as the secrets rule, _rules.safety, reads a spec).
_NOT_VALUES = frozenset(
    ["accept_exposure", "check_script", "estimator", "model", "training_compiler", "extra"]
)


def secrets_in_arguments(
    arguments: object, names: Iterable[str] | None = None
) -> list[Problem]:
    """The secrets rule on keyword arguments (or a spec file's options) as given, before any
    type check: for the options ``names`` (every one when None), those a malformed entry kept
    out of the spec the rule reads. One bad entry (``{"HF_TOKEN": "hf_...", "BAD": 5}``) never
    hides a credential beside it."""
    if not isinstance(arguments, Mapping):
        return []
    try:
        accepted = accepted_paths(arguments.get("accept_exposure"))
        wanted = None if names is None else frozenset(names)
        options = [
            (name, value)
            for name, value in arguments.items()
            if isinstance(name, str)
            and name not in _NOT_VALUES
            and (wanted is None or name in wanted)
        ]
        return secrets_in_options(options, accepted)
    except Exception:  # a user mapping whose items() or keys raise: the type checks said so
        return []


def is_secret_problem(problem: Problem) -> bool:
    """``problem`` is one of the secrets rule's (a suspected credential)."""
    return problem.message.startswith(_LOOKS_LIKE)


_LOOKS_LIKE = "looks like "


def _secret_problems(name: str, found: list[Suspect], accepted: tuple[str, ...]) -> list[Problem]:
    problems = []
    for at, kind, raw in found:
        path = dotted(at)
        if is_accepted(path, accepted) or (
            name in _LOCAL_ONLY and type(raw) not in SPEC_FILE_TYPES
        ):
            continue
        problems.append(_secret_problem(path, name, kind, raw))
    return problems


def _secret_problem(path: str, option: str, kind: str, raw: object) -> Problem:
    url = isinstance(raw, str) and kind == URL_PASSWORD
    # A URL keeps its scheme, user and host: only the password is the secret.
    shown = quote(mask_text(str(raw))) if url else redacted(raw)
    if url and str(raw)[:5].lower() == "s3://":
        return Problem(
            path,
            f"{_LOOKS_LIKE}{kind}: {shown}. S3 URIs take no user or password: the SDK reads "
            "what stands before the bucket as part of its name, which S3 refuses.",
            "write s3://bucket/prefix; the job's role gives it access to the bucket.",
        )
    where = _SHOWN_AS.get(option, f"{option} (in the request)")
    exposed = (
        f"DescribeTrainingJob, the console and CloudTrail show {where} in plain text to anyone "
        "who may read the job"
    )
    also = f", and {exposed}"
    if option in _LOCAL_ONLY:
        # The SDK clones the repository on this machine: the credential never reaches the job.
        also = " (the SDK uses it only to clone the repository on this machine)"
    if type(raw) in SPEC_FILE_TYPES:
        return Problem(
            path,
            f"{_LOOKS_LIKE}{kind}: {shown}, written in the spec file: it is in the repository "
            f"for everyone who can read it{also}.",
            "revoke it; store it in AWS Secrets Manager and pass the secret's name or ARN "
            "(read it in the script with boto3), or pass a value read at run time from Python; "
            f"accept_exposure: [{path}] accepts the exposure.",
        )
    return warning(
        path,
        f"{_LOOKS_LIKE}{kind}: {shown}; {exposed}.",
        "store it in AWS Secrets Manager and pass the secret's name or ARN instead (read it in "
        f"the script with boto3); accept_exposure=[{path!r}] accepts the exposure.",
    )
