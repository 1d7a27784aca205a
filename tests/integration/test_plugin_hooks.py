"""End to end: the plugin's own hooks (hookspecs.py), implemented in a conftest.py:
pytest_evalcases_case_result (in the process that runs the case: xdist workers too),
pytest_evalcases_update_results (results.json alone) and pytest_evalcases_summary_lines. A hook
that raises names itself and its file, fails the run, and every other report is still written."""

from __future__ import annotations

import json

import pytest
from evalhelpers import Project, error_block, output, suite_doc, summary_section

HOOKS = """\
import os

import pytest


def pytest_evalcases_case_result(item, result):
    result["owner"] = "support-team"
    result["ran_in"] = os.environ.get("PYTEST_XDIST_WORKER", "main")
    if result["id"] in BROKEN_CASES:
        raise KeyError(f"no owner for {result['id']}")


def pytest_evalcases_update_results(config, results):
    if BROKEN_UPDATE:
        raise RuntimeError("the dashboard service is down")
    results["team"] = {"name": "support", "cases": len(results["cases"])}


def pytest_evalcases_summary_lines(config, results):
    owners = sorted({case.get("owner", "none") for case in results["cases"]})
    return [f"owners: {', '.join(owners)}", f"cases: {len(results['cases'])}"]
"""


def hooks_project(project: Project, broken_cases: tuple[str, ...] = (), broken_update=False):
    project.write_suite(suite_doc())
    project.run("--live").assert_outcomes(passed=3)
    project.write_text(
        "conftest.py",
        f"BROKEN_CASES = {list(broken_cases)!r}\nBROKEN_UPDATE = {broken_update!r}\n\n" + HOOKS,
    )
    return project


def results_json(project: Project) -> dict:
    return json.loads((project.root / "out" / "results.json").read_text())


def test_each_hook_adds_to_the_results_and_the_summary(project: Project) -> None:
    hooks_project(project)

    result = project.run("--eval-report", "out")

    result.assert_outcomes(passed=3)
    doc = results_json(project)
    assert doc["team"] == {"name": "support", "cases": 3}  # update_results
    assert {case["owner"] for case in doc["cases"]} == {"support-team"}  # case_result
    summary = summary_section(result)
    stage_table = next(i for i, line in enumerate(summary) if line.startswith("stage "))
    assert summary.index("owners: support-team") > stage_table
    assert "cases: 3" in summary
    report_md = (project.root / "out" / "report.md").read_text()
    assert "support-team" not in report_md  # update_results changes results.json alone


def test_the_summary_hook_needs_no_report_option(project: Project) -> None:
    hooks_project(project)

    result = project.run()

    result.assert_outcomes(passed=3)
    assert "owners: support-team" in summary_section(result)
    assert not (project.root / "out").exists()


def test_case_result_runs_in_the_xdist_workers_and_reaches_results_json(
    project: Project,
) -> None:
    hooks_project(project)

    result = project.run("-n", "2", "--eval-report", "out")

    result.assert_outcomes(passed=3)
    ran_in = {case["ran_in"] for case in results_json(project)["cases"]}
    assert ran_in and ran_in <= {"gw0", "gw1"}, ran_in
    assert results_json(project)["team"] == {"name": "support", "cases": 3}
    assert "owners: support-team" in summary_section(result)


def test_a_case_result_hook_error_errors_that_case_and_names_the_hook(project: Project) -> None:
    hooks_project(project, broken_cases=("gamma",))

    result = project.run("--eval-report", "out")

    result.assert_outcomes(passed=2, failed=1)  # an error in the call phase, to pytest
    block = error_block(result, "suite::gamma")
    assert (
        "hook pytest_evalcases_case_result (conftest.py:9) raised KeyError: 'no owner for gamma'; "
        "fix the hook"
    ) in block
    cases = {case["id"]: case for case in results_json(project)["cases"]}
    assert cases["gamma"]["outcome"] == "error" and "owner" not in cases["gamma"]
    assert cases["alpha"]["owner"] == "support-team"
    assert results_json(project)["team"]["cases"] == 3  # the other hooks still ran
    assert (project.root / "out" / "report.md").exists()


def test_an_update_hook_error_keeps_every_report_and_fails_the_run(project: Project) -> None:
    hooks_project(project, broken_update=True)

    result = project.run("--eval-report", "out")

    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=3)
    assert (
        "hook error: hook pytest_evalcases_update_results (conftest.py:16) raised RuntimeError: "
        "the dashboard service is down: results.json holds the results without its changes"
    ) in output(result)
    doc = results_json(project)
    assert "team" not in doc and len(doc["cases"]) == 3
    assert (project.root / "out" / "report.md").exists()
    assert (project.root / "out" / "dashboard.html").exists()
    assert "owners: support-team" in summary_section(result)


def test_a_summary_hook_error_names_the_hook_and_fails_the_run(project: Project) -> None:
    hooks_project(project)
    conftest = project.root / "conftest.py"
    conftest.write_text(conftest.read_text().replace("return [", "return 1 / 0 or ["))

    result = project.run()

    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert (
        "hook error: hook pytest_evalcases_summary_lines (conftest.py:22) raised "
        "ZeroDivisionError: division by zero: its lines are not shown"
    ) in output(result)


def test_a_hook_with_a_wrong_argument_name_is_refused_by_pytest(project: Project) -> None:
    project.write_text(
        "conftest.py", "def pytest_evalcases_case_result(item, results):\n    pass\n"
    )
    project.write_suite(suite_doc())

    result = project.run()

    assert result.ret in (pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR)
    assert "pytest_evalcases_case_result" in output(result) and "results" in output(result)
