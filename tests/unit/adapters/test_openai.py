"""`from_openai_messages` and `from_openai_response` on hand-written messages and items:
arguments that are not JSON are kept, file_search results are retrieval (the SDK's own
objects against a loopback server: tests/integration/test_adapter_openai.py)."""

from __future__ import annotations

from pytest_evalcases.adapters import from_openai_messages, from_openai_response


def test_arguments_that_are_not_json_are_kept_not_dropped() -> None:
    messages = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "search_kb", "arguments": "{oops"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "error"},
        {"role": "assistant", "content": "Sorry."},
    ]

    trace = from_openai_messages(messages, model="my-private-model")

    assert trace["tool_calls"] == [{"name": "search_kb", "args": {"_raw": "{oops"}}]
    assert trace["answer"] == "Sorry." and "usage" not in trace  # no completion: no usage


def test_file_search_results_are_retrieval() -> None:
    items = [
        {
            "type": "file_search_call",
            "id": "fs_1",
            "status": "completed",
            "queries": ["refund"],
            "results": [{"file_id": "file-refunds", "filename": "refunds.md", "text": "30 days."}],
        },
        {
            "type": "message",
            "role": "assistant",
            "id": "m1",
            "status": "completed",
            "content": [{"type": "output_text", "text": "30 days.", "annotations": []}],
        },
    ]

    trace = from_openai_response(items, retrievers=["file_search"])

    assert trace["tool_calls"] == [{"name": "file_search", "args": {"queries": ["refund"]}}]
    assert trace["retrieved"] == ["file-refunds"] and trace["context"] == ["30 days."]
