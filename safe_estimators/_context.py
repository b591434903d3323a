"""What the rules look at: a typed spec with its catalog entry and parsed parts.

The core of the rules stage: the job-level rules (``_rules/``), the launchers
(``_distributions/``), the memory fit and the resolver read it, and it reads only what lies
below them (the typed spec, the facts, the catalog and the launcher selection of
``_distributions.selection``), so that no import circle runs through it.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import attrs
from packaging.version import InvalidVersion

import instance_catalog
from safe_estimators._bounds import Tree, real_path, too_wide_to_package, walk_tree
from safe_estimators._distributions import is_enabled
from safe_estimators._distributions.selection import huggingface_launcher, mpi_processes_derived
from safe_estimators._facts import tables
from safe_estimators._facts.code_paths import remote_source_dir
from safe_estimators._facts.sdk_files import default_target
from safe_estimators._facts.versions import (
    framework_container,
    huggingface_container,
    parse_version,
)
from safe_estimators._problems import Problem, count
from safe_estimators._spec import JobSpec, count_of, instance_type_name, spec_variables

LOCAL_TYPES = ("local", "local_gpu")


@attrs.frozen
class Context:
    """A spec with the facts the rules need: its catalog entry and its parsed parts.

    Derived facts that several rules read (the container's PyTorch version, the launchers, the
    walk of source_dir) are computed once per check: the spec is frozen, so they cannot change.
    """

    spec: JobSpec
    instance: instance_catalog.InstanceType | None
    distribution: Mapping[str, Any]
    model_parallel: Any = None
    # The instance group the launcher runs on, in a heterogeneous cluster (instance_groups).
    group: Any = None

    @functools.cached_property
    def target(self) -> str:
        """What the job is built as: "estimator" or "model_trainer" (the spec's ``target``, else
        the installed SDK's default)."""
        return self.spec.target or default_target()

    @functools.cached_property
    def instance_name(self) -> str:
        """The instance type checked: the name, or a pipeline parameter's default."""
        if self.group is not None:
            return str(self.group.instance_type)
        return instance_type_name(self.spec.instance_type)

    @functools.cached_property
    def instance_count(self) -> int:
        """The instances the launcher runs on (those of its group, with instance_groups)."""
        if self.group is not None:
            return int(self.group.instance_count)
        return count_of(self.spec.instance_count)  # a pipeline parameter: its default

    @functools.cached_property
    def pipeline_variables(self) -> dict[str, Any]:
        """The spec's pipeline variables by path (``_spec.spec_variables``)."""
        return spec_variables(self.spec)

    @property
    def parameterised(self) -> bool:
        """The instance type is a SageMaker Pipelines parameter, known only at run time."""
        return not isinstance(self.spec.instance_type, str)

    @property
    def gpu_derived(self) -> bool:
        """Values computed from the GPU count are injected (compiler, model parallelism, MPI)."""
        return self.compiler or self.model_parallel is not None or self.mpi_processes_derived

    @property
    def mpi_processes_derived(self) -> bool:
        """MPI's process count is derived from the GPUs per instance (``mpi.injects_processes``)."""
        return mpi_processes_derived(self.distribution, self.spec.estimator, self.gpus_per_instance)

    @property
    def gpu_assumption(self) -> str:
        """What a GPU-derived value assumes of a pipeline parameter, for injection reasons."""
        if not self.parameterised:
            return ""
        return (
            f" (pipeline parameter: every allowed instance type has "
            f"{count(self.gpus_per_instance, 'GPU')})"
        )

    @property
    def local(self) -> bool:
        return self.spec.instance_type in LOCAL_TYPES

    @property
    def compiler(self) -> bool:
        return self.spec.training_compiler is not None

    @property
    def gpus_per_instance(self) -> int | None:
        return self.instance.gpu_count if self.instance else None

    @property
    def total_gpus(self) -> int | None:
        gpus = self.gpus_per_instance
        return None if gpus is None else gpus * self.instance_count

    @property
    def hardware(self) -> str:
        """``2 x ml.p3.8xlarge (4 GPUs each)``, for messages."""
        gpus = self.gpus_per_instance
        each = "" if gpus is None else f" ({gpus} GPU{'s' if gpus != 1 else ''} each)"
        return f"{self.instance_count} x {self.instance_name}{each}"

    @functools.cached_property
    def pytorch_version(self) -> str | None:
        """The full PyTorch version of the container, aliases resolved as the SDK does."""
        spec = self.spec
        if spec.estimator == "pytorch":
            if spec.framework_version is None:
                return None
            table = tables.IMAGE_CONFIGS[("pytorch", self.compiler)]
            return framework_container(table, spec.framework_version).version
        if spec.pytorch_version is None or spec.transformers_version is None:
            return None
        table = tables.IMAGE_CONFIGS[("huggingface", self.compiler)]
        base = huggingface_container(table, spec.transformers_version, spec.pytorch_version)[1]
        return base.version if base else None

    @property
    def written_pytorch_version(self) -> str | None:
        """The PyTorch version as the user wrote it (the SMP v2 image tag is built from it)."""
        spec = self.spec
        if spec.image_uri is not None:
            return None
        return spec.framework_version if spec.estimator == "pytorch" else spec.pytorch_version

    @functools.cached_property
    def model_parallel_library(self) -> int | None:
        """1 or 2: the model parallel library generation the job runs; None without one."""
        if self.model_parallel is None:
            return None
        from safe_estimators._distributions.model_parallel.dispatch import library_generation

        version = self.pytorch_version or self.written_pytorch_version
        return library_generation(self.model_parallel, version, self.spec.image_uri)

    @functools.cached_property
    def known_pytorch_version(self) -> str | None:
        """``pytorch_version``, or None where the SDK's tables cannot resolve it (a version or
        table they do not have): for checks that fall back to what the user wrote."""
        try:
            return self.pytorch_version
        except (LookupError, TypeError, ValueError):
            return None

    @property
    def trains_tensorflow(self) -> bool:
        """A Hugging Face job on a TensorFlow container."""
        spec = self.spec
        return (
            spec.estimator == "huggingface"
            and spec.tensorflow_version is not None
            and spec.pytorch_version is None
        )

    @functools.cached_property
    def xla_launcher_available(self) -> bool:
        """The compiler container runs the PyTorch/XLA launcher (PyTorch recent enough, or a
        version not known here; never a TensorFlow container)."""
        if self.trains_tensorflow:
            return False
        minimum = tables.COMPILER_XLA_MIN_PYTORCH[self.spec.estimator]
        version = self.known_pytorch_version
        return version is None or version_at_least(version, minimum)

    @functools.cached_property
    def wants_xla_distribution(self) -> bool:
        """A compiler job that needs the PyTorch/XLA launcher: more than one GPU in total, on a
        container that has it."""
        return self.compiler and (self.total_gpus or 0) > 1 and self.xla_launcher_available

    @functools.cached_property
    def source_folder(self) -> str | None:
        """source_dir when it is a folder on this machine (not S3, git or a pipeline variable);
        for a ModelTrainer without one, the entry point's folder, which it uploads instead."""
        source_dir: object = self.spec.source_dir
        if source_dir is None and self.target == "model_trainer":
            entry = self.spec.entry_point
            if isinstance(entry, str) and entry:  # a recipe job has none
                source_dir = os.path.dirname(entry) or "."
        if not isinstance(source_dir, str) or remote_source_dir(source_dir):
            return None
        if not os.path.isdir(source_dir):
            return None
        return source_dir

    @functools.cached_property
    def real_source_folder(self) -> str | None:
        """``source_folder`` with its links resolved: what the checks of its contents read."""
        folder = self.source_folder
        return real_path(folder) if folder is not None else None

    @functools.cached_property
    def source_too_wide(self) -> str | None:
        """Why the local source_dir must not be packaged (the disk root, a home folder)."""
        folder = self.real_source_folder
        return too_wide_to_package(folder, resolved=True) if folder is not None else None

    @functools.cached_property
    def source_tree(self) -> Tree | None:
        """A local source_dir walked once per check (the upload rule and the script checks read
        it); None without a local folder, or for one too wide to walk (the upload rule refuses
        those)."""
        if self.real_source_folder is None or self.source_too_wide:
            return None
        return walk_tree(self.real_source_folder, resolved=True)

    @functools.cached_property
    def script_file(self) -> str | None:
        """The entry point as a local file the script checks read, or None (S3, git, a
        pipeline variable, a missing file, or ``check_script`` off)."""
        spec = self.spec
        if not spec.check_script or spec.extra.get("git_config"):
            return None
        if not isinstance(spec.entry_point, str):
            return None
        if remote_source_dir(spec.source_dir):
            return None
        source_dir = spec.source_dir if isinstance(spec.source_dir, str) else ""
        path = os.path.join(source_dir, spec.entry_point)
        return path if os.path.isfile(path) else None

    @functools.cached_property
    def script_device_use(self) -> str | None:
        """How the local script's one process uses several GPUs itself (``_script_checks``'
        ``device_use``: "device_map", "data_parallel" or "spawn"), or None (no ``script_file``)."""
        if self.script_paths is None:
            return None
        # The loaded program is remembered by its files' stamps (_script_checks/memo.py).
        from safe_estimators._script_checks import device_use

        entry_point, source_dir = self.script_paths
        return device_use(entry_point, source_dir=source_dir)

    @functools.cached_property
    def script_memory(self) -> Any:
        """What the local script does that the memory estimate counts (``_script_checks``'
        ``script_memory_facts``: sharding, offload, checkpointing, precision, quantized
        loading, each with its line, read with the job's hyperparameters), or None (no
        ``script_file``)."""
        if self.script_paths is None:
            return None
        from safe_estimators._script_checks import script_memory_facts

        entry_point, source_dir = self.script_paths
        hyperparameters = {str(k): str(v) for k, v in self.spec.hyperparameters.items()}
        return script_memory_facts(entry_point, hyperparameters, source_dir=source_dir)

    @functools.cached_property
    def script_paths(self) -> tuple[str, str | None] | None:
        """``entry_point`` and ``source_dir`` as the script checks take them, when there is a
        ``script_file`` (a local file, in a local folder or none); else None."""
        entry_point, source_dir = self.spec.entry_point, self.spec.source_dir
        if self.script_file is None or not isinstance(entry_point, str):
            return None
        if source_dir is not None and not isinstance(source_dir, str):
            return None  # a pipeline variable: script_file is None then too
        return entry_point, source_dir

    @functools.cached_property
    def launchers(self) -> tuple[str, ...]:
        """What the job launches with, as the keys of ``_facts.reserved``'s tables.

        The one model of each estimator's dispatch (the SDK-added hyperparameters and the
        launcher the script checks assume both read it): the PyTorch estimator runs
        ``pytorchddp`` as ``smdistributed.dataparallel``; the Hugging Face estimator's enabled
        ``pytorchddp`` or ``torch_distributed`` is sent alone (``selection.huggingface_launcher``);
        the PyTorch estimator's ``torch_distributed`` is sent alone unless ``smdistributed`` is
        beside it.
        """
        found: list[str] = ["compiler"] if self.compiler else []
        distribution = dict(self.distribution)
        pytorch = self.spec.estimator == "pytorch"
        if pytorch and "pytorchddp" in distribution:
            distribution["smdistributed"] = {"dataparallel": distribution.pop("pytorchddp")}
        if self.model_parallel is not None:
            if self.model_parallel_library == 2:  # smdistributed over torchrun
                return (*found, "torch_distributed", "smdistributed.modelparallel")
            return (*found, "mpi", "mpi.processes_per_host", "smdistributed.modelparallel")
        if not pytorch:
            branch = huggingface_launcher(distribution)
            if branch is not None:  # the Hugging Face estimator sends that launcher alone
                return (*found, branch)
        elif is_enabled(distribution.get("torch_distributed")):
            found.append("torch_distributed")
            if "smdistributed" not in distribution:  # beside it, the other blocks are sent too
                return tuple(found)
        xla_keys = ("pytorchxla", *tables.XLA_MISSPELLINGS) if self.compiler else ("pytorchxla",)
        if self.wants_xla_distribution or any(key in distribution for key in xla_keys):
            found.append("pytorchxla")
        mpi = distribution.get("mpi")
        if mpi is not None and isinstance(mpi, Mapping):
            found.append("mpi")
            if mpi.get("processes_per_host") or self.mpi_processes_derived:
                found.append("mpi.processes_per_host")
        smdistributed = distribution.get("smdistributed")
        if smdistributed is not None:
            found.append("smdistributed")
            if isinstance(smdistributed, Mapping) and is_enabled(smdistributed.get("dataparallel")):
                found.append("smdistributed.dataparallel")
        if distribution.get("instance_groups") is not None:
            found.append("instance_groups")
        parameter_server = distribution.get("parameter_server")
        if parameter_server is not None and isinstance(parameter_server, Mapping):
            found.append("parameter_server")
        return tuple(found)


Rule = Callable[[Context], Iterator[Problem]]


def version_at_least(version: str | None, minimum: str) -> bool:
    try:
        return version is not None and parse_version(version) >= parse_version(minimum)
    except InvalidVersion:
        return False
