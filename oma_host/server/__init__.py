"""The JSON-RPC host over stdio or TCP (PROTOCOL.md sections 1, 2, 5, 6, 7, 11).

``app`` serves one connection (lifecycle, requests, cancellation) over
``rpc`` (JSON-RPC messages) and ``framing`` (LSP and ndjson; ``auto`` picks
one from the first bytes). ``registry`` declares every method; ``lifecycle``,
``agent_methods`` and ``orchestration_methods`` implement them over the typed
per-session ``state`` (agents, store, evaluator, ``callbacks`` to the client,
one ``supervisor`` for background work); ``models`` and ``outgoing`` are the
wire types.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import sys
import threading
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    from oma_host.server.app import SessionOptions

log = logging.getLogger("oma_host.server")


def _protect_stdout() -> BinaryIO:
    """Take fd 1 for protocol frames and point fd 1 at stderr, so a stray
    ``print`` (ours, a hook's, a library's) can never corrupt the stream."""
    frames = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return frames


def _pollable(fd: int) -> bool:
    """Pipes, sockets and terminals work with the event loop; regular files and
    other devices (``< file``, ``< /dev/null``) cannot be polled by epoll."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


async def _stdin_reader() -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**16)
    stdin = os.fdopen(os.dup(0), "rb", buffering=0)
    if _pollable(stdin.fileno()):
        protocol = asyncio.StreamReaderProtocol(reader)
        await loop.connect_read_pipe(lambda: protocol, stdin)
        return reader

    def pump() -> None:
        while chunk := stdin.read(65536):
            loop.call_soon_threadsafe(reader.feed_data, chunk)
        loop.call_soon_threadsafe(reader.feed_eof)

    threading.Thread(target=pump, name="oma-stdin", daemon=True).start()
    return reader


async def _serve_stdio(options: SessionOptions) -> int:
    from oma_host.server.app import HostSession, stdout_writer

    frames_out = _protect_stdout()
    session = HostSession(stdout_writer(frames_out), options)
    try:
        return await session.serve(await _stdin_reader())
    finally:
        await _close_http_client()


async def _close_http_client() -> None:
    """Close the providers' shared HTTP client, if a provider ever loaded it."""
    http = sys.modules.get("oma_host.providers.http")
    if http is not None:
        await http.close_shared_client()


def _default_options() -> SessionOptions:
    from oma_host.server.app import SessionOptions

    return SessionOptions(framing="auto")


def serve_stdio(options: SessionOptions | None = None) -> int:
    """Serve one client on stdin/stdout; returns the process exit code."""
    return asyncio.run(_serve_stdio(options or _default_options()))


async def _serve_tcp(host: str, port: int, options: SessionOptions) -> None:
    from oma_host.server.app import HostSession

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        log.info("client connected from %s", peer)
        session = HostSession(writer.write, options)
        try:
            await session.serve(reader)
        finally:
            writer.close()
            log.info("client %s disconnected", peer)

    if host not in ("127.0.0.1", "localhost", "::1"):
        # Anyone who can connect can run commands as this user (process agents).
        log.warning(
            "serving on %s, not loopback: every client that can reach it can run agents, "
            "including process agents, as this user; there is no authentication",
            host,
        )
    server = await asyncio.start_server(connection, host, port, limit=2**16)
    for sock in server.sockets:
        # The one line a launcher may parse to learn the port (``--tcp 0``).
        print(
            f"oma-host listening on {sock.getsockname()[0]}:{sock.getsockname()[1]}",
            file=sys.stderr,
            flush=True,
        )
    async with server:
        await server.serve_forever()


def serve_tcp(host: str, port: int, options: SessionOptions | None = None) -> int:
    """Serve clients over TCP, one session per connection, until interrupted
    (Ctrl-C raises KeyboardInterrupt to the command line, which exits 130)."""
    asyncio.run(_serve_tcp(host, port, options or _default_options()))
    return 0
