"""A provider that scales: an asyncio HTTP/1.1 server answering every
``POST .../messages`` on keep-alive connections, without a thread per
request, in its own process so that it is never what gets measured.

- A request that does not ask to stream gets a fixed Anthropic Messages
  reply after a set latency (the concurrency benchmark, ``bench/concurrency.py``).
- A request with ``"stream": true`` in its body gets an Anthropic SSE stream
  of text deltas, the bytes the provider simulator
  (``oma_host.testing.wire_anthropic``) renders for the same reply, one HTTP
  chunk per event (the relay benchmark, ``bench/providers.py``). Its shape
  comes from the path, so that an agent's ``baseURL`` chooses it:

  - ``/deltas/N/v1/messages``: N deltas of one character, :func:`relay_text`
    (the characters cycle, so a delta lost or out of order shows), the whole
    body written at once: as fast as the reader takes it;
  - ``/deltas/N/paced/US/v1/messages``: N deltas written US microseconds
    apart, each one's text the ``time.perf_counter_ns()`` of its write and a
    ``;`` (a system-wide monotonic clock on Linux, so a reader in another
    process reads its latency). A thread writes them with ``time.sleep``
    between: the event loop's timers round up to the millisecond.

    python3 bench/asyncio_provider.py --latency-ms 100

prints ``listening on PORT`` once ready and serves until killed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import re
import select
import socket
import string
import sys
import threading
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make ``oma_host`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from oma_host.testing.script import SEND_TIME, Reply
from oma_host.testing.wire_anthropic import anthropic_stream

_REPLY = json.dumps(
    {
        "id": "msg_bench",
        "type": "message",
        "role": "assistant",
        "model": "bench",
        "content": [{"type": "text", "text": "hi there"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 3},
    }
).encode()
_RESPONSE = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (
    len(_REPLY),
    _REPLY,
)
_STREAM_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
    b"transfer-encoding: chunked\r\ncache-control: no-cache\r\n\r\n"
)
_STREAM_END = b"0\r\n\r\n"
_NOT_FOUND = b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n"
_MAX_HEAD = 64 * 1024
_STREAM_PATH = re.compile(r"/deltas/(\d+)(?:/paced/(\d+))?/")
_numbers = itertools.count(1)
# Not a lower-case letter: the host holds back a delta that could begin its
# agent's API key (the benchmarks' keys are lower case) until the next one
# shows it does not, and sends the two as one.
_CYCLE = string.ascii_uppercase + string.digits


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def relay_text(deltas: int) -> str:
    """The text of an unpaced stream of ``deltas`` deltas, one character each."""
    return (_CYCLE * (deltas // len(_CYCLE) + 1))[:deltas]


def stream_events(text: str, delta_size: int) -> list[bytes]:
    """The SSE events of a text reply cut into deltas of ``delta_size``
    characters, as the simulator renders them (message_start ... message_stop)."""
    reply = Reply.text(text, chunk_size=delta_size)
    frames = anthropic_stream(reply, "bench", next(_numbers), None).frames
    return [frame.encode() if isinstance(frame, str) else frame for frame in frames]


_bodies: dict[int, bytes] = {}


def _whole_stream(deltas: int) -> bytes:
    """The unpaced stream of ``deltas`` deltas, head to last chunk, built once."""
    body = _bodies.get(deltas)
    if body is None:
        events = stream_events(relay_text(deltas), 1)
        body = _bodies[deltas] = _STREAM_HEAD + b"".join(map(_chunk, events)) + _STREAM_END
    return body


def _send_all(sock: socket.socket, data: bytes) -> None:
    """Write ``data`` on a duplicate of a connection's socket, non-blocking
    like the original, from a thread other than the loop's."""
    view = memoryview(data)
    while view:
        try:
            view = view[sock.send(view) :]
        except BlockingIOError:
            select.select([], [sock], [], 5.0)


def _paced(sock: socket.socket, deltas: int, pace_s: float) -> None:
    """Write a paced stream, stamping each event as it goes (in a thread)."""
    with sock, contextlib.suppress(OSError):  # OSError: the reader went away
        _send_all(sock, _STREAM_HEAD)
        stamp = SEND_TIME.encode()
        marker = SEND_TIME + ";"
        for event in stream_events(marker * deltas, len(marker)):
            # As the simulator does it: stamped as it goes out, a pause after each.
            _send_all(sock, _chunk(event.replace(stamp, b"%d" % time.perf_counter_ns())))
            time.sleep(pace_s)
        _send_all(sock, _STREAM_END)


class _Connection(asyncio.Protocol):
    """Parses requests off one connection; answers each after the latency,
    or with a stream (see the module docstring)."""

    def __init__(self, latency_s: float) -> None:
        self._latency_s = latency_s
        self._buffer = bytearray()
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        while (end := self._buffer.find(b"\r\n\r\n")) >= 0:
            head = bytes(self._buffer[:end]).decode("latin-1")
            length = 0
            for line in head.split("\r\n")[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            if len(self._buffer) < end + 4 + length:
                return  # the body is still coming
            body = bytes(self._buffer[end + 4 : end + 4 + length])
            del self._buffer[: end + 4 + length]
            path = head.split(" ", 2)[1]
            if not path.endswith("/messages"):
                self._send(_NOT_FOUND)
            elif b'"stream"' in body and json.loads(body).get("stream") is True:
                self._stream(path)
            else:
                asyncio.get_running_loop().call_later(self._latency_s, self._send, _RESPONSE)
        if len(self._buffer) > _MAX_HEAD:
            self._close()

    def _stream(self, path: str) -> None:
        match = _STREAM_PATH.search(path)
        if match is None or self._transport is None:
            self._send(_NOT_FOUND)
            return
        deltas = int(match[1])
        if match[2] is None:
            self._send(_whole_stream(deltas))
            return
        # The thread writes on a duplicate of the socket: the transport has
        # nothing queued (a reader waits for the end of one answer before the
        # next), and the duplicate stays non-blocking like the original.
        sock = self._transport.get_extra_info("socket").dup()
        thread = threading.Thread(
            target=_paced, args=(sock, deltas, int(match[2]) / 1e6), daemon=True
        )
        thread.start()

    def _send(self, answer: bytes) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.write(answer)

    def _close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None


async def serve(latency_s: float, port: int = 0) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: _Connection(latency_s), "127.0.0.1", port, backlog=4096
    )
    print(f"listening on {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    asyncio.run(serve(args.latency_ms / 1000, args.port))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
