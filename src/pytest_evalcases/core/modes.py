"""The run modes: what a run does with each case's recording.

Replay reads it; --live records every case again; --live-stale records the missing and stale
ones; --live-judges re-judges recorded traces without running the system.
"""

from __future__ import annotations

REPLAY, LIVE, LIVE_STALE, LIVE_JUDGES = "replay", "live", "live_stale", "live_judges"
