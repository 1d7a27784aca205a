"""The `<case id>.http.json` file: a case's HTTP exchanges, in a form a reviewer can read.

JSON bodies are kept parsed (a diff shows the field that changed, not one long escaped string);
other text as a string; bytes that are not UTF-8 as base64. Responses are stored decoded, without
the wire's framing headers (content-length, transfer-encoding), which playback recomputes.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core.errors import CassetteError
from ..core.hashing import content_hash
from .files import read_recording

HTTP_FORMAT = 1
# Request headers are not matched on; only the content type is kept (the rest is SDK noise such
# as user agents, retry counters and platform names, which would churn every re-recording).
KEPT_REQUEST_HEADERS = frozenset({"content-type"})
FRAMING_HEADERS = frozenset({"content-length", "transfer-encoding"})


def encode_body(body: Any) -> dict[str, Any] | None:
    """A request or response body as stored: {"json": ...}, {"string": ...} or {"base64": ...}."""
    if body is None or body == b"" or body == "":
        return None
    if isinstance(body, dict | list):  # aiohttp's json= reaches vcrpy unserialised
        return {"json": body}
    if isinstance(body, str):
        body = body.encode("utf-8")
    if not isinstance(body, bytes | bytearray):
        return {"string": str(body)}
    try:
        text = bytes(body).decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(body).decode("ascii")}
    if text.lstrip()[:1] in ("{", "["):
        try:
            return {"json": json.loads(text)}
        except ValueError:
            pass
    return {"string": text}


def decode_body(stored: Mapping[str, Any] | None) -> bytes:
    if not stored:
        return b""
    if "json" in stored:
        return json.dumps(stored["json"], ensure_ascii=False, separators=(",", ":")).encode()
    if "base64" in stored:
        return base64.b64decode(stored["base64"])
    return str(stored.get("string", "")).encode("utf-8")


def _header_values(values: Any) -> list[str]:
    items = values if isinstance(values, list | tuple) else [values]
    return [v.decode("latin-1") if isinstance(v, bytes) else str(v) for v in items]


def stored_request(request: Mapping[str, Any]) -> dict[str, Any]:
    """A (scrubbed) vcrpy request dict as the file keeps it."""
    headers = {
        str(name).lower(): _header_values(values)
        for name, values in (request.get("headers") or {}).items()
        if str(name).lower() in KEPT_REQUEST_HEADERS
    }
    return {
        "method": str(request["method"]).upper(),
        "uri": str(request["uri"]),
        "headers": headers,
        "body": encode_body(request.get("body")),
    }


def stored_response(response: Mapping[str, Any]) -> dict[str, Any]:
    """A (scrubbed, decoded) vcrpy response dict as the file keeps it."""
    headers = {
        str(name): _header_values(values)
        for name, values in (response.get("headers") or {}).items()
        if str(name).lower() not in FRAMING_HEADERS
    }
    status = response.get("status") or {}
    return {
        "status": {"code": int(status.get("code", 200)), "message": status.get("message") or ""},
        "headers": headers,
        "body": encode_body((response.get("body") or {}).get("string")),
    }


def playable_response(stored: Mapping[str, Any]) -> dict[str, Any]:
    """The vcrpy response dict a stub plays: body bytes, with a content-length that fits them."""
    body = decode_body(stored.get("body"))
    headers = {name: list(values) for name, values in (stored.get("headers") or {}).items()}
    headers["content-length"] = [str(len(body))]
    return {"status": dict(stored["status"]), "headers": headers, "body": {"string": body}}


def http_document(suite: str, case_id: str, interactions: list[dict[str, Any]]) -> dict[str, Any]:
    return {"format": HTTP_FORMAT, "suite": suite, "case": case_id, "interactions": interactions}


def interactions_hash(interactions: list[dict[str, Any]]) -> str:
    """What the case cassette records of its HTTP file: a replay refuses a file that differs."""
    return content_hash(interactions)


def load_http(path: Path, shown: str) -> list[dict[str, Any]] | None:
    """The interactions of an HTTP recording; None when there is none. It is refused before
    reading when it is not a regular file or is over the cassettes' size cap."""
    raw = read_recording(path, "HTTP recording", shown)
    if raw is None:
        return None
    try:
        doc = json.loads(raw)
    except ValueError as exc:
        raise CassetteError(
            f"HTTP recording {shown} is not valid JSON ({exc}); re-record with --live"
        ) from None
    interactions = doc.get("interactions") if isinstance(doc, dict) else None
    if not isinstance(interactions, list) or not all(
        isinstance(i, dict)
        and isinstance(i.get("request"), dict)
        and isinstance(i.get("response"), dict)
        for i in interactions
    ):
        raise CassetteError(
            f"HTTP recording {shown} is not a list of request/response interactions; "
            "re-record with --live"
        )
    if isinstance(doc.get("format"), int) and doc["format"] > HTTP_FORMAT:
        raise CassetteError(
            f"HTTP recording {shown} was recorded by a newer pytest-evalcases (format "
            f"{doc['format']}); upgrade pytest-evalcases"
        )
    return interactions
