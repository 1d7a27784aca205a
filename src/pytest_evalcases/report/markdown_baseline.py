"""report.md's baseline section: the gate's verdict, the regressed cases, the dropped stages,
the unstable flips, the fixed cases and each stage's paired delta (see report/baseline.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .formatting import fmt_ci, fmt_delta, fmt_score
from .markdown_table import escape_cell, markdown_table, rows_left_out

BASELINE_ROWS_CAP = 50


def baseline_section(cmp: Mapping[str, Any]) -> list[str]:
    """The gate against the baseline (`report.baseline.compare`): what regressed, what was fixed."""
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
        lines += rows_left_out(len(regs), BASELINE_ROWS_CAP)
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
        lines += rows_left_out(len(cmp["unstable"]), BASELINE_ROWS_CAP)
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
