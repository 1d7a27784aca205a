"""report.md's one line per suite, worked by hand from per-case results."""

from __future__ import annotations

from pytest_evalcases.report.suite_lines import suite_line, suite_lines


def stage(passed: bool | None, score: float | None, gating: bool = True, **extra) -> dict:
    return {"passed": passed, "score": score, "gating": gating, **extra}


def retrieval(hit: float, recall: float, mrr: float) -> dict:
    metrics = {"k": 3, "hit_at_k": hit, "recall_at_k": recall, "mrr": mrr}
    return stage(recall >= 1.0, recall, metrics=metrics)


def test_the_line_counts_each_stage_and_retrievals_rank_figures():
    cases = [
        {
            "suite": "s",
            "outcome": "passed",
            "stages": {
                "tools": stage(True, 1.0),
                "retrieval": retrieval(1.0, 1.0, 1.0),
                "faithfulness": stage(True, 0.9),
            },
        },
        {
            "suite": "s",
            "outcome": "passed",
            "stages": {
                "tools": stage(True, 1.0),
                "retrieval": retrieval(1.0, 1.0, 0.5),
                "faithfulness": stage(True, 0.8),
            },
        },
        {
            "suite": "s",
            "outcome": "failed",
            "stages": {
                "tools": stage(True, 1.0),
                "retrieval": retrieval(0.0, 0.5, 0.0),
                "faithfulness": stage(False, 0.2),
            },
        },
        # no expected docs: retrieval skipped, not counted
        {
            "suite": "s",
            "outcome": "passed",
            "stages": {
                "tools": stage(True, 1.0),
                "retrieval": stage(None, None),
                "faithfulness": stage(True, 1.0, judge_error=False),
            },
        },
        {
            "suite": "s",
            "outcome": "error",
            "stages": {
                "tools": stage(False, 0.0),
                "faithfulness": stage(None, None, judge_error=True),
            },
        },
    ]
    line = suite_line(cases, ["tools", "retrieval", "faithfulness"])
    # recall@3 = (1 + 1 + 0.5) / 3; MRR = (1 + 0.5 + 0) / 3; the judge error counts as not passed
    assert line == (
        "3/5 cases pass every stage. tools 4/5, hit@3 2/3, recall@3 0.833, MRR 0.500, "
        "faithfulness 3/5"
    )


def test_a_report_only_stage_reads_its_mean_and_suites_get_a_line_each():
    cases = [
        {
            "suite": "b",
            "outcome": "passed",
            "stages": {"locomo_f1": stage(False, 0.25, gating=False)},
        },
        {
            "suite": "b",
            "outcome": "passed",
            "stages": {"locomo_f1": stage(True, 0.75, gating=False)},
        },
        {"suite": "a", "outcome": "failed", "stages": {}},
    ]
    assert suite_lines(cases, ["locomo_f1"]) == [
        ("a", "0/1 cases pass every stage."),
        ("b", "2/2 cases pass every stage. locomo_f1 0.500"),
    ]
