"""results.json's `timings` and Zep's `complete_rate`, worked by hand."""

from __future__ import annotations

import re

import pytest

from pytest_evalcases.core.stats import percentile
from pytest_evalcases.report.aggregate import aggregate
from pytest_evalcases.report.dashboard import render_dashboard
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


# --------------------------------------------- the dashboard: complete rate and Timings


def memory_result(
    case_id: str,
    category: str,
    user: str,
    label: str | None,
    recording: dict | None = None,
) -> dict:
    """A case of a memory suite: its user is its group; completeness scored 1 / 0.5 / 0."""
    case = result(case_id, category, label)
    if label is not None:
        score = {"COMPLETE": 1.0, "PARTIAL": 0.5}.get(label, 0.0)
        case["stages"]["context_completeness"]["score"] = score
    case.update(group=user, user=user, recording=recording or {})
    return case


def memory_doc() -> dict:
    return aggregate(
        [
            memory_result(
                "c0",
                "temporal",
                "u-a",
                "COMPLETE",
                {
                    "latency_ms": 100,
                    "timings": {"search_ms": 10, "generate_ms": 80},
                    "judge_latency_ms": 30,
                    "judge_ms_by_stage": {"context_completeness": 30},
                },
            ),
            memory_result(
                "c1",
                "temporal",
                "u-b",
                "PARTIAL",
                {
                    "latency_ms": 300,
                    "timings": {"search_ms": 30},
                    "judge_latency_ms": 50,
                    "judge_ms_by_stage": {"context_completeness": 50},
                },
            ),
            memory_result("c2", "temporal", "u-a", "COMPLETE"),
            memory_result("c3", "multi_hop", "u-b", "INSUFFICIENT"),
        ]
    )


def panel_rows(page: str, section_id: str) -> list[list[str]]:
    """The cells of each row of a dashboard section's tables, header cells included."""
    section = page.split(f'<section id="{section_id}">')[1].split("</section>")[0]
    return [
        re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row)
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", section, flags=re.S)
    ]


def test_dashboard_puts_the_complete_rate_beside_the_completeness_figures() -> None:
    page = render_dashboard(memory_doc())
    # categories: temporal COMPLETE, PARTIAL, COMPLETE -> 2/3; multi_hop INSUFFICIENT -> 0/1;
    # completeness means (1 + 0.5 + 1) / 3 and 0
    header, multi_hop, temporal = panel_rows(page, "categories")  # categories sorted by name
    assert header[7:] == [
        "COMPLETE",
        "PARTIAL",
        "INSUFFICIENT",
        "complete rate",
        "context_completeness",
    ]
    assert temporal[:2] == ["temporal", "3"] and temporal[7:] == ["2", "1", "0", "66.7%", "0.833"]
    assert multi_hop[:2] == ["multi_hop", "1"]
    assert multi_hop[7:] == ["0", "0", "1", "0.0%", "0.000"]
    # users: u-a COMPLETE twice -> 2/2; u-b PARTIAL, INSUFFICIENT -> 0/2, mean 0.25
    header, u_a, u_b = panel_rows(page, "groups")
    assert header[0] == "user" and header[10] == "complete rate"
    assert u_a[0] == "u-a" and u_a[7:] == ["2", "0", "0", "100.0%", "1.000"]
    assert u_b[0] == "u-b" and u_b[7:] == ["0", "1", "1", "0.0%", "0.250"]


def test_dashboard_complete_rate_column_exactly_when_report_md_has_one() -> None:
    accuracy_only = result("c0", "temporal", None)
    accuracy_only["stages"]["answer_accuracy"] = {
        "score": 1.0,
        "passed": True,
        "gating": True,
        "label": "CORRECT",
    }
    for doc, shown in [
        (memory_doc(), True),
        (aggregate([accuracy_only]), False),  # accuracy labels, no completeness label
        (aggregate([result("c0", "temporal", None)]), False),  # no labels at all
    ]:
        page = render_dashboard(doc)
        assert ('<th class="r">complete rate</th>' in page) is shown
        assert ("complete rate" in render_markdown(doc)) is shown


def test_dashboard_timings_panel_as_report_md_lists_them() -> None:
    doc = memory_doc()
    rows = panel_rows(render_dashboard(doc), "timings")
    # system: 100, 300 -> mean 200, p95 100 + 0.95 * 200 = 290; search: 10, 30 -> 20, 29;
    # generate: 80 alone; the judge (in all and on context_completeness): 30, 50 -> 40, 49
    assert rows == [
        ["step", "cases", "mean", "p95"],
        ["system", "2", "200 ms", "290 ms"],
        ["search", "2", "20 ms", "29 ms"],
        ["generate", "1", "80 ms", "80 ms"],
        ["judge", "2", "40 ms", "49 ms"],
        ["judge context_completeness", "2", "40 ms", "49 ms"],
    ]
    md = render_markdown(doc)
    table = md.split("### Timings\n\n")[1].split("\n\n")[0].splitlines()
    assert [line.strip("| ").split(" | ") for line in table[2:]] == rows[1:]


def test_no_timings_panel_without_steps_the_traces_name() -> None:
    timed = {"latency_ms": 100, "judge_latency_ms": 30}  # the system's and judge's time only
    for doc in [
        aggregate([result("c0", "temporal", None)]),
        aggregate([{**result("c0", "temporal", None), "recording": timed}]),
    ]:
        assert 'id="timings"' not in render_dashboard(doc)
        assert "### Timings" not in render_markdown(doc)


def test_a_step_name_from_the_trace_is_escaped_on_the_dashboard() -> None:
    hostile = {"timings": {"<img src=x onerror=alert(1)>_ms": 5}}
    page = render_dashboard(aggregate([{**result("c0", "temporal", None), "recording": hostile}]))
    assert panel_rows(page, "timings")[1] == [
        "&lt;img src=x onerror=alert(1)&gt;",
        "1",
        "5 ms",
        "5 ms",
    ]
    assert "<img src=x" not in page
