"""What a failed judge model request means: rate-limited, transient, a bad reply, bad
credentials, or fatal. `classify` decides it; `RetryPolicy.run` (retry.py) acts on it, and each
judge's `Endpoint` (endpoint.py) learns from it (a pause, a smaller cap, a breaker).

Classification is by duck typing (status codes, headers, exception class names) so this module
imports no SDK and works for aiohttp (our openai transport), openai, google-genai, ollama
and litellm errors alike:

- rate-limited (HTTP 429, or 503 with a Retry-After): back-pressure, not an error.
- transient: HTTP 408/409/425/5xx, timeouts, connection errors and resets. A Retry-After (or
  retry-after-ms) header gives the delay.
- auth (HTTP 401/403).
- fatal: other 4xx, quota exhausted (429 insufficient_quota), a TLS certificate that does not
  verify (anywhere in the exception's chain), unknown exceptions.
- reply: an unparseable reply (JudgeReplyError, JSON or schema validation error).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Literal

from ..core.names import clip
from ..core.transient import TRANSIENT_NAMES, TRANSIENT_STATUS, status_of
from .errors import JudgeReplyError

FailureKind = Literal["rate_limited", "transient", "reply", "auth", "fatal"]


@dataclass(frozen=True)
class Failure:
    kind: FailureKind
    message: str
    status: int | None = None
    retry_after: float | None = None


def headers_of(exc: BaseException) -> Mapping[str, str] | None:
    headers = getattr(exc, "headers", None)  # chat.ChatHTTPError, aiohttp.ClientResponseError
    if headers is None:
        headers = getattr(getattr(exc, "response", None), "headers", None)  # SDK errors
    return headers if hasattr(headers, "get") else None


def retry_after_of(exc: BaseException, now: float | None = None) -> float | None:
    """Seconds the server asked us to wait: retry-after-ms, then Retry-After (seconds or date)."""
    headers = headers_of(exc)
    if headers is None:
        return None
    try:
        millis = headers.get("retry-after-ms")
        if millis is not None:
            return max(0.0, float(millis) / 1000.0)
        value = headers.get("retry-after")
    except (AttributeError, TypeError, ValueError):
        return None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when - (time.time() if now is None else now))


_DURATION = re.compile(
    r"(?:(?P<h>\d+(?:\.\d+)?)h)?(?:(?P<m>\d+(?:\.\d+)?)m(?!s))?(?:(?P<s>\d+(?:\.\d+)?)s)?"
    r"(?:(?P<ms>\d+(?:\.\d+)?)ms)?"
)


def parse_duration(text: str) -> float | None:
    """Seconds in OpenAI's x-ratelimit-reset-* form ("20ms", "1s", "6m0s", "1m30.5s"), or a
    plain number of seconds; None when it is neither."""
    text = text.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    match = _DURATION.fullmatch(text)
    if not text or match is None:
        return None
    parts = match.groupdict()
    return (
        float(parts["h"] or 0) * 3600
        + float(parts["m"] or 0) * 60
        + float(parts["s"] or 0)
        + float(parts["ms"] or 0) / 1000
    )


def rate_limit_reset_of(exc: BaseException) -> float | None:
    """When a rate-limited reply says nothing else: its x-ratelimit-reset-requests /
    x-ratelimit-reset-tokens, for the limit it exhausted (remaining 0), else the later one."""
    headers = headers_of(exc)
    if headers is None:
        return None
    waits = {}
    for kind in ("requests", "tokens"):
        raw = headers.get(f"x-ratelimit-reset-{kind}")
        wait = parse_duration(str(raw)) if raw is not None else None
        if wait is not None:
            waits[kind] = wait
    exhausted = [w for k, w in waits.items() if headers.get(f"x-ratelimit-remaining-{k}") == "0"]
    candidates = exhausted or list(waits.values())
    return max(candidates) if candidates else None


def classify(exc: BaseException) -> Failure:
    """Decide whether a failed request is worth another try."""
    text = clip(f"{type(exc).__name__}: {exc}".strip(), 300, one_line=False)
    if isinstance(exc, JudgeReplyError) or _is_parse_error(exc):
        return Failure("reply", text)
    if _is_certificate_error(exc):  # a connection error to aiohttp and httpx, but no retry fixes it
        return Failure(
            "fatal",
            f"TLS certificate verification failed: {text}; if a proxy or company CA signs the "
            "judge's certificate, point SSL_CERT_FILE at its CA bundle",
        )
    status = status_of(exc)
    if status is not None:
        if status in (401, 403):
            return Failure("auth", text, status)
        if status == 429 and "insufficient_quota" in f"{getattr(exc, 'code', '')} {exc}":
            return Failure("fatal", f"quota exhausted: {text}", status)
        retry_after = retry_after_of(exc)
        if status == 429 or (status == 503 and retry_after is not None):
            wait = retry_after if retry_after is not None else rate_limit_reset_of(exc)
            return Failure("rate_limited", text, status, wait)
        if status in TRANSIENT_STATUS or status >= 500:
            return Failure("transient", text, status, retry_after)
        return Failure("fatal", text, status)
    if isinstance(exc, (TimeoutError, ConnectionError)):
        return Failure("transient", text)
    if any(cls.__name__ in TRANSIENT_NAMES for cls in type(exc).__mro__):
        return Failure("transient", text)
    return Failure("fatal", text)


def _is_certificate_error(exc: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        names = {cls.__name__ for cls in type(current).__mro__}
        if names & {"SSLCertVerificationError", "ClientConnectorCertificateError"}:
            return True
        current = current.__cause__ or current.__context__
    return False


def _is_parse_error(exc: BaseException) -> bool:
    if isinstance(exc, json.JSONDecodeError):
        return True
    # pydantic's ValidationError, without importing pydantic here
    return any(cls.__name__ == "ValidationError" for cls in type(exc).__mro__)
