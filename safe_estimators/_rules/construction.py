"""The construction-time checks of the SDK's estimators, made before anything is built.

``EstimatorBase.__init__``, ``HuggingFace.__init__``/``_validate_args`` and
``PyTorch.__init__`` (sagemaker 2.257) raise on these; as rules, ``validate`` and ``plan`` see
them too, with the path and a fix, instead of the build's ``<sagemaker>`` refusal.
"""

from __future__ import annotations

from collections.abc import Iterator

from safe_estimators._context import Context
from safe_estimators._problems import REMOVE, Fix, Problem, removing, setting
from safe_estimators._spec import count_of


def huggingface_versions_agree(ctx: Context) -> Iterator[Problem]:
    """HuggingFace._validate_args: one base framework, and the versions all full or all short."""
    spec = ctx.spec
    if spec.estimator != "huggingface" or spec.image_uri is not None:
        return
    if spec.pytorch_version is not None and spec.tensorflow_version is not None:
        yield Problem(
            "tensorflow_version",
            f"is given beside pytorch_version ({spec.pytorch_version!r}); the Hugging Face "
            "estimator runs one base framework and refuses both (ValueError).",
            fixes=(
                removing("tensorflow_version", why="a PyTorch container"),
                removing("pytorch_version", why="a TensorFlow container"),
            ),
        )
        return
    name = "pytorch_version" if spec.pytorch_version is not None else "tensorflow_version"
    base, transformers = getattr(spec, name), spec.transformers_version
    if not isinstance(base, str) or not isinstance(transformers, str):
        return
    if len(base.split(".")) == len(transformers.split(".")):
        return
    short = {n: ".".join(v.split(".")[:2]) for n, v in (("transformers_version", transformers),
                                                          (name, base))}  # fmt: skip
    yield Problem(
        name,
        f"{base!r} and transformers_version {transformers!r} mix a full and a short version; "
        "the Hugging Face estimator needs both full or both short (ValueError).",
        "write both in full.",
        fixes=(
            setting(("transformers_version", short["transformers_version"]), (name, short[name]),
                    why="both short"),
        ),
    )


def xla_needs_the_compiler(ctx: Context) -> Iterator[Problem]:
    """Both estimators refuse distribution['pytorchxla'] without Training Compiler."""
    distribution = ctx.spec.distribution
    if ctx.compiler or not isinstance(distribution, dict) or "pytorchxla" not in distribution:
        return
    yield Problem(
        "distribution.pytorchxla",
        "runs only with SageMaker Training Compiler; without it the SageMaker SDK refuses the "
        "PyTorch/XLA distribution (ValueError).",
        fixes=(
            setting(("training_compiler", True)),
            Fix(
                (("distribution.pytorchxla", REMOVE),
                 ("distribution.torch_distributed", {"enabled": True})),
                "use distribution={'torch_distributed': {'enabled': True}} for plain multi-GPU "
                "training",
            ),
        ),
    )


def local_gpu_single_instance(ctx: Context) -> Iterator[Problem]:
    """EstimatorBase: local GPU mode runs one container (RuntimeError for more)."""
    count = count_of(ctx.spec.instance_count)
    if ctx.spec.instance_type == "local_gpu" and count > 1:
        yield Problem(
            "instance_count",
            f"is {count} with instance_type 'local_gpu'; the SageMaker SDK runs distributed "
            "training in local mode on CPU only ('local') and refuses this (RuntimeError).",
            fixes=(
                setting(("instance_count", 1)),
                setting(("instance_type", "local"), why="a multi-container test on CPU"),
            ),
        )
