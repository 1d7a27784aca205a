"""What the engine hands back for a case: a Recording (replayed from its cassette), a
LiveRecording (what a live run made of it, with its scores computed once: case_scores.py), and
the JudgeBinding a suite is judged with. Plain data: the pytest layer loads this module at
start-up (its session holds the judge bindings), so it imports nothing of the package."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(slots=True)
class Recording:
    trace: dict[str, Any]
    verdicts: dict[str, Any]
    status: str  # replayed | recorded | not_rerecorded
    recorded_at: str | None = None
    note: str = ""  # why a live run did not re-record
    redacted: int = 0  # secrets replaced in what this run wrote
    # Runs 2..K of a case recorded with --eval-runs: [{"trace": ..., "verdicts": ...}, ...]
    later_runs: list[dict[str, Any]] | None = None


@dataclass(slots=True)
class LiveRecording(Recording):
    """What a live run made of a case (replay builds the plain, smaller Recording)."""

    change: dict[str, Any] | None = None  # {"kind": unchanged | changed | new, "details": [...]}
    pending: list[str] | None = None  # stages whose judge failed: saved as pending verdicts
    # Stages whose judge failed where the verdict recorded before still held: kept as it was
    not_rejudged: list[str] | None = None
    spent_usd: float = 0.0  # recorded cost of what this run did for the case (system + judge)
    # The saved recording's scores (an engine.case_scores.SavedScores): computed once, by
    # whichever needs them first
    scoring: Any = None
    # The system's calls tried again on a transient error: [{"reason": ..., "wait_s": ...}]
    system_retries: list[dict[str, Any]] | None = None


@dataclass(slots=True)
class JudgeBinding:
    """The judge a suite is judged with in this run: id/version for keys, the live judge if any."""

    id: str | None
    version: str | None
    live: Any = None  # a judges.Judge, only in live modes
