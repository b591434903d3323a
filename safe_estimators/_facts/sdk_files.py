"""Where the installed SageMaker SDK keeps the files the fact readers read, without importing it.

sagemaker 2.x keeps its image tables and launcher constants at the top of the package
(``sagemaker/image_uri_config/``, ``sagemaker/fw_utils.py``, ``sagemaker/estimator.py``).
sagemaker 3.x is a namespace package over several distributions (sagemaker-core, sagemaker-train,
...) and keeps them under ``sagemaker/core/`` (``sagemaker/core/image_uri_config/``,
``sagemaker/core/fw_utils.py``); ``estimator.py`` is gone with the estimators.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
from pathlib import Path

# Where each generation keeps the SDK's own modules and data, relative to the package folder.
_LAYOUTS = ("", "core/")


@functools.cache
def _package_dirs() -> tuple[Path, ...]:
    spec = importlib.util.find_spec("sagemaker")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the sagemaker package is not installed")
    return tuple(Path(location) for location in spec.submodule_search_locations)


@functools.cache
def sdk_file(relative: str) -> Path:
    """The SDK's file (or folder) ``relative`` (``fw_utils.py``, ``image_uri_config``) in
    whichever layout the installed SDK has; FileNotFoundError when neither has it."""
    for folder in _package_dirs():
        for layout in _LAYOUTS:
            path = folder / f"{layout}{relative}"
            if path.exists():
                return path
    raise FileNotFoundError(
        f"the installed sagemaker {sdk_version()} has no {relative} (looked in "
        f"sagemaker/ and sagemaker/core/)"
    )


# A wheel's metadata folder, as pip names it: the distribution's normalised name and version.
_DIST_INFO = re.compile(r"sagemaker-([^-]+)\.dist-info", re.IGNORECASE)


@functools.cache
def sdk_version() -> str:
    """The installed SageMaker SDK's version, from its metadata.

    Read from the ``dist-info`` folder beside the package: ``importlib.metadata`` costs about
    20 ms to import (it loads the ``email`` package), a quarter of a one-file ``validate``."""
    for folder in _package_dirs():
        site = os.path.dirname(folder)
        try:
            names = os.listdir(site)
        except OSError:
            continue
        for name in names:
            found = _DIST_INFO.fullmatch(name)
            if found is not None:
                return _metadata_version(os.path.join(site, name, "METADATA")) or found[1]
    import importlib.metadata  # an egg or an unusual layout: the full machinery

    return importlib.metadata.version("sagemaker")


def _metadata_version(path: str) -> str | None:
    """The ``Version:`` header of a core-metadata file; None when it cannot be read."""
    try:
        with open(path, encoding="utf-8") as lines:
            for line in lines:
                if line.startswith("Version:"):
                    return line.partition(":")[2].strip()
                if not line.strip():  # the headers end at the first blank line
                    break
    except OSError:
        pass
    return None


def sdk_generation() -> int:
    """2 or 3: the major version of the installed SageMaker SDK."""
    return int(sdk_version().split(".", 1)[0])


def default_target() -> str:
    """What a job is built as when its spec does not say: the estimator on sagemaker 2.x, the
    ModelTrainer on 3.x (which removed the estimators)."""
    return "estimator" if sdk_generation() < 3 else "model_trainer"
