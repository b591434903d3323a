"""Does a change keep every verdict? ``python benchmarks/compare_verdicts.py --against REV``.

Speed work must not change what ``validate`` says. This writes about a thousand spec files
(the examples varied as ``bench_cli.py`` varies them, then mutated: options removed or set to
odd values, secrets, links inside and outside the project, YAML 1.1 surprises, anchors and
merge keys), validates each with this checkout's code and with REV's (``git archive``, in
separate processes) and prints every problem that differs. Exit code 1 when any does; changes
another revision makes on purpose show up here too, so read them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml
from _measure import ROOT, checkout, go_offline
from bench_cli import write_specs

ODD_VALUES: list[Any] = [
    None, 0, -1, 1, 2**70, 1.5, "", "x", "ml.p4d.24xlarge", "ml.g5.48xlarge", "ml.trn1.32xlarge",
    "2.0", "2.2.0", "1.13.1", "py39", [], {}, {"enabled": True}, True, False, "../outside", "/",
    {"torch_distributed": {"enabled": True}}, {"mpi": {"enabled": True, "processes_per_host": 3}},
    {"smdistributed": {"dataparallel": {"enabled": True}}},
    {"hf_token": "hf_" + "a" * 34}, ["--token", "ghp_" + "b" * 36],
]  # fmt: skip
MUTATED = [
    "instance_type", "instance_count", "framework_version", "py_version", "distribution",
    "hyperparameters", "environment", "source_dir", "entry_point", "max_run", "max_wait",
    "use_spot_instances", "checkpoint_s3_uri", "model_parallel", "volume_size", "tags",
    "base_job_name", "output_path", "role", "training_compiler", "instance_groups", "model",
]  # fmt: skip
YAML_11 = ("on", "1:20", "0777", "yes", "1_000")

VALIDATE = """
import json, sys
from safe_estimators._commands.validate import validate_file
paths = open(sys.argv[1]).read().split("\\n")
print(json.dumps({p: [[x.path, x.message, x.hint, x.severity] for x in validate_file(p)]
                  for p in paths}))
"""


def write_corpus(root: Path, mutated: int, seed: int = 7) -> list[Path]:
    """Varied examples, their mutations, and YAML specs over a folder full of links."""
    rng = random.Random(seed)
    root.mkdir()
    paths = write_specs(root, 300)
    bases = [yaml.safe_load(p.read_text()) for p in paths if p.suffix in (".yaml", ".json")]
    for i in range(mutated):
        data = dict(rng.choice(bases))
        for _ in range(rng.randint(1, 3)):
            key = rng.choice(MUTATED)
            if rng.random() < 0.2:
                data.pop(key, None)
            else:
                data[key] = rng.choice(ODD_VALUES)
        path = root / f"mutated-{i:04d}.json"
        path.write_text(json.dumps(data))
        paths.append(path)
    links = root / "examples" / "links"
    (links / "pkg").mkdir(parents=True)
    (links / "train.py").write_text("import torch\nimport pkg.mod\ntorch.save({}, '/tmp/m')\n")
    (links / "pkg" / "mod.py").write_text("X = 1\n")
    os.symlink("/etc/hostname", links / "outside-project")
    os.symlink("../compiler-single-gpu", links / "outside-folder")
    os.symlink("pkg", links / "alias")
    os.symlink("loop-b", links / "loop-a")
    os.symlink("loop-a", links / "loop-b")
    for i in range(60):
        data = dict(rng.choice(bases))
        data["source_dir"] = str(links) if rng.random() < 0.5 else "examples/links"
        text = yaml.safe_dump(data)
        text += "".join(f"x{i}_{n}: {v}\n" for n, v in enumerate(YAML_11) if rng.random() < 0.15)
        if rng.random() < 0.3:
            text = "defaults: &d {lr: 0.1}\n" + text + "more:\n  <<: *d\n"
        path = root / f"links-{i:03d}.yaml"
        path.write_text(text)
        paths.append(path)
    return paths


def verdicts(code: Path, listing: Path, env: dict[str, str]) -> dict[str, Any]:
    """Every file's problems, from the safe_estimators found in ``code``."""
    run = subprocess.run(
        [sys.executable, "-c", VALIDATE, str(listing)],
        env={**env, "PYTHONPATH": str(code)},
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),  # not this checkout: its packages would come first
        check=False,
    )
    if run.returncode:
        sys.exit(f"validating with {code} failed:\n{run.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(run.stdout)
    return result


def main() -> None:
    """Compare and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", metavar="REV", required=True)
    parser.add_argument("--mutated", type=int, default=700, help="mutated spec files")
    args = parser.parse_args()
    env = go_offline()
    root = Path(tempfile.mkdtemp(prefix="compare-verdicts-"))
    try:
        paths = write_corpus(root / "project", args.mutated)
        listing = root / "files.txt"
        listing.write_text("\n".join(map(str, paths)))
        ours = verdicts(ROOT, listing, env)
        theirs = verdicts(checkout(args.against, root / "against"), listing, env)
        differ = [p for p in ours if ours[p] != theirs[p]]
        problems = sum(map(len, ours.values()))
        print(f"{len(paths)} spec files, {problems} problems here; {len(differ)} files differ")
        for path in differ:
            print(f"== {Path(path).name}")
            for problem in (x for x in ours[path] if x not in theirs[path]):
                print(f"  only here: {problem}")
            for problem in (x for x in theirs[path] if x not in ours[path]):
                print(f"  only in {args.against}: {problem}")
        sys.exit(1 if differ else 0)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
