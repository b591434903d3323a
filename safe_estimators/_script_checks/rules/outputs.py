"""Rules for what a job leaves behind (every job): the model in SM_MODEL_DIR, checkpoints in the
checkpoint folder on spot jobs.

SageMaker uploads only ``/opt/ml/model`` (``SM_MODEL_DIR``) as model.tar.gz, and syncs only the
checkpoint folder with ``checkpoint_s3_uri``; anything else on the instance is gone with it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from safe_estimators._script_checks.findings import Finding, ScriptContext
from safe_estimators._script_checks.libraries import MODEL_SAVING_FUNCTIONS, MODEL_SAVING_METHODS
from safe_estimators._script_checks.program import _Program
from safe_estimators._script_checks.summary import (
    _Call,
    _dotted,
    _keyword,
    _Module,
    _short,
    _src,
)
from safe_estimators._script_checks.values import _Values

_MODEL_DIR = "/opt/ml/model"
# Spellings that reach the model folder, mentioned anywhere: then something may write there.
_MODEL_DIR_NAMES = ("SM_MODEL_DIR", _MODEL_DIR, "model_dir")
# The folders SageMaker's training toolkit names in the environment (sagemaker-training-toolkit,
# environment.py: SM_MODEL_DIR, SM_OUTPUT_DIR, SM_OUTPUT_DATA_DIR).
SAGEMAKER_ENVIRONMENT = {
    "SM_MODEL_DIR": "/opt/ml/model",
    "SM_OUTPUT_DIR": "/opt/ml/output",
    "SM_OUTPUT_DATA_DIR": "/opt/ml/output/data",
}
# Destinations that are not lost with the instance: SageMaker's own folders, S3.
_KEPT_PREFIXES = ("/opt/ml/", "s3://")


# Savers with save_pretrained that are not the model (a tokenizer in /tmp loses nothing that
# from_pretrained cannot fetch again).
_NOT_MODELS = ("token", "processor", "config", "feature_extractor")
_MODEL_WORDS = ("model", "state_dict", "net", "module")
# The call names that may save the model (libraries.MODEL_SAVING_*): the calls looked at.
_SAVE_TAILS = tuple(
    sorted({name.rpartition(".")[2] for name in MODEL_SAVING_FUNCTIONS}
           | {method for _, method in MODEL_SAVING_METHODS})
)


def _saver(program: _Program, call: _Call) -> tuple[int, str] | None:
    """Where a call that saves the model takes its destination (position, keyword), or None
    when the call saves no model. A library function counts by its resolved name, and when it
    may write any object (torch.save) the object must read as a model (``model.state_dict()``,
    ``{"model": ...}``); a method counts when the program imports its library (the tables in
    ``libraries``, each with its source), and not on a tokenizer or a config."""
    function = MODEL_SAVING_FUNCTIONS.get(call.name)
    if function is not None:
        position, keyword, saved, _ = function
        if saved is not None and not _reads_as_model(_keyword(call.node, saved, 0)):
            return None
        return position, keyword
    receiver = call.receiver.lower()
    if any(word in receiver for word in _NOT_MODELS):
        return None
    found = [
        (bool(word), position, keyword)
        for (library, method), (position, keyword, word, _) in MODEL_SAVING_METHODS.items()
        if method == call.tail and library in program.libraries and word in receiver
    ]
    if not found or (call.tail == "save" and not _reads_as_model(_keyword(call.node, "obj", 0))):
        return None  # accelerator.save(obj, f) writes any object, as torch.save does
    _, position, keyword = max(found, key=lambda hit: hit[0])  # a receiver word is surer
    return position, keyword


def _reads_as_model(written: ast.expr | None) -> bool:
    return written is not None and any(w in _src(written).lower() for w in _MODEL_WORDS)


def _rule_model_outside_model_dir(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    """The model is saved where SageMaker uploads it: the destination is followed through
    assignments, ``os.path.join``, f-strings, argparse defaults (or the hyperparameter of that
    name) and SageMaker's SM_* variables; a mention of the model folder quiets the rule only
    where some destination cannot be read."""
    values = _Values(program, dict(context.hyperparameters), SAGEMAKER_ENVIRONMENT)
    outside: list[tuple[_Module, _Call, str]] = []
    unread = False
    for module, call in program.find(*_SAVE_TAILS):
        saver = _saver(program, call)
        if saver is None:
            continue
        position, keyword = saver
        node = _keyword(call.node, keyword, position)
        path = values.of(module, call, node)
        if not isinstance(path, str) or not path:
            path = _path_prefix(node, module, call, 0)
        if path is None:
            unread = True
            continue
        if path.startswith(_KEPT_PREFIXES) or path.startswith(context.checkpoint_dir):
            return  # the model reaches a folder that outlives the instance
        outside.append((module, call, path))
    if not outside or (unread and _model_dir_read(program)):
        return
    module, call, path = outside[0]
    yield Finding(
        module.file, call.line, "warning", "model-outside-model-dir",
        f"`{_short(call)}` at line {call.line} writes the model to {path!r}, and nothing in "
        f"the script writes to SM_MODEL_DIR ({_MODEL_DIR}): SageMaker uploads only that "
        "folder, so the trained model is lost when the instance stops.",
        "save to `os.environ[\"SM_MODEL_DIR\"]` (for example "
        "`os.path.join(os.environ[\"SM_MODEL_DIR\"], \"model.pt\")`).",
    )


def _model_dir_read(program: _Program) -> bool:
    """Some code reads the model folder (a destination the checks could not follow may be it):
    a mention of SM_MODEL_DIR, /opt/ml/model or model_dir counts unless it is only the default
    of an argparse option that nothing reads (``parser.add_argument("--model-dir",
    default=os.environ["SM_MODEL_DIR"])`` and never ``args.model_dir``): the value, not the
    name."""
    for module in program.modules:
        text = module.text
        if not any(name in text for name in _MODEL_DIR_NAMES):
            continue
        lines = text.splitlines()
        for call in module.calls:
            if call.tail != "add_argument":
                continue
            first, last = call.node.lineno, call.node.end_lineno or call.node.lineno
            span = "\n".join(lines[first - 1 : last])
            if not any(name in span for name in _MODEL_DIR_NAMES):
                continue
            dest = _option_dest(call)
            if dest is None or _option_read(program, dest):
                return True
            lines[first - 1 : last] = [""] * (last - first + 1)
        if any(name in "\n".join(lines) for name in _MODEL_DIR_NAMES):
            return True
    return False


def _option_dest(call: _Call) -> str | None:
    """Where argparse stores an option: ``dest=``, else its first long name."""
    dest = _keyword(call.node, "dest")
    if isinstance(dest, ast.Constant) and isinstance(dest.value, str):
        return dest.value
    for arg in call.node.args:
        if isinstance(arg, ast.Constant) and str(arg.value).startswith("--"):
            return str(arg.value)[2:].replace("-", "_")
    return None


def _option_read(program: _Program, dest: str) -> bool:
    """Some code reads the parsed option: ``args.model_dir``, ``getattr(args, "model_dir")``,
    or the whole namespace as a mapping (``vars(args)``), which may hand it anywhere."""
    return any(
        f".{dest}" in module.text or f"'{dest}'" in module.text or f'"{dest}"' in module.text
        or "vars(" in module.text or "__dict__" in module.text
        for module in program.modules
    )


def _path_prefix(node: ast.expr | None, module: _Module, call: _Call, depth: int) -> str | None:
    """The constant start of a path expression, or None when it is not a readable constant:
    ``"/tmp/m.pt"``, ``f"/tmp/{name}"``, ``os.path.join("/tmp", x)``, ``Path("/tmp") / x``,
    or a variable assigned one of those."""
    if node is None or depth > 8:
        return None
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) and node.value else None
    if isinstance(node, ast.JoinedStr):
        first = node.values[0] if node.values else None
        return first.value if isinstance(first, ast.Constant) and isinstance(
            first.value, str
        ) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return _path_prefix(node.left, module, call, depth + 1)
    if isinstance(node, ast.Call) and node.args:
        name = _dotted(node.func, module.aliases)
        if name in ("os.path.join", "pathlib.Path", "Path", "os.path.abspath"):
            return _path_prefix(node.args[0], module, call, depth + 1)
        return None
    if isinstance(node, ast.Name):
        value = module.latest_value(node.id, call.scope, call.pos)
        return _path_prefix(value, module, call, depth + 3)
    return None


def _rule_spot_without_checkpoints(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    """A spot job restarts the script after an interruption: only the checkpoint folder
    survives it."""
    if not context.use_spot_instances or context.checkpoint_in_hyperparameters:
        return
    folder = context.checkpoint_dir.rstrip("/") or "/"
    if program.mentions(folder) or program.mentions("s3://"):
        return
    yield Finding(
        program.entry.file, 0, "warning", "spot-without-checkpoints",
        f"this is a spot job, but the script never reads or writes {context.checkpoint_dir}, the "
        "folder SageMaker syncs with checkpoint_s3_uri: when the spot instance is reclaimed, the "
        "job restarts the script from zero and the time trained so far is paid again.",
        f"save checkpoints to {context.checkpoint_dir} and resume from the latest one found "
        "there at start-up (the Hugging Face Trainer: `output_dir` there and "
        "`trainer.train(resume_from_checkpoint=get_last_checkpoint(output_dir))`).",
    )


# Trainer.train(resume_from_checkpoint=True) looks the last checkpoint up in output_dir and
# raises ValueError("No valid checkpoint found in output directory") when there is none
# (transformers, src/transformers/trainer.py, Trainer.train): on a spot job's first start the
# folder is empty.
_RESUME_FIX = (
    "`from transformers.trainer_utils import get_last_checkpoint`, then "
    "`last = get_last_checkpoint(args.output_dir) if os.path.isdir(args.output_dir) else None` "
    "and `trainer.train(resume_from_checkpoint=last)`, with output_dir in {folder}."
)


def _rule_spot_trainer_resume(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    """A spot job's Trainer resumes from the latest checkpoint it finds, and starts fresh when
    there is none: ``resume_from_checkpoint=True`` fails on the first start, no argument never
    resumes."""
    folder = context.checkpoint_dir.rstrip("/") or "/"
    if not context.use_spot_instances or not program.trainer_based:
        return
    if not (context.checkpoint_in_hyperparameters or program.mentions(folder)):
        return  # spot-without-checkpoints says what matters first
    values = _Values(program, dict(context.hyperparameters))
    trains = [(m, c) for m, c in program.find("train") if "trainer" in c.receiver.lower()]
    fix = _RESUME_FIX.format(folder=context.checkpoint_dir)
    never: tuple[_Module, _Call] | None = None
    for module, call in trains:
        node = _keyword(call.node, "resume_from_checkpoint", 0)
        value = values.of(module, call, node) if node is not None else None
        if value is True:
            yield Finding(
                module.file, call.line, "warning", "spot-resume-without-checkpoint",
                f"`{_short(call)}` at line {call.line} asks the Trainer to resume with "
                "resume_from_checkpoint=True, which raises \"No valid checkpoint found in output "
                "directory\" when output_dir holds none: on this spot job's first start it does "
                "not.",
                fix,
            )
            return
        if value in (None, False):
            never = never or (module, call)
        else:
            return  # a checkpoint path, or a value decided at run time: it may resume
    if never is not None:
        module, call = never
        yield Finding(
            module.file, call.line, "warning", "spot-trainer-never-resumes",
            f"`{_short(call)}` at line {call.line} never resumes (no resume_from_checkpoint): "
            f"when the spot instance is reclaimed, SageMaker restores {context.checkpoint_dir} "
            "and restarts the script, which trains again from step 0.",
            fix,
        )
