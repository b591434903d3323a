"""Property: any data at all, as a spec file would hold it, gives problems, never an exception."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from safe_estimators._memory.shape import FIELDS as MODEL_FIELDS
from safe_estimators._resolve import check_arguments
from safe_estimators._spec import SPEC_FIELDS

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=20),
    st.sampled_from(["ml.p3.8xlarge", "ml.trn1.32xlarge", "local_gpu", "1.13", "py39", "4.21.1"]),
    st.sampled_from(["7B", "1e9", "bf16", "adamw", "config.json"]),
)
NESTED_KEYS = sorted(SPEC_FIELDS | set(MODEL_FIELDS))  # model: takes ModelShape's fields
data = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(
            st.one_of(st.text(max_size=10), st.sampled_from(NESTED_KEYS)),
            inner,
            max_size=4,
        ),
    ),
    max_leaves=12,
)
keys = st.sampled_from(
    sorted(SPEC_FIELDS | {"volume_size", "tags", "process_per_host", "partitions", "pytorchxla"})
)
specs = st.dictionaries(st.one_of(keys, st.text(max_size=8), st.integers()), data, max_size=12)


@settings(max_examples=400, deadline=None)
@given(specs, st.sampled_from(["pytorch", "huggingface", None, 3]))
def test_any_spec_data_gives_problems_not_exceptions(spec, estimator):
    arguments = {
        "estimator": estimator,
        "entry_point": "train.py",
        "instance_type": "ml.p3.16xlarge",
        **spec,
    }
    parsed, problems, _ = check_arguments(arguments)
    assert all(p.path and p.message for p in problems)
    if parsed is None:
        assert any(p.severity == "error" for p in problems)
