"""Judged stages: their verdict comes from a judge (recorded with --live, replayed otherwise);
the stage turns the verdict into a pass or a failure with the suite's threshold or label rule."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..schema import Case, Suite
from . import register
from .base import Stage, StageResult, skipped

# Labels that pass a categorical stage (the suite may accept PARTIAL completeness).
_PASSING_LABELS: dict[str, Callable[[Suite], set[str]]] = {
    "context_completeness": lambda s: {"COMPLETE", "PARTIAL"} if s.accept_partial else {"COMPLETE"},
    "answer_accuracy": lambda s: {"CORRECT"},
}


def judged_skip_reason(stage: Stage, case: Case, trace: dict[str, Any]) -> str | None:
    """Why a judged stage does not apply to this case (then no judge is called), or None."""
    if "context" in stage.reads and not trace.get("context"):
        return "no context"
    if case.unanswerable and "context" in stage.reads and "reference" in stage.reads:
        # The reference of an unanswerable case states an absence: there is nothing to retrieve.
        return "unanswerable case"
    if (
        "reference" in stage.reads
        and case.reference is None
        and not (stage.name == "answer_accuracy" and case.unanswerable)
    ):
        return "no reference"
    return None


def _make_scorer(name: str) -> Callable[..., StageResult]:
    def score(case: Case, trace: dict[str, Any], suite: Suite, verdict: Any) -> StageResult:
        reason = judged_skip_reason(STAGE_BY_NAME[name], case, trace)
        if reason:
            return skipped(reason)
        if verdict is None:
            return skipped("no verdict recorded")
        if verdict.get("error"):
            return StageResult(None, False, f"judge error: {verdict['error']}", judge_error=True)
        later = verdict.get("later_repeats")
        if later:
            return _score_repeats(name, suite, [verdict, *later])
        score_value = float(verdict.get("score", 0.0))
        label = verdict.get("label")
        why = verdict.get("reason") or ""
        if name in _PASSING_LABELS:
            accepted = _PASSING_LABELS[name](suite)
            passed = label in accepted
            return StageResult(score_value, passed, f"{label}: {why}".strip(), label=label)
        threshold = suite.threshold_for(name)
        passed = score_value >= threshold
        op = ">=" if passed else "<"
        text = f"{score_value:.2f} {op} {threshold:.2f}" + (f"; {why}" if why else "")
        return StageResult(score_value, passed, text, threshold, label=label)

    return score


def repeat_passes(name: str, suite: Suite, verdict: dict[str, Any]) -> bool:
    """Whether one verdict (one repeat) passes the stage's rule: its label, or the threshold."""
    if name in _PASSING_LABELS:
        return verdict.get("label") in _PASSING_LABELS[name](suite)
    return float(verdict.get("score") or 0.0) >= suite.threshold_for(name)


def scores_text(scores: list[float]) -> str:
    return "[" + ", ".join(f"{score:.2f}" for score in scores) + "]"


def _score_repeats(name: str, suite: Suite, repeats: list[dict[str, Any]]) -> StageResult:
    """A stage judged several times: the score is the repeats' mean; repeats that fall on both
    sides of the rule make the verdict unstable, which passes or fails as the suite chooses."""
    if any(repeat.get("error") or repeat.get("score") is None for repeat in repeats):
        return StageResult(None, False, "judge error: a repeat of this verdict has no score",
                           judge_error=True)
    scores = [float(repeat["score"]) for repeat in repeats]
    passes = {repeat_passes(name, suite, repeat) for repeat in repeats}
    unstable = len(passes) > 1
    passed = suite.unstable == "pass" if unstable else passes == {True}
    mean = sum(scores) / len(scores)
    labels = {repeat.get("label") for repeat in repeats}
    label = labels.pop() if len(labels) == 1 else None
    shown = scores_text(scores)
    if unstable:
        counted = "counted as a pass" if passed else "counted as a failure"
        text = f"UNSTABLE {shown}: the repeats disagree ({counted}, suite \"unstable\")"
    elif name in _PASSING_LABELS:
        text = f"{label or 'mixed labels'} in all {len(scores)} repeats {shown}"
    else:
        threshold = suite.threshold_for(name)
        op = ">=" if passed else "<"
        text = f"{mean:.2f} {op} {threshold:.2f} over {len(scores)} repeats {shown}"
    threshold_value = None if name in _PASSING_LABELS else suite.threshold_for(name)
    return StageResult(mean, passed, text, threshold_value, label=label, repeat_scores=scores,
                       unstable=unstable)


# What each judge reads; case fields among them (`reference`, `unanswerable`) key the verdict.
JUDGE_READS: dict[str, tuple[str, ...]] = {
    "faithfulness": ("answer", "context"),
    "contextual_recall": ("input", "reference", "context"),
    "contextual_precision": ("input", "reference", "context"),
    "contextual_relevancy": ("input", "context"),
    "answer_relevancy": ("input", "answer"),
    "correctness": ("input", "answer", "reference"),
    "context_completeness": ("input", "reference", "context"),
    "answer_accuracy": ("input", "answer", "reference", "unanswerable"),
}

STAGE_BY_NAME: dict[str, Stage] = {
    name: register(Stage(name, _make_scorer(name), judged=True, reads=reads))
    for name, reads in JUDGE_READS.items()
}
