"""The provider simulator: a real HTTP server on 127.0.0.1 that speaks the
Anthropic Messages API and OpenAI Chat Completions, streaming and not.

Tests and ``oma-host demo`` script it per call: a queue of :class:`Reply`
(content blocks, usage, pacing, a cut or malformed stream) and
:class:`Fault` (an HTTP error such as 429 with ``retry-after``). Every request
is recorded with its headers and parsed body. With the queue empty it answers
with a description of the latest user message, so an unscripted run still
shows what the provider was sent.

It runs in a background thread (``with Simulator() as sim: sim.base_url``) or
alone: ``python -m oma_host.testing.simulator --port 8765``; given an SSL
context (``tls``), it serves HTTPS.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import ssl
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# Reply text holding this marker is sent with it replaced by time.perf_counter_ns()
# at the moment of the write: a benchmark in the same process measures latency.
SEND_TIME = "@send-time@"


@dataclass
class Reply:
    """One scripted model reply, rendered in the wire format of the endpoint hit.

    ``content`` uses oma-host's blocks: text, tool_use, reasoning."""

    content: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=lambda: {"input_tokens": 10, "output_tokens": 5})
    stop_reason: str | None = None  # default: tool_use when a tool is called, else end_turn
    chunk_size: int = 8  # characters per text delta when streaming
    event_delay_s: float = 0.0  # pause between streamed events
    first_byte_delay_s: float = 0.0  # pause before the status line
    cut_after_events: int | None = None  # close the stream mid-event after this many events
    malformed: bool = False  # send a body (or an SSE event) that is not JSON
    headers: dict[str, str] = field(default_factory=dict)  # extra response headers

    @classmethod
    def text(cls, text: str, **options: Any) -> Reply:
        return cls(content=[{"type": "text", "text": text}], **options)


@dataclass
class Fault:
    """An HTTP error answer in the provider's error format."""

    status: int
    message: str = "simulated provider error"
    retry_after: float | str | None = None  # a str is sent as is (an HTTP date, or junk)
    error_type: str | None = None


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


def _stop_reason(reply: Reply) -> str:
    if reply.stop_reason:
        return reply.stop_reason
    return "tool_use" if any(b.get("type") == "tool_use" for b in reply.content) else "end_turn"


def describe_request(body: Any) -> str:
    """The default answer: what the latest user message held."""
    messages = body.get("messages", []) if isinstance(body, dict) else []
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    if not users:
        return "simulator: the request had no user message"
    content = users[-1].get("content")
    blocks: list[Any] = (
        content if isinstance(content, list) else [{"type": "text", "text": content}]
    )
    parts: list[str] = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(f"text {block.get('text')!r}")
        elif kind == "image":  # Anthropic
            source = block.get("source", {})
            parts.append(f"image {source.get('media_type')} ({len(source.get('data', ''))} chars)")
        elif kind == "image_url":  # OpenAI
            url = block.get("image_url", {}).get("url", "")
            parts.append(f"image {url.split(';')[0].removeprefix('data:')} ({len(url)} chars)")
        else:
            parts.append(str(kind))
    return f"simulator saw {len(messages)} message(s); the last user message holds: " + ", ".join(
        parts
    )


# -- Anthropic rendering -------------------------------------------------------


def _anthropic_block(block: dict[str, Any]) -> dict[str, Any]:
    kind = block.get("type")
    if kind == "reasoning":
        if block.get("redactedData"):
            return {"type": "redacted_thinking", "data": block["redactedData"]}
        return {
            "type": "thinking",
            "thinking": block["text"],
            "signature": block.get("signature", ""),
        }
    return dict(block)


def anthropic_message(reply: Reply, model: str, number: int) -> dict[str, Any]:
    return {
        "id": f"msg_sim_{number}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [_anthropic_block(b) for b in reply.content],
        "stop_reason": _stop_reason(reply),
        "stop_sequence": None,
        "usage": dict(reply.usage),
    }


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def anthropic_events(reply: Reply, model: str, number: int) -> Iterator[tuple[str, Any]]:
    start = anthropic_message(reply, model, number)
    start["content"] = []
    start["stop_reason"] = None
    start["usage"] = {"input_tokens": reply.usage.get("input_tokens", 0), "output_tokens": 1}
    yield "message_start", {"type": "message_start", "message": start}
    yield "ping", {"type": "ping"}
    for index, block in enumerate(reply.content):
        kind = block.get("type")
        rendered = _anthropic_block(block)
        if kind == "text":
            yield "content_block_start", _block_start(index, {"type": "text", "text": ""})
            for piece in _pieces(block["text"], reply.chunk_size):
                yield "content_block_delta", _delta(index, {"type": "text_delta", "text": piece})
        elif kind == "tool_use":
            empty = {**rendered, "input": {}}
            yield "content_block_start", _block_start(index, empty)
            for piece in _pieces(json.dumps(block["input"]), reply.chunk_size):
                yield (
                    "content_block_delta",
                    _delta(index, {"type": "input_json_delta", "partial_json": piece}),
                )
        elif rendered["type"] == "thinking":
            yield "content_block_start", _block_start(index, {"type": "thinking", "thinking": ""})
            for piece in _pieces(block["text"], reply.chunk_size):
                yield (
                    "content_block_delta",
                    _delta(index, {"type": "thinking_delta", "thinking": piece}),
                )
            yield (
                "content_block_delta",
                _delta(index, {"type": "signature_delta", "signature": rendered["signature"]}),
            )
        else:
            yield "content_block_start", _block_start(index, rendered)
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": _stop_reason(reply), "stop_sequence": None},
            "usage": {"output_tokens": reply.usage.get("output_tokens", 0)},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def _block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


# -- OpenAI rendering ----------------------------------------------------------

_OPENAI_FINISH = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length"}


def _openai_tool_calls(reply: Reply) -> list[dict[str, Any]]:
    return [
        {
            "id": block["id"],
            "type": "function",
            "function": {"name": block["name"], "arguments": json.dumps(block["input"])},
        }
        for block in reply.content
        if block.get("type") == "tool_use"
    ]


def _openai_usage(reply: Reply) -> dict[str, int]:
    prompt = reply.usage.get("input_tokens", 0)
    completion = reply.usage.get("output_tokens", 0)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def openai_completion(reply: Reply, model: str, number: int) -> dict[str, Any]:
    text = "".join(b["text"] for b in reply.content if b.get("type") == "text")
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if tool_calls := _openai_tool_calls(reply):
        message["tool_calls"] = tool_calls
    return {
        "id": f"chatcmpl-sim-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": _OPENAI_FINISH[_stop_reason(reply)]}
        ],
        "usage": _openai_usage(reply),
    }


def openai_chunks(
    reply: Reply, model: str, number: int, include_usage: bool
) -> Iterator[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-sim-{number}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    yield chunk({"role": "assistant", "content": ""})
    for block in reply.content:
        if block.get("type") == "text":
            for piece in _pieces(block["text"], reply.chunk_size):
                yield chunk({"content": piece})
    for index, call in enumerate(_openai_tool_calls(reply)):
        function = call["function"]
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": call["id"],
                        "type": "function",
                        "function": {"name": function["name"], "arguments": ""},
                    }
                ]
            }
        )
        for piece in _pieces(function["arguments"], reply.chunk_size):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, _OPENAI_FINISH[_stop_reason(reply)])
    if include_usage:
        final = chunk({})
        final["choices"] = []
        final["usage"] = _openai_usage(reply)
        yield final


# -- the server ----------------------------------------------------------------


class Simulator:
    """The scripted provider; see the module docstring."""

    def __init__(
        self, host: str = "127.0.0.1", port: int = 0, tls: ssl.SSLContext | None = None
    ) -> None:
        self._queue: deque[Reply | Fault] = deque()
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
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

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{self._scheme}://{host!s}:{port}"

    def script(self, *items: Reply | Fault) -> None:
        """Queue answers; each request takes the next one."""
        with self._lock:
            self._queue.extend(items)

    def next_item(self, body: Any) -> tuple[Reply | Fault, int]:
        with self._lock:
            self._count += 1
            if self._queue:
                return self._queue.popleft(), self._count
        return Reply.text(describe_request(body)), self._count

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

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw.decode(errors="replace")
        headers = {key.lower(): value for key, value in self.headers.items()}
        self.sim.record(RecordedRequest("POST", self.path, headers, body))
        if self.path.endswith("/messages"):
            wire = "anthropic"
        elif self.path.endswith("/chat/completions"):
            wire = "openai"
        else:
            self._json(404, {"error": {"message": f"no such endpoint {self.path}"}})
            return
        item, number = self.sim.next_item(body)
        if isinstance(item, Fault):
            self._fault(wire, item)
            return
        if item.first_byte_delay_s:
            time.sleep(item.first_byte_delay_s)
        model = str(body.get("model", "")) if isinstance(body, dict) else ""
        streaming = isinstance(body, dict) and body.get("stream") is True
        if item.malformed and not streaming:
            self._send(200, b'{"id": "broken", "content": [', "application/json")
        elif not streaming:
            payload = (
                anthropic_message(item, model, number)
                if wire == "anthropic"
                else openai_completion(item, model, number)
            )
            self._json(200, payload, item.headers)
        else:
            self._stream(wire, item, model, number, body)

    def _fault(self, wire: str, fault: Fault) -> None:
        error_type = fault.error_type or {429: "rate_limit_error", 529: "overloaded_error"}.get(
            fault.status, "api_error" if fault.status >= 500 else "invalid_request_error"
        )
        payload: dict[str, Any] = (
            {"type": "error", "error": {"type": error_type, "message": fault.message}}
            if wire == "anthropic"
            else {"error": {"message": fault.message, "type": error_type, "code": None}}
        )
        extra = {}
        if isinstance(fault.retry_after, str):
            extra["retry-after"] = fault.retry_after
        elif fault.retry_after is not None:
            extra["retry-after"] = f"{fault.retry_after:g}"
        self._json(fault.status, payload, extra)

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

    def _stream(self, wire: str, reply: Reply, model: str, number: int, body: Any) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("cache-control", "no-cache")
        for key, value in reply.headers.items():
            self.send_header(key, value)
        self.end_headers()
        if wire == "anthropic":
            frames = [
                f"event: {name}\ndata: {json.dumps(data)}\n\n"
                for name, data in anthropic_events(reply, model, number)
            ]
        else:
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            frames = [
                f"data: {json.dumps(chunk)}\n\n"
                for chunk in openai_chunks(reply, model, number, include_usage)
            ]
            frames.append("data: [DONE]\n\n")
        if reply.malformed:
            frames.insert(min(2, len(frames)), "data: {this is not json\n\n")
        try:
            for index, frame in enumerate(frames):
                if reply.cut_after_events is not None and index == reply.cut_after_events:
                    self._chunk(frame[: len(frame) // 2].encode())
                    self.close_connection = True
                    return  # no terminating chunk: the client sees a cut stream
                if SEND_TIME in frame:  # stamp the moment it goes out, for latency benchmarks
                    frame = frame.replace(SEND_TIME, str(time.perf_counter_ns()))
                self._chunk(frame.encode())
                if reply.event_delay_s:
                    time.sleep(reply.event_delay_s)
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client went away (cancellation)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the oma-host provider simulator.")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    simulator = Simulator(port=args.port)
    print(f"simulator listening on {simulator.base_url}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        simulator.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
