"""Repeated verdicts (issue 10 §2): `--eval-judge-repeats N`, unstable verdicts, and the baseline
gate that keeps their flips out.

The end-to-end tests record a small suite with the OpenAI judge against the loopback server
(tests/judge_server.py), scripted with `answer_in_turn` to answer the same question differently
on its repeats, then replay it with no judge at all.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from evalhelpers import (
    Project,
    assert_not_aborted,
    error_block,
    make_case,
    output,
    run_live_openai,
    run_pytest_env,
    suite_doc,
    summary_section,
)
from judge_server import JudgeServer, judge_server_fixture

from pytest_evalcases.core.schema import Case, Suite
from pytest_evalcases.domain.stages.registry import STAGES
from pytest_evalcases.domain.verdicts import repeats_problem
from pytest_evalcases.report.aggregate import aggregate
from pytest_evalcases.report.baseline import compare, render_baseline_terminal
from pytest_evalcases.report.markdown import render_markdown
from pytest_evalcases.report.terminal import RunSummary

judge_server = judge_server_fixture()


# ---- scoring a verdict with repeats --------------------------------------------------------
def _suite(**fields: Any) -> Suite:
    return Suite(name="s", stages=["faithfulness", "answer_accuracy"], cases=[], **fields)


def _verdict(*scores: float, labels: list[str] | None = None) -> dict[str, Any]:
    parts = [
        {"score": s, "label": (labels or [None] * len(scores))[i], "key": {"n": str(i)}}
        for i, s in enumerate(scores)
    ]
    return {**parts[0], "later_repeats": parts[1:]}


CASE = Case(id="c", input="q", reference="r")
TRACE = {"answer": "a", "context": ["x"]}


def test_repeats_score_their_mean_and_pass_only_when_every_repeat_passes() -> None:
    result = STAGES["faithfulness"].score(CASE, TRACE, _suite(), _verdict(0.6, 0.8, 1.0))
    assert result.score == pytest.approx(0.8)
    assert result.passed is True and result.unstable is False
    assert result.repeat_scores == [0.6, 0.8, 1.0]
    assert result.reason == "0.80 >= 0.50 over 3 repeats [0.60, 0.80, 1.00]"
    below = STAGES["faithfulness"].score(CASE, TRACE, _suite(), _verdict(0.1, 0.2, 0.3))
    assert (below.passed, below.unstable) == (False, False)


def test_repeats_on_both_sides_are_unstable_and_the_suite_decides() -> None:
    verdict = _verdict(0.0, 1.0, 1.0)
    failing = STAGES["faithfulness"].score(CASE, TRACE, _suite(), verdict)
    assert failing.unstable is True and failing.passed is False  # "unstable": "fail" (default)
    assert failing.score == pytest.approx(2 / 3)
    assert failing.reason.startswith("UNSTABLE [0.00, 1.00, 1.00]")
    passing = STAGES["faithfulness"].score(CASE, TRACE, _suite(unstable="pass"), verdict)
    assert passing.unstable is True and passing.passed is True
    assert failing.to_dict(True)["repeat_scores"] == [0.0, 1.0, 1.0]


def test_labelled_repeats_are_unstable_when_their_labels_disagree() -> None:
    verdict = _verdict(0.0, 1.0, 1.0, labels=["WRONG", "CORRECT", "CORRECT"])
    result = STAGES["answer_accuracy"].score(CASE, TRACE, _suite(), verdict)
    assert result.unstable is True and result.passed is False and result.label is None
    same = _verdict(1.0, 1.0, labels=["CORRECT", "CORRECT"])
    stable = STAGES["answer_accuracy"].score(CASE, TRACE, _suite(), same)
    assert (stable.passed, stable.unstable, stable.label) == (True, False, "CORRECT")


def test_one_verdict_scores_as_before_and_its_result_has_no_repeat_fields() -> None:
    result = STAGES["faithfulness"].score(CASE, TRACE, _suite(), {"score": 0.7, "key": {}})
    assert result.repeat_scores is None and result.unstable is False
    assert "repeat_scores" not in result.to_dict(True) and "unstable" not in result.to_dict(True)


def test_repeats_problem_names_a_changed_count_and_a_repeat_under_another_key() -> None:
    key = {"judge": "j"}
    verdict = {
        "key": key,
        "score": 1.0,
        "later_repeats": [{"key": {**key, "repeat": "2"}, "score": 1.0}],
    }
    assert repeats_problem(verdict, key, None) is None
    assert repeats_problem(verdict, key, 2) is None
    assert repeats_problem(verdict, key, 3) == "judge repeats changed (2 -> 3)"
    assert repeats_problem({"key": key, "score": 1.0}, key, None) is None
    assert repeats_problem({"key": key, "score": 1.0}, key, 2) == "judge repeats changed (1 -> 2)"
    verdict["later_repeats"][0]["key"] = {**key, "repeat": "9"}
    assert repeats_problem(verdict, key, 2) == "repeat 2 was recorded under another key"


# ---- the terminal summary ------------------------------------------------------------------
def _result(case_id: str, outcome: str, **stages: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeid": f"cases/s.json::{case_id}",
        "suite": "s",
        "id": case_id,
        "file": "cases/s.json",
        "index": 0,
        "category": None,
        "group": None,
        "outcome": outcome,
        "first_failure": None,
        "stages": stages,
        "recording": {},
    }


def _stage(
    score: float, passed: bool, unstable: bool | None = None, gating: bool = True
) -> dict[str, Any]:
    stage = {
        "score": score,
        "passed": passed,
        "gating": gating,
        "threshold": 0.5,
        "reason": "",
        "label": None,
        "metrics": {},
        "judge_error": False,
    }
    if unstable is not None:
        stage.update(unstable=unstable, repeat_scores=[0.0, 1.0])
    return stage


def test_the_summary_shows_unstable_cells_and_an_unstable_column_only_with_repeats() -> None:
    summary = RunSummary(rows="all")
    summary.add(_result("a", "failed", faithfulness=_stage(0.5, False, unstable=True)))
    summary.add(_result("b", "passed", faithfulness=_stage(1.0, True, unstable=False)))
    lines = summary.lines(orphans=[])
    assert any("UNSTABLE 0.50" in line for line in lines)
    header = next(line for line in lines if line.startswith("stage "))
    assert header.split() == [
        "stage",
        "passed",
        "failed",
        "skipped",
        "judge",
        "errors",
        "unstable",
        "mean",
        "score",
    ]
    row = next(line for line in lines if line.startswith("faithfulness "))
    assert row.split()[:6] == ["faithfulness", "1", "1", "0", "0", "1"]
    plain = RunSummary(rows="all")
    plain.add(_result("a", "passed", faithfulness=_stage(1.0, True)))
    assert not any("unstable" in line for line in plain.lines(orphans=[]))


# ---- the baseline gate ---------------------------------------------------------------------
def _doc(*results: dict[str, Any]) -> dict[str, Any]:
    return aggregate(list(results), run={"mode": "replay"})


def test_a_flip_of_an_unstable_verdict_is_not_a_regression() -> None:
    baseline = _doc(
        _result("a", "xpassed", faithfulness=_stage(1.0, True)),
        _result("b", "passed", faithfulness=_stage(1.0, True)),
    )
    current = _doc(
        _result("a", "xfailed", faithfulness=_stage(0.67, False, unstable=True)),
        _result("b", "failed", faithfulness=_stage(0.2, False, unstable=False)),
    )
    cmp = compare(current, baseline)
    assert [r["id"] for r in cmp["unstable"]] == ["a"]
    assert [r["id"] for r in cmp["regressions"]] == ["b"]  # a stable failure still counts
    assert cmp["failed"] is True
    lines = render_baseline_terminal(cmp)
    assert "unstable (not counted):" in lines
    assert any(line.startswith("  s::a: xpassed -> xfailed") for line in lines)
    assert "1 unstable (not counted)" in lines[0]
    assert "Unstable (not counted)" in render_markdown({**current, "baseline": cmp})


def test_the_gate_passes_when_unstable_verdicts_alone_flipped() -> None:
    baseline = _doc(_result("a", "xpassed", faithfulness=_stage(1.0, True)))
    current = _doc(_result("a", "xfailed", faithfulness=_stage(0.67, False, unstable=True)))
    cmp = compare(current, baseline)
    assert cmp["regressions"] == [] and cmp["failed"] is False
    # ... and the unstable score is left out of the paired stage means: no stage drop either
    assert cmp["stage_deltas"]["faithfulness"]["cases"] == 0


def test_a_case_failing_at_a_stable_stage_too_is_a_regression() -> None:
    baseline = _doc(
        _result("a", "passed", faithfulness=_stage(1.0, True), answer_accuracy=_stage(1.0, True))
    )
    current = _doc(
        _result(
            "a",
            "failed",
            faithfulness=_stage(0.5, False, unstable=True),
            answer_accuracy=_stage(0.0, False),
        )
    )
    cmp = compare(current, baseline)
    assert [r["id"] for r in cmp["regressions"]] == ["a"] and cmp["unstable"] == []


def test_a_verdict_unstable_in_the_baseline_explains_the_flip_too() -> None:
    baseline = _doc(_result("a", "passed", faithfulness=_stage(0.67, True, unstable=True)))
    current = _doc(_result("a", "failed", faithfulness=_stage(0.0, False)))
    cmp = compare(current, baseline)
    assert cmp["regressions"] == [] and [r["id"] for r in cmp["unstable"]] == ["a"]


# ---- end to end ----------------------------------------------------------------------------
def _accuracy_suite(**fields: Any) -> dict[str, Any]:
    cases = [make_case("alpha", "alpha beta"), make_case("gamma", "gamma delta")]
    return suite_doc(cases=cases, stages=["tools", "answer_accuracy"], **fields)


def _replay(project: Project, *args: str) -> pytest.RunResult:
    result, _ = run_pytest_env(project.root, "-p", "no:cacheprovider", *args)
    return result


def test_judge_repeats_record_every_repeat_and_replay_an_unstable_verdict(
    project: Project, judge_server: JudgeServer
) -> None:
    project.write_suite(_accuracy_suite())
    judge_server.answer_in_turn("alpha beta", True, False, False)  # WRONG once, then CORRECT
    result = run_live_openai(project, judge_server.base_url, "--eval-judge-repeats", "3")
    assert_not_aborted(result)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, output(result)
    accuracy = [r for r in judge_server.requests if r.kind == "accuracy"]
    assert len(accuracy) == 6  # 3 repeats x 2 cases

    verdict = project.cassette("suite", "alpha")["verdicts"]["answer_accuracy"]
    repeats = [verdict, *verdict["later_repeats"]]
    assert sorted(r["label"] for r in repeats) == ["CORRECT", "CORRECT", "WRONG"]
    assert "repeat" not in verdict["key"]  # repeat 1 keeps the key of an ordinary verdict
    assert [r["key"]["repeat"] for r in repeats[1:]] == ["2", "3"]
    assert {k: v for k, v in repeats[2]["key"].items() if k != "repeat"} == verdict["key"]
    stable = project.cassette("suite", "gamma")["verdicts"]["answer_accuracy"]
    assert len(stable["later_repeats"]) == 2

    replayed = _replay(project)  # no judge, no flag: the cassette's three repeats
    assert replayed.ret == pytest.ExitCode.TESTS_FAILED, output(replayed)
    section = summary_section(replayed)
    alpha = next(line for line in section if line.startswith("suite::alpha"))
    assert "UNSTABLE 0.67" in alpha and "failed" in alpha
    header = next(line for line in section if line.startswith("stage "))
    assert "unstable" in header.split()
    row = next(line for line in section if line.startswith("answer_accuracy "))
    assert row.split()[1:6] == ["1", "1", "0", "0", "1"]  # passed failed skipped errors unstable
    block = error_block(replayed, "alpha")
    assert "answer_accuracy" in block and "UNSTABLE" in block
    assert "the repeats disagree (counted as a failure" in block

    project.edit_suite("cases/suite.json", lambda doc: doc.update(unstable="pass"))
    passing = _replay(project)
    assert passing.ret == pytest.ExitCode.OK, output(passing)
    assert "UNSTABLE 0.67" in "\n".join(summary_section(_replay(project, "-v")))


def test_replay_with_another_repeat_count_is_stale_and_live_stale_rejudges_it(
    project: Project, judge_server: JudgeServer
) -> None:
    project.write_suite(_accuracy_suite())
    assert run_live_openai(project, judge_server.base_url, "--eval-judge-repeats", "2").ret == 0
    stale = _replay(project, "--eval-judge-repeats", "3")
    assert stale.ret == pytest.ExitCode.TESTS_FAILED
    assert (
        "stale recording (verdict answer_accuracy): judge repeats changed (2 -> 3); "
        "re-judge with --live-judges"
    ) in output(stale)
    project.edit_suite("cases/suite.json", lambda doc: doc.update(judge_repeats=3))
    assert "judge repeats changed (2 -> 3)" in output(_replay(project))  # the suite's field too

    before = len(judge_server.requests)
    result, _ = run_pytest_env(
        project.root,
        "-p",
        "no:cacheprovider",
        "--live-stale",
        "--eval-judge",
        "openai:gpt-4o-mini",
        env={"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": judge_server.base_url},
    )
    assert result.ret == 0, output(result)
    assert len(judge_server.requests) - before == 6  # both verdicts judged again, 3 times each
    verdict = project.cassette("suite", "alpha")["verdicts"]["answer_accuracy"]
    assert len(verdict["later_repeats"]) == 2
    assert _replay(project).ret == 0


def test_cassettes_recorded_before_repeats_replay_unchanged(tmp_path: Path) -> None:
    """The demo's cassettes predate repeated verdicts: a default run replays them as before,
    and no stage result gains a repeat field."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    cassette = json.loads((root / "cassettes" / "docs-assistant" / "sync-setup.json").read_text())
    assert not any("later_repeats" in v for v in cassette["verdicts"].values())
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "cases/docs.json",
            "-p",
            "no:cacheprovider",
            "-q",
            f"--basetemp={tmp_path / 'basetemp'}",
            "--eval-report",
            str(tmp_path / "out"),
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "11 passed, 2 xfailed" in result.stdout
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    stages = [stage for case in results["cases"] for stage in case["stages"].values()]
    assert stages and not any("repeat_scores" in s or "unstable" in s for s in stages)
    assert all(entry["unstable"] == 0 for entry in results["stages"].values())


def test_an_unstable_flip_does_not_fail_the_baseline_gate_end_to_end(
    project: Project, judge_server: JudgeServer
) -> None:
    doc = _accuracy_suite()
    doc["cases"][0]["xfail"] = "known to wobble"
    project.write_suite(doc)
    first = run_live_openai(
        project, judge_server.base_url, "--eval-judge-repeats", "3", "--eval-report", "base"
    )
    assert first.ret == 0 and "1 xpassed" in output(first)
    judge_server.answer_in_turn("alpha beta", False, True, False)
    second = run_live_openai(
        project,
        judge_server.base_url,
        "--eval-judge-repeats",
        "3",
        "--eval-report",
        "now",
        "--eval-baseline",
        "base/results.json",
    )
    text = output(second)
    assert second.ret == pytest.ExitCode.OK, text
    assert "1 xfailed" in text
    assert "baseline gate passed: 0 regression(s)" in text
    assert "unstable (not counted):" in text and "suite::alpha: xpassed -> xfailed" in text
    results = json.loads((project.root / "now" / "results.json").read_text())
    assert [r["id"] for r in results["baseline"]["unstable"]] == ["alpha"]
    assert results["stages"]["answer_accuracy"]["unstable"] == 1


def test_bad_repeat_counts_are_usage_errors(project: Project) -> None:
    project.write_suite(_accuracy_suite())
    result = _replay(project, "--eval-judge-repeats", "0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--eval-judge-repeats must be at least 1, not 0" in output(result)
    project.edit_suite("cases/suite.json", lambda doc: doc.update(judge_repeats=0))
    bad = _replay(project)
    assert "judge_repeats: Input should be greater than or equal to 1" in output(bad)


def test_a_rubric_judged_several_times_is_graded_repeat_by_repeat() -> None:
    case = Case(id="c", input="q", rubric=(("names the file", 1.0), ("gives the path", 1.0)))

    def graded(*met: bool) -> dict[str, Any]:
        pairs = zip(case.rubric or (), met, strict=True)
        items = [{"item": text, "met": ok} for (text, _), ok in pairs]
        return {"score": 0.0, "details": {"items": items}, "key": {}}  # score: the case's weights

    verdict = {**graded(True, True), "later_repeats": [graded(True, False), graded(False, False)]}
    suite = Suite(name="s", stages=["rubric"], cases=[])
    result = STAGES["rubric"].score(case, TRACE, suite, verdict)
    assert result.repeat_scores == [1.0, 0.5, 0.0]
    assert result.unstable is True and result.passed is False
    assert result.score == pytest.approx(0.5)
