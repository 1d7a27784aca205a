"""`from_openai_messages` and `from_openai_response` on the real openai SDK, driving a scripted
loopback OpenAI-compatible server (tests/scripted_openai.py): the SDK's own objects go in."""

from __future__ import annotations

import json
from typing import Any

import pytest
from scripted_openai import ScriptedOpenAI

from pytest_evalcases.adapters import from_openai_messages, from_openai_response
from pytest_evalcases.domain.returned_traces import normalize_trace

openai = pytest.importorskip("openai")

KB = {
    "refunds": "Refunds are accepted within 30 days of delivery.",
    "warranty": "The kettle has a two-year warranty.",
}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search_kb",
            "description": "Search the knowledge base.",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
        },
    }
]


def search_kb(query: str) -> str:
    return json.dumps(
        [
            {"id": doc_id, "text": text}
            for doc_id, text in KB.items()
            if any(word in text.lower() for word in query.lower().split())
        ]
    )


def chat_agent(server: ScriptedOpenAI, question: str) -> tuple[list[Any], list[Any]]:
    """A plain Chat Completions tool loop, as a user writes it: SDK messages go back in."""
    client = openai.OpenAI(base_url=server.base_url, api_key="sk-test")
    messages: list[Any] = [
        {"role": "system", "content": "Answer from the KB."},
        {"role": "user", "content": question},
    ]
    completions = []
    for _ in range(4):
        completion = client.chat.completions.create(
            model="gpt-4o-mini", messages=messages, tools=TOOLS
        )
        completions.append(completion)
        message = completion.choices[0].message
        messages.append(message)
        if not message.tool_calls:
            break
        for call in message.tool_calls:
            args = json.loads(call.function.arguments)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": search_kb(**args)})
    return messages, completions


def test_chat_completions_loop_becomes_a_trace(scripted_openai: ScriptedOpenAI) -> None:
    scripted_openai.script = [[("search_kb", {"query": "refunds"})], "Within 30 days."]
    messages, completions = chat_agent(scripted_openai, "How long for a refund?")

    trace = from_openai_messages(messages, completions=completions, retrievers=["search_kb"])

    assert normalize_trace(trace, "t") == trace  # what the plugin records, unchanged
    assert trace["answer"] == "Within 30 days."
    assert trace["tool_calls"] == [{"name": "search_kb", "args": {"query": "refunds"}}]
    assert trace["tool_outputs"] == [{"tool": "search_kb", "content": search_kb("refunds")}]
    assert trace["retrieved"] == ["refunds"]
    assert trace["context"] == [KB["refunds"]]
    # two requests: 10 + 20 prompt tokens, 5 + 5 completion tokens; gpt-4o-mini is priced
    assert trace["usage"] == {
        "prompt_tokens": 30,
        "completion_tokens": 10,
        "cost_usd": pytest.approx((30 * 0.15 + 10 * 0.60) / 1e6),
    }


def test_a_chat_completion_in_the_list_counts_its_usage_and_message(
    scripted_openai: ScriptedOpenAI,
) -> None:
    scripted_openai.script = [
        [("search_kb", {"query": "warranty"}), ("search_kb", {"query": "refunds"})],
        "Two years.",
    ]
    _, completions = chat_agent(scripted_openai, "Warranty and refunds?")
    first, last = completions
    calls = first.choices[0].message.tool_calls
    messages = [
        {"role": "user", "content": "Warranty and refunds?"},
        first,
        {"role": "tool", "tool_call_id": calls[1].id, "content": search_kb("refunds")},
        {"role": "tool", "tool_call_id": calls[0].id, "content": search_kb("warranty")},
        last,
    ]

    trace = from_openai_messages(messages, retrievers={"search_kb": None})

    # outputs are paired with their calls by id, whatever order they come back in
    assert [out["tool"] for out in trace["tool_outputs"]] == ["search_kb", "search_kb"]
    assert trace["retrieved"] == ["refunds", "warranty"]  # ranked in the order they came back
    assert trace["usage"]["prompt_tokens"] == 30 and trace["answer"] == "Two years."


def test_unknown_model_has_tokens_but_no_cost(scripted_openai: ScriptedOpenAI) -> None:
    scripted_openai.script = ["Hello."]
    client = openai.OpenAI(base_url=scripted_openai.base_url, api_key="sk-test")
    completion = client.chat.completions.create(
        model="local-llama", messages=[{"role": "user", "content": "Hi"}]
    )

    trace = from_openai_messages([completion])
    priced = from_openai_messages([completion], prices={"local-llama": (1.0, 2.0)})

    assert trace["usage"] == {"prompt_tokens": 10, "completion_tokens": 5}
    assert priced["usage"]["cost_usd"] == pytest.approx((10 * 1.0 + 5 * 2.0) / 1e6)


def test_responses_api_loop_becomes_a_trace(scripted_openai: ScriptedOpenAI) -> None:
    scripted_openai.script = [[("search_kb", {"query": "warranty"})], "Two years."]
    client = openai.OpenAI(base_url=scripted_openai.base_url, api_key="sk-test")
    tools = [
        {
            "type": "function",
            "name": "search_kb",
            "description": "Search.",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
        }
    ]
    items: list[Any] = [{"role": "user", "content": "How long is the warranty?"}]
    responses = []
    for _ in range(3):
        response = client.responses.create(model="gpt-4o-mini", input=items, tools=tools)
        responses.append(response)
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            break
        items += response.output
        for call in calls:
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": call.call_id,
                    "output": search_kb(**json.loads(call.arguments)),
                }
            )

    from_items = from_openai_response([*items, responses[-1]], retrievers=["search_kb"])
    from_last = from_openai_response(responses[-1])

    assert from_items["tool_calls"] == [{"name": "search_kb", "args": {"query": "warranty"}}]
    assert from_items["retrieved"] == ["warranty"]
    assert from_items["answer"] == "Two years." == from_last["answer"]
    # usage of the Responses given (the first one's output is in `items` as plain items)
    assert from_items["usage"]["prompt_tokens"] == 20
    assert from_last["tool_calls"] == [] and normalize_trace(from_items, "t") == from_items
