"""Bounded: judges and rate limits (issue 21, "What to build" 8): a judge's text is capped where
the verdict is made, so every file that copies it is bounded too; a judge that keeps answering
429 gives up within EVALCASES_JUDGE_RATE_LIMIT_WAIT; after a 429 the client paces the start of
its next requests instead of sending them into the same limit.

Against the loopback judge server (tests/judge_server.py). No network beyond 127.0.0.1, no key.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from evalhelpers import Project, assert_not_aborted, run_live_openai
from judge_server import (
    Fault,
    JudgeServer,
    RateLimit,
    judge_maker_fixture,
    judge_server_fixture,
    use_judge_server,
)

from pytest_evalcases.domain.verdicts import REASON_LIMIT
from pytest_evalcases.judges import JudgeError, JudgeInput, RetryPolicy

judge_server = judge_server_fixture()
judges = judge_maker_fixture()

EVERY_PROMPT = ""  # a rule phrase found in every prompt
KINDS = ("accuracy", "faithfulness_truths", "faithfulness_claims", "faithfulness_verdicts")
ACCURATE = JudgeInput("What is the capital of France?", "Paris.", "Paris", [])
SYSTEM = """\
def run(case):
    return {"answer": case["say"], "context": ["Paris is the capital of France."]}
"""


@pytest.fixture
def server(judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch) -> JudgeServer:
    return use_judge_server(monkeypatch, judge_server)


def test_a_huge_judge_reason_is_clipped_in_the_verdict_and_every_report(
    tmp_path: Path, judge_server: JudgeServer
) -> None:
    """Break: a 10 MB judge `reason` made 477 MB of cassettes and a 500 MB results.json and
    dashboard (each verdict kept the judge's text whole, and every report copied it)."""
    huge = 3 * REASON_LIMIT  # three times the cap: 3 MB a reason
    judge_server.rules = [
        ({"accuracy", "geval_score"}, EVERY_PROMPT, Fault("long", size=huge)),
        ({"geval_steps"}, EVERY_PROMPT, Fault("long", size=5_000)),
    ]
    project = Project(tmp_path).write_base()
    project.write_text("saying.py", SYSTEM)
    project.write_suite(
        {
            "name": "judged",
            "system": "saying:run",
            "stages": ["answer_accuracy", "correctness"],
            "cases": [{"id": "c0", "input": "Which city?", "say": "Paris.", "reference": "Paris."}],
        }
    )
    out = tmp_path / "out"

    result = run_live_openai(project, judge_server.base_url, "--eval-report", str(out))

    assert_not_aborted(result)
    result.assert_outcomes(passed=1)
    note = f"… [clipped: {huge:,} characters, limit {REASON_LIMIT:,}]"
    verdicts = project.cassette("judged", "c0")["verdicts"]
    for stage in ("answer_accuracy", "correctness"):
        reason = verdicts[stage]["reason"]
        assert reason.endswith(note) and len(reason) == REASON_LIMIT + len(note), stage
    steps = verdicts["correctness"]["details"]["evaluation_steps"]
    assert steps and all("… [clipped: 5,000 characters, limit 300]" in s for s in steps), steps
    # Two reasons at the cap, each copied a bounded number of times: nowhere near 2 x 3 MB.
    bounded = 3 * (2 * REASON_LIMIT)
    files = [project.cassette_path("judged", "c0"), out / "results.json", out / "dashboard.html"]
    for path in files:
        assert path.stat().st_size < bounded, (path.name, path.stat().st_size)
        assert note in path.read_text(encoding="utf-8"), path.name
    assert json.loads((out / "results.json").read_text(encoding="utf-8"))


@pytest.mark.asyncio
async def test_a_429_without_retry_after_respects_the_rate_limit_wait_budget(
    server: JudgeServer, judges: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Break: with EVALCASES_JUDGE_RATE_LIMIT_WAIT=8 a judge that keeps answering 429 without
    Retry-After ran past 600 s (each request started a budget of its own at its first 429, after
    waiting in the endpoint's queue and pause, so the waits added up request after request)."""
    server.rules = [(set(KINDS), EVERY_PROMPT, Fault("429"))]  # no Retry-After, ever
    monkeypatch.setenv("EVALCASES_JUDGE_RATE_LIMIT_WAIT", "0.3")  # tiny: the test stays fast
    monkeypatch.setenv("EVALCASES_JUDGE_BACKOFF", "0.05")
    judge = judges(retry=RetryPolicy.from_env(os.environ))

    outcomes = await asyncio.gather(
        *(judge.evaluate("answer_accuracy", ACCURATE, {}) for _ in range(6)),
        return_exceptions=True,
    )

    budget = "would pass the 0.3 s budget (EVALCASES_JUDGE_RATE_LIMIT_WAIT sets it)"
    assert all(isinstance(o, JudgeError) and budget in str(o) for o in outcomes), outcomes
    assert all("HTTP 429" in str(o) for o in outcomes), outcomes
    # The budget is spent for the endpoint, not per request: a verdict asked for now waits for
    # nothing and sends nothing (before: it waited out the pause, was refused, and only then
    # started a budget of its own).
    sent = len(server.requests)
    with pytest.raises(JudgeError, match=re.escape(budget)):
        await judge.evaluate("answer_accuracy", ACCURATE, {})
    assert len(server.requests) == sent


@pytest.mark.asyncio
async def test_after_a_429_new_requests_start_at_the_pace_the_endpoint_was_served_at(
    server: JudgeServer, judges: Any
) -> None:
    """Break: recording under a provider's rate limit had 15-17% of requests refused (429) at
    3,000 RPM with 16 in flight: after a refusal the client only paused and halved its
    concurrency, then started its queued requests together into the limit again. Held by
    `benchmarks/ratelimit.py` (the share of 429s); here: the pace the client learns from a 429
    and keeps to afterwards, against the loopback server's limit (announced in no header)."""
    server.rate_limit = RateLimit(1200, announce=False, retry_after="0.2")  # 20 a second
    judge = judges(max_concurrency=8)

    verdicts = await asyncio.gather(
        *(judge.evaluate("answer_accuracy", ACCURATE, {}) for _ in range(60))
    )

    assert [v["label"] for v in verdicts] == ["CORRECT"] * 60  # nothing lost
    refused = [r for r in server.requests if r.refused]
    assert refused, "the server's limit never refused: the test proves nothing"
    endpoint = judge._chat_client().endpoint
    assert endpoint.learnt_rpm is not None
    assert "requests/min (learnt from 429s)" in endpoint.describe_limits()
    # The pace is what the server served, not the client's unlimited pace (8 in flight with no
    # latency: thousands a minute).
    assert endpoint.learnt_rpm < 3 * 1200, endpoint.learnt_rpm
