"""The OpenAI Agents SDK: a `RunResult` (or `RunResultStreaming` once it is done).

Its `new_items` are the run's calls (`tool_call_item`), outputs (`tool_call_output_item`: the
Python value the tool returned is what the retriever extractor reads) and messages; usage is
summed from `raw_responses`. Items are read by their `type`, so nothing here imports `agents`.
"""

from __future__ import annotations

from typing import Any

from .openai import _plain
from .pricing import Prices
from .trace_builder import Retrievers, TraceBuilder, as_text, field


def from_openai_agents(
    run_result: Any,
    *,
    retrievers: Retrievers = None,
    model: str | None = None,
    prices: Prices | None = None,
) -> dict[str, Any]:
    """A trace from a `RunResult`: tool calls and outputs from `new_items`, usage from each of
    `raw_responses` (priced by `model`, else the last agent's model name when it is a string),
    the answer from `final_output` (JSON for a structured one)."""
    builder = TraceBuilder(retrievers, prices)
    if model is None:
        agent_model = getattr(getattr(run_result, "last_agent", None), "model", None)
        model = agent_model if isinstance(agent_model, str) else getattr(agent_model, "model", None)
    for response in getattr(run_result, "raw_responses", None) or []:
        usage = getattr(response, "usage", None)
        if usage is not None and getattr(usage, "requests", 1):
            builder.usage(usage.input_tokens, usage.output_tokens, model)
    for item in run_result.new_items:
        kind = getattr(item, "type", None)
        raw = _plain(item.raw_item)
        if kind == "tool_call_item":
            raw_type = raw.get("type")
            if raw_type == "function_call":
                builder.call(raw.get("name", "?"), raw.get("arguments"), raw.get("call_id"))
            elif raw_type == "file_search_call":
                builder.call("file_search", {"queries": raw.get("queries") or []}, raw.get("id"))
                results = [
                    {"id": hit.get("file_id"), "text": hit.get("text", "")}
                    for hit in raw.get("results") or []
                ]
                builder.output(results, call_id=raw.get("id"))
            else:  # web search, computer use, MCP...: named by their type
                builder.call(
                    raw.get("name") or str(raw_type), {}, raw.get("call_id") or raw.get("id")
                )
        elif kind == "tool_call_output_item":
            builder.output(
                field(raw, "output"),
                call_id=field(raw, "call_id"),
                raw=getattr(item, "output", None),
            )
        elif kind == "message_output_item":
            text = as_text(raw.get("content"))
            if text:
                builder.answer = text
    final = getattr(run_result, "final_output", None)
    if final is not None:
        builder.answer = final if isinstance(final, str) else as_text(final)
    return builder.build()
