"""Tokens and cost of stored exchanges, per provider shape, with sums worked by hand from the
price table (USD per million tokens, input and output)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_evalcases.http.usage import ExchangeUsage, exchanges_usage


def exchange(body: Any, code: int = 200, request_model: str | None = None) -> dict[str, Any]:
    """An exchange as `store/http.py` keeps it."""
    request_body = {"json": {"model": request_model}} if request_model else None
    return {
        "request": {
            "method": "POST",
            "uri": "http://127.0.0.1/v1",
            "headers": {},
            "body": request_body,
        },
        "response": {"status": {"code": code, "message": ""}, "headers": {}, "body": body},
    }


def sse(*events: Any, done: bool = False) -> dict[str, str]:
    lines = [f"data: {json.dumps(event)}\n\n" for event in events]
    return {"string": "".join(lines) + ("data: [DONE]\n\n" if done else "")}


def tokens(prompt: int, completion: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


OPENAI_CHAT = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "gpt-4o-mini-2024-07-18",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}],
    "usage": {"prompt_tokens": 1200, "completion_tokens": 300, "total_tokens": 1500},
}
ANTHROPIC = {
    "type": "message",
    "model": "claude-3-5-haiku-20241022",
    "content": [{"type": "text", "text": "ok"}],
    "usage": {"input_tokens": 1000, "output_tokens": 200},
}
EMBEDDING = {
    "object": "list",
    "data": [{"object": "embedding", "index": 0, "embedding": [0.1, 0.2]}],
    "model": "text-embedding-3-small",
    "usage": {"prompt_tokens": 8, "total_tokens": 8},
}


def test_openai_chat_completion() -> None:
    # gpt-4o-mini (0.15, 0.60), the snapshot date ignored: 1200 * 0.15 + 300 * 0.60 = 360 per M
    result = exchanges_usage([exchange({"json": OPENAI_CHAT})])
    assert result.requests == 1
    assert result.usage == tokens(1200, 300)
    assert result.cost_usd == pytest.approx(0.00036)


def test_openai_responses_api() -> None:
    body = {
        "object": "response",
        "model": "gpt-4.1-mini",
        "usage": {"input_tokens": 500, "output_tokens": 100, "total_tokens": 600},
    }
    # gpt-4.1-mini (0.40, 1.60): 500 * 0.40 + 100 * 1.60 = 360 per M
    result = exchanges_usage([exchange({"json": body})])
    assert result.usage == tokens(500, 100)
    assert result.cost_usd == pytest.approx(0.00036)


def test_anthropic_message() -> None:
    # claude-3-5-haiku (0.80, 4.00): 1000 * 0.80 + 200 * 4.00 = 1600 per M
    result = exchanges_usage([exchange({"json": ANTHROPIC})])
    assert result.usage == tokens(1000, 200)
    assert result.cost_usd == pytest.approx(0.0016)


def test_gemini_generate_content_with_a_numbered_model_version() -> None:
    body = {
        "candidates": [{"content": {"parts": [{"text": "ok"}]}}],
        "usageMetadata": {
            "promptTokenCount": 2000,
            "candidatesTokenCount": 500,
            "totalTokenCount": 2500,
        },
        "modelVersion": "gemini-2.0-flash-001",
    }
    # gemini-2.0-flash (0.10, 0.40): 2000 * 0.10 + 500 * 0.40 = 400 per M
    result = exchanges_usage([exchange({"json": body})])
    assert result.usage == tokens(2000, 500)
    assert result.cost_usd == pytest.approx(0.0004)


def test_gemini_thoughts_count_as_output() -> None:
    body = {
        "usageMetadata": {
            "promptTokenCount": 100,
            "candidatesTokenCount": 50,
            "thoughtsTokenCount": 150,
        },
        "modelVersion": "gemini-2.5-flash",
    }
    # gemini-2.5-flash (0.30, 2.50): 100 * 0.30 + (50 + 150) * 2.50 = 530 per M
    result = exchanges_usage([exchange({"json": body})])
    assert result.usage == tokens(100, 200)
    assert result.cost_usd == pytest.approx(0.00053)


def test_ollama_chat_generate_and_embed_are_counted_and_unpriced() -> None:
    chat = {
        "model": "llama3.2",
        "message": {"role": "assistant", "content": "ok"},
        "done": True,
        "prompt_eval_count": 26,
        "eval_count": 298,
    }
    generate = {
        "model": "llama3.2",
        "response": "ok",
        "done": True,
        "prompt_eval_count": 10,
        "eval_count": 5,
    }
    embed = {"model": "nomic-embed-text", "embeddings": [[0.1]], "prompt_eval_count": 7}
    exchanges = [exchange({"json": body}) for body in (chat, generate, embed)]

    result = exchanges_usage(exchanges)

    assert result.usage == tokens(26 + 10 + 7, 298 + 5)  # 43, 303
    assert result.cost_usd is None  # a local model the table does not price: unknown, not zero
    priced = exchanges_usage(
        exchanges, prices={"llama3.2": (0.0, 0.0), "nomic-embed-text": (0.0, 0.0)}
    )
    assert priced.cost_usd == 0.0


def test_an_embeddings_only_ingestion() -> None:
    big = {**EMBEDDING, "usage": {"prompt_tokens": 5000, "total_tokens": 5000}}
    # text-embedding-3-small (0.02, 0): (8 + 5000) * 0.02 = 100.16 per M
    result = exchanges_usage([exchange({"json": EMBEDDING}), exchange({"json": big})])
    assert result == ExchangeUsage(
        requests=2, usage=tokens(5008, 0), cost_usd=pytest.approx(0.00010016)
    )


def test_a_mixed_list_sums_what_reports_usage_and_counts_every_request() -> None:
    exchanges = [
        exchange({"json": OPENAI_CHAT}),  # 1200 + 300, 360 per M
        exchange({"json": ANTHROPIC}),  # 1000 + 200, 1600 per M
        exchange({"json": EMBEDDING}),  # 8 + 0, 0.16 per M
        exchange({"string": "<html>memory service ok</html>"}),  # no usage
        exchange({"json": {"ok": True, "memory_id": "m-1"}}),  # a service, not a model
        exchange({"json": OPENAI_CHAT}, code=500),  # an error: its body is not what it cost
    ]
    result = exchanges_usage(exchanges)
    assert result.requests == 6
    assert result.usage == tokens(2208, 500)
    assert result.cost_usd == pytest.approx((360 + 1600 + 0.16) / 1_000_000)


def test_one_unpriced_model_makes_the_cost_unknown_not_smaller() -> None:
    mine = {**OPENAI_CHAT, "model": "my-finetune"}
    result = exchanges_usage([exchange({"json": OPENAI_CHAT}), exchange({"json": mine})])
    assert result.usage == tokens(2400, 600)
    assert result.cost_usd is None


def test_a_response_without_its_model_is_priced_by_the_requests_model() -> None:
    body = {"usage": {"prompt_tokens": 1000, "completion_tokens": 0}}
    # gpt-4o (2.50, 10.00): 1000 * 2.50 = 2500 per M
    result = exchanges_usage([exchange({"json": body}, request_model="gpt-4o")])
    assert result.cost_usd == pytest.approx(0.0025)
    assert exchanges_usage([exchange({"json": body})]).cost_usd is None


def test_openai_stream_takes_the_chunk_that_reports_usage() -> None:
    chunk = {
        "object": "chat.completion.chunk",
        "model": "gpt-4o",
        "choices": [{"delta": {"content": "o"}}],
        "usage": None,
    }
    last = {
        "object": "chat.completion.chunk",
        "model": "gpt-4o",
        "choices": [],
        "usage": {"prompt_tokens": 40, "completion_tokens": 12, "total_tokens": 52},
    }
    # gpt-4o (2.50, 10.00): 40 * 2.50 + 12 * 10.00 = 220 per M
    result = exchanges_usage([exchange(sse(chunk, chunk, last, done=True))])
    assert result.usage == tokens(40, 12)
    assert result.cost_usd == pytest.approx(0.00022)


def test_anthropic_stream_takes_the_inputs_of_message_start_and_the_outputs_of_message_delta() -> (
    None
):
    events = [
        {
            "type": "message_start",
            "message": {
                "model": "claude-sonnet-4-20250514",
                "usage": {"input_tokens": 25, "output_tokens": 1},
            },
        },
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 15},
        },
        {"type": "message_stop"},
    ]
    # claude-sonnet-4 (3.00, 15.00): 25 * 3 + 15 * 15 = 300 per M
    result = exchanges_usage([exchange(sse(*events))])
    assert result.usage == tokens(25, 15)
    assert result.cost_usd == pytest.approx(0.0003)


def test_responses_api_stream_reads_the_completed_response() -> None:
    created = {"type": "response.created", "response": {"model": "gpt-4o-mini", "usage": None}}
    completed = {
        "type": "response.completed",
        "response": {"model": "gpt-4o-mini", "usage": {"input_tokens": 100, "output_tokens": 50}},
    }
    # gpt-4o-mini (0.15, 0.60): 100 * 0.15 + 50 * 0.60 = 45 per M
    result = exchanges_usage([exchange(sse(created, completed))])
    assert result.usage == tokens(100, 50)
    assert result.cost_usd == pytest.approx(0.000045)


def test_ollama_json_lines_stream_reads_its_last_line() -> None:
    lines = [
        {"model": "llama3.2", "message": {"content": "o"}, "done": False},
        {
            "model": "llama3.2",
            "message": {"content": "k"},
            "done": True,
            "prompt_eval_count": 9,
            "eval_count": 2,
        },
    ]
    body = {"string": "\n".join(json.dumps(line) for line in lines) + "\n"}
    assert exchanges_usage([exchange(body)]).usage == tokens(9, 2)


def test_gemini_array_stream_takes_its_last_running_total() -> None:
    chunks = [
        {
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 3},
            "modelVersion": "gemini-2.5-pro",
        },
        {
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 8},
            "modelVersion": "gemini-2.5-pro",
        },
    ]
    assert exchanges_usage([exchange({"json": chunks})]).usage == tokens(10, 8)


def test_a_count_that_is_not_a_non_negative_int_is_ignored() -> None:
    odd = {"model": "gpt-4o", "usage": {"prompt_tokens": 10, "completion_tokens": -3}}
    result = exchanges_usage([exchange({"json": odd})])
    assert result.usage == tokens(10, 0)
    for bad in (-1, 1.5, "12", True, None, [3], {"n": 1}, 10**400):
        body = {"model": "gpt-4o", "usage": {"prompt_tokens": bad, "completion_tokens": bad}}
        assert exchanges_usage([exchange({"json": body})]) == ExchangeUsage(1, None, None), bad


def test_nothing_reported_is_no_usage_and_no_cost() -> None:
    assert exchanges_usage([]) == ExchangeUsage(0, None, None)
    assert exchanges_usage([exchange(None), exchange({"base64": "AAAA"})]) == ExchangeUsage(
        2, None, None
    )


@pytest.mark.parametrize(
    "interactions",
    [
        None,
        "interactions",
        b"bytes",
        42,
        {"interactions": []},
        [None, 1, "x", [], {}],
        [
            {"response": None},
            {"response": "ok"},
            {"response": {"status": "200", "body": {"json": OPENAI_CHAT}}},
        ],
        [{"response": {"status": {"code": True}, "body": {"json": OPENAI_CHAT}}}],
        [{"response": {"status": {"code": "200"}, "body": {"json": OPENAI_CHAT}}}],
        [{"response": {"body": "not a stored body"}}],
        [{"response": {"body": {"json": None}}}, {"response": {"body": {"json": [1, "x", None]}}}],
        [{"response": {"body": {"json": {"usage": "lots", "usageMetadata": [], "model": 7}}}}],
        [{"response": {"body": {"json": {"message": "hi", "response": 3}}}}],
        [
            {"response": {"body": {"string": 12}}},
            {"response": {"body": {"string": "data: {oops\n\nx\n"}}},
        ],
        [{"response": {"body": {"string": "data: " + "[" * 100_000 + "]" * 100_000 + "\n\nx\n"}}}],
    ],
)
def test_junk_never_raises_and_reports_no_usage(interactions: Any) -> None:
    result = exchanges_usage(interactions)
    assert result.usage is None and result.cost_usd is None


def test_junk_exchanges_still_count_as_requests() -> None:
    assert (
        exchanges_usage([None, {"response": None}, exchange({"json": OPENAI_CHAT})]).requests == 3
    )
