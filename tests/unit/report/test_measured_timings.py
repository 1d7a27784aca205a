"""The times the plugin measures itself (issue 32 part 4), worked by hand: the trace's
`measured` field, per case and per step in results.json, the Timings table of report.md and the
dashboard, and a recording that differs only in them counting as the same."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_evalcases.core.errors import TraceError
from pytest_evalcases.domain.returned_traces import with_measured
from pytest_evalcases.engine import diff
from pytest_evalcases.engine.http_replay import _same_trace
from pytest_evalcases.report.aggregate import aggregate
from pytest_evalcases.report.dashboard import render_dashboard
from pytest_evalcases.report.markdown import render_markdown
from pytest_evalcases.report.merge import merge_results
from pytest_evalcases.report.timings import case_timings, timing_rows, timings_section
from pytest_evalcases.store.cassette import Cassette

from .test_timings import result as timings_case


def result(case_id: str, recording: dict[str, Any]) -> dict[str, Any]:
    """A passed case of suite `s` (test_timings' case) with this recording."""
    return {**timings_case(case_id, None, None), "recording": recording}


def test_a_case_gets_each_step_it_has_and_nothing_it_lacks() -> None:
    recording = {
        "latency_ms": 400,  # the system's own figure
        "timings": {"search_ms": 120, "rerank_ms": "slow"},  # not a number: left out
        "measured": {"run_ms": 431.2, "turns_ms": [210.4, 220.8]},
        "judge_latency_ms": 90,
        "judge_ms_by_stage": {"faithfulness": 60, "answer_relevancy": 30},
    }
    assert case_timings(recording) == {
        "system_ms": 400.0,
        "search_ms": 120.0,
        "measured run_ms": 431.2,
        "measured turns_ms": [210.4, 220.8],
        "judge_ms": 90.0,
        "judge faithfulness_ms": 60.0,
        "judge answer_relevancy_ms": 30.0,
    }
    assert case_timings({"measured": {"run_ms": None, "turns_ms": [1, "x"]}}) == {}
    assert case_timings({"measured": "fast"}) == {}


def test_each_measured_step_gets_its_count_mean_and_p95() -> None:
    cases = [
        result("c0", {"measured": {"run_ms": 100}, "timings": {"search_ms": 10}}),
        result("c1", {"measured": {"run_ms": 300, "turns_ms": [100, 200]}}),
        result("c2", {"measured": {"run_ms": 50, "turns_ms": [50]}, "judge_latency_ms": 40}),
        result("c3", {}),  # replayed from a cassette older than the field: no timings
    ]
    users = [{"duration_s": 1.5}, {"duration_s": None}, {"duration_s": 0.5}]

    section = timings_section(cases, users)

    assert list(section) == [
        "measured ingestion_ms",
        "search_ms",
        "measured run_ms",
        "measured turn_ms",
        "judge_ms",
    ]
    # ingestion: 1500, 500 (the unknown left out) -> mean 1000, p95 500 + 0.95 * 1000
    assert section["measured ingestion_ms"] == {"users": 2, "mean": 1000.0, "p95": 1450.0}
    # runs 100, 300, 50: mean 150, p95 at position 1.9 -> 100 + 0.9 * 200
    assert section["measured run_ms"] == {
        "cases": 3,
        "mean": 150.0,
        "p95": pytest.approx(280.0),
    }
    # turns 100, 200, 50 of 2 cases: mean 116.7, p95 100 + 0.9 * 100
    turn = section["measured turn_ms"]
    assert (turn["cases"], turn["turns"]) == (2, 3)
    # to the microsecond: 350 / 3 = 116.666...
    assert turn["mean"] == 116.667 and turn["p95"] == pytest.approx(190.0)
    assert cases[1]["timings"] == {"measured run_ms": 300.0, "measured turns_ms": [100.0, 200.0]}
    assert "timings" not in cases[3]


def test_the_table_shows_once_the_plugin_measured_a_step_with_its_own_counts() -> None:
    assert timing_rows({"system_ms": {"cases": 1, "mean": 5.0, "p95": 5.0}}) == []
    rows = timing_rows(
        {
            "measured ingestion_ms": {"users": 3, "mean": 1200.0, "p95": 1900.0},
            "measured run_ms": {"cases": 2, "mean": 431.0, "p95": 655.0},
            "measured turn_ms": {"cases": 1, "turns": 2, "mean": 215.6, "p95": 220.3},
            "judge_ms": {"cases": 2, "mean": 90.0, "p95": 99.0},
        }
    )
    assert rows == [
        ("measured ingestion", "3 users", "1,200 ms", "1,900 ms"),
        ("measured run", "2", "431 ms", "655 ms"),
        ("measured turn", "1 (2 turns)", "216 ms", "220 ms"),
        ("judge", "2", "90 ms", "99 ms"),
    ]


def test_report_md_the_dashboard_and_a_merge_show_the_same_measured_steps() -> None:
    cases = [
        result("c0", {"measured": {"run_ms": 100}, "judge_latency_ms": 30}),
        result("c1", {"measured": {"run_ms": 300}, "judge_latency_ms": 50}),
    ]
    doc = aggregate(cases)
    md = render_markdown(doc)
    table = md.split("### Timings\n\n")[1].split("\n\n")[0].splitlines()[2:]
    rows = [line.strip("| ").split(" | ") for line in table]
    assert rows == [["measured run", "2", "200 ms", "290 ms"], ["judge", "2", "40 ms", "49 ms"]]
    page = render_dashboard(doc)
    panel = page.split('<section id="timings">')[1].split("</section>")[0]
    assert "<td>measured run</td>" in panel and "290 ms" in panel
    assert "<p>timings: measured run 100 ms · judge 30 ms</p>" in page  # c0's details
    # shards merged from their results.json files: the same figures, from the cases alone
    halves = [json.loads(json.dumps(aggregate([case]))) for case in cases]
    assert merge_results(halves)["timings"] == doc["timings"]


def cassette(trace: dict[str, Any]) -> Cassette:
    return Cassette.from_doc(
        {"format": 2, "suite": "s", "case": "a", "key": {"case": "k"}, "trace": trace}
    )


def test_a_recording_that_differs_only_in_measured_times_is_the_same() -> None:
    old = {"answer": "x", "measured": {"run_ms": 100.0, "turns_ms": [40.0, 60.0]}}
    new = {"answer": "x", "measured": {"run_ms": 250.5, "turns_ms": [90.0, 160.5]}}
    assert diff.same_recording(cassette(old), cassette(new))
    assert diff.same_recording(cassette({"answer": "x"}), cassette(new))  # recorded before it
    assert not diff.same_recording(cassette(old), cassette({**new, "answer": "y"}))
    # a system's own field of that name, deeper in its trace, is its data: compared
    deep = {"answer": "x", "tool_outputs": [{"tool": "t", "content": "c", "measured": 1}]}
    other = {"answer": "x", "tool_outputs": [{"tool": "t", "content": "c", "measured": 2}]}
    assert not diff.same_recording(cassette(deep), cassette(other))
    assert diff.describe_changes(cassette(old), cassette({**new, "answer": "y"}), dict) == [
        "answer: 'x' -> 'y'"
    ]
    assert _same_trace(old, new) and not _same_trace(old, {**new, "answer": "y"})


def test_the_measured_field_is_the_plugins_and_a_systems_own_is_refused() -> None:
    trace = with_measured({"answer": "x"}, "s::c1", 12.5, [5.0, 7.5])
    assert trace == {"answer": "x", "measured": {"run_ms": 12.5, "turns_ms": [5.0, 7.5]}}
    assert with_measured({"answer": "x"}, "s::c1", 3.0, []) == {
        "answer": "x",
        "measured": {"run_ms": 3.0},
    }
    with pytest.raises(TraceError) as raised:
        with_measured({"answer": "x", "measured": {"mine": 1}}, "s::c1", 3.0)
    assert str(raised.value).startswith(
        "malformed trace for s::c1: its field 'measured' is the plugin's own"
    )
