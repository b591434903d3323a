"""What a secret looks like in hyperparameters and environment variables.

DescribeTrainingJob shows both in plain text to anyone with read access to SageMaker, and they
end up in CloudTrail and in the console. One table of patterns, read by the secrets rule.
"""

from __future__ import annotations

import re

# Values that are credentials whatever key they sit under.
SECRET_VALUES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("an AWS access key id", re.compile(r"\b(?:AKIA|ASIA|AIDA|AROA)[A-Z0-9]{16}\b")),
    (
        "an AWS secret access key",
        # 40 characters of base64 with upper case, lower case and a digit; git SHAs (hex, lower
        # case) and ordinary words do not match.
        re.compile(r"^(?=.*[A-Z])(?=.*[a-z])(?=.*[0-9])[A-Za-z0-9/+]{40}$"),
    ),
    ("a Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    ("a GitHub token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,}\b")),
    ("a private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
)

# Key names that hold secrets. Tokenizer settings (pad_token, eos_token, max_tokens) are not
# secrets, so "token" counts only after a word that names a credential.
SECRET_KEY = re.compile(
    r"(?:^|[_\-.])(?:password|passwd|pwd|secret|secret_key|secret_access_key|api_key|apikey"
    r"|private_key|credentials?|session_token|security_token)(?:$|[_\-.])"
    r"|(?:^|[_\-.])(?:hf|hub|huggingface|huggingface_hub|api|access|auth|github|gh|gitlab"
    r"|wandb|bearer|refresh|slack|openai|comet|neptune|mlflow_tracking)[_\-.]?token$",
    re.IGNORECASE,
)

# Values that name a secret instead of holding it are the right way to pass one.
SECRET_REFERENCE = re.compile(r"^(?:arn:aws[a-z-]*:(?:secretsmanager|ssm):|\{\{resolve:)")


def secret_kind(key: str, value: object) -> str | None:
    """Say what kind of secret ``key=value`` looks like, or None when it looks harmless."""
    text = value if isinstance(value, str) else None
    if text is not None and SECRET_REFERENCE.match(text):
        return None
    if text is not None:
        for kind, pattern in SECRET_VALUES:
            if pattern.search(text):
                return kind
    if SECRET_KEY.search(key) and text not in (None, ""):
        return "a secret (by its name)"
    return None
