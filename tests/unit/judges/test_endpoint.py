"""judges/endpoint (and the pacing it holds) under a provider's rate limit (issue 15), on a fake
clock: AIMD concurrency, an endpoint-wide pause, client-side token buckets, reset durations,
limits shared by xdist workers."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pytest_evalcases.judges import (
    JudgeError,
    RateLimits,
    make_judge,
)
from pytest_evalcases.judges.endpoint import Endpoint
from pytest_evalcases.judges.failures import classify, parse_duration
from pytest_evalcases.judges.pacing import LEARNT_CUT, TokenBucket
from pytest_evalcases.judges.usage import JudgeStats


# ---- the endpoint's rules, on a fake clock -----------------------------------------------------
class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        await asyncio.sleep(0)


class HTTPStatusError(Exception):
    def __init__(self, status: int, **headers: str) -> None:
        super().__init__(f"HTTP {status}")
        self.status_code = status
        self.headers = {name.replace("_", "-"): value for name, value in headers.items()}


def endpoint(clock: FakeClock, max_concurrency: int | None = 16, **kwargs: Any) -> Endpoint:
    return Endpoint(
        "http://judge.test/v1/chat/completions",
        max_concurrency=max_concurrency,
        stats=JudgeStats(),
        backoff=lambda n: 0.5 * 2 ** (n - 1),
        max_pause=60.0,
        sleep=clock.sleep,
        clock=clock,
        **kwargs,
    )


async def settle(request: Any, error: Exception | None = None) -> None:
    await request.__aexit__(type(error) if error else None, error, None)


@pytest.mark.asyncio
async def test_rate_limits_halve_concurrency_once_a_round() -> None:
    clock = FakeClock()
    point = endpoint(clock)
    requests = [point.request() for _ in range(16)]
    for request in requests:
        await request.__aenter__()
    for request in requests[:4]:  # four 429s of one round: one decrease
        await settle(request, HTTPStatusError(429, retry_after="2"))
    assert point.stats.concurrency == 8 and point.stats.rate_limited == 4
    assert point.pause_left() == pytest.approx(2.0)
    for request in requests[4:]:  # answered, but not a success that would raise the cap
        await settle(request, HTTPStatusError(500))

    clock.now += 2  # the pause is over: at most 8 go out at once now
    admitted = [asyncio.create_task(point.request().__aenter__()) for _ in range(10)]
    await asyncio.sleep(0)
    assert sum(task.done() for task in admitted) == 8
    for task in admitted:
        task.cancel()


@pytest.mark.asyncio
async def test_successes_raise_concurrency_again_one_slot_per_round() -> None:
    clock = FakeClock()
    point = endpoint(clock, max_concurrency=4)
    request = point.request()
    await request.__aenter__()
    await settle(request, HTTPStatusError(429, retry_after="0"))  # one in flight: down to 1
    assert point.stats.concurrency == 1
    caps = []
    for _ in range(6):  # +1/cap a success: 1 -> 2 -> 2.5 -> 2.9 -> 3.24 -> 3.55 -> 3.83
        request = point.request()
        await request.__aenter__()
        await settle(request)
        caps.append(point.stats.concurrency)
    assert caps == [2, 2, 2, 3, 3, 3]


@pytest.mark.asyncio
async def test_a_pause_holds_requests_admitted_before_and_after_the_rate_limited_reply() -> None:
    clock = FakeClock()
    point = endpoint(clock)
    first = point.request()
    await first.__aenter__()
    await settle(first, HTTPStatusError(429, retry_after="3"))
    started = clock.now
    second = point.request()
    await second.__aenter__()  # waits out the pause on the fake clock
    assert clock.now - started == pytest.approx(3.0)
    await settle(second)
    assert point.stats.rate_limit_wait == pytest.approx(3.0)
    # one request was in flight: halved to 1, then one success raised it to 2
    assert point.stats.rate_limit_summary() == (
        "judge rate-limited: 1 replies, waited 3 s, concurrency 16 -> 2"
    )
    assert endpoint(clock).stats.rate_limit_summary() is None  # nothing held back, no line


def test_token_bucket_paces_reservations_and_a_refusal_empties_it() -> None:
    bucket = TokenBucket(60, now=0.0)  # one a second, at most one at once
    assert [bucket.reserve(1, 0.0) for _ in range(3)] == [0.0, 1.0, 2.0]
    assert bucket.reserve(1, 10.0) == 0.0  # refilled (to its capacity, not beyond)
    assert bucket.reserve(1, 10.0) == 1.0
    bucket.empty_until(20.0)  # the provider's pause ends at 20: nothing before, then paced
    assert bucket.reserve(1, 12.0) == pytest.approx(10.0)  # behind the one reserved at 10


@pytest.mark.asyncio
async def test_tokens_are_estimated_from_the_prompt_and_corrected_from_usage() -> None:
    clock = FakeClock()
    point = endpoint(clock, limits=RateLimits(tpm=6000))  # 100 tokens a second
    assert point.pacing.estimate_tokens(400) == 200  # ~4 characters a token, ~100 for the reply
    request = point.request(400)
    ticket = await request.__aenter__()
    assert ticket.reserved_tokens == 200
    ticket.used(50, 10)  # the reply's usage: 60 tokens, not 200
    await settle(request)
    tokens = point.pacing.tokens
    assert tokens is not None and tokens.level == pytest.approx(100 - 200 + 140)
    assert point.pacing.estimate_tokens(400) < 200  # learnt: fewer a character, shorter replies

    big = point.request(4000)  # ~1,000 tokens: waits for most of them, at 100 a second
    started = clock.now
    await big.__aenter__()
    assert clock.now - started > 5
    await settle(big)


@pytest.mark.asyncio
async def test_announced_limits_are_adopted_and_the_lower_limit_wins() -> None:
    clock = FakeClock()
    point = endpoint(clock, limits=RateLimits(rpm=600, shares=2))
    request = point.request()
    ticket = await request.__aenter__()
    ticket.headers = {
        "x-ratelimit-limit-requests": "3000",
        "x-ratelimit-limit-tokens": "90000",
        "x-ratelimit-remaining-tokens": "40000",
    }
    await settle(request)
    requests, tokens = point.pacing.requests, point.pacing.tokens
    assert requests is not None and requests.per_minute == 300  # 600 / 2 workers
    assert tokens is not None and tokens.per_minute == 45000
    assert tokens.level == pytest.approx(750)  # one second of 45,000 a minute
    assert point.describe_limits() == (
        "--eval-rpm 600, 3000 requests/min (x-ratelimit-limit-requests), 90000 tokens/min "
        "(x-ratelimit-limit-tokens), shared by 2 xdist workers"
    )
    request = point.request()
    ticket = await request.__aenter__()
    ticket.headers = {"x-ratelimit-limit-requests": "200"}
    await settle(request)
    assert point.pacing.requests is not None and point.pacing.requests.per_minute == 100


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("20ms", 0.02),
        ("1s", 1.0),
        ("6m0s", 360.0),
        ("1m30.5s", 90.5),
        ("2h", 7200.0),
        ("0.25", 0.25),
        ("soon", None),
        ("", None),
    ],
)
def test_reset_durations(text: str, seconds: float | None) -> None:
    assert parse_duration(text) == (pytest.approx(seconds) if seconds is not None else None)


def test_which_replies_are_rate_limited_and_how_long_they_ask_to_wait() -> None:
    assert classify(HTTPStatusError(429)).kind == "rate_limited"
    assert classify(HTTPStatusError(503, retry_after="4")).retry_after == 4.0
    assert classify(HTTPStatusError(503)).kind == "transient"
    reset = HTTPStatusError(
        429,
        x_ratelimit_reset_requests="1m0s",
        x_ratelimit_reset_tokens="250ms",
        x_ratelimit_remaining_tokens="0",
    )
    assert classify(reset).retry_after == 0.25  # the exhausted limit's reset, not the other's


def test_xdist_workers_share_the_client_side_limits() -> None:
    judge = make_judge(
        "openai:gpt-4o-mini",
        rate_limits=RateLimits(rpm=400),
        environ={"OPENAI_API_KEY": "k", "PYTEST_XDIST_WORKER_COUNT": "4"},
    )
    point = judge._chat_client().endpoint
    assert point.pacing.requests is not None and point.pacing.requests.per_minute == 100
    assert point.describe_limits() == "--eval-rpm 400, shared by 4 xdist workers"


@pytest.mark.asyncio
async def test_a_429_sets_a_pace_from_the_served_rate_and_new_requests_keep_to_it() -> None:
    clock = FakeClock()
    point = endpoint(clock)
    for _ in range(20):  # served 10 a second, no limit announced
        request = point.request()
        await request.__aenter__()
        clock.now += 0.1
        await settle(request)
    refused = point.request()
    await refused.__aenter__()
    await settle(refused, HTTPStatusError(429, retry_after="1"))
    served = 20 / (clock.now - 100.1) * 60  # per minute, over the window of successes
    assert point.learnt_rpm == pytest.approx(LEARNT_CUT * served)  # halved at once
    assert "requests/min (learnt from 429s)" in point.describe_limits()

    learnt, starts = point.learnt_rpm, []
    for _ in range(6):  # one in flight at a time (the 429 halved the cap to 1)
        request = point.request()
        await request.__aenter__()
        starts.append(clock.now)
        await settle(request)
    gaps = [later - earlier for earlier, later in zip(starts, starts[1:], strict=False)]
    assert starts[0] >= 100.1 + 2.0 + 1.0  # after the pause
    # one at a time, at the pace: from the cut one back towards the served rate, never faster
    assert gaps == sorted(gaps, reverse=True)
    assert all(60 / served * 0.99 <= gap <= 60 / learnt * 1.01 for gap in gaps), gaps


@pytest.mark.asyncio
async def test_refusals_of_requests_sent_before_the_cut_do_not_cut_the_pace_again() -> None:
    clock = FakeClock()
    point = endpoint(clock)
    for _ in range(20):  # served 10 a second
        request = point.request()
        await request.__aenter__()
        clock.now += 0.1
        await settle(request)
    in_flight = [point.request() for _ in range(3)]  # sent together, refused together
    for request in in_flight:
        await request.__aenter__()
    for request in in_flight:
        await settle(request, HTTPStatusError(429, retry_after="0.05"))
    assert point.learnt_rpm == pytest.approx(LEARNT_CUT * 20 / 1.9 * 60)  # halved once


@pytest.mark.asyncio
async def test_the_learnt_pace_climbs_back_and_gives_way_to_a_limit_in_force() -> None:
    clock = FakeClock()
    point = endpoint(clock, limits=RateLimits(rpm=600))
    for _ in range(10):
        request = point.request()
        await request.__aenter__()
        clock.now += 0.2
        await settle(request)
    refused = point.request()
    await refused.__aenter__()
    await settle(refused, HTTPStatusError(429, retry_after="0"))
    learnt = point.learnt_rpm
    assert learnt is not None and learnt < 600
    clock.now += 2.0
    request = point.request()
    await request.__aenter__()
    await settle(request)
    assert point.learnt_rpm == pytest.approx(learnt / LEARNT_CUT)  # back where it was cut
    clock.now += 60.0  # long enough to pass --eval-rpm 600: that limit paces alone again
    request = point.request()
    await request.__aenter__()
    await settle(request)
    assert point.learnt_rpm is None


@pytest.mark.asyncio
async def test_a_spent_rate_limit_budget_fails_requests_even_after_the_pause_is_over() -> None:
    clock = FakeClock()
    point = endpoint(clock, rate_limit_wait=5.0)
    request = point.request()
    await request.__aenter__()
    await settle(request, HTTPStatusError(429, retry_after="2"))
    clock.now += 6.0  # the pause is long over, no reply got through, the budget is spent
    with pytest.raises(JudgeError, match=r"would pass the 5 s budget"):
        await point.request().__aenter__()
    point2 = endpoint(clock, rate_limit_wait=5.0)  # a success starts the budget afresh
    first = point2.request()
    await first.__aenter__()
    await settle(first, HTTPStatusError(429, retry_after="1"))
    clock.now += 1.0
    second = point2.request()
    await second.__aenter__()
    await settle(second)
    clock.now += 10.0
    third = point2.request()
    await third.__aenter__()
    await settle(third)
