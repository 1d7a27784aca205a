"""report.md's sections case by case: the failing cases (what the first failing stage
compared), every case with `--eval-report-cases all`, the repeated runs of `--eval-runs` and the
judge calibration's test cases."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..core.outcomes import FAILING, case_label, failure_of
from ..domain.calibration_agreement import agreement_view
from ..domain.calibration_scoring import case_rows, figures_rows
from .case_table import case_table
from .formatting import fmt_score
from .markdown_table import CellLines, escape_cell, markdown_table, rows_left_out

FAILING_ROWS_CAP = 50
# Disagreements listed per judge and stage (the dashboard lists all).
DISAGREEMENT_ROWS_CAP = 200


def failing_section(cases: Sequence[Mapping[str, Any]]) -> list[str]:
    """The failing cases, at most FAILING_ROWS_CAP: outcome, first failing stage, what it saw."""
    failing = [c for c in cases if c["outcome"] in FAILING]
    if not failing:
        return []
    rows: list[tuple[object, ...]] = []
    for case in failing[:FAILING_ROWS_CAP]:
        stage, reason = failure_of(case)
        rows.append((case_label(case), case["outcome"], stage or "–", reason, _happened(case)))
    header = ["case", "outcome", "first failing stage", "reason", "what happened"]
    if not any(row[-1] for row in rows):  # stale, missing or errors only: nothing was scored
        header, rows = header[:-1], [row[:-1] for row in rows]
    lines = [f"### Failing cases ({len(failing)})", ""]
    lines += markdown_table(header, rows)
    lines += rows_left_out(len(failing), FAILING_ROWS_CAP)
    lines.append("")
    return lines


def all_cases_section(doc: Mapping[str, Any]) -> list[str]:
    """`--eval-report-cases all`: every case, a table per suite (seed 003's per-case table):
    the tools called, retrieval's hit, recall and RR, each stage's score, report-only stages
    included, and the first failure; the columns of the stages some case of the suite ran."""
    by_suite: dict[str, list[Mapping[str, Any]]] = {}
    for case in doc["cases"]:
        by_suite.setdefault(str(case.get("suite") or "eval cases"), []).append(case)
    lines = [f"### All cases ({len(doc['cases'])})", ""]
    for suite in sorted(by_suite):
        table = case_table(by_suite[suite], doc.get("stage_order") or [])
        if len(by_suite) > 1:
            lines += [f"#### {escape_cell(suite)} ({len(by_suite[suite])})", ""]
        lines += markdown_table(table.header, table.rows, table.align)
        if table.report_only:
            note = f"report-only (never fail a case): {', '.join(table.report_only)}"
            lines += ["", f"_{escape_cell(note, 1000)}_"]
        lines.append("")
    return lines


def _happened(case: Mapping[str, Any]) -> CellLines:
    """What the first failing stage compared (the calls made and expected, the retrieved and
    expected ids, the answer), a line each: `called: search_kb(query='…')`."""
    details = (case.get("first_failure") or {}).get("details") or []
    return CellLines(
        f"{line[0]}: {line[1]}"
        for line in details
        if isinstance(line, Sequence) and not isinstance(line, str) and len(line) == 2
    )


def runs_section(
    section: Mapping[str, Any] | None, cases: Sequence[Mapping[str, Any]]
) -> list[str]:
    """--eval-runs: pass@k and pass^k, overall and per stage, then passed_runs/K per case."""
    if not section:
        return []
    ks = list(section["pass_at_k"])
    header = ["", *[f"pass@{k}" for k in ks], *[f"pass^{k}" for k in ks[1:]]]

    def row(name: str, estimates: Mapping[str, Any]) -> list[str]:
        at, hat = estimates["pass_at_k"], estimates["pass_hat_k"]
        return [name, *[fmt_score(at.get(k)) for k in ks], *[fmt_score(hat.get(k)) for k in ks[1:]]]

    rows = [row("all gating stages (the case)", section)]
    rows += [row(name, est) for name, est in section["stages"].items()]
    lines = [f"### Repeated runs (up to {section['k']} a case)", ""]
    lines += markdown_table(header, rows, ["l", *["r"] * (len(header) - 1)])
    per_case = [
        (case_label(c), f"{c['runs']['passed_runs']}/{c['runs']['k']}", c["outcome"])
        for c in cases
        if c.get("runs")
    ]
    if per_case:
        lines.append("")
        lines += markdown_table(["case", "passed runs", "outcome"], per_case[:FAILING_ROWS_CAP])
        lines += rows_left_out(len(per_case), FAILING_ROWS_CAP)
    lines += [
        "",
        "_pass@k: at least one of k runs passes; pass^k: all k pass (unbiased "
        "estimates from each case's n runs and c passes)._",
        "",
    ]
    return lines


def calibration_section(section: Mapping[str, Any] | None) -> list[str]:
    """The judge calibration: one row per judge test case, then the figures per stage and
    judge (see docs/judges.md#calibrating-a-judge)."""
    if not section:
        return []
    cases, figures = case_rows(section), figures_rows(section)
    lines = ["### Judge calibration", ""]
    lines += markdown_table(cases[0], cases[1 : FAILING_ROWS_CAP + 1])
    lines += rows_left_out(len(cases) - 1, FAILING_ROWS_CAP)
    lines.append("")
    lines += markdown_table(figures[0], figures[1:], ["l", "l", *["r"] * (len(figures[0]) - 2)])
    lines += [
        "",
        "_A case counts as right only when every repeat is: caught = every repeat "
        "failed the planted defect, ok = every repeat passed the clean control._",
        "",
    ]
    return lines + _agreement(section.get("agreement") or [])


def _agreement(groups: Sequence[Mapping[str, Any]]) -> list[str]:
    """Per stage and judge: how far the judge agrees with people's labels, the threshold that
    agrees best, and the items they disagree on (docs/judges.md#agreement-thresholds-and-two-
    judges)."""
    lines: list[str] = []
    for view in map(agreement_view, groups):
        lines += [
            f"#### Agreement with people: {escape_cell(view['title'])}",
            "",
            escape_cell("; ".join(view["headline"]), 1000),
            "",
        ]
        for table in view["tables"]:
            lines += [*markdown_table(table[0], table[1:], ["l", *["r"] * (len(table[0]) - 1)])]
            lines.append("")
        if view["notes"]:
            lines += [*(f"- {escape_cell(note, 1000)}" for note in view["notes"]), ""]
        header, *rows = view["disagreements"]
        lines += [f"Items the judge and people disagree on: {len(rows)}", ""]
        if rows:
            lines += markdown_table(header, rows[:DISAGREEMENT_ROWS_CAP])
            lines += [*rows_left_out(len(rows), DISAGREEMENT_ROWS_CAP), ""]
    return lines
