"""SageMaker facts the rules read, one table each (sources in shared/reference/sagemaker-facts.md).

Framework versions are not here: they come from the installed SDK's own data (see ``versions``).
"""

from __future__ import annotations

# Instance families SageMaker Training Compiler supports (the SDK's
# TrainingCompilerConfig.SUPPORTED_INSTANCE_CLASS_PREFIXES; a test keeps the two equal).
COMPILER_FAMILIES: tuple[str, ...] = ("p3", "p3dn", "g4dn", "p4d", "g5")

# The oldest PyTorch with which the compiler's containers run multi-GPU jobs through the PyTorch/XLA
# distribution (``pytorchxla``); older compiler containers are single-GPU only.
COMPILER_XLA_MIN_PYTORCH: dict[str, str] = {"huggingface": "1.11", "pytorch": "1.12"}

# The SageMaker SDK table each estimator resolves its training image from, without and with the
# compiler.
IMAGE_CONFIGS: dict[tuple[str, bool], str] = {
    ("pytorch", False): "pytorch",
    ("pytorch", True): "pytorch-training-compiler",
    ("huggingface", False): "huggingface",
    ("huggingface", True): "huggingface-training-compiler",
}

# The SDK table for PyTorch training containers on Trainium (ml.trn*) instances.
NEURON_IMAGE_CONFIG = "pytorch-neuron"

# The first Neuron SDK release with Trainium2 (ml.trn2*): AWS Neuron release notes, Neuron 2.21.0
# (2024-12-20), which added Trn2 and NeuronCore-v3. Containers built on older releases predate it.
TRN2_FIRST_NEURON_SDK = "2.21.0"

# Distribution strategies the PyTorch and Hugging Face estimators read, with the keys each one
# reads. The SDK silently ignores anything else, so a typo there means a job that is not
# distributed at all.
DISTRIBUTION_KEYS: dict[str, frozenset[str]] = {
    "pytorchxla": frozenset({"enabled"}),
    "pytorchddp": frozenset({"enabled"}),
    "torch_distributed": frozenset({"enabled"}),
    "parameter_server": frozenset({"enabled", "custom_mpi_options"}),
    "mpi": frozenset({"enabled", "processes_per_host", "custom_mpi_options"}),
    "smdistributed": frozenset({"dataparallel", "modelparallel"}),
    "instance_groups": frozenset(),
}

# AWS's spelling of the PyTorch/XLA distribution on its troubleshooting page; the SDK only
# honours "pytorchxla".
XLA_MISSPELLINGS: tuple[str, ...] = ("torchxla", "pytorch_xla", "torch_xla", "xla")

# The SageMaker SDK's default max_run (EstimatorBase), in seconds.
DEFAULT_MAX_RUN = 24 * 60 * 60
