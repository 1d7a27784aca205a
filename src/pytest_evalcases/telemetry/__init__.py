"""OpenTelemetry export of live runs (`--eval-otel`, the `otel` extra).

This module imports nothing from opentelemetry: it holds the interface the recording code
calls (`CaseSpans`) and its no-op, `NO_SPANS`, which every case gets when the export is off.
`telemetry.export` (imported only by a live run with --eval-otel) implements it with the SDK.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Protocol


class SpanNotes(Protocol):
    """What the recording code tells an open span about its outcome."""

    def trace(self, trace: Mapping[str, Any]) -> None: ...

    def verdict(self, verdict: Mapping[str, Any]) -> None: ...


class CaseSpans(Protocol):
    """The spans of one live case: the system run and each judge request are its children."""

    def system_run(self) -> Any: ...  # a context manager yielding SpanNotes

    def judge_request(self, stage: str, judge_id: str | None) -> Any: ...

    def recorded(self, spent_usd: float) -> None: ...

    def failed(self, exc: BaseException) -> None: ...


class _NoNotes:
    def trace(self, trace: Mapping[str, Any]) -> None:
        return None

    def verdict(self, verdict: Mapping[str, Any]) -> None:
        return None


_NO_NOTES = _NoNotes()


class _NoSpans:
    """The export is off: nothing is measured, nothing is sent."""

    @contextmanager
    def system_run(self) -> Iterator[SpanNotes]:
        yield _NO_NOTES

    @contextmanager
    def judge_request(self, stage: str, judge_id: str | None) -> Iterator[SpanNotes]:
        yield _NO_NOTES

    def recorded(self, spent_usd: float) -> None:
        return None

    def failed(self, exc: BaseException) -> None:
        return None


NO_SPANS: CaseSpans = _NoSpans()


def delivery_line(deliveries: list[Mapping[str, Any]]) -> str | None:
    """The run's closing line from each exporting process's counts (`sent`, `failed`,
    `endpoint`; one per xdist worker), or None when no process exported."""
    if not deliveries:
        return None
    sent = sum(int(d.get("sent") or 0) for d in deliveries)
    failed = sum(int(d.get("failed") or 0) for d in deliveries)
    endpoints = sorted({str(d.get("endpoint")) for d in deliveries})
    line = f"eval otel: {sent} span{'s' * (sent != 1)} sent to {', '.join(endpoints)}"
    if failed:
        line += (
            f"; {failed} could not be delivered (is the collector running? check "
            "OTEL_EXPORTER_OTLP_ENDPOINT)"
        )
    return line


__all__ = ["NO_SPANS", "CaseSpans", "SpanNotes", "delivery_line"]
