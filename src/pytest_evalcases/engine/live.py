"""Live recording of one case: run the system (or reuse a current trace), judge what is due, save.

Live never loses what it paid for, nor a good recording for nothing: a failed system run keeps the
old cassette; a failed judge call saves the new trace with that verdict pending (replay then asks
for --live-judges); and a recording equal to the old one but for timings and usage is not written.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import (
    CassetteError,
    MissingRecording,
    NewerCassette,
    StaleRecording,
    SystemTimeout,
)
from ..core.modes import RunMode
from ..core.names import clip
from ..domain.context import case_where
from ..domain.system import normalize_trace, system_view
from ..domain.verdicts import (
    judged_inputs,
    judged_part,
    judged_units,
    repeats_problem,
    verdict_key,
)
from ..http.router import CaseHttp
from ..store.cassette import Cassette, cassette_path, load_cassette
from ..store.keys import changed_fields, check_key
from ..store.pair import RecordingPair
from ..store.redaction import redact_for_output
from ..telemetry import NO_SPANS, CaseSpans
from .ingestion import aingest_live, reuse_explained
from .judge_calls import judge_with_repeats
from .limits import CaseSlots, Interrupted, recorded_cost_of
from .recording import JudgeBinding, LiveRecording, Recording
from .replay import case_key, key_labels_of
from .save import save_recording
from .turns import run_conversation

if TYPE_CHECKING:
    from ..core.schema import Case
    from ..domain.context import SuiteContext
    from ..http.router import HttpLayer


def _existing(
    ctx: SuiteContext, case: Case, path: Path, mode: RunMode
) -> tuple[Cassette | None, Cassette | None]:
    """(the cassette there is, as a new recording is compared with it; the cassette a
    --live-stale / --live-judges run may build on, None: record from scratch). A cassette of a
    newer format is never overwritten, whatever the mode; one whose HTTP file is not the one it
    names (a run killed between the two writes) is not built on: recorded again (--live-stale),
    or refused (--live-judges runs no system)."""
    try:
        doc = load_cassette(path, ctx.rootdir)
    except NewerCassette:
        raise
    except CassetteError:
        if mode == RunMode.LIVE_JUDGES:
            raise
        return None, None
    if doc is None or mode == RunMode.LIVE:
        return doc, None
    try:  # every verdict is judged again or checked below
        doc.check_integrity(path, ctx.rootdir, verdicts=False)
    except CassetteError:
        if mode == RunMode.LIVE_JUDGES:
            raise
        return doc, None
    if doc.http is not None:
        pair = RecordingPair.of_case(ctx.cassette_root, ctx.suite.name, case.id)
        torn = pair.torn(doc.http, ctx.rootdir)
        if torn is not None:
            if mode == RunMode.LIVE_JUDGES:
                raise pair.torn_pair(
                    torn.problem, "re-record it with --live (--live-judges does not run the system)"
                )
            return doc, None
    # judged again: a hand-edited verdict is worth nothing
    return doc, replace(doc, verdicts=doc.usable_verdicts())


def _holds_for(stage: Any, old: Any, judged: dict[str, Any], trace: dict[str, Any]) -> bool:
    """A recorded verdict still says something true of `trace`: a finished verdict (not pending,
    no error) made on the answer and context its stage reads now (`judged`: the trace it was
    made on), whatever judge or key made it."""
    return (
        isinstance(old, dict)
        and not old.get("pending")
        and not old.get("error")
        and all(
            trace.get(name) == judged.get(name)
            for name in ("answer", "context")
            if name in stage.reads
        )
    )


def _still_valid(
    stage: Any,
    old: Any,
    expected: dict[str, str],
    judged: dict[str, Any],
    trace: dict[str, Any],
    repeats: int | None = None,
) -> bool:
    """A recorded verdict holds for `trace` (see `_holds_for`), made under today's key (and
    repeats): it needs no judge call."""
    return (
        _holds_for(stage, old, judged, trace)
        and old.get("key") == expected
        and repeats_problem(old, expected, repeats) is None
    )


def _verdicts_before(
    ctx: SuiteContext, path: Path, old_doc: Cassette | None
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Per run, (the verdicts a cassette holds that were not edited by hand, the trace they
    were made on): what a verdict falls back on when its judge fails. None of a cassette whose
    trace was edited."""
    if old_doc is None:
        return []
    try:
        old_doc.check_integrity(path, ctx.rootdir, verdicts=False)
    except CassetteError:
        return []
    return [(old_doc.usable_verdicts(), old_doc.trace)] + [
        (run.verdicts, run.trace) for run in old_doc.later_runs or ()
    ]


async def record(
    ctx: SuiteContext,
    case: Case,
    judge: JudgeBinding,
    mode: RunMode,
    slots: CaseSlots | None = None,
    http: Callable[[], HttpLayer] | None = None,
    offline: tuple[Cassette, dict[str, Any]] | None = None,
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

    path = cassette_path(ctx.cassette_root, ctx.suite.name, case.id)
    view = system_view(case)
    repairs = mode != RunMode.LIVE_JUDGES  # a broken user recording: ingested again
    key = case_key(ctx, view, repairs)
    if offline is not None:
        old_doc, offline_trace = offline
        existing: Cassette | None = replace(old_doc, trace=offline_trace)
        judged_on = old_doc.trace  # the trace the recorded verdicts were made on
        trace_ok = True
        wanted = old_doc.run_count
    else:
        old_doc, existing = _existing(ctx, case, path, mode)
        judged_on = existing.trace if existing is not None else {}
        trace_ok = existing is not None and not changed_fields(existing.key, key)
        # --eval-runs K, else what the cassette holds (--live: 1); another count re-runs all
        wanted = ctx.runs or (existing.run_count if existing and mode != RunMode.LIVE else 1)
        if trace_ok and existing is not None and existing.run_count != wanted:
            if mode == RunMode.LIVE_JUDGES:
                raise StaleRecording(
                    f"stale recording: runs changed ({existing.run_count} "
                    f"-> {wanted}); re-record with --live"
                )
            trace_ok = False
    if mode == RunMode.LIVE_JUDGES and not trace_ok:
        if existing is None:
            raise MissingRecording(
                f"no recording for {case_where(ctx, case)} to re-judge; record it with --live"
            )
        check_key(
            existing.key,
            key,
            "",
            "--live (--live-judges re-judges a current trace)",
            labels=key_labels_of(existing, ctx, case),
        )
    exchanges: list[dict[str, Any]] | None = None  # None: keep the HTTP recording there is
    spent = 0.0
    # Each run: (trace, its recorded verdicts, the trace those verdicts were made on)
    runs: list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = []
    if trace_ok:
        assert existing is not None
        runs.append((existing.trace, existing.verdicts, judged_on))
        runs += [(run.trace, run.verdicts, run.trace) for run in existing.later_runs or ()]
    else:
        for number in range(wanted):
            trace, run_exchanges, cost = await _run_system(
                ctx, case, view, slots, http, spans, number == 0, mode, dry_run
            )
            exchanges = run_exchanges if number == 0 else exchanges  # run 1's HTTP is recorded
            spent += cost
            runs.append((trace, {}, {}))
        if ctx.user is not None:  # the ingestion this run's system ran on, now known
            key = case_key(ctx, view, repairs)

    run_verdicts: list[dict[str, Any]] = []
    # (run index, verdict name, stage, the case and trace it judges, key, the verdict kept if
    # the judge fails): a conversation's verdicts are per turn (`turn2.faithfulness`)
    due = []
    # A judge that fails keeps the verdict recorded before, where it holds for today's trace.
    before = (
        [(run[1], run[2]) for run in runs]
        if trace_ok or offline is not None
        else _verdicts_before(ctx, path, old_doc)
    )
    for index, (trace, old_verdicts, judged) in enumerate(runs):
        verdicts: dict[str, Any] = {}
        inputs_judged = judged_inputs(ctx.judged, case, judged) if judged is not trace else {}
        kept_verdicts, kept_on = before[index] if index < len(before) else ({}, {})
        inputs_kept = None
        for name, stage, judged_case, judged_trace in judged_units(ctx.judged, case, trace):
            expected = verdict_key(stage, judged_case, ctx.judge_options, judge.id, judge.version)
            old = old_verdicts.get(name)
            same_input = "input" not in stage.reads or (
                inputs_judged.get(name, judged_case.input) == judged_case.input
            )
            if (
                mode != RunMode.LIVE
                and same_input
                and _still_valid(
                    stage, old, expected, judged_part(judged, name), judged_trace, ctx.judge_repeats
                )
            ):
                verdicts[name] = old
                continue
            fallback = kept_verdicts.get(name)
            if "input" in stage.reads and fallback is not None:
                if inputs_kept is None:
                    inputs_kept = judged_inputs(ctx.judged, case, kept_on)
                if inputs_kept.get(name, judged_case.input) != judged_case.input:
                    fallback = None
            if not _holds_for(stage, fallback, judged_part(kept_on, name), judged_trace):
                fallback = None
            due.append((index, name, stage, judged_case, judged_trace, expected, fallback))
        run_verdicts.append(verdicts)
    trace, verdicts = runs[0][0], run_verdicts[0]
    later_runs = [
        {"trace": run[0], "verdicts": found}
        for run, found in zip(runs[1:], run_verdicts[1:], strict=True)
    ] or None

    if trace_ok and not due and offline is None:
        assert existing is not None
        return Recording(trace, verdicts, "replayed", existing.recorded_at, later_runs=later_runs)

    failed: list[str] = []  # verdicts saved as pending
    not_rejudged: list[str] = []  # verdicts whose judge failed, kept as recorded before
    kept: set[str] = set()
    if due:
        async with slots.judging() if slots is not None and trace_ok else nullcontext():
            outcomes = await asyncio.gather(
                *(
                    judge_with_repeats(
                        judge,
                        stage.name,
                        judged_case,
                        judged_trace,
                        ctx.judge_options,
                        expected,
                        ctx.judge_repeats or 1,
                        spans,
                    )
                    for _, _, stage, judged_case, judged_trace, expected, _ in due
                )
            )
        for (index, name, *_, fallback), verdict in zip(due, outcomes, strict=True):
            cost = recorded_cost_of(verdict)
            spent += cost
            if slots is not None:
                slots.spend(cost)
            where = f" (run {index + 1})" if len(runs) > 1 else ""
            if verdict.get("error") and fallback is not None:
                # A verdict that held is never traded for a pending one: kept, with the key of
                # the judge that made it, and the case listed as not re-judged.
                not_rejudged.append(f"{name}{where}: {verdict['error']}")
                kept.add(name)
                run_verdicts[index][name] = fallback
                continue
            if verdict.get("error"):  # saved as pending: the trace and the other verdicts stay
                verdict["pending"] = True
                verdict.setdefault("score", None)
                failed.append(f"{name}{where}: {verdict['error']}")
            run_verdicts[index][name] = verdict
    http_hash = existing.http if trace_ok and existing is not None else None
    # In a worker thread: its fsync takes ~6 ms, time in which the event loop serves the judge.
    doc, redacted, change = await asyncio.to_thread(
        save_recording,
        ctx,
        case,
        key,
        trace,
        verdicts,
        exchanges,
        http_hash,
        old_doc,
        dry_run,
        later_runs,
        kept,
    )
    notes = []
    # Redacted before it is cut short: a clip could leave half a key that no rule knows.
    failed, not_rejudged = redact_for_output(failed), redact_for_output(not_rejudged)
    if failed:
        notes.append(
            "judge error (" + "; ".join(clip(f, 160) for f in failed) + "); the new trace "
            "was saved with the verdict pending: complete it with --live-judges"
        )
        if dry_run:
            notes[-1] = "judge error (" + "; ".join(clip(f, 160) for f in failed) + ")"
    if not_rejudged:
        notes.append(
            "not re-judged: "
            + "; ".join(clip(f, 160) for f in not_rejudged)
            + "; the verdict recorded before was kept"
        )
    note = "; ".join(notes)
    return LiveRecording(
        doc.trace,
        doc.verdicts,
        "dry_run" if dry_run else "recorded",
        doc.recorded_at,
        note,
        redacted,
        later_runs=doc.later_runs_doc,
        change=change,
        pending=[entry.split(":", 1)[0].split(" (run ")[0] for entry in failed],
        not_rejudged=[entry.split(":", 1)[0].split(" (run ")[0] for entry in not_rejudged],
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
    mode: RunMode = RunMode.LIVE,
    dry_run: bool = False,
) -> tuple[dict[str, Any], list[dict[str, Any]] | None, float]:
    """One system run in a system slot: its trace, its HTTP exchanges (with `http`) and cost.
    Set up only when a case really runs the system (not for --live-judges, nor when
    --live-stale finds every recording current); the user's ingestion too (engine/ingestion)."""
    exchanges = None
    async with slots.system(starts_case) if slots is not None else nullcontext():
        try:
            await ctx.system.asetup(ctx.suite)
            if ctx.user is not None:  # the user's data ingested once, before its first case
                await aingest_live(  # --eval-budget counts what the ingestion cost
                    ctx,
                    http() if http else None,
                    mode == RunMode.LIVE,
                    dry_run,
                    slots.spend if slots is not None else (lambda usd: None),
                )
        except KeyboardInterrupt:
            raise Interrupted(f"the set-up of {ctx.suite.name}") from None
        with spans.system_run() as system_span, reuse_explained(ctx):
            if http is None:
                result = await _run_with_timeout(ctx, case, view)
            else:
                with http().case(CaseHttp(case_where(ctx, case))) as case_http:
                    result = await _run_with_timeout(ctx, case, view)
                exchanges = case_http.interactions
            trace = normalize_trace(result, case_where(ctx, case))
            system_span.trace(trace)
        if slots is not None:
            slots.system_ran(ctx, case, trace)
    return trace, exchanges, recorded_cost_of(trace)


async def _run_with_timeout(ctx: SuiteContext, case: Case, view: Any) -> Any:
    """The system's run, bounded: past the timeout the case is an error and keeps its old
    cassette (a sync system's thread is left behind; it cannot be stopped from outside)."""
    if case.turns is None:
        running = ctx.system.arun(view)
    else:
        running = run_conversation(ctx.system, view, case_where(ctx, case))
    try:
        return await asyncio.wait_for(_interruptible(running, case_where(ctx, case)), ctx.timeout)
    except TimeoutError:
        raise SystemTimeout(
            f"run(case) of {case_where(ctx, case)} did not finish within {ctx.timeout:g} s; raise "
            'the limit with --eval-timeout (or the suite\'s "timeout") if it is slow'
        ) from None


async def _interruptible(running: Any, where: str) -> Any:
    """The system's run, its KeyboardInterrupt turned into Interrupted in the task that ran it
    (asyncio lets a KeyboardInterrupt out of a task through the event loop itself, leaving
    every other task destroyed while pending)."""
    try:
        return await running
    except KeyboardInterrupt:
        raise Interrupted(f"run(case) of {where}") from None
