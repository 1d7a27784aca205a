"""report.md's head states each suite's one-line summary; `--eval-report-cases all` adds the
full per-case table (id, category, tools called, retrieval's hit, recall and RR, each stage's score,
report-only ones included, first failure)."""

from __future__ import annotations

import json

from evalhelpers import Project, make_case, suite_doc

CASES = [
    make_case("ok", "alpha beta", category="storage"),
    make_case("miss", "gamma delta", category="sync", expected_docs=["zzz"]),
]


def test_report_md_heads_with_each_suites_line_and_lists_every_case_when_asked(
    project: Project,
) -> None:
    project.write_suite(suite_doc("docs", CASES), "cases/docs.json")
    assert project.run("--live").ret == 1

    failing_only = project.run("--eval-report", "r1")
    every_case = project.run("--eval-report", "r2", "--eval-report-cases", "all")

    assert failing_only.ret == every_case.ret == 1
    md = (project.root / "r2" / "report.md").read_text()
    head = md.split("###")[0]
    assert (  # wrapped at 100 characters, never cut: one paragraph of the list item
        "- **docs**: 1/2 cases pass every stage. tools 2/2, hit@3 1/2, recall@3 0.500, "
        "MRR 0.500,\n  exact_match 2/2\n" in head
    ), head
    assert "### All cases (2)" in md
    table = md.split("### All cases (2)")[1]
    row = next(line for line in table.splitlines() if line.startswith("| docs::miss"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    # tools called, tools, hit@3, recall@3, RR, exact_match
    assert cells[:8] == ["docs::miss", "sync", "search", "1.000", "no", "0.000", "0.000", "1.000"]
    assert cells[8].startswith("retrieval: recall@3 0.00 &lt; 1.00")  # escaped as every cell
    assert "### All cases" not in (project.root / "r1" / "report.md").read_text()
    doc = json.loads((project.root / "r2" / "results.json").read_text())
    assert doc["run"]["report_cases"] == "all"


TIMED_SYSTEM = """\
def run(case):
    return {"answer": case["input"], "retrieved": case["input"].split(),
            "latency_ms": 50.0, "timings": {"search_ms": 12.5, "generate_ms": 30.0}}
"""


def test_the_traces_step_timings_reach_results_json_and_report_md(project: Project) -> None:
    project.write_text("timed.py", TIMED_SYSTEM)
    doc = suite_doc("timed", [make_case("t1", "alpha beta")], system="timed:run")
    doc["stages"] = ["retrieval"]
    project.write_suite(doc, "cases/timed.json")
    assert project.run("--live").ret == 0

    assert project.run("--eval-report", "r").ret == 0

    results = json.loads((project.root / "r" / "results.json").read_text())
    assert results["timings"]["search_ms"] == {"cases": 1, "mean": 12.5, "p95": 12.5}
    assert results["cases"][0]["recording"]["timings"] == {"search_ms": 12.5, "generate_ms": 30.0}
    assert "### Timings" in (project.root / "r" / "report.md").read_text()
