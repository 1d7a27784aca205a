"""The model objects deepeval's metrics call: `a_generate(prompt, schema=...)`.

Imports deepeval at module level (the classes subclass DeepEvalBaseLLM), so import this module
only after `deepeval_judge.prepare_deepeval_env()`.

- OpenAIJudgeModel: deepeval's view of a `chat.ChatClient` (any OpenAI-compatible endpoint; one
  connection pool per judge and event loop, where deepeval 4.3.1's OpenAIModel builds a new
  client, with a new TLS context, for every call). JSON mode instead of structured outputs, so
  unknown model names on local servers work; the reply is parsed into the schema there.
- NativeJudgeModel: wraps deepeval's own GeminiModel / OllamaModel / LiteLLMModel so their
  requests run under the same RetryPolicy, through an Endpoint (rate limits, breaker), and are
  counted the same way.

Both are "custom" models to deepeval (not in its `is_native_model` list): metrics then take
whatever a_generate returns (a schema instance here) and leave cost accounting to us. Neither
defines `a_generate_raw_response`, so GEval skips its logprob weighting and reads the integer
score from the JSON reply.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from deepeval.models import DeepEvalBaseLLM
from pydantic import BaseModel

from .chat import ChatClient, log_retry, parse_reply
from .endpoint import Endpoint
from .retry import RetryPolicy
from .usage import JudgeStats, count_call, count_usage


class _AsyncOnlyModel(DeepEvalBaseLLM):
    """Our metrics always run with async_mode=True and a_measure; sync calls are a bug."""

    def load_model(self, *args: Any, **kwargs: Any) -> None:
        return None  # clients are made per event loop, on first use

    def generate(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("pytest-evalcases judge models are async only (use a_measure)")


class OpenAIJudgeModel(_AsyncOnlyModel):
    """deepeval's view of a ChatClient: metrics call `a_generate(prompt, schema=...)`."""

    def __init__(self, client: ChatClient) -> None:
        self.client = client
        super().__init__(client.model)

    def get_model_name(self, *args: Any, **kwargs: Any) -> str:
        return self.name

    async def a_generate(self, prompt: str, schema: type[BaseModel] | None = None, **_: Any) -> Any:
        return await self.client.complete(prompt, schema)


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
        endpoint: Endpoint,
    ) -> None:
        self._build = build
        self._inner: DeepEvalBaseLLM | None = None
        self._judge_id = judge_id
        self._retry = retry
        self._stats = stats
        self._key_env = key_env
        self._endpoint = endpoint
        super().__init__(model)

    def get_model_name(self, *args: Any, **kwargs: Any) -> str:
        return self._judge_id

    def inner(self) -> DeepEvalBaseLLM:
        if self._inner is None:
            self._inner = self._build()
        return self._inner

    async def a_generate(self, prompt: str, schema: type[BaseModel] | None = None, **_: Any) -> Any:
        what = f"{self._judge_id} ({schema.__name__ if schema else 'text'} request)"
        inner = self.inner()

        async def request(attempt: int) -> Any:
            async with self._endpoint.request(len(prompt)) as ticket:
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
                prompt_tokens = int(getattr(cost, "input_tokens", 0) or 0)
                completion_tokens = int(getattr(cost, "output_tokens", 0) or 0)
                if prompt_tokens or completion_tokens:
                    ticket.used(prompt_tokens, completion_tokens)
            value = getattr(cost, "value", cost)
            count_usage(
                self._stats,
                prompt_tokens,
                completion_tokens,
                float(value) if isinstance(value, (int, float)) else 0.0,
            )
            return result if schema is None else parse_reply(result, schema)

        return await self._retry.run(
            request,
            what=what,
            key_env=self._key_env,
            on_retry=log_retry(what),
            endpoint=self._endpoint,
        )
