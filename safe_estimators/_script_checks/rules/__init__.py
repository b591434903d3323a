"""The script rules, one module per family; ``_script_checks._RULES`` lists them all."""
