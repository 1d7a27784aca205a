"""`rubric`: a judged stage graded item by item against the case's `rubric`.

The judge records, for each item, whether the answer meets it (`details.items`); the score is
the weighted share of met items, computed here with the case's weights, so a changed weight
needs no new verdict (the item texts key it). The reason names the unmet items.
"""

from __future__ import annotations

from typing import Any

from ...core.repeats import later_repeats, repeats_of
from ...core.schema import Case, Suite
from .base import Stage, StageResult
from .judged import JUDGE_READS, mean_of_repeats, unusable_verdict
from .registry import register

MAX_LISTED_CHARS = 80  # an unmet item longer than this is cut in the reason (not in details)


def met_items(case: Case, verdict: dict[str, Any]) -> list[bool] | None:
    """Whether each of the case's items is met, by the verdict; None when the verdict's items
    are not the case's (then its own score stands)."""
    items = (verdict.get("details") or {}).get("items")
    rubric = case.rubric or ()
    if not isinstance(items, list) or len(items) != len(rubric):
        return None
    met = []
    for (text, _), graded in zip(rubric, items, strict=True):
        if not isinstance(graded, dict) or graded.get("item") != text:
            return None
        met.append(bool(graded.get("met")))
    return met


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
    met = met_items(case, verdict)
    if met is None:
        value, unmet = float(verdict.get("score", 0.0)), []
    else:
        total = sum(weight for _, weight in rubric)
        value = sum(weight for (_, weight), ok in zip(rubric, met, strict=True) if ok) / total
        unmet = [text for (text, _), ok in zip(rubric, met, strict=True) if not ok]
    threshold = suite.threshold_for("rubric")
    passed = value >= threshold
    reason = f"{value:.2f} {'>=' if passed else '<'} {threshold:.2f}"
    if met is not None:
        reason += f" ({len(rubric) - len(unmet)} of {len(rubric)} items met)"
    if unmet:
        reason += "; unmet: " + "; ".join(_short(text) for text in unmet)
    metrics = {"items": len(rubric), "met": len(rubric) - len(unmet)} if met is not None else None
    return StageResult(
        value, passed, reason, threshold, label=verdict.get("label"), metrics=metrics
    )


RUBRIC = register(Stage("rubric", score_rubric, judged=True, reads=JUDGE_READS["rubric"]))
