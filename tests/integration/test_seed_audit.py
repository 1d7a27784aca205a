"""Gaps the feature audit against the seed systems found (docs/seeds.md) that need a process of
their own: a command whose reader stops early (`python -m pytest_evalcases graph REC | head`,
as one pages through Zep's graph inspector) ended with a BrokenPipeError traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def test_a_command_piped_into_a_reader_that_stops_early_ends_quietly(tmp_path: Path) -> None:
    # ~150 KB of printout: more than a pipe holds, so the writer meets the closed pipe for sure
    edges = [[f"node {n}", "links", f"node {n + 1}"] for n in range(3000)]
    recording = tmp_path / "big.json"
    recording.write_text(json.dumps({"suite": "s", "case": "c", "trace": {"triples": edges}}))
    reader = subprocess.Popen(
        [sys.executable, "-m", "pytest_evalcases", "graph", str(recording)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ),
    )
    assert reader.stdout is not None and reader.stderr is not None
    first = reader.stdout.readline()
    reader.stdout.close()  # what `| head -1` does once it has its line
    errors = reader.stderr.read().decode()
    code = reader.wait(timeout=60)
    assert first.startswith(b"s::c (trace.triples): 3001 nodes, 3000 edges")
    assert "Traceback" not in errors and "BrokenPipeError" not in errors, errors
    assert errors == ""
    assert code == 141  # 128 + SIGPIPE, as a shell reports a tool the pipe stopped
