"""Which GPUs a training container's PyTorch can run kernels on: CUDA builds as data.

A CUDA build of PyTorch carries machine code (cubins) for a fixed list of compute capabilities
and, for some, PTX. A cubin for ``X.Y`` runs on ``X.Z`` with ``Z >= Y`` only (same major); PTX
for ``X.Y`` is JIT-compiled by the driver for any capability at or above ``X.Y`` (NVIDIA, CUDA C++
Programming Guide, "Binary Compatibility" and "Application Compatibility"; Blackwell
Compatibility Guide). So a GPU runs a build when some cubin has its major and a minor at or
below its own, or some PTX is at or below it.

The facts, each with its source:

- ``PYTORCH_WHEELS``: the architectures PyTorch's own CUDA wheels compile, per release line and
  CUDA version (pytorch/pytorch ``.ci/manywheel/build_cuda.sh`` on each release branch;
  RELEASE.md "PyTorch CUDA Support Matrix"; issues #157517, #160269, #172352; PR #157516).
- ``IMAGE_BUILDS``: the CUDA build of each PyTorch training image of the SageMaker SDK
  (``pytorch.json`` tags carry none), and whether it installs PyTorch's own wheel (then the
  architectures are known) or a wheel AWS built (then no source lists them). Hugging Face images
  give their CUDA build in the SDK's ``huggingface.json`` (``container_version``) and are built
  FROM the PyTorch image of the same PyTorch and CUDA (aws/deep-learning-containers
  ``huggingface/pytorch/training/docker/2.7/py3/cu128/Dockerfile.gpu``).
- ``FIRST_CUDA_FOR``: the first CUDA toolkit that compiles cubins a GPU runs, per major
  capability (NVIDIA CUDA Toolkit release notes: sm_80 from 11.0, sm_90 from 11.8, sm_100 and
  sm_120 from 12.8); ``LAST_CUDA_BEFORE``: CUDA 12.0 removed sm_35/sm_37 (Kepler, K80) outright,
  so no CUDA 12 build runs there, PTX or not.
"""

from __future__ import annotations

import functools
from typing import Literal

import attrs

from safe_estimators._facts.versions import parse_version

Verdict = Literal["runs", "doubt", "no-kernel"]


@attrs.frozen
class Build:
    """One CUDA build of PyTorch: its CUDA version and, when a source lists them, the
    architectures it carries (``cubins`` and ``ptx``, as ``"8.0"``); ``source`` says where."""

    cuda: str
    cubins: tuple[str, ...] | None = None
    ptx: tuple[str, ...] = ()
    source: str = ""

    @property
    def known(self) -> bool:
        return self.cubins is not None


def _archs(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``"7.5;8.0;12.0+PTX"`` -> cubins (7.5, 8.0, 12.0) and PTX (12.0), as TORCH_CUDA_ARCH_LIST
    reads."""
    items = [item.strip() for item in text.split(";") if item.strip()]
    cubins = tuple(item.removesuffix("+PTX") for item in items)
    return cubins, tuple(item.removesuffix("+PTX") for item in items if item.endswith("+PTX"))


_BUILD_CUDA = "pytorch/pytorch .ci/manywheel/build_cuda.sh on release/{line}"

# (PyTorch release line, CUDA) -> TORCH_CUDA_ARCH_LIST of PyTorch's own x86_64 wheel.
PYTORCH_WHEELS: dict[tuple[str, str], str] = {
    # 2.7: sm_70 and older left the cu128 build, which carries PTX for 12.0 only
    # (the release notes' matrix; "torch 2.7.1+cu128 does not support sm_70").
    ("2.7", "12.6"): "5.0;6.0;7.0;7.5;8.0;8.6;9.0",
    ("2.7", "12.8"): "7.5;8.0;8.6;9.0;10.0;12.0+PTX",
    # 2.8: Volta back in the cu128 and cu129 builds (#157517, the corrected 2.8 release notes
    # #160269); PR #157516 removed +PTX from cu128.
    ("2.8", "12.6"): "5.0;6.0;7.0;7.5;8.0;8.6;9.0",
    ("2.8", "12.8"): "7.0;7.5;8.0;8.6;9.0;10.0;12.0",
    ("2.8", "12.9"): "7.0;7.5;8.0;8.6;9.0;10.0;12.0+PTX",
}

_DLC = "aws/deep-learning-containers pytorch/training/docker/{path}"

# SDK PyTorch training image (pytorch.json version) -> its CUDA builds; "aws" wheels have no
# published architecture list. Where the repository holds two GPU builds of one version the
# image tag does not say which one the SDK's tag points to: both are listed.
IMAGE_BUILDS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "1.7.1": (("11.0", "aws", "1.7.1/py3/cu110/Dockerfile.gpu"),),
    "1.8.0": (("11.1", "aws", "1.8.0/py3/cu111/Dockerfile.gpu"),),
    "1.8.1": (("11.1", "aws", "1.8/py3/cu111/Dockerfile.gpu"),),
    "1.9.0": (("11.1", "aws", "1.9/py3/cu111/Dockerfile.gpu"),),
    "1.9.1": (("11.1", "aws", "1.9/py3/cu111/Dockerfile.gpu"),),
    "1.10.0": (("11.3", "aws", "1.10/py3/cu113/Dockerfile.gpu"),),
    "1.10.2": (("11.3", "aws", "1.10/py3/cu113/Dockerfile.gpu"),),
    "1.11.0": (
        ("11.3", "aws", "1.11/py3/cu113/Dockerfile.gpu"),
        ("11.5", "aws", "1.11/py3/cu115/Dockerfile.gpu"),
    ),
    "1.12.0": (("11.3", "aws", "1.12/py3/cu113/Dockerfile.gpu"),),
    "1.12.1": (
        ("11.3", "aws", "1.12/py3/cu113/Dockerfile.gpu"),
        ("11.6", "aws", "1.12/py3/cu116/Dockerfile.gpu"),
    ),
    "1.13.1": (("11.7", "aws", "1.13/py3/cu117/Dockerfile.gpu"),),
    "2.0.0": (("11.8", "aws", "2.0/py3/cu118/Dockerfile.gpu"),),
    "2.0.1": (
        ("11.8", "aws", "2.0/py3/cu118/Dockerfile.gpu"),
        ("12.1", "aws", "2.0/py3/cu121/Dockerfile.gpu"),
    ),
    "2.1.0": (("12.1", "aws", "2.1/py3/cu121/Dockerfile.gpu"),),
    "2.2.0": (("12.1", "aws", "2.2/py3/cu121/Dockerfile.gpu"),),
    "2.3.0": (("12.1", "aws", "2.3/py3/cu121/Dockerfile.gpu"),),
    "2.4.0": (("12.4", "aws", "2.4/py3/cu124/Dockerfile.gpu"),),
    # 2.5.1: AWS's wheel from framework-binaries; the Dockerfile's TORCH_CUDA_ARCH_LIST
    # ("5.2;7.0+PTX;7.5;8.0;8.6;9.0") is set for what the image builds, and no source says the
    # wheel was built with it.
    "2.5.1": (("12.4", "aws", "2.5/py3/cu124/Dockerfile.gpu"),),
    # 2.6.0: AWS's cu126 wheel; a cu128 SageMaker build of 2.6 exists too.
    "2.6.0": (
        ("12.6", "aws", "2.6/py3/cu126/Dockerfile.gpu"),
        ("12.8", "aws", "2.6/py3/cu128 (SageMaker core packages)"),
    ),
    # 2.7.1 and 2.8.0: pip install torch from PyTorch's cu128 / cu129 index.
    "2.7.1": (("12.8", "pytorch", "2.7/py3/cu128/Dockerfile.gpu"),),
    "2.8.0": (
        ("12.9", "pytorch", "2.8/py3/cu129/Dockerfile.gpu"),
        ("12.8", "pytorch", "2.8/py3/cu128/Dockerfile.gpu"),
    ),
}

# Major compute capability -> the first CUDA whose nvcc emits cubins that GPU runs.
FIRST_CUDA_FOR: dict[int, str] = {8: "11.0", 9: "11.8", 10: "12.8", 12: "12.8"}
# Compute capability below which a CUDA version runs nothing at all (toolkit and driver support
# removed): CUDA 12.0 dropped Kepler (sm_35, sm_37).
NO_SUPPORT_BELOW: dict[str, str] = {"12.0": "5.0"}


def cuda_of_tag(container_version: str) -> str | None:
    """``"cu128-ubuntu22.04"`` -> ``"12.8"`` (the SDK's Hugging Face ``container_version``)."""
    head = container_version.split("-", 1)[0]
    digits = head.removeprefix("cu")
    if head == digits or not digits.isdigit() or len(digits) < 3:
        return None
    return f"{digits[:-1]}.{digits[-1]}"


def build(pytorch_version: str | None, cuda: str, origin: str = "pytorch") -> Build:
    """The build of ``pytorch_version`` for ``cuda``: its architectures when it is PyTorch's own
    wheel of a release line in ``PYTORCH_WHEELS``, else unknown."""
    line = ".".join((pytorch_version or "").split(".")[:2])
    listed = PYTORCH_WHEELS.get((line, cuda)) if origin == "pytorch" else None
    if listed is None:
        return Build(cuda, source=f"CUDA {cuda} build, architectures not published")
    cubins, ptx = _archs(listed)
    return Build(cuda, cubins, ptx, _BUILD_CUDA.format(line=line))


@functools.cache
def pytorch_image_builds(version: str) -> tuple[Build, ...]:
    """The CUDA builds of the SDK's PyTorch training image ``version`` (empty: not recorded)."""
    return tuple(
        attrs.evolve(build(version, cuda, origin), source=_DLC.format(path=path))
        if origin == "aws"
        else build(version, cuda, origin)
        for cuda, origin, path in IMAGE_BUILDS.get(version, ())
    )


def _cc(text: str) -> tuple[int, int]:
    major, _, minor = text.partition(".")
    return int(major), int(minor or 0)


def verdict(one: Build, capability: str) -> Verdict:
    """Whether a GPU of ``capability`` runs ``one``'s kernels."""
    cc = _cc(capability)
    cuda = parse_version(one.cuda)
    for since, minimum in NO_SUPPORT_BELOW.items():
        if cuda >= parse_version(since) and cc < _cc(minimum):
            return "no-kernel"
    if one.cubins is not None:
        cubin = any(_cc(c)[0] == cc[0] and _cc(c) <= cc for c in one.cubins)
        ptx = any(_cc(p) <= cc for p in one.ptx)
        return "runs" if cubin or ptx else "no-kernel"
    first = FIRST_CUDA_FOR.get(cc[0])
    if first is not None and cuda < parse_version(first):
        return "doubt"  # no cubin can exist; PTX for an older capability may JIT, or not
    return "runs"


def verdict_of(builds: tuple[Build, ...], capability: str) -> Verdict:
    """One verdict over an image's possible builds: the same for all, else doubt."""
    found = {verdict(one, capability) for one in builds}
    if not found:
        return "runs"
    return found.pop() if len(found) == 1 else "doubt"


def _origin(pytorch_version: str, cuda: str) -> str:
    # A Hugging Face image is built FROM the PyTorch image of its PyTorch and CUDA.
    for listed, origin, _ in IMAGE_BUILDS.get(pytorch_version, ()):
        if listed == cuda:
            return origin
    return "aws"


@functools.cache
def huggingface_image_builds(transformers_version: str, base_key: str) -> tuple[Build, ...]:
    """The CUDA build of the SDK's Hugging Face training image for ``transformers_version``
    (full) on ``base_key`` (``"pytorch2.7.1"``), from its ``container_version`` (empty: the
    table gives none)."""
    from safe_estimators._facts.versions import _training_config

    entry = _training_config("huggingface").get("versions", {}).get(transformers_version, {})
    tag = (entry.get(base_key, {}).get("container_version") or {}).get("gpu")
    cuda = cuda_of_tag(tag) if isinstance(tag, str) else None
    if cuda is None:
        return ()
    pytorch = base_key.removeprefix("pytorch") if base_key.startswith("pytorch") else None
    origin = _origin(pytorch, cuda) if pytorch else "aws"
    return (attrs.evolve(build(pytorch, cuda, origin), source=f"huggingface.json {tag}"),)


def huggingface_images() -> list[tuple[str, str, tuple[str, ...]]]:
    """Every (transformers version, base key, py_versions) of the SDK's Hugging Face training
    table."""
    from safe_estimators._facts.versions import _training_config

    found = []
    for version, entry in _training_config("huggingface").get("versions", {}).items():
        for key, base in entry.items():
            if key != "version_aliases" and isinstance(base, dict):
                found.append((version, key, tuple(base.get("py_versions", ()))))
    return found
