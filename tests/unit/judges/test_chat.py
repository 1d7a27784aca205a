"""The judges' chat client: TLS trust, OpenAI error envelopes, proxies from the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_evalcases.judges.chat import env_proxy, error_from_reply, tls_context
from pytest_evalcases.judges.failures import classify


def test_tls_trusts_ssl_cert_file_else_certifi(tmp_path: Path) -> None:
    import certifi

    bundle = Path(certifi.where()).read_text()
    one = bundle[: bundle.index("-----END CERTIFICATE-----") + len("-----END CERTIFICATE-----")]
    ca_file = tmp_path / "company-ca.pem"
    ca_file.write_text(one[one.index("-----BEGIN CERTIFICATE-----") :] + "\n")
    assert len(tls_context({"SSL_CERT_FILE": str(ca_file)}).get_ca_certs()) == 1
    assert len(tls_context({}).get_ca_certs()) == bundle.count("-----BEGIN CERTIFICATE-----")


@pytest.mark.parametrize(
    ("status", "body", "message", "code"),
    [
        (
            429,
            b'{"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}',
            "HTTP 429: Rate limit reached (rate_limit_exceeded)",
            "rate_limit_exceeded",
        ),
        (400, b'{"error": "model not found"}', "HTTP 400: model not found", None),
        (502, b"<html>Bad Gateway</html>", "HTTP 502: <html>Bad Gateway</html>", None),
        (500, b"", "HTTP 500: (empty body)", None),
    ],
)
def test_http_errors_read_the_openai_envelope(
    status: int, body: bytes, message: str, code: str | None
) -> None:
    error = error_from_reply(status, {"Retry-After": "3"}, body)
    assert (str(error), error.code, error.status_code) == (message, code, status)
    kind = "rate_limited" if status == 429 else "transient" if status > 429 else "fatal"
    assert classify(error).kind == kind


def test_proxy_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "no_proxy",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "NO_PROXY",
        "REQUEST_METHOD",
    ):
        monkeypatch.delenv(name, raising=False)
    assert env_proxy("https://api.openai.com/v1/chat/completions") is None
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.corp:3128")
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
    assert env_proxy("https://api.openai.com/v1/chat/completions") == "http://proxy.corp:3128"
    assert env_proxy("http://127.0.0.1:8000/v1/chat/completions") is None
    assert env_proxy("http://vllm.corp:8000/v1/chat/completions") is None  # no HTTP_PROXY
