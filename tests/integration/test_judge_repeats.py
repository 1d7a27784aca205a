"""Repeated verdicts (issue 10 §2): `--eval-judge-repeats N`, unstable verdicts, and the baseline
gate that keeps their flips out.

End to end: the tests record a small suite with the OpenAI judge against the loopback server
(tests/judge_server.py), scripted with `answer_in_turn` to answer the same question differently
on its repeats, then replay it with no judge at all. The scoring and the reports alone:
tests/unit/domain/test_repeats.py and tests/unit/report/test_repeats.py.
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
    run_pytest_env_in_process,
    suite_doc,
    summary_section,
)
from judge_server import JudgeServer, judge_server_fixture

judge_server = judge_server_fixture()


# ---- end to end ----------------------------------------------------------------------------
def _accuracy_suite(**fields: Any) -> dict[str, Any]:
    cases = [make_case("alpha", "alpha beta"), make_case("gamma", "gamma delta")]
    return suite_doc(cases=cases, stages=["tools", "answer_accuracy"], **fields)


def _replay(project: Project, *args: str) -> pytest.RunResult:
    return run_pytest_env_in_process(project.root, "-p", "no:cacheprovider", *args)


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
    result = run_pytest_env_in_process(
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

    root = Path(__file__).resolve().parents[2]
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
