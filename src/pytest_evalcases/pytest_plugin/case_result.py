"""The per-case result dict each report carries (the same with and without xdist)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from ..core.errors import EvalCaseError, MissingRecording, StageFailure, StaleRecording
from ..core.exception_chain import exception_summary
from ..core.measured import MEASURED
from ..core.repeats import has_repeats, later_repeats
from ..domain.scoring import failure_details, result_stages
from ..domain.turns import all_turns, turn_results
from ..engine.user_runs import ingestion_figures, run_of
from ..report.ingestion import DOCUMENTS_RECORD, PREPARATION_RECORD
from ..store.redaction import redact_for_output

if TYPE_CHECKING:
    from ..engine.recording import Recording


UNSCORED = ("stale", "missing", "error")


def outcome_of(
    item: Any, when: str, report: pytest.TestReport, exc: BaseException | None
) -> str | None:
    """The outcome the summary and reports count, once the phase that decides it has run."""
    if when == "setup":
        if report.skipped:
            return "skipped"
        if report.failed:
            if isinstance(exc, StaleRecording):
                return "stale"
            if isinstance(exc, MissingRecording):
                return "missing"
            return "error"
        return None
    if when != "call":
        return None
    xfail = bool(getattr(item, "case", None) and item.case.xfail)
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "xpassed"
    if report.passed:
        return "passed"
    if xfail and exc is None:  # strict xfail that passed
        return "xpassed"
    return "failed" if isinstance(exc, StageFailure) else "error"


def error_summary(exc: BaseException | None, limit: int = 300) -> str:
    """One line saying why a case could not be scored (our messages name the file and fix;
    another exception: with the request it carries and its root cause)."""
    if exc is None:
        return ""
    text = str(exc) if isinstance(exc, EvalCaseError) else exception_summary(exc)
    text = redact_for_output(text)  # before the cut: a key cut in two is no longer found
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    line = "; ".join(lines[:3])
    return line if len(line) <= limit else line[: limit - 3] + "..."


def case_result(
    item: Any, outcome: str, with_detail: bool, exc: BaseException | None = None
) -> dict[str, Any]:
    """The per-case result dict: what the summary, results.json, report.md, the dashboard,
    recording-changes.md and the baseline gate read, with every secret redacted (the one place
    for all of them: an exception message or a judge's reason may hold a key). A case that
    passed on plain replay, without report detail, carries only what its cassette held, which
    recording redacted: it skips the search (the replay path pays nothing)."""
    result = _case_result(item, outcome, with_detail, exc)
    recording = getattr(item, "recording", None)
    if outcome == "passed" and not with_detail and getattr(recording, "status", None) == "replayed":
        return result
    return redact_for_output(result)


def _case_result(
    item: Any, outcome: str, with_detail: bool, exc: BaseException | None = None
) -> dict[str, Any]:
    own = getattr(item, "result_for", None)  # an item kind with results of its own (calibration)
    if own is not None:
        return own(outcome, with_detail, exc)
    # A case that could not be scored says why, in the same place a stage failure would.
    unscored = {"stage": None, "reason": error_summary(exc)} if outcome in UNSCORED else None
    if not hasattr(item, "case"):  # a file or case that could not be loaded
        user = getattr(item, "user", None)  # a broken case of a suite user: in the user's row
        broken: dict[str, Any] = {
            "nodeid": item.nodeid,
            "suite": item.suite_name,
            "id": item.name,
            "file": _relpath(item),
            "index": item.index,
            "category": None,
            "group": user,
            "outcome": outcome,
            "first_failure": unscored,
            "stages": {},
            "recording": {},
        }
        if user is not None:
            broken["user"] = user
        return broken
    case, scores, recording = item.case, item.scores, item.recording
    first = unscored
    if scores is not None and scores.first_failure is not None:
        name, stage = scores.first_failure
        first = {"stage": name, "reason": stage.reason}
        if scores.failure_turn is not None:
            first["turn"] = scores.failure_turn
        # What the stage compared, as the failure section showed it (-vv: whole).
        details = failure_details(scores, whole=item.config.option.verbose >= 2)
        if details:
            first["details"] = [list(line) for line in details]
    result: dict[str, Any] = {
        "nodeid": item.nodeid,
        "suite": item.ctx.suite.name,
        "id": case.id,
        "file": _relpath(item),
        "index": item.index,
        "category": case.category,
        "group": case.group,
        "outcome": outcome,
        "first_failure": first,
        "stages": result_stages(scores) if scores is not None else {},
        "recording": _recording_info(
            recording,
            outcome,
            getattr(item, "live_error", None),
            getattr(item, "not_run", None),
            getattr(item, "kept_recording", True),
        ),
    }
    if case.user is not None:  # the group is a suite user: the reports title it so
        result["user"] = case.user
        user = item.ctx.user
        waited = run_of(user).ready_wait if user is not None else None
        if waited is not None:  # polled ready() in this run
            result["recording"]["ready_wait_s"] = round(waited, 3)
        ingestion = ingestion_figures(item.ctx)  # the user's: one dict shared by its cases
        if ingestion is not None:
            result["ingestion"] = ingestion
    if item.ctx.documents is not None:  # the suite's shared documents' ingestion, as a user's
        documents = ingestion_figures(item.ctx, item.ctx.documents)
        if documents is not None:
            result[DOCUMENTS_RECORD] = documents
        if item.ctx.preparation is not None:  # and their preparation's
            prepared = ingestion_figures(item.ctx, item.ctx.preparation)
            if prepared is not None:
                result[PREPARATION_RECORD] = prepared
    if item.ctx.totals:  # which of its suite's named totals count this case
        result["totals"] = {total.name: total.counts(case) for total in item.ctx.totals}
    if scores is not None and scores.turns is not None:
        result["turns"] = turn_results(case, scores, _shown_trace(item, recording))
    if getattr(item, "run_results", None) is not None:  # --eval-runs: passed_runs/K and more
        result["runs"] = item.run_results
    if with_detail and recording is not None:
        trace = _shown_trace(item, recording)
        if isinstance(trace.get("turns"), list):  # a conversation: every turn's, in order
            trace = all_turns(trace)
        result["detail"] = {
            "input": case.input,
            "answer": trace.get("answer", ""),
            "reference": case.reference,
            "tool_calls": trace.get("tool_calls", []),
            "retrieved": trace.get("retrieved", []),
            "context": trace.get("context", []),
        }
    return result


def _shown_trace(item: Any, recording: Recording | None) -> dict[str, Any]:
    """The trace of the run whose scores the result shows: under --eval-runs, the first failing
    run's (its answer must stand beside its scores), else the one run's."""
    if recording is None:
        return {}
    runs = getattr(item, "run_results", None)
    shown = runs.get("shown_run", 1) if runs else 1
    if shown > 1 and recording.later_runs:
        return recording.later_runs[shown - 2]["trace"]
    return recording.trace


def _relpath(item: Any) -> str:
    return item.nodeid.split("::", 1)[0]


def _recording_info(
    recording: Recording | None,
    outcome: str,
    live_error: str | None,
    not_run: str | None = None,
    kept_recording: bool = True,
) -> dict[str, Any]:
    if recording is None:
        if not_run:
            return {"status": "not_run", "note": not_run}
        if live_error:
            return {
                "status": "not_rerecorded",
                "note": live_error
                + ("; the previous recording was kept" if kept_recording else ""),
            }
        return {"status": outcome if outcome in ("stale", "missing") else None}
    trace = recording.trace
    info = {
        "status": recording.status,
        "recorded_at": recording.recorded_at,
        "note": recording.note,
        "usage": trace.get("usage"),
        "latency_ms": trace.get("latency_ms"),
        "judge_usage": None,
        "judge_latency_ms": None,
        "judges": [],
        "redacted": recording.redacted,
    }
    if recording.verdicts:  # (a case with no judged stage skips this: replay does it per case)
        info.update(_judge_info(recording.verdicts))
    if isinstance(trace.get("timings"), dict):  # the system's own steps (search, generate, ...)
        info["timings"] = trace["timings"]
    if isinstance(measured := trace.get(MEASURED), dict):  # the run's time, as the plugin took it
        info[MEASURED] = measured
    if recording.status in ("recorded", "dry_run"):  # what a live run changed, for the reviewer
        info["change"] = getattr(recording, "change", None)
        info["pending"] = getattr(recording, "pending", None) or []
        info["not_rejudged"] = getattr(recording, "not_rejudged", None) or []
        info["spent_usd"] = getattr(recording, "spent_usd", 0.0)
    retries = getattr(recording, "system_retries", None)
    if retries:  # the system run tried again on a transient error: each retry, why, its wait
        info["system_retries"] = retries
    return info


def _judge_info(recorded: dict[str, Any]) -> dict[str, Any]:
    """What the judge's verdicts cost, how long each stage's took and who made them (each
    repeat of a verdict was a judge call of its own: one pass over all of them)."""
    calls: list[dict[str, Any]] = []
    by_stage: dict[str, float] = {}
    for stage, verdict in recorded.items():
        if not isinstance(verdict, dict):
            continue
        parts = [verdict, *(later_repeats(verdict) or ())] if has_repeats(verdict) else [verdict]
        calls += parts
        spent = [p["latency_ms"] for p in parts if isinstance(p.get("latency_ms"), int | float)]
        if spent:
            by_stage[stage] = sum(spent)
    return {
        "judge_usage": _sum_usage(call.get("usage") for call in calls),
        "judge_latency_ms": sum(by_stage.values()) if by_stage else None,
        "judge_ms_by_stage": by_stage or None,
        "judges": sorted({str(call["judge"]) for call in calls if call.get("judge")}),
    }


def _sum_usage(usages: Any) -> dict[str, float] | None:
    total: dict[str, float] = {}
    for usage in usages:
        for name, value in (usage or {}).items():
            if isinstance(value, int | float):
                total[name] = total.get(name, 0) + value
    return total or None
