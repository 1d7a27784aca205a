"""The terminal summary fits `COLUMNS` down to 60: the per-stage totals and the category and
group pass-rate tables shorten their headers, their notes wrap; a first-failure cell that must
be cut keeps the names it holds (the scores go first)."""

from __future__ import annotations

from array import array
from typing import Any

import pytest

from pytest_evalcases.report.terminal import RunSummary, first_failure_cell
from pytest_evalcases.report.terminal_tables import fit_failure, rate_table

ALL = [
    "tools",
    "retrieval",
    "context_completeness",
    "faithfulness",
    "contextual_recall",
    "answer_relevancy",
    "answer_accuracy",
    "contextual_precision",
]


def result(i: int, passed: bool) -> dict[str, Any]:
    return {
        "suite": "docs-assistant",
        "id": f"encryption-password-{i}",
        "file": "cases/docs.json",
        "index": i,
        "category": "troubleshooting",
        "group": "user-with-a-long-id",
        "outcome": "passed" if passed else "failed",
        "first_failure": None
        if passed
        else {"stage": "retrieval", "reason": "recall@3 0.00 < 1.00; missing: encryption"},
        "stages": {
            name: {
                "score": 1.0 if passed or name != "retrieval" else 0.0,
                "passed": passed or name != "retrieval",
                "gating": name != "contextual_precision",
            }
            for name in ALL
        },
        "recording": {"status": "replayed"},
    }


@pytest.mark.parametrize("width", [60, 68, 80])
def test_every_table_line_of_the_summary_fits_the_width(width: int) -> None:
    summary = RunSummary()
    for i in range(4):
        summary.add(result(i, passed=i % 2 == 0))
    lines = summary.lines(orphans=[], width=width)
    tables = [line for line in lines if not line.startswith("recordings:")]
    assert max(map(len, tables)) <= width, "\n".join(lines)
    totals = next(line for line in lines if line.startswith("stage "))
    full = "stage                  passed  failed  skipped  judge errors  mean score"
    assert totals.split() == (full.split() if len(full) <= width else totals.split())
    if width == 60:
        assert totals.split() == ["stage", "pass", "fail", "skip", "judge", "err", "mean"]
        assert any(line.startswith("contextual_precision*  4") for line in lines)
    assert any(
        line.endswith(("retr: missing: encryption", "retrieval: missing: encryption"))
        for line in lines
    ), "\n".join(lines)
    if width < 80:  # the per-user table keeps the means that fit, and names the others
        assert any(line.startswith("(too narrow for the mean of ") for line in lines)


def test_full_headers_where_they_fit() -> None:
    summary = RunSummary()
    summary.add(result(0, passed=False))
    lines = summary.lines(orphans=[], width=120)
    assert "stage                  passed  failed  skipped  judge errors  mean score" in lines
    assert any(line.split()[:4] == ["category", "passed", "scored", "pass"] for line in lines)


def test_a_rate_table_note_wraps_to_the_width() -> None:
    lines = rate_table(
        "category",
        {"troubleshooting": [1, 1]},
        ["troubleshooting"],
        {"troubleshooting": {"COMPLETE": 1, "CORRECT": 1}},
        width=60,
    )
    assert max(map(len, lines)) <= 60, "\n".join(lines)
    assert lines[0].split() == ["category", "pass", "scored", "rate", "C/P/I", "right/wrong"]
    assert lines[2].startswith("C/P/I: cases whose context was") and lines[3].startswith("  ")


@pytest.mark.parametrize(
    ("size", "shown"),
    [
        (200, "retrieval: recall@3 0.00 < 1.00; missing: encryption"),
        (40, "retrieval: missing: encryption"),
        (28, "retr: missing: encryption"),
        (12, "retr: mis..."),
    ],
)
def test_a_cut_failure_cell_drops_the_scores_before_the_names(size: int, shown: str) -> None:
    assert fit_failure("retrieval: recall@3 0.00 < 1.00; missing: encryption", size) == shown


def test_a_cut_failure_cell_drops_whole_parts_and_says_so() -> None:
    cell = "tools: missing: get_issue; unexpected: search_docs"
    assert fit_failure(cell, 40) == "tools: missing: get_issue; ..."
    assert fit_failure(cell, 28) == "tools: missing: get_issue..."
    turn = "turn 2 faithfulness: 0.33 < 0.50 (2 of 3); unsupported: 'the moon is cheese'"
    assert fit_failure(turn, 60) == "turn 2 faithfulness: unsupported: 'the moon is cheese'"
    assert fit_failure(turn, 50) == "turn 2 faith: unsupported: 'the moon is cheese'"


def test_the_failure_cell_keeps_names_within_its_cap() -> None:
    names = ", ".join(f"doc-{n}" for n in range(30))
    cell = first_failure_cell(
        {
            "outcome": "failed",
            "first_failure": {
                "stage": "retrieval",
                "reason": f"recall@3 0.00 < 1.00; missing: {names}",
            },
        }
    )
    assert cell.startswith("retr: missing: doc-0, doc-1, doc-2") and len(cell) == 120
    assert cell.endswith("...") and "0.00" not in cell


def test_the_stage_legend_only_under_a_table_that_abbreviates() -> None:
    scores = {"u-ana": {"context_completeness": array("d", [1.0])}}
    args = ("user", {"u-ana": [1, 1]}, ["u-ana"], {}, scores, ["context_completeness"])
    wide = rate_table(*args, width=200)
    assert "mean context_completeness" in wide[0]
    assert not any(line.startswith("stages:") for line in wide)  # it was printed all the same
    narrow = rate_table(*args, width=60)
    assert "mean compl" in narrow[0] and "stages: compl = context_completeness" in narrow
