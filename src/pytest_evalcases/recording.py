"""Getting a case's recording: replayed from its cassette, or recorded live and saved.

Replay never records and never calls anything; live never loses a good recording: a cassette is
replaced only when the system run and every judge call of that case succeeded.
"""

from __future__ import annotations

import os
import time
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .cassette import (
    build_cassette,
    cassette_path,
    changed_fields,
    check_key,
    load_cassette,
    recording_key,
    save_cassette,
    shown_path,
)
from .errors import CassetteError, MissingRecording
from .judging import applicable, verdict_key
from .session import LIVE, LIVE_JUDGES, LIVE_STALE
from .system import key_view, normalize_trace, system_view

if TYPE_CHECKING:
    from .collect import SuiteContext
    from .schema import Case



@dataclass(slots=True)
class Recording:
    trace: dict[str, Any]
    verdicts: dict[str, Any]
    status: str  # replayed | recorded | not_rerecorded
    recorded_at: str | None = None
    note: str = ""  # why a live run did not re-record


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
    path = f"{ctx.cassette_dir}{os.sep}{case.id}.json"  # a str: pathlib is slow per case
    doc = load_cassette(path, ctx.rootdir)
    if doc is None:
        raise MissingRecording(
            f"no recording for {_where(ctx, case)}; record it with --live "
            f"({shown_path(path, ctx.rootdir)})"
        )
    key = recording_key(ctx.key_fields, key_view(system_view(case)))
    check_key(doc.get("key"), key, "", "--live")
    verdicts = doc.get("verdicts") or {}
    for stage in applicable(ctx.judged, case, doc["trace"]):
        recorded = verdicts.get(stage.name)
        if not isinstance(recorded, dict):
            raise MissingRecording(
                f"no recorded verdict for stage {stage.name} of {_where(ctx, case)}; "
                "record it with "
                "--live-judges (re-judges the recorded trace) or --live"
            )
        expected = verdict_key(stage, case, ctx.judge_options, judge.id, judge.version)
        old = dict(recorded.get("key") or {})
        if judge.id is None:  # no judge configured: accept whichever judge recorded it
            old.pop("judge", None), old.pop("judge_version", None)
        check_key(old, expected, f" (verdict {stage.name})", "--live-judges")
    return Recording(doc["trace"], verdicts, "replayed", doc.get("recorded_at"))


def _usable_existing(ctx: SuiteContext, path: Path, mode: str) -> dict[str, Any] | None:
    """The cassette a --live-stale / --live-judges run may build on (None: record from scratch)."""
    if mode == LIVE:
        return None
    try:
        return load_cassette(path, ctx.rootdir)
    except CassetteError:
        if mode == LIVE_JUDGES:
            raise
        return None


async def record(
    ctx: SuiteContext,
    case: Case,
    judge: JudgeBinding,
    mode: str,
    system_slots: AbstractAsyncContextManager[Any] | None = None,
) -> Recording:
    """Run what this mode needs for one case, and save the cassette if all of it succeeded.

    `system_slots` bounds the system runs in flight; the judge bounds its own requests.
    """
    import asyncio  # live only: replay never pays for importing it

    path = cassette_path(ctx.cassette_root, ctx.suite.name, case.id)
    view = system_view(case)
    key = recording_key(ctx.key_fields, key_view(view))
    existing = _usable_existing(ctx, path, mode)
    trace_ok = existing is not None and not changed_fields(existing.get("key") or {}, key)
    if mode == LIVE_JUDGES and not trace_ok:
        if existing is None:
            raise MissingRecording(
                f"no recording for {_where(ctx, case)} to re-judge; record it with --live"
            )
        check_key(existing.get("key"), key, "", "--live (--live-judges re-judges a current trace)")
    if trace_ok:
        trace, old_verdicts = existing["trace"], existing.get("verdicts") or {}
    else:
        # Set up only when a case really runs the system (not for --live-judges, nor when
        # --live-stale finds every recording current).
        async with system_slots or nullcontext():
            await ctx.system.asetup(ctx.suite)
            trace = normalize_trace(await ctx.system.arun(view), _where(ctx, case))
        old_verdicts = {}

    verdicts: dict[str, Any] = {}
    pending = []
    for stage in applicable(ctx.judged, case, trace):
        expected = verdict_key(stage, case, ctx.judge_options, judge.id, judge.version)
        old = old_verdicts.get(stage.name)
        if mode == LIVE_STALE and isinstance(old, dict) and old.get("key") == expected:
            verdicts[stage.name] = old
        else:
            pending.append((stage, expected))

    if trace_ok and not pending and mode == LIVE_STALE:
        return Recording(trace, verdicts, "replayed", existing.get("recorded_at"))

    failures = []
    if pending:
        outcomes = await asyncio.gather(
            *(_judge_one(judge, stage.name, case, trace, ctx.judge_options) for stage, _ in pending)
        )
        for (stage, expected), verdict in zip(pending, outcomes, strict=True):
            verdict["key"] = expected
            verdicts[stage.name] = verdict
            if verdict.get("error"):
                failures.append(f"{stage.name}: {verdict['error']}")
    if failures:
        note = "judge error (" + "; ".join(failures) + "); the previous recording was kept"
        return Recording(trace, verdicts, "not_rerecorded", note=note)
    doc = build_cassette(ctx.suite.name, case.id, key, trace, verdicts)
    # In a worker thread: its fsync takes ~6 ms, time in which the event loop serves the judge.
    await asyncio.to_thread(save_cassette, path, doc)
    return Recording(trace, verdicts, "recorded", doc["recorded_at"])


async def _judge_one(
    judge: JudgeBinding, stage: str, case: Case, trace: dict[str, Any], options: dict[str, Any]
) -> dict[str, Any]:
    """One verdict; a judge that fails after its retries yields an error verdict, never a pass."""
    from .judges import JudgeError, JudgeInput

    data = JudgeInput(
        input=case.input,
        answer=trace.get("answer", ""),
        reference=case.reference,
        context=list(trace.get("context") or []),
        unanswerable=case.unanswerable,
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
