"""What a stage is and returns: a pure function of (case, trace, suite, verdict)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...core.schema import Case
from ...core.suite_schema import Suite


@dataclass(slots=True)
class StageResult:
    """One stage's outcome for one case. `passed is None` means the stage did not apply."""

    score: float | None
    passed: bool | None
    reason: str
    threshold: float | None = None
    label: str | None = None
    metrics: dict[str, Any] | None = None
    judge_error: bool = False
    # A stage judged more than once: every repeat's score, and whether they fell on both sides
    # of the pass rule (then `passed` is the suite's "unstable" choice).
    repeat_scores: list[float] | None = None
    unstable: bool = False
    # A user stage's own code raised or returned what is not a score: the case errors (the
    # reason says what and where), never the session.
    stage_error: bool = False
    # What a failure of a user stage shows, as it returned it (`ev.Score(shows={...})`).
    shows: dict[str, Any] | None = None

    @property
    def skipped(self) -> bool:
        return self.passed is None

    def to_dict(self, gating: bool) -> dict[str, Any]:
        result = {
            "score": self.score,
            "passed": self.passed,
            "gating": gating,
            "threshold": self.threshold,
            "reason": self.reason,
            "label": self.label,
            "metrics": self.metrics or {},
            "judge_error": self.judge_error,
        }
        if self.repeat_scores is not None:  # only judged stages with repeats: results stay small
            result["repeat_scores"] = self.repeat_scores
            result["unstable"] = self.unstable
        if self.stage_error:  # only a user stage that could not score: results stay small
            result["stage_error"] = True
        return result


def skipped(reason: str) -> StageResult:
    return StageResult(score=None, passed=None, reason=reason)


def against_threshold(
    what: str, score: float, threshold: float, note: str = "", metrics: dict | None = None
) -> StageResult:
    """A score that passes at its threshold, with the reason every such stage gives:
    `<what> 0.67 >= 0.50<note>`."""
    passed = score >= threshold
    reason = f"{what} {score:.2f} {'>=' if passed else '<'} {threshold:.2f}{note}"
    return StageResult(score, passed, reason, threshold, metrics=metrics)


ScoreFn = Callable[[Case, dict[str, Any], Suite, dict[str, Any] | None], StageResult]
# What a failure of the stage shows beside its reason: (label, text) lines from the case, the
# trace and the suite, each value cut short unless `whole` (-vv) is set. See stages/shown.py.
ShowFn = Callable[[Case, dict[str, Any], Suite, bool], list[tuple[str, str]]]


@dataclass(frozen=True, slots=True)
class Stage:
    name: str
    score: ScoreFn
    judged: bool = False
    # judged stages only: which case/trace fields the judge reads (they go into the verdict key)
    reads: tuple[str, ...] = field(default=())
    # once per suite that runs the stage, at collection: check or load the suite's options for
    # it (raise CaseFileError); keeps per-case scoring free of set-up work
    prepare: Callable[[Suite, Path], None] | None = None
    # what a failure shows (the values the stage compared); None: what a judge reads, else the
    # answer (stages/shown.py `stage_details`)
    shows: ShowFn | None = None
