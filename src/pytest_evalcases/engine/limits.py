"""When a live run stops starting cases: -x / --maxfail (failures and errors) and --eval-budget
(the recorded cost of the run). Cases already running finish and are saved; the others are
reported as not run (skipped, with the reason), and the run's exit code says it is incomplete.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


class NotRun(Exception):  # noqa: N818 (a reason, not a fault: the case is reported as skipped)
    """A case the live run did not start because it had stopped starting cases."""


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
    """$0.50, $0.0123, $12.00: cents always, then up to four decimals."""
    text = f"{usd:.4f}".rstrip("0")
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
            self.reason = (f"--eval-budget {budget_text(self.budget)} reached (recorded cost "
                           f"{budget_text(self.spent)})")

    def not_run(self) -> NotRun:
        return NotRun(f"not run: {self.reason}; its recording is as it was (run again to "
                      "record it)")
