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
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pydantic_core

from .. import __version__
from ..core.errors import CassetteError
from .cassette import (
    USERS_FOLDER,
    read_recording,
    save_cassette,
    shown_path,
    writable_folder_problem,
)
from .keys import CASSETTE_FORMAT, user_ingestion_key

if TYPE_CHECKING:
    from ..domain.context import SuiteContext

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


def build_user_recording(
    suite: str,
    user_id: str,
    key: Mapping[str, str],
    labels: Mapping[str, str],
    result: Any,
    figures: Mapping[str, Any],
    http: str,
) -> dict[str, Any]:
    """An ingestion recording; `http` is the content hash of its HTTP exchanges as written."""
    doc: dict[str, Any] = {
        "format": CASSETTE_FORMAT,
        "plugin_version": __version__,
        "recorded_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "suite": suite,
        "user": user_id,
        "key": dict(key),
        "result": result,
        "integrity": {"http": http},
    }
    doc.update((name, figures.get(name)) for name in FIGURES)
    if labels:
        doc["labels"] = dict(labels)
    return doc


def check_writable(path: Path) -> None:
    """CassetteError when the users folder or the suite folder of the recording at `path` is a
    symlink: nothing is written through it (asked before the first of the pair is written)."""
    for folder in (path.parent, path.parent.parent):
        problem = writable_folder_problem(folder / path.name)
        if problem:
            raise CassetteError(f"cannot record {path.name}: {folder.name}/ {problem}")


def save_user_recording(path: Path, doc: Mapping[str, Any]) -> None:
    """Write atomically, never through a symlinked suite or users folder."""
    check_writable(path)
    save_cassette(path, doc)


def load_user_recording(path: Path, rootdir: Path) -> dict[str, Any] | None:
    """The ingestion recording at `path`, None when there is none; CassetteError naming the
    file and the next step when it cannot be read or is not one."""
    shown = shown_path(path, rootdir)
    raw = read_recording(path, "ingestion recording", shown)
    if raw is None:
        return None
    try:
        doc = pydantic_core.from_json(raw)
    except ValueError as exc:
        raise CassetteError(
            f"ingestion recording {shown} is not valid JSON ({exc}); delete it and record the "
            "ingestion again with --eval-ingest-only"
        ) from None
    problem = _structure_problem(doc)
    if problem:
        if "newer pytest-evalcases" in problem:
            raise CassetteError(f"ingestion recording {shown} {problem}")
        raise CassetteError(
            f"ingestion recording {shown} {problem}; delete it and record the ingestion again "
            "with --eval-ingest-only"
        )
    return doc


def ingestion_figures(ctx: SuiteContext) -> dict[str, Any] | None:
    """The user's ingestion figures for the reports: this run's; or, when this run did not
    ingest it (a replay, --live-judges, cases all current), its recording's, if current (read
    once per user; a broken one shows none). None after a failed ingestion: nothing came of it."""
    user = ctx.user
    if user is None or user.failed:
        return None
    if user.figures is None and not user.figures_read:
        user.figures_read = True
        key, _ = user_ingestion_key(
            ctx.key_fields, ctx.key_labels, user.key_field, ctx.input_fields
        )
        try:
            doc = load_user_recording(
                user_recording_path(ctx.cassette_root, ctx.suite.name, user.id), ctx.rootdir
            )
        except CassetteError:
            doc = None
        if doc is not None and doc["key"] == key:
            user.figures = figures_of(doc, REPLAYED)
    return user.figures


def figures_of(doc: dict[str, Any], source: str) -> dict[str, Any]:
    """A recording's figures as each of its user's case results carries them (`ingestion`).
    An ingestion this run paid for gets an `ingestion_id` of its own: under xdist, each worker
    ingests the users of its cases, and the reports count each ingestion once."""
    figures = {"user": doc.get("user"), "source": source, "recorded_at": doc.get("recorded_at")}
    figures.update((name, doc.get(name)) for name in FIGURES)
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
