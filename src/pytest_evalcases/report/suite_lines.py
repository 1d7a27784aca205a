"""The one-line summary of each suite at the head of report.md, in the form the per-stage
evaluations we learn from publish (`9/10 cases pass every stage. tools 10/10, hit@3 7/7, recall@3
0.929, MRR 1.000, faithfulness 9/10`). Pure: per-case result dicts in, one line per suite out.

A stage reads `passed/scored` (a judge error counts as scored and not passed); `retrieval` reads
its hit@k count and its recall@k and MRR means instead, and a report-only stage its mean score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..core.outcomes import PASS_LIKE
from ..core.stats import mean
from .stage_values import stage_score, stage_status


def suite_lines(
    cases: Sequence[Mapping[str, Any]], stage_order: Sequence[str]
) -> list[tuple[str, str]]:
    """(suite, its line) for every suite, in name order."""
    by_suite: dict[str, list[Mapping[str, Any]]] = {}
    for case in cases:
        if case.get("kind") != "calibration":
            by_suite.setdefault(str(case.get("suite") or "eval cases"), []).append(case)
    return [(name, suite_line(by_suite[name], stage_order)) for name in sorted(by_suite)]


def suite_line(cases: Sequence[Mapping[str, Any]], stage_order: Sequence[str]) -> str:
    passing = sum(1 for case in cases if case.get("outcome") in PASS_LIKE)
    parts = [part for stage in stage_order if (part := _stage_part(stage, cases))]
    head = f"{passing}/{len(cases)} cases pass every stage."
    return f"{head} {', '.join(parts)}" if parts else head


def _stage_part(stage: str, cases: Sequence[Mapping[str, Any]]) -> str | None:
    entries = [e for case in cases if (e := (case.get("stages") or {}).get(stage)) is not None]
    scored = [e for e in entries if stage_status(e) != "skipped"]
    if not scored:
        return None
    if stage == "retrieval":
        return _retrieval_part(scored)
    if not scored[0].get("gating", True):
        scores = [s for e in scored if (s := stage_score(e)) is not None]
        return f"{stage} {mean(scores):.3f}" if scores else None
    passed = sum(1 for e in scored if stage_status(e) == "passed")
    return f"{stage} {passed}/{len(scored)}"


def _retrieval_part(scored: Sequence[Mapping[str, Any]]) -> str:
    metrics = [e.get("metrics") or {} for e in scored]
    k = next((m["k"] for m in metrics if m.get("k") is not None), None)
    at = f"@{k}" if k is not None else ""
    hits = sum(1 for m in metrics if m.get("hit_at_k") == 1.0)
    recall = mean(m["recall_at_k"] for m in metrics if m.get("recall_at_k") is not None)
    mrr = mean(m["mrr"] for m in metrics if m.get("mrr") is not None)
    parts = [f"hit{at} {hits}/{len(metrics)}"]
    if recall is not None:
        parts.append(f"recall{at} {recall:.3f}")
    if mrr is not None:
        parts.append(f"MRR {mrr:.3f}")
    return ", ".join(parts)
