"""`capture_otel()` on the spans a real instrumented framework emits: pydantic-ai with its
OpenTelemetry instrumentation (GenAI semantic conventions) on the global SDK TracerProvider."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from pytest_evalcases.adapters import capture_otel, from_pydantic_ai
from pytest_evalcases.domain.returned_traces import normalize_trace

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("pydantic_ai")
from opentelemetry import trace as otel_trace  # noqa: E402
from pydantic_ai import Agent, InstrumentationSettings  # noqa: E402
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart  # noqa: E402
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402

ARTICLES = [{"id": "refunds", "text": "Refunds within 30 days."}]


def search_kb(query: str) -> str:
    """Search the knowledge base."""
    return json.dumps(ARTICLES)


def instrumented_agent(answer: str, query: str = "refunds") -> Agent:
    def reply(messages: list[Any], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("search_kb", {"query": query})])
        return ModelResponse(parts=[TextPart(answer)])

    agent = Agent(FunctionModel(reply, model_name="gpt-4o-mini"), tools=[search_kb])
    agent.instrument = InstrumentationSettings()  # the global tracer provider
    return agent


def test_spans_of_an_instrumented_run_become_the_same_trace_as_its_adapter() -> None:
    agent = instrumented_agent("Within 30 days.")

    with capture_otel(retrievers=["search_kb"]) as captured:
        result = agent.run_sync("How long for a refund?")
    trace = captured.trace()

    assert normalize_trace(trace, "t") == trace
    assert trace == from_pydantic_ai(result, retrievers=["search_kb"])
    assert trace["tool_calls"] == [{"name": "search_kb", "args": {"query": "refunds"}}]
    assert trace["retrieved"] == ["refunds"] and trace["answer"] == "Within 30 days."
    assert trace["usage"]["prompt_tokens"] == result.usage.input_tokens


def test_spans_outside_the_block_or_of_another_capture_are_not_captured() -> None:
    agent = instrumented_agent("outside")
    agent.run_sync("before")  # no capture open: its spans go nowhere of ours
    traces: dict[str, dict[str, Any]] = {}
    barrier = threading.Barrier(2)

    def one(name: str) -> None:
        mine = instrumented_agent(f"answer {name}", query=name)
        with capture_otel() as captured:
            barrier.wait()  # both captures open at once
            mine.run_sync(f"question {name}")
        traces[name] = captured.trace()

    threads = [threading.Thread(target=one, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    for name in ("a", "b"):
        assert traces[name]["answer"] == f"answer {name}"
        assert traces[name]["tool_calls"] == [{"name": "search_kb", "args": {"query": name}}]


def test_a_framework_without_tool_spans_has_its_calls_read_from_chat_messages() -> None:
    """Chat spans only (as some instrumentations emit), written with the real OTel API."""
    tracer = otel_trace.get_tracer("some-framework")
    call = {"type": "tool_call", "id": "c1", "name": "search_kb", "arguments": {"query": "x"}}
    result = {"type": "tool_call_response", "id": "c1", "response": json.dumps(ARTICLES)}
    with capture_otel(retrievers=["search_kb"]) as captured:
        with tracer.start_as_current_span("chat gpt-4o") as span:
            span.set_attributes(
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "gpt-4o",
                    "gen_ai.usage.input_tokens": 100,
                    "gen_ai.usage.output_tokens": 10,
                    "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [call]}]),
                }
            )
        with tracer.start_as_current_span("chat gpt-4o") as span:
            span.set_attributes(
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "gpt-4o",
                    "gen_ai.usage.input_tokens": 200,
                    "gen_ai.usage.output_tokens": 20,
                    "gen_ai.input.messages": json.dumps([{"role": "tool", "parts": [result]}]),
                    "gen_ai.output.messages": json.dumps(
                        [{"role": "assistant", "parts": [{"type": "text", "content": "Done."}]}]
                    ),
                }
            )

    trace = captured.trace()

    assert trace["tool_calls"] == [{"name": "search_kb", "args": {"query": "x"}}]
    assert trace["tool_outputs"] == [{"tool": "search_kb", "content": json.dumps(ARTICLES)}]
    assert trace["retrieved"] == ["refunds"] and trace["answer"] == "Done."
    assert trace["usage"] == {
        "prompt_tokens": 300,
        "completion_tokens": 30,
        "cost_usd": pytest.approx((300 * 2.5 + 30 * 10) / 1e6),
    }
