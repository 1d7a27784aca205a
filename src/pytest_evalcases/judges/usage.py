"""Counting model calls, retries, tokens and cost: live per judge, and per verdict.

A verdict's share is collected through a context variable: `evaluate` binds a fresh meter, and
every model call made while it runs (including calls deepeval fans out with asyncio.gather, whose
tasks copy the context) adds to that meter. No locks: one judge serves one event loop at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass


@dataclass
class JudgeStats:
    """Live counters for one judge; the spine reads them for its progress line."""

    calls: int = 0  # model requests sent, retries included
    retries: int = 0  # requests that were a retry of a failed one
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0  # 0.0 when the model's price is unknown
    failures: int = 0  # evaluate() calls that ended in a JudgeError
    in_flight: int = 0  # model requests awaiting a reply right now
    rate_limited: int = 0  # rate-limited replies (429, or 503 with Retry-After)
    rate_limit_wait: float = 0.0  # seconds (wall clock) requests were held back by a rate limit
    concurrency_start: int = 0  # the cap on requests in flight at the start (0: none)
    concurrency: int = 0  # the cap now: lowered on rate limits, raised again on successes

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)

    def rate_limit_summary(self) -> str | None:
        """`judge rate-limited: 212 replies, waited 31 s, concurrency 16 -> 5`, or None when
        no rate limit held anything back."""
        if not self.rate_limited and not self.rate_limit_wait:
            return None
        start, now = (
            str(n) if n else "unbounded" for n in (self.concurrency_start, self.concurrency)
        )
        return (
            f"judge rate-limited: {self.rate_limited} replies, waited "
            f"{self.rate_limit_wait:.0f} s, concurrency {start} -> {now}"
        )


@dataclass
class UsageMeter:
    """What one evaluate() call spent."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    def usage(self) -> dict[str, int | float]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": round(self.cost_usd, 8),
        }


_current: ContextVar[UsageMeter | None] = ContextVar("evalcases_judge_meter", default=None)


@contextmanager
def metering() -> Iterator[UsageMeter]:
    """Bind a fresh meter for the calls made inside the block (and tasks started from it)."""
    meter = UsageMeter()
    token = _current.set(meter)
    try:
        yield meter
    finally:
        _current.reset(token)


def current_meter() -> UsageMeter | None:
    """The meter of the verdict being judged in this context (None outside `metering`)."""
    return _current.get()


def count_call(stats: JudgeStats, *, retry: bool) -> None:
    stats.calls += 1
    if retry:
        stats.retries += 1
    meter = _current.get()
    if meter is not None:
        meter.calls += 1


def count_usage(
    stats: JudgeStats, prompt_tokens: int, completion_tokens: int, cost_usd: float
) -> None:
    stats.prompt_tokens += prompt_tokens
    stats.completion_tokens += completion_tokens
    stats.cost_usd += cost_usd
    meter = _current.get()
    if meter is not None:
        meter.prompt_tokens += prompt_tokens
        meter.completion_tokens += completion_tokens
        meter.cost_usd += cost_usd


def count_cost(stats: JudgeStats, meter: UsageMeter | None, cost_usd: float) -> None:
    """Book a cost priced after its tokens were counted, to the meter that counted them."""
    stats.cost_usd += cost_usd
    if meter is not None:
        meter.cost_usd += cost_usd
