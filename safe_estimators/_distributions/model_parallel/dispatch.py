"""One intent, two libraries: the container decides whether the v1 or the v2 rules and resolver run.

PyTorch containers up to 2.0.0 ship the model parallel library v1 (MPI); from 2.0.1 the library
v2 runs from its own image under torchrun. With a custom image (no framework version) the
options decide: the v2 launcher or a v2-only option means v2.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from safe_estimators._distributions.model_parallel import facts, facts_v2
from safe_estimators._distributions.model_parallel.options import ModelParallel, set_options
from safe_estimators._problems import Problem

# The rules and resolvers load with the first model parallel job: every spec reads the
# options, few use them.
if TYPE_CHECKING:
    from safe_estimators._distributions.model_parallel.layout import ParallelLayout
    from safe_estimators._resolved import Injection


def library_generation(
    mp: ModelParallel, pytorch_version: str | None, image_uri: object = None
) -> int:
    """1 or 2: the model parallel library the job runs (PyTorch >= 2.0.1 means 2).

    Without a version (a custom image), AWS's SMP v2 image (which AWS's guide passes as
    ``image_uri`` for older releases), the v2 launcher or a v2-only option means 2.
    """
    v2 = facts_v2.is_v2_container(pytorch_version)
    if v2 is None:
        v2_only = set(facts_v2.PARAMETERS) - set(facts.PARAMETERS)
        v2 = (
            (isinstance(image_uri, str) and facts_v2.SMP_IMAGE_REPOSITORY in image_uri)
            or mp._torch_distributed is not None
            or bool(v2_only & set(set_options(mp)))
        )
    return 2 if v2 else 1


def check_model_parallel(
    mp: ModelParallel,
    *,
    instance_type: str,
    gpus_per_instance: int,
    instance_count: int,
    pytorch_version: str | None,
    hyperparameters: Mapping[str, object],
    path: str = "model_parallel",
    framework_version: str | None = None,
    estimator: str = "pytorch",
    py_version: str | None = None,
    entry_point: object = None,
    image_uri: object = None,
) -> list[Problem]:
    """Run every model parallel rule of the job's library generation; all problems at once.

    ``pytorch_version`` is the container's full PyTorch version (aliases resolved as the SDK
    resolves them); ``framework_version`` is the version as the user wrote it (the SDK puts it
    into the SMP v2 image tag; defaults to ``pytorch_version``). None for both (a custom image)
    skips the checks that depend on the library version. Does not check the Training Compiler
    or ``instance_groups``; the caller does.
    """
    from safe_estimators._distributions.model_parallel.rules import JobV1, check_v1
    from safe_estimators._distributions.model_parallel.rules_v2 import JobV2, check_v2

    written = framework_version or pytorch_version
    if library_generation(mp, pytorch_version or written, image_uri) == 1:
        return check_v1(
            JobV1(
                mp=mp,
                instance_type=instance_type,
                gpus=gpus_per_instance,
                instance_count=instance_count,
                pytorch_version=pytorch_version,
                library=facts.library_of(pytorch_version),
                hyperparameters=hyperparameters,
                path=path,
            )
        )
    job = JobV2(
        mp=mp,
        instance_type=instance_type,
        gpus=gpus_per_instance,
        instance_count=instance_count,
        framework_version=written,
        library=facts_v2.library_of(written),
        estimator=estimator,
        py_version=py_version,
        entry_point=entry_point,
        path=path,
    )
    return check_v2(job)


def resolve_model_parallel(
    mp: ModelParallel,
    *,
    gpus_per_instance: int,
    instance_count: int,
    pytorch_version: str | None,
    path: str = "model_parallel",
    framework_version: str | None = None,
    image_uri: object = None,
) -> tuple[dict, list[Injection], ParallelLayout]:
    """Turn checked options into the ``distribution`` the SageMaker SDK expects.

    Call only when ``check_model_parallel`` found no error. Returns the distribution, the
    values injected on the user's behalf (each with its reason) and the parallel layout. The
    result passes the SDK's own checks (sagemaker 2.257): MPI plus ``smdistributed`` for the
    library v1, ``torch_distributed`` plus ``smdistributed`` for the library v2.
    """
    from safe_estimators._distributions.model_parallel.resolve import resolve_v1
    from safe_estimators._distributions.model_parallel.resolve_v2 import resolve_v2

    written = framework_version or pytorch_version
    if library_generation(mp, pytorch_version or written, image_uri) == 2:
        return resolve_v2(mp, gpus_per_instance=gpus_per_instance, instance_count=instance_count)
    return resolve_v1(
        mp,
        gpus_per_instance=gpus_per_instance,
        instance_count=instance_count,
        pytorch_version=pytorch_version,
        path=path,
    )
