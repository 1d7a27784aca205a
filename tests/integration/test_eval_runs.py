"""Repeated system runs (issue 10 §3): `--eval-runs K`, pass^k, pass@k.

A flaky test system (`flakysys.py`) answers wrong on the runs its `flaky.json` plan names,
counting each case's runs in a file of its own; a case passes only when every run passes.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from evalhelpers import (
    Project,
    assert_not_aborted,
    error_block,
    make_case,
    output,
    suite_doc,
    summary_section,
)

FLAKY_SYSTEM = '''\
"""A system whose n-th run of a case answers wrong when flaky.json says so."""
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent


def run(case):
    log = ROOT / f"runs-{case['id']}.log"
    with open(log, "a") as handle:
        handle.write("run\\n")
    turn = len(log.read_text().splitlines())
    plan_file = ROOT / "flaky.json"
    plan = json.loads(plan_file.read_text()).get(case["id"], []) if plan_file.exists() else []
    wrong = bool(plan) and plan[min(turn, len(plan)) - 1]
    text = case["input"]
    return {"answer": "something else" if wrong else text,
            "tool_calls": [{"name": "search", "args": {"query": text}}],
            "retrieved": text.split(), "context": [text]}
'''


def _flaky_project(project: Project, plan: dict[str, list[bool]], **fields: Any) -> None:
    project.write_text("flakysys.py", FLAKY_SYSTEM)
    project.write_text("flaky.json", json.dumps(plan))
    cases = [make_case("alpha", "alpha beta"), make_case("gamma", "gamma delta")]
    project.write_suite(
        suite_doc(cases=cases, system="flakysys:run", stages=["tools", "exact_match"], **fields)
    )


def _runs_of(project: Project, case_id: str) -> int:
    path = project.root / f"runs-{case_id}.log"
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_eval_runs_records_k_runs_and_a_flaky_case_fails_with_2_of_3(project: Project) -> None:
    _flaky_project(project, {"alpha": [False, True, False]})
    recorded = project.run("--live", "--eval-runs", "3", "-p", "no:cacheprovider")
    assert_not_aborted(recorded)
    assert recorded.ret == pytest.ExitCode.TESTS_FAILED
    assert (_runs_of(project, "alpha"), _runs_of(project, "gamma")) == (3, 3)
    doc = project.cassette("suite", "alpha")
    assert len(doc["later_runs"]) == 2
    assert doc["later_runs"][0]["trace"]["answer"] == "something else"
    assert doc["trace"]["answer"] == "alpha beta"

    replayed = project.run("--eval-report", "out", "-p", "no:cacheprovider")  # needs no flag
    assert replayed.ret == pytest.ExitCode.TESTS_FAILED, output(replayed)
    assert (_runs_of(project, "alpha"), _runs_of(project, "gamma")) == (3, 3)  # nothing ran
    row = next(line for line in summary_section(replayed) if line.startswith("suite::alpha"))
    assert "failed 2/3" in row
    block = error_block(replayed, "alpha")
    assert block.startswith(
        "2/3 runs passed (pass^k needs all); run 2: first failing stage: exact_match"
    )

    results = json.loads((project.root / "out" / "results.json").read_text())
    alpha = next(c for c in results["cases"] if c["id"] == "alpha")
    assert alpha["runs"]["passed_runs"] == 2 and alpha["runs"]["k"] == 3
    assert alpha["runs"]["passed"] == [True, False, True]
    assert alpha["runs"]["stages"]["exact_match"] == [True, False, True]
    # The detail is the shown run's (run 2, the failing one): its answer beside its scores.
    assert alpha["runs"]["shown_run"] == 2
    assert alpha["detail"]["answer"] == "something else"
    assert alpha["stages"]["exact_match"]["passed"] is False
    runs = results["runs"]
    # alpha: n=3, c=2; gamma: n=3, c=3
    assert runs["pass_at_k"] == {"1": pytest.approx(5 / 6), "2": 1.0, "3": 1.0}
    assert runs["pass_hat_k"] == {
        "1": pytest.approx(5 / 6),
        "2": pytest.approx(2 / 3),
        "3": pytest.approx(0.5),
    }
    assert runs["stages"]["tools"]["pass_hat_k"]["3"] == 1.0
    assert runs["stages"]["exact_match"]["pass_hat_k"]["3"] == pytest.approx(0.5)
    assert runs["flaky"] == ["suite::alpha"]
    report = (project.root / "out" / "report.md").read_text()
    assert "### Repeated runs (up to 3 a case)" in report
    assert "| suite::alpha | 2/3 | failed |" in report


def test_another_run_count_stales_the_recording_and_live_stale_keeps_the_recorded_one(
    project: Project,
) -> None:
    _flaky_project(project, {})
    assert project.run("--live", "--eval-runs", "3").ret == 0
    stale = project.run("--eval-runs", "2")
    assert "stale recording: runs changed (3 -> 2); re-record with --live" in output(stale)
    kept = project.run("--live-stale")  # no flag: the cassette's three runs are current
    assert kept.ret == 0 and _runs_of(project, "alpha") == 3, output(kept)
    rerun = project.run("--live-stale", "--eval-runs", "2")
    assert rerun.ret == 0 and _runs_of(project, "alpha") == 5, output(rerun)
    assert len(project.cassette("suite", "alpha")["later_runs"]) == 1
    project.edit_suite("cases/suite.json", lambda doc: doc.update(runs=2))
    assert project.run().ret == 0  # the suite's `runs` agrees with the cassette


def test_a_hand_edited_later_run_is_refused(project: Project) -> None:
    _flaky_project(project, {})
    assert project.run("--live", "--eval-runs", "2").ret == 0
    path = project.cassette_path("suite", "alpha")
    doc = json.loads(path.read_text())
    doc["later_runs"][0]["trace"]["answer"] = "edited"
    path.write_text(json.dumps(doc))
    result = project.run()
    assert "recording edited by hand: later runs changed (cassettes/suite/alpha.json)" in output(
        result
    )


def test_x_lets_the_failing_case_finish_its_runs_and_counts_it_once(project: Project) -> None:
    """-x / --maxfail with --eval-runs: the case whose run 1 fails still makes its other runs
    and is recorded; it counts as one failed case, not one per run."""
    _flaky_project(project, {"alpha": [True, True]})
    result = project.run(
        "--live", "--eval-runs", "2", "-x", "--eval-concurrency", "1", "-p", "no:cacheprovider"
    )
    assert_not_aborted(result)
    assert _runs_of(project, "alpha") == 2, output(result)
    assert len(project.cassette("suite", "alpha")["later_runs"]) == 1
    assert _runs_of(project, "gamma") == 0  # not started once -x was reached
    assert "-x reached (1 case failed or errored)" in output(result)

    both = project.run(
        "--live",
        "--eval-runs",
        "2",
        "--maxfail",
        "2",
        "--eval-concurrency",
        "1",
        "-p",
        "no:cacheprovider",
    )
    assert_not_aborted(both)
    assert _runs_of(project, "gamma") == 2, output(both)  # one failed case is not two
