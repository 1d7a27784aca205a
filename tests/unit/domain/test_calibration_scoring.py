"""Calibration (issue 10 §1) scored: a case is right only when every repeat is, the judge's
figures against hand-computed values, the terminal section; the demo's calibration suite
covers every judged stage the demo uses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_evalcases.domain.calibration_scoring import (
    calibration_section,
    case_status,
    cohen_kappa,
    judge_figures,
)

ROOT = Path(__file__).resolve().parents[3]


# ---- scoring -------------------------------------------------------------------------------
def test_a_case_is_right_only_when_every_repeat_is() -> None:
    assert case_status("fail", [True, True, True]) == "caught"
    assert case_status("fail", [True, False, True]) == "MISSED"
    assert case_status("pass", [False, False]) == "ok"
    assert case_status("pass", [False, True]) == "false alarm"


def test_judge_figures_against_hand_computed_values() -> None:
    rows = (
        [{"status": "caught", "spread": 0.0}] * 3
        + [{"status": "MISSED", "spread": 0.5}]
        + [{"status": "false alarm", "spread": 1.0}]
        + [{"status": "ok", "spread": 0.0}] * 2
    )
    figures = judge_figures(rows)
    assert (figures["defects"], figures["caught"], figures["missed"]) == (4, 3, 1)
    assert (figures["controls"], figures["false_alarms"], figures["ok"]) == (3, 1, 2)
    assert figures["precision"] == pytest.approx(3 / 4)
    assert figures["recall"] == pytest.approx(3 / 4)
    assert figures["f1"] == pytest.approx(0.75)
    # po = 5/7, pe = (4*4 + 3*3)/49 = 25/49, kappa = (35 - 25)/(49 - 25) = 10/24
    assert figures["kappa"] == pytest.approx(10 / 24)
    assert figures["mean_spread"] == pytest.approx(1.5 / 7)


def test_undefined_figures_are_none_not_a_fake_number() -> None:
    never_fails = judge_figures([{"status": "MISSED", "spread": 0}, {"status": "ok", "spread": 0}])
    assert never_fails["precision"] is None  # the judge never said fail
    assert never_fails["recall"] == 0.0 and never_fails["f1"] == 0.0
    assert cohen_kappa(0, 0, 0, 3) is None  # every case on one side: chance agreement is 1
    assert calibration_section([{"suite": "s", "id": "x", "outcome": "passed"}]) is None


# ---- the demo's calibration suite ----------------------------------------------------------
def test_the_demo_calibration_suite_covers_every_judged_stage_the_demo_uses() -> None:
    demo = json.loads((ROOT / "cases" / "docs.json").read_text())
    calibration = json.loads((ROOT / "cases" / "calibration.json").read_text())
    from pytest_evalcases.domain.stages.registry import STAGES

    used = {s for s in demo["stages"] + demo["report_only"] if STAGES[s].judged}
    covered: dict[str, set[str]] = {}
    for case in calibration["cases"]:
        covered.setdefault(case["stage"], set()).add(case["expect"])
    assert used <= set(covered)
    assert all(covered[stage] == {"fail", "pass"} for stage in used)  # a defect and a control
    assert calibration["judge"] == demo["judge"] == "lexical"


def test_the_terminal_section_fits_the_width_with_short_headers_and_a_legend() -> None:
    from pytest_evalcases.domain.calibration_scoring import terminal_lines

    rows = [
        {
            "suite": "a-long-calibration-suite",
            "id": f"case-{n}",
            "outcome": "passed",
            "calibration": {
                "stage": "context_completeness",
                "judge": "openai:gpt-4o-mini",
                "scores": [1.0, 1.0, 1.0],
                "status": "ok",
                "spread": 0.0,
                "expect": "pass",
            },
        }
        for n in range(3)
    ]
    section = calibration_section(rows)
    assert section is not None
    wide = terminal_lines(section)
    assert "judge openai:gpt-4o-mini:" in wide and not any(" def " in line for line in wide)
    narrow = terminal_lines(section, width=100)
    assert all(len(line) <= 100 for line in narrow), narrow
    assert any(line.startswith("def = defects, ctrl = controls") for line in narrow)
