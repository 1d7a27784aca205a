"""What the `recording changes` section says of a case's HTTP recording: the fields that
changed (old -> new), not a count, and never a value the provider makes fresh on every call."""

from __future__ import annotations

from typing import Any

from pytest_evalcases.engine.diff import changed_values, describe_http_changes
from pytest_evalcases.http.match import ABSENT
from pytest_evalcases.http.rerecord import keep_old_volatile
from pytest_evalcases.http.volatile import Volatility

DESCRIPTION = (
    "Search the ShopCo knowledge base (help articles about returns, warranty and shipping) "
    "and return the best-matching articles."
)
EDITED = DESCRIPTION.replace("knowledge base", "help center")


def exchange(run: str, description: str, answer: str, number: int) -> dict[str, Any]:
    return {
        "request": {
            "method": "POST",
            "uri": "http://127.0.0.1:8765/v1/chat/completions",
            "headers": {},
            "body": {
                "json": {
                    "messages": [{"role": "user", "content": f"question {number}"}],
                    "tools": [{"type": "function", "function": {"description": description}}],
                }
            },
        },
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": {"x-request-id": [f"req_{run}_{number}"]},
            "body": {
                "json": {
                    "id": f"chatcmpl-{run}-{number}",
                    "created": len(run),
                    "choices": [{"message": {"role": "assistant", "content": answer}}],
                }
            },
        },
    }


def changes(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[str]:
    volatility = Volatility()
    rerecorded = keep_old_volatile(old, new, volatility)
    return describe_http_changes(len(old), rerecorded, len(rerecorded.exchanges), volatility)


def test_a_tool_description_edit_is_named_once_with_its_old_and_new_words() -> None:
    old = [exchange("first", DESCRIPTION, "30 days.", n) for n in (1, 2)]
    new = [exchange("second", EDITED, "30 days.", n) for n in (1, 2)]

    assert changes(old, new) == [
        "HTTP request $.tools[0].function.description: 'Search the ShopCo knowledge base…' "
        "-> 'Search the ShopCo help center…' (2 exchanges)"
    ]


def test_request_fields_come_before_response_fields_and_counts_first() -> None:
    old = [exchange("first", DESCRIPTION, "30 days.", 1)]
    new = [exchange("second", EDITED, "14 days.", 1), exchange("second", EDITED, "x", 2)]

    assert changes(old, new) == [
        "HTTP exchanges: 1 -> 2",
        "HTTP request $.tools[0].function.description: 'Search the ShopCo knowledge base…' "
        "-> 'Search the ShopCo help center…'",
        "HTTP response $.choices[0].message.content: '30 days.' -> '14 days.'",
    ]


def test_many_differences_are_counted_beyond_the_shown_ones() -> None:
    old = [exchange("first", DESCRIPTION, "30 days.", 1)]
    new = [exchange("second", DESCRIPTION, "14 days.", 1)]
    new[0]["request"]["body"]["json"].update({f"field{i}": i for i in range(9)})

    lines = changes(old, new)

    assert len(lines) == 7 and lines[-1] == "HTTP: 4 more differences"
    assert lines[0] == "HTTP request $.field0: <absent> -> 0"


def test_without_an_old_recording_the_count_is_said() -> None:
    assert describe_http_changes(None, None, 2, Volatility()) == ["HTTP exchanges: none -> 2"]
    assert describe_http_changes(2, None, 2, Volatility()) == ["HTTP exchanges: 2 (changed)"]


def test_changed_values_show_where_two_strings_differ() -> None:
    assert changed_values("You have 30 days.", "You have 14 days.") == (
        "'You have 30 days.' -> 'You have 14 days.'"
    )
    assert changed_values("word " * 20 + "end", "word " * 20 + "fin") == (
        "'…word word word word word end' -> '…word word word word word fin'"
    )
    assert changed_values("a b", "a x b") == "'a b' -> 'a x b'"
    assert changed_values(ABSENT, {"k": 3}) == '<absent> -> {"k": 3}'
    assert changed_values(1, None) == "1 -> null"
