"""Rules about distribution strategies: the keys the SDK reads and the process counts."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from safe_estimators._context import Context
from safe_estimators._distributions import is_enabled, torchrun
from safe_estimators._distributions.launchers import LAUNCHER_RULES
from safe_estimators._facts import tables
from safe_estimators._problems import (
    REMOVE,
    Fix,
    Problem,
    closest,
    count,
    did_you_mean,
    join_path,
    removing,
    setting,
    warning,
)
from safe_estimators._rules.instance import pipeline_parameter_instance_type


def distribution_shape(ctx: Context) -> Iterator[Problem]:
    """Strategies and their keys must be ones the SDK reads (it silently ignores the rest)."""
    known = dict(tables.DISTRIBUTION_KEYS)
    if ctx.compiler:
        known.update(dict.fromkeys(tables.XLA_MISSPELLINGS, frozenset({"enabled"})))
    for key, value in ctx.distribution.items():
        path = join_path("distribution", key)
        if key not in known:
            yield Problem(
                path,
                f"{key!r} is not a distribution strategy the SageMaker SDK reads; it would be "
                "ignored silently.",
                f"use one of: {', '.join(tables.DISTRIBUTION_KEYS)}.",
                fixes=tuple(
                    Fix(((path, REMOVE), (f"distribution.{close}", value)),
                        f"did you mean {close!r}? (write distribution.{close})")
                    for close in [closest(key, tables.DISTRIBUTION_KEYS)] if close
                ),
            )
            continue
        if key == "instance_groups":
            continue
        if not isinstance(value, Mapping):
            yield Problem(
                path,
                f"must be a mapping like {{'enabled': True}}, got {type(value).__name__} "
                f"{value!r}.",
                f"write {key}: {{enabled: true}}"
                + (" (or {dataparallel: {enabled: true}})" if key == "smdistributed" else "")
                + ".",
            )
            continue
        for sub, subvalue in value.items():
            if sub not in known[key]:
                yield Problem(
                    join_path(path, sub),
                    f"{sub!r} is not read by the SageMaker SDK for {key}; it would be ignored.",
                    did_you_mean(str(sub), known[key]) or f"use: {', '.join(sorted(known[key]))}.",
                )
            elif sub == "enabled" and type(subvalue) is not bool:
                yield Problem(
                    join_path(path, sub),
                    f"must be true or false, got {subvalue!r}.",
                    "write enabled: true (a bool, not a string).",
                    fixes=(setting((join_path(path, sub), True)),),
                )


def mpi_processes(ctx: Context) -> Iterator[Problem]:
    """MPI launches processes_per_host processes, one per GPU at most."""
    mpi = ctx.distribution.get("mpi")
    if mpi is None or not isinstance(mpi, Mapping) or "processes_per_host" not in mpi:
        return
    processes = mpi["processes_per_host"]
    path = "distribution.mpi.processes_per_host"
    if type(processes) is not int or processes < 1:
        yield Problem(path, f"must be a positive whole number, got {processes!r}.")
    elif ctx.gpus_per_instance and processes > ctx.gpus_per_instance:
        yield Problem(
            path,
            f"is {processes}, but {ctx.instance_name} has {count(ctx.gpus_per_instance, 'GPU')}: "
            "more node-local processes than devices fail at start-up.",
            f"pick an instance type with {count(processes, 'GPU')}.",
            fixes=(setting((path, ctx.gpus_per_instance), why="one process per GPU"),),
        )


def distribution_needs_gpus(ctx: Context) -> Iterator[Problem]:
    """GPU launchers on a CPU instance start nothing useful."""
    if ctx.instance is None or ctx.instance.accelerator_kind is not None:
        return
    for key in ("pytorchxla", "pytorchddp", "smdistributed"):
        block = ctx.distribution.get(key)
        if key == "smdistributed" and isinstance(block, Mapping):
            block = block.get("dataparallel")
        if key == "pytorchddp" and ctx.spec.estimator == "huggingface":
            continue  # plain PyTorch DDP over mpirun there; gloo runs on CPUs
        if is_enabled(block):
            yield Problem(
                f"distribution.{key}",
                f"needs GPUs, but {ctx.instance_name} has none.",
                "use a GPU instance.",
                fixes=(
                    *(setting(("instance_type", name)) for name in ("ml.g5.12xlarge",
                                                                     "ml.p4d.24xlarge")),
                    removing(f"distribution.{key}"),
                ),
            )


# parameter_server is not among them: the SDK sends it, the PyTorch containers never read it.
_LAUNCHERS = ("pytorchxla", "pytorchddp", "torch_distributed", "mpi")


def parameter_server_ignored(ctx: Context) -> Iterator[Problem]:
    """The PyTorch and Hugging Face containers start no parameter servers."""
    # The SDK sends sagemaker_parameter_server_enabled (Framework._distribution_configuration);
    # only the TensorFlow and MXNet training toolkits read it. The PyTorch training toolkit
    # (aws/sagemaker-pytorch-training-toolkit, training.py), which the PyTorch and Hugging Face
    # training containers run, picks its runner from the launchers' own flags and never reads it.
    if not is_enabled(ctx.distribution.get("parameter_server")):
        return
    yield warning(
        "distribution.parameter_server",
        "is ignored: the SageMaker SDK sends sagemaker_parameter_server_enabled, but only the "
        "TensorFlow and MXNet containers start parameter servers; the PyTorch and Hugging Face "
        "containers never read it and run the script once per instance "
        f"({ctx.instance_count} here), each process training on its own.",
        "for data parallelism use torch_distributed (torchrun), smdistributed.dataparallel "
        "(SMDDP) or mpi.",
        fixes=(removing("distribution.parameter_server"),),
    )


def _launches(distribution: Mapping[str, object]) -> bool:
    """Some strategy in the distribution starts processes on the hosts."""
    if any(is_enabled(distribution.get(key)) for key in _LAUNCHERS):
        return True
    smd = distribution.get("smdistributed")
    return isinstance(smd, Mapping) and any(
        isinstance(b, Mapping) and b.get("enabled") is not False for b in smd.values()
    )


def _devices(ctx: Context) -> tuple[int, str]:
    """Devices per instance a launcher would use, and their name: GPUs, or NeuronCores."""
    instance = ctx.instance
    if instance is not None and instance.accelerator_kind == "neuron":
        return instance.neuron_cores or 0, "NeuronCore"
    return ctx.gpus_per_instance or 0, "GPU"


def no_launcher(ctx: Context) -> Iterator[Problem]:
    """Several GPUs (or NeuronCores) and no launcher: one process per host, the rest idle."""
    if ctx.compiler or ctx.model_parallel is not None or _launches(ctx.distribution):
        return
    words = ctx.spec.trainer
    if words is not None and (words.command or words.launcher):
        return  # ModelTrainer's command or the user's own driver starts the processes
    if ctx.spec.instance_groups:
        return  # groups without a launcher run one script per host by design (data loaders)
    per_instance, noun = _devices(ctx)
    total = per_instance * ctx.instance_count
    if total <= 1:
        return
    idle = total - ctx.instance_count
    spread = ctx.script_device_use if idle else None
    if spread == "trainer":
        if noun == "GPU":  # n_gpu counts CUDA devices: on NeuronCores the others idle
            yield _trainer_data_parallel(ctx, per_instance, noun)
            return
        spread = None
    if spread is not None:
        # One process uses every GPU of its instance (the model spread by device_map,
        # DataParallel, or workers it spawns itself): nothing idles, and a launcher would start
        # that process once per GPU.
        if ctx.instance_count == 1:
            return
        how = _SPREADS[spread]
        yield Problem(
            "distribution",
            f"is not set, and the script {how} over each instance's {count(per_instance, noun)}; "
            f"SageMaker starts one training process per instance, so the {ctx.instance_count} "
            f"instances ({ctx.instance_name}) train independent copies.",
            "give each GPU its own process (a launcher such as torch_distributed, with the "
            "model on that process's GPU) to train one model across the instances.",
            "warning",
            fixes=(setting(("instance_count", 1)),),
        )
        return
    if idle:
        verb = "sits" if idle == 1 else "sit"
        effect = f"unless the script spreads itself over them, {count(idle, noun)} {verb} idle"
        if ctx.instance_count > 1:
            effect += f", and the {ctx.instance_count} instances train independent copies"
    else:
        effect = f"the {ctx.instance_count} instances train independent copies"
    fixes, hint, why = _launcher_fixes(ctx, noun)
    yield Problem(
        "distribution",
        f"is not set, but the job has {count(total, noun)} ({ctx.instance_count} x "
        f"{ctx.instance_name}, {count(per_instance, noun)} each): SageMaker starts one training "
        f"process per instance, so {effect}.{why}",
        hint,
        "warning",
        fixes=fixes,
    )


def _trainer_data_parallel(ctx: Context, per_instance: int, noun: str) -> Problem:
    """The Hugging Face Trainer in one process per instance: it wraps the model in
    torch.nn.DataParallel over the instance's GPUs (transformers: TrainingArguments sets n_gpu to
    the device count outside distributed mode, and Trainer._wrap_model wraps when n_gpu > 1)."""
    copies = (
        f"; and the {ctx.instance_count} instances train independent copies"
        if ctx.instance_count > 1
        else ""
    )
    fixes, hint, why = _launcher_fixes(ctx, noun)
    return Problem(
        "distribution",
        f"is not set, but the job has {count(per_instance * ctx.instance_count, noun)} "
        f"({ctx.instance_count} x {ctx.instance_name}, {count(per_instance, noun)} each) and "
        "the script trains with the Hugging Face Trainer in one process per instance: it wraps "
        "the model in torch.nn.DataParallel over the instance's GPUs, which uses them all but "
        "replicates the model from GPU 0 on every step and gathers the outputs there, so GPU 0 "
        "carries the most memory and the step runs slower than with one process per GPU "
        f"(DDP, or FSDP to shard the model states){copies}.{why}",
        hint,
        "warning",
        fixes=fixes,
    )


# What Context.script_device_use found, in words.
_SPREADS = {
    "device_map": "spreads its model (device_map) in one process",
    "data_parallel": "replicates its model with torch.nn.DataParallel in one process",
    "spawn": "starts its own worker processes (xmp.spawn, torch.multiprocessing, or a launcher "
    "it runs)",
}


TORCHRUN: dict[str, Any] = {"torch_distributed": {"enabled": True}}
MPI: dict[str, Any] = {"mpi": {"enabled": True}}


def _trial_errors(
    ctx: Context, changes: Mapping[str, Any], distribution: Mapping[str, Any]
) -> list[Problem]:
    """The errors the launcher rules give this job with ``changes`` and ``distribution``."""
    spec = attrs.evolve(ctx.spec, **changes) if changes else ctx.spec
    trial = attrs.evolve(ctx, spec=spec, distribution=distribution)
    rules = (*LAUNCHER_RULES, pipeline_parameter_instance_type, mpi_processes)
    return [p for rule in rules for p in rule(trial) if p.severity == "error"]


def _refused(
    ctx: Context, changes: Mapping[str, Any], distribution: Mapping[str, Any]
) -> list[Problem]:
    """What ``changes`` and ``distribution`` would make our launcher rules refuse, new errors
    only (the job's own stay the business of the rules that report them)."""
    before = {(p.path, p.message) for p in _trial_errors(ctx, {}, ctx.distribution)}
    return [
        p for p in _trial_errors(ctx, changes, distribution) if (p.path, p.message) not in before
    ]


def launcher_fixes(ctx: Context) -> list[dict[str, Any]]:
    """Spec changes that give this job a launcher our own rules accept, best first.

    torchrun as the job is; else torchrun with the nearest framework version it takes; and MPI
    on GPUs, which any framework version and entry point run (Trainium takes torchrun only).
    Each is tried against the launcher rules. Empty when none passes them.
    """
    if not _refused(ctx, {}, TORCHRUN):
        return [{"distribution": TORCHRUN}]
    fixes: list[dict[str, Any]] = []
    versions = torchrun.version_fix(ctx)
    if versions and not _refused(ctx, versions, TORCHRUN):
        fixes.append({**versions, "distribution": TORCHRUN})
    if not _refused(ctx, {}, MPI):
        fixes.append({"distribution": MPI})
    return fixes


def _launcher_fixes(ctx: Context, noun: str) -> tuple[tuple[Fix, ...], str, str]:
    """The launchers this job can take as fixes (each checked again before it is offered), the
    way out without one, and why torchrun is not among them (empty when it is)."""
    found = launcher_fixes(ctx)
    fixes = []
    for way in found:
        if way["distribution"] is MPI:
            text = (
                "add distribution={'mpi': {'enabled': True}} (mpirun: one process per GPU; the "
                "script joins its process group from MPI's environment, as Horovod does)"
            )
            fixes.append(Fix((("distribution.mpi", {"enabled": True}),), text))
            continue
        versions = {k: v for k, v in way.items() if k != "distribution"}
        text = (
            f"add distribution={{'torch_distributed': {{'enabled': True}}}} (torchrun: one "
            f"process per {noun} and one job across the instances)"
        )
        if versions:
            words = ", ".join(f"{k}={v!r}" for k, v in versions.items())
            text = f"set {words} (the nearest that torchrun takes) and {text}"
        changes = (*versions.items(), ("distribution.torch_distributed", {"enabled": True}))
        fixes.append(Fix(tuple(changes), text))
    if found == [{"distribution": TORCHRUN}]:
        return tuple(fixes), f"{_one_device(noun)}.", ""
    refusal = _refused(ctx, {}, TORCHRUN)[0]
    why = _why_not_torchrun(ctx, refusal.path)
    if not fixes:
        first = (
            "point entry_point at the .py training script"
            if refusal.path == "entry_point"
            else refusal.hint.rstrip(".")
        )
        hint = f"{first}, then add distribution={{'torch_distributed': {{'enabled': True}}}}"
        return (), f"{hint}; or {_one_device(noun)}.", why
    return tuple(fixes), f"{_one_device(noun)}.", why


def _one_device(noun: str) -> str:
    """The other way out: one device per instance. Every Trainium type has several
    NeuronCores (ml.trn1.2xlarge has 2), so there it means leaving the others idle."""
    if noun == "NeuronCore":
        return "keep one process per instance if the script is written for one NeuronCore"
    return f"use a single {noun}"


def _why_not_torchrun(ctx: Context, path: str) -> str:
    """Why torchrun is not offered, as a sentence for the message."""
    if path == "entry_point":
        return f" torchrun starts .py scripts only, and entry_point is {ctx.spec.entry_point!r}."
    written = getattr(ctx.spec, path, None)
    if path in ("framework_version", "pytorch_version"):
        return (
            f" The SageMaker SDK refuses torchrun with {path}={written!r} on {ctx.instance_name}."
        )
    return f" torchrun would be refused here ({path})."
