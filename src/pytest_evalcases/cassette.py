"""Cassettes: one JSON file per case: its trace, its verdicts and the key they were made under.

The key is a dict of named short hashes of everything the recording depends on. Replay recomputes
the key and compares it field by field, so a stale recording names exactly which input changed.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pydantic_core

from . import __version__
from .errors import CaseFileError, CassetteError, StaleRecording

# Bump when the cassette layout or the meaning of a key field changes: every recording goes stale.
CASSETTE_FORMAT = 1
HASH_CHARS = 16  # stored; messages show the first 6
SHOW_CHARS = 6


def content_hash(value: Any) -> str:
    """Hash of a JSON-able value, independent of dict key order."""
    data = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(data.encode()).hexdigest()[:HASH_CHARS]


def file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:HASH_CHARS]


def suite_key_fields(
    system_spec: str, input_hashes: Mapping[str, str], fingerprint: Mapping[str, Any]
) -> dict[str, str]:
    """The key fields shared by every case of a suite: computed once per suite, not per case."""
    key = {"format": str(CASSETTE_FORMAT), "system": content_hash(system_spec)}
    key.update(input_hashes)
    for name, value in fingerprint.items():
        try:
            key[f"fingerprint.{name}"] = content_hash(value)
        except (TypeError, ValueError) as exc:
            raise CaseFileError(
                f"system {system_spec!r}: fingerprint entry {name!r} is not JSON ({exc}); "
                "return plain JSON values "
                "(str, number, bool, list, dict) from fingerprint()"
            ) from None
    return key


def recording_key(
    suite_fields: Mapping[str, str], system_view: Mapping[str, Any]
) -> dict[str, str]:
    """The trace's key: the suite's fields plus the hash of what the system gets of this case."""
    key = dict(suite_fields)
    key["case"] = content_hash(system_view)
    return key


def changed_fields(recorded: Mapping[str, str], current: Mapping[str, str]) -> list[str]:
    """`name changed (old -> new)` for every differing field, in a stable order."""
    changes = []
    for name in sorted(recorded.keys() | current.keys()):
        old, new = recorded.get(name), current.get(name)
        if old != new:
            verb = "added" if old is None else "removed" if new is None else "changed"
            changes.append(f"{name} {verb} ({_short(old)} -> {_short(new)})")
    return changes


def _short(value: str | None) -> str:
    return "-" if value is None else str(value)[:SHOW_CHARS]


def check_key(recorded: Any, current: Mapping[str, str], what: str, rerecord: str) -> None:
    """Raise StaleRecording naming every changed field, or return when the key matches."""
    if not isinstance(recorded, dict):
        recorded = {}
    changes = changed_fields(recorded, current)
    if changes:
        raise StaleRecording(
            f"stale recording{what}: {'; '.join(changes)}; re-record with {rerecord}"
        )


def cassette_path(root: Path, suite: str, case_id: str) -> Path:
    return root / suite / f"{case_id}.json"


def shown_path(path: Path | str, rootdir: Path) -> str:
    """A path as messages show it: relative to the rootdir, the same on every machine."""
    return os.path.relpath(path, rootdir)


def load_cassette(path: Path | str, rootdir: Path | None = None) -> dict[str, Any] | None:
    """The cassette at `path`, None when there is none; CassetteError (naming the file relative
    to `rootdir`) when it is unreadable. Replay calls this once per case: keep it lean."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        shown = shown_path(path, rootdir) if rootdir else str(path)
        raise CassetteError(f"cannot read cassette {shown}: {exc}") from None
    try:
        doc = pydantic_core.from_json(raw)
    except ValueError as exc:
        shown = shown_path(path, rootdir) if rootdir else str(path)
        raise CassetteError(
            f"cassette {shown} is not valid JSON ({exc}); fix it, or delete it and record again "
            "with --live"
        ) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("trace"), dict):
        shown = shown_path(path, rootdir) if rootdir else str(path)
        raise CassetteError(
            f"cassette {shown} is not a recording (expected an object with a 'trace' object); "
            "delete it and record again with --live"
        )
    return doc


def build_cassette(
    suite: str,
    case_id: str,
    key: Mapping[str, str],
    trace: Mapping[str, Any],
    verdicts: Mapping[str, Any],
) -> dict[str, Any]:
    return {
        "format": CASSETTE_FORMAT,
        "plugin_version": __version__,
        "recorded_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "suite": suite,
        "case": case_id,
        "key": dict(key),
        "trace": dict(trace),
        "verdicts": dict(verdicts),
    }


def save_cassette(path: Path, doc: Mapping[str, Any]) -> None:
    """Write atomically: a reader (or a crash) sees the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    tmp = path.with_name(f"{path.name}.tmp.{os.getpid()}")
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def find_orphans(root: Path, suites: Mapping[str, Iterable[str]]) -> list[Path]:
    """Cassettes whose case (or whole suite) no longer exists, among the suites' folders and any
    folder of a suite that is gone. Temp files of interrupted writes are not cassettes."""
    if not root.is_dir():
        return []
    orphans = []
    for folder in sorted(entry.name for entry in os.scandir(root) if entry.is_dir()):
        known = set(suites.get(folder, ()))
        names = sorted(name for name in os.listdir(root / folder) if name.endswith(".json"))
        orphans += [root / folder / name for name in names if name[:-5] not in known]
    return orphans
