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


def _kind(value: Any) -> str:
    """A JSON value's kind in words, for a shape message."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return "null" if value is None else type(value).__name__


def _strings(value: Any) -> bool:
    return type(value) is list and all(type(item) is str for item in value)


def _objects(value: Any) -> bool:
    return type(value) is list and all(type(item) is dict for item in value)


def _tool_calls(value: Any) -> bool:
    return type(value) is list and all(
        type(call) is dict
        and type(call.get("name")) is str
        and type(call.get("args", _EMPTY)) is dict
        for call in value
    )


def _optional_object(value: Any) -> bool:
    return value is None or type(value) is dict


def _optional_number(value: Any) -> bool:
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool))


def _optional_list(value: Any) -> bool:
    return value is None or type(value) is list


_EMPTY: dict[str, Any] = {}  # defaults of the shape checks: never changed
_NONE: list[Any] = []
_NUMBERS = (int, float)

# What each field of a recorded trace must be, as the stages read it (see Trace), in words.
_SHAPES = (
    ("answer", lambda value: type(value) is str, "a string"),
    ("tool_calls", _tool_calls, 'a list of {"name": <string>, "args": <object>} objects'),
    ("tool_outputs", _objects, "a list of objects"),
    ("retrieved", _strings, "a list of strings"),
    ("context", _strings, "a list of strings"),
    ("usage", _optional_object, "an object or null"),
    ("latency_ms", _optional_number, "a number or null"),
    ("triples", _optional_list, "a list or null"),
    ("citations", _optional_list, "a list or null"),
)


def trace_shape_problem(trace: dict[str, Any]) -> str | None:
    """`trace.retrieved is a number, not a list of strings` for the first field of a recorded
    trace (a cassette's) that the stages cannot read, or None. Replay runs this for every case
    and a trace we recorded was validated (normalize_trace) when it was: so a few type checks of
    the top-level fields and the tool calls (~0.5 us), not a model per case; the field is named
    only when one fails."""
    get = trace.get
    if (
        type(get("answer", "")) is str
        and type(calls := get("tool_calls", _NONE)) is list
        and type(get("tool_outputs", _NONE)) is list
        and type(get("retrieved", _NONE)) is list
        and type(get("context", _NONE)) is list
        and type(get("usage") or _EMPTY) is dict
        and ((latency := get("latency_ms")) is None or type(latency) in _NUMBERS)
        and type(get("triples") or _NONE) is list
        and type(get("citations") or _NONE) is list
        and all(
            type(call) is dict
            and type(call.get("name")) is str
            and type(call.get("args", _EMPTY)) is dict
            for call in calls
        )
    ):
        return None
    return _shape_problem(trace)


def _shape_problem(trace: dict[str, Any]) -> str | None:
    for name, fits, expected in _SHAPES:
        if name in trace and not fits(trace[name]):
            value = trace[name]
            if type(value) is list:
                wrong = next((i for i, item in enumerate(value) if not fits([item])), None)
                item = value[wrong] if wrong is not None else None
                if name == "tool_calls" and type(item) is dict:
                    part = "name" if type(item.get("name")) is not str else "args"
                    shown = _kind(item.get(part)) if part in item else "missing"
                    return (
                        f"trace.tool_calls[{wrong}].{part} is {shown}, not "
                        f"{'a string' if part == 'name' else 'an object'}"
                    )
                if wrong is not None:
                    return (
                        f"trace.{name}[{wrong}] is {_kind(value[wrong])}; trace.{name} must be "
                        f"{expected}"
                    )
            return f"trace.{name} is {_kind(value)}, not {expected}"
    return None


__all__ = ["CitedSentence", "ToolCall", "ToolOutput", "Trace", "Usage", "trace_shape_problem"]
