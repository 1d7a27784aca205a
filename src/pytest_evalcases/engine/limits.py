"""When a live run stops starting cases: -x / --maxfail (failures and errors) and --eval-budget
(the recorded cost of the run). Cases already running finish and are saved; the others are
reported as not run (skipped, with the reason), and the run's exit code says it is incomplete.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from typing import TYPE_CHECKING, Any

from ..core.repeats import later_repeats
from ..domain.context import case_where
from ..domain.scoring import score_recording

if TYPE_CHECKING:
    from ..core.schema import Case
    from ..domain.context import SuiteContext


class NotRun(Exception):  # noqa: N818 (a reason, not a fault: the case is reported as skipped)
    """A case the live run did not start because it had stopped starting cases."""


class Interrupted(Exception):  # noqa: N818 (a reason: the run stops as after a Ctrl-C)
    """User code (a system's run or setup) raised KeyboardInterrupt: an exception of our own
    from there, so it ends its event loop's tasks cleanly instead of tearing the loop down."""


# How a case the run did not start or finish because user code was interrupted is reported.
INTERRUPTED = "interrupted"


def interrupted_reason(where: str) -> str:
    return f"{INTERRUPTED} (KeyboardInterrupt in {where})"


def recorded_cost(trace: Mapping[str, Any] | None, verdicts: Any) -> float:
    """What the system run and the verdicts of one case cost, from their usage blocks."""
    total = []
    for part in [trace, *(verdicts or ())]:
        usage = part.get("usage") if isinstance(part, Mapping) else None
        cost = usage.get("cost_usd") if isinstance(usage, Mapping) else None
        if isinstance(cost, int | float) and not isinstance(cost, bool) and math.isfinite(cost):
            total.append(float(cost))
    return math.fsum(total)


def budget_text(usd: float) -> str:
    """$0.50, $0.0123, $12.00: cents always, then up to four decimals; an amount under a
    hundredth of a cent with two significant digits ($0.0000086), never a `$0.00` that
    says nothing."""
    places = 4
    if 0 < usd < 0.0001:
        places = 1 - math.floor(math.log10(usd))  # two significant digits
    text = f"{usd:.{places}f}".rstrip("0")
    whole, _, cents = text.partition(".")
    return f"${whole}.{cents.ljust(2, '0')}"


class StopRule:
    """Counts what finished and says, once a limit is reached, why no further case starts."""

    def __init__(self, maxfail: int = 0, budget: float | None = None) -> None:
        self.maxfail = maxfail
        self.budget = budget
        self.failures = 0  # gating stage failures of recorded cases, system and judge errors
        self.spent = 0.0
        self.reason: str | None = None
        self.interrupted: str | None = None  # the user code that raised KeyboardInterrupt

    @property
    def active(self) -> bool:
        return bool(self.maxfail) or self.budget is not None

    def count(self, failed: bool) -> None:
        """A case finished; `failed`: it failed a gating stage or errored."""
        self.failures += failed
        self._check()

    def spend(self, usd: float) -> None:
        """A system run or a judge call of the run was paid for (noted as soon as it is known,
        before the next case may start)."""
        self.spent += usd
        self._check()

    def _check(self) -> None:
        if self.reason is not None:
            return
        if self.maxfail and self.failures >= self.maxfail:
            option = "-x" if self.maxfail == 1 else f"--maxfail {self.maxfail}"
            cases = f"{self.failures} case{'s' * (self.failures != 1)}"
            self.reason = f"{option} reached ({cases} failed or errored)"
        elif self.budget is not None and self.spent >= self.budget:
            self.reason = (
                f"--eval-budget {budget_text(self.budget)} reached (recorded cost "
                f"{budget_text(self.spent)})"
            )

    def interrupt(self, where: str) -> None:
        """User code raised KeyboardInterrupt: no further case starts, whatever else holds."""
        if self.interrupted is None:
            self.interrupted = f"KeyboardInterrupt in {where}"
            self.reason = interrupted_reason(where)

    def ctrl_c(self) -> None:
        """The user pressed Ctrl-C: no further case starts, and the cases running are given up
        (their hooks' threads are left behind)."""
        if self.interrupted is None:
            self.interrupted = "Ctrl-C"
            self.reason = f"{INTERRUPTED} (Ctrl-C)"

    def not_run(self) -> NotRun:
        return NotRun(
            f"not run: {self.reason}; its recording is as it was (run again to record it)"
        )


class CaseSlots:
    """How a case waits for its turn: a system slot before its system runs (`system`), and,
    when a stop rule (-x / --maxfail, --eval-budget) is set, the same slot while a case that
    needs no system run is judged (`judging`), so that cases start one after another and stop
    starting once the rule fires. Without a rule, such a case is judged at once, as before."""

    def __init__(self, concurrency: int, rule: StopRule | None = None) -> None:
        import asyncio

        self._slots = asyncio.Semaphore(concurrency)
        self.rule = rule
        self.counted: set[str] = set()  # cases whose failure the rule has counted already
        self.system_retries = 0  # system runs tried again (domain/retries.py): the progress line

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
        cost = recorded_cost_of(trace)
        if cost:
            rule.spend(cost)
        where = case_where(ctx, case)  # a case fails once, however many of its runs fail
        if (
            rule.maxfail
            and not case.xfail
            and where not in self.counted
            and fails_without_judge(ctx, case, trace)
        ):
            self.counted.add(where)
            rule.count(True)


def recorded_cost_of(part: dict[str, Any]) -> float:
    """The recorded cost of a trace, or of a verdict with all its repeats."""
    return recorded_cost(part, later_repeats(part) or ())


def fails_without_judge(ctx: SuiteContext, case: Case, trace: dict[str, Any]) -> bool:
    """Whether a gating stage that needs no verdict fails on this trace: the trace scored as
    the suite scores a recording, before any verdict is in (a judged stage without its verdict
    is skipped, so it cannot fail)."""
    scores, _ = score_recording(ctx, case, trace, {})
    return scores.first_failure is not None
