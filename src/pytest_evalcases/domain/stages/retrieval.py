"""`retrieval`: rank metrics of the retrieved document ids against `expected_docs`, at depth k."""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import Any

from ...core.names import clip, listed
from ...core.schema import Case
from ...core.suite_schema import Suite
from .base import Stage, StageResult, skipped
from .registry import register

ID_CHARS = 60  # of each document id a failure shows, unless -vv
IDS_LISTED = 10  # ids a failure lists (retrieved within k, expected), unless -vv

_DISCOUNTS = [0.0] + [1 / math.log2(rank + 1) for rank in range(1, 129)]  # nDCG, by rank


def _discount(rank: int) -> float:
    return _DISCOUNTS[rank] if rank < len(_DISCOUNTS) else 1 / math.log2(rank + 1)


def rank_metrics(retrieved: Sequence[str], relevant: Collection[str], k: int) -> dict[str, float]:
    """hit@k, recall@k, precision@k, reciprocal rank, nDCG@k and average precision (binary
    relevance). A document retrieved twice counts once, at its first rank. One pass over the
    ranking: replay scores every case with it."""
    relevant = set(relevant)
    found = first = 0
    dcg = precision_sum = 0.0
    for rank, doc in enumerate(list(dict.fromkeys(retrieved))[:k], 1):
        if doc in relevant:
            found += 1
            first = first or rank
            dcg += _discount(rank)
            precision_sum += found / rank
    depth = min(len(relevant), k)
    ideal = sum(_discount(rank) for rank in range(1, depth + 1))
    return {
        "k": k,
        "hit_at_k": 1.0 if found else 0.0,
        "recall_at_k": found / len(relevant),
        "precision_at_k": found / k,
        "mrr": 1 / first if first else 0.0,
        "ndcg_at_k": dcg / ideal if ideal else 0.0,
        "map": precision_sum / depth,
    }


def score_retrieval(case: Case, trace: dict[str, Any], suite: Suite, verdict: Any) -> StageResult:
    if not case.expected_docs:
        return skipped("no expected_docs")
    k = suite.k
    metrics = rank_metrics(trace.get("retrieved") or [], case.expected_docs, k)
    threshold = suite.threshold_for("retrieval", default=1.0)
    recall = metrics["recall_at_k"]
    if recall >= threshold:
        return StageResult(recall, True, f"recall@{k} {recall:.2f}", threshold, metrics=metrics)
    top = list(dict.fromkeys(trace.get("retrieved") or []))[:k]
    missing = [doc for doc in case.expected_docs if doc not in top]
    reason = f"recall@{k} {recall:.2f} < {threshold:.2f}; missing: {', '.join(missing)}"
    return StageResult(recall, False, reason, threshold, metrics=metrics)


def show_retrieval(
    case: Case, trace: dict[str, Any], suite: Suite, whole: bool
) -> list[tuple[str, str]]:
    """A `retrieval` failure shows the ids retrieved, in rank order, beside the expected ones:
    those within k, then how many came after (-vv: which)."""
    limit, most = (None, None) if whole else (ID_CHARS, IDS_LISTED)

    def ids(docs: Sequence[Any]) -> list[str]:
        return [str(doc) if limit is None else clip(str(doc), limit, ellipsis="…") for doc in docs]

    retrieved = list(trace.get("retrieved") or [])
    k = suite.k
    shown = listed(ids(retrieved[:k]), most) or "nothing"
    beyond = retrieved[k:]
    if beyond and whole:
        shown += f"; beyond k={k}: " + ", ".join(ids(beyond))
    elif beyond:
        shown += f" (+{len(beyond)} beyond k={k})"
    return [("retrieved", shown), ("expected", listed(ids(case.expected_docs or []), most))]


register(Stage("retrieval", score_retrieval, shows=show_retrieval))
