"""The `recording changes` section of a live run, and recording-changes.md (pure, from the
per-case result dicts): what each re-recorded case changed, the counts `N unchanged, M changed,
K new`, and every selected case the run did not (fully) record, with the reason. A suite user's
ingestion recording (`users/<id>.json`) this run ingested is listed too, before the cases, and
counted apart: every case of the user carries its change (`ingestion.change`), said once.

Built on the controller as results arrive (the same with and without xdist); the dicts carry
the change each worker described (`recording.change`), never the recordings themselves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..domain.retries import transient_kind
from .ingestion import ingestion_records, recording_name
from .markdown_table import escape_cell

# Beyond this many changed cases the terminal shows the first ones (-v, or recording-changes.md,
# shows them all); cases not recorded are always listed.
TERMINAL_CHANGES_LIMIT = 50
RECORDING_CHANGES_MD = "recording-changes.md"

Order = tuple[str, int, str, int]
# When the cases of one user carry different changes (xdist: each worker ingests its users),
# the most telling one is said.
_INGESTION_RANK = {"new": 0, "changed": 1, "unchanged": 2}


@dataclass(slots=True)
class _Entry:
    order: Order
    label: str
    text: str  # the kind (changed, new), or why the case was not recorded
    details: list[str] = field(default_factory=list)


def not_recorded_reason(result: Mapping[str, Any]) -> str | None:
    """Why a live run did not (fully) record this case, or None when it did (or the user
    skipped it: a skipped or deselected case is not a case the run was asked to record)."""
    recording = result.get("recording") or {}
    status, outcome = recording.get("status"), result.get("outcome")
    if status in ("not_run", "not_rerecorded"):
        return str(recording.get("note") or status)
    if recording.get("pending") or recording.get("not_rejudged"):
        return str(recording.get("note") or "judge verdict pending")
    if status in ("recorded", "dry_run", "replayed", "replayed_http") or outcome == "skipped":
        return None
    reason = (result.get("first_failure") or {}).get("reason") or ""
    if outcome in ("stale", "missing", "error"):
        return f"{outcome}: {reason}" if reason else outcome
    return None


def _retries_detail(recording: Mapping[str, Any]) -> list[str]:
    """`system run retried 2 times (HTTP 503, ReadError)` for a case whose system run was
    tried again on a transient error (docs/system.md#retries-of-the-systems-calls)."""
    retries = recording.get("system_retries")
    if not isinstance(retries, list) or not retries:
        return []
    kinds = [transient_kind(str(retry.get("reason", ""))) for retry in retries]
    times = f"{len(retries)} time{'s' * (len(retries) != 1)}"
    return [f"system run retried {times} ({', '.join(dict.fromkeys(kinds))})"]


class RecordingChanges:
    """`add` every case's result dict of a live run, then `lines` (terminal) or `markdown`."""

    def __init__(self, *, dry_run: bool = False, verbose: bool = False) -> None:
        self.dry_run = dry_run
        self.verbose = verbose
        self.counts = {"unchanged": 0, "changed": 0, "new": 0}
        self.current = 0  # --live-stale / --live-judges: already current, nothing to do
        self.repaired = 0  # pairs a kill left mismatched (cassette vs .http.json), recorded again
        self.changed: list[_Entry] = []
        self.not_recorded: list[_Entry] = []
        self.stopped: str | None = None  # why the run stopped starting cases, if it did
        # Each (suite, user)'s ingestion recording this run ingested: its kind and entry.
        self.ingestions: dict[tuple[str, str], _Entry] = {}
        self._count = 0

    def add(self, result: Mapping[str, Any]) -> None:
        order = (
            str(result.get("file") or ""),
            result.get("index") or 0,
            str(result.get("id") or ""),
            self._count,
        )
        self._count += 1
        label = f"{result.get('suite')}::{result.get('id')}"
        recording = result.get("recording") or {}
        change = recording.get("change") or None
        if isinstance(change, Mapping) and change.get("kind") in self.counts:
            kind = str(change["kind"])
            self.counts[kind] += 1
            self.repaired += bool(change.get("repaired"))
            if kind != "unchanged":
                details = [*(change.get("details") or []), *_retries_detail(recording)]
                self.changed.append(_Entry(order, label, kind, details))
        elif recording.get("status") in ("replayed", "replayed_http"):
            self.current += 1
        reason = not_recorded_reason(result)
        if reason is not None:
            self.not_recorded.append(_Entry(order, label, reason))
        for ingestion in ingestion_records(result):
            self._add_ingestion(result, ingestion)

    def _add_ingestion(self, result: Mapping[str, Any], ingestion: Any) -> None:
        change = ingestion.get("change") if isinstance(ingestion, Mapping) else None
        if not isinstance(change, Mapping) or change.get("kind") not in _INGESTION_RANK:
            return  # reused or replayed: this run wrote no ingestion recording
        suite, user = str(result.get("suite")), str(ingestion.get("user") or result.get("user"))
        kind = str(change["kind"])
        kept = self.ingestions.get((suite, user))
        if kept is not None and _INGESTION_RANK[kept.text] <= _INGESTION_RANK[kind]:
            return
        entry = _Entry((suite, 0, user, 0), f"{suite}::{recording_name(ingestion, result)}", kind)
        entry.details = [str(detail) for detail in change.get("details") or []]
        retries = ingestion.get("retries")
        if isinstance(retries, int) and retries > 0:  # its hooks' calls tried again
            entry.details.append(f"ingestion retried {retries} time{'s' * (retries != 1)}")
        self.ingestions[suite, user] = entry

    def add_unreported(self, nodeids: Sequence[str], reason: str) -> None:
        """Selected cases that never reported (the run stopped, or was stopped, before them)."""
        for nodeid in nodeids:
            self.not_recorded.append(
                _Entry(("~", 0, nodeid, self._count), nodeid, f"not run: {reason}")
            )
            self._count += 1

    @property
    def incomplete(self) -> bool:
        return bool(self.not_recorded)

    def counts_text(self) -> str:
        counts = self.counts
        text = f"{counts['unchanged']} unchanged, {counts['changed']} changed, {counts['new']} new"
        if self.current:
            text += f", {self.current} already current"
        if self.repaired:
            text += f"; repaired {self.repaired} mismatched recording{'s' * (self.repaired != 1)}"
        if self.not_recorded:
            text += f"; {len(self.not_recorded)} not recorded"
        if self.ingestions:
            kinds = [entry.text for entry in self.ingestions.values()]
            text += "; ingestion recordings: " + ", ".join(
                f"{kinds.count(kind)} {kind}" for kind in ("unchanged", "changed", "new")
            )
        return text + (" (dry run: nothing was written)" if self.dry_run else "")

    def lines(self) -> list[str]:
        """The terminal section, under its `recording changes` heading."""
        changed = sorted(self.changed, key=lambda e: e.order)
        shown = changed if self.verbose else changed[:TERMINAL_CHANGES_LIMIT]
        lines = []
        for entry in self._changed_ingestions():
            lines.append(f"{entry.label} (ingestion {entry.text})")
            lines += [f"  {detail}" for detail in entry.details]
        for entry in shown:
            lines.append(f"{entry.label} ({entry.text})")
            lines += [f"  {detail}" for detail in entry.details]
        if len(shown) < len(changed):
            lines.append(
                f"({len(changed) - len(shown)} more changed cases not shown; -v shows "
                f"them, and --eval-report writes them all to {RECORDING_CHANGES_MD})"
            )
        lines.append(self.counts_text())
        if self.stopped:
            lines.append(f"stopped starting cases: {self.stopped}")
        for entry in sorted(self.not_recorded, key=lambda e: e.order):
            lines.append(f"  not recorded: {entry.label} ({entry.text})")
        return lines

    def _changed_ingestions(self) -> list[_Entry]:
        """The ingestion recordings this run wrote (new or changed), by (suite, user)."""
        return [entry for _, entry in sorted(self.ingestions.items()) if entry.text != "unchanged"]

    def markdown(self) -> str:
        """recording-changes.md: the same, ready for a PR description."""
        out = ["## Recording changes", "", f"**{self.counts_text()}**", ""]
        if self.dry_run:
            out += [
                "Dry run (`--live-dry-run`): the system and judges ran; no recording was written.",
                "",
            ]
        if self.stopped:
            out += [f"Stopped starting cases: {escape_cell(self.stopped, 300)}.", ""]
        changed = sorted(self.changed, key=lambda e: e.order)
        ingestions = self._changed_ingestions()
        if changed or ingestions:
            out += ["| case | change | what changed |", "| --- | --- | --- |"]
            for entry in ingestions:
                what = "<br>".join(escape_cell(d, 300) for d in entry.details) or " "
                out.append(f"| {escape_cell(entry.label)} | ingestion {entry.text} | {what} |")
            for entry in changed:
                what = "<br>".join(escape_cell(d, 300) for d in entry.details) or " "
                out.append(f"| {escape_cell(entry.label)} | {entry.text} | {what} |")
            out.append("")
        if self.not_recorded:
            out += [
                f"### Not recorded ({len(self.not_recorded)})",
                "",
                "| case | why |",
                "| --- | --- |",
            ]
            for entry in sorted(self.not_recorded, key=lambda e: e.order):
                out.append(f"| {escape_cell(entry.label)} | {escape_cell(entry.text, 400)} |")
            out.append("")
        return "\n".join(out).rstrip() + "\n"
