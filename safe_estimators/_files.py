"""Spec files: YAML, JSON or TOML documents whose keys are the factories' keyword arguments."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from safe_estimators._problems import ConfigError, Problem
from safe_estimators._spec import JobSpec, structure_spec

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

SUFFIXES = (".yaml", ".yml", ".json", ".toml")


def _parse(path: Path, text: str) -> Any:
    suffix = path.suffix.lower()
    if suffix == ".json":
        return json.loads(text)
    if suffix == ".toml":
        return tomllib.loads(text)
    import yaml  # deferred: only YAML files pay for it

    # The C loader (when PyYAML was built with libyaml) is about 8 times faster.
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _syntax_problem(path: Path, exc: Exception) -> Problem:
    mark = getattr(exc, "problem_mark", None)
    if mark is not None:  # PyYAML
        where = f"line {mark.line + 1}, column {mark.column + 1}"
        what = getattr(exc, "problem", None) or str(exc)
    elif isinstance(exc, json.JSONDecodeError):
        where, what = f"line {exc.lineno}, column {exc.colno}", exc.msg
    else:
        where, what = "", str(exc)
    kind = path.suffix.lstrip(".").upper() or "spec"
    return Problem(
        "<file>",
        f"is not valid {kind}{' at ' + where if where else ''}: {what}.",
        "fix the syntax; `python -c \"import yaml,sys; yaml.safe_load(open(sys.argv[1]))\" FILE` "
        "shows the same error."
        if kind in ("YAML", "YML")
        else "fix the syntax.",
    )


def read_spec_data(path: str | os.PathLike[str]) -> tuple[dict[str, Any] | None, list[Problem]]:
    """Read a spec file into plain data. Never raises for a bad file."""
    file = Path(path)
    if file.suffix.lower() not in SUFFIXES:
        return None, [
            Problem(
                "<file>",
                f"{file.name!r} is not a spec file (expected {', '.join(SUFFIXES)}).",
                "rename it with the suffix of its format.",
            )
        ]
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, [Problem("<file>", f"{str(file)!r} does not exist.", "check the path.")]
    except (OSError, UnicodeDecodeError) as exc:
        return None, [Problem("<file>", f"cannot be read: {exc}.")]
    try:
        data = _parse(file, text)
    except Exception as exc:
        return None, [_syntax_problem(file, exc)]
    if not isinstance(data, dict):
        return None, [
            Problem(
                "<file>",
                f"must hold a mapping of options at the top level, got {type(data).__name__}.",
                "start the file with `estimator: huggingface` (or pytorch) and the options.",
            )
        ]
    return data, []


def load_spec(path: str | os.PathLike[str]) -> JobSpec:
    """Load and type-check a spec file; raise ConfigError with every problem in it.

    The file's keys are the factories' keyword arguments plus ``estimator`` (``huggingface`` or
    ``pytorch``) and optional ``inputs`` (the channels passed to ``fit``). Relative
    ``entry_point``, ``source_dir`` and ``model.config`` are resolved against the file's folder.
    """
    data, problems = read_spec_data(path)
    spec = None
    if data is not None:
        spec, problems = structure_spec(relative_to_file(Path(path).parent, data))
    if spec is None or problems:
        raise ConfigError(problems, source=str(path))
    return spec


def relative_to_file(folder: Path, data: dict[str, Any]) -> dict[str, Any]:
    """Paths in a file are relative to the file, wherever the command runs from."""
    out = dict(data)
    source_dir = out.get("source_dir")
    if isinstance(source_dir, str) and "://" not in source_dir:
        out["source_dir"] = str(folder / source_dir)
    elif isinstance(out.get("entry_point"), str) and source_dir is None:
        out["entry_point"] = str(folder / out["entry_point"])
    model = out.get("model")
    if isinstance(model, dict) and isinstance(model.get("config"), str) and model["config"]:
        out["model"] = {**model, "config": str(folder / model["config"])}
    return out
