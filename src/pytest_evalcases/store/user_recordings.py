"""A suite user's ingestion recording: `<cassettes>/<suite>/users/<id>.json` beside its HTTP
exchanges `users/<id>.http.json`.

The `.json` holds the ingestion's key (the user's files, the system's fingerprint and code, the
suite's `ingestion` settings), what `setup_user` returned, and what the ingestion took (seconds,
requests, tokens, cost). The `users/` folder is not a case's: the orphan scan, which reads the
suite folder's own `*.json` entries, never reads inside it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pydantic_core

from .. import __version__
from ..core.errors import CassetteError, NewerCassette
from ..core.hashing import content_hash
from .cassette import recording_header
from .files import read_recording, shown_path
from .folders import USERS_FOLDER
from .keys import CASSETTE_FORMAT

# How an ingestion reached this run, as the reports count them (`dry_run`: ingested by
# --live-dry-run, not written).
RECORDED, DRY_RUN, REUSED = "recorded", "dry_run", "reused"
REPLAYED_HTTP, REPLAYED = "replayed_http", "replayed"
# The figures a recording holds beside its key and result (None when unknown).
FIGURES = ("duration_s", "ready_wait_s", "requests", "usage", "cost_usd")


def user_recording_path(root: Path, suite: str, user_id: str) -> Path:
    return root / suite / USERS_FOLDER / f"{user_id}.json"


def user_http_path(root: Path, suite: str, user_id: str) -> Path:
    return root / suite / USERS_FOLDER / f"{user_id}.http.json"


@dataclass(slots=True)
class UserRecording:
    """A user's ingestion recording as read (or about to be written): its key, what
    `setup_user` returned, what the ingestion took (`figures`, by the names in FIGURES) and
    the hash of its HTTP exchanges (`http`)."""

    suite: Any
    user: Any
    key: dict[str, str]
    result: Any
    figures: dict[str, Any]
    http: str
    labels: dict[str, Any] | None = None
    recorded_at: str | None = None
    format: int = CASSETTE_FORMAT
    plugin_version: Any = None

    @property
    def identity(self) -> str:
        """Which ingestion this is: a short hash of what `setup_user` returned and of its HTTP
        exchanges. A case's key holds it (`ingested.<user>`), so a case recorded on another
        ingestion (a fresh memory id) is stale; an ingestion run again to the same result
        over the same exchanges (a provider's fresh values put back) keeps it."""
        return content_hash([self.result, self.http])

    def with_http(self, http: str | None) -> None:
        if http is not None:
            self.http = http

    def to_doc(self) -> dict[str, Any]:
        doc = recording_header(self.format, self.plugin_version, self.recorded_at, self.suite)
        doc.update(user=self.user, key=self.key, result=self.result, integrity={"http": self.http})
        doc.update((name, self.figures.get(name)) for name in FIGURES)
        if self.labels:
            doc["labels"] = self.labels
        return doc


def build_user_recording(
    suite: str,
    user_id: str,
    key: Mapping[str, str],
    labels: Mapping[str, Any],
    result: Any,
    figures: Mapping[str, Any],
    http: str,
) -> UserRecording:
    """An ingestion recording; `http` is the content hash of its HTTP exchanges as written."""
    return UserRecording(
        suite,
        user_id,
        dict(key),
        result,
        {name: figures.get(name) for name in FIGURES},
        http,
        dict(labels) if labels else None,
        datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        CASSETTE_FORMAT,
        __version__,
    )


def load_user_recording(path: Path, rootdir: Path) -> UserRecording | None:
    """The ingestion recording at `path`, None when there is none; CassetteError naming the
    file and the next step when it cannot be read or is not one (NewerCassette when a newer
    pytest-evalcases wrote it: never overwritten)."""
    shown = shown_path(path, rootdir)
    raw = read_recording(path, "ingestion recording", shown)
    if raw is None:
        return None
    try:
        doc = pydantic_core.from_json(raw)
    except ValueError as exc:
        raise CassetteError(
            f"ingestion recording {shown} is not valid JSON ({exc}); delete it and record the "
            "ingestion again with --eval-ingest-only --live"
        ) from None
    problem = _structure_problem(doc)
    if problem:
        if "newer pytest-evalcases" in problem:
            raise NewerCassette(f"ingestion recording {shown} {problem}")
        raise CassetteError(
            f"ingestion recording {shown} {problem}; delete it and record the ingestion again "
            "with --eval-ingest-only --live"
        )
    return UserRecording(
        doc.get("suite"),
        doc.get("user"),
        doc["key"],
        doc.get("result"),
        {name: doc.get(name) for name in FIGURES},
        doc["integrity"]["http"],
        doc.get("labels"),
        doc.get("recorded_at"),
        doc["format"],
        doc.get("plugin_version"),
    )


def figures_of(recording: UserRecording, source: str) -> dict[str, Any]:
    """A recording's figures as each of its user's case results carries them (`ingestion`).
    An ingestion this run paid for gets an `ingestion_id` of its own: under xdist, each worker
    ingests the users of its cases, and the reports count each ingestion once."""
    figures = {"user": recording.user, "source": source, "recorded_at": recording.recorded_at}
    figures.update((name, recording.figures.get(name)) for name in FIGURES)
    if source in (RECORDED, DRY_RUN):
        figures["ingestion_id"] = os.urandom(6).hex()  # (uuid costs 3 ms to import)
    return figures


def _structure_problem(doc: Any) -> str | None:
    if not isinstance(doc, dict):
        return "is not a JSON object"
    fmt = doc.get("format")
    if type(fmt) is not int:
        return 'has no integer "format"'
    if fmt > CASSETTE_FORMAT:
        return f"was recorded by a newer pytest-evalcases (format {fmt}); upgrade pytest-evalcases"
    key = doc.get("key")
    if not isinstance(key, dict) or not all(isinstance(v, str) for v in key.values()):
        return 'has no "key" of named hashes'
    integrity = doc.get("integrity")
    if not isinstance(integrity, dict) or not isinstance(integrity.get("http"), str):
        return 'has no "integrity" naming its HTTP recording'
    labels = doc.get("labels", {})
    if not isinstance(labels, dict):
        return '"labels" is not an object'
    return None
