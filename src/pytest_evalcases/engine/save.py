"""Saving a recording: secrets redacted, the HTTP file written before the cassette that holds its
hash, and nothing written when the new recording equals the old one but for timings, usage and
the values a provider makes fresh on every call."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.errors import CassetteError
from ..domain.scoring import score_recording
from ..http.match import parse_json_path
from ..http.rerecord import keep_old_volatile, with_old_ids
from ..http.volatile import Volatility
from ..store.cassette import Cassette, Run, build_cassette
from ..store.files import shown_path
from ..store.http import http_document, interactions_hash
from ..store.pair import RecordingPair
from ..store.redaction import redact_secrets
from .case_scores import SavedScores
from .diff import describe_changes, describe_http_changes, same_recording
from .replay import recording_labels

if TYPE_CHECKING:
    from ..core.schema import Case
    from ..domain.context import SuiteContext


@dataclass(frozen=True, slots=True)
class Saved:
    """What saving a recording gave: the cassette (as written, or as a dry run would write it),
    the count of secrets redacted, what changed, and the cassette's scores (computed once)."""

    doc: Cassette
    redacted: int
    change: dict[str, Any]
    scores: SavedScores


def save_recording(
    ctx: SuiteContext,
    case: Case,
    key: dict[str, str],
    trace: dict[str, Any],
    verdicts: dict[str, Any],
    exchanges: list[dict[str, Any]] | None,
    http_hash: str | None,
    old: Cassette | None = None,
    dry_run: bool = False,
    later_runs: list[dict[str, Any]] | None = None,
    kept: Collection[str] = (),
) -> Saved:
    """Write the case's HTTP recording (when there are new exchanges), then its cassette, which
    holds the hash of the HTTP file as written: a kill between the two leaves a pair replay
    refuses, never one that lies, and the next live run compares the cassette with the file
    on disk (never with what the old cassette says of it) and repairs it. Secrets are redacted
    from both first. The values a provider makes fresh on every call (ids, times, request ids:
    http/volatile.py) take their old form again, in the exchanges and the trace. Nothing is
    written when the recording equals `old` (the cassette there was) but for those, timings
    and usage, nor in a dry run. Returns the cassette, the count of secrets redacted, what
    changed and its scores. `kept`: the verdicts kept from `old` because their judge failed this
    time; they keep their labels too."""

    labels = recording_labels(ctx, case, verdicts, trace)
    if kept and old is not None:
        labels = _with_kept_labels(labels, old, kept)
    (trace, verdicts, exchanges, labels, later_runs), redacted = redact_secrets(
        [trace, verdicts, exchanges, labels, later_runs]
    )
    pair = RecordingPair.of_case(ctx.cassette_root, ctx.suite.name, case.id)
    side = _http_side(ctx, pair, old, trace, exchanges, http_hash)
    doc = build_cassette(
        ctx.suite.name, case.id, key, side.trace, verdicts, side.http_hash, labels, later_runs
    )
    scored: SavedScores | None = None  # made before the diff when it reads them
    if old is None:
        change: dict[str, Any] = {"kind": "new"}
    elif side.changes is None and side.http_hash == old.http and same_recording(old, doc, False):
        if same_recording(old, doc):
            # The file stays byte for byte: what is returned is what it holds, bar the timings.
            doc.recorded_at = old.recorded_at
            return Saved(doc, redacted, {"kind": "unchanged"}, SavedScores(ctx, case, doc))
        # Only the labels differ (a cassette recorded before them, or before a label's long
        # form): the old recording with today's labels, so the diff holds the labels alone.
        details = describe_changes(old, doc, lambda _: {})
        doc = old.with_labels(labels)
        change = {"kind": "changed", "details": details}
    else:
        scored = SavedScores(ctx, case, doc)  # the item and -x read the same scores

        def scores(run: Run) -> dict[str, tuple[bool | None, float | None]]:
            return stage_scores(ctx, case, run, scored)

        details = describe_changes(old, doc, scores, side.changes or ())
        change = {"kind": "changed", "details": details}
    if side.repaired:
        change["repaired"] = True
    if not dry_run:
        # The HTTP file (when new) and the cassette naming the hash of what reached the disk,
        # as one pair: a kill between the two leaves one the next live run finds and repairs.
        new_http = side.exchanges is not None and side.http_hash != side.on_disk
        http_doc = http_document(ctx.suite.name, case.id, side.exchanges) if new_http else None
        pair.write(doc, ctx.rootdir, http_doc)
    return Saved(doc, redacted, change, scored or SavedScores(ctx, case, doc))


@dataclass(frozen=True, slots=True)
class _HttpSide:
    """The HTTP half of a new recording: its exchanges (a provider's fresh values in their old
    form; None: keep the file there is), the trace with its old ids, the hash the cassette
    names, the hash of the file on disk, what changed in the exchanges (None: nothing), and
    whether the pair on disk was torn (repaired by this write)."""

    exchanges: list[dict[str, Any]] | None
    trace: dict[str, Any]
    http_hash: str | None
    on_disk: str | None
    changes: list[str] | None
    repaired: bool


def _http_side(
    ctx: SuiteContext,
    pair: RecordingPair,
    old: Cassette | None,
    trace: dict[str, Any],
    exchanges: list[dict[str, Any]] | None,
    http_hash: str | None,
) -> _HttpSide:
    """The new exchanges compared with the HTTP file on disk (never with what the old cassette
    says of it: a kill between the two writes leaves a cassette naming another file's hash)."""
    old_http = old.http if old is not None else None
    changes: list[str] | None = None
    on_disk = old_http  # the hash of the HTTP file there is (checked when new exchanges come)
    if exchanges is not None:
        volatility, ignore = Volatility(ctx.suite.http_volatile), ignored_paths(ctx)
        before = None
        if old is not None:
            try:
                before = pair.read_http(ctx.rootdir)
            except CassetteError:
                before = None
            on_disk = None if before is None else interactions_hash(before)
        rerecorded = None
        if before is not None:
            # Fresh ids, times and request ids take their old form again: in the exchanges
            # and in the trace, which may hold the tool-call ids.
            rerecorded = keep_old_volatile(before, exchanges, volatility, ignore)
            exchanges, trace = rerecorded.exchanges, with_old_ids(trace, rerecorded.fresh_ids)
        http_hash = interactions_hash(exchanges)
        if old is not None and http_hash != on_disk:
            if rerecorded is not None and rerecorded.unchanged:
                http_hash = on_disk  # the same requests and answers: keep the file there is
            else:
                before_count = None if before is None else len(before)
                changes = describe_http_changes(
                    before_count, rerecorded, len(exchanges), volatility, ignore
                )
    repaired = old_http is not None and on_disk != old_http
    if repaired:
        changes = [
            f"repaired a mismatched pair: {shown_path(pair.http_path, ctx.rootdir)} did not hold "
            "the HTTP recording its cassette names (a run killed between the two writes?)",
            *(changes or ()),
        ]
    return _HttpSide(exchanges, trace, http_hash, on_disk, changes, repaired)


def _with_kept_labels(
    labels: dict[str, Any], old: Cassette, kept: Collection[str]
) -> dict[str, Any]:
    """Today's labels, but those of the kept verdicts as `old` had them (the judge that made
    them, not the one that failed to re-judge them)."""
    old_labels = old.labels if isinstance(old.labels, dict) else {}
    before = old_labels.get("verdicts") if isinstance(old_labels.get("verdicts"), dict) else {}
    per_stage = dict(labels.get("verdicts") or {})
    for name in kept:
        if name in before:
            per_stage[name] = before[name]
        else:
            per_stage.pop(name, None)
    labels = (
        {**labels, "verdicts": per_stage}
        if per_stage
        else {k: v for k, v in labels.items() if k != "verdicts"}
    )
    if set(per_stage) <= set(kept):  # no verdict of today's judge: where the old one came from
        labels.pop("judge_from", None)
        if "judge_from" in old_labels:
            labels["judge_from"] = old_labels["judge_from"]
    return labels


def ignored_paths(ctx: SuiteContext) -> list[list[str | int]]:
    """The suite's `http_ignore` JSONPaths, parsed (a malformed one is the suite's error)."""
    paths = []
    for path in ctx.suite.http_ignore:
        try:
            paths.append(parse_json_path(path))
        except ValueError:  # the suite's own check reports it
            continue
    return paths


def stage_scores(
    ctx: SuiteContext, case: Case, run: Run, new: SavedScores | None = None
) -> dict[str, tuple[bool | None, float | None]]:
    """How the suite scores one run of a recording, stage by stage: (passed, score). A run of
    the `new` recording is read from its scores (computed once, for the item too); any other
    (the old recording's) is scored here."""
    scores = new.of_run(run) if new is not None else None
    if scores is None:
        scores, _ = score_recording(ctx, case, dict(run.trace), run.verdicts)
    return {
        name: (None if result.judge_error else result.passed, result.score)
        for name, result, _ in scores.results
    }
