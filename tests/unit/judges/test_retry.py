"""The judges' retry policy: which errors are retried, Retry-After forms, capped jittered
backoff, and deepeval's own provider models run under it."""

from __future__ import annotations

import json
import ssl
from typing import Any

import pytest
from judgehelpers import RecordingSleep

from pytest_evalcases.judges import (
    JudgeInput,
    RetryPolicy,
    make_judge,
)
from pytest_evalcases.judges import deepeval_judge as deepeval_judge_module
from pytest_evalcases.judges.failures import classify, retry_after_of

# ---- retries ----------------------------------------------------------------------------------
ACCURATE = JudgeInput("What is the capital of France?", "Paris.", "Paris", [])


@pytest.fixture
def sleeper() -> RecordingSleep:
    return RecordingSleep()


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
    monkeypatch.setattr(
        deepeval_judge_module.DeepEvalJudge, "_build_native", staticmethod(lambda spec: fake)
    )
    retry = RetryPolicy(base_delay=0.001, sleep=sleeper)
    judge = make_judge("litellm:some/model", retry=retry, environ={})
    verdict = await judge.evaluate("answer_accuracy", ACCURATE, {})
    assert verdict["label"] == "CORRECT" and verdict["calls"] == 2
    assert verdict["usage"] == {"prompt_tokens": 11, "completion_tokens": 7, "cost_usd": 0.002}
    assert judge.stats.retries == 1 and len(sleeper.delays) == 1
