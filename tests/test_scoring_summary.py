"""First failing stage, the failure table and the terminal summary (pure functions)."""

from __future__ import annotations

from pytest_evalcases.schema import Case, Suite
from pytest_evalcases.scoring import failure_message, result_stages, score_case
from pytest_evalcases.summary import FULL_TABLE_LIMIT, render_summary

SUITE = Suite.model_validate(
    {
        "name": "s",
        "stages": ["tools", "retrieval"],
        "report_only": ["token_f1"],
        "cases": [],
    }
)


def test_first_failing_stage_in_suite_order_and_report_only_never_gates():
    case = Case.model_validate(
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
    case = Case.model_validate({"id": "c", "input": "q", "expected_tools": [], "reference": "x"})
    scores = score_case(SUITE, case, {"answer": "y"}, {}, SUITE.stages, SUITE.report_only)
    assert scores.first_failure is None


def result(i: int, outcome: str, category: str = "cat", tools_passed: bool | None = True) -> dict:
    score = None if tools_passed is None else float(tools_passed)
    return {
        "suite": "s",
        "id": f"c{i}",
        "file": "cases/s.json",
        "index": i,
        "category": category,
        "outcome": outcome,
        "first_failure": {"stage": "tools", "reason": "missing: x"}
        if tools_passed is False
        else None,
        "stages": {"tools": {"score": score, "passed": tools_passed, "gating": True}},
        "recording": {} if outcome == "skipped" else {"status": "replayed"},
    }


def test_summary_rows_totals_categories_and_counts():
    results = [
        result(0, "passed"),
        result(1, "failed", tools_passed=False),
        result(2, "passed", "other"),
        result(3, "skipped", tools_passed=None),
    ]
    lines = render_summary(results, verbose=False, orphans=["cassettes/s/old.json"])
    text = "\n".join(lines)
    assert lines[0].split() == ["case", "category", "outcome", "tools", "first", "failure"]
    assert "s::c1  cat       failed   FAIL 0.00  tools: missing: x" in text
    assert any(line.split() == ["tools", "2", "1", "1", "0", "0.667"] for line in lines)
    assert any(line.split() == ["cat", "1", "2", "50%"] for line in lines)  # skipped left out
    assert "3 replayed, 0 stale, 0 missing, 1 orphaned" in text
    assert "  orphan: cassettes/s/old.json" in lines


def test_large_runs_show_only_problem_rows_unless_verbose():
    results = [result(i, "passed") for i in range(FULL_TABLE_LIMIT)] + [
        result(FULL_TABLE_LIMIT, "failed", tools_passed=False)
    ]
    quiet = render_summary(results, verbose=False, orphans=[])
    assert sum("s::c" in line for line in quiet) == 1
    assert f"({FULL_TABLE_LIMIT} passing or skipped cases not shown; -v shows every case)" in quiet
    verbose = render_summary(results, verbose=True, orphans=[])
    assert sum("s::c" in line for line in verbose) == FULL_TABLE_LIMIT + 1


def test_category_rates_count_scored_cases_as_results_json_does():
    stale = result(1, "stale", "other", tools_passed=None)
    lines = render_summary([result(0, "xpassed"), result(2, "xfailed"), stale],
                           verbose=False, orphans=[])
    assert any(line.split() == ["cat", "1", "2", "50%"] for line in lines)  # xfailed is scored
    assert any(line.split() == ["other", "0", "0", "-"] for line in lines)  # stale is not
