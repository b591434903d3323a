"""Heterogeneous clusters: ``spec`` holds the typed groups (read by the typed job spec), ``rules``
the rules over them (read with the job's Context). Kept apart so that the typed spec never
imports the rules stage."""
