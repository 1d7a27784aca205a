"""A live calibration over many items (issue 31 §5): its cases are judged side by side in the
live batch, as eval cases are, with progress, cost so far and the projected cost; --eval-budget
and -x stop it cleanly, keeping what was recorded.

Before, each calibration item judged itself in its own event loop: one judge request at a time,
whatever --eval-concurrency said, no progress line, and no budget.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from evalhelpers import Project, assert_not_aborted, output, run_live_openai
from judge_server import JudgeServer

NUMBERS = ["two", "three", "four", "five", "six", "seven", "eight", "nine"]


@pytest.fixture
def slow_judge() -> Iterator[JudgeServer]:
    """A loopback judge that takes 0.2 s a reply: long enough for requests to overlap."""
    server = JudgeServer(latency=0.2).start()
    try:
        yield server
    finally:
        server.stop()


def _cases(count: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"item-{index}",
            "stage": "answer_accuracy",
            "input": "How many backups are kept?",
            "reference": f"{NUMBERS[index].capitalize()} backups are kept.",
            "answer": f"{NUMBERS[index].capitalize()} backups are kept.",
            "expect": "pass",
        }
        for index in range(count)
    ]


def _suite(project: Project, count: int, **fields: Any) -> None:
    project.write_suite(
        {"name": "cal", "kind": "calibration", "repeats": 1, "cases": _cases(count), **fields}
    )


def _recorded(project: Project, count: int) -> list[str]:
    return [
        f"item-{index}"
        for index in range(count)
        if project.cassette_path("cal", f"item-{index}").exists()
    ]


def test_a_live_calibration_judges_its_cases_side_by_side_and_shows_its_progress(
    project: Project, slow_judge: JudgeServer
) -> None:
    _suite(project, 8)

    result = run_live_openai(project, slow_judge.base_url, "--eval-concurrency", "4")

    assert_not_aborted(result)
    result.assert_outcomes(passed=8)
    assert len(slow_judge.requests) == 8
    assert slow_judge.max_in_flight >= 2, "the calibration cases were judged one at a time"
    assert slow_judge.max_in_flight <= 4  # the judge's gate: --eval-concurrency
    text = output(result)
    # Without a terminal, about ten progress lines; each names the cost so far and, before the
    # last case, what the whole run will cost at this pace.
    assert "recording: 8/8 cases, 8 judge calls, 0 retries" in text, text
    halfway = re.search(r"recording: 4/8 cases, \d+ judge calls, .* \(projected \$([\d.]+)\)", text)
    assert halfway is not None, text
    assert float(halfway.group(1)) > 0
    assert _recorded(project, 8) == [f"item-{index}" for index in range(8)]


def test_eval_budget_stops_a_live_calibration_keeping_what_was_recorded(
    project: Project, slow_judge: JudgeServer
) -> None:
    _suite(project, 5)

    result = run_live_openai(
        project,
        slow_judge.base_url,
        "--eval-budget",
        "0.000001",
        "--eval-concurrency",
        "1",
        "--eval-report",
        "out",
    )

    assert_not_aborted(result)
    result.assert_outcomes(passed=1, skipped=4)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert len(slow_judge.requests) == 1
    assert _recorded(project, 5) == ["item-0"]  # what was judged before the budget is kept
    text = output(result)
    assert "stopped starting cases: --eval-budget $0.000001 reached (recorded cost $0." in text
    results = json.loads((project.root / "out" / "results.json").read_text())
    statuses = {case["id"]: case["recording"]["status"] for case in results["cases"]}
    assert statuses["item-0"] == "recorded"
    assert {statuses[f"item-{index}"] for index in range(1, 5)} == {"not_run"}

    replayed = project.run("-p", "no:cacheprovider")  # what was kept replays; the rest is missing
    replayed.assert_outcomes(passed=1, errors=4)


def test_maxfail_stops_a_live_calibration_at_the_first_wrong_verdict(
    project: Project, slow_judge: JudgeServer
) -> None:
    cases = _cases(4)
    cases[0]["answer"] = "Thirty backups are kept."
    project.write_suite({"name": "cal", "kind": "calibration", "repeats": 1, "cases": cases})
    slow_judge.answer_in_turn("Thirty backups", True)  # it fails this control: a false alarm

    result = run_live_openai(project, slow_judge.base_url, "-x", "--eval-concurrency", "1")

    assert_not_aborted(result)
    result.assert_outcomes(failed=1, skipped=3)
    assert len(slow_judge.requests) == 1
    assert "stopped starting cases: -x reached (1 case failed or errored)" in output(result)


def test_a_skipped_calibration_case_is_not_judged_in_the_batch(
    project: Project, slow_judge: JudgeServer
) -> None:
    cases = _cases(3)
    cases[1]["skip"] = "labels under review"
    project.write_suite({"name": "cal", "kind": "calibration", "repeats": 1, "cases": cases})

    result = run_live_openai(project, slow_judge.base_url)

    result.assert_outcomes(passed=2, skipped=1)
    assert len(slow_judge.requests) == 2
    assert _recorded(project, 3) == ["item-0", "item-2"]
