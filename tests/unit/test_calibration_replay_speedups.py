"""The calibration replay's speed work (issue 31: 5,000 calibration items replay as fast as 5,000
eval cases) keeps every check: the pass rules shared by a suite's cases
the kappa interval of a perfect table without numpy, and the terminal's calibration section
from the fields the summary keeps of each case (the locations and the stale messages
end to end: tests/integration/test_calibration_replay_speedups.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from pytest_evalcases.core.agreement import (
    Confusion,
    _draw,
    _kappas,
    _percentile_interval,
    kappa_interval,
)
from pytest_evalcases.core.stats import DEFAULT_RESAMPLES, DEFAULT_SEED
from pytest_evalcases.domain.calibration_agreement import (
    calibration_report,
    terminal_agreement_lines,
)
from pytest_evalcases.domain.calibration_schema import CalibrationCase, CalibrationSuite
from pytest_evalcases.domain.calibration_scoring import (
    CAUGHT,
    FALSE_ALARM,
    MISSED,
    OK,
    RIGHT,
    terminal_lines,
)
from pytest_evalcases.domain.context import CalibrationTarget
from pytest_evalcases.report.terminal import ROWS_ALL, ROWS_FAILED, RunSummary


# ---- one pass rule per (stage, options) ----------------------------------------------------
def _suite(**fields: Any) -> CalibrationSuite:
    return CalibrationSuite.model_validate(
        {"name": "cal", "kind": "calibration", "cases": [], **fields}
    )


def _case(case_id: str, stage: str = "correctness", **fields: Any) -> CalibrationCase:
    raw = {"id": case_id, "stage": stage, "answer": "a", "reference": "a", "expect": "pass"}
    return CalibrationCase.model_validate({**raw, **fields}, context={"declared": {}})


def test_cases_with_the_same_stage_and_options_share_the_rule_a_target_alone_would_make() -> None:
    suite = _suite(threshold=0.4, correctness={"correctness_criteria": "the suite's"})
    cases = [
        _case("a"),
        _case("b"),
        _case("own-threshold", correctness={"threshold": 0.9}),
        _case("own-criteria", correctness={"correctness_criteria": "the case's"}),
        _case("faithful", stage="faithfulness", context=["a"]),
        _case("strict", stage="faithfulness", context=["a"], faithfulness={"strict": True}),
    ]
    rules: dict[Any, Any] = {}
    shared = [CalibrationTarget.of(suite, case, rules) for case in cases]
    alone = [CalibrationTarget.of(suite, case) for case in cases]
    for one, other in zip(shared, alone, strict=True):
        assert one.rule.model_dump() == other.rule.model_dump()
        assert one.options == other.options
        assert one.as_case == other.as_case
    assert shared[0].rule is shared[1].rule  # made once for both
    assert len({id(target.rule) for target in shared}) == 5 == len(rules)
    assert shared[2].rule.threshold == 0.9 and shared[0].rule.threshold == 0.4
    assert shared[3].options["correctness_criteria"] == "the case's"
    assert shared[0].options["correctness_criteria"] == "the suite's"
    assert shared[5].options["strict"] is True and shared[4].options["strict"] is False


def test_a_declared_stage_keeps_its_own_rule_beside_a_built_in_one() -> None:
    suite = _suite(
        judged_stages={"tone": {"criteria": "Is the answer polite?", "reads": ["answer"]}}
    )
    rules: dict[Any, Any] = {}
    declared = CalibrationCase.model_validate(
        {"id": "t", "stage": "tone", "answer": "hi", "expect": "pass"},
        context={"declared": suite.judged_stages},
    )
    tone = CalibrationTarget.of(suite, declared, rules)
    built_in = CalibrationTarget.of(suite, _case("c"), rules)
    assert list(tone.rule.judged_stages) == ["tone"] and not built_in.rule.judged_stages
    assert tone.options != built_in.options  # the declared stage's spec rides in the options


# ---- the kappa interval of a perfect table ---------------------------------------------------
def _drawn(c: Confusion, resamples: int, level: float = 0.95) -> tuple[float, float] | None:
    """The bootstrap itself, numpy's draw, for the shortcut to be held to."""
    cells = _draw((c.tp, c.fn, c.fp, c.tn), resamples, DEFAULT_SEED)
    return _percentile_interval(_kappas(cells), level)


@pytest.mark.parametrize(
    "table",
    [
        Confusion(tp=1, tn=1),
        Confusion(tp=1, tn=999),
        Confusion(tp=3, tn=2),
        Confusion(tp=2500, tn=2500),
    ],
)
@pytest.mark.parametrize("resamples", [100, DEFAULT_RESAMPLES])
def test_a_perfect_tables_interval_is_the_bootstraps_own(table: Confusion, resamples: int) -> None:
    for level in (0.95, 0.99):
        assert kappa_interval(table, resamples=resamples, level=level) == _drawn(
            table, resamples, level
        )
        assert kappa_interval(table, resamples=resamples, level=level) == (1.0, 1.0)


def test_the_shortcut_leaves_every_other_table_and_its_checks_to_the_bootstrap() -> None:
    near = Confusion(tp=2499, fn=1, tn=2500)
    assert kappa_interval(near) == _drawn(near, DEFAULT_RESAMPLES) != (1.0, 1.0)
    assert kappa_interval(Confusion(tp=5)) is None  # kappa undefined: one class only
    with pytest.raises(ValueError, match="resamples must be >= 1"):
        kappa_interval(Confusion(tp=5, tn=5), resamples=0)


def test_a_perfect_tables_interval_does_not_import_numpy() -> None:
    code = (
        "import sys\n"
        "from pytest_evalcases.core.agreement import Confusion, kappa_interval\n"
        "assert kappa_interval(Confusion(tp=40, tn=60)) == (1.0, 1.0)\n"
        "print('numpy' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ)
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


# ---- the terminal summary keeps a calibration case's section fields only ------------------
def _result(index: int, expect: str, score: float, category: str | None) -> dict[str, Any]:
    """A calibration case's result as calibration_items.result_for makes it."""
    says_fail = score < 0.5
    right = says_fail == (expect == "fail")
    if expect == "fail":
        status = CAUGHT if right else MISSED
    else:
        status = OK if right else FALSE_ALARM
    return {
        "nodeid": f"cases/cal.json::c{index}",
        "suite": "cal",
        "id": f"c{index}",
        "file": "cases/cal.json",
        "index": index,
        "category": None,
        "group": None,
        "kind": "calibration",
        "outcome": "passed" if right else "failed",
        "first_failure": None if right else {"stage": "correctness", "reason": "wrong side"},
        "stages": {},
        "recording": {"status": "replayed", "recorded_at": None, "note": "", "judges": ["lexical"]},
        "calibration": {
            "stage": "correctness",
            "judge": "lexical",
            "expect": expect,
            "defect": "planted" if expect == "fail" else None,
            "scores": [score],
            "labels": [None],
            "status": status,
            "spread": 0.0,
            "category": category,
            "threshold": 0.5,
            "ungraded": False,
            "reason": f"reason {index}",
        },
    }


@pytest.mark.parametrize("rows", [ROWS_FAILED, ROWS_ALL])
def test_the_calibration_section_reads_the_same_from_the_kept_fields(rows: str) -> None:
    results = [
        _result(i, "fail" if i % 3 else "pass", score, f"cat{i % 2}")
        for i, score in enumerate([0.0, 0.9, 0.2, 1.0, 0.4, 0.1, 0.7, 0.0, 0.3, 0.8, 0.6, 0.0])
    ]
    summary = RunSummary(rows=rows)
    for result in reversed(results):  # the section orders them by file, index and id
        summary.add(result)
    section = calibration_report(json.loads(json.dumps(results)))  # the whole results
    assert section is not None
    shown, hidden = section, 0
    if rows == ROWS_FAILED:
        wrong = [case for case in section["cases"] if case["status"] not in RIGHT]
        shown, hidden = {**section, "cases": wrong}, len(section["cases"]) - len(wrong)
    expected = [*terminal_lines(shown, None, hidden), *terminal_agreement_lines(section)]
    assert summary.calibration_lines() == expected
    assert "    cal::c1: people fail, judge pass [0.90]: reason 1" in expected, expected
