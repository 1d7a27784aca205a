"""Scoring calibration cases and summarising a judge's calibration (pure functions).

A case counts as right only when every repeat is right: a defect is `caught` when every repeat
fails it, else `MISSED`; a control is `ok` when every repeat passes it, else a `false alarm`.
Precision, recall, F1 and Cohen's kappa treat "the judge says fail" as the positive call, with
these case-level calls against `expect`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..core.agreement import Confusion, figures
from ..core.agreement import cohen_kappa as cohen_kappa  # its home; kept importable from here
from ..core.repeats import repeats_of
from .stages.base import StageResult
from .stages.judged import score_verdict, scores_text

CAUGHT, MISSED, FALSE_ALARM, OK = "caught", "MISSED", "false alarm", "ok"
# A case whose verdict is a judge error: listed, counted among the cases, never right or wrong.
JUDGE_ERROR = "judge error"
RIGHT = frozenset({CAUGHT, OK})


def case_status(expect: str, says_fail: Sequence[bool]) -> str:
    """The case's status from each repeat's call (True: the judge failed the material)."""
    if expect == "fail":
        return CAUGHT if all(says_fail) else MISSED
    return FALSE_ALARM if any(says_fail) else OK


def judged_repeats(
    stage: str, rule: Any, verdict: Mapping[str, Any]
) -> tuple[list[dict[str, Any]], list[StageResult]]:
    """Each repeat of a calibration verdict and its result under the stage's rule (its
    threshold, or its labels), as the case's item holds them to `expect`."""
    repeats = repeats_of(verdict)
    return repeats, [score_verdict(stage, rule, repeat) for repeat in repeats]


def case_message(stage: str, scores: Sequence[float], status: str, defect: str | None) -> str:
    """`faithfulness [1.00, 1.00, 1.00] MISSED: claims --format csv removes colour codes`."""
    shown = f"{stage} {scores_text(list(scores))} {status}"
    if defect:
        return f"{shown}: {defect}"
    if status == FALSE_ALARM:
        return f"{shown}: a repeat failed this clean control"
    return shown


def spread(scores: Sequence[float]) -> float:
    return max(scores) - min(scores) if scores else 0.0


def judge_figures(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Caught / missed defects, false alarms on controls, precision, recall, F1, kappa and the
    mean spread of repeat scores, over calibration rows of one stage and judge."""
    rows = list(rows)
    count = {
        status: sum(row["status"] == status for row in rows)
        for status in (CAUGHT, MISSED, FALSE_ALARM, OK)
    }
    tp, fn, fp, tn = count[CAUGHT], count[MISSED], count[FALSE_ALARM], count[OK]
    shares = figures(Confusion(tp, fn, fp, tn))
    spreads = [float(row["spread"]) for row in rows]
    return {
        "cases": len(rows),
        "defects": tp + fn,
        "caught": tp,
        "missed": fn,
        "controls": fp + tn,
        "false_alarms": fp,
        "ok": tn,
        "precision": shares["precision"],
        "recall": shares["recall"],
        "f1": shares["f1"],
        "kappa": shares["kappa"],
        "mean_spread": math.fsum(spreads) / len(spreads) if spreads else None,
    }


def calibration_section(cases: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """results.json's `calibration`: one row per scored calibration case (in case order), then
    the figures per stage and judge. None when the run had no calibration case."""
    rows = []
    for case in cases:
        found = case.get("calibration")
        if isinstance(found, Mapping):
            rows.append(
                {
                    "case": f"{case.get('suite')}::{case.get('id')}",
                    "outcome": case.get("outcome"),
                    **found,
                }
            )
    if not rows:
        return None
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault((str(row["stage"]), str(row.get("judge") or "-")), []).append(row)
    judges = [
        {"stage": stage, "judge": judge, **judge_figures(group)}
        for (stage, judge), group in sorted(groups.items())
    ]
    return {"cases": rows, "judges": judges}


def _fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def figures_rows(section: Mapping[str, Any]) -> list[list[str]]:
    """The per-stage-and-judge table, header first (shared by the terminal and report.md)."""
    rows = [
        [
            "stage",
            "judge",
            "defects",
            "caught",
            "missed",
            "controls",
            "false alarms",
            "precision",
            "recall",
            "F1",
            "kappa",
            "mean spread",
        ]
    ]
    for j in section["judges"]:
        rows.append(
            [
                j["stage"],
                j["judge"],
                str(j["defects"]),
                str(j["caught"]),
                str(j["missed"]),
                str(j["controls"]),
                str(j["false_alarms"]),
                _fmt(j["precision"]),
                _fmt(j["recall"]),
                _fmt(j["f1"]),
                _fmt(j["kappa"]),
                _fmt(j["mean_spread"]),
            ]
        )
    return rows


def case_rows(section: Mapping[str, Any]) -> list[list[str]]:
    """One row per calibration case, header first."""
    rows = [["case", "stage", "repeat scores", "calibration", "outcome"]]
    for row in section["cases"]:
        rows.append(
            [
                row["case"],
                row["stage"],
                scores_text(list(row["scores"])),
                row["status"],
                str(row.get("outcome") or ""),
            ]
        )
    return rows


# Headers of the terminal's figures table when the full ones do not fit the width.
SHORT_HEADERS = {
    "defects": "def",
    "controls": "ctrl",
    "false alarms": "alarms",
    "precision": "prec",
    "mean spread": "spread",
}


def terminal_lines(
    section: Mapping[str, Any], width: int | None = None, hidden: int = 0
) -> list[str]:
    """The terminal's `judge calibration` section: the cases under their suite, the figures
    under their judge (so neither repeats a long name on every row), fitted to `width` when
    given (short headers and a legend when the full ones do not fit). `hidden`: the cases the
    caller left out of `section["cases"]` (the ones judged right), said in a line."""
    lines: list[str] = []
    cases, figures = case_rows(section), figures_rows(section)
    by_suite: dict[str, list[list[str]]] = {}
    for row in cases[1:]:
        suite, _, case_id = row[0].partition("::")
        by_suite.setdefault(suite, []).append([case_id, *row[1:]])
    for suite, rows in by_suite.items():
        lines += [*([""] if lines else []), f"suite {suite}:"]
        lines += _plain_table([["case", *cases[0][1:]], *rows])
    if hidden:
        lines.append(
            f"({hidden} calibration case{'s' * (hidden != 1)} judged right not shown; "
            "-v shows every case)"
        )
    by_judge: dict[str, list[list[str]]] = {}
    for row in figures[1:]:
        by_judge.setdefault(row[1], []).append([row[0], *row[2:]])
    header = [figures[0][0], *figures[0][2:]]
    tables = {judge: _plain_table([header, *rows]) for judge, rows in by_judge.items()}
    if width is not None and any(len(line) > width for t in tables.values() for line in t):
        short = [SHORT_HEADERS.get(name, name) for name in header]
        tables = {judge: _plain_table([short, *rows]) for judge, rows in by_judge.items()}
        tables_legend = [
            ", ".join(f"{SHORT_HEADERS[n]} = {n}" for n in header if n in SHORT_HEADERS)
        ]
    else:
        tables_legend = []
    for judge, table in tables.items():
        lines += ["", f"judge {judge}:", *table]
    lines += tables_legend
    lines.append(
        "right only when every repeat is: caught = all failed the defect, ok = all "
        "passed the control"
    )
    return lines


def _plain_table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[col]) for row in rows) for col in range(len(rows[0]))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
