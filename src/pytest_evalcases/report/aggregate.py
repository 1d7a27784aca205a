"""Per-case result dicts in, the results.json document out (pure, no I/O).

The document is the single source for every other artefact: report.md, the
dashboard, the baseline gate and shard merging all read only this dict.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..core.outcomes import (
    ACCURACY_LABELS,
    ACCURACY_STAGE,
    COMPLETENESS_LABELS,
    COMPLETENESS_STAGE,
    DECIDED,
    OUTCOMES,
    PASS_LIKE,
    SUMMARY_KEYS,
    check_outcome,
)
from ..core.stats import bootstrap_ci, mean, wilson_interval
from ..domain.calibration_agreement import calibration_report
from .cost import cost_section
from .eval_runs import runs_section
from .ingestion import ingestion_section
from .stage_values import stage_score, stage_status
from .timings import timings_section
from .totals import totals_section

if TYPE_CHECKING:
    import numpy as np

RESULTS_FORMAT = "pytest-evalcases/results"
RESULTS_VERSION = 1

RETRIEVAL_METRICS: tuple[str, ...] = (
    "hit_at_k",
    "recall_at_k",
    "precision_at_k",
    "mrr",
    "ndcg_at_k",
    "map",
)
# The graph stage's rates, averaged over its cases (its score, F1, has the stage mean).
GRAPH_METRICS: tuple[str, ...] = ("precision", "recall", "hallucination_rate", "omission_rate")
HISTOGRAM_BINS = 10
# Labelled stages whose label counts the per-category and per-group rows carry: stage ->
# (the rows' field, the labels always listed).
_LABELLED_STAGES: dict[str, tuple[str, tuple[str, ...]]] = {
    COMPLETENESS_STAGE: ("completeness", COMPLETENESS_LABELS),
    ACCURACY_STAGE: ("accuracy", ACCURACY_LABELS),
}

Result = dict[str, Any]
__all__ = ["RESULTS_FORMAT", "RESULTS_VERSION", "aggregate", "stage_score", "stage_status"]


def aggregate(
    results: Iterable[Mapping[str, Any]],
    run: Mapping[str, Any] | None = None,
    stage_order: Sequence[str] | None = None,
) -> dict:
    """Build the results.json document from per-case result dicts.

    The case dicts are not copied; they are sorted by (file, index, nodeid) so that the
    document does not depend on collection or shard order. Stage order is taken from
    the cases' stage dicts; ``stage_order`` overrides it for documents read back from
    results.json, whose sorted keys have lost it (merging shards passes theirs).
    """
    cases = sort_cases(results)
    scan = _Scan(cases)
    order = _stage_order({n: a.gating for n, a in scan.stages.items()}, stage_order or ())
    doc: dict[str, Any] = {
        "format": RESULTS_FORMAT,
        "version": RESULTS_VERSION,
        "run": dict(run or {}),
        "summary": _summary(cases, scan),
        "stage_order": order,
        "stages": _stages(scan, order),
        "categories": _breakdown(cases, "category", scan, order),
        "groups": _breakdown(cases, "group", scan, order),
        "group_kind": group_kind(cases),
        "completeness_vs_accuracy": _completeness_vs_accuracy(cases),
        "calibration": _calibration(cases),
        "runs": runs_section(cases, order),
        "cost": cost_section(cases, run or {}),
        "totals": totals_section(cases, order),
        "timings": {},
        "cases": cases,
        "baseline": None,
    }
    ingestion = ingestion_section(cases)
    doc["timings"] = timings_section(cases, ingestion.get("users") or ())
    if ingestion:  # only a run whose suites ingest users: without, the document is as before
        doc["ingestion"] = ingestion
    return doc


def sort_cases(results: Iterable[Mapping[str, Any]]) -> list[Result]:
    """Validate outcomes and node ids, then order cases by file, position, node id."""
    cases: list[Result] = []
    seen: set[str] = set()
    for res in results:
        nodeid = res.get("nodeid")
        if not isinstance(nodeid, str) or not nodeid:
            raise ValueError(f"result without a nodeid: {dict(res)!r:.200}")
        if nodeid in seen:
            raise ValueError(f"duplicate result for case {nodeid!r}")
        seen.add(nodeid)
        check_outcome(res.get("outcome"), nodeid)
        cases.append(res)  # type: ignore[arg-type]
    cases.sort(key=_case_key)
    return cases


def _case_key(case: Mapping[str, Any]) -> tuple[str, int, str]:
    index = case.get("index")
    return (str(case.get("file") or ""), index if isinstance(index, int) else -1, case["nodeid"])


def _stage_order(seen: Mapping[str, bool], preferred: Sequence[str]) -> list[str]:
    """Preferred order, then first-seen order; gating stages first (a stable partition).

    seen maps stage name -> gating in any case, in first-seen order.
    """
    names = [n for n in preferred if n in seen] + [n for n in seen if n not in preferred]
    return [n for n in names if seen[n]] + [n for n in names if not seen[n]]


class _StageAcc:
    """Accumulator for one stage across cases."""

    __slots__ = ("status", "idx", "scores", "gating", "metrics", "ks", "unstable", "labels")

    def __init__(self) -> None:
        self.status = {"passed": 0, "failed": 0, "skipped": 0, "judge_error": 0}
        self.unstable = 0  # verdicts whose repeats disagreed (--eval-judge-repeats)
        self.idx: list[int] = []  # positions of the scored cases, for per-bucket means
        self.scores: list[float] = []
        self.gating = False
        self.metrics: dict[str, list[float]] = {m: [] for m in _MEAN_METRICS}
        self.ks: set[int] = set()
        self.labels: dict[int, str] = {}  # case position -> label (completeness, accuracy)


class _Scan:
    """Everything the sections need, gathered in one pass over the cases (10k cases x
    8 stages is 80k stage dicts: a pass per section would dominate the run time)."""

    def __init__(self, cases: list[Result]) -> None:
        import numpy as np  # numpy: heavy; only a written report (results.json) needs it

        self.outcome = np.empty(len(cases), dtype=np.int64)
        self.judge_error = np.zeros(len(cases), dtype=bool)
        self.stages: dict[str, _StageAcc] = {}
        for i, case in enumerate(cases):
            self.outcome[i] = _OUTCOME_CODE[case["outcome"]]
            for name, stage in (case.get("stages") or {}).items():
                acc = self.stages.get(name)
                if acc is None:
                    acc = self.stages[name] = _StageAcc()
                status = stage_status(stage)
                acc.status[status] += 1
                if stage.get("gating"):
                    acc.gating = True
                if stage.get("unstable"):
                    acc.unstable += 1
                if status == "judge_error":
                    self.judge_error[i] = True
                    continue
                if name in _LABELLED_STAGES:
                    label = _label(stage)
                    if label is not None:
                        acc.labels[i] = label
                score = stage_score(stage)
                if score is not None:
                    acc.idx.append(i)
                    acc.scores.append(score)
                metrics = stage.get("metrics")
                if metrics:
                    _add_metrics(acc, metrics)


_MEAN_METRICS = RETRIEVAL_METRICS + GRAPH_METRICS


def _add_metrics(acc: _StageAcc, metrics: Mapping[str, Any]) -> None:
    for m in _MEAN_METRICS:
        v = metrics.get(m)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            acc.metrics[m].append(float(v))
    k = metrics.get("k")
    if isinstance(k, int) and not isinstance(k, bool):
        acc.ks.add(k)


_OUTCOME_CODE = {o: i for i, o in enumerate(OUTCOMES)}
# Positions in OUTCOMES (and in an array of outcome counts) of the passing and decided ones.
_PASS_CODES = [i for i, o in enumerate(OUTCOMES) if o in PASS_LIKE]
_DECIDED_CODES = [i for i, o in enumerate(OUTCOMES) if o in DECIDED]


def _counts(outcome_counts: np.ndarray, judge_errors: int) -> dict[str, Any]:
    """Outcome counts (indexed like OUTCOMES) -> summary-style dict with a Wilson rate."""
    counts: dict[str, Any] = {
        SUMMARY_KEYS[o]: int(outcome_counts[i]) for i, o in enumerate(OUTCOMES)
    }
    successes = int(outcome_counts[_PASS_CODES].sum())
    decided = int(outcome_counts[_DECIDED_CODES].sum())
    ci = wilson_interval(successes, decided)
    counts.update(
        cases=int(outcome_counts.sum()),
        judge_errors=int(judge_errors),
        decided=decided,
        pass_rate=(successes / decided) if decided else None,
        pass_rate_ci95=list(ci) if ci else None,
    )
    return counts


def _summary(cases: list[Result], scan: _Scan) -> dict[str, Any]:
    import numpy as np  # numpy: heavy; only a written report (results.json) needs it

    summary = _counts(
        np.bincount(scan.outcome, minlength=len(OUTCOMES)), int(scan.judge_error.sum())
    )
    summary["suites"] = sorted({str(c["suite"]) for c in cases if c.get("suite") is not None})
    return summary


def _stages(scan: _Scan, stage_order: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name in stage_order:
        acc = scan.stages[name]
        ci = bootstrap_ci(acc.scores)
        entry: dict[str, Any] = {
            "passed": acc.status["passed"],
            "failed": acc.status["failed"],
            "skipped": acc.status["skipped"],
            "judge_errors": acc.status["judge_error"],
            "unstable": acc.unstable,
            "scored": len(acc.scores),
            "mean": mean(acc.scores),
            "ci95": list(ci) if ci else None,
            "gating": acc.gating,
            "histogram": _histogram(acc.scores),
        }
        for m in GRAPH_METRICS:
            if acc.metrics[m]:
                entry[m] = mean(acc.metrics[m])
        if name == COMPLETENESS_STAGE and acc.labels:  # beside the mean: Zep's complete_rate
            complete = sum(1 for label in acc.labels.values() if label == "COMPLETE")
            entry["complete_rate"] = complete / len(acc.labels)
        if any(acc.metrics[m] for m in RETRIEVAL_METRICS) or acc.ks:
            # k: the common k, or the sorted distinct ks when suites disagree.
            ks = sorted(acc.ks)
            entry["k"] = ks[0] if len(ks) == 1 else (ks or None)
            for m in RETRIEVAL_METRICS:
                entry[m] = mean(acc.metrics[m])
        out[name] = entry
    return out


def _histogram(scores: list[float]) -> list[int]:
    """Counts in 10 equal bins over [0, 1]; scores outside are clipped to the ends."""
    if not scores:
        return [0] * HISTOGRAM_BINS
    import numpy as np  # numpy: heavy; only a written report (results.json) needs it

    arr = np.clip(np.asarray(scores, dtype=float), 0.0, 1.0)
    counts, _ = np.histogram(arr, bins=HISTOGRAM_BINS, range=(0.0, 1.0))
    return [int(c) for c in counts]


def _breakdown(
    cases: list[Result], key: str, scan: _Scan, stage_order: list[str]
) -> dict[str, Any]:
    """Counts, Wilson pass rate and per-stage means for each value of category/group."""
    values: list[str | None] = [
        None if (v := case.get(key)) is None or v == "" else str(v) for case in cases
    ]
    names = sorted({v for v in values if v is not None})
    if not names:
        return {}
    import numpy as np  # numpy: heavy; only a written report (results.json) needs it

    slot = {name: j for j, name in enumerate(names)}
    bucket = np.array([-1 if v is None else slot[v] for v in values], dtype=np.int64)
    inside = bucket >= 0
    nb, no = len(names), len(OUTCOMES)
    outcome_counts = np.bincount(
        bucket[inside] * no + scan.outcome[inside], minlength=nb * no
    ).reshape(nb, no)
    judge_errors = np.bincount(bucket[inside], weights=scan.judge_error[inside], minlength=nb)
    # Per-stage sums and counts per bucket, vectorised over the scored cases.
    means: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name in stage_order:
        acc = scan.stages[name]
        if not acc.scores:
            continue
        b = bucket[np.asarray(acc.idx, dtype=np.int64)]
        keep = b >= 0
        scores = np.asarray(acc.scores, dtype=float)[keep]
        means[name] = (
            np.bincount(b[keep], weights=scores, minlength=nb),
            np.bincount(b[keep], minlength=nb),
        )
    # Completeness and accuracy label counts per bucket, beside the means (Zep's figures).
    label_counts: dict[str, list[dict[str, int]]] = {}
    for stage, (field, known) in _LABELLED_STAGES.items():
        acc = scan.stages.get(stage)
        if acc is None:
            continue
        per_bucket = [dict.fromkeys(known, 0) for _ in names]
        for i, label in acc.labels.items():
            if bucket[i] >= 0:
                counts_j = per_bucket[bucket[i]]
                counts_j[label] = counts_j.get(label, 0) + 1
        label_counts[field] = per_bucket
    out: dict[str, Any] = {}
    for j, name in enumerate(names):
        entry = _counts(outcome_counts[j], int(judge_errors[j]))
        entry["stage_means"] = {
            stage: float(sums[j] / counts[j])
            for stage, (sums, counts) in means.items()
            if counts[j]
        }
        for field, per_bucket in label_counts.items():
            entry[field] = per_bucket[j]
        if "completeness" in entry:  # Zep's complete_rate: the share judged COMPLETE
            entry["complete_rate"] = complete_rate(entry["completeness"])
        out[name] = entry
    return out


def complete_rate(labels: Mapping[str, int]) -> float | None:
    judged = sum(labels.values())
    return labels.get("COMPLETE", 0) / judged if judged else None


def group_kind(cases: Iterable[Mapping[str, Any]]) -> str:
    """`user` when every case with a group is grouped by its suite user, else `group`."""
    grouped = [case for case in cases if case.get("group") not in (None, "")]
    return "user" if grouped and all(case.get("user") for case in grouped) else "group"


def _label(stage: Mapping[str, Any] | None) -> str | None:
    if not stage or stage.get("judge_error") or stage.get("label") in (None, ""):
        return None
    return str(stage["label"]).strip().upper()


def _completeness_vs_accuracy(cases: list[Result]) -> dict[str, Any] | None:
    """Zep-style table: is the answer right when the retrieved context was complete?"""
    pairs: list[tuple[str, str]] = []
    for case in cases:
        stages = case.get("stages") or {}
        comp, acc = _label(stages.get(COMPLETENESS_STAGE)), _label(stages.get(ACCURACY_STAGE))
        if comp is not None and acc is not None:
            pairs.append((comp, acc))
    if not pairs:
        return None
    comp_labels = list(COMPLETENESS_LABELS) + sorted(
        {c for c, _ in pairs} - set(COMPLETENESS_LABELS)
    )
    acc_labels = list(ACCURACY_LABELS) + sorted({a for _, a in pairs} - set(ACCURACY_LABELS))
    table = {c: {a: 0 for a in acc_labels} for c in comp_labels}
    for comp, acc in pairs:
        table[comp][acc] += 1
    complete_total = sum(table["COMPLETE"].values())
    complete_correct = table["COMPLETE"]["CORRECT"]
    return {
        "completeness_labels": comp_labels,
        "accuracy_labels": acc_labels,
        "table": table,
        "cases": len(pairs),
        "complete_and_correct": complete_correct,
        "complete_but_wrong": complete_total - complete_correct,
        "accuracy_when_complete": (complete_correct / complete_total) if complete_total else None,
    }


def _calibration(cases: list[Result]) -> dict[str, Any] | None:
    """The judge calibration section (None: no calibration case in the run)."""
    if not any("calibration" in case for case in cases):
        return None
    return calibration_report(cases)


__all__ = [
    "ACCURACY_STAGE",
    "COMPLETENESS_STAGE",
    "OUTCOMES",
    "RESULTS_FORMAT",
    "RESULTS_VERSION",
    "GRAPH_METRICS",
    "RETRIEVAL_METRICS",
    "aggregate",
    "cost_section",
    "sort_cases",
    "stage_score",
    "stage_status",
]
