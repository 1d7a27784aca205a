"""The ingestion figures (issue 23 §5): results.json's `ingestion`, report.md's section, the
dashboard's panel and the terminal's line, from per-case result dicts built by hand."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from pytest_evalcases.report import aggregate
from pytest_evalcases.report.dashboard import render_dashboard
from pytest_evalcases.report.ingestion import ingestion_section, summary_line
from pytest_evalcases.report.markdown import render_markdown
from pytest_evalcases.report.merge import merge_results
from pytest_evalcases.report.terminal import RunSummary


def record(user: str, source: str, **figures: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "user": user,
        "source": source,
        "recorded_at": "2026-12-01T19:30:00Z",
        "duration_s": None,
        "ready_wait_s": None,
        "requests": 0,
        "usage": None,
        "cost_usd": None,
    }
    if source in ("recorded", "dry_run"):  # paid for in this run: an ingestion of its own
        base["ingestion_id"] = f"{user}-{source}-{len(figures)}"
    return base | figures


def case(
    index: int, suite: str = "mem", user: str | None = None, ingestion: dict | None = None
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "nodeid": f"cases/{suite}.json::c{index}",
        "suite": suite,
        "id": f"c{index}",
        "file": f"cases/{suite}.json",
        "index": index,
        "category": None,
        "group": user,
        "outcome": "passed",
        "first_failure": None,
        "stages": {"tools": {"score": 1.0, "passed": True, "gating": True}},
        "recording": {"status": "replayed"},
    }
    if user is not None:
        result["user"] = user
    if ingestion is not None:
        result["ingestion"] = ingestion
    return result


ANA = record(
    "u-ana",
    "recorded",
    duration_s=1.234,
    ready_wait_s=0.2,
    requests=3,
    usage={"prompt_tokens": 900, "completion_tokens": 100, "total_tokens": 1000},
    cost_usd=0.00021,
)
# no total_tokens in its usage: prompt + completion
BEN = record(
    "u-ben",
    "reused",
    duration_s=0.866,
    requests=2,
    usage={"prompt_tokens": 400, "completion_tokens": 100},
    cost_usd=0.0001,
)
CHEN = record("u-chen", "replayed")  # nothing known: usage and cost null
# the same user id in another suite is another user
OTHER_ANA = record(
    "u-ana",
    "recorded",
    duration_s=0.5,
    requests=1,
    usage={"prompt_tokens": 100, "completion_tokens": 0, "total_tokens": 100},
)


def memory_run() -> list[dict[str, Any]]:
    return [
        case(0, user="u-ana", ingestion=ANA),
        case(1, user="u-ana", ingestion=ANA),  # a user's record is on each of its cases
        case(2, user="u-ben", ingestion=BEN),
        case(3, user="u-chen", ingestion=CHEN),
        case(4),  # no user: no record
        case(0, suite="other", user="u-ana", ingestion=OTHER_ANA),
    ]


def test_one_row_a_suite_user_and_the_total() -> None:
    section = ingestion_section(memory_run())

    assert [(u["suite"], u["user"]) for u in section["users"]] == [
        ("mem", "u-ana"),
        ("mem", "u-ben"),
        ("mem", "u-chen"),
        ("other", "u-ana"),
    ]
    assert section["users"][0] == {
        "suite": "mem",
        "user": "u-ana",
        "source": "recorded",
        "recorded_at": "2026-12-01T19:30:00Z",
        "duration_s": 1.234,
        "ready_wait_s": 0.2,
        "requests": 3,
        "prompt_tokens": 900,
        "completion_tokens": 100,
        "total_tokens": 1000,
        "cost_usd": 0.00021,
        "ingestions": 1,  # paid for once in this run
    }
    ben, chen = section["users"][1], section["users"][2]
    assert ben["total_tokens"] == 500 and ben["ready_wait_s"] is None
    assert chen["prompt_tokens"] is None and chen["total_tokens"] is None
    assert chen["cost_usd"] is None and chen["duration_s"] is None and chen["requests"] == 0

    assert section["total"] == {
        "users": 4,
        "duration_s": 2.6,  # 1.234 + 0.866 + 0.5; chen's unknown
        "ready_wait_s": 0.2,
        "requests": 6,
        "ingestions": 2,  # mem's u-ana and other's u-ana
        "prompt_tokens": 1400,
        "completion_tokens": 200,
        "total_tokens": 1600,
        "usage_unknown_users": 1,  # chen
        "cost_usd": 0.00031,  # the known ones: 0.00021 + 0.0001
        "cost_unknown_users": 2,  # chen, and u-ana of `other`
        "sources": {"recorded": 2, "reused": 1, "replayed": 1},
    }
    assert list(section["total"]["sources"]) == ["recorded", "reused", "replayed"]


def test_unknown_is_not_zero() -> None:
    section = ingestion_section([case(0, user="u-chen", ingestion=CHEN)])
    total = section["total"]
    assert total["cost_usd"] is None and total["cost_unknown_users"] == 1
    assert total["total_tokens"] is None and total["usage_unknown_users"] == 1
    assert total["duration_s"] is None and total["ready_wait_s"] is None
    assert total["requests"] == 0
    # figures that are not numbers are unknown too
    odd = record("u-odd", "recorded", duration_s=True, cost_usd=math.nan, usage="lots")
    row = ingestion_section([case(0, user="u-odd", ingestion=odd)])["users"][0]
    assert row["duration_s"] is None and row["cost_usd"] is None and row["total_tokens"] is None


def test_money_is_summed_exactly_and_rounded() -> None:
    users = [
        case(i, user=f"u-{i}", ingestion=record(f"u-{i}", "recorded", cost_usd=cost))
        for i, cost in enumerate([0.1, 0.2])
    ]
    assert 0.1 + 0.2 != 0.3
    assert ingestion_section(users)["total"]["cost_usd"] == 0.3
    tiny = [
        case(i, user=f"u-{i}", ingestion=record(f"u-{i}", "recorded", cost_usd=0.0001))
        for i in range(36)
    ]
    assert ingestion_section(tiny)["total"]["cost_usd"] == 0.0036


def test_a_user_seen_on_several_workers_counts_once_whatever_the_order() -> None:
    first = record("u-ana", "recorded", duration_s=1.0)
    later = record("u-ana", "recorded", duration_s=9.0)
    reused = record("u-ana", "reused", duration_s=5.0)
    cases = [
        case(0, user="u-ana", ingestion=reused),  # another worker found the recording current
        case(1, user="u-ana", ingestion=first),
        case(2, user="u-ana", ingestion=later),
    ]
    for seed in range(5):
        shuffled = list(cases)
        random.Random(seed).shuffle(shuffled)
        section = ingestion_section(shuffled)
        # ingested in this run wins over reused; then the user's first case in order
        assert [u["duration_s"] for u in section["users"]] == [1.0]
        assert section["total"]["users"] == 1
        assert section["total"]["sources"] == {"recorded": 1}


def test_without_users_results_json_is_as_before() -> None:
    plain = [case(0), case(1)]
    assert ingestion_section(plain) == {}
    doc = aggregate(plain, {"mode": "replay"})
    assert "ingestion" not in doc
    assert "### Ingestion" not in render_markdown(doc)
    assert 'id="ingestion"' not in render_dashboard(doc)

    with_users = aggregate(memory_run(), {"mode": "replay"})
    assert with_users["ingestion"] == ingestion_section(memory_run())


def test_report_md_has_a_row_a_user_then_the_total() -> None:
    md = render_markdown(aggregate(memory_run(), {"mode": "replay"}))
    lines = md.splitlines()
    start = lines.index("### Ingestion")
    assert lines[start + 2 : start + 9] == [
        "| suite | user | source | duration | ready wait | requests | tokens | cost |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |",
        "| mem | u-ana | recorded | 1.2 s | 0.2 s | 3 | 1,000 | $0.0002 |",
        "| mem | u-ben | reused | 0.9 s | – | 2 | 500 | $0.0001 |",
        "| mem | u-chen | replayed | – | – | 0 | unknown | unknown |",
        "| other | u-ana | recorded | 0.5 s | – | 1 | 100 | unknown |",
        "| total | 4 users | 2 recorded, 1 reused, 1 replayed | 2.6 s | 0.2 s | 6 "
        "| 1,600 (+1 unknown) | $0.0003 (+2 unknown) |",
    ]


def test_dashboard_has_the_ingestion_panel() -> None:
    page = render_dashboard(aggregate(memory_run(), {"mode": "replay"}))
    panel = page.split('<section id="ingestion">')[1].split("</section>")[0]
    assert '<td>u-ben</td><td>reused</td><td class="r">0.9 s</td>' in panel
    assert (
        '<tr class="total"><td>total</td><td>4 users</td><td>2 recorded, 1 reused, 1 replayed'
        "</td>" in panel
    )
    assert '<td class="r">$0.0003 (+2 unknown)</td>' in panel


def summary_lines(results: list[dict[str, Any]]) -> list[str]:
    summary = RunSummary()
    for result in results:
        summary.add(result)
    return summary.lines(orphans=[])


def test_the_terminal_counts_users_per_source_with_the_figures_of_those_ingested() -> None:
    recorded = record(
        "u-ana",
        "recorded",
        duration_s=2.1,
        usage={"prompt_tokens": 900, "completion_tokens": 100, "total_tokens": 1000},
        cost_usd=0.00021,
    )
    results = [
        case(0, user="u-ana", ingestion=recorded),
        case(1, user="u-ben", ingestion=record("u-ben", "reused", duration_s=7.0)),
        case(2, user="u-chen", ingestion=record("u-chen", "reused", cost_usd=1.0)),
        case(3, user="u-chen", ingestion=record("u-chen", "reused", cost_usd=1.0)),
    ]
    results[0]["recording"]["ready_wait_s"] = 0.4
    lines = summary_lines(results)
    assert "ingestion: 3 users: 1 recorded (2.1 s, 1,000 tokens, $0.0002), 2 reused" in lines
    # the wait for ready() keeps its own line
    assert "ingestion: waited for ready() of 1 user: u-ana 0.4 s" in lines
    assert not any(line.startswith("ingestion") for line in summary_lines([case(0), case(1)]))


def test_the_terminal_line_orders_sources_and_says_what_is_unknown() -> None:
    section = ingestion_section(memory_run())
    assert summary_line(section["users"]) == (
        "ingestion: 4 users: 2 recorded (1.7 s, 1,100 tokens, $0.0002, cost unknown for 1), "
        "1 reused, 1 replayed"
    )
    users = ingestion_section(
        [
            case(0, user="a", ingestion=record("a", "replayed")),
            case(1, user="b", ingestion=record("b", "replayed_http")),
            case(2, user="c", ingestion=record("c", "recorded")),
        ]
    )["users"]
    assert summary_line(users) == (
        "ingestion: 3 users: 1 recorded (cost unknown), 1 replayed_http, 1 replayed"
    )


@pytest.mark.parametrize("arrival", [0, 1, 2])
def test_the_terminal_line_does_not_depend_on_arrival_order(arrival: int) -> None:
    results = memory_run()
    random.Random(arrival).shuffle(results)
    expected = summary_line(ingestion_section(memory_run())["users"])
    assert expected in summary_lines(results)


def test_merged_shards_count_a_user_of_both_shards_once() -> None:
    run = memory_run()
    shards = [aggregate(run[:1] + run[2:], {"mode": "replay"}), aggregate(run[1:2], {})]
    assert shards[1]["ingestion"]["total"]["users"] == 1  # u-ana's second case, alone
    merged = merge_results(shards)
    assert merged["ingestion"] == ingestion_section(memory_run())
    assert merged["ingestion"]["total"]["users"] == 4


def test_a_user_ingested_by_two_workers_counts_both_ingestions() -> None:
    """Under xdist each worker ingests the users of its cases: both were paid for."""
    first = record(
        "u-ana",
        "recorded",
        duration_s=1.0,
        requests=2,
        cost_usd=0.0002,
        usage={"prompt_tokens": 90, "completion_tokens": 10, "total_tokens": 100},
    )
    second = dict(first, ingestion_id="worker-2", duration_s=1.5)
    cases = [
        case(0, user="u-ana", ingestion=first),
        case(1, user="u-ana", ingestion=second),
        case(2, user="u-ana", ingestion=second),
    ]  # one record a case, two ingestions

    section = ingestion_section(cases)

    (row,) = section["users"]
    assert (row["ingestions"], row["duration_s"], row["requests"]) == (2, 2.5, 4)
    assert (row["total_tokens"], row["cost_usd"]) == (200, 0.0004)
    assert section["total"]["ingestions"] == 2
    assert summary_line(section["users"]) == (
        "ingestion: 1 user: 1 recorded (2 ingestions, one per worker, 2.5 s, 200 tokens, $0.0004)"
    )


def test_a_dry_runs_ingestion_is_said_so() -> None:
    dry = record("u-ana", "dry_run", duration_s=0.5, cost_usd=0.0)
    section = ingestion_section([case(0, user="u-ana", ingestion=dry)])
    assert summary_line(section["users"]).startswith(
        "ingestion: 1 user: 1 ingested by a dry run (not written) (0.5 s"
    )


def test_the_terminal_line_says_which_ingestions_wrote_nothing() -> None:
    """An ingestion run again to the recording there was wrote nothing: not `recorded`."""
    same = {"kind": "unchanged"}
    results = [
        case(0, user="a", ingestion=record("a", "recorded", duration_s=1.0, change=same)),
        case(1, user="b", ingestion=record("b", "recorded", duration_s=2.0, change=same)),
        case(
            2, user="c", ingestion=record("c", "recorded", duration_s=4.0, change={"kind": "new"})
        ),
    ]
    assert summary_lines(results[:2])[-1] == (
        "ingestion: 2 users: 2 ingested again, recordings unchanged (3.0 s, cost unknown)"
    )
    assert summary_lines(results)[-1] == (
        "ingestion: 3 users: 1 recorded (4.0 s, cost unknown), "
        "2 ingested again, recordings unchanged (3.0 s, cost unknown)"
    )
