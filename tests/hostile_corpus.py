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

from safe_estimators._facts.sdk_files import sdk_generation

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


# --- round 2 (issue 22): containment holes, a planted cache, work bounds, exit 3, low ---------
# Cases that need more than a spec: environment variables (a scratch cache folder, an SDK config
# file), a umask, or the --json flag (a command named "json-validate"). Each folder is a git
# repository, so that the project is the case's folder.

ROLE = "role: arn:aws:iam::123456789012:role/x\n"
OUTSIDE = "SECRETBYTES-from-outside-the-project"


@attrs.frozen
class Case2(Case):
    env: tuple[tuple[str, str], ...] = ()
    umask: int | None = None
    # A work bound in CPU seconds of the case's process (not wall time, which load stretches):
    # well under what the unbounded walk took.
    max_seconds: float | None = None
    expected: str = ""  # text validate (or the first command) must print


SDK3 = sdk_generation() >= 3


def _project(d: Path, text: str, script: str | None = TRAIN) -> Path:
    (d / ".git").mkdir(parents=True, exist_ok=True)
    return _spec(d, text, script=script)


def _secret_beside(d: Path) -> Path:
    """A file outside the case's project that a path tries to reach."""
    (d / "secret").mkdir(parents=True)
    (d / "secret" / "credentials").write_text(OUTSIDE + "\n")
    return d / "project"


def _colon_source_dir(d: Path) -> Case2:
    project = _secret_beside(d)
    text = BASE.replace(
        "entry_point: train.py", "entry_point: credentials\nsource_dir: 'x://../../secret'"
    )
    spec = _project(project, text + ROLE)
    (project / "x:").mkdir()
    return Case2("colon-source-dir", spec, forbidden=(OUTSIDE,), expected="outside the project")


def _colon_entry_point(d: Path) -> Case2:
    project = _secret_beside(d)
    spec = _project(project, BASE.replace("train.py", "'x://../../secret/credentials'") + ROLE)
    (project / "x:").mkdir()
    return Case2("colon-entry-point", spec, forbidden=(OUTSIDE,), expected="outside the project")


def _colon_dependency(d: Path) -> Case2:
    project = _secret_beside(d)
    spec = _project(project, BASE + ROLE + "dependencies: ['x://../../secret']\n")
    (project / "x:").mkdir()
    return Case2("colon-dependency", spec, forbidden=(OUTSIDE,), expected="dependencies.0")


def _dependency_link(d: Path) -> Case2:
    spec = _project(d, BASE + ROLE + "dependencies: [libs]\n")
    (d / "libs").mkdir()
    (d / "libs" / "passwd_link").symlink_to("/etc/passwd")
    expected = "passwd_link' links to a file outside the project"
    return Case2("dependency-folder-link", spec, forbidden=("root:x:0:0",), expected=expected)


def _big_tree_link(d: Path) -> Case2:
    spec = _project(d, BASE + "source_dir: src\n", script=None)
    src = d / "src"
    src.mkdir()
    (src / "train.py").write_text(TRAIN)
    for i in range(20_001):
        (src / f"f{i:05d}").touch()
    (src / "zz_link").symlink_to("/etc/passwd")
    return Case2("tree-past-the-bound", spec, expected="too many to check for links")


def _cache_spec(d: Path) -> Path:
    # 150 hyperparameters: refused by CreateTrainingJob's HyperParameters max of 100, unless a
    # planted cache raises that max.
    hyper = "".join(f"  h{i}: 1\n" for i in range(150))
    return _project(d, BASE + "hyperparameters:\n" + hyper)


def _write_cache(folder: Path, change: Callable[[dict], None]) -> Path:
    from safe_estimators._facts import limits

    folder.mkdir(parents=True, exist_ok=True)
    model = limits._model_file()
    subset = limits.derive_subset(limits._model())
    change(subset)
    path = limits._cache_file(folder, model)
    limits._write_cache(path, limits._cache_key(model), subset)
    return path


def _raise_max(subset: dict) -> None:
    subset["HyperParameters"]["max"] = 1000


def _slow_pattern(subset: dict) -> None:
    subset["HyperParameterKey"]["pattern"] = "(a|aa)*c"


def _planted(name: str, how: str) -> Callable[[Path], Case2 | None]:
    def make(d: Path) -> Case2 | None:
        if how == "other-owner" and os.geteuid() != 0:
            return None  # chown needs root
        spec = _cache_spec(d)
        folder = d / "cache"
        env = (("SAFE_ESTIMATORS_CACHE_DIR", str(folder)),)
        expected = "<cache>: warning"
        if how == "pattern":  # this user's own file: the pattern is not linear, botocore's runs
            _write_cache(folder, _slow_pattern)
            expected = "has 150 entries"
        elif how in ("other-owner", "mode-666", "folder-777"):
            path = _write_cache(folder, _raise_max)
            if how == "other-owner":
                os.chown(path, 65534, 65534)  # nobody
            elif how == "mode-666":
                os.chmod(path, 0o666)
            else:
                os.chmod(folder, 0o777)
        else:
            path = _write_cache(folder, _raise_max)
            path.unlink()
            if how == "fifo":
                os.mkfifo(path)
            elif how == "dev-zero":
                path.symlink_to("/dev/zero")
            else:  # 3 GB, sparse
                with path.open("wb") as handle:
                    handle.truncate(3 * 2**30)
        return Case2(name, spec, env=env, expected=expected)

    return make


def _cache_umask(d: Path) -> Case2:
    spec = _cache_spec(d)
    env = (("SAFE_ESTIMATORS_CACHE_DIR", str(d / "fresh-cache")),)
    return Case2("cache-under-umask-000", spec, env=env, umask=0, expected="has 150 entries")


def _memory_fit(name: str, model: str) -> Callable[[Path], Case2]:
    # The shipped memory-fit example's shape (Llama-2-7B on ml.p4d.24xlarge, SMP v1 sharding),
    # with a micro-batch or instance count the fix search once walked one by one.
    config = {
        "hidden_size": 4096,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "intermediate_size": 11008,
        "vocab_size": 32000,
    }
    text = (
        "estimator: pytorch\nentry_point: train.py\ninstance_type: ml.p4d.24xlarge\n"
        "framework_version: '1.13.1'\npy_version: py39\n"
        "model_parallel: {sharded_data_parallel_degree: 8, bf16: true, ddp: true}\n" + model
    )

    def make(d: Path) -> Case2:
        spec = _project(d, text)
        (d / "config.json").write_text(json.dumps(config))
        return Case2(name, spec, max_seconds=20, expected="model")

    return make


def _quadratic_script(d: Path) -> Case2:
    text = BASE.replace("ml.p3.2xlarge", "ml.p3.16xlarge").replace("'2.0'", "'2.0.1'")
    text += "instance_count: 2\ndistribution: {torch_distributed: {enabled: true}}\n"
    script = "import torch\n" + "if a: pass\n" * 4000 + "torch.save(m, a)\n" * 4000
    return Case2("4000-ifs-4000-saves", _project(d, text, script), exits=(0, 1), max_seconds=20)


def _long_hyperparameter(d: Path) -> Case2:
    # 200 kB of "a.": the first campaign's 211 s, in the secrets patterns (now linear).
    spec = _project(d, BASE + ROLE + "hyperparameters:\n  x: '" + "a." * 100_000 + "'\n")
    return Case2(
        # The estimator sends a string hyperparameter JSON-encoded (two quotes more);
        # ModelTrainer (sagemaker 3's default target) sends it as it is.
        "200kb-hyperparameter", spec, ("validate", "plan"),
        expected="200000 characters" if SDK3 else "200002 characters",
        max_seconds=10,
    )


def _fstrings(d: Path) -> Case2:
    line = "x = f'{a}{b}{c}{d}{e}{f}{g}{h}{i}{j}{k}{l}'\n"
    body = line * (250_000 // len(line))  # two modules, 500 kB: under the read budget
    spec = _project(d, BASE, script="import torch\nimport m\n" + body)
    (d / "m.py").write_text(body)
    return Case2("500kb-of-fstrings", spec, exits=(0, 1), max_seconds=20)


def _many_specs(d: Path) -> Case2:
    (d / ".git").mkdir(parents=True)
    (d / "train.py").write_text(TRAIN)
    for i in range(2_000):
        (d / f"job{i:04d}.yaml").write_text(BASE)
    past = 10**9 - 3600  # settled: the walk of the folder may be remembered
    os.utime(d, ns=(past * 10**9, past * 10**9))
    return Case2("2000-specs-beside-train-py", d, exits=(0,), max_seconds=30)


def _nul(name: str, text: str) -> Callable[[Path], Case2]:
    def make(d: Path) -> Case2:
        return Case2(name, _project(d, text), expected="contains a NUL byte")

    return make


def _model_config(name: str, config: str, expected: str) -> Callable[[Path], Case2]:
    def make(d: Path) -> Case2:
        text = BASE + "model: {config: config.json, sequence_length: 10, micro_batch_size: 1}\n"
        spec = _project(d, text)
        (d / "config.json").write_text(config)
        return Case2(name, spec, exits=(0, 1), expected=expected)

    return make


def _links(name: str, target: str) -> Callable[[Path], Case2]:
    def make(d: Path) -> Case2:
        spec = _project(d, BASE + ROLE + "source_dir: src\n", script=None)
        src = d / "src"
        src.mkdir()
        (src / "train.py").write_text(TRAIN)
        if target == "loop":
            (src / "loop1").symlink_to("loop2")
            (src / "loop2").symlink_to("loop1")
        else:
            (src / "dangling").symlink_to("nowhere")
        # plan packaged the folder and failed there (exit 3): its path differs from validate's
        commands = ("validate", "plan") if target == "loop" else ("validate",)
        return Case2(name, spec, commands, expected="is a link to nothing")

    return make


def _sdk_config(name: str, content: str) -> Callable[[Path], Case2]:
    def make(d: Path) -> Case2:
        spec = _project(d, BASE + ROLE)
        config = d / "sdk-config.yaml"
        config.write_text(content)
        env = (("SAGEMAKER_USER_CONFIG_OVERRIDE", str(config)),)
        expected = "$SAGEMAKER_USER_CONFIG_OVERRIDE: the SageMaker SDK cannot load its config"
        return Case2(name, spec, ("plan",), env=env, expected=expected)

    return make


def _low(
    name: str, extra: str, expected: str, exits: tuple[int, ...] = (1,)
) -> Callable[[Path], Case2]:
    def make(d: Path) -> Case2:
        text = BASE + ("" if "role:" in extra else ROLE) + extra
        if "instance_groups" in extra:
            text = text.replace("instance_type: ml.p3.2xlarge\n", "")
        # plan only where the campaign saw validate and plan disagree about the spec
        commands = ("validate", "plan") if "role:" in extra else ("validate",)
        return Case2(name, _project(d, text), commands, exits=exits, expected=expected)

    return make


def _latin1(d: Path) -> Case2:
    spec = _project(d, BASE, script=None)
    (d / "train.py").write_bytes(b"import torch\n# caf\xe9\nprint(1)\n")
    return Case2("latin-1-byte-in-a-comment", spec, expected="byte 0xe9 is not utf-8")


def _json_output(name: str, extra: str) -> Callable[[Path], Case2]:
    def make(d: Path) -> Case2:
        commands = ("json-validate", "json-plan") if "unknown" in name else ("json-validate",)
        return Case2(name, _project(d, BASE + extra), commands, exits=(0, 1))

    return make


ROUND2_MAKERS: tuple[Callable[[Path], Case2 | None], ...] = (
    _colon_source_dir,
    _colon_entry_point,
    _colon_dependency,
    _dependency_link,
    _big_tree_link,
    _planted("planted-cache-other-owner", "other-owner"),
    _planted("planted-cache-mode-666", "mode-666"),
    _planted("planted-cache-folder-777", "folder-777"),
    _planted("planted-cache-slow-pattern", "pattern"),
    _planted("cache-file-is-a-fifo", "fifo"),
    _planted("cache-file-links-to-dev-zero", "dev-zero"),
    _planted("cache-file-of-3-gb", "3gb"),
    _cache_umask,
    _memory_fit(
        "micro-batch-1e9",
        "model: {config: config.json, sequence_length: 4096, "
        "micro_batch_size: 1000000000, activation_checkpointing: true}\n",
    ),
    _memory_fit(
        "instance-count-1e20-with-model",
        "instance_count: 100000000000000000000\n"
        "model: {config: config.json, sequence_length: 4096, micro_batch_size: 64}\n",
    ),
    _quadratic_script,
    _long_hyperparameter,
    _fstrings,
    _many_specs,
    _nul("nul-in-entry-point", BASE.replace("train.py", '"tr\\0ain.py"')),
    _nul("nul-in-source-dir", BASE + 'source_dir: "sr\\0c"\n'),
    _nul("nul-in-dependency", BASE + 'dependencies: ["li\\0b"]\n'),
    _nul("nul-in-model-config", BASE + 'model: {config: "c\\0.json"}\n'),
    _low(
        "hidden-size-1e300",
        "model: {hidden_size: 1" + "0" * 300 + ", layers: 2}\n",
        "more than any model has",
    ),
    _model_config("config-json-deep", '{"a":' * 100_000 + "1" + "}" * 100_000, "nested too deeply"),
    _model_config(
        "config-json-5000-digits",
        '{"hidden_size": 1' + "0" * 5000 + "}",
        "holds a value Python cannot read",
    ),
    _model_config(
        "config-json-1e300-layers",
        '{"num_hidden_layers": 1' + "0" * 300 + "}",
        "no memory estimate",
    ),
    _model_config(
        "config-json-superscript-two", '{"hidden_size": "\\u00b2"}', "no memory estimate"
    ),
    _links("source-dir-link-loop", "loop"),
    _links("source-dir-dangling-link", "dangling"),
    _sdk_config("sdk-config-not-yaml", "SageMaker: [unclosed\n"),
    _low("file-url-input", "inputs: {train: 'file:///etc'}\n", "local file:// channel"),
    _low("dependency-is-a-number", "dependencies: [5]\n", "dependencies.0: is 5"),
    _low("empty-instance-groups", "instance_groups: []\n", "instance_groups: is empty"),
    # On sagemaker 3 (ModelTrainer) plan refuses a role name with our ConfigError: the SDK
    # looks it up in IAM and plan makes no AWS call (a lane difference, validate passes).
    _low("bare-role-name", "role: myrole\n", "valid", exits=(0, 1) if SDK3 else (0,)),
    _low(
        "instance-count-1e100",
        "instance_count: 1" + "0" * 100 + "\n",
        "the maximum is 2,147,483,647",
    ),
    _latin1,
    _json_output("json-one-huge-value", "output_path: '" + "a" * 900_000 + "'\n"),
    _json_output("json-9000-unknown-keys", "".join(f"unknown_{i}: 0\n" for i in range(9_000))),
)


def generate_round2(root: Path) -> list[Case2]:
    """Write every round-2 case under ``root`` (one folder each) and return them; the case
    that needs another user's file is left out when this process cannot chown."""
    made = [make(root / f"r{i:02d}") for i, make in enumerate(ROUND2_MAKERS)]
    return [case for case in made if case is not None]
