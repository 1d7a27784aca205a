"""Retries of the system's calls (`run`, `setup_user`, `ready`, `user_ready`) on a transient error,
as Zep's harness retries every API call: exponential backoff with jitter, up to 8 retries, at
most 5 minutes of waiting in all.

Transient: a connection reset, refused or timed out (ConnectionError, TimeoutError, an OSError of
such an errno, a client library's connection or timeout class, by name), an HTTP 429 or 5xx
(408/409/425 too) that an exception carries (`status_code`, `status`, `response.status_code`),
or an exception class the suite declares transient: anywhere in the exception's chain, read
from what the system raised down to the root cause. An error of the code (AssertionError,
TypeError, ValueError, KeyError, AttributeError, StopIteration...) and every error of this plugin
is never retried, whatever its cause; neither is a 4xx other than those above.

The retries never extend a call's bound: the engine runs every attempt and wait inside it (see
docs/system.md#retries-of-the-systems-calls). `sleep`, `clock` and `rng` are injectable, and
EVALCASES_SYSTEM_BACKOFF sets the first wait, so tests wait milliseconds.
"""

from __future__ import annotations

import builtins
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..core.environment import env_number
from ..core.errors import CaseFileError
from ..core.exception_chain import chain_of, link_text
from ..core.suite_schema import SystemRetries
from ..core.transient import (
    NEVER_TRANSIENT_NAMES,
    backoff_delay,
    status_of,
    transient_network_error,
    transient_status,
)

T = TypeVar("T")

DEFAULT_RETRIES = 8
DEFAULT_BACKOFF = 2.0  # seconds before the first retry; doubled each time (2, 4, 8, ... 256)
DEFAULT_MAX_WAIT = 300.0  # seconds of waiting between attempts, in all (also a wait's cap)
JITTER = 0.1  # each wait is stretched by up to 10 %, at random
BACKOFF_ENV = "EVALCASES_SYSTEM_BACKOFF"  # seconds before the first retry (tests: a few ms)
RETRIES_OPTION = "--eval-system-retries"

_NEVER_TRANSIENT = tuple(getattr(builtins, name) for name in sorted(NEVER_TRANSIENT_NAMES))
_OUR_PACKAGE = __name__.split(".", 1)[0]


def transient_reason(exc: BaseException, declared: tuple[str, ...] = ()) -> str | None:
    """Why `exc` is worth another try (`HTTP 503: HTTPStatusError: …`, `ConnectionResetError:
    …`, `declared transient (mypkg.errors:Flaky): Flaky: …`), or None. The chain is read from
    what was raised down to the root cause; the first link that decides wins: a declared class,
    an error of the code or of ours (never), an HTTP status (transient or not), a connection or
    timeout error."""
    found = _transient(exc, declared)
    if found is None:
        return None
    kind, link = found
    text = link_text(link)
    return text if text.startswith(kind) else f"{kind}: {text}"


def _transient(exc: BaseException, declared: tuple[str, ...]) -> tuple[str, BaseException] | None:
    """(what kind of transient error, the link of the chain that says so), or None."""
    if not isinstance(exc, Exception):  # KeyboardInterrupt, SystemExit, --replay-http's stop
        return None
    for link in chain_of(exc):
        classes = type(link).__mro__
        named = {f"{cls.__module__}:{cls.__qualname__}" for cls in classes}
        for name in declared:
            if name in named:
                return f"declared transient ({name})", link
        if isinstance(link, _NEVER_TRANSIENT) or type(link).__module__.startswith(_OUR_PACKAGE):
            return None
        status = status_of(link)
        if status is not None:
            return (f"HTTP {status}", link) if transient_status(status) else None
        if transient_network_error(link):
            return type(link).__name__, link
    return None


def transient_kind(reason: str) -> str:
    """The kind a `transient_reason` starts with: `HTTP 503`, `ConnectionResetError`,
    `declared transient (mypkg.errors:Flaky)`."""
    if reason.startswith("declared transient ("):
        return reason[: reason.index(")") + 1]
    return reason.split(":", 1)[0]


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a system's call is tried again. `retries` 0: never."""

    retries: int = DEFAULT_RETRIES
    backoff: float = DEFAULT_BACKOFF
    max_wait: float = DEFAULT_MAX_WAIT
    transient: tuple[str, ...] = ()
    jitter: float = JITTER
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    def delay(self, retry_number: int) -> float:
        """Seconds before retry `retry_number` (1 = the first): backoff * 2^(n-1), at most
        max_wait, plus up to 10 % at random (the judges' formula: core/transient.py)."""
        return backoff_delay(retry_number, self.backoff, self.max_wait, self.jitter, self.rng)

    def reason(self, exc: BaseException) -> str | None:
        return transient_reason(exc, self.transient) if self.retries else None


NO_RETRIES = RetryPolicy(retries=0)


def policy_of(
    declared: SystemRetries | None, retries_override: int | None, env: Mapping[str, str]
) -> RetryPolicy:
    """The suite's policy: `system_retries` where it sets a field, else --eval-system-retries
    (for `retries`, which it overrides) and EVALCASES_SYSTEM_BACKOFF (for `backoff`), else the
    defaults."""
    declared = declared or SystemRetries()
    retries = declared.retries if declared.retries is not None else DEFAULT_RETRIES
    if retries_override is not None:
        retries = retries_override
    backoff = declared.backoff
    if backoff is None:
        backoff = env_number(env, BACKOFF_ENV, DEFAULT_BACKOFF, CaseFileError)
    max_wait = declared.max_wait if declared.max_wait is not None else DEFAULT_MAX_WAIT
    return RetryPolicy(retries, backoff, max_wait, tuple(declared.transient))


@dataclass(frozen=True, slots=True)
class Retry:
    """One retry: why the attempt before it failed and the seconds waited before it."""

    reason: str
    wait_s: float


class RetriesSpent(Exception):  # noqa: N818 (why retrying stopped; the error is its cause)
    """A transient error that was not tried again: the retries or the waiting time were used up,
    or the next wait would pass the call's bound. Raised `from` the system's last error, so a
    case shows that error's chain and the user's frames under this message."""


@dataclass
class Attempts:
    """The retries of one call (all attempts of `run(case)` for one case, of `setup_user` for one
    user): each retry noted (`retries`), the waits summed, the call's bound (`deadline`, on
    `clock`) respected: a wait that would end past it is not made."""

    policy: RetryPolicy
    what: str  # "run(case) of s::c1": names the call in messages
    bound: str = ""  # what sets the deadline: "--eval-timeout", shown when it stops the retries
    deadline: float | None = None
    clock: Callable[[], float] = time.monotonic
    retries: list[Retry] = field(default_factory=list)
    waited: float = 0.0

    def next_wait(self, exc: BaseException) -> float | None:
        """After a failed attempt: the seconds to wait before the next one (the retry noted),
        or None when `exc` is not to be retried. RetriesSpent (from `exc`) when it is
        transient but the retries or the time are used up."""
        reason = self.policy.reason(exc)
        if reason is None:
            return None
        done = len(self.retries)
        after = f"after {done} {'retry' if done == 1 else 'retries'} ({transient_kind(reason)})"
        if done >= self.policy.retries:
            raise self._spent(
                f'{after}; {RETRIES_OPTION} (or the suite\'s "system_retries") sets how many'
            ) from exc
        wait = self.policy.delay(done + 1)
        if self.waited + wait > self.policy.max_wait:
            raise self._spent(
                f"{after}: the next wait of {wait:.1f} s would pass {self.policy.max_wait:g} s "
                'of waiting in all (the suite\'s "system_retries": {"max_wait": ...})'
            ) from exc
        if self.deadline is not None and self.clock() + wait >= self.deadline:
            raise self._spent(
                f"{after}: the next wait of {wait:.1f} s would pass {self.bound}"
            ) from exc
        self.retries.append(Retry(reason, wait))
        self.waited += wait
        return wait

    def _spent(self, why: str) -> RetriesSpent:
        return RetriesSpent(f"{self.what} still failed {why}")

    def summary(self) -> str:
        """`retried 2 times`, or "" without a retry."""
        if not self.retries:
            return ""
        return f"retried {len(self.retries)} time{'s' * (len(self.retries) != 1)}"

    def call(
        self,
        function: Callable[[], T],
        sleep: Callable[[float], None] = time.sleep,
        failed: Callable[[], None] = lambda: None,
    ) -> T:
        """`function()` until it returns, retried on a transient error; `failed()` after each
        attempt that failed and is tried again (e.g. to drop its HTTP exchanges)."""
        while True:
            try:
                return function()
            except Exception as exc:
                wait = self.next_wait(exc)
                if wait is None:
                    raise
            failed()
            sleep(wait)

    async def acall(
        self,
        function: Callable[[], Awaitable[T]],
        sleep: Callable[[float], Awaitable[Any]] | None = None,
    ) -> T:
        """`await function()` until it returns, retried on a transient error."""
        import asyncio

        while True:
            try:
                return await function()
            except Exception as exc:
                wait = self.next_wait(exc)
                if wait is None:
                    raise
            await (sleep or asyncio.sleep)(wait)
