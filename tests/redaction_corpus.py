"""What the redaction must leave alone, and what it must find: a corpus of ordinary text (ids,
hashes, uuids, base64 data, tokens of no known shape, URLs without a password, prose) and one
planted secret of each shape. Shared by the unit tests (tests/hostile/test_secret_shapes.py) and
benchmarks/redaction.py, which prints the false-positive count and the shapes found.

Everything is generated from a fixed seed: the same corpus on every run.
"""

from __future__ import annotations

import base64
import hashlib
import random
import string
import uuid

import fake_secrets as fake

SEED = 30
_ALNUM = string.ascii_letters + string.digits

PROSE = (
    "Run jotter doctor to check the database, the config file and the sync remote in one go.",
    "If notes.db is corrupted, restore the latest copy with jotter backup restore (risk-free).",
    "Basic setup takes five minutes; the basic plan has no API access.",
    "The password must be at least 12 characters and is never stored in plain text.",
    "Reset your password: open Settings, then Security, then Reset.",
    "Rotate the secret key every 90 days; the secret_key setting names the file it lives in.",
    "Authorization is required for the admin pages (see the access control list).",
    "The sig parameter of a SAS URL is its signature; keep SAS tokens out of the logs.",
    "Subscription keys are shown in the portal under Keys and Endpoint.",
    "Our sk-learn-tutorial-2024 notes and the task-force page cover the same ground.",
    "Use hf_hub_download to fetch a model file, or set hf_transfer for faster downloads.",
    "Stripe objects have ids such as cus_ and pi_; live mode and test mode use different keys.",
    "Connect with postgres://localhost:5432/orders or mysql://db.internal/app as the docs say.",
    "The proxy answers 407 until Proxy-Authorization is set; ask IT for the proxy address.",
    "A git sha is 40 hexadecimal digits; a uuid is 32 digits in five groups.",
    "Deploy with `git push origin main`, then tag the release as v2.4.1.",
)

URLS = (
    "https://example.com/docs/getting-started?lang=en&page=2",
    "https://user@git.example.com/org/repo.git",
    "ssh://git@github.com:22/org/repo.git",
    "git@github.com:org/repo.git",
    "postgres://db.internal:5432/orders",
    "postgresql://localhost/app?sslmode=require",
    "http://[::1]:8080/health",
    "http://127.0.0.1:8765/v1/chat/completions",
    "mailto:support@example.com",
    "https://cdn.example.com/img/logo.png?v=3&signature_version=4",
    "https://acct.blob.core.windows.net/c/report.pdf?sv=2022-11-02&sr=b&sp=r",
    "https://example.com/search?q=basic+auth&sig=",
    "redis://cache.internal:6379/0",
    "https://api.openai.com/v1/chat/completions",
)

IDS = (
    "chatcmpl-9xZ2kLmN4pQ7rS1tU3vW5yA",
    "msg_01XFDUDYJgAACzvnptvVoYEL",
    "req_011CZq8xK3vNxK3vNpL0wR7",
    "call_Zq8xK3vNxK3vNxK3vNpL0wR7",
    "asst_abc123DEF456ghi789JKL0",
    "thread_Zq8xK3vNxK3vNpL0wR7tY2u",
    "file-Zq8xK3vNxK3vNxK3vNpL0",
    "cus_NffrFeUfNV2Hib",
    "pi_3MtwBwLkdIwHu7ix28a3tqPa",
    "ch_3LmnOpQrStUvWxYz01234567",
    "run-2024-05-01T12-30-00-troubleshooting",
    "troubleshooting-db-locked",
    "sk-learn-docs",
    "risk-free",
    "task-force-report-2024",
    "hf_transfer",
    "sk_live_mode",
    "x-request-id: 8f3c2a9e-5b1d-4f7a-9c3e-2d4b6a8f0e1c",
)


def _hashes(rng: random.Random) -> list[str]:
    found = []
    for _ in range(100):
        data = rng.randbytes(32)
        found += [
            hashlib.sha1(data).hexdigest(),  # a git sha is a sha1
            hashlib.sha256(data).hexdigest(),
            hashlib.md5(data).hexdigest(),
            hashlib.sha1(data).hexdigest()[:12],
            "sha256:" + hashlib.sha256(data).hexdigest(),
            hashlib.sha1(data).hexdigest().upper(),
        ]
    return found


def _uuids(rng: random.Random) -> list[str]:
    return [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(200)]


def _base64_blobs(rng: random.Random) -> list[str]:
    blobs = []
    for length in (9, 12, 24, 30, 33, 48, 60, 96, 150, 300):
        for _ in range(20):
            data = rng.randbytes(length)
            blobs.append(base64.b64encode(data).decode())
            blobs.append(base64.urlsafe_b64encode(data).decode().rstrip("="))
    # Image data in a data URL, as a multimodal trace holds it.
    blobs.append("data:image/png;base64," + base64.b64encode(rng.randbytes(600)).decode())
    return blobs


def _tokens(rng: random.Random) -> list[str]:
    """Random tokens of no known prefix (session ids, cursors, nonces): not a key shape."""
    tokens = []
    for length in (16, 20, 24, 32, 40, 48, 64):
        for _ in range(20):
            tokens.append("".join(rng.choice(_ALNUM) for _ in range(length)))
    return tokens


def ordinary_texts() -> list[tuple[str, str]]:
    """(category, text) of everything the redaction must leave as it is."""
    rng = random.Random(SEED)
    corpus = [("prose", text) for text in PROSE]
    corpus += [("url", text) for text in URLS]
    corpus += [("id", text) for text in IDS]
    corpus += [("hash", text) for text in _hashes(rng)]
    corpus += [("uuid", text) for text in _uuids(rng)]
    corpus += [("base64", text) for text in _base64_blobs(rng)]
    corpus += [("token", text) for text in _tokens(rng)]
    return corpus


def planted_secrets() -> list[tuple[str, str]]:
    """(the kind a finding names, a text holding one secret of that shape)."""
    return [
        ("openai-key", f"auth failed for {fake.OPENAI}"),
        ("anthropic-key", f"key {fake.ANTHROPIC}"),
        ("google-api-key", f"key={fake.GOOGLE}"),
        ("github-token", f"token {fake.GITHUB}"),
        ("slack-token", f"slack {fake.SLACK_BOT}"),
        ("jwt", f"session {fake.JWT}"),
        ("private-key", f"the key:\n{fake.PEM}"),
        ("aws-access-key-id", f"id {fake.AWS}"),
        ("aws-secret-key", f"aws_secret_access_key = {fake.AWS_SECRET}"),
        ("aws-secret-key", f"AWS_SECRET_ACCESS_KEY={fake.SHORT_AWS_SECRET}"),
        ("bearer-token", "Authorization: Bearer abcDEF1234567890xyzXYZ"),
        ("password", f'{{"user": "app", "password": "{fake.URL_PASSWORD}"}}'),
        ("password", f"host=db.internal user=app password={fake.URL_PASSWORD} dbname=orders"),
        ("stripe-key", f"stripe {fake.STRIPE}"),
        ("stripe-key", f"stripe {fake.STRIPE_TEST}"),
        ("stripe-key", f"stripe {fake.STRIPE_RESTRICTED}"),
        ("huggingface-token", f"HF token {fake.HUGGING_FACE}"),
        ("url-password", f"connect to {fake.DSN}"),
        ("url-password", f"clone {fake.URL_WITH_PASSWORD}"),
        ("basic-auth", f"Proxy-Authorization: {fake.BASIC_AUTH}"),
        ("azure-subscription-key", f"Ocp-Apim-Subscription-Key: {fake.AZURE_SUBSCRIPTION_KEY}"),
        ("azure-sas-signature", f"download {fake.AZURE_SAS_URL}"),
    ]
