"""``safe-estimators port``: a spec as the Python code of a bare ModelTrainer.

For teams moving from the estimators (sagemaker 2.x) to ModelTrainer (sagemaker 3.x): the job
is checked and resolved as ``plan`` resolves it for the ModelTrainer target, then written out
as plain SDK code (no safe_estimators import) that builds the same ModelTrainer; a test runs the
code and compares its request with the plan's.
"""

from __future__ import annotations

import os
from typing import Any

from safe_estimators._facts.sdk_files import sdk_generation, sdk_version
from safe_estimators._trainer import TrainerArguments

# Where each SDK generation keeps ModelTrainer, its configs and its launchers.
_MODULES = {
    2: ("sagemaker.modules.train", "sagemaker.modules.configs", "sagemaker.modules.distributed"),
    3: ("sagemaker.train", "sagemaker.core.training.configs", "sagemaker.train.distributed"),
}
# ModelTrainer argument -> its config class (the others are plain values).
_CONFIG_CLASSES = {
    "source_code": "SourceCode",
    "compute": "Compute",
    "stopping_condition": "StoppingCondition",
    "networking": "Networking",
    "output_data_config": "OutputDataConfig",
    "checkpoint_config": "CheckpointConfig",
}
_WITH_CLASSES = {
    "with_retry_strategy": "RetryStrategy",
    "with_metric_definitions": "MetricDefinition",
}


def _call(name: str, fields: dict[str, Any], code: dict[str, str] | None = None) -> str:
    """``Name(field=value, ...)``: ``fields`` as literals, ``code`` as written."""
    parts = [f"{k}={v!r}" for k, v in fields.items()]
    parts += [f"{k}={v}" for k, v in (code or {}).items()]
    return f"{name}({', '.join(parts)})"


def trainer_code(
    arguments: TrainerArguments, image: str, source: str | None, region: str, assumed: str = ""
) -> str:
    """The Python code of a bare ModelTrainer with ``arguments`` (the installed generation's
    imports), as a function ``model_trainer(sagemaker_session=None)``."""
    generation = 3 if sdk_generation() >= 3 else 2
    trainer_module, configs_module, distributed_module = _MODULES[generation]
    classes: set[str] = set()
    lines = ["    trainer = ModelTrainer(", "        sagemaker_session=sagemaker_session,"]
    lines.append(f"        training_image={image!r},")
    for name, value in arguments.configs.items():
        if name == "source_code":
            value = {**value, "source_dir": os.path.normpath(value["source_dir"])}
        if value == {}:
            continue  # an empty environment or hyperparameters: ModelTrainer's default
        if name in _CONFIG_CLASSES:
            cls = _CONFIG_CLASSES[name]
            classes.add(cls)
            if name == "networking" and not any(value.values()):
                continue  # nothing ModelTrainer would send: no Networking at all
            if name == "networking" and generation == 2 and not value.get("subnets"):
                # 2.x's Networking requires both lists: empty ones send no VpcConfig, which is
                # the only way 2.x sends the encryption flag without a VPC.
                value = {"subnets": [], "security_group_ids": [], **value}
            lines.append(f"        {name}={_call(cls, value)},")
        elif name == "tags":
            classes.add("Tag")
            lines.append(f"        tags=[{', '.join(_call('Tag', t) for t in value)}],")
        else:
            lines.append(f"        {name}={value!r},")
    launchers: set[str] = set()
    if arguments.distributed is not None:
        kind, fields = arguments.distributed
        launchers.add(kind)
        smp = {}
        if arguments.smp is not None:
            launchers.add("SMP")
            smp = {"smp": _call("SMP", arguments.smp)}
        lines.append(f"        distributed={_call(kind, fields, smp)},")
    if arguments.inputs:
        classes.add("InputData")
        channels = ", ".join(_call("InputData", channel) for channel in arguments.inputs)
        lines.append(f"        input_data_config=[{channels}],")
    lines.append("    )")
    for method, value in arguments.with_calls.items():
        cls = _WITH_CLASSES[method]
        classes.add(cls)
        argument = (
            f"[{', '.join(_call(cls, item) for item in value)}]"
            if isinstance(value, list)
            else _call(cls, value)
        )
        lines.append(f"    trainer = trainer.{method}({argument})")
    lines.append("    return trainer")
    what = f"The job in {source}" if source else "The job"
    header = [
        f"# Region {region}{assumed}: the training image below is that region's.",
        f'"""{what} as a bare ModelTrainer (written by safe-estimators port for sagemaker '
        f"{sdk_version()}).",
        "",
        f"The training image is the one the SageMaker SDK's estimator picks in {region}; paths",
        "are relative to the folder safe-estimators port ran in.",
        '"""',
        "",
        f"from {trainer_module} import ModelTrainer",
    ]
    if classes:
        header.append(f"from {configs_module} import {', '.join(sorted(classes))}")
    if launchers:
        header.append(f"from {distributed_module} import {', '.join(sorted(launchers))}")
    body = [
        "",
        "",
        "def model_trainer(sagemaker_session=None):",
        '    """The ModelTrainer; its train() starts the job."""',
        *lines,
        "",
        "",
        'if __name__ == "__main__":',
        "    model_trainer().train()",
    ]
    return "\n".join(header + body) + "\n"


def port(
    spec_or_path: Any,
    *,
    project_root: str | os.PathLike[str] | None = None,
    region: str | None = None,
    **overrides: Any,
) -> str:
    """The Python code of a bare ModelTrainer that builds the job a spec describes, checked as
    ``plan`` checks it (raises ConfigError with every problem). The training image is the one
    of ``region`` (default: the environment's, as plan finds it); with none, ConfigError: the
    image differs by region, and port does not guess one."""
    from safe_estimators._build.model_trainer import training_image
    from safe_estimators._files import job_arguments, offline_problems
    from safe_estimators._plan import REGION_SOURCES, job_region
    from safe_estimators._problems import ConfigError, Problem
    from safe_estimators._resolve import resolve_arguments
    from safe_estimators._trainer import trainer_arguments
    from safe_estimators._validate import offline

    with offline():
        overrides = {**overrides, "target": "model_trainer"}
        arguments, source, prior = job_arguments(spec_or_path, overrides, project_root=project_root)
        prior += offline_problems(arguments)
        job = resolve_arguments(arguments, source, prior)
        trainer = trainer_arguments(job)
        assumed = " (given)" if region else f" (from {REGION_SOURCES})"
        region = region or job_region()
        if not region:
            raise ConfigError(
                [
                    Problem(
                        "<aws>",
                        f"no AWS region: none is set in {REGION_SOURCES}, and the training "
                        "image port writes is one region's.",
                        "export AWS_REGION=us-east-1 (your region), or pass --region us-east-1.",
                    )
                ],
                source=source,
            )
        image = training_image(trainer, region)
        return trainer_code(trainer, image, source, region, assumed)
