"""Checks on the training script itself, before the job is launched.

The AWS troubleshooting pages for Training Compiler and for fp16 model parallelism are mostly about
mistakes inside the entry point that show up only after a job has run for a while: no
``_mp_fn(index)`` so every worker trains its own model, no ``xm.mark_step()``, no
``DistributedSampler``, ``os.environ["GPU_NUM_DEVICES"] = 4``, clipping before ``unscale_``, an LR
scheduler built on the ``smp.DistributedOptimizer`` wrapper... No SDK looks at the script. This
module does, because it knows the job's configuration (a :class:`ScriptContext`).

It parses the entry point and the local modules it imports with :mod:`ast`. It never imports or
runs them: the script may need a GPU, torch_xla, or may train at import time.

Where things are, so that a new check is one small function in the file named after its feature:

- ``__init__`` (this module): the public surface (:class:`ScriptContext`,
  :class:`Finding`, :func:`check_script`, :func:`check_source`), the rule table ``_RULES`` and
  the driver that follows the entry point's local imports.
- ``findings``: :class:`ScriptContext` and :class:`Finding` themselves.
- ``summary``: ``_parse`` turns a file into a ``_Module`` summary in one pass: import
  aliases, every call with its dotted name resolved through the imports (``xm.mark_step`` ->
  ``torch_xla.core.xla_model.mark_step``), its enclosing function and position, simple
  assignments, ``os.environ`` writes.
- ``program``: ``_Program`` groups the entry point with its local modules and answers
  program-wide questions (is it built on the Hugging Face Trainer? does it import torch_xla?).
- ``files``: reading files and finding the local modules an import names.
- ``memo``: loaded programs and each rule's findings, remembered within the process while the
  files they were read from are unchanged (CI validates folders of specs sharing a script).
- ``libraries``: the libraries each absence rule knows (the severity policy below).
- ``rules/``: the rules, one module per family, each rule a generator over the program and the
  context: ``rules.xla`` (xla_spawn jobs), ``rules.environ`` (``os.environ``, GPU_NUM_DEVICES),
  ``rules.padding``, ``rules.amp`` (GradScaler order), ``rules.smp`` (model parallelism fp16),
  ``rules.smp_v1`` (SMP v1 basics), ``rules.launch`` (any multi-process launcher),
  ``rules.smddp``, ``rules.smp_v2`` (torch.sagemaker), ``rules.trainium``, ``rules.outputs``
  (SM_MODEL_DIR, spot checkpoints), ``rules.groups`` (heterogeneous clusters). A new check
  goes into the family's module (or a new module
  there) and into ``_RULES`` below.

A rule is a pure function of the program and the context, and reads the context by attribute
only (``memo`` hands it a recorder that notes what it reads, to remember its findings).

The rules are heuristics over names. They prefer silence to crying wolf: each one says which
patterns it accepts, and an expression it cannot read (``padding=args.padding``) is not a finding.

The severity policy, which every rule follows:

- Positive evidence (a call that is wrong in itself: ``os.environ["GPU_NUM_DEVICES"] = 4``,
  ``init_process_group("nccl")`` on Trainium, ``tsm.init()`` before the smddp group) may be an
  error: the job fails or trains wrongly whatever else the program does.
- A finding that rests on an absence ("never initialises the process group", "never calls
  ``smp.init()``", "never imports ``torch_smddp``", "no ``_mp_fn``") is an error only when the
  whole program is visible to that rule: every module it imports is the standard library, a
  library the rule knows (its table in ``libraries``, each entry with the source that shows what
  the library does), or a local module the checks read. Otherwise it is a warning that names what
  could not be seen (``megatron``, an unknown framework, the local modules the read budget left
  unread): a framework we have not heard of may do the missing thing itself. A local package that
  shadows an installed one (a ``megatron/`` folder in source_dir) is read like any local module,
  within the read budget.
- Frameworks verified to set up the process group themselves (Megatron's ``pretrain`` and
  ``initialize_megatron``, NeMo, Composer, Ray Train, Accelerate, DeepSpeed, Lightning, ...)
  are in ``libraries.PROCESS_GROUP_INITIALISERS``, each with its source line; a script that
  calls one has no finding at all.
"""

from __future__ import annotations

import functools
import gc
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from safe_estimators._script_checks import memo
from safe_estimators._script_checks.files import (
    _MAX_BYTES,
    _Budget,
    _display_name,
    _helper_name,
    _load,
    _local_imports,
    _local_top,
    _Reads,
    _real,
    _search_roots,
    _too_large,
)
from safe_estimators._script_checks.findings import Finding, ScriptContext
from safe_estimators._script_checks.program import _Program
from safe_estimators._script_checks.rules.amp import (
    _rule_amp_clip_before_unscale,
    _rule_amp_reduce_after_clip,
    _rule_amp_step_before_clip,
)
from safe_estimators._script_checks.rules.environ import _rule_environ_values
from safe_estimators._script_checks.rules.groups import _rule_group_not_detected
from safe_estimators._script_checks.rules.launch import (
    _rule_device_map_under_launcher,
    _rule_hard_coded_device,
    _rule_no_distributed_sampler,
    _rule_no_process_group,
    _rule_save_every_rank,
)
from safe_estimators._script_checks.rules.outputs import (
    _rule_model_outside_model_dir,
    _rule_spot_trainer_resume,
    _rule_spot_without_checkpoints,
)
from safe_estimators._script_checks.rules.padding import _rule_dynamic_padding
from safe_estimators._script_checks.rules.smddp import (
    _rule_smddp_job_uses_nccl,
    _rule_smddp_not_imported,
)
from safe_estimators._script_checks.rules.smp import (
    _rule_smp_clip,
    _rule_smp_loss_scale,
    _rule_smp_model_creation,
    _rule_smp_not_used,
    _rule_smp_scheduler,
    _rule_smp_set_device,
)
from safe_estimators._script_checks.rules.smp_v1 import (
    _rule_smp_no_distributed_model,
    _rule_smp_no_distributed_optimizer,
    _rule_smp_no_init,
    _rule_smp_no_step,
)
from safe_estimators._script_checks.rules.smp_v2 import (
    _rule_smp_v2_no_init,
    _rule_smp_v2_no_transform,
    _rule_smp_v2_offloading,
    _rule_smp_v2_removed_module,
    _rule_smp_v2_smddp_after_init,
    _rule_smp_v2_smddp_tp_only,
)
from safe_estimators._script_checks.rules.trainium import _rule_trainium_backend
from safe_estimators._script_checks.rules.xla import (
    _entry_not_python,
    _rule_data_sharded,
    _rule_device_loader,
    _rule_gradients_reduced,
    _rule_mark_step,
    _rule_mp_fn,
)
from safe_estimators._script_checks.summary import _Module, _parse

if TYPE_CHECKING:  # read only by jobs with model= (the memory estimate)
    from safe_estimators._script_checks.memory_facts import ScriptMemoryFacts

__all__ = [
    "Finding", "ScriptContext", "check_script", "check_source", "device_use", "script_memory_facts",
]

def check_script(
    entry_point: str | os.PathLike[str],
    context: ScriptContext,
    *,
    source_dir: str | os.PathLike[str] | None = None,
) -> list[Finding]:
    """Check a training script file against the job's configuration.

    ``entry_point`` is resolved relative to ``source_dir`` when one is given (SageMaker's
    convention). The local modules the entry point imports that live in ``source_dir`` or beside
    the entry point are parsed too, recursively, each once; a finding in one of them names that
    file. Nothing is imported or executed.

    Returns the findings sorted by file and line. A missing or unreadable entry point, a syntax
    error, or a file too large or too deeply nested to analyse each give one finding; this
    function does not raise on any file content.
    """
    path, given, base = _located(entry_point, source_dir)
    if path.suffix != ".py" and path.is_file():
        # SageMaker runs a non-.py entry point as a program (shell script, binary), not with
        # Python: nothing to parse. Under pytorchxla it is still wrong: xla_spawn imports it.
        if context.training_compiler and context.xla_distributed:
            return [_entry_not_python(_display_name(path, base, given), context)]
        return []
    with _gc_paused():
        return _check_files(path, given, base, context)


def check_source(
    source: str, context: ScriptContext, *, filename: str = "<script>"
) -> list[Finding]:
    """Run the same checks on a source string (no local modules are followed).

    Returns the findings sorted by line; never raises on any input text.
    """
    if len(source) > _MAX_BYTES:
        return [_too_large(filename, len(source))]
    with _gc_paused():
        return _check_text(source, filename, context)


# The work is done in these two functions, not in the `with` blocks above, so that the trees are
# freed (by reference counting) before the garbage collector is switched back on: see _gc_paused.


def _check_text(source: str, filename: str, context: ScriptContext) -> list[Finding]:
    module = _parse(source, filename, None)
    if isinstance(module, Finding):
        return [module]
    program = _Program([module])
    findings = [found for rule in _RULES for found in _run_rule(rule, program, context)]
    return sorted(findings, key=_order)


def _check_files(
    path: Path, given: Path, base: Path | None, context: ScriptContext
) -> list[Finding]:
    loaded = _loaded(path, given, base)
    findings = list(loaded.findings)
    if loaded.program is not None:
        findings.extend(memo.rule_findings(loaded, context, _RULES, _run_rule))
    return sorted(findings, key=_order)


def device_use(
    entry_point: str | os.PathLike[str], *, source_dir: str | os.PathLike[str] | None = None
) -> str | None:
    """How the script's one process uses several GPUs without a launcher: ``"device_map"``
    (``from_pretrained(..., device_map="auto")`` spreads the model over them), ``"data_parallel"``
    (``torch.nn.DataParallel``), ``"spawn"`` (``xmp.spawn``, ``torch.multiprocessing.spawn``, or a
    launcher it runs), or None (one GPU, or not readable). Never raises."""
    path, given, base = _located(entry_point, source_dir)
    if path.suffix != ".py":
        return _program_spawns(path)
    with _gc_paused():
        return _device_use(path, given, base)


def script_memory_facts(
    entry_point: str | os.PathLike[str],
    hyperparameters: Mapping[str, object],
    *,
    source_dir: str | os.PathLike[str] | None = None,
) -> ScriptMemoryFacts | None:
    """What the script does that the memory estimate counts (``memory_facts``: sharding,
    offload, checkpointing, precision, quantized loading, each with its line), run with
    ``hyperparameters``; None when the entry point is not a readable Python file. Never
    raises."""
    path, given, base = _located(entry_point, source_dir)
    if path.suffix != ".py":
        return None
    with _gc_paused():
        program = _loaded(path, given, base).program
        if program is None:
            return None
        from safe_estimators._script_checks.memory_facts import memory_facts

        try:
            return memory_facts(program, hyperparameters, base)
        except Exception:  # a bug in one reading must not block the job: today's caveat
            return None


def _located(
    entry_point: str | os.PathLike[str], source_dir: str | os.PathLike[str] | None
) -> tuple[Path, Path, Path | None]:
    """The entry point's path (relative to ``source_dir``, SageMaker's convention), as given,
    and ``source_dir``."""
    if isinstance(entry_point, str) and (source_dir is None or isinstance(source_dir, str)):
        return _located_names(entry_point, source_dir)
    return _paths(entry_point, source_dir)


# Many specs name the same script: their paths are parsed once.
@functools.lru_cache(maxsize=1024)
def _located_names(entry_point: str, source_dir: str | None) -> tuple[Path, Path, Path | None]:
    return _paths(entry_point, source_dir)


def _paths(
    entry_point: str | os.PathLike[str], source_dir: str | os.PathLike[str] | None
) -> tuple[Path, Path, Path | None]:
    given = Path(entry_point)
    base = Path(source_dir) if source_dir is not None else None
    return (base / given if base is not None else given), given, base


def _program_spawns(path: Path) -> str | None:
    """A shell entry point that runs a launcher itself, one process per GPU
    (``torchrun --nproc_per_node=32 ...``, as Neuron's ``neuron_parallel_compile`` examples do;
    ``accelerate launch --num_processes "$NUM_GPUS"``, ``deepspeed``, ``mpirun``, ``tune run``:
    ``shell.LAUNCHERS``): ``"spawn"``."""
    from safe_estimators._bounds import read_regular

    try:  # bounded and never blocking: an entry point may be a FIFO or a link to a device
        text = read_regular(path, _MAX_BYTES).decode("utf-8", "replace")
    except (OSError, ValueError):
        return None
    from safe_estimators._script_checks.shell import runs_launcher_per_device

    return "spawn" if runs_launcher_per_device(text) else None


def _device_use(path: Path, given: Path, base: Path | None) -> str | None:
    program = _loaded(path, given, base).program
    return None if program is None else program.device_use


def _loaded(path: Path, given: Path, base: Path | None) -> memo._Loaded:
    """``_load_program``'s result, remembered while the files it read are unchanged."""
    key = (os.path.abspath(path), os.fspath(given), None if base is None else os.path.abspath(base))
    loaded = memo.recall(key)
    if loaded is None:
        started = time.time()
        reads = _Reads()
        # Resolved for the search roots and the names in findings: a link among them may move.
        reads.add(path.parent)
        if base is not None:
            reads.add(base)
        shown = _display_name(path, base, given)
        program, findings = _load_program(path, shown, given, base, reads)
        loaded = memo.remember(key, reads, started, program, findings)
    return loaded


def _load_program(
    path: Path, shown: str, given: Path, base: Path | None, reads: _Reads
) -> tuple[_Program | None, list[Finding]]:
    """The entry point and the local modules it imports, and findings about unreadable ones;
    ``reads`` collects every path the result depends on."""
    roots = _search_roots(path, base)
    budget = _Budget()
    loaded = _load(path, shown, required=True, roots=roots, budget=budget, reads=reads)
    if isinstance(loaded, Finding):
        return None, [loaded]
    findings: list[Finding] = []
    modules = [loaded]
    # Helpers are named relative to source_dir, else beside the entry point as given.
    name_roots = [(_real(base), Path("."))] if base is not None else []
    name_roots.append((_real(path).parent, given.parent))
    seen = {_real(path)}
    queue = [loaded]
    unread: list[str] = []
    while queue:
        module = queue.pop(0)
        for candidate in _local_imports(module, roots, reads):
            real = _real(candidate)
            if real in seen:
                continue
            seen.add(real)
            # Named where it was found: a link is not followed to name its target.
            name = _helper_name(_real(candidate.parent) / candidate.name, name_roots)
            if budget.exhausted:
                unread.append(name)
                continue
            helper = _load(
                candidate, name, required=False, roots=roots, budget=budget, reads=reads
            )
            if isinstance(helper, Finding):
                findings.append(helper)
                unread.append(name)
                continue
            modules.append(helper)
            queue.append(helper)
    local_tops = _local_tops(modules, roots, reads)
    return _Program(modules, local_tops=local_tops, unread=tuple(unread)), findings


def _local_tops(modules: list[_Module], roots: list[Path], reads: _Reads) -> frozenset[str]:
    """The top-level names the program imports that Python finds in the search roots (a
    module, a package, or a namespace package's folder)."""
    tops = {name.partition(".")[0] for m in modules for name, _, lvl in m.raw_imports if not lvl}
    # A folder without __init__.py is a namespace package only where it holds a module the
    # program imports (a run's log folder named like a library shadows nothing).
    read = [_real(m.path) for m in modules if m.path is not None]
    return frozenset(
        top for top in tops if top and any(
            reads.is_file(r / f"{top}.py") or reads.is_file(r / top / "__init__.py")
            or (_local_top(r, top, reads) and any((r / top) in path.parents for path in read))
            for r in roots
        )
    )


# Every rule runs on every check; each gates itself on the job configuration first.
_Rule = Callable[[_Program, ScriptContext], Iterable[Finding]]

_RULES: tuple[_Rule, ...] = (
    _rule_mp_fn,
    _rule_mark_step,
    _rule_gradients_reduced,
    _rule_data_sharded,
    _rule_device_loader,
    _rule_environ_values,
    _rule_dynamic_padding,
    _rule_amp_clip_before_unscale,
    _rule_amp_step_before_clip,
    _rule_amp_reduce_after_clip,
    _rule_smp_model_creation,
    _rule_smp_scheduler,
    _rule_smp_clip,
    _rule_smp_loss_scale,
    _rule_smp_set_device,
    _rule_smp_not_used,
    _rule_smp_no_init,
    _rule_smp_no_step,
    _rule_smp_no_distributed_model,
    _rule_smp_no_distributed_optimizer,
    _rule_no_process_group,
    _rule_no_distributed_sampler,
    _rule_hard_coded_device,
    _rule_save_every_rank,
    _rule_device_map_under_launcher,
    _rule_smddp_not_imported,
    _rule_smddp_job_uses_nccl,
    _rule_smp_v2_no_init,
    _rule_smp_v2_no_transform,
    _rule_smp_v2_smddp_after_init,
    _rule_smp_v2_smddp_tp_only,
    _rule_smp_v2_offloading,
    _rule_smp_v2_removed_module,
    _rule_trainium_backend,
    _rule_model_outside_model_dir,
    _rule_spot_without_checkpoints,
    _rule_spot_trainer_resume,
    _rule_group_not_detected,
)


def _run_rule(rule: _Rule, program: _Program, context: ScriptContext) -> list[Finding]:
    """A script check that fails on a file is reported as a warning and the other checks still
    run: a bug in one heuristic never blocks a job."""
    findings: list[Finding] = []
    try:
        findings.extend(rule(program, context))
    except Exception as exc:  # a bug in one heuristic must not block the job
        findings.append(Finding(
            program.entry.file, 0, "warning", "checker-failed",
            f"the script check {rule.__name__.removeprefix('_rule_')} failed on this file "
            f"({type(exc).__name__}: {exc}); the other checks ran.",
            "report this to the safe_estimators maintainers with the script.",
        ))
    return findings


def _order(finding: Finding) -> tuple[str, int, str]:
    return (finding.file, finding.line, finding.rule)


@contextmanager
def _gc_paused() -> Iterator[None]:
    # ast.parse allocates hundreds of thousands of acyclic nodes; the cyclic collector scanning
    # them repeatedly costs about a third of the parse time and frees nothing. Re-enable it only
    # once the trees are gone: the first collection after re-enabling scans every object
    # allocated meanwhile, so switching it back on while a tree is alive just defers the cost.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
