"""The model objects deepeval's metrics call: `a_generate(prompt, schema=...)`.

Two judge models, plain classes that import nothing heavy:

- OpenAIJudgeModel: deepeval's view of a `chat.ChatClient` (any OpenAI-compatible endpoint; one
  connection pool per judge and event loop, where deepeval 4.3.1's OpenAIModel builds a new
  client, with a new TLS context, for every call). JSON mode instead of structured outputs, so
  unknown model names on local servers work; the reply is parsed into the schema there.
- NativeJudgeModel: wraps deepeval's own GeminiModel / OllamaModel / LiteLLMModel so their
  requests run under the same RetryPolicy, through an Endpoint (rate limits, breaker), and are
  counted the same way.

deepeval takes a custom model only as a subclass of its DeepEvalBaseLLM, and a class can
subclass it only once deepeval is imported (1.5-2 s, live judges only; a replay imports this
module and must not pay for it). So the one subclass, DeepEvalJudgeModel, is defined inside
`deepeval_model_class()`, whose first call imports deepeval and makes it (the judge's background
loader makes that call, after `deepeval_judge.prepare_deepeval_env()`); later calls return the
same class. It holds no logic of its own: `deepeval_model(judge_model)` wraps one of the two
models above, a_generate and get_model_name go to it, load_model makes nothing (clients are made
per event loop, on first use) and generate raises (our metrics run async only, via a_measure).

To deepeval the wrapper is a "custom" model (not in its `is_native_model` list): metrics then
take whatever a_generate returns (a schema instance here) and leave cost accounting to us. It
does not define `a_generate_raw_response`, so GEval skips its logprob weighting and reads the
integer score from the JSON reply.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel

from .chat import ChatClient, log_retry, parse_reply
from .endpoint import Endpoint
from .retry import RetryPolicy
from .usage import JudgeStats, count_call, count_usage

if TYPE_CHECKING:
    from deepeval.models import DeepEvalBaseLLM


class JudgeModel(Protocol):
    """What the deepeval wrapper needs of a judge model."""

    model: str  # the model's name, as deepeval's base class records it (`.name`)
    model_name: str  # what get_model_name() tells deepeval (a metric's evaluation_model)

    async def a_generate(self, prompt: str, schema: type[BaseModel] | None = None) -> Any: ...


class OpenAIJudgeModel:
    """A ChatClient as a judge model: `a_generate(prompt, schema=...)` is one chat request."""

    def __init__(self, client: ChatClient) -> None:
        self.client = client
        self.model = self.model_name = client.model

    async def a_generate(self, prompt: str, schema: type[BaseModel] | None = None) -> Any:
        return await self.client.complete(prompt, schema)


class NativeJudgeModel:
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
        self.model = model
        self.model_name = judge_id
        self._build = build
        self._inner: DeepEvalBaseLLM | None = None
        self._judge_id = judge_id
        self._retry = retry
        self._stats = stats
        self._key_env = key_env
        self._endpoint = endpoint

    def inner(self) -> DeepEvalBaseLLM:
        if self._inner is None:
            self._inner = self._build()
        return self._inner

    async def a_generate(self, prompt: str, schema: type[BaseModel] | None = None) -> Any:
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


def deepeval_model(judge_model: JudgeModel) -> DeepEvalBaseLLM:
    """`judge_model` as deepeval's metrics take it (deepeval must be loaded: see the docstring)."""
    return deepeval_model_class()(judge_model)


@functools.cache
def deepeval_model_class() -> type[DeepEvalBaseLLM]:
    """DeepEvalJudgeModel: made on the first call, where deepeval is imported."""
    # deepeval: heavy (1.5-2 s), imported by live LLM judges only
    from deepeval.models import DeepEvalBaseLLM

    class DeepEvalJudgeModel(DeepEvalBaseLLM):
        """One of our judge models, as a deepeval custom model; async only."""

        def __init__(self, judge_model: JudgeModel) -> None:
            self.judge_model = judge_model
            super().__init__(judge_model.model)

        def load_model(self, *args: Any, **kwargs: Any) -> None:
            return None  # clients are made per event loop, on first use

        def generate(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError(
                "pytest-evalcases judge models are async only (use a_measure)"
            )

        async def a_generate(
            self, prompt: str, schema: type[BaseModel] | None = None, **_: Any
        ) -> Any:
            return await self.judge_model.a_generate(prompt, schema)

        def get_model_name(self, *args: Any, **kwargs: Any) -> str:
            return self.judge_model.model_name

    return DeepEvalJudgeModel
