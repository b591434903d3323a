"""Property: whatever values the factories get, the only failure is our ConfigError."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import safe_estimators
from safe_estimators import ConfigError

SCRIPT = str(Path(__file__).parent / "fixtures" / "jobs" / "train.py")
ROLE = "arn:aws:iam::111122223333:role/SageMakerRole"

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=20),
    st.floats(allow_nan=True),
    st.text(max_size=12),
    st.sampled_from(["ml.p3.8xlarge", "ml.g5.2xlarge", "local", "1.13.1", "py39", "4.21.1"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)

# Each argument gets either a plausible value or an arbitrary one.
arguments = st.fixed_dictionaries(
    {},
    optional={
        "instance_type": st.one_of(st.sampled_from(["ml.p3.8xlarge", "ml.c5.xlarge"]), values),
        "instance_count": st.one_of(st.integers(-2, 4), values),
        "framework_version": st.one_of(st.sampled_from(["1.13.1", "2.0", "9"]), values),
        "py_version": st.one_of(st.sampled_from(["py39", "py310"]), values),
        "hyperparameters": values,
        "environment": values,
        "distribution": values,
        "training_compiler": values,
        "model_parallel": values,
        "use_spot_instances": values,
        "max_wait": values,
        "image_uri": values,
        "volume_size": values,
        "bogus_option": values,
    },
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arguments)
def test_pytorch_factory_raises_only_config_error(sagemaker_session, extra):
    base = {
        "entry_point": SCRIPT,
        "role": ROLE,
        "instance_type": "ml.p3.8xlarge",
        "framework_version": "1.13.1",
        "py_version": "py39",
        "sagemaker_session": sagemaker_session,
    }
    _only_config_error(safe_estimators.pytorch, {**base, **extra})


hf_arguments = st.fixed_dictionaries(
    {},
    optional={
        "instance_type": st.one_of(st.sampled_from(["ml.g5.12xlarge", "ml.p3.2xlarge"]), values),
        "instance_count": st.one_of(st.integers(-2, 4), values),
        "transformers_version": st.one_of(st.sampled_from(["4.21.1", "4.28", "4.99"]), values),
        "pytorch_version": st.one_of(st.sampled_from(["1.11.0", "2.0"]), values),
        "py_version": st.one_of(st.sampled_from(["py38", "py310"]), values),
        "environment": values,
        "distribution": values,
        "training_compiler": st.one_of(st.booleans(), values),
        "model_parallel": values,
        "hyperparameters": values,
        "tags": values,
    },
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hf_arguments)
def test_huggingface_factory_raises_only_config_error(sagemaker_session, extra):
    base = {
        "entry_point": SCRIPT,
        "role": ROLE,
        "instance_type": "ml.p3.8xlarge",
        "transformers_version": "4.21.1",
        "pytorch_version": "1.11.0",
        "py_version": "py38",
        "training_compiler": True,
        "sagemaker_session": sagemaker_session,
    }
    _only_config_error(safe_estimators.huggingface, {**base, **extra})


def _only_config_error(factory, arguments):
    try:
        factory(**arguments)
    except ConfigError as error:
        assert error.problems
        assert all(p.path and p.message for p in error.problems)
