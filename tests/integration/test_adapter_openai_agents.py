"""`from_openai_agents` on real OpenAI Agents SDK runs against the scripted loopback server,
through both of the SDK's model classes (Responses and Chat Completions)."""

from __future__ import annotations

import json

import pytest
from scripted_openai import ScriptedOpenAI

from pytest_evalcases.adapters import from_openai_agents
from pytest_evalcases.domain.returned_traces import normalize_trace

pytest.importorskip("agents")
from agents import (  # noqa: E402
    Agent,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
    function_tool,
)
from openai import AsyncOpenAI  # noqa: E402

ARTICLES = [{"id": "refunds", "text": "Refunds within 30 days."}]


@function_tool
def search_kb(query: str) -> list[dict[str, str]]:
    """Search the knowledge base."""
    return ARTICLES


@function_tool
def get_order(order_id: str) -> str:
    """Look up an order."""
    return json.dumps({"id": order_id, "status": "shipped"})


def run_agent(server: ScriptedOpenAI, model_class: type, question: str):  # noqa: ANN201
    client = AsyncOpenAI(base_url=server.base_url, api_key="sk-test")
    agent = Agent(
        name="support",
        instructions="Answer from the KB.",
        tools=[search_kb, get_order],
        model=model_class("gpt-4o-mini", client),
    )
    return Runner.run_sync(agent, question, run_config=RunConfig(tracing_disabled=True))


@pytest.mark.parametrize("model_class", [OpenAIResponsesModel, OpenAIChatCompletionsModel])
def test_run_result_becomes_a_trace(scripted_openai: ScriptedOpenAI, model_class: type) -> None:
    scripted_openai.script = [
        [("search_kb", {"query": "refund"}), ("get_order", {"order_id": "A-1"})],
        "30 days; A-1 shipped.",
    ]
    result = run_agent(scripted_openai, model_class, "Refund window, and where is A-1?")

    trace = from_openai_agents(result, retrievers=["search_kb"])

    assert normalize_trace(trace, "t") == trace
    assert trace["answer"] == "30 days; A-1 shipped."
    assert trace["tool_calls"] == [
        {"name": "search_kb", "args": {"query": "refund"}},
        {"name": "get_order", "args": {"order_id": "A-1"}},
    ]
    assert [out["tool"] for out in trace["tool_outputs"]] == ["search_kb", "get_order"]
    assert trace["tool_outputs"][1]["content"] == '{"id": "A-1", "status": "shipped"}'
    # the tool's Python value is what the extractor reads (the SDK sends the model its str)
    assert trace["retrieved"] == ["refunds"] and trace["context"] == [ARTICLES[0]["text"]]
    assert trace["usage"] == {
        "prompt_tokens": 30,
        "completion_tokens": 10,
        "cost_usd": pytest.approx((30 * 0.15 + 10 * 0.60) / 1e6),
    }
    assert len(scripted_openai.requests) == 2
