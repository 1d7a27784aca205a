"""judges/base: a score outside [0, 1] is a judge error, never clamped (issue 14, row 13)."""

from __future__ import annotations

import pytest

from pytest_evalcases.judges import (
    Judge,
    JudgeError,
    JudgeInput,
)
from pytest_evalcases.judges.base import Grade, StageOptions


class _Overeager(Judge):
    async def _grade(self, stage: str, data: JudgeInput, options: StageOptions) -> Grade:
        return Grade(float(data.answer), "sure")


@pytest.mark.asyncio
@pytest.mark.parametrize("score", ["1.5", "-0.1", "nan"])
async def test_no_judge_score_outside_0_1_is_clamped(score: str) -> None:
    judge = _Overeager("overeager")
    with pytest.raises(
        JudgeError,
        match=r"outside \[0, 1\]; a score out of its scale is a judge "
        r"error, never clamped",
    ):
        await judge.evaluate("answer_accuracy", JudgeInput("q?", score, "r"), {})
    within = await judge.evaluate("answer_accuracy", JudgeInput("q?", "1.0", "r"), {})
    assert within["score"] == 1.0
