"""`--eval-report-cases all`: seed 003's per-case table (tools called, hit, recall, RR, each stage's
score with report-only stages, the first failure), worked by hand from per-case results; and the
per-suite line of report.md, wrapped and never cut."""

from __future__ import annotations

from typing import Any

from pytest_evalcases.report.case_table import REASON_CHARS, case_table, dashboard_columns
from pytest_evalcases.report.markdown import render_markdown
from pytest_evalcases.report.markdown_cases import all_cases_section
from pytest_evalcases.report.markdown_table import wrapped_item


def stage(passed: bool | None, score: float | None, gating: bool = True, **extra: Any) -> dict:
    return {"passed": passed, "score": score, "gating": gating, **extra}


def retrieval(hit: float, recall: float, mrr: float, k: int = 5) -> dict:
    metrics = {"k": k, "hit_at_k": hit, "recall_at_k": recall, "mrr": mrr, "ndcg_at_k": 0.1}
    return stage(recall >= 1.0, recall, metrics=metrics)


def case(case_id: str, suite: str, stages: dict, tools: list[str] | None = None, **fields: Any):
    result: dict[str, Any] = {
        "suite": suite,
        "id": case_id,
        "outcome": fields.pop("outcome", "passed"),
        "category": fields.pop("category", None),
        "first_failure": fields.pop("first_failure", None),
        "stages": stages,
    }
    if tools is not None:
        result["detail"] = {"tool_calls": [{"name": name, "args": {}} for name in tools]}
    return result


RAG_ORDER = [
    "retrieval",
    "faithfulness",
    "contextual_recall",
    "answer_relevancy",
    "contextual_precision",
]
RAG = [
    case(
        "a",
        "rag",
        {
            "retrieval": retrieval(1.0, 1.0, 0.5),
            "faithfulness": stage(True, 0.9),
            "contextual_recall": stage(True, 1.0),
            "answer_relevancy": stage(True, 0.8),
            "contextual_precision": stage(True, 0.75, gating=False),
        },
        category="storage",
    ),
    case(
        "b",
        "rag",
        {
            "retrieval": retrieval(0.0, 0.0, 0.0),
            "faithfulness": stage(None, None, judge_error=True),
            "contextual_recall": stage(False, 0.25),
            "answer_relevancy": stage(None, None),  # skipped for this case
            "contextual_precision": stage(False, 0.0, gating=False),
        },
        outcome="failed",
        first_failure={"stage": "retrieval", "reason": "recall@5 0.00 < 1.00; missing: d9"},
    ),
]


def test_a_rag_suite_gets_hit_recall_rr_and_every_stage_report_only_included() -> None:
    table = case_table(RAG, RAG_ORDER)

    assert table.header == [
        "case",
        "category",
        "hit@5",
        "recall@5",
        "RR",
        "faithfulness",
        "contextual_recall",
        "answer_relevancy",
        "contextual_precision",
        "first failure",
    ]
    assert table.align == ["l", "l", *["r"] * 7, "l"]
    assert table.rows == [
        ["rag::a", "storage", "yes", "1.000", "0.500", "0.900", "1.000", "0.800", "0.750", "–"],
        [
            "rag::b",
            "–",
            "no",
            "0.000",
            "0.000",
            "judge error",
            "0.250",
            "–",
            "0.000",
            "retrieval: recall@5 0.00 < 1.00; missing: d9",
        ],
    ]
    assert table.report_only == ["contextual_precision"]


TOOL_ORDER = ["tools", "retrieval", "exact_match"]
TOOLS = [
    case(
        "t1",
        "agent",
        {"tools": stage(True, 1.0), "retrieval": stage(None, None), "exact_match": stage(True, 1)},
        tools=["search_kb", "get_order", "search_kb"],
    ),
    case(
        "t2",
        "agent",
        {
            "tools": stage(False, 0.5),
            "retrieval": stage(None, None),
            "exact_match": stage(False, 0),
        },
        tools=[],
        outcome="failed",
        first_failure={"stage": "tools", "reason": "missing: refund"},
    ),
]


def test_a_tool_calling_suite_lists_the_tools_called_and_no_retrieval_columns() -> None:
    """Retrieval was skipped for every case (no expected_docs): no hit, recall or RR columns."""
    table = case_table(TOOLS, TOOL_ORDER)

    assert table.header == [
        "case",
        "category",
        "tools called",
        "tools",
        "exact_match",
        "first failure",
    ]
    assert table.rows == [
        ["agent::t1", "–", "search_kb, get_order, search_kb", "1.000", "1.000", "–"],
        ["agent::t2", "–", "–", "0.500", "0.000", "tools: missing: refund"],
    ]
    assert table.report_only == []


def test_tools_called_shows_even_when_the_suite_runs_no_tools_stage() -> None:
    cases = [case("q", "rag", {"exact_match": stage(True, 1.0)}, tools=["search_docs"])]

    assert case_table(cases, ["exact_match"]).header == [
        "case",
        "category",
        "tools called",
        "exact_match",
        "first failure",
    ]


def test_the_first_failure_is_the_stage_and_a_short_reason_or_the_outcomes() -> None:
    long_reason = "missing: " + ", ".join(f"doc-{n}" for n in range(60))
    cases = [
        case("long", "s", {}, first_failure={"stage": "retrieval", "reason": long_reason}),
        case("gone", "s", {}, outcome="stale", first_failure=None),
    ]

    rows = case_table(cases, []).rows

    assert rows[0][-1] == "retrieval: " + long_reason[: REASON_CHARS - 1] + "…"
    assert rows[1][-1] == "recording is stale: the case changed since it was recorded"


def test_report_md_has_a_table_per_suite_with_its_own_columns() -> None:
    doc = {"cases": [*TOOLS, *RAG], "stage_order": [*TOOL_ORDER, *RAG_ORDER[1:]]}

    md = "\n".join(all_cases_section(doc))

    assert md.startswith("### All cases (4)\n")
    agent, rag = md.split("#### agent (2)")[1].split("#### rag (2)")
    assert agent.splitlines()[2].startswith(
        "| case | category | tools called | tools | exact_match |"
    )
    assert "hit@5" not in agent and "faithfulness" not in agent
    assert rag.splitlines()[2] == (
        "| case | category | hit@5 | recall@5 | RR | faithfulness | contextual_recall "
        "| answer_relevancy | contextual_precision | first failure |"
    )
    assert "_report-only (never fail a case): contextual_precision_" in rag
    assert "| rag::b | – | no | 0.000 | 0.000 | judge error | 0.250 | – | 0.000 |" in rag
    assert "retrieval: recall@5 0.00 &lt; 1.00; missing: d9 |" in rag  # escaped as every cell


def test_a_cell_cannot_open_a_tag_a_link_or_a_new_cell() -> None:
    hostile = case(
        "x",
        "s",
        {"tools": stage(True, 1.0)},
        tools=["<img src=x>", "a|b", "[t](http://h)"],
        category="<b>c</b>",
    )

    row = all_cases_section({"cases": [hostile], "stage_order": ["tools"]})[4]

    assert row == (
        "| s::x | &lt;b&gt;c&lt;/b&gt; | &lt;img src=x&gt;, a\\|b, [t]\\(http://h) | 1.000 | – |"
    )


# ---- the per-suite line ----------------------------------------------------------------------


def test_a_long_suite_line_is_wrapped_at_its_parts_and_never_cut() -> None:
    parts = [f"stage_{n} 0.{n:03d}" for n in range(30)]  # ~470 characters: cut at 200 before
    text = "9/10 cases pass every stage. " + ", ".join(parts)

    lines = wrapped_item("- **s**: ", text)

    assert all(len(line) <= 100 for line in lines)
    assert all(line.startswith("  stage_") for line in lines[1:])
    assert " ".join(line.strip() for line in lines) == "- **s**: " + text
    assert lines[-1].endswith("stage_29 0.029")


def test_a_continuation_line_never_starts_with_a_block_marker() -> None:
    """A part that would open a list, heading or quote at the start of a line stays on the line
    before, so the wrapped item stays one paragraph."""
    risky = ["- item", "# head", "> quote", "1. first", "=== rule", "<b>x</b>"]
    text = ", ".join(["x" * 98, *risky, "faithfulness 0.900"])

    lines = wrapped_item("- ", text)

    assert len(lines) == 2  # only the last part, a word, starts a line
    assert lines[0].endswith(
        ", - item, # head, &gt; quote, 1. first, === rule, &lt;b&gt;x&lt;/b&gt;,"
    )
    assert lines[1] == "  faithfulness 0.900"


def test_report_md_keeps_the_report_only_means_of_a_long_line() -> None:
    names = [f"report_only_stage_{n}" for n in range(12)]
    cases = [
        {
            "suite": "s",
            "outcome": "passed",
            "stages": {name: stage(True, 0.5, gating=False) for name in names},
        }
    ]
    doc = {
        "summary": {"cases": 1, "passed": 1, "suites": ["s"]},
        "cases": cases,
        "stage_order": names,
        "stages": {},
    }

    head = render_markdown(doc).split("Cost:")[0]

    assert all(f"{name} 0.500" in head for name in names)
    assert "…" not in head


def test_the_dashboard_adds_the_tools_called_hit_and_rr_of_the_stages_that_ran() -> None:
    rag = dashboard_columns(RAG, RAG_ORDER)
    agent = dashboard_columns(TOOLS, TOOL_ORDER)

    assert [(c.header, c.numeric) for c in rag] == [("hit@5", False), ("RR", True)]
    assert [c.cell(RAG[0]) for c in rag] == ["yes", "0.500"]
    assert [c.header for c in agent] == ["tools called"]
    assert agent[0].cell(TOOLS[0]) == "search_kb, get_order, search_kb"
