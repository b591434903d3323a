"""The public surface: small, documented, typed, and cheap to import."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

import instance_catalog
import safe_estimators

PUBLIC = [
    (module, name) for module in (safe_estimators, instance_catalog) for name in module.__all__
]


@pytest.mark.parametrize(("module", "name"), PUBLIC, ids=[n for _, n in PUBLIC])
def test_every_public_name_is_documented(module, name):
    obj = getattr(module, name)
    assert inspect.getdoc(obj), f"{module.__name__}.{name} has no docstring"
    if inspect.isclass(obj):
        for attribute, member in vars(obj).items():
            if attribute.startswith("_") or not callable(member):
                continue
            assert inspect.getdoc(member), f"{name}.{attribute} has no docstring"


def test_packages_are_typed():
    for module in (safe_estimators, instance_catalog):
        assert Path(inspect.getfile(module)).with_name("py.typed").is_file()


def test_only_the_public_names_are_exported():
    exported = {n for n in dir(safe_estimators) if not n.startswith("_")}
    modules = {n for n in exported if inspect.ismodule(getattr(safe_estimators, n))}
    assert exported - modules == set(safe_estimators.__all__)
