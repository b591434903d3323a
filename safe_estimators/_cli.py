"""The ``safe-estimators`` command: validate, plan, submit, lint, catalog and schema.

Every command prints text, or with ``--json`` one JSON document on stdout, errors included:
``{"ok": false, "problems": [{"source", "path", "message", "hint", "severity"}]}``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import re
import sys
import warnings
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

from safe_estimators._problems import ConfigError, Problem

EXIT_OK, EXIT_INVALID, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3

EXIT_CODES = """exit codes:
  0  ok (warnings may be printed)
  1  problems found: an invalid spec, a refused request, or an AWS account problem in submit
  2  usage error (unknown command or option, a missing file name)
  3  internal error in safe-estimators (run again with --verbose and report it)"""


@contextlib.contextmanager
def _quiet(verbose: bool) -> Iterator[None]:
    """Keep the output to what the user asked for: no SDK banners, INFO lines or deprecations.

    Undone on the way out, so calling ``main()`` in a notebook or a test leaves logging as it was.
    """
    if verbose:
        logging.basicConfig(level=logging.INFO)
        yield
        return
    os.environ.setdefault("SAGEMAKER_SUPPRESS_V2_WARNING", "1")
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(previous)


def _print_problem(out: TextIO, source: str, problem: Problem) -> None:
    label = "warning: " if problem.severity == "warning" else ""
    hint = f" ({problem.hint})" if problem.hint else ""
    out.write(f"{source}: {problem.path}: {label}{problem.message}{hint}\n")


def _problem_json(source: str | None, problem: Problem) -> dict[str, Any]:
    return {
        "source": source,
        "path": problem.path,
        "message": problem.message,
        "hint": problem.hint,
        "severity": problem.severity,
    }


def _emit_json(document: Any) -> None:
    print(json.dumps(document, indent=2, default=str))


def _failure(source: str | None, problems: Sequence[Problem]) -> dict[str, Any]:
    return {"ok": False, "source": source, "problems": [_problem_json(source, p) for p in problems]}


# --- validate -------------------------------------------------------------------------------


def _validate(args: argparse.Namespace) -> int:
    from safe_estimators._validate import is_job_spec, spec_files, validate_file

    results = []
    skipped: list[str] = []
    for target in args.files:
        files = spec_files(target)
        if os.path.isdir(target):
            skipped += [path for path in files if not is_job_spec(path)]
            files = [path for path in files if path not in skipped]
        if not files:
            empty = Problem(
                "<folder>",
                "holds no spec files (.yaml, .yml, .json, .toml).",
                "give the folder of your job specs, or the files themselves.",
            )
            results.append((target, [empty]))
        results += [(path, validate_file(path)) for path in files]
    invalid = any(p.severity == "error" for _, problems in results for p in problems)
    if args.json:
        _emit_json(
            {
                "ok": not invalid,
                "problems": [_problem_json(s, p) for s, found in results for p in found],
                "skipped": skipped,
                "files": [
                    {
                        "source": source,
                        "ok": not any(p.severity == "error" for p in found),
                        "problems": [_problem_json(source, p) for p in found],
                    }
                    for source, found in results
                ],
            }
        )
        return EXIT_INVALID if invalid else EXIT_OK
    for source, problems in results:
        for problem in problems:
            _print_problem(sys.stdout, source, problem)
        if not any(p.severity == "error" for p in problems):
            print(f"{source}: valid")
    for path in skipped:
        print(f"{path}: skipped (names no estimator: not a job spec)")
    return EXIT_INVALID if invalid else EXIT_OK


# --- plan -----------------------------------------------------------------------------------


def _plan(args: argparse.Namespace) -> int:
    from safe_estimators._plan import plan

    documents: list[dict[str, Any]] = []
    texts: list[Any] = []
    failed = False
    for path in args.files:
        try:
            result = plan(path)
        except ConfigError as error:
            failed = True
            documents.append(_failure(error.source or path, error.problems))
            texts.append(error)
            continue
        documents.append({"ok": True, "problems": _warnings_json(result), **result.to_dict()})
        texts.append(result)
    if args.json:
        if len(documents) == 1:
            _emit_json(documents[0])
        else:
            problems = [p for d in documents for p in d["problems"]]
            _emit_json({"ok": not failed, "problems": problems, "plans": documents})
    else:
        for index, item in enumerate(texts):
            if index:
                print()
            if isinstance(item, ConfigError):
                for problem in item.problems:
                    _print_problem(sys.stdout, item.source or args.files[index], problem)
            else:
                print(item)
    return EXIT_INVALID if failed else EXIT_OK


def _warnings_json(result: Any) -> list[dict[str, Any]]:
    return [_problem_json(result.source, w) for w in result.explanation.warnings]


# --- submit ---------------------------------------------------------------------------------

# What a failed AWS call means for the person at the keyboard, by botocore exception or error
# code. Each is the user's to fix (exit 1), not a bug of ours.
_AWS_FIXES = {
    "NoCredentialsError": "no AWS credentials were found.",
    "PartialCredentialsError": "the AWS credentials are incomplete.",
    "ProfileNotFound": "the AWS profile does not exist.",
    "TokenRetrievalError": "the AWS SSO session has expired.",
    "SSOTokenLoadError": "the AWS SSO session has expired.",
    "UnauthorizedSSOTokenError": "the AWS SSO session has expired.",
    "AccessDenied": "the credentials may not do this.",
    "AccessDeniedException": "the credentials may not do this.",
    "UnrecognizedClientException": "the AWS credentials are not valid.",
    "InvalidClientTokenId": "the AWS credentials are not valid.",
    "ExpiredToken": "the AWS session token has expired.",
    "ExpiredTokenException": "the AWS session token has expired.",
    "ResourceLimitExceeded": "the account's SageMaker quota for this instance type is used up.",
    "ValidationException": "SageMaker refused the request.",
}
_CREDENTIALS_HINT = (
    "configure credentials (aws configure, aws sso login, or AWS_ACCESS_KEY_ID and "
    "AWS_SECRET_ACCESS_KEY) and try again; `aws sts get-caller-identity` shows who you are."
)


def _aws_problem(exc: Exception) -> Problem | None:
    code = type(exc).__name__
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        code = response.get("Error", {}).get("Code", code)
    elif code == "S3UploadFailedError":  # boto3 wraps the code upload's ClientError in text
        found = re.search(r"An error occurred \((\w+)\)", str(exc))
        code = found.group(1) if found else code
    what = _AWS_FIXES.get(code)
    if what is None:
        return None
    if code in ("AccessDenied", "AccessDeniedException"):
        hint = (
            "ask for sagemaker:CreateTrainingJob, s3:PutObject on the code bucket and "
            "iam:PassRole on the execution role, or use a role that has them."
        )
    elif code == "ResourceLimitExceeded":
        hint = "request a quota increase in Service Quotas, or use another instance type."
    elif code == "ValidationException":
        hint = "fix the value the message names; `safe-estimators plan` shows the request."
    else:
        hint = _CREDENTIALS_HINT
    return Problem("<aws>", f"{what} {exc}", hint)


def _submit(args: argparse.Namespace) -> int:
    from safe_estimators._plan import REGION_SOURCES, job_region

    if len(args.files) != 1:
        raise _UsageError("submit takes one spec file")
    path = args.files[0]
    region = job_region()
    if region is None:
        raise ConfigError(
            [
                Problem(
                    "<aws>",
                    f"no AWS region: none is set in {REGION_SOURCES}.",
                    "export AWS_REGION=us-east-1 (your region), or run `aws configure`.",
                )
            ],
            source=path,
        )
    try:
        name = _start_job(path, region, args.wait)
    except ConfigError:
        raise
    except Exception as exc:
        problem = _aws_problem(exc)
        if problem is None:
            raise
        raise ConfigError([problem], source=path) from exc
    if args.json:
        _emit_json({"ok": True, "problems": [], "source": path, "job_name": name})
    else:
        print(name)
    return EXIT_OK


def _start_job(path: str, region: str, wait: bool) -> str:
    import boto3
    import sagemaker

    from safe_estimators._build import build_estimator, configured_role
    from safe_estimators._files import job_arguments
    from safe_estimators._plan import request_problems
    from safe_estimators._resolve import resolve_arguments

    arguments, source = job_arguments(path, {})
    job = resolve_arguments(arguments, source)
    boto_session = boto3.Session(region_name=region)

    def check(params: dict[str, Any], model: Any = None, **_: Any) -> None:
        problems = request_problems(params, model)
        if problems:
            raise ConfigError(problems, source=source)

    boto_session.events.register("provide-client-params.sagemaker.CreateTrainingJob", check)
    session = sagemaker.Session(boto_session=boto_session)
    if not job.kwargs.get("role") and not configured_role(session):
        raise ConfigError(
            [
                Problem(
                    "role",
                    "is required to submit: neither the spec nor the SageMaker SDK config "
                    "(SageMaker.TrainingJob.RoleArn) names an execution role.",
                    "add role: arn:aws:iam::<account>:role/<SageMaker execution role>.",
                )
            ],
            source=source,
        )
    estimator = build_estimator(job, session)
    inputs = job.spec.inputs
    estimator.fit(inputs=dict(inputs) if isinstance(inputs, dict) else inputs, wait=wait, logs=wait)
    name: str = estimator.latest_training_job.name
    return name


# --- lint -----------------------------------------------------------------------------------


def _lint(args: argparse.Namespace) -> int:
    from safe_estimators._validate import lint_target

    results = [(target, lint_target(target)) for target in args.files]
    failed = any(f.severity == "error" for _, findings in results for f in findings)
    if args.json:
        _emit_json(
            {
                "ok": not failed,
                "problems": [
                    {
                        "source": target,
                        "path": f"{f.file}:{f.line}",
                        "message": f.message,
                        "hint": f.hint,
                        "severity": f.severity,
                        "rule": f.rule,
                    }
                    for target, findings in results
                    for f in findings
                ],
            }
        )
        return EXIT_INVALID if failed else EXIT_OK
    for target, findings in results:
        for finding in findings:
            print(finding)
        if not findings:
            print(f"{target}: no findings")
    return EXIT_INVALID if failed else EXIT_OK


# --- catalog and schema ---------------------------------------------------------------------

_NAMED_SIZES = {"nano": -4, "micro": -3, "small": -2, "medium": -1, "large": 0, "xlarge": 1}


def size_order(name: str) -> tuple[str, float, str]:
    """Sort key putting sizes in size order: ml.g6.2xlarge before ml.g6.12xlarge."""
    _, family, size = [*name.split(".", 2), "", ""][:3]
    if size in _NAMED_SIZES:
        return (family, _NAMED_SIZES[size], size)
    match = re.fullmatch(r"(\d+)xlarge", size)
    return (family, int(match.group(1)) if match else float("inf"), size)


def _catalog(args: argparse.Namespace) -> int:
    import instance_catalog

    every = instance_catalog.instance_types()
    known = sorted({t.accelerator_name for t in every if t.accelerator_name})
    if args.accelerator is not None and args.accelerator.lower() not in map(str.lower, known):
        raise _UsageError(
            f"argument --accelerator: unknown accelerator {args.accelerator!r}; the catalog "
            f"knows {', '.join(known)}"
        )
    rows = sorted(
        (
            t
            for t in every
            if t.gpu_count >= args.min_gpus
            and (
                args.accelerator is None
                or (t.accelerator_name or "").lower() == args.accelerator.lower()
            )
        ),
        key=lambda t: size_order(t.name),
    )
    if args.json:
        import attrs

        print(json.dumps([attrs.asdict(t) for t in rows], indent=2))
        return EXIT_OK
    header = ("instance type", "GPUs", "accelerator", "devices", "memory/device", "vCPUs", "EFA")
    table = [header] + [
        (
            t.name,
            str(t.gpu_count),
            t.accelerator_name or "-",
            str(t.accelerator_count),
            f"{t.accelerator_memory_mib // 1024} GiB" if t.accelerator_memory_mib else "-",
            str(t.vcpus),
            "yes" if t.efa_supported else "no",
        )
        for t in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        cells = (cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        print("  ".join(cells).rstrip())
    return EXIT_OK


def _schema(args: argparse.Namespace) -> int:
    from safe_estimators._schema import spec_schema

    print(json.dumps(spec_schema(), indent=2))
    return EXIT_OK


# --- the parser -----------------------------------------------------------------------------


class _UsageError(Exception):
    """A command line that cannot be run as written (exit 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse's default prints and exits
        raise _UsageError(message)


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def _global_flags(parser: argparse.ArgumentParser, default: Any) -> None:
    """--verbose and --json, accepted before and after the command."""
    parser.add_argument(
        "--verbose", action="store_true", default=default, help="show the SageMaker SDK's logs"
    )
    parser.add_argument(
        "--json", action="store_true", default=default, help="one JSON document on stdout"
    )


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="safe-estimators",
        description="Check SageMaker training job specs and plan them offline.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _global_flags(parser, False)
    flags = _Parser(add_help=False)
    _global_flags(flags, argparse.SUPPRESS)  # after the command, without resetting before
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=_Parser
    )

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        return commands.add_parser(
            name,
            help=help_text,
            parents=[flags],
            epilog=EXIT_CODES,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )

    validate = command("validate", "check spec files or folders of them (no AWS, no sagemaker)")
    validate.add_argument("files", nargs="+", metavar="FILE_OR_DIR")
    validate.set_defaults(run=_validate)

    plan = command("plan", "show the resolved job and its request, offline")
    plan.add_argument("files", nargs="+", metavar="FILE")
    plan.set_defaults(run=_plan)

    submit = command("submit", "start the training job (calls AWS)")
    submit.add_argument("files", nargs=1, metavar="FILE")
    submit.add_argument("--wait", action="store_true", help="wait for the job and show its logs")
    submit.set_defaults(run=_submit)

    lint = command("lint", "check training scripts, or the scripts of specs")
    lint.add_argument("files", nargs="+", metavar="FILE_OR_SPEC")
    lint.set_defaults(run=_lint)

    catalog = command("catalog", "list training instance types")
    catalog.add_argument("--min-gpus", type=_count, default=0, metavar="N")
    catalog.add_argument("--accelerator", metavar="NAME", help="e.g. A100, V100, Trainium")
    catalog.set_defaults(run=_catalog)

    schema = command("schema", "print the JSON Schema of spec files")
    schema.set_defaults(run=_schema)
    return parser


def _usage(parser: argparse.ArgumentParser, message: str, as_json: bool) -> int:
    if as_json:
        _emit_json(_failure(None, [Problem("<usage>", message, "see safe-estimators --help.")]))
    else:
        parser.print_usage(sys.stderr)
        print(f"{parser.prog}: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code (see ``EXIT_CODES``)."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in arguments
    parser = _parser()
    try:
        args = parser.parse_args(arguments)
    except _UsageError as exc:
        return _usage(parser, str(exc), as_json)
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    try:
        with _quiet(args.verbose):
            result: Any = args.run(args)
    except _UsageError as exc:
        return _usage(parser, str(exc), args.json)
    except ConfigError as error:
        source = error.source or next(iter(getattr(args, "files", [])), None) or "spec"
        if args.json:
            _emit_json(_failure(source, error.problems))
        else:
            for problem in error.problems:
                _print_problem(sys.stdout, source, problem)
        return EXIT_INVALID
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `safe-estimators plan x | head`: the reader left; not an error
        sys.stderr.close()
        return EXIT_OK
    except Exception as exc:
        if args.verbose:
            raise
        message = f"internal error: {type(exc).__name__}: {exc}"
        if args.json:
            internal = Problem("<internal>", message, "run again with --verbose and report it.")
            _emit_json(_failure(None, [internal]))
        print(
            f"safe-estimators: {message}\n"
            "Run again with --verbose for the traceback, and please report it.",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
    return int(result)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
