"""Judged stages: their verdict comes from a judge (recorded with --live, replayed otherwise);
the stage turns the verdict into a pass or a failure with the suite's threshold or label rule."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...core.repeats import later_repeats, repeats_of
from ...core.schema import Case
from ...core.suite_schema import Suite
from .base import Stage, StageResult, skipped
from .registry import register

# Labels that pass a categorical stage (the suite may accept PARTIAL completeness).
_PASSING_LABELS: dict[str, Callable[[Suite], set[str]]] = {
    "context_completeness": lambda s: {"COMPLETE", "PARTIAL"} if s.accept_partial else {"COMPLETE"},
    "answer_accuracy": lambda s: {"CORRECT"},
}


def judged_skip_reason(stage: Stage, case: Case, trace: dict[str, Any]) -> str | None:
    """Why a judged stage does not apply to this case (then no judge is called), or None."""
    if "rubric" in stage.reads and not case.rubric:
        return "no rubric"
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


def unusable_verdict(
    stage: Stage, case: Case, trace: dict[str, Any], verdict: Any
) -> StageResult | None:
    """The result of a judged stage that has no verdict to score (it does not apply, none was
    recorded, or the judge failed), or None when `verdict` can be scored."""
    reason = judged_skip_reason(stage, case, trace)
    if reason:
        return skipped(reason)
    if verdict is None:
        return skipped("no verdict recorded")
    if verdict.get("error"):
        return StageResult(None, False, f"judge error: {verdict['error']}", judge_error=True)
    return None


def _make_scorer(name: str) -> Callable[..., StageResult]:
    def score(case: Case, trace: dict[str, Any], suite: Suite, verdict: Any) -> StageResult:
        unusable = unusable_verdict(STAGE_BY_NAME[name], case, trace, verdict)
        if unusable is not None:
            return unusable
        if later_repeats(verdict):  # --eval-judge-repeats: each repeat scored alike, then combined
            repeats = repeats_of(verdict)
            return mean_of_repeats([score_verdict(name, suite, v) for v in repeats], suite)
        return score_verdict(name, suite, verdict)

    return score


def score_verdict(
    name: str, suite: Suite, verdict: dict[str, Any], threshold: float | None = None
) -> StageResult:
    """One verdict (or one repeat of it) under the stage's rule: its labels, or the threshold
    (`threshold`, else the suite's for the stage)."""
    if verdict.get("error") or verdict.get("score") is None:
        why = verdict.get("error") or "a repeat of this verdict has no score"
        return StageResult(None, False, f"judge error: {why}", judge_error=True)
    score_value = float(verdict.get("score", 0.0))
    label = verdict.get("label")
    why = verdict.get("reason") or ""
    if name in _PASSING_LABELS:
        accepted = _PASSING_LABELS[name](suite)
        passed = label in accepted
        return StageResult(score_value, passed, f"{label}: {why}".strip(), label=label)
    threshold = suite.threshold_for(name) if threshold is None else threshold
    passed = score_value >= threshold
    op = ">=" if passed else "<"
    text = f"{score_value:.2f} {op} {threshold:.2f}" + (f"; {why}" if why else "")
    return StageResult(score_value, passed, text, threshold, label=label)


def scores_text(scores: list[float]) -> str:
    return "[" + ", ".join(f"{score:.2f}" for score in scores) + "]"


def mean_of_repeats(results: list[StageResult], suite: Suite) -> StageResult:
    """A stage judged several times, from each repeat's result: the score is their mean;
    repeats on both sides of the stage's rule make the verdict unstable, which passes or fails
    as the suite chooses (`"unstable"`)."""
    failed = next((r for r in results if r.judge_error or r.score is None), None)
    if failed is not None:
        return StageResult(None, False, failed.reason, judge_error=True)
    scores = [float(r.score) for r in results if r.score is not None]
    passes = {bool(r.passed) for r in results}
    unstable = len(passes) > 1
    passed = suite.unstable == "pass" if unstable else passes == {True}
    mean = sum(scores) / len(scores)
    labels = {r.label for r in results}
    label = labels.pop() if len(labels) == 1 else None
    shown, threshold = scores_text(scores), results[0].threshold
    if unstable:
        counted = "counted as a pass" if passed else "counted as a failure"
        text = f'UNSTABLE {shown}: the repeats disagree ({counted}, suite "unstable")'
    elif threshold is None:  # a labelled stage
        text = f"{label or 'mixed labels'} in all {len(scores)} repeats {shown}"
    else:
        op = ">=" if passed else "<"
        text = f"{mean:.2f} {op} {threshold:.2f} over {len(scores)} repeats {shown}"
    return StageResult(
        mean, passed, text, threshold, label=label, repeat_scores=scores, unstable=unstable
    )


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
    "rubric": ("input", "answer", "rubric"),  # scored item by item in stages/rubric.py
}
# Judged stages whose verdict is scored by a module of their own (which registers them).
OWN_SCORER = frozenset({"rubric"})

STAGE_BY_NAME: dict[str, Stage] = {
    name: register(Stage(name, _make_scorer(name), judged=True, reads=reads))
    for name, reads in JUDGE_READS.items()
    if name not in OWN_SCORER
}
