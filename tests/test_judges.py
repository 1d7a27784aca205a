"""Judges: LLM judge through deepeval's real metric code against a loopback server, retries,
concurrency, the lexical judge's rules, spec parsing and versions. No network beyond 127.0.0.1,
no real key."""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib.metadata
import json
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from judge_server import POISON, Fault, JudgeServer, judge_server_fixture, use_judge_server

from pytest_evalcases.judges import (
    JUDGED_STAGES,
    Judge,
    JudgeAuthError,
    JudgeConfigError,
    JudgeError,
    JudgeInput,
    JudgeInputError,
    RetryPolicy,
    judge_version,
    make_judge,
)
from pytest_evalcases.judges import deepeval_judge as deepeval_judge_module
from pytest_evalcases.judges.chat import env_proxy, error_from_reply, tls_context
from pytest_evalcases.judges.failures import classify, retry_after_of
from pytest_evalcases.judges.lexical import is_abstention, stem
from pytest_evalcases.judges.spec import parse_spec, resolve_spec

judge_server = judge_server_fixture()

VERDICT_KEYS = {"score", "label", "reason", "details", "judge", "params", "usage", "latency_ms",
                "calls"}


class RecordingSleep:
    """Injected into RetryPolicy: records each wait and really waits (tiny delays only)."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)
        await asyncio.sleep(delay)


@pytest.fixture
def sleeper() -> RecordingSleep:
    return RecordingSleep()


@pytest.fixture
def openai_env(judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch) -> JudgeServer:
    return use_judge_server(monkeypatch, judge_server)


def llm_judge(sleeper: RecordingSleep, **kwargs: Any) -> Judge:
    retry = RetryPolicy(base_delay=0.001, max_delay=0.2, sleep=sleeper)
    return make_judge("openai:gpt-4o-mini", retry=retry, **kwargs)


def assert_verdict_shape(verdict: dict[str, Any], judge: Judge) -> None:
    assert set(verdict) == VERDICT_KEYS
    assert isinstance(verdict["score"], float) and 0.0 <= verdict["score"] <= 1.0
    assert verdict["label"] is None or isinstance(verdict["label"], str)
    assert isinstance(verdict["reason"], str) and verdict["reason"]
    assert isinstance(verdict["details"], dict)
    assert verdict["judge"] == judge.id
    assert isinstance(verdict["latency_ms"], float) and verdict["latency_ms"] >= 0
    assert isinstance(verdict["calls"], int)
    json.dumps(verdict)  # plain JSON, ready for a cassette


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
    "faithfulness": (0.5, None, {"faithfulness_truths", "faithfulness_claims",
                                 "faithfulness_verdicts", "faithfulness_reason"}),
    # reference sentences [ok, poisoned] -> [yes, no]
    "contextual_recall": (0.5, None, {"recall_verdicts", "recall_reason"}),
    # nodes [poisoned, ok] -> [no, yes]: precision@2 = 1/2
    "contextual_precision": (0.5, None, {"precision_verdicts", "precision_reason"}),
    # one verdict call per passage: [no], [yes]
    "contextual_relevancy": (0.5, None, {"relevancy_verdicts", "relevancy_reason"}),
    "answer_relevancy": (0.5, None, {"answer_relevancy_statements", "answer_relevancy_verdicts",
                                     "answer_relevancy_reason"}),
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
    assert openai_env.kinds() == ["geval_steps", "geval_score", "geval_score",
                                  "geval_steps", "geval_score"]


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
        0.0, "the answer is empty", 0)
    assert accuracy["label"] == "WRONG"
    assert openai_env.requests == []


@pytest.mark.asyncio
async def test_bad_stage_and_missing_reference(openai_env: JudgeServer,
                                               sleeper: RecordingSleep) -> None:
    judge = llm_judge(sleeper)
    with pytest.raises(JudgeInputError, match="judged stages are: faithfulness"):
        await judge.evaluate("tools", CASE, {})
    with pytest.raises(JudgeInputError, match="needs a reference"):
        await judge.evaluate("contextual_recall", JudgeInput("q", "a", None, ["c"]), {})
    assert openai_env.requests == []


@pytest.mark.asyncio
async def test_quiet_and_no_litter(
    openai_env: JudgeServer, sleeper: RecordingSleep, capfd: pytest.CaptureFixture[str],
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
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
async def test_retry_inside_a_deepeval_metric(openai_env: JudgeServer,
                                              sleeper: RecordingSleep) -> None:
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
async def test_gives_up_after_max_attempts(openai_env: JudgeServer,
                                           sleeper: RecordingSleep) -> None:
    openai_env.fail_next(*["500"] * 6)
    judge = llm_judge(sleeper)
    with pytest.raises(JudgeError,
                       match=r"failed after 6 attempts \(last error: ChatHTTPError: HTTP 500"):
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
async def test_model_that_rejects_temperature(openai_env: JudgeServer,
                                              sleeper: RecordingSleep) -> None:
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


def test_warm_up_starts_loading_deepeval_in_the_background(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(deepeval_judge_module, "_loading", None)
    make_judge("lexical").warm_up()  # nothing to prepare
    assert deepeval_judge_module._loading is None
    judge = make_judge("openai:gpt-4o-mini", environ={"OPENAI_API_KEY": "k"})
    assert deepeval_judge_module._loading is None  # making a judge loads nothing
    judge.warm_up()
    loading = deepeval_judge_module._loading
    assert loading is not None
    judge.warm_up()  # once per process
    assert deepeval_judge_module._loading is loading
    assert loading.result(timeout=120) is None


@pytest.mark.asyncio
@pytest.mark.parametrize(("stage", "data"), [("faithfulness", CASE),
                                             ("answer_accuracy", ACCURATE)])
async def test_a_failed_deepeval_import_is_a_config_error(
    openai_env: JudgeServer, sleeper: RecordingSleep, monkeypatch: pytest.MonkeyPatch,
    stage: str, data: JudgeInput,
) -> None:
    """For deepeval's metrics and for our graders alike, which then send no paid request."""
    broken: concurrent.futures.Future[None] = concurrent.futures.Future()
    broken.set_exception(ImportError("deepeval is broken"))
    monkeypatch.setattr(deepeval_judge_module, "_loading", broken)
    judge = llm_judge(sleeper)
    with pytest.raises(JudgeConfigError, match="cannot load the 'openai:gpt-4o-mini' judge: "
                                               "ImportError: deepeval is broken"):
        await judge.evaluate(stage, data, {})
    assert openai_env.requests == []


@pytest.mark.asyncio
async def test_a_bad_price_variable_fails_every_verdict(
    openai_env: JudgeServer, sleeper: RecordingSleep, monkeypatch: pytest.MonkeyPatch
) -> None:
    # deepeval loaded first, under the good environment: its one import per process must not
    # fail here and stay failed for every later test in this worker (the order xdist picks)
    deepeval_judge_module.start_loading_deepeval().result(120)
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
async def test_malformed_http_reply_is_retried(openai_env: JudgeServer,
                                               sleeper: RecordingSleep) -> None:
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


def test_tls_trusts_ssl_cert_file_else_certifi(tmp_path: Path) -> None:
    import certifi

    bundle = Path(certifi.where()).read_text()
    one = bundle[: bundle.index("-----END CERTIFICATE-----") + len("-----END CERTIFICATE-----")]
    ca_file = tmp_path / "company-ca.pem"
    ca_file.write_text(one[one.index("-----BEGIN CERTIFICATE-----"):] + "\n")
    assert len(tls_context({"SSL_CERT_FILE": str(ca_file)}).get_ca_certs()) == 1
    assert len(tls_context({}).get_ca_certs()) == bundle.count("-----BEGIN CERTIFICATE-----")


def test_certificate_errors_are_not_retried() -> None:
    bad = ssl.SSLCertVerificationError(1, "certificate verify failed: self-signed certificate")
    assert classify(bad).kind == "fatal"
    try:
        try:
            raise bad
        except ssl.SSLError as exc:
            raise ConnectionError("cannot connect") from exc  # how clients wrap it
    except ConnectionError as wrapped:
        failure = classify(wrapped)
    assert failure.kind == "fatal" and "SSL_CERT_FILE" in failure.message
    assert classify(ConnectionError("refused")).kind == "transient"


@pytest.mark.parametrize(
    ("status", "body", "message", "code"),
    [
        (429, b'{"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}',
         "HTTP 429: Rate limit reached (rate_limit_exceeded)", "rate_limit_exceeded"),
        (400, b'{"error": "model not found"}', "HTTP 400: model not found", None),
        (502, b"<html>Bad Gateway</html>", "HTTP 502: <html>Bad Gateway</html>", None),
        (500, b"", "HTTP 500: (empty body)", None),
    ],
)
def test_http_errors_read_the_openai_envelope(
    status: int, body: bytes, message: str, code: str | None
) -> None:
    error = error_from_reply(status, {"Retry-After": "3"}, body)
    assert (str(error), error.code, error.status_code) == (message, code, status)
    kind = "rate_limited" if status == 429 else "transient" if status > 429 else "fatal"
    assert classify(error).kind == kind


def test_proxy_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "HTTP_PROXY",
                 "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "REQUEST_METHOD"):
        monkeypatch.delenv(name, raising=False)
    assert env_proxy("https://api.openai.com/v1/chat/completions") is None
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.corp:3128")
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
    assert env_proxy("https://api.openai.com/v1/chat/completions") == "http://proxy.corp:3128"
    assert env_proxy("http://127.0.0.1:8000/v1/chat/completions") is None
    assert env_proxy("http://vllm.corp:8000/v1/chat/completions") is None  # no HTTP_PROXY


class _FakeError(Exception):
    def __init__(self, status: int, headers: dict[str, str] | None = None, code: str = "") -> None:
        super().__init__(f"HTTP {status} {code}")
        self.status_code = status
        self.code = code
        self.response = type("Response", (), {"headers": headers or {}, "status_code": status})()


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (_FakeError(429), "rate_limited"),
        (_FakeError(503, {"retry-after": "2"}), "rate_limited"),
        (_FakeError(503), "transient"),
        (_FakeError(408), "transient"),
        (_FakeError(401), "auth"),
        (_FakeError(403), "auth"),
        (_FakeError(404), "fatal"),
        (_FakeError(400), "fatal"),
        (_FakeError(429, code="insufficient_quota"), "fatal"),
        (TimeoutError("slow"), "transient"),
        (ConnectionResetError("reset"), "transient"),
        (json.JSONDecodeError("bad", "x", 0), "reply"),
        (KeyError("bug"), "fatal"),
    ],
)
def test_classify(exc: Exception, kind: str) -> None:
    assert classify(exc).kind == kind


def test_retry_after_forms() -> None:
    assert retry_after_of(_FakeError(429, {"retry-after-ms": "250"})) == 0.25
    assert retry_after_of(_FakeError(429, {"retry-after": "2"})) == 2.0
    date = "Wed, 21 Oct 2015 07:28:10 GMT"
    now = 1445412480.0  # 10 s before that date
    assert retry_after_of(_FakeError(429, {"retry-after": date}), now=now) == pytest.approx(10.0)
    assert retry_after_of(_FakeError(429, {"retry-after": "soon"})) is None
    assert retry_after_of(_FakeError(429)) is None


def test_backoff_is_capped_and_jittered() -> None:
    policy = RetryPolicy(base_delay=0.5, max_delay=60.0, jitter=0.1)
    waits = [policy.backoff(n) for n in range(1, 10)]
    assert 0.5 <= waits[0] <= 0.55 and 1.0 <= waits[1] <= 1.1
    assert waits[-1] == 60.0 and all(w <= 60.0 for w in waits)


# ---- concurrency and connection reuse -----------------------------------------------------------
@pytest.mark.asyncio
async def test_outer_semaphore_bounds_requests(openai_env: JudgeServer,
                                               sleeper: RecordingSleep) -> None:
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
async def test_judge_caps_its_own_fan_out(openai_env: JudgeServer,
                                          sleeper: RecordingSleep) -> None:
    # contextual_relevancy sends one request per passage at once; the judge caps the total
    openai_env.latency = 0.05
    judge = llm_judge(sleeper, max_concurrency=2)
    data = JudgeInput("q?", "a", None, [f"passage {i}." for i in range(6)])
    verdicts = await asyncio.gather(*(judge.evaluate("contextual_relevancy", data, {})
                                      for _ in range(3)))
    assert all(v["score"] == 1.0 for v in verdicts)
    assert openai_env.max_in_flight == 2


@pytest.mark.asyncio
async def test_one_client_reused_across_calls(openai_env: JudgeServer,
                                              sleeper: RecordingSleep) -> None:
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


@pytest.mark.asyncio
async def test_native_provider_model_runs_under_our_retry(
    monkeypatch: pytest.MonkeyPatch, sleeper: RecordingSleep
) -> None:
    """gemini/ollama/litellm use deepeval's own model classes; a fake one stands in here."""
    deepeval_judge_module.prepare_deepeval_env()
    from deepeval.models import DeepEvalBaseLLM
    from deepeval.models.utils import EvaluationCost

    class FlakyProviderModel(DeepEvalBaseLLM):
        def __init__(self) -> None:
            self.attempts = 0
            super().__init__("flaky")

        def load_model(self) -> None:
            return None

        def get_model_name(self) -> str:
            return "flaky"

        def generate(self, prompt: str, schema: Any = None) -> Any:
            raise NotImplementedError

        async def a_generate(self, prompt: str, schema: Any = None) -> Any:
            self.attempts += 1
            if self.attempts == 1:
                raise _FakeError(503)
            return '{"reason": "fine", "label": "CORRECT"}', EvaluationCost(0.002, 11, 7)

    fake = FlakyProviderModel()
    monkeypatch.setattr(deepeval_judge_module, "_installed", lambda module: True)
    monkeypatch.setattr(deepeval_judge_module.DeepEvalJudge, "_build_native",
                        staticmethod(lambda spec: fake))
    retry = RetryPolicy(base_delay=0.001, sleep=sleeper)
    judge = make_judge("litellm:some/model", retry=retry, environ={})
    verdict = await judge.evaluate("answer_accuracy", ACCURATE, {})
    assert verdict["label"] == "CORRECT" and verdict["calls"] == 2
    assert verdict["usage"] == {"prompt_tokens": 11, "completion_tokens": 7, "cost_usd": 0.002}
    assert judge.stats.retries == 1 and len(sleeper.delays) == 1


# ---- lexical judge: hand-computed verdicts -------------------------------------------------------
# Content words (after stop words and stemming):
#   input    {eiffel, tower}
#   answer   s1 {eiffel, tower, paris}  s2 {open, 1889}  s3 {banana, grow, cold, region}
#   passages p1 {banana, grow, tropical, region}  p2 {eiffel, tower, stand, paris, franc}
#            p3 {tower, open, 1889}
#   reference r1 {eiffel, tower, paris, franc}  r2 {330, metr, tall}
LEX = JudgeInput(
    input="Where is the Eiffel Tower?",
    answer="The Eiffel Tower is in Paris. It opened in 1889. Bananas grow in cold regions.",
    reference="The Eiffel Tower is in Paris, France. It is 330 metres tall.",
    context=[
        "Bananas grow in tropical regions.",
        "The Eiffel Tower stands in Paris, France.",
        "The tower opened in 1889.",
    ],
)


async def lexical(stage: str, data: JudgeInput = LEX, **options: Any) -> dict[str, Any]:
    judge = make_judge("lexical")
    verdict = dict(await judge.evaluate(stage, data, options))
    assert_verdict_shape(verdict, judge)
    assert verdict["usage"] is None and verdict["calls"] == 0
    return verdict


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("stage", "options", "score", "label"),
    [
        # s1 3/3 in p2, s2 2/2 in p3, s3 3/4 = 0.75 in p1: all >= 0.6
        ("faithfulness", {}, 1.0, None),
        # strict needs 0.8: s3 (0.75) fails
        ("faithfulness", {"strict": True}, 2 / 3, None),
        # r1 4/4 in p2; r2 0/3
        ("contextual_recall", {}, 0.5, None),
        # reference has 7 words; p1 0/7, p2 4/7 >= 0.5, p3 1/7 -> relevant at rank 2 only: 1/2
        ("contextual_precision", {}, 0.5, None),
        # p1 shares nothing with {eiffel, tower}; p2, p3 do
        ("contextual_relevancy", {}, 2 / 3, None),
        # only s1 shares a word with the input
        ("answer_relevancy", {}, 1 / 3, None),
        # 3 common of 9 answer / 7 reference words: P 1/3, R 3/7, F1 = 6/16
        ("correctness", {}, 0.375, None),
        # 4 of 7 reference words in the context = 57% -> PARTIAL
        ("context_completeness", {}, 0.5, "PARTIAL"),
        # answer holds 3 of 7 reference words = 43% < 80%
        ("answer_accuracy", {}, 0.0, "WRONG"),
    ],
)
async def test_lexical_stage_scores(
    stage: str, options: dict[str, Any], score: float, label: str | None
) -> None:
    verdict = await lexical(stage, **options)
    assert verdict["score"] == pytest.approx(score, abs=1e-6)
    assert verdict["label"] == label


@pytest.mark.asyncio
async def test_lexical_details_and_labels() -> None:
    partial = await lexical("context_completeness")
    assert partial["details"]["present_elements"] == ["eiffel", "tower", "paris", "france"]
    assert partial["details"]["missing_elements"] == ["330", "metres", "tall"]

    short_reference = JudgeInput(LEX.input, LEX.answer, "The Eiffel Tower is in Paris, France.",
                                 LEX.context)
    complete = await lexical("context_completeness", short_reference)
    assert (complete["label"], complete["score"]) == ("COMPLETE", 1.0)
    nothing = JudgeInput(LEX.input, LEX.answer, LEX.reference, ["Bananas grow in the tropics."])
    insufficient = await lexical("context_completeness", nothing)
    assert (insufficient["label"], insufficient["score"]) == ("INSUFFICIENT", 0.0)

    faithful = await lexical("faithfulness", **{"strict": True})
    assert [c["supported"] for c in faithful["details"]["claims"]] == [True, True, False]
    assert faithful["details"]["claims"][2]["support"] == 0.75


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("answer", "label"),
    [
        ("Curie won prizes in physics.", "CORRECT"),  # 4 of 5 reference words = 80%
        ("Curie won prizes.", "WRONG"),  # 3 of 5 = 60%
        ("I don't know.", "WRONG"),  # abstention on an answerable case
        ("Curie won prizes in physics, I don't know about chemistry.", "WRONG"),
    ],
)
async def test_lexical_answer_accuracy(answer: str, label: str) -> None:
    data = JudgeInput("Which prizes did Curie win?", answer,
                      "Curie won prizes in physics and chemistry.", [])
    assert (await lexical("answer_accuracy", data))["label"] == label


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("answer", "label"),
    [
        ("The documents do not say.", "CORRECT"),
        ("That information is not available.", "CORRECT"),
        ("The manual doesn\u2019t cover warranty terms.", "CORRECT"),
        ("I don't know.", "CORRECT"),
        ("The warranty lasts two years.", "WRONG"),
    ],
)
async def test_lexical_unanswerable(answer: str, label: str) -> None:
    data = JudgeInput("How long is the warranty?", answer, None, [], unanswerable=True)
    verdict = await lexical("answer_accuracy", data)
    assert verdict["label"] == label
    assert verdict["score"] == (1.0 if label == "CORRECT" else 0.0)


@pytest.mark.asyncio
async def test_lexical_abstention_makes_no_claim() -> None:
    data = JudgeInput("How long is the warranty?", "I don't know.", "Two years.", ["Warranty."])
    assert (await lexical("faithfulness", data))["score"] == 1.0
    assert (await lexical("correctness", data))["score"] == 0.0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I do not know the answer.", True),
        ("There is no information about that.", True),
        ("The context does not mention it.", True),
        ("I cannot answer that from the documents.", True),
        ("Not in the documents.", True),
        ("Paris is the capital.", False),
        ("The knowledge base is large.", False),
    ],
)
def test_is_abstention(text: str, expected: bool) -> None:
    assert is_abstention(text) is expected


def test_stem_rules() -> None:
    assert {stem(w) for w in ("release", "released", "releases", "releasing")} == {"releas"}
    assert stem("cities") == "city" and stem("paris") == "paris" and stem("1889") == "1889"
    assert stem("glass") == "glass" and stem("status") == "status"


def test_lexical_params_version_reads() -> None:
    judge = make_judge("lexical")
    assert judge.id == "lexical" and judge.version() == "lexical-1" == judge_version("lexical")
    assert judge.stage_params("faithfulness", {"strict": True}) == {"strict": True}
    assert judge.stage_params("correctness", {"correctness_criteria": "x"}) == {}  # F1 ignores it
    assert judge.stage_params("context_completeness", {"accept_partial": True}) == {}
    assert judge.reads("faithfulness") == ("answer", "context")
    assert judge.reads("contextual_recall") == ("input", "reference", "context")
    assert judge.reads("context_completeness") == ("input", "reference", "context")
    assert judge.reads("answer_accuracy") == ("input", "answer", "reference", "unanswerable")
    assert judge.reads("answer_relevancy") == ("input", "answer")
    assert judge.reads("correctness") == ("input", "answer", "reference")


# ---- spec parsing, configuration errors, versions -----------------------------------------------
@pytest.mark.parametrize(
    ("value", "provider", "model"),
    [
        ("openai:gpt-4o-mini", "openai", "gpt-4o-mini"),
        (" OpenAI:gpt-4o ", "openai", "gpt-4o"),
        ("gemini:gemini-2.0-flash", "gemini", "gemini-2.0-flash"),
        ("ollama:llama3.1:8b", "ollama", "llama3.1:8b"),  # the tag's colon stays in the model
        ("litellm:anthropic/claude-3-5-haiku", "litellm", "anthropic/claude-3-5-haiku"),
        ("lexical", "lexical", None),
        ("LEXICAL", "lexical", None),
    ],
)
def test_parse_accepted_forms(value: str, provider: str, model: str | None) -> None:
    spec = parse_spec(value)
    assert (spec.provider, spec.model) == (provider, model)


@pytest.mark.parametrize("value", ["foo", "claude:3", "lexical:x", "", "openai:", "gemini"])
def test_unknown_spec_lists_forms(value: str) -> None:
    with pytest.raises(JudgeConfigError) as caught:
        make_judge(value, environ={})
    message = str(caught.value)
    for form in ("openai:<model>", "gemini:<model>", "ollama:<model>", "litellm:<model>",
                 "lexical"):
        assert form in message


def test_missing_keys_name_the_variable() -> None:
    with pytest.raises(JudgeConfigError) as openai_error:
        make_judge("openai:gpt-4o-mini", environ={"OPENAI_BASE_URL": "http://x/v1"})
    assert "needs EVALCASES_JUDGE_API_KEY or OPENAI_API_KEY" in str(openai_error.value)
    assert "EVALCASES_JUDGE_BASE_URL=http://host:port/v1" in str(openai_error.value)
    assert "--eval-judge lexical" in str(openai_error.value)
    with pytest.raises(JudgeConfigError,
                       match="EVALCASES_JUDGE_API_KEY, GOOGLE_API_KEY or GEMINI_API_KEY"):
        make_judge("gemini:gemini-2.0-flash", environ={})


def test_credentials_and_endpoints_from_env() -> None:
    env = {"OPENAI_API_KEY": "sk-secret-1", "OPENAI_BASE_URL": "http://h:1/v1"}
    openai = resolve_spec("openai:m", env)
    assert (openai.base_url, openai.key_env, openai.api_key) == (
        "http://h:1/v1", "OPENAI_API_KEY", "sk-secret-1")
    assert "sk-secret-1" not in repr(openai)  # keys stay out of logs
    gemini = resolve_spec("gemini:g", {"GEMINI_API_KEY": "g-key"})
    assert (gemini.key_env, gemini.api_key) == ("GEMINI_API_KEY", "g-key")
    assert resolve_spec("ollama:m", {}).base_url == "http://localhost:11434"
    assert resolve_spec("ollama:m", {"OLLAMA_HOST": "box:1234"}).base_url == "http://box:1234"
    assert resolve_spec("litellm:x/y", {}).model == "x/y"  # litellm finds its own keys


# What an openai-SDK agent reads, set to somewhere else than the judge's own endpoint.
AGENT_ENV = {"OPENAI_API_KEY": "sk-agent", "OPENAI_BASE_URL": "http://agent:1/v1",
             "OPENAI_ORG_ID": "org-agent", "GOOGLE_API_KEY": "g-agent", "OLLAMA_HOST": "agent:2"}
JUDGE_ENV = {"EVALCASES_JUDGE_API_KEY": "sk-judge", "EVALCASES_JUDGE_BASE_URL": "http://judge:3/v1"}


def test_the_judges_own_endpoint_and_key_come_before_the_providers_variables() -> None:
    env = {**AGENT_ENV, **JUDGE_ENV}
    openai = resolve_spec("openai:m", env)
    assert (openai.base_url, openai.api_key, openai.key_env) == (
        "http://judge:3/v1", "sk-judge", "EVALCASES_JUDGE_API_KEY")
    assert openai.organization is None  # OPENAI_ORG_ID belongs to OPENAI_API_KEY
    ollama = resolve_spec("ollama:m", {**AGENT_ENV, "EVALCASES_JUDGE_BASE_URL": "judge:4"})
    assert ollama.base_url == "http://judge:4"
    litellm = resolve_spec("litellm:x/y", env)
    assert (litellm.api_key, litellm.base_url) == ("sk-judge", "http://judge:3/v1")
    gemini = resolve_spec("gemini:g", {**AGENT_ENV, "EVALCASES_JUDGE_API_KEY": "g-judge"})
    assert (gemini.api_key, gemini.key_env) == ("g-judge", "EVALCASES_JUDGE_API_KEY")


def test_each_judge_variable_falls_back_on_its_own() -> None:
    only_url = resolve_spec("openai:m", {**AGENT_ENV, "EVALCASES_JUDGE_BASE_URL": "http://j/v1"})
    assert (only_url.base_url, only_url.api_key, only_url.organization) == (
        "http://j/v1", "sk-agent", "org-agent")
    only_key = resolve_spec("openai:m", {**AGENT_ENV, "EVALCASES_JUDGE_API_KEY": "sk-judge"})
    assert (only_key.base_url, only_key.api_key) == ("http://agent:1/v1", "sk-judge")
    assert resolve_spec("ollama:m", AGENT_ENV).base_url == "http://agent:2"
    litellm = resolve_spec("litellm:x/y", AGENT_ENV)  # litellm reads the provider's variables
    assert (litellm.api_key, litellm.base_url) == (None, None)


def test_a_judge_base_url_for_gemini_is_refused_by_name() -> None:
    with pytest.raises(JudgeConfigError, match="EVALCASES_JUDGE_BASE_URL is set, but"):
        resolve_spec("gemini:g", {"GOOGLE_API_KEY": "g", "EVALCASES_JUDGE_BASE_URL": "http://x"})


def test_missing_package_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def installed(module: str) -> bool:
        return module != "google.genai"

    monkeypatch.setattr(deepeval_judge_module, "_installed", installed)
    with pytest.raises(JudgeConfigError, match="pip install google-genai"):
        make_judge("gemini:gemini-2.0-flash", environ={"GOOGLE_API_KEY": "k"})


def test_bad_tuning_env_is_a_config_error() -> None:
    env = {"OPENAI_API_KEY": "k", "EVALCASES_JUDGE_TIMEOUT": "soon"}
    with pytest.raises(JudgeConfigError, match="EVALCASES_JUDGE_TIMEOUT"):
        make_judge("openai:gpt-4o-mini", environ=env)


def test_llm_judge_version_and_params() -> None:
    judge = make_judge("openai:gpt-4o-mini", environ={"OPENAI_API_KEY": "k"})
    expected = f"deepeval=={importlib.metadata.version('deepeval')}; evalcases-prompts==1"
    assert judge.id == "openai:gpt-4o-mini"
    assert judge.version() == expected == judge_version("openai:gpt-4o-mini")
    assert judge_version("ollama:llama3.1:8b") == expected  # no key needed for a version
    assert judge.stage_params("faithfulness", {"strict": False}) == {"strict": False}
    assert judge.stage_params("context_completeness", {"accept_partial": True}) == {}
    with pytest.raises(JudgeConfigError):
        judge_version("nope")


def test_lexical_path_imports_neither_deepeval_nor_openai() -> None:
    code = """
import asyncio, json, sys
from pytest_evalcases.judges import JudgeInput, judge_version, make_judge
judge = make_judge("lexical")
data = JudgeInput("Where is it?", "It is in Paris.", "Paris.", ["Paris."])
for stage in ("faithfulness", "answer_accuracy", "context_completeness"):
    asyncio.run(judge.evaluate(stage, data, {}))
judge_version("openai:gpt-4o-mini")
make_judge("openai:gpt-4o-mini", environ={"OPENAI_API_KEY": "k"})  # built lazily
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("deepeval", "openai"))))
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, timeout=60)
    assert json.loads(result.stdout) == []


@pytest.mark.parametrize(("changed", "recorded_from", "current_from", "expected"), [
    ({"judge", "judge_version"}, "--eval-judge", "suite",
     'recorded with --eval-judge openai:m; pass the same option, set "judge" in the suite, '
     "or re-judge with --live-judges"),
    ({"judge"}, "ini eval_judge", "suite",
     'recorded with ini eval_judge = openai:m; pass --eval-judge openai:m, set "judge" in the '
     "suite, or re-judge with --live-judges"),
    ({"judge"}, "suite", "--eval-judge",
     "recorded with the suite's judge openai:m, while this run's lexical comes from "
     "--eval-judge; run without the option, or re-judge with --live-judges"),
    ({"judge"}, "suite", "suite", None),  # the suite's judge was edited: no override to name
    ({"judge", "reference"}, "--eval-judge", "suite", None),  # not only the judge differs
    ({"judge_version"}, "--eval-judge", "--eval-judge", None),  # same judge, new version
])
def test_judge_source_advice(changed: set[str], recorded_from: str, current_from: str,
                             expected: str | None) -> None:
    from pytest_evalcases.domain.verdicts import judge_source_advice

    recorded = {"judge": "openai:m", "judge_version": "deepeval==1"}
    assert judge_source_advice(changed, recorded, recorded_from, "lexical",
                               current_from) == expected
    assert judge_source_advice(changed, None, recorded_from, "lexical", current_from) is None
