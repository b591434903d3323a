"""Rules about the platform under the container: the GPU's architecture against the image's CUDA
build, the host CPU's architecture, and the SDK's own image-time refusals."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TypeVar

from packaging.version import InvalidVersion, Version

from safe_estimators._context import Context
from safe_estimators._facts import cuda, tables
from safe_estimators._facts.sdk_refusals import instance_deprecations
from safe_estimators._facts.versions import (
    framework_container,
    huggingface_container,
    parse_version,
)
from safe_estimators._problems import Problem, setting, warning

# The architecture of every training image in the SDK's tables: AWS builds its SageMaker
# PyTorch and Hugging Face training images for x86_64 (aws/deep-learning-containers: the
# Dockerfile.gpu images install linux_x86_64 wheels; the arm64 GPU images,
# Dockerfile.arm64.gpu, are EC2 images the SDK's tables do not name).
SDK_IMAGE_ARCHITECTURE = "x86_64"

T = TypeVar("T")


def _sdk_image(ctx: Context) -> bool:
    """The SDK picks the image from its PyTorch or Hugging Face table (no image_uri, no
    Training Compiler or model parallel v2 image, which have tables of their own)."""
    spec = ctx.spec
    return (
        spec.image_uri is None
        and not ctx.compiler
        and ctx.model_parallel_library != 2
        and ctx.instance is not None
        and not ctx.instance.family.startswith(("trn", "inf"))
    )


def sdk_instance_deprecation(ctx: Context) -> Iterator[Problem]:
    """The SDK's ``image_uris._validate_instance_deprecation``: it refuses some families for
    some framework versions (P2 for PyTorch from 1.13) when it looks up the image."""
    spec = ctx.spec
    if ctx.instance is None or spec.image_uri is not None or spec.estimator != "pytorch":
        return  # the Hugging Face estimator asks with framework "huggingface": never refused
    if ctx.model_parallel_library == 2 or spec.framework_version is None:
        return  # the model parallel v2 image is looked up as "pytorch-smp"
    for rule in instance_deprecations():
        if rule.framework != "pytorch" or ctx.instance.family != rule.family:
            continue
        try:
            refused = parse_version(spec.framework_version) >= parse_version(rule.since)
        except InvalidVersion:
            continue  # framework_versions reports it
        if refused:
            older = _older_than(rule.since)
            yield Problem(
                "instance_type",
                f"the SageMaker SDK refuses {rule.family.upper()} instances "
                f"({ctx.instance_name}) for PyTorch {rule.since} and later "
                f"(image_uris._validate_instance_deprecation), and framework_version is "
                f"{spec.framework_version}.",
                "use a current GPU type.",
                fixes=(
                    setting(("instance_type", "ml.g5.xlarge"), why="1 A10G"),
                    *((setting(*older),) if older else ()),
                ),
            )


def _older_than(since: str) -> tuple[tuple[str, str], ...] | None:
    """The newest framework_version before ``since`` (with a py_version of its container)."""
    known = framework_container("pytorch", since).known
    below = [v for v in known if _below(v, since)]
    if not below:
        return None
    py_versions = framework_container("pytorch", below[-1]).py_versions
    python = (("py_version", py_versions[-1]),) if py_versions else ()
    return (("framework_version", below[-1]), *python)


def _below(version: str, limit: str) -> bool:
    try:
        return parse_version(version) < parse_version(limit)
    except InvalidVersion:
        return False


def host_architecture(ctx: Context) -> Iterator[Problem]:
    """A container runs only on a host CPU of its own architecture (ml.p6e-gb200: Arm)."""
    instance = ctx.instance
    if instance is None or instance.cpu_architecture == SDK_IMAGE_ARCHITECTURE:
        return
    host = instance.cpu_architecture
    image = ctx.spec.image_uri
    if image is None:
        yield Problem(
            "instance_type",
            f"{ctx.instance_name} has {host} host CPUs, and every training image in the "
            f"SageMaker SDK's tables is built for {SDK_IMAGE_ARCHITECTURE}: its container "
            "cannot start there.",
            f"pass image_uri= with a training image built for {host}.",
            fixes=(
                setting(("instance_type", "ml.p6-b200.48xlarge"),
                        why=f"an {SDK_IMAGE_ARCHITECTURE} type, 8 B200 GPUs"),
            ),
        )
    elif isinstance(image, str) and host not in image and "aarch64" not in image:
        yield warning(
            "image_uri",
            f"{ctx.instance_name} has {host} host CPUs; nothing in the image URI says it is "
            f"built for {host}, and an {SDK_IMAGE_ARCHITECTURE} image cannot start there.",
            f"make sure the image (or its manifest list) has a linux/{host} build.",
        )


def _capability(ctx: Context) -> str | None:
    accelerator = ctx.instance.accelerator if ctx.instance is not None else None
    return accelerator.compute_capability if accelerator is not None else None


def container_runs_on_gpu(ctx: Context) -> Iterator[Problem]:
    """The image's PyTorch must carry a kernel the GPU runs: a cubin of its major capability at
    or below its own, or PTX at or below it. An error where the build's architecture list says
    none exists; a warning where no source lists the build's architectures and its CUDA
    predates the GPU (only PTX could run it)."""
    capability = _capability(ctx)
    if capability is None or not _sdk_image(ctx) or ctx.instance is None:
        return
    if any(True for _ in sdk_instance_deprecation(ctx)):
        return  # the SDK refuses the image first; that rule says so
    image = _image(ctx)
    if image is None:
        return
    label, builds, field = image
    yield from _image_verdict(ctx, capability, label, builds, field, _nearest_fix)


def recipe_image_runs_on_gpu(
    ctx: Context, label: str, cuda_version: str, pytorch_version: str | None
) -> Iterator[Problem]:
    """The same rule for a HyperPod recipe job's image (the SDK's recipe image, whose CUDA
    build its ``training_recipes.json`` names: ``container_version`` cu121), at ``image_uri``."""
    capability = _capability(ctx)
    if capability is None or ctx.instance is None or ctx.spec.image_uri is not None:
        return
    builds = (cuda.build(pytorch_version, cuda_version, origin="aws"),)

    def fix(ctx: Context, capability: str) -> str:
        first = cuda.FIRST_CUDA_FOR.get(int(capability.split(".")[0]))
        newer = f" built with CUDA {first} or later" if first else ""
        return (
            f"pass image_uri= with an image{newer} for this GPU, or use an instance type whose "
            "GPU the recipe image supports (ml.p5.48xlarge, H100)."
        )

    yield from _image_verdict(ctx, capability, label, builds, "image_uri", fix)


def _image_verdict(
    ctx: Context,
    capability: str,
    label: str,
    builds: tuple[cuda.Build, ...],
    field: str,
    fixer: Callable[[Context, str], str],
) -> Iterator[Problem]:
    found = cuda.verdict_of(builds, capability)
    if found == "runs":
        return
    assert ctx.instance is not None
    accelerator = ctx.instance.accelerator
    assert accelerator is not None
    gpu = f"{ctx.instance_name}'s {accelerator.name} (compute capability {capability})"
    cudas = " or ".join(f"CUDA {b.cuda}" for b in builds)
    fix = fixer(ctx, capability)
    if found == "no-kernel":
        yield Problem(
            field,
            f"the {label} image ({cudas}) has no kernel that runs on {gpu}: "
            f"{_why(builds)}, so the job fails at its first CUDA call ('no kernel "
            "image is available for execution on the device').",
            fix,
        )
        return
    framework = "TensorFlow build" if ctx.trains_tensorflow else "PyTorch wheel"
    readings = {one.cuda: cuda.verdict(one, capability) for one in builds}
    # Only a build whose architectures no source lists can be in doubt.
    own = f"its {framework} is AWS's own, whose compiled architectures no source lists"
    if set(readings.values()) == {"doubt"}:
        why = (
            f"{own}, and its CUDA predates the GPU, so only PTX JIT-compiled at start could "
            "run it"
        )
    else:
        # Builds read apart (PyTorch 2.6.0: CUDA 12.6 predates a B200, 12.8 does not), and no
        # source says which one the SDK's image is.
        said = {
            "doubt": "predates the GPU (only PTX JIT-compiled at start could run it)",
            "no-kernel": "has no kernel for it",
            "runs": "is new enough for it",
        }
        each = ", ".join(f"the CUDA {c} build {said[found]}" for c, found in readings.items())
        known = any(one.known for one in builds)
        why = f"{'' if known else own + ': '}{each}, and no source says which of them the image is"
    yield warning(field, f"the {label} image ({cudas}) may have no kernel for {gpu}: {why}.", fix)


def _why(builds: tuple[cuda.Build, ...]) -> str:
    for one in builds:
        if one.known:
            assert one.cubins is not None
            ptx = f"; PTX: {', '.join(one.ptx)}" if one.ptx else "; no PTX"
            return f"its PyTorch build compiles {', '.join(one.cubins)}{ptx} ({one.source})"
    return f"CUDA {builds[0].cuda} runs nothing below compute capability 5.0"


def _image(ctx: Context) -> tuple[str, tuple[cuda.Build, ...], str] | None:
    """The image's label, its possible CUDA builds and the field that picks it."""
    spec = ctx.spec
    if spec.estimator == "pytorch":
        version = ctx.known_pytorch_version
        if version is None:
            return None
        builds = cuda.pytorch_image_builds(version)
        return (f"PyTorch {version}", builds, "framework_version") if builds else None
    if spec.transformers_version is None:
        return None
    prefix = "tensorflow" if ctx.trains_tensorflow else "pytorch"
    base_version = spec.tensorflow_version if ctx.trains_tensorflow else spec.pytorch_version
    if base_version is None:
        return None
    table = tables.IMAGE_CONFIGS[("huggingface", False)]
    outer, base = huggingface_container(table, spec.transformers_version, base_version, prefix)
    if outer.version is None or base is None or base.version is None:
        return None
    builds = cuda.huggingface_image_builds(outer.version, f"{prefix}{base.version}")
    field = "pytorch_version" if prefix == "pytorch" else "tensorflow_version"
    framework = "PyTorch" if prefix == "pytorch" else "TensorFlow"
    label = f"Hugging Face transformers {outer.version} with {framework} {base.version}"
    return (label, builds, field) if builds else None


def _runs(builds: tuple[cuda.Build, ...], capability: str) -> bool:
    return bool(builds) and cuda.verdict_of(builds, capability) == "runs"


def _nearest_fix(ctx: Context, capability: str) -> str:
    """The nearest versions below and above the job's whose image runs on the GPU."""
    spec = ctx.spec
    family = ctx.instance.family if ctx.instance is not None else ""
    if spec.estimator == "pytorch":
        current = ctx.known_pytorch_version or ""
        known = framework_container("pytorch", current or "0").known
        options = [
            (v, framework_container("pytorch", v).py_versions)
            for v in known
            if _runs(cuda.pytorch_image_builds(v), capability) and not _deprecated(family, v)
        ]
        picked = _around(options, current, key=lambda item: item[0])
        text = [f"framework_version={v!r}, py_version={py[-1]!r}" for v, py in picked if py]
    else:
        base_version = ctx.known_pytorch_version or spec.pytorch_version or ""
        newest: dict[str, tuple[str, str, tuple[str, ...]]] = {}
        for t, key, py in cuda.huggingface_images():  # the SDK's table lists them oldest first
            builds = cuda.huggingface_image_builds(t, key)
            if key.startswith("pytorch") and _runs(builds, capability):
                newest[key] = (t, key.removeprefix("pytorch"), py)
        candidates = list(newest.values())
        pairs = _around(candidates, base_version, key=lambda item: item[1])
        text = [
            f"transformers_version={t!r}, pytorch_version={p!r}, py_version={py[-1]!r}"
            for t, p, py in pairs
            if py
        ]
    gpu = ctx.instance.accelerator.name if ctx.instance and ctx.instance.accelerator else "GPU"
    if not text:
        return (
            "pick an instance type whose GPU the image supports, or pass image_uri= with a "
            f"build for the {gpu}."
        )
    return f"use an image built for the {gpu}: " + ", or ".join(text) + "."


def _deprecated(family: str, version: str) -> bool:
    return any(
        rule.framework == "pytorch" and rule.family == family and not _below(version, rule.since)
        for rule in instance_deprecations()
    )


def _around(options: list[T], current: str, key: Callable[[T], str]) -> list[T]:
    """The option just above ``current`` and the one just below (by ``key``'s version)."""
    ordered: list[tuple[Version, T]] = []
    for option in options:
        try:
            ordered.append((parse_version(key(option)), option))
        except InvalidVersion:
            continue
    ordered.sort(key=lambda pair: pair[0])
    try:
        here = parse_version(current)
    except InvalidVersion:
        return [option for _, option in ordered[-1:]]
    above = [option for v, option in ordered if v > here]
    below = [option for v, option in ordered if v < here]
    return [*above[:1], *below[-1:]]
