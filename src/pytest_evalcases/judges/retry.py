"""Our retry policy around every judge model request.

Why our own: deepeval's policy gives up after 2 attempts (DEEPEVAL_RETRY_MAX_ATTEMPTS, cap 5 s)
and switches the openai SDK's retries off, so two 429s in a row fail a metric. Here every single
model request (not the whole metric) goes through `RetryPolicy.run`; our chat client does not
retry by itself, so exactly one policy is in force.

What each kind of failure (failures.classify) gets:

- rate-limited: the request waits (the judge's Endpoint pauses every request to that endpoint)
  and tries again without using up an attempt, until `rate_limit_wait` seconds have passed since
  the endpoint's first rate-limited reply after its last successful one (without an endpoint:
  this request's first); then a JudgeError that names the budget. The endpoint holds the same
  budget for requests not yet sent, so the budget bounds the whole wait, not each request's.
- transient: retried with exponential backoff and jitter; a Retry-After sets the delay instead.
- auth: fails at once with JudgeAuthError naming the key variable.
- fatal: fails at once.
- reply (unparseable): retried up to `reply_attempts` times in total, then a JudgeError.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..core.environment import env_number as read_env_number
from ..core.transient import backoff_delay
from .endpoint import RATE_LIMIT_WAIT_ENV, Endpoint
from .errors import JudgeAuthError, JudgeConfigError, JudgeError
from .failures import Failure, classify

T = TypeVar("T")

# Environment settings of the policy (documented in docs/judges.md).
RETRIES_ENV = "EVALCASES_JUDGE_RETRIES"
BACKOFF_ENV = "EVALCASES_JUDGE_BACKOFF"


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry. `sleep` is injectable so tests never wait long."""

    max_attempts: int = 6  # requests in total, the first one included (rate-limited ones aside)
    base_delay: float = 0.5  # seconds before the first retry
    max_delay: float = 60.0  # cap on any single wait, Retry-After included
    jitter: float = 0.1  # each wait is stretched by up to this fraction, at random
    reply_attempts: int = 3  # attempts when the reply is unparseable (same prompt, same model)
    rate_limit_wait: float = 600.0  # seconds an endpoint may refuse every request (see above)
    sleep: Callable[[float], Awaitable[Any]] = field(default=asyncio.sleep, compare=False)
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> RetryPolicy:
        """The default policy, with EVALCASES_JUDGE_RETRIES (retries after the first attempt),
        EVALCASES_JUDGE_BACKOFF (seconds before the first retry) and
        EVALCASES_JUDGE_RATE_LIMIT_WAIT (seconds) applied when set."""
        policy = cls()
        retries = env_number(env, RETRIES_ENV, policy.max_attempts - 1)
        if retries != int(retries):
            raise JudgeConfigError(f"{RETRIES_ENV}={env[RETRIES_ENV]!r} must be a whole number")
        return cls(
            max_attempts=int(retries) + 1,
            base_delay=env_number(env, BACKOFF_ENV, policy.base_delay),
            rate_limit_wait=env_number(env, RATE_LIMIT_WAIT_ENV, policy.rate_limit_wait),
        )

    def backoff(self, retry_number: int) -> float:
        """Wait before retry `retry_number` (1 = first retry): base * 2^(n-1), capped, jittered."""
        return backoff_delay(retry_number, self.base_delay, self.max_delay, self.jitter, self.rng)

    def delay_for(self, failure: Failure, retry_number: int) -> float:
        if failure.retry_after is not None:
            return min(self.max_delay, failure.retry_after)
        return self.backoff(retry_number)

    async def run(
        self,
        request: Callable[[int], Awaitable[T]],
        *,
        what: str,
        key_env: str | None = None,
        on_retry: Callable[[Failure, float], None] | None = None,
        endpoint: Endpoint | None = None,
    ) -> T:
        """Call `request(attempt)` (attempt counts from 1) until it succeeds or we give up.

        With an `endpoint`, a rate-limited reply waits in the endpoint's pause (every request to
        it waits); without one, here. Raises JudgeAuthError on 401/403, JudgeError otherwise;
        the last exception is chained.
        """
        reply_failures = 0
        failed_attempts = 0  # rate-limited replies are not counted: they are not errors
        limited_since: float | None = None
        attempt = 0
        while True:
            attempt += 1
            try:
                return await request(attempt)
            except JudgeError:
                raise
            except Exception as exc:  # classified below; anything unknown fails fast
                failure = classify(exc)
                if failure.kind == "auth":
                    hint = f"check {key_env}" if key_env else "check the judge's API key"
                    raise JudgeAuthError(
                        f"{what}: judge authentication failed (HTTP {failure.status}): {hint} "
                        f"({failure.message}); not retried"
                    ) from exc
                if failure.kind == "fatal":
                    raise JudgeError(f"{what}: {failure.message}; not retried") from exc
                if failure.kind == "rate_limited":
                    if endpoint is not None:  # one budget for the endpoint, on its clock
                        wait = endpoint.pause_left()
                        try:
                            endpoint.check_rate_limit_budget(wait)
                        except JudgeError as spent:
                            raise JudgeError(f"{what}: {spent}") from exc
                    else:
                        now = time.monotonic()
                        limited_since = now if limited_since is None else limited_since
                        wait = self.delay_for(failure, 1)
                        if now + wait - limited_since > self.rate_limit_wait:
                            raise JudgeError(
                                self._rate_limit_message(what, now - limited_since, failure)
                            ) from exc
                    if on_retry is not None:
                        on_retry(failure, wait)
                    if endpoint is None:
                        await self.sleep(wait)
                    continue  # the endpoint's pause holds the next attempt, like every other
                failed_attempts += 1
                if failure.kind == "reply":
                    reply_failures += 1
                    last = failed_attempts >= self.max_attempts
                    if last or reply_failures >= self.reply_attempts:
                        raise JudgeError(
                            f"{what}: the judge model's reply was not usable JSON after "
                            f"{failed_attempts} attempts ({failure.message})"
                        ) from exc
                elif failed_attempts >= self.max_attempts:
                    raise JudgeError(
                        f"{what}: judge request failed after {failed_attempts} attempts "
                        f"(last error: {failure.message})"
                    ) from exc
                if endpoint is not None:
                    endpoint.raise_if_broken()  # a tripped breaker: no wait, no retry
                delay = self.delay_for(failure, failed_attempts)
                if on_retry is not None:
                    on_retry(failure, delay)
                await self.sleep(delay)

    def _rate_limit_message(self, what: str, waited: float, failure: Failure) -> str:
        return (
            f"{what}: still rate-limited after {waited:.1f} s, and the next wait would pass the "
            f"{self.rate_limit_wait:g} s budget ({RATE_LIMIT_WAIT_ENV} sets it); last reply: "
            f"{failure.message}"
        )


def env_number(env: Mapping[str, str], name: str, default: float) -> float:
    """A non-negative number from the environment, else `default`; JudgeConfigError if bad."""
    return read_env_number(env, name, default, JudgeConfigError)
