"""Spans in the OpenTelemetry protocol's data model, as OTLP/JSON writes it.

``oma-host runs export`` writes this and the live export sends the same kinds,
statuses and attributes. The dicts follow the protobuf messages field for
field. A span's ``local`` part never leaves; a cancelled or skipped span is
UNSET with an ``oma.status`` saying which.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from oma_host.core.spans import (
    CLIENT_OPERATIONS,
    ERROR_TYPE,
    OP_INVOKE_AGENT,
    OP_TEAM,
    RUN_ID,
    STATUS,
    AttributeValue,
    Span,
)
from oma_host.core.version import __version__

SERVICE_NAME = "oma-host"
SCOPE_NAME = "oma-host"
# Span.SpanKind and Status.StatusCode of the protocol.
SPAN_KIND_INTERNAL = 1
SPAN_KIND_CLIENT = 3
STATUS_UNSET = 0
STATUS_OK = 1
STATUS_ERROR = 2
# The spans that stand for a run: they carry its id.
_RUN_OPERATIONS = frozenset({OP_INVOKE_AGENT, OP_TEAM})
_STATUS_CODES = {
    "ok": STATUS_OK,
    "error": STATUS_ERROR,
    "cancelled": STATUS_UNSET,
    "skipped": STATUS_UNSET,
}


def any_value(value: AttributeValue) -> dict[str, Any]:
    """An attribute's value as an ``AnyValue`` (bool before int: a bool is one)."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [any_value(item) for item in value]}}
    return {"stringValue": str(value)}


def key_values(attributes: dict[str, AttributeValue]) -> list[dict[str, Any]]:
    """Attributes as a list of ``KeyValue``."""
    return [{"key": key, "value": any_value(value)} for key, value in attributes.items()]


def span_kind(span: Span) -> int:
    """A provider request is a CLIENT span; the rest run in the host (INTERNAL)."""
    return SPAN_KIND_CLIENT if span.operation in CLIENT_OPERATIONS else SPAN_KIND_INTERNAL


def exported_attributes(span: Span) -> dict[str, AttributeValue]:
    """The attributes a span goes out with: its own, the run id of a run's
    span (``oma.run.id``: what ``oma-host runs show`` takes), and a
    cancelled or skipped span's ``oma.status`` (``local`` is the host's and
    never goes out)."""
    attributes = dict(span.attributes)
    if span.run_id is not None and span.operation in _RUN_OPERATIONS:
        attributes[RUN_ID] = span.run_id
    if span.status in ("cancelled", "skipped"):
        attributes[STATUS] = span.status
    return attributes


def exported_status(span: Span) -> tuple[int, str | None]:
    """A span's ``Status`` code, and an error's message (its ``error.type``)."""
    if span.status == "error":
        return STATUS_ERROR, str(span.attributes.get(ERROR_TYPE, "error"))
    return _STATUS_CODES[span.status], None


def otlp_span(span: Span) -> dict[str, Any]:
    """One ``Span`` message."""
    code, error = exported_status(span)
    status: dict[str, Any] = {"code": code}
    if error is not None:
        status["message"] = error
    message: dict[str, Any] = {
        "traceId": span.trace_id,
        "spanId": span.span_id,
        "name": span.name,
        "kind": span_kind(span),
        "startTimeUnixNano": str(span.start_ns),
        "endTimeUnixNano": str(span.start_ns if span.end_ns is None else span.end_ns),
        "attributes": key_values(exported_attributes(span)),
        "status": status,
    }
    parent = span.parent_id or span.remote_parent_id  # a client's span, for a traced run
    if parent is not None:
        message["parentSpanId"] = parent
    if span.trace_state:
        message["traceState"] = span.trace_state
    return message


def resource_spans(
    spans: Iterable[Span], resource: dict[str, AttributeValue] | None = None
) -> dict[str, Any]:
    """An ``ExportTraceServiceRequest`` holding ``spans``: one resource
    (``service.name`` oma-host unless ``resource`` says otherwise) and one
    instrumentation scope, the host's."""
    attributes: dict[str, AttributeValue] = {"service.name": SERVICE_NAME, **(resource or {})}
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": key_values(attributes)},
                "scopeSpans": [
                    {
                        "scope": {"name": SCOPE_NAME, "version": __version__},
                        "spans": [otlp_span(span) for span in spans],
                    }
                ],
            }
        ]
    }
