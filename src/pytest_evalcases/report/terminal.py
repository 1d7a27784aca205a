"""The terminal's `per-stage summary`, built one per-case result dict at a time.

A run holds counts, sums and only the rows it may show, never the results themselves: 10,000
result dicts kept to the end of a replay cost ~20 MB. Results may arrive in any order (xdist);
the text depends only on the set of results, in collection order (file, index, id), and on the
terminal's width (the per-case table is laid out to fit it, in `terminal_tables`).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.outcomes import ACCURACY_STAGE, COMPLETENESS_STAGE, DECIDED, PASS_LIKE
from ..domain.calibration_agreement import calibration_report, terminal_agreement_lines
from ..domain.calibration_scoring import RIGHT, terminal_lines
from ..store.redaction import redaction_summary
from .ingestion import UserRecords, ingestion_records, recording_name, summary_line
from .terminal_tables import case_table, fit_failure, fitted, rate_table

# Which cases get a row of the per-case table: those that did not pass (the default), every
# case (-v, --eval-summary=all) or none (-q -q, --eval-summary=none).
ROWS_FAILED, ROWS_ALL, ROWS_NONE = "failed", "all", "none"
SUMMARY_ROWS = (ROWS_FAILED, ROWS_ALL, ROWS_NONE)
# Outcomes that passed, or were not meant to run: no row by default.
QUIET_OUTCOMES = frozenset({"passed", "skipped"})
FAILURE_CELL_CHARS = 120
GROUP_ROWS = 20  # groups (e.g. user ids) shown without -v: those with the lowest pass rates

# Collection order, then arrival order for equal keys (as a stable sort of the arrivals).
Order = tuple[str, int, str, int]


def stage_cell(stage: Mapping[str, Any] | None) -> str:
    if stage is None or stage["passed"] is None:
        return "-"
    if stage.get("judge_error"):
        return "JUDGE-ERR"
    if stage.get("stage_error"):  # a user stage that could not score the case
        return "ERROR"
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
    return fit_failure(" ".join(cell.split()), FAILURE_CELL_CHARS)


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


# The fields of a calibration case's result its section reads (calibration_report: the suite,
# id and outcome beside the `calibration` block; the order of the rows: file, index, id).
_CALIBRATION_KEPT = ("file", "index", "id", "suite", "outcome", "calibration")


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
        # group -> [passed, scored]: the grouped cases (results.json's `groups` leaves the
        # others out too: a case without a user is no user's row)
        self._groups: dict[str, list[int]] = {}
        self._grouped = False  # any case has a group: the per-group table is shown
        self._users_only = True  # every grouped case is grouped by its suite user
        self._group_scores: dict[str, dict[str, array[float]]] = {}  # group -> stage -> scores
        # Memory suites: completeness and accuracy label counts per category and per group.
        self._labels: dict[str, dict[str, dict[str, int]]] = {"category": {}, "group": {}}
        self._recorded = self._replayed = self._stale = self._missing = 0
        self._replayed_http = 0  # replayed by running the system over its recorded HTTP
        self._secrets = self._redacted_recordings = 0
        self._system_retries: dict[str, int] = {}  # case or user -> retries of the system's calls
        self._ready_waits: dict[str, float] = {}  # user -> seconds its ready() was polled
        self._ingestion = UserRecords()  # each (suite, user)'s ingestion record
        self._dry_run = 0  # run and judged by --live-dry-run, not written
        self._interrupted = 0  # not run: user code raised KeyboardInterrupt
        self._calibration: list[Mapping[str, Any]] = []  # scored calibration cases (a few)

    def add(self, result: Mapping[str, Any]) -> None:
        if result.get("calibration") is not None:  # a scored judge test case: its own section
            self._tally_recording(result)
            # What its section reads, kept to the run's end (5,000 items: not the whole results)
            self._calibration.append({key: result.get(key) for key in _CALIBRATION_KEPT})
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
        stages = result["stages"]
        if grouped:  # only grouped cases pay for the per-group means
            tally = self._groups.setdefault(group_name, [0, 0])
            tally[0] += outcome in PASS_LIKE
            tally[1] += outcome in DECIDED
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
        self._interrupted += status == "not_run" and "interrupted (" in str(recording.get("note"))
        for ingestion in ingestion_records(result):
            self._ingestion.add(result, ingestion)
            if ingestion.get("retries"):
                where = f"{result.get('suite')}::{recording_name(ingestion, result)} (ingestion)"
                self._system_retries[where] = ingestion["retries"]
        if recording.get("ready_wait_s") is not None:  # the user's ready() was waited for
            user = str(result.get("user") or result.get("group"))
            self._ready_waits[user] = recording["ready_wait_s"]
        retries = recording.get("system_retries")
        if retries:
            self._system_retries[f"{result.get('suite')}::{result.get('id')}"] = len(retries)
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
        ordered = sorted(self._calibration, key=lambda r: (r["file"], r["index"], r["id"]))
        section = calibration_report(ordered)
        if not section:
            return []
        shown, hidden = section, 0
        if self.rows != ROWS_ALL:  # as the eval cases: the rows to read, the rest counted
            wrong = (
                []
                if self.rows == ROWS_NONE
                else [case for case in section["cases"] if case.get("status") not in RIGHT]
            )
            shown, hidden = {**section, "cases": wrong}, len(section["cases"]) - len(wrong)
        return [*terminal_lines(shown, width, hidden), *terminal_agreement_lines(section)]

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
        idle = (
            ["no eval cases ran (the calibration cases follow, under judge calibration)"]
            if self._calibration
            else ["no eval cases ran"]
        )
        sections = [self._case_rows(stages, width) if self.count else idle]
        if self.count and stages:
            totals = self._stage_totals(stages, width)
            if any(not self._stages[name].gating for name in stages):
                totals.append("* report only: never fails a case")
            sections.append(totals)
        # Pass rates only when a case was scored (not in a run that skipped them all, such
        # as --eval-ingest-only): a table of zeros says nothing.
        scored = any(scored for _, scored in self._categories.values())
        if self.count and scored:
            sections.append(self._category_rates(width))
        if self._grouped and scored:
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
            f"{len(orphans)} orphaned{orphan_note}"
            + (f", {self._interrupted} interrupted" if self._interrupted else ""),
        ]
        if self._ingestion:
            lines.append(summary_line(self._ingestion.users(), self._ingestion.unchanged()))
        if self._ready_waits:
            longest = sorted(self._ready_waits.items(), key=lambda kv: (-kv[1], kv[0]))
            shown = ", ".join(f"{user} {seconds:.1f} s" for user, seconds in longest[:5])
            more = f" (+{len(longest) - 5} more)" if len(longest) > 5 else ""
            count = f"{len(longest)} user{'s' * (len(longest) != 1)}"
            lines.append(f"ingestion: waited for ready() of {count}: {shown}{more}")
        if self._system_retries:
            lines.append(retries_line(self._system_retries))
        if self._secrets:
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

    def _stage_totals(self, stages: list[str], width: int | None) -> list[str]:
        repeated = any(self._stages[name].repeated for name in stages)
        header = ["stage", "passed", "failed", "skipped", "judge errors"]
        rows = [header + (["unstable"] if repeated else []) + ["mean score"]]
        for name in stages:
            tally = self._stages[name]
            label = name if tally.gating else f"{name}*"
            counts = [tally.passed, tally.failed, tally.skipped, tally.judge_errors]
            counts += [tally.unstable] if repeated else []
            rows.append([label, *map(str, counts), tally.mean()])
        return fitted(rows, width)

    def _category_rates(self, width: int | None) -> list[str]:
        """Pass rate per category, counted as in results.json: passes over the cases whose answer
        was scored (stale, missing, erroring and skipped cases are shown as counts elsewhere);
        a memory suite's completeness and accuracy label counts beside it."""
        names = sorted(self._categories)
        # The per-group table below, when there is one, explains the label columns once.
        return rate_table(
            "category",
            self._categories,
            names,
            self._labels["category"],
            width=width,
            label_legends=not self._grouped,
        )

    def _group_rates(self, stages: list[str], width: int | None) -> list[str]:
        """Pass rate per group (a suite user, or a case's `group`) with its Wilson interval,
        label counts and the mean score of each stage (a case without a group has no row).
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
        means = [
            name
            for name in stages
            if self._stages[name].gating
            and any(name in scores for scores in self._group_scores.values())
        ]
        lines = rate_table(
            kind, self._groups, names, self._labels["group"], self._group_scores, means, width
        )
        if hidden:
            lines.append(f"({hidden} more {kind}s with higher pass rates; -v shows every {kind})")
        return lines


def retries_line(retried: Mapping[str, int]) -> str:
    """`system retries: 3 (s::c1 2, s::users/u-ana (ingestion) 1)`: the system's calls tried
    again on a transient error in a live run, the most retried first."""
    ordered = sorted(retried.items(), key=lambda entry: (-entry[1], entry[0]))
    shown = ", ".join(f"{where} {count}" for where, count in ordered[:5])
    more = f" (+{len(ordered) - 5} more)" if len(ordered) > 5 else ""
    return f"system retries: {sum(retried.values())} ({shown}{more})"
