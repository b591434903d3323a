"""The thin shells over the one path (spec -> rules -> resolved job -> build): ``validate``,
``plan``, ``port`` and the Python factories (``factories``), with ``quiet`` (the SDK's own output
silenced around our calls). Kept empty so that importing one module loads only that one
(validate must not load the plan or the builders)."""
