"""Fake keys of each shape the redaction knows, for the redaction and scan tests.

They are assembled at run time from pieces, so no file holds anything that a secret scanner
(ours, or a code host's push protection) takes for a key.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

RANDOM = "Zq8" + "xK3vN" * 4 + "pL0wR7tY2u"  # mixed case and digits, as generated keys are


def fake(prefix: str, body: str = RANDOM) -> str:
    return prefix + body


OPENAI = fake("sk-", "proj-" + RANDOM + "_" + RANDOM[::-1] + "-" + RANDOM)
OPENAI_LEGACY = fake("sk-", (RANDOM * 2)[:48])
ANTHROPIC = fake("sk-ant-", "api03-" + RANDOM * 3 + "-AA")
GOOGLE = fake("AIza", "Sy" + (RANDOM * 2)[:33])
GITHUB = fake("ghp_", (RANDOM * 2)[:36])
GITHUB_APP = fake("ghs_", (RANDOM * 2)[:36])
GITHUB_OAUTH = fake("gho_", (RANDOM * 2)[:36])
GITHUB_PAT = fake("github_pat_", "11ABCDEFG0" + "_" + (RANDOM * 3)[:59])
SLACK_BOT = fake("xoxb-", "123456789012-1234567890123-" + RANDOM[:24])
SLACK_USER = fake("xoxp-", "123456789012-1234567890123-" + RANDOM[:24])
AWS = fake("AKIA", "IOSFODNN7EXAMPLE")
AWS_TEMPORARY = fake("ASIA", "Y34FZKBOKMUTVV7A")


def _base64url(data: bytes) -> str:
    import base64

    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def fake_jwt(subject: str = "user-1") -> str:
    """A bare JWT: base64url JSON header and payload, and a signature."""
    header = _base64url(b'{"alg":"HS256","typ":"' + b"JWT" + b'"}')
    payload = _base64url(('{"sub":"' + subject + '","iat":1700000000}').encode())
    return ".".join((header, payload, _base64url(RANDOM.encode() * 2)))


def fake_pem(kind: str = "RSA") -> str:
    """A PEM private-key block, its body lines of base64."""
    label = f"{kind} PRIVATE" + " KEY" if kind else "PRIVATE" + " KEY"
    body = "\n".join([("MIIEpAIBAAKCAQEA" + RANDOM + RANDOM[::-1])[:64]] * 3)
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"


JWT = fake_jwt()
# An AWS secret access key: 40 characters of base64, `/` included.
AWS_SECRET = (RANDOM[:20] + "/" + RANDOM[::-1])[:40]
PEM = fake_pem()

# Shapes added for issue 30: providers' own prefixes, credentials inside URLs and headers.
STRIPE = fake("sk_" + "live_", (RANDOM * 2)[:24])
STRIPE_TEST = fake("sk_" + "test_", (RANDOM[::-1] * 2)[:32])
STRIPE_RESTRICTED = fake("rk_" + "live_", (RANDOM * 2)[3:27])
HUGGING_FACE = fake("hf_", ("QwErTyUiOpAsDfGhJkLzXcVbNm" * 2)[:34])
URL_PASSWORD = "Pw" + RANDOM[:10]  # the password of the URLs below
DSN = "postgres://" + "app:" + URL_PASSWORD + "@db.internal:5432/orders"
URL_WITH_PASSWORD = "https://" + "deploy:" + URL_PASSWORD + "@git.example.com/org/repo.git"
BASIC_CREDENTIALS = "proxyuser:" + URL_PASSWORD  # what a Basic header carries, base64-encoded
AZURE_SUBSCRIPTION_KEY = ("9f8e7d6c5b4a" + "3f2e1d0c" * 3)[:32]  # 32 hex digits, as Azure's are
AZURE_SAS_SIGNATURE = "Zq8xK3vN" + "%2B" + RANDOM[:24] + "%3D"
AZURE_SAS_URL = (
    "https://acct.blob.core.windows.net/c/report.pdf?sv=2022-11-02&se=2030-01-01T00%3A00%3A00Z"
    "&sr=b&sp=r&sig=" + AZURE_SAS_SIGNATURE
)
SHORT_AWS_SECRET = "Ab3" + "shortsecret9"  # not 40 characters: only its field names it


def basic_auth_header(credentials: str = BASIC_CREDENTIALS) -> str:
    import base64

    return "Basic " + base64.b64encode(credentials.encode()).decode()


BASIC_AUTH = basic_auth_header()


def live_run_read_back(project: Any) -> SimpleNamespace:
    """Run a leaking project (tests/evalhelpers.Project) with --live, --junitxml and
    --eval-report, and read back what it wrote (path -> text) and what it printed."""
    from evalhelpers import output

    before = project.all_files()
    result = project.run(
        "--live", "-p", "no:cacheprovider", "--junitxml=junit.xml", "--eval-report=reports", "-rA"
    )
    written = sorted(project.all_files() - before)
    return SimpleNamespace(
        project=project,
        result=result,
        texts={name: (project.root / name).read_text(encoding="utf-8") for name in written},
        printed=output(result),
    )
