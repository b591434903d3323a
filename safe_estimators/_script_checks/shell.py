"""Launchers a shell entry point runs: does it start one process per GPU itself?

SageMaker runs a non-Python entry point as a program, once per host. A shell script that runs
a launcher (``accelerate launch``, ``torchrun``, ``tune run``, ``deepspeed``, ``mpirun``) starts
the processes itself; the job-level "GPUs sit idle" warning must then stay quiet. Each launcher
is one entry of ``LAUNCHERS``: the words that start it, the options that give its process count,
and what it starts when no count is given, with the source.

A count written as a variable (``--num_processes "$NUM_GPUS"``, with ``NUM_GPUS`` from
``SM_NUM_GPUS``) is taken as several: only a literal 1 says one process.
"""

from __future__ import annotations

import re
import shlex

import attrs


@attrs.frozen
class Launcher:
    """One launcher command: ``words`` start it (after any wrapper), ``counts`` are the options
    that give its process count per host, ``flags`` options that ask for several processes,
    ``default_many`` whether it starts several when no count is given."""

    name: str
    words: tuple[str, ...]
    counts: tuple[str, ...]
    flags: tuple[str, ...] = ()
    default_many: bool = False
    source: str = ""


LAUNCHERS: tuple[Launcher, ...] = (
    Launcher(
        "accelerate launch", ("accelerate", "launch"), ("--num_processes", "--num-processes"),
        ("--multi_gpu", "--multi-gpu"), default_many=True,
        source="huggingface/accelerate src/accelerate/commands/launch.py "
        "_validate_launch_command: without --num_processes it takes torch.cuda.device_count() "
        "and turns on multi-GPU training (\"More than one GPU was found, enabling multi-GPU "
        "training\"); a config file may set the count too",
    ),
    Launcher(
        "accelerate-launch", ("accelerate-launch",), ("--num_processes", "--num-processes"),
        ("--multi_gpu", "--multi-gpu"), default_many=True, source="the same command",
    ),
    Launcher(
        "torchrun", ("torchrun",), ("--nproc_per_node", "--nproc-per-node"),
        source="torch/distributed/run.py: --nproc_per_node defaults to 1",
    ),
    Launcher(
        "python -m torch.distributed.run", ("-m", "torch.distributed.run"),
        ("--nproc_per_node", "--nproc-per-node"), source="torchrun's module",
    ),
    Launcher(
        "python -m torch.distributed.launch", ("-m", "torch.distributed.launch"),
        ("--nproc_per_node", "--nproc-per-node"), source="the deprecated torchrun module",
    ),
    Launcher(
        "tune run", ("tune", "run"), ("--nproc_per_node", "--nproc-per-node"),
        source="pytorch/torchtune torchtune/_cli/run.py: --nproc_per_node is passed to torchrun",
    ),
    Launcher(
        "deepspeed", ("deepspeed",), ("--num_gpus", "--num-gpus"),
        ("--include",), default_many=True,
        source="microsoft/DeepSpeed deepspeed/launcher/runner.py: without --num_gpus or "
        "--include every GPU of the host gets a process",
    ),
    Launcher(
        "mpirun", ("mpirun",), ("-np", "-n", "--np", "-c"), default_many=True,
        source="Open MPI mpirun(1): without -np one process per slot of the host",
    ),
    Launcher(
        "mpiexec", ("mpiexec",), ("-np", "-n", "--np", "-c"), default_many=True,
        source="the MPI standard's name for mpirun",
    ),
)

# What separates the commands of a shell line: pipes, lists, subshells, substitutions.
_SEPARATORS = re.compile(r"\|\||&&|[|;&`()]|\$\(")
# Commands that print or define their arguments rather than run them.
_NOT_RUN = frozenset({"echo", "printf", "log_info", "log_warning", "log_error", "log_success"})


def runs_launcher_per_device(text: str) -> bool:
    """Some command of the shell ``text`` runs a launcher that starts several processes per
    host (or a count it cannot read); comments and printed text are not commands."""
    return any(_many(launcher, words) for launcher, words in _launches(text))


def launchers_run(text: str) -> list[str]:
    """The names of the launchers the shell ``text`` runs, in order (for messages and tests)."""
    return [launcher.name for launcher, _ in _launches(text)]


def _launches(text: str) -> list[tuple[Launcher, list[str]]]:
    found = []
    for words in _commands(text):
        if not words or words[0].rpartition("/")[2] in _NOT_RUN:
            continue
        for launcher in LAUNCHERS:
            start = _find(words, launcher.words)
            if start is not None:
                found.append((launcher, words[start + len(launcher.words):]))
                break
    return found


def _commands(text: str) -> list[list[str]]:
    """The words of each command, line continuations joined and comments dropped."""
    joined = text.replace("\\\r\n", " ").replace("\\\n", " ")
    commands = []
    for line in joined.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        for part in _SEPARATORS.split(stripped):
            try:
                words = shlex.split(part, comments=True)
            except ValueError:  # an unbalanced quote: split on blanks
                words = part.split()
            commands.append(words)
    return commands


def _find(words: list[str], wanted: tuple[str, ...]) -> int | None:
    names = [word.rpartition("/")[2] if index == 0 else word for index, word in enumerate(words)]
    for index in range(len(words) - len(wanted) + 1):
        head = names[index].rpartition("/")[2]
        if head == wanted[0] and tuple(names[index + 1 : index + len(wanted)]) == wanted[1:]:
            return index
    return None


def _many(launcher: Launcher, arguments: list[str]) -> bool:
    """The launcher starts more than one process per host, or a number it cannot read."""
    count: str | None = None
    for index, word in enumerate(arguments):
        if word.endswith((".py", ".sh")) or word == "-m":
            break  # the program it starts: the options after it are that program's
        name, equals, value = word.partition("=")
        if name in launcher.flags:
            return True
        if name in launcher.counts:
            count = value if equals else (
                arguments[index + 1] if index + 1 < len(arguments) else ""
            )
    if count is None:
        return launcher.default_many
    return not count.isdigit() or int(count) > 1
