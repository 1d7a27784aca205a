"""One judge endpoint's traffic: how many requests go out at once, when, and whether at all.

Every model request of a judge passes `Endpoint.request()`. The state is shared by all of them
and outlives event loops (each waiter's future belongs to its own loop):

- an AIMD cap on requests in flight: halved (not below 1) on a rate-limited reply, at most once
  per round (a reply to a request sent before the last decrease reflects the old cap), raised by
  1/cap on each success, up to `--eval-concurrency`;
- a pause: a rate-limited reply's Retry-After (else its x-ratelimit-reset-*, else a backoff)
  holds every request to the endpoint until then, not only the one that got it;
- client-side token buckets for requests and tokens per minute: `--eval-rpm` / `--eval-tpm`, and
  the limits the provider announces in x-ratelimit-limit-requests / -tokens (the lower wins).
  A request's tokens are estimated from its prompt's length before it goes out, and corrected
  from the reply's usage;
- a breaker: after N connection failures or timeouts in a row (no HTTP reply at all), every
  later request of the run fails at once with a JudgeError naming the endpoint;
- a rate-limit budget (EVALCASES_JUDGE_RATE_LIMIT_WAIT): once the endpoint has refused requests
  with no successful reply in between for that long (or the next pause would pass it), every
  request fails at once with a JudgeError naming the budget. One budget for the endpoint, not
  one per request: requests that waited in the queue or the pause start no clock of their own;
- a learnt pace: a rate-limited reply sets a requests bucket at the rate the endpoint was
  really served at (successful replies over the last seconds), less a tenth; it then grows by
  2% of itself a second, until it reaches a limit in force (then it is dropped) or the next
  refusal cuts it again. New requests start at that pace once the pause ends, instead of all
  together into a limit that has just refused one.

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
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from .errors import JudgeError
from .failures import Failure, classify
from .usage import JudgeStats

BREAKER_ENV = "EVALCASES_JUDGE_BREAKER"
RATE_LIMIT_WAIT_ENV = "EVALCASES_JUDGE_RATE_LIMIT_WAIT"
DEFAULT_BREAKER_AFTER = 5  # connection failures or timeouts in a row
# A bucket holds this many seconds of its rate: requests go out at the limit's average pace,
# never in a burst a provider's shorter window (often a second) would refuse.
BURST_SECONDS = 1.0
# The learnt pace: the served rate measured over this many seconds of successful replies, cut by
# this factor on a refusal, then grown by this share of itself a second (a cut of a tenth is
# won back in about five seconds: a limit that holds is probed again that often, not faster).
SERVED_WINDOW = 3.0
LEARNT_CUT = 0.9
LEARNT_GROWTH = 0.02
_ANNOUNCED = {"requests": "x-ratelimit-limit-requests", "tokens": "x-ratelimit-limit-tokens"}


@dataclass(frozen=True)
class RateLimits:
    """Client-side limits for each judge endpoint; `shares` divides them (xdist workers)."""

    rpm: float | None = None
    tpm: float | None = None
    shares: int = 1


class TokenBucket:
    """A reservation bucket: `reserve` takes its tokens at once (the level may go below zero, so
    later reservations queue behind it) and says how long until they are really there. It fills
    from `updated` on, which a provider's pause moves into the future."""

    def __init__(self, per_minute: float, now: float, level: float | None = None) -> None:
        self.per_minute = per_minute
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate * BURST_SECONDS)
        self.level = self.capacity if level is None else min(self.capacity, level)
        self.updated = now

    def _refill(self, now: float) -> None:
        if now > self.updated:
            self.level = min(self.capacity, self.level + (now - self.updated) * self.rate)
            self.updated = now

    def reserve(self, cost: float, now: float) -> float:
        """Take `cost` tokens; the seconds to wait before using them."""
        self._refill(now)
        self.level -= cost
        return max(0.0, self.updated + max(0.0, -self.level) / self.rate - now)

    def give_back(self, tokens: float) -> None:
        """Correct a reservation (negative: it cost more than reserved)."""
        self.level = min(self.capacity, self.level + tokens)

    def empty_until(self, when: float) -> None:
        """The provider refused a request: nothing is left until its pause ends, so that the
        requests waiting for it do not go out together with a full bucket's worth."""
        self.level = min(self.level, 0.0)
        self.updated = max(self.updated, when)

    def retune(self, per_minute: float, now: float) -> None:
        self._refill(now)
        self.per_minute, self.rate = per_minute, per_minute / 60.0
        self.capacity = max(1.0, self.rate * BURST_SECONDS)
        self.level = min(self.level, self.capacity)


class Ticket:
    """One admitted request: what the endpoint needs to know about it when it ends."""

    __slots__ = (
        "epoch",
        "sent",
        "prompt_chars",
        "reserved_tokens",
        "headers",
        "prompt_tokens",
        "completion_tokens",
    )

    def __init__(self, prompt_chars: int) -> None:
        self.epoch = 0
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
        # client-side limits: the user's, the provider's (per minute), and their buckets
        self._limits = limits or RateLimits()
        self._announced: dict[str, float] = {}
        self._announced_raw: dict[str, str] = {}
        self.learnt_rpm: float | None = None  # the pace learnt from refusals (see above)
        self._learnt_from = (0.0, 0.0)  # (the pace set at the last refusal, when)
        self._served: deque[float] = deque()  # when recent requests were answered 2xx
        self._buckets: dict[str, TokenBucket] = {}
        self._requests: TokenBucket | None = None
        self._tokens: TokenBucket | None = None
        self._retune()
        # token estimates, learnt from usage: ~4 characters a token in English to begin with
        self._tokens_per_char = 0.25
        self._completion_tokens = 100.0
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
            if self._paused_until or self._requests is not None or self._tokens is not None:
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
        wait = self._paused_until - now
        if self._requests is not None:
            wait = max(wait, self._requests.reserve(1.0, now))
        if self._tokens is not None:
            ticket.reserved_tokens = self.estimate_tokens(ticket.prompt_chars)
            wait = max(wait, self._tokens.reserve(ticket.reserved_tokens, now))
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

    def estimate_tokens(self, prompt_chars: int) -> float:
        return math.ceil(prompt_chars * self._tokens_per_char + self._completion_tokens)

    # ---- outcomes -----------------------------------------------------------------------------
    def _settle(self, ticket: Ticket, exc: BaseException | None) -> None:
        try:
            if ticket.headers is not None:
                self._adopt(ticket)
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
        self._note_served()
        if self._cap < self._ceiling:  # additive increase: +1 per round of successes
            self._cap = min(self._ceiling, self._cap + 1.0 / self._cap)
            self.stats.concurrency = int(self._cap)
        if ticket.prompt_tokens is not None:
            self._learn(ticket)

    def _learn(self, ticket: Ticket) -> None:
        """Better estimates from the reply's usage, and the token bucket corrected by it."""
        used = (ticket.prompt_tokens or 0) + ticket.completion_tokens
        if ticket.prompt_chars and ticket.prompt_tokens:
            observed = ticket.prompt_tokens / ticket.prompt_chars
            self._tokens_per_char += 0.2 * (observed - self._tokens_per_char)
        self._completion_tokens += 0.2 * (ticket.completion_tokens - self._completion_tokens)
        if ticket.reserved_tokens and self._tokens is not None:
            self._tokens.give_back(ticket.reserved_tokens - used)

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

    def _note_served(self) -> None:
        """A success: remembered for the served rate; the learnt pace grows with time."""
        now = self._clock()
        self._served.append(now)
        while self._served[0] < now - SERVED_WINDOW:
            self._served.popleft()
        if self.learnt_rpm is None:
            return
        base, since = self._learnt_from
        self.learnt_rpm = base * (1.0 + LEARNT_GROWTH * (now - since))
        others = [v for v in (self._limits.rpm, self._announced.get("requests")) if v]
        if others and self.learnt_rpm >= min(others) / max(1, self._limits.shares):
            self.learnt_rpm = None  # the limit in force paces on its own again
        self._retune()

    def _learn_pace(self) -> None:
        """A refusal: pace new requests at the rate the endpoint was served at, less a tenth
        (and never faster than the pace that was just refused)."""
        now = self._clock()
        served = [t for t in self._served if t >= now - SERVED_WINDOW]
        if len(served) < 2:
            return  # nothing measured yet: the pause and the cap back off alone
        rate = len(served) / max(BURST_SECONDS, now - served[0]) * 60.0
        if self.learnt_rpm is not None:
            rate = min(rate, self.learnt_rpm)
        self.learnt_rpm = max(1.0, rate * LEARNT_CUT)
        self._learnt_from = (self.learnt_rpm, now)
        self._served.clear()  # measured afresh at the new pace
        self._retune()

    def _rate_limited(self, ticket: Ticket, failure: Failure) -> None:
        self.stats.rate_limited += 1
        if self.limited_since is None:
            self.limited_since = self._clock()
        self._last_refusal = failure.message
        self._learn_pace()
        if ticket.epoch == self._epoch:  # the first of its round: halve what was in flight
            self._epoch += 1
            self._limited_rounds += 1
            self._cap = max(1.0, min(self._cap, float(self._in_flight)) / 2)
            self.stats.concurrency = int(self._cap)
        wait = failure.retry_after
        if wait is None:
            wait = self._backoff(max(1, self._limited_rounds))
        self._paused_until = max(self._paused_until, self._clock() + min(wait, self._max_pause))
        for bucket in self._buckets.values():
            bucket.empty_until(self._paused_until)

    def raise_if_broken(self) -> None:
        if self._broken is not None:
            raise JudgeError(self._broken)

    # ---- limits -------------------------------------------------------------------------------
    def _adopt(self, ticket: Ticket) -> None:
        """The provider's announced limits (checked on every reply; parsed when they change)."""
        headers = ticket.headers or {}
        changed = False
        for kind, header in _ANNOUNCED.items():
            raw = headers.get(header)
            if raw is None or raw == self._announced_raw.get(kind):
                continue
            self._announced_raw[kind] = raw
            value = _number(raw)
            if value is not None and value > 0:
                self._announced[kind] = value
                changed = True
        if changed:
            self._retune(headers, sent_since=self._sent - ticket.sent)

    def _per_minute(self, kind: str) -> float | None:
        given = self._limits.rpm if kind == "requests" else self._limits.tpm
        learnt = self.learnt_rpm if kind == "requests" else None
        candidates = [v for v in (given, self._announced.get(kind)) if v]
        if learnt is not None:  # measured on this worker's own traffic: not shared out again
            shares = max(1, self._limits.shares)
            return min([learnt, *(v / shares for v in candidates)])
        return min(candidates) / max(1, self._limits.shares) if candidates else None

    def _retune(self, headers: Mapping[str, str] | None = None, sent_since: int = 0) -> None:
        """Buckets for the limits in force. A new one starts from what the provider said was
        left, less the requests sent since the reply's request (they are not in its count)."""
        now = self._clock()
        for kind in _ANNOUNCED:
            limit = self._per_minute(kind)
            bucket = self._buckets.get(kind)
            if limit is None:
                self._buckets.pop(kind, None)
            elif bucket is None:
                left = _number(headers.get(f"x-ratelimit-remaining-{kind}")) if headers else None
                if left is not None:
                    left = left / max(1, self._limits.shares)
                    if kind == "requests":
                        left -= sent_since
                self._buckets[kind] = TokenBucket(limit, now, left)
            elif bucket.per_minute != limit:
                bucket.retune(limit, now)
        self._requests = self._buckets.get("requests")
        self._tokens = self._buckets.get("tokens")

    def describe_limits(self) -> str:
        """The limits in force, for a message: whose they are and how many per minute."""
        parts = []
        for kind, flag, given in (
            ("requests", "--eval-rpm", self._limits.rpm),
            ("tokens", "--eval-tpm", self._limits.tpm),
        ):
            if given:
                parts.append(f"{flag} {given:g}")
            if kind in self._announced:
                parts.append(f"{self._announced[kind]:g} {kind}/min ({_ANNOUNCED[kind]})")
            if kind == "requests" and self.learnt_rpm is not None:
                parts.append(f"{self.learnt_rpm:.0f} requests/min (learnt from 429s)")
        if self._limits.shares > 1 and parts:
            parts.append(f"shared by {self._limits.shares} xdist workers")
        return ", ".join(parts)


def _number(raw: str | None) -> float | None:
    try:
        return float(raw) if raw is not None else None
    except ValueError:
        return None


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
