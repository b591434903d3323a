"""Derive the template's instance types and framework versions; write them into copier.yml.

    python examples/template/derive_choices.py           # rewrite the derived block
    python examples/template/derive_choices.py --check   # exit 1 when copier.yml is stale

The choices are not kept by hand: the instance types are the instance catalog's GPU types that
CreateTrainingJob takes (botocore's TrainingInstanceType) and that today's containers run on;
the versions are the newest the installed SDK's image tables have (without Training Compiler,
the newest torchrun accepts). tests/test_template.py runs ``--check``, so an upgraded SDK or
catalog fails the tests until this script is run again.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

import instance_catalog
from safe_estimators._distributions._sdk_source import sdk_constant
from safe_estimators._facts import tables
from safe_estimators._facts.limits import training_instance_types
from safe_estimators._facts.versions import framework_container, huggingface_container

COPIER = Path(__file__).parent / "copier.yml"
BEGIN = "# --- derived by derive_choices.py (do not edit by hand) ---\n"
END = "# --- end of the derived block ---\n"
DEFAULT = "ml.g5.xlarge"

# GPUs today's containers do not run on. The K80 (Kepler, compute capability 3.7): PyTorch's
# CUDA builds dropped it in 1.13, and every container offered here is newer (the compiler's
# PyTorch 1.11 does not support the p2 family either).
UNSUPPORTED_GPUS = {"K80": "Kepler (sm_37): not in PyTorch's CUDA builds since 1.13"}


def instance_choices() -> list[instance_catalog.InstanceType]:
    trainable = set(training_instance_types())
    return sorted(
        (
            t
            for t in instance_catalog.instance_types()
            if t.gpu_count
            and t.name in trainable
            and t.accelerator_name not in UNSUPPORTED_GPUS
            # The SDK's training images are x86_64 only (the platform rule host_architecture).
            and t.cpu_architecture == "x86_64"
        ),
        key=lambda t: (t.gpu_count, t.family, t.vcpus, t.name),
    )


def _label(t: instance_catalog.InstanceType) -> str:
    memory = f" {round(t.accelerator_memory_mib / 1024)} GB" if t.accelerator_memory_mib else ""
    return f"{t.name} ({t.gpu_count} x {t.accelerator_name}{memory})"


def _newest_transformers_for(pytorch: str) -> str | None:
    table = tables.IMAGE_CONFIGS[("huggingface", False)]
    for transformers in reversed(huggingface_container(table, "", "")[0].known):
        base = huggingface_container(table, transformers, pytorch)[1]
        if base is not None and base.version == pytorch:
            return transformers
    return None


def versions() -> dict[str, Any]:
    torchrun = set(
        sdk_constant("fw_utils.py", "TORCH_DISTRIBUTED_GPU_SUPPORTED_FRAMEWORK_VERSIONS")
    )
    plain = tables.IMAGE_CONFIGS[("pytorch", False)]
    pytorch = next(v for v in reversed(framework_container(plain, "").known) if v in torchrun)
    compiled = tables.IMAGE_CONFIGS[("pytorch", True)]
    pytorch_compiler = framework_container(compiled, "").known[-1]

    hf_plain = tables.IMAGE_CONFIGS[("huggingface", False)]
    hf = None
    for transformers in reversed(huggingface_container(hf_plain, "", "")[0].known):
        base = huggingface_container(hf_plain, transformers, "")[1]
        newest = next((v for v in reversed(base.known) if v in torchrun), None) if base else None
        if newest is not None:
            hf = (transformers, newest)
            break
    assert hf is not None, "no Hugging Face container with a PyTorch torchrun accepts"
    hf_compiled = tables.IMAGE_CONFIGS[("huggingface", True)]
    hf_compiler = huggingface_container(hf_compiled, "", "")[0].known[-1]
    hf_compiler_base = huggingface_container(hf_compiled, hf_compiler, "")[1]
    assert hf_compiler_base is not None

    def hf_entry(table: str, transformers: str, base: str) -> dict[str, str]:
        found = huggingface_container(table, transformers, base)[1]
        assert found is not None
        return {"transformers_version": transformers, "pytorch_version": base,
                "py_version": found.py_versions[-1]}  # fmt: skip

    def pt_entry(table: str, version: str) -> dict[str, str]:
        entry = {"framework_version": version,
                 "py_version": framework_container(table, version).py_versions[-1]}  # fmt: skip
        transformers = _newest_transformers_for(version)
        if transformers:
            entry["transformers"] = transformers
        return entry

    return {
        "huggingface": {
            "compiler": hf_entry(hf_compiled, hf_compiler, hf_compiler_base.known[-1]),
            "plain": hf_entry(hf_plain, *hf),
        },
        "pytorch": {
            "compiler": pt_entry(compiled, pytorch_compiler),
            "plain": pt_entry(plain, pytorch),
        },
    }


def block() -> str:
    choices = instance_choices()
    by_count: dict[int, list[str]] = {}
    for t in choices:
        by_count.setdefault(int(t.gpu_count or 0), []).append(t.name)
    compiler = [t.name for t in choices if t.family in tables.COMPILER_FAMILIES]
    document = {
        "instance_type": {
            "type": "str",
            "help": "Training instance type (GPU types of the instance catalog that today's "
            "containers run on)",
            "choices": {_label(t): t.name for t in choices},
            "default": DEFAULT,
        },
        # Not asked: the types a pipeline execution may switch to, by GPU count (every value
        # derived from the GPU count is fixed when the pipeline is defined).
        "same_gpu_count": {"type": "yaml", "when": False, "default": list(by_count.values())},
        # Not asked: the types of the families Training Compiler supports.
        "compiler_types": {"type": "yaml", "when": False, "default": compiler},
        # Not asked: the framework versions, the newest of the installed SDK's image tables.
        "versions": {"type": "yaml", "when": False, "default": versions()},
    }
    text = yaml.safe_dump(document, sort_keys=False, width=100)
    return BEGIN + text + END


def main(argv: list[str]) -> int:
    current = COPIER.read_text()
    start, end = current.index(BEGIN), current.index(END) + len(END)
    wanted = current[:start] + block() + current[end:]
    if "--check" in argv:
        if wanted != current:
            print(f"{COPIER} is stale: run python {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    COPIER.write_text(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
