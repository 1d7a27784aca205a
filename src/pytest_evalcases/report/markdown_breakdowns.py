"""report.md's figures broken down: per stage, per named total, per category, per group or
user, per user's ingestion, and the context completeness x answer accuracy table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .formatting import fmt_ci, fmt_pct, fmt_pct_ci, fmt_score
from .ingestion import TABLE_ALIGN, TABLE_HEADER, table_rows, total_cells
from .markdown_table import escape_cell, markdown_table

GROUP_ROWS_CAP = 50  # groups may be user ids: thousands; the lowest pass rates are shown
INGESTION_ROWS_CAP = 50  # users, in (suite, user) order; the total row counts them all
# The rates a retrieval stage and the graph stage add beside their mean: (label, field).
_RETRIEVAL_RATES = (
    ("hit", "hit_at_k"),
    ("recall", "recall_at_k"),
    ("precision", "precision_at_k"),
    ("MRR", "mrr"),
    ("nDCG", "ndcg_at_k"),
    ("MAP", "map"),
)
_GRAPH_RATES = (
    ("precision", "precision"),
    ("recall", "recall"),
    ("hallucination", "hallucination_rate"),
    ("omission", "omission_rate"),
)


def stages_section(doc: Mapping[str, Any]) -> list[str]:
    """A row per stage (counts, mean, bootstrap interval), then retrieval and graph rates."""
    stages = doc.get("stages") or {}
    if not stages:
        return []
    rows = []
    unstable = any(s.get("unstable") for s in stages.values())  # a column only when it counts
    for name in doc.get("stage_order") or stages:
        s = stages[name]
        counts = [s["passed"], s["failed"], s["skipped"], s["judge_errors"]]
        counts += [s.get("unstable", 0)] if unstable else []
        rows.append(
            (
                name,
                "yes" if s["gating"] else "report",
                *counts,
                fmt_score(s["mean"]),
                fmt_ci(s["ci95"]),
            )
        )
    lines = ["### Stages", ""]
    header = ["stage", "gating", "passed", "failed", "skipped", "judge errors"]
    header += ["unstable"] if unstable else []
    lines += markdown_table(
        [*header, "mean", "95% CI (bootstrap)"],
        rows,
        ["l", "l", *["r"] * (len(header) - 2), "r", "l"],
    )
    for name in doc.get("stage_order") or stages:
        s = stages[name]
        if "recall_at_k" in s:
            metrics = _rates(s, _RETRIEVAL_RATES)
            lines += ["", f"{escape_cell(name)} @ k={escape_cell(s.get('k'))}: {metrics}"]
        if "hallucination_rate" in s:
            rates = _rates(s, _GRAPH_RATES)
            lines += ["", f"{escape_cell(name)}: {rates}"]
    lines.append("")
    return lines


def _rates(stage: Mapping[str, Any], labels: Sequence[tuple[str, str]]) -> str:
    return " · ".join(f"{label} {fmt_score(stage.get(key))}" for label, key in labels)


def totals_section(doc: Mapping[str, Any]) -> list[str]:
    """The suites' named totals (a paper's headline over part of the cases) beside the overall
    figures: one row each, with the stage means over the cases it counts."""
    totals = doc.get("totals") or {}
    if not totals:
        return []
    means = [
        stage
        for stage in doc.get("stage_order") or []
        if any(stage in total["stage_means"] for total in totals.values())
    ]
    header = ["total", "cases", "left out", "pass rate", "95% CI (Wilson)"]
    header += [f"mean {stage}" for stage in means]
    rows = [
        [
            name,
            total["cases"],
            total["excluded"],
            fmt_pct(total["pass_rate"]),
            fmt_pct_ci(total["pass_rate_ci95"]),
            *(fmt_score(total["stage_means"].get(stage)) for stage in means),
        ]
        for name, total in totals.items()
    ]
    align = ["l", "r", "r", "r", "l"] + ["r"] * len(means)
    return ["### Totals", "", *markdown_table(header, rows, align), ""]


def categories_section(doc: Mapping[str, Any]) -> list[str]:
    """One row per case category, as `_breakdown_table` builds it."""
    cats = doc.get("categories") or {}
    if not cats:
        return []
    lines = ["### Categories", ""]
    lines += _breakdown_table("category", cats, list(cats), [])
    lines.append("")
    return lines


def groups_section(doc: Mapping[str, Any]) -> list[str]:
    """Per-group rows (a case's `group`, or its suite `user`), when any case has one, with the
    per-stage means. Beyond GROUP_ROWS_CAP groups, those with the lowest pass rates, in name
    order."""
    groups = doc.get("groups") or {}
    if not groups:
        return []
    kind = doc.get("group_kind") or "group"
    names = sorted(groups)
    if len(names) > GROUP_ROWS_CAP:

        def rank(name: str) -> tuple[float, str]:
            rate = groups[name]["pass_rate"]
            return (2.0 if rate is None else rate, name)

        names = sorted(sorted(names, key=rank)[:GROUP_ROWS_CAP])
    means = [
        stage
        for stage in doc.get("stage_order") or []
        if any(stage in g.get("stage_means", {}) for g in groups.values())
    ]
    lines = ["### Users" if kind == "user" else "### Groups", ""]
    lines += _breakdown_table(kind, groups, names, means)
    if len(groups) > GROUP_ROWS_CAP:
        lines += [
            "",
            f"_…and {len(groups) - GROUP_ROWS_CAP} more {kind}s with higher pass "
            "rates (see dashboard.html)_",
        ]
    lines.append("")
    return lines


def _breakdown_table(
    title: str, rows: Mapping[str, Any], names: Sequence[str], means: Sequence[str]
) -> list[str]:
    """One row a category or group: counts, Wilson pass rate, then the completeness and
    accuracy label counts of a memory suite (Zep's figures), then the stage means asked for."""
    labelled = [
        (field, list(dict.fromkeys(label for r in rows.values() for label in r.get(field) or {})))
        for field in ("completeness", "accuracy")
        if any(field in r for r in rows.values())
    ]
    complete = any("complete_rate" in r for r in rows.values())
    header = [title, "cases", "passed", "failed", "pass rate", "95% CI (Wilson)"]
    header += [label for _, labels in labelled for label in labels]
    header += ["complete rate"] if complete else []
    header += [f"mean {stage}" for stage in means]
    table = []
    for name in names:
        r = rows[name]
        row: list[object] = [
            name,
            r["cases"],
            r["passed"] + r["xpassed"],
            r["failed"] + r["xfailed"],
            fmt_pct(r["pass_rate"]),
            fmt_pct_ci(r["pass_rate_ci95"]),
        ]
        row += [
            (r.get(field) or {}).get(label, 0) for field, labels in labelled for label in labels
        ]
        row += [fmt_pct(r.get("complete_rate"))] if complete else []
        row += [fmt_score((r.get("stage_means") or {}).get(stage)) for stage in means]
        table.append(row)
    align = ["l", "r", "r", "r", "r", "l"] + ["r"] * (len(header) - 6)
    return markdown_table(header, table, align)


def ingestion_section(section: Mapping[str, Any] | None) -> list[str]:
    """Each suite user's ingestion (duration, ready() wait, HTTP requests, tokens, cost, as
    recorded), then the total row; only when some case's user has an ingestion record."""
    if not section:
        return []
    rows = table_rows(section)
    lines = ["### Ingestion", ""]
    lines += markdown_table(
        TABLE_HEADER, [*rows[:INGESTION_ROWS_CAP], total_cells(section)], TABLE_ALIGN
    )
    if len(rows) > INGESTION_ROWS_CAP:
        lines += ["", f"_…and {len(rows) - INGESTION_ROWS_CAP} more users (see dashboard.html)_"]
    lines += [
        "",
        "_As recorded: a reused or replayed user's figures were spent when it was recorded; "
        "unknown is not zero (a total sums the known figures)._",
        "",
    ]
    return lines


def completeness_section(cva: Mapping[str, Any] | None) -> list[str]:
    """Context completeness labels against answer accuracy labels (Zep's figures)."""
    if not cva:
        return []
    acc_labels = cva["accuracy_labels"]
    rows = [
        (c, *[cva["table"][c][a] for a in acc_labels], sum(cva["table"][c].values()))
        for c in cva["completeness_labels"]
    ]
    lines = ["### Context completeness × answer accuracy", ""]
    lines += markdown_table(
        ["completeness / accuracy", *acc_labels, "total"],
        rows,
        ["l"] + ["r"] * (len(acc_labels) + 1),
    )
    lines += [
        "",
        f"Accuracy when context was complete: {fmt_pct(cva['accuracy_when_complete'])} "
        f"({cva['complete_and_correct']} complete and correct, "
        f"{cva['complete_but_wrong']} complete but wrong; {cva['cases']} cases with both labels)",
        "",
    ]
    return lines
