"""What a failing case shows beside its scores (issue 20, part 4): the values its first failing
stage compared, cut short by default and whole under -vv (pure functions, no pytest run)."""

from __future__ import annotations

from typing import Any

from pytest_evalcases.core.names import listed, shown_value
from pytest_evalcases.core.schema import validate_case
from pytest_evalcases.core.suite_schema import Suite
from pytest_evalcases.domain.scoring import (
    failure_details,
    failure_message,
    runs_failure_message,
    score_case,
    score_runs,
)

SUITE = Suite.model_validate(
    {"name": "s", "stages": ["tools", "retrieval", "exact_match", "faithfulness"], "cases": []}
)
QUESTION = "How many days do I have to return an order that I bought last week from the shop?"
ANSWER = (
    "You can return most items within 14 days of delivery. Items bought in a sale can only be "
    "exchanged, and opened software cannot be returned at all; ask support for anything else."
)


def scored(case: dict[str, Any], trace: dict[str, Any], verdicts: dict[str, Any] | None = None):
    full = {"id": "c", "input": QUESTION, **case}
    return score_case(SUITE, validate_case(full), trace, verdicts or {}, SUITE.stages, [])


def test_tools_shows_the_calls_made_with_their_arguments_beside_the_expected_ones() -> None:
    trace = {"answer": ANSWER, "tool_calls": [{"name": "search_kb", "args": {"query": QUESTION}}]}
    scores = scored({"expected_tools": ["get_order"]}, trace)

    details = dict(failure_details(scores))

    assert details["called"] == "search_kb(query='How many days do I have to return an or…')"
    assert details["expected"] == "get_order"
    assert details["answer"].startswith("'You can return most items within 14 days")
    assert details["answer"].endswith("…'") and len(details["answer"]) == 160 + 2  # the quotes
    whole = dict(failure_details(scores, whole=True))
    assert whole["called"] == f"search_kb(query={QUESTION!r})"
    assert whole["answer"] == repr(ANSWER)


def test_tools_shows_what_was_called_instead_of_an_expected_call_with_arguments() -> None:
    trace = {
        "answer": "F-12 is in Lyon.",
        "tool_calls": [
            {"name": "get_plant", "args": {"plant_id": "F-21"}},
            {"name": "search_kb", "args": {"query": "F-12", "k": 3}},
        ],
    }
    scores = scored(
        {
            "expected_tools": [{"name": "get_plant", "args": {"plant_id": "F-12"}}],
            "tool_order": "strict",
            "max_tool_calls": 4,
        },
        trace,
    )

    assert scores.first_failure[1].reason.startswith("missing: get_plant(plant_id='F-12')")
    assert failure_details(scores) == [
        ("called", "get_plant(plant_id='F-21'), search_kb(query='F-12', k=3)"),
        ("expected", "get_plant(plant_id='F-12'); at most 4 calls"),
        ("answer", "'F-12 is in Lyon.'"),
    ]


def test_tools_lists_a_few_calls_and_counts_the_rest_unless_whole() -> None:
    calls = [{"name": f"tool{i}"} for i in range(12)]
    scores = scored({"expected_tools": []}, {"answer": "", "tool_calls": calls})

    details = dict(failure_details(scores))

    assert details["called"] == ", ".join(f"tool{i}()" for i in range(8)) + ", … (4 more)"
    assert details["expected"] == "no tool"
    assert dict(failure_details(scores, whole=True))["called"].endswith("tool10(), tool11()")


def test_retrieval_shows_the_ids_retrieved_beside_the_expected_ones() -> None:
    trace = {"answer": "30 days", "retrieved": ["faq-12", "faq-3", "policy-9", "policy-1", "x"]}
    scores = scored({"expected_docs": ["policy-1", "faq-3"]}, trace)

    assert scores.first_failure[0] == "retrieval"
    assert failure_details(scores) == [
        ("retrieved", "faq-12, faq-3, policy-9 (+2 beyond k=3)"),
        ("expected", "policy-1, faq-3"),
        ("answer", "'30 days'"),
    ]
    whole = dict(failure_details(scores, whole=True))
    assert whole["retrieved"] == "faq-12, faq-3, policy-9; beyond k=3: policy-1, x"


def test_retrieval_cuts_long_ids_and_says_when_nothing_was_retrieved() -> None:
    long_id = "doc-" + "x" * 100
    scores = scored({"expected_docs": [long_id]}, {"answer": "", "retrieved": []})

    details = dict(failure_details(scores))

    assert details["retrieved"] == "nothing"
    assert details["expected"] == long_id[:59] + "…"
    assert dict(failure_details(scores, whole=True))["expected"] == long_id


def test_an_answer_stage_shows_the_answer_beside_the_reference() -> None:
    scores = scored({"reference": "30 days"}, {"answer": ANSWER})

    assert scores.first_failure[0] == "exact_match"
    details = failure_details(scores)
    assert [label for label, _ in details] == ["answer", "reference"]
    assert details[1] == ("reference", "'30 days'")


def test_a_judged_stage_shows_what_its_judge_read() -> None:
    trace = {"answer": "14 days.", "context": ["Returns: 30 days. " * 10, "Sale items", "c", "d"]}
    verdicts = {"faithfulness": {"score": 0.2, "reason": "unsupported: 14 days"}}

    scores = scored({}, trace, verdicts)

    assert scores.first_failure[0] == "faithfulness"
    details = dict(failure_details(scores))
    assert list(details) == ["answer", "context"]
    context = details["context"]
    assert context.startswith("4 passages: 'Returns: 30 days. Returns: 30 days.")
    assert context.endswith(", 'Sale items', 'c', … (1 more)")
    assert dict(failure_details(scores, whole=True))["context"].endswith("'c', 'd'")


def test_a_judge_error_shows_no_details() -> None:
    trace = {"answer": "x", "context": ["y"]}
    scores = scored({}, trace, {"faithfulness": {"error": "timed out"}})

    assert scores.first_failure[1].judge_error
    assert failure_details(scores) == []
    assert failure_message(scores).splitlines()[1] == ""  # straight to the table


def test_values_are_one_line_and_inert_in_a_terminal() -> None:
    hostile = "line one\n\x1b[31mred\x1b[0m [x](http://evil) <script>"
    scores = scored({"reference": "r"}, {"answer": hostile})

    for whole in (False, True):
        answer = dict(failure_details(scores, whole=whole))["answer"]
        assert "\n" not in answer and "\x1b" not in answer
        assert "\\x1b[31mred" in answer


def test_the_message_shows_the_details_under_the_first_line_and_says_when_they_were_cut() -> None:
    trace = {"answer": ANSWER, "tool_calls": [{"name": "search_kb", "args": {"query": QUESTION}}]}
    scores = scored({"expected_tools": ["get_order"]}, trace)

    lines = failure_message(scores).splitlines()

    assert lines[:5] == [
        "first failing stage: tools (missing: get_order; unexpected: search_kb)",
        "  called:   search_kb(query='How many days do I have to return an or…')",
        "  expected: get_order",
        "  answer:   " + shown_value(ANSWER, 160),
        "  (values cut short: -vv shows them whole)",
    ]
    assert lines[5] == "" and lines[6].startswith("stage ")
    whole = failure_message(scores, whole=True).splitlines()
    assert whole[1] == f"  called:   search_kb(query={QUESTION!r})"
    assert whole[3] == f"  answer:   {ANSWER!r}" and whole[4] == ""


def test_a_short_failure_needs_no_hint() -> None:
    scores = scored({"reference": "30 days"}, {"answer": "14 days"})

    assert failure_message(scores).splitlines()[:4] == [
        "first failing stage: exact_match (answer differs from reference)",
        "  answer:    '14 days'",
        "  reference: '30 days'",
        "",
    ]


def test_eval_runs_show_the_failing_runs_own_answer() -> None:
    case = validate_case({"id": "c", "input": "q", "reference": "30 days"})
    runs = [({"answer": "30 days"}, {}), ({"answer": "14 days"}, {})]

    shown, info = score_runs(SUITE, case, runs, SUITE.stages, [])

    message = runs_failure_message(shown, info)
    assert message.startswith("1/2 runs passed (pass^k needs all); run 2: first failing stage")
    assert "  answer:    '14 days'" in message.splitlines()


def test_shown_value_and_listed() -> None:
    assert shown_value("abcdef", 4) == "'abc…'"
    assert shown_value("a\n  b", 10) == "'a b'"  # folded to one line when cut short
    assert shown_value("a\nb", None) == "'a\\nb'"  # whole: the line break escaped
    assert shown_value({"k": [1, 2, 3]}, 8) == "{'k': […"
    assert shown_value(None, 5) == "None"
    assert listed(["a", "b", "c"], 2) == "a, b, … (1 more)"
    assert listed(["a", "b"], 2) == listed(["a", "b"], None) == "a, b"
