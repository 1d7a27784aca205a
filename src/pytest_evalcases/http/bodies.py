"""A stored body as the JSON documents it holds: its JSON, or each JSON event of a streamed body
(server-sent events `data: {...}`, or JSON lines as Ollama streams), and the body rebuilt from
changed documents with every other line kept byte for byte. Pure.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["StreamLine", "documents", "stream_lines", "with_documents"]


@dataclass(slots=True)
class StreamLine:
    """One line of a streamed body, and the JSON it holds."""

    raw: str
    head: str = ""  # "data: " of a server-sent event, "" for a JSON line
    tail: str = ""  # "\r" of a CRLF line
    doc: Any = None  # the line's JSON (an object or array), None for any other line


def stream_lines(text: str) -> list[StreamLine] | None:
    """A streamed body, line by line: server-sent events (`data: {...}`) or JSON lines (Ollama);
    None when no line holds a JSON object or array."""
    if "\n" not in text.strip():
        return None
    lines, found = [], False
    for raw in text.split("\n"):
        line = StreamLine(raw)
        body, line.tail = (raw[:-1], "\r") if raw.endswith("\r") else (raw, "")
        if body.startswith("data:"):
            payload = body[5:]
            line.head = "data:" + payload[: len(payload) - len(payload.lstrip(" "))]
            payload = payload.lstrip(" ")
        else:
            payload = body
        if payload[:1] in ("{", "["):
            try:
                line.doc = json.loads(payload)
            except ValueError:
                line.doc = None
            found = found or line.doc is not None
        lines.append(line)
    return lines if found else None


def documents(body: Mapping[str, Any] | None) -> list[Any]:
    """The JSON documents of a stored body: its JSON, or each JSON event of a stream."""
    if not body:
        return []
    if "json" in body:
        return [body["json"]]
    text = body.get("string")
    lines = stream_lines(text) if isinstance(text, str) else None
    return [line.doc for line in lines or () if line.doc is not None]


def with_documents(
    body: Mapping[str, Any] | None, change: Callable[[int, Any], Any]
) -> Mapping[str, Any] | None:
    """The stored body with each JSON document replaced by `change(index, document)`; a stream's
    lines whose document is unchanged keep their bytes."""
    if not body:
        return body
    if "json" in body:
        return {**body, "json": change(0, body["json"])}
    text = body.get("string")
    lines = stream_lines(text) if isinstance(text, str) else None
    if lines is None:
        return body
    out, index = [], 0
    for line in lines:
        if line.doc is None:
            out.append(line.raw)
            continue
        new = change(index, line.doc)
        index += 1
        if new == line.doc:
            out.append(line.raw)
        else:
            dumped = json.dumps(new, ensure_ascii=False, separators=(",", ":"))
            out.append(f"{line.head}{dumped}{line.tail}")
    return {**body, "string": "\n".join(out)}
