"""A provider that scales: an asyncio HTTP/1.1 server answering every
``POST .../messages`` with a fixed Anthropic Messages reply after a set
latency, on keep-alive connections, without a thread per request.

The concurrency benchmark (``bench/concurrency.py``) runs it in its own
process, so that the server is never what gets measured:

    python3 bench/asyncio_provider.py --latency-ms 100

prints ``listening on PORT`` once ready and serves until killed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket

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
_NOT_FOUND = b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n"
_MAX_HEAD = 64 * 1024


class _Connection(asyncio.Protocol):
    """Parses requests off one connection; answers each after the latency."""

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
            del self._buffer[: end + 4 + length]
            path = head.split(" ", 2)[1]
            answer = _RESPONSE if path.endswith("/messages") else _NOT_FOUND
            asyncio.get_running_loop().call_later(self._latency_s, self._send, answer)
        if len(self._buffer) > _MAX_HEAD:
            self._close()

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
