"""domain/scoring: the first failing stage in suite order; a report-only stage never gates."""

from __future__ import annotations

from pytest_evalcases.core.schema import validate_case
from pytest_evalcases.core.suite_schema import Suite
from pytest_evalcases.domain.scoring import failure_message, result_stages, score_case

SUITE = Suite.model_validate(
    {
        "name": "s",
        "stages": ["tools", "retrieval"],
        "report_only": ["token_f1"],
        "cases": [],
    }
)


def test_first_failing_stage_in_suite_order_and_report_only_never_gates():
    case = validate_case(
        {
            "id": "c",
            "input": "q",
            "expected_tools": ["search"],
            "expected_docs": ["a", "b"],
            "reference": "totally different",
        }
    )
    trace = {"answer": "x", "tool_calls": [{"name": "other"}], "retrieved": ["a"]}
    scores = score_case(SUITE, case, trace, {}, SUITE.stages, SUITE.report_only)
    assert [name for name, _, _ in scores.results] == ["tools", "retrieval", "token_f1"]
    assert scores.first_failure[0] == "tools"
    message = failure_message(scores)
    assert (
        message.splitlines()[0] == "first failing stage: tools (missing: search; unexpected: other)"
    )
    assert "retrieval" in message and "token_f1 (report only)" in message
    stages = result_stages(scores)
    assert stages["token_f1"]["gating"] is False and stages["token_f1"]["passed"] is False


def test_passing_case_has_no_failure():
    case = validate_case({"id": "c", "input": "q", "expected_tools": [], "reference": "x"})
    scores = score_case(SUITE, case, {"answer": "y"}, {}, SUITE.stages, SUITE.report_only)
    assert scores.first_failure is None
