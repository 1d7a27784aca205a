"""The terminal summary's counting as it was before it streamed (commit 222ef7e): all results in
hand, sorted into collection order, then counted. The streaming summary must print the same text.
The tests' oracle, not used by the plugin. The cell and table formatting it shares with the
plugin (unchanged by the streaming rewrite) is imported, not copied.

Updated with issue 9 (point 11), deliberately: the per-case table lists the cases that did not
pass (every case with `verbose`), whatever the run's size (it was every case up to 50, then the
problems only), laid out to a width by the plugin's `case_table`; per-group rows when any case
has a group.

Updated with issue 12, deliberately: the per-group rows carry a Wilson interval and the mean of
each gating stage (the ungrouped `-` row: counts only), and are titled `user` for suite users; the
completeness/accuracy label columns of memory suites are not drawn by the random results here
(no labelled stages), so the reference leaves them out.

Updated with issue 20 (point 5), deliberately: the per-stage totals and the category pass rates
fit the width too (short column headers when the full ones do not fit).

Updated with issue 30 (part 6), deliberately: a case without a group has no row in the per-group
table (a `-` row in the per-user table read as a user named `-`; results.json's `groups` leaves
it out too)."""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Any

from pytest_evalcases.core.outcomes import DECIDED, PASS_LIKE
from pytest_evalcases.report.terminal import (
    GROUP_ROWS,
    QUIET_OUTCOMES,
    first_failure_cell,
    stage_cell,
)
from pytest_evalcases.report.terminal_tables import case_table, fitted
from pytest_evalcases.report.terminal_tables import rate_table as _rate_table


def stage_names(results: Sequence[dict[str, Any]]) -> list[str]:
    """Stage columns in the order suites list them, gating stages before report-only ones."""
    gating: dict[str, None] = {}
    report_only: dict[str, None] = {}
    for result in results:
        for name, stage in result["stages"].items():
            (gating if stage["gating"] else report_only).setdefault(name, None)
    return list(gating) + [name for name in report_only if name not in gating]


def case_rows(
    results: Sequence[dict[str, Any]], stages: list[str], verbose: bool, width: int | None = None
) -> list[str]:
    shown = results
    if not verbose:
        shown = [r for r in results if r["outcome"] not in QUIET_OUTCOMES]
    rows = []
    for result in shown:
        cells = [stage_cell(result["stages"].get(name)) for name in stages]
        rows.append(
            [
                f"{result['suite']}::{result['id']}",
                result.get("category") or "-",
                result["outcome"],
                *cells,
                first_failure_cell(result),
            ]
        )
    lines = case_table(stages, rows, width) if rows else []
    hidden = len(results) - len(shown)
    if hidden:
        lines.append(
            f"({hidden} passed or skipped case{'s' * (hidden != 1)} not shown; -v shows every case)"
        )
    return lines


def stage_totals(
    results: Sequence[dict[str, Any]], stages: list[str], width: int | None = None
) -> list[str]:
    rows = [["stage", "passed", "failed", "skipped", "judge errors", "mean score"]]
    for name in stages:
        passed = failed = skipped = errors = 0
        scores = []
        for result in results:
            stage = result["stages"].get(name)
            if stage is None:
                continue
            if stage.get("judge_error"):
                errors += 1
            elif stage["passed"] is None:
                skipped += 1
            elif stage["passed"]:
                passed += 1
            else:
                failed += 1
            if stage["score"] is not None:
                scores.append(stage["score"])
        mean = f"{sum(scores) / len(scores):.3f}" if scores else "-"
        label = (
            name if any(r["stages"].get(name, {}).get("gating") for r in results) else f"{name}*"
        )
        rows.append([label, str(passed), str(failed), str(skipped), str(errors), mean])
    return fitted(rows, width)


def rate_rows(results: Sequence[dict[str, Any]], key: str) -> dict[str, list[int]]:
    counts: dict[str, list[int]] = {}
    for result in results:
        value = result.get(key)
        tally = counts.setdefault("-" if value in (None, "") else str(value), [0, 0])
        tally[0] += result["outcome"] in PASS_LIKE
        tally[1] += result["outcome"] in DECIDED
    return counts


def category_rates(results: Sequence[dict[str, Any]], width: int | None = None) -> list[str]:
    """Pass rate per category, counted as in results.json: passes over the cases whose answer
    was scored (stale, missing, erroring and skipped cases are shown as counts elsewhere)."""
    counts = rate_rows(results, "category")
    return _rate_table("category", counts, sorted(counts), width=width)


def group_scores(results: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per group, each stage's scores (not judge errors), as arrays in collection order."""
    scores: dict[str, dict[str, Any]] = {}
    for result in results:
        group = result.get("group")
        if group in (None, ""):
            continue
        for name, stage in result["stages"].items():
            if stage["score"] is not None and not stage.get("judge_error"):
                scores.setdefault(str(group), {}).setdefault(name, array("d")).append(
                    stage["score"]
                )
    return scores


def group_rates(
    results: Sequence[dict[str, Any]], verbose: bool, stages: list[str], width: int | None
) -> list[str]:
    """Per group, as per category, with a Wilson interval and the stage means (a case without a
    group has no row); titled `user` when every grouped case has a suite user; without
    `verbose`, the GROUP_ROWS lowest pass rates."""
    grouped = [r for r in results if r.get("group") not in (None, "")]
    counts = rate_rows(grouped, "group")
    kind = "user" if all(r.get("user") for r in grouped) else "group"
    scores = group_scores(results)
    means = [
        name
        for name in stages
        if any(name in s for s in scores.values())
        and any(r["stages"].get(name, {}).get("gating") for r in results)
    ]
    names = sorted(counts)
    if verbose or len(names) <= GROUP_ROWS:
        return _rate_table(kind, counts, names, {}, scores, means, width)
    rates = {name: (p / s if s else 2.0) for name, (p, s) in counts.items()}
    worst = sorted(names, key=lambda name: (rates[name], name))[:GROUP_ROWS]
    return [
        *_rate_table(kind, counts, sorted(worst), {}, scores, means, width),
        f"({len(names) - GROUP_ROWS} more {kind}s with higher pass rates; -v shows every {kind})",
    ]


def render_summary(
    results: Sequence[dict[str, Any]],
    *,
    verbose: bool,
    orphans: Sequence[str],
    orphan_note: str = "",
    width: int | None = None,
) -> list[str]:
    """Everything under the `per-stage summary` heading, in a fixed order (same text under -n)."""
    stages = stage_names(results)
    sections = [case_rows(results, stages, verbose, width) if results else ["no eval cases ran"]]
    if results and stages:
        totals = stage_totals(results, stages, width)
        if any(not any(r["stages"].get(n, {}).get("gating") for r in results) for n in stages):
            totals.append("* report only: never fails a case")
        sections.append(totals)
    scored = any(r["outcome"] in DECIDED for r in results)  # no table of zeros
    if results and scored:
        sections.append(category_rates(results, width))
    if scored and any(r.get("group") not in (None, "") for r in results):
        sections.append(group_rates(results, verbose, stages, width))
    lines: list[str] = []
    for section in filter(None, sections):
        lines += [*([""] if lines else []), *section]
    outcomes = [r["outcome"] for r in results]
    statuses = [r.get("recording", {}).get("status") for r in results]
    lines += [
        "",
        f"recordings: {statuses.count('recorded')} recorded, "
        f"{statuses.count('replayed')} replayed, "
        f"{outcomes.count('stale')} stale, {outcomes.count('missing')} missing, "
        f"{len(orphans)} orphaned{orphan_note}",
    ]
    lines += [f"  orphan: {path}" for path in orphans]
    # Cases a live run did not record are listed in the `recording changes` section instead.
    return lines


def ordered_results(results: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the plugin passed to render_summary: the results in collection order."""
    return sorted(results, key=lambda r: (r["file"], r["index"], r["id"]))
