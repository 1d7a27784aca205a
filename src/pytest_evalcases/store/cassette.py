"""Cassettes: one JSON file per case: its trace, its verdicts and the key they were made under.

The key is a dict of named short hashes of everything the recording depends on. Replay recomputes
the key and compares it field by field, so a stale recording names exactly which input changed.

A `Cassette` is the parsed, checked document with named fields; it is built from the file's JSON
in one place (`parse_cassette`, with every structure and format check) and written back as JSON
in one place (`Cassette.to_doc`). Only this module reads a cassette's `integrity` and
`later_runs`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pydantic_core

from .. import __version__
from ..core.errors import CassetteError, NewerCassette
from ..core.hashing import HASH_CHARS, content_hash
from ..core.repeats import has_repeats, later_repeats
from .files import CASSETTE_CAP, RefusedFile, read_bounded, refused_message, shown_path
from .keys import CASSETTE_FORMAT


def cassette_path(root: Path, suite: str, case_id: str) -> Path:
    return root / suite / f"{case_id}.json"


def http_path(root: Path, suite: str, case_id: str) -> Path:
    """The case's HTTP recording, beside its cassette (case ids may not end in `.http`)."""
    return root / suite / f"{case_id}.http.json"


@dataclass(slots=True)
class Run:
    """One system run of a case: its trace and the verdicts made on it (runs 2..K of
    --eval-runs are kept as `Cassette.later_runs`)."""

    trace: dict[str, Any]
    verdicts: dict[str, Any]


@dataclass(slots=True)
class Integrity:
    """The content hashes a cassette holds of itself, so a hand edit is refused at replay: one
    for the trace and verdicts together (checked on every replay), one per part (to name what
    changed), the hash of its HTTP recording and of its later runs. Each as the file holds it
    (a hand edit may have made it anything)."""

    content: Any = None
    trace: Any = None
    verdicts: dict[str, Any] = field(default_factory=dict)
    http: str | None = None
    later_runs: Any = None

    @classmethod
    def from_doc(cls, found: Any) -> Integrity | None:
        if not isinstance(found, dict):
            return None
        verdicts = found.get("verdicts")
        http = found.get("http")
        return cls(
            found.get("content"),
            found.get("trace"),
            verdicts if isinstance(verdicts, dict) else {},
            http if isinstance(http, str) else None,
            found.get("later_runs"),
        )

    def to_doc(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "content": self.content,
            "trace": self.trace,
            "verdicts": self.verdicts,
        }
        if self.http is not None:
            doc["http"] = self.http
        if self.later_runs is not None:
            doc["later_runs"] = self.later_runs
        return doc


@dataclass(slots=True)
class Cassette:
    """A case's recording as read (or about to be written). `later_runs_doc` is the file's
    list of later runs as it holds them (what their hash is of); `later_runs` the same runs,
    typed. `labels`: what a person reads beside the key hashes (see store/keys.py)."""

    key: dict[str, Any]
    trace: dict[str, Any]
    verdicts: dict[str, Any]
    integrity: Integrity | None
    later_runs_doc: list[dict[str, Any]] | None = None
    labels: Any = None
    recorded_at: str | None = None
    format: int | None = CASSETTE_FORMAT
    suite: Any = None
    case: Any = None
    plugin_version: Any = None

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any]) -> Cassette:
        """The cassette a document holds, as `load_cassette` checked its structure."""
        return cls(
            doc.get("key") or {},
            doc["trace"],
            doc.get("verdicts") or {},
            Integrity.from_doc(doc.get("integrity")),
            doc.get("later_runs"),
            doc.get("labels"),
            doc.get("recorded_at"),
            doc.get("format"),
            doc.get("suite"),
            doc.get("case"),
            doc.get("plugin_version"),
        )

    @property
    def http(self) -> str | None:
        """The hash of the case's HTTP recording this cassette names (None: it has none)."""
        return self.integrity.http if self.integrity is not None else None

    @property
    def later_runs(self) -> list[Run] | None:
        runs = self.later_runs_doc
        if runs is None:
            return None
        return [Run(run["trace"], run.get("verdicts") or {}) for run in runs]

    @property
    def runs(self) -> list[Run]:
        """Every run it holds: run 1 (`trace`, `verdicts`), then runs 2..K."""
        return [Run(self.trace, self.verdicts), *(self.later_runs or ())]

    @property
    def run_count(self) -> int:
        """How many system runs it holds (--eval-runs)."""
        return 1 + len(self.later_runs_doc or ())

    def with_http(self, http: str | None) -> None:
        """Name the HTTP recording written beside it (its hash as a reader will load it)."""
        if self.integrity is not None:
            self.integrity.http = http

    def to_doc(self) -> dict[str, Any]:
        """The document its file holds (written with sorted keys)."""
        doc = recording_header(self.format, self.plugin_version, self.recorded_at, self.suite)
        doc.update(case=self.case, key=self.key, trace=self.trace, verdicts=self.verdicts)
        if self.integrity is not None:
            doc["integrity"] = self.integrity.to_doc()
        if self.later_runs_doc is not None:
            doc["later_runs"] = self.later_runs_doc
        if self.labels:
            doc["labels"] = self.labels
        return doc

    def with_labels(self, labels: Any) -> Cassette:
        """The same recording with other labels (a re-record that only adds labels)."""
        return replace(self, labels=labels or None)

    def check_integrity(
        self, path: Path | str, rootdir: Path | None, verdicts: bool = True
    ) -> None:
        """CassetteError (naming `path` relative to `rootdir`) when the trace (or, with
        `verdicts`, a verdict) or the later runs no longer match their recorded hashes."""
        integrity = self.integrity
        if integrity is not None and verdicts:
            if integrity.content == _content_as_read(self.trace, self.verdicts):
                if self.later_runs_doc is not None:
                    self._check_later_runs(path, rootdir)
                return  # the common case, in one hash
        shown = shown_path(path, rootdir) if rootdir else str(path)
        if integrity is None:
            raise CassetteError(
                f"recording edited by hand: {shown} has no content hashes; re-record with --live"
            )
        if content_hash(self.trace) != integrity.trace:
            raise CassetteError(
                f"recording edited by hand: trace changed ({shown}); re-record with --live"
            )
        edited = self.edited_verdicts() if verdicts else []
        if edited:
            raise CassetteError(
                f"recording edited by hand: verdict {edited[0]} changed ({shown}); re-judge with "
                "--live-judges"
            )
        if self.later_runs_doc is not None:
            self._check_later_runs(path, rootdir)

    def _check_later_runs(self, path: Path | str, rootdir: Path | None) -> None:
        assert self.integrity is not None
        if content_hash(self.later_runs_doc) != self.integrity.later_runs:
            shown = shown_path(path, rootdir) if rootdir else str(path)
            raise CassetteError(
                f"recording edited by hand: later runs changed ({shown}); re-record with --live"
            )

    def edited_verdicts(self) -> list[str]:
        """The verdicts (or their hashes) that no longer match, by stage name."""
        hashes = self.integrity.verdicts if self.integrity is not None else {}
        return [
            name
            for name in sorted(self.verdicts.keys() | hashes.keys())
            if name not in self.verdicts or content_hash(self.verdicts[name]) != hashes.get(name)
        ]

    def usable_verdicts(self) -> dict[str, Any]:
        """Its verdicts less those edited by hand (a hand-edited verdict is worth nothing)."""
        edited = set(self.edited_verdicts())
        return {name: v for name, v in self.verdicts.items() if name not in edited}


def recording_header(fmt: Any, version: Any, recorded_at: Any, suite: Any) -> dict[str, Any]:
    """The fields every recording's file starts with (a cassette's, a user's)."""
    return {"format": fmt, "plugin_version": version, "recorded_at": recorded_at, "suite": suite}


def load_cassette(path: Path | str, rootdir: Path | None = None) -> Cassette | None:
    """The cassette at `path`, None when there is none; CassetteError (naming the file relative
    to `rootdir`) when it is unreadable, not a regular file, over the size cap or not a
    cassette; NewerCassette when a newer version wrote it. Replay calls this once per case:
    keep it lean."""
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
    return Cassette.from_doc(doc)


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
    """Content hashes of what a cassette holds, as its file keeps them (see `Integrity`)."""
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


def build_cassette(
    suite: str,
    case_id: str,
    key: Mapping[str, str],
    trace: Mapping[str, Any],
    verdicts: Mapping[str, Any],
    http: str | None = None,
    labels: Mapping[str, Any] | None = None,
    later_runs: list[Any] | None = None,
) -> Cassette:
    """A new cassette; `http` is the content hash of the case's HTTP recording, if any;
    `labels` what a person reads beside the key hashes (see `Labels`); `later_runs` the traces
    and verdicts of runs 2..K (--eval-runs, as `{"trace": ..., "verdicts": ...}`), run 1 being
    `trace` and `verdicts`."""
    return Cassette(
        dict(key),
        dict(trace),
        dict(verdicts),
        Integrity.from_doc(integrity_of(trace, verdicts, http, later_runs)),
        later_runs,
        dict(labels) if labels else None,
        datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        CASSETTE_FORMAT,
        suite,
        case_id,
        __version__,
    )
