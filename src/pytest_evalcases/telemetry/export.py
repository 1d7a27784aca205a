"""The OpenTelemetry SDK side of `--eval-otel`: one tracer provider for the run, an OTLP/HTTP
exporter (the standard OTEL_EXPORTER_OTLP_* variables configure it), and the spans of each
live case. Imported only by a live run with --eval-otel.

A case's span starts when its recording starts and is created with its first child (a case that
--live-stale finds current runs nothing and sends nothing); it ends at the time its recording
ended, once the case is scored (so it carries the outcome). The system-run span is the current
span while the system runs: spans the system makes itself nest under it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import Status, StatusCode

from .. import __version__
from .attributes import (
    case_attributes,
    judge_attributes,
    judge_span_name,
    model_of,
    outcome_attributes,
    system_attributes,
    trace_attributes,
    verdict_attributes,
)
from .phases import COMPONENTS, PHASE_ORDER, PhaseLog, TimedPart, listen

DEFAULT_SERVICE = "pytest-evalcases"
DEFAULT_ENDPOINT = "http://localhost:4318/v1/traces"  # the OTLP/HTTP default


def traces_endpoint(environ: Mapping[str, str]) -> str:
    """Where spans go, as the OTLP exporter resolves it (shown in the run's closing line)."""
    if environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        return environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
    if environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return environ["OTEL_EXPORTER_OTLP_ENDPOINT"].rstrip("/") + "/v1/traces"
    return DEFAULT_ENDPOINT


class _CountingExporter(SpanExporter):
    """The OTLP exporter, counting what it delivered (the run says so at its end)."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.sent = 0
        self.failed = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self.inner.export(spans)
        if result is SpanExportResult.SUCCESS:
            self.sent += len(spans)
        else:
            self.failed += len(spans)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)


class OtelExport:
    """The run's spans: `start_case` per live case, `case_reported` once it is scored."""

    def __init__(
        self,
        run_id: str,
        environ: Mapping[str, str] | None = None,
        tags: Mapping[str, str] | None = None,
        process: str = "main",
    ) -> None:
        environ = os.environ if environ is None else environ
        self.run_id = run_id
        # the authored input manifest's tags (language, prompt versions), on every span
        self.tags = dict(tags or {})
        self.process = process  # "main", or the xdist worker's id, or "controller"
        self.phases = PhaseLog()
        listen(self.phases)  # the phases this process times from now on are sent
        self.suites: set[str] = set()  # the corpus: the suites whose cases this process ran
        self.cases_ns: list[int] = []  # earliest start, latest end of the cases sent
        self.judging_ns: list[int] = []  # of the judge requests
        self._lock = threading.Lock()
        self.endpoint = traces_endpoint(environ)
        resource = Resource.create(
            {
                "service.name": environ.get("OTEL_SERVICE_NAME") or DEFAULT_SERVICE,
                "service.version": __version__,
            }
        )
        self.exporter = _CountingExporter(OTLPSpanExporter())
        self.provider = TracerProvider(resource=resource)
        self.provider.add_span_processor(BatchSpanProcessor(self.exporter))
        # Our own provider, not the global one: the system's own instrumentation (and a
        # capture of its spans) stays as the system set it up.
        self.tracer = self.provider.get_tracer("pytest-evalcases", __version__)
        self.open: dict[str, LiveCaseSpans] = {}

    def start_case(self, nodeid: str, ctx: Any, case: Any) -> LiveCaseSpans:
        spans = LiveCaseSpans(self, ctx, case)
        self.suites.add(ctx.suite.name)
        self.open[nodeid] = spans
        return spans

    def case_reported(self, nodeid: str, result: Mapping[str, Any] | None) -> None:
        spans = self.open.pop(nodeid, None)
        if spans is not None:
            spans.end(result)

    def shutdown(self) -> dict[str, Any]:
        """End what never reported, send everything, and say how it went (see
        `telemetry.delivery_line`)."""
        for spans in list(self.open.values()):
            spans.end(None)
        self.open.clear()
        listen(None)
        self._send_phases(time.time_ns())
        self.provider.shutdown()  # flushes the batch processor
        return {
            "sent": self.exporter.sent,
            "failed": self.exporter.failed,
            "endpoint": self.endpoint,
        }

    def widen(self, bounds: list[int], started: int, ended: int) -> None:
        """Stretch a phase's [start, end] over one more case or judge request."""
        with self._lock:
            if bounds:
                bounds[0], bounds[1] = min(bounds[0], started), max(bounds[1], ended)
            else:
                bounds[:] = [started, ended]

    def tagged(self, corpus: str | None, **found: Any) -> dict[str, Any]:
        """The tags of a run or phase span: run id, corpus, the manifest's, and `found`."""
        attributes: dict[str, Any] = {"evalcases.run_id": self.run_id, **self.tags}
        corpus = corpus or ", ".join(sorted(self.suites)) or None
        if corpus:
            attributes["evalcases.corpus"] = corpus
        attributes["evalcases.process"] = self.process
        attributes.update(
            (f"evalcases.{name}", value)
            for name, value in found.items()
            if isinstance(value, str | bool | int | float)
        )
        return attributes

    def _send_phases(self, ended: int) -> None:
        """The process's `eval run` span, a child span per phase it timed (each with its
        started and completed events) and, under ingestion, one per user."""
        parts = self.phases.taken()
        if len(self.cases_ns) == 2:
            parts.append(TimedPart("live_batch", *self.cases_ns))
        if len(self.judging_ns) == 2:
            parts.append(TimedPart("judging", *self.judging_ns))
        if not parts:
            return
        run = self.tracer.start_span(
            "eval run",
            start_time=min(part.started_ns for part in parts),
            attributes=self.tagged(None),
        )
        parent = trace.set_span_in_context(run)
        for phase in PHASE_ORDER:
            own = [part for part in parts if part.phase == phase]
            if own:
                self._send_phase(phase, own, parent)
        run.end(end_time=max(ended, *(part.ended_ns for part in parts)))

    def _send_phase(self, phase: str, parts: list[TimedPart], parent: Any) -> None:
        component = COMPONENTS[phase]
        whole = next((part for part in parts if part.name is None), None)
        runs = [part for part in parts if part.name is not None]
        started = whole.started_ns if whole else min(part.started_ns for part in runs)
        ended = whole.ended_ns if whole else max(part.ended_ns for part in runs)
        found = dict(whole.attributes) if whole else {}
        corpus = found.pop("corpus", None)
        if corpus is None and runs:  # the suites of the users ingested
            corpus = ", ".join(sorted({str(part.attributes.get("suite")) for part in runs}))
        what = {"phase": phase, "component": component}
        span = self.tracer.start_span(
            f"phase {phase}",
            context=parent,
            start_time=started,
            attributes=self.tagged(corpus, **what, **found),
        )
        event = {"evalcases.phase": phase, "evalcases.component": component}
        span.add_event("phase.started", event, timestamp=started)
        inside = trace.set_span_in_context(span)
        errors = [part for part in parts if part.error]
        for part in runs:
            self._send_component(component, part, inside)
        outcome = "failed" if errors else "completed"
        span.add_event("phase.completed", {**event, "evalcases.outcome": outcome}, timestamp=ended)
        if errors:
            span.set_status(Status(StatusCode.ERROR, f"{len(errors)} failed: {errors[0].error}"))
        span.end(end_time=ended)

    def _send_component(self, component: str, part: TimedPart, parent: Any) -> None:
        """One component's run in a phase (a user's ingestion), with its own events."""
        attributes = dict(part.attributes)
        suite = attributes.get("suite")
        span = self.tracer.start_span(
            f"{component} {part.name}",
            context=parent,
            start_time=part.started_ns,
            attributes=self.tagged(
                str(suite) if suite else None, phase=part.phase, component=component, **attributes
            ),
        )
        event = {"evalcases.component": component, "evalcases.name": str(part.name)}
        span.add_event("component.started", event, timestamp=part.started_ns)
        outcome = "failed" if part.error else "completed"
        span.add_event(
            "component.completed", {**event, "evalcases.outcome": outcome}, timestamp=part.ended_ns
        )
        if part.error:
            span.set_status(Status(StatusCode.ERROR, part.error))
        span.end(end_time=part.ended_ns)


class _Notes:
    """Sets what the recording code learns on the span (`fingerprint`: the system's, whose
    `model` names the model when the trace does not)."""

    def __init__(self, span: Any, fingerprint: Mapping[str, Any] | None = None) -> None:
        self.span, self.fingerprint = span, fingerprint or {}

    def trace(self, trace_doc: Mapping[str, Any]) -> None:
        self.span.set_attributes(trace_attributes(trace_doc, model_of(self.fingerprint, trace_doc)))

    def verdict(self, verdict: Mapping[str, Any]) -> None:
        self.span.set_attributes(verdict_attributes(verdict))
        if verdict.get("error"):
            self.span.set_status(Status(StatusCode.ERROR, str(verdict["error"])[:200]))


class LiveCaseSpans:
    """The spans of one case (see `telemetry.CaseSpans`)."""

    def __init__(self, export: OtelExport, ctx: Any, case: Any) -> None:
        self.export, self.ctx, self.case = export, ctx, case
        self.started = time.time_ns()
        self.ended: int | None = None
        self.span: Any = None
        self.error: BaseException | None = None

    def _case_span(self) -> Any:
        if self.span is None:
            suite = self.ctx.suite.name
            self.span = self.export.tracer.start_span(
                f"eval {suite}::{self.case.id}",
                start_time=self.started,
                attributes={
                    **case_attributes(self.export.run_id, suite, self.case.id, self.case.category),
                    **self.export.tags,
                },
            )
        return self.span

    @contextmanager
    def system_run(self) -> Iterator[_Notes]:
        parent = trace.set_span_in_context(self._case_span())
        ctx = self.ctx
        span = self.export.tracer.start_span(
            f"invoke_agent {ctx.suite.name}",
            context=parent,
            attributes=system_attributes(self.export.run_id, ctx.system.spec, ctx.suite.name),
        )
        with trace.use_span(span, end_on_exit=True):  # records and marks an exception
            yield _Notes(span, _fingerprint(ctx))

    @contextmanager
    def judge_request(self, stage: str, judge_id: str | None) -> Iterator[_Notes]:
        provider, model = _judge_parts(judge_id)
        parent = trace.set_span_in_context(self._case_span())
        started = time.time_ns()
        try:
            with self.export.tracer.start_as_current_span(
                judge_span_name(stage, provider, model),
                context=parent,
                attributes=judge_attributes(self.export.run_id, stage, provider, model),
            ) as span:
                yield _Notes(span)
        finally:  # the judging phase: the first request's start to the last one's end
            self.export.widen(self.export.judging_ns, started, time.time_ns())

    def recorded(self, spent_usd: float) -> None:
        self.ended = time.time_ns()

    def failed(self, exc: BaseException) -> None:
        self.ended = time.time_ns()
        self.error = exc

    def end(self, result: Mapping[str, Any] | None) -> None:
        if self.span is None:  # nothing ran for this case: nothing to send
            return
        if result is not None:
            self.span.set_attributes(outcome_attributes(result))
        if self.error is not None:
            self.span.record_exception(self.error)
            self.span.set_status(
                Status(StatusCode.ERROR, f"{type(self.error).__name__}: {self.error}"[:200])
            )
        elif result is not None and result.get("outcome") == "error":
            self.span.set_status(Status(StatusCode.ERROR, "the case could not be evaluated"))
        ended = self.ended or time.time_ns()
        self.span.end(end_time=ended)
        self.export.widen(self.export.cases_ns, self.started, ended)  # the live batch phase


def _fingerprint(ctx: Any) -> Mapping[str, Any]:
    try:
        return ctx.system.fingerprint()
    except Exception:  # reported on the suite already; a span goes without the model then
        return {}


def _judge_parts(judge_id: str | None) -> tuple[str | None, str | None]:
    """("openai", "gpt-4o-mini") for "openai:gpt-4o-mini"; ("lexical", None) for "lexical"."""
    if not judge_id:
        return None, None
    provider, _, model = judge_id.partition(":")
    return provider, model or None
