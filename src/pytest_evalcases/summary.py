"""The terminal's `per-stage summary`, built one per-case result dict at a time.

A run holds counts, sums and only the rows it may show, never the results themselves: 10,000
result dicts kept to the end of a replay cost ~20 MB. Results may arrive in any order (xdist);
the text depends only on the set of results, in collection order (file, index, id).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .outcomes import DECIDED, FAILING, PASS_LIKE

# Beyond this many cases only the interesting ones get a row (unless -v).
FULL_TABLE_LIMIT = 50
FAILURE_CELL_CHARS = 120

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
    if stage["passed"] or not stage["gating"]:
        return score or "pass"
    return f"FAIL {score}".strip()


def first_failure_cell(result: Mapping[str, Any]) -> str:
    """`stage: reason` for a stage failure, `STALE: why` (MISSING, ERROR) for a case not scored."""
    failure = result.get("first_failure") or {}
    label = failure.get("stage") or (
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
    problem: bool  # shown even in a large run


@dataclass(slots=True)
class _StageTally:
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    judge_errors: int = 0
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
        if stage["score"] is not None:
            self.scores.append(stage["score"])
        self.gating = self.gating or bool(stage["gating"])

    def mean(self) -> str:
        # fsum: exact, so the mean does not depend on the order results arrive in (and it is
        # the mean results.json reports).
        return f"{math.fsum(self.scores) / len(self.scores):.3f}" if self.scores else "-"


class RunSummary:
    """The `per-stage summary` section: `add` every case's result dict, then `lines`."""

    def __init__(self, *, verbose: bool) -> None:
        self.verbose = verbose
        self.count = 0
        self._rows: list[_Row] = []  # every row while the run is small (or -v), else problems
        # Where each (stage, gating) pair first appears: the columns follow the suites' order.
        self._first_seen: dict[tuple[str, bool], tuple[Order, int]] = {}
        self._stages: dict[str, _StageTally] = {}
        self._categories: dict[str, list[int]] = {}  # category -> [passed, scored]
        self._recorded = self._replayed = self._stale = self._missing = 0
        self._replayed_http = 0  # replayed by running the system over its recorded HTTP
        self._secrets = self._redacted_recordings = 0
        self._dry_run = 0  # run and judged by --live-dry-run, not written

    def add(self, result: Mapping[str, Any]) -> None:
        order = (result["file"], result["index"], result["id"], self.count)
        self.count += 1
        label = f"{result['suite']}::{result['id']}"
        outcome = result["outcome"]
        for position, (name, stage) in enumerate(result["stages"].items()):
            seen = (name, bool(stage["gating"]))
            if seen not in self._first_seen or (order, position) < self._first_seen[seen]:
                self._first_seen[seen] = (order, position)
            self._stages.setdefault(name, _StageTally()).add(stage)
        tally = self._categories.setdefault(result.get("category") or "-", [0, 0])
        tally[0] += outcome in PASS_LIKE
        tally[1] += outcome in DECIDED
        recording = result.get("recording") or {}
        status = recording.get("status")
        self._recorded += status == "recorded"
        self._dry_run += status == "dry_run"
        self._replayed += status in ("replayed", "replayed_http")
        self._replayed_http += status == "replayed_http"
        secrets = recording.get("redacted") or 0
        self._secrets += secrets
        self._redacted_recordings += bool(secrets)
        self._stale += outcome == "stale"
        self._missing += outcome == "missing"
        problem = outcome in FAILING or bool(result.get("first_failure"))
        if problem or self.verbose or self.count <= FULL_TABLE_LIMIT:
            cells = {name: stage_cell(stage) for name, stage in result["stages"].items()}
            row = _Row(
                order,
                label,
                result.get("category") or "-",
                outcome,
                cells,
                first_failure_cell(result),
                problem,
            )
            self._rows.append(row)
        if self.count == FULL_TABLE_LIMIT + 1 and not self.verbose:
            self._rows = [row for row in self._rows if row.problem]  # a large run: problems only

    def stage_names(self) -> list[str]:
        """Stage columns in the order suites list them, gating stages before report-only ones."""
        first = sorted(self._first_seen.items(), key=lambda item: item[1])
        gating = [name for (name, is_gating), _ in first if is_gating]
        report_only = [name for (name, is_gating), _ in first if not is_gating]
        return gating + [name for name in report_only if name not in gating]

    def lines(self, *, orphans: Sequence[str], orphan_note: str = "") -> list[str]:
        """Everything under the `per-stage summary` heading, in a fixed order."""
        stages = self.stage_names()
        lines = self._case_rows(stages) if self.count else ["no eval cases ran"]
        if self.count and stages:
            lines += ["", *self._stage_totals(stages)]
            if any(not self._stages[name].gating for name in stages):
                lines.append("* report only: never fails a case")
        if self.count:
            lines += ["", *self._category_rates()]
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
            from .redaction import redaction_summary

            lines.append(redaction_summary(self._secrets, self._redacted_recordings))
        lines += [f"  orphan: {path}" for path in orphans]
        # A live run's cases that were not (fully) recorded are listed, with the reason, in the
        # `recording changes` section that follows.
        return lines

    def _case_rows(self, stages: list[str]) -> list[str]:
        header = ["case", "category", "outcome", *stages, "first failure"]
        rows = [header]
        for row in sorted(self._rows, key=lambda row: row.order):
            cells = [row.cells.get(name, "-") for name in stages]
            rows.append([row.label, row.category, row.outcome, *cells, row.failure])
        lines = _table(rows)
        hidden = self.count - len(self._rows)
        if hidden:
            lines.append(f"({hidden} passing or skipped cases not shown; -v shows every case)")
        return lines

    def _stage_totals(self, stages: list[str]) -> list[str]:
        rows = [["stage", "passed", "failed", "skipped", "judge errors", "mean score"]]
        for name in stages:
            tally = self._stages[name]
            label = name if tally.gating else f"{name}*"
            counts = (tally.passed, tally.failed, tally.skipped, tally.judge_errors)
            rows.append([label, *map(str, counts), tally.mean()])
        return _table(rows)

    def _category_rates(self) -> list[str]:
        """Pass rate per category, counted as in results.json: passes over the cases whose answer
        was scored (stale, missing, erroring and skipped cases are shown as counts elsewhere)."""
        rows = [["category", "passed", "scored", "pass rate"]]
        for category in sorted(self._categories):
            passed, scored = self._categories[category]
            rate = f"{passed / scored:.0%}" if scored else "-"
            rows.append([category, str(passed), str(scored), rate])
        return _table(rows)
