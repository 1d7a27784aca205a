"""A re-record's HTTP exchanges, compared with the old ones and written with the old form of the
values a provider makes fresh on every call (http/volatile.py lists them).

Re-recording an unchanged agent must leave its `.http.json` byte for byte, and re-recording a
real change must show the change alone:
- `same_exchanges`: equal once the fresh values, the suite's `http_ignore` paths, the `usage`
  counters and the response headers are left out, in any order;
- `keep_old_volatile` pairs the new exchanges with the old ones: an exchange that is the same
  is kept whole in its old form; one that changed is written anew, but each fresh value whose
  place exists in its old partner takes the old value back; and every fresh id found so (a
  string) is replaced by its old form wherever else it appears (the requests that echo it, and,
  through `with_old_ids`, the case's trace), so the recording stays one `--replay-http` serves;
  a value listed in `keep_new` (what a user's ingestion returned holds it: a new memory id the
  cases use) keeps its new form, and its exchange is written anew;
- `exchange_differences`: what differs between an exchange and its old partner, by field.
Streamed bodies are read event by event (http/bodies.py). Pure: no vcrpy, no I/O.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .bodies import documents, stream_lines, with_documents
from .match import json_differences, request_view, without_paths
from .volatile import COUNTER_KEYS, MIN_ID_CHARS, JsonPath, Volatility

__all__ = [
    "Rerecorded",
    "exchange_differences",
    "keep_old_volatile",
    "same_exchanges",
    "with_old_ids",
]


def _without_counters(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_counters(v) for k, v in value.items() if k not in COUNTER_KEYS}
    if isinstance(value, list):
        return [_without_counters(v) for v in value]
    return value


def _body_view(body: Mapping[str, Any] | None, paths: list[JsonPath]) -> Any:
    """A response body as compared: its JSON documents without the volatile values and counters
    (a stream's other lines apart, as they are), or the stored body when it holds no JSON."""
    if not body:
        return None
    if "json" in body:
        return {"json": _without_counters(without_paths(body["json"], paths))}
    text = body.get("string")
    lines = stream_lines(text) if isinstance(text, str) else None
    if lines is None:
        return dict(body)
    return {
        "stream": [
            _without_counters(without_paths(line.doc, paths))
            for line in lines
            if line.doc is not None
        ],
        "lines": [line.raw.strip() for line in lines if line.doc is None and line.raw.strip()],
    }


def _request_view(
    request: Mapping[str, Any], paths: list[JsonPath], ignore: Sequence[list[str | int]]
) -> tuple[Any, ...]:
    body = request.get("body") or {}
    if "json" in body:
        request = {**request, "body": {"json": without_paths(body["json"], paths)}}
    return request_view(request, list(ignore))


def _view(
    exchange: Mapping[str, Any], volatility: Volatility, ignore: Sequence[list[str | int]]
) -> str:
    """An exchange as compared: the request as --replay-http matches it (less `http_ignore` and
    the ids a client echoes), the response's status and body (less volatile values and
    counters). Response headers are left out: they say when and where, not what."""
    request, response = exchange["request"], exchange.get("response") or {}
    request_paths, response_paths = volatility.paths(request["uri"])
    view = (
        _request_view(request, request_paths, ignore),
        (response.get("status") or {}).get("code"),
        _body_view(response.get("body"), response_paths),
    )
    return json.dumps(view, sort_keys=True, default=str)


def same_exchanges(
    old: Sequence[Mapping[str, Any]],
    new: Sequence[Mapping[str, Any]],
    volatility: Volatility,
    ignore: Sequence[list[str | int]] = (),
) -> bool:
    """The same exchanges but for volatile values, in any order (concurrent requests of one case
    may finish in any)."""
    if len(old) != len(new):
        return False
    try:
        return sorted(_view(e, volatility, ignore) for e in old) == sorted(
            _view(e, volatility, ignore) for e in new
        )
    except (KeyError, TypeError, AttributeError, ValueError):  # a malformed old file: changed
        return False


# ---- JSON locations ----------------------------------------------------------------------------
_MISSING = object()


def _locations(value: Any, parts: JsonPath, at: JsonPath = ()) -> Iterator[tuple[JsonPath, Any]]:
    """(concrete location, value) of every place a JSONPath (with `*`) names in `value`."""
    if not parts:
        yield at, value
        return
    head, rest = parts[0], parts[1:]
    if head == "*":
        children: Iterable[tuple[Any, Any]] = (
            enumerate(value)
            if isinstance(value, list)
            else value.items()
            if isinstance(value, dict)
            else ()
        )
    elif isinstance(head, int):
        children = [(head, value[head])] if isinstance(value, list) and head < len(value) else []
    else:
        children = [(head, value[head])] if isinstance(value, dict) and head in value else []
    for key, child in list(children):
        yield from _locations(child, rest, (*at, key))


def _at(value: Any, location: JsonPath) -> Any:
    for key in location:
        if isinstance(key, int) and isinstance(value, list) and key < len(value):
            value = value[key]
        elif isinstance(key, str) and isinstance(value, dict) and key in value:
            value = value[key]
        else:
            return _MISSING
    return value


def _put(value: Any, location: JsonPath, new: Any) -> None:
    for key in location[:-1]:
        value = value[key]
    value[location[-1]] = new


def _keep_old_values(
    old: Any,
    new: Any,
    paths: list[JsonPath],
    fresh_ids: dict[str, str],
    keep_new: Collection[str] = (),
) -> Any:
    """A copy of `new` whose volatile values take their old form wherever `old` has a value of
    the same kind at the same place (but those in `keep_new`); each fresh id put back so is
    noted in `fresh_ids`."""
    if old is _MISSING or not paths:
        return new
    kept = copy.deepcopy(new)
    for parts in paths:
        for location, value in list(_locations(kept, parts)):
            before = _at(old, location)
            if before is _MISSING or before == value or type(before) is not type(value):
                continue
            if isinstance(value, str) and value in keep_new:
                continue
            _put(kept, location, before)
            if isinstance(value, str) and len(value) >= MIN_ID_CHARS:
                fresh_ids.setdefault(value, before)
    return kept


def with_old_ids(value: Any, fresh_ids: Mapping[str, str]) -> Any:
    """A copy of a JSON value with every string that is a fresh id replaced by its old form."""
    if not fresh_ids:
        return value
    if isinstance(value, str):
        return fresh_ids.get(value, value)
    if isinstance(value, dict):
        return {k: with_old_ids(v, fresh_ids) for k, v in value.items()}
    if isinstance(value, list):
        return [with_old_ids(v, fresh_ids) for v in value]
    return value


# ---- a re-record ---------------------------------------------------------------------------------
@dataclass
class Rerecorded:
    """The exchanges to write for a re-recorded case, and what the re-record changed."""

    exchanges: list[dict[str, Any]]
    # Each fresh id of the new exchanges -> its old form (for the trace, which may hold them).
    fresh_ids: dict[str, str] = field(default_factory=dict)
    # Only volatile values differ: `exchanges` is the old list, as it was.
    unchanged: bool = False
    # (old partner or None for an added exchange, the exchange as written) of each change.
    changed: list[tuple[dict[str, Any] | None, dict[str, Any]]] = field(default_factory=list)


def keep_old_volatile(
    old: Sequence[dict[str, Any]],
    new: Sequence[dict[str, Any]],
    volatility: Volatility,
    ignore: Sequence[list[str | int]] = (),
    keep_new: Collection[str] = (),
) -> Rerecorded:
    """The new exchanges, written so that their diff against `old` holds real changes only.

    Each new exchange is paired with an old one: first one that is the same (its volatile values
    aside), else the closest unpaired one to the same endpoint. A same one is kept in its old
    form; a changed one keeps its partner's volatile values where their places exist in both
    (ids, times, volatile headers); then every fresh id is replaced by its old form everywhere
    else (the requests that echo it). A malformed old list pairs with nothing. `keep_new`: fresh
    values that keep their new form (what an ingestion returned holds them); an exchange whose
    volatile values hold one is written anew, never kept in its old form."""
    try:
        old_views = [_view(e, volatility, ignore) for e in old]
    except (KeyError, TypeError, AttributeError, ValueError):
        old, old_views = [], []
    new_views = [_view(e, volatility, ignore) for e in new]
    partner: dict[int, int] = {}
    free: dict[str, list[int]] = {}
    for index, view in enumerate(old_views):
        free.setdefault(view, []).append(index)
    for index, view in enumerate(new_views):
        if free.get(view):
            partner[index] = free[view].pop(0)
    same = {i for i in partner if not (keep_new and _holds(new[i], volatility, keep_new))}
    if len(same) == len(new) == len(old):
        fresh_ids: dict[str, str] = {}
        for index in same:
            _carry(old[partner[index]], new[index], volatility, fresh_ids, keep_new)
        return Rerecorded(list(old), _one_to_one(fresh_ids), unchanged=True)
    taken = set(partner.values())
    for index in range(len(new)):
        if index not in partner:
            match = _closest(old, taken, new[index], volatility, ignore)
            if match is not None:
                partner[index] = match
                taken.add(match)

    fresh_ids = {}
    carried: dict[int, dict[str, Any]] = {}
    for index in sorted(partner):  # in the order the requests were made
        carried[index] = _carry(old[partner[index]], new[index], volatility, fresh_ids, keep_new)
    fresh_ids = _one_to_one(fresh_ids)
    written: list[dict[str, Any]] = []
    changed: list[tuple[dict[str, Any] | None, dict[str, Any]]] = []
    for index, exchange in enumerate(new):
        if index in same:
            written.append(old[partner[index]])
            continue
        exchange = _with_ids(carried.get(index, exchange), fresh_ids)
        written.append(exchange)
        changed.append((old[partner[index]] if index in partner else None, exchange))
    return Rerecorded(written, fresh_ids, changed=changed)


def _one_to_one(fresh_ids: dict[str, str]) -> dict[str, str]:
    """Only the fresh ids whose old form no other fresh id takes: two new ids never merge."""
    targets: dict[str, int] = {}
    for before in fresh_ids.values():
        targets[before] = targets.get(before, 0) + 1
    return {new: before for new, before in fresh_ids.items() if targets[before] == 1}


def _carry(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    volatility: Volatility,
    fresh_ids: dict[str, str],
    keep_new: Collection[str] = (),
) -> dict[str, Any]:
    """`new` with `old`'s volatile values put back where both have them (bodies, headers), but
    those in `keep_new`."""
    request_paths, response_paths = volatility.paths(new["request"]["uri"])
    old_request_docs = documents(old["request"].get("body"))
    old_response_docs = documents((old.get("response") or {}).get("body"))

    def in_request(index: int, doc: Any) -> Any:
        before = old_request_docs[index] if index < len(old_request_docs) else _MISSING
        return _keep_old_values(before, doc, request_paths, fresh_ids, keep_new)

    def in_response(index: int, doc: Any) -> Any:
        before = old_response_docs[index] if index < len(old_response_docs) else _MISSING
        return _keep_old_values(before, doc, response_paths, fresh_ids, keep_new)

    request = {**new["request"], "body": with_documents(new["request"].get("body"), in_request)}
    response = dict(new.get("response") or {})
    response["body"] = with_documents(response.get("body"), in_response)
    old_headers = {
        str(name).lower(): values
        for name, values in ((old.get("response") or {}).get("headers") or {}).items()
    }
    headers = dict(response.get("headers") or {})
    for name in headers:
        before = old_headers.get(str(name).lower())
        if before is not None and volatility.is_volatile_header(str(name)):
            headers[name] = copy.deepcopy(before)
    if "headers" in response:
        response["headers"] = headers
    return {**new, "request": request, "response": response}


def _holds(exchange: Mapping[str, Any], volatility: Volatility, values: Collection[str]) -> bool:
    """Whether a volatile value of the exchange's bodies is one of `values`."""
    request_paths, response_paths = volatility.paths(exchange["request"]["uri"])
    sides = (
        (exchange["request"].get("body"), request_paths),
        ((exchange.get("response") or {}).get("body"), response_paths),
    )
    return any(
        isinstance(value, str) and value in values
        for body, paths in sides
        for doc in documents(body)
        for parts in paths
        for _, value in _locations(doc, parts)
    )


def _with_ids(exchange: dict[str, Any], fresh_ids: Mapping[str, str]) -> dict[str, Any]:
    if not fresh_ids:
        return exchange

    def swap(_: int, doc: Any) -> Any:
        return with_old_ids(doc, fresh_ids)

    request = {
        **exchange["request"],
        "body": with_documents(exchange["request"].get("body"), swap),
    }
    response = dict(exchange.get("response") or {})
    response["body"] = with_documents(response.get("body"), swap)
    return {**exchange, "request": request, "response": response}


def _closest(
    old: Sequence[Mapping[str, Any]],
    taken: set[int],
    exchange: Mapping[str, Any],
    volatility: Volatility,
    ignore: Sequence[list[str | int]],
) -> int | None:
    """The unpaired old exchange with the same method and path whose request differs least: at
    the same scheme, host and port first (a moved base URL still pairs, and is named)."""
    request_paths, _ = volatility.paths(exchange["request"]["uri"])
    view = _request_view(exchange["request"], request_paths, ignore)
    best: tuple[int, int, int] | None = None
    for index, candidate in enumerate(old):
        if index in taken:
            continue
        other = _request_view(candidate["request"], request_paths, ignore)
        if (other[0], other[4]) != (view[0], view[4]):  # method, path
            continue
        moved = int(other[1:4] != view[1:4])  # scheme, host, port
        rank = (moved, _request_distance(other, view), index)
        if best is None or rank < best:
            best = rank
    return None if best is None else best[2]


def _request_distance(one: tuple[Any, ...], other: tuple[Any, ...]) -> int:
    """How many leaves of the query and body differ (a body that is not JSON counts as one)."""
    distance = int(one[5] != other[5])
    (kind, body), (other_kind, other_body) = one[6], other[6]
    if kind == other_kind == "json":
        return distance + len(json_differences(body, other_body))
    return distance + int((kind, body) != (other_kind, other_body))


def exchange_differences(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    volatility: Volatility,
    ignore: Sequence[list[str | int]] = (),
) -> list[tuple[str, str, Any, Any]]:
    """(side, where, old, new) for each difference between two exchanges, volatile values and
    counters aside: side is "request" or "response"; where a JSONPath (`$.tools[0].name`), or
    `method`, `url`, `query`, `status`, `body` (a body that is not JSON), `events[3]…` (a
    streamed body's JSON events), `lines` (its other lines)."""
    request_paths, response_paths = volatility.paths(new["request"]["uri"])
    before = _request_view(old["request"], request_paths, ignore)
    after = _request_view(new["request"], request_paths, ignore)
    found: list[tuple[str, str, Any, Any]] = []
    if before[0] != after[0]:
        found.append(("request", "method", before[0], after[0]))
    if before[1:5] != after[1:5]:
        found.append(("request", "url", old["request"].get("uri"), new["request"].get("uri")))
    if before[5] != after[5]:
        found.append(("request", "query", dict(before[5]), dict(after[5])))
    (old_kind, old_body), (new_kind, new_body) = before[6], after[6]
    if old_kind == new_kind == "json":
        found += [("request", *d) for d in json_differences(old_body, new_body)]
    elif (old_kind, old_body) != (new_kind, new_body):
        found.append(("request", "body", old_body, new_body))
    old_response, new_response = old.get("response") or {}, new.get("response") or {}
    old_status = (old_response.get("status") or {}).get("code")
    new_status = (new_response.get("status") or {}).get("code")
    if old_status != new_status:
        found.append(("response", "status", old_status, new_status))
    old_view = _body_view(old_response.get("body"), response_paths)
    new_view = _body_view(new_response.get("body"), response_paths)
    if (
        isinstance(old_view, dict)
        and isinstance(new_view, dict)
        and old_view.keys() == new_view.keys() == {"json"}
    ):
        found += [("response", *d) for d in json_differences(old_view["json"], new_view["json"])]
    elif (
        isinstance(old_view, dict)
        and isinstance(new_view, dict)
        and old_view.keys() == new_view.keys() == {"stream", "lines"}
    ):
        found += [
            ("response", "events" + where[1:], was, now)
            for where, was, now in json_differences(old_view["stream"], new_view["stream"])
        ]
        if old_view["lines"] != new_view["lines"]:
            found.append(("response", "lines", old_view["lines"], new_view["lines"]))
    elif old_view != new_view:
        found.append(("response", "body", old_view, new_view))
    return found
