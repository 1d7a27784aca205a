"""The judges' side of the rubric half scale: the lexical judge's half grades by hand-worked
shares, the verdict's shape and params, and a grade off the scale refused."""

from __future__ import annotations

import asyncio

import pytest

from pytest_evalcases.judges import JudgeError, JudgeInput, make_judge
from pytest_evalcases.judges.base import rubric_grade
from pytest_evalcases.judges.prompts import RubricItemHalfGrade

# Content words (meta words such as "mentions" left out):
#   item 1: return, window, 30, day    item 2: refund, card, bank, week (weight 3)
RUBRIC = (("mentions the 30-day return window", 1.0), ("refunds the card bank in a week", 3.0))
HALF = {"rubric_scale": "half"}


def lexical(answer: str, options=HALF) -> dict:
    data = JudgeInput(input="q", answer=answer, reference=None, rubric=RUBRIC)
    return dict(asyncio.run(make_judge("lexical").evaluate("rubric", data, options)))


@pytest.mark.parametrize(
    ("answer", "grades", "score"),
    [
        # item 1: 4 of 4 -> 1; item 2: 2 of 4 (refund, card), exactly half -> 0.5
        ("Returns within the 30 day window; we refund the card.", [1.0, 0.5], 0.625),
        # item 1: 3 of 4 (no "window") -> 0.5; item 2: 1 of 4 (card) -> 0
        ("Returns are accepted within 30 days to the card.", [0.5, 0.0], 0.125),
        # item 1: 0 of 4 -> 0; item 2: 4 of 4 -> 1
        ("The bank refunds the card within a week.", [0.0, 1.0], 0.75),
    ],
)
def test_lexical_half_grades(answer: str, grades: list[float], score: float) -> None:
    verdict = lexical(answer)
    assert [item["grade"] for item in verdict["details"]["items"]] == grades
    assert verdict["score"] == score  # (1*g1 + 3*g2) / 4
    assert verdict["params"] == {"scale": "half"}
    assert verdict["details"]["scale"] == "half"


def test_lexical_reason_names_each_item_not_fully_met() -> None:
    verdict = lexical("Returns are accepted within 30 days to the card.")
    assert verdict["reason"] == (
        "0.5 of 2 rubric items' credit; 0.5 partly: mentions the 30-day return window; "
        "0 unmet: refunds the card bank in a week"
    )


def test_lexical_binary_scale_unchanged() -> None:
    verdict = lexical("Returns are accepted within 30 days to the card.", options={})
    # 3 of 4 >= 60%: met; 1 of 4: unmet; no params, `met` per item as before
    assert [item["met"] for item in verdict["details"]["items"]] == [True, False]
    assert verdict["score"] == 0.25 and verdict["params"] == {}
    assert "grade" not in verdict["details"]["items"][0]


def test_empty_answer_grades_every_item_zero_on_the_half_scale() -> None:
    verdict = lexical("  ")
    assert [item["grade"] for item in verdict["details"]["items"]] == [0.0, 0.0]
    assert verdict["score"] == 0.0


def test_a_grade_off_the_scale_is_a_judge_error() -> None:
    with pytest.raises(JudgeError, match=r"graded 0.7, not one of 0, 0.5, 1 \(half scale\)"):
        rubric_grade([("an item", 1.0, 0.7, "why")], "half")
    with pytest.raises(JudgeError, match=r"graded 0.5, not one of 0, 1 \(binary scale\)"):
        rubric_grade([("an item", 1.0, 0.5, "why")], "binary")


@pytest.mark.parametrize("grade", [0, 0.5, 1, "0.5", 1.0])
def test_half_reply_schema_takes_the_three_grades(grade) -> None:
    assert RubricItemHalfGrade.model_validate({"reason": "r", "grade": grade}).grade in (0, 0.5, 1)


@pytest.mark.parametrize("grade", [0.7, 2, -0.5, True, "half", None])
def test_half_reply_schema_refuses_any_other_value(grade) -> None:
    with pytest.raises(ValueError, match="grade"):
        RubricItemHalfGrade.model_validate({"reason": "r", "grade": grade})
