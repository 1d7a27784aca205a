"""report.md: a short markdown summary sized for a PR comment or a CI step summary."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core.outcomes import FAILING, OUTCOMES, SUMMARY_KEYS, case_label, failure_of
from ..domain.calibration_scoring import case_rows, figures_rows
from .formatting import (
    fmt_ci,
    fmt_delta,
    fmt_int,
    fmt_ms,
    fmt_pct,
    fmt_pct_ci,
    fmt_score,
    fmt_usd,
    uncommitted_changes,
)
from .ingestion import TABLE_ALIGN, TABLE_HEADER, table_rows, total_cells
from .markdown_table import CellLines, escape_cell, markdown_table
from .stage_values import stage_score
from .suite_lines import suite_lines
from .timings import TIMINGS_ALIGN, TIMINGS_HEADER, timing_rows

FAILING_ROWS_CAP = 50
BASELINE_ROWS_CAP = 50
GROUP_ROWS_CAP = 50  # groups may be user ids: thousands; the lowest pass rates are shown
INGESTION_ROWS_CAP = 50  # users, in (suite, user) order; the total row counts them all


def render_markdown(doc: Mapping[str, Any]) -> str:
    """Render the results document as markdown (headline, baseline, stages, ...)."""
    out: list[str] = []
    out += _headline(doc)
    out += _totals(doc)
    if doc.get("baseline"):
        out += _baseline(doc["baseline"])
    out += _stages(doc)
    out += _categories(doc)
    out += _groups(doc)
    out += _ingestion(doc.get("ingestion"))
    out += _completeness(doc.get("completeness_vs_accuracy"))
    out += _calibration(doc.get("calibration"))
    out += _runs(doc.get("runs"), doc["cases"])
    out += _timings(doc.get("timings"))
    out += _failing(doc["cases"])
    if (doc.get("run") or {}).get("report_cases") == "all":
        out += _all_cases(doc)
    return "\n".join(out).rstrip() + "\n"


def outcome_counts_text(summary: Mapping[str, Any]) -> str:
    parts = []
    for outcome in OUTCOMES:
        n = summary.get(SUMMARY_KEYS[outcome], 0)
        if n or outcome in ("passed", "failed"):
            parts.append(f"{n} {SUMMARY_KEYS[outcome]}")
    if summary.get("judge_errors"):
        parts.append(f"{summary['judge_errors']} with judge errors")
    return " · ".join(parts)


def cost_text(cost: Mapping[str, Any] | None) -> str:
    if not cost:
        return "no cost data"
    sys_, judge = cost["system"], cost["judge"]
    text = (
        f"recorded cost {fmt_usd(cost['recorded_cost_usd'])} "
        f"(system {fmt_usd(sys_['cost_usd'])}, {fmt_int(sys_['total_tokens'])} tokens, "
        f"median latency {fmt_ms(sys_['latency_ms_median'])}; "
        f"judge {fmt_usd(judge['cost_usd'])}, {fmt_int(judge['total_tokens'])} tokens, "
        f"median latency {fmt_ms(judge['latency_ms_median'])})"
    )
    if cost.get("replay_cost_usd") is not None:
        text += f"; this replay cost {fmt_usd(cost['replay_cost_usd'])}"
    return text


def _headline(doc: Mapping[str, Any]) -> list[str]:
    summary, run = doc["summary"], doc.get("run") or {}
    suites = ", ".join(summary.get("suites") or []) or "eval cases"
    lines = [f"## pytest-evalcases: {escape_cell(suites)}", ""]
    lines.append(f"**{summary['cases']} cases**: {outcome_counts_text(summary)}")
    lines.append("")
    for suite, line in suite_lines(doc["cases"], doc.get("stage_order") or []):
        lines += [f"- **{escape_cell(suite)}**: {escape_cell(line)}"]
    if summary.get("suites"):
        lines.append("")
    if summary.get("pass_rate") is not None:
        lines.append(
            f"Pass rate **{fmt_pct(summary['pass_rate'])}** "
            f"(95% Wilson CI {fmt_pct_ci(summary['pass_rate_ci95'])}; "
            f"passed + xpassed over {summary['decided']} judged cases)"
        )
        lines.append("")
    lines.append(f"Cost: {cost_text(doc.get('cost'))}")
    meta = [
        f"{label} {escape_cell(run[k], 60)}"
        for k, label in (("mode", "mode"), ("judge", "judge"), ("plugin_version", "plugin"))
        if run.get(k)
    ]
    if run.get("git_commit"):
        meta.append(f"commit {escape_cell(str(run['git_commit'])[:12])}")
    if uncommitted_changes(run):
        meta.append("**uncommitted changes**")
    if run.get("run_id"):
        meta.append(f"run {escape_cell(str(run['run_id']), 60)}")
    if run.get("shards"):
        meta.append(f"{run['shards']} shards")
    if meta:
        lines += ["", "Run: " + " · ".join(meta)]
    lines.append("")
    return lines


def _baseline(cmp: Mapping[str, Any]) -> list[str]:
    regs, drops = cmp["regressions"], cmp["stage_drops"]
    verdict = "**FAILED**" if cmp["failed"] else "passed"
    lines = [
        "### Regressions vs baseline",
        "",
        f"Baseline gate {verdict}: {len(regs)} regression(s), {len(drops)} stage drop(s) "
        f"(tolerance {cmp['tolerance']:.3f}); {len(cmp['fixed'])} fixed, "
        f"{len(cmp['new'])} new, {len(cmp['removed'])} removed, "
        f"{cmp['still_failing']} still failing.",
        "",
    ]
    if regs:
        rows = [
            (r["case"], r["baseline_outcome"], r["outcome"], r.get("stage") or "–", r.get("reason"))
            for r in regs[:BASELINE_ROWS_CAP]
        ]
        lines += markdown_table(["case", "was", "now", "failing stage", "reason"], rows)
        lines += _more(len(regs), BASELINE_ROWS_CAP)
        lines.append("")
    if drops:
        lines += markdown_table(
            ["dropped stage", "baseline", "current", "delta"],
            [
                (
                    d["stage"],
                    fmt_score(d["baseline_mean"]),
                    fmt_score(d["current_mean"]),
                    fmt_delta(d["delta"]),
                )
                for d in drops
            ],
            ["l", "r", "r", "r"],
        )
        lines.append("")
    if cmp.get("unstable"):
        rows = [
            (r["case"], r["baseline_outcome"], r["outcome"], r.get("stage") or "–")
            for r in cmp["unstable"][:BASELINE_ROWS_CAP]
        ]
        lines += [
            "Unstable (not counted): flips that verdicts whose repeats disagree explain alone",
            "",
        ]
        lines += markdown_table(["case", "was", "now", "unstable stage"], rows)
        lines += _more(len(cmp["unstable"]), BASELINE_ROWS_CAP)
        lines.append("")
    if cmp["fixed"]:
        shown = ", ".join(escape_cell(r["case"], 80) for r in cmp["fixed"][:20])
        more = f" and {len(cmp['fixed']) - 20} more" if len(cmp["fixed"]) > 20 else ""
        lines += [f"Fixed: {shown}{more}", ""]
    deltas = cmp.get("stage_deltas") or {}
    if deltas:
        rows = [
            (
                name,
                fmt_score(d["baseline_mean"]),
                fmt_score(d["current_mean"]),
                fmt_delta(d["delta"]),
                fmt_ci(d["ci95"]),
                d["cases"],
            )
            for name in (cmp.get("stage_order") or deltas)
            for d in [deltas[name]]
        ]
        lines += markdown_table(
            ["stage (paired cases)", "baseline", "current", "delta", "current 95% CI", "cases"],
            rows,
            ["l", "r", "r", "r", "l", "r"],
        )
        lines.append("")
    return lines


def _stages(doc: Mapping[str, Any]) -> list[str]:
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
            k = s.get("k")
            metrics = " · ".join(
                f"{label} {fmt_score(s.get(key))}"
                for label, key in (
                    ("hit", "hit_at_k"),
                    ("recall", "recall_at_k"),
                    ("precision", "precision_at_k"),
                    ("MRR", "mrr"),
                    ("nDCG", "ndcg_at_k"),
                    ("MAP", "map"),
                )
            )
            lines += ["", f"{escape_cell(name)} @ k={escape_cell(k)}: {metrics}"]
        if "hallucination_rate" in s:
            rates = " · ".join(
                f"{label} {fmt_score(s.get(key))}"
                for label, key in (
                    ("precision", "precision"),
                    ("recall", "recall"),
                    ("hallucination", "hallucination_rate"),
                    ("omission", "omission_rate"),
                )
            )
            lines += ["", f"{escape_cell(name)}: {rates}"]
    lines.append("")
    return lines


def _totals(doc: Mapping[str, Any]) -> list[str]:
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


def _categories(doc: Mapping[str, Any]) -> list[str]:
    cats = doc.get("categories") or {}
    if not cats:
        return []
    lines = ["### Categories", ""]
    lines += _breakdown_table("category", cats, list(cats), [])
    lines.append("")
    return lines


def _groups(doc: Mapping[str, Any]) -> list[str]:
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


def _ingestion(section: Mapping[str, Any] | None) -> list[str]:
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


def _completeness(cva: Mapping[str, Any] | None) -> list[str]:
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


def _runs(section: Mapping[str, Any] | None, cases: Sequence[Mapping[str, Any]]) -> list[str]:
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
        lines += _more(len(per_case), FAILING_ROWS_CAP)
    lines += [
        "",
        "_pass@k: at least one of k runs passes; pass^k: all k pass (unbiased "
        "estimates from each case's n runs and c passes)._",
        "",
    ]
    return lines


def _calibration(section: Mapping[str, Any] | None) -> list[str]:
    """The judge calibration: one row per judge test case, then the figures per stage and
    judge (see docs/judges.md#calibrating-a-judge)."""
    if not section:
        return []
    cases, figures = case_rows(section), figures_rows(section)
    lines = ["### Judge calibration", ""]
    lines += markdown_table(cases[0], cases[1 : FAILING_ROWS_CAP + 1])
    lines += _more(len(cases) - 1, FAILING_ROWS_CAP)
    lines.append("")
    lines += markdown_table(figures[0], figures[1:], ["l", "l", *["r"] * (len(figures[0]) - 2)])
    lines += [
        "",
        "_A case counts as right only when every repeat is: caught = every repeat "
        "failed the planted defect, ok = every repeat passed the clean control._",
        "",
    ]
    return lines


def _failing(cases: Sequence[Mapping[str, Any]]) -> list[str]:
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
    lines += _more(len(failing), FAILING_ROWS_CAP)
    lines.append("")
    return lines


def _timings(section: Mapping[str, Any] | None) -> list[str]:
    """Each step's mean and p95, when the traces name their steps (`"timings"`)."""
    rows = timing_rows(section)
    if not rows:
        return []
    return ["### Timings", "", *markdown_table(TIMINGS_HEADER, rows, TIMINGS_ALIGN), ""]


def _all_cases(doc: Mapping[str, Any]) -> list[str]:
    """`--eval-report-cases all`: every case, with each gating stage's score and the first
    failure (the per-case table the per-stage evaluations publish)."""
    gating = [name for name in doc.get("stage_order") or [] if doc["stages"][name]["gating"]]
    rows = []
    for case in doc["cases"]:
        stages = case.get("stages") or {}
        scores = [
            fmt_score(stage_score(stages[name])) if name in stages else "–" for name in gating
        ]
        stage, reason = failure_of(case)
        failure = f"{stage}: {reason}" if stage else (reason or "–")
        rows.append((case_label(case), case.get("category") or "–", *scores, failure))
    header = ["case", "category", *gating, "first failure"]
    align = ["l", "l"] + ["r"] * len(gating) + ["l"]
    return [f"### All cases ({len(rows)})", "", *markdown_table(header, rows, align), ""]


def _happened(case: Mapping[str, Any]) -> CellLines:
    """What the first failing stage compared (the calls made and expected, the retrieved and
    expected ids, the answer), a line each: `called: search_kb(query='…')`."""
    details = (case.get("first_failure") or {}).get("details") or []
    return CellLines(
        f"{line[0]}: {line[1]}"
        for line in details
        if isinstance(line, Sequence) and not isinstance(line, str) and len(line) == 2
    )


def _more(total: int, cap: int) -> list[str]:
    return ["", f"_…and {total - cap} more (see dashboard.html)_"] if total > cap else []


def append_step_summary(md: str, environ: Mapping[str, str]) -> Path | None:
    """Append markdown to $GITHUB_STEP_SUMMARY when set; return the file written, if any."""
    target = environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return None
    path = Path(target)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(md if md.endswith("\n") else md + "\n")
    return path
