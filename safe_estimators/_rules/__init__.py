"""The rules: small pure functions from a job's context to the problems they find.

Every rule runs; their problems are gathered into one ConfigError. No rule raises for a user
mistake and none imports ``sagemaker``. A new check is one function in the module of its
concern in this folder (``instance``, ``compiler``, ``distribution``, ``safety``), listed in
``RULES`` below; every rule reads the job's ``Context`` (``safe_estimators._context``). Rules
that belong to one distribution strategy (model parallelism, a launcher) live with that
strategy in ``_distributions/``.
"""

from __future__ import annotations

from safe_estimators._context import Context, Rule
from safe_estimators._facts.targets import applies
from safe_estimators._problems import Problem, found_by
from safe_estimators._rules.cache import cache_trusted
from safe_estimators._rules.capacity import (
    max_pending_on_cpu,
    training_plan_instance_type,
    training_plan_region,
    volume_key_on_local_storage,
)
from safe_estimators._rules.compiler import (
    compiler_debugging_tools,
    compiler_distribution,
    compiler_exclusions,
    compiler_gpu_num_devices,
    compiler_hardware,
    compiler_multi_gpu,
    compiler_profiling_asked,
)
from safe_estimators._rules.construction import (
    huggingface_versions_agree,
    local_gpu_single_instance,
    xla_needs_the_compiler,
)
from safe_estimators._rules.distribution import (
    distribution_needs_gpus,
    distribution_shape,
    mpi_processes,
    no_launcher,
    parameter_server_ignored,
)
from safe_estimators._rules.inputs import input_channels
from safe_estimators._rules.instance import (
    framework_versions,
    instance_type_known,
    pipeline_parameter_instance_type,
)
from safe_estimators._rules.pipelines import (
    pipeline_instance_count,
    pipeline_output_kms_key,
    pipeline_source_code,
    unknown_pipeline_values,
)
from safe_estimators._rules.platform import (
    container_runs_on_gpu,
    host_architecture,
    sdk_instance_deprecation,
)
from safe_estimators._rules.preferences import instance_preferences
from safe_estimators._rules.request import (
    option_types,
    request_members,
    vpc_pair,
)
from safe_estimators._rules.resources import instance_storage, warm_pool
from safe_estimators._rules.safety import (
    api_limits,
    dependency_contents,
    no_secrets,
    source_dir_contents,
    spot_training,
)
from safe_estimators._rules.source import source_code_exists
from safe_estimators._rules.targets import model_trainer_counterparts, model_trainer_words

__all__ = ["RECIPE_JOB_RULES", "RULES", "run_rules"]

RULES: tuple[Rule, ...] = (
    source_code_exists,
    instance_type_known,
    pipeline_parameter_instance_type,
    framework_versions,
    compiler_hardware,
    compiler_exclusions,
    compiler_multi_gpu,
    compiler_distribution,
    compiler_gpu_num_devices,
    compiler_debugging_tools,
    compiler_profiling_asked,
    distribution_shape,
    mpi_processes,
    distribution_needs_gpus,
    no_launcher,
    parameter_server_ignored,
    spot_training,
    no_secrets,
    api_limits,
    request_members,
    option_types,
    vpc_pair,
    source_dir_contents,
    sdk_instance_deprecation,
    host_architecture,
    container_runs_on_gpu,
    warm_pool,
    instance_storage,
    training_plan_instance_type,
    training_plan_region,
    volume_key_on_local_storage,
    max_pending_on_cpu,
    unknown_pipeline_values,
    pipeline_source_code,
    pipeline_output_kms_key,
    pipeline_instance_count,
    huggingface_versions_agree,
    xla_needs_the_compiler,
    local_gpu_single_instance,
    model_trainer_counterparts,
    model_trainer_words,
    instance_preferences,
    dependency_contents,
    input_channels,
    cache_trusted,
)

# The job-level rules that hold for a HyperPod recipe job; the others judge the entry point, the
# framework versions and the distribution, which the SDK takes from the recipe.
RECIPE_JOB_RULES: tuple[Rule, ...] = (
    instance_type_known,
    pipeline_parameter_instance_type,
    spot_training,
    no_secrets,
    api_limits,
    request_members,
    option_types,
    vpc_pair,
    source_dir_contents,
    warm_pool,
    instance_storage,
    training_plan_instance_type,
    training_plan_region,
    volume_key_on_local_storage,
    dependency_contents,
    input_channels,
    cache_trusted,
)


def run_rules(ctx: Context, rules: tuple[Rule, ...] = RULES) -> list[Problem]:
    """Run every rule and gather all their problems, each with its rule's id."""
    return [found_by(p, rule) for rule in _applicable(rules, ctx.target) for p in rule(ctx)]


# The rules of a table that hold for a target, found once per table and target, by the table's
# id: hashing forty functions costs what filtering them does. Each entry keeps its table alive,
# so no other table can take that id while it is here.
_APPLICABLE: dict[tuple[int, str], tuple[tuple[Rule, ...], tuple[Rule, ...]]] = {}


def _applicable(rules: tuple[Rule, ...], target: str) -> tuple[Rule, ...]:
    found = _APPLICABLE.get((id(rules), target))
    if found is None:
        if len(_APPLICABLE) >= 64:
            _APPLICABLE.clear()
        found = (rules, tuple(rule for rule in rules if applies(rule, target)))
        _APPLICABLE[id(rules), target] = found
    return found[1]
