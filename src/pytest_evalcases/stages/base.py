"""What a stage is and returns: a pure function of (case, trace, suite, verdict)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..schema import Case, Suite


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

    @property
    def skipped(self) -> bool:
        return self.passed is None

    def to_dict(self, gating: bool) -> dict[str, Any]:
        return {
            "score": self.score,
            "passed": self.passed,
            "gating": gating,
            "threshold": self.threshold,
            "reason": self.reason,
            "label": self.label,
            "metrics": self.metrics or {},
            "judge_error": self.judge_error,
        }


def skipped(reason: str) -> StageResult:
    return StageResult(score=None, passed=None, reason=reason)


ScoreFn = Callable[[Case, dict[str, Any], Suite, dict[str, Any] | None], StageResult]


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
