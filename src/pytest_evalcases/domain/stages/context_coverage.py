"""`context_coverage`: how much of a case's gold context (`expected_context`) the retrieved
context covers, as Cognee's context coverage asks, without a judge.

Each gold item is a text or `{"id": ...}`. A text counts by token-level containment: the share
of its normalised tokens (lower case, punctuation and a/an/the removed; as a multiset) found in
the trace's `context`, all passages together. An id counts 1 when the trace's `retrieved` ids hold
it, else 0. The score is the mean over the gold items; it passes at `thresholds.context_coverage`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from ...core.schema import Case
from ...core.suite_schema import Suite
from .base import Stage, StageResult, against_threshold, skipped
from .registry import register
from .shown import context_shown
from .text import normalized_tokens


def containment(gold: str, available: Counter[str]) -> float:
    """The share of `gold`'s normalised tokens that `available` holds (counted with multiplicity);
    a gold text with no tokens after normalisation is covered."""
    wanted = Counter(normalized_tokens(gold))
    total = sum(wanted.values())
    if not total:
        return 1.0
    return sum(min(count, available[token]) for token, count in wanted.items()) / total


def item_coverage(items: Sequence[Any], context: list[str], retrieved: list[str]) -> list[float]:
    available = Counter(token for passage in context for token in normalized_tokens(passage))
    ids = set(retrieved)
    return [
        float(item["id"] in ids) if isinstance(item, dict) else containment(item, available)
        for item in items
    ]


def score_context_coverage(
    case: Case, trace: dict[str, Any], suite: Suite, verdict: Any
) -> StageResult:
    if not case.expected_context:
        return skipped("no expected_context")
    context = [str(passage) for passage in trace.get("context") or []]
    covered = item_coverage(case.expected_context, context, trace.get("retrieved") or [])
    whole = sum(1 for share in covered if share == 1.0)
    note = f" ({whole} of {len(covered)} gold item{'' if len(covered) == 1 else 's'} fully covered)"
    metrics = {"items": len(covered), "fully_covered": whole, "item_coverage": covered}
    threshold = suite.threshold_for("context_coverage")
    return against_threshold(
        "context coverage", sum(covered) / len(covered), threshold, note, metrics
    )


def show_context_coverage(
    case: Case, trace: dict[str, Any], suite: Suite, whole: bool
) -> list[tuple[str, str]]:
    return [context_shown(trace, whole)]


register(Stage("context_coverage", score_context_coverage, shows=show_context_coverage))
