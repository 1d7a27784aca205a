"""`kendall_tau`: how well the answer orders the events of a case's `expected_order` (BEAM's
event-ordering questions), as Cognee's BEAM evaluation defines it: Kendall's tau-b of the events
the answer names, normalised to [0, 1], times the event-coverage F1.

The answer's order is where each item first appears in it (normalised tokens: lower case,
punctuation and a/an/the removed; an item matches as a whole run of tokens, so "cat" is not
found in "category"). tau-b compares the expected order with the answer's over the items it
names; (tau-b + 1) / 2 puts it in [0, 1] (1: the same order; 0: reversed). Coverage: recall is
the share of the expected items named; precision the share of the answer's events that are
expected ones (the answer's events: the entries of a numbered or bulleted list when it is one,
else the items it names, so precision is 1). Score = normalised tau x coverage F1, e.g. two of
three events named in order: 1 x F1(precision 1, recall 2/3) = 0.8. An answer naming fewer than
two items has no order and scores 0. It passes at `thresholds.kendall_tau`. A case with fewer
than two items is skipped. Raw tau-b and the coverage figures are kept in the metrics.
"""

from __future__ import annotations

import math
import re
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


# An entry of a numbered ("1.", "2)") or bulleted ("-", "*", "•") list, one per line.
_LIST_ENTRY = re.compile(r"^\s*(?:\d+[.)]|[-*\u2022])\s+\S", re.MULTILINE)


def answer_events(answer: str, named: int) -> int:
    """How many events the answer gives: its list entries when it is a list of two or more,
    else the expected items it names (an answer in prose is not split into events)."""
    entries = len(_LIST_ENTRY.findall(answer))
    return entries if entries >= 2 else named


def coverage_f1(named: int, expected: int, given: int) -> tuple[float, float, float]:
    """Precision (named of the answer's events), recall (named of the expected) and their F1."""
    precision = min(1.0, named / given) if given else 0.0
    recall = named / expected if expected else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


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
    answer = str(trace.get("answer", ""))
    positions = answer_positions(items, answer)
    named = [(index, p) for index, p in enumerate(positions) if p is not None]
    unnamed = [item for item, p in zip(items, positions, strict=True) if p is None]
    precision, recall, f1 = coverage_f1(len(named), len(items), answer_events(answer, len(named)))
    expected_ranks = [index for index, _ in named]
    answer_ranks = ranks_of([p for _, p in named])
    tau = tau_b(expected_ranks, answer_ranks) if len(named) >= 2 else None
    threshold = suite.threshold_for("kendall_tau")
    metrics = {
        "tau_b": tau,
        "coverage_precision": precision,
        "coverage_recall": recall,
        "coverage_f1": f1,
        "answer_ranks": ranks_of(positions),
        "unnamed": unnamed,
    }
    if tau is None:  # fewer than two items named: there is no order to compare
        return StageResult(
            0.0, False, "the answer orders fewer than two of the items", threshold, metrics=metrics
        )
    note = f"; not named: {', '.join(unnamed)}" if unnamed else ""
    detail = f" (tau-b {tau:.2f}, coverage F1 {f1:.2f}{note})"
    return against_threshold("BEAM kendall_tau", (tau + 1) / 2 * f1, threshold, detail, metrics)


def show_kendall_tau(
    case: Case, trace: dict[str, Any], suite: Suite, whole: bool
) -> list[tuple[str, str]]:
    return [answer_shown(trace, whole), ("expected order", " > ".join(case.expected_order or []))]


register(Stage("kendall_tau", score_kendall_tau, shows=show_kendall_tau))
