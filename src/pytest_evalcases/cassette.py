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
from .errors import CaseFileError, CassetteError, NewerCassette, StaleRecording

# Bump when the cassette layout or the meaning of a key field changes: every recording goes stale.
# 2: code fingerprints in the key, content hashes of the trace and verdicts, HTTP recordings.
CASSETTE_FORMAT = 2
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


def check_key(
    recorded: Any,
    current: Mapping[str, str],
    what: str,
    rerecord: str,
    ignore_prefix: str | None = None,
) -> None:
    """Raise StaleRecording naming every changed field, or return when the key matches. Fields
    starting with `ignore_prefix` are not compared (e.g. code hashes, when the code runs)."""
    if recorded == current:  # every replay that passes: one dict comparison, no sorting
        return
    if not isinstance(recorded, dict):
        recorded = {}
    changes = changed_fields(recorded, current)
    if ignore_prefix is not None:
        changes = [change for change in changes if not change.startswith(ignore_prefix)]
    if changes:
        if rerecord == "--live" and any(c.startswith("code.") for c in changes):
            rerecord = "--live, or check it offline with --replay-http"
        raise StaleRecording(
            f"stale recording{what}: {'; '.join(changes)}; re-record with {rerecord}"
        )


def cassette_path(root: Path, suite: str, case_id: str) -> Path:
    return root / suite / f"{case_id}.json"


def http_path(root: Path, suite: str, case_id: str) -> Path:
    """The case's HTTP recording, beside its cassette (case ids may not end in `.http`)."""
    return root / suite / f"{case_id}.http.json"


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
    problem = _structure_problem(doc)
    if problem:
        shown = shown_path(path, rootdir) if rootdir else str(path)
        error = NewerCassette if "newer pytest-evalcases" in problem else CassetteError
        raise error(f"cassette {shown} {problem}")
    return doc


def _structure_problem(doc: Any) -> str | None:
    """What makes a loaded document unusable as a cassette of this format, or None. Cheap
    checks only (replay runs this per case); the content hashes catch edits inside the trace."""
    if not isinstance(doc, dict) or not isinstance(doc.get("trace"), dict):
        return (
            "is not a recording (expected an object with a 'trace' object); delete it and "
            "record again with --live"
        )
    fmt = doc.get("format")
    if isinstance(fmt, int) and not isinstance(fmt, bool) and fmt > CASSETTE_FORMAT:
        return (
            f"was recorded by a newer pytest-evalcases (cassette format {fmt}; this version "
            f"reads format {CASSETTE_FORMAT}); upgrade pytest-evalcases"
        )
    if not isinstance(doc.get("key", {}), dict):
        return "has a 'key' that is not an object; delete it and record again with --live"
    verdicts = doc.get("verdicts") or {}
    if not isinstance(verdicts, dict):
        return "has 'verdicts' that are not an object; re-judge with --live-judges"
    for stage, verdict in verdicts.items():
        score = verdict.get("score") if isinstance(verdict, dict) else None
        if not isinstance(verdict, dict) or not (
            score is None
            or (isinstance(score, int | float) and not isinstance(score, bool) and 0 <= score <= 1)
        ):
            return (
                f"has a malformed verdict for {stage} (a verdict is an object whose score is a "
                "number from 0 to 1, or null); re-judge with --live-judges"
            )
    return None


def _content_as_read(trace: Any, verdicts: Any) -> str:
    """One hash of a cassette's trace and verdicts as parsed from its file, which holds them with
    sorted keys: pydantic's serialiser in that order, ~4x cheaper than `content_hash` (which
    sorts) and one call for all verdicts: what replay pays per case."""
    return hashlib.sha256(pydantic_core.to_json([trace, verdicts])).hexdigest()[:HASH_CHARS]


def integrity_of(
    trace: Mapping[str, Any], verdicts: Mapping[str, Any], http: str | None
) -> dict[str, Any]:
    """Content hashes of what a cassette holds, so a hand edit is refused at replay: one for
    the whole (checked on every replay), and one per part (to name what changed)."""
    as_written = json.loads(json.dumps([trace, verdicts], sort_keys=True))  # the file's order
    integrity: dict[str, Any] = {
        "content": _content_as_read(*as_written),
        "trace": content_hash(trace),
        "verdicts": {name: content_hash(v) for name, v in verdicts.items()},
    }
    if http is not None:
        integrity["http"] = http
    return integrity


def check_integrity(
    doc: Mapping[str, Any], path: Path | str, rootdir: Path | None = None, verdicts: bool = True
) -> None:
    """CassetteError (naming `path` relative to `rootdir`) when the trace (or, with `verdicts`,
    a verdict) no longer matches its recorded hash."""
    integrity = doc.get("integrity")
    if isinstance(integrity, dict) and verdicts:
        if integrity.get("content") == _content_as_read(doc["trace"], doc.get("verdicts") or {}):
            return  # the common case, in one hash
    shown = shown_path(path, rootdir) if rootdir else str(path)
    if not isinstance(integrity, dict):
        raise CassetteError(
            f"recording edited by hand: {shown} has no content hashes; re-record with --live"
        )
    if content_hash(doc["trace"]) != integrity.get("trace"):
        raise CassetteError(
            f"recording edited by hand: trace changed ({shown}); re-record with --live"
        )
    edited = edited_verdicts(doc) if verdicts else []
    if edited:
        raise CassetteError(
            f"recording edited by hand: verdict {edited[0]} changed ({shown}); re-judge with "
            "--live-judges"
        )


def edited_verdicts(doc: Mapping[str, Any]) -> list[str]:
    """The verdicts (or their hashes) that no longer match, by stage name."""
    hashes = (doc.get("integrity") or {}).get("verdicts")
    hashes = hashes if isinstance(hashes, dict) else {}
    verdicts = doc.get("verdicts") or {}
    return [
        name
        for name in sorted(verdicts.keys() | hashes.keys())
        if name not in verdicts or content_hash(verdicts[name]) != hashes.get(name)
    ]


def build_cassette(
    suite: str,
    case_id: str,
    key: Mapping[str, str],
    trace: Mapping[str, Any],
    verdicts: Mapping[str, Any],
    http: str | None = None,
) -> dict[str, Any]:
    """A cassette document; `http` is the content hash of the case's HTTP recording, if any."""
    return {
        "format": CASSETTE_FORMAT,
        "plugin_version": __version__,
        "recorded_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "suite": suite,
        "case": case_id,
        "key": dict(key),
        "trace": dict(trace),
        "verdicts": dict(verdicts),
        "integrity": integrity_of(trace, verdicts, http),
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


def remove_dead_temp_files(root: Path) -> int:
    """Remove the `<name>.tmp.<pid>` files that processes killed mid-write left in the suites'
    folders (a live process's own are left alone); return how many were removed."""
    removed = 0
    if not root.is_dir():
        return 0
    for folder in (entry for entry in os.scandir(root) if entry.is_dir()):
        for entry in os.scandir(folder.path):
            name, _, pid = entry.name.rpartition(".tmp.")
            if name and pid.isdigit() and entry.is_file() and not _process_alive(int(pid)):
                try:
                    os.unlink(entry.path)
                    removed += 1
                except OSError:  # gone already, or not ours to remove: leave it
                    pass
    return removed


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, and someone else's
        return True
    except OSError:
        return False
    return True


def find_orphans(root: Path, suites: Mapping[str, Iterable[str]]) -> list[Path]:
    """Cassettes (and HTTP recordings) whose case (or whole suite) no longer exists, among the
    suites' folders and any folder of a suite that is gone. Temp files of interrupted writes are
    not cassettes."""
    if not root.is_dir():
        return []
    orphans = []
    for folder in sorted(entry.name for entry in os.scandir(root) if entry.is_dir()):
        known = set(suites.get(folder, ()))
        names = sorted(name for name in os.listdir(root / folder) if name.endswith(".json"))
        orphans += [root / folder / name for name in names if _case_of(name) not in known]
    return orphans


def _case_of(file_name: str) -> str:
    """The case id a recording file belongs to: `<id>.json` or `<id>.http.json`."""
    stem = file_name[: -len(".json")]
    return stem[: -len(".http")] if stem.endswith(".http") else stem
