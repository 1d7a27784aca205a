"""End to end: the `per-stage summary` terminal section (its per-case table lists the cases that
did not pass, every case with -v, none with -q -q; it fits the terminal's width), and the pytest
options that must keep working with eval items (-x, --lf, --junitxml, -n 2,
-p no:cacheprovider)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from evalhelpers import (
    Project,
    make_case,
    record_template,
    suite_doc,
    summary_section,
)

CASES = [
    make_case("pass1", "pass one", category="storage"),
    make_case("pass2", "pass two", category="sync"),
    make_case("fail-tools", "tools fail", category="sync", expected_tools=["lookup"]),
    make_case("fail-retr", "retr fail", category="storage", expected_docs=["zzz"]),
    make_case("xf", "xf text", category="chitchat", expected_tools=["lookup"], xfail="known gap"),
    make_case("stale-me", "stale text", category="sync"),
    make_case("missing-me", "missing text", category="billing"),
    {"id": "bad-case", "input": 7},
    {"id": "bad-two", "input": "x", "expected_docs": 5},
]
CASE_IDS = [case["id"] for case in CASES]
PASSING = ["pass1", "pass2"]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Project:
    """Suite `gate` (in cases/checks.json) recorded, then one case made stale, one missing, and
    one orphaned cassette added."""
    project = record_template(
        tmp_path_factory.mktemp("summary"), suite_doc("gate", cases=CASES, report_only=["token_f1"])
    )
    (project.root / "cases/gate.json").rename(project.root / "cases/checks.json")
    project.edit_suite(
        "cases/checks.json", lambda doc: doc["cases"][5].update(input="stale text 2")
    )
    project.cassette_path("gate", "missing-me").unlink()
    project.write_text(
        "cassettes/gate/gone.json", project.cassette_path("gate", "pass1").read_text()
    )
    return project


@pytest.fixture(scope="module")
def quiet_run(template: Project) -> pytest.RunResult:
    return template.run("-q")


@pytest.fixture
def copied(project: Project, template: Project) -> Project:
    project.copy_from(template.root)
    return project


def rows_of(section: list[str]) -> dict[str, list[str]]:
    return {line.split()[0]: line.split()[1:] for line in section if line.strip()}


def case_rows(section: list[str]) -> dict[str, list[str]]:
    return {name: cells for name, cells in rows_of(section).items() if "::" in name}


def test_summary_section_is_printed_with_q(quiet_run: pytest.RunResult) -> None:
    quiet_run.assert_outcomes(passed=2, failed=2, xfailed=1, errors=4)
    section = summary_section(quiet_run)
    header = section[0].split()
    assert header[:3] == ["case", "category", "outcome"]
    assert header[3:7] == ["tools", "retrieval", "exact_match", "token_f1"]


def test_summary_has_a_row_per_case_that_did_not_pass(quiet_run: pytest.RunResult) -> None:
    section = summary_section(quiet_run)
    rows = case_rows(section)
    assert sorted(name.split("::")[1] for name in rows) == sorted(set(CASE_IDS) - set(PASSING)), (
        rows
    )
    assert "(2 passed or skipped cases not shown; -v shows every case)" in section
    fail = " ".join(rows["gate::fail-tools"])
    assert fail.startswith("sync failed FAIL 0.00 1.00 1.00 1.00")
    assert "tools: missing: lookup; unexpected: search" in fail
    assert rows["gate::fail-retr"][:4] == ["storage", "failed", "1.00", "FAIL"]
    assert rows["gate::xf"][:2] == ["chitchat", "xfailed"]
    assert rows["gate::stale-me"][:2] == ["sync", "stale"]
    assert rows["gate::missing-me"][:2] == ["billing", "missing"]


def test_verbose_lists_every_case(template: Project) -> None:
    section = summary_section(template.run("-v"))
    rows = case_rows(section)
    assert sorted(name.split("::")[1] for name in rows) == sorted(CASE_IDS), rows
    assert rows["gate::pass1"][:6] == ["storage", "passed", "1.00", "1.00", "1.00", "1.00"]
    assert not any("not shown" in line for line in section)


@pytest.mark.parametrize(
    "args", [["-q", "-q"], ["--eval-summary=none"], ["-v", "-v", "--eval-summary=none"]]
)
def test_no_case_rows_with_qq_or_summary_none(template: Project, args: list[str]) -> None:
    section = summary_section(template.run(*args))
    assert case_rows(section) == {}
    assert section[0].split()[:2] == ["stage", "passed"]  # the per-stage totals come first
    assert any(line.split()[:2] == ["category", "passed"] for line in section)
    assert any(line.startswith("recordings:") for line in section)


def test_ini_eval_summary_and_the_option_over_it(copied: Project) -> None:
    copied.write_text(
        "pytest.ini",
        "[pytest]\naddopts = -p no:deepeval -p no:langsmith_plugin\n"
        "asyncio_default_fixture_loop_scope = function\neval_summary = all\n",
    )
    assert len(case_rows(summary_section(copied.run("-q")))) == len(CASE_IDS)
    only_failed = case_rows(summary_section(copied.run("-q", "--eval-summary=failed")))
    assert len(only_failed) == len(CASE_IDS) - len(PASSING)
    copied.write_text("pytest.ini", "[pytest]\neval_summary = some\n")
    bad = copied.run()
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    assert "ini option eval_summary: 'some' is not one of failed, all, none" in "\n".join(
        bad.errlines
    )


def test_summary_rows_name_the_suite_for_cases_that_cannot_load(
    quiet_run: pytest.RunResult,
) -> None:
    """Rows read `suite::id`; the suite is `gate`, its file is cases/checks.json."""
    rows = case_rows(summary_section(quiet_run))
    assert "gate::bad-case" in rows and "gate::bad-two" in rows, sorted(rows)
    assert rows["gate::bad-case"][1] == "error"


def test_summary_has_stage_totals(quiet_run: pytest.RunResult) -> None:
    rows = rows_of(summary_section(quiet_run))
    # (passed, failed, skipped, judge errors, mean score) over the five cases that were scored
    assert rows["tools"] == ["3", "2", "0", "0", "0.600"]
    assert rows["retrieval"] == ["4", "1", "0", "0", "0.800"]
    assert rows["exact_match"] == ["5", "0", "0", "0", "1.000"]
    assert rows["token_f1*"] == ["5", "0", "0", "0", "1.000"]  # report only, marked


def test_summary_has_category_pass_rates(quiet_run: pytest.RunResult) -> None:
    section = summary_section(quiet_run)
    start = next(i for i, line in enumerate(section) if line.split()[:2] == ["category", "passed"])
    table = rows_of(section[start + 1 : section.index("", start)])
    assert table["storage"] == ["1", "2", "50%"]
    assert {"billing", "chitchat", "storage", "sync"} <= set(table)
    assert table["chitchat"][0] == "0"


def test_summary_counts_stale_missing_and_orphans(quiet_run: pytest.RunResult) -> None:
    section = summary_section(quiet_run)
    recordings = next(line for line in section if line.startswith("recordings:"))
    assert "5 replayed" in recordings
    assert "1 stale" in recordings and "1 missing" in recordings and "1 orphaned" in recordings
    assert "  orphan: cassettes/gate/gone.json" in section


def test_a_large_run_lists_the_cases_that_did_not_pass_unless_verbose(project: Project) -> None:
    cases = [make_case(f"c{n:02d}", f"c{n:02d} text", category="bulk") for n in range(55)]
    cases[7]["expected_tools"] = ["lookup"]
    cases[41]["expected_docs"] = ["nowhere"]
    project.write_suite(suite_doc("big", cases=cases))

    live = project.run("--live", "-q")

    live.assert_outcomes(passed=53, failed=2)
    assert sorted(case_rows(summary_section(live))) == ["big::c07", "big::c41"]
    assert rows_of(summary_section(live))["tools"][:2] == ["54", "1"]  # totals still count all

    project.cassette_path("big", "c10").unlink()
    project.edit_suite("cases/big.json", lambda doc: doc["cases"][20].update(input="c20 edited"))
    quiet = project.run("-q")

    assert sorted(case_rows(summary_section(quiet))) == [
        "big::c07",
        "big::c10",
        "big::c20",
        "big::c41",
    ]
    assert "(51 passed or skipped cases not shown; -v shows every case)" in summary_section(quiet)

    verbose = project.run("-v")

    assert len(case_rows(summary_section(verbose))) == 55


def test_exitfirst_stops_at_the_first_failure(copied: Project) -> None:
    result = copied.run("-x", "-q", "cases/checks.json")

    result.assert_outcomes(passed=2, failed=1)
    assert sorted(case_rows(summary_section(result))) == ["gate::fail-tools"]
    assert "(2 passed or skipped cases not shown; -v shows every case)" in (summary_section(result))


def test_last_failed_reruns_only_failures_and_errors(copied: Project) -> None:
    copied.run("-q").assert_outcomes(passed=2, failed=2, xfailed=1, errors=4)

    result = copied.run("--lf", "-q")

    result.assert_outcomes(failed=2, errors=4)  # the passing and xfailed cases do not run
    ids = sorted(name.split("::")[1] for name in case_rows(summary_section(result)))
    assert ids == ["bad-case", "bad-two", "fail-retr", "fail-tools", "missing-me", "stale-me"]


def test_junitxml_carries_stage_scores_as_properties(copied: Project) -> None:
    copied.run("-q", "--junitxml=junit.xml")

    tree = ET.parse(copied.root / "junit.xml")
    cases = {case.get("name"): case for case in tree.iter("testcase")}
    assert {"pass1", "fail-tools", "fail-retr"} <= set(cases), sorted(cases)

    def scores(name: str) -> dict[str, float]:
        return {prop.get("name"): float(prop.get("value")) for prop in cases[name].iter("property")}

    assert scores("pass1") == {
        "evalcases.tools": 1.0,
        "evalcases.retrieval": 1.0,
        "evalcases.exact_match": 1.0,
        "evalcases.token_f1": 1.0,
    }
    assert scores("fail-tools")["evalcases.tools"] == 0.0
    assert cases["fail-tools"].find("failure") is not None
    assert scores("fail-retr")["evalcases.retrieval"] == 0.0


def test_xdist_prints_the_same_summary(template: Project, quiet_run: pytest.RunResult) -> None:
    result = template.run("-q", "-n", "2")

    result.assert_outcomes(passed=2, failed=2, xfailed=1, errors=4)
    assert summary_section(result) == summary_section(quiet_run)


def test_without_cacheprovider_prints_the_same_summary(
    template: Project, quiet_run: pytest.RunResult
) -> None:
    result = template.run("-q", "-p", "no:cacheprovider")

    result.assert_outcomes(passed=2, failed=2, xfailed=1, errors=4)
    assert summary_section(result) == summary_section(quiet_run)


RESULT_READER = """
SEEN = []


def pytest_runtest_logreport(report):
    result = getattr(report, "evalcase", None)
    if result is not None:
        SEEN.append(f"{result['id']}={result['outcome']}")


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line("seen by conftest: " + " ".join(sorted(SEEN)))
"""


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_other_plugins_still_read_the_result_on_the_report(
    copied: Project, xdist: list[str]
) -> None:
    """The plugin takes the result off the report only after the other logreport hooks ran."""
    copied.write_text("conftest.py", RESULT_READER)

    result = copied.run("-q", *xdist)

    seen = next(line for line in result.outlines if line.startswith("seen by conftest: "))
    outcomes = dict(pair.split("=") for pair in seen.split(": ", 1)[1].split())
    assert sorted(outcomes) == sorted(CASE_IDS)
    assert outcomes["fail-tools"] == "failed" and outcomes["stale-me"] == "stale"


def case_table_lines(section: list[str]) -> list[str]:
    """The per-case table's lines (with its legend and the hidden-rows note): up to the
    per-stage totals."""
    end = next(
        i
        for i, line in enumerate(section)
        if line.split()[:2] in (["stage", "passed"], ["stage", "pass"])
    )
    return section[:end]


@pytest.mark.parametrize("columns", ["60", "80"])
def test_the_case_table_fits_a_narrow_terminal_and_xdist_prints_the_same(
    copied: Project, monkeypatch: pytest.MonkeyPatch, columns: str
) -> None:
    monkeypatch.setenv("COLUMNS", columns)

    serial = copied.run("-q")
    parallel = copied.run("-q", "-n", "2")

    table = case_table_lines(summary_section(serial))
    assert max(len(line) for line in table) <= int(columns), "\n".join(table)
    assert any(line.startswith("stages: ") for line in table)  # abbreviated, with a legend
    assert sum(line.startswith("gate::fail-tools ") for line in table) >= 1
    assert summary_section(parallel) == summary_section(serial)


def test_the_case_table_keeps_full_stage_names_where_they_fit(quiet_run: pytest.RunResult) -> None:
    table = case_table_lines(summary_section(quiet_run))
    assert not any(line.startswith("stages: ") for line in table)
    assert "tools: missing: lookup; unexpected: search" in "\n".join(table)


def test_group_rows_join_the_terminal_and_report_md(project: Project) -> None:
    cases = [
        make_case("a1", "a1 text", group="user-7"),
        make_case("a2", "a2 text", group="user-7", expected_tools=["lookup"]),
        make_case("b1", "b1 text", group="user-9"),
        make_case("c1", "c1 text"),
    ]
    project.write_suite(suite_doc("grouped", cases=cases))

    result = project.run("--live", "-q", "--eval-report", "out")

    result.assert_outcomes(passed=3, failed=1)
    section = summary_section(result)
    start = next(i for i, line in enumerate(section) if line.startswith("group "))
    assert section[start].split() == [
        "group",
        "passed",
        "scored",
        "pass",
        "rate",
        "95%",
        "CI",
        "mean",
        "tools",
        "mean",
        "retrieval",
        "mean",
        "exact_match",
    ]
    # A group's row has its interval and stage means; the ungrouped case has no row (as in
    # report.md's groups).
    assert [line.split() for line in section[start + 1 : start + 4]] == [
        ["user-7", "1", "2", "50%", "9%-91%", "0.500", "1.000", "1.000"],
        ["user-9", "1", "1", "100%", "21%-100%", "1.000", "1.000", "1.000"],
        [],
    ]
    report = (project.root / "out" / "report.md").read_text()
    assert "### Groups" in report
    assert "| user-7 | 2 | 1 | 1 | 50.0% |" in report

    project.edit_suite(
        "cases/grouped.json",  # a group is in no key: nothing goes stale
        lambda doc: [case.pop("group", None) for case in doc["cases"]],
    )
    plain = project.run("-q", "--eval-report", "out")
    plain.assert_outcomes(passed=3, failed=1)
    assert not any(line.startswith("group ") for line in summary_section(plain))
    assert "### Groups" not in (project.root / "out" / "report.md").read_text()
