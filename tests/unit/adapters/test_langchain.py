"""`from_langchain_messages` on real langchain-core messages: a LangGraph `create_react_agent`
and a plain langchain-core tool loop, both driving langchain-core's own fake chat model."""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest

from pytest_evalcases.adapters import fingerprint_of, from_langchain_messages
from pytest_evalcases.domain.returned_traces import normalize_trace

pytest.importorskip("langchain_core")
from langchain_core.documents import Document  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402

DOCS = {"refunds": "Refunds are accepted within 30 days.", "warranty": "Two-year warranty."}


class ToolCallingFake(GenericFakeChatModel):
    """langchain-core's fake chat model; LangGraph binds tools to it, which it ignores."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolCallingFake:
        return self


@tool(response_format="content_and_artifact")
def search_kb(query: str) -> tuple[str, list[Document]]:
    """Search the knowledge base."""
    found = [
        Document(page_content=text, metadata={"id": doc_id})
        for doc_id, text in DOCS.items()
        if query.split()[0].lower() in doc_id
    ]
    return "\n".join(doc.page_content for doc in found), found


@tool
def get_order(order_id: str) -> str:
    """Look up an order."""
    return f'{{"id": "{order_id}", "status": "shipped"}}'


def scripted(*replies: AIMessage) -> ToolCallingFake:
    return ToolCallingFake(messages=iter(replies))


def test_langgraph_react_agent_result_becomes_a_trace() -> None:
    from langgraph.prebuilt import create_react_agent

    model = scripted(
        AIMessage(
            "",
            tool_calls=[{"name": "search_kb", "args": {"query": "refunds"}, "id": "c1"}],
            usage_metadata={"input_tokens": 40, "output_tokens": 7, "total_tokens": 47},
            response_metadata={"model_name": "gpt-4o-mini"},
        ),
        AIMessage(
            "Within 30 days.",
            usage_metadata={"input_tokens": 60, "output_tokens": 5, "total_tokens": 65},
            response_metadata={"model_name": "gpt-4o-mini"},
        ),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # create_react_agent moves in 1.x
        agent = create_react_agent(model, [search_kb, get_order], prompt="Answer from the KB.")
    result = agent.invoke({"messages": [("user", "How long for a refund?")]})

    trace = from_langchain_messages(result, retrievers=["search_kb"])

    assert normalize_trace(trace, "t") == trace
    assert trace["answer"] == "Within 30 days."
    assert trace["tool_calls"] == [{"name": "search_kb", "args": {"query": "refunds"}}]
    assert trace["tool_outputs"] == [{"tool": "search_kb", "content": DOCS["refunds"]}]
    assert trace["retrieved"] == ["refunds"]  # from the artifact's Documents
    assert trace["context"] == [DOCS["refunds"]]
    assert trace["usage"] == {
        "prompt_tokens": 100,
        "completion_tokens": 12,
        "cost_usd": pytest.approx((100 * 0.15 + 12 * 0.60) / 1e6),
    }


def test_plain_langchain_core_loop_and_json_documents() -> None:
    """A hand-written loop: the model's AIMessages and each tool's ToolMessage (tool.invoke
    with a tool call returns one); a retriever returning JSON objects with `page_content`."""

    @tool
    def lookup(topic: str) -> str:
        """Look a topic up."""
        return json.dumps([{"id": "warranty", "page_content": DOCS["warranty"]}])

    model = scripted(
        AIMessage(
            "",
            tool_calls=[
                {"name": "lookup", "args": {"topic": "warranty"}, "id": "a"},
                {"name": "get_order", "args": {"order_id": "A-1"}, "id": "b"},
            ],
        ),
        AIMessage([{"type": "text", "text": "Two years; "}, {"type": "text", "text": "shipped."}]),
    )
    tools = {"lookup": lookup, "get_order": get_order}
    messages: list[Any] = [HumanMessage("Warranty, and where is A-1?")]
    while True:
        reply = model.invoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            break
        messages += [tools[call["name"]].invoke(call) for call in reply.tool_calls]
    assert all(isinstance(m, ToolMessage) for m in messages[2:4])

    trace = from_langchain_messages(messages, retrievers={"lookup": None})

    assert [call["name"] for call in trace["tool_calls"]] == ["lookup", "get_order"]
    assert trace["tool_outputs"][1] == {
        "tool": "get_order",
        "content": '{"id": "A-1", "status": "shipped"}',
    }
    assert trace["retrieved"] == ["warranty"] and trace["answer"] == "Two years; shipped."
    assert "usage" not in trace  # the fake model reports none


def test_fingerprint_of_langchain_tools_names_each_tool() -> None:
    before = fingerprint_of(
        [search_kb, get_order], prompt="Answer from the KB.", model="gpt-4o-mini"
    )

    @tool("search_kb", response_format="content_and_artifact")
    def edited(query: str) -> tuple[str, list[Document]]:
        """Search the help articles."""
        return "", []

    after = fingerprint_of([edited, get_order], prompt="Answer from the KB.", model="gpt-4o-mini")

    assert before["model"] == "gpt-4o-mini" and before["prompt"] == "Answer from the KB."
    assert before["tool.search_kb"]["description"] == "Search the knowledge base."
    assert before["tool.search_kb"]["parameters"]["properties"] == {"query": {"type": "string"}}
    changed = sorted(name for name in before if before[name] != after[name])
    assert changed == ["tool.search_kb"]


def test_a_mapping_without_messages_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match=r"under 'messages' .*\['output'\]"):
        from_langchain_messages({"output": "hi"})
