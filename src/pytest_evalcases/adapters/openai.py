"""The openai SDK: Chat Completions message lists and Responses API output items.

Both accept SDK objects or plain dicts (nothing here imports openai). Usage is summed from the
`ChatCompletion` / `Response` objects given, since messages themselves carry none.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .pricing import Prices
from .trace_builder import Retrievers, TraceBuilder, as_text, field


def _plain(item: Any) -> Any:
    """An SDK object (a pydantic model) as the dict the API would send."""
    if hasattr(item, "model_dump"):
        return item.model_dump(mode="json", exclude_none=True)
    return item


def from_openai_messages(
    messages: Iterable[Any],
    *,
    completions: Iterable[Any] = (),
    retrievers: Retrievers = None,
    model: str | None = None,
    prices: Prices | None = None,
) -> dict[str, Any]:
    """A trace from a Chat Completions conversation: `messages` as sent to the API (dicts or
    `ChatCompletionMessage`s), where a `ChatCompletion` may stand in for its message. Usage is
    summed from the `ChatCompletion`s in `messages` and in `completions`; `model` prices
    completions that name none. The answer is the last assistant message's text."""
    builder = TraceBuilder(retrievers, prices)
    for completion in completions:
        _count_completion(builder, completion, model)
    for raw in messages:
        if field(raw, "choices") is not None:  # a ChatCompletion: its usage, then its message
            _count_completion(builder, raw, model)
            choices = field(raw, "choices") or []
            raw = field(choices[0], "message") if choices else None
            if raw is None:
                continue
        message = _plain(raw)
        role = message.get("role")
        if role == "assistant":
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                if call.get("type", "function") == "function":
                    builder.call(
                        function.get("name", "?"), function.get("arguments"), call.get("id")
                    )
                else:  # a custom (free-text) tool call
                    custom = call.get("custom") or {}
                    builder.call(
                        custom.get("name", "?"), {"input": custom.get("input")}, call.get("id")
                    )
            text = as_text(message.get("content"))
            if text or not message.get("tool_calls"):
                builder.answer = text
        elif role == "tool":
            builder.output(message.get("content"), call_id=message.get("tool_call_id"))
    return builder.build()


def _count_completion(builder: TraceBuilder, completion: Any, model: str | None) -> None:
    usage = field(completion, "usage")
    if usage is not None:
        builder.usage(
            field(usage, "prompt_tokens"),
            field(usage, "completion_tokens"),
            field(completion, "model") or model,
        )


def from_openai_response(
    response_or_items: Any,
    *,
    retrievers: Retrievers = None,
    model: str | None = None,
    prices: Prices | None = None,
) -> dict[str, Any]:
    """A trace from the Responses API: one `Response`, or a list mixing `Response`s and input
    items (the conversation an agent loop sends back: `function_call_output` items hold the tool
    results). `function_call` items are the calls, `file_search_call` results count as the
    output of a tool named `file_search`; the answer is the last assistant message's text."""
    entries = [response_or_items] if _is_response(response_or_items) else response_or_items
    builder = TraceBuilder(retrievers, prices)
    for entry in entries:
        if _is_response(entry):
            usage = field(entry, "usage")
            if usage is not None:
                builder.usage(
                    field(usage, "input_tokens"),
                    field(usage, "output_tokens"),
                    field(entry, "model") or model,
                )
            for item in field(entry, "output") or []:
                _response_item(builder, _plain(item))
        else:
            _response_item(builder, _plain(entry))
    return builder.build()


def _is_response(entry: Any) -> bool:
    return field(entry, "object") == "response"


def _response_item(builder: TraceBuilder, item: Any) -> None:
    if not isinstance(item, dict):
        return
    kind = item.get("type")
    if kind == "function_call":
        builder.call(item.get("name", "?"), item.get("arguments"), item.get("call_id"))
    elif kind == "custom_tool_call":
        builder.call(item.get("name", "?"), {"input": item.get("input")}, item.get("call_id"))
    elif kind in {"function_call_output", "custom_tool_call_output"}:
        builder.output(item.get("output"), call_id=item.get("call_id"))
    elif kind == "file_search_call":
        builder.call("file_search", {"queries": item.get("queries") or []}, item.get("id"))
        results = [
            {"id": hit.get("file_id"), "text": hit.get("text", ""), "filename": hit.get("filename")}
            for hit in item.get("results") or []
        ]
        builder.output(results, call_id=item.get("id"))
    elif kind == "message" and item.get("role", "assistant") == "assistant":
        text = as_text(item.get("content"))
        if text:
            builder.answer = text
