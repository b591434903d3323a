"""The rules of a ``@remote`` function's job: the same mistakes as an estimator job (idle GPUs,
more processes than GPUs, a warm pool beside spot, a launcher on a CPU type), made from a
decorator that hides the job.

Sources: the SDK's ``remote_function/client.py`` (the decorator; its wrapper refuses several
instances without exactly one of ``spark_config``, ``use_torchrun`` and ``use_mpirun``) and
``remote_function/job.py`` (``_JobSettings``: ``spark_config`` refuses ``image_uri`` and
``job_conda_env``; ``_get_default_image``: without ``image_uri`` the image follows the local Python,
and only the versions it lists have one; ``compile``: ``--user_nproc_per_node`` is passed to the
job only when given; the job's ``bootstrap_runtime_environment.py`` otherwise sets
``SM_NPROC_PER_NODE`` to the GPUs it finds, else the NeuronCores, else the vCPUs), in both SDK
generations (``sagemaker.remote_function`` in 2.x, ``sagemaker.core.remote_function`` in 3.x).
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator
from typing import Any

import attrs

import instance_catalog
from safe_estimators._bounds import (
    MAX_PROBLEMS,
    is_inside,
    quote,
    real_path,
    too_wide_to_package,
    walk_tree,
)
from safe_estimators._context import Rule
from safe_estimators._facts.remote_function import (
    default_image_python_versions,
)
from safe_estimators._problems import Fix, Problem, removing, run_rules, setting, warning
from safe_estimators._resolved import Injection
from safe_estimators._rules.capacity import volume_key_problem
from safe_estimators._rules.instance import unknown_type_problem
from safe_estimators._rules.resources import warm_pool_with_spot
from safe_estimators._secrets import secrets_in_options
from safe_estimators._spec.remote import RemoteFunctionSpec


@attrs.frozen
class RemoteContext:
    """What the remote rules look at: the spec, its catalog entry, and the two facts of the
    machine that defines the function (its Python, whether Studio names an image, and its working
    directory)."""

    spec: RemoteFunctionSpec
    instance: instance_catalog.InstanceType | None
    local_python: str
    studio_image: bool
    # The folder the function is called from (os.getcwd()), which include_local_workdir copies.
    workdir: str | None = None

    @property
    def launcher(self) -> str | None:
        """The flag that starts several processes per instance, as the user wrote it."""
        if self.spec.use_torchrun:
            return "use_torchrun"
        return "use_mpirun" if self.spec.use_mpirun else None

    @property
    def devices(self) -> tuple[int, str] | None:
        """The accelerators one instance has, as the job's bootstrap counts them."""
        entry = self.instance
        if entry is None:
            return None
        if entry.gpu_count:
            return entry.gpu_count, "GPUs"
        if entry.neuron_cores:
            return entry.neuron_cores, "NeuronCores"
        return None


def remote_instance_type(ctx: RemoteContext) -> Iterator[Problem]:
    """The instance type must be a SageMaker training type."""
    if ctx.instance is None:
        problem = unknown_type_problem("instance_type", ctx.spec.instance_type)
        if problem is not None:
            yield problem


def remote_processes(ctx: RemoteContext) -> Iterator[Problem]:
    """``nproc_per_node`` against the accelerators of one instance: more processes than GPUs is
    an error (two ranks on one GPU: NCCL refuses, and ``cuda:<local_rank>`` does not exist), fewer
    leaves GPUs idle (a warning); without a launcher it has no effect."""
    spec, devices = ctx.spec, ctx.devices
    if spec.nproc_per_node is not None and ctx.launcher is None:
        yield warning(
            "nproc_per_node",
            f"is {spec.nproc_per_node}, but neither use_torchrun nor use_mpirun is set: the job "
            "runs the function in one process and nothing reads it.",
            "set use_mpirun=True to start that many processes.",
            fixes=(
                setting(("use_torchrun", True), why="to start that many processes"),
                removing("nproc_per_node"),
            ),
        )
        return
    if ctx.launcher is None or spec.nproc_per_node is None or devices is None:
        return
    count, kind = devices
    # devices is None without a catalog entry, and the entry is looked up by the exact name: both
    # branches name the same type, so no mutant of the condition can be told apart.
    name = ctx.instance.name if ctx.instance else spec.instance_type  # pragma: no mutate
    if spec.nproc_per_node > count:
        extra = spec.nproc_per_node - count
        yield Problem(
            "nproc_per_node",
            f"is {spec.nproc_per_node} with {ctx.launcher}, but {name} has {count} {kind}: "
            f"{extra} {'process' if extra == 1 else 'processes'} per instance would share or "
            "lack an accelerator, which NCCL refuses and cuda:<local rank> cannot name.",
            f"use an instance type with {spec.nproc_per_node} {kind}.",
            fixes=(
                setting(("nproc_per_node", count)),
                removing("nproc_per_node", why=f"the job counts the {kind}"),
            ),
        )
    elif spec.nproc_per_node < count:
        idle = count - spec.nproc_per_node
        yield warning(
            "nproc_per_node",
            f"is {spec.nproc_per_node} with {ctx.launcher}, and {name} has {count} {kind}: "
            f"{idle} {'sits' if idle == 1 else 'sit'} idle while the job is billed for all.",
            "use a smaller instance type.",
            fixes=(setting(("nproc_per_node", count)), removing("nproc_per_node")),
        )


def remote_launcher_on_cpu(ctx: RemoteContext) -> Iterator[Problem]:
    """A launcher on a type without accelerators starts one process per vCPU (the bootstrap's
    fallback): a distributed GPU function finds no GPU. It runs for a CPU (gloo) function."""
    entry = ctx.instance
    if ctx.launcher is None or entry is None or ctx.devices is not None:
        return
    yield warning(
        ctx.launcher,
        f"is set on {entry.name}, which has no GPU or NeuronCore: the job starts "
        f"{ctx.spec.nproc_per_node or entry.vcpus} processes per instance "
        f"({'nproc_per_node' if ctx.spec.nproc_per_node else 'one per vCPU'}), and a function "
        "that trains on cuda or with NCCL fails there.",
        "use an accelerated instance type (ml.g5.12xlarge, ml.p4d.24xlarge, ...), or keep this "
        "type for a CPU (gloo) function.",
    )


def remote_several_instances(ctx: RemoteContext) -> Iterator[Problem]:
    """Several instances need exactly one of spark_config, use_torchrun and use_mpirun: the
    decorated function raises ValueError when called otherwise."""
    spec = ctx.spec
    if spec.instance_count <= 1:
        return
    chosen = [
        name
        for name, on in (
            ("spark_config", spec.spark_config is not None),
            ("use_torchrun", spec.use_torchrun),
            ("use_mpirun", spec.use_mpirun),
        )
        if on
    ]
    if len(chosen) != 1:
        what = " and ".join(chosen) if chosen else "none of them"
        yield Problem(
            "instance_count",
            f"is {spec.instance_count}, and the SDK's @remote runs several instances only with "
            f"exactly one of spark_config, use_torchrun and use_mpirun ({what} given): calling "
            "the function raises ValueError before any job starts.",
            "set use_mpirun=True alone.",
            fixes=(*_torchrun_alone(spec), setting(("instance_count", 1))),
        )


def _torchrun_alone(spec: Any) -> tuple[Fix, ...]:
    """use_torchrun=True as the one launcher (use_mpirun off), where no spark_config is set."""
    if spec.spark_config is not None:
        return ()
    changes = [("use_torchrun", True), *([("use_mpirun", False)] if spec.use_mpirun else [])]
    return (Fix(tuple(changes), "set use_torchrun=True alone"),)


def remote_spark(ctx: RemoteContext) -> Iterator[Problem]:
    """spark_config picks its own image and environment (the SDK refuses both beside it)."""
    spec = ctx.spec
    if spec.spark_config is None:
        return
    for name in ("image_uri", "job_conda_env"):
        if getattr(spec, name) is not None:
            yield Problem(
                name,
                "is set with spark_config; the SDK's @remote raises ValueError when the "
                "function is decorated: a Spark job runs in the SageMaker Spark image.",
                "",
                fixes=(removing(name), removing("spark_config")),
            )


def remote_default_image(ctx: RemoteContext) -> Iterator[Problem]:
    """Without image_uri (and outside Studio) the SDK picks a base Python image for the local
    Python, and has one only for the versions it lists: any other raises when the job starts."""
    spec = ctx.spec
    if spec.image_uri is not None or spec.spark_config is not None or ctx.studio_image:
        return
    versions = default_image_python_versions()
    if ctx.local_python in versions:
        return
    shown = ", ".join(f"{v[0]}.{v[1:]}" for v in versions)
    local = f"{ctx.local_python[0]}.{ctx.local_python[1:]}"
    yield Problem(
        "image_uri",
        f"is not set, and this Python is {local}: the SDK's default image exists only for "
        f"Python {shown}, so calling the function raises ValueError (the image must run the "
        "function with the Python that pickled it).",
        f"pass image_uri= an image with Python {local} (a SageMaker PyTorch training image, or "
        "your own), or define the function under Python " + shown.split(", ")[0] + ".",
    )


def remote_warm_pool(ctx: RemoteContext) -> Iterator[Problem]:
    """A warm pool beside spot instances (AWS: warm pools cannot be used with spot)."""
    seconds = ctx.spec.keep_alive_period_in_seconds
    if seconds > 0 and ctx.spec.use_spot_instances:
        yield warm_pool_with_spot(seconds, "max_wait_time_in_seconds")


def remote_spot(ctx: RemoteContext) -> Iterator[Problem]:
    """Managed spot needs MaxWaitTimeInSeconds >= MaxRuntimeInSeconds (CreateTrainingJob)."""
    spec = ctx.spec
    if not spec.use_spot_instances:
        return
    run = spec.max_runtime_in_seconds
    if spec.max_wait_time_in_seconds is None:
        yield Problem(
            "max_wait_time_in_seconds",
            "is required with use_spot_instances=True: the SDK sends no MaxWaitTimeInSeconds, "
            "and CreateTrainingJob refuses a managed spot job without it.",
            "",
            fixes=(
                setting(("max_wait_time_in_seconds", run),
                        why=f"at least max_runtime_in_seconds, {run} s"),
            ),
        )
    elif spec.max_wait_time_in_seconds < run:
        yield Problem(
            "max_wait_time_in_seconds",
            f"is {spec.max_wait_time_in_seconds} s, less than max_runtime_in_seconds ({run} s); "
            "CreateTrainingJob refuses the job.",
            "",
            fixes=(
                setting(("max_wait_time_in_seconds", run)),
                setting(("max_runtime_in_seconds", spec.max_wait_time_in_seconds)),
            ),
        )


def remote_volume_key(ctx: RemoteContext) -> Iterator[Problem]:
    """A volume key on local NVMe storage, which CreateTrainingJob refuses."""
    if ctx.spec.volume_kms_key and ctx.instance is not None and ctx.instance.nvme_disks:
        yield volume_key_problem("instance_type", ctx.instance)


def remote_secrets(ctx: RemoteContext) -> Iterator[Problem]:
    """Credentials in the environment, tags or other values the job request carries."""
    spec = ctx.spec
    options: list[tuple[str, Any]] = [("environment_variables", spec.environment_variables)]
    options += [(k, v) for k, v in spec.extra.items() if k != "custom_file_filter"]
    yield from secrets_in_options(options, tuple(spec.accept_exposure))


_WORKDIR = "include_local_workdir"
_WORKDIR_HINT = (
    "start Python in the project's folder (or os.chdir to it) before calling the function, or "
    "pass custom_file_filter=CustomFileFilter(ignore_name_patterns=[...]) naming what to leave "
    "out."
)
_SITE_PACKAGES = f"{os.sep}site-packages{os.sep}"
_LOOP_HINT = "remove the link, or start Python in a folder without it."


def remote_workdir(ctx: RemoteContext) -> Iterator[Problem]:
    """``include_local_workdir``: at each call the SDK copies the working directory into the
    job's workspace with ``shutil.copytree``, which follows links: with its default filter every
    ``.py`` file under it (links that lead nowhere are skipped), with a ``CustomFileFilter``
    every file but the names it ignores, from the folder the filter was made in. A link to a
    folder that holds it is copied into itself at every level until the path holds more links
    than the system resolves: the default filter then skips it (the files arrive about 40 times
    over), a CustomFileFilter's copy fails, and two such links multiply the copies without end.
    A home folder, the disk root or a Python environment under it is copied whole, at every
    call."""
    spec = ctx.spec
    if spec.extra.get(_WORKDIR) is not True:
        return
    file_filter = spec.extra.get("custom_file_filter")
    patterns: tuple[str, ...] = ()
    if file_filter is None:
        folder, python_only = ctx.workdir, True
    elif isinstance(getattr(file_filter, "workdir", None), str):
        folder, python_only = file_filter.workdir, False
        given = getattr(file_filter, "ignore_name_patterns", None)
        listed = given if isinstance(given, list | tuple) else ()
        patterns = tuple(p for p in listed if isinstance(p, str))
    else:
        return  # the user's own function decides what is copied
    if folder is None or not os.path.isdir(folder):
        return
    copied = "every .py file" if python_only else "every file"
    wide = too_wide_to_package(folder)
    if wide:
        yield warning(
            _WORKDIR,
            f"the working directory {quote(folder)} {wide}; the SDK copies {copied} under it "
            "into the job at every call.",
            _WORKDIR_HINT,
        )
        return
    real = real_path(folder)
    # resolved=True only spares walk_tree resolving the path again: its mutants walk the same.
    tree = walk_tree(real, resolved=True)  # pragma: no mutate

    def copied_by_sdk(path: str) -> bool:
        # copytree asks the filter about each folder's names: a name it ignores is not copied,
        # nor anything under it.
        parts = os.path.relpath(path, real).split(os.sep)
        return not any(fnmatch.fnmatch(part, p) for part in parts for p in patterns)

    looping = [link for link in tree.looping_links if copied_by_sdk(link)]
    broken = [link for link in tree.broken_links if copied_by_sdk(link)]
    targets = [(link, real_path(link)) for link in looping]
    multiplying = _multiplying(targets)
    for link, target in targets[:MAX_PROBLEMS]:
        empty = not any(is_inside(path, target) for path in tree.python_files)
        if python_only and not multiplying and empty:
            continue  # folders without a .py file: the default filter copies nothing of them
        shown = quote(os.path.relpath(link, real))
        said = (
            f"{shown} in the working directory is a link to a folder that holds it; the SDK "
            "copies the working directory following links (shutil.copytree), so it copies that "
            "folder into itself again at every level"
        )
        if multiplying:
            # Each copy holds two or more links back: the copies multiply (2^40 and more).
            yield Problem(
                _WORKDIR,
                f"{said}, and with the other links back beside it the copies multiply at "
                "every level: the call never ends.",
                _LOOP_HINT,
            )
        elif python_only:
            # The default filter skips what it cannot stat: the copy stops where the path
            # holds more links than the system resolves (40 on Linux), having copied that
            # folder's .py files that many times.
            yield warning(
                _WORKDIR,
                f"{said}, until the path holds more links than the system resolves (40 on "
                "Linux): the job gets those .py files about 40 times over.",
                _LOOP_HINT,
            )
        else:
            yield Problem(
                _WORKDIR,
                f"{said}, until the system refuses the path (too many levels of links); with a "
                "CustomFileFilter that fails the call.",
                _LOOP_HINT,
            )
    if not python_only:
        for link in broken[:MAX_PROBLEMS]:
            yield Problem(
                _WORKDIR,
                f"{quote(os.path.relpath(link, real))} in the working directory is a link to "
                "nothing; with a CustomFileFilter the SDK copies it too (shutil.copytree), and "
                "the call fails.",
                "remove the link, or add its name to ignore_name_patterns.",
            )
    environment = [path for path in tree.python_files if _SITE_PACKAGES in path]
    if python_only and environment:
        yield warning(
            _WORKDIR,
            f"the working directory {quote(folder)} holds a Python environment: "
            f"{len(environment):,} of the {len(tree.python_files):,} .py files the SDK copies "
            "into the job at every call are under site-packages.",
            _WORKDIR_HINT,
        )
    elif tree.truncated:
        yield warning(
            _WORKDIR,
            f"the working directory {quote(folder)} has {tree.truncated}; the SDK copies "
            f"{copied} under it into the job at every call.",
            _WORKDIR_HINT,
        )


def _multiplying(links: list[tuple[str, str]]) -> bool:
    """Two links or more lead back from inside one of the folders they loop to: each copy of
    that folder holds them all again."""
    for _, target in links:
        back = [link for link, to in links if is_inside(link, target) and is_inside(target, to)]
        if len(back) > 1:
            return True
    return False


REMOTE_FUNCTION_RULES: tuple[Rule, ...] = (  # type: ignore[assignment]
    remote_instance_type,
    remote_processes,
    remote_launcher_on_cpu,
    remote_several_instances,
    remote_spark,
    remote_default_image,
    remote_warm_pool,
    remote_spot,
    remote_volume_key,
    remote_secrets,
    remote_workdir,
)


def check_remote(ctx: RemoteContext) -> list[Problem]:
    """Every remote rule's problems, in the table's order."""
    return run_rules(REMOTE_FUNCTION_RULES, ctx)


def remote_injections(ctx: RemoteContext) -> tuple[dict[str, Any], list[Injection]]:
    """What is set beyond the user's options: ``nproc_per_node`` from the catalog for a
    launcher on an accelerated type, so that the request says what the bootstrap would count."""
    devices = ctx.devices
    if ctx.launcher is None or ctx.spec.nproc_per_node is not None or devices is None:
        return {}, []
    count, kind = devices
    # As in remote_processes: both branches name the same type.
    name = ctx.instance.name if ctx.instance else ctx.spec.instance_type  # pragma: no mutate
    return {"nproc_per_node": count}, [
        Injection(
            "nproc_per_node",
            count,
            f"{name} has {count} {kind}: one process each under {ctx.launcher}. The job's "
            "bootstrap would count them at run time; set here, the request shows it "
            "(--user_nproc_per_node).",
        )
    ]
