"""The trace a system returns for a case (the `run` protocol): the answer, the tool calls, the
retrieved context and ids, usage and cost. `run` may return a plain dict of the same shape."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from .schema import Triple


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    args: dict[str, Any] = {}


class ToolOutput(BaseModel):
    model_config = ConfigDict(extra="allow")
    tool: str
    content: str


class Usage(BaseModel):
    model_config = ConfigDict(extra="allow")
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None


class CitedSentence(BaseModel):
    """One sentence of the answer and the document ids it cites."""

    model_config = ConfigDict(extra="allow")
    sentence: str
    docs: list[str] = []


class Trace(BaseModel):
    """What the system did for one case; stages score it."""

    model_config = ConfigDict(extra="allow")

    answer: str
    tool_calls: list[ToolCall] = []
    tool_outputs: list[ToolOutput] = []
    retrieved: list[str] = []
    context: list[str] = []
    usage: Usage | None = None
    latency_ms: float | None = None
    # The system's own steps, in ms ({"search_ms": 120, "generate_ms": 840}): results.json's
    # `timings` gives each step's mean and p95.
    timings: dict[str, float] | None = None
    # None rather than []: an unused field stays out of every recorded trace
    triples: list[Triple] | None = None
    citations: list[str | CitedSentence] | None = None
    # The [title, sentence index] pairs the system says support its answer (HotpotQA's `sp`).
    supporting_facts: list[tuple[str, int]] | None = None


__all__ = ["CitedSentence", "ToolCall", "ToolOutput", "Trace", "Usage"]
