"""The run modes: what a run does with each case's recording.

Replay reads it; --live records every case again; --live-stale records the missing and stale
ones; --live-judges re-judges recorded traces without running the system. A `StrEnum` (as
vcrpy's `RecordMode`): each mode is its own name in messages and in results.json.
"""

from __future__ import annotations

from enum import StrEnum


class RunMode(StrEnum):
    REPLAY = "replay"
    LIVE = "live"
    LIVE_STALE = "live_stale"
    LIVE_JUDGES = "live_judges"
