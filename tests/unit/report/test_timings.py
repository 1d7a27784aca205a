"""results.json's `timings` and Zep's `complete_rate`, worked by hand."""

from __future__ import annotations

import pytest

from pytest_evalcases.core.stats import percentile
from pytest_evalcases.report.aggregate import aggregate
from pytest_evalcases.report.markdown import render_markdown
from pytest_evalcases.report.timings import timings_section


def test_percentile_interpolates_between_the_closest_ranks():
    # 20 values 1..20: the 95th percentile sits at position 18.05 -> 19 + 0.05 * (20 - 19)
    assert percentile(range(1, 21), 95) == pytest.approx(19.05)
    assert percentile([7.0], 95) == 7.0 and percentile([], 95) is None


def test_each_step_gets_its_cases_mean_and_p95():
    cases = [
        {
            "recording": {
                "latency_ms": 100,
                "timings": {"search_ms": 10, "generate_ms": 80},
                "judge_latency_ms": 30,
                "judge_ms_by_stage": {"faithfulness": 30},
            }
        },
        {
            "recording": {
                "latency_ms": 300,
                "timings": {"search_ms": 30},
                "judge_latency_ms": 50,
                "judge_ms_by_stage": {"faithfulness": 20, "answer_relevancy": 30},
            }
        },
        {"recording": {"latency_ms": None, "timings": {"search_ms": "fast"}}},  # not numbers
    ]
    section = timings_section(cases)
    assert section["search_ms"] == {"cases": 2, "mean": 20.0, "p95": pytest.approx(29.0)}
    assert section["generate_ms"] == {"cases": 1, "mean": 80.0, "p95": 80.0}
    assert section["system_ms"]["mean"] == 200.0
    assert section["judge_ms"]["p95"] == pytest.approx(49.0)  # 30 + 0.95 * 20
    assert section["judge faithfulness_ms"]["mean"] == 25.0


def result(case_id: str, category: str, label: str | None) -> dict:
    stages = {}
    if label is not None:
        stages["context_completeness"] = {
            "score": 1.0,
            "passed": True,
            "gating": True,
            "label": label,
        }
    return {
        "nodeid": f"c.json::{case_id}",
        "suite": "s",
        "id": case_id,
        "file": "c.json",
        "index": int(case_id[1:]),
        "category": category,
        "group": None,
        "outcome": "passed",
        "first_failure": None,
        "stages": stages,
        "recording": {},
    }


def test_complete_rate_is_the_share_judged_complete_overall_and_per_category():
    doc = aggregate(
        [
            result("c0", "temporal", "COMPLETE"),
            result("c1", "temporal", "PARTIAL"),
            result("c2", "temporal", "COMPLETE"),
            result("c3", "multi_hop", "INSUFFICIENT"),
        ]
    )
    assert doc["stages"]["context_completeness"]["complete_rate"] == 0.5
    assert doc["categories"]["temporal"]["complete_rate"] == pytest.approx(2 / 3)
    assert doc["categories"]["multi_hop"]["complete_rate"] == 0.0
    assert "complete rate" in render_markdown(doc)
