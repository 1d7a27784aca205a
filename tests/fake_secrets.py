"""Fake keys of each shape the redaction knows, for the redaction and scan tests.

They are assembled at run time from pieces, so no file holds anything that a secret scanner
(ours, or a code host's push protection) takes for a key.
"""

from __future__ import annotations

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
