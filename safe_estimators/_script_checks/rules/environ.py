"""Rule for ``os.environ`` writes: values must be strings, and GPU_NUM_DEVICES must match the
instance's GPUs."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Literal

from safe_estimators._script_checks.findings import Finding, ScriptContext
from safe_estimators._script_checks.program import _Program
from safe_estimators._script_checks.summary import _clip, _dotted, _src


def _rule_environ_values(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    """``os.environ[...] = 4`` raises TypeError (str expected); GPU_NUM_DEVICES must match.

    Non-strings recognised: non-str constants (4, 4.0, True, None, b"4"), and calls that return
    an int (``int(...)``, ``len(...)``, ``*.device_count()``). Other expressions are not read.
    """
    gpus = context.gpus_per_instance
    for module in program.modules:
        for write in module.env_writes:
            kind, text = _env_value(write.value)
            gpu_key = write.key == "GPU_NUM_DEVICES"
            if kind == "not-str":
                if gpu_key:
                    hint = f'use the string "{gpus}"' if gpus else "use a string"
                    if context.xla_distributed:
                        hint += ", or drop the line: with pytorchxla the container sets it itself"
                else:
                    hint = "use a string (wrap the value in str())"
                yield Finding(
                    module.file, write.line, "error",
                    "gpu-num-devices-not-str" if gpu_key else "environ-not-str",
                    f"`{write.code}` sets {write.key} to {text}: environment values must be "
                    "strings, so this line raises TypeError (str expected) and the job fails "
                    "before training starts.",
                    hint + ".",
                )
            elif (
                kind == "str"
                and gpu_key
                and context.training_compiler
                and gpus is not None
                and _as_int(text) != gpus
            ):
                what = "" if _as_int(text) is not None else " (not a whole number)"
                yield Finding(
                    module.file, write.line, "error", "gpu-num-devices-mismatch",
                    f"`{write.code}` sets GPU_NUM_DEVICES to \"{text}\"{what} but each instance "
                    f"has {gpus} GPUs: torch_xla needs the number of GPUs it can use, and fails "
                    "(\"Missing XLA configuration\") or leaves GPUs idle otherwise.",
                    f'remove the line (the job sets GPU_NUM_DEVICES to "{gpus}") or set it to '
                    f'"{gpus}".',
                )


def _env_value(node: ast.expr) -> tuple[Literal["str", "not-str", "unknown"], str]:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, str):
            return "str", node.value
        return "not-str", f"the {type(node.value).__name__} {_clip(repr(node.value))}"
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.operand, ast.Constant)
        and isinstance(node.operand.value, int | float | complex)
    ):
        return "not-str", f"the number {_src(node)}"
    if isinstance(node, ast.Call):
        name = _dotted(node.func, None)
        tail = name.rpartition(".")[2]
        if name == "str" and len(node.args) == 1 and isinstance(node.args[0], ast.Constant):
            return "str", str(node.args[0].value)
        if name in ("int", "len") or tail == "device_count":
            return "not-str", f"an int (`{name}(...)`)"
    return "unknown", ""


def _as_int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None
