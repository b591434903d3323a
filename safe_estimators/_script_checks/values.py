"""Following a value through the program, within what is cheap and bounded.

``_Values.of`` reads what an expression holds when the script runs, or ``UNKNOWN``: constants,
containers of them, names through their last assignment before the use, ``os.path.join`` and
f-strings, and the script's command-line options. SageMaker passes each hyperparameter to the
entry point as ``--name value``, so an option the script declares with argparse
(``parser.add_argument("--fsdp", default=...)``) holds the job's hyperparameter of that name,
else its default. ``os.environ`` reads hold values the checks do not know (``UNKNOWN``), except
where the caller says which variables SageMaker sets.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from functools import cached_property
from typing import Any

from safe_estimators._script_checks.program import _Program
from safe_estimators._script_checks.summary import _Call, _dotted, _keyword, _Module


class _Unknown:
    """What an expression holds is decided at run time."""

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()

# How many assignments and calls a value is followed through.
_MAX_DEPTH = 8
_JOINS = frozenset({"os.path.join", "posixpath.join"})
_ENV_READS = frozenset({"os.environ.get", "os.getenv"})


class _Option:
    """One argparse option: its default, and whether it is a flag (store_true/false)."""

    def __init__(self, call: _Call, module: _Module) -> None:
        self.module = module
        self.call = call
        self.default = _keyword(call.node, "default")
        action = _keyword(call.node, "action")
        self.flag = (
            action.value if isinstance(action, ast.Constant) and action.value in (
                "store_true", "store_false"
            ) else None
        )


class _Values:
    """The values of expressions in ``program`` for a job with ``hyperparameters``; ``environ``
    holds the environment variables whose value is known (SageMaker's SM_* folders)."""

    def __init__(
        self,
        program: _Program,
        hyperparameters: Mapping[str, object],
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.program = program
        self.hyperparameters = hyperparameters
        self.environ = environ or {}

    @cached_property
    def options(self) -> dict[str, _Option]:
        """The argparse options the program declares, by destination (``--model-dir`` ->
        ``model_dir``); also through ``HfArgumentParser`` is not modelled here."""
        found: dict[str, _Option] = {}
        for module, call in self.program.find("add_argument"):
            names = [a.value for a in call.node.args
                     if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            longs = [n for n in names if n.startswith("--")]
            dest = _keyword(call.node, "dest")
            if isinstance(dest, ast.Constant) and isinstance(dest.value, str):
                key = dest.value
            elif longs:
                key = longs[0][2:].replace("-", "_")
            else:
                continue
            found.setdefault(key, _Option(call, module))
        return found

    def option(self, name: str) -> object:
        """The value of the script's option ``name``: the hyperparameter, else the default."""
        if name in self.hyperparameters or name.replace("_", "-") in self.hyperparameters:
            value = self.hyperparameters.get(name, self.hyperparameters.get(name.replace("_", "-")))
            return _flag_value(value) if self.options.get(name) and self.options[
                name
            ].flag else value
        option = self.options.get(name)
        if option is None:
            return UNKNOWN
        if option.flag is not None:
            return option.flag == "store_false"
        if option.default is None:
            return None
        return self.of(option.module, option.call, option.default)

    def of(self, module: _Module, call: _Call, node: ast.AST | None, depth: int = 0) -> Any:
        """What ``node`` (an expression at ``call``) holds, or ``UNKNOWN``."""
        if node is None or depth > _MAX_DEPTH:
            return UNKNOWN
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Dict):
            if any(k is None for k in node.keys):
                return UNKNOWN
            return {
                self.of(module, call, k, depth + 1): self.of(module, call, v, depth + 1)
                for k, v in zip(node.keys, node.values, strict=True)
            }
        if isinstance(node, ast.List | ast.Tuple):
            return [self.of(module, call, e, depth + 1) for e in node.elts]
        if isinstance(node, ast.JoinedStr):
            parts = []
            for value in node.values:
                part = (
                    self.of(module, call, value.value, depth + 1)
                    if isinstance(value, ast.FormattedValue) else self.of(module, call, value)
                )
                if part is UNKNOWN:
                    return UNKNOWN
                parts.append(str(part))
            return "".join(parts)
        if isinstance(node, ast.Name):
            assigned = module.latest_value(node.id, call.scope, call.pos)
            return UNKNOWN if assigned is None else self.of(module, call, assigned, depth + 1)
        if isinstance(node, ast.Attribute):
            return self._attribute(module, call, node, depth)
        if isinstance(node, ast.Subscript):
            if _dotted(node.value, module.aliases) == "os.environ":
                key = self.of(module, call, node.slice, depth + 1)
                return self.environ.get(key, UNKNOWN) if isinstance(key, str) else UNKNOWN
            return UNKNOWN
        if isinstance(node, ast.Call):
            return self._call(module, call, node, depth)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            left = self.of(module, call, node.left, depth + 1)
            right = self.of(module, call, node.right, depth + 1)
            if isinstance(left, str) and isinstance(right, str):
                return left.rstrip("/") + "/" + right
        return UNKNOWN

    def _attribute(self, module: _Module, call: _Call, node: ast.Attribute, depth: int) -> Any:
        # args.fsdp, self.args.fsdp, script_args.model_dir: a parsed option, when the program
        # declares one of that name and the attribute is not assigned elsewhere.
        assigned = module.latest_value(_dotted(node, None), call.scope, call.pos)
        if assigned is not None:
            return self.of(module, call, assigned, depth + 1)
        if node.attr in self.options:
            return self.option(node.attr)
        # Enum members and module constants: ShardingStrategy.FULL_SHARD -> "FULL_SHARD".
        dotted = _dotted(node, module.aliases)
        if "(" not in dotted and "[" not in dotted and node.attr.isupper():
            return Symbol(node.attr)
        if dotted in ("torch.bfloat16", "torch.float16", "torch.half", "torch.float32"):
            return Symbol(node.attr)
        return UNKNOWN

    def _call(self, module: _Module, call: _Call, node: ast.Call, depth: int) -> Any:
        name = _dotted(node.func, module.aliases)
        if name in _JOINS:
            parts = [self.of(module, call, a, depth + 1) for a in node.args]
            if not parts or any(not isinstance(p, str) for p in parts):
                return UNKNOWN
            joined = parts[0]
            for part in parts[1:]:
                joined = part if part.startswith("/") else joined.rstrip("/") + "/" + part
            return joined
        if name in _ENV_READS and node.args:
            key = self.of(module, call, node.args[0], depth + 1)
            if isinstance(key, str) and key in self.environ:
                return self.environ[key]
            return UNKNOWN
        if name in ("str", "pathlib.Path", "Path", "os.path.abspath") and len(node.args) == 1:
            return self.of(module, call, node.args[0], depth + 1)
        return UNKNOWN


class Symbol(str):
    """A named constant the script refers to (``ShardingStrategy.FULL_SHARD``, ``torch.bfloat16``),
    by its last name."""

    __slots__ = ()


def _flag_value(value: object) -> object:
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return value
