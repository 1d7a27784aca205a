"""The named totals of results.json, worked by hand from per-case results."""

from __future__ import annotations

import pytest

from pytest_evalcases.core.stats import wilson_interval
from pytest_evalcases.report.aggregate import aggregate
from pytest_evalcases.report.markdown import render_markdown


def case(case_id: str, outcome: str, score: float | None, **totals: bool) -> dict:
    stage = {"score": score, "passed": outcome == "passed", "gating": True}
    result = {
        "nodeid": f"cases/s.json::{case_id}",
        "suite": "s",
        "id": case_id,
        "file": "cases/s.json",
        "index": int(case_id[1:]),
        "category": None,
        "group": None,
        "outcome": outcome,
        "first_failure": None,
        "stages": {"locomo_f1": stage},
        "recording": {},
    }
    if totals:
        result["totals"] = {name.replace("_", " "): counts for name, counts in totals.items()}
    return result


def test_a_total_counts_its_cases_only_with_the_summary_figures():
    cases = [
        case("c0", "passed", 1.0, papers=True),
        case("c1", "failed", 0.2, papers=True),
        case("c2", "passed", 0.8, papers=True),
        case("c3", "failed", 0.0, papers=False),  # adversarial: left out of the papers' total
        case("c4", "error", None, papers=True),  # an error is counted, but decides nothing
    ]
    doc = aggregate(cases)

    total = doc["totals"]["papers"]
    assert (total["cases"], total["excluded"], total["decided"], total["passed"]) == (4, 1, 3, 2)
    assert total["pass_rate"] == pytest.approx(2 / 3)
    assert total["pass_rate_ci95"] == pytest.approx(list(wilson_interval(2, 3)))
    assert total["stage_means"] == {"locomo_f1": pytest.approx((1.0 + 0.2 + 0.8) / 3)}
    assert doc["summary"]["pass_rate"] == pytest.approx(2 / 4)  # the overall figure is unchanged


def test_report_md_shows_each_total_beside_the_overall_figures():
    doc = aggregate(
        [case("c0", "passed", 1.0, papers=True), case("c1", "failed", 0.0, papers=False)]
    )
    md = render_markdown(doc)
    assert "### Totals" in md
    row = next(line for line in md.splitlines() if line.startswith("| papers"))
    assert [cell.strip() for cell in row.strip("|").split("|")][:4] == [
        "papers",
        "1",
        "1",
        "100.0%",
    ]


def test_without_totals_results_json_has_an_empty_section_and_report_md_none():
    doc = aggregate([case("c0", "passed", 1.0)])
    assert doc["totals"] == {}
    assert "### Totals" not in render_markdown(doc)
