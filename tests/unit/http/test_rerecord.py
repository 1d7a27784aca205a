"""Values a provider makes fresh on every call (http/volatile.py, http/rerecord.py): a re-record
that differs only in them keeps the old exchanges whole; a real change keeps their old form
wherever the old exchange has them, and the ids the client echoes (and the trace) follow."""

from __future__ import annotations

import copy
import json
from typing import Any

from pytest_evalcases.http.match import ABSENT, json_differences
from pytest_evalcases.http.rerecord import (
    exchange_differences,
    keep_old_volatile,
    same_exchanges,
    with_old_ids,
)
from pytest_evalcases.http.volatile import Volatility

CHAT = "https://api.openai.com/v1/chat/completions"
TOOLS = [{"type": "function", "function": {"name": "search_kb", "description": "Search the KB."}}]
BUILT_IN = Volatility()


def chat_exchange(
    messages: list[dict[str, Any]],
    reply: dict[str, Any],
    *,
    run: str,
    tools: list[dict[str, Any]] = TOOLS,
    uri: str = CHAT,
) -> dict[str, Any]:
    """One chat-completions exchange as a run `run` records it: its ids, time and headers."""
    return {
        "request": {
            "method": "POST",
            "uri": uri,
            "headers": {"content-type": ["application/json"]},
            "body": {"json": {"model": "gpt-4o-mini", "messages": messages, "tools": tools}},
        },
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": {
                "content-type": ["application/json"],
                "date": [f"Mon, 0{len(run)} Jan 2024 {run}"],
                "x-request-id": [f"req_{run}"],
                "openai-processing-ms": [str(len(run) * 100)],
                "x-ratelimit-remaining-requests": [str(len(run))],
                "openai-version": ["2020-10-01"],
            },
            "body": {
                "json": {
                    "id": f"chatcmpl-{run}-{len(messages)}",
                    "object": "chat.completion",
                    "created": 1_700_000_000 + len(run),
                    "system_fingerprint": f"fp_{run}",
                    "model": "gpt-4o-mini",
                    "choices": [{"index": 0, "message": reply, "finish_reason": "stop"}],
                    "usage": {
                        "prompt_tokens": 10,
                        "completion_tokens": 5,
                        "prompt_tokens_details": {"cached_tokens": len(run)},
                    },
                }
            },
        },
    }


def tool_loop(run: str, tools: list[dict[str, Any]] = TOOLS, answer: str = "30 days.") -> list:
    """A two-request agent loop: the model calls search_kb, the client echoes the call's id."""
    call_id = f"call_{run}_search0001"
    question = [{"role": "user", "content": "How long do I have to return it?"}]
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": "search_kb", "arguments": '{"query": "return"}'},
    }
    first = chat_exchange(
        question, {"role": "assistant", "content": None, "tool_calls": [call]}, run=run, tools=tools
    )
    followed = [
        *question,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": "Returns: 30 days."},
    ]
    second = chat_exchange(followed, {"role": "assistant", "content": answer}, run=run, tools=tools)
    return [first, second]


def dumped(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


# ---- only volatile values differ ---------------------------------------------------------------
def test_a_rerecord_that_differs_only_in_volatile_values_keeps_the_old_exchanges() -> None:
    old, new = tool_loop("first"), tool_loop("second")
    assert dumped(old) != dumped(new)

    rerecorded = keep_old_volatile(old, new, BUILT_IN)

    assert rerecorded.unchanged
    assert dumped(rerecorded.exchanges) == dumped(old)
    assert rerecorded.changed == []
    assert same_exchanges(old, new, BUILT_IN)
    # What the trace may hold of the new run maps back to the old run's values.
    assert rerecorded.fresh_ids["call_second_search0001"] == "call_first_search0001"
    assert rerecorded.fresh_ids["chatcmpl-second-1"] == "chatcmpl-first-1"


def test_exchanges_in_another_order_are_the_same_and_keep_the_old_order() -> None:
    old = tool_loop("first")
    new = list(reversed(tool_loop("second")))

    rerecorded = keep_old_volatile(old, new, BUILT_IN)

    assert rerecorded.unchanged and dumped(rerecorded.exchanges) == dumped(old)


def test_a_real_field_change_is_a_change() -> None:
    old = tool_loop("first")
    for new in (
        tool_loop("second", answer="14 days."),  # the response
        tool_loop(
            "second",
            tools=[
                {
                    "type": "function",
                    "function": {"name": "search_kb", "description": "Search the help center."},
                }
            ],
        ),
    ):
        assert not same_exchanges(old, new, BUILT_IN)
        assert not keep_old_volatile(old, new, BUILT_IN).unchanged
    assert not same_exchanges(old, old[:1], BUILT_IN)


# ---- a real change, written with the old volatile values -------------------------------------
def test_a_real_change_writes_the_new_exchanges_with_the_old_ids_times_and_headers() -> None:
    edited = [
        {
            "type": "function",
            "function": {"name": "search_kb", "description": "Search the help center."},
        }
    ]
    old, new = tool_loop("first"), tool_loop("second", tools=edited)

    rerecorded = keep_old_volatile(old, new, BUILT_IN)

    assert not rerecorded.unchanged and len(rerecorded.changed) == 2
    written = rerecorded.exchanges
    # The diff of the file holds the description alone: no id, time or request id.
    assert json_differences(old, written) == [
        (
            "$[0].request.body.json.tools[0].function.description",
            "Search the KB.",
            "Search the help center.",
        ),
        (
            "$[1].request.body.json.tools[0].function.description",
            "Search the KB.",
            "Search the help center.",
        ),
    ]
    # The echoed ids took their old form with the id they echo: --replay-http still matches.
    second = written[1]["request"]["body"]["json"]["messages"]
    assert second[1]["tool_calls"][0]["id"] == second[2]["tool_call_id"] == "call_first_search0001"
    assert new[0]["response"]["headers"]["date"] != old[0]["response"]["headers"]["date"]
    assert new[0]["request"]["body"]["json"]["tools"] == edited  # the input is left as it was


def test_a_header_that_is_not_volatile_takes_its_new_value() -> None:
    old, new = tool_loop("first"), tool_loop("second", answer="14 days.")
    new[1]["response"]["headers"]["openai-version"] = ["2025-01-01"]

    written = keep_old_volatile(old, new, BUILT_IN).exchanges

    headers = written[1]["response"]["headers"]
    assert headers["openai-version"] == ["2025-01-01"]
    for name in ("date", "x-request-id", "openai-processing-ms", "x-ratelimit-remaining-requests"):
        assert headers[name] == old[1]["response"]["headers"][name], name


def test_a_fresh_value_with_no_old_place_keeps_its_new_form() -> None:
    old, new = tool_loop("first"), tool_loop("second")
    reply = new[0]["response"]["body"]["json"]["choices"][0]["message"]
    reply["tool_calls"].append(
        {
            "id": "call_second_lookup0002",
            "type": "function",
            "function": {"name": "get_order", "arguments": "{}"},
        }
    )

    rerecorded = keep_old_volatile(old, new, BUILT_IN)

    calls = rerecorded.exchanges[0]["response"]["body"]["json"]["choices"][0]["message"]
    assert [c["id"] for c in calls["tool_calls"]] == [
        "call_first_search0001",
        "call_second_lookup0002",
    ]
    assert "call_second_lookup0002" not in rerecorded.fresh_ids


def test_two_fresh_ids_never_take_the_same_old_form() -> None:
    old = tool_loop("first")
    new = tool_loop("second") + tool_loop("third")  # two more requests, paired with nothing old

    rerecorded = keep_old_volatile(old, new, BUILT_IN)

    ids = [e["response"]["body"]["json"]["id"] for e in rerecorded.exchanges]
    assert ids[:2] == ["chatcmpl-first-1", "chatcmpl-first-3"]
    assert ids[2:] == ["chatcmpl-third-1", "chatcmpl-third-3"]
    assert len(set(rerecorded.fresh_ids.values())) == len(rerecorded.fresh_ids)


def test_the_trace_takes_the_old_ids_too() -> None:
    rerecorded = keep_old_volatile(tool_loop("first"), tool_loop("second"), BUILT_IN)
    trace = {
        "answer": "30 days.",
        "tool_calls": [
            {"name": "search_kb", "args": {"query": "return"}, "id": "call_second_search0001"}
        ],
    }

    assert with_old_ids(trace, rerecorded.fresh_ids)["tool_calls"][0]["id"] == (
        "call_first_search0001"
    )
    assert with_old_ids(trace, {}) is trace


# ---- the suite's own paths and headers ---------------------------------------------------------
def test_the_suite_names_its_own_volatile_fields_and_headers() -> None:
    def exchange(trace_id: str, session: str, span: str) -> dict[str, Any]:
        return {
            "request": {
                "method": "POST",
                "uri": "http://127.0.0.1:9/search",
                "headers": {},
                "body": {"json": {"q": "x", "session": session}},
            },
            "response": {
                "status": {"code": 200, "message": "OK"},
                "headers": {"X-MyCorp-Span": [span]},
                "body": {"json": {"hits": ["a"], "meta": {"trace_id": trace_id}}},
            },
        }

    old = [exchange("trace-0000000001", "session-1", "span-1")]
    new = [exchange("trace-0000000002", "session-2", "span-2")]
    assert not same_exchanges(old, new, BUILT_IN)  # not a provider's fields

    suite = Volatility(["$.meta.trace_id", "$.session", "x-mycorp-*"])
    assert same_exchanges(old, new, suite)
    assert keep_old_volatile(old, new, suite).unchanged

    new[0]["response"]["body"]["json"]["hits"] = ["b"]
    written = keep_old_volatile(old, new, suite).exchanges[0]
    assert written["response"]["body"]["json"] == {
        "hits": ["b"],
        "meta": {"trace_id": "trace-0000000001"},
    }
    assert written["request"]["body"]["json"]["session"] == "session-1"
    assert written["response"]["headers"] == {"X-MyCorp-Span": ["span-1"]}


def test_built_in_headers() -> None:
    for name in (
        "Date",
        "x-request-id",
        "request-id",
        "openai-processing-ms",
        "CF-RAY",
        "x-ratelimit-reset-tokens",
        "anthropic-ratelimit-requests-remaining",
        "apim-request-id",
        "x-envoy-upstream-service-time",
    ):
        assert BUILT_IN.is_volatile_header(name), name
    for name in ("content-type", "openai-version", "x-trace-idea"):
        assert not BUILT_IN.is_volatile_header(name), name
    assert Volatility(["x-trace-idea"]).is_volatile_header("X-Trace-Idea")


def test_provider_paths_apply_on_their_endpoints_only() -> None:
    """A nested `id` of any other API is content (an order id); a top-level `id`, `created`
    and `system_fingerprint` are what every OpenAI-compatible server sends, on any path."""

    def exchange(uri: str, order: str, reply_id: str) -> dict[str, Any]:
        return {
            "request": {"method": "GET", "uri": uri, "headers": {}, "body": None},
            "response": {
                "status": {"code": 200, "message": "OK"},
                "headers": {},
                "body": {"json": {"id": reply_id, "order": {"id": order}}},
            },
        }

    old = [exchange("http://shop/api/orders/1", "A-1001", "r1")]
    assert same_exchanges(old, [exchange("http://shop/api/orders/1", "A-1001", "r2")], BUILT_IN)
    assert not same_exchanges(old, [exchange("http://shop/api/orders/1", "A-1002", "r1")], BUILT_IN)


# ---- other providers and streamed bodies -------------------------------------------------------
def anthropic_loop(run: str) -> list[dict[str, Any]]:
    uri = "https://api.anthropic.com/v1/messages"
    use = {
        "type": "tool_use",
        "id": f"toolu_{run}_000001",
        "name": "search_kb",
        "input": {"query": "return"},
    }

    def exchange(messages: list[Any], content: list[Any]) -> dict[str, Any]:
        return {
            "request": {
                "method": "POST",
                "uri": uri,
                "headers": {},
                "body": {"json": {"model": "claude", "messages": messages}},
            },
            "response": {
                "status": {"code": 200, "message": "OK"},
                "headers": {"request-id": [f"req_{run}"]},
                "body": {
                    "json": {
                        "id": f"msg_{run}_{len(messages)}",
                        "type": "message",
                        "content": content,
                    }
                },
            },
        }

    question = [{"role": "user", "content": "How long?"}]
    return [
        exchange(question, [use]),
        exchange(
            [
                *question,
                {"role": "assistant", "content": [use]},
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": use["id"], "content": "30"}],
                },
            ],
            [{"type": "text", "text": "30 days."}],
        ),
    ]


def test_anthropic_tool_use_ids_and_their_echoes() -> None:
    old, new = anthropic_loop("first"), anthropic_loop("second")
    assert keep_old_volatile(old, new, BUILT_IN).unchanged

    new[1]["response"]["body"]["json"]["content"][0]["text"] = "Thirty days."
    written = keep_old_volatile(old, new, BUILT_IN).exchanges
    assert json_differences(old, written) == [
        ("$[1].response.body.json.content[0].text", "30 days.", "Thirty days.")
    ]


def responses_loop(run: str, answer: str = "30 days.") -> list[dict[str, Any]]:
    uri = "https://api.openai.com/v1/responses"
    call = {
        "type": "function_call",
        "id": f"fc_{run}_000001",
        "call_id": f"call_{run}_000001",
        "name": "search_kb",
        "arguments": "{}",
        "status": "completed",
    }

    def exchange(body: dict[str, Any], output: list[Any], number: int) -> dict[str, Any]:
        return {
            "request": {"method": "POST", "uri": uri, "headers": {}, "body": {"json": body}},
            "response": {
                "status": {"code": 200, "message": "OK"},
                "headers": {},
                "body": {
                    "json": {
                        "id": f"resp_{run}_{number}",
                        "object": "response",
                        "created_at": len(run),
                        "output": output,
                    }
                },
            },
        }

    return [
        exchange({"input": "How long?"}, [call], 1),
        exchange(
            {
                "previous_response_id": f"resp_{run}_1",
                "input": [
                    {"type": "function_call_output", "call_id": call["call_id"], "output": "30"}
                ],
            },
            [
                {
                    "type": "message",
                    "id": f"msg_{run}_000002",
                    "content": [{"type": "output_text", "text": answer}],
                }
            ],
            2,
        ),
    ]


def test_openai_responses_ids_and_the_previous_response_id() -> None:
    old = responses_loop("first")
    assert keep_old_volatile(old, responses_loop("second"), BUILT_IN).unchanged

    written = keep_old_volatile(old, responses_loop("second", "Thirty."), BUILT_IN).exchanges
    assert [path for path, _, _ in json_differences(old, written)] == [
        "$[1].response.body.json.output[0].content[0].text"
    ]


def streamed(run: str, text: str) -> dict[str, Any]:
    chunks = [
        {
            "id": f"chatcmpl-{run}",
            "object": "chat.completion.chunk",
            "created": len(run),
            "choices": [{"index": 0, "delta": {"content": word}}],
        }
        for word in text.split()
    ]
    body = "".join(f"data: {json.dumps(c, separators=(',', ':'))}\n\n" for c in chunks)
    return {
        "request": {
            "method": "POST",
            "uri": CHAT,
            "headers": {},
            "body": {"json": {"stream": True, "messages": []}},
        },
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": {"content-type": ["text/event-stream"]},
            "body": {"string": body + "data: [DONE]\n\n"},
        },
    }


def test_a_streamed_response_is_compared_and_kept_event_by_event() -> None:
    old = [streamed("first", "thirty days")]
    assert keep_old_volatile(old, [streamed("second", "thirty days")], BUILT_IN).unchanged

    new = [streamed("second", "thirty one days")]
    rerecorded = keep_old_volatile(old, new, BUILT_IN)
    body = rerecorded.exchanges[0]["response"]["body"]["string"]
    assert "chatcmpl-second" not in body and body.count('"id":"chatcmpl-first"') == 3
    assert body.startswith(old[0]["response"]["body"]["string"][:40])  # unchanged events: bytes
    assert body.endswith("data: [DONE]\n\n")
    [(before, after)] = rerecorded.changed
    assert exchange_differences(before, after, BUILT_IN) == [
        ("response", "events[1].choices[0].delta.content", "days", "one"),
        (
            "response",
            "events[2]",
            ABSENT,
            {
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {"content": "days"}}],
            },
        ),
    ]


# ---- what differs ------------------------------------------------------------------------------
def test_exchange_differences_name_the_field_not_the_volatile_values() -> None:
    edited = [
        {
            "type": "function",
            "function": {"name": "search_kb", "description": "Search the help center."},
        }
    ]
    old, new = tool_loop("first"), tool_loop("second", tools=edited, answer="14 days.")

    rerecorded = keep_old_volatile(old, new, BUILT_IN)

    found = [exchange_differences(o, n, BUILT_IN) for o, n in rerecorded.changed]
    description = (
        "request",
        "$.tools[0].function.description",
        "Search the KB.",
        "Search the help center.",
    )
    assert found[0] == [description]
    assert found[1] == [
        description,
        ("response", "$.choices[0].message.content", "30 days.", "14 days."),
    ]
    # Built from copies: the new exchanges are not modified.
    assert copy.deepcopy(new) == new


def test_a_moved_base_url_still_pairs_and_is_named() -> None:
    old = tool_loop("first")
    new = tool_loop("second")
    for exchange in new:
        exchange["request"]["uri"] = "http://127.0.0.1:35005/v1/chat/completions"

    rerecorded = keep_old_volatile(old, new, BUILT_IN)

    assert [before is not None for before, _ in rerecorded.changed] == [True, True]
    assert [path for path, _, _ in json_differences(old, rerecorded.exchanges)] == [
        "$[0].request.uri",
        "$[1].request.uri",
    ]  # the ids, times and headers are the old ones
    before, after = rerecorded.changed[0]
    assert exchange_differences(before, after, BUILT_IN) == [
        ("request", "url", CHAT, "http://127.0.0.1:35005/v1/chat/completions")
    ]


def test_a_fresh_value_to_keep_new_keeps_it_and_its_exchange_is_written_anew() -> None:
    """An ingestion whose result holds a fresh id (a new memory id the cases use): its old form
    would make --replay-http return another result."""
    old, new = tool_loop("first"), tool_loop("second")

    rerecorded = keep_old_volatile(old, new, BUILT_IN, keep_new={"chatcmpl-second-1"})

    assert not rerecorded.unchanged
    first, second = rerecorded.exchanges
    assert first["response"]["body"]["json"]["id"] == "chatcmpl-second-1"  # kept new
    assert first["response"]["headers"]["date"] == old[0]["response"]["headers"]["date"]
    assert second == old[1]  # the other exchange: the same but for volatile values
    assert "chatcmpl-second-1" not in rerecorded.fresh_ids
