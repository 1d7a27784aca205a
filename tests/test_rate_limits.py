"""Recording under a provider's rate limit (issue 15): back-pressure instead of errors, an
endpoint-wide pause, AIMD concurrency, client-side token buckets, the wait budget, the live
summary line.

The endpoint's own rules run against a fake clock; the judge runs through deepeval's real metric
code against the loopback judge server (tests/judge_server.py) enforcing a limit, in process and
in `pytest --live` subprocesses. No network beyond 127.0.0.1, no real key.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from evalhelpers import INI, Project, assert_not_aborted, error_block, output, run_live_openai
from judge_server import (
    Fault,
    JudgeServer,
    RateLimit,
    judge_maker_fixture,
    judge_server_fixture,
    use_judge_server,
)

from pytest_evalcases.judges import (
    JudgeError,
    JudgeInput,
    RateLimits,
    RetryPolicy,
    make_judge,
)
from pytest_evalcases.judges.endpoint import Endpoint, TokenBucket
from pytest_evalcases.judges.failures import classify, parse_duration
from pytest_evalcases.judges.usage import JudgeStats
from pytest_evalcases.session import get_session

judge_server = judge_server_fixture()
judges = judge_maker_fixture()

ACCURATE = JudgeInput("What is the capital of France?", "Paris.", "Paris", [])
FAITHFUL = JudgeInput("What is the capital of France?", "Paris is the capital of France.",
                      "Paris", ["Paris is the capital of France."])
SUMMARY = re.compile(r"judge rate-limited: (\d+) replies, waited (\d+) s, concurrency (\d+) -> "
                     r"(\d+)")


@pytest.fixture
def server(judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch) -> JudgeServer:
    return use_judge_server(monkeypatch, judge_server)


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
    return Endpoint("http://judge.test/v1/chat/completions", max_concurrency=max_concurrency,
                    stats=JudgeStats(), backoff=lambda n: 0.5 * 2 ** (n - 1), max_pause=60.0,
                    sleep=clock.sleep, clock=clock, **kwargs)


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
        "judge rate-limited: 1 replies, waited 3 s, concurrency 16 -> 2")
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
    assert point.estimate_tokens(400) == 200  # ~4 characters a token, ~100 for the reply
    request = point.request(400)
    ticket = await request.__aenter__()
    assert ticket.reserved_tokens == 200
    ticket.used(50, 10)  # the reply's usage: 60 tokens, not 200
    await settle(request)
    assert point._tokens is not None and point._tokens.level == pytest.approx(100 - 200 + 140)
    assert point.estimate_tokens(400) < 200  # learnt: fewer tokens a character, shorter replies

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
    ticket.headers = {"x-ratelimit-limit-requests": "3000", "x-ratelimit-limit-tokens": "90000",
                      "x-ratelimit-remaining-tokens": "40000"}
    await settle(request)
    assert point._requests is not None and point._requests.per_minute == 300  # 600 / 2 workers
    assert point._tokens is not None and point._tokens.per_minute == 45000
    assert point._tokens.level == pytest.approx(750)  # one second of 45,000 a minute
    assert point.describe_limits() == (
        "--eval-rpm 600, 3000 requests/min (x-ratelimit-limit-requests), 90000 tokens/min "
        "(x-ratelimit-limit-tokens), shared by 2 xdist workers")
    request = point.request()
    ticket = await request.__aenter__()
    ticket.headers = {"x-ratelimit-limit-requests": "200"}
    await settle(request)
    assert point._requests.per_minute == 100


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("20ms", 0.02), ("1s", 1.0), ("6m0s", 360.0), ("1m30.5s", 90.5), ("2h", 7200.0),
     ("0.25", 0.25), ("soon", None), ("", None)],
)
def test_reset_durations(text: str, seconds: float | None) -> None:
    assert parse_duration(text) == (pytest.approx(seconds) if seconds is not None else None)


def test_which_replies_are_rate_limited_and_how_long_they_ask_to_wait() -> None:
    assert classify(HTTPStatusError(429)).kind == "rate_limited"
    assert classify(HTTPStatusError(503, retry_after="4")).retry_after == 4.0
    assert classify(HTTPStatusError(503)).kind == "transient"
    reset = HTTPStatusError(429, x_ratelimit_reset_requests="1m0s",
                            x_ratelimit_reset_tokens="250ms", x_ratelimit_remaining_tokens="0")
    assert classify(reset).retry_after == 0.25  # the exhausted limit's reset, not the other's


# ---- through deepeval's metrics against the loopback server ----------------------------------
@pytest.mark.asyncio
async def test_rate_limited_replies_do_not_use_up_the_error_retries(
    server: JudgeServer, judges: Any
) -> None:
    server.fail_next(*[Fault("429", retry_after="0.01")] * 8, Fault("503", retry_after="0.01"))
    judge = judges()
    verdict = await judge.evaluate("answer_accuracy", ACCURATE, {})
    assert verdict["label"] == "CORRECT" and verdict["calls"] == 10  # 9 refusals, 6 attempts
    assert judge.stats.rate_limited == 9
    server.fail_next(*["500"] * 6)  # errors still give up after 6 attempts
    with pytest.raises(JudgeError, match="failed after 6 attempts"):
        await judge.evaluate("answer_accuracy", ACCURATE, {})


@pytest.mark.asyncio
async def test_retry_after_pauses_every_request_to_the_endpoint(
    server: JudgeServer, judges: Any
) -> None:
    server.fail_next(Fault("429", retry_after="0.3"))
    judge = judges(max_concurrency=1)
    verdicts = await asyncio.gather(*(judge.evaluate("answer_accuracy", ACCURATE, {})
                                      for _ in range(6)))
    assert [v["label"] for v in verdicts] == ["CORRECT"] * 6
    refused, *later = server.requests
    assert refused.status == 429 and len(later) == 6
    # not only its own retry: the other verdicts' first requests waited out the pause too
    assert min(r.received for r in later) >= refused.answered + 0.29


@pytest.mark.asyncio
async def test_reset_headers_pause_the_endpoint_when_there_is_no_retry_after(
    server: JudgeServer, judges: Any
) -> None:
    server.fail_next(Fault("429", headers=(("x-ratelimit-reset-requests", "250ms"),
                                           ("x-ratelimit-remaining-requests", "0"))))
    verdict = await judges().evaluate("answer_accuracy", ACCURATE, {})
    assert verdict["calls"] == 2
    first, second = server.requests
    assert second.received - first.answered >= 0.24


@pytest.mark.asyncio
async def test_nothing_is_lost_and_back_pressure_is_honoured_under_a_server_limit(
    server: JudgeServer, judges: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A provider that announces nothing: 429s with Retry-After are all the client learns."""
    server.latency = 0.01
    server.rate_limit = RateLimit(1200, burst_seconds=0.25, announce=False, retry_after="0.3")
    # When requests leave the endpoint's gate, and the pauses refusals set (client-side times:
    # the server's own clock also counts requests that were on their way)
    sent: list[float] = []
    pauses: list[tuple[float, float]] = []
    admit, limited = Endpoint._admit, Endpoint._rate_limited

    async def admit_noted(self: Endpoint, prompt_chars: int) -> Any:
        ticket = await admit(self, prompt_chars)
        sent.append(time.monotonic())
        return ticket

    def limited_noted(self: Endpoint, ticket: Any, failure: Any) -> None:
        limited(self, ticket, failure)
        pauses.append((time.monotonic(), self._paused_until))

    monkeypatch.setattr(Endpoint, "_admit", admit_noted)
    monkeypatch.setattr(Endpoint, "_rate_limited", limited_noted)
    judge = judges(max_concurrency=8)
    verdicts = await asyncio.gather(
        *(judge.evaluate(stage, FAITHFUL, {}) for stage in ["faithfulness", "answer_accuracy"] * 6)
    )
    assert all(v["score"] == 1.0 for v in verdicts)  # every verdict, none lost
    refused = [r for r in server.requests if r.status == 429]
    assert refused and judge.stats.rate_limited == len(refused) == len(pauses)
    assert judge.stats.concurrency < 8  # halved on the refusals (and not all the way back)
    assert all(until - at >= 0.29 for at, until in pauses)  # each paused for its Retry-After
    into_a_pause = [t for t in sent if any(at < t < until for at, until in pauses)]
    assert not into_a_pause, (pauses, sent)
    summary = judge.stats.rate_limit_summary()
    assert summary is not None and summary.startswith(f"judge rate-limited: {len(refused)} replies")


@pytest.mark.asyncio
async def test_announced_limits_pace_the_requests_so_few_are_refused(
    server: JudgeServer, judges: Any
) -> None:
    server.rate_limit = RateLimit(1200)  # 20 a second, 20 at once; announced
    judge = judges(max_concurrency=8)
    verdicts = await asyncio.gather(*(judge.evaluate("answer_accuracy", ACCURATE, {})
                                      for _ in range(40)))
    assert [v["label"] for v in verdicts] == ["CORRECT"] * 40
    refused = sum(r.status == 429 for r in server.requests)
    assert refused <= 8, refused  # at most the first round, sent before the limit was known
    served = sorted(r.received for r in server.requests if r.status == 200)
    assert served[-1] - served[0] >= (40 - 20) / 20 * 0.9  # paced at the limit, not faster


@pytest.mark.asyncio
async def test_client_side_rpm_paces_requests_before_any_refusal(
    server: JudgeServer, judges: Any
) -> None:
    judge = judges(rate_limits=RateLimits(rpm=600))  # 10 a second, at most 10 at once
    await asyncio.gather(*(judge.evaluate("answer_accuracy", ACCURATE, {}) for _ in range(20)))
    arrivals = sorted(r.received for r in server.requests)
    assert arrivals[-1] - arrivals[0] >= 0.9  # the last 10 waited for their turn
    assert judge.stats.rate_limited == 0 and judge.stats.rate_limit_wait > 0
    assert judge.stats.rate_limit_summary().startswith("judge rate-limited: 0 replies, waited ")


@pytest.mark.asyncio
async def test_a_limit_that_never_lifts_ends_within_the_wait_budget(
    server: JudgeServer, judges: Any
) -> None:
    server.rate_limit = RateLimit(0, retry_after="0.1")  # refuses everything, for good
    judge = judges(retry=RetryPolicy(base_delay=0.001, rate_limit_wait=0.5),
                       rate_limits=RateLimits(rpm=6000))
    started = time.monotonic()
    with pytest.raises(JudgeError) as caught:
        await judge.evaluate("faithfulness", FAITHFUL, {})
    message = str(caught.value)
    assert "still rate-limited after" in message and "the next wait would pass the 0.5 s " \
        "budget (EVALCASES_JUDGE_RATE_LIMIT_WAIT sets it)" in message, message
    assert "limits in force: --eval-rpm 6000" in message
    assert "HTTP 429: Rate limit reached for requests (rate_limit_exceeded)" in message
    assert time.monotonic() - started < 0.5 + 1.0  # the budget, not 600 s
    assert judge.stats.failures == 1 and judge.stats.rate_limited >= 4


# ---- options and the live summary, in pytest --live subprocesses ------------------------------
ANSWERING_SYSTEM = '''\
def run(case):
    return {"answer": case["input"].replace("Where is", "It is in").rstrip("?") + ".",
            "context": [case["input"].replace("Where is", "It is in").rstrip("?") + "."]}
'''


def limited_project(root: Path, n: int) -> Project:
    project = Project(root).write_base()
    project.write_text("answering.py", ANSWERING_SYSTEM)
    project.write_suite({
        "name": "limited", "system": "answering:run",
        "stages": ["faithfulness", "answer_accuracy"],
        "cases": [{"id": f"c{i}", "input": f"Where is topic {i}?",
                   "reference": f"It is in topic {i}."} for i in range(n)],
    })
    return project


def test_a_live_run_under_a_rate_limit_records_every_case_and_says_what_it_cost(
    tmp_path: Path, judge_server: JudgeServer
) -> None:
    judge_server.rate_limit = RateLimit(1200, burst_seconds=0.25, announce=False,
                                        retry_after="0.2")
    project = limited_project(tmp_path, 10)

    result = run_live_openai(project, judge_server.base_url, "--eval-concurrency", "4")

    assert_not_aborted(result)
    result.assert_outcomes(passed=10)
    cassettes = (project.root / "cassettes" / "limited").glob("*.json")
    assert len([path for path in cassettes if not path.name.endswith(".http.json")]) == 10
    refused = sum(r.status == 429 for r in judge_server.requests)
    match = next(filter(None, map(SUMMARY.search, result.outlines)), None)
    assert match is not None, output(result)
    replies, _, start, _ = map(int, match.groups())
    assert (replies, start) == (refused, 4) and refused > 0
    doc = json.loads((project.root / "cassettes" / "limited" / "c0.json").read_text())
    assert all("error" not in v and v["score"] == 1.0 for v in doc["verdicts"].values())


def test_a_limit_that_never_lifts_fails_each_case_with_a_judge_error(
    tmp_path: Path, judge_server: JudgeServer
) -> None:
    judge_server.rate_limit = RateLimit(0, retry_after="0.2")
    project = limited_project(tmp_path, 3)

    result = run_live_openai(project, judge_server.base_url, EVALCASES_JUDGE_RATE_LIMIT_WAIT="1")

    assert_not_aborted(result)
    result.assert_outcomes(errors=3)
    block = error_block(result, "limited::c0")
    assert "still rate-limited after" in block and "EVALCASES_JUDGE_RATE_LIMIT_WAIT" in block
    verdicts = project.cassette("limited", "c0")["verdicts"]  # the trace kept, no verdict made
    assert all(v["pending"] and v["score"] is None for v in verdicts.values()), verdicts
    assert result.duration < 60  # the budget, not 600 s a request


@pytest.mark.parametrize(
    ("args", "env", "ini", "expected"),
    [
        (["--eval-rpm", "120"], {"EVALCASES_RPM": "60"}, "eval_rpm = 30", (120.0, None)),
        ([], {"EVALCASES_RPM": "60", "EVALCASES_TPM": "9000"}, "eval_rpm = 30", (60.0, 9000.0)),
        ([], {}, "eval_rpm = 30\neval_tpm = 40000", (30.0, 40000.0)),
        ([], {}, "", (None, None)),
    ],
    ids=["flag", "environment", "ini", "none"],
)
def test_rate_options_flag_then_environment_then_ini(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, args: list[str],
    env: dict[str, str], ini: str, expected: tuple[float | None, float | None],
) -> None:
    for name in ("EVALCASES_RPM", "EVALCASES_TPM"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    pytester.makeini(INI + ini + "\n")
    state = get_session(pytester.parseconfigure(*args))
    assert (state.settings.judge_rpm, state.settings.judge_tpm) == expected


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [(["--eval-rpm", "0"], {}, "--eval-rpm must be a positive number, not 0.0"),
     ([], {"EVALCASES_TPM": "lots"}, "EVALCASES_TPM: 'lots' is not a number")],
)
def test_bad_rate_options_are_usage_errors(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, args: list[str],
    env: dict[str, str], message: str,
) -> None:
    for name in ("EVALCASES_RPM", "EVALCASES_TPM"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    pytester.makeini(INI)
    with pytest.raises(pytest.UsageError, match=re.escape(message)):
        pytester.parseconfigure(*args)


def test_xdist_workers_share_the_client_side_limits() -> None:
    judge = make_judge("openai:gpt-4o-mini", rate_limits=RateLimits(rpm=400),
                       environ={"OPENAI_API_KEY": "k", "PYTEST_XDIST_WORKER_COUNT": "4"})
    point = judge._chat_client().endpoint
    assert point._requests is not None and point._requests.per_minute == 100
    assert point.describe_limits() == "--eval-rpm 400, shared by 4 xdist workers"
