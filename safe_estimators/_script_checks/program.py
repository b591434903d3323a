"""The program the rules look at: the entry point plus the local modules it imports.

``_Program`` answers program-wide questions (is it built on the Hugging Face Trainer? does it
import torch_xla? which calls step the optimizer, and is each step followed by a mark_step?).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator, Mapping
from functools import cached_property

from safe_estimators._problems import Severity
from safe_estimators._script_checks.findings import Finding
from safe_estimators._script_checks.libraries import INERT_NAMES, STANDARD_LIBRARY
from safe_estimators._script_checks.summary import (
    _Call,
    _dotted,
    _has_kwargs_unpacking,
    _is_const,
    _keyword,
    _Module,
)

# How far the mark_step search follows a helper function up to its callers.
_MAX_CALLER_DEPTH = 4

# Names the program-wide questions look for. Facts are data: a new spelling is one entry here
# (names only one rule looks for sit beside that rule).
_XM = "torch_xla.core.xla_model"
# Packages whose `*Trainer` runs the loop itself: data sharding, device loader, optimizer step.
# NeMo's trainers (`nemo...NLPTrainer`, the Neuron NeMo-Megatron port's too) are Lightning
# Trainers: Lightning's strategy sets up the process group and the sampler.
_TRAINER_PACKAGES = frozenset(
    {"transformers", "trl", "optimum", "setfit", "lightning", "pytorch_lightning", "nemo"}
)
# Calls that run another program: (module prefixes, and the call names that can be one).
_PROGRAM_RUNNERS = ("subprocess.", "os.system", "os.exec", "os.spawn", "runpy.", "os.popen")
_PROGRAM_RUNNER_TAILS = frozenset({
    "run", "call", "check_call", "check_output", "Popen", "system", "popen", "run_path",
    "run_module", "execv", "execvp", "execvpe", "execl", "execlp", "spawnv", "spawnl",
})  # fmt: skip
# Shell utilities a script runs for logs and housekeeping, never to train: a runner call whose
# command visibly starts with one of them does not hide the training in another program (AWS's
# SMP v2 example scripts grep their NCCL test log through subprocess.Popen).
_UTILITIES = frozenset({
    "grep", "nvidia-smi", "ls", "cat", "df", "du", "free", "hostname", "nproc", "echo", "mkdir",
    "rm", "cp", "mv", "ln", "chmod", "tar", "find", "head", "tail", "wc", "ps", "which",
    "pip", "pip3", "nvcc", "lscpu", "uname", "date", "sync",
})  # fmt: skip
# Hugging Face `device_map` values that spread one process's model over every visible GPU
# (Accelerate's big-model loading: transformers `from_pretrained`, `accelerate.dispatch_model`);
# a dict or a per-process index puts the model on one device.
_SPREADING_DEVICE_MAPS = frozenset({"auto", "balanced", "balanced_low_0", "sequential"})
_DATA_PARALLEL = frozenset({"torch.nn.DataParallel", "torch.nn.parallel.DataParallel"})
# Packages whose `*Trainer` prepares the model with Accelerate.
_ACCELERATE_TRAINER_PACKAGES = frozenset({"transformers", "trl"})
# Calls that start one worker per device from inside the script (torch_xla's xmp.spawn uses every
# NeuronCore or GPU of the host: AWS Neuron docs, "Distributed Data Parallel Training Tutorial").
_SPAWNERS = frozenset({
    "torch_xla.distributed.xla_multiprocessing.spawn", "torch.multiprocessing.spawn",
})  # fmt: skip
# What a script that runs another program passes to the launcher it runs (torchrun, `tune run`,
# accelerate's launcher; a shell entry point is read command by command: shell.LAUNCHERS).
_LAUNCHER_OPTIONS = (
    "--nproc_per_node", "--nproc-per-node", "accelerate launch", "accelerate.commands.launch",
    "--num_processes", "--multi_gpu", "mpirun",
)
# Besides any `*.mark_step()` call (xm.mark_step, a from-import, a re-export).
_MARK_STEP_NAMES = frozenset({f"{_XM}.mark_step", "torch_xla.sync"})
_REDUCE_TAILS = frozenset({"reduce_gradients", "all_reduce"})
# Constructors whose result is an optimizer, besides anything under torch.optim.
_OPTIMIZER_TAILS = frozenset({"AdamW", "Adafactor", "FusedAdam", "FusedLAMB", "Lamb", "LAMB"})


class _Program:
    def __init__(
        self,
        modules: list[_Module],
        *,
        local_tops: frozenset[str] = frozenset(),
        unread: tuple[str, ...] = (),
    ) -> None:
        self.entry = modules[0]
        self.modules = modules
        # Top-level names of the imports that resolved to local files (read or not), and the
        # local modules the checks could not read (the read budget, unreadable files).
        self.local_tops = local_tops
        self.unread = unread
        self._mark_cache: dict[tuple[int, int], tuple[tuple[int, int], set[int]]] = {}

    def calls(self) -> Iterator[tuple[_Module, _Call]]:
        for module in self.modules:
            for call in module.calls:
                yield module, call

    @cached_property
    def by_tail(self) -> dict[str, list[tuple[_Module, _Call]]]:
        index: dict[str, list[tuple[_Module, _Call]]] = {}
        for module, call in self.calls():
            index.setdefault(call.tail, []).append((module, call))
        return index

    def find(self, *tails: str) -> list[tuple[_Module, _Call]]:
        return [hit for tail in tails for hit in self.by_tail.get(tail, ())]

    def imports(self, prefix: str) -> bool:
        return any(
            name == prefix or name.startswith(prefix + ".")
            for module in self.modules
            for name in module.imported
        )

    @cached_property
    def libraries(self) -> frozenset[str]:
        """Top-level names of what the program imports that is neither the standard library nor
        one of its local modules: ``{"torch", "megatron"}``."""
        names = set()
        for module in self.modules:
            for name, _, level in module.raw_imports:
                top = name.partition(".")[0]
                if not level and top and top not in STANDARD_LIBRARY:
                    names.add(top)
        return frozenset(names - self.local_tops - self.local_names)

    def unseen(
        self,
        known: Mapping[str, str],
        inert: Mapping[str, Mapping[str, str]] | None = None,
    ) -> list[str]:
        """What a rule that reports an absence cannot see into, given the libraries it
        ``known``s (a table of ``libraries``): the other libraries the program imports, unless
        it uses only names of them known not to act (``inert``: the absence rules pass
        ``libraries.INERT_NAMES``; None judges every library by its name), and the local modules
        left unread. Empty: the whole program is visible to that rule."""
        inert = inert or {}
        hidden = []
        for name in sorted(self.libraries):
            if name in known:
                continue
            if name not in inert:  # importing it may act: judged by its name alone
                hidden.append(name)
                continue
            acting = self.names_beyond(name, inert[name])
            if acting is not None:
                shown = ", ".join(f"{name}.{use}" for use in acting[:3])
                hidden.append(f"{name} ({shown})" if shown else name)
        if self.unread:
            shown = ", ".join(self.unread[:3]) + (", ..." if len(self.unread) > 3 else "")
            hidden.append(f"{len(self.unread)} local module(s) not read ({shown})")
        return hidden

    def names_beyond(self, library: str, names: Mapping[str, str]) -> list[str] | None:
        """The names of ``library`` the program uses that ``names`` does not cover (a name
        covers everything below it), sorted; None when it uses only covered names (or none:
        an import never used). ``[]`` when the library is used as a whole (``import x`` then
        ``f(x)``), or star-imported."""
        uses = self.library_uses.get(library, frozenset())
        beyond = sorted(use for use in uses if not _covered(use, names))
        if not beyond:
            return None
        return [use for use in beyond if use not in ("", "*")]

    @cached_property
    def library_uses(self) -> dict[str, frozenset[str]]:
        """Per library the program imports, the names of it the program uses, below the
        library's top-level name: ``{"torchvision": {"models.resnet50", "datasets"},
        "transformers": {"AutoConfig"}}``; ``""`` for the module itself used as a value,
        ``"*"`` for a star import."""
        libraries = self.libraries
        found: dict[str, set[str]] = {}
        for module in self.modules:
            for name, imported, level in module.raw_imports:
                top = name.partition(".")[0]
                if not level and top in libraries and "*" in imported:
                    found.setdefault(top, set()).add("*")
            for dotted in _used_names(module):
                top, _, rest = dotted.partition(".")
                if top in libraries:
                    found.setdefault(top, set()).add(rest)
        return {top: frozenset(uses) for top, uses in found.items()}

    def absence(self, known: Mapping[str, str], severity: Severity = "error") -> tuple[
        Severity, str
    ]:
        """The severity of a finding that rests on something missing, and what to add to its
        message: ``severity`` when the whole program is visible to the rule (``unseen`` with
        the names known not to act is empty), else a warning naming what the checks could not
        see."""
        hidden = self.unseen(known, INERT_NAMES)
        if not hidden:
            return severity, ""
        return "warning", (
            f" The checks cannot see into {', '.join(hidden)}, which may do it for the script: "
            "a warning, not an error."
        )

    def absent(
        self,
        known: Mapping[str, str],
        rule: str,
        message: str,
        hint: str,
        *,
        severity: Severity = "error",
        file: str | None = None,
        line: int = 0,
    ) -> Finding:
        """A finding that rests on something missing, judged by ``absence``; about the whole
        entry point unless ``file`` and ``line`` say where."""
        judged, unseen = self.absence(known, severity)
        return Finding(file or self.entry.file, line, judged, rule, message + unseen, hint)

    @cached_property
    def local_names(self) -> set[str]:
        """Module names of the program's local files (``helpers`` for helpers.py)."""
        names = set()
        for module in self.modules:
            stem = module.file.rpartition("/")[2].removesuffix(".py")
            names.add(stem if stem != "__init__" else module.file.rpartition("/")[0])
        return names

    def used(self, name: str) -> bool:
        """Some file names ``name`` beyond its import lines (a call, an assignment, a string or
        a comment): a name imported and never used is not a use."""
        for module in self.modules:
            count = module.text.count(name)
            if not count:
                continue
            imported = sum(
                1 for dotted, names, _ in module.raw_imports
                for part in (dotted, *names) if name in part
            )
            if count > imported:
                return True
        return False

    def mentions(self, text: str) -> bool:
        """Some file names ``text`` anywhere (code, string or comment): a reason to stay quiet."""
        return any(text in module.text for module in self.modules)

    @cached_property
    def runs_other_programs(self) -> bool:
        """It starts another script (subprocess, os.system, runpy): the training may be there,
        out of the checks' sight, so whole-file "never calls X" findings would be guesses."""
        return any(
            call.name.startswith(_PROGRAM_RUNNERS) and not _runs_a_utility(call)
            for _, call in self.calls() if call.tail in _PROGRAM_RUNNER_TAILS
        )

    @cached_property
    def device_use(self) -> str | None:
        """How one process of this program uses several GPUs: ``"device_map"`` (the model is
        spread over them), ``"data_parallel"`` (torch.nn.DataParallel replicates it),
        ``"spawn"`` (it starts a worker per device itself: xmp.spawn, torch.multiprocessing's
        spawn, or a launcher such as torchrun that it runs), ``"trainer"`` (the Hugging Face
        Trainer wraps the model in DataParallel over every GPU it sees: transformers
        ``Trainer._wrap_model`` when ``args.n_gpu > 1``, except 8-bit (recently also 4-bit)
        loaded models), or None."""
        if self.spreading_device_maps:
            return "device_map"
        found = None
        for _, call in self.calls():
            if call.name in _DATA_PARALLEL:
                found = found or "data_parallel"
            elif call.name in _SPAWNERS:
                found = found or "spawn"
        if found is None and self.runs_other_programs and any(
            self.mentions(option) for option in _LAUNCHER_OPTIONS
        ):
            return "spawn"
        if found is None and self.hugging_face_trainer and not self.quantized_loading:
            return "trainer"
        return found

    @cached_property
    def hugging_face_trainer(self) -> bool:
        """A Transformers or TRL ``*Trainer`` (or a subclass) trains the model."""
        names = [call.name for _, call in self.calls()]
        names += [b for module in self.modules for _, bases in module.class_bases for b in bases]
        return any(
            name.partition(".")[0] in _ACCELERATE_TRAINER_PACKAGES and name.endswith("Trainer")
            for name in names
        )

    @cached_property
    def quantized_loading(self) -> bool:
        """Some call loads weights in 8 or 4 bits (``load_in_8bit=True``, bitsandbytes): the
        Trainer does not wrap such a model in DataParallel."""
        return any(
            _is_const(_keyword(call.node, flag), True)
            for _, call in self.calls()
            for flag in ("load_in_8bit", "load_in_4bit")
        )

    @cached_property
    def spreading_device_maps(self) -> list[tuple[_Module, _Call]]:
        """Calls that load a model over every visible GPU (``device_map="auto"``, ...)."""
        return [
            (module, call)
            for module, call in self.calls()
            if (value := _keyword(call.node, "device_map")) is not None
            and self._spreading(module, value)
        ]

    @cached_property
    def accelerate_based(self) -> bool:
        """Hugging Face Accelerate prepares the model: ``accelerator.prepare`` in the script, or
        a Transformers or TRL ``*Trainer`` (the Trainer is built on Accelerate)."""
        return self.accelerate_prepared or self.hugging_face_trainer

    @staticmethod
    def _spreading(module: _Module, value: ast.expr) -> bool:
        # A literal, or a name whose every assignment in the file is one of those literals.
        if isinstance(value, ast.Name):
            assigned = module.assigns_by_target.get(value.id, [])
            return bool(assigned) and all(_spreading_literal(a.value) for a in assigned)
        return _spreading_literal(value)

    @cached_property
    def process_group_inits(self) -> list[tuple[_Module, _Call]]:
        """``torch.distributed.init_process_group(...)`` calls, however imported."""
        return self.find("init_process_group")

    @cached_property
    def trainer_based(self) -> bool:
        """Built on the Hugging Face Trainer, a subclass, or a similar framework trainer
        (Lightning): it handles sharding, the device loader, loss scaling and model parallelism
        itself."""
        local_trainers: set[str] = set()
        changed = True
        while changed:  # subclasses of subclasses
            changed = False
            for module in self.modules:
                for name, bases in module.class_bases:
                    if name not in local_trainers and any(
                        _is_framework_trainer(b) or b in local_trainers for b in bases
                    ):
                        local_trainers.add(name)
                        changed = True
        for _, call in self.calls():
            if _is_framework_trainer(call.name) or call.name in local_trainers:
                return True
            if call.tail == "train" and "trainer" in call.receiver.lower():
                return True
        return bool(local_trainers)

    @cached_property
    def accelerate_prepared(self) -> bool:
        """Hugging Face Accelerate wraps the optimizer and data loaders (reduction, sharding)."""
        return self.imports("accelerate") and bool(self.find("prepare"))

    @cached_property
    def optimizer_names(self) -> set[str]:
        return self._names_assigned_from(_is_optimizer_constructor)

    @cached_property
    def scaler_names(self) -> set[str]:
        return self._names_assigned_from(lambda name: name.endswith("GradScaler"))

    def _names_assigned_from(self, test: Callable[[str], bool]) -> set[str]:
        names: set[str] = set()
        for module in self.modules:
            for assign in module.assigns:
                if isinstance(assign.value, ast.Call) and test(
                    _dotted(assign.value.func, module.aliases)
                ):
                    names.add(assign.target.rpartition(".")[2])
        return names

    # What a call does, as far as the training-loop rules care.

    def is_scaler_call(self, call: _Call) -> bool:
        receiver = call.receiver
        return "scaler" in receiver.lower() or receiver in self.scaler_names

    def is_direct_step(self, call: _Call) -> bool:
        """``optimizer.step()`` or ``scaler.step(optimizer)``: an update with no all-reduce."""
        if call.tail != "step":
            return False
        receiver = call.receiver
        low = receiver.lower()
        if self.is_scaler_call(call):
            return True
        if "sched" in low:
            return False
        return "optim" in low or low == "opt" or receiver in self.optimizer_names

    @staticmethod
    def is_xla_step(call: _Call) -> bool:
        """``xm.optimizer_step(optimizer)``: all-reduce, then step."""
        return call.tail == "optimizer_step" and (
            call.name.startswith("torch_xla") or call.name == call.tail
        )

    def is_step(self, call: _Call) -> bool:
        return self.is_direct_step(call) or self.is_xla_step(call)

    def is_mark(self, call: _Call) -> bool:
        if call.name in _MARK_STEP_NAMES or call.tail == "mark_step":
            return True
        if self.is_xla_step(call):
            return _is_const(_keyword(call.node, "barrier", 1), True)
        return call.tail in self.marking_functions and not self.is_direct_step(call)

    def _marks_in_scope(self, module: _Module, scope: int) -> tuple[tuple[int, int], set[int]]:
        """Position of the last mark in a function, and the loops (by id) that hold a mark."""
        key = (id(module), scope)
        cached = self._mark_cache.get(key)
        if cached is None:
            last, loops = (0, -1), set()
            for call in module.calls_by_scope.get(scope, ()):
                if self.is_mark(call):
                    last = max(last, call.pos)
                    if call.loop is not None:
                        loops.add(id(call.loop))
            cached = self._mark_cache[key] = (last, loops)
        return cached

    @cached_property
    def marking_functions(self) -> set[str]:
        """Names of local functions that mark the step, directly or through other functions."""
        callers: dict[str, set[str]] = {}
        marked: set[str] = set()
        for module, call in self.calls():
            if call.scope == 0 or module.scope_names[call.scope] == "<lambda>":
                continue
            name = module.scope_names[call.scope]
            if call.name in _MARK_STEP_NAMES or call.tail == "mark_step":
                marked.add(name)
            callers.setdefault(call.tail, set()).add(name)
        work = list(marked)
        while work:
            for caller in callers.get(work.pop(), ()):
                if caller not in marked:
                    marked.add(caller)
                    work.append(caller)
        return marked

    def is_marked(self, module: _Module, step: _Call) -> bool:
        """A mark_step follows ``step``: later in its function, anywhere in the loop around it
        (the next iteration), or after a call to its function in some caller."""
        seen: set[tuple[int, int]] = set()
        todo = [(module, step, 0)]
        while todo:
            mod, call, depth = todo.pop()
            last, loops = self._marks_in_scope(mod, call.scope)
            if last > call.pos or (call.loop is not None and id(call.loop) in loops):
                return True
            if call.scope == 0 or depth >= _MAX_CALLER_DEPTH:
                continue
            name = mod.scope_names[call.scope]
            if name == "<lambda>" or (id(mod), call.scope) in seen:
                continue
            seen.add((id(mod), call.scope))
            for caller_mod, site in self.by_tail.get(name, ()):
                if site.scope != call.scope or caller_mod is not mod:
                    todo.append((caller_mod, site, depth + 1))
        return False


def _covered(use: str, names: Mapping[str, str]) -> bool:
    """``models.resnet50().cuda`` is covered by ``models``; ``AutoConfig.from_pretrained`` by
    ``AutoConfig``."""
    head = use
    while head:
        if head in names:
            return True
        cut = max(head.rfind("."), head.rfind("("))
        if cut <= 0:
            return False
        head = head[:cut]
    return False


def _used_names(module: _Module) -> Iterator[str]:
    """The dotted names, resolved through the imports, of every name and attribute chain the
    module reads: an attribute chain gives its whole name (``torchvision.models.resnet50``),
    not the name at its root."""
    aliases = module.aliases
    if not aliases:
        return
    roots: set[int] = set()
    chains: list[ast.Attribute] = []
    names: list[ast.Name] = []
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Attribute):
            chains.append(node)
            if isinstance(node.value, ast.Name):
                roots.add(id(node.value))
        elif isinstance(node, ast.Name) and node.id in aliases:
            names.append(node)
    for name in names:
        if id(name) not in roots:
            yield aliases[name.id]
    for chain in chains:
        dotted = _dotted(chain, aliases)
        if not dotted.startswith("?"):
            yield dotted


def _backend(call: _Call) -> str | None:
    """The backend an ``init_process_group`` call asks for: its constant, ``""`` when none is
    given (PyTorch's default, NCCL on GPUs), ``None`` when the expression cannot be read."""
    node = call.node
    value = _keyword(node, "backend", 0)
    if value is None:
        return None if _has_kwargs_unpacking(node) else ""
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return value.value.lower()
    return None


def _is_framework_trainer(name: str) -> bool:
    return name.partition(".")[0] in _TRAINER_PACKAGES and name.endswith("Trainer")


def _is_optimizer_constructor(name: str) -> bool:
    if name.startswith("torch.optim.lr_scheduler"):
        return False
    tail = name.rpartition(".")[2]
    return name.startswith("torch.optim.") or tail.endswith("Optimizer") or tail in _OPTIMIZER_TAILS


def _is_torch_clip(call: _Call, tails: frozenset[str]) -> bool:
    # Only torch's own functions: accelerator.clip_grad_norm_ unscales by itself, and
    # optimizer.clip_master_grads is the fix, not the problem.
    return call.tail in tails and (call.name.startswith("torch.") or call.name == call.tail)


def _runs_a_utility(call: _Call) -> bool:
    """The command (a string, an f-string or a list) visibly runs shell utilities only: every
    command of a shell line (``grep x log | head``) starts with one. ``env`` is not one: it
    starts the program that follows it."""
    command = call.node.args[0] if call.node.args else _keyword(call.node, "args")
    if isinstance(command, ast.List | ast.Tuple):
        first = command.elts[0] if command.elts else None
        return isinstance(first, ast.Constant) and _utility(first.value)
    if isinstance(command, ast.JoinedStr):  # a placeholder stands for an unknown word
        text = "".join(
            v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else " {} "
            for v in command.values
        )
    elif isinstance(command, ast.Constant) and isinstance(command.value, str):
        text = command.value
    else:
        return False
    commands = [part.split() for part in _SHELL_SEPARATORS.split(text)]
    commands = [words for words in commands if words]
    return bool(commands) and all(_utility(words[0]) for words in commands)


# What separates the commands of a shell line: pipes, lists, subshells, substitutions.
_SHELL_SEPARATORS = re.compile(r"\|\||&&|[|;&`()]|\$\(")


def _utility(word: object) -> bool:
    return isinstance(word, str) and word.rpartition("/")[2] in _UTILITIES


def _spreading_literal(value: ast.expr) -> bool:
    return isinstance(value, ast.Constant) and value.value in _SPREADING_DEVICE_MAPS
