"""The terminal's `per-stage summary`, built one per-case result dict at a time.

A run holds counts, sums and only the rows it may show, never the results themselves: 10,000
result dicts kept to the end of a replay cost ~20 MB. Results may arrive in any order (xdist);
the text depends only on the set of results, in collection order (file, index, id), and on the
terminal's width (the per-case table is laid out to fit it).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.outcomes import (
    ACCURACY_LABELS,
    ACCURACY_STAGE,
    COMPLETENESS_LABELS,
    COMPLETENESS_STAGE,
    DECIDED,
    PASS_LIKE,
)

# A memory suite's label counts, compact enough for the terminal's category and group rows.
LABEL_COLUMNS = (("C/P/I", COMPLETENESS_LABELS), ("right/wrong", ACCURACY_LABELS))
LABEL_LEGENDS = {
    "C/P/I": "C/P/I: cases whose context was COMPLETE / PARTIAL / INSUFFICIENT",
    "right/wrong": "right/wrong: cases whose answer was CORRECT / WRONG",
}

# Which cases get a row of the per-case table: those that did not pass (the default), every
# case (-v, --eval-summary=all) or none (-q -q, --eval-summary=none).
ROWS_FAILED, ROWS_ALL, ROWS_NONE = "failed", "all", "none"
SUMMARY_ROWS = (ROWS_FAILED, ROWS_ALL, ROWS_NONE)
# Outcomes that passed, or were not meant to run: no row by default.
QUIET_OUTCOMES = frozenset({"passed", "skipped"})
FAILURE_CELL_CHARS = 120
MIN_FAILURE_CHARS = 24  # a narrower first-failure column moves to a block of its own
GROUP_ROWS = 20  # groups (e.g. user ids) shown without -v: those with the lowest pass rates

# Short stage headers for a table that does not fit with the full names (with a legend).
STAGE_ABBREVIATIONS = {
    "retrieval": "retr",
    "exact_match": "em",
    "token_f1": "f1",
    "faithfulness": "faith",
    "contextual_recall": "c_rec",
    "contextual_precision": "c_prec",
    "contextual_relevancy": "c_rel",
    "answer_relevancy": "a_rel",
    "correctness": "corr",
    "context_completeness": "compl",
    "answer_accuracy": "acc",
    "citations": "cite",
    "schema": "schema",  # as short as its cells: no need to cut it to "schem"
    "rubric": "rubric",
}

# Collection order, then arrival order for equal keys (as a stable sort of the arrivals).
Order = tuple[str, int, str, int]


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[col]) for row in rows) for col in range(len(rows[0]))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]


def stage_cell(stage: Mapping[str, Any] | None) -> str:
    if stage is None or stage["passed"] is None:
        return "-"
    if stage.get("judge_error"):
        return "JUDGE-ERR"
    score = "" if stage["score"] is None else f"{stage['score']:.2f}"
    if stage.get("unstable"):
        return f"UNSTABLE {score}".strip()
    if stage["passed"] or not stage["gating"]:
        return score or "pass"
    return f"FAIL {score}".strip()


def first_failure_cell(result: Mapping[str, Any]) -> str:
    """`stage: reason` for a stage failure, `STALE: why` (MISSING, ERROR) for a case not scored."""
    failure = result.get("first_failure") or {}
    turn = f"turn {failure['turn']} " if failure.get("turn") else ""
    label = turn + (failure.get("stage") or "") or (
        result["outcome"].upper() if result["outcome"] in ("stale", "missing", "error") else ""
    )
    reason = failure.get("reason") or ""
    cell = f"{label}: {reason}" if label and reason else label or reason
    if len(cell) > FAILURE_CELL_CHARS:
        cell = cell[: FAILURE_CELL_CHARS - 3] + "..."
    return cell


@dataclass(slots=True)
class _Row:
    """What a case's row shows; stage cells by name, as the columns are known only at the end."""

    order: Order
    label: str
    category: str
    outcome: str
    cells: dict[str, str]
    failure: str


@dataclass(slots=True)
class _StageTally:
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    judge_errors: int = 0
    unstable: int = 0  # verdicts whose repeats fell on both sides of the pass rule
    repeated: bool = False  # judged more than once in some case: the `unstable` column shows
    gating: bool = False  # gating in any case; else the stage is marked report only
    scores: array[float] = field(default_factory=lambda: array("d"))  # 8 bytes a case

    def add(self, stage: Mapping[str, Any]) -> None:
        if stage.get("judge_error"):
            self.judge_errors += 1
        elif stage["passed"] is None:
            self.skipped += 1
        elif stage["passed"]:
            self.passed += 1
        else:
            self.failed += 1
        if "repeat_scores" in stage:
            self.repeated = True
            self.unstable += bool(stage.get("unstable"))
        if stage["score"] is not None:
            self.scores.append(stage["score"])
        self.gating = self.gating or bool(stage["gating"])

    def mean(self) -> str:
        # fsum: exact, so the mean does not depend on the order results arrive in (and it is
        # the mean results.json reports).
        return f"{math.fsum(self.scores) / len(self.scores):.3f}" if self.scores else "-"


class RunSummary:
    """The `per-stage summary` section: `add` every case's result dict, then `lines`.

    `rows`: which cases get a row (ROWS_FAILED, ROWS_ALL, ROWS_NONE; default: every case with
    `verbose`, else those that did not pass)."""

    def __init__(self, *, verbose: bool = False, rows: str | None = None) -> None:
        self.rows = rows or (ROWS_ALL if verbose else ROWS_FAILED)
        self.verbose = self.rows == ROWS_ALL
        self.count = 0
        self._rows: list[_Row] = []  # only the rows that will be shown
        self._hidden = 0  # cases that did not get a row
        # Where each (stage, gating) pair first appears: the columns follow the suites' order.
        self._first_seen: dict[tuple[str, bool], tuple[Order, int]] = {}
        self._stages: dict[str, _StageTally] = {}
        self._categories: dict[str, list[int]] = {}  # category -> [passed, scored]
        self._groups: dict[str, list[int]] = {}  # group -> [passed, scored], all cases
        self._grouped = False  # any case has a group: the per-group table is shown
        self._users_only = True  # every grouped case is grouped by its suite user
        self._group_scores: dict[str, dict[str, array[float]]] = {}  # group -> stage -> scores
        # Memory suites: completeness and accuracy label counts per category and per group.
        self._labels: dict[str, dict[str, dict[str, int]]] = {"category": {}, "group": {}}
        self._recorded = self._replayed = self._stale = self._missing = 0
        self._replayed_http = 0  # replayed by running the system over its recorded HTTP
        self._secrets = self._redacted_recordings = 0
        self._dry_run = 0  # run and judged by --live-dry-run, not written
        self._calibration: list[Mapping[str, Any]] = []  # scored calibration cases (a few)

    def add(self, result: Mapping[str, Any]) -> None:
        if result.get("calibration") is not None:  # a scored judge test case: its own section
            self._calibration.append(result)
            self._tally_recording(result)
            return
        order = (result["file"], result["index"], result["id"], self.count)
        self.count += 1
        label = f"{result['suite']}::{result['id']}"
        outcome = result["outcome"]
        for position, (name, stage) in enumerate(result["stages"].items()):
            seen = (name, bool(stage["gating"]))
            first = self._first_seen.get(seen)
            if first is None or (order, position) < first:
                self._first_seen[seen] = (order, position)
            self._stages.setdefault(name, _StageTally()).add(stage)
        category = result.get("category") or "-"
        tally = self._categories.setdefault(category, [0, 0])
        tally[0] += outcome in PASS_LIKE
        tally[1] += outcome in DECIDED
        group = result.get("group")
        grouped = group not in (None, "")
        group_name = str(group) if grouped else "-"
        tally = self._groups.setdefault(group_name, [0, 0])
        tally[0] += outcome in PASS_LIKE
        tally[1] += outcome in DECIDED
        stages = result["stages"]
        if grouped:  # only grouped cases pay for the per-group means
            self._grouped = True
            self._users_only = self._users_only and bool(result.get("user"))
            self._add_group_scores(group_name, stages)
        if COMPLETENESS_STAGE in stages or ACCURACY_STAGE in stages:
            self._add_labels(category, group_name, stages)
        self._tally_recording(result)
        if self.rows == ROWS_ALL or (self.rows == ROWS_FAILED and outcome not in QUIET_OUTCOMES):
            cells = {name: stage_cell(stage) for name, stage in result["stages"].items()}
            runs = result.get("runs")
            row = _Row(
                order,
                label,
                result.get("category") or "-",
                f"{outcome} {runs['passed_runs']}/{runs['k']}" if runs else outcome,
                cells,
                first_failure_cell(result),
            )
            self._rows.append(row)
        else:
            self._hidden += 1

    def _tally_recording(self, result: Mapping[str, Any]) -> None:
        recording = result.get("recording") or {}
        status = recording.get("status")
        self._recorded += status == "recorded"
        self._dry_run += status == "dry_run"
        self._replayed += status in ("replayed", "replayed_http")
        self._replayed_http += status == "replayed_http"
        secrets = recording.get("redacted") or 0
        self._secrets += secrets
        self._redacted_recordings += bool(secrets)
        outcome = result["outcome"]
        self._stale += outcome == "stale"
        self._missing += outcome == "missing"

    def calibration_lines(self, width: int | None = None) -> list[str]:
        """The `judge calibration` section (none: no calibration case was scored)."""
        if not self._calibration:
            return []
        from ..domain.calibration_scoring import calibration_section, terminal_lines

        ordered = sorted(self._calibration, key=lambda r: (r["file"], r["index"], r["id"]))
        section = calibration_section(ordered)
        return terminal_lines(section, width) if section else []

    def _add_group_scores(self, group: str, stages: Mapping[str, Any]) -> None:
        scores = self._group_scores.setdefault(group, {})
        for name, stage in stages.items():
            if stage["score"] is not None and not stage.get("judge_error"):
                scores.setdefault(name, array("d")).append(stage["score"])

    def _add_labels(self, category: str, group: str, stages: Mapping[str, Any]) -> None:
        for stage_name in (COMPLETENESS_STAGE, ACCURACY_STAGE):
            stage = stages.get(stage_name)
            label = stage.get("label") if stage and not stage.get("judge_error") else None
            if label:
                for kind, name in (("category", category), ("group", group)):
                    counts = self._labels[kind].setdefault(name, {})
                    key = str(label).strip().upper()
                    counts[key] = counts.get(key, 0) + 1

    def stage_names(self) -> list[str]:
        """Stage columns in the order suites list them, gating stages before report-only ones."""
        first = sorted(self._first_seen.items(), key=lambda item: item[1])
        gating = [name for (name, is_gating), _ in first if is_gating]
        report_only = [name for (name, is_gating), _ in first if not is_gating]
        return gating + [name for name in report_only if name not in gating]

    def lines(
        self, *, orphans: Sequence[str], orphan_note: str = "", width: int | None = None
    ) -> list[str]:
        """Everything under the `per-stage summary` heading, in a fixed order; the per-case
        table fits in `width` columns (None: as wide as it takes)."""
        stages = self.stage_names()
        idle = (["no eval cases ran (the calibration cases follow, under judge calibration)"]
                if self._calibration else ["no eval cases ran"])
        sections = [self._case_rows(stages, width) if self.count else idle]
        if self.count and stages:
            totals = self._stage_totals(stages)
            if any(not self._stages[name].gating for name in stages):
                totals.append("* report only: never fails a case")
            sections.append(totals)
        if self.count:
            sections.append(self._category_rates())
        if self._grouped:
            sections.append(self._group_rates(stages, width))
        lines: list[str] = []
        for section in filter(None, sections):  # --eval-summary=none: no case table at all
            lines += [*([""] if lines else []), *section]
        offline = (
            f" ({self._replayed_http} ran today's code over recorded HTTP)"
            if self._replayed_http
            else ""
        )
        dry = f", {self._dry_run} dry run (not written)" if self._dry_run else ""
        lines += [
            "",
            f"recordings: {self._recorded} recorded{dry}, {self._replayed} replayed{offline}, "
            f"{self._stale} stale, {self._missing} missing, "
            f"{len(orphans)} orphaned{orphan_note}",
        ]
        if self._secrets:
            from ..store.redaction import redaction_summary

            lines.append(redaction_summary(self._secrets, self._redacted_recordings))
        lines += [f"  orphan: {path}" for path in orphans]
        # A live run's cases that were not (fully) recorded are listed, with the reason, in the
        # `recording changes` section that follows.
        return lines

    def _case_rows(self, stages: list[str], width: int | None) -> list[str]:
        if self.rows == ROWS_NONE:
            return []
        lines: list[str] = []
        if self._rows:
            rows = []
            for row in sorted(self._rows, key=lambda row: row.order):
                cells = [row.cells.get(name, "-") for name in stages]
                rows.append([row.label, row.category, row.outcome, *cells, row.failure])
            lines = case_table(stages, rows, width)
        if self._hidden:
            lines.append(
                f"({self._hidden} passed or skipped case{'s' * (self._hidden != 1)} not shown; "
                "-v shows every case)"
            )
        return lines

    def _stage_totals(self, stages: list[str]) -> list[str]:
        repeated = any(self._stages[name].repeated for name in stages)
        header = ["stage", "passed", "failed", "skipped", "judge errors"]
        rows = [header + (["unstable"] if repeated else []) + ["mean score"]]
        for name in stages:
            tally = self._stages[name]
            label = name if tally.gating else f"{name}*"
            counts = [tally.passed, tally.failed, tally.skipped, tally.judge_errors]
            counts += [tally.unstable] if repeated else []
            rows.append([label, *map(str, counts), tally.mean()])
        return _table(rows)

    def _category_rates(self) -> list[str]:
        """Pass rate per category, counted as in results.json: passes over the cases whose answer
        was scored (stale, missing, erroring and skipped cases are shown as counts elsewhere);
        a memory suite's completeness and accuracy label counts beside it."""
        names = sorted(self._categories)
        lines = _rate_table("category", self._categories, names, self._labels["category"])
        if self._grouped:  # the per-group table below explains the label columns once
            lines = [line for line in lines if line not in LABEL_LEGENDS.values()]
        return lines

    def _group_rates(self, stages: list[str], width: int | None) -> list[str]:
        """Pass rate per group (a suite user, or a case's `group`) with its Wilson interval,
        label counts and the mean score of each stage (cases without a group: counts only).
        Without -v, at most GROUP_ROWS groups: those with the lowest pass rates (a run may
        have thousands)."""
        kind = "user" if self._users_only else "group"
        names = sorted(self._groups)
        hidden = 0
        if not self.verbose and len(names) > GROUP_ROWS:
            def rank(name: str) -> tuple[float, str]:
                passed, scored = self._groups[name]
                return (passed / scored if scored else 2.0, name)  # unscored last

            names = sorted(sorted(names, key=rank)[:GROUP_ROWS])
            hidden = len(self._groups) - GROUP_ROWS
        # Gating stages only (report.md and the dashboard have them all): it must fit.
        means = [name for name in stages if self._stages[name].gating
                 and any(name in scores for scores in self._group_scores.values())]
        lines = _rate_table(kind, self._groups, names, self._labels["group"],
                            self._group_scores, means, width)
        if hidden:
            lines.append(f"({hidden} more {kind}s with higher pass rates; -v shows every {kind})")
        return lines


def _rate_table(
    title: str,
    tallies: Mapping[str, list[int]],
    names: list[str],
    labels: Mapping[str, Mapping[str, int]] | None = None,
    scores: Mapping[str, Mapping[str, array[float]]] | None = None,
    means: Sequence[str] = (),
    width: int | None = None,
) -> list[str]:
    """`title passed scored pass rate`; with `scores`, the 95% Wilson interval and the mean of
    each stage in `means`; with `labels`, a memory suite's context completeness counts
    (COMPLETE/PARTIAL/INSUFFICIENT as `C/P/I`) and answer accuracy counts (CORRECT/WRONG as
    `right/wrong`), explained under the table."""
    seen = {label for counts in (labels or {}).values() for label in counts}
    columns = [(header, known) for header, known in LABEL_COLUMNS if seen & set(known)]
    header = [title, "passed", "scored", "pass rate"]
    if scores is not None:
        header.append("95% CI")
    header += [name for name, _ in columns]
    full = [f"mean {name}" for name in means]
    short = [f"mean {h}" for h in stage_headers(means)]
    rows = [header + full]
    if scores is not None:
        from ..core.stats import wilson_interval  # numpy: only for a run whose cases have groups
    for name in names:
        passed, scored = tallies[name]
        rate = f"{passed / scored:.0%}" if scored else "-"
        row = [name, str(passed), str(scored), rate]
        if scores is not None:
            ci = wilson_interval(passed, scored)
            row.append(f"{ci[0]:.0%}-{ci[1]:.0%}" if ci else "-")
        counts = (labels or {}).get(name, {})
        row += ["/".join(str(counts.get(label, 0)) for label in known) for _, known in columns]
        own = (scores or {}).get(name, {})
        row += [f"{math.fsum(own[m]) / len(own[m]):.3f}" if own.get(m) else "-" for m in means]
        rows.append(row)
    lines = _table(rows)
    if width is not None and full != short and max(map(len, lines)) > width:
        rows[0] = header + short
        lines = _table(rows)
        lines += _legend([f"{a} = {n}" for a, n in zip(stage_headers(means), means, strict=True)
                          if a != n], width)
    lines += [LABEL_LEGENDS[name] for name, _ in columns]
    return lines


# ---- the per-case table, fitted to the terminal ---------------------------------------------
def stage_headers(stages: Sequence[str]) -> list[str]:
    """Short, distinct headers for the stage columns (see STAGE_ABBREVIATIONS)."""
    headers: list[str] = []
    for name in stages:
        short = STAGE_ABBREVIATIONS.get(name, name[:5])
        candidate, n = short, 2
        while candidate in headers:
            candidate, n = f"{short}{n}", n + 1
        headers.append(candidate)
    return headers


def case_table(stages: Sequence[str], rows: Sequence[Sequence[str]], width: int | None
               ) -> list[str]:
    """The per-case table: `rows` are [case, category, outcome, *stage cells, first failure].

    Within `width`: the full stage names if the table fits on one line a case (the first
    failure cut to the room left, at least MIN_FAILURE_CHARS); else abbreviated stage headers
    with a legend, the columns wrapped into blocks that each repeat the case column when even
    those do not fit (the first failure last)."""
    full = ["case", "category", "outcome", *stages, "first failure"]
    if width is None:
        return _table([full, *rows])
    blocks = _blocks(full, rows, width)
    if len(blocks) == 1 or not stages:
        return _render_blocks(full, rows, blocks, width)
    short = stage_headers(stages)
    headers = ["case", "category", "outcome", *short, "first failure"]
    lines = _render_blocks(headers, rows, _blocks(headers, rows, width), width)
    return lines + _legend([f"{a} = {n}" for a, n in zip(short, stages, strict=True) if a != n],
                           width)


def _legend(entries: list[str], width: int) -> list[str]:
    """`stages: retr = retrieval, ...`, wrapped to `width` between entries, never inside one."""
    lines: list[str] = []
    line = "stages:"
    for number, entry in enumerate(entries):
        piece = entry + ("," if number < len(entries) - 1 else "")
        if len(line) + 1 + len(piece) > width and line.strip() not in ("", "stages:"):
            lines.append(line)
            line = " "
        line += " " + piece
    if entries:
        lines.append(line)
    return lines


def _label_width(rows: Sequence[Sequence[str]], width: int) -> int:
    """The case column: as wide as its longest label, but never more than half the width."""
    return min(max(len("case"), *(len(row[0]) for row in rows)), max(20, width // 2))


def _blocks(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int
            ) -> list[list[tuple[int, int]]]:
    """Columns packed greedily into blocks of at most `width` characters: (column, width)
    pairs, each block starting with the case column; the last column (the first failure) is
    cut to the room left, or starts a block of its own when that is under MIN_FAILURE_CHARS."""
    widths = [max(len(headers[i]), *(len(row[i]) for row in rows)) for i in range(len(headers))]
    widths[0] = _label_width(rows, width)
    last = len(headers) - 1
    blocks: list[list[tuple[int, int]]] = []
    block, used = [(0, widths[0])], widths[0]
    for column in range(1, last):
        if len(block) > 1 and used + 2 + widths[column] > width:
            blocks.append(block)
            block, used = [(0, widths[0])], widths[0]
        block.append((column, widths[column]))
        used += 2 + widths[column]
    room = width - used - 2
    if room < min(widths[last], MIN_FAILURE_CHARS) and len(block) > 1:
        blocks.append(block)
        block, used = [(0, widths[0])], widths[0]
        room = width - used - 2
    block.append((last, max(min(widths[last], room), len(headers[last]))))
    blocks.append(block)
    return blocks


def _render_blocks(headers: Sequence[str], rows: Sequence[Sequence[str]],
                   blocks: list[list[tuple[int, int]]], width: int) -> list[str]:
    lines: list[str] = []
    for number, block in enumerate(blocks):
        if number:
            lines.append("")
        for row in [headers, *rows]:
            cells = [_fit(row[column], size) for column, size in block]
            lines.append("  ".join(c.ljust(size) for c, (_, size) in zip(cells, block,
                                                                          strict=True)).rstrip())
    return lines


def _fit(text: str, size: int) -> str:
    """`text` cut to `size` characters, with `...` where it was cut."""
    return text if len(text) <= size else text[: max(size - 3, 0)] + "..."
