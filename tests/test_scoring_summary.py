"""First failing stage, the failure table and the terminal summary (pure functions)."""

from __future__ import annotations

import random
from typing import Any

import pytest
import summary_reference as reference

from pytest_evalcases.outcomes import OUTCOMES
from pytest_evalcases.schema import Suite, validate_case
from pytest_evalcases.scoring import failure_message, result_stages, score_case
from pytest_evalcases.summary import FULL_TABLE_LIMIT, RunSummary


def render_summary(results: list[dict[str, Any]], *, verbose: bool, orphans: list[str],
                   orphan_note: str = "") -> list[str]:
    """The section for results already at hand, fed one by one as the plugin feeds them."""
    summary = RunSummary(verbose=verbose)
    for result in results:
        summary.add(result)
    return summary.lines(orphans=orphans, orphan_note=orphan_note)

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


# ---- the streaming summary prints what the batch summary printed ----------------------------
# Suites whose stages overlap and disagree on gating (retrieval gates in `a`, not in `c`), in files
# whose collection order is not their arrival order.
SUITES = [
    ("cases/b.json", "b", [("faithfulness", True), ("tools", True), ("exact_match", False)]),
    ("cases/a.json", "a", [("tools", True), ("retrieval", True), ("token_f1", False)]),
    ("cases/a/z.json", "c", [("retrieval", False), ("answer_accuracy", True)]),
]
UNSCORED = ("stale", "missing", "error", "skipped")


def random_result(rng: random.Random, file: str, suite: str, stages: list, index: int) -> dict:
    outcome = rng.choice(OUTCOMES)
    stage_dicts = {}
    if outcome not in UNSCORED or rng.random() < 0.2:
        for name, gating in stages:
            passed = rng.choice([True, True, False, None])
            judge_error = passed is False and rng.random() < 0.2
            # Quarters: a float sum of them is exact in any order, as the batch summary's was.
            score = None if passed is None or judge_error else rng.choice([0, 0.25, 0.5, 1.0])
            stage_dicts[name] = {"score": score, "passed": passed, "gating": gating,
                                 "judge_error": judge_error}
    failure = None
    if outcome in ("failed", "xfailed"):
        failure = {"stage": stages[0][0], "reason": "missing: x " * rng.randint(1, 20)}
    elif outcome in ("stale", "missing", "error"):
        failure = {"stage": None, "reason": rng.choice(["", "key changed"])}
    status = rng.choice(["replayed", "recorded", "not_rerecorded", None])
    recording = {} if status is None else {"status": status}
    if status == "not_rerecorded" and rng.random() < 0.5:
        recording["note"] = f"TimeoutError: case {index}"
    return {
        "nodeid": f"{file}::c{index}",
        "suite": suite,
        "id": f"c{index:03d}",
        "file": file,
        "index": index,
        "category": rng.choice(["sync", "billing", None]),
        "outcome": outcome,
        "first_failure": failure,
        "stages": stage_dicts,
        "recording": recording,
    }


def random_results(seed: int, count: int) -> list[dict]:
    rng = random.Random(seed)
    results = []
    for n in range(count):
        file, suite, stages = SUITES[n % len(SUITES)]
        results.append(random_result(rng, file, suite, stages, n // len(SUITES)))
    rng.shuffle(results)  # arrival order, as under xdist
    return results


@pytest.mark.parametrize("count", [1, 7, FULL_TABLE_LIMIT, FULL_TABLE_LIMIT + 1, 400])
@pytest.mark.parametrize("verbose", [False, True])
def test_streaming_summary_prints_the_batch_summary_text(count: int, verbose: bool) -> None:
    for seed in range(5):
        results = random_results(seed, count)
        orphans = ["cassettes/a/old.json"] if seed % 2 else []
        expected = reference.render_summary(
            reference.ordered_results(results), verbose=verbose, orphans=orphans,
            orphan_note=" (note)",
        )
        summary = RunSummary(verbose=verbose)
        for result in results:
            summary.add(result)
        assert summary.lines(orphans=orphans, orphan_note=" (note)") == expected, seed


def test_summary_text_does_not_depend_on_arrival_order() -> None:
    rng = random.Random(7)
    results = random_results(3, 200)
    for result in results:  # scores whose float sum depends on the order it is taken in
        for stage in result["stages"].values():
            if stage["score"] is not None:
                stage["score"] = rng.random()
    first = render_summary(results, verbose=True, orphans=[])
    for _ in range(3):
        rng.shuffle(results)
        assert render_summary(results, verbose=True, orphans=[]) == first


def test_mean_score_is_exact() -> None:
    results = [result(0, "passed"), result(1, "passed"), result(2, "passed")]
    for res, score in zip(results, [0.1, 0.2, 0.7], strict=True):
        res["stages"]["tools"]["score"] = score  # a plain float sum gives 0.9999999999999999
    lines = render_summary(results, verbose=False, orphans=[])
    assert any(line.split() == ["tools", "3", "0", "0", "0", "0.333"] for line in lines)
