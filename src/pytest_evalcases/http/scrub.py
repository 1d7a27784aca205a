"""Scrub one recorded HTTP interaction of credentials before it is written or matched.

Works on vcrpy's plain dicts, never on vcrpy objects (this module imports no vcrpy):
- a request as `Request._to_dict()` gives it: `{"method", "uri", "body", "headers"}`, headers
  `{name: [value, ...]}`, body bytes, str or None;
- a response as the stubs record it: `{"status": {"code", "message"}, "headers": {name: [value,
  ...]}, "body": {"string": bytes | str}}` (aiohttp records `"body": {}` for an empty body).
A header value may also be a bare string (older cassettes, aiohttp's loader accepts both).

Every function is pure (the input is never modified), deterministic and idempotent: replay
applies `scrub_request` to a live request before matching it against a scrubbed recording, so
scrubbing twice must equal scrubbing once. What is not JSON is kept byte for byte.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote_plus

__all__ = [
    "SECRET_BODY_FIELDS",
    "SECRET_HEADERS",
    "SECRET_QUERY_PARAMETERS",
    "drop_secret_fields",
    "parsed_json_body",
    "scrub_request",
    "scrub_response",
    "scrub_uri",
    "with_body_length",
]

# All compared lower-cased: header names are case-insensitive, and a field or parameter that
# differs from these only by case is the same credential.
SECRET_HEADERS = frozenset(
    {
        "authorization",
        "api-key",
        "x-api-key",
        "x-goog-api-key",
        "cookie",
        "set-cookie",
        "openai-organization",
        "openai-project",
        "proxy-authorization",
        "ocp-apim-subscription-key",
    }
)
SECRET_QUERY_PARAMETERS = frozenset({"key", "api_key", "access_token"})
# Exact names only: `max_tokens`, `prompt_tokens` or `keywords` are not credentials.
SECRET_BODY_FIELDS = frozenset(
    {
        "api_key",
        "apikey",
        "key",
        "token",
        "access_token",
        "refresh_token",
        "id_token",
        "client_secret",
        "secret",
        "password",
    }
)

# Content codings we can undo with the standard library (brotli would need a dependency).
_GZIP_CODINGS = frozenset({"gzip", "x-gzip"})
_DEFLATE_CODINGS = frozenset({"deflate"})


def scrub_request(request: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a vcrpy request dict without credential headers, query parameters and JSON
    body fields; the content-length header follows a body that changed."""
    scrubbed = dict(request)
    headers = _without_secret_headers(request.get("headers"))
    if "uri" in request and isinstance(request["uri"], str):
        scrubbed["uri"] = scrub_uri(request["uri"])
    body, body_changed = _scrub_json_body(request.get("body"))
    if body_changed:
        scrubbed["body"] = body
        headers = _with_content_length(headers, body)
    if headers is not None:
        scrubbed["headers"] = headers
    return scrubbed


def scrub_response(response: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a vcrpy response dict without credential headers and JSON body fields. A gzip
    or deflate body is decoded first (else its fields could not be seen), its content-encoding
    header dropped and content-length set to the decoded length."""
    scrubbed = dict(response)
    if isinstance(response.get("status"), Mapping):
        scrubbed["status"] = dict(response["status"])
    headers = _without_secret_headers(response.get("headers"))
    body_dict = response.get("body")
    if isinstance(body_dict, Mapping):
        body_dict = dict(body_dict)
        if "string" in body_dict:
            body, headers, decoded = _decode_content(body_dict["string"], headers)
            body, body_changed = _scrub_json_body(body)
            if decoded or body_changed:
                body_dict["string"] = body
                headers = _with_content_length(headers, body)
        scrubbed["body"] = body_dict
    if headers is not None:
        scrubbed["headers"] = headers
    return scrubbed


def with_body_length(message: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a request or response dict whose content-length header, when it has one, is
    its body's byte length. Call it after anything else rewrote a body (redaction replaces a
    secret by a marker of another length): a stale length makes urllib3 reject a replayed
    response."""
    updated = dict(message)
    body = message.get("body")
    if isinstance(body, Mapping):  # a response: the body is under "string"
        updated["body"] = dict(body)
        body = body.get("string")
    headers = _copied_headers(message.get("headers"))
    if headers is not None:
        updated["headers"] = _with_content_length(headers, body)
    return updated


def scrub_uri(uri: str) -> str:
    """`uri` without the password of its user part (`https://user:pw@host` -> `https://user@host`)
    and without the query parameters named in SECRET_QUERY_PARAMETERS; the others keep their
    order and their exact encoding (re-encoding would change what replay matches)."""
    uri = _without_password(uri)
    base, question_mark, rest = uri.partition("?")
    if not question_mark or "#" in base:
        return uri
    query, hash_mark, fragment = rest.partition("#")
    parts = query.split("&")
    kept = [part for part in parts if not _is_secret_parameter(part)]
    if len(kept) == len(parts):
        return uri
    new_query = "&".join(kept)
    return f"{base}{'?' + new_query if new_query else ''}{hash_mark}{fragment}"


def _without_password(uri: str) -> str:
    """Dropped rather than redacted: a marker in the host part (`[REDACTED:...]`) is not a URL
    that urlsplit can read."""
    scheme, separator, rest = uri.partition("://")
    if not separator:
        return uri
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority = rest[:end]
    userinfo, at, host = authority.rpartition("@")
    if not at or ":" not in userinfo:
        return uri
    user = userinfo.partition(":")[0]
    return f"{scheme}://{user}@{host}{rest[end:]}"


def _is_secret_parameter(part: str) -> bool:
    name = part.partition("=")[0]
    return unquote_plus(name).lower() in SECRET_QUERY_PARAMETERS


def parsed_json_body(body: Any) -> Any | None:
    """The parsed JSON of a request or response body that holds a JSON object or array (bytes,
    str, or an already parsed dict/list), else None. For matching bodies as data: key order
    and whitespace never matter."""
    if isinstance(body, dict | list):
        return body
    text = _body_text(body)
    if text is None:
        return None
    stripped = text.lstrip()
    if not stripped or stripped[0] not in "{[":
        return None
    try:
        return json.loads(stripped)
    except ValueError:
        return None


def drop_secret_fields(value: Any) -> Any:
    """A parsed JSON value without the fields named in SECRET_BODY_FIELDS, at any depth (in
    objects nested in objects and arrays)."""
    return _drop_secret_fields(value)[0]


def _drop_secret_fields(value: Any) -> tuple[Any, bool]:
    """(value without secret fields, whether any was dropped); unchanged parts are shared."""
    if isinstance(value, dict):
        changed = False
        kept = {}
        for name, item in value.items():
            if isinstance(name, str) and name.lower() in SECRET_BODY_FIELDS:
                changed = True
                continue
            kept[name], item_changed = _drop_secret_fields(item)
            changed = changed or item_changed
        return (kept, True) if changed else (value, False)
    if isinstance(value, list):
        items = [_drop_secret_fields(item) for item in value]
        if any(item_changed for _, item_changed in items):
            return [item for item, _ in items], True
        return value, False
    return value, False


def _body_text(body: Any) -> str | None:
    if isinstance(body, str):
        return body
    if isinstance(body, bytes | bytearray):
        try:
            return bytes(body).decode("utf-8")
        except UnicodeDecodeError:
            return None
    return None


def _scrub_json_body(body: Any) -> tuple[Any, bool]:
    """(body without secret fields, whether it changed). A body that is not a JSON object or
    array, or has no secret field, is returned as it was: same type, same bytes."""
    parsed = parsed_json_body(body)
    if parsed is None:
        return body, False
    cleaned, changed = _drop_secret_fields(parsed)
    if not changed:
        return body, False
    if isinstance(body, dict | list):
        return cleaned, True
    text = json.dumps(cleaned, ensure_ascii=False, separators=(",", ":"))
    return (text if isinstance(body, str) else text.encode("utf-8")), True


def _without_secret_headers(headers: Any) -> dict[str, Any] | None:
    """A copy of a headers dict (its value lists copied too) without credential headers."""
    return _copied_headers(headers, drop=SECRET_HEADERS)


def _copied_headers(headers: Any, drop: frozenset[str] = frozenset()) -> dict[str, Any] | None:
    if not isinstance(headers, Mapping):
        return None
    return {
        name: list(values) if isinstance(values, list | tuple) else values
        for name, values in headers.items()
        if str(name).lower() not in drop
    }


def _header_values(headers: Mapping[str, Any] | None, wanted: str) -> tuple[str | None, list[str]]:
    """(the header's name as recorded, its values) for a lower-case header name."""
    for name, values in (headers or {}).items():
        if str(name).lower() == wanted:
            return name, list(values) if isinstance(values, list | tuple) else [values]
    return None, []


def _with_content_length(headers: dict[str, Any] | None, body: Any) -> dict[str, Any] | None:
    """Set an existing content-length header to the body's byte length (a stale length makes
    clients such as urllib3 reject a replayed body); add none where there was none."""
    name, values = _header_values(headers, "content-length")
    if headers is None or name is None:
        return headers
    if isinstance(body, str):
        length = len(body.encode("utf-8"))
    elif isinstance(body, bytes | bytearray):
        length = len(body)
    else:
        return headers
    updated = dict(headers)
    updated[name] = [str(length)] if isinstance(headers[name], list | tuple) else str(length)
    return updated


def _decode_content(
    body: Any, headers: dict[str, Any] | None
) -> tuple[Any, dict[str, Any] | None, bool]:
    """(decoded body, headers without the undone codings, whether anything was undone).

    Codings are undone last-applied first, and only gzip and deflate; an unknown coding stops
    there and stays in the header. A body that does not decompress is taken as already decoded,
    as vcrpy's own decode_compressed_response does: aiohttp records the decoded body under the
    server's content-encoding header, and a str body cannot be compressed bytes."""
    name, values = _header_values(headers, "content-encoding")
    if headers is None or name is None:
        return body, headers, False
    codings = [c.strip().lower() for value in values for c in str(value).split(",") if c.strip()]
    undone = False
    while codings and codings[-1] in _GZIP_CODINGS | _DEFLATE_CODINGS | {"identity"}:
        coding = codings.pop()
        undone = True
        if isinstance(body, bytes | bytearray) and coding != "identity":
            body = _decompress(bytes(body), gzip=coding in _GZIP_CODINGS)
    if not undone:
        return body, headers, False
    updated = {key: value for key, value in headers.items() if key != name}
    if codings:
        updated[name] = (
            [", ".join(codings)] if isinstance(headers[name], list) else ", ".join(codings)
        )
    return body, updated, True


def _decompress(data: bytes, gzip: bool) -> bytes:
    # deflate is meant to be zlib-wrapped, but some servers send raw deflate: try both.
    window_sizes = [zlib.MAX_WBITS | 16] if gzip else [zlib.MAX_WBITS, -zlib.MAX_WBITS]
    for wbits in window_sizes:
        try:
            return zlib.decompress(data, wbits)
        except zlib.error:
            continue
    return data
