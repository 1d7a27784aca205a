"""Reporting layer: aggregates (hand-computed), markdown, dashboard HTML, writers, merge, CLI."""

from __future__ import annotations

import base64
import copy
import hashlib
import html as html_lib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_evalcases.__main__ import main
from pytest_evalcases.core.stats import bootstrap_ci, wilson_interval
from pytest_evalcases.report import (
    MergeError,
    aggregate,
    append_step_summary,
    merge_results,
    render_dashboard,
    render_markdown,
    write_reports,
)
from pytest_evalcases.report.baseline import compare
from pytest_evalcases.report.charts import histogram_bars, interval_chart
from pytest_evalcases.report.markdown_table import escape_cell
from pytest_evalcases.report.merge import merge_orders
from pytest_evalcases.report.run_report import judges_used

TEMPLATES = Path(__file__).parents[3] / "src" / "pytest_evalcases" / "report" / "templates"
RUN = {
    "plugin_version": "0.1.0",
    "judge": "lexical",
    "mode": "replay",
    "started_at": "2026-11-29T21:00:00+00:00",
    "finished_at": "2026-11-29T21:00:09+00:00",
}


# ------------------------------------------------------------------ fixtures


def st(
    score: float | None,
    passed: bool | None,
    gating: bool,
    label: str | None = None,
    metrics: dict | None = None,
    judge_error: bool = False,
    reason: str = "",
) -> dict:
    return {
        "score": score,
        "passed": passed,
        "gating": gating,
        "threshold": 1.0,
        "reason": reason,
        "label": label,
        "metrics": metrics or {},
        "judge_error": judge_error,
    }


def ret(hit: float, recall: float, prec: float, mrr: float, ndcg: float, ap: float) -> dict:
    return {
        "k": 3,
        "hit_at_k": hit,
        "recall_at_k": recall,
        "precision_at_k": prec,
        "mrr": mrr,
        "ndcg_at_k": ndcg,
        "map": ap,
    }


def usage(prompt: int, completion: int, cost: float) -> dict:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "cost_usd": cost}


def case(
    cid: str,
    index: int,
    outcome: str,
    stages: dict,
    *,
    category: str | None = None,
    group: str | None = None,
    ff: dict | None = None,
    recording: dict | None = None,
    detail: dict | None = None,
    file: str = "cases/a.json",
) -> dict:
    res = {
        "nodeid": f"{file}::{cid}",
        "suite": "docs",
        "id": cid,
        "file": file,
        "index": index,
        "category": category,
        "group": group,
        "outcome": outcome,
        "first_failure": ff,
        "stages": stages,
        "recording": recording or {},
    }
    if detail is not None:
        res["detail"] = detail
    return res


SKIP = None  # readability: st(SKIP, SKIP, ...) is a stage that did not run


def make_results() -> list[dict]:
    """One case per outcome, one judge error. Figures in the tests are computed by hand."""
    c0 = case(
        "c0",
        0,
        "passed",
        {
            # context_completeness listed before faithfulness on purpose: gating stages first.
            "tools": st(1.0, True, True),
            "retrieval": st(1.0, True, True, metrics=ret(1, 1, 0.6667, 1, 1, 1)),
            "context_completeness": st(1.0, True, False, "COMPLETE"),
            "faithfulness": st(1.0, True, True),
            "answer_accuracy": st(1.0, True, False, "CORRECT"),
        },
        category="A",
        group="g1",
        recording={
            "status": "replayed",
            "usage": usage(100, 20, 0.001),
            "latency_ms": 400.0,
            "judge_usage": usage(200, 10, 0.002),
            "judge_latency_ms": 800.0,
        },
        detail={
            "input": "where?",
            "answer": "in ~/.notes",
            "reference": "~/.notes",
            "tool_calls": [{"name": "search_docs", "args": {"q": "notes"}}],
            "retrieved": ["storage"],
            "context": ["notes live in ~/.notes"],
        },
    )
    c1 = case(
        "c1",
        1,
        "failed",
        {
            "tools": st(1.0, True, True),
            "retrieval": st(
                0.5,
                False,
                True,
                metrics=ret(1, 0.5, 0.3333, 0.5, 0.5, 0.25),
                reason="recall@3 0.50 < 1.00",
            ),
            "context_completeness": st(0.5, False, False, "PARTIAL"),
            "faithfulness": st(SKIP, SKIP, True),
            "answer_accuracy": st(0.0, False, False, "WRONG"),
        },
        category="A",
        group="g1",
        ff={"stage": "retrieval", "reason": "recall@3 0.50 < 1.00; missing: a|b\nconfig"},
        recording={
            "status": "replayed",
            "usage": usage(120, 30, 0.0012),
            "latency_ms": 500.0,
            "judge_usage": usage(220, 12, 0.0025),
            "judge_latency_ms": 1000.0,
        },
    )
    c2 = case("c2", 2, "stale", {}, category="B", recording={"status": "stale"})
    c3 = case("c3", 3, "missing", {}, category="B", recording={"status": "missing"})
    c4 = case(
        "c4", 0, "error", {}, ff={"stage": None, "reason": "ImportError: boom"}, file="cases/b.json"
    )
    c5 = case("c5", 5, "skipped", {}, category="B")
    c6 = case(
        "c6",
        6,
        "xfailed",
        {
            "tools": st(0.0, False, True),
            "retrieval": st(SKIP, SKIP, True),
            "context_completeness": st(SKIP, SKIP, False),
            "faithfulness": st(SKIP, SKIP, True),
            "answer_accuracy": st(SKIP, SKIP, False),
        },
        category="A",
        group="g2",
        ff={"stage": "tools", "reason": "no tool called"},
        recording={
            "status": "replayed",
            "usage": usage(90, 10, 0.0009),
            "latency_ms": 300.0,
            "judge_usage": None,
        },
    )
    c7 = case(
        "c7",
        7,
        "xpassed",
        {
            "tools": st(1.0, True, True),
            "retrieval": st(1.0, True, True, metrics=ret(1, 1, 0.3333, 1, 1, 1)),
            "context_completeness": st(1.0, True, False, "COMPLETE"),
            "faithfulness": st(SKIP, SKIP, True, judge_error=True),
            "answer_accuracy": st(0.0, False, False, "WRONG"),
        },
        category="B",
        group="g2",
        recording={
            "status": "replayed",
            "usage": usage(110, 25, 0.0011),
            "latency_ms": 450.0,
            "judge_usage": usage(210, 11, 0.0021),
            "judge_latency_ms": 900.0,
        },
    )
    # Shuffled on purpose: the document orders by (file, index, nodeid).
    return [c7, c4, c2, c0, c5, c1, c6, c3]


@pytest.fixture()
def doc() -> dict:
    return aggregate(make_results(), RUN)


# ----------------------------------------------------------------- aggregate


def test_cases_are_ordered_by_file_then_index(doc: dict) -> None:
    assert [c["id"] for c in doc["cases"]] == ["c0", "c1", "c2", "c3", "c5", "c6", "c7", "c4"]


def test_summary_counts_every_outcome(doc: dict) -> None:
    s = doc["summary"]
    assert {
        k: s[k]
        for k in (
            "cases",
            "passed",
            "failed",
            "stale",
            "missing",
            "errors",
            "skipped",
            "xfailed",
            "xpassed",
            "judge_errors",
        )
    } == {
        "cases": 8,
        "passed": 1,
        "failed": 1,
        "stale": 1,
        "missing": 1,
        "errors": 1,
        "skipped": 1,
        "xfailed": 1,
        "xpassed": 1,
        "judge_errors": 1,
    }
    # judged = passed + failed + xfailed + xpassed = 4; successes = passed + xpassed = 2
    assert s["decided"] == 4
    assert s["pass_rate"] == 0.5
    assert s["pass_rate_ci95"] == list(wilson_interval(2, 4))
    assert s["suites"] == ["docs"]


def test_stage_order_puts_gating_stages_first(doc: dict) -> None:
    assert doc["stage_order"] == [
        "tools",
        "retrieval",
        "faithfulness",
        "context_completeness",
        "answer_accuracy",
    ]


def test_stage_counts_means_and_intervals(doc: dict) -> None:
    stages = doc["stages"]
    tools = stages["tools"]
    counts = ("passed", "failed", "skipped", "judge_errors")
    assert [tools[k] for k in counts] == [3, 1, 0, 0]
    assert tools["scored"] == 4 and tools["mean"] == 0.75 and tools["gating"] is True
    assert tools["ci95"] == list(bootstrap_ci([1.0, 1.0, 0.0, 1.0]))
    assert tools["ci95"][0] <= 0.75 <= tools["ci95"][1]
    assert tools["histogram"] == [1, 0, 0, 0, 0, 0, 0, 0, 0, 3]

    faith = stages["faithfulness"]
    # c0 passed, c1 and c6 skipped, c7 judge error: never a pass, not in the mean
    assert [faith[k] for k in counts] == [1, 0, 2, 1]
    assert faith["scored"] == 1 and faith["mean"] == 1.0 and faith["ci95"] == [1.0, 1.0]

    cc = stages["context_completeness"]
    assert (cc["passed"], cc["failed"], cc["skipped"]) == (2, 1, 1)
    assert cc["mean"] == pytest.approx(2.5 / 3) and cc["gating"] is False
    acc = stages["answer_accuracy"]
    assert (acc["passed"], acc["failed"], acc["skipped"]) == (1, 2, 1)
    assert acc["mean"] == pytest.approx(1 / 3)
    assert "recall_at_k" not in acc  # retrieval metrics only where a stage has them


def test_retrieval_metric_means(doc: dict) -> None:
    r = doc["stages"]["retrieval"]
    assert (r["passed"], r["failed"], r["skipped"]) == (2, 1, 1)
    assert r["mean"] == pytest.approx((1 + 0.5 + 1) / 3)
    assert r["k"] == 3
    assert r["hit_at_k"] == 1.0
    assert r["recall_at_k"] == pytest.approx(2.5 / 3)
    assert r["precision_at_k"] == pytest.approx((0.6667 + 0.3333 + 0.3333) / 3)
    assert r["mrr"] == pytest.approx(2.5 / 3)
    assert r["ndcg_at_k"] == pytest.approx(2.5 / 3)
    assert r["map"] == pytest.approx(2.25 / 3)


def test_retrieval_k_lists_distinct_values_when_suites_disagree() -> None:
    a = case("a", 0, "passed", {"retrieval": st(1.0, True, True, metrics={"k": 3, "mrr": 1.0})})
    b = case("b", 1, "passed", {"retrieval": st(1.0, True, True, metrics={"k": 5, "mrr": 0.5})})
    r = aggregate([a, b], {})["stages"]["retrieval"]
    assert r["k"] == [3, 5] and r["mrr"] == 0.75 and r["recall_at_k"] is None


def test_categories_and_groups(doc: dict) -> None:
    cats = doc["categories"]
    assert list(cats) == ["A", "B"]  # c4 has no category and is left out
    a, b = cats["A"], cats["B"]
    assert (a["cases"], a["passed"], a["failed"], a["xfailed"], a["decided"]) == (3, 1, 1, 1, 3)
    assert a["pass_rate"] == pytest.approx(1 / 3)
    assert a["pass_rate_ci95"] == list(wilson_interval(1, 3))
    assert a["stage_means"] == pytest.approx(
        {
            "tools": 2 / 3,
            "retrieval": 0.75,
            "faithfulness": 1.0,
            "context_completeness": 0.75,
            "answer_accuracy": 0.5,
        }
    )
    assert list(a["stage_means"]) == doc["stage_order"]
    assert (b["cases"], b["stale"], b["missing"], b["skipped"], b["xpassed"]) == (4, 1, 1, 1, 1)
    assert b["decided"] == 1 and b["pass_rate"] == 1.0 and b["judge_errors"] == 1
    assert b["pass_rate_ci95"] == list(wilson_interval(1, 1))
    assert b["stage_means"] == {
        "tools": 1.0,
        "retrieval": 1.0,
        "context_completeness": 1.0,
        "answer_accuracy": 0.0,
    }

    groups = doc["groups"]
    assert list(groups) == ["g1", "g2"]
    assert groups["g1"]["pass_rate"] == 0.5 and groups["g1"]["cases"] == 2
    assert groups["g2"]["pass_rate"] == 0.5 and groups["g2"]["xfailed"] == 1


def test_completeness_vs_accuracy(doc: dict) -> None:
    cva = doc["completeness_vs_accuracy"]
    # (c0 COMPLETE, CORRECT), (c1 PARTIAL, WRONG), (c7 COMPLETE, WRONG)
    assert cva["table"] == {
        "COMPLETE": {"CORRECT": 1, "WRONG": 1},
        "PARTIAL": {"CORRECT": 0, "WRONG": 1},
        "INSUFFICIENT": {"CORRECT": 0, "WRONG": 0},
    }
    assert cva["cases"] == 3
    assert cva["complete_and_correct"] == 1 and cva["complete_but_wrong"] == 1
    assert cva["accuracy_when_complete"] == 0.5


def test_completeness_vs_accuracy_absent_without_both_labels() -> None:
    only = case("a", 0, "passed", {"context_completeness": st(1.0, True, False, "COMPLETE")})
    assert aggregate([only], {})["completeness_vs_accuracy"] is None


def test_cost(doc: dict) -> None:
    cost = doc["cost"]
    assert cost["system"] == {
        "cases": 4,
        "prompt_tokens": 420,
        "completion_tokens": 85,
        "total_tokens": 505,
        "cost_usd": 0.0042,
        "latency_ms_median": 425.0,
    }
    assert cost["judge"] == {
        "cases": 3,
        "prompt_tokens": 630,
        "completion_tokens": 33,
        "total_tokens": 663,
        "cost_usd": 0.0066,
        "latency_ms_median": 900.0,
    }
    assert cost["recorded_cost_usd"] == 0.0108
    assert cost["replay_cost_usd"] == 0.0
    live = aggregate(make_results(), {**RUN, "mode": "live"})
    assert live["cost"]["replay_cost_usd"] is None


def test_document_shape(doc: dict) -> None:
    assert doc["format"] == "pytest-evalcases/results" and doc["version"] == 1
    assert doc["run"] == RUN and doc["run"] is not RUN
    assert doc["baseline"] is None
    assert len(doc["cases"]) == 8
    json.dumps(doc, allow_nan=False)  # strict JSON: no NaN anywhere


def test_empty_run() -> None:
    empty = aggregate([], {})
    assert empty["summary"]["cases"] == 0 and empty["summary"]["pass_rate"] is None
    assert empty["stages"] == {} and empty["categories"] == {}
    assert "0 cases" in render_markdown(empty).replace("**", "")
    assert render_dashboard(empty).count('<tr class="case"') == 0


def test_aggregate_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="c9.*unknown outcome 'exploded'"):
        aggregate([case("c9", 0, "exploded", {})], {})
    with pytest.raises(ValueError, match="duplicate result"):
        aggregate([case("c1", 0, "passed", {}), case("c1", 1, "failed", {})], {})


def test_aggregate_10k_cases_counts() -> None:
    # Exercises the large-sample bootstrap path (many distinct values); its speed is measured by
    # benchmarks/replay.py's report timing, not asserted here.
    cases = []
    for i in range(10_000):
        f1 = (i * 7919 % 1000) / 1000  # many distinct values: the slowest bootstrap path
        cases.append(
            case(
                f"c{i}",
                i,
                "passed" if i % 5 else "failed",
                {
                    "tools": st(float(i % 7 != 0), i % 7 != 0, True),
                    "retrieval": st(
                        1.0 if i % 3 else 0.5,
                        bool(i % 3),
                        True,
                        metrics=ret(1, 1.0 if i % 3 else 0.5, 0.33, 1, 0.9, 0.8),
                    ),
                    "token_f1": st(f1, f1 > 0.5, False),
                    "faithfulness": st((i % 11) / 10 if i % 11 <= 10 else 1.0, True, True),
                    "answer_accuracy": st(
                        float(i % 2), bool(i % 2), False, "CORRECT" if i % 2 else "WRONG"
                    ),
                    "context_completeness": st(1.0, True, False, "COMPLETE"),
                },
                category=f"cat{i % 10}",
                group=f"user-{i % 50}",
                recording={"usage": usage(100, 10, 0.001), "latency_ms": float(i % 900)},
            )
        )
    big = aggregate(cases, {"mode": "replay"})
    assert big["summary"]["cases"] == 10_000 and big["summary"]["failed"] == 2_000
    low, high = big["stages"]["token_f1"]["ci95"]
    assert low <= big["stages"]["token_f1"]["mean"] <= high


# ------------------------------------------------------------------ markdown


def test_escape_cell() -> None:
    assert escape_cell("a|b") == "a\\|b"
    assert escape_cell("line one\nline two\r\n three") == "line one line two three"
    assert escape_cell("<img src=x onerror=alert(1)>") == "&lt;img src=x onerror=alert(1)&gt;"
    # Only what makes a link or an image is escaped: the `(` of `](`.
    assert escape_cell("![x](http://h/t.png) [a](b) (bootstrap) [0.769, 1.000]") == (
        "![x]\\(http://h/t.png) [a]\\(b) (bootstrap) [0.769, 1.000]"
    )
    assert escape_cell("back\\|slash") == "back&#92;\\|slash"
    assert escape_cell("") == " "
    assert escape_cell("x" * 500).endswith("…") and len(escape_cell("x" * 500)) == 200


def test_markdown_content(doc: dict) -> None:
    md = render_markdown(doc)
    assert md.startswith("## pytest-evalcases: docs\n")
    assert (
        "**8 cases**: 1 passed · 1 failed · 1 stale · 1 missing · 1 errors · 1 skipped · "
        "1 xfailed · 1 xpassed · 1 with judge errors"
    ) in md
    assert "Pass rate **50.0%** (95% Wilson CI 15.0–85.0%" in md
    assert "recorded cost $0.0108" in md and "this replay cost $0" in md
    # stage table: header and the tools row with its mean and bootstrap CI
    assert "| stage | gating | passed | failed | skipped | judge errors | mean | 95% CI" in md
    lo, hi = bootstrap_ci([1.0, 1.0, 0.0, 1.0])
    assert f"| tools | yes | 3 | 1 | 0 | 0 | 0.750 | [{lo:.3f}, {hi:.3f}] |" in md
    assert "| faithfulness | yes | 1 | 0 | 2 | 1 | 1.000 | [1.000, 1.000] |" in md
    assert "retrieval @ k=3: hit 1.000 · recall 0.833" in md
    # categories: passed counts xpassed, failed counts xfailed
    assert "| A | 3 | 1 | 2 | 33.3% | 6.1–79.2% |" in md
    assert "| B | 4 | 1 | 0 | 100.0% | 20.7–100.0% |" in md
    assert "| COMPLETE | 1 | 1 | 2 |" in md
    assert "Accuracy when context was complete: 50.0%" in md


def test_markdown_failing_cases_table_escapes_cells(doc: dict) -> None:
    md = render_markdown(doc)
    assert "### Failing cases (4)" in md  # failed, stale, missing, error; not xfailed
    row = "| docs::c1 | failed | retrieval | recall@3 0.50 &lt; 1.00; missing: a\\|b config |"
    assert row in md
    assert "| docs::c2 | stale | – | recording is stale" in md
    assert "| docs::c4 | error | – | ImportError: boom |" in md
    assert "docs::c6" not in md
    for line in md.splitlines():
        if line.startswith("| docs::c1 "):
            # 4 columns -> 5 unescaped pipes
            assert len(re.findall(r"(?<!\\)\|", line)) == 5


TRACKING_IMAGE = "![x](http://127.0.0.1:18999/track.png)"
HIDDEN_LINK = "[text](http://127.0.0.1:18999/phish)"


def hostile_markdown_doc() -> dict:
    """A run whose every user-controlled string that reaches report.md is a link or an image:
    suite name, case id, failure reason, category, accuracy label, run judge."""
    hostile = case(
        HIDDEN_LINK,
        0,
        "failed",
        {
            "tools": st(0.0, False, True, reason=f"unexpected: {TRACKING_IMAGE}"),
            "context_completeness": st(1.0, True, False, "COMPLETE"),
            "answer_accuracy": st(0.0, False, False, TRACKING_IMAGE),
        },
        category=HIDDEN_LINK,
        ff={"stage": "tools", "reason": f"unexpected: {TRACKING_IMAGE}"},
    )
    hostile["suite"] = TRACKING_IMAGE
    return aggregate([hostile], {**RUN, "judge": HIDDEN_LINK})


def test_markdown_cells_cannot_form_links_or_images() -> None:
    md = render_markdown(hostile_markdown_doc())
    for text in (TRACKING_IMAGE, HIDDEN_LINK):
        assert text not in md
    assert "![x]\\(http://127.0.0.1:18999/track.png)" in md
    assert "[text]\\(http://127.0.0.1:18999/phish)" in md
    assert "<" not in md.replace("&lt;", "")


def test_markdown_cells_render_as_the_original_text() -> None:
    # A CommonMark renderer (markdown-it-py, with GFM tables) shows each string as written, and
    # makes no link and no image of it.
    markdown_it = pytest.importorskip("markdown_it")
    md = render_markdown(hostile_markdown_doc())
    html = markdown_it.MarkdownIt("commonmark").enable("table").render(md)
    assert "<img" not in html and "<a " not in html
    for text in (TRACKING_IMAGE, HIDDEN_LINK):
        assert text in html
    # Every table is still one table (stages, categories, completeness, failing cases).
    assert html.count("<table>") == md.count("\n| ---") == 4


def test_markdown_caps_failing_rows() -> None:
    cases = [
        case(f"f{i}", i, "failed", {}, ff={"stage": "tools", "reason": "x"}) for i in range(57)
    ]
    md = render_markdown(aggregate(cases, {}))
    assert md.count("| failed | tools | x |") == 50
    assert "_…and 7 more (see dashboard.html)_" in md


def test_markdown_baseline_section_lists_regressions_first(doc: dict) -> None:
    base = copy.deepcopy(doc)
    for c in base["cases"]:
        if c["id"] == "c1":
            c["outcome"] = "passed"
    doc["baseline"] = compare(doc, base)
    md = render_markdown(doc)
    assert md.index("### Regressions vs baseline") < md.index("### Stages")
    section = md[md.index("### Regressions vs baseline") : md.index("### Stages")]
    assert "Baseline gate **FAILED**: 1 regression(s), 0 stage drop(s)" in section
    assert "| docs::c1 | passed | failed | retrieval | recall@3 0.50 &lt; 1.00;" in section
    assert section.index("| docs::c1 |") < section.index("stage (paired cases)")


def test_append_step_summary(tmp_path: Path) -> None:
    target = tmp_path / "summary.md"
    target.write_text("earlier step\n", encoding="utf-8")
    assert append_step_summary("## one", {"GITHUB_STEP_SUMMARY": str(target)}) == target
    append_step_summary("## two\n", {"GITHUB_STEP_SUMMARY": str(target)})
    assert target.read_text(encoding="utf-8") == "earlier step\n## one\n## two\n"
    assert append_step_summary("## three", {}) is None
    assert append_step_summary("## three", {"GITHUB_STEP_SUMMARY": ""}) is None


# ----------------------------------------------------------------- dashboard

XSS_SCRIPT = "<script>alert(1)</script>"
XSS_IMG = "<img src=x onerror=alert(1)>"
XSS_ATTR = '"><svg onload=alert(1)>'


def hostile_doc() -> dict:
    results = make_results()
    for res in results:
        if res["id"] == "c0":
            res["detail"]["answer"] = f"answer {XSS_SCRIPT} {XSS_IMG}"
            res["detail"]["input"] = f"input {XSS_IMG}"
            res["detail"]["context"] = [XSS_SCRIPT]
            res["detail"]["tool_calls"] = [{"name": XSS_IMG, "args": {"q": XSS_SCRIPT}}]
            res["stages"]["tools"]["reason"] = f"reason {XSS_SCRIPT}"
            res["category"] = XSS_ATTR
        if res["id"] == "c1":
            res["first_failure"]["reason"] = f"bad {XSS_IMG} {XSS_SCRIPT}"
    return aggregate(results, {**RUN, "judge": XSS_SCRIPT})


def test_dashboard_has_one_row_per_case_with_filter_attributes(doc: dict) -> None:
    html = render_dashboard(doc)
    rows = re.findall(r'<tr class="case"[^>]*>', html)
    assert len(rows) == len(doc["cases"]) == 8
    assert html.count('<tr class="detail"') == 8
    c1 = next(r for r in rows if 'id="case-1"' in r)
    assert 'data-outcome="failed"' in c1 and 'data-category="A"' in c1
    assert 'data-first-failure="retrieval"' in c1 and 'data-group="g1"' in c1
    c4 = next(r for r in rows if 'data-outcome="error"' in r)
    assert 'data-category=""' in c4 and 'data-first-failure=""' in c4
    for outcome in (
        "passed",
        "failed",
        "stale",
        "missing",
        "error",
        "skipped",
        "xfailed",
        "xpassed",
    ):
        assert f'<option value="{outcome}">' in html


def test_dashboard_sections(doc: dict) -> None:
    html = render_dashboard(doc)
    for section in (
        'id="stages"',
        'id="categories"',
        'id="groups"',
        'id="completeness"',
        'id="cases"',
        'id="f-outcome"',
        'id="f-category"',
        'id="f-stage"',
        'id="f-q"',
    ):
        assert section in html
    assert html.count('class="hist"') == 5  # one histogram per stage
    assert html.count('class="whisker"') >= 3 * 5  # stage chart whiskers
    assert "recorded cost $0.0108" in html and "this replay cost $0" in html
    assert 'id="baseline"' not in html
    # per-case details: input, answer, tool call args, retrieved ids, context, stage reasons
    assert "in ~/.notes" in html and "search_docs" in html and "notes live in ~/.notes" in html
    assert "&#34;q&#34;: &#34;notes&#34;" in html  # tool-call args as escaped JSON


def test_dashboard_escapes_hostile_strings() -> None:
    html = render_dashboard(hostile_doc())
    for payload in (XSS_SCRIPT, XSS_IMG, XSS_ATTR, "<svg onload"):
        assert payload not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert 'data-category="&#34;&gt;&lt;svg onload=alert(1)&gt;"' in html
    # The page's own script is the only <script>, and no <img> element exists at all.
    assert html.count("<script") == 1
    assert "<img" not in html


def test_dashboard_is_offline_and_locked_down(doc: dict) -> None:
    html = render_dashboard(doc)
    assert "http://" not in html and "https://" not in html
    assert not re.search(r"""\s(?:src|href)\s*=""", html)
    assert "@import" not in html and "url(" not in html
    csp = html_lib.unescape(
        re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html).group(1)
    )
    assert "default-src 'none'" in csp
    script = re.search(r"<script>(.*)</script>", html, re.S).group(1)
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in csp


def test_templates_never_mark_data_safe() -> None:
    template = (TEMPLATES / "dashboard.html.j2").read_text(encoding="utf-8")
    assert not re.search(r"\|\s*safe", template)
    js = (TEMPLATES / "dashboard.js").read_text(encoding="utf-8")
    assert "innerHTML" not in js and "insertAdjacentHTML" not in js and "eval(" not in js


def _dashboard_decoder() -> str:
    """The dashboard script's decodePart function, as its source text."""
    js = (TEMPLATES / "dashboard.js").read_text(encoding="utf-8")
    found = re.search(r"^  function decodePart\(text\) \{\n.*?^  \}\n", js, re.M | re.S)
    assert found, "dashboard.js has no decodePart function"
    return found.group(0)


def test_dashboard_decodes_the_address_in_one_guarded_place() -> None:
    # decodeURIComponent throws on "#q=100%": every call must be the guarded one in decodePart.
    js = (TEMPLATES / "dashboard.js").read_text(encoding="utf-8")
    decoder = _dashboard_decoder()
    assert js.count("decodeURIComponent(") == decoder.count("decodeURIComponent(") == 2
    assert decoder.count("try {") == 2 and decoder.count("catch (e)") == 2


def test_dashboard_baseline_marks_regressed_rows(doc: dict) -> None:
    base = copy.deepcopy(doc)
    next(c for c in base["cases"] if c["id"] == "c1")["outcome"] = "passed"
    doc["baseline"] = compare(doc, base)
    html = render_dashboard(doc)
    assert 'id="baseline"' in html and "gate FAILED" in html
    assert html.count('data-regressed="1"') == 1


def test_histogram_and_interval_geometry() -> None:
    hist = histogram_bars([1, 0, 0, 0, 0, 0, 0, 0, 0, 4])
    assert len(hist["bars"]) == 10 and hist["total"] == 5
    assert hist["bars"][9]["h"] == hist["height"] and hist["bars"][9]["y"] == 0
    assert hist["bars"][0]["h"] == pytest.approx(hist["height"] / 4, abs=0.1)
    assert hist["bars"][1]["h"] == 0
    assert hist["bars"][9]["title"] == "0.9–1.0: 4 cases"
    chart = interval_chart([("tools", 0.5, (0.25, 0.75), "0.5"), ("none", None, None, "–")])
    x0 = chart["x0"]
    w = chart["rows"][0]["bar_w"]
    assert chart["rows"][0]["whisker"]["x1"] == pytest.approx(x0 + w / 2)
    assert chart["rows"][0]["whisker"]["x2"] == pytest.approx(x0 + 1.5 * w)
    assert chart["rows"][1]["whisker"] is None and chart["rows"][1]["bar_w"] == 0


# ------------------------------------------------------------------- writers


def test_write_reports(tmp_path: Path, doc: dict) -> None:
    paths = write_reports(doc, tmp_path / "out" / "nested")
    assert [p.name for p in paths] == ["results.json", "report.md", "dashboard.html"]
    assert all(p.is_file() for p in paths)
    text = paths[0].read_text(encoding="utf-8")
    assert json.loads(text) == json.loads(json.dumps(doc))
    assert text == json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    assert paths[1].read_text(encoding="utf-8") == render_markdown(doc)
    assert paths[2].read_text(encoding="utf-8") == render_dashboard(doc)


# --------------------------------------------------------------------- merge


def shard_docs() -> tuple[dict, dict]:
    results = make_results()
    one = [r for r in results if r["id"] in ("c0", "c2", "c4", "c7")]
    two = [r for r in results if r["id"] not in ("c0", "c2", "c4", "c7")]
    run1 = {
        **RUN,
        "started_at": "2026-11-29T21:00:02+00:00",
        "finished_at": "2026-11-29T21:00:09+00:00",
        "args": ["--shard=1"],
    }
    run2 = {
        **RUN,
        "started_at": "2026-11-29T21:00:00+00:00",
        "finished_at": "2026-11-29T21:00:05+00:00",
        "args": ["--shard=2"],
    }
    return aggregate(one, run1), aggregate(two, run2)


def without_run(d: dict) -> dict:
    return {k: v for k, v in d.items() if k != "run"}


def test_merging_shards_equals_one_unsharded_run() -> None:
    one, two = shard_docs()
    merged = merge_results([json.loads(json.dumps(one)), json.loads(json.dumps(two))])
    whole = aggregate(make_results(), RUN)
    assert without_run(merged) == json.loads(json.dumps(without_run(whole)))
    # shard order does not matter either
    assert without_run(merge_results([two, one])) == without_run(merged)


def test_merged_run_info() -> None:
    one, two = shard_docs()
    run = merge_results([one, two])["run"]
    assert run["started_at"] == "2026-11-29T21:00:00+00:00"
    assert run["finished_at"] == "2026-11-29T21:00:09+00:00"
    assert run["shards"] == 2
    assert run["mode"] == "replay" and run["judge"] == "lexical"
    assert "args" not in run and [r["args"] for r in run["shard_runs"]] == [
        ["--shard=1"],
        ["--shard=2"],
    ]


def test_merged_run_info_with_the_plugins_key_names() -> None:
    runs = [
        {"started": "2026-11-29T21:00:05Z", "finished": "2026-11-29T21:01:00Z", "shards": 2},
        {"started": "2026-11-29T21:00:01Z", "finished": "2026-11-29T21:00:30Z"},
    ]
    docs = [aggregate([r], run) for r, run in zip(make_results()[:2], runs, strict=True)]
    run = merge_results(docs)["run"]
    assert (run["started"], run["finished"], run["shards"]) == (
        "2026-11-29T21:00:01Z",
        "2026-11-29T21:01:00Z",
        3,
    )


def test_merge_rejects_duplicate_cases_and_drops_baselines() -> None:
    one, two = shard_docs()
    with pytest.raises(MergeError, match=r"'cases/a.json::c0' is in both shard 1 and shard 2"):
        merge_results([one, one])
    with pytest.raises(MergeError, match="in both a/ and b/"):
        merge_results([one, one], names=["a/", "b/"])
    one["baseline"] = {"failed": True}
    assert merge_results([one, two])["baseline"] is None
    with pytest.raises(MergeError, match="nothing to merge"):
        merge_results([])
    with pytest.raises(MergeError, match="x.json: not a results.json"):
        merge_results([{"summary": {}}], names=["x.json"])


def write_shards(tmp_path: Path) -> tuple[Path, Path]:
    one, two = shard_docs()
    d1, d2 = tmp_path / "shard-1", tmp_path / "shard-2"
    write_reports(one, d1)
    write_reports(two, d2)
    return d1, d2


def test_cli_merge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    d1, d2 = write_shards(tmp_path)
    summary = tmp_path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    out = tmp_path / "merged"
    assert main(["merge", str(d1), str(d2), "-o", str(out)]) == 0
    merged = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert without_run(merged) == json.loads(
        json.dumps(without_run(aggregate(make_results(), RUN)))
    )
    assert (out / "report.md").is_file() and (out / "dashboard.html").is_file()
    assert summary.read_text(encoding="utf-8") == (out / "report.md").read_text(encoding="utf-8")
    assert "merged 2 shard(s): 8 cases, 1 passed, 1 failed" in capsys.readouterr().out


def test_cli_merge_with_baseline_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d1, d2 = write_shards(tmp_path)
    base = aggregate(make_results(), RUN)
    next(c for c in base["cases"] if c["id"] == "c1")["outcome"] = "passed"
    base_file = tmp_path / "base.json"
    base_file.write_text(json.dumps(base), encoding="utf-8")
    out = tmp_path / "merged"
    code = main(
        [
            "merge",
            str(d1),
            str(d2),
            "-o",
            str(out),
            "--baseline",
            str(base_file),
            "--no-step-summary",
        ]
    )
    assert code == 1
    printed = capsys.readouterr().out
    assert "regressions vs baseline" in printed and "baseline gate FAILED" in printed
    merged = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert [r["id"] for r in merged["baseline"]["regressions"]] == ["c1"]


def test_cli_merge_errors_name_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d1, _ = write_shards(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["merge", str(d1), str(empty), "-o", str(tmp_path / "o")]) == 2
    assert f"{empty / 'results.json'}: no such file" in capsys.readouterr().err

    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "results.json").write_text("{not json", encoding="utf-8")
    assert main(["merge", str(broken), "-o", str(tmp_path / "o")]) == 2
    assert f"{broken / 'results.json'}: not valid JSON" in capsys.readouterr().err

    (broken / "results.json").write_text("[1, 2]", encoding="utf-8")
    assert main(["merge", str(broken), "-o", str(tmp_path / "o")]) == 2
    assert "not a pytest-evalcases results.json" in capsys.readouterr().err

    assert main(["merge", str(d1), str(d1), "-o", str(tmp_path / "o")]) == 2
    assert "shards must not overlap" in capsys.readouterr().err

    assert (
        main(
            ["merge", str(d1), "-o", str(tmp_path / "o"), "--baseline", str(tmp_path / "nope.json")]
        )
        == 2
    )
    assert f"baseline file {tmp_path / 'nope.json'} does not exist" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_merge_orders_and_round_trip(tmp_path: Path) -> None:
    assert merge_orders([["tools", "faithfulness"], ["tools", "retrieval", "faithfulness"]]) == [
        "tools",
        "retrieval",
        "faithfulness",
    ]
    # results.json has sorted keys, so stage order survives only through stage_order
    one, _ = shard_docs()
    write_reports(one, tmp_path)
    back = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert list(back["cases"][0]["stages"]) != one["stage_order"]
    assert merge_results([back])["stage_order"] == one["stage_order"]


def test_run_judge_is_the_judge_that_scored() -> None:
    """A suite may name its own judge: the run reports what judged, not only the option."""

    def result(*judges: str) -> dict[str, Any]:
        return {"recording": {"status": "replayed", "judges": list(judges)}}

    assert judges_used([result("lexical"), result("lexical")], None) == "lexical"
    assert judges_used([result("openai:gpt-4o-mini"), result("lexical")], "lexical") == (
        "lexical, openai:gpt-4o-mini"
    )
    assert judges_used([result(), {"recording": {}}], "lexical") == "lexical"  # nothing judged
    assert judges_used([], None) is None


def test_markdown_group_rows_join_when_a_case_has_a_group() -> None:
    cases = [
        case(f"g{i}", i, outcome, {})
        for i, outcome in enumerate(["passed", "failed", "passed", "xfailed", "passed"])
    ]
    assert "### Groups" not in render_markdown(aggregate(cases, {}))
    for item, group in zip(cases, ["u1", "u1", "u2", "u2", None], strict=True):
        item["group"] = group
    md = render_markdown(aggregate(cases, {}))
    header = "| group | cases | passed | failed | pass rate | 95% CI (Wilson) |"
    assert f"### Groups\n\n{header}" in md
    assert "| u1 | 2 | 1 | 1 | 50.0% |" in md and "| u2 | 2 | 1 | 1 | 50.0% |" in md


def test_markdown_caps_group_rows_at_the_lowest_pass_rates() -> None:
    cases = []
    for n in range(53):  # group u<n>: n passes, then one failure
        for outcome in ["passed"] * n + ["failed"]:
            cases.append(case(f"c{len(cases)}", len(cases), outcome, {}))
            cases[-1]["group"] = f"u{n:02d}"
    md = render_markdown(aggregate(cases, {}))
    groups = re.findall(r"^\| (u\d\d) \|", md, flags=re.MULTILINE)
    assert groups == [f"u{n:02d}" for n in range(50)]  # u50..u52 pass most often
    assert "_…and 3 more groups with higher pass rates (see dashboard.html)_" in md


def test_a_case_recorded_once_reports_no_runs_block() -> None:
    case = {
        "nodeid": "c.json::a",
        "suite": "s",
        "id": "a",
        "file": "c.json",
        "index": 0,
        "outcome": "passed",
        "stages": {},
        "recording": {},
    }
    assert aggregate([case])["runs"] is None


def test_label_counts_per_category_and_group_and_the_group_kind() -> None:
    from pytest_evalcases.report.aggregate import aggregate

    def case(n: int, user: str | None, group: str | None, comp: str | None, acc: str) -> dict:
        stages = {
            "answer_accuracy": {
                "score": float(acc == "CORRECT"),
                "passed": acc == "CORRECT",
                "gating": True,
                "label": acc,
            }
        }
        if comp is not None:
            stages["context_completeness"] = {
                "score": 1.0,
                "passed": comp == "COMPLETE",
                "gating": True,
                "label": comp,
            }
        result = {
            "nodeid": f"s.json::c{n}",
            "suite": "s",
            "id": f"c{n}",
            "file": "s.json",
            "index": n,
            "category": "cat",
            "group": group,
            "outcome": "passed",
            "stages": stages,
            "recording": {},
        }
        if user:
            result["user"] = user
        return result

    doc = aggregate(
        [
            case(0, "u1", "u1", "COMPLETE", "CORRECT"),
            case(1, "u1", "u1", "PARTIAL", "WRONG"),
            case(2, "u2", "u2", None, "CORRECT"),
        ]
    )
    assert doc["group_kind"] == "user"
    assert doc["groups"]["u1"]["completeness"] == {"COMPLETE": 1, "PARTIAL": 1, "INSUFFICIENT": 0}
    assert doc["groups"]["u2"]["completeness"] == {"COMPLETE": 0, "PARTIAL": 0, "INSUFFICIENT": 0}
    assert doc["categories"]["cat"]["accuracy"] == {"CORRECT": 2, "WRONG": 1}
    mixed = aggregate(
        [case(0, "u1", "u1", "COMPLETE", "CORRECT"), case(1, None, "team", "COMPLETE", "CORRECT")]
    )
    assert mixed["group_kind"] == "group"
    plain = aggregate([{**case(0, None, None, None, "CORRECT"), "stages": {}}])
    assert plain["group_kind"] == "group" and "accuracy" not in plain["categories"]["cat"]
