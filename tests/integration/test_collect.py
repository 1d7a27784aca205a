"""End to end: case files become pytest items with `file::id` node ids, markers from `category`
and `marks`, selection with -m / -k, and the skip and xfail fields (xfail absorbs stage failures
only)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from evalhelpers import (
    Project,
    assert_not_aborted,
    error_block,
    make_case,
    output,
    record_template,
    suite_doc,
    summary_section,
)

VERBOSE_ERROR = re.compile(r"^(\S+::\S+) ERROR +\[ *\d+%\]$")


def collected_ids(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if "::" in line and " " not in line]


def test_node_ids_are_case_file_and_case_id(project: Project) -> None:
    project.write_suite(suite_doc())
    project.write_suite(
        suite_doc("more", cases=[make_case("delta", "delta x")]), file="cases/sub/more.json"
    )
    # JSON files outside the eval_cases folders (data, cassettes) are not suites.
    project.write_text("data/table.json", '{"rows": [1, 2]}')
    project.write_text("cassettes/suite/alpha.json", '{"trace": {"answer": "x"}}')

    result = project.run("--collect-only", "-q")

    assert result.ret == pytest.ExitCode.OK, output(result)
    assert sorted(collected_ids(result)) == [
        "cases/sub/more.json::delta",
        "cases/suite.json::alpha",
        "cases/suite.json::epsilon",
        "cases/suite.json::gamma",
    ]


def test_eval_cases_ini_option_names_the_case_folders(project: Project) -> None:
    project.write_text(
        "pytest.ini",
        "[pytest]\naddopts = -p no:deepeval -p no:langsmith_plugin\n"
        "asyncio_default_fixture_loop_scope = function\n"
        "eval_cases = evals more_evals\n",
    )
    project.write_suite(suite_doc("one", cases=[make_case("a1", "a1 x")]), file="evals/one.json")
    project.write_suite(
        suite_doc("two", cases=[make_case("b1", "b1 x")]), file="more_evals/two.json"
    )
    project.write_suite(suite_doc("ignored"), file="cases/ignored.json")  # not an eval_cases folder

    result = project.run("--collect-only", "-q")

    assert collected_ids(result) == ["evals/one.json::a1", "more_evals/two.json::b1"]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Recorded: alpha (storage; smoke), gamma (sync; smoke, nightly), epsilon (sync)."""
    root = tmp_path_factory.mktemp("collect-template")
    record_template(
        root,
        suite_doc(
            cases=[
                make_case("alpha", "alpha beta", category="storage", marks=["smoke"]),
                make_case("gamma", "gamma delta", category="sync", marks=["smoke", "nightly"]),
                make_case("epsilon", "epsilon zeta", category="sync"),
            ]
        ),
    )
    return root


@pytest.fixture
def recorded(project: Project, template: Path) -> Project:
    project.copy_from(template)
    return project


def test_category_and_marks_are_registered_markers(recorded: Project) -> None:
    by_category = recorded.run("--strict-markers", "-m", "storage", "-v")
    by_category.assert_outcomes(passed=1, deselected=2)
    by_category.stdout.fnmatch_lines(["cases/suite.json::alpha PASSED*"])
    assert "not found in `markers`" not in output(by_category)

    by_marks = recorded.run("--strict-markers", "-m", "smoke and not storage or nightly", "-v")
    by_marks.assert_outcomes(passed=1, deselected=2)
    by_marks.stdout.fnmatch_lines(["cases/suite.json::gamma PASSED*"])


def test_keyword_selects_by_case_id(recorded: Project) -> None:
    result = recorded.run("-k", "gamma or epsilon", "-v")

    result.assert_outcomes(passed=2, deselected=1)
    result.stdout.fnmatch_lines(
        ["cases/suite.json::gamma PASSED*", "cases/suite.json::epsilon PASSED*"]
    )
    rows = [line.split()[0] for line in summary_section(result) if line.startswith("suite::")]
    assert rows == ["suite::gamma", "suite::epsilon"]


def test_skip_field_skips_the_case_with_its_reason(recorded: Project) -> None:
    # Skipping a recorded case, and adding a skipped case that has no recording at all.
    recorded.edit_suite(
        "cases/suite.json",
        lambda doc: (
            doc["cases"][1].update(skip="upstream index is rebuilding"),
            doc["cases"].append(make_case("never-recorded", "omega", skip="not ready yet")),
        ),
    )

    result = recorded.run("-rs", "--eval-summary=all")  # skipped cases get no row by default

    assert_not_aborted(result)
    result.assert_outcomes(passed=2, skipped=2)
    result.stdout.fnmatch_lines(
        [
            "SKIPPED [[]1[]] *upstream index is rebuilding*",
            "SKIPPED [[]1[]] *not ready yet*",
        ]
    )
    rows = {
        line.split()[0]: line.split()[2]
        for line in summary_section(result)
        if line.startswith("suite::")
    }
    assert rows["suite::gamma"] == "skipped"
    assert rows["suite::never-recorded"] == "skipped"


def test_xfail_absorbs_stage_failures_only(project: Project) -> None:
    reason = "router does not know the lookup tool yet"
    cases = [
        make_case("ok", "ok text"),
        make_case("xf-stage", "stage text", expected_tools=["lookup"], xfail=reason),
        make_case("xf-pass", "pass text", xfail="fixed since"),
        make_case("xf-missing", "missing text", xfail="whatever"),
        make_case("xf-stale", "stale text", xfail="whatever"),
        make_case("xf-broken", "broken text", xfail="whatever"),
        make_case("xf-raise", "raise text", xfail="whatever"),
    ]
    project.write_suite(suite_doc(cases=cases))
    recorded = project.run("--live", "-q")
    recorded.assert_outcomes(passed=1, xfailed=1, xpassed=5)

    project.cassette_path("suite", "xf-missing").unlink()
    project.edit_suite("cases/suite.json", lambda doc: doc["cases"][4].update(input="stale text!"))
    project.cassette_path("suite", "xf-broken").write_text("{ not json")

    result = project.run("-rxX", "-k", "not xf-raise")

    result.assert_outcomes(passed=1, xfailed=1, xpassed=1, errors=3, deselected=1)
    result.stdout.fnmatch_lines([f"XFAIL cases/suite.json::xf-stage - {reason}"])
    assert "no recording for suite::xf-missing" in error_block(result, "suite::xf-missing")
    assert "stale recording" in error_block(result, "suite::xf-stale")
    assert "xf-broken.json" in error_block(result, "suite::xf-broken")

    # A system that raises while recording an xfail case is an error too, not an xfail.
    project.steer(**{"raise": ["xf-raise"]})
    live = project.run("--live", "-k", "xf-raise")
    live.assert_outcomes(errors=1, deselected=6)
    assert "system exploded on xf-raise" in error_block(live, "suite::xf-raise")


def test_verbose_lines_show_the_node_ids_of_items_that_error(project: Project) -> None:
    """`pytest -v` prints each item's node id; copying it must select that item again."""
    project.write_suite(
        suite_doc(cases=[make_case("alpha", "alpha beta"), {"id": "bad-case", "input": 5}])
    )
    project.write_text("cases/broken.json", "{ not json")

    result = project.run("--live", "-v")

    result.assert_outcomes(passed=1, errors=2)
    shown = [match.group(1) for match in map(VERBOSE_ERROR.match, result.outlines) if match]
    nodeids = [line.split()[1] for line in result.outlines if line.startswith("ERROR ")]
    assert len(nodeids) == 2 and nodeids[0].startswith("cases/"), result.outlines
    assert sorted(shown) == sorted(nodeids)


def test_case_items_give_the_location_pytest_would_compute(project: Project) -> None:
    """CaseItem works out its file's relative path once per case file: the locations must still
    be exactly pytest's own (reports, --lf and the terminal read them), nested folders too."""
    project.write_suite(suite_doc())
    project.write_suite(
        suite_doc("more", cases=[make_case("delta", "delta x")]), file="cases/sub/more.json"
    )
    project.write_text(
        "location_check.py",
        (
            "import pytest\n"
            "def pytest_collection_finish(session):\n"
            "    for item in session.items:\n"
            "        ours, pytests = item.location, pytest.Item.location.func(item)\n"
            "        assert ours == pytests, (ours, pytests)\n"
            "        print('LOCATION', ours)\n"
        ),
    )

    result = project.run("--collect-only", "-q", "-s", "-p", "location_check")

    assert result.ret == pytest.ExitCode.OK, output(result)
    locations = sorted(line for line in result.outlines if line.startswith("LOCATION "))
    assert locations == [
        "LOCATION ('cases/sub/more.json', 0, 'more::delta')",
        "LOCATION ('cases/suite.json', 0, 'suite::alpha')",
        "LOCATION ('cases/suite.json', 0, 'suite::epsilon')",
        "LOCATION ('cases/suite.json', 0, 'suite::gamma')",
    ]
