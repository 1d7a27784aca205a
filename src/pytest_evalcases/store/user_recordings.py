"""A suite user's ingestion recording: `<cassettes>/<suite>/users/<id>.json` beside its HTTP
exchanges `users/<id>.http.json`; and the recordings of the user's other ingestion variants,
kept side by side in `users/variants/<variant>/<id>.json` (and `.http.json`).

A variant is a set of the suite's `ingestion` settings, named by a short hash of them
(`variant_of`): the recording of the last variant recorded is at `users/<id>.json`, where it
always was; when another variant is recorded, the one there moves to its variant's folder
(engine/ingestion.py), so switching a setting back finds its recording again.

The `.json` holds the ingestion's key (the user's files, the system's fingerprint and code, the
suite's `ingestion` settings), what `setup_user` returned, and what the ingestion took (seconds,
requests, tokens, cost). The `users/` folder is not a case's: the orphan scan, which reads the
suite folder's own `*.json` entries, never reads inside it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pydantic_core

from .. import __version__
from ..core.errors import CassetteError, NewerCassette
from ..core.hashing import VARIANT_CHARS, content_hash
from ..domain.ingestion_phases import DOCUMENTS_ID, PREPARATION_ID, SHARED_PHASES
from .cassette import recording_header
from .files import read_recording, shown_path
from .folders import DOCUMENTS_FOLDER, USERS_FOLDER, VARIANTS_FOLDER
from .keys import (
    CASSETTE_FORMAT,
    DOCUMENTS_INGESTION_PREFIX,
    DOCUMENTS_PREPARATION_PREFIX,
    INGESTION_PREFIX,
)

# How an ingestion reached this run, as the reports count them (`dry_run`: ingested by
# --live-dry-run, not written).
RECORDED, DRY_RUN, REUSED = "recorded", "dry_run", "reused"
REPLAYED_HTTP, REPLAYED = "replayed_http", "replayed"
# The figures a recording holds beside its key and result (None when unknown).
FIGURES = ("duration_s", "ready_wait_s", "requests", "usage", "cost_usd")
# The key fields that make a variant: a user's ingestion settings, or the shared documents'
# (a recording's key holds one kind or the other).
_SETTINGS = (INGESTION_PREFIX, DOCUMENTS_INGESTION_PREFIX)


def user_recording_path(root: Path, suite: str, user_id: str) -> Path:
    return root / suite / USERS_FOLDER / f"{user_id}.json"


def variant_of(key: Mapping[str, str], phase: str | None = None) -> str:
    """The ingestion variant a recording's key (or a case's) names: a short hash of its
    `ingestion.*` fields, the suite's ingestion settings (the same for every user of a suite),
    or of the shared documents' (`documents.ingestion.*`); of a preparation's (`phase`
    "preparation"), its `documents.preparation.*` fields."""
    settings = {name: value for name, value in key.items() if name.startswith(_prefixes(phase))}
    return content_hash(settings)[:VARIANT_CHARS]


def _prefixes(phase: str | None) -> tuple[str, ...]:
    return (DOCUMENTS_PREPARATION_PREFIX,) if phase == PREPARATION_ID else _SETTINGS


def kept_variant_folder(root: Path, suite: str, variant: str) -> Path:
    """Where the recordings of an ingestion variant that is not the last recorded are kept."""
    return root / suite / USERS_FOLDER / VARIANTS_FOLDER / variant


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
    # The suite's ingestion settings it was recorded with (None: none, or recorded before
    # they were kept): what `--eval-ingestion VARIANT` runs with.
    settings: dict[str, Any] | None = None
    # The shared documents' phase it records ("documents", "preparation"); None: a user's.
    phase: str | None = None

    @property
    def variant(self) -> str:
        return variant_of(self.key, self.phase)

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
        if self.settings is not None:
            doc["ingestion"] = self.settings
        if self.phase is not None:
            doc["phase"] = self.phase
        return doc


def build_user_recording(
    suite: str,
    user_id: str,
    key: Mapping[str, str],
    labels: Mapping[str, Any],
    result: Any,
    figures: Mapping[str, Any],
    http: str,
    settings: Mapping[str, Any] | None = None,
    phase: str | None = None,
) -> UserRecording:
    """An ingestion recording; `http` is the content hash of its HTTP exchanges as written;
    `settings` the suite's ingestion settings; `phase` the shared documents' phase it records."""
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
        dict(settings) if settings is not None else None,
        phase,
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
        doc.get("ingestion") if isinstance(doc.get("ingestion"), dict) else None,
        doc["phase"] if doc.get("phase") in SHARED_PHASES else None,
    )


def figures_of(recording: UserRecording, source: str) -> dict[str, Any]:
    """A recording's figures as each of its user's case results carries them (`ingestion`),
    with its ingestion variant.
    An ingestion this run paid for gets an `ingestion_id` of its own: under xdist, each worker
    ingests the users of its cases, and the reports count each ingestion once."""
    figures = {
        "user": recording.user,
        "source": source,
        "recorded_at": recording.recorded_at,
        "variant": recording.variant,
    }
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


@dataclass(slots=True)
class ListedRecording:
    """One ingestion recording on disk: where (`kept`: in `users/variants/`, not the variant
    last recorded), and what it holds (None with `problem` when it cannot be read). The
    shared documents' are listed as user "documents"."""

    path: Path
    user: str
    kept: bool
    recording: UserRecording | None
    problem: str | None = None


def list_user_recordings(
    root: Path, suite: str, rootdir: Path | None = None, shared: bool = False
) -> list[ListedRecording]:
    """Every ingestion recording of a suite: by user, its last recorded variant, then its kept
    ones, newest first. A file that cannot be read is listed with its problem (paths in
    messages relative to `rootdir`, by default the cassette folder's parent). `shared`: the
    recordings of the suite's shared documents instead (`documents/`)."""
    users = root / suite / (DOCUMENTS_FOLDER if shared else USERS_FOLDER)
    paths = [(path, False) for path in _recording_files(users)]
    variants = users / VARIANTS_FOLDER
    if variants.is_dir() and not variants.is_symlink():
        for folder in sorted(variants.iterdir()):
            if folder.is_dir() and not folder.is_symlink():
                paths += [(path, True) for path in _recording_files(folder)]
    listed = []
    for path, kept in paths:
        user = path.name[: -len(".json")]
        if shared:  # documents/ingestion.json, documents/preparation.json
            user = PREPARATION_ID if user == PREPARATION_ID else DOCUMENTS_ID
        try:
            found = load_user_recording(path, rootdir or root.parent)
        except CassetteError as exc:
            listed.append(ListedRecording(path, user, kept, None, str(exc)))
            continue
        if found is not None:
            listed.append(ListedRecording(path, user, kept, found))
    listed.sort(key=lambda entry: entry.recording and entry.recording.recorded_at or "")
    listed.reverse()  # newest first, then (a stable sort) by user, the last recorded first
    listed.sort(key=lambda entry: (entry.user, entry.kept))
    return listed


def _recording_files(folder: Path) -> list[Path]:
    if not folder.is_dir() or folder.is_symlink():
        return []
    return sorted(
        path
        for path in folder.glob("*.json")
        if not path.name.endswith(".http.json") and path.is_file() and not path.is_symlink()
    )


class UnknownVariant(LookupError):
    """No recording of a suite holds the ingestion variant asked for (its message says which
    variants there are)."""


def variant_settings(
    root: Path, suite: str, variant: str, rootdir: Path | None = None, shared: bool = False
) -> dict[str, Any] | None:
    """The ingestion settings of a recorded variant of the suite's users (`shared`: of its
    shared documents); None: the variant without settings. UnknownVariant when no readable
    recording of the suite holds it, or none holds its settings (recorded before they were
    kept, with a setting too long for its label)."""
    listed = [
        entry.recording
        for entry in list_user_recordings(root, suite, rootdir, shared)
        if entry.recording is not None and entry.user != PREPARATION_ID
    ]
    matching = [recording for recording in listed if recording.variant == variant]
    if not matching:
        known = sorted({recording.variant for recording in listed})
        whose = "document ingestion" if shared else "ingestion"
        raise UnknownVariant(
            f"no {whose} recording of suite {suite!r} holds variant {variant} (its variants: "
            f"{', '.join(known) or 'none recorded'}; `python -m pytest_evalcases ingestions` "
            "lists them with their settings)"
        )
    for recording in matching:
        settings = settings_of(recording)
        if settings is not ...:
            return settings  # type: ignore[no-any-return]
    raise UnknownVariant(
        f"the ingestion recordings of variant {variant} of suite {suite!r} were made before "
        "recordings kept their settings, and a setting is too long to read back from its "
        'label; set the suite\'s "ingestion" to it and record it again'
    )


def settings_of(recording: UserRecording) -> Any:
    """A recording's ingestion settings (None: none): as it holds them, else read back from
    its key's labels (a recording made before it held them) when every label hashes to its
    field; Ellipsis when they cannot be known."""
    prefixes = _prefixes(recording.phase)
    fields = {name: value for name, value in recording.key.items() if name.startswith(prefixes)}
    if not fields:
        return None
    if recording.settings is not None:
        return recording.settings
    labels = (recording.labels or {}).get("key") or {}
    settings = {}
    for name, value in fields.items():
        try:
            setting = json.loads(labels[name])
        except (KeyError, TypeError, ValueError):
            return ...
        if content_hash(setting) != value:
            return ...
        prefix = next(p for p in (*prefixes, INGESTION_PREFIX) if name.startswith(p))
        settings[name[len(prefix) :]] = setting
    return settings
