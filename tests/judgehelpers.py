"""Shared pieces of the judge tests: the shape every verdict has, and the sleep a RetryPolicy
is handed so a test can see each wait it asked for."""

from __future__ import annotations

import asyncio
import json
from typing import Any

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
