"""`capture_otel()`: a trace from the OpenTelemetry spans a framework emits, following the GenAI
semantic conventions (`gen_ai.*` attributes), so any instrumented framework works.

    with capture_otel(retrievers=["search_kb"]) as captured:
        agent.run_sync(question)
    return captured.trace()

`chat` spans give usage (`gen_ai.usage.input_tokens` / `output_tokens`, priced by
`gen_ai.response.model` or `gen_ai.request.model`) and the answer (the text parts of the last
`gen_ai.output.messages`); `execute_tool` spans give the calls (`gen_ai.tool.name`,
`gen_ai.tool.call.arguments`) and their outputs (`gen_ai.tool.call.result`). A framework that
emits no tool spans has its calls read from the chat spans' messages instead.

A span belongs to the capture that was current where it started (a context variable: it follows
threads started with the context, and asyncio tasks), so cases recorded side by side each get
their own spans. The one span processor is added to the global SDK `TracerProvider` (one is
installed if the application set none).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from .pricing import Prices
from .trace_builder import Retrievers, TraceBuilder, as_text

_current: ContextVar[CapturedSpans | None] = ContextVar("evalcases_otel_capture", default=None)
_install_lock = threading.Lock()
_installed_on: set[int] = set()  # ids of the providers our processor was added to


class CapturedSpans:
    """The GenAI spans that ended inside one `capture_otel()` block, in start order."""

    def __init__(self, retrievers: Retrievers, prices: Prices | None) -> None:
        self._retrievers = retrievers
        self._prices = prices
        self._open: set[int] = set()
        self.spans: list[Any] = []  # ReadableSpan
        self._lock = threading.Lock()

    def _ended(self, span: Any) -> None:
        with self._lock:
            self.spans.append(span)

    def trace(self) -> dict[str, Any]:
        """The trace of the spans captured so far."""
        return trace_from_spans(self.spans, retrievers=self._retrievers, prices=self._prices)


def _processor_class() -> type:
    from opentelemetry.sdk.trace import SpanProcessor

    class _CaptureProcessor(SpanProcessor):
        """Hands each ending span to the capture that was current when it started."""

        def __init__(self) -> None:
            self._owners: dict[int, CapturedSpans] = {}

        def on_start(self, span: Any, parent_context: Any = None) -> None:
            capture = _current.get()
            if capture is not None:
                self._owners[_span_id(span)] = capture

        def on_end(self, span: Any) -> None:
            # Keyed by span id: the SDK ends a span with a readable copy, not the started object.
            capture = self._owners.pop(_span_id(span), None)
            if capture is not None:
                capture._ended(span)

        def shutdown(self) -> None:
            self._owners.clear()

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            return True

    return _CaptureProcessor


def _span_id(span: Any) -> tuple[int, int]:
    context = span.get_span_context() if hasattr(span, "get_span_context") else span.context
    return context.trace_id, context.span_id


def _install() -> None:
    """Our processor on the global SDK TracerProvider, once per provider."""
    from opentelemetry import trace as otel_trace
    from opentelemetry.sdk.trace import TracerProvider

    with _install_lock:
        provider = otel_trace.get_tracer_provider()
        if not isinstance(provider, TracerProvider):
            # No SDK provider yet (the API's proxy): install one. set_tracer_provider only
            # takes effect once per process, so read back what is global now.
            otel_trace.set_tracer_provider(TracerProvider())
            provider = otel_trace.get_tracer_provider()
            if not isinstance(provider, TracerProvider):
                raise RuntimeError(
                    "capture_otel() needs an OpenTelemetry SDK TracerProvider, and the global "
                    f"one is a {type(provider).__name__}; set an opentelemetry.sdk.trace."
                    "TracerProvider as the global provider"
                )
        if id(provider) not in _installed_on:
            provider.add_span_processor(_processor_class()())
            _installed_on.add(id(provider))


@contextmanager
def capture_otel(
    *, retrievers: Retrievers = None, prices: Prices | None = None
) -> Iterator[CapturedSpans]:
    """Collect the spans that start inside the block; `.trace()` builds the trace from them."""
    try:
        _install()
    except ImportError:
        raise ImportError(
            "capture_otel() needs opentelemetry-sdk: pip install opentelemetry-sdk"
        ) from None
    capture = CapturedSpans(retrievers, prices)
    token = _current.set(capture)
    try:
        yield capture
    finally:
        _current.reset(token)


def _attributes(span: Any) -> dict[str, Any]:
    return dict(getattr(span, "attributes", None) or {})


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def trace_from_spans(
    spans: list[Any], *, retrievers: Retrievers = None, prices: Prices | None = None
) -> dict[str, Any]:
    """A trace from GenAI-semconv spans (any order: sorted by start time here)."""
    ordered = sorted(spans, key=lambda span: getattr(span, "start_time", 0) or 0)
    builder = TraceBuilder(retrievers, prices)
    chats = []
    tool_spans = []
    for span in ordered:
        attributes = _attributes(span)
        operation = attributes.get("gen_ai.operation.name")
        if operation in {"chat", "text_completion", "generate_content"}:
            chats.append(attributes)
        elif operation == "execute_tool":
            tool_spans.append(attributes)
    for attributes in chats:
        builder.usage(
            attributes.get("gen_ai.usage.input_tokens"),
            attributes.get("gen_ai.usage.output_tokens"),
            attributes.get("gen_ai.response.model") or attributes.get("gen_ai.request.model"),
        )
        text = _output_text(attributes)
        if text:
            builder.answer = text
    if tool_spans:
        for attributes in tool_spans:
            name = str(attributes.get("gen_ai.tool.name", "?"))
            call_id = attributes.get("gen_ai.tool.call.id")
            builder.call(name, _json(attributes.get("gen_ai.tool.call.arguments")), call_id)
            if "gen_ai.tool.call.result" in attributes:
                result = attributes["gen_ai.tool.call.result"]
                builder.output(as_text(result), call_id=call_id, name=name, raw=_json(result))
    else:
        _calls_from_messages(builder, chats)
    return builder.build()


def _messages(attributes: dict[str, Any], name: str) -> list[dict[str, Any]]:
    value = _json(attributes.get(name))
    return [m for m in value if isinstance(m, dict)] if isinstance(value, list) else []


def _output_text(attributes: dict[str, Any]) -> str:
    texts = []
    for message in _messages(attributes, "gen_ai.output.messages"):
        for part in message.get("parts") or []:
            if isinstance(part, dict) and part.get("type") == "text":
                texts.append(str(part.get("content", "")))
    return "".join(texts)


def _calls_from_messages(builder: TraceBuilder, chats: list[dict[str, Any]]) -> None:
    """Calls from `tool_call` parts of the chat outputs, results from the `tool_call_response`
    parts of the next chat's input, for frameworks that emit no `execute_tool` spans."""
    seen_results: set[str] = set()
    for attributes in chats:
        for message in _messages(attributes, "gen_ai.input.messages"):
            for part in message.get("parts") or []:
                if isinstance(part, dict) and part.get("type") == "tool_call_response":
                    call_id = str(part.get("id", ""))
                    if call_id not in seen_results:
                        seen_results.add(call_id)
                        result = part.get("response", part.get("result"))
                        builder.output(as_text(result), call_id=call_id, raw=_json(result))
        for message in _messages(attributes, "gen_ai.output.messages"):
            for part in message.get("parts") or []:
                if isinstance(part, dict) and part.get("type") == "tool_call":
                    builder.call(str(part.get("name", "?")), part.get("arguments"), part.get("id"))
