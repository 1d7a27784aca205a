"""Matching a live request against the recorded ones, and saying how the closest one differs.

A request matches on method, scheme, host, port, path, query and body; JSON bodies are compared
as parsed JSON (key order never matters), less the suite's `http_ignore` paths.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from ..core.json_paths import parse_json_path

__all__ = [
    "ABSENT",
    "closest",
    "describe",
    "json_differences",
    "parse_json_path",
    "request_view",
    "summarise",
    "view_differences",
    "without_paths",
]

DEFAULT_PORTS = {"http": 80, "https": 443}
SHOWN_DIFFS = 3


def _drop(value: Any, parts: list[str | int]) -> None:
    head, rest = parts[0], parts[1:]
    if head == "*":
        children = (
            list(range(len(value)))
            if isinstance(value, list)
            else list(value)
            if isinstance(value, dict)
            else []
        )
    else:
        children = [head]
    for child in reversed(children):
        try:
            if not rest:
                del value[child]
            else:
                _drop(value[child], rest)
        except (KeyError, IndexError, TypeError):
            continue


def without_paths(value: Any, paths: Iterable[list[str | int]]) -> Any:
    paths = list(paths)
    if not paths:
        return value
    value = copy.deepcopy(value)
    for parts in paths:
        _drop(value, parts)
    return value


def request_view(stored: Mapping[str, Any], ignore: list[list[str | int]]) -> tuple[Any, ...]:
    """What a request is matched on."""
    url = urlsplit(stored["uri"])
    scheme = url.scheme.lower()
    body = stored.get("body") or {}
    if "json" in body:
        content: Any = ("json", without_paths(body["json"], ignore))
    else:
        content = ("raw", body.get("string", body.get("base64")))
    return (
        stored["method"],
        scheme,
        (url.hostname or "").lower(),
        url.port or DEFAULT_PORTS.get(scheme),
        url.path or "/",
        tuple(sorted(parse_qsl(url.query, keep_blank_values=True))),
        content,
    )


def describe(stored: Mapping[str, Any]) -> str:
    """`POST 127.0.0.1:8765/v1/chat/completions` (the query is left out: it may be long)."""
    url = urlsplit(stored["uri"])
    return f"{stored['method']} {url.netloc}{url.path or '/'}"


def json_differences(old: Any, new: Any, path: str = "$") -> list[tuple[str, Any, Any]]:
    """(path, old, new) for every leaf that differs; a missing side is shown as <absent>."""
    if isinstance(old, dict) and isinstance(new, dict):
        found = []
        for key in sorted(old.keys() | new.keys(), key=str):
            child = (
                f"{path}.{key}"
                if re.fullmatch(r"[A-Za-z_][\w-]*", str(key))
                else (f"{path}[{key!r}]")
            )
            found += json_differences(old.get(key, _ABSENT), new.get(key, _ABSENT), child)
        return found
    if isinstance(old, list) and isinstance(new, list):
        found = []
        for index in range(max(len(old), len(new))):
            found += json_differences(
                old[index] if index < len(old) else _ABSENT,
                new[index] if index < len(new) else _ABSENT,
                f"{path}[{index}]",
            )
        return found
    return [] if old == new else [(path, old, new)]


class _Absent:
    def __repr__(self) -> str:
        return "<absent>"


_ABSENT = _Absent()
ABSENT = _ABSENT  # what json_differences gives for the side a field is missing from


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def view_differences(recorded: tuple[Any, ...], live: tuple[Any, ...]) -> list[str]:
    """Readable differences between two request views, body paths first."""
    names = ("method", "scheme", "host", "port", "path", "query")
    found = [
        f"{name} ({_short(old)} -> {_short(new)})"
        for name, old, new in zip(names, recorded[:6], live[:6], strict=True)
        if old != new
    ]
    (old_kind, old_body), (new_kind, new_body) = recorded[6], live[6]
    if old_kind == new_kind == "json":
        found = [
            f"{path} ({_short(old)} -> {_short(new)})"
            for path, old, new in json_differences(old_body, new_body)
        ] + found
    elif (old_kind, old_body) != (new_kind, new_body):
        found.insert(0, "the body")
    return found


def closest(recorded: list[tuple[Any, ...]], live: tuple[Any, ...]) -> tuple[int, list[str]] | None:
    """The recorded request nearest to `live` (same endpoint first, then fewest differences)."""
    best: tuple[tuple[int, int], int, list[str]] | None = None
    for index, view in enumerate(recorded):
        differences = view_differences(view, live)
        endpoint_misses = sum(a != b for a, b in zip(view[:6], live[:6], strict=True))
        rank = (endpoint_misses, len(differences))
        if best is None or rank < best[0]:
            best = (rank, index, differences)
    return None if best is None else (best[1], best[2])


def summarise(differences: list[str]) -> str:
    shown = ", ".join(differences[:SHOWN_DIFFS])
    more = len(differences) - SHOWN_DIFFS
    return shown + (f" and {more} more" if more > 0 else "")
