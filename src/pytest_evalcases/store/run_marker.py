"""The marker of a live run in progress: `<eval_cassettes>/.live-run-in-progress.json`.

A live run (the xdist controller, or the one process) writes it when it starts and removes it
when it ends, however it ends (passed, failed, Ctrl-C, an internal error). A run that never
reaches its end (user code calling `os._exit`, a kill) leaves it, and the next run reports that
run after the fact. Read by every run (one failed `open` and `lstat` when there is none), so
kept light: the standard library only.
"""

from __future__ import annotations

import json
import os
import socket
import time
from datetime import UTC, datetime
from pathlib import Path

from ..core.files import MB, read_bounded
from ..core.names import LIVE_RUN_MARKER
from ..core.processes import process_alive

MARKER_NAME = LIVE_RUN_MARKER
_MARKER_CAP = MB  # it holds some 80 bytes


def marker_path(root: Path) -> Path:
    return root / MARKER_NAME


def previous_live_run(root: Path) -> str | None:
    """What the marker of a live run that never ended says, or None (no marker, or the run
    that wrote it is still running on this machine)."""
    path = marker_path(root)
    try:
        raw = read_bounded(path, _MARKER_CAP)  # a FIFO put there would block every run
    except OSError:  # none (the common case), not readable, or refused: nothing to report
        return None
    try:
        doc = json.loads(raw)
        pid, started, host = int(doc["pid"]), float(doc["started"]), str(doc["host"])
    except (ValueError, KeyError, TypeError):
        pid, started, host = 0, 0.0, ""
    if pid and host == socket.gethostname() and process_alive(pid):
        return None  # another live run on these cassettes, still going
    count = _recordings_since(root, started)
    when = datetime.fromtimestamp(started, UTC).strftime("%Y-%m-%d %H:%M:%SZ") if started else "?"
    return (
        f"the previous --live run ended without a summary (os._exit or a kill?) after {count} "
        f"recording{'s' * (count != 1)}; they were kept, and the cases it did not reach keep "
        f"their old recordings: run --live (or --live-stale) again to record them (that run "
        f"started {when}, pid {pid or '?'}; {path.name} in the cassettes folder says so)"
    )


def start_live_run(root: Path) -> Path | None:
    """Write this run's marker (atomically); its path, or None when it cannot be written (a
    read-only checkout: the run goes on, only the after-the-fact report is lost)."""
    path = marker_path(root)
    doc = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()}
    tmp = path.with_name(f"{path.name}.tmp.{os.getpid()}")
    try:
        root.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(doc) + "\n", encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        return None
    return path


def end_live_run(path: Path) -> None:
    """The run reached its end: its marker goes (and the cassettes folder, if the run made it
    and wrote nothing else there)."""
    try:
        path.unlink(missing_ok=True)
        path.parent.rmdir()  # only when empty
    except OSError:
        pass


def _recordings_since(root: Path, started: float) -> int:
    """Cassettes written since `started`, in the suites' folders (symlinks are not followed)."""
    count = 0
    try:
        folders = [e for e in os.scandir(root) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return 0
    for folder in folders:
        try:
            entries = list(os.scandir(folder.path))
        except OSError:
            continue
        for entry in entries:
            name = entry.name
            if not name.endswith(".json") or name.endswith(".http.json"):
                continue
            try:
                if entry.is_file(follow_symlinks=False) and entry.stat().st_mtime >= started:
                    count += 1
            except OSError:
                continue
    return count
