"""--replay-http: today's system runs offline while vcrpy serves its recorded HTTP; the fresh
trace is scored with the verdicts that still hold (--live-stale refreshes the key of a case that
replays clean, with no model call)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..core.errors import (
    MissingRecording,
    StaleRecording,
    SystemTimeout,
    UserCodeExit,
)
from ..core.event_loops import run_interruptible
from ..core.measured import MEASURED
from ..domain.context import case_where
from ..domain.returned_traces import normalize_trace
from ..domain.system import exit_message, start_daemon
from ..domain.verdicts import judged_inputs, judged_part, judged_units
from ..http.router import CaseHttp, UnservedRequest
from ..http.volatile import replay_ignored
from ..store.cassette import Cassette
from ..store.keys import REPLAY_HTTP_RUNS
from ..store.pair import RecordingPair
from .ingestion import ingest_offline
from .limits import Interrupted
from .recording import JudgeBinding, LiveRecording, Recording
from .replay import check_verdicts, checked_cassette
from .save import save_recording
from .turns import run_conversation_sync
from .user_runs import ingestion_units, named

if TYPE_CHECKING:
    from ..core.schema import Case
    from ..domain.context import SuiteContext
    from ..http.router import HttpLayer


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
    recorded_trace, verdicts = doc.trace, dict(doc.verdicts)
    # Today's trace may need a verdict the recorded one did not (e.g. it now has a context).
    check_verdicts(
        ctx,
        case,
        judge,
        trace,
        verdicts,
        "--replay-http --live-judges (judges today's trace)",
        doc=doc,
    )
    rejudge = False
    recorded_inputs = judged_inputs(ctx.judged, case, recorded_trace)
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
    return Recording(trace, verdicts, "replayed_http", doc.recorded_at)


def run_recorded(
    ctx: SuiteContext, case: Case, http: HttpLayer
) -> tuple[Cassette, dict[str, str], dict[str, Any]]:
    """The checked cassette, today's key and today's trace, from running the system offline.

    The code fingerprint is no reason for staleness here (the code itself runs); a request the
    recording cannot serve is."""

    doc, key, view = checked_cassette(ctx, case, ignore_prefix=REPLAY_HTTP_RUNS)
    where = case_where(ctx, case)
    pair = RecordingPair.of_case(ctx.cassette_root, ctx.suite.name, case.id)
    if doc.http is None or not os.path.lexists(pair.http_path):
        raise MissingRecording(f"no HTTP recording for {where}; record it with --live")
    exchanges = pair.checked_http(doc.http, ctx.rootdir)
    trace = run_offline(ctx, case, view, http, exchanges)
    if MEASURED in doc.trace:  # served offline, the run's time is not the system's: the
        trace[MEASURED] = doc.trace[MEASURED]  # recorded live run's is reported (and kept)
    return doc, key, trace


_UNSHARED = ("latency_ms", MEASURED)  # a trace's times, which no two runs share


def _same_trace(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Equal but for the times, which no two runs share."""
    return {k: v for k, v in old.items() if k not in _UNSHARED} == {
        k: v for k, v in new.items() if k not in _UNSHARED
    }


def _refresh(
    ctx: SuiteContext,
    case: Case,
    doc: Cassette,
    key: dict[str, str],
    trace: dict[str, Any],
    verdicts: dict[str, Any],
    dry_run: bool = False,
) -> Recording:
    """--replay-http --live-stale: today's code gave a recording whose verdicts all still hold:
    write its key (and its trace, when it changed) without a model call."""
    if doc.key == key and _same_trace(doc.trace, trace):
        return Recording(trace, verdicts, "replayed_http", doc.recorded_at)
    kept = doc.trace if _same_trace(doc.trace, trace) else trace
    saved = save_recording(
        ctx, case, key, kept, doc.verdicts, None, doc.http, doc, dry_run, doc.later_runs_doc
    )
    return LiveRecording(  # today's trace, not the one saved: scored by the item
        trace,
        verdicts,
        "dry_run" if dry_run else "recorded",
        saved.doc.recorded_at,
        redacted=saved.redacted,
        change=saved.change,
    )


def run_offline(
    ctx: SuiteContext,
    case: Case,
    view: Any,
    http: HttpLayer,
    exchanges: list[dict[str, Any]],
) -> dict[str, Any]:
    """Run the system for one case with vcrpy serving its recorded HTTP; a request or a
    connection the recording cannot serve fails the case, whatever the system made of it."""
    import contextvars
    import inspect
    import threading

    where = case_where(ctx, case)
    suite = ctx.suite
    with http.case(CaseHttp(f"{where} (setup)", [], allow_hosts=suite.allow_hosts), sole=True):
        try:
            ctx.system.setup(suite, ctx.timeout)
        except KeyboardInterrupt:  # in user code: the run stops as after a Ctrl-C, summarised
            raise Interrupted(f"the set-up of {suite.name}") from None
        except UnservedRequest as exc:
            raise StaleRecording(
                f"setup(suite) of {suite.name}: {str(exc).split(' — ')[0]}; --replay-http "
                "cannot serve requests made in setup(suite) (they are not recorded: make them "
                "in setup_user, whose ingestion is, or in run)"
            ) from None
    for unit in ingestion_units(ctx):  # each recorded ingestion replayed once, before its
        try:  # first case: the suite's documents, then the user's data
            ingest_offline(ctx, http, unit)
        except KeyboardInterrupt:
            raise Interrupted(f"the ingestion of {named(unit)}") from None
    case_http = CaseHttp(where, exchanges, replay_ignored(suite), suite.allow_hosts)
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            if case.turns is not None:
                outcome["result"] = run_conversation_sync(ctx.system, view, where)
                return
            result = ctx.system.call(view)
            if inspect.isawaitable(result):
                result = run_interruptible(_awaited(result))
            outcome["result"] = result
        except BaseException as exc:  # SystemExit from inside an async system's loop too
            outcome["error"] = exc

    finished = threading.Event()

    def run_then_say() -> None:
        try:
            run()
        finally:
            finished.set()

    with http.case(case_http, sole=True):
        # A daemon thread, so a system that hangs fails its case at the timeout instead of
        # holding up the gate (the thread is left behind; the interpreter does not wait for it),
        # and a Ctrl-C ends the wait at once.
        context = contextvars.copy_context()
        start_daemon(lambda: context.run(run_then_say), "evalcases-system", f"run(case) of {where}")
        try:
            finished.wait(ctx.timeout)
        except KeyboardInterrupt:  # a Ctrl-C: the run stops as after one in user code
            raise Interrupted(f"run(case) of {where}") from None
    if not finished.is_set():
        raise SystemTimeout(
            f"run(case) of {where} did not finish within {ctx.timeout:g} s under --replay-http; "
            'raise the limit with --eval-timeout (or the suite\'s "timeout") if it is slow'
        )
    if case_http.problem:
        raise StaleRecording(f"stale recording: {case_http.problem}")
    error = outcome.get("error")
    if isinstance(error, KeyboardInterrupt):  # raised by the system's code, in its thread
        raise Interrupted(f"run(case) of {where}")
    if isinstance(error, Exception):
        raise error
    if error is not None:
        raise UserCodeExit(exit_message("run(case)", error)) from error
    return normalize_trace(outcome.get("result"), where)


async def _awaited(awaitable: Any) -> Any:
    return await awaitable
