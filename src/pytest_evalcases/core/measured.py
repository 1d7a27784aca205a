"""The times the plugin measures itself while recording, where a recording keeps them.

A run's trace gets the plugin's own field `measured` (`{"run_ms": 431.2, "turns_ms": [210.4,
220.8]}`: the system run's wall time, and each turn's when the plugin drives a conversation's
turns), beside what the system reports itself (`latency_ms`, `timings`). A judged stage's time is
its verdict's `latency_ms`, an ingestion's its user recording's `duration_s`. None is ever part
of a key, and a re-record that changes only them writes nothing (engine/diff.py). No imports:
replay reads the field of every trace it loads.
"""

MEASURED = "measured"
RUN_MS = "run_ms"
TURNS_MS = "turns_ms"

__all__ = ["MEASURED", "RUN_MS", "TURNS_MS"]
