"""Framework containers the installed SageMaker SDK knows, read from its data files.

The SDK resolves a training image from ``sagemaker/image_uri_config/<framework>.json``
(``sagemaker/core/image_uri_config/`` in 3.x). Reading those files directly (without importing
``sagemaker``) lets validation agree with the SDK on what exists while staying fast. The build
step double-checks by asking the SDK for the real image URI.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import attrs
from packaging.version import InvalidVersion, Version

from safe_estimators._bounds import MAX_VERSION_CHARS
from safe_estimators._facts.sdk_files import sdk_file

# The version caches are keyed by what users write: bounded, so that a process validating many
# specs (or one fed 300 distinct 1 MB versions) keeps a few hundred small entries at most.
_CACHED_VERSIONS = 256


def parse_version(text: str) -> Version:
    """``packaging.version.Version(text)``, cached: the rules compare the same few versions."""
    if _implausible(text):
        return Version(text)
    return _parse_version(text)


@functools.lru_cache(maxsize=_CACHED_VERSIONS)
def _parse_version(text: str) -> Version:
    return Version(text)


@functools.lru_cache(maxsize=16)  # one per framework table the SDK ships
def _training_config(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((sdk_file("image_uri_config") / f"{name}.json").read_text())
    return data.get("training", data)


def _sorted_versions(versions: list[str]) -> list[str]:
    def key(v: str) -> tuple[int, Version | str]:
        try:
            return (0, Version(v))
        except InvalidVersion:
            return (1, v)

    return sorted(versions, key=key)


@attrs.frozen
class Container:
    """What the SDK knows about one training container line.

    ``version`` is the full version the user's (possibly short) version resolves to, or None when
    the SDK has no such container; ``known`` lists the full versions that exist.
    """

    config: str
    requested: str
    version: str | None
    known: tuple[str, ...]
    py_versions: tuple[str, ...] = ()
    processors: tuple[str, ...] = ()


def _lookup(config: dict[str, Any], requested: str) -> tuple[str | None, tuple[str, ...]]:
    versions = config.get("versions", {})
    full = config.get("version_aliases", {}).get(requested, requested)
    known = tuple(_sorted_versions(list(versions)))
    return (full if full in versions else None), known


def framework_container(config_name: str, version: str) -> Container:
    """Resolve ``version`` in one of the SDK's single-framework tables (``pytorch``, ...)."""
    if _implausible(version):  # resolved (as unknown), never kept
        return _framework_container.__wrapped__(config_name, version)
    return _framework_container(config_name, version)


def _implausible(*versions: object) -> bool:
    # No version in the SDK's tables is near MAX_VERSION_CHARS; longer ones are not cached.
    return any(isinstance(v, str) and len(v) > MAX_VERSION_CHARS for v in versions)


@functools.lru_cache(maxsize=_CACHED_VERSIONS)
def _framework_container(config_name: str, version: str) -> Container:
    config = _training_config(config_name)
    full, known = _lookup(config, version)
    if full is None:
        return Container(config_name, version, None, known)
    entry = config["versions"][full]
    return Container(
        config_name,
        version,
        full,
        known,
        tuple(entry.get("py_versions", ())),
        tuple(config.get("processors") or entry.get("processors") or ()),
    )


def neuron_sdk_versions(config_name: str, version: str) -> tuple[str, ...]:
    """The Neuron SDK releases a Neuron container line is built on (``sdk_versions`` in the
    SDK's table, ``sdk2.4.0`` -> ``2.4.0``); empty when the table does not say."""
    entry = _training_config(config_name).get("versions", {}).get(version, {})
    return tuple(str(v).removeprefix("sdk") for v in entry.get("sdk_versions", ()))


def huggingface_container(
    config_name: str, transformers_version: str, base_version: str, base: str = "pytorch"
) -> tuple[Container, Container | None]:
    """Resolve a Hugging Face container: the transformers line, then its base framework
    (``base``: "pytorch" or "tensorflow", at ``base_version``).

    Returns (transformers, base); base is None when the transformers version is unknown.
    """
    found = _huggingface_container
    if _implausible(transformers_version, base_version):  # resolved (as unknown), never kept
        found = found.__wrapped__  # type: ignore[assignment]
    return found(config_name, transformers_version, base_version, base)


@functools.lru_cache(maxsize=_CACHED_VERSIONS)
def _huggingface_container(
    config_name: str, transformers_version: str, base_version: str, base: str = "pytorch"
) -> tuple[Container, Container | None]:
    config = _training_config(config_name)
    full, known = _lookup(config, transformers_version)
    processors = tuple(config.get("processors") or ())
    outer = Container(config_name, transformers_version, full, known, (), processors)
    if full is None:
        return outer, None
    entry = config["versions"][full]
    bases = entry.get("version_aliases", {})
    key = bases.get(f"{base}{base_version}", f"{base}{base_version}")
    base_known = tuple(
        _sorted_versions([k[len(base) :] for k in entry if k.startswith(base)])
    )
    if key not in entry:
        return outer, Container(config_name, base_version, None, base_known)
    found = entry[key]
    return outer, Container(
        config_name,
        base_version,
        key[len(base) :],
        base_known,
        tuple(found.get("py_versions", ())),
        processors,
    )


def resolve_pytorch_version(version: str | None) -> str | None:
    """The full PyTorch version a (possibly short) version means, as the SDK resolves it."""
    if version is None:
        return None
    return framework_container("pytorch", version).version or version


def nearby(version: str, versions: list[str] | tuple[str, ...]) -> list[str]:
    """The closest versions below and above ``version`` (the fix a user wants at 2 a.m.)."""
    try:
        wanted = parse_version(version)
        ordered = sorted(versions, key=parse_version)
    except Exception:
        return list(versions[-2:])
    below = [v for v in ordered if parse_version(v) < wanted][-1:]
    above = [v for v in ordered if parse_version(v) > wanted][:1]
    return below + above or ordered[-2:]
