"""The sources of a run that runs the system (`replay.py` has the replay's):

- --replay-http (alone, or with --live-stale): today's code, its HTTP served from the recording;
- live (--live, --live-stale, --live-judges, each also with --replay-http): the live batch's
  result for the case, or a recording made now (xdist workers, --replay-http).

Only such a run imports this module, and with it the live engine, vcrpy's router and asyncio."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from ...core.errors import MissingRecording, StaleRecording
from ...core.exception_chain import exception_summary
from ...core.modes import RunMode
from ...engine.http_replay import replay_http, run_recorded
from ...engine.limits import Interrupted, NotRun, StopRule, budget_text, interrupted_reason
from ...engine.recording import Recording
from ...http.router import subprocess_permission
from ...store.cassette import cassette_path
from ..live_batch import LiveRecorder, LiveServices, Progress
from ..system_fixtures import build_now
from .replay import JudgeOf

if TYPE_CHECKING:
    from ...engine.calibration import CalibrationRecording
    from ...http.router import HttpLayer
    from ..calibration_items import CalibrationItem
    from ..items import CaseItem
    from ..session import EvalSession


class HttpReplaySource:
    """--replay-http (with --live-stale: a case that replays clean gets its key refreshed)."""

    def __init__(
        self,
        judge: JudgeOf,
        http: Callable[[], HttpLayer],
        refresh: bool,
        dry_run: bool,
        interrupted: Callable[[str], None] = lambda where: None,
    ) -> None:
        self.judge, self.http, self.refresh, self.dry_run = judge, http, refresh, dry_run
        self.interrupted = interrupted  # the run ends with its summary, exit code 2

    def recording_for(self, item: CaseItem) -> Recording:
        ctx = item.ctx
        build_now(ctx.system)  # a fixture's system: here, not under the case's recorded HTTP
        try:
            with subprocess_permission(ctx.suite.allow_subprocess):
                return replay_http(
                    ctx,
                    item.case,
                    self.judge(ctx.judge_spec, False),
                    self.http(),
                    refresh=self.refresh,
                    dry_run=self.dry_run,
                )
        except Interrupted as exc:  # KeyboardInterrupt in user code: stop after this case
            self.interrupted(str(exc))
            raise stop_after(item, str(exc)) from None


class LiveSource:
    """Live modes: the batch recorded the case already (or records it now). With `offline`
    (--replay-http --live-judges), what today's code answers offline is judged."""

    def __init__(
        self, recorder: LiveRecorder, http: Callable[[], HttpLayer], offline: bool, runs: bool
    ):
        self.recorder, self.http, self.offline = recorder, http, offline
        self.runs_system = runs  # not --live-judges alone, which judges recorded traces

    def calibration_for(self, item: CalibrationItem) -> CalibrationRecording | None:
        """A calibration case's verdicts from the batch (None: judged by its item)."""
        try:
            return self.recorder.calibration_for(item)
        except NotRun as exc:  # the run stopped starting cases (-x, --maxfail, --eval-budget)
            raise not_run(item, exc) from None

    def recording_for(self, item: CaseItem) -> Recording:
        if self.runs_system:  # a fixture's system: built on this thread, not the batch's
            build_now(item.ctx.system)
        try:
            if self.offline:
                with subprocess_permission(item.ctx.suite.allow_subprocess):
                    doc, _, trace = run_recorded(item.ctx, item.case, self.http())
                return self.recorder.recording_for(item, offline=(doc, trace))
            return self.recorder.recording_for(item)
        except Interrupted as exc:  # KeyboardInterrupt in user code: the run stops after this case
            raise stop_after(item, str(exc)) from None
        except NotRun as exc:  # the run stopped starting cases (-x, --maxfail, --eval-budget)
            raise not_run(item, exc) from None
        except (StaleRecording, MissingRecording):
            raise
        except Exception as exc:  # the summary says this case was not recorded, and why
            item.live_error = exception_summary(exc)  # with its request and its root cause
            # A failed live run writes nothing: what is there now was there before.
            ctx = item.ctx
            item.kept_recording = cassette_path(
                ctx.cassette_root, ctx.suite.name, item.case.id
            ).exists()
            raise


def not_run(item: CaseItem | CalibrationItem, exc: NotRun) -> BaseException:
    """A case the batch did not start: reported as skipped, shown at the case (as a skip
    marker is), not at this line of the plugin."""
    item.not_run = str(exc)
    return pytest.skip.Exception(str(exc), _use_item_location=True)


def stop_after(item: CaseItem, where: str) -> BaseException:
    """User code raised KeyboardInterrupt (`where`): this case reports as not run and no
    further case starts."""
    reason = interrupted_reason(where)
    item.session.shouldstop = reason
    item.not_run = f"not run: {reason}; its recording is as it was"
    return pytest.skip.Exception(item.not_run, _use_item_location=True)


def system_source(state: EvalSession) -> HttpReplaySource | LiveSource:
    """The source of a --replay-http or live run, from its settings; services are handed over as
    callables."""
    settings = state.settings

    def http() -> HttpLayer:
        return state.http_layer

    if settings.replay_http and settings.mode in (RunMode.REPLAY, RunMode.LIVE_STALE):

        def interrupted(where: str) -> None:
            state.interrupted = state.interrupted or f"KeyboardInterrupt in {where}"

        return HttpReplaySource(
            state.judge_binding,
            http,
            refresh=settings.mode == RunMode.LIVE_STALE,
            dry_run=settings.dry_run,
            interrupted=interrupted,
        )
    services = LiveServices(
        binding_for=state.binding_for,
        calibration_judge=lambda ctx: state.calibration_binding(ctx, live=True),
        judge_bindings=state.judge_bindings,
        http_layer=http,
        otel_export=lambda: state.otel_export,
    )
    recorder = LiveRecorder(services, settings.concurrency, settings.mode, settings.dry_run)
    runs = settings.mode != RunMode.LIVE_JUDGES or settings.replay_http
    return LiveSource(recorder, http, offline=settings.replay_http, runs=runs)


def record_selected(session: pytest.Session, state: EvalSession) -> Callable[[], None]:
    """A live run without xdist: record every selected case in one batch before the items
    report. The batch applies -x / --maxfail itself, so pytest's count is switched off until the
    returned function restores it: every case the batch ran reports (and is recorded), the ones
    it did not start report as not run."""
    source = state.source
    assert isinstance(source, LiveSource)
    # A case of a suite whose name two files declare errors in setup: never record it.
    items = [
        item
        for item in session.items
        if (getattr(item, "is_eval_case", False) or getattr(item, "is_calibration", False))
        and not item.case.skip
        and item.suite_conflict(state) is None
    ]
    if source.runs_system:  # fixtures' systems, on this thread, before the batch starts
        systems = [item.ctx.system for item in items if not getattr(item, "is_calibration", 0)]
        for system in {id(system): system for system in systems}.values():
            build_now(system)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    write = reporter.write if reporter else (lambda text: None)
    progress = Progress(len(items), write, bool(reporter and reporter.isatty))
    option = session.config.option
    rule = StopRule(option.maxfail or 0, state.settings.budget)
    source.recorder.record_batch(items, progress, rule)
    state.stopped = rule.reason
    state.interrupted = rule.interrupted
    if rule.reason is not None and rule.budget is not None:
        # the cases already running finished and were paid for: say what the run cost in all
        state.stopped += f"; the run's recorded cost came to {budget_text(rule.spent)}"
    option.maxfail = 0

    def restore() -> None:
        option.maxfail = rule.maxfail

    return restore


class InterruptedSource:
    """A run whose user code raised KeyboardInterrupt while its suites loaded: no case runs,
    each reports as not run (interrupted), and the run ends with the summary, exit code 2."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def recording_for(self, item: CaseItem) -> Recording:
        item.not_run = f"not run: interrupted ({self.reason}); its recording is as it was"
        raise pytest.skip.Exception(item.not_run, _use_item_location=True)
