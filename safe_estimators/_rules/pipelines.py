"""Rules for SageMaker Pipelines variables: what the SDK refuses with them, and what we cannot see.

The installed SDK takes a pipeline variable (a parameter, an execution variable, a step's
property, ``Join``, ``JsonGet``) for the options its signatures type ``... | PipelineVariable``
(``_facts.pipeline_variables``). A parameter is checked through its ``default_value``; a value
known only when the pipeline runs is a warning that names the check skipped, never a refusal.
The SDK's own definition-time refusals (``fw_utils.validate_source_code_input_against_pipeline_
variables``; the code upload, which cannot encrypt with a key given as a variable) are errors here,
before anything is built.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, ValuesView
from typing import Any

from safe_estimators._context import Context
from safe_estimators._problems import Problem, warning
from safe_estimators._rules.request import MEMBERS, option_value
from safe_estimators._spec import is_pipeline_variable, value_of

# What is checked only through a value known now (beyond the request members of request.MEMBERS).
_CHECKED: dict[str, str] = {
    "entry_point": "the entry point's checks (torchrun's .py entry point, the training-script "
    "checks)",
    "source_dir": "the source code checks",
    "instance_count": "the checks that count instances (they assume 1)",
    "environment": "its secrets check and the API's length limits",
    "hyperparameters": "its secrets check and the API's length limits",
}


def is_parameter(variable: object) -> bool:
    """``variable`` is a SageMaker Pipelines parameter (ParameterString, ParameterInteger, ...).

    They are functools.partial objects of one Parameter class: known by the parameter_type every
    parameter carries, not by a class name."""
    return hasattr(variable, "parameter_type") and isinstance(getattr(variable, "name", None), str)


def described(variable: object) -> str:
    """``the pipeline parameter 'Name'``, ``the ExecutionVariable 'PipelineExecutionId'`` or
    ``a Join`` (a variable without a name)."""
    name = getattr(variable, "name", None)
    if is_parameter(variable):
        return f"the pipeline parameter {name!r}"
    kind = type(variable).__name__
    return f"the {kind} {name!r}" if isinstance(name, str) else f"a {kind}"


def _skipped(path: str) -> str | None:
    option = path.split(".", 1)[0]
    if option in MEMBERS and option != "instance_count":
        return f"its check against CreateTrainingJob's {MEMBERS[option].member} constraints"
    return _CHECKED.get(option)


def unknown_pipeline_values(ctx: Context) -> Iterator[Problem]:
    """A value known only when the pipeline runs (no default) is a warning naming the check
    skipped; the instance type has its own rule (pipeline_parameter_instance_type)."""
    for path, variable in ctx.pipeline_variables.items():
        if path == "instance_type" or value_of(variable) is not None:
            continue
        skipped = _skipped(path)
        if skipped is None:
            continue
        yield warning(
            path,
            f"is {described(variable)}, known only when the pipeline runs (no default_value); "
            f"skipped for it: {skipped}.",
            _unknown_hint(variable),
        )
    for name in ("subnets", "security_group_ids", "tags", "metric_definitions"):
        if _holds_unknown(option_value(ctx, name)):
            yield warning(
                name,
                "holds a pipeline variable known only when the pipeline runs; skipped for it: its "
                f"check against CreateTrainingJob's {MEMBERS[name].member} constraints.",
                "give the parameter a default_value to have it checked now.",
            )


def _unknown_hint(variable: object) -> str:
    if is_parameter(variable):
        return "give the parameter a default_value to have it checked now."
    return "nothing to change if its run-time value is valid: only SageMaker can check it."


def _holds_unknown(value: Any) -> bool:
    if value is None:  # most jobs set none of these options
        return False
    items = value.values() if isinstance(value, Mapping) else value
    if not isinstance(items, list | tuple | ValuesView):
        return False
    for item in items:
        inner = item.values() if isinstance(item, Mapping) else (item,)
        if any(is_pipeline_variable(v) and value_of(v) is None for v in inner):
            return True
    return False


def pipeline_source_code(ctx: Context) -> Iterator[Problem]:
    """The SDK's checks of an entry point or source_dir given as a pipeline variable
    (``validate_source_code_input_against_pipeline_variables``), made before the build."""
    spec = ctx.spec
    entry, source = spec.entry_point, spec.source_dir
    entry_variable, source_variable = is_pipeline_variable(entry), is_pipeline_variable(source)
    if not entry_variable and not source_variable:
        return
    isolation = option_value(ctx, "enable_network_isolation")
    if is_pipeline_variable(isolation) or isolation is True:
        yield Problem(
            "entry_point" if entry_variable else "source_dir",
            "is a pipeline variable while enable_network_isolation is True or a pipeline "
            "variable; the SageMaker SDK refuses that (TypeError).",
            "give entry_point and source_dir as strings, or enable_network_isolation=False.",
        )
    if spec.extra.get("git_config"):
        yield Problem(
            "entry_point" if entry_variable else "source_dir",
            "is a pipeline variable beside git_config; the SageMaker SDK refuses that (TypeError).",
            "give entry_point and source_dir as strings with git_config.",
        )
    if entry_variable and source is None:
        yield Problem(
            "entry_point",
            f"is {described(entry)} without a source_dir; the SageMaker SDK refuses that "
            "(TypeError): the script must come from an uploaded source.",
            "upload the code as sourcedir.tar.gz and give source_dir='s3://.../sourcedir.tar.gz' "
            "(or a ParameterString), or give entry_point as a string.",
        )
    elif entry_variable and isinstance(source, str) and not source.lower().startswith("s3://"):
        yield Problem(
            "entry_point",
            f"is {described(entry)} with the local source_dir {source!r}; the SageMaker SDK "
            "refuses that (TypeError): a local folder is packed at definition, before the entry "
            "point's value is known.",
            "give entry_point as a string, or upload the code and give source_dir as its S3 URI.",
        )
    default = value_of(source) if source_variable else None
    if isinstance(default, str) and not default.lower().startswith("s3://"):
        yield warning(
            "source_dir",
            f"is {described(source)} whose default_value {default!r} is a local path; the SDK "
            "uploads nothing for a pipeline variable, and at run time its value must be the S3 "
            "URI of a sourcedir.tar.gz, so an execution with the default fails.",
            "upload the code (sagemaker.s3.S3Uploader) and make the default its S3 URI, or give "
            "source_dir as a string (the SDK then packs and uploads the folder).",
        )
    if source_variable and option_value(ctx, "base_job_name") is None:
        yield _source_dir_names_the_job(ctx, source)
    if entry_variable and "torch_distributed" in ctx.launchers:
        yield Problem(
            "entry_point",
            f"is {described(entry)} with torch_distributed; the SageMaker SDK's torchrun check "
            "reads the entry point as a string (entry_point.endswith('.py')) and fails on a "
            "pipeline variable.",
            "give entry_point as a string (a .py script).",
        )


def _source_dir_names_the_job(ctx: Context, source: object) -> Problem:
    """Without base_job_name the estimator makes one when fit() names the job:
    ``EstimatorBase._ensure_base_job_name`` asks
    ``jumpstart.utils.get_jumpstart_base_name_if_jumpstart_model(self.source_dir, ...)``,
    whose ``is_jumpstart_model_uri`` passes the value to ``urllib.parse.urlparse``; a pipeline
    variable is not a string, so ``definition()`` (where a PipelineSession runs fit's naming)
    fails with "AttributeError: 'ParameterString' object has no attribute 'decode'" (the
    variable's class in the message). Only fit(job_name=...) skips the naming, and a
    TrainingStep drops that name again."""
    message = (
        f"is {described(source)} and base_job_name is not given: the SageMaker SDK names the "
        "job from source_dir (jumpstart.utils.is_jumpstart_model_uri passes it to "
        "urllib.parse.urlparse), which fails on a pipeline variable, so the pipeline's "
        f"definition() raises \"AttributeError: '{type(source).__name__}' object has no "
        "attribute 'decode'\"."
    )
    hint = (
        "give base_job_name (letters, digits and hyphens, e.g. base_job_name='train'), as the "
        "SDK's own pipeline tests do; Pipelines names the job at run time anyway."
    )
    if ctx.target != "estimator":  # ModelTrainer names its jobs its own way
        return warning("source_dir", message.replace(" raises ", " may raise "), hint)
    return Problem("source_dir", message, hint)


def _uploads_code(ctx: Context) -> bool:
    """The SDK packs and uploads the source code when the estimator is built into a step."""
    spec = ctx.spec
    if is_pipeline_variable(spec.source_dir) or is_pipeline_variable(spec.entry_point):
        return False
    return not (isinstance(spec.source_dir, str) and spec.source_dir.lower().startswith("s3://"))


def pipeline_output_kms_key(ctx: Context) -> Iterator[Problem]:
    """The SDK encrypts the code upload with output_kms_key when the code goes to output_path's
    bucket (``EstimatorBase._stage_user_code_in_s3``); a pipeline variable there fails the
    upload (TypeError: pipeline variables do not support str())."""
    key = option_value(ctx, "output_kms_key")
    if not is_pipeline_variable(key) or ctx.local or not _uploads_code(ctx):
        return
    output_path = option_value(ctx, "output_path")
    location = option_value(ctx, "code_location")
    if is_pipeline_variable(output_path):
        if location is None:
            return  # the SDK then uploads without a key
        yield warning(
            "output_kms_key",
            "is a pipeline variable and code_location is given; if code_location is in the "
            "session's default bucket the SDK encrypts the code upload with this key and fails "
            "(TypeError).",
            "give output_kms_key as a string, or code_location in another bucket.",
        )
        return
    if location is not None:
        if not isinstance(output_path, str):  # the session's default bucket: not known here
            yield warning(
                "output_kms_key",
                "is a pipeline variable and code_location is given; if code_location is in "
                "the session's default bucket the SDK encrypts the code upload with this key "
                "and fails (TypeError).",
                "give output_kms_key as a string, or code_location in another bucket.",
            )
            return
        if _bucket(location) != _bucket(output_path):
            return
    yield Problem(
        "output_kms_key",
        f"is {described(key)} while the SDK packs the local source code and uploads it to "
        "output_path's bucket encrypted with this key; it needs the key as a string there, so "
        "the pipeline definition fails (TypeError).",
        "give output_kms_key as a string, upload the code first and give source_dir as its S3 "
        "URI, or set code_location to another bucket than output_path's.",
    )


def _bucket(uri: object) -> str | None:
    if not isinstance(uri, str) or not uri.startswith("s3://"):
        return None
    return uri[len("s3://") :].split("/", 1)[0]


def pipeline_instance_count(ctx: Context) -> Iterator[Problem]:
    """Values derived from the instance count are fixed when the pipeline is defined: with the
    count a pipeline parameter, they follow its default, whatever an execution passes."""
    count = ctx.spec.instance_count
    if not is_pipeline_variable(count):
        return
    if ctx.compiler and not ctx.distribution and not ctx.wants_xla_distribution:
        # TrainingCompilerConfig.validate, without a distribution: instance_count > 1.
        yield Problem(
            "instance_count",
            f"is {described(count)} in a Training Compiler job without a distribution; the "
            "SageMaker SDK's compiler check then compares instance_count > 1 and fails on a "
            "pipeline variable (TypeError).",
            "give instance_count as a number.",
        )
        return
    if value_of(count) is None:
        return  # no default: unknown_pipeline_values says the checks assume 1
    derived = []
    if ctx.compiler and ctx.gpus_per_instance == 1:
        derived.append("whether the PyTorch/XLA distribution is injected (more than one GPU)")
    if ctx.model_parallel is not None:
        derived.append("the model parallel layout (its data-parallel degree and DDP)")
    if not derived:
        return
    yield warning(
        "instance_count",
        f"is {described(count)}; {' and '.join(derived)} follow its default "
        f"({value_of(count)}), fixed in the pipeline definition, and would be wrong for an "
        "execution with another count.",
        "give instance_count as a number (one pipeline per count), or keep the parameter at its "
        "default.",
    )
