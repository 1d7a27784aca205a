"""The model objects deepeval's metrics and our graders call: `a_generate(prompt, schema=...)`.

Imports deepeval at module level (the classes subclass DeepEvalBaseLLM), so import this module
only through `deepeval_judge.import_deepeval()`, which prepares deepeval's environment first.

- OpenAIJudgeModel: any OpenAI-compatible chat-completions endpoint. One `openai.AsyncOpenAI`
  client per judge and event loop (deepeval 4.3.1's OpenAIModel builds a new client, with a new
  TLS context, for every call: models/llms/openai_model.py `load_model` -> `_build_client`).
  JSON mode instead of structured outputs, so unknown model names on local servers work; the
  reply is parsed into the schema here. SDK retries off; each request runs under RetryPolicy.
- NativeJudgeModel: wraps deepeval's own GeminiModel / OllamaModel / LiteLLMModel so their
  requests run under the same RetryPolicy and are counted the same way.

Both are "custom" models to deepeval (not in its `is_native_model` list): metrics then take
whatever a_generate returns (a schema instance here) and leave cost accounting to us. Neither
defines `a_generate_raw_response`, so GEval skips its logprob weighting and reads the integer
score from the JSON reply.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import weakref
from collections.abc import Callable
from typing import Any

from deepeval.models import DeepEvalBaseLLM
from pydantic import BaseModel, ValidationError

from .errors import JudgeReplyError
from .retry import Failure, RetryPolicy, status_of
from .usage import JudgeStats, count_call, count_usage

log = logging.getLogger("pytest_evalcases.judges")


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


class _LoopBound:
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


def _log_retry(what: str) -> Callable[[Failure, float], None]:
    def note(failure: Failure, delay: float) -> None:
        log.info("%s: %s; retrying in %.2fs", what, failure.message, delay)

    return note


class _AsyncOnlyModel(DeepEvalBaseLLM):
    """Our metrics always run with async_mode=True and a_measure; sync calls are a bug."""

    def load_model(self, *args: Any, **kwargs: Any) -> None:
        return None  # clients are made per event loop, on first use

    def generate(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("pytest-evalcases judge models are async only (use a_measure)")


class OpenAIJudgeModel(_AsyncOnlyModel):
    """OpenAI-compatible chat completions through one shared AsyncOpenAI client."""

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
        prices: tuple[float, float] | None,
        send_temperature: bool = True,
    ) -> None:
        self._judge_id = judge_id
        self._api_key = api_key
        self._base_url = base_url
        self._timeout = timeout
        self._retry = retry
        self._stats = stats
        self._key_env = key_env
        self._prices = prices
        self._send_temperature = send_temperature
        self._json_mode = True  # switched off for good if the server rejects response_format
        self._bound = _LoopBound(max_concurrency)
        super().__init__(model)

    def get_model_name(self, *args: Any, **kwargs: Any) -> str:
        return self.name

    def _make_client(self) -> Any:
        import openai

        # max_retries=0: RetryPolicy is the only retry layer (see retry.py).
        return openai.AsyncOpenAI(
            api_key=self._api_key, base_url=self._base_url, timeout=self._timeout, max_retries=0
        )

    async def a_generate(
        self, prompt: str, schema: type[BaseModel] | None = None, **_: Any
    ) -> Any:
        what = f"{self._judge_id} ({schema.__name__ if schema else 'text'} request)"

        async def request(attempt: int) -> Any:
            return await self._request(prompt, schema, retry=attempt > 1)

        return await self._retry.run(
            request, what=what, key_env=self._key_env, on_retry=_log_retry(what)
        )

    async def _request(self, prompt: str, schema: type[BaseModel] | None, *, retry: bool) -> Any:
        self._bound.current(self._make_client)
        kwargs: dict[str, Any] = {
            "model": self.name,
            "messages": [{"role": "user", "content": prompt}],
        }
        if self._send_temperature:
            kwargs["temperature"] = 0.0
        if schema is not None and self._json_mode:
            try:
                completion = await self._send(
                    {**kwargs, "response_format": {"type": "json_object"}}, retry
                )
            except Exception as exc:
                if not (status_of(exc) == 400 and "response_format" in str(exc).lower()):
                    raise
                log.warning("%s: server rejects JSON mode; asking for JSON in the prompt only",
                            self._judge_id)
                self._json_mode = False
                completion = await self._send(kwargs, retry)
        else:
            completion = await self._send(kwargs, retry)
        usage = getattr(completion, "usage", None)
        if usage is not None:
            prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
            completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
            cost = 0.0
            if self._prices is not None:
                cost = prompt_tokens * self._prices[0] + completion_tokens * self._prices[1]
            count_usage(self._stats, prompt_tokens, completion_tokens, cost)
        choices = getattr(completion, "choices", None) or []
        content = choices[0].message.content if choices else None
        return content if schema is None else parse_reply(content, schema)

    async def _send(self, kwargs: dict[str, Any], retry: bool) -> Any:
        async with self._bound.slot():
            count_call(self._stats, retry=retry)
            self._stats.in_flight += 1
            try:
                return await self._bound.client.chat.completions.create(**kwargs)
            finally:
                self._stats.in_flight -= 1

    async def aclose(self) -> None:
        if self._bound.client is not None and self._bound.on_running_loop():
            await self._bound.client.close()
        self._bound.forget()  # the next call (on any loop) makes a fresh client


class NativeJudgeModel(_AsyncOnlyModel):
    """deepeval's own provider model (built lazily), its requests under our RetryPolicy."""

    def __init__(
        self,
        model: str,
        build: Callable[[], DeepEvalBaseLLM],
        *,
        judge_id: str,
        retry: RetryPolicy,
        stats: JudgeStats,
        key_env: str | None,
        max_concurrency: int | None,
    ) -> None:
        self._build = build
        self._inner: DeepEvalBaseLLM | None = None
        self._judge_id = judge_id
        self._retry = retry
        self._stats = stats
        self._key_env = key_env
        self._bound = _LoopBound(max_concurrency)
        super().__init__(model)

    def get_model_name(self, *args: Any, **kwargs: Any) -> str:
        return self._judge_id

    def inner(self) -> DeepEvalBaseLLM:
        if self._inner is None:
            self._inner = self._build()
        return self._inner

    async def a_generate(
        self, prompt: str, schema: type[BaseModel] | None = None, **_: Any
    ) -> Any:
        what = f"{self._judge_id} ({schema.__name__ if schema else 'text'} request)"
        inner = self.inner()
        self._bound.current(None)

        async def request(attempt: int) -> Any:
            async with self._bound.slot():
                count_call(self._stats, retry=attempt > 1)
                self._stats.in_flight += 1
                try:
                    if schema is None:
                        out = await inner.a_generate(prompt)
                    else:
                        out = await inner.a_generate(prompt, schema=schema)
                finally:
                    self._stats.in_flight -= 1
            # deepeval's provider models return (output, cost); cost may carry token counts
            result, cost = out if isinstance(out, tuple) and len(out) == 2 else (out, None)
            value = getattr(cost, "value", cost)
            count_usage(
                self._stats,
                int(getattr(cost, "input_tokens", 0) or 0),
                int(getattr(cost, "output_tokens", 0) or 0),
                float(value) if isinstance(value, (int, float)) else 0.0,
            )
            return result if schema is None else parse_reply(result, schema)

        return await self._retry.run(
            request, what=what, key_env=self._key_env, on_retry=_log_retry(what)
        )
