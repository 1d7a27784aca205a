"""The pace a judge endpoint's requests go out at: the limits in force and their token buckets.

`Endpoint` (endpoint.py) asks its `Pacing` how long each request must wait before it goes out,
and tells it what every reply said:

- client-side token buckets for requests and tokens per minute: `--eval-rpm` / `--eval-tpm`, and
  the limits the provider announces in x-ratelimit-limit-requests / -tokens (the lower wins).
  A request's tokens are estimated from its prompt's length before it goes out, and corrected
  from the reply's usage;
- a learnt pace, as TCP's congestion control paces a connection (multiplicative decrease, then
  a quick return: CUBIC's shape): the first refusal of a round sets a requests bucket at half
  the rate the endpoint was paced or really served at, whichever is lower (its `peak`). Once the
  provider's pause ends the pace climbs back, steeply at first, to the peak within
  `RECOVERY_SECONDS`, then probes above it, slowly at first, until the next refusal cuts it
  again or it reaches a limit in force (then it is dropped). A refusal of a request paced before
  the last cut does not cut again: it went out at the old pace. New requests start
  at the cut pace once the pause ends, instead of all together into a limit that has just
  refused one; and a limit that holds costs a fraction of a second of its rate a refusal, not
  the minutes a slow climb back would (issue 30: a pace grown back by 2% a second).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass

# A bucket holds this many seconds of its rate: requests go out at the limit's average pace,
# never in a burst a provider's shorter window (often a second) would refuse.
BURST_SECONDS = 1.0
# The learnt pace: the served rate is measured over this many seconds of successful replies; a
# refusal cuts the pace to this share of its peak, which it regains within RECOVERY_SECONDS of
# the pause's end (most of it in the first second); then it grows past the peak as a cubic,
# slowly at first (+3% after 3 s), twice the peak after PROBE_SECONDS: a limit with a burst of a
# second is probed again about every eight seconds (the excess a probe sends, t^4 / 4 / 1000 of
# a second's worth, passes a second's worth at t = 8), and a peak measured too low (the rate
# still climbing when the refusal came) is passed within seconds, not minutes.
SERVED_WINDOW = 3.0
LEARNT_CUT = 0.5
RECOVERY_SECONDS = 2.0
PROBE_SECONDS = 10.0
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


class Pacing:
    """One endpoint's limits in force (the user's, the provider's, the learnt pace), a bucket
    for each, and the token estimates a request's reservation is made from."""

    def __init__(self, limits: RateLimits | None, clock: Callable[[], float]) -> None:
        self._clock = clock
        # client-side limits: the user's, the provider's (per minute), and their buckets
        self._limits = limits or RateLimits()
        self._announced: dict[str, float] = {}
        self._announced_raw: dict[str, str] = {}
        self.learnt_rpm: float | None = None  # the pace learnt from refusals (see above)
        self._peak = 0.0  # the pace a refusal cut it from, per minute
        self._recovers_from = 0.0  # when the pause after that refusal ends
        self.round = 0  # cuts so far: a request paced before the last one answers for the old pace
        self._served: deque[float] = deque()  # when recent requests were answered 2xx
        self._buckets: dict[str, TokenBucket] = {}
        self.requests: TokenBucket | None = None
        self.tokens: TokenBucket | None = None
        self._retune()
        # token estimates, learnt from usage: ~4 characters a token in English to begin with
        self._tokens_per_char = 0.25
        self._completion_tokens = 100.0

    @property
    def active(self) -> bool:
        """Whether a bucket paces requests (else only the endpoint's cap and pause hold them)."""
        return self.requests is not None or self.tokens is not None

    def reserve(self, prompt_chars: int, now: float) -> tuple[float, float]:
        """Take one request's share of each bucket: the seconds to wait before it goes out, and
        the tokens reserved for it (0 without a tokens bucket)."""
        wait, reserved_tokens = 0.0, 0.0
        if self.requests is not None:
            wait = max(wait, self.requests.reserve(1.0, now))
        if self.tokens is not None:
            reserved_tokens = self.estimate_tokens(prompt_chars)
            wait = max(wait, self.tokens.reserve(reserved_tokens, now))
        return wait, reserved_tokens

    def estimate_tokens(self, prompt_chars: int) -> float:
        return math.ceil(prompt_chars * self._tokens_per_char + self._completion_tokens)

    def learn(
        self, prompt_chars: int, prompt_tokens: int, completion_tokens: int, reserved_tokens: float
    ) -> None:
        """Better estimates from a reply's usage, and the token bucket corrected by it."""
        used = (prompt_tokens or 0) + completion_tokens
        if prompt_chars and prompt_tokens:
            observed = prompt_tokens / prompt_chars
            self._tokens_per_char += 0.2 * (observed - self._tokens_per_char)
        self._completion_tokens += 0.2 * (completion_tokens - self._completion_tokens)
        if reserved_tokens and self.tokens is not None:
            self.tokens.give_back(reserved_tokens - used)

    # ---- the learnt pace ----------------------------------------------------------------------
    def note_served(self) -> None:
        """A success: remembered for the served rate; the learnt pace follows its curve."""
        now = self._clock()
        self._served.append(now)
        while self._served[0] < now - SERVED_WINDOW:
            self._served.popleft()
        if self.learnt_rpm is None:
            return
        self.learnt_rpm = learnt_pace(self._peak, now - self._recovers_from)
        others = [v for v in (self._limits.rpm, self._announced.get("requests")) if v]
        if others and self.learnt_rpm >= min(others) / max(1, self._limits.shares):
            self.learnt_rpm = None  # the limit in force paces on its own again
        self._retune()

    def learn_pace(self, paced_in_round: int) -> None:
        """A refusal of a request paced in round `paced_in_round` (`round` when it was paced):
        the first of the round halves the pace at once. Its peak is the pace the requests went
        out at (the learnt one, else the limit in force) or the rate the endpoint was really
        served at over the last seconds, whichever is lower."""
        if paced_in_round != self.round:
            return  # it went out at the pace the last cut already answered
        now = self._clock()
        served = [t for t in self._served if t >= now - SERVED_WINDOW]
        candidates = [self.requests.per_minute] if self.requests is not None else []
        if len(served) >= 2:
            candidates.append(len(served) / max(BURST_SECONDS, now - served[0]) * 60.0)
        if not candidates:
            return  # nothing measured yet: the pause and the cap back off alone
        self._peak = max(1.0, min(candidates))
        self.round += 1
        self._recovers_from = now
        self.learnt_rpm = learnt_pace(self._peak, 0.0)
        self._retune()

    def empty_until(self, when: float) -> None:
        """A refusal paused the endpoint until `when`: every bucket is empty until then, and a
        learnt pace not yet climbing back (just cut, or its pause not over) climbs from then on.
        Once it climbs, a refusal that did not cut it (paced before the cut) does not restart
        the climb."""
        for bucket in self._buckets.values():
            bucket.empty_until(when)
        if self.learnt_rpm is not None and self._clock() <= self._recovers_from:
            self._recovers_from = max(self._recovers_from, when)

    # ---- limits -------------------------------------------------------------------------------
    def adopt(self, headers: Mapping[str, str], sent_since: int) -> None:
        """The provider's announced limits (checked on every reply; parsed when they change).
        `sent_since`: the requests sent after the one this reply answers."""
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
            self._retune(headers, sent_since=sent_since)

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
        self.requests = self._buckets.get("requests")
        self.tokens = self._buckets.get("tokens")

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


def learnt_pace(peak: float, since: float) -> float:
    """The learnt pace (per minute) `since` seconds after the pause that followed a refusal at
    `peak`: cut to LEARNT_CUT of it, back to it within RECOVERY_SECONDS, then past it: a cubic
    either side of the peak (CUBIC's), flat near it, where the limit was, steep away from it."""
    if since < RECOVERY_SECONDS:
        left = (1.0 - max(0.0, since) / RECOVERY_SECONDS) ** 3
        return peak * (1.0 - (1.0 - LEARNT_CUT) * left)
    return peak * (1.0 + ((since - RECOVERY_SECONDS) / PROBE_SECONDS) ** 3)


def _number(raw: str | None) -> float | None:
    try:
        return float(raw) if raw is not None else None
    except ValueError:
        return None
