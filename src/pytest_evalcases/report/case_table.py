"""The per-case table of `--eval-report-cases all`, in the form seed 003 publishes it: per case,
the tools the trace called, the retrieval stage's hit, recall and reciprocal rank, each other
stage's score (report-only stages included) and the first failure. Pure: result dicts in, a
header, alignments and rows out; the columns are those of the stages some case of the suite ran,
so a RAG suite and a tool-calling suite each get their own."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.names import clip
from ..core.outcomes import case_label, failure_of
from .formatting import fmt_score
from .stage_values import stage_score, stage_status

REASON_CHARS = 100  # of the first failure's reason a cell shows (results.json has it whole)

Case = Mapping[str, Any]


@dataclass(frozen=True)
class CaseColumn:
    key: str  # "tools_called", "hit", "recall", "rr", "stage:<name>", ...
    header: str
    align: str  # "l" or "r"
    cell: Callable[[Case], str]
    numeric: bool = False  # its cells are numbers (or `–`): the dashboard sorts them so


@dataclass(frozen=True)
class CaseTable:
    header: list[str]
    align: list[str]
    rows: list[list[str]]
    report_only: list[str]  # the stages shown that never fail a case, for a note under the table


def case_table(cases: Sequence[Case], stage_order: Sequence[str]) -> CaseTable:
    """One suite's cases as rows, with the columns of the stages some case of them ran."""
    columns = case_columns(cases, stage_order)
    ran = ran_stages(cases, stage_order)
    return CaseTable(
        header=[column.header for column in columns],
        align=[column.align for column in columns],
        rows=[[column.cell(case) for column in columns] for case in cases],
        report_only=[name for name in ran if not _gating(cases, name)],
    )


def case_columns(cases: Sequence[Case], stage_order: Sequence[str]) -> list[CaseColumn]:
    columns = [
        CaseColumn("case", "case", "l", case_label),
        CaseColumn("category", "category", "l", lambda case: str(case.get("category") or "–")),
    ]
    ran = ran_stages(cases, stage_order)
    if "tools" in ran or any(tools_called(case) for case in cases):
        columns.append(
            CaseColumn("tools_called", "tools called", "l", lambda case: tools_called(case) or "–")
        )
    for name in ran:
        columns += _retrieval_columns(cases) if name == "retrieval" else [_score_column(name)]
    columns.append(CaseColumn("first_failure", "first failure", "l", first_failure))
    return columns


def dashboard_columns(cases: Sequence[Case], stage_order: Sequence[str]) -> list[CaseColumn]:
    """The seed's columns the dashboard's case table adds after its score per stage: the tools
    called and retrieval's hit and RR (its score is recall@k)."""
    return [c for c in case_columns(cases, stage_order) if c.key in ("tools_called", "hit", "rr")]


def ran_stages(cases: Sequence[Case], stage_order: Sequence[str]) -> list[str]:
    """The stages, in the run's order, that scored at least one of `cases` (not skipped)."""
    return [
        name
        for name in stage_order
        if any(
            (entry := _entry(case, name)) is not None and stage_status(entry) != "skipped"
            for case in cases
        )
    ]


def tools_called(case: Case) -> str:
    """The names of the tools the trace called, in call order (the report's detail holds them)."""
    calls = (case.get("detail") or {}).get("tool_calls") or []
    return ", ".join(
        str(call.get("name", "?")) if isinstance(call, Mapping) else str(call) for call in calls
    )


def first_failure(case: Case) -> str:
    """`stage: reason` with the reason cut short, the outcome's reason when nothing failed at a
    stage (stale, missing, error), else `–`."""
    stage, reason = failure_of(case)
    reason = clip(reason, REASON_CHARS, ellipsis="…")
    if stage:
        return f"{stage}: {reason}"
    return reason or "–"


def _entry(case: Case, name: str) -> Mapping[str, Any] | None:
    entry = (case.get("stages") or {}).get(name)
    return entry if isinstance(entry, Mapping) else None


def _gating(cases: Sequence[Case], name: str) -> bool:
    entry = next(e for case in cases if (e := _entry(case, name)) is not None)
    return bool(entry.get("gating", True))


def _score_column(name: str) -> CaseColumn:
    def cell(case: Case) -> str:
        entry = _entry(case, name)
        if entry is None or stage_status(entry) == "skipped":
            return "–"
        if entry.get("judge_error"):
            return "judge error"
        return fmt_score(stage_score(entry))

    return CaseColumn(f"stage:{name}", name, "r", cell, numeric=True)


def _retrieval_columns(cases: Sequence[Case]) -> list[CaseColumn]:
    """hit@k, recall@k and RR (reciprocal rank) from the retrieval stage's metrics."""
    k = next(
        (
            metrics["k"]
            for case in cases
            if (metrics := _retrieval_metrics(case)) and metrics.get("k") is not None
        ),
        None,
    )
    at = f"@{k}" if k is not None else ""

    def hit(case: Case) -> str:
        value = _retrieval_metrics(case).get("hit_at_k")
        return "–" if value is None else ("yes" if value == 1.0 else "no")

    def metric(key: str) -> Callable[[Case], str]:
        return lambda case: fmt_score(_number(_retrieval_metrics(case).get(key)))

    return [
        CaseColumn("hit", f"hit{at}", "r", hit),
        CaseColumn("recall", f"recall{at}", "r", metric("recall_at_k"), numeric=True),
        CaseColumn("rr", "RR", "r", metric("mrr"), numeric=True),
    ]


def _retrieval_metrics(case: Case) -> Mapping[str, Any]:
    entry = _entry(case, "retrieval")
    if entry is None or stage_status(entry) == "skipped":
        return {}
    metrics = entry.get("metrics")
    return metrics if isinstance(metrics, Mapping) else {}


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)
