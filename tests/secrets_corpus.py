"""A corpus of fabricated credentials and of ordinary values that look like them, and the
fields of a job they can sit in; ``tests/test_secrets_corpus.py`` runs it.

Every credential below is fabricated: it has its issuer's documented format and belongs to
nobody. ``python tests/secrets_corpus.py`` (run from a checkout's root) prints how many of them
that checkout misses, how many ordinary values it flags, and how many messages leak a secret.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from typing import Any

import attrs

R = "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"  # 36 characters, mixed case and digits
HEX = "0123456789abcdef" * 4
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THs"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzzzzzzzzzz"


@attrs.frozen
class Credential:
    """One fabricated credential: its format, the name it is passed under, the value, and the
    part of it that must never be printed (the password of a URL, ...; default: all of it)."""

    format: str
    name: str
    value: Any
    secret: str = ""
    # Its value alone says what it is, without the name beside it (an AWS secret key has the
    # shape of a hash: only its name or the access key id beside it tell).
    alone: bool = True

    @property
    def hidden(self) -> str:
        return self.secret or str(self.value)

    @property
    def by_value(self) -> bool:
        """Its value alone says what it is (else only its name does)."""
        return not self.format.startswith("by name") and self.alone


CREDENTIALS: list[Credential] = [
    Credential("GitHub classic token (ghp_)", "GITHUB_TOKEN", "ghp_" + R),
    Credential("GitHub OAuth token (gho_)", "GH_OAUTH", "gho_" + R),
    Credential("GitHub app token (ghs_)", "GH_APP", "ghs_" + R),
    Credential(
        "GitHub fine-grained token (github_pat_)", "CI_PAT", "github_pat_11ABCDEFG0" + R + R[:30]
    ),
    Credential("AWS access key id (AKIA)", "AWS_ACCESS_KEY_ID", "AKIAZ2X3Y4W5V6U7T8S9"),
    Credential("AWS temporary key id (ASIA)", "AWS_KEY", "ASIAZ2X3Y4W5V6U7T8S9"),
    Credential("AWS secret access key", "AWS_SECRET_ACCESS_KEY", AWS_SECRET, alone=False),
    Credential("Hugging Face token (hf_)", "HF_TOKEN", "hf_" + R[:34]),
    Credential("Hugging Face org token (api_org_)", "HF_ORG", "api_org_" + R[:34]),
    Credential("Slack bot token (xoxb-)", "SLACK_BOT", "xoxb-123456789012-1234567890123-" + R[:24]),
    Credential(
        "Slack user token (xoxp-)", "SLACK_USER", "xoxp-123456789012-1234567890123-" + R[:32]
    ),
    Credential(
        "Slack webhook",
        "NOTIFY",
        "https://hooks.slack.com/services/T0ABCDEFG/B0ABCDEFG/" + R[:24],
        R[:24],
    ),
    Credential("Stripe live key (sk_live_)", "PAYMENTS", "sk_live_" + R[:24]),
    Credential("Stripe restricted key (rk_live_)", "PAYMENTS_RO", "rk_live_" + R[:24]),
    Credential("Google API key (AIza)", "MAPS", "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"),
    Credential("Google OAuth client secret (GOCSPX-)", "OAUTH", "GOCSPX-" + R[:28]),
    Credential("JSON Web Token", "SESSION", JWT),
    Credential(
        "RSA private key (PEM)",
        "DEPLOY_KEY",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA" + R + "\n-----END RSA PRIVATE KEY-----",
        "MIIEowIBAAKCAQEA" + R,
    ),
    Credential(
        "OpenSSH private key",
        "SSH_KEY",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA"
        + R
        + "\n-----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjEAAAAA" + R,
    ),
    Credential(
        "PGP private key block",
        "SIGNING",
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF"
        + R
        + "\n-----END PGP PRIVATE KEY BLOCK-----",
        "lQOYBF" + R,
    ),
    Credential(
        "http URI with a password",
        "PROXY",
        "http://admin:Hunter2Passw0rd@proxy.example.com:3128",
        "Hunter2Passw0rd",
    ),
    Credential(
        "https URI with a password",
        "CODE",
        "https://u:Hunter2Passw0rdX@host.example.com/code",
        "Hunter2Passw0rdX",
    ),
    Credential(
        "s3 URI with a password", "BUCKET", "s3://user:S3cretPassw0rd@bucket/out", "S3cretPassw0rd"
    ),
    Credential(
        "redis URI with a password",
        "REDIS",
        "redis://:R3disPassw0rd@cache.example.com:6379/0",
        "R3disPassw0rd",
    ),
    Credential(
        "postgres URI with a password",
        "DATABASE_URL",
        "postgresql://admin:s3cr3tP4ssw0rd@db.example.com:5432/app",
        "s3cr3tP4ssw0rd",
    ),
    Credential(
        "mongodb URI with a password",
        "MONGO",
        "mongodb+srv://app:M0ng0Passw0rd@cluster0.abcde.mongodb.net/db",
        "M0ng0Passw0rd",
    ),
    Credential(
        "amqp URI with a password",
        "BROKER",
        "amqp://guest:Rabb1tPassw0rd@mq.example.com:5672/",
        "Rabb1tPassw0rd",
    ),
    Credential(
        "mysql URI with a password",
        "MYSQL",
        "mysql://root:R00tPassw0rd@10.0.0.5:3306/app",
        "R00tPassw0rd",
    ),
    Credential(
        "Azure storage connection string",
        "STORAGE",
        f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={R}{R}==;EndpointSuffix=core.windows.net",
        R + R,
    ),
    Credential(
        "Azure SAS URL",
        "BLOB",
        "https://acct.blob.core.windows.net/c?sv=2022-11-02&sp=r&se=2030-01-01&sig=AbCd%2BEfGh%2FIjKlMnOpQrStUvWxYz0123456789%3D",
        "AbCd%2BEfGh%2FIjKlMnOpQrStUvWxYz0123456789",
    ),
    Credential("Azure client secret (Q~)", "AZURE_AD", "abc8Q~" + R[:34]),
    Credential("OpenAI project key (sk-proj-)", "LLM", "sk-proj-" + R + R[:12]),
    Credential("OpenAI legacy key (sk-)", "LLM_OLD", "sk-" + R + "AbCdEfGhIjKl"),
    Credential("Anthropic key (sk-ant-)", "CLAUDE", "sk-ant-api03-" + R + R + "AA"),
    Credential("GitLab token (glpat-)", "GITLAB", "glpat-" + R[:20]),
    Credential("npm token (npm_)", "REGISTRY", "npm_" + R),
    Credential("PyPI token (pypi-)", "UPLOAD", "pypi-AgEIcHlwaS5vcmc" + R + R),
    Credential("Twilio API key (SK)", "SMS", "SK" + HEX[:32]),
    Credential("SendGrid key (SG.)", "MAIL", "SG." + R[:22] + "." + R + R[:7]),
    Credential("Mailgun key (key-)", "MAILGUN", "key-" + HEX[:32]),
    Credential("Shopify token (shpat_)", "SHOP", "shpat_" + HEX[:32]),
    Credential("DigitalOcean token (dop_v1_)", "DO", "dop_v1_" + HEX),
    Credential("Databricks token (dapi)", "DATABRICKS_HOST_TOKEN_X", "dapi" + HEX[:32]),
    Credential("Telegram bot token", "BOT", "123456789:AA" + R[:33]),
    Credential(
        "Discord webhook",
        "HOOK",
        "https://discord.com/api/webhooks/123456789012345678/" + R + R,
        R + R,
    ),
    Credential("HashiCorp Vault token (hvs.)", "VAULT", "hvs." + R[:24]),
    Credential("Terraform Cloud token", "TFC", "AbCdEfGhIjKlMn.atlasv1." + R + R),
    Credential("Grafana service token (glsa_)", "GRAFANA", "glsa_" + R[:32] + "_" + HEX[:8]),
    Credential("Postman key (PMAK-)", "POSTMAN", "PMAK-" + HEX[:24] + "-" + HEX[:34]),
    Credential("Replicate token (r8_)", "REPLICATE", "r8_" + R + "A"),
    Credential("Groq key (gsk_)", "GROQ", "gsk_" + R + R[:16]),
    Credential("Notion token (ntn_)", "NOTION", "ntn_" + R + R[:7]),
    Credential("Supabase token (sbp_)", "SUPABASE", "sbp_" + HEX[:40]),
    Credential("Atlassian token (ATATT3)", "JIRA", "ATATT3xFfGF0" + R + R[:20]),
    Credential(
        "age secret key",
        "AGE",
        "AGE-SECRET-KEY-1" + "QWERTYUIOPASDFGHJKLZXCVBNM0123456789QWERTYUIOPASDFGHJKLZXC",
    ),
    Credential("Dropbox token (sl.)", "DROPBOX", "sl." + R + R),
    Credential("Doppler token (dp.st.)", "DOPPLER", "dp.st.prd." + R + R[:8]),
    Credential("Mapbox secret token (sk.eyJ)", "MAPBOX", "sk.eyJ1IjoiYWJjIiwiYSI6ImNsMSJ9." + R),
    Credential("New Relic key (NRAK-)", "NEWRELIC", "NRAK-" + "ABCDEFGHIJKLMNOPQRSTUVWXYZ0"),
    Credential("Linear key (lin_api_)", "LINEAR", "lin_api_" + R + R[:4]),
    Credential("Square token (sq0atp-)", "SQUARE", "sq0atp-" + R[:22]),
    Credential("Heroku key (HRKU-)", "HEROKU", "HRKU-AA" + R + R[:24]),
    Credential(
        "Bearer header", "UPSTREAM", "Bearer AbC123dEf456GhI789jKl0mNo", "AbC123dEf456GhI789jKl0mNo"
    ),
    Credential(
        "Basic header",
        "UPSTREAM_BASIC",
        "Basic dXNlcjpQYXNzdzByZDEyMzQ1Njc4",
        "dXNlcjpQYXNzdzByZDEyMzQ1Njc4",
    ),
    Credential("by name: a password", "PGPASSWORD", "hunter2"),
    Credential("by name: a numeric password", "db_password", 12345678),
    Credential("by name: a Weights & Biases key", "WANDB_API_KEY", HEX[:40]),
    Credential("by name: a client secret", "CLIENT_SECRET", "x7f2k9q1z"),
    Credential("by name: a Twilio auth token", "TWILIO_AUTH_TOKEN", HEX[:32]),
    Credential("by name: a Hub token in hub_token", "hub_token", "my-hub-token-value"),
    Credential(
        "by name: an ADO.NET connection string",
        "CONNECTION",
        "Server=tcp:db.example.com;Database=app;User Id=sa;Password=Sup3rS3cret!;",
        "Sup3rS3cret!",
    ),
    Credential(
        "by name: a token in a query string",
        "FEED",
        "https://api.example.com/v1/data?access_token=abcDEF123456ghiJKL",
        "abcDEF123456ghiJKL",
    ),
]

# Ordinary values that must never be flagged, wherever they sit: (name, value).
BENIGN: list[tuple[str, Any]] = [
    ("pass_at_k", 5),
    ("token_budget", 0.5),
    ("pretokenized_dataset", "s3://my-bucket/pretokenized/"),
    ("max_tokens", 512),
    ("max_new_tokens", 256),
    ("max_token_length", 512),
    ("num_tokens", 1024),
    ("tokens_per_batch", 4096),
    ("token_dropout", 0.1),
    ("token_classification", "ner"),
    ("tokenizer_name", "bert-base-uncased"),
    ("tokenizer_path", "/opt/ml/input/data/tokenizer"),
    ("password_min_length", 8),
    ("min_password_length", 12),
    ("password_policy", "strict"),
    ("num_passes", 3),
    ("patience", 3),
    ("dataloader_pin_memory", "true"),
    ("pin_memory", 1),
    ("secret_sharing_rounds", 3),
    ("pad_token", "[PAD]"),
    ("eos_token", "</s>"),
    ("bos_token", "<s>"),
    ("pad_token_id", 0),
    ("special_tokens", "<|im_start|>,<|im_end|>"),
    ("model_id", "meta-llama/Llama-2-7b-hf"),
    ("model_name_or_path", "mistralai/Mistral-7B-Instruct-v0.2"),
    ("hub_model_id", "my-org/llama-2-7b-qlora"),
    ("hf_dataset", "imdb"),
    ("HF_HUB_ENABLE_HF_TRANSFER", "1"),
    ("TOKENIZERS_PARALLELISM", "false"),
    ("use_auth_token", "True"),
    ("dataset_path", "s3://my-bucket/datasets/train/"),
    ("checkpoints", "s3://sagemaker-us-east-1-111122223333/checkpoints"),
    ("output_dir", "/opt/ml/model"),
    ("HF_TOKEN_SECRET_NAME", "prod/hf-token"),
    ("secret_name", "my-secret"),
    ("SECRET_ID", "arn:aws:secretsmanager:us-west-2:111122223333:secret:hf-AbC"),
    ("DB_SECRET_ARN", "arn:aws:secretsmanager:us-west-2:111122223333:secret:db"),
    ("TOKEN_ENV_VAR", "HF_TOKEN"),
    ("KMS_KEY_ID", "arn:aws:kms:us-west-2:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"),
    ("password_file", "/opt/ml/input/secrets/pw"),
    ("credentials_path", "/root/.aws/credentials"),
    ("GOOGLE_APPLICATION_CREDENTIALS", "/opt/ml/input/data/creds/key.json"),
    ("private_key_path", "/opt/keys/id_rsa"),
    ("api_key_header", "X-Api-Key"),
    ("AUTH_TYPE", "bearer"),
    ("AUTH_SCHEME", "Bearer"),
    ("revision", "3f786850e387550fdab836ed7e6dc881de23001b"),
    ("image", "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training@sha256:" + HEX),
    ("dataset_md5", "d41d8cd98f00b204e9800998ecf8427e"),
    ("run_id", "123e4567-e89b-12d3-a456-426614174000"),
    ("run_name", "sk-learn-random-forest-baseline-v2"),
    ("sort_key", "length"),
    ("s3_key", "data/train.csv"),
    ("key", "train"),
    ("client_id", "my-client-123"),
    ("learning_rate", 0.0004),
    ("DATABASE_URL", "postgres://app:${DB_PASSWORD}@db:5432/app"),
    ("PLACEHOLDER_URL", "https://user:<password>@host.example.com/"),
    ("MLFLOW_TRACKING_URI", "https://mlflow.example.com:5000"),
    ("REPO", "ssh://git@github.com/org/repo.git"),
    ("MIRROR", "https://builder@github.com/org/repo"),
    ("CACHE", "redis://cache.example.com:6379/0"),
    ("HEALTH", "http://localhost:8080/health?verbose=1&format=json"),
    ("openai_api_base", "https://api.openai.com/v1"),
    ("OPENAI_API_TYPE", "azure"),
    ("api_version", "2024-02-01"),
    ("NCCL_DEBUG", "INFO"),
    ("deepspeed", "ds_z3_offload.json"),
    ("extra_args", "--lr 0.1 --epochs 3 --max_tokens 512"),
    ("wandb_project", "llm-finetune"),
]

# URIs without credentials, for the URI options.
BENIGN_URIS = [
    "s3://my-bucket/output/",
    "s3://sagemaker-us-east-1-111122223333/checkpoints/llama",
    "s3://my-bucket/code/",
    "s3://my-bucket/pretokenized/hf_dataset/",
]

BASE: dict[str, Any] = {
    "estimator": "pytorch",
    "entry_point": "train.py",
    "instance_type": "ml.p3.2xlarge",
    "framework_version": "2.0",
    "py_version": "py310",
    "role": "arn:aws:iam::111122223333:role/SageMakerRole",
    "check_script": False,
}


@attrs.frozen
class Field:
    """Where a value reaches the request: the options that put ``name``/``value`` there, and
    the path a problem about it names."""

    name: str
    options: Callable[[str, Any], dict[str, Any]]
    path: Callable[[str], str]
    # Whether it takes credentials known by their name only (a URI option does not).
    named: bool = True
    uri: bool = False


def _mpi(name: str, value: Any) -> dict[str, Any]:
    return {"distribution": {"mpi": {"enabled": True, "custom_mpi_options": f"-x {name}={value}"}}}


FIELDS: list[Field] = [
    Field(
        "hyperparameters",
        lambda n, v: {"hyperparameters": {n: v}},
        lambda n: f"hyperparameters.{n}",
    ),
    Field("environment", lambda n, v: {"environment": {n: str(v)}}, lambda n: f"environment.{n}"),
    Field("tags", lambda n, v: {"tags": [{"Key": n, "Value": str(v)}]}, lambda n: "tags.0.Value"),
    Field("tags (mapping)", lambda n, v: {"tags": {n: str(v)}}, lambda n: f"tags.{n}"),
    Field(
        "container_arguments",
        lambda n, v: {"container_arguments": [f"--{n.lower()}", str(v)]},
        lambda n: "container_arguments.1",
    ),
    Field(
        "container_entry_point",
        lambda n, v: {"container_entry_point": ["python", "train.py", f"--{n.lower()}={v}"]},
        lambda n: "container_entry_point.2",
    ),
    Field(
        "distribution.mpi.custom_mpi_options", _mpi, lambda n: "distribution.mpi.custom_mpi_options"
    ),
    Field(
        "hyperparameter name",
        lambda n, v: {"hyperparameters": {str(v): 1}},
        lambda n: "hyperparameters.",
        named=False,
    ),
    Field(
        "output_path", lambda n, v: {"output_path": str(v)}, lambda n: "output_path", False, True
    ),
    Field(
        "checkpoint_s3_uri",
        lambda n, v: {"checkpoint_s3_uri": str(v)},
        lambda n: "checkpoint_s3_uri",
        False,
        True,
    ),
    Field(
        "code_location",
        lambda n, v: {"code_location": str(v)},
        lambda n: "code_location",
        False,
        True,
    ),
    Field(
        "inputs", lambda n, v: {"inputs": {"train": str(v)}}, lambda n: "inputs.train", False, True
    ),
]


def applies(field: Field, credential: Credential) -> bool:
    """A field takes a credential if it can hold one of its kind: a URI option holds URIs, a
    name only what its value says, the rest everything."""
    if field.uri:
        return "://" in str(credential.value) and credential.by_value
    if not field.named:
        return credential.by_value
    return True


def leaks(text: str, secret: str) -> bool:
    """``text`` shows more of ``secret`` than its first characters."""
    if len(secret) < 12:
        return secret in text or (len(secret) >= 6 and secret[len(secret) // 3 :] in text)
    return any(secret[i : i + 8] in text for i in range(4, len(secret) - 7))


def _flagged(problems: list[Any], path: str) -> bool:
    return any(
        "looks like" in p.message and (p.path == path or p.path.startswith(path)) for p in problems
    )


def _text(problems: list[Any]) -> str:
    return "\n".join(
        [str(p) for p in problems]
        + [json.dumps({"path": p.path, "message": p.message, "hint": p.hint}) for p in problems]
    )


def run(check: Callable[[dict[str, Any]], list[Any]]) -> Iterator[tuple[str, str, str]]:
    """(outcome, format or value, field) for every case: ``missed`` a credential not reported
    at its path, ``leaked`` a message holding more than its first characters, ``flagged`` an
    ordinary value reported."""
    for credential in CREDENTIALS:
        for field in FIELDS:
            if not applies(field, credential):
                continue
            problems = check({**BASE, **field.options(credential.name, credential.value)})
            if not _flagged(problems, field.path(credential.name)):
                yield "missed", credential.format, field.name
            if leaks(_text(problems), credential.hidden):
                yield "leaked", credential.format, field.name
    for name, value in BENIGN:
        for field in FIELDS:
            if field.uri or not field.named:
                continue
            problems = check({**BASE, **field.options(name, value)})
            if any("looks like" in p.message for p in problems):
                yield "flagged", f"{name}={value!r}", field.name
    for uri in BENIGN_URIS:
        for field in FIELDS:
            if field.uri:
                problems = check({**BASE, **field.options("", uri)})
                if any("looks like" in p.message for p in problems):
                    yield "flagged", uri, field.name


def _main() -> None:
    sys.path.insert(0, ".")
    from safe_estimators._resolve import check_arguments

    def check(arguments: dict[str, Any]) -> list[Any]:
        return check_arguments(arguments)[1]

    outcomes = list(run(check))
    cases = sum(1 for c in CREDENTIALS for f in FIELDS if applies(f, c))
    for outcome in ("missed", "leaked", "flagged"):
        found = [o for o in outcomes if o[0] == outcome]
        formats = sorted({o[1] for o in found})
        print(f"{outcome}: {len(found)} cases, {len(formats)} formats/values")
        for item in formats:
            print(f"  {item}: {', '.join(sorted({o[2] for o in found if o[1] == item}))}")
    benign = sum(1 for f in FIELDS if f.named and not f.uri) * len(BENIGN)
    benign += sum(1 for f in FIELDS if f.uri) * len(BENIGN_URIS)
    print(
        f"{len(CREDENTIALS)} credentials ({len({c.format for c in CREDENTIALS})} formats) in "
        f"{cases} field placements; {len(BENIGN) + len(BENIGN_URIS)} ordinary values in "
        f"{benign} placements"
    )


if __name__ == "__main__":
    _main()
