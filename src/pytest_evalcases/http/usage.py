"""Tokens and cost of recorded HTTP exchanges (an ingestion's), read from the responses the
providers send: OpenAI (chat, completions, Responses, embeddings), Anthropic messages, Gemini
generateContent, Ollama; whole JSON bodies or streamed events. Pure, and never raises: the
exchanges may come from a hand-edited file.

A response reports usage when it carries a token count; one that does not (a non-JSON body, an
error, a service that is not a model) is a request without usage. Costs come from the price
table (`core/pricing.py`): one model it does not price leaves the total cost unknown (None),
never a zero.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.pricing import Prices, cost_usd
from .bodies import documents

__all__ = ["ExchangeUsage", "exchanges_usage"]

# A larger "count" is no provider's: ignoring it keeps every cost a finite float.
MAX_TOKENS = 2**53
# Where a streamed event nests the response it reports: Anthropic's message_start
# ({"message": {...}}), the Responses API's response.completed ({"response": {...}}).
NESTED_RESPONSE_FIELDS = ("message", "response")


@dataclass(frozen=True, slots=True)
class ExchangeUsage:
    requests: int
    # prompt_tokens, completion_tokens, total_tokens summed over the responses that report
    # usage; None when none does.
    usage: dict[str, int] | None
    # None when no response reports usage, or when one that does has a model without a price.
    cost_usd: float | None


@dataclass(slots=True)
class _Reading:
    """What one response (or one event of a stream) says of its model and tokens."""

    model: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    def update(self, later: _Reading) -> None:
        """A stream's later event counts over the earlier ones (providers report running
        totals: OpenAI's last chunk, Anthropic's message_delta, Gemini's last chunk)."""
        self.model = later.model or self.model
        if later.prompt_tokens is not None:
            self.prompt_tokens = later.prompt_tokens
        if later.completion_tokens is not None:
            self.completion_tokens = later.completion_tokens

    @property
    def reports_usage(self) -> bool:
        return self.prompt_tokens is not None or self.completion_tokens is not None


def exchanges_usage(interactions: Any, prices: Prices | None = None) -> ExchangeUsage:
    """The requests, summed tokens and cost of stored exchanges (`{"request", "response"}`
    dicts as `store/http.py` keeps them). `prices` prices models beside the table."""
    if not isinstance(interactions, Sequence) or isinstance(interactions, str | bytes):
        return ExchangeUsage(requests=0, usage=None, cost_usd=None)
    prompt = completion = 0
    cost, reported, unpriced = 0.0, False, False
    for exchange in interactions:
        reading = _exchange_reading(exchange)
        if reading is None:
            continue
        reported = True
        prompt += reading.prompt_tokens or 0
        completion += reading.completion_tokens or 0
        priced = cost_usd(
            reading.model, reading.prompt_tokens or 0, reading.completion_tokens or 0, prices
        )
        if priced is None:
            unpriced = True
        else:
            cost += priced
    if not reported:
        return ExchangeUsage(requests=len(interactions), usage=None, cost_usd=None)
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    return ExchangeUsage(len(interactions), usage, None if unpriced else cost)


def _exchange_reading(exchange: Any) -> _Reading | None:
    """The model and tokens of one exchange's response; None when it reports no usage."""
    if not isinstance(exchange, Mapping):
        return None
    response = exchange.get("response")
    if not isinstance(response, Mapping) or _failed(response.get("status")):
        return None
    reading = _Reading()
    for event in _events(response.get("body")):
        reading.update(_event_reading(event))
    if not reading.reports_usage:
        return None
    # A response without its model (rare) is priced by the model its request named.
    reading.model = reading.model or _request_model(exchange.get("request"))
    return reading


def _failed(status: Any) -> bool:
    if status is None:
        return False
    code = status.get("code", 200) if isinstance(status, Mapping) else None
    return not _is_count(code) or code >= 400


def _events(body: Any) -> Iterator[Mapping[str, Any]]:
    """The JSON objects of a stored body: the body itself, each event of a stream, each item
    of a JSON array (Gemini's streamGenerateContent without `alt=sse`)."""
    if not isinstance(body, Mapping):
        return
    try:
        docs = documents(body)
    except (RecursionError, ValueError, TypeError, AttributeError):  # a hostile stream line
        return
    for doc in docs:
        for item in doc if isinstance(doc, list) else (doc,):
            if isinstance(item, Mapping):
                yield item


def _event_reading(event: Mapping[str, Any]) -> _Reading:
    reading = _Reading()
    nested = [event.get(field) for field in NESTED_RESPONSE_FIELDS]
    for part in (event, *nested):
        if isinstance(part, Mapping):
            found = _part_reading(part)
            reading.model = reading.model or found.model
            if reading.prompt_tokens is None:
                reading.prompt_tokens = found.prompt_tokens
            if reading.completion_tokens is None:
                reading.completion_tokens = found.completion_tokens
    return reading


def _part_reading(part: Mapping[str, Any]) -> _Reading:
    model = next(
        (m for m in (part.get("model"), part.get("modelVersion")) if isinstance(m, str) and m),
        None,
    )
    usage, gemini = part.get("usage"), part.get("usageMetadata")
    # OpenAI chat and embeddings name them prompt/completion; Anthropic, Responses input/output.
    if isinstance(usage, Mapping):
        prompt = _first_count(usage, "prompt_tokens", "input_tokens")
        completion = _first_count(usage, "completion_tokens", "output_tokens")
    elif isinstance(gemini, Mapping):
        prompt = _count(gemini.get("promptTokenCount"))
        # A thinking model's thoughts are billed as output but counted apart from the answer.
        answer = _count(gemini.get("candidatesTokenCount"))
        thoughts = _count(gemini.get("thoughtsTokenCount"))
        both_missing = answer is None and thoughts is None
        completion = None if both_missing else (answer or 0) + (thoughts or 0)
    else:  # Ollama /api/chat, /api/generate, /api/embed
        prompt = _count(part.get("prompt_eval_count"))
        completion = _count(part.get("eval_count"))
    return _Reading(model, prompt, completion)


def _request_model(request: Any) -> str | None:
    body = request.get("body") if isinstance(request, Mapping) else None
    doc = body.get("json") if isinstance(body, Mapping) else None
    model = doc.get("model") if isinstance(doc, Mapping) else None
    return model if isinstance(model, str) and model else None


def _first_count(usage: Mapping[str, Any], *fields: str) -> int | None:
    return next((n for n in (_count(usage.get(f)) for f in fields) if n is not None), None)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TOKENS


def _count(value: Any) -> int | None:
    """A token count, or None for anything that is not one (a float, a string, a negative)."""
    return value if _is_count(value) else None
