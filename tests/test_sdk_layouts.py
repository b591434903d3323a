"""The fact readers find the SageMaker SDK's files in both layouts: sagemaker 2.x keeps them at
the top of the package, 3.x under sagemaker/core/ (and has no estimator.py)."""

from __future__ import annotations

import json

import pytest

from safe_estimators._distributions import _sdk_source
from safe_estimators._facts import sdk_files, versions

pytestmark = pytest.mark.both_sdks


def _clear_caches() -> None:
    for cached in (
        sdk_files.sdk_file,
        _sdk_source._assignments,
        _sdk_source._tree,
        versions._training_config,
        versions._framework_container,
    ):
        cached.cache_clear()


@pytest.fixture
def sdk3_layout(tmp_path, monkeypatch):
    """A sagemaker 3-shaped namespace package: two distributions, the files under core/."""
    train, core = tmp_path / "train" / "sagemaker", tmp_path / "core" / "sagemaker"
    (train / "train").mkdir(parents=True)
    (core / "core" / "image_uri_config").mkdir(parents=True)
    (core / "core" / "fw_utils.py").write_text(
        'TORCH_DISTRIBUTED_GPU_SUPPORTED_FRAMEWORK_VERSIONS = ["2.9.9"]\n'
    )
    table = {"training": {"versions": {"2.9.9": {"py_versions": ["py312"]}}}}
    (core / "core" / "image_uri_config" / "pytorch.json").write_text(json.dumps(table))
    monkeypatch.setattr(sdk_files, "_package_dirs", lambda: (train, core))
    _clear_caches()
    yield
    _clear_caches()


def test_the_installed_sdks_files_are_found():
    assert sdk_files.sdk_file("fw_utils.py").name == "fw_utils.py"
    assert (sdk_files.sdk_file("image_uri_config") / "pytorch.json").is_file()
    assert versions.framework_container("pytorch", "2.2").version == "2.2.0"


def test_sagemaker_3_layout_is_read_under_core(sdk3_layout):
    assert _sdk_source.sdk_constant(
        "fw_utils.py", "TORCH_DISTRIBUTED_GPU_SUPPORTED_FRAMEWORK_VERSIONS"
    ) == ["2.9.9"]
    container = versions.framework_container("pytorch", "2.9.9")
    assert container.version == "2.9.9"
    assert container.py_versions == ("py312",)


def test_estimator_py_missing_under_sagemaker_3_is_a_lookup_error(sdk3_layout):
    with pytest.raises(LookupError, match=r"estimator\.py"):
        _sdk_source.sdk_constant(
            "estimator.py", "Framework.UNSUPPORTED_DLC_IMAGE_FOR_SM_PARALLELISM"
        )


def test_the_sdk_version_is_the_one_its_metadata_gives():
    # Read from the dist-info folder without importlib.metadata (20 ms of every validate); it
    # must agree with the full machinery on both SDK generations.
    import importlib.metadata

    sdk_files.sdk_version.cache_clear()
    assert sdk_files.sdk_version() == importlib.metadata.version("sagemaker")
