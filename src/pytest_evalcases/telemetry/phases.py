"""The run's phases as lifecycle events (Episteme's "component and phase started/completed"):
collection, the ingestion of each user, the live batch, judging and reporting, timed where they
happen and sent by `--eval-otel` as spans of the process's `eval run` span, each with a started
and a completed event and the run's tags (run id, corpus, language, prompt versions).

This module imports nothing from opentelemetry: the code that runs a phase times it with
`timed(...)`, which costs nothing while no export listens (`listen`), as in a replay.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

# phase -> the component that runs it (Episteme names both in its events)
COMPONENTS = {
    "collection": "collector",
    "ingestion": "ingestor",
    "live_batch": "system",
    "judging": "judge",
    "reporting": "reporter",
}
PHASE_ORDER = tuple(COMPONENTS)


@dataclass(slots=True)
class TimedPart:
    """One timed part of a phase: the phase itself, or one component's run in it (a user's
    ingestion)."""

    phase: str
    started_ns: int
    ended_ns: int
    name: str | None = None  # a component's run: "memory/u-ana"; None: the phase itself
    attributes: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


class PhaseLog:
    """What one process timed, kept until the export sends it (thread-safe: users ingest side
    by side)."""

    def __init__(self) -> None:
        self.parts: list[TimedPart] = []
        self._lock = threading.Lock()

    def add(self, part: TimedPart) -> None:
        with self._lock:
            self.parts.append(part)

    def taken(self) -> list[TimedPart]:
        with self._lock:
            parts, self.parts = self.parts, []
        return parts


_listening: list[PhaseLog] = []  # the process's export's log, while one is open


def listen(log: PhaseLog | None) -> None:
    """Time phases into `log` from now on (None: stop)."""
    _listening.clear()
    if log is not None:
        _listening.append(log)


def listening() -> bool:
    return bool(_listening)


@contextmanager
def timed(phase: str, name: str | None = None, **attributes: Any) -> Iterator[dict[str, Any]]:
    """Time the block as `phase` (with `name`: one component's run in it); the block may add
    attributes to the dict it gets. An exception marks the part as failed, and goes on."""
    if not _listening:
        yield {}
        return
    log = _listening[0]
    notes = dict(attributes)
    started = time.time_ns()
    error: str | None = None
    try:
        yield notes
    except BaseException as exc:
        error = f"{type(exc).__name__}: {exc}"[:200]
        raise
    finally:
        log.add(TimedPart(phase, started, time.time_ns(), name, notes, error))


def note_phase(phase: str, started_ns: int, ended_ns: int, **attributes: Any) -> None:
    """A phase timed by its caller (collection: between two pytest hooks)."""
    if _listening:
        _listening[0].add(TimedPart(phase, started_ns, ended_ns, None, dict(attributes)))


def manifest_tags(values: Mapping[str, Any] | None, digest: str | None = None) -> dict[str, str]:
    """The tags the authored input manifest gives every phase and case span: language, each
    prompt version (`evalcases.prompt_version.<name>`; `evalcases.prompt_version` as well when
    there is one), the manifest's name and hash."""
    if not values:
        return {}
    tags: dict[str, str] = {}
    if values.get("language") is not None:
        tags["evalcases.language"] = str(values["language"])
    versions = values.get("prompt_versions") or {}
    for name, version in sorted(versions.items()):
        tags[f"evalcases.prompt_version.{name}"] = str(version)
    if len(versions) == 1:
        tags["evalcases.prompt_version"] = str(next(iter(versions.values())))
    if values.get("name") is not None:
        tags["evalcases.manifest.name"] = str(values["name"])
    if digest:
        tags["evalcases.manifest.hash"] = digest
    return tags
