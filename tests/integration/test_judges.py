"""The LLM judge against a loopback server: deepeval's real metric code, retries, timeouts,
fallbacks, loading deepeval, concurrency and connection reuse. No network beyond 127.0.0.1, no
real key (the judges' pure rules: tests/unit/judges/)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from judge_server import POISON, Fault, JudgeServer, judge_server_fixture, use_judge_server
from judgehelpers import RecordingSleep, assert_verdict_shape

from pytest_evalcases.judges import (
    JUDGED_STAGES,
    Judge,
    JudgeAuthError,
    JudgeConfigError,
    JudgeError,
    JudgeInput,
    JudgeInputError,
    RetryPolicy,
    make_judge,
)
from pytest_evalcases.judges import deepeval_judge as deepeval_judge_module

judge_server = judge_server_fixture()


@pytest.fixture
def sleeper() -> RecordingSleep:
    return RecordingSleep()


@pytest.fixture
def openai_env(judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch) -> JudgeServer:
    return use_judge_server(monkeypatch, judge_server)


def llm_judge(sleeper: RecordingSleep, **kwargs: Any) -> Judge:
    retry = RetryPolicy(base_delay=0.001, max_delay=0.2, sleep=sleeper)
    return make_judge("openai:gpt-4o-mini", retry=retry, **kwargs)


# The server judges items with POISON as bad, so each score below follows from the prompt items.
CASE = JudgeInput(
    input="What is the capital of France?",
    answer=f"Paris is the capital of France. The moon is made of cheese {POISON}.",
    reference=f"Paris is the capital of France. Its population is {POISON} unknown.",
    context=[f"Berlin {POISON} is the capital of Germany.", "Paris is the capital of France."],
    rubric=(("names Paris as the capital", 1.0), (f"describes the moon {POISON}", 3.0)),
)

# stage -> (score, label, prompt kinds the server must have seen for it)
EXPECTED: dict[str, tuple[float, str | None, set[str]]] = {
    # claims [ok, poisoned] -> verdicts [yes, no]
    "faithfulness": (
        0.5,
        None,
        {
            "faithfulness_truths",
            "faithfulness_claims",
            "faithfulness_verdicts",
            "faithfulness_reason",
        },
    ),
    # reference sentences [ok, poisoned] -> [yes, no]
    "contextual_recall": (0.5, None, {"recall_verdicts", "recall_reason"}),
    # nodes [poisoned, ok] -> [no, yes]: precision@2 = 1/2
    "contextual_precision": (0.5, None, {"precision_verdicts", "precision_reason"}),
    # one verdict call per passage: [no], [yes]
    "contextual_relevancy": (0.5, None, {"relevancy_verdicts", "relevancy_reason"}),
    "answer_relevancy": (
        0.5,
        None,
        {"answer_relevancy_statements", "answer_relevancy_verdicts", "answer_relevancy_reason"},
    ),
    # poisoned answer -> GEval 2/10
    "correctness": (0.2, None, {"geval_steps", "geval_score"}),
    "context_completeness": (0.0, "INSUFFICIENT", {"completeness"}),
    "answer_accuracy": (0.0, "WRONG", {"accuracy"}),
    # one request per item: [met, poisoned -> not met], weights 1 and 3
    "rubric": (0.25, None, {"rubric_item"}),
}


# ---- LLM judge through deepeval against the loopback server -----------------------------------
@pytest.mark.asyncio
@pytest.mark.parametrize("stage", JUDGED_STAGES)
async def test_every_stage_through_deepeval(
    stage: str, openai_env: JudgeServer, sleeper: RecordingSleep
) -> None:
    judge = llm_judge(sleeper)
    verdict = await judge.evaluate(stage, CASE, {"strict": False})
    await judge.aclose()

    score, label, kinds = EXPECTED[stage]
    assert_verdict_shape(verdict, judge)
    assert verdict["score"] == pytest.approx(score)
    assert verdict["label"] == label
    assert set(openai_env.kinds()) == kinds  # deepeval's own prompts reached the server
    assert verdict["calls"] == len(openai_env.requests)
    usage = verdict["usage"]
    assert usage is not None and usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    assert usage["cost_usd"] > 0  # gpt-4o-mini has a known price
    assert judge.stats.calls == verdict["calls"] and judge.stats.retries == 0
    assert judge.stats.prompt_tokens == usage["prompt_tokens"]
    assert judge.stats.in_flight == 0
    for request in openai_env.requests:
        assert request.body["model"] == "gpt-4o-mini"
        assert request.body["response_format"] == {"type": "json_object"}
        assert request.body["temperature"] == 0.0


@pytest.mark.asyncio
async def test_verdict_details_and_params(openai_env: JudgeServer, sleeper: RecordingSleep) -> None:
    judge = llm_judge(sleeper)
    faithful = await judge.evaluate("faithfulness", CASE, {"strict": True})
    complete = await judge.evaluate(
        "context_completeness", JudgeInput(CASE.input, CASE.answer, CASE.reference, ["Paris."]), {}
    )
    correct = await judge.evaluate("correctness", CASE, {"correctness_criteria": "Same facts."})
    await judge.aclose()

    assert faithful["params"] == {"strict": True}
    assert [v["verdict"] for v in faithful["details"]["verdicts"]] == ["yes", "no"]
    assert faithful["details"]["claims"][1].endswith(f"{POISON}.")
    assert complete["label"] == "COMPLETE" and complete["score"] == 1.0
    assert complete["details"]["missing_elements"] == []
    assert set(correct["params"]) == {"criteria_sha"}
    assert correct["params"] != judge.stage_params("correctness", {})  # default criteria differ
    assert "Same facts." in next(r.prompt for r in openai_env.requests if r.kind == "geval_steps")


@pytest.mark.asyncio
async def test_correctness_steps_drafted_once_per_criteria(
    openai_env: JudgeServer, sleeper: RecordingSleep
) -> None:
    judge = llm_judge(sleeper)
    for criteria in ("Same facts.", "Same facts.", "Other rule."):
        verdict = await judge.evaluate("correctness", CASE, {"correctness_criteria": criteria})
        assert verdict["score"] == 0.2
    assert openai_env.kinds() == [
        "geval_steps",
        "geval_score",
        "geval_score",
        "geval_steps",
        "geval_score",
    ]


@pytest.mark.asyncio
async def test_strict_faithfulness_penalises_borderline_claims(
    openai_env: JudgeServer, sleeper: RecordingSleep
) -> None:
    data = JudgeInput("q?", "Paris is the capital. It is probably large yyy.", None, ["Paris."])
    judge = llm_judge(sleeper)
    lenient = await judge.evaluate("faithfulness", data, {"strict": False})
    strict = await judge.evaluate("faithfulness", data, {"strict": True})
    assert lenient["score"] == 1.0  # borderline passes by default
    assert strict["score"] == 0.5  # penalize_ambiguous_claims=True


@pytest.mark.asyncio
async def test_partial_completeness_and_unanswerable_accuracy(
    openai_env: JudgeServer, sleeper: RecordingSleep
) -> None:
    judge = llm_judge(sleeper)
    partial = await judge.evaluate(
        "context_completeness", JudgeInput("q?", "a", "One. Two.", ["one yyy"]), {}
    )
    abstains = await judge.evaluate(
        "answer_accuracy", JudgeInput("q?", "That is not available.", None, [], True), {}
    )
    answers = await judge.evaluate(
        "answer_accuracy", JudgeInput("q?", "It is 42.", None, [], True), {}
    )
    assert (partial["label"], partial["score"]) == ("PARTIAL", 0.5)  # "partial" normalised
    assert (abstains["label"], abstains["score"]) == ("CORRECT", 1.0)
    assert (answers["label"], answers["score"]) == ("WRONG", 0.0)
    assert openai_env.kinds()[1:] == ["accuracy_unanswerable", "accuracy_unanswerable"]


@pytest.mark.asyncio
async def test_empty_answer_scores_zero_without_a_call(
    openai_env: JudgeServer, sleeper: RecordingSleep
) -> None:
    judge = llm_judge(sleeper)
    data = JudgeInput("q?", "   ", "ref", ["ctx"])
    faithful = await judge.evaluate("faithfulness", data, {})
    accuracy = await judge.evaluate("answer_accuracy", data, {})
    assert (faithful["score"], faithful["reason"], faithful["calls"]) == (
        0.0,
        "the answer is empty",
        0,
    )
    assert accuracy["label"] == "WRONG"
    assert openai_env.requests == []


@pytest.mark.asyncio
async def test_bad_stage_and_missing_reference(
    openai_env: JudgeServer, sleeper: RecordingSleep
) -> None:
    judge = llm_judge(sleeper)
    with pytest.raises(JudgeInputError, match="judged stages are: faithfulness"):
        await judge.evaluate("tools", CASE, {})
    with pytest.raises(JudgeInputError, match="needs a reference"):
        await judge.evaluate("contextual_recall", JudgeInput("q", "a", None, ["c"]), {})
    assert openai_env.requests == []


@pytest.mark.asyncio
async def test_quiet_and_no_litter(
    openai_env: JudgeServer,
    sleeper: RecordingSleep,
    capfd: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    judge = llm_judge(sleeper)
    await judge.evaluate("answer_relevancy", CASE, {})
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")  # no deepeval spinner, no banner
    assert list(tmp_path.iterdir()) == []  # no .deepeval folder


# ---- retries ----------------------------------------------------------------------------------
ACCURATE = JudgeInput("What is the capital of France?", "Paris.", "Paris", [])


@pytest.mark.asyncio
async def test_429_honours_retry_after(openai_env: JudgeServer, sleeper: RecordingSleep) -> None:
    openai_env.fail_next(Fault("429", retry_after="0.05"))
    judge = llm_judge(sleeper)
    verdict = await judge.evaluate("answer_accuracy", ACCURATE, {})
    assert verdict["label"] == "CORRECT" and verdict["calls"] == 2
    # the header, not the 1 ms backoff (the endpoint's pause, from the reply to its end)
    assert sleeper.delays == [pytest.approx(0.05, abs=0.01)]
    first, second = openai_env.requests
    assert second.received - first.received >= 0.05
    assert (judge.stats.calls, judge.stats.retries) == (2, 1)


@pytest.mark.asyncio
async def test_5xx_and_reset_back_off_exponentially(
    openai_env: JudgeServer, sleeper: RecordingSleep
) -> None:
    openai_env.fail_next("500", "reset", "500")
    judge = llm_judge(sleeper)
    verdict = await judge.evaluate("answer_accuracy", ACCURATE, {})
    assert verdict["label"] == "CORRECT" and verdict["calls"] == 4
    assert len(sleeper.delays) == 3
    assert 0.001 <= sleeper.delays[0] < sleeper.delays[1] < sleeper.delays[2] <= 0.0044


@pytest.mark.asyncio
async def test_retry_inside_a_deepeval_metric(
    openai_env: JudgeServer, sleeper: RecordingSleep
) -> None:
    # deepeval alone gives up after 2 attempts; our policy retries each request of the metric
    openai_env.fail_next("429", "429", "500")
    judge = llm_judge(sleeper)
    verdict = await judge.evaluate("faithfulness", CASE, {})
    assert verdict["score"] == 0.5
    assert verdict["calls"] == 4 + 3 and judge.stats.retries == 3


@pytest.mark.asyncio
async def test_timeout_is_retried(openai_env: JudgeServer, sleeper: RecordingSleep) -> None:
    openai_env.fail_next(Fault("hang", seconds=3.0))
    judge = llm_judge(sleeper, timeout=0.3)
    started = time.monotonic()
    verdict = await judge.evaluate("answer_accuracy", ACCURATE, {})
    assert verdict["label"] == "CORRECT" and verdict["calls"] == 2
    assert 0.3 <= time.monotonic() - started < 2.5


@pytest.mark.asyncio
async def test_gives_up_after_max_attempts(
    openai_env: JudgeServer, sleeper: RecordingSleep
) -> None:
    openai_env.fail_next(*["500"] * 6)
    judge = llm_judge(sleeper)
    with pytest.raises(
        JudgeError, match=r"failed after 6 attempts \(last error: ChatHTTPError: HTTP 500"
    ):
        await judge.evaluate("answer_accuracy", ACCURATE, {})
    assert len(openai_env.requests) == 6 and len(sleeper.delays) == 5
    assert judge.stats.failures == 1


@pytest.mark.asyncio
async def test_401_fails_fast(openai_env: JudgeServer, sleeper: RecordingSleep) -> None:
    openai_env.fail_next("401")
    judge = llm_judge(sleeper)
    with pytest.raises(JudgeAuthError) as caught:
        await judge.evaluate("answer_accuracy", ACCURATE, {})
    assert "judge authentication failed (HTTP 401): check OPENAI_API_KEY" in str(caught.value)
    assert len(openai_env.requests) == 1 and sleeper.delays == []


@pytest.mark.asyncio
async def test_401_inside_a_metric_is_a_judge_error(
    openai_env: JudgeServer, sleeper: RecordingSleep
) -> None:
    openai_env.fail_next("401", "401")  # faithfulness sends two requests at once
    judge = llm_judge(sleeper)
    with pytest.raises(JudgeAuthError, match="check OPENAI_API_KEY"):
        await judge.evaluate("faithfulness", CASE, {})
    assert sleeper.delays == []


@pytest.mark.asyncio
async def test_garbage_reply_retried_then_judge_error(
    openai_env: JudgeServer, sleeper: RecordingSleep
) -> None:
    judge = llm_judge(sleeper)
    openai_env.fail_next("garbage")
    recovered = await judge.evaluate("answer_accuracy", ACCURATE, {})
    assert recovered["label"] == "CORRECT" and recovered["calls"] == 2

    openai_env.fail_next("garbage", "garbage", "garbage")
    with pytest.raises(JudgeError, match="reply was not usable JSON after 3 attempts"):
        await judge.evaluate("answer_accuracy", ACCURATE, {})
    assert len(openai_env.requests) == 2 + 3


@pytest.mark.asyncio
async def test_server_without_json_mode(openai_env: JudgeServer, sleeper: RecordingSleep) -> None:
    openai_env.fail_next("reject_json_mode")
    judge = llm_judge(sleeper)
    first = await judge.evaluate("answer_accuracy", ACCURATE, {})
    second = await judge.evaluate("answer_accuracy", ACCURATE, {})
    assert first["label"] == second["label"] == "CORRECT"
    assert [("response_format" in r.body) for r in openai_env.requests] == [True, False, False]
    assert sleeper.delays == []  # a fallback, not a retry


@pytest.mark.asyncio
async def test_model_that_rejects_temperature(
    openai_env: JudgeServer, sleeper: RecordingSleep
) -> None:
    openai_env.fail_next("reject_temperature")
    judge = llm_judge(sleeper)
    first = await judge.evaluate("answer_accuracy", ACCURATE, {})
    second = await judge.evaluate("answer_accuracy", ACCURATE, {})
    assert first["label"] == second["label"] == "CORRECT"
    assert [("temperature" in r.body) for r in openai_env.requests] == [True, False, False]
    assert [r.status for r in openai_env.requests] == [400, 200, 200]
    assert sleeper.delays == []  # a fallback, not a retry
    assert first["calls"] == 2  # the rejected request is counted


@pytest.mark.asyncio
async def test_graders_judge_while_deepeval_is_still_loading(
    openai_env: JudgeServer, sleeper: RecordingSleep, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Our graders need only the chat client: their requests go out before deepeval is loaded,
    their cost is booked once its price table is there; deepeval's metrics wait for it."""
    loading: concurrent.futures.Future[None] = concurrent.futures.Future()
    monkeypatch.setattr(deepeval_judge_module, "_loading", loading)  # "still importing"
    monkeypatch.setenv("OPENAI_COST_PER_INPUT_TOKEN", "0.001")
    monkeypatch.setenv("OPENAI_COST_PER_OUTPUT_TOKEN", "0.002")
    judge = llm_judge(sleeper)
    accuracy = asyncio.create_task(judge.evaluate("answer_accuracy", ACCURATE, {}))
    faithfulness = asyncio.create_task(judge.evaluate("faithfulness", CASE, {}))
    for _ in range(200):
        if openai_env.requests and openai_env.requests[0].status:
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.1)
    assert openai_env.kinds() == ["accuracy"]  # answered; no deepeval prompt went out
    assert not accuracy.done() and not faithfulness.done()  # its cost is not priced yet

    loading.set_result(None)
    verdict, metric = await accuracy, await faithfulness
    assert verdict["label"] == "CORRECT" and metric["score"] == 0.5
    usage = verdict["usage"]
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    assert usage["cost_usd"] == round(
        usage["prompt_tokens"] * 0.001 + usage["completion_tokens"] * 0.002, 8
    )
    assert judge.stats.cost_usd == pytest.approx(
        judge.stats.prompt_tokens * 0.001 + judge.stats.completion_tokens * 0.002
    )


@pytest.mark.asyncio
@pytest.mark.parametrize(("stage", "data"), [("faithfulness", CASE), ("answer_accuracy", ACCURATE)])
async def test_a_failed_deepeval_import_is_a_config_error(
    openai_env: JudgeServer,
    sleeper: RecordingSleep,
    monkeypatch: pytest.MonkeyPatch,
    stage: str,
    data: JudgeInput,
) -> None:
    """For deepeval's metrics and for our graders alike, which then send no paid request."""
    broken: concurrent.futures.Future[None] = concurrent.futures.Future()
    broken.set_exception(ImportError("deepeval is broken"))
    monkeypatch.setattr(deepeval_judge_module, "_loading", broken)
    judge = llm_judge(sleeper)
    with pytest.raises(
        JudgeConfigError,
        match="cannot load the 'openai:gpt-4o-mini' judge: ImportError: deepeval is broken",
    ):
        await judge.evaluate(stage, data, {})
    assert openai_env.requests == []


@pytest.mark.asyncio
async def test_a_bad_price_variable_fails_every_verdict(
    openai_env: JudgeServer, sleeper: RecordingSleep, monkeypatch: pytest.MonkeyPatch
) -> None:
    # deepeval loads once per process, reading the price variables too: loaded here under a
    # bad one, its failed import would stay for every later test of this process (an xdist
    # worker that ran this test before any other judge test failed 17 more).
    assert deepeval_judge_module.start_loading_deepeval().result(timeout=120) is None
    monkeypatch.setenv("OPENAI_COST_PER_INPUT_TOKEN", "cheap")
    judge = llm_judge(sleeper)
    for _ in range(2):  # not only the first: no verdict may go out with its cost silently 0
        with pytest.raises(JudgeConfigError, match="could not convert string to float: 'cheap'"):
            await judge.evaluate("answer_accuracy", ACCURATE, {})


@pytest.mark.asyncio
async def test_a_cancelled_waiter_does_not_cancel_the_import(
    openai_env: JudgeServer, sleeper: RecordingSleep, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A caller's timeout while deepeval imports must not poison the judge for later verdicts."""
    release = threading.Event()
    real_load = deepeval_judge_module._load_deepeval

    def slow_load(done: concurrent.futures.Future[None]) -> None:
        release.wait(30)
        real_load(done)

    monkeypatch.setattr(deepeval_judge_module, "_loading", None)
    monkeypatch.setattr(deepeval_judge_module, "_load_deepeval", slow_load)
    judge = llm_judge(sleeper)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(judge.evaluate("faithfulness", CASE, {}), 0.1)
    release.set()
    verdict = await judge.evaluate("faithfulness", CASE, {})
    assert verdict["score"] == 0.5


@pytest.mark.asyncio
async def test_malformed_http_reply_is_retried(
    openai_env: JudgeServer, sleeper: RecordingSleep
) -> None:
    openai_env.fail_next("malformed")
    verdict = await llm_judge(sleeper).evaluate("answer_accuracy", ACCURATE, {})
    assert verdict["label"] == "CORRECT" and verdict["calls"] == 2
    assert len(sleeper.delays) == 1  # a transient failure, not "HTTP 400"


@pytest.mark.asyncio
async def test_timeouts_say_which_limit(openai_env: JudgeServer, sleeper: RecordingSleep) -> None:
    openai_env.fail_next(Fault("hang", seconds=2.0), Fault("hang", seconds=2.0))
    retry = RetryPolicy(max_attempts=2, base_delay=0.001, sleep=sleeper)
    judge = make_judge("openai:gpt-4o-mini", retry=retry, timeout=0.3)
    with pytest.raises(JudgeError, match=r"no reply within 0\.3 s \(EVALCASES_JUDGE_TIMEOUT"):
        await judge.evaluate("answer_accuracy", ACCURATE, {})


@pytest.mark.asyncio
async def test_organization_and_project_headers(
    openai_env: JudgeServer, sleeper: RecordingSleep, monkeypatch: pytest.MonkeyPatch
) -> None:
    await llm_judge(sleeper).evaluate("answer_accuracy", ACCURATE, {})
    monkeypatch.setenv("OPENAI_ORG_ID", "org-123")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj_456")
    await llm_judge(sleeper).evaluate("answer_accuracy", ACCURATE, {})
    first, second = (request.headers or {} for request in openai_env.requests)
    assert first["Authorization"] == second["Authorization"] == "Bearer test-key"
    assert "OpenAI-Organization" not in first and "OpenAI-Project" not in first
    assert (second["OpenAI-Organization"], second["OpenAI-Project"]) == ("org-123", "proj_456")


# ---- concurrency and connection reuse -----------------------------------------------------------
@pytest.mark.asyncio
async def test_outer_semaphore_bounds_requests(
    openai_env: JudgeServer, sleeper: RecordingSleep
) -> None:
    openai_env.latency = 0.05
    judge = llm_judge(sleeper)
    limiter = asyncio.Semaphore(3)

    async def one() -> dict[str, Any]:
        async with limiter:
            return dict(await judge.evaluate("answer_accuracy", ACCURATE, {}))

    verdicts = await asyncio.gather(*(one() for _ in range(12)))
    assert [v["label"] for v in verdicts] == ["CORRECT"] * 12
    assert 2 <= openai_env.max_in_flight <= 3  # concurrent, and never above the limiter
    assert len(openai_env.ports()) <= 3  # pooled connections, not one per call
    assert judge.stats.in_flight == 0 and judge.stats.calls == 12


@pytest.mark.asyncio
async def test_judge_caps_its_own_fan_out(openai_env: JudgeServer, sleeper: RecordingSleep) -> None:
    # contextual_relevancy sends one request per passage at once; the judge caps the total
    openai_env.latency = 0.05
    judge = llm_judge(sleeper, max_concurrency=2)
    data = JudgeInput("q?", "a", None, [f"passage {i}." for i in range(6)])
    verdicts = await asyncio.gather(
        *(judge.evaluate("contextual_relevancy", data, {}) for _ in range(3))
    )
    assert all(v["score"] == 1.0 for v in verdicts)
    assert openai_env.max_in_flight == 2


@pytest.mark.asyncio
async def test_one_client_reused_across_calls(
    openai_env: JudgeServer, sleeper: RecordingSleep
) -> None:
    judge = llm_judge(sleeper)
    for _ in range(5):
        await judge.evaluate("answer_accuracy", ACCURATE, {})
    assert len(openai_env.requests) == 5
    assert len(openai_env.ports()) == 1  # one keep-alive connection: one client, one pool


def test_judge_survives_a_new_event_loop(openai_env: JudgeServer, sleeper: RecordingSleep) -> None:
    judge = llm_judge(sleeper)
    first = asyncio.run(judge.evaluate("answer_accuracy", ACCURATE, {}))
    second = asyncio.run(judge.evaluate("answer_accuracy", ACCURATE, {}))  # e.g. one loop per case
    assert first["label"] == second["label"] == "CORRECT"
