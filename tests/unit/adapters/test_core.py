"""What every adapter shares: the default retriever extractor, the price table, tool schemas of
OpenAI tool dicts, and that using an adapter imports no framework."""

from __future__ import annotations

import json

import pytest

from pytest_evalcases.adapters import default_extractor, fingerprint_of, tool_schemas
from pytest_evalcases.adapters.pricing import cost_usd, price_of


@pytest.mark.parametrize(
    "output",
    [
        json.dumps([{"id": "a", "text": "A."}, {"id": "b", "content": "B."}]),
        [{"doc_id": "a", "page_content": "A."}, {"file_id": "b", "text": "B."}],
        {"results": [{"id": "a", "text": "A."}, {"id": "b", "text": "B."}]},
        ("a and b", [{"id": "a", "text": "A."}, {"id": "b", "text": "B."}]),  # content, artifact
    ],
)
def test_default_extractor_reads_the_usual_shapes(output: object) -> None:
    assert default_extractor(output) == [("a", "A."), ("b", "B.")]


@pytest.mark.parametrize(
    "output", ['{"error": "no such order"}', "not json", 42, [{"text": "no id"}], None]
)
def test_default_extractor_finds_no_documents_in_other_outputs(output: object) -> None:
    assert default_extractor(output) == []


def test_prices_ignore_provider_prefixes_and_snapshot_dates() -> None:
    mini = price_of("gpt-4o-mini")
    assert mini == (0.15, 0.60)
    for name in ("openai:gpt-4o-mini", "openai/gpt-4o-mini", "gpt-4o-mini-2024-07-18"):
        assert price_of(name) == mini, name
    assert price_of("gpt-4o") != mini  # a prefix of another name is not that name
    assert price_of("my-model") is None and cost_usd("my-model", 10, 10) is None
    assert cost_usd("my-model", 1_000_000, 0, {"my-model": (2.0, 4.0)}) == 2.0


def test_tool_schemas_of_both_openai_shapes_agree() -> None:
    parameters = {"type": "object", "properties": {"q": {"type": "string"}}}
    chat = [
        {
            "type": "function",
            "function": {"name": "search", "description": "Find.", "parameters": parameters},
        }
    ]
    responses = [
        {"type": "function", "name": "search", "description": "Find.", "parameters": parameters}
    ]

    assert (
        tool_schemas(chat)
        == tool_schemas(responses)
        == {"search": {"description": "Find.", "parameters": parameters}}
    )
    assert fingerprint_of(chat, model="gpt-4o-mini", prompt="Be brief.") == {
        "model": "gpt-4o-mini",
        "prompt": "Be brief.",
        "tool.search": {"description": "Find.", "parameters": parameters},
    }


def test_a_tool_it_cannot_read_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match="cannot read the schema of tool"):
        tool_schemas([object()])
