"""compare.md: the comparison as GitHub-flavoured markdown (every cell escaped as in report.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...domain.calibration_agreement import kappa_text
from ...domain.stages.judged import scores_text
from ..formatting import fmt_ci, fmt_delta, fmt_int, fmt_ms, fmt_pct, fmt_pct_ci, fmt_score, fmt_usd
from ..markdown_table import escape_cell, markdown_table

FLIPPED_ROWS_CAP = 100

Comparison = Mapping[str, Any]


def render_compare_markdown(cmp: Comparison) -> str:
    a, b = cmp["runs"]["a"], cmp["runs"]["b"]
    lines = [f"## pytest-evalcases: {escape_cell(a['name'])} vs {escape_cell(b['name'])}", ""]
    lines += _runs(cmp)
    lines += _stages(cmp)
    lines += _totals(cmp)
    lines += _categories(cmp)
    lines += _judges(cmp)
    lines += _flipped(cmp)
    lines += _cost(cmp)
    lines += _break_even(cmp)
    return "\n".join(lines).rstrip() + "\n"


def run_label(run: Mapping[str, Any]) -> str:
    """A run in one line: its mode, judge, commit (and uncommitted changes), start and id."""
    parts = [f"{run[k]}" for k in ("mode", "judge") if run.get(k)]
    if run.get("git_commit"):
        parts.append(f"commit {str(run['git_commit'])[:12]}")
    if run.get("uncommitted_changes"):
        parts.append("uncommitted changes")
    if run.get("started"):
        parts.append(str(run["started"]))
    if run.get("run_id"):
        parts.append(f"run {run['run_id']}")
    return " · ".join(parts) or "-"


def shared_text(cmp: Comparison) -> str:
    counts = cmp["cases"]
    return (
        f"{counts['shared']} shared cases (compared); {counts['only_a']} only in "
        f"{cmp['runs']['a']['name']}, {counts['only_b']} only in {cmp['runs']['b']['name']} "
        "(counted, not compared)"
    )


def _runs(cmp: Comparison) -> list[str]:
    rows = []
    for side in ("a", "b"):
        run, rate = cmp["runs"][side], cmp["pass_rate"][side]
        rows.append(
            [
                f"{side.upper()}: {run['name']}",
                run_label(run),
                run["cases"],
                f"{fmt_pct(rate['pass_rate'])} {fmt_pct_ci(rate['pass_rate_ci95'])} "
                f"({rate['passed']}/{rate['decided']})",
            ]
        )
    header = ["run", "details", "cases", "pass rate on shared cases (95% Wilson)"]
    return [escape_cell(shared_text(cmp), 1000), "", *markdown_table(header, rows), ""]


def _stages(cmp: Comparison) -> list[str]:
    a, b = cmp["runs"]["a"]["name"], cmp["runs"]["b"]["name"]
    rows = []
    for name in cmp["stage_order"]:
        s = cmp["stages"][name]
        rows.append(
            [
                name,
                s["cases"],
                fmt_score(s["a_mean"]),
                fmt_ci(s["a_ci95"]),
                fmt_score(s["b_mean"]),
                fmt_ci(s["b_ci95"]),
                fmt_delta(s["delta"]),
                fmt_ci(s["delta_ci95"]),
                s["verdict"] or "–",
            ]
        )
    head = [
        f"### Stages (B − A over the cases both scored; paired bootstrap, seed "
        f"{cmp['seed']}, {cmp['resamples']} resamples)",
        "",
    ]
    header = [
        "stage",
        "cases",
        f"A {a}",
        "A 95% CI",
        f"B {b}",
        "B 95% CI",
        "B − A",
        "95% CI",
        "verdict",
    ]
    return [*head, *markdown_table(header, rows), ""]


def category_cells(name: str, sides: Mapping[str, Any]) -> tuple[list[str], float | None]:
    """A category's row (passed, rate and interval on each side, B − A in points) and the
    difference of its pass rates (None when a side decided no case)."""
    ra, rb = sides["a"], sides["b"]
    delta = (
        rb["pass_rate"] - ra["pass_rate"]
        if ra["pass_rate"] is not None and rb["pass_rate"] is not None
        else None
    )
    cells = [name]
    for rate in (ra, rb):
        cells += [
            f"{rate['passed']}/{rate['decided']}",
            fmt_pct(rate["pass_rate"]),
            fmt_pct_ci(rate["pass_rate_ci95"]),
        ]
    cells.append("–" if delta is None else f"{100 * delta:+.1f} pts")
    return cells, delta


def _categories(cmp: Comparison) -> list[str]:
    if not cmp["categories"]:
        return []
    rows = [category_cells(name, sides)[0] for name, sides in cmp["categories"].items()]
    header = [
        "category",
        "A passed",
        "A rate",
        "A 95% CI",
        "B passed",
        "B rate",
        "B 95% CI",
        "B − A",
    ]
    return ["### Pass rate by category (shared cases)", "", *markdown_table(header, rows), ""]


def _totals(cmp: Comparison) -> list[str]:
    if not cmp.get("totals"):
        return []
    rows = [category_cells(name, sides)[0] for name, sides in cmp["totals"].items()]
    header = ["total", "A passed", "A rate", "A 95% CI", "B passed", "B rate", "B 95% CI", "B − A"]
    return ["### Pass rate by named total (shared cases)", "", *markdown_table(header, rows), ""]


JUDGES_HEADER = [
    "stage",
    "items graded by both",
    "A kappa [95% CI]",
    "B kappa [95% CI]",
    "B − A [95% paired CI]",
    "only A right",
    "only B right",
    "McNemar exact p",
]


def judge_rows(cmp: Comparison) -> list[list[str]]:
    """Per stage, the two judges against the same labels (rows of JUDGES_HEADER)."""
    rows = []
    for found in cmp.get("calibration") or []:
        delta = "–" if found["delta"] is None else f"{found['delta']:+.2f}"
        if found["delta_ci95"]:
            delta += f" [{found['delta_ci95'][0]:+.2f}, {found['delta_ci95'][1]:+.2f}]"
        rows.append(
            [
                found["stage"],
                str(found["graded_by_both"]),
                kappa_text(found["a"]["kappa"], found["a"]["kappa_ci95"]),
                kappa_text(found["b"]["kappa"], found["b"]["kappa_ci95"]),
                delta,
                str(found["mcnemar"]["b"]),
                str(found["mcnemar"]["c"]),
                f"{found['mcnemar']['p']:.3g}",
            ]
        )
    return rows


def call_text(call: Mapping[str, Any]) -> str:
    """`fail [0.20]: the answer names a different year`."""
    shown = f"{call['judge']} {scores_text(list(call['scores']))}"
    return f"{shown}: {call['reason']}" if call["reason"] else shown


def judge_split_rows(found: Mapping[str, Any]) -> list[list[str]]:
    """The items only one of the two judges got right: case, label, each judge's call."""
    return [
        [item["case"], str(item["label"]), call_text(item["a"]), call_text(item["b"])]
        for item in found["disagreements"]
    ]


def _judges(cmp: Comparison) -> list[str]:
    if not cmp.get("calibration"):
        return []
    names = cmp["runs"]["a"]["name"], cmp["runs"]["b"]["name"]
    lines = [
        "### Judges against people (the same labelled items)",
        "",
        escape_cell(
            f"A: {names[0]}, B: {names[1]}. Cohen's kappa of each judge's calls against the "
            "labels, the difference with a paired bootstrap interval (items resampled with "
            "both judges' calls), and McNemar's test on the items only one judge got right.",
            1000,
        ),
        "",
        *markdown_table(JUDGES_HEADER, judge_rows(cmp), ["l", *["r"] * 7]),
        "",
    ]
    for found in cmp["calibration"]:
        if found["labels_differ"]:
            lines += [
                f"_{found['labels_differ']} {escape_cell(found['stage'])} item(s) labelled "
                "differently in the two runs: not compared._",
                "",
            ]
    for found in cmp["calibration"]:
        rows = judge_split_rows(found)
        lines += [f"#### {escape_cell(found['stage'])}: the judges disagree on {len(rows)}", ""]
        if rows:
            lines += markdown_table(["case", "people", "A", "B"], rows[:FLIPPED_ROWS_CAP])
            if len(rows) > FLIPPED_ROWS_CAP:
                lines += ["", f"… and {len(rows) - FLIPPED_ROWS_CAP} more (compare.html lists all)"]
            lines.append("")
    return lines


def flip_text(side: Mapping[str, Any]) -> str:
    if side["stage"] is None and not side["reason"]:
        return str(side["outcome"])
    where = f" at {side['stage']}" if side["stage"] else ""
    return (
        f"{side['outcome']}{where}: {side['reason']}"
        if side["reason"]
        else (f"{side['outcome']}{where}")
    )


def _flipped(cmp: Comparison) -> list[str]:
    lines: list[str] = []
    for key, title in (
        ("to_failing", "Passed in A, not in B"),
        ("to_passing", "Not passed in A, passed in B"),
    ):
        flips = cmp["flipped"][key]
        lines += [f"### {title} ({len(flips)})", ""]
        if not flips:
            lines += ["None.", ""]
            continue
        rows = [[f["case"], flip_text(f["a"]), flip_text(f["b"])] for f in flips[:FLIPPED_ROWS_CAP]]
        lines += [*markdown_table(["case", "A", "B"], rows), ""]
        if len(flips) > FLIPPED_ROWS_CAP:
            lines += [f"… and {len(flips) - FLIPPED_ROWS_CAP} more (compare.html lists all)", ""]
    return lines


def cost_rows(cmp: Comparison) -> list[list[str]]:
    """[what, A, B] rows: cost, tokens and median latency of the system and the judge."""
    rows = []
    for part in ("system", "judge"):
        ca, cb = cmp["cost"]["a"][part], cmp["cost"]["b"][part]
        rows.append([f"{part} cost", fmt_usd(ca["cost_usd"]), fmt_usd(cb["cost_usd"])])
        rows.append([f"{part} tokens", fmt_int(ca["total_tokens"]), fmt_int(cb["total_tokens"])])
        rows.append(
            [
                f"{part} median latency",
                fmt_ms(ca["latency_ms_median"]),
                fmt_ms(cb["latency_ms_median"]),
            ]
        )
    rows.append(
        [
            "recorded cost, in all",
            fmt_usd(cmp["cost"]["a"]["recorded_cost_usd"]),
            fmt_usd(cmp["cost"]["b"]["recorded_cost_usd"]),
        ]
    )
    return rows


def _cost(cmp: Comparison) -> list[str]:
    header = ["", f"A {cmp['runs']['a']['name']}", f"B {cmp['runs']['b']['name']}"]
    return [
        "### Cost and latency (shared cases, as recorded)",
        "",
        *markdown_table(header, cost_rows(cmp)),
        "",
    ]


def _tokens(value: float) -> str:
    """Tokens per question: whole when whole (450), else to one decimal (333.3)."""
    return f"{value:,.0f}" if value == int(value) else f"{value:,.1f}"


def break_even_text(break_even: Mapping[str, Any]) -> str:
    """The break-even in one sentence: after how many questions, or never."""
    ingestion = f"ingestion ({fmt_int(break_even['ingestion_tokens'])} tokens)"
    memory, full = break_even["per_question_memory"], break_even["per_question_full"]
    if break_even["never"]:
        return (
            f"Break-even: {ingestion} never pays for itself: the memory run spends "
            f"{_tokens(memory)} tokens per question, the full-context run {_tokens(full)}."
        )
    questions = break_even["questions"]
    return (
        f"Break-even: {ingestion} pays for itself after {fmt_int(questions)} "
        f"question{'s' * (questions != 1)} ({_tokens(memory)} tokens per question with memory, "
        f"{_tokens(full)} with the full context)."
    )


def break_even_note(cmp: Comparison) -> str:
    """Which run is which: the memory run is the one with an ingestion phase."""
    memory = cmp["break_even"]["memory"]
    full = "b" if memory == "a" else "a"
    names = cmp["runs"]
    return (
        f"Memory run: {memory.upper()} {names[memory]['name']} (the run with an ingestion "
        f"phase); full-context run: {full.upper()} {names[full]['name']}. Tokens per question: "
        "the system's recorded tokens over the shared cases with recorded usage."
    )


def _break_even(cmp: Comparison) -> list[str]:
    """Cognee's token break-even, when exactly one run ingested (see `token_break_even`)."""
    if not cmp.get("break_even"):
        return []
    return [
        "### Token break-even",
        "",
        escape_cell(break_even_text(cmp["break_even"]), 1000),
        "",
        f"_{escape_cell(break_even_note(cmp), 1000)}_",
        "",
    ]
