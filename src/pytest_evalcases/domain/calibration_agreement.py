"""How far a judge agrees with people, out of a run's calibration rows (pure functions).

Each calibration case is an item people labelled pass or fail (`expect`); the judge's call on it
is the one the calibration table shows (right only when every repeat is right). Per judged stage
and judge: the confusion table, accuracy, precision / recall / F1 of the fail class, Cohen's
kappa with its bootstrap interval, per category where the items have one, the share the judge
could not grade, what people agree at when the suite states it (`human_agreement`), the
threshold that agrees best with the labels (a stage with a score rule), and every disagreement.
Two runs of the same items: each judge's kappa, the paired difference and McNemar's test.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from math import isclose
from typing import Any

from ..core.agreement import (
    Confusion,
    ScoredItem,
    best_threshold,
    figures,
    kappa_interval,
    mcnemar_exact_p,
    paired_cells,
    paired_kappa_difference,
)
from ..core.names import clip
from .calibration_scoring import CAUGHT, FALSE_ALARM, MISSED, OK, calibration_section
from .stages.judged import scores_text

Row = Mapping[str, Any]
SAYS_FAIL = frozenset({CAUGHT, FALSE_ALARM})
GRADED = frozenset({CAUGHT, MISSED, FALSE_ALARM, OK})
# The disagreements the terminal lists (results.json, report.md and the dashboard list all).
TERMINAL_DISAGREEMENTS = 5
REASON_CHARS = 160  # of a reason the terminal shows


def calibration_report(cases: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """results.json's `calibration` (see calibration_scoring.calibration_section) with the
    agreement figures per stage and judge (`agreement`). None when no calibration case ran."""
    section = calibration_section(cases)
    if section is None:
        return None
    people: dict[str, Any] = {}
    for row in section["cases"]:
        stated = row.pop("human_agreement", None)  # the suite's, carried by each of its cases
        if stated:
            people.setdefault(_suite(row), stated)
    section["agreement"] = agreement_figures(section["cases"], people)
    return section


def _suite(row: Row) -> str:
    return str(row["case"]).partition("::")[0]


def graded(row: Row) -> bool:
    """Whether the judge gave the item a call (no judge error, every repeat scored)."""
    return row.get("status") in GRADED and not row.get("ungraded")


def says_fail(row: Row) -> bool:
    return row.get("status") in SAYS_FAIL


def label_fail(row: Row) -> bool:
    return row.get("expect") == "fail"


def _interval(c: Confusion) -> list[float] | None:
    found = kappa_interval(c)
    return list(found) if found else None


def _table(rows: Sequence[Row]) -> Confusion:
    return Confusion.of((label_fail(row), says_fail(row)) for row in rows)


def agreement_figures(rows: Sequence[Row], people: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One entry per (stage, judge), in that order."""
    groups: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        groups.setdefault((str(row["stage"]), str(row.get("judge") or "-")), []).append(row)
    return [_group(stage, judge, group, people) for (stage, judge), group in sorted(groups.items())]


def _group(stage: str, judge: str, rows: list[Row], people: Mapping[str, Any]) -> dict[str, Any]:
    scored = [row for row in rows if graded(row)]
    table = _table(scored)
    suites = list(dict.fromkeys(_suite(row) for row in rows))
    return {
        "stage": stage,
        "judge": judge,
        "items": len(rows),
        "graded": len(scored),
        "ungraded": len(rows) - len(scored),
        "ungraded_share": (len(rows) - len(scored)) / len(rows) if rows else None,
        "confusion": table.as_dict(),
        **figures(table),
        "kappa_ci95": _interval(table),
        "categories": _categories(scored),
        "threshold": _threshold(scored, table),
        "people": [{"suite": suite, **people[suite]} for suite in suites if suite in people],
        "disagreements": [
            _disagreement(row) for row in scored if says_fail(row) != label_fail(row)
        ],
    }


def _categories(rows: list[Row]) -> dict[str, dict[str, Any]]:
    """The figures per category, when some item has one (the others under "(none)")."""
    if not any(row.get("category") for row in rows):
        return {}
    by: dict[str, list[Row]] = {}
    for row in rows:
        by.setdefault(str(row.get("category") or "(none)"), []).append(row)
    out = {}
    for name in sorted(by):
        table = _table(by[name])
        shares = figures(table)
        out[name] = {
            "items": table.n,
            "confusion": table.as_dict(),
            "accuracy": shares["accuracy"],
            "kappa": shares["kappa"],
            "kappa_ci95": _interval(table),
        }
    return out


def _threshold(rows: list[Row], current: Confusion) -> dict[str, Any] | None:
    """For a stage with a score rule: the threshold that agrees best with the labels, beside the
    suite's (None: a stage decided by labels, or no kappa at any threshold)."""
    thresholds = {row.get("threshold") for row in rows}
    if not rows or None in thresholds:
        return None
    items = [ScoredItem.of(label_fail(row), row["scores"]) for row in rows]
    fit = best_threshold(items)
    if fit is None:
        return None
    only = next(iter(thresholds)) if len(thresholds) == 1 else None
    return {
        "current": only,  # None: the items are held to different thresholds
        "current_kappa": figures(current)["kappa"],
        "best": fit.threshold,
        "best_kappa": fit.kappa,
        "best_kappa_ci95": _interval(fit.confusion),
        "best_confusion": fit.confusion.as_dict(),
        "candidates": fit.candidates,
    }


def _disagreement(row: Row) -> dict[str, Any]:
    return {
        "case": row["case"],
        "category": row.get("category"),
        "label": row.get("expect"),
        "judge": "fail" if says_fail(row) else "pass",
        "scores": list(row.get("scores") or []),
        "reason": row.get("reason") or "",
    }


# ---- text shared by the terminal, report.md, the dashboard and compare ----------------------
def fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def kappa_text(kappa: float | None, ci: Sequence[float] | None) -> str:
    """`0.71 [0.64, 0.77]` (or `-` when undefined)."""
    if kappa is None:
        return "-"
    return f"{kappa:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


def threshold_value(value: float) -> str:
    """A threshold as short as it is exact to three places: 0.5, 0.625."""
    return f"{value:.3f}".rstrip("0").rstrip(".") if value else "0"


def headline(group: Row) -> list[str]:
    """The figures in two lines: how many items were graded and the accuracy; the fail class's
    precision, recall and F1, and kappa with its interval."""
    share = group["ungraded_share"] or 0.0
    return [
        f"{group['graded']} of {group['items']} items graded ({group['ungraded']} not graded, "
        f"{100 * share:.0f}%); accuracy {fmt(group['accuracy'])}",
        f"fail class: precision {fmt(group['precision'])}, recall {fmt(group['recall'])}, F1 "
        f"{fmt(group['f1'])}; Cohen's kappa {kappa_text(group['kappa'], group['kappa_ci95'])} "
        "(95% bootstrap)",
    ]


def confusion_rows(confusion: Mapping[str, Mapping[str, int]]) -> list[list[str]]:
    """The confusion table, header first: labels down, the judge's calls across."""
    return [
        ["people \\ judge", "fail", "pass"],
        [
            "fail",
            str(confusion["label_fail"]["judge_fail"]),
            str(confusion["label_fail"]["judge_pass"]),
        ],
        [
            "pass",
            str(confusion["label_pass"]["judge_fail"]),
            str(confusion["label_pass"]["judge_pass"]),
        ],
    ]


def threshold_text(group: Row) -> str | None:
    """ "threshold 0.62 agrees best with people (kappa 0.71 [0.64, 0.77]); the suite's 0.5
    gives 0.58"."""
    found = group.get("threshold")
    if not found:
        return None
    current = (
        f"the suite's {threshold_value(found['current'])}"
        if found["current"] is not None
        else "the cases' own thresholds"
    )
    best = (
        f"threshold {threshold_value(found['best'])} agrees best with people (kappa "
        f"{kappa_text(found['best_kappa'], found['best_kappa_ci95'])}"
    )
    tried = f"{found['candidates']} thresholds tried"
    if found["current_kappa"] is not None and isclose(found["current_kappa"], found["best_kappa"]):
        return f"{best}, the lowest of those that do); {current} does as well ({tried})"
    return f"{best}); {current} gives {fmt(found['current_kappa'])} ({tried})"


def people_texts(group: Row) -> list[str]:
    """ "people agree at fleiss_kappa 0.811 (3 annotators; HaluEval ...)", one per suite."""
    lines = []
    for stated in group.get("people") or []:
        details = [
            f"{stated['annotators']} annotators" if stated.get("annotators") else "",
            str(stated.get("source") or ""),
        ]
        extra = "; ".join(d for d in details if d)
        value = stated.get("value")
        shown = f"{value:.3f}" if isinstance(value, (int, float)) else str(value)
        lines.append(
            f"people agree at {stated.get('statistic') or 'agreement'} {shown}"
            + (f" ({extra})" if extra else "")
            + f", suite {stated['suite']}"
        )
    return lines


def category_rows(group: Row) -> list[list[str]]:
    """Per category, header first (none: no item has a category)."""
    if not group.get("categories"):
        return []
    rows = [["category", "items", "accuracy", "kappa [95% CI]"]]
    for name, found in group["categories"].items():
        rows.append(
            [
                name,
                str(found["items"]),
                fmt(found["accuracy"]),
                kappa_text(found["kappa"], found["kappa_ci95"]),
            ]
        )
    return rows


def disagreement_rows(group: Row, limit: int | None = None) -> list[list[str]]:
    """The items the judge and people disagree on, header first."""
    rows = [["case", "people", "judge", "scores", "reason"]]
    for found in group["disagreements"][:limit]:
        rows.append(
            [
                found["case"],
                str(found["label"]),
                found["judge"],
                scores_text(found["scores"]),
                found["reason"],
            ]
        )
    return rows


def agreement_view(group: Row) -> dict[str, Any]:
    """One stage and judge as report.md and the dashboard show it: a title, the figures' lines,
    the tables (confusion, then per category when there are categories), the notes (people's
    agreement, the threshold) and every disagreement (rows, header first)."""
    return {
        "title": f"{group['stage']}, judge {group['judge']}",
        "headline": headline(group),
        "tables": [t for t in (confusion_rows(group["confusion"]), category_rows(group)) if t],
        "notes": [note for note in (*people_texts(group), threshold_text(group)) if note],
        "disagreements": disagreement_rows(group),
    }


def terminal_agreement_lines(section: Row) -> list[str]:
    """The `agreement with people` part of the terminal's judge calibration section."""
    lines: list[str] = []
    for group in section.get("agreement") or []:
        lines += ["", f"agreement with people: {group['stage']}, judge {group['judge']}"]
        lines += ["  " + line for line in headline(group)]
        confusion = confusion_rows(group["confusion"])
        lines += ["  " + line for line in _aligned(confusion)]
        categories = category_rows(group)
        lines += ["  " + line for line in _aligned(categories)]
        lines += ["  " + text for text in people_texts(group)]
        found = threshold_text(group)
        if found:
            lines.append("  " + found)
        disagreements = group["disagreements"]
        if disagreements:
            shown = min(len(disagreements), TERMINAL_DISAGREEMENTS)
            cut = f" (the first {shown}; report.md lists all)" if shown < len(disagreements) else ""
            lines.append(
                f"  {len(disagreements)} item{'s' * (len(disagreements) != 1)} the judge and "
                f"people disagree on{cut}:"
            )
            for case, label, judge, scores, reason in disagreement_rows(group, shown)[1:]:
                text = f"    {case}: people {label}, judge {judge} {scores}"
                # a judge's reason may run to lines of its own: one line, cut, in the terminal
                lines.append(f"{text}: {clip(reason, REASON_CHARS)}" if reason else text)
    return lines


def _aligned(rows: Sequence[Sequence[str]]) -> list[str]:
    if not rows:
        return []
    widths = [max(len(row[col]) for row in rows) for col in range(len(rows[0]))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]


# ---- two runs of the same labelled items ----------------------------------------------------
def judges_compared(a_rows: Sequence[Row], b_rows: Sequence[Row]) -> list[dict[str, Any]]:
    """Per stage, two judges on the labelled items both graded: each one's kappa with its
    interval, kappa B - A with a paired bootstrap interval, McNemar's b (A right, B wrong), c
    (A wrong, B right) and exact p-value, and the items only one of them got right. Items are
    matched by case and stage; one labelled differently in the two runs is counted
    (`labels_differ`), not compared."""
    b_by = {(row["case"], row["stage"]): row for row in b_rows}
    stages: dict[str, list[tuple[Row, Row]]] = {}
    relabelled: dict[str, int] = {}  # items whose label differs between the runs: not compared
    for row in a_rows:
        other = b_by.get((row["case"], row["stage"]))
        if other is None:
            continue
        stages.setdefault(str(row["stage"]), [])
        if label_fail(row) == label_fail(other):
            stages[str(row["stage"])].append((row, other))
        else:
            relabelled[str(row["stage"])] = relabelled.get(str(row["stage"]), 0) + 1
    out = []
    for stage, pairs in sorted(stages.items()):
        both = [(a, b) for a, b in pairs if graded(a) and graded(b)]
        counts = paired_cells((label_fail(a), says_fail(a), says_fail(b)) for a, b in both)
        table_a, table_b = _table([a for a, _ in both]), _table([b for _, b in both])
        delta, delta_ci = paired_kappa_difference(counts) if both else (None, None)
        split = [(a, b) for a, b in both if says_fail(a) != says_fail(b)]
        right_a = sum(says_fail(a) == label_fail(a) for a, _ in split)
        out.append(
            {
                "stage": stage,
                "judges": {
                    "a": _judge_names(a for a, _ in pairs),
                    "b": _judge_names(b for _, b in pairs),
                },
                "items": len(pairs),
                "labels_differ": relabelled.get(stage, 0),
                "graded_by_both": len(both),
                "a": _side(table_a),
                "b": _side(table_b),
                "delta": delta,
                "delta_ci95": list(delta_ci) if delta_ci else None,
                "mcnemar": {
                    "b": right_a,
                    "c": len(split) - right_a,
                    "p": mcnemar_exact_p(right_a, len(split) - right_a),
                },
                "disagreements": [
                    {
                        "case": a["case"],
                        "label": a.get("expect"),
                        "a": _call(a),
                        "b": _call(b),
                    }
                    for a, b in split
                ],
            }
        )
    return out


def _judge_names(rows: Iterable[Row]) -> str:
    return ", ".join(dict.fromkeys(str(row.get("judge") or "-") for row in rows))


def _side(table: Confusion) -> dict[str, Any]:
    shares = figures(table)
    return {
        "confusion": table.as_dict(),
        "accuracy": shares["accuracy"],
        "kappa": shares["kappa"],
        "kappa_ci95": _interval(table),
    }


def _call(row: Row) -> dict[str, Any]:
    return {
        "judge": "fail" if says_fail(row) else "pass",
        "scores": list(row.get("scores") or []),
        "reason": row.get("reason") or "",
    }


def compared_text(found: Row, names: Sequence[str] = ("A", "B")) -> str:
    """One stage of two judges in a line: each kappa, B - A, McNemar's counts and p-value."""
    mc = found["mcnemar"]
    delta = "-" if found["delta"] is None else f"{found['delta']:+.2f}"
    if found["delta_ci95"]:
        low, high = found["delta_ci95"]
        delta += f" [{low:+.2f}, {high:+.2f}]"
    return (
        f"{found['stage']} ({found['graded_by_both']} items graded by both): kappa "
        f"{names[0]} {kappa_text(found['a']['kappa'], found['a']['kappa_ci95'])} vs {names[1]} "
        f"{kappa_text(found['b']['kappa'], found['b']['kappa_ci95'])}; {names[1]} - {names[0]} "
        f"{delta}; McNemar: {mc['b']} only {names[0]} right, {mc['c']} only {names[1]} right, "
        f"exact p = {mc['p']:.3g}"
    )
