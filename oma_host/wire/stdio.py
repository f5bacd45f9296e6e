"""The host's stdin and stdout as asyncio streams, fd 1 kept for protocol messages alone.

asyncio's pipe transports refuse regular files and ``/dev/null``, which a
person scripting the host uses (``oma-host acp < requests > answers``); those
are read by a thread and written with blocking writes.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
import threading
from typing import Any

READ_CHUNK = 1 << 16


def protect_stdout() -> int:
    """Take fd 1 for protocol messages (the descriptor returned) and point
    fd 1 at stderr, so a stray ``print`` (ours, a hook's, a library's) can
    never corrupt the stream."""
    messages = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return messages


def pollable(fd: int) -> bool:
    """Pipes, sockets and terminals work with the event loop; regular files and
    other devices (``< file``, ``< /dev/null``) cannot be polled by epoll."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


async def stdin_reader(limit: int = READ_CHUNK, already_read: bytes = b"") -> asyncio.StreamReader:
    """A reader of stdin (a duplicate of fd 0) that sees its end, starting
    with ``already_read`` (what was read from fd 0 before, not yet used)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=limit)
    if already_read:
        reader.feed_data(already_read)
    stdin = os.fdopen(os.dup(0), "rb", buffering=0)
    if pollable(stdin.fileno()):
        protocol = asyncio.StreamReaderProtocol(reader)
        await loop.connect_read_pipe(lambda: protocol, stdin)
        return reader

    def pump() -> None:
        while chunk := stdin.read(READ_CHUNK):
            loop.call_soon_threadsafe(reader.feed_data, chunk)
        loop.call_soon_threadsafe(reader.feed_eof)

    threading.Thread(target=pump, name="oma-stdin", daemon=True).start()
    return reader


async def stream_writer(fd: int) -> asyncio.StreamWriter:
    """A writer of ``fd`` whose ``drain`` waits while the reader is behind
    (a pipe's buffer full); a file that cannot be polled is written at once."""
    loop = asyncio.get_running_loop()
    # The writer's protocol: a StreamReaderProtocol is asyncio's public flow
    # control (pause_writing / drain) for a write-only stream.
    protocol = asyncio.StreamReaderProtocol(asyncio.StreamReader())
    pipe = os.fdopen(fd, "wb", buffering=0)
    transport: asyncio.WriteTransport
    if pollable(fd):
        transport, _ = await loop.connect_write_pipe(lambda: protocol, pipe)
    else:
        transport = _FileTransport(pipe)
    return asyncio.StreamWriter(transport, protocol, None, loop)


class _FileTransport(asyncio.WriteTransport):
    """Blocking writes to a regular file or a device epoll cannot poll."""

    def __init__(self, file: Any) -> None:
        super().__init__()
        self._file = file
        self._closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data)
        while view:
            view = view[self._file.write(view) :]

    def get_write_buffer_size(self) -> int:
        return 0

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        if not self._closing:
            self._closing = True
            self._file.close()

    def can_write_eof(self) -> bool:
        return False
