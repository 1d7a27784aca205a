"""OpenAI-compatible chat completions over aiohttp: the transport of every `openai:<model>` judge.

Why not the openai SDK: its request path (httpx, anyio, request-type transforms, response model
construction) costs about 3.4 ms of CPU per call here, against about 0.3 ms for aiohttp (2,200
calls against the loopback judge server). With 16 requests in flight on one event loop that made
live recording CPU-bound (benchmarks/live.py). aiohttp is a dependency of deepeval already.

Imports neither deepeval nor the openai SDK, so our own graders (context completeness, answer
accuracy) can judge while deepeval is still being imported.

One `aiohttp.ClientSession` per client and event loop (a session must not outlive its loop),
kept alive across calls. HTTP(S)_PROXY and NO_PROXY are honoured like the SDK does, read once per
client (aiohttp's `trust_env` reads them, and ~/.netrc, in a worker thread on every request).
Errors carry what `failures.classify` reads: `status_code`, `headers`, `code`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import ssl
import weakref
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ValidationError

from .endpoint import Endpoint, Ticket
from .errors import JudgeReplyError
from .failures import Failure, status_of
from .retry import RetryPolicy
from .usage import JudgeStats, UsageMeter, count_call, count_cost, count_usage, current_meter

log = logging.getLogger("pytest_evalcases.judges")

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class ChatHTTPError(Exception):
    """A non-2xx reply. `code` is the API's error code (e.g. "insufficient_quota"), if any."""

    def __init__(
        self, status_code: int, message: str, headers: Mapping[str, str], code: str | None
    ) -> None:
        super().__init__(f"HTTP {status_code}: {message}" + (f" ({code})" if code else ""))
        self.status_code = status_code
        self.headers = headers
        self.code = code


def error_from_reply(status: int, headers: Mapping[str, str], body: bytes) -> ChatHTTPError:
    """Read the OpenAI error envelope `{"error": {"message", "code"}}` when there is one."""
    message, code = body[:300].decode("utf-8", "replace").strip() or "(empty body)", None
    try:
        error = json.loads(body).get("error")
    except (ValueError, AttributeError):
        error = None
    if isinstance(error, dict):
        message = str(error.get("message") or message)
        code = str(error["code"]) if error.get("code") else None
    elif isinstance(error, str):  # some compatible servers send {"error": "text"}
        message = error
    return ChatHTTPError(status, message, headers, code)


def parse_reply(content: Any, schema: type[BaseModel]) -> BaseModel:
    """Parse a model reply into `schema`; JudgeReplyError (retryable) when it does not fit."""
    if isinstance(content, schema):
        return content
    if isinstance(content, dict):
        data: Any = content
    else:
        text = (content or "").strip() if isinstance(content, str) else ""
        start, end = text.find("{"), text.rfind("}")
        if start == -1 or end < start:
            raise JudgeReplyError(
                f"no JSON object in the reply for {schema.__name__}: {text[:120]!r}"
            )
        body = text[start : end + 1]
        try:
            data = json.loads(body)
        except json.JSONDecodeError:
            try:  # some models leave a trailing comma before ] or }
                data = json.loads(re.sub(r",\s*([\]}])", r"\1", body))
            except json.JSONDecodeError as exc:
                raise JudgeReplyError(
                    f"reply for {schema.__name__} is not valid JSON: {text[:120]!r}"
                ) from exc
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, error['loc']))}: {error['msg']}" for error in exc.errors()[:3]
        )
        raise JudgeReplyError(f"reply does not fit {schema.__name__}: {problems}") from exc


class LoopBound:
    """Per-event-loop resources: a client must not outlive (or hop between) event loops."""

    def __init__(self, max_concurrency: int | None) -> None:
        self._max_concurrency = max_concurrency
        self._loop_ref: weakref.ref[asyncio.AbstractEventLoop] | None = None
        self.client: Any = None
        self.gate: asyncio.Semaphore | None = None

    def current(self, make_client: Callable[[], Any] | None) -> None:
        """Bind to the running loop, making a new client and gate if it is a different loop."""
        loop = asyncio.get_running_loop()
        if self._loop_ref is not None and self._loop_ref() is loop:
            return
        self._loop_ref = weakref.ref(loop)
        self.client = make_client() if make_client is not None else None
        self.gate = asyncio.Semaphore(self._max_concurrency) if self._max_concurrency else None

    def on_running_loop(self) -> bool:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        return self._loop_ref is not None and self._loop_ref() is loop

    def slot(self) -> contextlib.AbstractAsyncContextManager[Any]:
        return self.gate if self.gate is not None else contextlib.nullcontext()

    def forget(self) -> None:
        self._loop_ref, self.client, self.gate = None, None, None


def log_retry(what: str) -> Callable[[Failure, float], None]:
    def note(failure: Failure, delay: float) -> None:
        log.info("%s: %s; retrying in %.2fs", what, failure.message, delay)

    return note


def _rejects(exc: Exception, parameter: str) -> bool:
    """A 400 that names a request parameter the server does not take."""
    return status_of(exc) == 400 and parameter in str(exc).lower()


def completions_url(base_url: str | None) -> str:
    return (base_url or DEFAULT_BASE_URL).rstrip("/") + "/chat/completions"


def endpoint_name(url: str) -> str:
    """A URL fit for a message: no user name or password."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return parts._replace(netloc=netloc).geturl() if parts.netloc else url


class ChatClient:
    """Chat completions for one judge: retries, its endpoint's limits, usage metering, JSON
    replies.

    Token prices come later, through `set_prices`: the price table lives in deepeval, which may
    still be loading when the first requests go out. Until then usage is counted and its cost is
    kept pending (per verdict meter), then booked.
    """

    def __init__(
        self,
        model: str,
        *,
        judge_id: str,
        api_key: str,
        base_url: str | None,
        timeout: float,
        retry: RetryPolicy,
        stats: JudgeStats,
        key_env: str,
        max_concurrency: int | None,
        endpoint: Endpoint,
        extra_headers: Mapping[str, str] | None = None,
    ) -> None:
        self.model = model
        self.judge_id = judge_id
        self._url = completions_url(base_url)
        self._proxy = env_proxy(self._url)
        self._headers = {"Authorization": f"Bearer {api_key}", **(extra_headers or {})}
        self._timeout = timeout
        self._retry = retry
        self._stats = stats
        self._key_env = key_env
        self._prices: tuple[float, float] | None = None
        self._priced = False
        self._unpriced: list[tuple[UsageMeter | None, int, int]] = []
        # Switched off for good when the server rejects them (local servers, reasoning models).
        self._json_mode = True
        self._send_temperature = True
        self._max_concurrency = max_concurrency
        self._bound = LoopBound(None)  # the session per event loop; the endpoint gates requests
        self.endpoint = endpoint
        self._tls: Any = None  # one SSL context for every session (loading CAs costs ~25 ms)

    def _make_session(self) -> Any:
        import aiohttp  # aiohttp: heavy, live judges only

        if self._tls is None and self._url.startswith("https:"):
            self._tls = tls_context(os.environ)
        connector = aiohttp.TCPConnector(
            limit=self._max_concurrency or 0, ssl=self._tls if self._tls is not None else True
        )
        return aiohttp.ClientSession(
            connector=connector,
            headers=self._headers,
            timeout=aiohttp.ClientTimeout(total=self._timeout),
        )

    async def complete(self, prompt: str, schema: type[BaseModel] | None = None) -> Any:
        """The reply to one user prompt: a `schema` instance, or the text when schema is None."""
        what = f"{self.judge_id} ({schema.__name__ if schema else 'text'} request)"

        async def attempt(number: int) -> Any:
            content = await self._request(prompt, schema is not None, retry=number > 1)
            return content if schema is None else parse_reply(content, schema)

        return await self._retry.run(
            attempt,
            what=what,
            key_env=self._key_env,
            on_retry=log_retry(what),
            endpoint=self.endpoint,
        )

    async def _request(self, prompt: str, wants_json: bool, *, retry: bool) -> str | None:
        self._bound.current(self._make_session)
        while True:
            payload: dict[str, Any] = {
                "model": self.model,
                "messages": [{"role": "user", "content": prompt}],
            }
            if self._send_temperature:
                payload["temperature"] = 0.0
            if wants_json and self._json_mode:
                payload["response_format"] = {"type": "json_object"}
            try:
                reply = await self._post(payload, len(prompt), retry)
                break
            except ChatHTTPError as exc:  # a fallback, not a retry: same attempt, fewer options
                if "response_format" in payload and _rejects(exc, "response_format"):
                    log.warning(
                        "%s: server rejects JSON mode; asking for JSON in the prompt only",
                        self.judge_id,
                    )
                    self._json_mode = False
                elif "temperature" in payload and _rejects(exc, "temperature"):
                    log.warning("%s: model rejects `temperature`; sending none", self.judge_id)
                    self._send_temperature = False
                else:
                    raise
        self._meter(reply.get("usage"))
        choices = reply.get("choices") or []
        message = choices[0].get("message") if choices and isinstance(choices[0], dict) else None
        return message.get("content") if isinstance(message, dict) else None

    async def _post(
        self, payload: dict[str, Any], prompt_chars: int, retry: bool
    ) -> dict[str, Any]:
        import aiohttp  # aiohttp: heavy, live judges only

        async with self.endpoint.request(prompt_chars) as ticket:
            count_call(self._stats, retry=retry)
            self._stats.in_flight += 1
            try:
                async with self._bound.client.post(
                    self._url, json=payload, proxy=self._proxy
                ) as response:
                    body = await response.read()
                    status, headers = response.status, response.headers
            except TimeoutError as exc:  # aiohttp's says nothing; transient either way
                raise TimeoutError(
                    f"no reply within {self._timeout:g} s (EVALCASES_JUDGE_TIMEOUT sets the limit)"
                ) from exc
            except aiohttp.ClientHttpProxyError:
                raise  # the proxy's own status: classified like the server's
            except aiohttp.ClientResponseError as exc:
                # Without raise_for_status, aiohttp raises this only for a reply it could not
                # parse (bad status line, bad chunking), with status 400 as a placeholder: a
                # broken connection, not the server rejecting the request.
                raise ConnectionError(f"malformed HTTP reply: {exc.message}") from exc
            finally:
                self._stats.in_flight -= 1
            ticket.headers = headers  # the provider's announced limits, 429s included
            if status >= 400:
                raise error_from_reply(status, headers, body)
            return _json_reply(body, ticket)

    def _meter(self, usage: Any) -> None:
        counts = usage_counts(usage)
        if counts is None:
            return
        prompt_tokens, completion_tokens = counts
        count_usage(self._stats, prompt_tokens, completion_tokens, 0.0)
        if self._priced:
            self._book(current_meter(), prompt_tokens, completion_tokens)
        else:
            self._unpriced.append((current_meter(), prompt_tokens, completion_tokens))

    @property
    def priced(self) -> bool:
        return self._priced

    def set_prices(self, prices: tuple[float, float] | None) -> None:
        """USD per prompt token and per completion token (None: unknown, costs 0.0)."""
        self._prices, self._priced = prices, True
        pending, self._unpriced = self._unpriced, []
        for meter, prompt_tokens, completion_tokens in pending:
            self._book(meter, prompt_tokens, completion_tokens)

    def _book(self, meter: UsageMeter | None, prompt_tokens: int, completion_tokens: int) -> None:
        if self._prices is not None:
            cost = prompt_tokens * self._prices[0] + completion_tokens * self._prices[1]
            count_cost(self._stats, meter, cost)

    async def aclose(self) -> None:
        if self._bound.client is not None and self._bound.on_running_loop():
            await self._bound.client.close()
        self._bound.forget()  # the next call (on any loop) makes a fresh session


def _json_reply(body: bytes, ticket: Ticket) -> dict[str, Any]:
    """The reply as a JSON object; its usage noted on the ticket (the endpoint's token count)."""
    try:
        reply = json.loads(body)
    except ValueError as exc:
        raise JudgeReplyError(f"the server's reply is not JSON: {body[:120]!r}") from exc
    if not isinstance(reply, dict):
        raise JudgeReplyError(f"the server's reply is not a JSON object: {body[:120]!r}")
    counts = usage_counts(reply.get("usage"))
    if counts is not None:
        ticket.used(*counts)
    return reply


def usage_counts(usage: Any) -> tuple[int, int] | None:
    """(prompt tokens, completion tokens) of a reply's `usage`; None when it has none."""
    if not isinstance(usage, dict):
        return None
    counts = []
    for name in ("prompt_tokens", "completion_tokens"):
        try:
            counts.append(int(usage.get(name) or 0))
        except (TypeError, ValueError):
            counts.append(0)
    return counts[0], counts[1]


def env_proxy(url: str) -> str | None:
    """The proxy HTTP(S)_PROXY / ALL_PROXY name for `url`, unless NO_PROXY exempts its host."""
    # urllib.request: ~4 ms (http.client, email), needed only once a live judge connects
    from urllib.request import getproxies, proxy_bypass

    parts = urlsplit(url)
    if parts.hostname and proxy_bypass(parts.hostname):
        return None
    proxies = getproxies()
    return proxies.get(parts.scheme) or proxies.get("all")


def tls_context(environ: Mapping[str, str]) -> ssl.SSLContext:
    """The CAs to trust: SSL_CERT_FILE / SSL_CERT_DIR when set (a company CA, a TLS-inspecting
    proxy), else certifi's bundle when installed (as the openai SDK does), else the system's."""
    cafile, capath = environ.get("SSL_CERT_FILE") or None, environ.get("SSL_CERT_DIR") or None
    if cafile or capath:
        return ssl.create_default_context(cafile=cafile, capath=capath)
    try:
        import certifi  # certifi: optional, a live https judge's CA bundle
    except ImportError:
        return ssl.create_default_context()
    return ssl.create_default_context(cafile=certifi.where())
