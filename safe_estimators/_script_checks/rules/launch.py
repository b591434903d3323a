"""Rules for every multi-process launcher (torchrun, pytorchddp, SMDDP, MPI, SMP v1 and v2).

The launcher starts one copy of the script per GPU. Each copy must join the process group, read
its own share of the data, use its own GPU and leave saving to one rank; a script written for one
GPU does none of that, and still runs: N copies train N identical models side by side.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator

from packaging.version import InvalidVersion, Version

from safe_estimators._bounds import MAX_GUARD_STEPS
from safe_estimators._script_checks.findings import Finding, ScriptContext
from safe_estimators._script_checks.libraries import (
    DATA_SHARDERS,
    KNOWN_TO_PROCESS_GROUP_RULE,
    PROCESS_GROUP_INITIALISERS,
    TP_PLAN_KEYWORD,
)
from safe_estimators._script_checks.program import _Program
from safe_estimators._script_checks.summary import (
    _Call,
    _is_const,
    _keyword,
    _Module,
    _short,
    _src,
)

# A call to a function of the user's own whose body the checks cannot see (an installed helper
# package): `init_distributed_mode(args)`, `setup_dist()`, `ddp_setup()`. Taken as initialising.
_HELPER_INIT = re.compile(
    r"(init|setup|start).*(dist|ddp|fsdp|parallel)|(dist|ddp|fsdp|parallel).*(init|setup)",
    re.IGNORECASE,
)
# Names that shard the data without a DistributedSampler (HF datasets, webdataset, MosaicML
# streaming, Lightning Fabric, torchdata), mentioned anywhere.
# DistributedSampler counts when it is used, not when it is only imported.
_SHARDING_NAMES = (
    "split_dataset_by_node", "split_by_node", "StreamingDataset",
    "setup_dataloaders", "ShardingFilter", "sharding_filter", ".shard(",
)  # fmt: skip
# files[rank::world_size]: the script shards by hand.
_RANK_SLICE = re.compile(r"\[[\w.()\s]*rank[\w.()\s]*::", re.IGNORECASE)
# What an `if` around a save, or a decorator on its function, says when it picks one process.
# `should_save`: the Hugging Face TrainingArguments property, true on process zero only (local
# process zero with save_on_each_node; transformers, src/transformers/training_args.py).
_RANK_TEST = re.compile(
    r"rank|is_main|main_process|is_master|master_process|process_zero|is_leader|is_primary"
    r"|should_save",
    re.IGNORECASE,
)
# How far the rank-guard search follows a function up to its callers.
_MAX_CALLER_DEPTH = 3


def _processes(context: ScriptContext) -> str:
    """``16 processes (2 x ml.p4d.24xlarge, 8 GPUs each)``, for messages."""
    n, gpus = context.processes, context.gpus_per_instance
    if not n:
        return "one process per GPU"
    if gpus and context.instance_type and n % gpus == 0:
        return f"{n} processes ({n // gpus} x {context.instance_type}, {gpus} GPUs each)"
    return f"{n} processes"


def _launches_many(context: ScriptContext) -> bool:
    # Unknown count: the launcher was chosen to start several, so check.
    return context.multi_process is not False


def _rule_no_process_group(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    """A torch script under a multi-process launcher must initialise the process group, or use a
    framework that does (HF Trainer, accelerate, Lightning, DeepSpeed, SMP, Horovod)."""
    if not _launches_many(context) or not program.imports("torch"):
        return
    if context.launcher in ("smp-v1", "smp-v2"):
        return  # smp.init() / tsm.init() set it up; their own rules say when they are missing
    if program.trainer_based or program.mentions("init_process_group"):
        return
    if program.imports("mpi4py") or program.runs_other_programs:
        return  # it communicates through MPI itself / the training is in another program
    for _, call in program.calls():
        if any(
            call.name.startswith(p) and call.tail == t for p, t in PROCESS_GROUP_INITIALISERS
        ):
            return
        if _HELPER_INIT.search(call.tail):
            return
        if call.tail == "from_pretrained" and _keyword(call.node, TP_PLAN_KEYWORD) is not None:
            return
    severity, unseen = program.absence(
        KNOWN_TO_PROCESS_GROUP_RULE, "error" if context.multi_process else "warning"
    )
    yield Finding(
        program.entry.file, 0, severity, "no-process-group",
        f"the job's launcher ({context.launcher}) starts {_processes(context)}, but the script "
        "never initialises the process group (no `torch.distributed.init_process_group`, and no "
        "framework known to do it: the Hugging Face Trainer, Accelerate, Lightning, DeepSpeed, "
        "Megatron's pretrain, NeMo, Composer, Ray Train): each process trains its own copy of "
        "the model and their gradients are never combined, or the first torch.distributed call "
        f"fails.{unseen}",
        _TRAINIUM_INIT if _trainium(context) else _GPU_INIT,
    )


# The fixes for a missing process group. Trainium has no CUDA: its NeuronCores join through
# torch_xla's xla backend, on the XLA device (AWS Neuron docs, "Developer Guide for Training
# with PyTorch NeuronX", distributed training with torchrun).
_GPU_INIT = (
    "call `torch.distributed.init_process_group(backend=\"nccl\")` at start-up, then "
    "`torch.cuda.set_device(int(os.environ[\"LOCAL_RANK\"]))` and wrap the model in "
    "DistributedDataParallel or FSDP."
)
_TRAINIUM_INIT = (
    "`import torch_xla.distributed.xla_backend`, call "
    "`torch.distributed.init_process_group(\"xla\")` at start-up, put the model on "
    "`xm.xla_device()` and all-reduce the gradients (`xm.optimizer_step(optimizer)`), or "
    "use a trainer that does (optimum-neuron's NeuronTrainer, neuronx-distributed)."
)


def _trainium(context: ScriptContext) -> bool:
    return (context.instance_type or "").startswith("ml.trn")


def _rule_no_distributed_sampler(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    """Each process must read its own share of the data: a DistributedSampler, or a framework or
    dataset that shards by rank."""
    if not _launches_many(context) or context.launcher == "smp-v1":
        return  # SMP v1 pipeline/tensor ranks read the same batches: no rule to apply here
    if context.launcher == "smp-v2" and context.processes:
        model_ranks = (
            context.tensor_parallel_degree * context.context_parallel_degree
            * context.expert_parallel_degree
        )
        if context.processes <= model_ranks:
            return  # no data parallelism left: every rank reads the same data
    if program.trainer_based or program.accelerate_prepared:
        return
    if any(
        call.name.startswith(prefix) and call.tail == tail
        for _, call in program.calls() for prefix, tail in DATA_SHARDERS
    ):
        return  # the framework builds the training loaders, sharded by rank
    samplers = _distributed_samplers(program)
    if any(program.mentions(name) for name in _SHARDING_NAMES) or any(
        _RANK_SLICE.search(m.text) for m in program.modules
    ):
        return
    if any("IterableDataset" in base for m in program.modules for _, bases in m.class_bases
           for base in bases):
        return  # an iterable dataset of the script's own may shard by rank itself
    loaders = _loaders_without_sampler(program)
    if samplers is not None:
        # A DistributedSampler is used: only a training loader without one, beside samplers
        # that all serve evaluation data, is a finding.
        if not samplers or any(not _reads_as(label, _EVAL_WORDS) for label in samplers):
            return
        loaders = [(m, c, label) for m, c, label in loaders if _reads_as(label, _TRAIN_WORDS)]
    for module, call, _ in loaders:
        shuffled = _is_const(_keyword(call.node, "shuffle", 2), True)
        order = (
            "each shuffled on its own, so an epoch costs N times as much and every process "
            "sees every sample" if shuffled else "in the same order, so an epoch costs N "
            "times as much and the processes train on identical batches"
        )
        only_eval = (
            " (the script's DistributedSampler serves only the evaluation data)"
            if samplers else ", and nothing else in the script shards the data"
        )
        yield Finding(
            module.file, call.line, "warning", "no-distributed-sampler",
            f"`{_short(call)}` at line {call.line} has no DistributedSampler{only_eval}: each "
            f"of the {_processes(context)} reads the whole dataset, {order}.",
            "pass `sampler=DistributedSampler(dataset)` (and call `sampler.set_epoch(epoch)` "
            "each epoch), or shard the dataset by rank.",
        )
        return


# What names a loader or a sampler for evaluation, and for training (at the start of a word:
# `eval_ds`, `val_loader`, `test_set`, not `interval`).
_EVAL_WORDS = re.compile(r"(?<![a-z])(eval|val|test|dev|holdout)", re.IGNORECASE)
_TRAIN_WORDS = re.compile(r"(?<![a-z])train", re.IGNORECASE)


def _reads_as(label: str, words: re.Pattern[str]) -> bool:
    """``label`` (a variable name and the call's source) names that purpose and not the
    other one."""
    other = _TRAIN_WORDS if words is _EVAL_WORDS else _EVAL_WORDS
    return bool(words.search(label)) and not other.search(label)


def _label(module: _Module, call: _Call) -> str:
    """What a call's result is called and what it reads: ``eval_loader DataLoader(eval_ds)``."""
    targets = [a.target for a in module.assigns_by_value.get(id(call.node), ())]
    return " ".join([*targets, _text(call.node)])


def _distributed_samplers(program: _Program) -> list[str] | None:
    """The labels of the DistributedSampler calls, or None when the program never uses the
    name (an import alone, a comment or a docstring is not a use). A use that is not a call
    (a subclass, a name passed on) gives the label ``?``, which reads as neither purpose."""
    uses = [
        use for use in program.library_uses.get("torch", ())
        if use.rpartition(".")[2] == "DistributedSampler" or "DistributedSampler(" in use
    ]
    local = any(
        b.endswith("DistributedSampler") for m in program.modules for _, bases in m.class_bases
        for b in bases
    )
    if not uses and not local and not program.find("DistributedSampler"):
        return None
    labels = [
        _label(module, call) for module, call in program.find("DistributedSampler")
    ]
    return labels if labels and not local else [*labels, "?"]


def _loaders_without_sampler(program: _Program) -> list[tuple[_Module, _Call, str]]:
    found = []
    for module, call in program.find("DataLoader"):
        if not (call.name == "DataLoader" or call.name.startswith("torch.utils.data")):
            continue
        # DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, ...)
        if len(call.node.args) > 3 or any(
            kw.arg in ("sampler", "batch_sampler") or kw.arg is None for kw in call.node.keywords
        ):
            continue
        found.append((module, call, _label(module, call)))
    return found


def _rule_hard_coded_device(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    """``"cuda:0"``, ``.cuda(0)``, ``torch.device("cuda", 0)``: every process on the same GPU."""
    if not _launches_many(context) or _trainium(context):
        return
    if any(w.key == "CUDA_VISIBLE_DEVICES" for m in program.modules for w in m.env_writes):
        return  # one visible GPU per process: cuda:0 is the process's own
    found: dict[tuple[str, int], str] = {}
    for module, call in program.calls():
        what = _hard_coded(call, context)
        if what is not None:
            found.setdefault((module.file, call.line), what)
    for module in program.modules:
        for assign in module.assigns:
            # device = "cuda:0"; device = 0 where it is used as a device (`.to(device)`): a
            # bare number is also a device count (Lightning's `devices=1`, a CPU branch's 1).
            value = _unless(assign.value)
            if "device" in assign.target.lower() and _is_cuda_index(value) and (
                (isinstance(value, ast.Constant) and isinstance(value.value, str))
                or _used_as_device(module, assign.target)
            ) and not _in_cpu_fallback(module, assign.pos[0]):
                line = assign.pos[0]
                found.setdefault((module.file, line), f"`{assign.target} = {_src(assign.value)}`")
    for (file, line), what in found.items():
        yield Finding(
            file, line, "warning", "hard-coded-device",
            f"{what} at line {line} puts every one of the {_processes(context)} on the "
            "same GPU: they run out of memory there, or share one GPU while the others idle.",
            "use the process's own GPU: `local_rank = int(os.environ[\"LOCAL_RANK\"])`, "
            "`torch.cuda.set_device(local_rank)`, then `torch.device(\"cuda\", local_rank)`.",
        )


# Calls whose first argument, and keywords whose value, is a device.
_DEVICE_TAKERS = frozenset({"to", "cuda", "set_device", "device"})
_DEVICE_KEYWORDS = frozenset({"device", "map_location", "device_ids", "output_device"})


def _used_as_device(module: _Module, target: str) -> bool:
    """``target`` (a name or ``self.device``) is passed where a device goes: ``.to(target)``,
    ``.cuda(target)``, ``torch.device("cuda", target)``, ``set_device(target)``,
    ``device=target``."""
    for call in module.calls:
        node = call.node
        args = node.args if call.tail in _DEVICE_TAKERS else []
        values = [*args, *(kw.value for kw in node.keywords if kw.arg in _DEVICE_KEYWORDS)]
        if any(_src(value) == target for value in values):
            return True
    return False


def _in_cpu_fallback(module: _Module, line: int) -> bool:
    """``line`` is in the ``else`` of ``if torch.cuda.is_available():``, which never runs on a
    GPU job (NeMo's ``device = 1`` there is Lightning's CPU device count)."""
    for node in ast.walk(module.tree):
        if (
            isinstance(node, ast.If) and node.orelse
            and node.orelse[0].lineno <= line <= (node.orelse[-1].end_lineno or 0)
            and "cuda.is_available" in _src(node.test)
        ):  # fmt: skip
            return True
    return False


def _unless(node: ast.expr | None) -> ast.expr | None:
    """``"cuda:0" if torch.cuda.is_available() else "cpu"`` -> ``"cuda:0"``."""
    return node.body if isinstance(node, ast.IfExp) else node


def _is_cuda_index(node: ast.expr | None) -> bool:
    """``0`` or ``"cuda:0"`` (any index): a device that is the same in every process."""
    if isinstance(node, ast.Constant):
        value = node.value
        if type(value) is int:
            return True
        return isinstance(value, str) and re.fullmatch(r"cuda:\d+", value.strip()) is not None
    return False


def _hard_coded(call: _Call, context: ScriptContext) -> str | None:
    node = call.node
    tail = call.tail
    if tail == "cuda" and _is_cuda_index(_keyword(node, "device", 0)):
        return f"`{_src(node)}`"
    if tail == "device" and call.name in ("torch.device", "device"):
        first, index = _unless(_keyword(node, "type", 0)), _keyword(node, "index", 1)
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            if first.value.startswith("cuda:") and _is_cuda_index(first):
                return f"`{_src(node)}`"
            if first.value == "cuda" and isinstance(index, ast.Constant) and type(
                index.value
            ) is int:
                return f"`{_src(node)}`"
        return None
    if tail == "set_device" and "cuda" in call.name:
        # Under SMP v1 the smp-set-device rule reports this one.
        if context.launcher != "smp-v1" and _is_cuda_index(_keyword(node, "device", 0)):
            return f"`{_src(node)}`"
        return None
    for arg in map(_unless, node.args) if tail == "to" else ():
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and _is_cuda_index(arg):
            return f"`{_short(call)}` with {arg.value!r}"
    for kw in node.keywords:
        if kw.arg in ("device", "map_location") and isinstance(kw.value, ast.Constant) and (
            isinstance(kw.value.value, str) and _is_cuda_index(kw.value)
        ):
            return f"`{kw.arg}={kw.value.value!r}` in `{_short(call)}`"
    return None


def _rule_save_every_rank(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    """``torch.save`` / ``save_pretrained`` must run in one process (a rank guard around it)."""
    if not _launches_many(context):
        return
    budget = [MAX_GUARD_STEPS]  # statements left to inspect for rank tests, all saves together
    for module, call in program.find("save", "save_pretrained"):
        if call.tail == "save":
            if call.name != "torch.save":
                continue
            target = _keyword(call.node, "f", 1)
        else:
            if _keyword(call.node, "is_main_process") is not None:
                continue
            target = _keyword(call.node, "save_directory", 0)
        if target is not None and _names_rank(target, module, call):
            continue  # one file per rank, on purpose
        if _guarded(program, module, call, 0, set(), budget):
            continue
        if context.processes == 2 and _in_main_process_first(module, call):
            continue  # the main process saves, then the other: one after the other, not at once
        yield Finding(
            module.file, call.line, "warning", "save-on-every-rank",
            f"`{_short(call)}` at line {call.line} runs in every one of the "
            f"{_processes(context)}, with no rank check around it: they all write the same "
            "files at once, which can leave a truncated or mixed file behind.",
            "save from one process: `if torch.distributed.get_rank() == 0:` (for FSDP, gather "
            "the full state dict on every rank first, then save on rank 0).",
        )


def _names_rank(target: ast.expr, module: _Module, call: _Call) -> bool:
    """The destination mentions the rank, itself or through a variable assigned before the
    save (``name = f"rank_{smp.rank()}_" + x`` then ``os.path.join(folder, name)``)."""
    return _says(target, module, call, lambda text: "rank" in text.lower())


def _says(
    node: ast.expr, module: _Module, call: _Call, test: Callable[[str], object]
) -> bool:
    """``test`` holds for the source of ``node``, or of the value a name in it was last
    assigned before ``call``."""
    if test(_text(node)):
        return True
    for name in ast.walk(node):
        if isinstance(name, ast.Name):
            value = module.latest_value(name.id, call.scope, call.pos)
            if value is not None and test(_text(value)):
                return True
    return False


def _text(node: ast.AST) -> str:
    """The whole source of ``node``: ``_src`` clips long expressions for messages, and a rank
    test at the end of a long condition must still be seen."""
    try:
        return ast.unparse(node)
    except (RecursionError, ValueError):  # absurd nesting
        return ""


def _guarded(
    program: _Program,
    module: _Module,
    call: _Call,
    depth: int,
    seen: set[tuple[int, int]],
    budget: list[int],
) -> bool:
    """A rank test decides whether ``call`` runs: an enclosing ``if``, an early return before
    it, a decorator on its function, or every caller of its function being guarded. Where the
    callers cannot be found, or the budget of statements to inspect is spent, it counts as
    guarded (quiet)."""
    scope = module.scopes[call.scope]
    if isinstance(scope, ast.Lambda):
        return True
    if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef) and any(
        _RANK_TEST.search(_text(d)) for d in scope.decorator_list
    ):
        return True
    body = scope.body if isinstance(scope, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef) \
        else []
    if _guarded_in(body, module, call, budget):
        return True
    if not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    key = (id(module), call.scope)
    if depth >= _MAX_CALLER_DEPTH or key in seen:
        return True
    seen.add(key)
    callers = [
        (m, c) for m, c in program.by_tail.get(scope.name, ())
        if _calls_local(c, scope.name, program) and not (m is module and c.scope == call.scope)
    ]
    if not callers:
        return True
    return all(_guarded(program, m, c, depth + 1, seen, budget) for m, c in callers)


def _in_main_process_first(module: _Module, call: _Call) -> bool:
    """``call`` runs inside ``with ....main_process_first(...):`` (Hugging Face
    TrainingArguments, Accelerate): the main process runs the block first while the others wait
    at a barrier, then the others run it together."""
    scope = module.scopes[call.scope]
    body = getattr(scope, "body", None)
    while isinstance(body, list) and body:
        stmt = next((s for s in body if s.lineno <= call.line <= (s.end_lineno or s.lineno)), None)
        if stmt is None:
            return False
        if isinstance(stmt, ast.With | ast.AsyncWith) and any(
            "main_process_first" in _src(item.context_expr) for item in stmt.items
        ):
            return True
        body = _inner_block(stmt, call.line)
    return False


def _calls_local(call: _Call, name: str, program: _Program) -> bool:
    """``name(...)``, ``self.name(...)`` or ``helpers.name(...)``: not ``torch.save`` for a
    local ``save``."""
    head = call.name.rpartition(".")[0]
    return call.name == name or head in ("self", "cls") or head in program.local_names


def _guarded_in(body: list[ast.stmt], module: _Module, call: _Call, budget: list[int]) -> bool:
    """Walk down the statements that contain the call, looking for a rank test on the way."""
    line = call.line
    while body:
        for stmt in body:
            budget[0] -= 1
            if budget[0] < 0:
                return True  # spent (MAX_GUARD_STEPS): quiet rather than a guess
            if stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno):
                break
            if _is_early_exit(stmt, module, call):
                return True
        else:
            return False
        if isinstance(stmt, ast.If | ast.While) and _tests_rank(stmt.test, module, call):
            return True
        body = _inner_block(stmt, line)
    return False


def _tests_rank(test: ast.expr, module: _Module, call: _Call) -> bool:
    """The condition names the rank, itself or through a variable assigned before the call
    (``is_root = xm.is_master_ordinal(local=False)``, then ``if is_root and ...:``)."""
    return _says(test, module, call, _RANK_TEST.search)


def _is_early_exit(stmt: ast.stmt, module: _Module, call: _Call) -> bool:
    """``if rank != 0: return`` (or continue, break, raise) before the save."""
    return (  # the shape first: reading the condition costs far more
        isinstance(stmt, ast.If)
        and bool(stmt.body)
        and isinstance(stmt.body[-1], ast.Return | ast.Continue | ast.Break | ast.Raise)
        and _tests_rank(stmt.test, module, call)
    )


def _inner_block(stmt: ast.stmt, line: int) -> list[ast.stmt]:
    blocks: list[list[ast.stmt]] = []
    for field in ("body", "orelse", "finalbody"):
        value = getattr(stmt, field, None)
        if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
            blocks.append(value)
    for handler in getattr(stmt, "handlers", ()):
        blocks.append(handler.body)
    for case in getattr(stmt, "cases", ()):
        blocks.append(case.body)
    for block in blocks:
        if block[0].lineno <= line <= (block[-1].end_lineno or block[-1].lineno):
            return block
    return []


# Accelerate's `prepare` refuses a model whose device_map spans several devices in any
# distributed mode (accelerate/accelerator.py, `verify_device_map`; since Accelerate 0.22.0,
# PR #1810), and the Hugging Face Trainer prepares its model with Accelerate. The Hugging Face
# training containers ship Accelerate 0.19.0 with transformers 4.28 (PyTorch 2.0) and 0.26.0
# with transformers 4.36 (PyTorch 2.1; aws/deep-learning-containers, huggingface/pytorch/
# training/docker/*/Dockerfile.gpu): from 4.36 the job fails, below it (or with the version
# unknown) the finding is a warning.
_ACCELERATE_REFUSES_FROM = Version("4.36")
_DATA_PARALLEL_LAUNCHERS = frozenset({"torchrun", "pytorchddp", "smddp", "mpi"})


def _rule_device_map_under_launcher(
    program: _Program, context: ScriptContext
) -> Iterator[Finding]:
    """``device_map="auto"`` spreads a process's model over every GPU it sees; a launcher that
    starts several processes gives each one all of them."""
    if context.launcher not in _DATA_PARALLEL_LAUNCHERS or not _launches_many(context):
        return
    if (context.gpus_per_instance or 0) <= 1 or not program.spreading_device_maps:
        return
    module, call = program.spreading_device_maps[0]
    refused = _accelerate_refuses(program, context)
    effect = (
        "Accelerate, with which the Hugging Face Trainer prepares the model, refuses a model "
        "spread over several devices in distributed mode, so the job stops before its first "
        "step (\"You can't train a model that has been loaded with device_map='auto' in any "
        "distributed mode\")."
        if refused
        else "each process loads its own copy spread over the same GPUs: with Accelerate (the "
        "Hugging Face Trainer) the job stops before its first step, and without it the copies "
        "train independently in the GPUs' shared memory."
    )
    yield Finding(
        module.file, call.line, "error" if refused else "warning", "device-map-under-launcher",
        f"`{_short(call)}` at line {call.line} spreads the model over every GPU of the instance "
        f"(device_map), but the job's launcher ({context.launcher}) starts "
        f"{_processes(context)}: {effect}",
        "put each process's model on its own GPU: device_map={'': int(os.environ['LOCAL_RANK'])} "
        "(or no device_map); or remove the launcher, to keep one process that spreads the model "
        "over the GPUs.",
    )


def _accelerate_refuses(program: _Program, context: ScriptContext) -> bool:
    if context.accelerate_device_map_bypass or not program.accelerate_based:
        return False
    try:
        return Version(context.transformers_version or "") >= _ACCELERATE_REFUSES_FROM
    except InvalidVersion:
        return False
