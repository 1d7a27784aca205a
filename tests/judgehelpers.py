"""Shared pieces of the judge tests: the shape every verdict has, and the sleep a RetryPolicy
is handed so a test can see each wait it asked for."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from judge_server import OWN_METRIC_TASK

from pytest_evalcases.judges import Judge

VERDICT_KEYS = {
    "score",
    "label",
    "reason",
    "details",
    "judge",
    "params",
    "usage",
    "latency_ms",
    "calls",
}


class RecordingSleep:
    """Injected into RetryPolicy: records each wait and really waits (tiny delays only)."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)
        await asyncio.sleep(delay)


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


def brand_voice_metric(voice: str = '"Warm, plain words."', cost: float = 0.25) -> str:
    """The source of a module of a suite's own deepeval metrics. `BrandVoice`: one request to
    the judge's model (OWN_METRIC_TASK, answered by the loopback server with 0.8, or 0.2 for an
    answer holding POISON) naming the tools called, and `cost` USD of its own in
    `evaluation_cost`, as a metric paying for calls the judge's model does not see would;
    `voice` is the Python expression of the voice it asks for (an imported name keys the
    metric's source by that module too). `SyncOnly`: no BaseMetric, `measure` only, no model.
    `NoScore`: leaves no score."""
    return (
        METRIC_TEMPLATE.replace("TASK", OWN_METRIC_TASK)
        .replace("VOICE_EXPRESSION", voice)
        .replace("COST", repr(cost))
    )


METRIC_TEMPLATE = '''\
"""The team's own deepeval metrics."""
from deepeval.metrics import BaseMetric
from pydantic import BaseModel


class Grade(BaseModel):
    score: float
    reason: str


class BrandVoice(BaseMetric):
    def __init__(self, model=None, threshold=0.6):
        self.model, self.threshold = model, threshold

    async def a_measure(self, test_case, _show_indicator=True, **kwargs):
        called = ",".join(call.name for call in test_case.tools_called)
        prompt = (
            "TASK " + VOICE_EXPRESSION + " (tools: " + called + ")\\n<answer>\\n"
            + test_case.actual_output + "\\n</answer>"
        )
        reply = await self.model.a_generate(prompt, schema=Grade)
        self.score, self.reason = reply.score, reply.reason
        self.evaluation_cost = COST
        self.success = self.score >= self.threshold
        return self.score

    def measure(self, test_case, *args, **kwargs):
        raise NotImplementedError

    def is_successful(self):
        return self.success

    @property
    def __name__(self):
        return "Brand voice"


class SyncOnly:
    """Not a deepeval metric: measure() only, no model."""

    threshold = 0.5

    def measure(self, test_case):
        self.score, self.reason = 1.0, "expected: " + str(test_case.expected_output)


class NoScore(SyncOnly):
    def measure(self, test_case):
        self.score, self.reason = None, "forgot"
'''
