"""What a system returned, checked before it is recorded: plain JSON (no objects, no lone
surrogates, no runaway nesting) in the trace's shape; `normalize_trace` gives the dict a
recording stores."""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ValidationError

from ..core.errors import TraceError
from ..core.measured import MEASURED, RUN_MS, TURNS_MS
from ..core.trace import Trace
from ..core.validation import one_line_validation_error

# How deep a returned trace may nest: real traces nest a few levels; far deeper ones cannot be
# written, hashed or read back by the JSON parsers (Python's and pydantic's stop near 1,000 and
# 255), and walking them would exhaust the stack (a RecursionError traceback).
MAX_TRACE_DEPTH = 100


def json_problem(value: Any, path: str = "$") -> str | None:
    """Where `value` stops being plain JSON, e.g. `$.tool_outputs[0].content is bytes`, or None.
    Nothing is converted: a set, a datetime or a Decimal would be stored as something else than
    what the system returned, so they are refused like any other object; nor are strings with a
    lone surrogate (no UTF-8 file can hold one) or nesting deeper than MAX_TRACE_DEPTH."""
    seen: set[int] = set()

    def walk(item: Any, where: str, depth: int) -> str | None:
        if isinstance(item, str):
            return None if item.isascii() or _encodable(item) else _surrogate(where, item)
        if item is None or isinstance(item, bool | int):
            return None
        if isinstance(item, BaseModel):  # e.g. a ToolCall: declared, so its dump is intended
            return walk(item.model_dump(mode="json", exclude_none=True), where, depth)
        if isinstance(item, float):
            return None if math.isfinite(item) else f"{where} is {item!r} (not a JSON number)"
        if isinstance(item, dict | list | tuple):
            if depth >= MAX_TRACE_DEPTH:
                shown = where if len(where) <= 60 else where[:57] + "..."
                return f"{shown} nests deeper than {MAX_TRACE_DEPTH} levels (flatten it)"
            if id(item) in seen:
                return f"{where} refers back to itself (a circular structure)"
            seen.add(id(item))
            if isinstance(item, dict):
                for key, child in item.items():
                    if not isinstance(key, str):
                        return f"{where} has a key {key!r} that is not a string"
                    if not (key.isascii() or _encodable(key)):
                        return _surrogate(f"{where} has a key that", key)
                    problem = walk(child, f"{where}.{key}", depth + 1)
                    if problem:
                        return problem
            else:
                for index, child in enumerate(item):
                    problem = walk(child, f"{where}[{index}]", depth + 1)
                    if problem:
                        return problem
            seen.discard(id(item))
            return None
        return f"{where} is a {type(item).__name__} ({_preview(item)})"

    return walk(value, path, 0)


def _encodable(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _surrogate(where: str, text: str) -> str:
    position = next(i for i, ch in enumerate(text) if "\ud800" <= ch <= "\udfff")
    return (
        f"{where} holds a lone surrogate {text[position]!r} at character {position} (invalid "
        "Unicode, which no UTF-8 file can hold; decode bytes with errors='replace')"
    )


def _preview(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:  # a broken __repr__ of user code: say what it is instead
        text = object.__repr__(value)
    return text if len(text) <= 60 else text[:57] + "..."


def normalize_trace(value: Any, where: str) -> dict[str, Any]:
    """Validate what the system returned; a plain JSON dict comes out (that is what is recorded)."""
    if isinstance(value, Trace):
        value = value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, dict):
        problem = json_problem(value)
        if problem:
            raise TraceError(
                f"malformed trace for {where}: {problem}, which a recording cannot store as "
                "JSON; return strings, numbers, booleans, None, lists and dicts"
            )
    if not isinstance(value, dict):
        raise TraceError(
            f"malformed trace for {where}: run(case) returned {type(value).__name__}, expected a "
            "dict or Trace with 'answer', 'tool_calls', 'retrieved', 'context'"
        )
    try:
        trace = Trace.model_validate(value)
    except ValidationError as exc:
        raise TraceError(
            f"malformed trace for {where}; bad fields: {one_line_validation_error(exc)}"
        ) from None
    return trace.model_dump(mode="json", exclude_none=True)


def with_measured(
    trace: dict[str, Any], where: str, run_ms: float, turn_ms: list[float] | None = None
) -> dict[str, Any]:
    """The trace with what the plugin measured of its run (`measured`: the run's wall time, and
    each turn's when the plugin drove the turns). The field is the plugin's: a system's own
    `measured` is refused rather than overwritten."""
    if MEASURED in trace:
        raise TraceError(
            f"malformed trace for {where}: its field {MEASURED!r} is the plugin's own (the "
            "times it measures of the run); return your figures under another name, e.g. "
            '"timings": {"search_ms": 120}'
        )
    measured: dict[str, Any] = {RUN_MS: run_ms}
    if turn_ms:
        measured[TURNS_MS] = list(turn_ms)
    return {**trace, MEASURED: measured}
