"""The SVG geometry of the pages' charts, rendered on the server (no script draws them): bars
with interval whiskers, score histograms. User units are CSS pixels at 100%.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.names import clip

# A chart of one row a name: its labels, then the plot, then each row's text.
LABEL_W = 190  # the label column
PLOT_W = 420  # the plot
ROW_H = 24  # one row
TOP = 22  # above the first row: the axis ticks
LABEL_CHARS = 26  # longer labels are cut (the full one is the row's tooltip)
# A score histogram of one stage.
HIST_W = 200
HIST_H = 56


def interval_chart(
    rows: Sequence[tuple[str, float | None, Sequence[float] | None, str]],
) -> dict[str, Any]:
    """Horizontal bars on a [0, 1] axis with whiskers: (label, value, interval, text)."""

    def x(v: float) -> float:
        return round(LABEL_W + min(max(v, 0.0), 1.0) * PLOT_W, 1)

    out_rows = []
    for i, (label, value, ci, text) in enumerate(rows):
        y = TOP + i * ROW_H
        row: dict[str, Any] = {
            "label": clip(label, LABEL_CHARS, one_line=False, ellipsis="…"),
            "full_label": label,
            "text": text,
            "y": y,
            "ty": y + 15,
            "bar_y": y + 5,
            "bar_w": round(x(value) - LABEL_W, 1) if value is not None else 0,
            "whisker": None,
        }
        if ci:
            row["whisker"] = {
                "x1": x(ci[0]),
                "x2": x(ci[1]),
                "y": y + 11,
                "y1": y + 6,
                "y2": y + 16,
            }
        out_rows.append(row)
    ticks = [{"x": x(t), "label": f"{t:g}"} for t in (0.0, 0.25, 0.5, 0.75, 1.0)]
    return {
        "rows": out_rows,
        "ticks": ticks,
        "x0": LABEL_W,
        "text_x": LABEL_W + PLOT_W + 10,
        "width": LABEL_W + PLOT_W + 190,
        "height": TOP + len(rows) * ROW_H + 4,
        "axis_bottom": TOP + len(rows) * ROW_H,
    }


def histogram_bars(counts: Sequence[int]) -> dict[str, Any]:
    """SVG geometry for a 10-bin score histogram over [0, 1]."""
    bins = len(counts) or 1
    bw = HIST_W / bins
    top = max(counts) if counts else 0
    bars = []
    for i, c in enumerate(counts):
        h = round(HIST_H * c / top, 1) if top else 0
        lo, hi = i / bins, (i + 1) / bins
        bars.append(
            {
                "x": round(i * bw + 1, 1),
                "w": round(bw - 2, 1),
                "y": round(HIST_H - h, 1),
                "h": h,
                "title": f"{lo:.1f}–{hi:.1f}: {c} case{'s' if c != 1 else ''}",
            }
        )
    return {"bars": bars, "width": HIST_W, "height": HIST_H, "total": sum(counts)}
