"""Spec files: YAML, JSON or TOML documents whose keys are the factories' keyword arguments."""

from __future__ import annotations

import errno
import functools
import json
import os
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from safe_estimators._bounds import (
    MAX_SPEC_BYTES,
    READ_FLAGS,
    is_inside,
    quote,
    read_at_most,
    real_path,
    real_project_folder,
    shape_problems,
    too_wide_to_package,
)
from safe_estimators._facts.code_paths import remote_source_dir, s3_entry_point
from safe_estimators._facts.targets import FINE_TUNING, REMOTE_FUNCTION
from safe_estimators._problems import ConfigError, Problem, problem_source, tagged, value_at
from safe_estimators._secret_formats import mark_spec_file_secrets

if TYPE_CHECKING:  # loaded where a spec is structured: reading a file does not need cattrs
    from safe_estimators._spec import JobSpec

SUFFIXES = (".yaml", ".yml", ".json", ".toml")


def _parse(suffix: str, text: str) -> tuple[Any, list[Problem]]:
    if suffix in (".json", ".toml"):
        if suffix == ".json":
            data = json.loads(text, object_pairs_hook=_unique_keys)
        else:  # loaded here: only TOML files pay for the parser
            if sys.version_info >= (3, 11):
                import tomllib
            else:  # pragma: no cover - Python 3.10
                import tomli as tomllib
            data = tomllib.loads(text)  # TOML itself refuses duplicate keys
        found = shape_problems(data)
        return (None, [Problem(p.path, p.message, p.hint) for p in found]) if found else (data, [])
    from safe_estimators._yaml import load_yaml

    return load_yaml(text)


def path_suffix(path: str | os.PathLike[str]) -> str:
    """``Path(path).suffix.lower()``, from the string where that is certain: reading a folder of
    specs asks it of every file, and pathlib parses the whole path to answer."""
    name = os.fspath(path)
    # Either way the answer is pathlib's (the tests compare them): whether this line sends a path
    # through the shortcut or through pathlib cannot be told apart.
    if isinstance(name, str) and os.sep == "/":  # pragma: no mutate
        last = name.rpartition("/")[2]
        if last and last != ".":  # then it is pathlib's last part too
            dot = last.rfind(".")
            return last[dot:].lower() if 0 < dot < len(last) - 1 else ""
    return Path(path).suffix.lower()


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    unique = dict(pairs)  # built in C; only a mapping with a duplicate is gone over again
    if len(unique) == len(pairs):
        return unique
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(f"duplicate key {quote(key)}; JSON parsers keep only one of them")
        out[key] = value
    return out


def _read_bounded(file: str | os.PathLike[str]) -> bytes:
    """The file's bytes, refusing anything but a regular file of at most MAX_SPEC_BYTES.

    Opened without blocking (a FIFO would wait forever for a writer) and checked on the open
    descriptor, so that the file cannot be swapped between the check and the read.
    """
    fd = os.open(file, READ_FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a folder" if stat.S_ISDIR(info.st_mode) else (
                "a FIFO" if stat.S_ISFIFO(info.st_mode) else
                "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode) else
                "a socket" if stat.S_ISSOCK(info.st_mode) else "not a regular file"
            )  # fmt: skip
            raise _NotASpec(f"is {kind}, not a regular file.", "pass the path of a spec file.")
        if info.st_size > MAX_SPEC_BYTES:
            raise _TooLarge(info.st_size)
        data = read_at_most(fd, info.st_size, MAX_SPEC_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_SPEC_BYTES:  # grew since fstat
        raise _TooLarge(len(data))
    return data


class _NotASpec(Exception):
    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.hint = hint


class _TooLarge(_NotASpec):
    def __init__(self, size: int) -> None:
        super().__init__(
            f"is {size:,} bytes; spec files are limited to {MAX_SPEC_BYTES:,} (everything "
            "CreateTrainingJob accepts fits in about 400 kB).",
            "keep data out of the spec: put it in a file in source_dir or S3 and pass its path.",
        )


def _syntax_problem(path: Path, exc: Exception) -> Problem:
    mark = getattr(exc, "problem_mark", None)
    if mark is not None:  # PyYAML
        where = f"line {mark.line + 1}, column {mark.column + 1}"
        what = getattr(exc, "problem", None) or quote(str(exc))
    elif isinstance(exc, json.JSONDecodeError):
        where, what = f"line {exc.lineno}, column {exc.colno}", exc.msg
    else:
        where, what = "", quote(str(exc), 200)
    kind = path.suffix.lstrip(".").upper() or "spec"
    return Problem(
        "<file>",
        f"is not valid {kind}{' at ' + where if where else ''}: {what}.",
        'fix the syntax; `python -c "import yaml,sys; yaml.safe_load(open(sys.argv[1]))" FILE` '
        "shows the same error."
        if kind in ("YAML", "YML")
        else "fix the syntax.",
    )


@problem_source(
    "spec-file",
    "A spec file must be a readable, regular UTF-8 file of YAML, JSON or TOML that holds a "
    "mapping of options, within the size and nesting the reader allows, with no key given "
    "twice. A syntax error is placed where the parser stopped.",
)
def read_spec_data(path: str | os.PathLike[str]) -> tuple[dict[str, Any] | None, list[Problem]]:
    """Read a spec file into plain data. Never raises for a bad file."""
    suffix = path_suffix(path)
    if suffix not in SUFFIXES:
        return None, [
            Problem(
                "<file>",
                f"{Path(path).name!r} is not a spec file (expected {', '.join(SUFFIXES)}).",
                "rename it with the suffix of its format.",
            )
        ]
    try:
        text = _read_bounded(path).decode("utf-8")
    except FileNotFoundError:
        shown = quote(str(Path(path)))
        return None, [Problem("<file>", f"{shown} does not exist.", "check the path.")]
    except _NotASpec as exc:
        return None, [Problem("<file>", str(exc), exc.hint)]
    except UnicodeDecodeError as exc:
        return None, [
            Problem("<file>", f"is not UTF-8 text (byte {exc.start:,}).", "save it as UTF-8.")
        ]
    except OSError as exc:
        reason = exc.strerror or errno.errorcode.get(exc.errno or 0, "error")
        return None, [Problem("<file>", f"cannot be read: {reason}.", "check the path.")]
    try:
        data, problems = _parse(suffix, text)
    except RecursionError:
        return None, [Problem("<file>", "is nested too deeply to read.", "flatten it.")]
    except Exception as exc:
        return None, [_syntax_problem(Path(path), exc)]
    if problems:
        return None, problems
    if not isinstance(data, dict):
        return None, [
            Problem(
                "<file>",
                f"must hold a mapping of options at the top level, got {type(data).__name__}.",
                "start the file with `estimator: huggingface` (or pytorch) and the options.",
            )
        ]
    return data, []


def job_arguments(
    spec_or_path: JobSpec | str | os.PathLike[str],
    overrides: dict[str, Any],
    *,
    project_root: str | os.PathLike[str] | None = None,
) -> tuple[dict[str, Any], str | None, list[Problem]]:
    """The keyword arguments a spec (a ``JobSpec`` or a file) stands for, with ``overrides``,
    the file's name, and the problems of the file itself (see ``read_spec``).

    Nothing else is checked here: the caller checks the result once (``resolve_arguments`` with
    these problems first), so every problem of the file and of the overrides is reported
    together, in ``validate``'s order. Raises ConfigError when the file cannot be read as a
    mapping of options.
    """
    from safe_estimators._spec import JobSpec, spec_arguments

    if isinstance(spec_or_path, JobSpec):
        arguments = {"estimator": spec_or_path.estimator, **spec_arguments(spec_or_path)}
        if spec_or_path.inputs is not None:
            arguments["inputs"] = spec_or_path.inputs
        return {**arguments, **overrides}, None, []
    source = os.fspath(spec_or_path)
    data, problems = read_spec(spec_or_path, project_root=project_root)
    if data is None:
        raise ConfigError(problems, source=source)
    return {**data, **overrides}, source, problems


def read_spec(
    path: str | os.PathLike[str], *, project_root: str | os.PathLike[str] | None = None
) -> tuple[dict[str, Any] | None, list[Problem]]:
    """A spec file as keyword arguments (paths resolved against its folder), and the problems
    of the file itself: unreadable, malformed, or paths that leave the project. Never raises."""
    data, problems = read_spec_data(path)
    if data is None:
        return None, tagged(read_spec_data, problems)
    folder = _folder(os.path.dirname(path))  # a regular file's: Path(path).parent
    # ModelTrainer's own words, in the estimator's (source_code.source_dir is source_dir), so
    # that their paths are checked and resolved as the estimator's are.
    from safe_estimators._spec import own_words

    own: list[Problem] = []
    if data.get("target") != FINE_TUNING:  # a trainer's compute is its own, not ModelTrainer's
        data, own = own_words(data, read_files=False)
    if project_root is None:
        root = real_project_folder(folder)
        problems = containment_problems(folder, data, root, real_root=root)
    else:
        problems = containment_problems(folder, data, Path(project_root))
    problems = [*own, *tagged(containment_problems, problems)]
    arguments = _unread_outside(relative_to_file(folder, data), problems)
    return mark_spec_file_secrets(arguments), problems


class RefusedRecipeFile(str):
    """A recipe file a spec names outside its project: refused for that, so never read (its
    values would otherwise reach the messages of a spec refused for naming it)."""


def _unread_outside(arguments: dict[str, Any], problems: list[Problem]) -> dict[str, Any]:
    """The arguments without the data files that resolve outside the project: the checks would
    read them (and quote their values in messages) while the spec is refused for them."""
    outside = {p.path for p in problems}
    if "model.config" in outside:
        arguments["model"] = {k: v for k, v in arguments["model"].items() if k != "config"}
    if _PARAMETERS_PATH in outside:
        arguments = _with_parameters(arguments, {})
    if "hyperparameters" in outside:
        del arguments["hyperparameters"]
    if "training_recipe" in outside:
        arguments["training_recipe"] = RefusedRecipeFile(arguments["training_recipe"])
    if "recipe" in outside and fine_tuning_recipe_file(arguments) is not None:
        arguments["recipe"] = RefusedRecipeFile(arguments["recipe"])
    return arguments


class RemoteRecipe(str):
    """A recipe a spec names that is no file beside it: the SDK downloads it
    (``urlretrieve``), so it is never looked for on this machine (not in the working folder
    either, where ``x://../..`` could name a file outside the project)."""


@problem_source(
    "project-containment",
    "entry_point, source_dir, dependencies, model.config, a hyperparameters or requirements "
    "file, a fine-tuning trainer's recipe, a @remote job's dependencies and "
    "pre_execution_script and the other local paths of a spec "
    "must stay inside the project (the spec's git repository, else its folder, or "
    "--project-root): plan and submit package and upload what they point to, and the SDK "
    "follows links. A path outside is refused and never read.",
)
def containment_problems(
    folder: Path,
    data: dict[str, Any],
    root: str | os.PathLike[str],
    *,
    real_root: str | None = None,
) -> list[Problem]:
    """Local paths of a spec file that resolve outside ``root``: plan and submit would package
    and upload whatever they point to (the SDK follows links), so they are refused.
    ``real_root``: ``root`` with its links resolved, where the caller has it already."""
    # One gate, no early exit: with git_config the code's paths (entry_point, source_dir,
    # dependencies) name files of the repository it clones, never read here; the data files
    # (model.config, the model parallel parameters, a recipe file) are read from this machine
    # by the SDK and by the checks whatever git_config says, so they are contained all the same.
    in_repository = bool(data.get("git_config"))
    # Plain strings: this runs for every file a CI job validates.
    base = os.fspath(folder)
    resolved: dict[str, str] = {}  # source_dir is both a check and the entry point's bound

    def _real(path: str) -> str:
        if path not in resolved:
            resolved[path] = real_path(path)
        return resolved[path]

    real_root = real_path(root) if real_root is None else real_root
    given = data.get("source_dir")
    # Only the schemes the SDK itself reads remotely (``_facts.code_paths``): "x://../.." is a
    # local path to the SDK, and so it is here.
    source_dir = given if isinstance(given, str) and not remote_source_dir(given) else None
    if in_repository:
        source_dir = None
    checks: list[tuple[str, str, str, str]] = []
    if source_dir is not None:
        checks.append(("source_dir", source_dir, os.path.join(base, source_dir), real_root))
    entry_point = data.get("entry_point")
    if isinstance(entry_point, str) and not remote_source_dir(given) and not in_repository:
        if source_dir is not None:
            inside = _real(os.path.join(base, source_dir))
            target = os.path.join(base, source_dir, entry_point)
            checks.append(("entry_point", entry_point, target, inside))
        elif given is None:
            checks.append(("entry_point", entry_point, os.path.join(base, entry_point), real_root))
    model = data.get("model")
    if isinstance(model, dict) and isinstance(model.get("config"), str) and model["config"]:
        config = model["config"]
        checks.append(("model.config", config, os.path.join(base, config), real_root))
    parameters = _parameters_file(data)
    if parameters is not None:
        checks.append((_PARAMETERS_PATH, parameters, os.path.join(base, parameters), real_root))
    recipe = _recipe_file(data, folder)
    if recipe is not None:
        checks.append(("training_recipe", recipe, os.path.join(base, recipe), real_root))
    hyperparameters = data.get("hyperparameters")
    if isinstance(hyperparameters, str) and hyperparameters:  # ModelTrainer reads this file
        target = os.path.join(base, hyperparameters)
        checks.append(("hyperparameters", hyperparameters, target, real_root))
    requirements, where = _requirements(data)
    if requirements is not None and data.get("training_recipe") is not None:
        # ModelTrainer.from_recipe copies this file from this machine into the job's code.
        checks.append((where, requirements, os.path.join(base, requirements), real_root))
    elif requirements is not None and source_dir is not None:
        # SourceCode's requirements is a file in source_dir, uploaded and installed with it.
        inside = _real(os.path.join(base, source_dir))
        target = os.path.join(base, source_dir, requirements)
        checks.append((where, requirements, target, inside))
    user_recipe = fine_tuning_recipe_file(data)
    if user_recipe is not None:  # the trainer reads it and sends its values as hyperparameters
        checks.append(("recipe", user_recipe, os.path.join(base, user_recipe), real_root))
    for name, written in remote_function_files(data):  # the SDK copies them and uploads them
        checks.append((name, written, os.path.join(base, written), real_root))
    dependencies = data.get("dependencies")
    if isinstance(dependencies, list) and not remote_source_dir(given) and not in_repository:
        for i, dependency in enumerate(dependencies):
            if isinstance(dependency, str):
                target = os.path.join(base, dependency)
                checks.append((f"dependencies.{i}", dependency, target, real_root))
    problems = []
    wide = (
        too_wide_to_package(_real(os.path.join(base, source_dir)), resolved=True)
        if source_dir is not None and "\0" not in source_dir
        else None
    )
    for name, written, target, inside in checks:
        if wide and name == "source_dir":
            continue
        if "\0" in target:  # no file system takes one; os.path raises ValueError on it
            problems.append(nul_problem(name, written))
            continue
        real = _real(target)
        if not is_inside(real, inside):
            where = "source_dir" if inside != real_root else f"the project ({quote(inside)})"
            problems.append(
                Problem(
                    name,
                    f"{quote(written)} resolves to {quote(real)}, outside {where}; plan and "
                    "submit would package and upload it.",
                    "move the file into the project, or name a wider project explicitly "
                    "(load_spec(..., project_root=...), or --project-root on the command line).",
                )
            )
    if source_dir is not None and wide:
        problems.append(
            Problem(
                "source_dir",
                f"{quote(source_dir)} {wide}; the SDK would package all of it.",
                "point source_dir at the folder that holds the training code.",
            )
        )
    return problems


def _requirements(data: Mapping[str, Any]) -> tuple[str | None, str]:
    """A requirements file given in ModelTrainer's words (SourceCode's, or from_recipe's
    keyword), and the path it was written at."""
    from safe_estimators._spec import WORDS_KEY

    words = data.get(WORDS_KEY)
    requirements = getattr(words, "requirements", None)
    if not isinstance(requirements, str) or not requirements:
        return None, "requirements"
    given = getattr(words, "given", {})
    return requirements, "requirements" if "requirements" in given else "source_code.requirements"


def nul_problem(path: str, written: str) -> Problem:
    """A path holding a NUL byte: no file system (and no ``os`` call) takes one."""
    return Problem(
        path,
        f"{quote(written)} contains a NUL byte (\\x00); no file can have that name.",
        "remove the NUL byte from the path.",
    )


@problem_source(
    "offline-only",
    "validate, lint and plan never use the network: code in a git repository (git_config) "
    "would have to be cloned to be checked or planned. submit clones it, as the SDK does.",
)
def offline_problems(arguments: Mapping[str, Any]) -> list[Problem]:
    """What an offline command (validate, lint, plan) cannot do without the network."""
    git_config = arguments.get("git_config")
    if not git_config:
        return []
    repo = git_config.get("repo") if isinstance(git_config, Mapping) else None
    return tagged(offline_problems, [
        Problem(
            "git_config",
            f"the code is in a git repository ({quote(repo)}): checking or planning it would "
            "clone it, and validate, lint and plan never use the network.",
            "check out the repository and point entry_point/source_dir at the local copy for "
            "validate/lint/plan; `safe-estimators submit` (and fit()) clone it as the SDK does.",
        )
    ])


# The SageMaker SDK reads its config files from these (sagemaker.config.config); an s3:// value
# makes it download the file with boto3 when a Session is created.
SDK_CONFIG_VARIABLES = ("SAGEMAKER_ADMIN_CONFIG_OVERRIDE", "SAGEMAKER_USER_CONFIG_OVERRIDE")


@problem_source(
    "sdk-config-in-s3",
    "The SageMaker SDK reads its config from $SAGEMAKER_ADMIN_CONFIG_OVERRIDE and "
    "$SAGEMAKER_USER_CONFIG_OVERRIDE (sagemaker.config.config); an s3:// one would be "
    "downloaded with boto3, which the offline plan never does.",
)
def sdk_config_problems(environ: Mapping[str, str]) -> list[Problem]:
    """An SDK config override in S3: the offline plan would have to download it."""
    return tagged(sdk_config_problems, [
        Problem(
            f"${name}",
            f"is {quote(environ[name])}: the SageMaker SDK would download that config from S3, "
            "and plan never uses the network.",
            f"download it once (`aws s3 cp {quote(environ[name], 200)} sagemaker-config.yaml`) "
            f"and set {name}=sagemaker-config.yaml for plan.",
        )
        for name in SDK_CONFIG_VARIABLES
        if environ.get(name, "").lower().startswith("s3://")
    ])


# The SDK reads model parallel parameters given as a string from that JSON file
# (fw_utils.parse_mp_parameters) and sends its contents: a path like model.config.
_PARAMETERS_PATH = "distribution.smdistributed.modelparallel.parameters"


def _parameters_file(data: Mapping[str, Any]) -> str | None:
    """The model parallel parameters file a spec names, or None."""
    found = value_at(data, _PARAMETERS_PATH)
    return found if isinstance(found, str) and found else None


def _recipe_file(data: Mapping[str, Any], folder: Path | None = None) -> str | None:
    """A local recipe file the spec names, by the SDK's own rule (``_recipe_load_from_yaml``):
    a name ending in .yaml is a file when ``os.path.isfile`` finds one (here beside the spec),
    and a URL to download only otherwise, whatever it looks like (``x://../r.yaml`` is a file
    when a folder ``x:`` holds the path). Without ``folder``: any .yaml name."""
    recipe = data.get("training_recipe")
    if not (isinstance(recipe, str) and recipe.endswith(".yaml")):
        return None
    if folder is not None and "://" in recipe and not os.path.isfile(_under(folder, recipe)):
        return None  # a URL to the SDK: it downloads it; never read here
    return recipe


# The recipe locations a fine-tuning trainer does not open on this machine
# (recipe_resolver._load_user_recipe): an S3 URI it downloads, and HTTP(S) URLs it refuses.
# Anything else, "x://../r.yaml" included, is opened as a local path.
_NOT_LOCAL_RECIPES = ("s3://", "http://", "https://")


def fine_tuning_recipe_file(data: Mapping[str, Any]) -> str | None:
    """The local recipe file a fine-tuning spec names (``recipe``), by the trainers' own rule
    (``recipe_resolver._load_user_recipe``: ``s3://`` is downloaded, ``http(s)://`` refused, any
    other string opened as a file), or None. The trainer reads it at ``train()`` and sends its
    values as the job's hyperparameters: a file outside the project would reach SageMaker."""
    recipe = data.get("recipe")
    if data.get("target") != FINE_TUNING or not isinstance(recipe, str) or not recipe:
        return None
    return None if recipe.startswith(_NOT_LOCAL_RECIPES) else recipe


def remote_function_files(data: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The local files a ``@remote`` spec names, as (option, path): ``dependencies`` (a
    requirements.txt or conda YAML file, unless ``auto_capture``: RuntimeEnvironmentManager.
    snapshot) and ``pre_execution_script``; the SDK copies each into the job's workspace and
    uploads it to S3 (``_prepare_dependencies_and_pre_execution_scripts``)."""
    if data.get("target") != REMOTE_FUNCTION:
        return []
    found = []
    for name in ("dependencies", "pre_execution_script"):
        value = data.get(name)
        if isinstance(value, str) and value and value != "auto_capture":
            found.append((name, value))
    return found


def _with_parameters(arguments: dict[str, Any], parameters: object) -> dict[str, Any]:
    """``arguments`` with the model parallel ``parameters`` replaced (the others as they are)."""
    distribution = arguments["distribution"]
    smdistributed = distribution["smdistributed"]
    block = {**smdistributed["modelparallel"], "parameters": parameters}
    smdistributed = {**smdistributed, "modelparallel": block}
    return {**arguments, "distribution": {**distribution, "smdistributed": smdistributed}}


def relative_to_file(folder: Path, data: dict[str, Any]) -> dict[str, Any]:
    """Paths in a file are relative to the file, wherever the command runs from."""
    out = dict(data)
    model = out.get("model")
    if isinstance(model, dict) and isinstance(model.get("config"), str) and model["config"]:
        out["model"] = {**model, "config": _under(folder, model["config"])}
    parameters = _parameters_file(out)
    if parameters is not None:
        out = _with_parameters(out, _under(folder, parameters))
    if isinstance(out.get("hyperparameters"), str):  # ModelTrainer's hyperparameters file
        out["hyperparameters"] = _under(folder, out["hyperparameters"])
    recipe = _recipe_file(out, folder)
    if recipe is not None:
        out["training_recipe"] = _under(folder, recipe)
    elif isinstance(out.get("training_recipe"), str) and "://" in out["training_recipe"]:
        out["training_recipe"] = RemoteRecipe(out["training_recipe"])
    requirements, _ = _requirements(out)
    if requirements is not None and out.get("training_recipe") is not None:
        # from_recipe copies it from where the command runs: a spec's is beside the spec.
        import attrs

        from safe_estimators._spec import WORDS_KEY

        out[WORDS_KEY] = attrs.evolve(out[WORDS_KEY], requirements=_under(folder, requirements))
    user_recipe = fine_tuning_recipe_file(out)
    if user_recipe is not None:
        out["recipe"] = _under(folder, user_recipe)
    for name, written in remote_function_files(out):
        out[name] = _under(folder, written)
    if out.get("git_config"):
        return out  # the code's paths are inside the repository git_config names
    source_dir = out.get("source_dir")
    if isinstance(source_dir, str) and not remote_source_dir(source_dir):
        out["source_dir"] = _under(folder, source_dir)
    elif (
        isinstance(out.get("entry_point"), str)
        and out["entry_point"]  # "" names no file: refused as it is written
        and source_dir is None
        and not s3_entry_point(out["entry_point"])  # refused as it is written
    ):
        out["entry_point"] = _under(folder, out["entry_point"])
    dependencies = out.get("dependencies")
    if isinstance(dependencies, list):
        out["dependencies"] = [_under(folder, d) if isinstance(d, str) else d for d in dependencies]
    return out


# The specs of a repository share a few folders and name the same few paths in them: both
# conversions are pure, remembered per process (pathlib parses a path on every operation).
@functools.lru_cache(maxsize=256)
def _folder(name: str) -> Path:
    return Path(name)


@functools.lru_cache(maxsize=1024)
def _under(folder: Path, name: str) -> str:
    """``str(folder / name)``."""
    return str(folder / name)
