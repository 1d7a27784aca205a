"""Retries of the system's calls (domain/retries.py): which errors are transient, the backoff, and
the bounds (retries, total wait, the call's deadline), on a fake clock: nothing here sleeps."""

from __future__ import annotations

import errno
import random

import pytest
from pydantic import ValidationError

from pytest_evalcases.core.errors import CaseFileError
from pytest_evalcases.core.suite_schema import SystemRetries
from pytest_evalcases.domain.retries import (
    BACKOFF_ENV,
    Attempts,
    RetriesSpent,
    RetryPolicy,
    policy_of,
    transient_reason,
)
from pytest_evalcases.domain.users import IngestionWait, UserSetupError


class FakeClock:
    """A clock that only `sleep` moves."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


# Client libraries' errors as they look to us: a class name and a status, no import.
class ConnectError(Exception):  # httpx's name
    pass


class HTTPStatusError(Exception):  # httpx's: the status on .response
    def __init__(self, status: int) -> None:
        super().__init__(f"Server error '{status}'")
        self.response = type("Response", (), {"status_code": status})()


class ClientResponseError(Exception):  # aiohttp's: the status on .status
    def __init__(self, status: int) -> None:
        super().__init__(f"{status}, message='Bad Gateway'")
        self.status = status


class Flaky(Exception):  # a system's own, declared transient by the suite
    pass


class FlakierStill(Flaky):
    pass


FLAKY = f"{__name__}:Flaky"


def raised_from(outer: BaseException, cause: BaseException) -> BaseException:
    try:
        try:
            raise cause
        except BaseException as exc:
            raise outer from exc
    except BaseException as exc:
        return exc


@pytest.mark.parametrize(
    ("exc", "said"),
    [
        (ConnectionResetError(errno.ECONNRESET, "Connection reset by peer"), "ConnectionReset"),
        (ConnectionRefusedError(errno.ECONNREFUSED, "refused"), "ConnectionRefused"),
        (OSError(errno.EHOSTUNREACH, "No route to host"), "OSError"),
        (TimeoutError("read timed out"), "TimeoutError"),
        (ConnectError("[Errno 111] Connection refused"), "ConnectError"),
        (HTTPStatusError(503), "HTTP 503"),
        (HTTPStatusError(429), "HTTP 429"),
        (ClientResponseError(502), "HTTP 502"),
        (raised_from(RuntimeError("search failed"), HTTPStatusError(500)), "HTTP 500"),
    ],
)
def test_transient_errors_are_told_by_class_name_status_and_errno(
    exc: BaseException, said: str
) -> None:
    reason = transient_reason(exc)
    assert reason is not None and said in reason


@pytest.mark.parametrize(
    "exc",
    [
        HTTPStatusError(404),
        HTTPStatusError(401),
        OSError(errno.ENOSPC, "No space left on device"),
        AssertionError("expected 3 results"),
        TypeError("unsupported operand"),
        ValueError("bad input"),
        KeyError("answer"),
        AttributeError("'NoneType' object has no attribute 'text'"),
        StopIteration(),
        CaseFileError("ours"),
        RuntimeError("plain"),
        # an error of the code is never retried, whatever caused it
        raised_from(ValueError("could not parse the reply"), ConnectionResetError("reset")),
        # a 404 decides before the connection error below it
        raised_from(HTTPStatusError(404), TimeoutError()),
        KeyboardInterrupt(),
    ],
)
def test_errors_of_the_code_and_definite_replies_are_not_transient(exc: BaseException) -> None:
    assert transient_reason(exc) is None


def test_a_declared_class_is_transient_with_its_subclasses_and_through_the_chain() -> None:
    assert transient_reason(Flaky("busy")) is None
    assert "declared transient" in (transient_reason(Flaky("busy"), (FLAKY,)) or "")
    assert transient_reason(FlakierStill("busier"), (FLAKY,)) is not None
    wrapped = raised_from(RuntimeError("wrapped"), Flaky("busy"))
    assert transient_reason(wrapped, (FLAKY,)) is not None


def test_built_in_errors_of_the_code_cannot_be_declared_transient() -> None:
    with pytest.raises(ValidationError, match="never a transient one"):
        SystemRetries(transient=["builtins:ValueError"])
    with pytest.raises(ValidationError, match="pattern"):
        SystemRetries(transient=["not a class"])


def test_the_backoff_doubles_from_the_first_wait_and_is_capped() -> None:
    policy = RetryPolicy(jitter=0.0)
    assert [policy.delay(n) for n in range(1, 10)] == [2, 4, 8, 16, 32, 64, 128, 256, 300]
    jittered = RetryPolicy(rng=random.Random(7))
    for n in range(1, 9):
        base = min(2.0 * 2 ** (n - 1), 300.0)
        assert base <= jittered.delay(n) <= min(base * 1.1, 300.0)


def failing(*errors: BaseException, then: str = "answer") -> tuple[list[int], object]:
    calls: list[int] = []

    def function() -> str:
        calls.append(1)
        if len(calls) <= len(errors):
            raise errors[len(calls) - 1]
        return then

    return calls, function


def test_a_transient_error_is_retried_until_the_call_succeeds() -> None:
    clock = FakeClock()
    attempts = Attempts(RetryPolicy(jitter=0.0), "run(case) of s::c1", clock=clock)
    calls, function = failing(HTTPStatusError(503), ConnectionResetError("reset"))
    assert attempts.call(function, clock.sleep) == "answer"  # type: ignore[arg-type]
    assert len(calls) == 3 and clock.slept == [2.0, 4.0]
    assert [retry.reason.split(":")[0] for retry in attempts.retries] == [
        "HTTP 503",
        "ConnectionResetError",
    ]
    assert attempts.summary() == "retried 2 times"


def test_an_error_of_the_code_is_raised_at_once() -> None:
    clock = FakeClock()
    attempts = Attempts(RetryPolicy(), "run(case) of s::c1", clock=clock)
    calls, function = failing(HTTPStatusError(503), ValueError("bad"))
    with pytest.raises(ValueError, match="bad"):
        attempts.call(function, clock.sleep)  # type: ignore[arg-type]
    assert len(calls) == 2 and len(attempts.retries) == 1


def test_the_retries_stop_at_their_number_with_the_last_error_as_cause() -> None:
    clock = FakeClock()
    attempts = Attempts(RetryPolicy(retries=2, jitter=0.0), "run(case) of s::c1", clock=clock)
    last = HTTPStatusError(502)
    calls, function = failing(HTTPStatusError(503), HTTPStatusError(503), last)
    with pytest.raises(RetriesSpent) as spent:
        attempts.call(function, clock.sleep)  # type: ignore[arg-type]
    assert len(calls) == 3 and spent.value.__cause__ is last
    assert str(spent.value) == (
        "run(case) of s::c1 still failed after 2 retries (HTTP 502); --eval-system-retries (or "
        'the suite\'s "system_retries") sets how many'
    )


def test_no_retries_means_the_error_as_it_was() -> None:
    calls, function = failing(HTTPStatusError(503))
    with pytest.raises(HTTPStatusError):
        Attempts(RetryPolicy(retries=0), "x").call(function, FakeClock().sleep)  # type: ignore[arg-type]
    assert len(calls) == 1


def test_the_waits_stop_at_max_wait_in_all() -> None:
    clock = FakeClock()
    policy = RetryPolicy(max_wait=10.0, jitter=0.0)  # 2 + 4 = 6; + 8 would pass 10
    attempts = Attempts(policy, "run(case) of s::c1", clock=clock)
    _, function = failing(*[TimeoutError()] * 9)
    with pytest.raises(RetriesSpent, match="next wait of 8.0 s would pass 10 s of waiting"):
        attempts.call(function, clock.sleep)  # type: ignore[arg-type]
    assert clock.slept == [2.0, 4.0]


def test_with_the_defaults_300_s_of_waiting_come_before_the_8th_retry() -> None:
    clock = FakeClock()
    attempts = Attempts(RetryPolicy(), "run(case) of s::c1", clock=clock)
    _, function = failing(*[HTTPStatusError(503)] * 9)
    with pytest.raises(RetriesSpent, match=r"after 7 retries \(HTTP 503\): the next wait of 2"):
        attempts.call(function, clock.sleep)  # type: ignore[arg-type]
    assert 254 <= sum(clock.slept) <= 254 * 1.1 and len(clock.slept) == 7


def test_a_retry_never_passes_the_calls_deadline() -> None:
    clock = FakeClock()
    attempts = Attempts(
        RetryPolicy(jitter=0.0), "run(case) of s::c1", "the 5 s of --eval-timeout", 5.0, clock
    )
    _, function = failing(*[TimeoutError()] * 9)
    with pytest.raises(
        RetriesSpent, match=r"after 1 retry \(TimeoutError\): the next wait of 4.0 s would pass "
    ):
        attempts.call(function, clock.sleep)  # type: ignore[arg-type]
    assert clock.slept == [2.0] and clock.now < 5.0


def test_the_policy_from_suite_flag_and_environment() -> None:
    default = policy_of(None, None, {})
    assert (default.retries, default.backoff, default.max_wait) == (8, 2.0, 300.0)
    assert policy_of(None, 0, {}).retries == 0  # --eval-system-retries 0: never
    declared = SystemRetries(retries=3, max_wait=60, transient=[FLAKY])
    policy = policy_of(declared, 5, {BACKOFF_ENV: "0.001"})
    assert (policy.retries, policy.backoff, policy.max_wait) == (5, 0.001, 60.0)
    assert policy.transient == (FLAKY,)
    assert policy_of(SystemRetries(backoff=1), None, {BACKOFF_ENV: "0.001"}).backoff == 1.0
    with pytest.raises(CaseFileError, match=f"{BACKOFF_ENV}='soon' is not a number"):
        policy_of(None, None, {BACKOFF_ENV: "soon"})


def test_an_ingestion_hook_is_retried_within_the_users_whole_wait() -> None:
    clock = FakeClock()
    policy = RetryPolicy(backoff=1.0, jitter=0.0)
    wait = IngestionWait("u-ana", "memory", None, 100.0, clock, policy, clock.sleep)
    dropped: list[int] = []
    _, setup_user = failing(ConnectionResetError("reset"), HTTPStatusError(503), then="mem-1")
    value = wait.bounded(
        "setup_user", lambda data: setup_user(), {}, failed=lambda: dropped.append(1)
    )  # type: ignore[operator]
    assert value == "mem-1" and len(wait.retried) == 2 and dropped == [1, 1]
    assert clock.slept == [1.0, 2.0]


def test_an_ingestion_hook_whose_retries_are_spent_fails_that_user() -> None:
    clock = FakeClock()
    policy = RetryPolicy(backoff=1.0, jitter=0.0)
    wait = IngestionWait("u-ana", "memory", None, 4.0, clock, policy, clock.sleep)
    _, setup_user = failing(*[HTTPStatusError(503)] * 9)
    with pytest.raises(UserSetupError) as failed:
        wait.bounded("setup_user", lambda data: setup_user(), {})  # type: ignore[operator]
    assert str(failed.value) == (
        "setup_user('u-ana') of suite 'memory' still failed after 2 retries (HTTP 503): the "
        "next wait of 4.0 s "
        "would pass the 4 s of --eval-ingest-timeout; last error: HTTP 503: HTTPStatusError: "
        "Server error '503'; none of user 'u-ana''s cases can be recorded until it succeeds "
        "(the other users' cases run)"
    )
    assert isinstance(failed.value.__cause__, HTTPStatusError)
