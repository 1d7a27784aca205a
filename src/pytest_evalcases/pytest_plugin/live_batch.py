"""Live recording: the selected cases run in one event loop before the items report; under xdist
each worker records its items one at a time.

`--eval-concurrency C` bounds the system runs in flight (C) and, separately, the judge's model
requests in flight (C, the judge's own gate). A case does not hold a system slot while it waits
for its judge, so the next systems run meanwhile, and the judge always has work queued.

-x / --maxfail and --eval-budget are applied here, to the batch: once reached, no further case
starts (the ones running finish and are saved) and every case still reports, the ones not
started as skipped ("not run"). Under xdist and --replay-http, cases record one at a time in
their own items, and pytest (or xdist) stops the run between items.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from ..core.event_loops import run_interruptible
from ..core.modes import RunMode
from ..domain.calibration_scoring import RIGHT, case_status, judged_repeats
from ..engine import calibration
from ..engine.case_scores import scores_of
from ..engine.limits import (
    CaseSlots,
    Interrupted,
    NotRun,
    StopRule,
    budget_text,
    recorded_cost_of,
)
from ..engine.live import record
from ..engine.recording import JudgeBinding, Recording
from ..telemetry import NO_SPANS

# Cases between their start and their last verdict, at most: only a memory bound (a case in
# progress holds its trace and the state of its judge calls, a few KB), never the throttle.
CASES_IN_PROGRESS = 1000

if TYPE_CHECKING:
    from ..domain.context import SuiteContext
    from ..engine.calibration import CalibrationRecording
    from ..http.router import HttpLayer
    from .calibration_items import CalibrationItem
    from .items import CaseItem


@dataclass(frozen=True, slots=True)
class LiveServices:
    """What a live batch needs of the run, handed in as callables: the batch never calls back
    into the run state."""

    binding_for: Callable[[SuiteContext], JudgeBinding]  # the judge of a suite's cases
    calibration_judge: Callable[[Any], JudgeBinding]  # a calibration suite's live judge
    judge_bindings: Callable[[], list[JudgeBinding]]  # every judge the run has made
    http_layer: Callable[[], HttpLayer]  # vcrpy's patches, started on first use
    otel_export: Callable[[], Any]  # the run's OpenTelemetry export, or None


class LiveRecorder:
    def __init__(
        self, services: LiveServices, concurrency: int, mode: RunMode, dry_run: bool
    ) -> None:
        self.services = services
        self.concurrency = concurrency
        self.mode = mode
        self.dry_run = dry_run
        self.rule = StopRule()  # set by record_batch; without limits it never stops anything
        self._prepared: dict[str, Recording | CalibrationRecording | BaseException] = {}

    def recording_for(self, item: CaseItem, offline: Any = None) -> Recording:
        """The batch's result for this item, or (under xdist, or judging an offline run's
        trace) a recording made now."""
        prepared = self._prepared.pop(item.nodeid, None)
        if isinstance(prepared, BaseException):
            raise prepared
        return prepared or run_interruptible(self._record_single(item, offline))  # type: ignore

    def calibration_for(self, item: CalibrationItem) -> CalibrationRecording | None:
        """The batch's verdicts for a calibration case (None: not in a batch, as under xdist,
        where the item judges itself); NotRun when the batch stopped before it."""
        prepared = self._prepared.pop(item.nodeid, None)
        if isinstance(prepared, BaseException):
            raise prepared
        return prepared  # type: ignore[return-value]

    async def _record_single(self, item: CaseItem, offline: Any = None) -> Recording:
        try:
            self._warm_up([self.services.binding_for(item.ctx)])
            return await self._record_one(item, _Limits(self.concurrency, None), offline)
        finally:
            await self._close_judges()

    def _warm_up(self, bindings: list[JudgeBinding]) -> None:
        """Every case will be judged (not so with --live-stale): let the judges get ready now."""
        if self.mode != RunMode.LIVE_STALE:
            for judge in {id(b.live): b.live for b in bindings if b.live is not None}.values():
                judge.warm_up()

    async def _close_judges(self) -> None:
        """Judge clients belong to one event loop: close them before it ends."""
        for binding in self.services.judge_bindings():
            if binding.live is not None:
                await binding.live.aclose()

    async def _record_one(self, item: CaseItem, limits: _Limits, offline: Any = None) -> Recording:
        binding = self.services.binding_for(item.ctx)
        otel = self.services.otel_export()
        spans = NO_SPANS if otel is None else otel.start_case(item.nodeid, item.ctx, item.case)
        async with limits.cases:
            try:
                recording = await record(
                    item.ctx,
                    item.case,
                    binding,
                    self.mode,
                    limits.slots,
                    None if offline is not None else self.services.http_layer,
                    offline,
                    self.dry_run,
                    spans,
                )
            except BaseException as exc:
                spans.failed(exc)
                raise
            spans.recorded(getattr(recording, "spent_usd", 0.0))
            return recording

    def record_batch(
        self, items: list[CaseItem], progress: Any, rule: StopRule | None = None
    ) -> None:
        """Live mode without xdist: record every selected case in one event loop, at most
        `concurrency` system runs at a time, before the items report in their usual order.
        `rule` (-x / --maxfail, --eval-budget) stops new cases from starting. `items` are the
        cases to record (the caller leaves out skipped ones and suites two files declare)."""
        self.rule = rule or StopRule()
        bindings = []
        for item in items:  # judges first: a missing key fails before any case runs
            try:
                bindings.append(self._binding(item))
            except Exception as exc:
                raise pytest.UsageError(str(exc)) from None
        if items:
            progress.total = len(items)
            try:
                run_interruptible(self._record_all(items, progress, bindings))
            except KeyboardInterrupt:  # a Ctrl-C (asyncio.run cancelled the batch first)
                self.rule.ctrl_c()
            for item in items:  # what the batch did not finish reports as not run
                if item.nodeid not in self._prepared:
                    self._prepared[item.nodeid] = self.rule.not_run()

    async def _record_all(
        self, items: list[CaseItem], progress: Any, bindings: list[JudgeBinding]
    ) -> None:
        limits = _Limits(self.concurrency, self.rule)
        not_run = 0

        async def one(item: Any) -> None:
            nonlocal not_run
            spent = 0.0
            try:
                if getattr(item, "is_calibration", False):
                    judged = await self._calibrate_one(item, limits)
                    self._prepared[item.nodeid] = judged
                    spent = _judged_cost(judged)
                else:
                    recording = await self._record_one(item, limits)
                    self._prepared[item.nodeid] = recording
                    spent = getattr(recording, "spent_usd", 0.0)  # replayed as it was: 0
                    where = f"{item.ctx.suite.name}::{item.case.id}"
                    if self.rule.maxfail and where not in limits.slots.counted:
                        self.rule.count(_failed(item, recording))
            except NotRun as exc:
                self._prepared[item.nodeid] = exc
                not_run += 1
            except Interrupted as exc:  # KeyboardInterrupt in user code: no further case starts
                self.rule.interrupt(str(exc))
                self._prepared[item.nodeid] = self.rule.not_run()
                not_run += 1
            except Exception as exc:  # shown by that item; the others go on
                self._prepared[item.nodeid] = exc
                # Counted before the next case can take the slot: the exception reached here
                # without a pause from the system run that raised it.
                self.rule.count(True)
            progress.system_retries = limits.slots.system_retries
            progress.case_done(self.services.judge_bindings(), spent)

        cases = [asyncio.ensure_future(one(item)) for item in items]
        try:
            # Every case takes its first step (the HTTP layer starts, the first systems run);
            # then the judges get ready (deepeval's import), beside the systems' I/O rather
            # than ahead of the first judge request.
            await asyncio.sleep(0)
            self._warm_up(bindings)
            await asyncio.gather(*cases)
        except asyncio.CancelledError:  # asyncio.run's answer to a Ctrl-C: the cases are given up
            self.rule.ctrl_c()
            not_run = sum(item.nodeid not in self._prepared for item in items)
            raise
        finally:
            progress.finish(self.services.judge_bindings())
            if self.rule.reason is not None:
                progress.stopped(self.rule.reason, not_run)
            await self._close_judges()

    def _binding(self, item: Any) -> JudgeBinding:
        if getattr(item, "is_calibration", False):
            return self.services.calibration_judge(item.ctx)
        return self.services.binding_for(item.ctx)

    async def _calibrate_one(self, item: CalibrationItem, limits: _Limits) -> CalibrationRecording:
        """A calibration case judged in the batch, beside the others (the judge's own gate bounds
        its requests): its cost counts against --eval-budget and a wrong verdict or a judge error
        against -x / --maxfail, as a case's do."""
        binding = self.services.calibration_judge(item.ctx)
        async with limits.cases, limits.slots.judging():
            if self.rule.reason is not None:  # the rule fired while this case waited
                raise self.rule.not_run()
            recording = await calibration.record(
                item.ctx, item.target, binding, self.mode == RunMode.LIVE, self.dry_run
            )
            limits.slots.spend(_judged_cost(recording))
            if self.rule.maxfail:
                self.rule.count(_wrong(item, recording))
        return recording


def _judged_cost(recording: CalibrationRecording) -> float:
    """What judging a calibration case cost now (nothing for verdicts replayed as they were)."""
    return 0.0 if recording.status == "replayed" else recorded_cost_of(recording.verdict)


def _wrong(item: CalibrationItem, recording: CalibrationRecording) -> bool:
    """Whether a calibration case will fail as its item holds it: a judge error, or a verdict
    on the wrong side of its label (an xfail case never counts)."""
    verdict = recording.verdict
    if verdict.get("error"):
        return True
    case = item.target.case
    if case.xfail:
        return False
    _, results = judged_repeats(case.stage, item.target.rule, verdict)
    return case_status(case.expect, [not result.passed for result in results]) not in RIGHT


def _failed(item: CaseItem, recording: Recording) -> bool:
    """Whether a recorded case counts against -x / --maxfail as pytest will count it: a judge
    error, or a gating stage failure of a case not marked xfail."""
    if getattr(recording, "pending", None) or getattr(recording, "not_rejudged", None):
        return True
    if item.case.xfail or recording.status == "replayed":
        return False
    scores, _ = scores_of(item.ctx, item.case, recording)  # the item reads the same scores
    return scores.first_failure is not None


class _Limits:
    """The limits of the running event loop: cases in progress, system runs in flight (and the
    stop rule), and worker threads for that many sync systems plus cassette writes. (asyncio's
    default pool has min(32, CPUs + 4) threads: on a 2-core machine, sync systems would run 6 at
    a time.)"""

    def __init__(self, concurrency: int, rule: StopRule | None) -> None:
        self.cases = asyncio.Semaphore(max(CASES_IN_PROGRESS, concurrency))
        self.slots = CaseSlots(concurrency, rule)
        workers = ThreadPoolExecutor(concurrency + 4, thread_name_prefix="evalcases-worker")
        asyncio.get_running_loop().set_default_executor(workers)  # asyncio.run shuts it down


class Progress:
    """The live recording progress line: cases done/total, judge calls, retries, tokens, cost,
    and the system runs tried again (when any was)."""

    def __init__(self, total: int, write: Any, is_tty: bool) -> None:
        self.total, self.done, self._write, self._tty = total, 0, write, is_tty
        # What the finished cases cost: the judges' running total also holds the requests of
        # cases still in flight, which would make a projection from it run high.
        self.spent = 0.0
        self.system_retries = 0  # system runs tried again on a transient error

    def _line(self, bindings: Any) -> str:
        calls = retries = tokens = 0
        cost = 0.0
        for binding in bindings:
            stats = getattr(binding.live, "stats", None)
            if stats is not None:
                calls += stats.calls
                retries += stats.retries
                tokens += stats.prompt_tokens + stats.completion_tokens
                cost += stats.cost_usd
        line = (
            f"recording: {self.done}/{self.total} cases, {calls} judge calls, {retries} retries, "
            f"{tokens} tokens, ${cost:.4f}"
        )
        if self.system_retries:
            line += f", {self.system_retries} system retries"
        if self.spent and 0 < self.done < self.total:  # the whole run at the finished cases' pace
            line += f" (projected {budget_text(self.spent / self.done * self.total)})"
        return line

    def case_done(self, bindings: Any, spent: float = 0.0) -> None:
        self.done += 1
        self.spent += spent
        step = max(1, self.total // 10)  # without a terminal, about ten lines in all
        if self._tty:
            self._write("\r" + self._line(bindings))
        elif self.done % step == 0 and self.done != self.total:
            self._write(self._line(bindings) + "\n")

    def stopped(self, reason: str, not_run: int) -> None:
        self._write(f"stopped starting cases: {reason}; {not_run} not run\n")

    def finish(self, bindings: Any) -> None:
        self._write(("\r" if self._tty else "") + self._line(bindings) + "\n")
        judges = [b.live for b in bindings if getattr(b.live, "stats", None) is not None]
        for judge in judges:  # how the judges' rate limits held the run back, if they did
            summary = judge.stats.rate_limit_summary()
            if summary:
                self._write(summary + (f" ({judge.id})" if len(judges) > 1 else "") + "\n")
