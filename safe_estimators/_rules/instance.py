"""Rules about the hardware and the container: instance type and framework versions."""

from __future__ import annotations

from collections.abc import Iterator

import instance_catalog
from safe_estimators._context import Context
from safe_estimators._distributions._sdk_source import sdk_constant
from safe_estimators._facts import tables
from safe_estimators._facts.versions import (
    Container,
    framework_container,
    huggingface_container,
    nearby,
    neuron_sdk_versions,
    parse_version,
)
from safe_estimators._problems import Fix, Problem, count, did_you_mean, setting, warning
from safe_estimators._rules.pipelines import described, is_parameter


def instance_type_known(ctx: Context) -> Iterator[Problem]:
    """The instance type must be a real SageMaker training type (or local mode)."""
    name = ctx.instance_name
    if ctx.instance is not None or ctx.local or (ctx.parameterised and not name):
        return
    if ctx.spec.instance_groups is not None:
        return  # each group's type is checked where it is written (instance_groups rules)
    problem = unknown_type_problem("instance_type", name)
    if problem is not None:
        yield problem


def unknown_type_problem(path: str, name: str) -> Problem | None:
    """The problem of an instance type the catalog does not know, with the closest names."""
    try:
        instance_catalog.get(name)
    except instance_catalog.UnknownInstanceType as exc:
        close = ", ".join(exc.suggestions[:3])
        if path != "instance_type" or not close:
            return Problem(
                path,
                f"{name!r} is not a SageMaker training instance type.",
                f"did you mean {close}?" if close else "see `safe-estimators catalog` for the "
                "types.",
            )
        # The names offered are checked as the job's instance type before they are named.
        return Problem(
            path,
            f"{name!r} is not a SageMaker training instance type.",
            "see `safe-estimators catalog` for the types.",
            fixes=tuple(setting((path, close)) for close in exc.suggestions[:3]),
        )
    return None


def pipeline_parameter_instance_type(ctx: Context) -> Iterator[Problem]:
    """A run-time instance type must not make GPU-derived values silently wrong.

    Values such as GPU_NUM_DEVICES are fixed when the pipeline is defined. So the parameter needs
    a default to check against, and where GPU-derived values are injected, ``enum_values`` that
    all have the default's GPU count: SageMaker Pipelines refuses any other value at start.
    """
    if not ctx.parameterised:
        return
    parameter = ctx.spec.instance_type
    # Read only for a pipeline parameter (one with a default_value, or is_parameter), which
    # always has a name: no message shows the fallback.
    name = getattr(parameter, "name", "the parameter")  # pragma: no mutate
    if not ctx.instance_name:
        if is_parameter(parameter):
            fix = f"give it a default: ParameterString({name!r}, default_value='ml.p3.8xlarge')."
        else:  # a Join or an execution variable has no default to give
            fix = (
                "pass a pipeline parameter with a default instead: ParameterString("
                "'TrainingInstanceType', default_value='ml.p3.8xlarge')."
            )
        if ctx.gpu_derived:
            yield Problem(
                "instance_type",
                f"is {described(parameter)} without a default_value; the values "
                "derived from its GPU count, fixed in the pipeline definition now, cannot be "
                "computed.",
                fix,
            )
        elif ctx.spec.image_uri is None:
            yield Problem(
                "instance_type",
                f"is {described(parameter)} without a default_value; the SageMaker SDK picks "
                "the container image (CPU or GPU) from the instance type when the pipeline is "
                "defined, and refuses an empty one (ValueError: Empty SageMaker instance type).",
                fix[:-1] + ", or give image_uri.",
            )
        else:  # nothing depends on it now: the run-time value is SageMaker's to check
            yield warning(
                "instance_type",
                f"is {described(parameter)} without a default_value, known only when the "
                "pipeline runs: the instance type check and the checks that read its GPUs are "
                "skipped.",
                fix,
            )
        return
    allowed = getattr(parameter, "enum_values", None) or []
    if allowed and ctx.instance_name not in allowed:
        yield Problem(
            "instance_type",
            f"the pipeline parameter {name!r} defaults to {ctx.instance_name!r}, which is not "
            f"one of its enum_values ({', '.join(map(str, allowed))}).",
            "add the default to enum_values, or pick a default among them.",
        )
    default_gpus = ctx.gpus_per_instance
    counts: dict[str, int | None] = {}
    for value in allowed:
        try:
            entry = instance_catalog.get(value)
        except (LookupError, TypeError):
            yield Problem(
                f"instance_type.enum_values.{value}",
                f"{value!r} is not a SageMaker training instance type.",
                did_you_mean(str(value), [t.name for t in instance_catalog.instance_types()]),
            )
            continue
        counts[value] = entry.gpu_count
        if ctx.compiler and entry.family not in tables.COMPILER_FAMILIES:
            yield Problem(
                f"instance_type.enum_values.{value}",
                f"Training Compiler does not support the {entry.family} family.",
                f"allow only {', '.join(tables.COMPILER_FAMILIES)} instance types.",
            )
    if not ctx.gpu_derived or default_gpus is None:
        return
    if not allowed:
        yield Problem(
            "instance_type",
            f"is the pipeline parameter {name!r}; values derived from its default "
            f"{ctx.instance_name} ({count(default_gpus, 'GPU')}) would be wrong at run time for an "
            "instance with another GPU count.",
            f"pin the choices: ParameterString({name!r}, default_value={ctx.instance_name!r}, "
            f"enum_values=[...types with {count(default_gpus, 'GPU')}...]).",
        )
        return
    for value, gpus in counts.items():
        if gpus is not None and gpus != default_gpus:
            yield Problem(
                f"instance_type.enum_values.{value}",
                f"has {count(gpus, 'GPU')} but the default {ctx.instance_name} has "
                f"{default_gpus}; the GPU-derived values fixed in the pipeline definition would "
                "be wrong for it.",
                f"allow only instance types with {count(default_gpus, 'GPU')}, or build one step "
                "per GPU count.",
            )


def _known(container: Container) -> str:
    return ", ".join(container.known)


_SHOWN = 12  # versions listed in a hint; the rest are counted


def _listed(versions: tuple[str, ...] | list[str], what: str) -> str:
    newest = list(reversed(versions))
    shown = ", ".join(newest[:_SHOWN])
    rest = len(newest) - _SHOWN
    return f"the SDK knows {what} {shown}" + (f" and {rest} older" if rest > 0 else "")


def _choices(ctx: Context, name: str) -> str:
    """The values the installed SDK's image tables offer for a missing version option."""
    spec = ctx.spec
    table = tables.IMAGE_CONFIGS[(spec.estimator, ctx.compiler)]
    if spec.estimator == "pytorch":
        container = framework_container(table, spec.framework_version or "")
        if name == "py_version" and container.py_versions:
            return _listed(container.py_versions, f"for PyTorch {container.version}:")
        return _first(name, _listed(container.known, "PyTorch"))
    framework = "tensorflow" if spec.tensorflow_version is not None else "pytorch"
    label = {"pytorch": "PyTorch", "tensorflow": "TensorFlow"}[framework]
    outer, base = huggingface_container(
        table,
        spec.transformers_version or "",
        spec.tensorflow_version or spec.pytorch_version or "",
        framework,
    )
    if name == "transformers_version" or outer.version is None:
        return _first(name, _listed(outer.known, "transformers"))
    if name == "pytorch_version" and base is not None:
        return _listed(base.known, f"for transformers {outer.version}: PyTorch")
    if base is not None and base.py_versions:
        return _listed(base.py_versions, f"for {label} {base.version}:")
    if base is not None and not base.known:  # the SDK builds these transformers on the other one
        return _first(name, f"the SDK has no {label} container for transformers {outer.version}")
    return _first(name, _listed(base.known if base else outer.known, label))


def _newest(ctx: Context, name: str) -> tuple[Fix, ...]:
    """A missing version option of the pytorch estimator set to the newest value the SDK's
    tables offer (with the py_version its container is built for), as a fix."""
    spec = ctx.spec
    if spec.estimator != "pytorch" or ctx.instance_name is None:
        return ()
    table = tables.IMAGE_CONFIGS[("pytorch", ctx.compiler)]
    if name == "framework_version":
        known = framework_container(table, "").known
        if not known:
            return ()
        python = framework_container(table, known[-1]).py_versions
        changes = [("framework_version", known[-1])]
        if python and spec.py_version not in python:
            changes.append(("py_version", python[-1]))
        return (setting(*changes, why="the newest"),)
    python = framework_container(table, spec.framework_version or "").py_versions
    return (setting(("py_version", python[-1])),) if python else ()


def _first(name: str, listing: str) -> str:
    """A version option whose values depend on another one that is not known yet."""
    if name in ("py_version", "pytorch_version"):
        return f"it depends on the framework versions, pick those first ({listing})"
    return listing


def framework_versions(ctx: Context) -> Iterator[Problem]:
    """The versions must name a training container the installed SDK can resolve."""
    spec = ctx.spec
    if spec.image_uri is not None:
        return
    required = (
        ("framework_version", "py_version")
        if spec.estimator == "pytorch"
        else ("transformers_version", "py_version")
    )
    missing = [name for name in required if getattr(spec, name) is None]
    if spec.estimator == "huggingface" and spec.pytorch_version is spec.tensorflow_version is None:
        missing.append("pytorch_version")
    for name in missing:
        yield Problem(
            name,
            f"is required to pick a {spec.estimator} training container (no image_uri given).",
            f"set {name}: {_choices(ctx, name)}.",
            fixes=_newest(ctx, name),
        )
    if missing or (spec.tensorflow_version is not None and spec.pytorch_version is not None):
        return
    family = ctx.instance.family if ctx.instance else ""
    if family.startswith(("trn", "inf")):
        if spec.estimator == "pytorch":
            yield from _neuron_versions(ctx)
        elif family.startswith("trn"):
            yield from _trainium_framework(ctx)
        return  # other Neuron containers: the build step resolves them eagerly
    if spec.estimator == "pytorch":
        if ctx.model_parallel_library == 2:
            return  # the model parallel v2 image has its own table; its rules check it
        yield from _pytorch_versions(ctx)
    else:
        yield from _huggingface_versions(ctx)


def _trainium_framework(ctx: Context) -> Iterator[Problem]:
    """The SDK looks up Trainium training images for the frameworks in its
    ``image_uris.TRAINIUM_ALLOWED_FRAMEWORKS`` only (PyTorch): the Hugging Face estimator's
    lookup fails on ml.trn* whatever the versions, though Hugging Face Neuron containers exist."""
    allowed = sdk_constant("image_uris.py", "TRAINIUM_ALLOWED_FRAMEWORKS")
    if ctx.spec.estimator in allowed:  # the SDK's own test (a string, read as a substring)
        return
    yield Problem(
        "instance_type",
        f"{ctx.instance_name} is a Trainium instance, and the SageMaker SDK finds Trainium "
        f"training images for {allowed} only: the {ctx.spec.estimator} estimator cannot pick "
        "one (it fails while resolving the image, whatever transformers_version and "
        "pytorch_version say).",
        "pass image_uri= with a Hugging Face Neuron training container "
        "(huggingface-pytorch-training-neuronx), or use the pytorch estimator with that "
        "image_uri.",
    )


def _neuron_versions(ctx: Context) -> Iterator[Problem]:
    """Trainium containers come from the SDK's Neuron table, which it does not check.

    With one version in that table the SDK takes it whatever was asked, when the py_version is
    one the container is built for: PyTorch 1.13.1 on ml.trn1 silently becomes a 1.11.0
    container. With another py_version it refuses ("Unsupported Python version").
    """
    spec = ctx.spec
    assert spec.framework_version is not None
    container = framework_container(tables.NEURON_IMAGE_CONFIG, spec.framework_version)
    if container.version is None:
        yield _unknown_neuron_version(ctx, container)
        return
    yield from _py_version(ctx, container, f"PyTorch {container.version} Neuron")
    yield from _trn2_container(ctx, container.version)


def _unknown_neuron_version(ctx: Context, container: Container) -> Problem:
    spec = ctx.spec
    newest = framework_container(tables.NEURON_IMAGE_CONFIG, container.known[-1])
    python = newest.py_versions
    if python and spec.py_version not in python:
        # image_uris._validate_py_version_and_set_processor, for the one container it takes.
        effect = (
            f"with py_version={spec.py_version!r} it refuses the job (\"Unsupported Python "
            f"version: {spec.py_version}. ... Supported Python version(s): "
            f"{', '.join(python)}.\"); with {', '.join(python)} it would silently start "
            f"PyTorch {container.known[-1]}"
        )
    else:
        effect = f"it would silently start PyTorch {container.known[-1]}"
    fixes = tuple(
        _neuron_fix(version, spec.py_version) for version in reversed(container.known)
    )
    newer = (
        f"a pytorch-training-neuronx container of Neuron SDK {tables.TRN2_FIRST_NEURON_SDK} or "
        "later (Trainium2 needs it)."
        if _trn2(ctx) else "a newer Neuron deep learning container (pytorch-training-neuronx)."
    )
    return Problem(
        "framework_version",
        f"the SageMaker SDK has Trainium (Neuron) training containers for PyTorch "
        f"{_known(container)} only; for {spec.framework_version!r} on {ctx.instance_name} "
        f"{effect}.",
        f"pass the image_uri of {newer}",
        fixes=fixes,
    )


def _neuron_fix(version: str, py_version: str | None) -> Fix:
    python = framework_container(tables.NEURON_IMAGE_CONFIG, version).py_versions
    changes: list[tuple[str, str]] = [("framework_version", version)]
    if python and py_version not in python:
        changes.append(("py_version", python[-1]))
    return Fix(tuple(changes), "set " + ", ".join(f"{k}={v!r}" for k, v in changes))


def _trn2(ctx: Context) -> bool:
    return ctx.instance is not None and ctx.instance.family.startswith("trn2")


def _trn2_container(ctx: Context, version: str) -> Iterator[Problem]:
    """The SDK's Neuron containers for ml.trn2 may be built on a Neuron SDK older than Trn2:
    their runtime predates NeuronCore-v3 (AWS Neuron release notes: 2.21.0 added Trn2), so the
    job cannot use the instance's devices."""
    if not _trn2(ctx):
        return
    releases = neuron_sdk_versions(tables.NEURON_IMAGE_CONFIG, version)
    first = tables.TRN2_FIRST_NEURON_SDK
    if not releases or any(parse_version(r) >= parse_version(first) for r in releases):
        return
    yield Problem(
        "instance_type",
        f"{ctx.instance_name} is Trainium2, and the SageMaker SDK's PyTorch {version} Neuron "
        f"container is built on Neuron SDK {', '.join(releases)}; Trainium2 needs Neuron SDK "
        f"{first} or later (its NeuronCore-v3 arrived in that release), so this container's "
        "runtime cannot drive the instance's NeuronCores.",
        "pass image_uri= with a pytorch-training-neuronx container of Neuron SDK "
        f"{first} or later (the Neuron deep learning containers list names them).",
        fixes=(
            setting(("instance_type", "ml.trn1.32xlarge"), why="Trainium1 runs this container"),
        ),
    )


def _version_fix(ctx: Context, name: str, version: str, table: str) -> Fix:
    """``name`` set to ``version``, with a py_version its container is built for."""
    python = framework_container(table, version).py_versions
    changes: list[tuple[str, str]] = [(name, version)]
    if python and ctx.spec.py_version not in python:
        changes.append(("py_version", python[-1]))
    return setting(*changes)


def _compiler_words(compiler: bool) -> str:
    return "Training Compiler " if compiler else ""


def _pytorch_versions(ctx: Context) -> Iterator[Problem]:
    spec = ctx.spec
    assert spec.framework_version is not None
    table = tables.IMAGE_CONFIGS[("pytorch", ctx.compiler)]
    container = framework_container(table, spec.framework_version)
    if container.version is None:
        other = framework_container(
            tables.IMAGE_CONFIGS[("pytorch", not ctx.compiler)], spec.framework_version
        )
        yield Problem(
            "framework_version",
            f"the SageMaker SDK has no PyTorch {spec.framework_version} "
            f"{_compiler_words(ctx.compiler)}training container.",
            (
                f"PyTorch {spec.framework_version} exists only "
                f"{'without' if ctx.compiler else 'with'} Training Compiler; "
                if other.version
                else ""
            )
            + f"use one of: {_known(container)}.",
            fixes=tuple(
                _version_fix(ctx, "framework_version", version, table)
                for version in nearby(spec.framework_version, container.known)
            ),
        )
        return
    yield from _py_version(ctx, container, f"PyTorch {container.version}")
    yield from _processor(ctx, container, f"PyTorch {container.version}")


# The base framework of a Hugging Face container: its argument, its key prefix in the SDK's
# tables, and its name in messages.
_HF_BASES = {
    "pytorch_version": ("pytorch", "PyTorch"),
    "tensorflow_version": ("tensorflow", "TensorFlow"),
}


def _huggingface_versions(ctx: Context) -> Iterator[Problem]:
    spec = ctx.spec
    field = "pytorch_version" if spec.pytorch_version is not None else "tensorflow_version"
    prefix, framework = _HF_BASES[field]
    version = getattr(spec, field)
    assert spec.transformers_version is not None and version is not None
    table = tables.IMAGE_CONFIGS[("huggingface", ctx.compiler)]
    outer, base = huggingface_container(table, spec.transformers_version, version, prefix)
    words = _compiler_words(ctx.compiler)
    if base is None:
        other, _ = huggingface_container(
            tables.IMAGE_CONFIGS[("huggingface", not ctx.compiler)],
            spec.transformers_version,
            version,
            prefix,
        )
        only = (
            f"transformers {spec.transformers_version} exists only "
            f"{'without' if ctx.compiler else 'with'} Training Compiler"
            + ("" if ctx.compiler else " (training_compiler=True)")
            + "; "
            if other.version
            else ""
        )
        yield Problem(
            "transformers_version",
            f"the SageMaker SDK has no Hugging Face {words}training container for "
            f"transformers {spec.transformers_version}.",
            f"{only}use one of: {_known(outer)}.",
            fixes=tuple(
                setting(("transformers_version", v))
                for v in nearby(spec.transformers_version, outer.known)
            ),
        )
        return
    if base.version is None:
        built = f"{framework} {_known(base)}" if base.known else f"no {framework}"
        yield Problem(
            field,
            f"the Hugging Face {words}container for transformers {outer.version} is built with "
            f"{built}, not {version}.",
            f"set {field} to one of: {_known(base)}."
            if base.known
            else f"use {'tensorflow_version' if prefix == 'pytorch' else 'pytorch_version'}.",
            fixes=tuple(setting((field, v)) for v in nearby(version, base.known)),
        )
        return
    label = f"transformers {outer.version} with {framework} {base.version}"
    yield from _py_version(ctx, base, label)
    yield from _processor(ctx, base, label)


def _py_version(ctx: Context, container: Container, label: str) -> Iterator[Problem]:
    if container.py_versions and ctx.spec.py_version not in container.py_versions:
        python = container.py_versions[-1]
        yield Problem(
            "py_version",
            f"{label} containers are built for {', '.join(container.py_versions)}, "
            f"not {ctx.spec.py_version!r}.",
            f"pass image_uri= with a container built for {ctx.spec.py_version}.",
            fixes=(Fix((("py_version", python),), f"set py_version={python!r}"),),
        )


def _processor(ctx: Context, container: Container, label: str) -> Iterator[Problem]:
    if not container.processors or ctx.instance_name == "local":
        return
    if ctx.instance is None and not ctx.local:
        return  # unknown type: the instance_type rule reports it
    kind = "gpu" if ctx.local or (ctx.gpus_per_instance or 0) > 0 else "cpu"
    if kind not in container.processors:
        yield Problem(
            "instance_type",
            f"{label} containers exist for {'/'.join(container.processors).upper()} instances "
            f"only, and {ctx.instance_name} is a {kind.upper()} instance.",
            f"pick {'a GPU' if kind == 'cpu' else 'a CPU'} instance type.",
            fixes=tuple(
                setting(("instance_type", name))
                for name in (("ml.g5.xlarge", "ml.p3.2xlarge") if kind == "cpu"
                             else ("ml.m5.xlarge",))
            ),
        )
