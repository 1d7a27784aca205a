"""Named totals end to end: a suite declares them, every case still runs, results.json,
report.md and the dashboard carry each total beside the overall figures, and `compare` compares
them."""

from __future__ import annotations

import json

from evalhelpers import Project, make_case, output, suite_doc

from pytest_evalcases.__main__ import main

CASES = [
    make_case("q1", "alpha beta", category="single_hop"),
    make_case("q2", "gamma delta", category="temporal"),
    make_case("q3", "epsilon zeta", category="single_hop", reference="something else"),
    make_case("q4", "eta theta", category="adversarial", reference="nothing at all"),
]
TOTALS = [
    {"name": "categories 1-4", "exclude": {"category": ["adversarial"]}},
    {"name": "without gold exclusions", "exclude": {"ids": "data/exclusions.json"}},
]


def totals_project(project: Project) -> Project:
    project.write_text("data/exclusions.json", json.dumps(["q3"]))
    project.write_suite(suite_doc("bench", CASES, totals=TOTALS), "cases/bench.json")
    assert project.run("--live").ret == 1  # q3 and q4 fail exact_match
    return project


def test_totals_reach_results_json_report_md_and_the_dashboard(project: Project) -> None:
    totals_project(project)

    run = project.run("--eval-report", "report")

    run.assert_outcomes(passed=2, failed=2)  # every case runs: a total only counts
    doc = json.loads((project.root / "report" / "results.json").read_text())
    papers, gold = doc["totals"]["categories 1-4"], doc["totals"]["without gold exclusions"]
    assert (papers["cases"], papers["excluded"], papers["passed"]) == (3, 1, 2)
    assert (gold["cases"], gold["excluded"], gold["passed"]) == (3, 1, 2)
    assert papers["pass_rate"] == 2 / 3 and doc["summary"]["pass_rate"] == 2 / 4
    assert papers["stage_means"]["exact_match"] == 2 / 3
    md = (project.root / "report" / "report.md").read_text()
    assert "### Totals" in md and "| categories 1-4 | 3 | 1 | 66.7%" in md
    assert 'id="totals"' in (project.root / "report" / "dashboard.html").read_text()


def test_compare_sets_the_totals_of_two_runs_side_by_side(project: Project) -> None:
    totals_project(project)
    assert project.run("--eval-report", "a").ret == 1
    project.edit_suite(
        "cases/bench.json", lambda doc: doc["cases"][2].update(reference="epsilon zeta")
    )
    assert project.run("--eval-report", "b").ret == 1  # q4 still fails

    code = main(
        [
            "compare",
            str(project.root / "a"),
            str(project.root / "b"),
            "-o",
            str(project.root / "cmp"),
        ]
    )

    assert code == 0
    md = (project.root / "cmp" / "compare.md").read_text()
    assert "### Pass rate by named total (shared cases)" in md
    row = next(line for line in md.splitlines() if line.startswith("| categories 1-4"))
    assert "2/3" in row and "3/3" in row and "+33.3 pts" in row


def test_an_unreadable_exclusions_file_errors_the_suite_naming_the_total(project: Project) -> None:
    project.write_suite(
        suite_doc("bench", CASES, totals=[{"name": "gold", "exclude": {"ids": "data/none.json"}}]),
        "cases/bench.json",
    )
    result = project.run()
    assert result.ret != 0
    assert "total 'gold'" in output(result) and "cannot read data/none.json" in output(result)


def test_two_totals_of_one_name_are_refused(project: Project) -> None:
    twice = [{"name": "t"}, {"name": "t", "exclude": {"category": ["x"]}}]
    project.write_suite(suite_doc("bench", CASES, totals=twice), "cases/bench.json")
    result = project.run()
    assert result.ret != 0 and "total names must be distinct: 't'" in output(result)
