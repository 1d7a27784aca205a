"""telemetry (issue 13 §4), the pure parts: span attributes after the GenAI semantic
conventions, leaving out what is unknown; the closing delivery line."""

from __future__ import annotations


def test_attributes_follow_the_conventions_and_leave_out_what_is_unknown() -> None:
    from pytest_evalcases.telemetry.attributes import (
        judge_span_name,
        model_of,
        outcome_attributes,
        trace_attributes,
        verdict_attributes,
    )

    assert model_of({"model": "fp"}, {"usage": {"model": "used"}}) == "used"
    assert model_of({"model": "fp"}, {"model": "traced"}) == "traced"
    assert model_of({"model": "fp"}, {}) == "fp"
    assert model_of({"model": {"name": "x"}}, {}) is None
    assert judge_span_name("faithfulness", "openai", "gpt-4o") == "chat gpt-4o"
    assert judge_span_name("faithfulness", "lexical", None) == "evaluate faithfulness"
    attrs = trace_attributes(
        {
            "usage": {"prompt_tokens": 5, "cost_usd": None},
            "tool_calls": [{"name": "search"}, {"name": "lookup"}],
        },
        None,
    )
    assert attrs == {"gen_ai.usage.input_tokens": 5, "evalcases.tool_calls": "search, lookup"}
    verdict = verdict_attributes(
        {"score": None, "error": "judge timed out", "judge": "openai:x", "latency_ms": 12.5}
    )
    assert verdict == {
        "gen_ai.evaluation.explanation": "judge timed out",
        "evalcases.judge": "openai:x",
        "evalcases.judge.error": "judge timed out",
        "evalcases.latency_ms": 12.5,
    }
    outcome = outcome_attributes(
        {
            "outcome": "error",
            "first_failure": None,
            "stages": {"tools": {"score": True, "passed": None}},
            "recording": {"spent_usd": 0.002},
        }
    )
    assert outcome == {"evalcases.outcome": "error", "evalcases.cost_usd": 0.002}


def test_the_closing_line_sums_every_process_and_names_undelivered_spans() -> None:
    from pytest_evalcases.telemetry import delivery_line

    assert delivery_line([]) is None
    one = {"sent": 1, "failed": 0, "endpoint": "http://c:4318/v1/traces"}
    assert delivery_line([one]) == "eval otel: 1 span sent to http://c:4318/v1/traces"
    workers = [one, {"sent": 4, "failed": 3, "endpoint": "http://c:4318/v1/traces"}]
    assert delivery_line(workers) == (
        "eval otel: 5 spans sent to http://c:4318/v1/traces; 3 could not be delivered (is the "
        "collector running? check OTEL_EXPORTER_OTLP_ENDPOINT)"
    )


def test_a_conversation_span_names_the_tools_of_every_turn() -> None:
    from pytest_evalcases.telemetry.attributes import trace_attributes

    conversation = {
        "answer": "ok",
        "turns": [{"tool_calls": [{"name": "get_order"}]}, {"tool_calls": [{"name": "search_kb"}]}],
    }
    attrs = trace_attributes(conversation, None)
    assert attrs["evalcases.tool_calls"] == "get_order, search_kb"
