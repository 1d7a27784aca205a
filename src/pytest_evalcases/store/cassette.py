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
from ..core.processes import process_alive
from ..core.repeats import has_repeats, later_repeats
from .files import CASSETTE_CAP, RefusedFile, read_bounded
from .keys import CASSETTE_FORMAT

USERS_FOLDER = "users"  # a suite's ingestion recordings (store/user_recordings.py)


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
    to `rootdir`) when it is unreadable, not a regular file or over the size cap. Replay calls
    this once per case: keep it lean."""
    try:
        raw = read_bounded(path, CASSETTE_CAP)
    except FileNotFoundError:
        return None
    except RefusedFile as exc:
        shown = shown_path(path, rootdir) if rootdir else str(path)
        raise CassetteError(refused_message("cassette", shown, exc)) from None
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


def read_recording(path: Path, what: str, shown: str) -> bytes | None:
    """The bytes of a recording file (`what`: "HTTP recording", "ingestion recording"); None
    when there is none. CassetteError naming it when it is refused (not a regular file, over
    the size cap) or cannot be read."""
    try:
        return read_bounded(path, CASSETTE_CAP)
    except FileNotFoundError:
        return None
    except RefusedFile as exc:
        raise CassetteError(refused_message(what, shown, exc)) from None
    except OSError as exc:
        raise CassetteError(f"cannot read {what} {shown}: {exc}") from None


def refused_message(what: str, shown: str, refused: RefusedFile) -> str:
    """The error of a recording file refused before reading (`what`: "cassette", "HTTP
    recording"), with the next step."""
    if refused.too_big:
        return (
            f"{what} {shown} {refused.reason}: pytest-evalcases never writes one this big; look "
            "at what it holds, then delete it and record again with --live"
        )
    return (
        f"{what} {shown} {refused.reason}, not a regular file: it was not read; remove it and "
        "record again with --live"
    )


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
    """Write atomically: a reader (or a crash) sees the old file or the new one, never half.
    CassetteError when the suite folder is a symlink (nothing is written through it)."""
    problem = writable_folder_problem(path)
    if problem:
        folder = f"{path.parent.parent.name}/{path.parent.name}"  # as the ini names it
        raise CassetteError(f"cannot record {path.name}: its cassette folder {folder} {problem}")
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
    folders (a live process's own are left alone); return how many were removed. A symlink
    (a suite folder or a file) is never followed nor removed: what is behind it is not ours."""
    removed = 0
    if not root.is_dir():
        return 0
    suite_folders = (
        entry.path for entry in os.scandir(root) if entry.is_dir(follow_symlinks=False)
    )
    for folder in (path for suite in suite_folders for _, path in _recording_folders(suite)):
        for entry in os.scandir(folder):
            name, _, pid = entry.name.rpartition(".tmp.")
            if (
                name
                and pid.isdigit()
                and entry.is_file(follow_symlinks=False)
                and not process_alive(int(pid))
            ):
                try:
                    os.unlink(entry.path)
                    removed += 1
                except OSError:  # gone already, or not ours to remove: leave it
                    pass
    return removed


def user_recording_stem(user_id: str) -> str:
    """How a suite's list of expected recordings names a user's ingestion recording (a case id
    never holds a `/`, so the two never meet)."""
    return f"{USERS_FOLDER}/{user_id}"


def find_orphans(root: Path, suites: Mapping[str, Iterable[str]]) -> list[Path]:
    """Cassettes (and HTTP recordings) whose case (or whole suite) no longer exists, among the
    suites' folders and any folder of a suite that is gone; and the ingestion recordings
    (`users/<id>.json`, `.http.json`) of a user the suite no longer declares. `suites`: each
    suite's case ids and its users' `user_recording_stem`s. Temp files of interrupted writes
    are not recordings; a symlink (a folder or a file) is never followed: see `left_alone`."""
    if not root.is_dir():
        return []
    orphans = []
    for folder in _real_folders(root):
        known = set(suites.get(folder.name, ()))
        for prefix, path in _recording_folders(folder.path):
            orphans += [
                Path(entry.path)
                for entry in _json_entries(path)
                if entry.is_file(follow_symlinks=False)
                and prefix + _case_of(entry.name) not in known
            ]
    return orphans


def left_alone(root: Path) -> list[tuple[Path, str]]:
    """What under the cassette folder is not walked nor deleted, and why: a suite folder (or
    its `users/` folder) that is a symlink (what it points to is not ours), and a `*.json`
    entry there that is a symlink or not a regular file."""
    if not root.is_dir():
        return []
    found = []
    for entry in sorted(os.scandir(root), key=lambda entry: entry.name):
        if entry.is_symlink():
            found.append((Path(entry.path), f"a symlink to {os.readlink(entry.path)}"))
    for folder in _real_folders(root):
        users = os.path.join(folder.path, USERS_FOLDER)
        if os.path.islink(users):
            found.append((Path(users), f"a symlink to {os.readlink(users)}"))
        for _, path in _recording_folders(folder.path):
            for entry in _json_entries(path):
                if entry.is_symlink():
                    found.append((Path(entry.path), f"a symlink to {os.readlink(entry.path)}"))
                elif not entry.is_file(follow_symlinks=False):
                    found.append((Path(entry.path), "not a regular file"))
    return found


def _recording_folders(suite_folder: str) -> list[tuple[str, str]]:
    """(stem prefix, folder) of a suite folder's recordings: its own, and its real `users/`."""
    folders = [("", suite_folder)]
    users = os.path.join(suite_folder, USERS_FOLDER)
    if os.path.isdir(users) and not os.path.islink(users):
        folders.append((f"{USERS_FOLDER}/", users))
    return folders


def _real_folders(root: Path) -> list[os.DirEntry[str]]:
    """The suite folders of the cassette folder, by name; symlinks to folders are not among them."""
    folders = [entry for entry in os.scandir(root) if entry.is_dir(follow_symlinks=False)]
    return sorted(folders, key=lambda entry: entry.name)


def _json_entries(folder: str) -> list[os.DirEntry[str]]:
    entries = [entry for entry in os.scandir(folder) if entry.name.endswith(".json")]
    return sorted(entries, key=lambda entry: entry.name)


def writable_folder_problem(path: Path) -> str | None:
    """Why a recording may not be written at `path` (its suite folder is a symlink: writing
    through it would change files that are not ours), or None."""
    folder = path.parent
    if folder.is_symlink():
        return (
            f"is a symlink (to {os.readlink(folder)}); pytest-evalcases does not write "
            "through it: replace it with a real folder (move the recordings in), then record "
            "again"
        )
    return None


def _case_of(file_name: str) -> str:
    """The case id a recording file belongs to: `<id>.json` or `<id>.http.json`."""
    stem = file_name[: -len(".json")]
    return stem[: -len(".http")] if stem.endswith(".http") else stem
