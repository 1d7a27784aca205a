"""dashboard.html's tables over the whole run, as plain (still unescaped) cells: the categories,
groups and named totals, each user's ingestion, the timings, the judge calibration and the
baseline gate."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..domain.calibration_agreement import agreement_view
from ..domain.calibration_scoring import case_rows, figures_rows
from .formatting import fmt_ci, fmt_pct, fmt_pct_ci, fmt_score
from .ingestion import TABLE_ALIGN, TABLE_HEADER, table_rows, total_cells
from .timings import TIMINGS_ALIGN, TIMINGS_HEADER, timing_rows


def breakdown_labels(section: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(field, label) columns of a memory suite's rows: completeness then accuracy counts."""
    return [
        (field, label)
        for field in ("completeness", "accuracy")
        for label in dict.fromkeys(label for c in section.values() for label in c.get(field) or {})
    ]


def has_complete_rate(section: Mapping[str, Any]) -> bool:
    """Whether the table gets a `complete rate` column: as report.md, when any row has one."""
    return any("complete_rate" in c for c in section.values())


def breakdown_rows(section: Mapping[str, Any], stage_order: Sequence[str]) -> list[dict]:
    """A row per category or group: counts, Wilson pass rate, label counts, stage means."""
    labels = breakdown_labels(section)
    complete = has_complete_rate(section)
    rows = []
    for name, c in section.items():
        rows.append(
            {
                "name": name,
                "cases": c["cases"],
                "passed": c["passed"] + c["xpassed"],
                "failed": c["failed"] + c["xfailed"],
                "other": c["cases"] - c["decided"],
                "rate": fmt_pct(c["pass_rate"]),
                "ci": fmt_pct_ci(c["pass_rate_ci95"]),
                "labels": [(c.get(field) or {}).get(label, 0) for field, label in labels],
                # Zep's share judged COMPLETE, beside the counts and the completeness mean
                "complete_rate": [fmt_pct(c.get("complete_rate"))] if complete else [],
                "means": [fmt_score(c["stage_means"].get(s)) for s in stage_order],
            }
        )
    return rows


def total_rows(totals: Mapping[str, Any], stage_order: Sequence[str]) -> list[dict]:
    """A row per named total: its cases, those left out, its pass rate and stage means."""
    return [
        {
            "name": name,
            "cases": total["cases"],
            "excluded": total["excluded"],
            "rate": fmt_pct(total["pass_rate"]),
            "ci": fmt_pct_ci(total["pass_rate_ci95"]),
            "means": [fmt_score(total["stage_means"].get(s)) for s in stage_order],
        }
        for name, total in totals.items()
    ]


def ingestion_view(section: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Each user's ingestion figures and their total, as cells; None without ingestion."""
    if not section:
        return None
    return {
        "header": [(h, a == "r") for h, a in zip(TABLE_HEADER, TABLE_ALIGN, strict=True)],
        "rows": table_rows(section),
        "total": total_cells(section),
        "right": [a == "r" for a in TABLE_ALIGN],
    }


def timings_view(section: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Each step's cases, mean and p95, as report.md's Timings table; None when it has none."""
    rows = timing_rows(section)
    if not rows:
        return None
    return {
        "header": [(h, a == "r") for h, a in zip(TIMINGS_HEADER, TIMINGS_ALIGN, strict=True)],
        "rows": rows,
        "right": [a == "r" for a in TIMINGS_ALIGN],
    }


def calibration_view(section: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The judge calibration tables as rows of cells (header first), or None."""
    if not section:
        return None
    agreement = [agreement_view(group) for group in section.get("agreement") or []]
    return {"cases": case_rows(section), "figures": figures_rows(section), "agreement": agreement}


def baseline_view(cmp: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The baseline gate (`report.baseline.compare`) as the page's cells, or None."""
    if not cmp:
        return None
    deltas = cmp.get("stage_deltas") or {}
    return {
        "failed": cmp["failed"],
        "tolerance": f"{cmp['tolerance']:.3f}",
        "regressions": cmp["regressions"],
        "drops": [
            {
                **d,
                "baseline": fmt_score(d["baseline_mean"]),
                "current": fmt_score(d["current_mean"]),
                "delta": f"{d['delta']:+.3f}",
            }
            for d in cmp["stage_drops"]
        ],
        "fixed": cmp["fixed"],
        "unstable": cmp.get("unstable") or [],
        "new": cmp["new"],
        "removed": cmp["removed"],
        "still_failing": cmp["still_failing"],
        "deltas": [
            {
                "name": n,
                "cases": d["cases"],
                "baseline": fmt_score(d["baseline_mean"]),
                "current": fmt_score(d["current_mean"]),
                "delta": "–" if d["delta"] is None else f"{d['delta']:+.3f}",
                "down": d["delta"] is not None and d["delta"] < 0,
                "ci": fmt_ci(d["ci95"]),
                "baseline_ci": fmt_ci(d["baseline_ci95"]),
            }
            for n in (cmp.get("stage_order") or deltas)
            for d in [deltas[n]]
        ],
    }
