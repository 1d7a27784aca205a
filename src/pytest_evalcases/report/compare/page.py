"""compare.html: one small offline page (inline CSS, an inline SVG chart, no script), every
string autoescaped, and a Content-Security-Policy that allows nothing but its own stylesheet."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...core.names import clip
from ..charts import LABEL_CHARS, LABEL_W, PLOT_W, ROW_H, TOP
from ..formatting import fmt_ci, fmt_delta, fmt_pct, fmt_pct_ci, fmt_score
from ..html import csp_hash, page_environment, static_file, static_markup
from .markdown import (
    JUDGES_HEADER,
    break_even_note,
    break_even_text,
    category_cells,
    cost_rows,
    flip_text,
    judge_rows,
    judge_split_rows,
    run_label,
    shared_text,
)

Comparison = Mapping[str, Any]


def render_compare_html(cmp: Comparison) -> str:
    style = static_file("compare.css")
    csp = f"default-src 'none'; style-src {csp_hash(style)}; base-uri 'none'; form-action 'none'"
    a, b = cmp["runs"]["a"], cmp["runs"]["b"]
    context = {
        "title": f"pytest-evalcases: {a['name']} vs {b['name']}",
        "csp": csp,
        "style": static_markup(style),  # our own static stylesheet; all data below is autoescaped
        "shared": shared_text(cmp),
        "runs": [_run_row(cmp, side) for side in ("a", "b")],
        "a_name": a["name"],
        "b_name": b["name"],
        "seed": cmp["seed"],
        "resamples": cmp["resamples"],
        "forest": forest_chart(cmp),
        "stages": [_stage_row(name, cmp["stages"][name]) for name in cmp["stage_order"]],
        "categories": [_category_row(name, sides) for name, sides in cmp["categories"].items()],
        "totals": [_category_row(name, sides) for name, sides in (cmp.get("totals") or {}).items()],
        "flipped": [
            {
                "title": title,
                "rows": [
                    {"case": f["case"], "a": flip_text(f["a"]), "b": flip_text(f["b"])}
                    for f in cmp["flipped"][key]
                ],
            }
            for key, title in (
                ("to_failing", "Passed in A, not in B"),
                ("to_passing", "Not passed in A, passed in B"),
            )
        ],
        "judges": (
            {
                "header": JUDGES_HEADER,
                "rows": judge_rows(cmp),
                "splits": [
                    {"stage": found["stage"], "rows": judge_split_rows(found)}
                    for found in cmp["calibration"]
                ],
            }
            if cmp.get("calibration")
            else None
        ),
        "cost": cost_rows(cmp),
        "break_even": (
            {"text": break_even_text(cmp["break_even"]), "note": break_even_note(cmp)}
            if cmp.get("break_even")
            else None
        ),
    }
    return page_environment().get_template("compare.html.j2").render(**context)


def _run_row(cmp: Comparison, side: str) -> dict[str, Any]:
    run, rate = cmp["runs"][side], cmp["pass_rate"][side]
    return {
        "side": side.upper(),
        "name": run["name"],
        "label": run_label(run),
        "cases": run["cases"],
        "rate": f"{fmt_pct(rate['pass_rate'])} {fmt_pct_ci(rate['pass_rate_ci95'])} "
        f"({rate['passed']}/{rate['decided']})",
    }


def _direction(verdict: str | None) -> str:
    return {"B higher": "up", "B lower": "down"}.get(verdict or "", "")


def _stage_row(name: str, s: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "cases": s["cases"],
        "a": fmt_score(s["a_mean"]),
        "a_ci": fmt_ci(s["a_ci95"]),
        "b": fmt_score(s["b_mean"]),
        "b_ci": fmt_ci(s["b_ci95"]),
        "delta": fmt_delta(s["delta"]),
        "delta_ci": fmt_ci(s["delta_ci95"]),
        "verdict": s["verdict"] or "–",
        "cls": _direction(s["verdict"]),
    }


def _category_row(name: str, sides: Mapping[str, Any]) -> dict[str, Any]:
    cells, delta = category_cells(name, sides)
    return {"cells": cells, "cls": "" if not delta else ("up" if delta > 0 else "down")}


def forest_chart(cmp: Comparison) -> dict[str, Any]:
    """Each stage's difference B − A as a point with its paired interval, on [-1, 1]."""

    def x(v: float) -> float:
        return round(LABEL_W + (min(max(v, -1.0), 1.0) + 1.0) / 2.0 * PLOT_W, 1)

    rows = []
    for name in cmp["stage_order"]:
        s = cmp["stages"][name]
        if s["delta"] is None:
            continue
        y = TOP + len(rows) * ROW_H
        ci = s["delta_ci95"]
        rows.append(
            {
                "name": name,
                "label": clip(name, LABEL_CHARS, one_line=False, ellipsis="…"),
                "x": x(s["delta"]),
                "ci": [x(ci[0]), x(ci[1])] if ci else None,
                "cy": y + 11,
                "ty": y + 15,
                "cls": _direction(s["verdict"]),
                "text": f"{fmt_delta(s['delta'])} {fmt_ci(s['delta_ci95'], 2)} (n={s['cases']})",
            }
        )
    ticks = [
        {"x": x(t), "label": f"{t:+g}" if t else "0", "zero": t == 0}
        for t in (-1.0, -0.5, 0.0, 0.5, 1.0)
    ]
    bottom = TOP + len(rows) * ROW_H
    return {
        "rows": rows,
        "ticks": ticks,
        "x0": LABEL_W,
        "text_x": LABEL_W + PLOT_W + 10,
        "width": LABEL_W + PLOT_W + 200,
        "height": bottom + 4,
        "bottom": bottom,
    }
