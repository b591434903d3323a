"""Tests written against the surviving mutants of ./dev mutate (tests/mutation_scope.py names
the modules these are tests of): the rules that say whether the code and data exist where the
SDK will look (``source_code_exists``, ``input_channels``), the cache warning
(``cache_trusted``), and the runner of the rule tables (``run_rules``), each verdict with its
whole message, path and fix.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from safe_estimators import _cache, _rules
from safe_estimators._bounds import MAX_SPEC_BYTES
from safe_estimators._context import Context
from safe_estimators._facts.targets import only_for
from safe_estimators._problems import ConfigError, Problem, warning
from safe_estimators._resolve import check_arguments
from safe_estimators._spec import WORDS_KEY, spec_arguments, structure_spec
from safe_estimators._spec_files.read import (
    RefusedRecipeFile,
    RemoteRecipe,
    job_arguments,
    path_suffix,
    read_spec,
    read_spec_data,
)

pytestmark = pytest.mark.both_sdks

BASE = {
    "estimator": "pytorch",
    "entry_point": "train.py",
    "instance_type": "ml.p3.2xlarge",
    "framework_version": "2.0",
    "py_version": "py310",
    "check_script": False,
}


def _context(**options: Any) -> Context:
    ctx, _, _ = check_arguments({**BASE, **options})
    assert ctx is not None
    return ctx


def _found(rule: str, **options: Any) -> list[tuple[str, str, str, str]]:
    _, problems, _ = check_arguments({**BASE, **options})
    return [(p.path, p.severity, p.message, p.hint) for p in problems if p.rule == rule]


# --- source_code_exists: the entry point and source_dir the SDK packs at fit() -------------

NO_FILE_HINT = "give the training script's path, or set source_dir to its folder."
IN_FOLDER_HINT = "give the training script's path relative to source_dir."
SOURCE_DIR_HINT = (
    "give the folder that holds the training script (relative to the spec file, or to the "
    "current directory in Python), or an S3 URI of a sourcedir.tar.gz."
)


def _source(**options: Any) -> list[tuple[str, str, str, str]]:
    return _found("source-code-exists", **options)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project folder, the current directory (paths in Python are relative to it)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_missing_entry_point_names_where_it_was_looked_for(project: Path) -> None:
    assert _source() == [
        (
            "entry_point",
            "error",
            f"'train.py' does not exist ('{project / 'train.py'}').",
            NO_FILE_HINT,
        )
    ]


def test_an_entry_point_that_exists_is_no_problem(project: Path) -> None:
    (project / "train.py").write_text("print('hi')\n")
    assert _source() == []
    (project / "src").mkdir()
    (project / "src" / "train.py").write_text("print('hi')\n")
    assert _source(source_dir="src") == []


def test_an_entry_point_missing_from_source_dir_is_looked_for_in_it(project: Path) -> None:
    (project / "src").mkdir()
    (project / "train.py").write_text("print('hi')\n")  # beside source_dir is not in it
    assert _source(source_dir="src") == [
        (
            "entry_point",
            "error",
            f"'train.py' in source_dir 'src' does not exist ('{project / 'src' / 'train.py'}').",
            IN_FOLDER_HINT,
        )
    ]


def test_an_entry_point_that_is_a_folder_is_not_a_regular_file(project: Path) -> None:
    (project / "train.py").mkdir()
    assert _source() == [
        (
            "entry_point",
            "error",
            f"'train.py' is not a regular file ('{project / 'train.py'}').",
            NO_FILE_HINT,
        )
    ]


def test_a_long_path_is_cut_at_200_characters_in_the_message(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deep = project / ("d" * 200)
    deep.mkdir()
    monkeypatch.chdir(deep)
    shown = repr(str(deep / "train.py"))
    assert len(shown) > 201
    cut = f"{shown[:199]}… ({len(shown):,} characters)"
    [(_, _, message, _)] = _source()
    assert message == f"'train.py' does not exist ({cut})."


def test_a_missing_source_dir_is_the_problem_not_the_entry_point(project: Path) -> None:
    assert _source(source_dir="src") == [
        (
            "source_dir",
            "error",
            "'src' does not exist; the SDK packs this folder with the entry point at fit().",
            SOURCE_DIR_HINT,
        )
    ]


def test_a_source_dir_that_is_a_file_says_so(project: Path) -> None:
    (project / "src").write_text("not a folder")
    assert _source(source_dir="src") == [
        (
            "source_dir",
            "error",
            "'src' is a file, not a folder; the SDK packs this folder with the entry point at "
            "fit().",
            SOURCE_DIR_HINT,
        )
    ]


def test_an_s3_entry_point_is_refused_as_the_sdk_refuses_it(project: Path) -> None:
    assert _source(entry_point="s3://bucket/code/train.py") == [
        (
            "entry_point",
            "error",
            "'s3://bucket/code/train.py' is an S3 URI; the SDK takes only a local entry point "
            "(it raises 'Must be a path to a local file').",
            "give source_dir the S3 URI of a sourcedir.tar.gz and entry_point the script's name "
            "inside it, or a local script.",
        )
    ]


def test_code_the_sdk_does_not_read_from_this_machine_is_not_looked_for(project: Path) -> None:
    # An S3 source_dir is downloaded, a git repository cloned: no local file to look for.
    assert _source(source_dir="s3://bucket/code/sourcedir.tar.gz") == []
    assert _source(git_config={"repo": "https://github.com/example/code.git"}) == []


# --- input_channels: what fit() is given as data -------------------------------------------

FILE_HINT = (
    "upload the data to S3 and give its s3:// URI, or use instance_type 'local' to train on "
    "this machine."
)


def _file_channel(path: str, uri: str) -> tuple[str, str, str, str]:
    return (
        path,
        "error",
        f"'{uri}' is a local file:// channel, which only local mode reads; CreateTrainingJob "
        "takes S3 (or EFS, FSx) sources, not local files.",
        FILE_HINT,
    )


def _not_a_uri(path: str, uri: str) -> tuple[str, str, str, str]:
    return (
        path,
        "error",
        f"'{uri}' is neither an s3:// nor a file:// URI; the SDK raises 'must be a valid S3 or "
        "FILE URI' at fit().",
        "write the channel's S3 URI, such as s3://my-bucket/train/.",
    )


def test_a_single_channel_is_checked_at_inputs() -> None:
    assert _found("input-channels", inputs="/data/train") == [_not_a_uri("inputs", "/data/train")]
    assert _found("input-channels", inputs="file:///data") == [
        _file_channel("inputs", "file:///data")
    ]
    assert _found("input-channels", inputs="s3://bucket/train/") == []


def test_every_named_channel_after_an_s3_one_is_checked() -> None:
    inputs = {"train": "s3://bucket/train/", "test": "file:///data/test", "val": "data/val"}
    assert _found("input-channels", inputs=inputs) == [
        _file_channel("inputs.test", "file:///data/test"),
        _not_a_uri("inputs.val", "data/val"),
    ]


def test_local_mode_reads_file_channels() -> None:
    inputs = {"train": "file:///data/train", "val": "data/val"}
    assert _found("input-channels", instance_type="local", inputs=inputs) == [
        _not_a_uri("inputs.val", "data/val")
    ]


# --- cache_trusted: a cache entry the checks ignored ----------------------------------------


def test_an_ignored_cache_entry_is_a_warning_once_with_why_and_the_fix() -> None:
    _cache.take_doubts()  # another test's cache files are not this job's warning
    _cache.doubt(Path("/tmp/cache/x.json"), "is writable by other users (mode 0666)")
    expected = (
        "<cache>",
        "warning",
        "'/tmp/cache/x.json' is writable by other users (mode 0666); the checks derived its "
        "result again from its source instead (botocore's model, the SDK's schema, the spec "
        "itself: same verdicts, slower).",
        "remove it: safe_estimators writes it again (files 0600 in a 0700 folder), or set "
        "SAFE_ESTIMATORS_CACHE_DIR to a folder only you can write.",
    )
    assert _found("cache-trusted") == [expected]
    assert _found("cache-trusted") == []  # said once


# --- run_rules: every rule that holds for the target, each problem with its rule's id ---------


def _everywhere(ctx: Context) -> list[Problem]:
    return [warning("a", "from every target")]


@only_for("model_trainer")
def _trainer_only(ctx: Context) -> list[Problem]:
    return [warning("b", "from the trainer"), warning("c", "again")]


def test_each_rule_runs_for_its_targets_and_tags_its_problems() -> None:
    table = (_trainer_only, _everywhere)
    found = _rules.run_rules(_context(target="estimator"), table)
    assert [(p.path, p.rule) for p in found] == [("a", "everywhere")]
    found = _rules.run_rules(_context(target="model_trainer"), table)
    assert [(p.path, p.message, p.rule) for p in found] == [
        ("b", "from the trainer", "trainer-only"),
        ("c", "again", "trainer-only"),
        ("a", "from every target", "everywhere"),
    ]


def test_the_rules_of_a_table_are_found_once_per_target_and_at_most_64_tables_kept() -> None:
    table = (_trainer_only, _everywhere)
    first = _rules._applicable(table, "model_trainer")
    assert first == table
    assert _rules._applicable(table, "model_trainer") is first  # not filtered again
    assert _rules._applicable(table, "estimator") == (_everywhere,)
    tables = [(_everywhere,) * n for n in range(1, 100)]
    for each in tables:
        _rules._applicable(each, "estimator")
        assert len(_rules._APPLICABLE) <= 64


# --- read_spec_data: a spec file read whole, or refused with why ---------------------------

YAML_HINT = (
    'fix the syntax; `python -c "import yaml,sys; yaml.safe_load(open(sys.argv[1]))" FILE` '
    "shows the same error."
)
NOT_A_FILE_HINT = "pass the path of a spec file."


@pytest.mark.parametrize(
    ("name", "text", "data", "problem"),
    [
        ("ok.json", '{"a": [1, 2]}', {"a": [1, 2]}, None),
        ("ok.toml", 'a = 1\n[b]\nc = "x"\n', {"a": 1, "b": {"c": "x"}}, None),
        ("ok.YAML", "a: 1\n", {"a": 1}, None),
        (
            "dup.json",
            '{"b": {"x": 1}, "a": 1, "a": 2}',
            None,
            (
                "is not valid JSON: \"duplicate key 'a'; JSON parsers keep only one of them\".",
                "fix the syntax.",
            ),
        ),
        (
            "nan.json",
            '{"a": {"b": NaN}}',
            None,
            (
                "is nan; the CreateTrainingJob request is JSON, which has no NaN or Infinity.",
                "write a finite number.",
                "a.b",
            ),
        ),
        (
            "bad.json",
            '{"a": 1,}',
            None,
            (
                "is not valid JSON at line 1, column 9: Expecting property name enclosed in "
                "double quotes.",
                "fix the syntax.",
            ),
        ),
        (
            "bad.yaml",
            "a: 1\nb: [1\n",
            None,
            ("is not valid YAML at line 3, column 1: did not find expected ',' or ']'.", YAML_HINT),
        ),
        (
            "bad.yml",
            "a: b: c\n",
            None,
            (
                "is not valid YML at line 1, column 5: mapping values are not allowed in this "
                "context.",
                YAML_HINT,
            ),
        ),
        (
            "bad.toml",
            "a = \n",
            None,
            ("is not valid TOML: 'Invalid value (at line 1, column 5)'.", "fix the syntax."),
        ),
        (
            "list.yaml",
            "- 1\n",
            None,
            (
                "must hold a mapping of options at the top level, got list.",
                "start the file with `estimator: huggingface` (or pytorch) and the options.",
            ),
        ),
        (
            "x.txt",
            "a: 1\n",
            None,
            (
                "'x.txt' is not a spec file (expected .yaml, .yml, .json, .toml).",
                "rename it with the suffix of its format.",
            ),
        ),
        (
            ".yaml",
            "a: 1\n",
            None,
            (
                "'.yaml' is not a spec file (expected .yaml, .yml, .json, .toml).",
                "rename it with the suffix of its format.",
            ),
        ),
    ],
)
def test_a_spec_file_is_read_or_refused_with_where_and_why(
    tmp_path: Path, name: str, text: str, data: Any, problem: tuple[str, ...] | None
) -> None:
    (tmp_path / name).write_text(text)
    found, problems = read_spec_data(tmp_path / name)
    assert found == data
    if problem is None:
        assert problems == []
    else:
        path = problem[2] if len(problem) > 2 else "<file>"
        assert [(p.path, p.message, p.hint) for p in problems] == [(path, *problem[:2])]


def test_a_spec_file_that_is_not_a_regular_file_is_named_for_what_it_is(tmp_path: Path) -> None:
    (tmp_path / "folder.yaml").mkdir()
    os.mkfifo(tmp_path / "fifo.yaml")
    (tmp_path / "device.yaml").symlink_to("/dev/null")
    for name, kind in (("folder", "a folder"), ("fifo", "a FIFO"), ("device", "a device")):
        data, problems = read_spec_data(tmp_path / f"{name}.yaml")
        assert data is None
        assert [(p.path, p.message, p.hint) for p in problems] == [
            ("<file>", f"is {kind}, not a regular file.", NOT_A_FILE_HINT)
        ]


def test_a_spec_file_of_exactly_the_limit_is_read_and_one_byte_more_is_refused(
    tmp_path: Path,
) -> None:
    assert MAX_SPEC_BYTES == 1_000_000
    text = '{"a": 1}'
    # the last byte closes the mapping: a byte short is a syntax error, not a shorter spec
    (tmp_path / "big.json").write_text(" " * (MAX_SPEC_BYTES - len(text)) + text)
    assert read_spec_data(tmp_path / "big.json") == ({"a": 1}, [])
    (tmp_path / "big.json").write_text(text + " " * (MAX_SPEC_BYTES + 1 - len(text)))
    data, problems = read_spec_data(tmp_path / "big.json")
    assert data is None
    assert [(p.path, p.message, p.hint) for p in problems] == [
        (
            "<file>",
            "is 1,000,001 bytes; spec files are limited to 1,000,000 (everything "
            "CreateTrainingJob accepts fits in about 400 kB).",
            "keep data out of the spec: put it in a file in source_dir or S3 and pass its path.",
        )
    ]


@pytest.mark.parametrize(
    ("path", "suffix"),
    [
        ("a.yaml", ".yaml"),
        ("dir/spec.YML", ".yml"),
        ("a/b.d/spec", ""),
        ("a/spec.tar.json", ".json"),
        ("x.y", ".y"),
        ("x.", ""),
        ("x", ""),
        (".yaml", ""),
        ("a/.", ""),
        ("a/x.YAML/", ".yaml"),  # pathlib's last part
        (Path("a/spec.Toml"), ".toml"),
    ],
)
def test_the_suffix_of_a_spec_path_is_pathlibs(path: str | Path, suffix: str) -> None:
    assert path_suffix(path) == suffix == Path(path).suffix.lower()


# --- read_spec: a spec file's paths, resolved against its folder, and those refused ------------


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    """A project (a git repository) with the spec file's folder at its top."""
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    return Path(os.path.realpath(tmp_path / "repo"))


def _read(folder: Path, spec: dict[str, Any]) -> tuple[dict[str, Any] | None, list[Problem]]:
    (folder / "job.json").write_text(json.dumps(spec))
    return read_spec(folder / "job.json")


def test_the_paths_of_a_spec_are_relative_to_its_file(repository: Path) -> None:
    r = repository
    data, problems = _read(
        r,
        {
            "estimator": "pytorch",
            "entry_point": "train.py",
            "dependencies": ["lib", 3],
            "model": {"config": "config.json", "name": "m"},
            "distribution": {
                "smdistributed": {"modelparallel": {"enabled": True, "parameters": "mp.json"}},
                "other": 1,
            },
        },
    )
    assert problems == []
    assert data == {
        "estimator": "pytorch",
        "entry_point": f"{r}/train.py",
        "dependencies": [f"{r}/lib", 3],
        "model": {"config": f"{r}/config.json", "name": "m"},
        "distribution": {
            "smdistributed": {"modelparallel": {"enabled": True, "parameters": f"{r}/mp.json"}},
            "other": 1,
        },
    }


def test_with_source_dir_the_entry_point_is_inside_it(repository: Path) -> None:
    r = repository
    spec = {"estimator": "pytorch", "entry_point": "train.py", "dependencies": ["lib"]}
    data, problems = _read(r, {**spec, "source_dir": "src"})
    assert (data, problems) == (
        {**spec, "source_dir": f"{r}/src", "dependencies": [f"{r}/lib"]},
        [],
    )
    # code the SDK reads elsewhere keeps its words: S3, an S3 entry point, a git repository
    spec = {"estimator": "pytorch", "entry_point": "train.py"}
    for remote in (
        {"source_dir": "s3://bucket/code.tar.gz"},
        {"entry_point": "s3://bucket/train.py"},
        {
            "git_config": {"repo": "https://example.com/code.git"},
            "source_dir": "src",
            "dependencies": ["lib"],
        },
    ):
        data, problems = _read(r, {**spec, **remote})
        assert (data, problems) == ({**spec, **remote}, [])


def test_a_model_trainers_files_are_relative_to_the_spec(repository: Path) -> None:
    r = repository
    (r / "recipe.yaml").write_text("a: 1\n")
    data, problems = _read(
        r,
        {
            "target": "model_trainer",
            "hyperparameters": "hp.yaml",
            "training_recipe": "recipe.yaml",
            "requirements": "req.txt",
        },
    )
    assert problems == []
    assert data is not None
    words = data.pop(WORDS_KEY)
    assert data == {
        "target": "model_trainer",
        "hyperparameters": f"{r}/hp.yaml",
        "training_recipe": f"{r}/recipe.yaml",
    }
    assert (words.requirements, words.given) == (f"{r}/req.txt", {"requirements": "req.txt"})
    # SourceCode's requirements is a file in its source_dir: uploaded with it, not resolved here
    data, problems = _read(
        r,
        {
            "target": "model_trainer",
            "source_code": {"source_dir": "src", "entry_script": "t.py", "requirements": "r.txt"},
        },
    )
    assert problems == []
    assert data is not None
    assert (data["source_dir"], data["entry_point"], data[WORDS_KEY].requirements) == (
        f"{r}/src",
        "t.py",
        "r.txt",
    )


def test_a_recipe_that_is_no_file_beside_the_spec_is_downloaded_not_read(repository: Path) -> None:
    data, problems = _read(
        repository, {"target": "model_trainer", "training_recipe": "x://../r.yaml"}
    )
    assert (data, problems) == ({"target": "model_trainer", "training_recipe": "x://../r.yaml"}, [])
    assert data is not None
    assert type(data["training_recipe"]) is RemoteRecipe
    # ... unless a folder "x:" beside the spec holds it: then it is a file, as the SDK reads it
    (repository / "x:").mkdir()
    (repository / "r.yaml").write_text("a: 1\n")
    data, _ = _read(repository, {"target": "model_trainer", "training_recipe": "x://../r.yaml"})
    assert data == {"target": "model_trainer", "training_recipe": f"{repository}/x:/../r.yaml"}
    assert type(data["training_recipe"]) is str
    # a name not ending in .yaml is the SDK's to resolve (a recipe's name)
    data, _ = _read(repository, {"target": "model_trainer", "training_recipe": "training/llama"})
    assert data == {"target": "model_trainer", "training_recipe": "training/llama"}


def test_a_fine_tuning_recipe_and_a_remote_functions_files_are_beside_the_spec(
    repository: Path,
) -> None:
    r = repository
    tuning = {"target": "fine_tuning", "trainer": "SFTTrainer"}
    assert _read(r, {**tuning, "recipe": "r.yaml"}) == ({**tuning, "recipe": f"{r}/r.yaml"}, [])
    for remote in ("s3://bucket/r.yaml", "https://example.com/r.yaml", "http://x/r.yaml"):
        assert _read(r, {**tuning, "recipe": remote}) == ({**tuning, "recipe": remote}, [])
    # "recipe" means a file only for a fine-tuning trainer
    assert _read(r, {"target": "model_trainer", "recipe": "r.yaml"}) == (
        {"target": "model_trainer", "recipe": "r.yaml"},
        [],
    )
    remote = {"target": "remote_function"}
    assert _read(r, {**remote, "dependencies": "req.txt", "pre_execution_script": "pre.sh"}) == (
        {**remote, "dependencies": f"{r}/req.txt", "pre_execution_script": f"{r}/pre.sh"},
        [],
    )
    assert _read(r, {**remote, "dependencies": "auto_capture", "pre_execution_script": ""}) == (
        {**remote, "dependencies": "auto_capture", "pre_execution_script": ""},
        [],
    )
    assert _read(r, {"target": "model_trainer", "pre_execution_script": "pre.sh"}) == (
        {"target": "model_trainer", "pre_execution_script": "pre.sh"},
        [],
    )


OUTSIDE_HINT = (
    "move the file into the project, or name a wider project explicitly "
    "(load_spec(..., project_root=...), or --project-root on the command line)."
)


def _outside(path: str, written: str, real: str, project: Path) -> tuple[str, str, str, str | None]:
    return (
        path,
        f"'{written}' resolves to '{real}', outside the project ('{project}'); plan and submit "
        "would package and upload it.",
        OUTSIDE_HINT,
        "project-containment",
    )


def test_files_outside_the_project_are_refused_and_never_read(repository: Path) -> None:
    r, up = repository, repository.parent
    data, problems = _read(
        r,
        {
            "estimator": "pytorch",
            "entry_point": "train.py",
            "hyperparameters": "../hp.yaml",
            "model": {"config": "../config.json", "name": "m"},
            "distribution": {
                "smdistributed": {"modelparallel": {"enabled": True, "parameters": "../mp.json"}}
            },
        },
    )
    assert [(p.path, p.message, p.hint, p.rule) for p in problems] == [
        _outside("model.config", "../config.json", f"{up}/config.json", r),
        _outside(
            "distribution.smdistributed.modelparallel.parameters", "../mp.json", f"{up}/mp.json", r
        ),
        _outside("hyperparameters", "../hp.yaml", f"{up}/hp.yaml", r),
    ]
    assert data is not None
    assert "hyperparameters" not in data
    assert data["model"] == {"name": "m"}
    assert data["distribution"] == {
        "smdistributed": {"modelparallel": {"enabled": True, "parameters": {}}}
    }
    assert data["entry_point"] == f"{r}/train.py"


def test_recipes_outside_the_project_are_kept_as_refused(repository: Path) -> None:
    r, up = repository, repository.parent
    data, problems = _read(r, {"target": "model_trainer", "training_recipe": "../recipe.yaml"})
    assert [(p.path, p.message, p.hint, p.rule) for p in problems] == [
        _outside("training_recipe", "../recipe.yaml", f"{up}/recipe.yaml", r)
    ]
    assert data == {"target": "model_trainer", "training_recipe": f"{r}/../recipe.yaml"}
    assert type(data["training_recipe"]) is RefusedRecipeFile
    tuning = {"target": "fine_tuning", "trainer": "SFTTrainer"}
    data, problems = _read(r, {**tuning, "recipe": "../r.yaml"})
    assert [(p.path, p.rule) for p in problems] == [("recipe", "project-containment")]
    assert data == {**tuning, "recipe": f"{r}/../r.yaml"}
    assert type(data["recipe"]) is RefusedRecipeFile


def test_a_project_root_given_is_the_bound(repository: Path) -> None:
    (repository / "sub").mkdir()
    spec = {"estimator": "pytorch", "entry_point": "../train.py"}
    (repository / "sub" / "job.json").write_text(json.dumps(spec))
    assert read_spec(repository / "sub" / "job.json")[1] == []  # the repository is the project
    _, problems = read_spec(repository / "sub" / "job.json", project_root=repository / "sub")
    assert [(p.path, p.message, p.rule) for p in problems] == [
        (
            "entry_point",
            f"'../train.py' resolves to '{repository}/train.py', outside the project "
            f"('{repository}/sub'); plan and submit would package and upload it.",
            "project-containment",
        )
    ]


def test_a_path_with_a_nul_byte_names_no_file(repository: Path) -> None:
    _, problems = _read(
        repository, {"estimator": "pytorch", "entry_point": "train.py", "dependencies": ["a\0b"]}
    )
    assert [(p.path, p.message, p.hint, p.rule) for p in problems] == [
        (
            "dependencies.0",
            "'a\\x00b' contains a NUL byte (\\x00); no file can have that name.",
            "remove the NUL byte from the path.",
            "project-containment",
        )
    ]


def test_a_file_that_cannot_be_read_is_the_spec_files_problem(
    repository: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repository)
    data, problems = read_spec("missing.yaml")
    assert data is None
    assert [(p.path, p.message, p.rule) for p in problems] == [
        ("<file>", "'missing.yaml' does not exist.", "spec-file")
    ]


# --- job_arguments: a spec (a file, or a JobSpec) and the overrides, as keyword arguments -----


def test_job_arguments_of_a_file_are_its_options_with_the_overrides(repository: Path) -> None:
    (repository / "job.json").write_text(
        json.dumps({"estimator": "pytorch", "entry_point": "train.py", "instance_count": 1})
    )
    path = repository / "job.json"
    assert job_arguments(path, {"instance_count": 2}) == (
        {"estimator": "pytorch", "entry_point": f"{repository}/train.py", "instance_count": 2},
        str(path),
        [],
    )
    (repository / "sub").mkdir()
    (repository / "sub" / "job.json").write_text(
        json.dumps({"estimator": "pytorch", "entry_point": "../train.py"})
    )
    _, _, problems = job_arguments(
        repository / "sub" / "job.json", {}, project_root=repository / "sub"
    )
    assert [(p.path, p.rule) for p in problems] == [("entry_point", "project-containment")]


def test_job_arguments_of_a_file_that_cannot_be_read_raise_with_its_name(repository: Path) -> None:
    (repository / "job.json").write_text("[1]")
    with pytest.raises(ConfigError) as refused:
        job_arguments(repository / "job.json", {})
    assert refused.value.source == str(repository / "job.json")
    assert [(p.path, p.message) for p in refused.value.problems] == [
        ("<file>", "must hold a mapping of options at the top level, got list.")
    ]


def test_job_arguments_of_a_job_spec_are_its_arguments_and_its_inputs() -> None:
    spec, problems = structure_spec({**BASE, "inputs": "s3://bucket/train/"})
    assert spec is not None and problems == []
    arguments = {"estimator": "pytorch", **spec_arguments(spec), "inputs": "s3://bucket/train/"}
    assert job_arguments(spec, {"instance_count": 2}) == (
        {**arguments, "instance_count": 2},
        None,
        [],
    )
    spec, _ = structure_spec(BASE)
    assert spec is not None
    assert job_arguments(spec, {}) == ({"estimator": "pytorch", **spec_arguments(spec)}, None, [])


def test_values_that_name_no_file_are_left_as_written(repository: Path) -> None:
    r = repository
    spec = {
        "estimator": "pytorch",
        "entry_point": "t.py",
        "model": {"parameters": "7B"},  # no config file
        "distribution": {
            "smdistributed": {"modelparallel": {"enabled": True, "parameters": {"partitions": 2}}}
        },
    }
    assert _read(r, spec) == ({**spec, "entry_point": f"{r}/t.py"}, [])
    empty = {
        **spec,
        "model": {"config": ""},
        "distribution": {"smdistributed": {"modelparallel": {"enabled": True, "parameters": ""}}},
    }
    assert _read(r, empty) == ({**empty, "entry_point": f"{r}/t.py"}, [])
    tuning = {"target": "fine_tuning", "trainer": "SFTTrainer", "recipe": ""}
    assert _read(r, tuning) == (tuning, [])
    # a trainer's compute is its own: not read as ModelTrainer's
    tuning = {"target": "fine_tuning", "trainer": "SFTTrainer", "recipe": "r.yaml"}
    compute = {"compute": {"instance_type": "ml.g5.2xlarge"}}
    data, problems = _read(r, {**tuning, **compute})
    assert (data, problems) == ({**tuning, **compute, "recipe": f"{r}/r.yaml"}, [])
    assert data is not None and type(data["recipe"]) is str  # inside: not refused


def test_a_recipe_file_is_a_file_whether_or_not_it_exists_yet(repository: Path) -> None:
    data, problems = _read(repository, {"target": "model_trainer", "training_recipe": "new.yaml"})
    assert (data, problems) == (
        {"target": "model_trainer", "training_recipe": f"{repository}/new.yaml"},
        [],
    )
    data, _ = _read(repository, {"target": "model_trainer", "training_recipe": "training/llama"})
    assert data is not None and type(data["training_recipe"]) is str


def test_a_requirements_file_outside_is_refused_at_the_word_it_was_given_in(
    repository: Path,
) -> None:
    r, up = repository, repository.parent
    _, problems = _read(
        r, {"target": "model_trainer", "training_recipe": "recipe.yaml", "requirements": "../q.txt"}
    )
    assert [(p.path, p.message, p.rule) for p in problems] == [
        (
            "requirements",
            f"'../q.txt' resolves to '{up}/q.txt', outside the project ('{r}'); plan and submit "
            "would package and upload it.",
            "project-containment",
        )
    ]
    code = {"source_dir": "src", "entry_script": "t.py", "requirements": "../../q.txt"}
    _, problems = _read(r, {"target": "model_trainer", "source_code": code})
    assert [(p.path, p.message, p.rule) for p in problems] == [
        (
            "source_code.requirements",
            f"'../../q.txt' resolves to '{up}/q.txt', outside source_dir; plan and submit would "
            "package and upload it.",
            "project-containment",
        )
    ]


def test_a_long_duplicate_key_is_shown_whole_in_the_syntax_error(tmp_path: Path) -> None:
    key = "k" * 40
    (tmp_path / "dup.json").write_text(json.dumps({key: 1})[:-1] + f', "{key}": 2}}')
    _, problems = read_spec_data(tmp_path / "dup.json")
    assert [p.message for p in problems] == [
        f"is not valid JSON: \"duplicate key '{key}'; JSON parsers keep only one of them\"."
    ]
