"""The ``safe-estimators`` command: validate, plan, submit, lint, catalog and schema."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import threading
import warnings
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

import attrs

from safe_estimators._bounds import MAX_PROBLEMS, printable
from safe_estimators._problems import ConfigError, Problem

EXIT_OK, EXIT_INVALID, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


# Logging and warning filters are process-wide: concurrent main() calls share one quiet period,
# entered by the first and undone by the last (the state saved by the first is what comes back).
_quiet_lock = threading.Lock()
_quiet_calls = 0
_quiet_saved: tuple[int, list[Any], bool] = (0, [], False)
_V2_WARNING = "SAGEMAKER_SUPPRESS_V2_WARNING"


@contextlib.contextmanager
def _quiet(verbose: bool) -> Iterator[None]:
    """Keep the output to what the user asked for: no SDK banners, INFO lines or deprecations.

    Undone on the way out, so calling ``main()`` in a notebook, a test or several threads
    leaves logging, warning filters and the environment as they were.
    """
    if verbose:
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
            _quiet_saved = (logging.root.manager.disable, filters, _V2_WARNING in os.environ)
            os.environ.setdefault(_V2_WARNING, "1")
            logging.disable(logging.WARNING)
            warnings.simplefilter("ignore")
        _quiet_calls += 1
    try:
        yield
    finally:
        with _quiet_lock:
            _quiet_calls -= 1
            if _quiet_calls == 0:
                disabled, filters, had_variable = _quiet_saved
                logging.disable(disabled)
                warnings.filters[:] = filters  # type: ignore[index]
                warnings._filters_mutated()  # type: ignore[attr-defined]
                if not had_variable:
                    os.environ.pop(_V2_WARNING, None)


# A problem is one line for a human; a path or message longer than this quotes a value whole.
_MAX_LINE = 2_000


def _print_problem(out: TextIO, source: str, problem: Problem) -> None:
    # Every part may hold the user's text: escaped, none can start a line or reach the terminal.
    label = "warning: " if problem.severity == "warning" else ""
    hint = f" ({problem.hint})" if problem.hint else ""
    path = problem.path if len(problem.path) <= 200 else problem.path[:199] + "…"
    line = printable(f"{source}: {path}: {label}{problem.message}{hint}")
    out.write((line if len(line) <= _MAX_LINE else line[: _MAX_LINE - 1] + "…") + "\n")


def _print_problems(out: TextIO, source: str, problems: Sequence[Problem]) -> None:
    for problem in problems[:MAX_PROBLEMS]:
        _print_problem(out, source, problem)
    if len(problems) > MAX_PROBLEMS:
        more = len(problems) - MAX_PROBLEMS
        out.write(printable(f"{source}: ... and {more:,} more problems (the first "
                            f"{MAX_PROBLEMS} are shown)") + "\n")  # fmt: skip


def _validate(args: argparse.Namespace) -> int:
    from safe_estimators._validate import validate_file

    invalid = False
    for path in args.files:
        problems = validate_file(path, project_root=args.project_root)
        _print_problems(sys.stdout, path, problems)
        errors = sum(p.severity == "error" for p in problems)
        invalid |= errors > 0
        if not errors:
            print(f"{printable(path)}: valid")
    return EXIT_INVALID if invalid else EXIT_OK


def _plan(args: argparse.Namespace) -> int:
    from safe_estimators._files import load_spec
    from safe_estimators._plan import plan

    result = plan(load_spec(args.file, project_root=args.project_root))
    result = attrs.evolve(result, source=args.file)
    try:
        text = result.to_json() if args.json else str(result)
    except ValueError as exc:  # NaN or a cycle that got past the checks: still not JSON
        raise ConfigError(
            [Problem("<plan>", f"the request cannot be written as JSON: {exc}.",
                     "report this spec: safe_estimators should have refused it.")],
            source=args.file,
        ) from exc  # fmt: skip
    print(text)
    return EXIT_OK


def _submit(args: argparse.Namespace) -> int:
    import boto3
    import sagemaker

    from safe_estimators._factories import build
    from safe_estimators._files import load_spec

    spec = load_spec(args.file, project_root=args.project_root)
    estimator = build(spec, sagemaker_session=sagemaker.Session(boto_session=boto3.Session()))
    inputs = dict(spec.inputs) if isinstance(spec.inputs, dict) else spec.inputs
    estimator.fit(inputs=inputs, wait=args.wait, logs=args.wait)
    print(estimator.latest_training_job.name)
    return EXIT_OK


def _fits(path: str, as_json: bool) -> int:
    from safe_estimators._memory.catalog import placements_of_file

    found = placements_of_file(path)
    if as_json:
        rows = [
            {"instance_type": p.instance.name, "instance_count": p.instance_count,
             "memory": p.estimate.to_dict()}
            for p in found
        ]  # fmt: skip
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    if not found:
        print(f"{path}: fits on no instance type of the catalog (up to 64 instances)")
        return EXIT_INVALID
    table = [("instance type", "count", "accelerators", "memory/device", "estimate", "use")]
    table += [
        (
            p.instance.name,
            str(p.instance_count),
            f"{p.instance_count * p.instance.accelerator_count} x {p.instance.accelerator_name}",
            f"{p.instance.accelerator_memory_mib} MiB",
            f"{p.estimate.total / 1e9:.1f} GB",
            f"{p.estimate.fraction:.0%}" + (" (tight)" if p.estimate.tight else ""),
        )
        for p in found
    ]
    _print_table(table)
    return EXIT_OK


def _print_table(table: Sequence[Sequence[str]]) -> None:
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for row in table:
        cells = (cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        print("  ".join(cells).rstrip())


def _catalog(args: argparse.Namespace) -> int:
    import instance_catalog

    if args.fits:
        return _fits(args.fits, args.json)

    rows = [
        t
        for t in instance_catalog.instance_types()
        if t.gpu_count >= args.min_gpus
        and (
            args.accelerator is None
            or (t.accelerator_name or "").lower() == args.accelerator.lower()
        )
    ]
    if args.json:
        import attrs

        print(json.dumps([attrs.asdict(t) for t in rows], indent=2))
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
            f"{t.accelerator_memory_mib // 1024} GiB" if t.accelerator_memory_mib else "-",
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


def _schema(args: argparse.Namespace) -> int:
    from safe_estimators._schema import spec_schema

    print(json.dumps(spec_schema(), indent=2))
    return EXIT_OK


def _lint(args: argparse.Namespace) -> int:
    from safe_estimators._validate import lint_target

    findings = lint_target(args.target, project_root=args.project_root)
    for finding in findings[:MAX_PROBLEMS]:
        print(printable(str(finding)))
    if len(findings) > MAX_PROBLEMS:
        print(f"{printable(args.target)}: ... and {len(findings) - MAX_PROBLEMS:,} more findings")
    if not findings:
        print(f"{printable(args.target)}: no findings")
    return EXIT_INVALID if any(f.severity == "error" for f in findings) else EXIT_OK


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="safe-estimators",
        description="Check SageMaker training job specs and plan them offline.",
    )
    parser.add_argument("--verbose", action="store_true", help="show the SageMaker SDK's logs")
    parser.add_argument(
        "--project-root",
        metavar="DIR",
        help="the folder entry_point, source_dir and dependencies must stay inside (default: "
        "the spec's git repository, else the spec's folder)",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    validate = commands.add_parser("validate", help="check spec files (no AWS, no sagemaker)")
    validate.add_argument("files", nargs="+", metavar="FILE")
    validate.set_defaults(run=_validate)

    plan = commands.add_parser("plan", help="show the resolved job and its request, offline")
    plan.add_argument("file", metavar="FILE")
    plan.add_argument("--json", action="store_true", help="one JSON document")
    plan.set_defaults(run=_plan)

    submit = commands.add_parser("submit", help="start the training job (calls AWS)")
    submit.add_argument("file", metavar="FILE")
    submit.add_argument("--wait", action="store_true", help="wait for the job and show its logs")
    submit.set_defaults(run=_submit)

    lint = commands.add_parser("lint", help="check a training script, or the script of a spec")
    lint.add_argument("target", metavar="FILE_OR_SPEC")
    lint.set_defaults(run=_lint)

    catalog = commands.add_parser("catalog", help="list training instance types")
    catalog.add_argument("--min-gpus", type=int, default=0, metavar="N")
    catalog.add_argument("--accelerator", metavar="NAME", help="e.g. A100, V100, Trainium")
    catalog.add_argument("--json", action="store_true")
    catalog.add_argument(
        "--fits",
        metavar="SPEC",
        help="the instance types (and fewest instances) on which SPEC's model: fits in memory "
        "with SPEC's parallel options, smallest accelerator memory first",
    )
    catalog.set_defaults(run=_catalog)

    schema = commands.add_parser("schema", help="print the JSON Schema of spec files")
    schema.set_defaults(run=_schema)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code (0 ok, 1 invalid spec, 2 usage error)."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        with _quiet(args.verbose):
            result: Any = args.run(args)
    except ConfigError as error:
        source = error.source or getattr(args, "file", None) or "spec"
        _print_problems(sys.stdout, source, error.problems)
        return EXIT_INVALID
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `safe-estimators plan x | head`: the reader left; not an error
        sys.stderr.close()
        return EXIT_OK
    except Exception as exc:
        if args.verbose:
            raise
        print(
            f"safe-estimators: internal error: {type(exc).__name__}: {printable(str(exc)[:500])}\n"
            "Run again with --verbose for the traceback, and please report it.",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
    return int(result)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
