"""Recording under a provider's rate limit (issue 15): back-pressure instead of errors, an
endpoint-wide pause, AIMD concurrency, client-side token buckets, the wait budget, the live
summary line.

The judge runs through deepeval's real metric code against the loopback judge server
(tests/judge_server.py) enforcing a limit, in process and in `pytest --live` runs. No network
beyond 127.0.0.1, no real key. The endpoint's own rules, on a fake clock:
tests/unit/judges/test_endpoint.py; the options: tests/unit/test_options.py.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from evalhelpers import Project, assert_not_aborted, error_block, output, run_live_openai
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
)
from pytest_evalcases.judges.endpoint import Endpoint

judge_server = judge_server_fixture()
judges = judge_maker_fixture()

ACCURATE = JudgeInput("What is the capital of France?", "Paris.", "Paris", [])
FAITHFUL = JudgeInput(
    "What is the capital of France?",
    "Paris is the capital of France.",
    "Paris",
    ["Paris is the capital of France."],
)
SUMMARY = re.compile(
    r"judge rate-limited: (\d+) replies, waited (\d+) s, concurrency (\d+) -> "
    r"(\d+)"
)


@pytest.fixture
def server(judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch) -> JudgeServer:
    return use_judge_server(monkeypatch, judge_server)


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
    verdicts = await asyncio.gather(
        *(judge.evaluate("answer_accuracy", ACCURATE, {}) for _ in range(6))
    )
    assert [v["label"] for v in verdicts] == ["CORRECT"] * 6
    refused, *later = server.requests
    assert refused.status == 429 and len(later) == 6
    # not only its own retry: the other verdicts' first requests waited out the pause too
    assert min(r.received for r in later) >= refused.answered + 0.29


@pytest.mark.asyncio
async def test_reset_headers_pause_the_endpoint_when_there_is_no_retry_after(
    server: JudgeServer, judges: Any
) -> None:
    server.fail_next(
        Fault(
            "429",
            headers=(
                ("x-ratelimit-reset-requests", "250ms"),
                ("x-ratelimit-remaining-requests", "0"),
            ),
        )
    )
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
    caps: list[int] = []  # the cap right after each refusal
    admit, limited = Endpoint._admit, Endpoint._rate_limited

    async def admit_noted(self: Endpoint, prompt_chars: int) -> Any:
        ticket = await admit(self, prompt_chars)
        sent.append(time.monotonic())
        return ticket

    def limited_noted(self: Endpoint, ticket: Any, failure: Any) -> None:
        limited(self, ticket, failure)
        pauses.append((time.monotonic(), self._paused_until))
        caps.append(self.stats.concurrency)

    monkeypatch.setattr(Endpoint, "_admit", admit_noted)
    monkeypatch.setattr(Endpoint, "_rate_limited", limited_noted)
    judge = judges(max_concurrency=8)
    verdicts = await asyncio.gather(
        *(judge.evaluate(stage, FAITHFUL, {}) for stage in ["faithfulness", "answer_accuracy"] * 6)
    )
    assert all(v["score"] == 1.0 for v in verdicts)  # every verdict, none lost
    refused = [r for r in server.requests if r.status == 429]
    assert refused and judge.stats.rate_limited == len(refused) == len(pauses)
    # halved on the refusals (the learnt pace then keeps refusals so rare that the cap may
    # climb all the way back by the end)
    assert caps and min(caps) <= 4, caps
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
    verdicts = await asyncio.gather(
        *(judge.evaluate("answer_accuracy", ACCURATE, {}) for _ in range(40))
    )
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
    judge = judges(
        retry=RetryPolicy(base_delay=0.001, rate_limit_wait=0.5), rate_limits=RateLimits(rpm=6000)
    )
    started = time.monotonic()
    with pytest.raises(JudgeError) as caught:
        await judge.evaluate("faithfulness", FAITHFUL, {})
    message = str(caught.value)
    assert (
        "still rate-limited after" in message
        and "the next wait would pass the 0.5 s budget (EVALCASES_JUDGE_RATE_LIMIT_WAIT sets it)"
        in message
    ), message
    assert "limits in force: --eval-rpm 6000" in message
    assert "HTTP 429: Rate limit reached for requests (rate_limit_exceeded)" in message
    assert time.monotonic() - started < 0.5 + 1.0  # the budget, not 600 s
    assert judge.stats.failures == 1 and judge.stats.rate_limited >= 4


# ---- options and the live summary, in pytest --live subprocesses ------------------------------
ANSWERING_SYSTEM = """\
def run(case):
    return {"answer": case["input"].replace("Where is", "It is in").rstrip("?") + ".",
            "context": [case["input"].replace("Where is", "It is in").rstrip("?") + "."]}
"""


def limited_project(root: Path, n: int) -> Project:
    project = Project(root).write_base()
    project.write_text("answering.py", ANSWERING_SYSTEM)
    project.write_suite(
        {
            "name": "limited",
            "system": "answering:run",
            "stages": ["faithfulness", "answer_accuracy"],
            "cases": [
                {
                    "id": f"c{i}",
                    "input": f"Where is topic {i}?",
                    "reference": f"It is in topic {i}.",
                }
                for i in range(n)
            ],
        }
    )
    return project


def test_a_live_run_under_a_rate_limit_records_every_case_and_says_what_it_cost(
    tmp_path: Path, judge_server: JudgeServer
) -> None:
    # Refused in the first burst (4 at once, well over 20 a second). The client then paces at
    # the rate it was served at before the refusal: a bucket of 10, not 5, halves the run.
    judge_server.rate_limit = RateLimit(1200, burst_seconds=0.5, announce=False, retry_after="0.2")
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

    result = run_live_openai(project, judge_server.base_url, EVALCASES_JUDGE_RATE_LIMIT_WAIT="0.5")

    assert_not_aborted(result)
    result.assert_outcomes(errors=3)
    block = error_block(result, "limited::c0")
    assert "still rate-limited after" in block and "EVALCASES_JUDGE_RATE_LIMIT_WAIT" in block
    verdicts = project.cassette("limited", "c0")["verdicts"]  # the trace kept, no verdict made
    assert all(v["pending"] and v["score"] is None for v in verdicts.values()), verdicts
    assert result.duration < 60  # the budget, not 600 s a request
