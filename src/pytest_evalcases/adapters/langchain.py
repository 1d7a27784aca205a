"""langchain-core messages, which covers LangGraph agents (`result["messages"]`).

`AIMessage.tool_calls` are the calls (arguments already decoded), `ToolMessage`s their outputs
(`artifact`, when the tool returned one, is what the retriever extractor reads: that is where
`response_format="content_and_artifact"` tools put their `Document`s). Messages are read by
their `type` (`ai`, `tool`), so nothing here imports langchain.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .pricing import Prices
from .trace_builder import Retrievers, TraceBuilder, as_text


def from_langchain_messages(
    messages: Iterable[Any] | Mapping[str, Any],
    *,
    retrievers: Retrievers = None,
    model: str | None = None,
    prices: Prices | None = None,
) -> dict[str, Any]:
    """A trace from langchain-core messages, or from a LangGraph result holding them under
    `"messages"`. Usage is summed from each `AIMessage.usage_metadata`, priced by its
    `response_metadata` model name (or `model`); the answer is the last AI message's text."""
    if isinstance(messages, Mapping):
        if "messages" not in messages:
            raise TypeError(
                "from_langchain_messages: a mapping must hold the messages under 'messages' (a "
                f"LangGraph result); this one has {sorted(map(str, messages))}"
            )
        messages = messages["messages"]
    builder = TraceBuilder(retrievers, prices)
    for message in messages:
        kind = getattr(message, "type", None)
        if kind in {"ai", "AIMessageChunk"}:
            for call in getattr(message, "tool_calls", None) or []:
                builder.call(call["name"], call.get("args"), call.get("id"))
            usage = getattr(message, "usage_metadata", None)
            if usage:
                metadata = getattr(message, "response_metadata", None) or {}
                builder.usage(
                    usage.get("input_tokens"),
                    usage.get("output_tokens"),
                    metadata.get("model_name") or metadata.get("model") or model,
                )
            text = as_text(_text_blocks(message.content))
            if text or not getattr(message, "tool_calls", None):
                builder.answer = text
        elif kind == "tool":
            artifact = getattr(message, "artifact", None)
            builder.output(
                as_text(_text_blocks(message.content)),
                call_id=getattr(message, "tool_call_id", None),
                name=getattr(message, "name", None),
                raw=artifact if artifact is not None else message.content,
            )
    return builder.build()


def _text_blocks(content: Any) -> Any:
    """A content-block list without its non-text blocks (reasoning, tool_use): only what was
    said is the answer."""
    if isinstance(content, list):
        return [
            block
            for block in content
            if isinstance(block, str)
            or (isinstance(block, Mapping) and block.get("type") == "text")
        ]
    return content
