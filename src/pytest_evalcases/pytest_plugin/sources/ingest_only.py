"""--eval-ingest-only: the ingestion of the selected cases' users, user by user, and no case
(the suite's shared documents first, when it declares them).

Zep's harness runs ingestion and evaluation as separate runs, paid and resumed apart. Each user
is recorded as soon as it is ingested (engine/ingestion.py), so a run stopped halfway resumes at
the first user not recorded: alone, the flag skips the users whose recording is current; with
--live, each is ingested again unless the system's `user_ready` says its state is still there.
Every selected case then reports: skipped (not run), or the error its user's ingestion raised.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from ...core.modes import RunMode
from ...core.safe_text import terminal_safe
from ...engine.ingestion import ingest_live
from ...engine.limits import INTERRUPTED, StopRule, interrupted_reason
from ...engine.user_runs import ingestion_units, named, run_of, unit_label
from ...store.redaction import redact_for_output
from ...store.user_recordings import DRY_RUN, RECORDED, REUSED

if TYPE_CHECKING:
    from ...domain.context import SuiteContext
    from ...domain.users import SuiteUser
    from ...engine.recording import Recording
    from ..items import CaseItem
    from ..session import EvalSession

UserKey = tuple[str, str]  # (suite, user id)


class NotIngested(str):
    """Why a user was not ingested although selected (the budget was spent first)."""


class IngestOnlySource:
    """What each selected case reports after the ingestion: not run, or its user's error."""

    def __init__(self, said: dict[UserKey, str | BaseException]):
        self.said = said

    def recording_for(self, item: CaseItem) -> Recording:
        for unit in (item.ctx.preparation, item.ctx.documents):
            if unit is not None:  # the suite's documents failed: none of its cases can run
                failed = self.said.get((item.ctx.suite.name, unit_label(unit)))
                if isinstance(failed, BaseException):
                    raise failed
        user = item.ctx.user
        outcome = self.said.get((item.ctx.suite.name, user.id)) if user is not None else None
        if isinstance(outcome, BaseException):
            raise outcome
        if user is not None and (outcome is None or isinstance(outcome, NotIngested)):
            # The run stopped before its user (Ctrl-C, --eval-budget): an incomplete run.
            why = outcome or f"{INTERRUPTED} before user {user.id!r} was ingested"
            item.not_run = f"not run: {why}"
            raise pytest.skip.Exception(item.not_run, _use_item_location=True)
        # Not asked for (as a case -k leaves out): no "not recorded" line, no failed live run.
        if user is None:
            reason = "--eval-ingest-only: this case has no user to ingest"
        else:
            reason = f"--eval-ingest-only: user {user.id!r} {outcome}"
        raise pytest.skip.Exception(reason, _use_item_location=True)


def ingest_selected(session: pytest.Session, state: EvalSession) -> IngestOnlySource:
    """Ingest the users of the selected cases, in the order their first case is selected (a
    suite's shared documents before its first user)."""
    units: dict[UserKey, tuple[SuiteContext, SuiteUser]] = {}
    for item in session.items:
        if (
            getattr(item, "is_eval_case", False)
            and not item.case.skip
            and item.suite_conflict(state) is None
        ):
            for unit in ingestion_units(item.ctx):
                units.setdefault((item.ctx.suite.name, unit_label(unit)), (item.ctx, unit))
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    write = reporter.write_line if reporter else (lambda text: None)
    settings = state.settings
    users = sum(1 for _, unit in units.values() if not unit.shared)
    shared = len({suite for (suite, _), (_, unit) in units.items() if unit.shared})
    documents = f" and the documents{f' of {shared} suites' * (shared > 1)}" if shared else ""
    write(f"ingesting {users} user{'s' * (users != 1)}{documents} (--eval-ingest-only)")
    said: dict[UserKey, str | BaseException] = {}
    rule = StopRule(0, settings.budget)  # --eval-budget: no user starts once it is spent
    for (suite, unit_id), (ctx, unit) in units.items():
        if rule.reason is not None:
            said[(suite, unit_id)] = NotIngested(f"{named(unit)} not ingested: {rule.reason}")
            write(f"  {suite}::{unit_id}: not ingested: {rule.reason}")
            state.stopped = rule.reason
            continue
        try:
            ctx.system.setup(ctx.suite, ctx.timeout)
            ingest_live(
                ctx,
                state.http_layer,
                settings.mode == RunMode.LIVE,
                settings.dry_run,
                rule.spend,
                unit,
            )
        except KeyboardInterrupt:
            reason = interrupted_reason(f"the ingestion of {named(unit)}")
            state.interrupted = reason
            write(f"  {suite}::{unit_id}: interrupted; the users before it are recorded")
            return IngestOnlySource(said)
        except Exception as exc:  # its cases error with it; the other users go on
            said[(suite, unit_id)] = exc
            first_line = (str(exc).splitlines() or [type(exc).__name__])[0]
            write(f"  {suite}::{unit_id}: error: {terminal_safe(redact_for_output(first_line))}")
            continue
        said[(suite, unit_id)] = _outcome(unit, settings.dry_run)
        write(f"  {suite}::{unit_id}: {said[(suite, unit_id)]}")
    return IngestOnlySource(said)


def _outcome(unit: SuiteUser, dry_run: bool) -> str:
    """`recorded in 1.2 s (3 requests, 1,000 tokens)`, `reused: its recording is current`."""
    run = run_of(unit)
    figures: dict[str, Any] | None = run.figures
    if figures is None:
        return f"has nothing to ingest (the system has no {unit.hooks.setup})"
    if figures["source"] == REUSED:
        return "reused: its recording is current (ingested " + str(figures["recorded_at"]) + ")"
    assert figures["source"] in (RECORDED, DRY_RUN)
    parts = [f"{figures['requests']} request{'s' * (figures['requests'] != 1)}"]
    usage = figures.get("usage")
    if usage:
        parts.append(f"{usage['total_tokens']:,} tokens")
    if figures.get("ready_wait_s") is not None:
        parts.append(f"ready after {figures['ready_wait_s']:.1f} s")
    said = f"in {figures['duration_s']:.1f} s ({', '.join(parts)})"
    if dry_run:
        return f"ingested {said}; a dry run: nothing written"
    if run.recording_unchanged:  # only timings and fresh ids differed: the file stays
        return f"ingested again {said}; its recording is unchanged"
    return f"recorded {said}"
