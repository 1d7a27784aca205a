"""One judge endpoint's traffic: how many requests go out at once, when, and whether at all.

Every model request of a judge passes `Endpoint.request()`. The state is shared by all of them
and outlives event loops (each waiter's future belongs to its own loop):

- an AIMD cap on requests in flight: halved (not below 1) on a rate-limited reply, at most once
  per round (a reply to a request sent before the last decrease reflects the old cap), raised by
  1/cap on each success, up to `--eval-concurrency`;
- a pause: a rate-limited reply's Retry-After (else its x-ratelimit-reset-*, else a backoff)
  holds every request to the endpoint until then, not only the one that got it;
- client-side token buckets for requests and tokens per minute (`--eval-rpm` / `--eval-tpm`
  and the limits the provider announces), and a pace learnt from refusals: its `Pacing`
  (pacing.py) holds them, and says how long each request waits for them;
- a breaker: after N connection failures or timeouts in a row (no HTTP reply at all), every
  later request of the run fails at once with a JudgeError naming the endpoint;
- a rate-limit budget (EVALCASES_JUDGE_RATE_LIMIT_WAIT): once the endpoint has refused requests
  with no successful reply in between for that long (or the next pause would pass it), every
  request fails at once with a JudgeError naming the budget. One budget for the endpoint, not
  one per request: requests that waited in the queue or the pause start no clock of their own.

Why a cap and not only buckets: without announced limits, the cap is what backs off; with them,
the buckets pace the requests so that the provider rarely has to refuse any. The learnt pace
is the bucket a provider that announces nothing (or whose window is shorter than a minute)
never gave us.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any

from .errors import JudgeError
from .failures import Failure, classify
from .pacing import Pacing, RateLimits
from .usage import JudgeStats

BREAKER_ENV = "EVALCASES_JUDGE_BREAKER"
RATE_LIMIT_WAIT_ENV = "EVALCASES_JUDGE_RATE_LIMIT_WAIT"
DEFAULT_BREAKER_AFTER = 5  # connection failures or timeouts in a row


class Ticket:
    """One admitted request: what the endpoint needs to know about it when it ends."""

    __slots__ = (
        "epoch",
        "pace_round",
        "sent",
        "prompt_chars",
        "reserved_tokens",
        "headers",
        "prompt_tokens",
        "completion_tokens",
    )

    def __init__(self, prompt_chars: int) -> None:
        self.epoch = 0
        self.pace_round = 0  # the learnt pace's round it was paced in
        self.sent = 0  # how many requests went out before it, this one included
        self.prompt_chars = prompt_chars
        self.reserved_tokens = 0.0
        self.headers: Mapping[str, str] | None = None  # the reply's, when there was one
        self.prompt_tokens: int | None = None  # the reply's usage, when it had one
        self.completion_tokens = 0

    def used(self, prompt_tokens: int, completion_tokens: int) -> None:
        self.prompt_tokens, self.completion_tokens = prompt_tokens, completion_tokens


class Endpoint:
    def __init__(
        self,
        name: str,
        *,
        max_concurrency: int | None,
        stats: JudgeStats,
        backoff: Callable[[int], float],
        max_pause: float,
        limits: RateLimits | None = None,
        breaker_after: int = DEFAULT_BREAKER_AFTER,
        rate_limit_wait: float = math.inf,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.stats = stats
        self._backoff = backoff
        self._max_pause = max_pause
        self._sleep = sleep
        self._clock = clock
        # AIMD cap on requests in flight (float: it grows by 1/cap per success)
        self._ceiling = float(max_concurrency) if max_concurrency else math.inf
        self._cap = self._ceiling
        self._in_flight = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._epoch = 0  # rounds: a decrease starts a new one
        self._sent = 0  # requests admitted so far
        self._limited_rounds = 0  # decreases since the last success: the backoff's exponent
        self._paused_until = 0.0
        # the rate-limit budget: since when every reply has been a refusal (None: not limited)
        self.rate_limit_wait = rate_limit_wait
        self.limited_since: float | None = None
        self._last_refusal = ""
        stats.concurrency_start = stats.concurrency = max_concurrency or 0
        # client-side limits, the learnt pace and their buckets
        self.pacing = Pacing(limits, clock)
        # the breaker
        self._breaker_after = breaker_after
        self._failures_in_row = 0
        self._broken: str | None = None
        # wall-clock time held back by a limit, however many requests wait at once
        self._holding = 0
        self._held_since = 0.0

    # ---- admission ----------------------------------------------------------------------------
    def request(self, prompt_chars: int = 0) -> _Request:
        """`async with endpoint.request(len(prompt)) as ticket:` around one model request."""
        return _Request(self, prompt_chars)

    async def _admit(self, prompt_chars: int) -> Ticket:
        self.raise_if_broken()
        if self._waiters or self._in_flight + 1 > self._cap:
            await self._queue()
        else:
            self._in_flight += 1
        try:
            ticket = Ticket(prompt_chars)
            ticket.pace_round = self.pacing.round
            if self._paused_until or self.pacing.active:
                await self._pace(ticket)
            self.raise_if_broken()  # it may have tripped while this request waited
        except BaseException:
            self._release()
            raise
        ticket.epoch = self._epoch
        self._sent += 1
        ticket.sent = self._sent
        return ticket

    async def _queue(self) -> None:
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self._release()  # handed a slot just as it was cancelled: pass it on
            raise

    def _wake(self) -> None:
        while self._waiters and self._in_flight + 1 <= self._cap:
            waiter = self._waiters.popleft()
            if not waiter.done():  # a cancelled waiter is skipped
                self._in_flight += 1  # the slot is handed over, not raced for
                waiter.set_result(None)

    def _release(self) -> None:
        self._in_flight -= 1
        if self._waiters:
            self._wake()

    async def _pace(self, ticket: Ticket) -> None:
        now = self._clock()
        paced, ticket.reserved_tokens = self.pacing.reserve(ticket.prompt_chars, now)
        wait = max(self._paused_until - now, paced)
        # a spent budget fails the request even once the last pause is over
        self.check_rate_limit_budget(self._paused_until - now)
        if wait <= 0:
            return
        self._hold(1)
        try:
            while wait > 0:
                await self._sleep(wait)
                wait = self._paused_until - self._clock()  # a pause set meanwhile holds it too
                self.check_rate_limit_budget(wait)
        finally:
            self._hold(-1)

    def _hold(self, change: int) -> None:
        if change > 0 and self._holding == 0:
            self._held_since = self._clock()
        self._holding += change
        if self._holding == 0:
            self.stats.rate_limit_wait += self._clock() - self._held_since

    def check_rate_limit_budget(self, wait: float) -> None:
        """JudgeError when waiting `wait` more seconds for this rate-limited endpoint would pass
        the budget, counted from its first refusal since the last successful reply."""
        if self.limited_since is None:
            return
        waited = self._clock() - self.limited_since
        if waited + max(0.0, wait) > self.rate_limit_wait:
            limits = self.describe_limits()
            raise JudgeError(
                f"judge endpoint {self.name}: still rate-limited after {waited:.1f} s with no "
                f"successful reply, and the next wait would pass the {self.rate_limit_wait:g} s "
                f"budget ({RATE_LIMIT_WAIT_ENV} sets it); its remaining requests fail at once"
                + (f"; limits in force: {limits}" if limits else "")
                + (f"; last reply: {self._last_refusal}" if self._last_refusal else "")
            )

    def pause_left(self) -> float:
        """Seconds until the endpoint's current pause ends (0: not paused)."""
        return max(0.0, self._paused_until - self._clock())

    # ---- outcomes -----------------------------------------------------------------------------
    def _settle(self, ticket: Ticket, exc: BaseException | None) -> None:
        try:
            if ticket.headers is not None:  # the provider's announced limits
                self.pacing.adopt(ticket.headers, sent_since=self._sent - ticket.sent)
            if exc is None:
                self._succeeded(ticket)
            elif isinstance(exc, Exception):  # not a cancellation
                self._failed(ticket, exc)
        finally:
            self._release()

    def _succeeded(self, ticket: Ticket) -> None:
        self._failures_in_row = 0
        self._limited_rounds = 0
        self.limited_since = None  # a reply got through: the budget starts afresh
        self.pacing.note_served()
        if self._cap < self._ceiling:  # additive increase: +1 per round of successes
            self._cap = min(self._ceiling, self._cap + 1.0 / self._cap)
            self.stats.concurrency = int(self._cap)
        if ticket.prompt_tokens is not None:
            self.pacing.learn(
                ticket.prompt_chars,
                ticket.prompt_tokens,
                ticket.completion_tokens,
                ticket.reserved_tokens,
            )

    def _failed(self, ticket: Ticket, exc: Exception) -> None:
        failure = classify(exc)
        if failure.kind == "rate_limited":
            self._rate_limited(ticket, failure)
        elif failure.kind == "transient" and failure.status is None:
            self._failures_in_row += 1  # no HTTP reply at all: refused, reset, timed out
            if self._breaker_after and self._failures_in_row >= self._breaker_after:
                self._broken = self._broken or (
                    f"judge endpoint {self.name} is unreachable: {self._failures_in_row} "
                    f"connection failures or timeouts in a row (last: {failure.message}); the "
                    f"remaining verdicts of this run fail at once ({BREAKER_ENV} sets how many "
                    "in a row trip this, 0 never)"
                )
        elif failure.status is not None or failure.kind == "reply":
            self._failures_in_row = 0  # the endpoint answered

    def _rate_limited(self, ticket: Ticket, failure: Failure) -> None:
        self.stats.rate_limited += 1
        if self.limited_since is None:
            self.limited_since = self._clock()
        self._last_refusal = failure.message
        self.pacing.learn_pace(ticket.pace_round)
        if ticket.epoch == self._epoch:  # the first of its round: halve what was in flight
            self._epoch += 1
            self._limited_rounds += 1
            self._cap = max(1.0, min(self._cap, float(self._in_flight)) / 2)
            self.stats.concurrency = int(self._cap)
        wait = failure.retry_after
        if wait is None:
            wait = self._backoff(max(1, self._limited_rounds))
        self._paused_until = max(self._paused_until, self._clock() + min(wait, self._max_pause))
        self.pacing.empty_until(self._paused_until)

    def raise_if_broken(self) -> None:
        if self._broken is not None:
            raise JudgeError(self._broken)

    # ---- limits -------------------------------------------------------------------------------
    @property
    def learnt_rpm(self) -> float | None:
        """The pace learnt from refusals, in requests a minute (None: none in force)."""
        return self.pacing.learnt_rpm

    def describe_limits(self) -> str:
        """The limits in force, for a message: whose they are and how many per minute."""
        return self.pacing.describe_limits()


class _Request:
    """The async context manager of one request: admitted on entry, settled on exit."""

    __slots__ = ("_endpoint", "_prompt_chars", "_ticket")

    def __init__(self, endpoint: Endpoint, prompt_chars: int) -> None:
        self._endpoint = endpoint
        self._prompt_chars = prompt_chars
        self._ticket: Ticket | None = None

    async def __aenter__(self) -> Ticket:
        self._ticket = await self._endpoint._admit(self._prompt_chars)
        return self._ticket

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        assert self._ticket is not None
        self._endpoint._settle(self._ticket, exc)
