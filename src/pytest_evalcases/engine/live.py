"""Live recording of one case: run the system (or reuse a current trace), judge what is due, save.
What runs and what is due is planned by engine/live_plan.py, purely; this module executes the plan.

Live never loses what it paid for, nor a good recording for nothing: a failed system run keeps the
old cassette; a failed judge call saves the new trace with that verdict pending (replay then asks
for --live-judges); and a recording equal to the old one but for timings and usage is not written.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..core.errors import CassetteError, NewerCassette, SystemTimeout
from ..core.event_loops import ctrl_c_pressed
from ..core.modes import RunMode
from ..domain.context import case_where
from ..domain.retries import Attempts, Retry
from ..domain.returned_traces import normalize_trace, with_measured
from ..domain.system import TIMEOUT_OPTION, system_view
from ..store.cassette import Cassette, cassette_path, load_cassette
from ..store.pair import RecordingPair
from ..telemetry import NO_SPANS, CaseSpans
from .ingestion import aingest_live, reuse_explained
from .judge_calls import judge_with_repeats
from .limits import CaseSlots, Interrupted, recorded_cost_of
from .live_plan import (
    DueVerdict,
    OldRecording,
    RecordedRun,
    RunPlan,
    apply_outcomes,
    judge_notes,
    plan_runs,
    plan_verdicts,
)
from .recording import JudgeBinding, LiveRecording, Recording
from .replay import case_key
from .retried_run import RetriedRun, retried_run
from .save import save_recording
from .turns import run_conversation
from .user_runs import ingestion_units

if TYPE_CHECKING:
    from ..core.schema import Case
    from ..domain.context import SuiteContext
    from ..http.router import HttpLayer


def _old_recording(
    ctx: SuiteContext, case: Case, mode: RunMode, offline: tuple[Cassette, dict[str, Any]] | None
) -> OldRecording:
    """The case's recording before this run (live_plan.OldRecording). A cassette of a newer
    format is never overwritten, whatever the mode; one whose HTTP file is not the one it names
    (a run killed between the two writes) is not built on: recorded again (--live-stale), or
    refused (--live-judges runs no system). `offline` (--replay-http --live-judges): the checked
    cassette and today's trace."""
    if offline is not None:
        doc, trace = offline
        return OldRecording(doc, replace(doc, trace=trace), judged_on=doc.trace)
    path = cassette_path(ctx.cassette_root, ctx.suite.name, case.id)
    try:
        doc = load_cassette(path, ctx.rootdir)
    except NewerCassette:
        raise
    except CassetteError:
        if mode == RunMode.LIVE_JUDGES:
            raise
        return OldRecording(None, None)
    if doc is None or mode == RunMode.LIVE:
        return OldRecording(doc, None)
    try:  # every verdict is judged again or checked below
        doc.check_integrity(path, ctx.rootdir, verdicts=False)
    except CassetteError:
        if mode == RunMode.LIVE_JUDGES:
            raise
        return OldRecording(doc, None)
    if doc.http is not None:
        pair = RecordingPair.of_case(ctx.cassette_root, ctx.suite.name, case.id)
        torn = pair.torn(doc.http, ctx.rootdir)
        if torn is not None:
            if mode == RunMode.LIVE_JUDGES:
                raise pair.torn_pair(
                    torn.problem, "re-record it with --live (--live-judges does not run the system)"
                )
            return OldRecording(doc, None)
    # judged again: a hand-edited verdict is worth nothing
    return OldRecording(doc, replace(doc, verdicts=doc.usable_verdicts()))


@dataclass(frozen=True, slots=True)
class _SystemRuns:
    """The runs the plan made (or reused), run 1's HTTP exchanges (None: keep the HTTP
    recording there is), their recorded cost, and the key (a user's: its ingestion now known),
    and the retries the runs took (domain/retries.py)."""

    runs: tuple[RecordedRun, ...]
    exchanges: list[dict[str, Any]] | None
    spent: float
    key: dict[str, str]
    retries: tuple[Retry, ...] = ()


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

    What runs and what is judged is planned in engine/live_plan.py: --live-stale and
    --live-judges judge only what the trace lacks (verdicts that are pending, missing, edited by
    hand, made under another key or on another answer or context).
    """
    view = system_view(case, ctx.run_config)
    repairs = mode != RunMode.LIVE_JUDGES  # a broken user recording: ingested again
    key = case_key(ctx, view, repairs)
    old = _old_recording(ctx, case, mode, offline)
    plan = plan_runs(ctx, case, key, mode, old)
    made = await _make_runs(ctx, case, view, plan, slots, http, spans, mode, dry_run)
    verdict_plan = plan_verdicts(ctx, case, judge, mode, made.runs, plan.fallbacks)
    if plan.reused is not None and not verdict_plan.due and not old.offline:
        assert old.base is not None
        trace, verdicts, later_runs = _as_recorded(made.runs, verdict_plan.kept)
        return Recording(trace, verdicts, "replayed", old.base.recorded_at, later_runs=later_runs)
    reused = plan.reused is not None
    outcomes = await _judge_due(ctx, judge, verdict_plan.due, slots, reused, spans)
    judged = apply_outcomes(verdict_plan, outcomes, len(made.runs))
    spent = made.spent
    for cost in judged.costs:
        spent += cost
        if slots is not None:
            slots.spend(cost)
    trace, verdicts, later_runs = _as_recorded(made.runs, judged.verdicts)
    # In a worker thread: its fsync takes ~6 ms, time in which the event loop serves the judge.
    saved = await asyncio.to_thread(
        save_recording,
        ctx,
        case,
        made.key,
        trace,
        verdicts,
        made.exchanges,
        plan.http,
        old.compared,
        dry_run,
        later_runs,
        judged.kept,
    )
    notes = judge_notes(judged, dry_run)
    doc = saved.doc
    return LiveRecording(
        doc.trace,
        doc.verdicts,
        "dry_run" if dry_run else "recorded",
        doc.recorded_at,
        notes.text,
        saved.redacted,
        later_runs=doc.later_runs_doc,
        change=saved.change,
        pending=notes.pending,
        not_rejudged=notes.not_rejudged,
        spent_usd=spent,
        scoring=saved.scores,
        system_retries=[{"reason": r.reason, "wait_s": round(r.wait_s, 3)} for r in made.retries],
    )


def _as_recorded(
    runs: Sequence[RecordedRun], verdicts: Sequence[dict[str, Any]]
) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]] | None]:
    """Run 1's trace and verdicts, and runs 2..K as a cassette holds them (None: one run)."""
    later_runs = [
        {"trace": run.trace, "verdicts": found}
        for run, found in zip(runs[1:], verdicts[1:], strict=True)
    ] or None
    return runs[0].trace, verdicts[0], later_runs


async def _make_runs(
    ctx: SuiteContext,
    case: Case,
    view: Any,
    plan: RunPlan,
    slots: CaseSlots | None,
    http: Callable[[], HttpLayer] | None,
    spans: CaseSpans,
    mode: RunMode,
    dry_run: bool,
) -> _SystemRuns:
    """The runs the plan reuses, or its system runs, one after another (run 1's HTTP exchanges
    are the ones recorded)."""
    if plan.reused is not None:
        return _SystemRuns(plan.reused, None, 0.0, plan.key)
    runs: list[RecordedRun] = []
    exchanges: list[dict[str, Any]] | None = None
    spent = 0.0
    retries: tuple[Retry, ...] = ()
    for number in range(plan.wanted):
        trace, run_exchanges, cost, run_retries = await _run_system(
            ctx, case, view, slots, http, spans, number == 0, mode, dry_run
        )
        exchanges = run_exchanges if number == 0 else exchanges
        spent += cost
        retries += run_retries
        runs.append(RecordedRun(trace))
    key = plan.key
    if ctx.user is not None or ctx.documents is not None:  # the ingestions it ran on, now known
        key = case_key(ctx, view, mode != RunMode.LIVE_JUDGES)
    return _SystemRuns(tuple(runs), exchanges, spent, key, retries)


async def _judge_due(
    ctx: SuiteContext,
    judge: JudgeBinding,
    due: Sequence[DueVerdict],
    slots: CaseSlots | None,
    reused: bool,
    spans: CaseSpans,
) -> list[dict[str, Any]]:
    """Every due verdict asked of the judge at once (it bounds its own requests); a case that
    ran no system waits for a slot first when a stop rule is set (limits.CaseSlots.judging)."""
    if not due:
        return []
    async with slots.judging() if slots is not None and reused else nullcontext():
        return list(
            await asyncio.gather(
                *(
                    judge_with_repeats(
                        judge,
                        verdict.stage.name,
                        verdict.case,
                        verdict.trace,
                        ctx.judge_options,
                        verdict.key,
                        ctx.judge_repeats or 1,
                        spans,
                    )
                    for verdict in due
                )
            )
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
) -> tuple[dict[str, Any], list[dict[str, Any]] | None, float, tuple[Retry, ...]]:
    """One system run in a system slot: its trace, its HTTP exchanges (with `http`), its cost
    (the failed attempts' included) and the retries it took.
    Set up only when a case really runs the system (not for --live-judges, nor when
    --live-stale finds every recording current); the user's ingestion too (engine/ingestion)."""
    async with slots.system(starts_case) if slots is not None else nullcontext():
        try:
            await ctx.system.asetup(ctx.suite, ctx.timeout)
            # The suite's documents, then the user's data: each ingested once, before the
            # first case that runs on it.
            for unit in ingestion_units(ctx):
                await aingest_live(  # --eval-budget counts what the ingestion cost
                    ctx,
                    http() if http else None,
                    mode == RunMode.LIVE,
                    dry_run,
                    slots.spend if slots is not None else (lambda usd: None),
                    unit,
                )
        except KeyboardInterrupt:
            raise Interrupted(f"the set-up of {ctx.suite.name}") from None
        with spans.system_run() as system_span, reuse_explained(ctx):
            turn_ms: list[float] = []  # a conversation's turns, when the plugin drives them
            # (timed once the HTTP layer has started: its first start imports vcrpy)
            ran, run_ms = await _run_with_timeout(
                ctx, case, view, http() if http else None, slots, turn_ms
            )
            exchanges = ran.exchanges
            where = case_where(ctx, case)
            trace = with_measured(normalize_trace(ran.result, where), where, run_ms, turn_ms)
            system_span.trace(trace)
        if slots is not None:
            slots.system_ran(ctx, case, trace)
    return trace, exchanges, recorded_cost_of(trace) + ran.failed_cost, ran.retries


async def _run_with_timeout(
    ctx: SuiteContext,
    case: Case,
    view: Any,
    http: HttpLayer | None = None,
    slots: CaseSlots | None = None,
    turn_ms: list[float] | None = None,
) -> tuple[RetriedRun, float]:
    """The system's run, bounded, tried again on a transient error (engine/retried_run.py):
    every attempt and wait within the one timeout; past it the case is an error and keeps its
    old cassette (a sync system's thread is left behind; it cannot be stopped from outside).
    Also the wall time in ms of the attempt that succeeded (the trace's `measured.run_ms`);
    `turn_ms` gets its turns' times when the plugin drives a conversation's turns."""
    where = case_where(ctx, case)
    attempt_ms: list[float] = []

    async def run_once() -> Any:
        if turn_ms is not None:
            turn_ms.clear()  # a failed attempt's turns are not the recorded run's
        started = time.perf_counter()
        if case.turns is None:
            result = await _interruptible(ctx.system.arun(view, where), where)
        else:
            running = run_conversation(ctx.system, view, where, turn_ms)
            result = await _interruptible(running, where)
        attempt_ms.append(round((time.perf_counter() - started) * 1000, 1))
        return result

    deadline = time.monotonic() + ctx.timeout
    bound = f"the {ctx.timeout:g} s of {TIMEOUT_OPTION}"
    attempts = Attempts(ctx.retries, f"run(case) of {where}", bound, deadline)
    spend = slots.spend if slots is not None else (lambda usd: None)
    try:
        ran = await asyncio.wait_for(
            retried_run(attempts, run_once, http, where, spend), ctx.timeout
        )
        return ran, attempt_ms[-1]
    except TimeoutError:
        retried = f" ({attempts.summary()})" if attempts.retries else ""
        raise SystemTimeout(
            f"run(case) of {where} did not finish within {ctx.timeout:g} s{retried}; raise "
            'the limit with --eval-timeout (or the suite\'s "timeout") if it is slow'
        ) from None
    finally:
        if slots is not None:
            slots.system_retries += len(attempts.retries)


async def _interruptible(running: Any, where: str) -> Any:
    """The system's run, its KeyboardInterrupt turned into Interrupted in the task that ran it
    (asyncio lets a KeyboardInterrupt out of a task through the event loop itself, leaving
    every other task destroyed while pending)."""
    if ctrl_c_pressed():  # scheduled before the Ctrl-C's cancel could land: do not start it
        running.close()
        raise asyncio.CancelledError
    try:
        return await running
    except KeyboardInterrupt:
        raise Interrupted(f"run(case) of {where}") from None
