"""What a transient failure of a network call looks like, told apart without importing any client
library (httpx, requests, aiohttp, openai...), and how long to wait before trying it again.

Both the judges' retry policy (judges/retry.py, judges/failures.py) and the retries of the
system's calls (domain/retries.py) read these.
"""

from __future__ import annotations

import errno
import random

# HTTP statuses worth another try besides 5xx and 429: request timeout, conflict, too early.
TRANSIENT_STATUS = frozenset({408, 409, 425})
# Exception class names (anywhere in the MRO) that mean "the request never got a proper answer".
TRANSIENT_NAMES = frozenset(
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
        "ConnectionError",  # requests' (an OSError, not the built-in ConnectionError)
        "Timeout",  # requests (ConnectTimeout, ReadTimeout)
        "ChunkedEncodingError",  # requests: the body broke off
        "ServiceUnavailableError",  # litellm
        "ServerError",  # google-genai (5xx)
    }
)
# OSError numbers of a connection that broke or could not be made, for now.
TRANSIENT_ERRNOS = frozenset(
    {
        errno.ECONNRESET,
        errno.ECONNREFUSED,
        errno.ECONNABORTED,
        errno.EPIPE,
        errno.ETIMEDOUT,
        errno.EHOSTUNREACH,
        errno.ENETUNREACH,
        errno.ENETDOWN,
        errno.EAGAIN,
    }
)


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


def transient_status(status: int) -> bool:
    """Whether an HTTP status is worth another try: 429, 408/409/425 and every 5xx."""
    return status == 429 or status in TRANSIENT_STATUS or status >= 500


def transient_network_error(exc: BaseException) -> bool:
    """Whether `exc` itself (not its cause) is a connection that broke, refused or timed out:
    ConnectionError, TimeoutError, an OSError of such an errno, or a client library's class of
    that kind (by name, anywhere in its MRO)."""
    if isinstance(exc, ConnectionError | TimeoutError):
        return True
    if isinstance(exc, OSError) and exc.errno in TRANSIENT_ERRNOS:
        return True
    return any(cls.__name__ in TRANSIENT_NAMES for cls in type(exc).__mro__)


def backoff_delay(
    retry_number: int, base: float, cap: float, jitter: float, rng: random.Random
) -> float:
    """Seconds before retry `retry_number` (1 = the first retry): base * 2^(n-1), capped at
    `cap`, then stretched by up to `jitter` (a fraction) at random, and capped again."""
    delay = min(cap, base * (2 ** (retry_number - 1)))
    return min(cap, delay * (1.0 + jitter * rng.random()))


# Errors of the code, never of the network: never retried, whatever their cause.
NEVER_TRANSIENT_NAMES = frozenset(
    {
        "AssertionError",
        "TypeError",
        "ValueError",
        "KeyError",
        "IndexError",
        "LookupError",
        "AttributeError",
        "NameError",
        "NotImplementedError",
        "ArithmeticError",
        "ZeroDivisionError",
        "ImportError",
        "ModuleNotFoundError",
        "RecursionError",
        "SyntaxError",
        "UnicodeError",
        "MemoryError",
        "StopIteration",
        "StopAsyncIteration",
    }
)
