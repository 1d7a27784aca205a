"""engine/diff (issue 9): what makes two recordings or two HTTP recordings the same (timings,
usage, ids and order do not), and how a later run's changes are described."""

from __future__ import annotations

import json
from typing import Any

from pytest_evalcases.engine import diff
from pytest_evalcases.store.cassette import Cassette


def same_recording(old: dict[str, Any], new: dict[str, Any]) -> bool:
    return diff.same_recording(Cassette.from_doc(old), Cassette.from_doc(new))


def describe_changes(old: dict[str, Any], new: dict[str, Any], scores: Any) -> list[str]:
    return diff.describe_changes(Cassette.from_doc(old), Cassette.from_doc(new), scores)


def test_same_recording_ignores_timings_usage_and_call_counts() -> None:
    old = {
        "format": 2,
        "suite": "s",
        "case": "a",
        "key": {"case": "k"},
        "recorded_at": "2024-01-01T00:00:00Z",
        "plugin_version": "0.0.1",
        "trace": {
            "answer": "x",
            "latency_ms": 1,
            "usage": {"cost_usd": 1},
            "tool_calls": [{"name": "t", "latency_ms": 2}],
        },
        "verdicts": {"f": {"score": 1.0, "latency_ms": 3, "usage": None, "calls": 1}},
    }
    new = json.loads(json.dumps(old))
    new.update(recorded_at="2025-01-01T00:00:00Z", plugin_version="0.1.0")
    new["trace"].update(latency_ms=9, usage={"cost_usd": 2})
    new["trace"]["tool_calls"][0]["latency_ms"] = 8
    new["verdicts"]["f"].update(latency_ms=7, usage={"cost_usd": 0.1}, calls=3)
    assert same_recording(old, new)
    for change in (
        {"key": {"case": "other"}},
        {"trace": {**new["trace"], "answer": "y"}},
        {"verdicts": {"f": {**new["verdicts"]["f"], "reason": "new words"}}},
    ):
        assert not same_recording(old, {**new, **change}), change


def test_same_exchanges_ignores_headers_ids_and_order_but_not_content() -> None:
    from pytest_evalcases.http.rerecord import same_exchanges
    from pytest_evalcases.http.volatile import Volatility

    def exchange(question: str, reply_id: str, date: str) -> dict[str, Any]:
        return {
            "request": {
                "method": "POST",
                "uri": "http://h/v1/chat",
                "headers": {},
                "body": {"json": {"q": question, "user": reply_id}},
            },
            "response": {
                "status": {"code": 200, "message": "OK"},
                "headers": {"Date": [date]},
                "body": {
                    "json": {
                        "id": reply_id,
                        "created": 1,
                        "answer": question,
                        "usage": {"total_tokens": len(reply_id)},
                    }
                },
            },
        }

    old = [exchange("a", "id-1", "Mon"), exchange("b", "id-2", "Mon")]
    new = [exchange("b", "id-3", "Tue"), exchange("a", "id-4", "Tue")]
    volatility = Volatility()
    assert not same_exchanges(old, new, volatility)  # `user` differs in the requests
    assert same_exchanges(old, new, volatility, [["user"]])  # unless http_ignore names it
    assert same_exchanges(old, new, Volatility(["$.user"]))  # or http_volatile
    changed = [exchange("a", "id-1", "Mon"), exchange("c", "id-2", "Mon")]
    assert not same_exchanges(old, changed, volatility, [["user"]])
    assert not same_exchanges(old, old[:1], volatility)


def test_the_changes_of_a_later_run_are_described() -> None:
    """--eval-runs: a re-recording whose runs 2..K changed (or whose run count changed) says so,
    instead of a bare `(changed)`."""

    def scores(recording: Any) -> dict[str, tuple[bool | None, float | None]]:
        passed = recording.trace["answer"] == "good"
        return {"tools": (passed, 1.0 if passed else 0.0)}

    def run(answer: str) -> dict[str, Any]:
        return {"trace": {"answer": answer}, "verdicts": {}}

    old = {"key": {}, **run("good"), "later_runs": [run("bad")]}
    new = {"key": {}, **run("good"), "later_runs": [run("good")]}
    assert describe_changes(old, new, scores) == [
        "run 2: answer: 'bad' -> 'good'",
        "run 2: tools: FAIL -> pass (0.00 -> 1.00)",
    ]
    more = {**new, "later_runs": [run("good"), run("good")]}
    assert describe_changes(new, more, scores) == ["runs: 2 -> 3"]
    assert describe_changes({"key": {}, **run("good")}, new, scores) == ["runs: 1 -> 2"]


def test_a_re_record_that_adds_labels_is_a_change_and_says_so() -> None:
    """A cassette recorded without labels (or with older ones) is rewritten by a --live that
    changes nothing else, so its stale messages can show names; equal labels stay unchanged."""
    old = {
        "format": 2,
        "suite": "s",
        "case": "a",
        "key": {"case": "k"},
        "trace": {},
        "verdicts": {},
    }
    labelled = {**old, "labels": {"key": {"case": '"q"'}}}
    assert not same_recording(old, labelled)
    assert same_recording(labelled, json.loads(json.dumps(labelled)))
    relabelled = {**old, "labels": {"key": {"case": '"q2"'}}}
    assert not same_recording(labelled, relabelled)
    assert describe_changes(old, labelled, lambda _: {}) == ["labels added"]
    assert describe_changes(labelled, relabelled, lambda _: {}) == ["labels changed"]
    # when the key changed, the labels follow it: not said twice
    moved = {**relabelled, "key": {"case": "k2"}}
    assert describe_changes(labelled, moved, lambda _: {}) == ["key changed: case"]
