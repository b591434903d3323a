"""The ``safe-estimators`` command: validate, plan, preflight, submit, lint, catalog, schema,
port, rule.

Every command prints text, or with ``--json`` one JSON document on stdout, errors included:
``{"ok": false, "problems": [{"source", "path", "message", "hint", "severity", "rule", "file",
"line", "column"}]}`` (``line`` and ``column`` where known; ``rule``: the id ``safe-estimators
rule`` documents). ``--format github|sarif|codeclimate`` reports the problems for CI (see
_report).
"""

# ruff: noqa: E402  (the SIGINT handler below is installed before the other imports run)

from __future__ import annotations

# _signal is the interpreter's own C module: ``signal`` (an enum wrapper over it) costs a
# millisecond to load.
import _signal
import os as _os
import sys as _sys


def _interrupted_while_loading(signum: int, frame: object) -> None:
    _os._exit(130)  # Ctrl-C before main() runs: nothing was done or printed, no traceback


# Run as the safe-estimators command: its imports take about 0.1 s, during which Ctrl-C would
# print a KeyboardInterrupt traceback. (Imported as a module, Python's handling stays as it was.)
if _os.path.basename(_sys.argv[0]).startswith("safe-estimators"):
    _signal.signal(_signal.SIGINT, _interrupted_while_loading)
    # The imports and a one-file validate allocate ~10^5 long-lived objects (classes,
    # functions, tables) and almost no garbage: the cyclic collector ran ~40 times, about a
    # tenth of a one-file validate's CPU, and freed nearly nothing. Off until the first file is
    # checked (or, for the other commands, until they start): see _resume_collection.
    import gc as _gc

    _gc.disable()
    _COLLECTION_PAUSED = True
else:
    _COLLECTION_PAUSED = False

import argparse
import contextlib
import json
import os
import re
import sys
import threading
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

from safe_estimators._bounds import MAX_PROBLEMS, printable
from safe_estimators._problems import ConfigError, Problem, problem_source, tagged
from safe_estimators._report import FORMATS, CiSafeStream, Entry, Reporter, located

EXIT_OK, EXIT_INVALID, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3

EXIT_CODES = """exit codes:
  0  ok (warnings may be printed)
  1  problems found: an invalid spec, a refused request, or an AWS account problem in submit
  2  usage error (unknown command or option, a missing file name)
  3  internal error in safe-estimators (run again with --verbose and report it)"""


# Logging and warning filters are process-wide: concurrent main() calls share one quiet period,
# entered by the first and undone by the last (the state saved by the first is what comes back).
_quiet_lock = threading.Lock()
_quiet_calls = 0
_quiet_saved: tuple[int | None, list[Any], bool] = (None, [], False)
_V2_WARNING = "SAGEMAKER_SUPPRESS_V2_WARNING"


@contextlib.contextmanager
def _quiet(verbose: bool, sdk: bool = True) -> Iterator[None]:
    """Keep the output to what the user asked for: no SDK banners, INFO lines or deprecations.

    Undone on the way out, so calling ``main()`` in a notebook, a test or several threads
    leaves logging, warning filters and the environment as they were. ``sdk``: the command may
    load the SageMaker SDK (whose loggers talk); without it, and with logging not loaded by
    anyone yet, nothing can log and the logging module is not loaded just to silence it.
    """
    if verbose:
        import logging

        handler = logging.StreamHandler(sys.stderr)
        root, level = logging.getLogger(), logging.getLogger().level
        root.addHandler(handler)
        root.setLevel(logging.INFO)
        try:
            yield
        finally:
            root.removeHandler(handler)
            root.setLevel(level)
        return
    global _quiet_calls, _quiet_saved
    with _quiet_lock:
        if _quiet_calls == 0:
            filters = list(warnings.filters)
            _quiet_saved = (None, filters, _V2_WARNING in os.environ)
            os.environ.setdefault(_V2_WARNING, "1")
            warnings.simplefilter("ignore")
        if _quiet_saved[0] is None and (sdk or "logging" in sys.modules):
            import logging

            _quiet_saved = (logging.root.manager.disable, *_quiet_saved[1:])
            logging.disable(logging.WARNING)
        _quiet_calls += 1
    try:
        yield
    finally:
        with _quiet_lock:
            _quiet_calls -= 1
            if _quiet_calls == 0:
                disabled, filters, had_variable = _quiet_saved
                if disabled is not None:
                    import logging

                    logging.disable(disabled)
                warnings.filters[:] = filters  # type: ignore[index]
                warnings._filters_mutated()  # type: ignore[attr-defined]
                if not had_variable:
                    os.environ.pop(_V2_WARNING, None)


# stdout and stderr are CI-safe (see _report.CiSafeStream) while any main() runs: put in place by
# the first of concurrent calls, taken away by the last.
_output_lock = threading.Lock()
_output_calls = 0
_output_saved: tuple[Any, Any] = (None, None)


@contextlib.contextmanager
def _ci_safe_output() -> Iterator[None]:
    """Every line printed on stdout or stderr (ours, the SDK's, argparse's) passes through
    ``ci_safe_line``: no workflow command, no control character, whatever the input."""
    global _output_calls, _output_saved
    with _output_lock:
        if _output_calls == 0:
            _output_saved = (sys.stdout, sys.stderr)
            if sys.stdout is not None and not isinstance(sys.stdout, CiSafeStream):
                sys.stdout = CiSafeStream(sys.stdout)
            if sys.stderr is not None and not isinstance(sys.stderr, CiSafeStream):
                sys.stderr = CiSafeStream(sys.stderr)
        _output_calls += 1
    try:
        yield
    finally:
        with _output_lock:
            _output_calls -= 1
            if _output_calls == 0:
                for name, saved in zip(("stdout", "stderr"), _output_saved, strict=True):
                    current = getattr(sys, name)
                    if isinstance(current, CiSafeStream) and current is not saved:
                        with contextlib.suppress(OSError, ValueError):  # a reader that left
                            current.close_line()
                        if current.raw is saved:  # replaced since by someone else: leave it
                            setattr(sys, name, saved)
                _output_saved = (None, None)


def _problems_json(source: str | None, problems: Sequence[Problem]) -> list[dict[str, Any]]:
    """The first MAX_PROBLEMS problems, as the text output shows them (``_omitted`` counts the
    rest): one bad value repeated 9,000 times was 8 MB of JSON."""
    return [entry.as_json() for entry in located(source, problems[:MAX_PROBLEMS])]


def _omitted(problems: Sequence[object]) -> dict[str, int]:
    return {"omitted": len(problems) - MAX_PROBLEMS} if len(problems) > MAX_PROBLEMS else {}


def _emit_json(document: Any) -> None:
    # Strict JSON: a NaN or Infinity would break the reader's parser (see _plan for the check);
    # no credential printed whole, wherever in the document it is (a file name, a skipped spec).
    from safe_estimators._report import masked_texts

    print(json.dumps(masked_texts(document), indent=2, default=str, allow_nan=False))


def _shown(path: str) -> str:
    """A file name in a line of text: no control character, no credential printed whole."""
    from safe_estimators._secret_formats import mask_text

    return printable(mask_text(path))


def _failure(source: str | None, problems: Sequence[Problem]) -> dict[str, Any]:
    return {
        "ok": False,
        "source": source,
        "problems": _problems_json(source, problems),
        **_omitted(problems),
    }


# --- validate -------------------------------------------------------------------------------


def _targets(args: argparse.Namespace) -> tuple[list[tuple[str, bool]], list[str]]:
    """The files the command line names, each with whether it is a folder that holds no spec
    (a folder stands for the job specs in it; with --specs-only a spec-suffixed file that
    names no estimator is skipped too), and the files skipped."""
    out: list[tuple[str, bool]] = []
    skipped: list[str] = []
    for target in args.files:
        folder = os.path.isdir(target)
        if not folder and not getattr(args, "specs_only", False):
            # As spec_files gives it; not importing the spec reader for it keeps a cached
            # verdict from building the spec classes and converter (25 ms).
            out.append((os.fspath(target), False))
            continue
        from safe_estimators._commands.validate import is_job_spec, spec_files
        from safe_estimators._spec_files.read import SUFFIXES

        files = spec_files(target)
        kept = {p for p in files if not p.lower().endswith(SUFFIXES) or is_job_spec(p)}
        skipped += [path for path in files if path not in kept]
        files = [path for path in files if path in kept]
        if folder and not files:
            out.append((target, True))
        out += [(path, False) for path in files]
    return out, skipped


@problem_source("empty-folder")
def _empty_folder() -> list[Problem]:
    """A folder given to validate or lint must hold job specs: one with none checks nothing,
    which in CI would pass while checking nothing."""
    return tagged(_empty_folder, [Problem(
        "<folder>",
        "holds no spec files (.yaml, .yml, .json, .toml).",
        "give the folder of your job specs, or the files themselves.",
    )])  # fmt: skip


def _validate(args: argparse.Namespace) -> int:
    def check(path: str, project_root: str | os.PathLike[str] | None) -> list[Entry]:
        from safe_estimators._commands.validate import validate_file

        return located(path, validate_file(path, project_root=project_root))

    lookups: contextlib.AbstractContextManager[object] = contextlib.nullcontext()
    if not args.no_cache:  # an unchanged spec's verdict is read back (see _verdicts)
        from safe_estimators._verdicts import run
        from safe_estimators._verdicts import validate_cached as check

        lookups = run()

    targets, skipped = _targets(args)
    results: list[tuple[str, list[Entry]]] = []
    with lookups:
        for path, empty in targets:
            found = located(path, _empty_folder()) if empty else check(path, args.project_root)
            results.append((path, found))
            _resume_collection()  # the modules are loaded: more files make garbage to collect
    invalid = any(p.severity == "error" for _, problems in results for p in problems)
    if args.json:
        per_file: list[dict[str, Any]] = [
            {
                "source": source,
                "ok": not any(p.severity == "error" for p in found),
                "problems": [entry.as_json() for entry in found[:MAX_PROBLEMS]],
                **_omitted(found),
            }
            for source, found in results
        ]
        _emit_json(
            {
                "ok": not invalid,
                "problems": [p for file in per_file for p in file["problems"]],
                "skipped": skipped,
                "files": per_file,
            }
        )
        return EXIT_INVALID if invalid else EXIT_OK
    report: Reporter = args.report
    for source, problems in results:
        report.add(problems)
        if report.human and not any(p.severity == "error" for p in problems):
            print(f"{_shown(source)}: valid")
    for path in skipped if report.human else ():
        print(f"{_shown(path)}: skipped (names no estimator: not a job spec)")
    return EXIT_INVALID if invalid else EXIT_OK


# --- plan -----------------------------------------------------------------------------------


def _plan(args: argparse.Namespace) -> int:
    from safe_estimators._commands.plan import plan

    documents: list[dict[str, Any]] = []
    texts: list[Any] = []
    prices: dict[int, tuple[list[str], list[Problem]]] = {}  # --price, by the plan's index
    failed = False
    for path in args.files:
        try:
            targets = {"target": args.target} if args.target else {}
            result = plan(path, project_root=args.project_root, **targets)
            document = {"ok": True, "problems": _warnings_json(result), **result.to_dict()}
            if args.price:  # opt-in: the only part of plan that calls AWS (the Price List)
                from safe_estimators._preflight import plan_price

                price, unpriced = plan_price(result)
                document["price"] = price.to_dict() if price is not None else None
                document["problems"] += _problems_json(result.source, unpriced)
                prices[len(texts)] = (price.lines() if price is not None else [], unpriced)
            if args.json:
                _strict_json(document, path)
        except ConfigError as error:
            failed = True
            documents.append(_failure(error.source or path, error.problems))
            texts.append(error)
            continue
        documents.append(document)
        texts.append(result)
    if args.json:
        if len(documents) == 1:
            _emit_json(documents[0])
        else:
            problems = [p for d in documents for p in d["problems"]]
            _emit_json({"ok": not failed, "problems": problems, "plans": documents})
    else:
        report: Reporter = args.report
        for index, item in enumerate(texts):
            if index and report.human:
                print()
            if isinstance(item, ConfigError):
                report.problems(item.source or args.files[index], item.problems)
                continue
            lines, unpriced = prices.get(index, ([], []))
            if report.human:
                print(item)
                for line in lines:
                    print(printable(line))
            if report.format == "text":
                report.problems(item.source, unpriced)
            else:  # the text of a plan shows its warnings
                report.problems(item.source, [*item.explanation.warnings, *unpriced])
    return EXIT_INVALID if failed else EXIT_OK


@problem_source("request-json")
def _strict_json(document: Any, source: str) -> None:
    """The planned request must be JSON (no NaN, no cycle): the checks should have refused a
    spec whose request is not, so one that gets here is reported as our bug."""
    try:
        json.dumps(document, default=str, allow_nan=False)
    except ValueError as exc:  # NaN or a cycle that got past the checks: still not JSON
        raise ConfigError(
            tagged(_strict_json, [Problem("<plan>", f"the request cannot be written as JSON: "
                   f"{exc}.", "report this spec: safe_estimators should have refused it.")]),
            source=source,
        ) from exc  # fmt: skip


def _warnings_json(result: Any) -> list[dict[str, Any]]:
    return _problems_json(result.source, result.explanation.warnings)


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


@problem_source("aws-account")
def _aws_problem(exc: Exception) -> Problem | None:
    """submit calls AWS: a call refused for the account's reasons (credentials, permissions,
    quotas, a request SageMaker refuses) is the user's to fix, said with the fix, not a
    traceback."""
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
    return tagged(_aws_problem, [Problem("<aws>", f"{what} {exc}", hint)])[0]


def _submit(args: argparse.Namespace) -> int:
    from safe_estimators._commands.plan import REGION_SOURCES, job_region

    if len(args.files) != 1:
        raise _UsageError("submit takes one spec file")
    path = args.files[0]
    region = job_region()
    if region is None:
        raise ConfigError(_submit_settings(f"no AWS region: none is set in {REGION_SOURCES}."),
                          source=path)  # fmt: skip
    found: list[Problem] = []  # the preflight's warnings (its errors stop the job)
    try:
        name = _start_job(
            path, region, args.wait, args.project_root, None if args.no_preflight else found
        )
    except ConfigError:
        raise
    except Exception as exc:
        problem = _aws_problem(exc)
        if problem is None:
            raise
        raise ConfigError([problem], source=path) from exc
    if args.json:
        _emit_json(
            {"ok": True, "problems": _problems_json(path, found), "source": path, "job_name": name}
        )
        return EXIT_OK
    if args.report.format == "text":  # stdout stays the job's name alone
        Reporter("text", sys.stderr).problems(path, found)
    else:
        args.report.problems(path, found)
    if args.report.human:
        print(name)
    return EXIT_OK


@problem_source("submit-settings")
def _submit_settings(no_region: str | None) -> list[Problem]:
    """What submit needs beyond a valid spec: an AWS region to submit in, and an execution
    role (in the spec, or in the SageMaker SDK config as SageMaker.TrainingJob.RoleArn), which
    CreateTrainingJob requires. ``no_region``: the region is missing (else the role is)."""
    if no_region is not None:
        problem = Problem(
            "<aws>", no_region, "export AWS_REGION=us-east-1 (your region), or run `aws configure`."
        )
    else:
        problem = Problem(
            "role",
            "is required to submit: neither the spec nor the SageMaker SDK config "
            "(SageMaker.TrainingJob.RoleArn) names an execution role.",
            "add role: arn:aws:iam::<account>:role/<SageMaker execution role>.",
        )
    return tagged(_submit_settings, [problem])


def _start_job(
    path: str,
    region: str,
    wait: bool,
    project_root: str | None,
    preflight: list[Problem] | None = None,
) -> str:
    """Start the job of the spec at ``path``; with ``preflight`` (a list for its warnings), the
    preflight checks the very request first, and its errors stop it before it is sent."""
    from safe_estimators._commands.plan import request_problems
    from safe_estimators._resolve import resolve_arguments
    from safe_estimators._spec_files.read import job_arguments
    from safe_estimators._targets import build_estimator, configured_role, submitting_session

    arguments, source, prior = job_arguments(path, {}, project_root=project_root)
    job = resolve_arguments(arguments, source, prior)

    def check(params: dict[str, Any], model: Any = None, **_: Any) -> None:
        problems = request_problems(params, model)
        if problems:
            raise ConfigError(problems, source=source)
        if preflight is not None:
            from safe_estimators._preflight import preflight_request

            result = preflight_request(params, region, source)
            result.raise_for_errors()
            preflight.extend(result.problems)

    if job.target == "model_trainer":
        from safe_estimators._targets.model_trainer import submit_model_trainer

        return submit_model_trainer(job, region, check, wait)

    session = submitting_session(region, check)
    if not job.kwargs.get("role") and not configured_role(session):
        raise ConfigError(_submit_settings(None), source=source)
    estimator = build_estimator(job, session)
    inputs = job.spec.inputs
    estimator.fit(inputs=dict(inputs) if isinstance(inputs, dict) else inputs, wait=wait, logs=wait)
    name: str = estimator.latest_training_job.name
    return name


# --- preflight ------------------------------------------------------------------------------


def _preflight(args: argparse.Namespace) -> int:
    from safe_estimators._preflight import preflight

    results: list[tuple[str, list[Problem], Any]] = []
    for path in args.files:
        try:
            result = preflight(
                path, price=args.price, time_limit=args.time_limit, project_root=args.project_root
            )
        except ConfigError as error:  # the offline checks come first
            results.append((error.source or path, list(error.problems), None))
            continue
        results.append((path, list(result.problems), result))
    failed = any(p.severity == "error" for _, problems, _ in results for p in problems)
    if args.json:
        files = [
            {
                "source": source,
                "ok": not any(p.severity == "error" for p in problems),
                "problems": [
                    {**e, "rule": "preflight"} if result is not None else e
                    for e in _problems_json(source, problems)
                ],
                **(result.to_dict() if result is not None else {}),
            }
            for source, problems, result in results
        ]
        problems_json = [p for file in files for p in file["problems"]]
        _emit_json({"ok": not failed, "problems": problems_json, "files": files})
        return EXIT_INVALID if failed else EXIT_OK
    report: Reporter = args.report
    for source, problems, result in results:
        report.problems(source, problems)
        if report.human and result is not None:
            if result.ok:
                print(f"{printable(source)}: preflight passed ({result.region})")
            for line in result.price.lines() if result.price is not None else ():
                print(f"{printable(source)}: {line}")
    return EXIT_INVALID if failed else EXIT_OK


# --- lint -----------------------------------------------------------------------------------


def _lint(args: argparse.Namespace) -> int:
    """A spec's problems as validate finds them (one verdict) and its script's findings, each
    where it is written; a bare script's findings."""
    from safe_estimators._commands.validate import lint_target

    targets, skipped = _targets(args)
    results: list[tuple[str, list[Entry]]] = []
    for path, empty in targets:
        if empty:
            results.append((path, located(path, _empty_folder())))
            continue
        problems, findings = lint_target(path, project_root=args.project_root)
        entries = located(path, problems) + [_finding_entry(path, f) for f in findings]
        results.append((path, entries))
    failed = any(e.severity == "error" for _, entries in results for e in entries)
    if args.json:
        problems_json = [e.as_json() for _, found in results for e in found[:MAX_PROBLEMS]]
        omitted = sum(max(0, len(found) - MAX_PROBLEMS) for _, found in results)
        _emit_json({"ok": not failed, "problems": problems_json,
                    **({"omitted": omitted} if omitted else {})})  # fmt: skip
        return EXIT_INVALID if failed else EXIT_OK
    report: Reporter = args.report
    for target, entries in results:
        report.add(entries)
        if not entries and report.human:
            print(f"{printable(target)}: no findings")
    for path in skipped if report.human else ():
        print(f"{_shown(path)}: skipped (names no estimator: not a job spec)")
    return EXIT_INVALID if failed else EXIT_OK


def _finding_entry(target: str, finding: Any) -> Entry:
    """A script finding where it is written: its file is relative to the spec's source_dir,
    or as the command line gave it; a finding about the whole file (line 0) has no line."""
    file = finding.file
    if not os.path.isfile(file) and file != target:
        from safe_estimators._spec_files.read import read_spec_data

        data, _ = read_spec_data(target)
        source_dir = data.get("source_dir") if data else None
        if isinstance(source_dir, str):
            inside = os.path.join(os.path.dirname(target), source_dir, file)
            file = os.path.normpath(inside) if os.path.isfile(inside) else file
    from safe_estimators._secret_formats import mask_text

    return Entry(
        target,
        finding.file,
        mask_text(finding.message),  # a script's line may hold a token
        mask_text(finding.hint),
        finding.severity,
        rule=finding.rule,
        file=file,
        line=finding.line or None,
        column=None,
        script=True,
    )


# --- catalog and schema ---------------------------------------------------------------------

@problem_source("fits")
def _fits(path: str, as_json: bool, report: Reporter) -> int:
    """``catalog --fits``: the spec needs a ``model:`` (the estimate is of that model) and a
    single instance type to vary; a model that fits on no instance type of the catalog, on up
    to 64 instances, fails."""
    from safe_estimators._memory.catalog import placements_of_file

    try:
        found = placements_of_file(path)
    except ConfigError as error:  # its problems are the spec's: they name its file
        raise ConfigError(tagged(_fits, error.problems), source=error.source or path) from None
    if as_json:
        rows = [
            {"instance_type": p.instance.name, "instance_count": p.instance_count,
             "layout": p.estimate.layout, "memory": p.estimate.to_dict()}
            for p in found
        ]  # fmt: skip
        _emit_json(rows)
        return EXIT_OK
    if not found:
        if report.format == "text":
            print(f"{_shown(path)}: fits on no instance type of the catalog (up to 64 "
                  "instances)")  # fmt: skip
        else:
            nowhere = Problem(
                "model",
                "fits on no instance type of the catalog (up to 64 instances).",
                "make the model smaller, or shard it over more devices.",
            )
            report.problems(path, tagged(_fits, [nowhere]))
        return EXIT_INVALID
    if not report.human:
        return EXIT_OK
    table = [("instance type", "count", "accelerators", "memory/device", "estimate", "use",
              "layout assumed")]  # fmt: skip
    table += [
        (
            p.instance.name,
            str(p.instance_count),
            f"{p.instance_count * p.device.accelerator_count} x {p.device.accelerator_name}",
            gigabytes(p.device.accelerator_memory_mib or 0),
            f"{p.estimate.total / 1e9:.1f} GB",
            f"{p.estimate.fraction:.0%}" + (" (tight)" if p.estimate.tight else ""),
            p.estimate.layout,
        )
        for p in found
    ]
    _print_table(table)
    return EXIT_OK


def gigabytes(mebibytes: int) -> str:
    """Memory as every output gives it: GB of 10^9 bytes, one decimal (the catalog records
    MiB, as EC2's DescribeInstanceTypes does: 81920 MiB is 85.9 GB)."""
    return f"{mebibytes * 2**20 / 1e9:.1f} GB"


def _print_table(table: Sequence[Sequence[str]]) -> None:
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for row in table:
        cells = (cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        print("  ".join(cells).rstrip())


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

    if args.fits:
        return _fits(args.fits, args.json, args.report)

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

        _emit_json([attrs.asdict(t) for t in rows])
        return EXIT_OK
    if not args.report.human:
        return EXIT_OK
    header = (
        "instance type", "GPUs", "accelerator", "devices", "memory/device", "vCPUs", "EFA",
        "NeuronCores", "bf16", "fp8",
    )  # fmt: skip
    table = [header] + [
        (
            t.name,
            str(t.gpu_count),
            t.accelerator_name or "-",
            str(t.accelerator_count),
            gigabytes(t.accelerator_memory_mib) if t.accelerator_memory_mib else "-",
            str(t.vcpus),
            "yes" if t.efa_supported else "no",
            str(t.neuron_cores) if t.neuron_cores is not None else "-",
            *(_yes_no(getattr(t.accelerator, kind, None)) for kind in ("bf16", "fp8")),
        )
        for t in rows
    ]
    _print_table(table)
    return EXIT_OK


def _yes_no(value: bool | None) -> str:
    return "-" if value is None else "yes" if value else "no"


def _rule(args: argparse.Namespace) -> int:
    from safe_estimators._report import help_uri
    from safe_estimators._rulebook import rule_text, rulebook

    book = rulebook()
    if args.all == (args.name is not None):
        raise _UsageError("give a rule's NAME, or --all")
    if args.name is not None and args.name not in book:
        from safe_estimators._problems import did_you_mean

        close = did_you_mean(args.name, book)
        raise _UsageError(
            f"argument NAME: no rule is called {printable(args.name)!r}"
            f"{f'; {close}' if close else ''} (safe-estimators rule --all lists them)"
        )
    chosen = list(book.values()) if args.all else [book[args.name]]
    args.report.printed = True  # the documentation is what was asked for, in every format
    if args.json:
        _emit_json([
            {"id": r.id, "kind": r.kind, "summary": r.summary, "documentation": r.text,
             "defined": r.defined, "sources": list(r.sources), "help_uri": help_uri(r.id)}
            for r in chosen
        ])  # fmt: skip
    elif args.all:
        width = max(len(r.id) for r in chosen)
        for r in chosen:
            print(f"{r.id.ljust(width)}  {r.kind:6}  {r.summary}")
    else:
        print(rule_text(chosen[0]), end="")
    return EXIT_OK


def _schema(args: argparse.Namespace) -> int:
    from safe_estimators._spec_files.schema import spec_schema

    _emit_json(spec_schema())  # in every format: the schema is what was asked for
    args.report.printed = True
    return EXIT_OK


# --- the parser -----------------------------------------------------------------------------


class _UsageError(Exception):
    """A command line that cannot be run as written (exit 2); ``parser``: the (sub)command
    whose usage to print, where the parser knows it."""

    def __init__(self, message: str, parser: argparse.ArgumentParser | None = None) -> None:
        super().__init__(message)
        self.parser = parser


def _columns() -> int:
    """The terminal's width as ``shutil.get_terminal_size`` gives it ($COLUMNS, else the
    terminal on stdout, else 80)."""
    with contextlib.suppress(KeyError, ValueError):
        if (columns := int(os.environ["COLUMNS"])) > 0:
            return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """argparse's formatter, as wide as argparse makes it, without importing shutil (and the
    compression modules it loads, a millisecond): argparse makes a formatter for every option
    added, whether any help is printed or not."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        width = _columns() - 2 if width is None else width
        super().__init__(prog, indent_increment, max_help_position, width)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)
        self.commands: dict[str, argparse.ArgumentParser] = {}  # the top level's, by name

    def error(self, message: str) -> Any:  # argparse's default prints and exits
        raise _UsageError(message, self)


def _count(text: str) -> int:
    """A count of 0 or more (argparse words a ValueError with this function's name)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


class _Version(argparse.Action):
    """``--version``: the installed package's version, looked up only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from safe_estimators._report import version

        print(f"safe-estimators {version()}")
        parser.exit()


def _global_flags(parser: argparse.ArgumentParser, default: Any) -> None:
    """--verbose, --json, --format and --project-root, accepted before and after the command."""
    parser.add_argument(
        "--verbose", action="store_true", default=default, help="show the SageMaker SDK's logs"
    )
    parser.add_argument(
        "--json", action="store_true", default=default, help="one JSON document on stdout"
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="text" if default is False else default,
        help="text (default), json (as --json), github (workflow-command annotations), sarif "
        "(SARIF 2.1.0) or codeclimate (GitLab Code Quality)",
    )
    parser.add_argument(
        "--project-root",
        metavar="DIR",
        default=None if default is False else default,
        help="the folder entry_point, source_dir and dependencies must stay inside (default: "
        "the spec's git repository, else the spec's folder)",
    )
    parser.add_argument(
        "--recipes",
        metavar="DIR",
        default=None if default is False else default,
        help="a local copy of aws/sagemaker-hyperpod-recipes, where predefined training_recipe "
        "names are read (default: $SAFE_ESTIMATORS_RECIPES)",
    )


def _specs_only(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--specs-only",
        action="store_true",
        help="skip YAML, JSON and TOML files that name no estimator, as in a folder (for "
        "pre-commit, which passes every changed file)",
    )


def _validate_options(validate: argparse.ArgumentParser) -> None:
    validate.add_argument("files", nargs="+", metavar="FILE_OR_DIR")
    _specs_only(validate)
    validate.add_argument(
        "--no-cache",
        action="store_true",
        help="check every spec again instead of reusing the verdict of an unchanged one",
    )
    validate.set_defaults(run=_validate)


def _plan_options(plan: argparse.ArgumentParser) -> None:
    plan.add_argument("files", nargs="+", metavar="FILE")
    plan.add_argument(
        "--target",
        choices=("estimator", "model_trainer"),
        help="plan the job as this target, in place of the spec's target: (default: the "
        "spec's, else the installed SageMaker SDK's: estimator with sagemaker 2, "
        "model_trainer with sagemaker 3)",
    )
    plan.add_argument(
        "--price",
        action="store_true",
        help="add the on-demand price, the ceiling over max_run and cheaper types that fit "
        "(calls the AWS Price List; plan is otherwise offline)",
    )
    plan.set_defaults(run=_plan)


def _submit_options(submit: argparse.ArgumentParser) -> None:
    submit.add_argument("files", nargs=1, metavar="FILE")
    submit.add_argument("--wait", action="store_true", help="wait for the job and show its logs")
    submit.add_argument(
        "--no-preflight",
        action="store_true",
        help="send the job without checking it against the account first (see preflight)",
    )
    submit.set_defaults(run=_submit)


def _seconds(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


def _preflight_options(preflight: argparse.ArgumentParser) -> None:
    preflight.add_argument("files", nargs="+", metavar="FILE")
    preflight.add_argument(
        "--price",
        action="store_true",
        help="also read the on-demand price (AWS Price List) and the cheaper types that fit",
    )
    preflight.add_argument(
        "--time-limit",
        type=_seconds,
        default=30.0,
        metavar="SECONDS",
        help="the whole preflight's time bound (default 30); what did not finish is named",
    )
    preflight.set_defaults(run=_preflight)


def _lint_options(lint: argparse.ArgumentParser) -> None:
    lint.add_argument("files", nargs="+", metavar="FILE_SPEC_OR_DIR")
    _specs_only(lint)
    lint.set_defaults(run=_lint)


def _catalog_options(catalog: argparse.ArgumentParser) -> None:
    catalog.add_argument(
        "--min-gpus",
        type=_count,
        default=0,
        metavar="N",
        help="only the instance types with at least N GPUs (default 0: every type)",
    )
    catalog.add_argument("--accelerator", metavar="NAME", help="e.g. A100, V100, Trainium")
    catalog.add_argument(
        "--fits",
        metavar="SPEC",
        help="the instance types (and fewest instances) on which SPEC's model: fits in memory "
        "with SPEC's parallel options, smallest accelerator memory first",
    )
    catalog.set_defaults(run=_catalog)


def _schema_options(schema: argparse.ArgumentParser) -> None:
    schema.set_defaults(run=_schema)


def _rule_options(rule: argparse.ArgumentParser) -> None:
    rule.add_argument("name", nargs="?", metavar="NAME", help="a rule id, as lint and SARIF "
                      "report it (spot-training, xla-missing-mp-fn)")  # fmt: skip
    rule.add_argument("--all", action="store_true", help="list every rule with its summary")
    rule.set_defaults(run=_rule)


def _port_options(port: argparse.ArgumentParser) -> None:
    port.add_argument("files", nargs=1, metavar="FILE")
    port.add_argument(
        "--region",
        help="the region whose training image to write (default: AWS_REGION, "
        "AWS_DEFAULT_REGION or the AWS config; none: an error)",
    )
    port.set_defaults(run=_port)


# Each command: its help line in ``safe-estimators --help`` and what fills in its options.
_COMMANDS = {
    "validate": ("check spec files or folders of them (no AWS, no sagemaker)", _validate_options),
    "plan": ("show the resolved job and its request, offline", _plan_options),
    "preflight": ("check specs against the AWS account, read-only (calls AWS)", _preflight_options),
    "submit": ("start the training job (calls AWS)", _submit_options),
    "lint": ("check training scripts, or the scripts of specs", _lint_options),
    "catalog": ("list training instance types", _catalog_options),
    "schema": ("print the JSON Schema of spec files", _schema_options),
    "port": (
        "print the Python code of the job's bare ModelTrainer (a recipe's from_recipe), offline",
        _port_options,
    ),
    "rule": ("explain a rule: what it checks, why, and its sources", _rule_options),
}


def _parser(arguments: Sequence[str] | None = None) -> _Parser:
    """The command line's parser; with ``arguments``, only the commands named among them, or
    every command's help line when none is (``--help``): building every command's options was
    a few milliseconds of each run. A word that only looks like a command (a file called
    ``plan``) costs its options, nothing else; a line that does not parse is parsed again by
    the whole parser (``_main``), so that its message names every command."""
    parser = _Parser(
        prog="safe-estimators",
        description="Check SageMaker training job specs and plan them offline.",
        epilog=EXIT_CODES,
    )
    _global_flags(parser, False)
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    flags = _Parser(add_help=False)
    _global_flags(flags, argparse.SUPPRESS)  # after the command, without resetting before
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=_Parser
    )
    named = _COMMANDS.keys() if arguments is None else _COMMANDS.keys() & set(arguments)
    for name, (help_text, fill) in _COMMANDS.items():
        if name not in named:
            if arguments is None or not named:  # --help lists every command
                commands.add_parser(name, help=help_text)
            continue
        command = commands.add_parser(name, help=help_text, parents=[flags], epilog=EXIT_CODES)
        fill(command)
        parser.commands[name] = command
    return parser


def _port(args: argparse.Namespace) -> int:
    from safe_estimators._commands.port import port

    code = port(args.files[0], project_root=args.project_root, region=args.region)
    if args.json:
        _emit_json({"ok": True, "problems": [], "source": args.files[0], "code": code})
    else:
        print(code, end="")
    args.report.printed = True  # the code is what was asked for, in every format
    return EXIT_OK


def _usage(parser: argparse.ArgumentParser, message: str, output: str) -> int:
    if output == "json":
        _emit_json(_failure(None, [Problem("<usage>", message, "see safe-estimators --help.")]))
        return EXIT_USAGE
    Reporter(output, sys.stdout).finish(failure=message)
    parser.print_usage(sys.stderr)
    print(f"{parser.prog}: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _requested_format(arguments: Sequence[str]) -> str:
    """The output format the command line asks for, read before it is parsed (a usage error
    is reported in it too)."""
    if "--json" in arguments:
        return "json"
    chosen = "text"
    for index, argument in enumerate(arguments):
        value = None
        if argument == "--format" and index + 1 < len(arguments):
            value = arguments[index + 1]
        elif argument.startswith("--format="):
            value = argument.partition("=")[2]
        if value in FORMATS:
            chosen = value
    return chosen


# The commands that load the SageMaker SDK; the others never load logging just to quiet it.
_SDK_COMMANDS = (_plan, _submit, _port, _preflight)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code (see ``EXIT_CODES``).

    Run as the ``safe-estimators`` command (no ``argv``), the process ends as soon as the output
    is flushed: nothing it holds needs tearing down, and garbage-collecting every module at exit
    costs a one-file validate about a fifth of its time.
    """
    if _signal.getsignal(_signal.SIGINT) is _interrupted_while_loading:
        _signal.signal(_signal.SIGINT, _signal.default_int_handler)  # main's own handling
    with _ci_safe_output():
        code = _main(argv)
    if argv is None and _is_the_command():
        _exit_now(code)
    return code


def _resume_collection() -> None:
    """Switch the cyclic collector back on if the command's start switched it off, first
    moving what is alive (the modules, their tables) out of its reach: it would scan them at
    every collection and never free them."""
    global _COLLECTION_PAUSED
    if _COLLECTION_PAUSED:
        _COLLECTION_PAUSED = False
        import gc

        gc.freeze()
        gc.enable()


def _is_the_command() -> bool:
    script = getattr(sys.modules.get("__main__"), "__file__", None) or ""
    return os.path.basename(script).removesuffix(".exe") == "safe-estimators"


def _exit_now(code: int) -> None:
    with contextlib.suppress(OSError, ValueError):  # the reader left, or a stream was closed
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


def _recipes_from(folder: str | None) -> contextlib.AbstractContextManager[None]:
    if not folder:  # nothing to set: the recipe loader is not even imported
        return contextlib.nullcontext()
    from safe_estimators._recipes.modes import recipes_from

    return recipes_from(folder)


def _main(argv: Sequence[str] | None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    output = _requested_format(arguments)
    parser = _parser(arguments)
    try:
        try:
            args, extra = parser.parse_known_args(arguments)
        except _UsageError as exc:
            if exc.parser is not None and exc.parser is not parser:
                raise  # a command's own options: its usage
            parser = _parser()  # its message names every command (invalid choice: ...)
            args, extra = parser.parse_known_args(arguments)
        if extra:  # argparse finds them after the command has parsed: the command's usage
            command = parser.commands.get(args.command, parser)
            raise _UsageError(f"unrecognized arguments: {' '.join(extra)}", command)
    except _UsageError as exc:
        return _usage(exc.parser or parser, str(exc), output)
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    if args.json:
        args.format = "json"
    args.json = args.format == "json"
    report = args.report = Reporter(args.format, sys.stdout)
    if args.run is not _validate:
        _resume_collection()  # validate resumes it after its first file
    try:
        with _quiet(args.verbose, sdk=args.run in _SDK_COMMANDS), _recipes_from(args.recipes):
            result: Any = args.run(args)
        report.finish()  # in the guard: a document that cannot be written is an internal error
    except _UsageError as exc:  # the command's usage, not the top level's
        command = parser.commands.get(args.command, parser)
        return _usage(exc.parser or command, str(exc), args.format)
    except ConfigError as error:
        source = error.source or next(iter(getattr(args, "files", [])), None) or "spec"
        if args.json:
            _emit_json(_failure(source, error.problems))
        else:
            report.problems(source, error.problems)
            report.finish()
        return EXIT_INVALID
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `safe-estimators plan x | head`: the reader left; not an error
        sys.stderr.close()
        return EXIT_OK
    except Exception as exc:
        if args.verbose:
            raise
        from safe_estimators._secret_formats import mask_text

        # An exception's text may quote a value (botocore quotes a bucket name with its user).
        message = f"internal error: {type(exc).__name__}: {printable(mask_text(str(exc)[:500]))}"
        if args.json:
            internal = Problem("<internal>", message, "run again with --verbose and report it.")
            _emit_json(_failure(None, [internal]))
        elif report.format != "text":
            try:
                report.finish(failure=message)
            except Exception:  # the problems themselves cannot be written: the failure alone
                report.entries = []
                report.finish(failure=message)
        print(
            f"safe-estimators: {message}\n"
            "Run again with --verbose for the traceback, and please report it.",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
    return int(result)


def run() -> None:  # pragma: no cover - the console script
    """``safe-estimators``: run, flush, and end the process without tearing it down."""
    _exit_now(main())


if __name__ == "__main__":  # pragma: no cover
    run()
