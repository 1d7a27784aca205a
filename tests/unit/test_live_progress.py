"""The live recording's progress line (pytest_plugin/live_batch.Progress): cases done, the judges'
running totals, and the projected cost of the whole run from what the finished cases cost."""

from __future__ import annotations

from types import SimpleNamespace

from pytest_evalcases.judges.usage import JudgeStats
from pytest_evalcases.pytest_plugin.live_batch import Progress


def _judge(calls: int, cost: float) -> SimpleNamespace:
    """A judge binding as the progress line reads it: its live judge's counters."""
    stats = JudgeStats(
        calls=calls, prompt_tokens=10 * calls, completion_tokens=calls, cost_usd=cost
    )
    return SimpleNamespace(live=SimpleNamespace(stats=stats))


def test_the_projection_is_the_finished_cases_mean_cost_times_every_case() -> None:
    lines: list[str] = []
    progress = Progress(10, lines.append, is_tty=False)
    # Two cases finished, at $0.01 and $0.03; the judge has also been paid for requests of
    # cases still in flight ($0.09 in all), which the projection leaves out.
    progress.case_done([_judge(4, 0.05)], spent=0.01)
    progress.case_done([_judge(9, 0.09)], spent=0.03)
    assert lines[-1] == (
        "recording: 2/10 cases, 9 judge calls, 0 retries, 99 tokens, $0.0900 (projected $0.20)\n"
    )


def test_no_projection_before_a_case_has_cost_anything_nor_on_the_last_line() -> None:
    lines: list[str] = []
    progress = Progress(2, lines.append, is_tty=False)
    progress.case_done([_judge(1, 0.0)])
    progress.case_done([_judge(2, 0.02)], spent=0.02)
    progress.finish([_judge(2, 0.02)])
    assert lines == [
        "recording: 1/2 cases, 1 judge calls, 0 retries, 11 tokens, $0.0000\n",
        "recording: 2/2 cases, 2 judge calls, 0 retries, 22 tokens, $0.0200\n",
    ]
