"""An OTLP/HTTP trace receiver on 127.0.0.1, in a thread of the test's
process: it answers ``POST /v1/traces`` as a collector does, keeps every
request body as received, and decodes it with the ``opentelemetry-proto``
package's ``ExportTraceServiceRequest`` (not with anything of the host's)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


def plain(value: AnyValue) -> Any:
    """An ``AnyValue`` as a Python value."""
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [plain(item) for item in value.array_value.values]
    return getattr(value, kind) if kind else None


@dataclass
class ReceivedSpan:
    """One span as the collector got it, ids in hex."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: int
    status_code: int
    status_message: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    resource: dict[str, Any]
    scope: str
    trace_state: str = ""

    @property
    def operation(self) -> str:
        return str(self.attributes["gen_ai.operation.name"])


@dataclass
class Received:
    bodies: list[bytes] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    spans: list[ReceivedSpan] = field(default_factory=list)


class Receiver:
    """``with Receiver() as collector:`` ... ``collector.endpoint`` is the
    base URL to give as ``OTEL_EXPORTER_OTLP_ENDPOINT``."""

    def __init__(self) -> None:
        self.received = Received()
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.path != "/v1/traces":
                    self.send_response(404)
                    self.end_headers()
                    return
                receiver._take(body, {k.lower(): v for k, v in self.headers.items()})
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> Receiver:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _take(self, body: bytes, headers: dict[str, str]) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        spans = []
        for resource_spans in request.resource_spans:
            resource = {a.key: plain(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    spans.append(
                        ReceivedSpan(
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_id=span.parent_span_id.hex() or None,
                            name=span.name,
                            kind=span.kind,
                            status_code=span.status.code,
                            status_message=span.status.message,
                            start_ns=span.start_time_unix_nano,
                            end_ns=span.end_time_unix_nano,
                            attributes={a.key: plain(a.value) for a in span.attributes},
                            resource=resource,
                            scope=scope_spans.scope.name,
                            trace_state=span.trace_state,
                        )
                    )
        with self._lock:
            self.received.bodies.append(body)
            self.received.headers.append(headers)
            self.received.spans.extend(spans)

    @property
    def spans(self) -> list[ReceivedSpan]:
        with self._lock:
            return list(self.received.spans)

    @property
    def raw(self) -> bytes:
        """Every body received, joined: what a search for a secret reads."""
        with self._lock:
            return b"".join(self.received.bodies)

    def wait_for(self, count: int, timeout_s: float = 30) -> list[ReceivedSpan]:
        """The spans, once at least ``count`` have arrived."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            spans = self.spans
            if len(spans) >= count:
                return spans
            time.sleep(0.05)
        raise AssertionError(f"{len(self.spans)} spans received, waited for {count}")


def children(spans: list[ReceivedSpan], parent: ReceivedSpan) -> list[ReceivedSpan]:
    return [span for span in spans if span.parent_id == parent.span_id]


def by_operation(spans: list[ReceivedSpan], operation: str) -> list[ReceivedSpan]:
    return [span for span in spans if span.operation == operation]


def trace_of(spans: list[ReceivedSpan], run_id: str) -> list[ReceivedSpan]:
    """The spans of the trace whose root is the run ``run_id``'s."""
    root = next(
        s for s in spans if s.parent_id is None and s.attributes.get("oma.run.id") == run_id
    )
    return [span for span in spans if span.trace_id == root.trace_id]


def iter_tree(
    spans: list[ReceivedSpan], root: ReceivedSpan, depth: int = 0
) -> Iterator[tuple[int, ReceivedSpan]]:
    yield depth, root
    for child in sorted(children(spans, root), key=lambda s: s.start_ns):
        yield from iter_tree(spans, child, depth + 1)
