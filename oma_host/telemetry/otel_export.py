"""The OpenTelemetry SDK's half of the export (the ``otel`` extra): spans to its processor.

A span keeps the host's own trace and span ids, so a collector shows the trace
that ``oma-host runs export`` writes. The run's path only builds the
``ReadableSpan``: batching and sending happen in the processor's thread, so an
unreachable collector never costs a run.
"""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import (
    SERVICE_NAME,
    SERVICE_VERSION,
    OTELResourceDetector,
    Resource,
)
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags, TraceState

from oma_host.core.spans import Span
from oma_host.core.version import __version__
from oma_host.telemetry import otlp
from oma_host.telemetry.settings import TelemetryConfig

_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_STATUS_CODES = {otlp.STATUS_OK: StatusCode.OK, otlp.STATUS_ERROR: StatusCode.ERROR}


def resource(service_name: str | None) -> Resource:
    """The SDK's resource from its variables, with the host's name and
    version where neither ``service_name`` nor the variables give one."""
    detected = OTELResourceDetector().detect().attributes
    own: dict[str, str] = {
        SERVICE_NAME: service_name or str(detected.get(SERVICE_NAME) or otlp.SERVICE_NAME)
    }
    if SERVICE_VERSION not in detected:
        own[SERVICE_VERSION] = __version__
    return Resource.create(own)


def _context(
    trace_id: str, span_id: str, state: str | None = None, *, remote: bool = False
) -> SpanContext:
    return SpanContext(
        int(trace_id, 16),
        int(span_id, 16),
        is_remote=remote,
        trace_flags=_SAMPLED,
        trace_state=None if state is None else TraceState.from_header([state]),
    )


def _parent(span: Span) -> SpanContext | None:
    """The span's parent: its own, or for a run a client traced, the client's."""
    if span.parent_id is not None:
        return _context(span.trace_id, span.parent_id, span.trace_state)
    if span.remote_parent_id is not None:
        return _context(span.trace_id, span.remote_parent_id, span.trace_state, remote=True)
    return None


class OtlpExport:
    """One exporter and its batch processor (one per distinct config in a
    process, :mod:`.exporters`), and the sink a recording gives spans to."""

    def __init__(self, config: TelemetryConfig) -> None:
        self._resource = resource(config.service_name)
        self._scope = InstrumentationScope(otlp.SCOPE_NAME, __version__)
        exporter = OTLPSpanExporter(
            endpoint=config.traces_endpoint,
            headers=None if config.headers is None else dict(config.headers),
        )
        self._processor = BatchSpanProcessor(exporter)

    def span_started(self, span: Span) -> None:
        pass

    def span_ended(self, span: Span) -> None:
        self._processor.on_end(self.readable(span))

    def readable(self, span: Span) -> ReadableSpan:
        """``span`` as the SDK's finished span, ids and times kept."""
        code, message = otlp.exported_status(span)
        return ReadableSpan(
            name=span.name,
            context=_context(span.trace_id, span.span_id, span.trace_state),
            parent=_parent(span),
            resource=self._resource,
            attributes=otlp.exported_attributes(span),
            kind=SpanKind.CLIENT
            if otlp.span_kind(span) == otlp.SPAN_KIND_CLIENT
            else SpanKind.INTERNAL,
            status=Status(_STATUS_CODES.get(code, StatusCode.UNSET), message),
            start_time=span.start_ns,
            end_time=span.start_ns if span.end_ns is None else span.end_ns,
            instrumentation_scope=self._scope,
        )

    def flush(self) -> None:
        """Send what is queued now (blocking: call it from a thread)."""
        self._processor.force_flush()

    def shutdown(self) -> None:
        """Send what is queued and stop (blocking: call it from a thread)."""
        self._processor.shutdown()  # type: ignore[no-untyped-call]
