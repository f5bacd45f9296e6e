"""The provider simulator: an HTTP server on 127.0.0.1 speaking each provider's wire format.

Tests and ``oma-host demo`` script it per call with a queue of :class:`Reply`
and :class:`Fault`; every request is recorded with its headers and parsed body,
and an empty queue answers with a description of the latest user message. It
runs in a background thread, or alone with ``python -m
oma_host.testing.simulator``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import socket
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from oma_host.testing import (
    wire_anthropic,
    wire_bedrock,
    wire_gemini,
    wire_openai,
    wire_openai_responses,
)
from oma_host.testing.script import (
    SEND_TIME,
    Fault,
    RecordedRequest,
    Reply,
    StreamBody,
    WireFormat,
    describe_request,
)

__all__ = [
    "SEND_TIME",
    "WIRES",
    "Fault",
    "RecordedRequest",
    "Reply",
    "Responder",
    "Simulator",
    "TokenCounter",
    "describe_request",
    "too_long_fault",
]

# Every wire the simulator speaks, tried in order against a request's path.
WIRES: tuple[WireFormat, ...] = (
    wire_anthropic.WIRE,
    wire_gemini.WIRE,  # before OpenAI's: its model list would claim /v1beta/models
    wire_openai_responses.WIRE,
    wire_openai.WIRE,
    wire_bedrock.WIRE,
)

# The model ids the list endpoints answer with unless a test sets ``models``.
DEFAULT_MODELS = ["sim-small", "sim-large"]
# Counts a request's input tokens, as the provider's tokenizer would.
TokenCounter = Callable[[RecordedRequest], int]
# Picks the answer to a request from the request itself, or None.
Responder = Callable[[RecordedRequest], Reply | Fault | None]


def too_long_fault(wire: str, tokens: int = 250_000, limit: int = 200_000) -> Fault:
    """The answer of the wire named ``wire`` (``anthropic``, ``openai``,
    ``openai-responses``, ``gemini``, ``bedrock``) to a request of ``tokens``
    over a window of ``limit``."""
    found = next((format for format in WIRES if format.name == wire), None)
    if found is None:
        names = ", ".join(format.name for format in WIRES)
        raise ValueError(f"no wire {wire!r} (the simulator speaks {names})")
    return found.too_long(tokens, limit)


def wire_for(path: str) -> WireFormat | None:
    """The wire format a POST to ``path`` (query string included) speaks."""
    bare = path.split("?", 1)[0]
    return next((wire for wire in WIRES if wire.matches(bare)), None)


class Simulator:
    """The scripted provider; see the module docstring."""

    def __init__(
        self, host: str = "127.0.0.1", port: int = 0, tls: ssl.SSLContext | None = None
    ) -> None:
        self._queue: deque[Reply | Fault] = deque()
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        self.models: list[str] = list(DEFAULT_MODELS)
        self._server = ThreadingHTTPServer((host, port), _handler_for(self))
        self._server.daemon_threads = True
        self._scheme = "http"
        if tls is not None:  # HTTPS; the handshake happens in each request's thread
            self._server.socket = tls.wrap_socket(
                self._server.socket, server_side=True, do_handshake_on_connect=False
            )
            self._scheme = "https"
        self._thread: threading.Thread | None = None
        self._count = 0
        # See the module docstring: the provider's own count of each request,
        # and the window it refuses a longer one over.
        self.count_tokens: TokenCounter | None = None
        self.context_limit: int | None = None
        # Answers the requests it recognises (None: the queue answers).
        self.responder: Responder | None = None

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{self._scheme}://{host!s}:{port}"

    def script(self, *items: Reply | Fault) -> None:
        """Queue answers; each request takes the next one."""
        with self._lock:
            self._queue.extend(items)

    def next_item(
        self, body: Any, wire: WireFormat | None = None, request: RecordedRequest | None = None
    ) -> tuple[Reply | Fault, int]:
        answer = None
        if self.responder is not None and request is not None:
            answer = self.responder(request)
        with self._lock:
            self._count += 1
            if answer is not None:
                return answer, self._count
            if self._queue:
                return self._queue.popleft(), self._count
        describe = wire.describe if wire is not None else describe_request
        return Reply.text(describe(body)), self._count

    def next_fault(self) -> Fault | None:
        """The Fault at the head of the queue, taken (a model list's answer),
        or None: a Reply there is left for the next POST."""
        with self._lock:
            if self._queue and isinstance(self._queue[0], Fault):
                fault = self._queue.popleft()
                assert isinstance(fault, Fault)
                return fault
        return None

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def serve_forever(self) -> None:
        self._server.serve_forever()

    def start(self) -> Simulator:
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},  # so stop() returns promptly
            name="oma-simulator",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Simulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _handler_for(simulator: Simulator) -> type[BaseHTTPRequestHandler]:
    class Handler(_SimulatorHandler):
        sim = simulator

    return Handler


class _SimulatorHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    sim: Simulator

    def setup(self) -> None:
        super().setup()
        # Headers and body go out as separate writes; without this, Nagle's
        # algorithm and the client's delayed ACK add ~40 ms to every answer.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read ``Simulator.requests`` instead."""

    def _headers(self) -> dict[str, str]:
        return {key.lower(): value for key, value in self.headers.items()}

    def do_GET(self) -> None:
        self.sim.record(RecordedRequest("GET", self.path, self._headers(), None))
        bare = self.path.split("?", 1)[0]
        headers = self._headers()
        for wire in WIRES:
            if wire.list_models is not None and wire.lists_for(headers):
                payload = wire.list_models(bare, list(self.sim.models))
                if payload is not None:
                    fault = self.sim.next_fault()  # a Fault at the head of the queue answers
                    if fault is not None:
                        self._fault(wire, fault)
                    else:
                        self._json(200, payload)
                    return
        self._json(404, {"error": {"message": f"no such endpoint {self.path}"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw.decode(errors="replace")
        request = RecordedRequest("POST", self.path, self._headers(), body, raw)
        self.sim.record(request)
        wire = wire_for(self.path)
        if wire is None:
            self._json(404, {"error": {"message": f"no such endpoint {self.path}"}})
            return
        counted = None if self.sim.count_tokens is None else self.sim.count_tokens(request)
        limit = self.sim.context_limit
        if counted is not None and limit is not None and counted > limit:
            self._fault(wire, wire.too_long(counted, limit))
            return
        item, number = self.sim.next_item(body, wire, request)
        if isinstance(item, Fault):
            self._fault(wire, item)
            return
        if counted is not None:
            item = dataclasses.replace(item, usage={**item.usage, "input_tokens": counted})
        if item.first_byte_delay_s:
            time.sleep(item.first_byte_delay_s)
        model = item.model or wire.model(self.path, body)
        streaming = wire.streams(self.path, body)
        if item.malformed and not streaming:
            self._send(200, b'{"id": "broken", "content": [', "application/json")
        elif not streaming:
            self._json(200, wire.message(item, model, number), item.headers)
        else:
            self._stream(wire.stream(item, model, number, body), item)

    def _fault(self, wire: WireFormat, fault: Fault) -> None:
        extra = {}
        if isinstance(fault.retry_after, str):
            extra["retry-after"] = fault.retry_after
        elif fault.retry_after is not None:
            extra["retry-after"] = f"{fault.retry_after:g}"
        self._json(fault.status, wire.error(fault, self.path), extra)

    def _json(self, status: int, payload: Any, extra: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json", extra)

    def _send(
        self, status: int, data: bytes, content_type: str, extra: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, stream: StreamBody, reply: Reply) -> None:
        self.send_response(200)
        self.send_header("content-type", stream.content_type)
        self.send_header("transfer-encoding", "chunked")
        self.send_header("cache-control", "no-cache")
        for key, value in reply.headers.items():
            self.send_header(key, value)
        self.end_headers()
        try:
            for index, frame in enumerate(stream.frames):
                if isinstance(frame, str):
                    if SEND_TIME in frame:  # stamped as it goes out, for latency benchmarks
                        frame = frame.replace(SEND_TIME, str(time.perf_counter_ns()))
                    data = frame.encode()
                else:
                    data = frame
                if reply.cut_after_events is not None and index == reply.cut_after_events:
                    self._chunk(data[: len(data) // 2])
                    self.close_connection = True
                    return  # no terminating chunk: the client sees a cut stream
                self._chunk(data)
                if reply.event_delay_s:
                    time.sleep(reply.event_delay_s)
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client went away (cancellation)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()


_HELP_EPILOG = """\
Unscripted, it answers every POST in the wire format its path names, with a
text reply that says what the request's latest user message held ("simulator
saw 1 message(s); the last user message holds: text 'hi'"), streamed when the
request asks for a stream, with small token usage. The paths it answers:
Anthropic .../messages, OpenAI .../chat/completions and .../responses (also
Azure's), Gemini .../models/MODEL:generateContent and :streamGenerateContent,
Bedrock .../model/MODEL/converse and converse-stream. GET .../models lists
a few model names. It keeps no state between requests and checks no key.

Point an agent at it with baseURL and any key, e.g. with --port 8765:
  {"name": "sim", "provider": "anthropic", "model": "sim-1",
   "baseURL": "http://127.0.0.1:8765", "apiKey": "any"}
  {"name": "sim", "provider": "openai", "model": "sim-1",
   "baseURL": "http://127.0.0.1:8765/v1", "apiKey": "any"}
Gemini and Azure take the bare URL as baseURL too; Bedrock takes it with any
AWS credentials and AWS_REGION in the environment. Scripted replies (tool
calls, faults, pacing) are for tests, through the Simulator class in Python.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m oma_host.testing.simulator",
        description="A provider simulator on 127.0.0.1: a real HTTP server that speaks the "
        "Anthropic, OpenAI, Azure OpenAI, Gemini and Bedrock wire formats, for trying agents "
        "without a provider account.",
        epilog=_HELP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--port", type=int, default=0, help="the port on 127.0.0.1 (default: any free one)"
    )
    args = parser.parse_args(argv)
    simulator = Simulator(port=args.port)
    print(f"simulator listening on {simulator.base_url}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        simulator.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
