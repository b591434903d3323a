"""What the resolver produces: estimator keyword arguments plus a record of what was injected."""

from __future__ import annotations

import functools
from typing import Any

import attrs

from safe_estimators._bounds import MAX_PROBLEMS, markdown_code, markdown_text
from safe_estimators._secret_formats import mask_text


@attrs.frozen
class Injection:
    """One value safe_estimators set or changed on the user's behalf, and why.

    ``path`` is the dotted estimator argument (``environment.GPU_NUM_DEVICES``), ``value`` what it
    was set to, ``reason`` the fact that required it.
    """

    path: str
    value: Any
    reason: str

    def __str__(self) -> str:
        return f"{self.path} = {self.value!r}: {self.reason}"


@attrs.frozen
class Explanation:
    """What safe_estimators did to a job, attached to every estimator it builds.

    Read it as ``safe_estimators.explain(estimator)`` (or ``estimator.safe_estimators``): the
    values injected and why, the warnings raised, the parallel layout, the training image and,
    for a job given ``model=``, ``memory``: the per-accelerator ``MemoryEstimate``.
    In a notebook it renders as a table.
    """

    estimator: str
    instance_type: str
    instance_count: int
    gpus_per_instance: int | None
    injections: tuple[Injection, ...] = ()
    warnings: tuple[Any, ...] = ()
    layout: Any = None
    script_findings: tuple[Any, ...] = ()
    memory: Any = None
    image_source: Any = attrs.field(default=None, repr=False, eq=False)
    # Trainium's accelerators, in its own terms: NeuronCores, not "0 GPUs".
    neuron_cores: int | None = None
    # What only the hub or the AWS account can say, and the call that will say it (a
    # fine-tuning trainer's model lookup): left for the SDK at construction or for preflight.
    not_checked: tuple[str, ...] = ()

    @functools.cached_property
    def image_uri(self) -> str | None:
        """The training image the SDK resolves for this job (computed on first use: the SDK
        re-reads its endpoint data on every resolution)."""
        source = self.image_source
        value = source() if callable(source) else source
        return value if isinstance(value, str) else None

    @property
    def injected(self) -> dict[str, Any]:
        """The injected values by dotted path."""
        return {i.path: i.value for i in self.injections}

    def lines(self) -> list[str]:
        """The explanation as plain-text lines."""
        count = self.gpus_per_instance
        gpus = "" if count is None else f", {count} GPU{'' if count == 1 else 's'} each"
        if self.neuron_cores is not None:
            gpus = f", {self.neuron_cores} NeuronCore{'' if self.neuron_cores == 1 else 's'} each"
        out = [f"{self.estimator} on {self.instance_count} x {self.instance_type}{gpus}"]
        if self.image_uri:
            out.append(f"training image: {self.image_uri}")
        if self.layout is not None:
            out.append(f"parallel layout: {self.layout}")
        if self.memory is not None:
            out.append(f"memory: {self.memory}")
            out += [f"memory note: {note}" for note in self.memory.notes]
        out += [f"injected {i}" for i in self.injections]
        out += [f"warning {w}" for w in self.warnings[:MAX_PROBLEMS]]
        if len(self.warnings) > MAX_PROBLEMS:
            out.append(f"... and {len(self.warnings) - MAX_PROBLEMS:,} more warnings")
        out += [f"script {f}" for f in self.script_findings]
        out += [f"not checked offline: {n}" for n in self.not_checked]
        # A script's line may hold a token: no line shows more than its first characters.
        return [mask_text(line) for line in out]

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def _repr_markdown_(self) -> str:
        # Every value may come from a spec file anyone can change: escaped, so that it renders
        # as text (no HTML, links or images in the notebook; markdown_text, markdown_code).
        t, c = markdown_text, markdown_code
        rows = [
            "| | |",
            "|---|---|",
            f"| estimator | {t(str(self.estimator))} on {t(str(self.instance_count))} x "
            f"{t(str(self.instance_type))} |",
        ]
        if self.neuron_cores is not None:
            rows.append(f"| NeuronCores per instance | {self.neuron_cores} |")
        elif self.gpus_per_instance is not None:
            rows.append(f"| GPUs per instance | {self.gpus_per_instance} |")
        if self.image_uri:
            rows.append(f"| training image | {c(str(self.image_uri))} |")
        if self.layout is not None:
            rows.append(f"| parallel layout | {t(str(self.layout))} |")
        if self.memory is not None:
            rows += [f"| memory per accelerator | {t(str(self.memory))} |"]
            rows += [f"| memory note | {t(note)} |" for note in self.memory.notes]
        rows += [f"| {c(i.path)} = {c(repr(i.value))} | {t(i.reason)} |" for i in self.injections]
        shown = self.warnings[:MAX_PROBLEMS]
        rows += [f"| warning {c(w.path)} | {t(w.message)} {t(w.hint)} |" for w in shown]
        rows += [
            f"| script {c(f'{f.file}:{f.line}')} | {t(f.message)} |" for f in self.script_findings
        ]
        rows += [f"| not checked offline | {t(n)} |" for n in self.not_checked]
        return "\n".join(mask_text(row.replace("\n", " ")) for row in rows)
