"""Broken judges (issue 14, rows 12-14): an empty extraction and a score out of its scale are
judge errors, never scores; a judge endpoint that cannot be reached trips a breaker; retry count,
backoff and timeout come from documented environment settings.

Through deepeval's real metric code against the loopback judge server (tests/judge_server.py),
in process and in `pytest --live` subprocesses. No network beyond 127.0.0.1, no real key.
"""

from __future__ import annotations

import asyncio
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from evalhelpers import Project, assert_not_aborted, error_block, output, run_live_openai
from judge_server import (
    Fault,
    JudgeServer,
    judge_maker_fixture,
    judge_server_fixture,
    use_judge_server,
)

from pytest_evalcases.judges import (
    JudgeError,
    JudgeInput,
    RetryPolicy,
    make_judge,
)

judge_server = judge_server_fixture()
judges = judge_maker_fixture()

CASE = JudgeInput(
    input="What is the capital of France?",
    answer="Paris is the capital of France. It has many museums.",
    reference="Paris is the capital of France.",
    context=["Paris is the capital of France.", "France is in Europe."],
)
ACCURATE = JudgeInput("What is the capital of France?", "Paris.", "Paris", [])
EVERY_PROMPT = ""  # a rule phrase found in every prompt


@pytest.fixture
def server(judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch) -> JudgeServer:
    return use_judge_server(monkeypatch, judge_server)


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A loopback port that refuses connections: bound, never listening (so no other test can
    take it while this one runs)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


# ---- row 12: a schema-valid but empty reply ---------------------------------------------------
@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("stage", "emptied", "message"),
    [
        ("faithfulness", "faithfulness_claims", "no claims for a non-empty answer"),
        ("faithfulness", "faithfulness_truths", "no truths for a non-empty context"),
        ("faithfulness", "faithfulness_verdicts", "no verdicts for a non-empty list of 2 claims"),
        ("answer_relevancy", "answer_relevancy_statements", "no statements for a non-empty answer"),
        (
            "answer_relevancy",
            "answer_relevancy_verdicts",
            "no verdicts for a non-empty list of 2 statements",
        ),
        ("contextual_recall", "recall_verdicts", "no verdicts for a non-empty reference"),
        ("contextual_precision", "precision_verdicts", "no verdicts for a non-empty context"),
        ("contextual_relevancy", "relevancy_verdicts", "no verdicts for a non-empty passage (1 of"),
    ],
)
async def test_an_empty_extraction_is_a_judge_error_never_a_score(
    server: JudgeServer, judges: Any, stage: str, emptied: str, message: str
) -> None:
    server.rules = [({emptied}, EVERY_PROMPT, Fault("empty"))]
    judge = judges()
    with pytest.raises(JudgeError, match=re.escape(f"the judge returned {message}")):
        await judge.evaluate(stage, CASE, {})
    assert judge.stats.failures == 1
    assert any(r.kind == emptied and r.fault == "empty" for r in server.requests)


@pytest.mark.asyncio
async def test_an_abstaining_answer_may_hold_no_claims(server: JudgeServer, judges: Any) -> None:
    server.rules = [({"faithfulness_claims"}, EVERY_PROMPT, Fault("empty"))]
    abstains = JudgeInput(CASE.input, "The documents do not say.", None, CASE.context)
    verdict = await judges().evaluate("faithfulness", abstains, {})
    assert verdict["score"] == 1.0 and verdict["details"]["claims"] == []


# ---- row 13: a score outside its scale ----------------------------------------------------------
@pytest.mark.asyncio
async def test_a_geval_score_outside_its_scale_is_a_judge_error(
    server: JudgeServer, judges: Any
) -> None:
    server.rules = [({"geval_score"}, EVERY_PROMPT, Fault("out_of_scale"))]
    with pytest.raises(
        JudgeError,
        match=r"the judge returned score 1000 for correctness, outside "
        r"GEval's 0-10 scale; .* never clamped",
    ):
        await judges().evaluate("correctness", CASE, {})


# ---- rows 12 and 13 end to end: recorded as judge errors, not as passes ------------------------
SYSTEM = """\
def run(case):
    return {"answer": case["say"], "context": ["Paris is the capital of France."]}
"""


def judged_project(root: Path, stages: list[str], cases: list[dict[str, Any]]) -> Project:
    project = Project(root).write_base()
    project.write_text("saying.py", SYSTEM)
    project.write_suite(
        {"name": "judged", "system": "saying:run", "stages": stages, "cases": cases}
    )
    return project


def test_empty_and_out_of_scale_replies_are_recorded_as_judge_errors(
    tmp_path: Path, judge_server: JudgeServer
) -> None:
    judge_server.rules = [
        ({"faithfulness_claims"}, "Rome", Fault("empty")),
        ({"geval_score"}, "Berlin", Fault("out_of_scale")),
    ]
    cases = [
        {
            "id": city.lower(),
            "input": "Which city?",
            "say": f"{city} is a city.",
            "reference": f"{city} is a city.",
        }
        for city in ("Paris", "Rome", "Berlin")
    ]
    project = judged_project(tmp_path, ["faithfulness", "correctness"], cases)

    result = run_live_openai(project, judge_server.base_url)

    assert_not_aborted(result)
    result.assert_outcomes(passed=1, errors=2)  # not evaluated: errors, never failures or passes
    rome, berlin = error_block(result, "judged::rome"), error_block(result, "judged::berlin")
    assert "faithfulness (judge error:" in rome and "no claims for a non-empty answer" in rome
    assert "correctness (judge error:" in berlin and "score 1000" in berlin
    # Neither was recorded as a pass: the trace is kept, the failed verdict is pending.
    rome_verdict = project.cassette("judged", "rome")["verdicts"]["faithfulness"]
    berlin_verdict = project.cassette("judged", "berlin")["verdicts"]["correctness"]
    for verdict in (rome_verdict, berlin_verdict):
        assert verdict["pending"] is True and verdict["score"] is None, verdict
    assert "no claims for a non-empty answer" in rome_verdict["error"]
    assert project.cassette("judged", "rome")["verdicts"]["correctness"].get("pending") is None


# ---- row 14: a judge that cannot be reached --------------------------------------------------
@pytest.mark.asyncio
async def test_a_refused_endpoint_trips_the_breaker_and_later_verdicts_fail_at_once(
    refused_port: int, monkeypatch: pytest.MonkeyPatch, judges: Any
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{refused_port}/v1")
    judge = judges(retry=RetryPolicy())  # the default backoff: 0.5 s, 1 s, 2 s, ...
    started = time.monotonic()
    outcomes = await asyncio.gather(
        *(judge.evaluate("answer_accuracy", ACCURATE, {}) for _ in range(40)),
        return_exceptions=True,
    )
    assert all(isinstance(outcome, JudgeError) for outcome in outcomes)
    endpoint = f"http://127.0.0.1:{refused_port}/v1/chat/completions"
    tripped = [str(o) for o in outcomes if "is unreachable" in str(o)]
    assert len(tripped) >= 30, {str(o)[:120] for o in outcomes}
    assert (
        f"judge endpoint {endpoint} is unreachable: 5 connection failures or timeouts in a row"
    ) in tripped[0]
    assert judge.stats.calls <= 16 + 5  # the first round in flight, then nothing more
    assert time.monotonic() - started < 5  # not 6 attempts x 15.5 s of backoff

    started = time.monotonic()
    with pytest.raises(JudgeError, match="is unreachable"):  # and for the rest of the run
        await judge.evaluate("faithfulness", CASE, {})
    assert time.monotonic() - started < 1


@pytest.mark.asyncio
async def test_timeouts_trip_the_breaker_and_any_reply_resets_its_count(
    server: JudgeServer, judges: Any
) -> None:
    judge = judges(retry=RetryPolicy(max_attempts=1), timeout=0.2)
    server.fail_next(*[Fault("hang", seconds=1.0)] * 4)
    for _ in range(4):
        with pytest.raises(JudgeError, match="no reply within 0.2 s"):
            await judge.evaluate("answer_accuracy", ACCURATE, {})
    server.fail_next("500")  # an HTTP reply, even an error, is not "unreachable"
    with pytest.raises(JudgeError, match="HTTP 500"):
        await judge.evaluate("answer_accuracy", ACCURATE, {})
    server.fail_next(*[Fault("hang", seconds=1.0)] * 5)
    for _ in range(5):
        with pytest.raises(JudgeError, match="no reply within 0.2 s"):
            await judge.evaluate("answer_accuracy", ACCURATE, {})
    before = len(server.requests)
    with pytest.raises(JudgeError, match="5 connection failures or timeouts in a row"):
        await judge.evaluate("answer_accuracy", ACCURATE, {})
    assert len(server.requests) == before == 10  # the tripped breaker sends nothing


@pytest.mark.asyncio
async def test_the_breaker_setting(
    server: JudgeServer, judges: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALCASES_JUDGE_BREAKER", "0")  # never
    judge = judges(retry=RetryPolicy(max_attempts=1))
    server.fail_next(*["reset"] * 7)
    for _ in range(7):
        with pytest.raises(JudgeError, match="failed after 1 attempts"):
            await judge.evaluate("answer_accuracy", ACCURATE, {})
    assert (await judge.evaluate("answer_accuracy", ACCURATE, {}))["label"] == "CORRECT"


def test_a_suite_of_100_cases_against_a_refused_port_ends_in_under_30_s(
    tmp_path: Path, refused_port: int
) -> None:
    cases = [
        {
            "id": f"c{i}",
            "input": "Which city?",
            "say": "Paris is a city.",
            "reference": "Paris is a city.",
        }
        for i in range(100)
    ]
    project = judged_project(tmp_path, ["faithfulness", "answer_accuracy"], cases)

    result = run_live_openai(project, f"http://127.0.0.1:{refused_port}/v1")

    assert_not_aborted(result)
    result.assert_outcomes(errors=100)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert result.duration < 30, result.duration
    endpoint = f"judge endpoint http://127.0.0.1:{refused_port}/v1/chat/completions is unreachable"
    assert output(result).count(endpoint) >= 90, output(result)[-3000:]
    # The system runs were paid for: their traces are saved, every verdict pending.
    for i in (0, 57, 99):
        verdicts = project.cassette("judged", f"c{i}")["verdicts"]
        assert {name: v["pending"] for name, v in verdicts.items()} == {
            "faithfulness": True,
            "answer_accuracy": True,
        }


# ---- retry count, backoff and timeout from the environment ----------------------------------
@pytest.mark.asyncio
async def test_retries_and_backoff_come_from_the_environment(
    server: JudgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALCASES_JUDGE_RETRIES", "2")
    monkeypatch.setenv("EVALCASES_JUDGE_BACKOFF", "0.2")
    judge = make_judge("openai:gpt-4o-mini")
    server.fail_next(*["500"] * 3)
    try:
        with pytest.raises(JudgeError, match="failed after 3 attempts"):
            await judge.evaluate("answer_accuracy", ACCURATE, {})
    finally:
        await judge.aclose()
    first, second, third = (r.received for r in server.requests)
    assert 0.2 <= second - first < 0.2 * 1.1 + 0.15  # 0.2 s, then doubled
    assert 0.4 <= third - second
