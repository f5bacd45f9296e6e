"""``oma-host --tcp``: the host over TCP, one guarded session per connection.

A port is open to every local user and web page, so a connection must open with
an ``initialize`` carrying the token (:mod:`.tcp_token`), and one that opens
like HTTP is closed unread. TCP also needs bounds stdio does not: served and
unauthenticated connections, a handshake timeout, and backpressure that drops a
client that reads nothing. Closed connections are tallied, not logged one by
one, so a flood of sockets cannot flood stderr.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from oma_host.process.termination import ENDING_SIGNALS
from oma_host.server import close_http_client, close_telemetry
from oma_host.server.app import HostSession, SessionOptions
from oma_host.server.tcp_token import (
    new_token,
    read_token_file,
    remove_token_file,
    write_token_file,
)
from oma_host.wire.limits import DEFAULT_HANDSHAKE_TIMEOUT_S, DEFAULT_MAX_CONNECTIONS

log = logging.getLogger("oma_host.server")


def _announce(lines: str) -> None:
    """Write the lines launchers parse in one write, newline included, so a
    log line from the writer thread (``--log-level DEBUG``) never lands
    inside or between them."""
    sys.stderr.write(lines + "\n")
    sys.stderr.flush()


MAX_UNAUTHENTICATED = 16
_STOP_WAIT_S = 10.0
_LOOPBACK = ("127.0.0.1", "localhost", "::1")
CLOSED_TALLY_S = 10.0  # connections closed under the bounds are logged this often, counted


class _ClosedTally:
    """The connections closed under the bounds, by reason, logged as one
    line per reason at most every ``CLOSED_TALLY_S`` seconds."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._counts: Counter[str] = Counter()
        self._timer: asyncio.TimerHandle | None = None

    def count(self, reason: str) -> None:
        """One more connection closed for ``reason`` (the end of "closed N connection(s) ...")."""
        self._counts[reason] += 1
        if self._timer is None:
            self._timer = self._loop.call_later(CLOSED_TALLY_S, self.flush)

    def flush(self) -> None:
        """Log the counts so far."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for reason, closed in self._counts.items():
            log.warning("closed %d connection(s) %s", closed, reason)
        self._counts.clear()


@dataclass(frozen=True)
class TcpOptions:
    """Where and how to serve TCP: the command line's choices."""

    host: str
    port: int
    token_file: str | None = None  # --token-file: the token to use, else a random one
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    handshake_timeout_s: float = DEFAULT_HANDSHAKE_TIMEOUT_S


def _session(
    writer: asyncio.StreamWriter, options: SessionOptions, admit: Callable[[], bool]
) -> HostSession:
    """A session writing to ``writer`` within the bounds of the module docstring."""
    transport = writer.transport
    limit = options.max_message_bytes
    transport.set_write_buffer_limits(high=limit)  # drain() waits above it
    drop_at = 4 * limit

    def write(data: bytes) -> None:
        if transport.is_closing():
            raise ConnectionResetError("the connection is closed")
        if transport.get_write_buffer_size() + len(data) > drop_at:
            transport.abort()
            raise ConnectionResetError(f"the client left over {drop_at} bytes of replies unread")
        writer.write(data)

    return HostSession(write, options, ready_to_read=writer.drain, admit=admit)


async def _serve_tcp(tcp: TcpOptions, options: SessionOptions) -> None:
    token = read_token_file(Path(tcp.token_file)) if tcp.token_file else new_token()
    guarded = replace(options, auth_token=token)
    loop = asyncio.get_running_loop()
    sessions: dict[HostSession, asyncio.Task[None]] = {}
    # Of those, the ones that have not shown the token, oldest first, and the served ones.
    waiting: dict[HostSession, asyncio.StreamWriter] = {}
    served: set[HostSession] = set()
    closed = _ClosedTally(loop)

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        if len(waiting) >= MAX_UNAUTHENTICATED:
            oldest, its_writer = next(iter(waiting.items()))
            del waiting[oldest]
            closed.count(
                f"waiting longest to authenticate, for newer ones ({MAX_UNAUTHENTICATED} may wait)"
            )
            its_writer.transport.abort()
        log.info("client connected from %s", peer)

        def admit() -> bool:
            waiting.pop(session, None)
            if len(served) >= tcp.max_connections:
                closed.count(
                    f"with the token over --max-connections ({tcp.max_connections} are served)"
                )
                return False
            served.add(session)
            return True

        session = _session(writer, guarded, admit)
        task = asyncio.current_task()
        assert task is not None
        sessions[session] = task
        waiting[session] = writer

        def expire() -> None:
            if not session.authenticated:
                closed.count(
                    f"with no authenticated initialize within {tcp.handshake_timeout_s:g} s"
                )
                writer.transport.abort()

        timer = loop.call_later(tcp.handshake_timeout_s, expire)
        try:
            await session.serve(reader)
        finally:
            timer.cancel()
            del sessions[session]
            waiting.pop(session, None)
            served.discard(session)
            writer.close()
            log.info("client %s disconnected", peer)

    if tcp.host not in _LOOPBACK:
        log.warning(
            "serving on %s, not loopback: whoever can reach it and learns the token "
            "(it travels in clear text) can run agents, process agents included, as this user",
            tcp.host,
        )
    server = await asyncio.start_server(connection, tcp.host, tcp.port, limit=2**16)
    token_files: list[Path] = []
    stop = asyncio.Event()
    for signum in ENDING_SIGNALS:
        loop.add_signal_handler(signum, stop.set)
    try:
        banner: list[str] = []
        for sock in server.sockets:
            # The line a launcher may parse to learn the port (``--tcp 0``).
            host, port = sock.getsockname()[:2]
            banner.append(f"oma-host listening on {host}:{port}")
        for port in dict.fromkeys(sock.getsockname()[1] for sock in server.sockets):
            token_files.append(write_token_file(port, token))
            banner.append(f"oma-host token file: {token_files[-1]}")
        _announce("\n".join(banner))
        try:
            await stop.wait()
        finally:
            # SIGTERM or SIGHUP, or Ctrl-C (asyncio.run cancels this task): the sessions
            # end their runs in order, before asyncio.run would cancel every
            # task at once (see HostSession._interrupted for why that hangs).
            closed.flush()
            log.info("stopping: ending %d session(s)", len(sessions))
            server.close()
            for session in list(sessions):
                session.request_exit()
            if sessions:
                await asyncio.wait(set(sessions.values()), timeout=_STOP_WAIT_S)
    finally:
        for signum in ENDING_SIGNALS:
            loop.remove_signal_handler(signum)
        for path in token_files:
            remove_token_file(path)
        await close_telemetry()
        await close_http_client()


def serve_tcp(tcp: TcpOptions, options: SessionOptions | None = None) -> int:
    """Serve clients over TCP until SIGTERM or SIGHUP (returns 0) or Ctrl-C (which
    raises KeyboardInterrupt to the command line, which exits 130)."""
    asyncio.run(_serve_tcp(tcp, options or SessionOptions(framing="auto")))
    return 0
