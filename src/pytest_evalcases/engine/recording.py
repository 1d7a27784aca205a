"""Getting a case's recording: replayed from its cassette, or recorded live and saved.

Replay never records and never calls anything. Live never loses what it paid for, nor a good
recording for nothing: a failed system run keeps the old cassette; a failed judge call saves the
new trace with that verdict pending (replay then asks for --live-judges); and a recording equal
to the old one but for timings and usage is not written at all.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import (
    CassetteError,
    MissingRecording,
    NewerCassette,
    PendingVerdict,
    StaleRecording,
)
from ..domain.judging import (
    combine_repeats,
    judge_source_advice,
    judged_part,
    judged_units,
    repeat_key,
    repeats_problem,
    verdict_key,
    verdict_labels,
)
from ..domain.system import CaseInput, key_view, normalize_trace, system_view
from ..session import LIVE, LIVE_JUDGES
from ..store.cassette import (
    build_cassette,
    cassette_path,
    check_integrity,
    edited_verdicts,
    http_path,
    load_cassette,
    save_cassette,
    shown_path,
)
from ..store.keys import (
    LabelSource,
    case_label,
    changed_fields,
    check_key,
    recording_key,
    stored_labels,
)
from ..telemetry import NO_SPANS, CaseSpans

if TYPE_CHECKING:
    from ..collect import SuiteContext
    from ..core.schema import Case
    from ..http.router import HttpLayer


@dataclass(slots=True)
class Recording:
    trace: dict[str, Any]
    verdicts: dict[str, Any]
    status: str  # replayed | recorded | not_rerecorded
    recorded_at: str | None = None
    note: str = ""  # why a live run did not re-record
    redacted: int = 0  # secrets replaced in what this run wrote
    # Runs 2..K of a case recorded with --eval-runs: [{"trace": ..., "verdicts": ...}, ...]
    later_runs: list[dict[str, Any]] | None = None


@dataclass(slots=True)
class LiveRecording(Recording):
    """What a live run made of a case (replay builds the plain, smaller Recording)."""

    change: dict[str, Any] | None = None  # {"kind": unchanged | changed | new, "details": [...]}
    pending: list[str] | None = None  # stages whose judge failed: saved as pending verdicts
    spent_usd: float = 0.0  # recorded cost of what this run did for the case (system + judge)


@dataclass(slots=True)
class JudgeBinding:
    """The judge a suite is judged with in this run: id/version for keys, the live judge if any."""

    id: str | None
    version: str | None
    live: Any = None  # a judges.Judge, only in live modes


def _where(ctx: SuiteContext, case: Case) -> str:
    return f"{ctx.suite.name}::{case.id}"


def replay(ctx: SuiteContext, case: Case, judge: JudgeBinding) -> Recording:
    """Load and check a cassette; raises MissingRecording, StaleRecording, CassetteError."""
    doc, _, _ = checked_cassette(ctx, case)
    verdicts = doc.get("verdicts") or {}
    check_verdicts(ctx, case, judge, doc["trace"], verdicts, doc=doc)
    later = doc.get("later_runs")
    if later is not None or ctx.runs is not None:  # --eval-runs: every run's verdicts hold
        _check_runs(ctx, case, judge, doc)
    return Recording(doc["trace"], verdicts, "replayed", doc.get("recorded_at"), later_runs=later)


def recorded_runs(doc: dict[str, Any]) -> int:
    """How many system runs a cassette holds (--eval-runs)."""
    return 1 + len(doc.get("later_runs") or ())


def _check_runs(ctx: SuiteContext, case: Case, judge: JudgeBinding, doc: dict[str, Any]) -> None:
    """Every run of an --eval-runs cassette holds: as many as asked for, each run's verdicts."""
    count = recorded_runs(doc)
    if ctx.runs is not None and count != ctx.runs:
        raise StaleRecording(
            f"stale recording: runs changed ({count} -> {ctx.runs}); re-record with --live"
        )
    for number, run in enumerate(doc.get("later_runs") or (), start=2):
        check_verdicts(ctx, case, judge, run["trace"], run.get("verdicts") or {},
                       f"--live (run {number} of {count})", doc=doc)


def checked_cassette(
    ctx: SuiteContext, case: Case, ignore_prefix: str | None = None
) -> tuple[dict[str, Any], dict[str, str], CaseInput]:
    """The case's cassette, its key checked against today's (less the fields starting with
    `ignore_prefix`) and its content against its hashes; with today's key and the system's view
    of the case. Replay calls this once per case: keep it lean."""
    path = f"{ctx.cassette_dir}{os.sep}{case.id}.json"  # a str: pathlib is slow per case
    doc = load_cassette(path, ctx.rootdir)
    if doc is None:
        raise MissingRecording(
            f"no recording for {_where(ctx, case)}; record it with --live "
            f"({shown_path(path, ctx.rootdir)})"
        )
    view = system_view(case)
    key = recording_key(ctx.key_fields, key_view(view))
    check_key(doc.get("key"), key, "", "--live", ignore_prefix=ignore_prefix,
              labels=_key_labels(doc, ctx, case))
    check_integrity(doc, path, ctx.rootdir)
    return doc, key, view


def check_verdicts(
    ctx: SuiteContext,
    case: Case,
    judge: JudgeBinding,
    trace: dict[str, Any],
    verdicts: dict[str, Any],
    rejudge: str = "--live-judges (re-judges the recorded trace)",
    doc: dict[str, Any] | None = None,
) -> None:
    """Every verdict the trace needs is recorded, under the key it would be made with today.
    `doc`, the cassette, holds the labels a stale message shows."""
    for name, stage, judged_case, _ in judged_units(ctx.judged, case, trace):
        recorded = verdicts.get(name)
        if not isinstance(recorded, dict):
            raise MissingRecording(
                f"no recorded verdict for stage {name} of {_where(ctx, case)}; "
                f"record it with {rejudge} or --live"
            )
        if recorded.get("pending"):
            raise PendingVerdict(
                f"judge verdict pending for {name}; complete it with --live-judges (the "
                f"judge failed when {_where(ctx, case)} was recorded: "
                f"{_clip(str(recorded.get('error') or 'no reason recorded'))})"
            )
        expected = verdict_key(stage, judged_case, ctx.judge_options, judge.id, judge.version)
        old = dict(recorded.get("key") or {})
        if judge.id is None:  # no judge configured: accept whichever judge recorded it
            old.pop("judge", None), old.pop("judge_version", None)
        if old != expected:  # labels are read only for the message of a stale verdict
            _stale_verdict(ctx, judged_case, judge, stage, old, expected, doc or {}, name)
        if "later_repeats" in recorded or ctx.judge_repeats is not None:
            _check_repeats(ctx, judge, name, recorded, expected, rejudge)


def _check_repeats(
    ctx: SuiteContext,
    judge: JudgeBinding,
    name: str,
    recorded: dict[str, Any],
    expected: dict[str, str],
    rejudge: str,
) -> None:
    """A verdict's later repeats hold: as many as this run asks for, each under its key."""
    if judge.id is None:  # no judge configured: the repeats' own judge fields are not compared
        expected = {**expected, **{k: v for k, v in (recorded.get("key") or {}).items()
                                   if k in ("judge", "judge_version")}}
    problem = repeats_problem(recorded, expected, ctx.judge_repeats)
    if problem is not None:
        raise StaleRecording(
            f"stale recording (verdict {name}): {problem}; re-judge with "
            f"{rejudge.split(' (')[0]} (or set the repeats back)"
        )


def _stale_verdict(
    ctx: SuiteContext,
    case: Case,
    judge: JudgeBinding,
    stage: Any,
    old: dict[str, Any],
    expected: dict[str, str],
    doc: dict[str, Any],
    name: str,
) -> None:
    """Raise StaleRecording for a verdict whose key differs, worded with the labels, and naming
    the override the verdict was recorded with when only that explains a changed judge."""
    recorded = stored_labels(doc, "verdicts", name)
    labels = doc.get("labels")
    recorded_from = labels.get("judge_from") if isinstance(labels, dict) else None

    def both_labels() -> Any:
        return recorded, verdict_labels(stage, case, ctx.judge_options, judge.id, judge.version)

    def advice(changed: set[str]) -> str | None:
        return judge_source_advice(changed, recorded, recorded_from, judge.id, ctx.judge_from)

    check_key(old, expected, f" (verdict {name})", "--live-judges",
              labels=both_labels, advice=advice)


def _key_labels(doc: dict[str, Any], ctx: SuiteContext, case: Case) -> LabelSource:
    """The recorded and current labels of the trace's key, computed only if asked (a stale
    message), never on the passing path."""
    return lambda: (stored_labels(doc, "key"), trace_labels(ctx, case))


def trace_labels(ctx: SuiteContext, case: Case) -> dict[str, str]:
    """Labels of the trace key's fields today: the suite's and this case's."""
    labels = dict(ctx.key_labels)
    label = case_label(key_view(system_view(case)))
    if label is not None:
        labels["case"] = label
    return labels


def recording_labels(
    ctx: SuiteContext, case: Case, verdicts: dict[str, Any], trace: dict[str, Any]
) -> dict[str, Any]:
    """What a cassette keeps beside its key hashes: the trace key's labels, each verdict's, and
    where the judge came from (named when only an override explains a changed judge)."""
    labels: dict[str, Any] = {"key": trace_labels(ctx, case)}
    version = _judge_version(ctx.judge_spec) if ctx.judge_spec else None
    per_stage = {
        name: verdict_labels(stage, judged_case, ctx.judge_options, ctx.judge_spec, version)
        for name, stage, judged_case, _ in sorted(
            judged_units(ctx.judged, case, trace), key=lambda unit: unit[0]
        )
        if name in verdicts
    }
    if per_stage:
        labels["verdicts"] = per_stage
    if ctx.judge_spec and ctx.judge_from:
        labels["judge_from"] = ctx.judge_from
    return labels


@functools.cache
def _judge_version(spec: str) -> str:
    """The judge's version for labels, read once per run (it asks importlib.metadata)."""
    from ..judges import judge_version

    return judge_version(spec)


def _clip(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _existing(
    ctx: SuiteContext, path: Path, mode: str
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(the cassette there is, as a new recording is compared with it; the cassette a
    --live-stale / --live-judges run may build on, None: record from scratch). A cassette of a
    newer format is never overwritten, whatever the mode."""
    try:
        doc = load_cassette(path, ctx.rootdir)
    except NewerCassette:
        raise
    except CassetteError:
        if mode == LIVE_JUDGES:
            raise
        return None, None
    if doc is None or mode == LIVE:
        return doc, None
    try:  # every verdict is judged again or checked below
        check_integrity(doc, path, ctx.rootdir, verdicts=False)
    except CassetteError:
        if mode == LIVE_JUDGES:
            raise
        return doc, None
    usable = {**doc, "verdicts": dict(doc.get("verdicts") or {})}
    for name in edited_verdicts(doc):  # judged again: a hand-edited verdict is worth nothing
        usable["verdicts"].pop(name, None)
    return doc, usable


def _still_valid(
    stage: Any,
    old: Any,
    expected: dict[str, str],
    judged: dict[str, Any],
    trace: dict[str, Any],
    repeats: int | None = None,
) -> bool:
    """A recorded verdict holds for `trace`: made under today's key (and repeats), not pending,
    and what its judge read is what it would read now (`judged` is the trace it was made on)."""
    return (
        isinstance(old, dict)
        and not old.get("pending")
        and old.get("key") == expected
        and repeats_problem(old, expected, repeats) is None
        and all(trace.get(name) == judged.get(name) for name in ("answer", "context")
                if name in stage.reads)
    )


class CaseSlots:
    """How a case waits for its turn: a system slot before its system runs (`system`), and,
    when a stop rule (-x / --maxfail, --eval-budget) is set, the same slot while a case that
    needs no system run is judged (`judging`), so that cases start one after another and stop
    starting once the rule fires. Without a rule, such a case is judged at once, as before."""

    def __init__(self, concurrency: int, rule: Any = None) -> None:
        import asyncio

        self._slots = asyncio.Semaphore(concurrency)
        self.rule = rule  # a rerecording.stop.StopRule, or None
        self.counted: set[str] = set()  # cases whose failure the rule has counted already

    @asynccontextmanager
    async def system(self, starts_case: bool = True) -> AsyncIterator[None]:
        """`starts_case` False: a later run (--eval-runs) of a case already started, which the
        stop rule lets finish, as it lets running cases finish."""
        async with self._slots:
            if starts_case and self.rule is not None and self.rule.reason is not None:
                raise self.rule.not_run()
            yield

    def judging(self) -> AbstractAsyncContextManager[None]:
        return self.system() if self.rule is not None and self.rule.active else nullcontext()

    def spend(self, usd: float) -> None:
        if self.rule is not None and usd:
            self.rule.spend(usd)

    def system_ran(self, ctx: SuiteContext, case: Case, trace: dict[str, Any]) -> None:
        """Before the slot is free: the run's cost, and (under -x / --maxfail) a failure of a
        stage that needs no judge, so the next case already sees them. A judged stage's failure
        is known, and counted, only once its verdict is in."""
        rule = self.rule
        if rule is None:
            return
        cost = _cost_of(trace)
        if cost:
            rule.spend(cost)
        where = _where(ctx, case)  # a case fails once, however many of its runs fail
        if (rule.maxfail and not case.xfail and where not in self.counted
                and _fails_without_judge(ctx, case, trace)):
            self.counted.add(where)
            rule.count(True)


async def record(
    ctx: SuiteContext,
    case: Case,
    judge: JudgeBinding,
    mode: str,
    slots: CaseSlots | None = None,
    http: Callable[[], HttpLayer] | None = None,
    offline: tuple[dict[str, Any], dict[str, Any]] | None = None,
    dry_run: bool = False,
    spans: CaseSpans = NO_SPANS,
) -> Recording:
    """Run what this mode needs for one case, and save the cassette if the system run succeeded
    and anything changed (`dry_run`: save nothing, say what would change).

    `slots` bounds the system runs in flight (and applies the run's stop rule); the judge bounds
    its own requests. With `http` (the run's HTTP layer, started on first use), the system's HTTP
    exchanges are recorded into the case's `.http.json`. `offline` (--replay-http --live-judges)
    is the checked cassette and today's trace from an offline run. `spans` (--eval-otel) traces
    each system run and each judge request.

    --live-stale and --live-judges judge only what the trace lacks: verdicts that are pending,
    missing, edited by hand, made under another key or on another answer or context.
    """
    import asyncio  # live only: replay never pays for importing it

    path = cassette_path(ctx.cassette_root, ctx.suite.name, case.id)
    view = system_view(case)
    key = recording_key(ctx.key_fields, key_view(view))
    if offline is not None:
        old_doc, offline_trace = offline
        existing: dict[str, Any] | None = {**old_doc, "trace": offline_trace}
        judged_on = old_doc["trace"]  # the trace the recorded verdicts were made on
        trace_ok = True
        wanted = recorded_runs(old_doc)
    else:
        old_doc, existing = _existing(ctx, path, mode)
        judged_on = existing["trace"] if existing is not None else {}
        trace_ok = existing is not None and not changed_fields(existing.get("key") or {}, key)
        # --eval-runs K, else what the cassette holds (--live: 1); another count re-runs all
        wanted = ctx.runs or (recorded_runs(existing) if existing and mode != LIVE else 1)
        if trace_ok and existing is not None and recorded_runs(existing) != wanted:
            if mode == LIVE_JUDGES:
                raise StaleRecording(f"stale recording: runs changed ({recorded_runs(existing)} "
                                     f"-> {wanted}); re-record with --live")
            trace_ok = False
    if mode == LIVE_JUDGES and not trace_ok:
        if existing is None:
            raise MissingRecording(
                f"no recording for {_where(ctx, case)} to re-judge; record it with --live"
            )
        check_key(existing.get("key"), key, "", "--live (--live-judges re-judges a current trace)",
                  labels=_key_labels(existing, ctx, case))
    exchanges: list[dict[str, Any]] | None = None  # None: keep the HTTP recording there is
    spent = 0.0
    # Each run: (trace, its recorded verdicts, the trace those verdicts were made on)
    runs: list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = []
    if trace_ok:
        assert existing is not None
        runs.append((existing["trace"], existing.get("verdicts") or {}, judged_on))
        runs += [(run["trace"], run.get("verdicts") or {}, run["trace"])
                 for run in existing.get("later_runs") or ()]
    else:
        for number in range(wanted):
            trace, run_exchanges, cost = await _run_system(ctx, case, view, slots, http, spans,
                                                           starts_case=number == 0)
            exchanges = run_exchanges if number == 0 else exchanges  # run 1's HTTP is recorded
            spent += cost
            runs.append((trace, {}, {}))

    run_verdicts: list[dict[str, Any]] = []
    # (run index, verdict name, stage, the case and trace it judges, key): a conversation's
    # verdicts are per turn (`turn2.faithfulness`)
    due = []
    for index, (trace, old_verdicts, judged) in enumerate(runs):
        verdicts: dict[str, Any] = {}
        judged_inputs = _judged_inputs(ctx, case, judged) if judged is not trace else {}
        for name, stage, judged_case, judged_trace in judged_units(ctx.judged, case, trace):
            expected = verdict_key(stage, judged_case, ctx.judge_options, judge.id, judge.version)
            old = old_verdicts.get(name)
            same_input = "input" not in stage.reads or (
                judged_inputs.get(name, judged_case.input) == judged_case.input)
            if mode != LIVE and same_input and _still_valid(
                    stage, old, expected, judged_part(judged, name), judged_trace,
                    ctx.judge_repeats):
                verdicts[name] = old
            else:
                due.append((index, name, stage, judged_case, judged_trace, expected))
        run_verdicts.append(verdicts)
    trace, verdicts = runs[0][0], run_verdicts[0]
    later_runs = [{"trace": run[0], "verdicts": found}
                  for run, found in zip(runs[1:], run_verdicts[1:], strict=True)] or None

    if trace_ok and not due and offline is None:
        assert existing is not None
        return Recording(trace, verdicts, "replayed", existing.get("recorded_at"),
                         later_runs=later_runs)

    failed: list[str] = []
    if due:
        async with slots.judging() if slots is not None and trace_ok else nullcontext():
            outcomes = await asyncio.gather(
                *(judge_with_repeats(judge, stage.name, judged_case, judged_trace,
                                     ctx.judge_options, expected, ctx.judge_repeats or 1, spans)
                  for _, _, stage, judged_case, judged_trace, expected in due)
            )
        for (index, name, *_), verdict in zip(due, outcomes, strict=True):
            if verdict.get("error"):  # saved as pending: the trace and the other verdicts stay
                verdict["pending"] = True
                verdict.setdefault("score", None)
                where = f" (run {index + 1})" if len(runs) > 1 else ""
                failed.append(f"{name}{where}: {verdict['error']}")
            run_verdicts[index][name] = verdict
            spent += _cost_of(verdict)
            if slots is not None:
                slots.spend(_cost_of(verdict))
    http_hash = ((existing or {}).get("integrity") or {}).get("http") if trace_ok else None
    # In a worker thread: its fsync takes ~6 ms, time in which the event loop serves the judge.
    doc, redacted, change = await asyncio.to_thread(
        save_recording, ctx, case, key, trace, verdicts, exchanges, http_hash, old_doc, dry_run,
        later_runs,
    )
    note = ""
    if failed:
        note = (
            "judge error (" + "; ".join(_clip(f, 160) for f in failed) + "); the new trace "
            "was saved with the verdict pending: complete it with --live-judges"
        )
        if dry_run:
            note = "judge error (" + "; ".join(_clip(f, 160) for f in failed) + ")"
    return LiveRecording(
        doc["trace"],
        doc["verdicts"],
        "dry_run" if dry_run else "recorded",
        doc["recorded_at"],
        note,
        redacted,
        later_runs=doc.get("later_runs"),
        change=change,
        pending=[entry.split(":", 1)[0].split(" (run ")[0] for entry in failed],
        spent_usd=spent,
    )


async def _run_system(
    ctx: SuiteContext,
    case: Case,
    view: Any,
    slots: CaseSlots | None,
    http: Callable[[], HttpLayer] | None,
    spans: CaseSpans = NO_SPANS,
    starts_case: bool = True,
) -> tuple[dict[str, Any], list[dict[str, Any]] | None, float]:
    """One system run in a system slot: its trace, its HTTP exchanges (with `http`) and cost.
    Set up only when a case really runs the system (not for --live-judges, nor when
    --live-stale finds every recording current)."""
    exchanges = None
    async with slots.system(starts_case) if slots is not None else nullcontext():
        await ctx.system.asetup(ctx.suite)
        if ctx.user is not None:  # the user's data ingested once, before its first case
            await ctx.user.aset_up(ctx.system.target, ctx.suite.name)
        with spans.system_run() as system_span:
            if http is None:
                result = await _run_with_timeout(ctx, case, view)
            else:
                from ..http.router import CaseHttp

                with http().case(CaseHttp(_where(ctx, case))) as case_http:
                    result = await _run_with_timeout(ctx, case, view)
                exchanges = case_http.interactions
            trace = normalize_trace(result, _where(ctx, case))
            system_span.trace(trace)
        if slots is not None:
            slots.system_ran(ctx, case, trace)
    return trace, exchanges, _cost_of(trace)


def _cost_of(part: dict[str, Any]) -> float:
    """The recorded cost of a trace, or of a verdict with all its repeats."""
    from .limits import recorded_cost

    return recorded_cost(part, part.get("later_repeats") or ())


async def judge_with_repeats(
    judge: JudgeBinding,
    stage: str,
    case: Case,
    trace: dict[str, Any],
    options: dict[str, Any],
    expected: dict[str, str],
    repeats: int,
    spans: CaseSpans = NO_SPANS,
) -> dict[str, Any]:
    """`repeats` verdicts of one stage, as one recorded verdict (each repeat under its key). A
    repeat whose judge failed makes the whole verdict an error: it is recorded as pending."""
    import asyncio

    verdicts = await asyncio.gather(
        *(_judge_one(judge, stage, case, trace, options, spans) for _ in range(repeats))
    )
    failed = next((v for v in verdicts if v.get("error")), None)
    if failed is not None:
        return {**failed, "key": expected}
    for number, verdict in enumerate(verdicts, start=1):
        verdict["key"] = repeat_key(expected, number)
    return combine_repeats(list(verdicts))


def save_recording(
    ctx: SuiteContext,
    case: Case,
    key: dict[str, str],
    trace: dict[str, Any],
    verdicts: dict[str, Any],
    exchanges: list[dict[str, Any]] | None,
    http_hash: str | None,
    old: dict[str, Any] | None = None,
    dry_run: bool = False,
    later_runs: list[dict[str, Any]] | None = None,
) -> tuple[dict[str, Any], int, dict[str, Any]]:
    """Write the case's HTTP recording (when there are new exchanges), then its cassette, which
    holds the HTTP file's hash: a crash between the two leaves a pair replay refuses, never a
    pair that lies. Secrets are redacted from both first. Nothing is written when the recording
    equals `old` (the cassette there was) but for timings and usage, nor in a dry run.
    Returns the cassette, the count of secrets redacted and what changed."""
    from ..store.redaction import redact_secrets
    from .diff import describe_changes, same_exchanges, same_recording

    labels = recording_labels(ctx, case, verdicts, trace)
    (trace, verdicts, exchanges, labels, later_runs), redacted = redact_secrets(
        [trace, verdicts, exchanges, labels, later_runs]
    )
    old_http = ((old or {}).get("integrity") or {}).get("http") if old else None
    http_file = http_path(ctx.cassette_root, ctx.suite.name, case.id)
    http_counts: tuple[int | None, int] | None = None  # (old, new) when the exchanges changed
    if exchanges is not None:
        from ..store.http import interactions_hash, load_http

        http_hash = interactions_hash(exchanges)
        if old is not None and http_hash != old_http:
            try:
                before = load_http(http_file, shown_path(http_file, ctx.rootdir))
            except CassetteError:
                before = None
            ignore = _ignored_paths(ctx)
            if before is not None and old_http is not None and same_exchanges(
                before, exchanges, ignore
            ):
                http_hash = old_http  # the same requests and answers: keep the file there is
            else:
                http_counts = (None if before is None else len(before), len(exchanges))
    doc = build_cassette(ctx.suite.name, case.id, key, trace, verdicts, http_hash, labels,
                         later_runs)
    if old is None:
        change: dict[str, Any] = {"kind": "new"}
    elif http_counts is None and http_hash == old_http and same_recording(old, doc):
        # The file stays byte for byte: what is returned is what it holds, bar the timings.
        return {**doc, "recorded_at": old.get("recorded_at")}, redacted, {"kind": "unchanged"}
    else:
        def scores(recording: Any) -> dict[str, tuple[bool | None, float | None]]:
            return _stage_scores(ctx, case, recording)

        change = {"kind": "changed",
                  "details": describe_changes(old, doc, scores, http_counts)}
    if not dry_run:
        if exchanges is not None and http_hash != old_http:
            from ..store.http import http_document, save_http

            save_http(http_file, http_document(ctx.suite.name, case.id, exchanges))
        save_cassette(cassette_path(ctx.cassette_root, ctx.suite.name, case.id), doc)
    return doc, redacted, change


def _ignored_paths(ctx: SuiteContext) -> list[list[str | int]]:
    from ..http.match import parse_json_path

    paths = []
    for path in ctx.suite.http_ignore:
        try:
            paths.append(parse_json_path(path))
        except ValueError:  # the suite's own check reports it
            continue
    return paths


def _fails_without_judge(ctx: SuiteContext, case: Case, trace: dict[str, Any]) -> bool:
    """Whether a gating stage that needs no verdict fails on this trace."""
    from ..domain.scoring import score_case
    from ..domain.stages.registry import STAGES

    plain = [name for name in ctx.gating if not STAGES[name].judged]
    return score_case(ctx.suite, case, trace, {}, plain, []).first_failure is not None


def _stage_scores(
    ctx: SuiteContext, case: Case, recording: Any
) -> dict[str, tuple[bool | None, float | None]]:
    """How the suite scores a recording, stage by stage: (passed, score)."""
    from ..domain.scoring import score_case

    trace, verdicts = dict(recording.get("trace") or {}), recording.get("verdicts") or {}
    scores = score_case(ctx.suite, case, trace, verdicts, ctx.gating, ctx.report_only)
    return {name: (None if result.judge_error else result.passed, result.score)
            for name, result, _ in scores.results}


async def _run_with_timeout(ctx: SuiteContext, case: Case, view: Any) -> Any:
    """The system's run, bounded: past the timeout the case is an error and keeps its old
    cassette (a sync system's thread is left behind; it cannot be stopped from outside)."""
    import asyncio

    from ..core.errors import SystemTimeout

    if case.turns is None:
        running = ctx.system.arun(view)
    else:
        from .turns import run_conversation

        running = run_conversation(ctx.system, view, _where(ctx, case))
    try:
        return await asyncio.wait_for(running, ctx.timeout)
    except TimeoutError:
        raise SystemTimeout(
            f"run(case) of {_where(ctx, case)} did not finish within {ctx.timeout:g} s; raise "
            "the limit with --eval-timeout (or the suite's \"timeout\") if it is slow"
        ) from None


async def _judge_one(
    judge: JudgeBinding,
    stage: str,
    case: Case,
    trace: dict[str, Any],
    options: dict[str, Any],
    spans: CaseSpans = NO_SPANS,
) -> dict[str, Any]:
    """One verdict; a judge that fails after its retries yields an error verdict, never a pass."""
    with spans.judge_request(stage, judge.id) as judge_span:
        verdict = await _verdict(judge, stage, case, trace, options)
        judge_span.verdict(verdict)
    return verdict


async def _verdict(
    judge: JudgeBinding, stage: str, case: Case, trace: dict[str, Any], options: dict[str, Any]
) -> dict[str, Any]:
    from ..judges import JudgeError, JudgeInput

    data = JudgeInput(
        input=case.input,
        answer=trace.get("answer", ""),
        reference=case.reference,
        context=list(trace.get("context") or []),
        unanswerable=case.unanswerable,
        rubric=case.rubric or (),
    )
    started = time.perf_counter()
    try:
        return dict(await judge.live.evaluate(stage, data, options))
    except JudgeError as exc:
        return {
            "error": str(exc),
            "judge": judge.id,
            "latency_ms": round((time.perf_counter() - started) * 1000, 1),
        }


def replay_http(
    ctx: SuiteContext,
    case: Case,
    judge: JudgeBinding,
    http: HttpLayer,
    refresh: bool = False,
    dry_run: bool = False,
) -> Recording:
    """--replay-http: run today's system with its recorded HTTP answers, score the fresh trace.

    Recorded verdicts are reused while what their judge read is unchanged. With `refresh`
    (--live-stale), a case that ran clean gets its key (and trace) rewritten, with no model
    call (`dry_run`: said, not written)."""
    doc, key, trace = run_recorded(ctx, case, http)
    recorded_trace, verdicts = doc["trace"], dict(doc.get("verdicts") or {})
    # Today's trace may need a verdict the recorded one did not (e.g. it now has a context).
    check_verdicts(
        ctx, case, judge, trace, verdicts, "--replay-http --live-judges (judges today's trace)",
        doc=doc,
    )
    rejudge = False
    recorded_inputs = _judged_inputs(ctx, case, recorded_trace)
    for verdict, stage, judged_case, judged_trace in judged_units(ctx.judged, case, trace):
        recorded_part = judged_part(recorded_trace, verdict)
        changed = [
            name
            for name in ("answer", "context")
            if name in stage.reads and judged_trace.get(name) != recorded_part.get(name)
        ]
        if "input" in stage.reads and recorded_inputs.get(verdict, judged_case.input) != (
            judged_case.input
        ):
            changed.append("the conversation before it")
        if changed:
            rejudge = True
            verdicts[verdict] = {
                "error": f"needs re-judging: {' and '.join(changed)} changed since it was "
                "judged; re-judge today's trace with --replay-http --live-judges (no system "
                "call), or re-record with --live",
                "score": None,
            }
    if refresh and not rejudge:
        return _refresh(ctx, case, doc, key, trace, verdicts, dry_run)
    return Recording(trace, verdicts, "replayed_http", doc.get("recorded_at"))


def _judged_inputs(ctx: SuiteContext, case: Case, trace: dict[str, Any]) -> dict[str, str]:
    """A conversation's verdicts -> the input each judged on `trace` (the turns before it, with
    their answers: a verdict on turn 2 no longer holds when turn 1's answer changed). Empty for a
    one-question case, whose input is the case's own (in the key)."""
    if case.turns is None:
        return {}
    return {name: unit.input for name, _, unit, _ in judged_units(ctx.judged, case, trace)}


def run_recorded(
    ctx: SuiteContext, case: Case, http: HttpLayer
) -> tuple[dict[str, Any], dict[str, str], dict[str, Any]]:
    """The checked cassette, today's key and today's trace, from running the system offline.

    The code fingerprint is no reason for staleness here (the code itself runs); a request the
    recording cannot serve is."""
    from ..store.http import interactions_hash, load_http

    doc, key, view = checked_cassette(ctx, case, ignore_prefix="code.")
    where = _where(ctx, case)
    exchanges_path = http_path(ctx.cassette_root, ctx.suite.name, case.id)
    exchanges = load_http(exchanges_path, shown_path(exchanges_path, ctx.rootdir))
    if exchanges is None or "http" not in doc["integrity"]:
        raise MissingRecording(f"no HTTP recording for {where}; record it with --live")
    if interactions_hash(exchanges) != doc["integrity"]["http"]:
        raise CassetteError(
            f"recording edited by hand: HTTP recording changed "
            f"({shown_path(exchanges_path, ctx.rootdir)}); re-record with --live"
        )
    return doc, key, run_offline(ctx, case, view, http, exchanges)


def _same_trace(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Equal but for the latency, which no two runs share."""
    return {k: v for k, v in old.items() if k != "latency_ms"} == {
        k: v for k, v in new.items() if k != "latency_ms"
    }


def _refresh(
    ctx: SuiteContext,
    case: Case,
    doc: dict[str, Any],
    key: dict[str, str],
    trace: dict[str, Any],
    verdicts: dict[str, Any],
    dry_run: bool = False,
) -> Recording:
    """--replay-http --live-stale: today's code gave a recording whose verdicts all still hold:
    write its key (and its trace, when it changed) without a model call."""
    if doc.get("key") == key and _same_trace(doc["trace"], trace):
        return Recording(trace, verdicts, "replayed_http", doc.get("recorded_at"))
    kept = doc["trace"] if _same_trace(doc["trace"], trace) else trace
    new_doc, redacted, change = save_recording(
        ctx, case, key, kept, doc.get("verdicts") or {}, None, doc["integrity"]["http"], doc,
        dry_run, doc.get("later_runs"),
    )
    return LiveRecording(trace, verdicts, "dry_run" if dry_run else "recorded",
                         new_doc["recorded_at"], redacted=redacted, change=change)


def run_offline(
    ctx: SuiteContext,
    case: Case,
    view: Any,
    http: HttpLayer,
    exchanges: list[dict[str, Any]],
) -> dict[str, Any]:
    """Run the system for one case with vcrpy serving its recorded HTTP; a request or a
    connection the recording cannot serve fails the case, whatever the system made of it."""
    import asyncio
    import contextvars
    import inspect
    import threading

    from ..core.errors import StaleRecording, SystemTimeout, UserCodeExit
    from ..domain.system import exit_message
    from ..http.router import CaseHttp, UnservedRequest

    where = _where(ctx, case)
    suite = ctx.suite
    with http.case(CaseHttp(f"{where} (setup)", [], allow_hosts=suite.allow_hosts), sole=True):
        try:
            ctx.system.setup(suite)
            if ctx.user is not None:
                ctx.user.set_up(ctx.system.target, suite.name)
        except UnservedRequest as exc:
            what = "setup(suite)" if ctx.user is None else "setup(suite) or setup_user(user)"
            raise StaleRecording(
                f"{what} of {suite.name}: {str(exc).split(' — ')[0]}; --replay-http "
                "cannot serve requests made in setup (they are not recorded)"
            ) from None
    case_http = CaseHttp(where, exchanges, suite.http_ignore, suite.allow_hosts)
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            if case.turns is not None:
                from .turns import run_conversation_sync

                outcome["result"] = run_conversation_sync(ctx.system, view, where)
                return
            result = ctx.system.call(view)
            if inspect.isawaitable(result):
                result = asyncio.run(_awaited(result))
            outcome["result"] = result
        except BaseException as exc:  # SystemExit from inside an async system's loop too
            outcome["error"] = exc

    with http.case(case_http, sole=True):
        # A daemon thread, so a system that hangs fails its case at the timeout instead of
        # holding up the gate (the thread is left behind; the interpreter does not wait for it).
        runner = threading.Thread(target=contextvars.copy_context().run, args=(run,),
                                  name="evalcases-system", daemon=True)
        runner.start()
        runner.join(ctx.timeout)
    if runner.is_alive():
        raise SystemTimeout(
            f"run(case) of {where} did not finish within {ctx.timeout:g} s under --replay-http; "
            "raise the limit with --eval-timeout (or the suite's \"timeout\") if it is slow"
        )
    if case_http.problem:
        raise StaleRecording(f"stale recording: {case_http.problem}")
    error = outcome.get("error")
    if isinstance(error, KeyboardInterrupt | Exception):
        raise error
    if error is not None:
        raise UserCodeExit(exit_message("run(case)", error)) from error
    return normalize_trace(outcome.get("result"), where)


async def _awaited(awaitable: Any) -> Any:
    return await awaitable
