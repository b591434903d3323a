"""Facts as data: what the rules know about SageMaker, one table per fact.

- ``versions``: the framework containers the installed SageMaker SDK knows, read from its own
  image tables (never copied).
- ``limits``: CreateTrainingJob limits, read from botocore's service model.
- ``sdk_arguments``: the estimator keywords the SDK accepts, those of its other estimators and
  the misplaced names it drops (tests compare them with its signatures).
- ``tables``: our own tables (Training Compiler families, distribution keys, SDK-added
  hyperparameters), each with its source.

Facts that belong to one distribution strategy (a library's version per container, when each
option appeared) live with that strategy in ``_distributions/``.
"""
