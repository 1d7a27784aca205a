"""`kendall_tau`: how well the answer ranks the items of a case's `expected_order` (BEAM's
ranking questions): Kendall's tau-b between the expected order and the order the answer gives.

The answer's order is where each item first appears in it (normalised tokens: lower case,
punctuation and a/an/the removed; an item matches as a whole run of tokens, so "cat" is not
found in "category"). Items the answer never names are tied, ranked after every named one.
tau-b in [-1, 1] is the score (1: the same order; -1: reversed); it passes at
`thresholds.kendall_tau`. A case with fewer than two items is skipped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ...core.schema import Case
from ...core.suite_schema import Suite
from .base import Stage, StageResult, against_threshold, skipped
from .registry import register
from .shown import answer_shown
from .text import normalized_tokens


def first_position(item: Sequence[str], answer: Sequence[str]) -> int | None:
    """Where the token run `item` first starts in `answer`, or None."""
    if not item:
        return None
    wanted, width = list(item), len(item)
    for start in range(len(answer) - width + 1):
        if answer[start : start + width] == wanted:
            return start
    return None


def answer_positions(items: Sequence[str], answer: str) -> list[int | None]:
    """Where each item first appears in the answer (a token index), or None."""
    tokens = normalized_tokens(answer)
    return [first_position(normalized_tokens(item), tokens) for item in items]


def ranks_of(positions: Sequence[int | None]) -> list[int]:
    """Each item's rank (0 first); the unnamed items share the rank after the last named one."""
    found = sorted({p for p in positions if p is not None})
    rank = {position: index for index, position in enumerate(found)}
    return [len(found) if p is None else rank[p] for p in positions]


def tau_b(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's tau-b of two rankings (ties allowed); None when either is wholly tied."""
    concordant = discordant = x_ties = y_ties = 0
    n = len(x)
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0 and dy == 0:
                x_ties += 1
                y_ties += 1
            elif dx == 0:
                x_ties += 1
            elif dy == 0:
                y_ties += 1
            elif (dx > 0) == (dy > 0):
                concordant += 1
            else:
                discordant += 1
    pairs = n * (n - 1) // 2
    denominator = math.sqrt((pairs - x_ties) * (pairs - y_ties))
    return (concordant - discordant) / denominator if denominator else None


def score_kendall_tau(case: Case, trace: dict[str, Any], suite: Suite, verdict: Any) -> StageResult:
    items = case.expected_order
    if not items or len(items) < 2:
        return skipped("no expected_order of two or more items")
    positions = answer_positions(items, trace.get("answer", ""))
    ranks = ranks_of(positions)
    tau = tau_b(list(range(len(items))), ranks)
    threshold = suite.threshold_for("kendall_tau")
    unnamed = [item for item, p in zip(items, positions, strict=True) if p is None]
    metrics = {"answer_ranks": ranks, "unnamed": unnamed}
    if tau is None:  # the answer names none of the items: there is no order to compare
        return StageResult(
            0.0, False, "the answer ranks none of the items", threshold, metrics=metrics
        )
    note = f"; not named (ranked last): {', '.join(unnamed)}" if unnamed else ""
    return against_threshold("Kendall tau-b", tau, threshold, note, metrics)


def show_kendall_tau(
    case: Case, trace: dict[str, Any], suite: Suite, whole: bool
) -> list[tuple[str, str]]:
    return [answer_shown(trace, whole), ("expected order", " > ".join(case.expected_order or []))]


register(Stage("kendall_tau", score_kendall_tau, shows=show_kendall_tau))
