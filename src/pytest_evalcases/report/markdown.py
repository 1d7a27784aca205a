"""report.md: a short markdown summary sized for a PR comment or a CI step summary. This module
puts the document together (the headline, then the sections in order) and appends it to a GitHub
step summary; the sections live in `markdown_baseline.py`, `markdown_breakdowns.py` and
`markdown_cases.py`, the tables in `markdown_table.py`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core.outcomes import OUTCOMES, SUMMARY_KEYS
from .formatting import (
    fmt_int,
    fmt_ms,
    fmt_pct,
    fmt_pct_ci,
    fmt_usd,
    input_manifest_parts,
    uncommitted_changes,
)
from .markdown_baseline import baseline_section
from .markdown_breakdowns import (
    categories_section,
    completeness_section,
    groups_section,
    ingestion_section,
    stages_section,
    totals_section,
)
from .markdown_cases import all_cases_section, calibration_section, failing_section, runs_section
from .markdown_table import escape_cell, markdown_table, wrapped_item
from .suite_lines import suite_lines
from .timings import TIMINGS_ALIGN, TIMINGS_HEADER, timing_rows


def render_markdown(doc: Mapping[str, Any]) -> str:
    """Render the results document as markdown (headline, baseline, stages, ...)."""
    out: list[str] = []
    out += _headline(doc)
    out += totals_section(doc)
    if doc.get("baseline"):
        out += baseline_section(doc["baseline"])
    out += stages_section(doc)
    out += categories_section(doc)
    out += groups_section(doc)
    out += ingestion_section(doc.get("ingestion"))
    out += completeness_section(doc.get("completeness_vs_accuracy"))
    out += calibration_section(doc.get("calibration"))
    out += runs_section(doc.get("runs"), doc["cases"])
    out += _timings(doc.get("timings"))
    out += failing_section(doc["cases"])
    if (doc.get("run") or {}).get("report_cases") == "all":
        out += all_cases_section(doc)
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
        lines += wrapped_item(f"- **{escape_cell(suite)}**: ", line)
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
    authored = _input_manifest_line((run.get("config") or {}).get("input"))
    if authored:
        lines += ["", authored]
    lines.append("")
    return lines


def _input_manifest_line(record: Mapping[str, Any] | None) -> str | None:
    """The authored input manifest the run obeyed: its file and hash, and what it fixed."""
    if not isinstance(record, Mapping):
        return None
    parts = input_manifest_parts(record.get("values") or {})
    head = (
        f"Input manifest: `{escape_cell(str(record.get('file')), 80)}` "
        f"(hash {escape_cell(str(record.get('hash'))[:12])})"
    )
    return head + (": " + " · ".join(escape_cell(part, 200) for part in parts) if parts else "")


def _timings(section: Mapping[str, Any] | None) -> list[str]:
    """Each step's mean and p95, when the traces name their steps (`"timings"`)."""
    rows = timing_rows(section)
    if not rows:
        return []
    return ["### Timings", "", *markdown_table(TIMINGS_HEADER, rows, TIMINGS_ALIGN), ""]


def append_step_summary(md: str, environ: Mapping[str, str]) -> Path | None:
    """Append markdown to $GITHUB_STEP_SUMMARY when set; return the file written, if any."""
    target = environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return None
    path = Path(target)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(md if md.endswith("\n") else md + "\n")
    return path
