"""Spec files: reading them (``read``), where their keys are written (``locations``) and their
JSON Schema (``schema``). Kept empty so that importing one module loads only that one."""
