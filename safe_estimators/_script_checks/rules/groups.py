"""Heterogeneous clusters: every instance group runs the same script.

AWS, "Configure a training job with a heterogeneous cluster"
(https://docs.aws.amazon.com/sagemaker/latest/dg/train-heterogeneous-cluster-configure.html):
"All instance groups share the same Docker image and training script. Therefore, your training
script should be modified to detect which instance group it belongs to and fork execution
accordingly." The training toolkit starts the entry point on every host; the distribution runs
only on its groups, the others start the script as one plain process.
"""

from __future__ import annotations

from collections.abc import Iterator

from safe_estimators._script_checks.findings import Finding, ScriptContext
from safe_estimators._script_checks.libraries import KNOWN_TO_GROUP_RULE
from safe_estimators._script_checks.program import _Program

# How a script learns its group (aws/sagemaker-training-toolkit, src/sagemaker_training/
# environment.py: resourceconfig.json's current_group_name and instance_groups become
# Environment.current_instance_group, instance_groups, is_hetero, ...; to_env_vars exports each
# as SM_<NAME>; SM_RESOURCE_CONFIG holds the whole file).
GROUP_READS = (
    "SM_CURRENT_INSTANCE_GROUP", "SM_INSTANCE_GROUPS", "SM_IS_HETERO",
    "SM_DISTRIBUTION_INSTANCE_GROUPS", "SM_DISTRIBUTION_HOSTS", "SM_CURRENT_INSTANCE_TYPE",
    "SM_RESOURCE_CONFIG", "resourceconfig.json", "current_group_name", "current_instance_group",
    "instance_groups", "is_hetero", "current_instance_type", "distribution_instance_groups",
    "distribution_hosts",
)  # fmt: skip
# A script may fork on the hardware it finds instead (`if torch.cuda.is_available():`): then it
# may run on the CPU group; the finding stays a warning.
_HARDWARE_TESTS = ("cuda.is_available", "device_count(")


def _rule_group_not_detected(program: _Program, context: ScriptContext) -> Iterator[Finding]:
    """A heterogeneous job's script must find out which group it runs in."""
    groups = context.instance_groups
    if len(groups) < 2:
        return
    if any(program.mentions(name) for name in GROUP_READS):
        return
    tests_hardware = any(program.mentions(name) for name in _HARDWARE_TESTS)
    where = ", ".join(groups)
    message = (
        f"the job runs on a heterogeneous cluster ({where}), and SageMaker runs this script on "
        "every instance of every group, but the script never reads which group it is in "
        "(SM_CURRENT_INSTANCE_GROUP, the resource config's current_group_name, "
        "sagemaker_training's Environment().current_instance_group): every group runs the same "
        "training, and the groups it was not written for fail or do the work twice (AWS, "
        "\"Configure a training job with a heterogeneous cluster\": the script \"should be "
        "modified to detect which instance group it belongs to and fork execution "
        "accordingly\")."
    )
    hint = (
        "read `os.environ[\"SM_CURRENT_INSTANCE_GROUP\"]` at start-up and run the training only "
        "in the group the distribution names (the others serve data, or exit), or use one "
        "homogeneous cluster (instance_type and instance_count)."
    )
    if program.runs_other_programs or tests_hardware:
        why = (
            " It runs another program, which may do it" if program.runs_other_programs
            else " It tests the hardware it finds, which may fork the work"
        )
        yield Finding(
            program.entry.file, 0, "warning", "group-not-detected",
            f"{message}{why}: a warning, not an error.", hint,
        )
        return
    yield program.absent(KNOWN_TO_GROUP_RULE, "group-not-detected", message, hint)
