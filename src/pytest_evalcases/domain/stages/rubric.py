"""`rubric`: a judged stage graded item by item against the case's `rubric`.

The judge records a grade for each item (`details.items`): on the binary scale (the default)
whether the answer meets it (`met`), on the suite's half scale (`"rubric": {"scale": "half"}`,
BEAM's 0 / 0.5 / 1) a `grade` of 0, 0.5 (partly met) or 1. The score is the weighted mean of
the grades, computed here with the case's weights, so a changed weight needs no new verdict (the
item texts key it; the scale keys it too). The reason names the items not fully met.
"""

from __future__ import annotations

from typing import Any

from ...core.repeats import later_repeats, repeats_of
from ...core.schema import Case
from ...core.suite_schema import Suite
from .base import Stage, StageResult
from .judged import JUDGE_READS, mean_of_repeats, unusable_verdict
from .registry import register

MAX_LISTED_CHARS = 80  # an item longer than this is cut in the reason (not in details)
HALF_GRADES = (0.0, 0.5, 1.0)


class OffScale(ValueError):
    """A recorded item grade that is not 0, 0.5 or 1 (a hand-edited cassette)."""


def item_grades(case: Case, verdict: dict[str, Any]) -> list[float] | None:
    """The grade of each of the case's items, by the verdict (1.0 / 0.0 for a binary `met`);
    None when the verdict's items are not the case's (then its own score stands). Raises
    OffScale for a recorded `grade` off the half scale."""
    items = (verdict.get("details") or {}).get("items")
    rubric = case.rubric or ()
    if not isinstance(items, list) or len(items) != len(rubric):
        return None
    grades = []
    for (text, _), graded in zip(rubric, items, strict=True):
        if not isinstance(graded, dict) or graded.get("item") != text:
            return None
        if "grade" not in graded:
            grades.append(1.0 if graded.get("met") else 0.0)
            continue
        grade = graded["grade"]
        if isinstance(grade, bool) or grade not in HALF_GRADES:
            raise OffScale(f"rubric item {_short(text)!r} has grade {grade!r}, not 0, 0.5 or 1")
        grades.append(float(grade))
    return grades


def weighted_grade(rubric: tuple[tuple[str, float], ...], grades: list[float]) -> float:
    """The weighted mean of the items' grades: sum(weight * grade) / sum(weight)."""
    total = sum(weight for _, weight in rubric)
    return sum(weight * grade for (_, weight), grade in zip(rubric, grades, strict=True)) / total


def _short(text: str) -> str:
    return text if len(text) <= MAX_LISTED_CHARS else text[: MAX_LISTED_CHARS - 3] + "..."


def score_rubric(case: Case, trace: dict[str, Any], suite: Suite, verdict: Any) -> StageResult:
    unusable = unusable_verdict(RUBRIC, case, trace, verdict)
    if unusable is not None:
        return unusable
    if later_repeats(verdict):  # --eval-judge-repeats: each repeat graded alike, then combined
        return mean_of_repeats([_score_one(case, suite, v) for v in repeats_of(verdict)], suite)
    return _score_one(case, suite, verdict)


def _score_one(case: Case, suite: Suite, verdict: dict[str, Any]) -> StageResult:
    if verdict.get("error") or verdict.get("score") is None:
        why = verdict.get("error") or "a repeat of this verdict has no score"
        return StageResult(None, False, f"judge error: {why}", judge_error=True)
    rubric = case.rubric or ()
    try:
        grades = item_grades(case, verdict)
    except OffScale as exc:
        return StageResult(
            None, False, f"judge error: {exc}; re-judge with --live-judges", judge_error=True
        )
    threshold = suite.threshold_for("rubric")
    if grades is None:
        value = float(verdict.get("score", 0.0))
        passed = value >= threshold
        reason = f"{value:.2f} {'>=' if passed else '<'} {threshold:.2f}"
        return StageResult(value, passed, reason, threshold, label=verdict.get("label"))
    value = weighted_grade(rubric, grades)
    passed = value >= threshold
    reason = f"{value:.2f} {'>=' if passed else '<'} {threshold:.2f}"
    met = sum(grade == 1.0 for grade in grades)
    partly = sum(grade == 0.5 for grade in grades)
    texts = [text for text, _ in rubric]
    if suite.rubric_scale == "half" or partly:
        reason += f" ({met} of {len(rubric)} items met, {partly} partly)"
        shown = [
            f"{'0.5 partly' if grade == 0.5 else '0 unmet'}: {_short(text)}"
            for text, grade in zip(texts, grades, strict=True)
            if grade < 1.0
        ]
        if shown:
            reason += "; " + "; ".join(shown)
        metrics = {"items": len(rubric), "met": met, "partly": partly}
    else:
        reason += f" ({met} of {len(rubric)} items met)"
        unmet = [text for text, grade in zip(texts, grades, strict=True) if grade < 1.0]
        if unmet:
            reason += "; unmet: " + "; ".join(_short(text) for text in unmet)
        metrics = {"items": len(rubric), "met": met}
    return StageResult(
        value, passed, reason, threshold, label=verdict.get("label"), metrics=metrics
    )


RUBRIC = register(Stage("rubric", score_rubric, judged=True, reads=JUDGE_READS["rubric"]))
