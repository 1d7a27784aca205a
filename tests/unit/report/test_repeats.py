"""Repeated verdicts (issue 10 §2) in the reports: unstable cells and column in the terminal
summary; the baseline gate keeps the flips of unstable verdicts out of its regressions."""

from __future__ import annotations

from typing import Any

from pytest_evalcases.report.aggregate import aggregate
from pytest_evalcases.report.baseline import compare, render_baseline_terminal
from pytest_evalcases.report.markdown import render_markdown
from pytest_evalcases.report.terminal import RunSummary


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
