"""`from_pydantic_ai` on real pydantic-ai runs, with its own `FunctionModel` and `TestModel`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_evalcases.adapters import fingerprint_of, from_pydantic_ai
from pytest_evalcases.domain.returned_traces import normalize_trace

pytest.importorskip("pydantic_ai")
from pydantic import BaseModel  # noqa: E402
from pydantic_ai import Agent, ModelRetry  # noqa: E402
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart  # noqa: E402
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402
from pydantic_ai.models.test import TestModel  # noqa: E402

ARTICLES = [
    {"id": "refunds", "text": "Refunds within 30 days."},
    {"id": "warranty", "text": "Two-year warranty."},
]


def search_kb(query: str) -> list[dict[str, str]]:
    """Search the knowledge base."""
    return [a for a in ARTICLES if query.lower() in a["text"].lower()] or ARTICLES[:1]


def get_order(order_id: str) -> str:
    """Look up an order by id."""
    if not order_id.startswith("A-"):
        raise ModelRetry("order ids look like A-1001")
    return json.dumps({"id": order_id, "status": "shipped"})


def script(*steps: Any) -> FunctionModel:
    """Replies by the number of model requests so far: a tool call list or a text."""

    def reply(messages: list[Any], info: AgentInfo) -> ModelResponse:
        step = steps[sum(1 for m in messages if m.kind == "request") - 1]
        if isinstance(step, str):
            return ModelResponse(parts=[TextPart(step)])
        return ModelResponse(parts=[ToolCallPart(name, args) for name, args in step])

    return FunctionModel(reply, model_name="gpt-4o-mini")


def test_function_model_run_becomes_a_trace() -> None:
    agent = Agent(
        script([("search_kb", {"query": "refunds"})], "Within 30 days."),
        system_prompt="Answer from the KB.",
        tools=[search_kb, get_order],
    )
    result = agent.run_sync("How long for a refund?")

    trace = from_pydantic_ai(result, retrievers=["search_kb"])

    assert normalize_trace(trace, "t") == trace
    assert trace["answer"] == "Within 30 days."
    assert trace["tool_calls"] == [{"name": "search_kb", "args": {"query": "refunds"}}]
    assert trace["tool_outputs"][0]["tool"] == "search_kb"
    assert json.loads(trace["tool_outputs"][0]["content"]) == [ARTICLES[0]]
    assert trace["retrieved"] == ["refunds"] and trace["context"] == [ARTICLES[0]["text"]]
    usage = result.usage
    assert trace["usage"]["prompt_tokens"] == usage.input_tokens > 0
    assert trace["usage"]["completion_tokens"] == usage.output_tokens
    assert trace["usage"]["cost_usd"] == pytest.approx(
        (usage.input_tokens * 0.15 + usage.output_tokens * 0.60) / 1e6
    )


def test_a_rejected_call_is_a_call_with_the_retry_as_its_output() -> None:
    agent = Agent(
        script(
            [("get_order", {"order_id": "1001"})],
            [("get_order", {"order_id": "A-1001"})],
            "Shipped.",
        ),
        tools=[get_order],
    )

    trace = from_pydantic_ai(agent.run_sync("Where is order 1001?"))

    assert [c["args"] for c in trace["tool_calls"]] == [
        {"order_id": "1001"},
        {"order_id": "A-1001"},
    ]
    assert "order ids look like A-1001" in trace["tool_outputs"][0]["content"]
    assert trace["tool_outputs"][1]["content"] == '{"id": "A-1001", "status": "shipped"}'


class Answer(BaseModel):
    days: int


def test_structured_output_is_the_answer_and_the_output_tool_is_no_call() -> None:
    agent = Agent(TestModel(custom_output_args={"days": 30}), output_type=Answer, tools=[search_kb])

    trace = from_pydantic_ai(agent.run_sync("How many days?"), model="gpt-4o-mini")

    assert [call["name"] for call in trace["tool_calls"]] == ["search_kb"]
    assert json.loads(trace["answer"]) == {"days": 30}
    # TestModel names itself "test": the response's own model wins over `model=`, and an
    # unknown model leaves the cost out rather than claiming 0
    assert trace["usage"]["prompt_tokens"] > 0 and "cost_usd" not in trace["usage"]


def test_only_this_runs_messages_count_in_a_conversation() -> None:
    agent = Agent(
        script([("search_kb", {"query": "refunds"})], "30 days.", "Two years."), tools=[search_kb]
    )
    first = agent.run_sync("Refund window?")
    second = agent.run_sync("And the warranty?", message_history=first.all_messages())

    trace = from_pydantic_ai(second)

    assert trace["tool_calls"] == [] and trace["answer"] == "Two years."


def test_fingerprint_of_a_pydantic_ai_agent() -> None:
    agent = Agent(
        script("x"),
        system_prompt="Answer from the KB.",
        instructions="Be brief.",
        tools=[search_kb, get_order],
    )

    fingerprint = fingerprint_of(agent)

    assert fingerprint["model"] == "gpt-4o-mini"
    assert fingerprint["prompt"] == "Answer from the KB.\n\nBe brief."
    assert fingerprint["tool.get_order"]["description"] == "Look up an order by id."
    assert fingerprint["tool.search_kb"]["parameters"]["required"] == ["query"]
    json.dumps(fingerprint)  # a fingerprint is plain JSON
