"""Generate the hostile-input corpus: one folder per attack, written on demand (not checked in).

Each case is what a careless or malicious contributor can put in a pull request that CI then
runs ``validate``, ``lint`` and ``plan`` on: alias bombs, FIFOs and devices given as the spec,
huge files, deep nesting, forged output, paths and links that leave the project, network
sources, YAML 1.1 surprises, numbers Python cannot print. ``python tests/hostile_corpus.py DIR``
writes them for a look by hand; ``tests/test_hostile.py`` runs every case through the CLI and the
Python API in subprocesses bounded in time and memory.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import attrs

BASE = (
    "estimator: pytorch\n"
    "entry_point: train.py\n"
    "instance_type: ml.p3.2xlarge\n"
    "framework_version: '2.0'\n"
    "py_version: py310\n"
)
TRAIN = "import torch\nprint('training')\n"
# The classic 9-level "billion laughs": 528 bytes that stand for 10^9 values.
ALIAS_BOMB = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{c}: &{c} [{','.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)
FORGED = "a\n/tmp/forged_line.yaml: valid\x1b]0;pwned\x07"
ALL = ("validate", "lint", "plan", "api")
SECRET_FILE = "machine github.com login ci-bot password ghp_" + "Z" * 36 + "\n"


@attrs.frozen
class Case:
    """One attack: the spec (or script) to run, and what a good outcome is."""

    name: str
    target: Path
    # Commands to run it through: validate, lint, plan and api (safe_estimators.plan(path)).
    # lint, plan and api read the file exactly as validate does; they run where they differ.
    commands: tuple[str, ...] = ("validate",)
    # Text that must never appear in any output (a secret, a forged line start).
    forbidden: tuple[str, ...] = ()
    # Exit codes of validate, plan and api: 1 for a refused input (lint may say 0: it reports
    # the script's findings, and refuses only an unreadable spec).
    exits: tuple[int, ...] = (1,)


def _spec(folder: Path, text: str, name: str = "job.yaml", script: str | None = TRAIN) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if script is not None:
        (folder / "train.py").write_text(script)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def _alias_bomb_hyperparameters(d: Path) -> Case:
    bomb = "\n".join("  " + line for line in ALIAS_BOMB.splitlines())
    text = BASE + "hyperparameters:\n" + bomb + "\n"
    return Case("alias-bomb-hyperparameters", _spec(d, text), ALL)


def _alias_bomb_environment(d: Path) -> Case:
    bomb = "\n".join("  " + line for line in ALIAS_BOMB.splitlines())
    return Case("alias-bomb-environment", _spec(d, BASE + "environment:\n" + bomb + "\n"))


def _recursive_alias(d: Path) -> Case:
    return Case("recursive-alias", _spec(d, BASE + "hyperparameters: &h {x: *h}\n"))


def _fifo(d: Path) -> Case:
    d.mkdir(parents=True)
    os.mkfifo(d / "job.yaml")
    return Case("fifo", d / "job.yaml", ALL)


def _device(name: str, device: str) -> Callable[[Path], Case]:
    def make(d: Path) -> Case:
        d.mkdir(parents=True)
        (d / "job.yaml").symlink_to(device)
        return Case(name, d / "job.yaml", ALL if device == "/dev/zero" else ("validate",))

    return make


def _huge(d: Path) -> Case:
    path = _spec(d, BASE + "hyperparameters:\n  x: '")
    with path.open("r+b") as handle:
        handle.truncate(100 * 2**20)  # 100 MB (sparse: the bound must not read it to know)
    return Case("100mb-spec", path, ALL)


def _many_keys(d: Path) -> Case:
    keys = "".join(f"k{_base36(i)}: 0\n" for i in range(10**5))  # 900 kB: under the size bound
    return Case("1e5-unknown-keys", _spec(d, BASE + keys), ALL)


def _base36(number: int) -> str:
    digits = ""
    for _ in range(4):
        number, digit = divmod(number, 36)
        digits += "0123456789abcdefghijklmnopqrstuvwxyz"[digit]
    return digits


def _many_keys_under_bound(d: Path) -> Case:
    keys = "".join(f"unknown_{i}: 0\n" for i in range(9_000))
    # The SDK drops keywords it does not take: 9,000 warnings (the first 50 shown), exit 0.
    return Case("9e3-unknown-keys", _spec(d, BASE + keys), exits=(0,))


def _deep_yaml(d: Path) -> Case:
    return Case("deep-yaml-1e5", _spec(d, BASE + "hyperparameters: {x: " + "[" * 100_000 + "\n"))


def _deep_distribution_json(d: Path) -> Case:
    data = {
        "estimator": "pytorch",
        "entry_point": "train.py",
        "instance_type": "ml.p3.2xlarge",
        "framework_version": "2.0",
        "py_version": "py310",
    }
    nested: dict[str, object] = {}
    data["distribution"] = nested
    for _ in range(900):
        nested["x"] = {}
        nested = nested["x"]  # type: ignore[assignment]
    return Case("deep-distribution-json", _spec(d, json.dumps(data), "job.json"))


def _forged_key(d: Path) -> Case:
    return Case(
        "forged-line",
        _spec(d, BASE + f"hyperparameters:\n  {json.dumps(FORGED)}: 1\n"),
        ("validate", "lint", "plan"),
        forbidden=("\n/tmp/forged_line.yaml: valid", "\x1b", "\x07"),
        exits=(0, 1),
    )


def _entry_outside(d: Path) -> Case:
    text = BASE.replace("train.py", "../../../../../../../../etc/passwd")
    return Case("entry-point-etc-passwd", _spec(d, text), ALL, forbidden=("root:x:0:0",))


def _source_dir_root(d: Path) -> Case:
    text = BASE.replace("entry_point: train.py", "entry_point: etc/hostname\nsource_dir: /")
    return Case("source-dir-root", _spec(d, text), ("validate", "plan"))


def _netrc_link(d: Path) -> Case:
    outside = d / "home"
    outside.mkdir(parents=True)
    (outside / ".netrc").write_text(SECRET_FILE)
    project = d / "project"
    src = project / "src"
    src.mkdir(parents=True)
    (src / "train.py").write_text("import utils\n" + TRAIN)
    (src / "utils.py").symlink_to(outside / ".netrc")
    spec = _spec(project, BASE + "source_dir: src\n", script=None)
    return Case("netrc-symlink", spec, ALL, forbidden=("ghp_", "ci-bot", "machine github.com"))


def _git_config(d: Path) -> Case:
    text = BASE + "git_config: {repo: 'https://github.com/aws/sagemaker-python-sdk.git'}\n"
    return Case("git-config", _spec(d, text), ALL)


def _int_key(d: Path) -> Case:
    return Case("int-key-training-compiler", _spec(d, BASE + "training_compiler: {1: x}\n"))


def _mixed_keys(d: Path) -> Case:
    return Case("mixed-type-keys", _spec(d, BASE + "1: a\n2.5: b\nnull: c\n"))


def _huge_int(d: Path) -> Case:
    return Case("instance-count-10e10000", _spec(d, BASE + "instance_count: 1" + "0" * 10_000))


def _yaml11(d: Path) -> Case:
    return Case("yaml-1.1", _spec(d, BASE + "instance_count: 1:20\ncheck_script: off\n"))


def _duplicate(d: Path) -> Case:
    return Case("duplicate-keys", _spec(d, BASE + "instance_count: 1\ninstance_count: 2\n"))


def _tags(d: Path) -> Case:
    text = BASE + "hyperparameters: !!python/object:os.system {x: 1}\nrole: !custom x\n"
    return Case("yaml-tags", _spec(d, text))


def _nan(d: Path) -> Case:
    return Case("nan-volume-size", _spec(d, BASE + "volume_size: .nan\n"), ("validate", "plan"))


def _deep_folder(d: Path) -> Case:
    spec = _spec(d, BASE + "source_dir: .\n")
    fd = os.open(d, os.O_RDONLY)
    for _ in range(DEEP_LEVELS):  # one level at a time: os.makedirs recurses once per level
        os.mkdir("d", dir_fd=fd)
        next_fd = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = next_fd
    os.close(fd)
    return Case("1000-deep-folder", spec, ("validate", "plan"))


def _big_modules(megabytes: float) -> Callable[[Path], Case]:
    # Ten local modules: 1.9 MB each (the case, over the per-file bound) or 0.4 MB
    # each (under it: the budget shared by all files of one check stops the reading).
    def make(d: Path) -> Case:
        src = d / "src"
        src.mkdir(parents=True)
        body = "x = 1\n" * int(megabytes * 1e6 / 6)
        for i in range(10):
            (src / f"m{i}.py").write_text(body)
        (src / "train.py").write_text("".join(f"import m{i}\n" for i in range(10)) + TRAIN)
        spec = _spec(d, BASE + "source_dir: src\n", script=None)
        return Case(f"ten-{megabytes}mb-modules", spec, exits=(0, 1))

    return make


def _not_utf8(d: Path) -> Case:
    path = _spec(d, BASE)
    path.write_bytes(BASE.encode() + b"role: \xff\xfe\n")
    return Case("not-utf8", path)


def _deep_json(d: Path) -> Case:
    return Case("deep-json-1e5", _spec(d, "[" * 100_000, "job.json"))


def _documents(d: Path) -> Case:
    return Case("two-documents", _spec(d, BASE + "---\n" + BASE))


def _secret_bad_entry(d: Path) -> Case:
    text = BASE + "environment:\n  BAD: [1, 2]\n  PASSWORD: 12345678\n  GH_PAT: hunter2hunter2\n"
    return Case(
        "secret-beside-bad-entry",
        _spec(d, text),
        ("validate", "plan"),
        forbidden=("12345678", "hunter2hunter2"),
    )


def _secrets_everywhere(d: Path) -> Case:
    # Issue 22's leaks: a tag value, URIs with passwords (code_location, output_path, which
    # plan used to end in exit 3 quoting botocore's "user:pw@bucket"), custom_mpi_options,
    # container arguments and a token-shaped hyperparameter name.
    token = "ghp_" + "Zq9" * 12
    text = (
        BASE
        + "role: arn:aws:iam::111122223333:role/x\n"
        + f"tags: [{{Key: team, Value: '{token}!'}}]\n"
        + "code_location: https://u:Hunter2Passw0rdX@host/code\n"
        + "output_path: s3://user:Pw0rdPw0rd@bucket/out\n"
        + "distribution: {mpi: {enabled: true, custom_mpi_options: '-x HF_TOKEN=hf_"
        + "Ab1" * 12
        + "'}}\n"
        + f"container_arguments: ['--api_key', '{token}']\n"
        + f"hyperparameters: {{'{token}': 1}}\n"
    )
    return Case(
        "secrets-everywhere",
        _spec(d, text),
        ("validate", "plan", "api"),
        forbidden=("Zq9Zq9", "Hunter2Passw0rdX", "Pw0rdPw0rd", "Ab1Ab1"),
    )


MAKERS: tuple[Callable[[Path], Case], ...] = (
    _alias_bomb_hyperparameters,
    _alias_bomb_environment,
    _recursive_alias,
    _fifo,
    _device("dev-zero", "/dev/zero"),
    _device("dev-urandom", "/dev/urandom"),
    _huge,
    _many_keys,
    _many_keys_under_bound,
    _deep_yaml,
    _deep_distribution_json,
    _forged_key,
    _entry_outside,
    _source_dir_root,
    _netrc_link,
    _git_config,
    _int_key,
    _mixed_keys,
    _huge_int,
    _yaml11,
    _duplicate,
    _tags,
    _nan,
    _deep_folder,
    _big_modules(1.9),
    _big_modules(0.4),
    _not_utf8,
    _deep_json,
    _documents,
    _secret_bad_entry,
    _secrets_everywhere,
)


DEEP_LEVELS = 1000


def remove_deep_folders(root: Path) -> None:
    """Delete the 1000-level folders bottom-up: shutil.rmtree (and pytest's cleanup) recurse
    once per level and fail on them."""
    for top in root.glob("*/d"):
        for level in range(DEEP_LEVELS, 0, -1):
            path = os.path.join(top.parent, *(["d"] * level))
            if os.path.isdir(path):
                os.rmdir(path)


def generate(root: Path) -> list[Case]:
    """Write every case under ``root`` (one folder each) and return them."""
    return [make(root / f"{i:02d}") for i, make in enumerate(MAKERS)]


if __name__ == "__main__":  # pragma: no cover - by hand
    for case in generate(Path(sys.argv[1])):
        print(case.name, case.target)
