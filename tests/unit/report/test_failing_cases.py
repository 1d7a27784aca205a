"""report.md and the dashboard show what a failing case's first failing stage compared (the
result's `first_failure.details`), escaped: a model's answer cannot become a link, an image or
markup (pure functions over result dicts)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from pytest_evalcases.report import aggregate, render_dashboard, render_markdown
from pytest_evalcases.report.markdown_table import CellLines, markdown_table

RUN = {"plugin_version": "0.1.0", "judge": "lexical", "mode": "replay"}
HIDDEN_LINK = "[x](http://127.0.0.1:18999/phish)"
TRACKING_IMAGE = "![t](http://127.0.0.1:18999/track.png)"
SCRIPT = "<script>alert(1)</script>"
HOSTILE_ANSWER = f"See {HIDDEN_LINK} {TRACKING_IMAGE} {SCRIPT} | done"


def failed(cid: str, stage: str, reason: str, details: list[list[str]] | None) -> dict[str, Any]:
    first: dict[str, Any] = {"stage": stage, "reason": reason}
    if details is not None:
        first["details"] = details
    stages = {
        stage: {
            "score": 0.0,
            "passed": False,
            "gating": True,
            "threshold": 1.0,
            "reason": reason,
            "label": None,
            "metrics": {},
            "judge_error": False,
        }
    }
    return {
        "nodeid": f"cases/s.json::{cid}",
        "suite": "s",
        "id": cid,
        "file": "cases/s.json",
        "index": 0,
        "category": None,
        "group": None,
        "outcome": "failed",
        "first_failure": first,
        "stages": stages,
        "recording": {},
    }


def hostile_doc() -> dict[str, Any]:
    details = [
        ["called", f"search_kb(query={HIDDEN_LINK!r})"],
        ["expected", "get_order"],
        ["answer", repr(HOSTILE_ANSWER)],
    ]
    return aggregate(
        [failed("c1", "tools", "missing: get_order; unexpected: search_kb", details)], RUN
    )


def test_report_md_shows_what_happened_beside_the_reason() -> None:
    md = render_markdown(hostile_doc())

    header = "| case | outcome | first failing stage | reason | what happened |"
    assert header in md
    row = next(line for line in md.splitlines() if line.startswith("| s::c1 "))
    cells = re.split(r"(?<!\\)\|", row)[1:-1]
    assert len(cells) == 5
    happened = cells[4].strip().split("<br>")
    assert happened[0] == r"called: search_kb(query='[x]\(http://127.0.0.1:18999/phish)')"
    assert happened[1] == "expected: get_order"
    assert happened[2].startswith(r"answer: 'See [x]\(http://127.0.0.1:18999/phish) ![t]")
    assert "&lt;script&gt;alert(1)&lt;/script&gt; \\| done'" in happened[2]


def test_report_md_details_stay_inert_when_rendered() -> None:
    markdown_it = pytest.importorskip("markdown_it")
    md = render_markdown(hostile_doc())

    for raw in (HIDDEN_LINK, TRACKING_IMAGE, SCRIPT):
        assert raw not in md
    html = markdown_it.MarkdownIt("commonmark").enable("table").render(md)
    assert "<a " not in html and "<img" not in html and "<script" not in html
    assert html.count("<br>") >= 2  # the only raw tag a cell holds: between its lines
    assert HIDDEN_LINK in html  # shown as the text it is


def test_report_md_leaves_out_the_column_when_no_case_was_scored() -> None:
    stale = failed("c2", "tools", "x", None)
    stale["outcome"], stale["first_failure"] = "stale", {"stage": None, "reason": "stale"}
    md = render_markdown(aggregate([stale], RUN))

    assert "| case | outcome | first failing stage | reason |\n" in md
    assert "what happened" not in md


def test_cell_lines_escape_each_line() -> None:
    lines = markdown_table(["a"], [[CellLines(["x|y", "<b>", "[l](u)"])], [CellLines([])]])

    assert lines[2] == r"| x\|y<br>&lt;b&gt;<br>[l]\(u) |"
    assert lines[3] == "|   |"


def test_dashboard_shows_what_happened_escaped() -> None:
    html = render_dashboard(hostile_doc())

    block = html.split('<div class="block wide happened">', 1)[1].split("</div>", 1)[0]
    assert "<h4>what happened at tools</h4>" in block
    assert "<th>called</th>" in block and "<th>expected</th>" in block
    assert '<td class="mono">get_order</td>' in block
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in block
    assert SCRIPT not in html and "<img" not in html
    assert html.count("<script") == 1  # the page's own
