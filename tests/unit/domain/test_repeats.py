"""Repeated verdicts (issue 10 §2) as a stage scores them: the mean of the repeats, a pass only
when every repeat passes, unstable when they disagree; a rubric graded repeat by repeat."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_evalcases.core.schema import Case
from pytest_evalcases.core.suite_schema import Suite
from pytest_evalcases.domain.stages.registry import STAGES
from pytest_evalcases.domain.verdicts import repeats_problem


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
