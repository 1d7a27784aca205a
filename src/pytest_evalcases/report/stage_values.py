"""What one stage of one case's result counts as: its score for the means, its status for the
counts (shared by results.json, the totals, the baseline gate, compare and the dashboard)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def stage_score(stage: Mapping[str, Any]) -> float | None:
    """The score that counts for means: None when skipped, judge-errored or not finite."""
    if stage.get("judge_error"):
        return None
    score = stage.get("score")
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        return None
    return float(score) if math.isfinite(score) else None


def stage_status(stage: Mapping[str, Any]) -> str:
    """passed / failed / skipped / judge_error. A judge error is never a pass."""
    if stage.get("judge_error"):
        return "judge_error"
    passed = stage.get("passed")
    if passed is True:
        return "passed"
    if passed is False:
        return "failed"
    return "skipped"
