"""Rule for Training Compiler and padding: pad to a fixed length, not to each batch's longest
sequence."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from safe_estimators._script_checks.findings import Finding, ScriptContext
from safe_estimators._script_checks.program import _Program
from safe_estimators._script_checks.summary import (
    _has_kwargs_unpacking,
    _is_const,
    _keyword,
    _short,
    _src,
)

# Hugging Face collators (and tokenizer.pad) that pad to the longest sequence by default;
# value = index of `padding` among the positional arguments.
_LONGEST_BY_DEFAULT = {
    "DataCollatorWithPadding": 1,
    "DataCollatorForTokenClassification": 1,
    "DataCollatorForSeq2Seq": 2,
}


def _rule_dynamic_padding(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    """Training Compiler recompiles for every new tensor shape; pad to a fixed length.

    Reported: ``padding=True`` / ``"longest"`` / ``PaddingStrategy.LONGEST`` in any call, and
    Hugging Face collators (and ``tokenizer.pad``) that pad to the longest sequence by default,
    unless the script pads to ``"max_length"`` somewhere (then the longest sequence is the max
    length). A tokenizer call without ``padding`` is not reported: texts grouped into fixed
    blocks (``run_mlm.py``) need none.
    """
    if not context.training_compiler:
        return
    pads_to_max = any(
        _padding_kind(kw.value) == "max_length"
        for _, call in program.calls()
        for kw in call.node.keywords
        if kw.arg == "padding"
    )
    for module, call in program.calls():
        default_index = _LONGEST_BY_DEFAULT.get(call.tail)
        if call.tail == "pad" and "tokenizer" in call.receiver.lower():
            default_index = 1
        value = _keyword(call.node, "padding", default_index)
        if value is not None:
            kind = _padding_kind(value)
            if kind != "longest":
                continue
            what, line = f"`padding={_src(value)}`", value.lineno
        elif default_index is not None and not pads_to_max and not _has_kwargs_unpacking(call.node):
            what, line = f"`{_short(call)}` (its default pads to the longest sequence)", call.line
        else:
            continue
        yield Finding(
            module.file, line, "warning", "dynamic-padding",
            f"{what} at line {line} pads each batch to its longest sequence, so tensor "
            "shapes change from batch to batch; Training Compiler recompiles the graph for every "
            "new shape, which can make training slower than without it.",
            'pad to a fixed length: `padding="max_length", max_length=<N>` (with '
            "`truncation=True`), in the tokenizer call or the collator.",
        )


def _padding_kind(node: ast.AST) -> str | None:
    if _is_const(node, True) or _is_const(node, "longest"):
        return "longest"
    if isinstance(node, ast.Attribute) and node.attr in ("LONGEST", "MAX_LENGTH"):
        return node.attr.lower()
    if _is_const(node, "max_length"):
        return "max_length"
    return None
