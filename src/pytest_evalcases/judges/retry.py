"""Our retry policy around every judge model request.

Why our own: deepeval's policy gives up after 2 attempts (DEEPEVAL_RETRY_MAX_ATTEMPTS, cap 5 s)
and switches the openai SDK's retries off, so two 429s in a row fail a metric. Here every single
model request (not the whole metric) goes through `RetryPolicy.run`; our chat client does not
retry by itself, so exactly one policy is in force.

Classification is by duck typing (status codes, headers, exception class names) so this module
imports no SDK and works for aiohttp (our openai transport), openai, google-genai, ollama
and litellm errors alike:

- rate-limited (HTTP 429, or 503 with a Retry-After): back-pressure, not an error. The request
  waits (the judge's Endpoint pauses every request to that endpoint) and tries again without
  using up an attempt, until `rate_limit_wait` seconds have passed since its first rate-limited
  reply; then a JudgeError that names the limit.
- transient, retried with exponential backoff and jitter: HTTP 408/409/425/5xx, timeouts,
  connection errors and resets. A Retry-After (or retry-after-ms) header sets the delay instead.
- authentication (HTTP 401/403): fails at once with JudgeAuthError naming the key variable.
- other 4xx, quota exhausted (429 insufficient_quota), a TLS certificate that does not verify
  (anywhere in the exception's chain), unknown exceptions: fail at once.
- an unparseable reply (JudgeReplyError, JSON or schema validation error): retried up to
  `reply_attempts` times in total, then a JudgeError.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from ..core.names import clip
from .errors import JudgeAuthError, JudgeConfigError, JudgeError, JudgeReplyError

if TYPE_CHECKING:
    from .endpoint import Endpoint

T = TypeVar("T")

FailureKind = Literal["rate_limited", "transient", "reply", "auth", "fatal"]

_TRANSIENT_STATUS = frozenset({408, 409, 425})
# Exception class names (anywhere in the MRO) that mean "the request never got a proper answer".
_TRANSIENT_NAMES = frozenset(
    {
        "ClientConnectionError",  # aiohttp: refused, reset, server disconnected
        "ClientPayloadError",  # aiohttp: the body broke off
        "APIConnectionError",  # openai (APITimeoutError derives from it)
        "APITimeoutError",
        "TimeoutException",  # httpx
        "ConnectError",
        "ReadError",
        "WriteError",
        "RemoteProtocolError",
        "NetworkError",
        "TransportError",
        "ServiceUnavailableError",  # litellm
        "ServerError",  # google-genai (5xx)
    }
)


@dataclass(frozen=True)
class Failure:
    kind: FailureKind
    message: str
    status: int | None = None
    retry_after: float | None = None


def status_of(exc: BaseException) -> int | None:
    """The HTTP status an SDK exception carries, if any."""
    for candidate in (
        getattr(exc, "status_code", None),
        getattr(getattr(exc, "response", None), "status_code", None),
        getattr(exc, "code", None),  # google-genai APIError.code; openai's .code is a str
        getattr(exc, "status", None),
    ):
        is_number = isinstance(candidate, int) and not isinstance(candidate, bool)
        if is_number and 100 <= candidate < 600:
            return candidate
    return None


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
        if status in _TRANSIENT_STATUS or status >= 500:
            return Failure("transient", text, status, retry_after)
        return Failure("fatal", text, status)
    if isinstance(exc, (TimeoutError, ConnectionError)):
        return Failure("transient", text)
    if any(cls.__name__ in _TRANSIENT_NAMES for cls in type(exc).__mro__):
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


# Environment settings of the policy (documented in docs/judges.md).
RETRIES_ENV = "EVALCASES_JUDGE_RETRIES"
BACKOFF_ENV = "EVALCASES_JUDGE_BACKOFF"
RATE_LIMIT_WAIT_ENV = "EVALCASES_JUDGE_RATE_LIMIT_WAIT"


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry. `sleep` is injectable so tests never wait long."""

    max_attempts: int = 6  # requests in total, the first one included (rate-limited ones aside)
    base_delay: float = 0.5  # seconds before the first retry
    max_delay: float = 60.0  # cap on any single wait, Retry-After included
    jitter: float = 0.1  # each wait is stretched by up to this fraction, at random
    reply_attempts: int = 3  # attempts when the reply is unparseable (same prompt, same model)
    rate_limit_wait: float = 600.0  # seconds a request keeps trying after its first rate limit
    sleep: Callable[[float], Awaitable[Any]] = field(default=asyncio.sleep, compare=False)
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> RetryPolicy:
        """The default policy, with EVALCASES_JUDGE_RETRIES (retries after the first attempt),
        EVALCASES_JUDGE_BACKOFF (seconds before the first retry) and
        EVALCASES_JUDGE_RATE_LIMIT_WAIT (seconds) applied when set."""
        policy = cls()
        retries = env_number(env, RETRIES_ENV, policy.max_attempts - 1)
        if retries != int(retries):
            raise JudgeConfigError(f"{RETRIES_ENV}={env[RETRIES_ENV]!r} must be a whole number")
        return cls(
            max_attempts=int(retries) + 1,
            base_delay=env_number(env, BACKOFF_ENV, policy.base_delay),
            rate_limit_wait=env_number(env, RATE_LIMIT_WAIT_ENV, policy.rate_limit_wait),
        )

    def backoff(self, retry_number: int) -> float:
        """Wait before retry `retry_number` (1 = first retry): base * 2^(n-1), capped, jittered."""
        delay = min(self.max_delay, self.base_delay * (2 ** (retry_number - 1)))
        return min(self.max_delay, delay * (1.0 + self.jitter * self.rng.random()))

    def delay_for(self, failure: Failure, retry_number: int) -> float:
        if failure.retry_after is not None:
            return min(self.max_delay, failure.retry_after)
        return self.backoff(retry_number)

    async def run(
        self,
        request: Callable[[int], Awaitable[T]],
        *,
        what: str,
        key_env: str | None = None,
        on_retry: Callable[[Failure, float], None] | None = None,
        endpoint: Endpoint | None = None,
    ) -> T:
        """Call `request(attempt)` (attempt counts from 1) until it succeeds or we give up.

        With an `endpoint`, a rate-limited reply waits in the endpoint's pause (every request to
        it waits); without one, here. Raises JudgeAuthError on 401/403, JudgeError otherwise;
        the last exception is chained.
        """
        reply_failures = 0
        failed_attempts = 0  # rate-limited replies are not counted: they are not errors
        limited_since: float | None = None
        attempt = 0
        while True:
            attempt += 1
            try:
                return await request(attempt)
            except JudgeError:
                raise
            except Exception as exc:  # classified below; anything unknown fails fast
                failure = classify(exc)
                if failure.kind == "auth":
                    hint = f"check {key_env}" if key_env else "check the judge's API key"
                    raise JudgeAuthError(
                        f"{what}: judge authentication failed (HTTP {failure.status}): {hint} "
                        f"({failure.message}); not retried"
                    ) from exc
                if failure.kind == "fatal":
                    raise JudgeError(f"{what}: {failure.message}; not retried") from exc
                if failure.kind == "rate_limited":
                    now = time.monotonic()
                    limited_since = now if limited_since is None else limited_since
                    wait = (
                        endpoint.pause_left()
                        if endpoint is not None
                        else self.delay_for(failure, 1)
                    )
                    if now + wait - limited_since > self.rate_limit_wait:
                        raise JudgeError(
                            self._rate_limit_message(what, now - limited_since, failure, endpoint)
                        ) from exc
                    if on_retry is not None:
                        on_retry(failure, wait)
                    if endpoint is None:
                        await self.sleep(wait)
                    continue  # the endpoint's pause holds the next attempt, like every other
                failed_attempts += 1
                if failure.kind == "reply":
                    reply_failures += 1
                    last = failed_attempts >= self.max_attempts
                    if last or reply_failures >= self.reply_attempts:
                        raise JudgeError(
                            f"{what}: the judge model's reply was not usable JSON after "
                            f"{failed_attempts} attempts ({failure.message})"
                        ) from exc
                elif failed_attempts >= self.max_attempts:
                    raise JudgeError(
                        f"{what}: judge request failed after {failed_attempts} attempts "
                        f"(last error: {failure.message})"
                    ) from exc
                if endpoint is not None:
                    endpoint.raise_if_broken()  # a tripped breaker: no wait, no retry
                delay = self.delay_for(failure, failed_attempts)
                if on_retry is not None:
                    on_retry(failure, delay)
                await self.sleep(delay)

    def _rate_limit_message(
        self, what: str, waited: float, failure: Failure, endpoint: Endpoint | None
    ) -> str:
        limits = endpoint.describe_limits() if endpoint is not None else ""
        return (
            f"{what}: still rate-limited after {waited:.1f} s, and the next wait would pass the "
            f"{self.rate_limit_wait:g} s budget ({RATE_LIMIT_WAIT_ENV} sets it)"
            + (f"; limits in force: {limits}" if limits else "")
            + f"; last reply: {failure.message}"
        )


def env_number(env: Mapping[str, str], name: str, default: float) -> float:
    """A non-negative number from the environment, else `default`; JudgeConfigError if bad."""
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise JudgeConfigError(f"{name}={raw!r} is not a number") from None
    if not value >= 0 or value == float("inf"):
        raise JudgeConfigError(f"{name}={raw!r} must be a non-negative number")
    return value
