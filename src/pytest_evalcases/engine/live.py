"""Live recording of one case: run the system (or reuse a current trace), judge what is due, save.

Live never loses what it paid for, nor a good recording for nothing: a failed system run keeps the
old cassette; a failed judge call saves the new trace with that verdict pending (replay then asks
for --live-judges); and a recording equal to the old one but for timings and usage is not written.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import (
    CassetteError,
    MissingRecording,
    NewerCassette,
    StaleRecording,
    SystemTimeout,
)
from ..core.modes import LIVE, LIVE_JUDGES
from ..core.names import clip
from ..domain.context import case_where
from ..domain.system import key_view, normalize_trace, system_view
from ..domain.verdicts import (
    judged_inputs,
    judged_part,
    judged_units,
    repeats_problem,
    verdict_key,
)
from ..http.router import CaseHttp
from ..store.cassette import cassette_path, check_integrity, edited_verdicts, load_cassette
from ..store.keys import changed_fields, check_key, recording_key
from ..telemetry import NO_SPANS, CaseSpans
from .judge_calls import judge_with_repeats
from .limits import CaseSlots, recorded_cost_of
from .recording import JudgeBinding, LiveRecording, Recording
from .replay import key_labels_of, recorded_runs
from .save import save_recording
from .turns import run_conversation

if TYPE_CHECKING:
    from ..core.schema import Case
    from ..domain.context import SuiteContext
    from ..http.router import HttpLayer


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
        and all(
            trace.get(name) == judged.get(name)
            for name in ("answer", "context")
            if name in stage.reads
        )
    )


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
                raise StaleRecording(
                    f"stale recording: runs changed ({recorded_runs(existing)} "
                    f"-> {wanted}); re-record with --live"
                )
            trace_ok = False
    if mode == LIVE_JUDGES and not trace_ok:
        if existing is None:
            raise MissingRecording(
                f"no recording for {case_where(ctx, case)} to re-judge; record it with --live"
            )
        check_key(
            existing.get("key"),
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
        runs.append((existing["trace"], existing.get("verdicts") or {}, judged_on))
        runs += [
            (run["trace"], run.get("verdicts") or {}, run["trace"])
            for run in existing.get("later_runs") or ()
        ]
    else:
        for number in range(wanted):
            trace, run_exchanges, cost = await _run_system(
                ctx, case, view, slots, http, spans, starts_case=number == 0
            )
            exchanges = run_exchanges if number == 0 else exchanges  # run 1's HTTP is recorded
            spent += cost
            runs.append((trace, {}, {}))

    run_verdicts: list[dict[str, Any]] = []
    # (run index, verdict name, stage, the case and trace it judges, key): a conversation's
    # verdicts are per turn (`turn2.faithfulness`)
    due = []
    for index, (trace, old_verdicts, judged) in enumerate(runs):
        verdicts: dict[str, Any] = {}
        inputs_judged = judged_inputs(ctx.judged, case, judged) if judged is not trace else {}
        for name, stage, judged_case, judged_trace in judged_units(ctx.judged, case, trace):
            expected = verdict_key(stage, judged_case, ctx.judge_options, judge.id, judge.version)
            old = old_verdicts.get(name)
            same_input = "input" not in stage.reads or (
                inputs_judged.get(name, judged_case.input) == judged_case.input
            )
            if (
                mode != LIVE
                and same_input
                and _still_valid(
                    stage, old, expected, judged_part(judged, name), judged_trace, ctx.judge_repeats
                )
            ):
                verdicts[name] = old
            else:
                due.append((index, name, stage, judged_case, judged_trace, expected))
        run_verdicts.append(verdicts)
    trace, verdicts = runs[0][0], run_verdicts[0]
    later_runs = [
        {"trace": run[0], "verdicts": found}
        for run, found in zip(runs[1:], run_verdicts[1:], strict=True)
    ] or None

    if trace_ok and not due and offline is None:
        assert existing is not None
        return Recording(
            trace, verdicts, "replayed", existing.get("recorded_at"), later_runs=later_runs
        )

    failed: list[str] = []
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
                    for _, _, stage, judged_case, judged_trace, expected in due
                )
            )
        for (index, name, *_), verdict in zip(due, outcomes, strict=True):
            if verdict.get("error"):  # saved as pending: the trace and the other verdicts stay
                verdict["pending"] = True
                verdict.setdefault("score", None)
                where = f" (run {index + 1})" if len(runs) > 1 else ""
                failed.append(f"{name}{where}: {verdict['error']}")
            run_verdicts[index][name] = verdict
            spent += recorded_cost_of(verdict)
            if slots is not None:
                slots.spend(recorded_cost_of(verdict))
    http_hash = ((existing or {}).get("integrity") or {}).get("http") if trace_ok else None
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
    )
    note = ""
    if failed:
        note = (
            "judge error (" + "; ".join(clip(f, 160) for f in failed) + "); the new trace "
            "was saved with the verdict pending: complete it with --live-judges"
        )
        if dry_run:
            note = "judge error (" + "; ".join(clip(f, 160) for f in failed) + ")"
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
        return await asyncio.wait_for(running, ctx.timeout)
    except TimeoutError:
        raise SystemTimeout(
            f"run(case) of {case_where(ctx, case)} did not finish within {ctx.timeout:g} s; raise "
            'the limit with --eval-timeout (or the suite\'s "timeout") if it is slow'
        ) from None
