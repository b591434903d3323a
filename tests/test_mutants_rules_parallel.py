"""Tests written against the surviving mutants of ./dev mutate (tests/mutation_scope.py names
the modules these are tests of)."""

from __future__ import annotations
