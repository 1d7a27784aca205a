"""`fingerprint_of` an OpenAI Agents SDK agent: its instructions, model and tools (real runs
against a loopback server: tests/integration/test_adapter_openai_agents.py)."""

from __future__ import annotations

import json

import pytest

from pytest_evalcases.adapters import fingerprint_of

pytest.importorskip("agents")
from agents import (  # noqa: E402
    Agent,
    function_tool,
)

ARTICLES = [{"id": "refunds", "text": "Refunds within 30 days."}]


@function_tool
def search_kb(query: str) -> list[dict[str, str]]:
    """Search the knowledge base."""
    return ARTICLES


@function_tool
def get_order(order_id: str) -> str:
    """Look up an order."""
    return json.dumps({"id": order_id, "status": "shipped"})


def test_fingerprint_of_an_agents_sdk_agent() -> None:
    agent = Agent(
        name="support",
        instructions="Answer from the KB.",
        model="gpt-4o-mini",
        tools=[search_kb, get_order],
    )

    fingerprint = fingerprint_of(agent)

    assert fingerprint["prompt"] == "Answer from the KB." and fingerprint["model"] == "gpt-4o-mini"
    assert fingerprint["tool.search_kb"]["description"] == "Search the knowledge base."
    assert "order_id" in fingerprint["tool.get_order"]["parameters"]["properties"]
