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

from .. import __version__
from ..core.errors import CassetteError, NewerCassette
from ..core.hashing import HASH_CHARS, content_hash
from ..core.repeats import has_repeats, later_repeats
from .keys import CASSETTE_FORMAT


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
        raw = _read_bytes(path)
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


_FIRST_READ = 1 << 16  # a cassette is a few KB: one read, and no file object, for most


def _read_bytes(path: Path | str) -> bytes:
    """A file's bytes through the os calls alone: half the cost of `open().read()` (~4 us of
    ~8 us), which builds a buffered file object only to read it once."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        data = os.read(fd, _FIRST_READ)
        if len(data) < _FIRST_READ:
            return data
        chunks = [data]
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _structure_problem(doc: Any) -> str | None:
    """What makes a loaded document unusable as a cassette of this format, or None. Cheap
    checks only (replay runs this per case); the content hashes catch edits inside the trace."""
    if not isinstance(doc, dict) or not isinstance(doc.get("trace"), dict):
        return (
            "is not a recording (expected an object with a 'trace' object); delete it and "
            "record again with --live"
        )
    fmt = doc.get("format")
    if type(fmt) is not int and fmt is not None:  # not a bool either
        shown = repr(fmt) if len(repr(fmt)) <= 40 else repr(fmt)[:37] + "..."
        return (  # "99" or 99.0 would otherwise replay as this version's format
            f'has "format": {shown}, not a whole number (this version writes format '
            f"{CASSETTE_FORMAT}); delete it and record again with --live"
        )
    if fmt is not None and fmt > CASSETTE_FORMAT:
        return (
            f"was recorded by a newer pytest-evalcases (cassette format {fmt}; this version "
            f"reads format {CASSETTE_FORMAT}); upgrade pytest-evalcases"
        )
    if not isinstance(doc.get("key", {}), dict):
        return "has a 'key' that is not an object; delete it and record again with --live"
    verdicts = doc.get("verdicts") or {}
    if not isinstance(verdicts, dict):
        return "has 'verdicts' that are not an object; re-judge with --live-judges"
    if "later_runs" in doc:
        return _runs_problem(doc["later_runs"]) or _verdicts_problem(verdicts)
    return _verdicts_problem(verdicts)


def _runs_problem(runs: Any) -> str | None:
    """What makes the runs 2..K of a cassette (--eval-runs) unusable, or None."""
    if not isinstance(runs, list) or not all(
        isinstance(run, dict)
        and isinstance(run.get("trace"), dict)
        and isinstance(run.get("verdicts") or {}, dict)
        for run in runs
    ):
        return (
            'has \'later_runs\' that are not a list of {"trace": ..., "verdicts": ...} '
            "objects; delete it and record again with --live"
        )
    for run in runs:
        problem = _verdicts_problem(run.get("verdicts") or {})
        if problem:
            return problem
    return None


def _verdicts_problem(verdicts: dict[str, Any]) -> str | None:
    for stage, verdict in verdicts.items():
        score = verdict.get("score") if isinstance(verdict, dict) else None
        if (
            not isinstance(verdict, dict)
            or not (
                score is None
                or (
                    isinstance(score, int | float)
                    and not isinstance(score, bool)
                    and 0 <= score <= 1
                )
            )
            or (has_repeats(verdict) and not _well_formed_repeats(later_repeats(verdict)))
        ):
            return (
                f"has a malformed verdict for {stage} (a verdict is an object whose score is a "
                "number from 0 to 1, or null; its later_repeats a list of such objects); "
                "re-judge with --live-judges"
            )
    return None


def _well_formed_repeats(repeats: Any) -> bool:
    return isinstance(repeats, list) and all(map(_well_formed_verdict, repeats))


def _well_formed_verdict(verdict: Any) -> bool:
    if not isinstance(verdict, dict):
        return False
    score = verdict.get("score")
    return score is None or (
        isinstance(score, int | float) and not isinstance(score, bool) and 0 <= score <= 1
    )


def _content_as_read(trace: Any, verdicts: Any) -> str:
    """One hash of a cassette's trace and verdicts as parsed from its file, which holds them with
    sorted keys: pydantic's serialiser in that order, ~4x cheaper than `content_hash` (which
    sorts) and one call for all verdicts: what replay pays per case."""
    return hashlib.sha256(pydantic_core.to_json([trace, verdicts])).hexdigest()[:HASH_CHARS]


def integrity_of(
    trace: Mapping[str, Any],
    verdicts: Mapping[str, Any],
    http: str | None,
    later_runs: list[Any] | None = None,
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
    if later_runs is not None:  # runs 2..K of --eval-runs: one hash for all of them
        integrity["later_runs"] = content_hash(later_runs)
    return integrity


def _check_later_runs(doc: Mapping[str, Any], integrity: Mapping[str, Any], shown: str) -> None:
    if content_hash(doc["later_runs"]) != integrity.get("later_runs"):
        raise CassetteError(
            f"recording edited by hand: later runs changed ({shown}); re-record with --live"
        )


def check_integrity(
    doc: Mapping[str, Any], path: Path | str, rootdir: Path | None = None, verdicts: bool = True
) -> None:
    """CassetteError (naming `path` relative to `rootdir`) when the trace (or, with `verdicts`,
    a verdict) no longer matches its recorded hash."""
    integrity = doc.get("integrity")
    if isinstance(integrity, dict) and verdicts:
        if integrity.get("content") == _content_as_read(doc["trace"], doc.get("verdicts") or {}):
            if "later_runs" in doc:
                shown = shown_path(path, rootdir) if rootdir else str(path)
                _check_later_runs(doc, integrity, shown)
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
    if "later_runs" in doc:
        _check_later_runs(doc, integrity, shown)


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
    labels: Mapping[str, Any] | None = None,
    later_runs: list[Any] | None = None,
) -> dict[str, Any]:
    """A cassette document; `http` is the content hash of the case's HTTP recording, if any;
    `labels` what a person reads beside the key hashes (see `Labels`); `later_runs` the traces
    and verdicts of runs 2..K (--eval-runs), run 1 being `trace` and `verdicts`."""
    doc: dict[str, Any] = {
        "format": CASSETTE_FORMAT,
        "plugin_version": __version__,
        "recorded_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "suite": suite,
        "case": case_id,
        "key": dict(key),
        "trace": dict(trace),
        "verdicts": dict(verdicts),
        "integrity": integrity_of(trace, verdicts, http, later_runs),
    }
    if later_runs is not None:
        doc["later_runs"] = later_runs
    if labels:
        doc["labels"] = dict(labels)
    return doc


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
