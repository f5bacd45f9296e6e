"""The host's own stdio transport to an MCP server, under the SDK's ``ClientSession``.

The SDK's ``stdio_client`` joins a long line's chunks in quadratic time, lets
stderr grow without bound and hides the server's process. Here lines are read
in linear time and capped at :data:`MAX_MESSAGE_BYTES`, stderr keeps its last
:data:`STDERR_TAIL_BYTES`, and the server runs in a session of its own marked
for the warden, so it never outlives the host nor is taken for an orphan.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage

from oma_host.core.config import McpServerStdio
from oma_host.core.delegation import host_environment
from oma_host.process.subreaper import subreaper_enabled
from oma_host.process.warden import MARKER, hold_marker, keep_child, release_child, release_marker
from oma_host.wire.ids import recover_id

MAX_MESSAGE_BYTES = 16 * 1024 * 1024  # as a process agent's output (maxOutputBytes)
STDERR_TAIL_BYTES = 8192
_READ_CHUNK = 1 << 16
_ID_SCAN_BYTES = 4096
_EXIT_GRACE_S = 2.0  # after stdin closes, as the SDK waits
_TERM_GRACE_S = 1.0

Received = SessionMessage | Exception


class ServerProcess:
    """One running server: its process, the reader and stderr tasks, the tail."""

    def __init__(self, process: asyncio.subprocess.Process, marker: str | None) -> None:
        self.process = process
        self._marker = marker
        self._tail = bytearray()

    @property
    def pid(self) -> int:
        return self.process.pid

    def stderr_tail(self) -> str:
        return self._tail.decode(errors="replace")

    async def keep_stderr_tail(self) -> None:
        """Read stderr to its end, keeping only its last bytes."""
        stderr = self.process.stderr
        assert stderr is not None
        while chunk := await stderr.read(_READ_CHUNK):
            self._tail += chunk
            if len(self._tail) > STDERR_TAIL_BYTES:
                del self._tail[: len(self._tail) - STDERR_TAIL_BYTES]

    async def read_messages(self, into: MemoryObjectSendStream[Received]) -> None:
        """Hand every line of stdout to the session, as a message or an error."""
        stdout = self.process.stdout
        assert stdout is not None
        buffer = bytearray()
        searched = 0  # how much of the buffer is known to hold no newline
        # An oversized line being dropped: its first bytes, and how many went before the buffer.
        dropping: tuple[bytes, int] | None = None
        async with into:
            while chunk := await stdout.read(_READ_CHUNK):
                buffer += chunk
                while (end := buffer.find(b"\n", searched)) != -1:
                    line = bytes(buffer[:end])
                    del buffer[: end + 1]
                    searched = 0
                    head, dropped = dropping or (line[:_ID_SCAN_BYTES], 0)
                    dropping = None
                    if dropped + len(line) > MAX_MESSAGE_BYTES:
                        message = _oversized(head, line[-_ID_SCAN_BYTES:], dropped + len(line))
                    elif line.strip():
                        message = _parse(line)
                    else:
                        continue
                    with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                        await into.send(message)
                if len(buffer) > MAX_MESSAGE_BYTES or dropping is not None:
                    # Over the limit with no end yet: keep its head and its last bytes only.
                    head, dropped = dropping or (bytes(buffer[:_ID_SCAN_BYTES]), 0)
                    kept = buffer[-_ID_SCAN_BYTES:]
                    dropping = (head, dropped + len(buffer) - len(kept))
                    buffer = bytearray(kept)
                searched = len(buffer)

    async def write_messages(self, source: MemoryObjectReceiveStream[SessionMessage]) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        async with source:
            async for outgoing in source:
                data = outgoing.message.model_dump_json(by_alias=True, exclude_unset=True)
                try:
                    stdin.write(data.encode() + b"\n")
                    await stdin.drain()
                except (ConnectionError, RuntimeError):
                    return  # the server is gone; the reader's end of file says so

    async def stop(self) -> None:
        """End the server: stdin closed, a grace period, then its group."""
        process = self.process
        try:
            if process.stdin is not None:
                process.stdin.close()
            if not await _exited(process, _EXIT_GRACE_S):
                _signal_group(process.pid, signal.SIGTERM)
                if not await _exited(process, _TERM_GRACE_S):
                    _signal_group(process.pid, signal.SIGKILL)
                    await process.wait()
        finally:
            release_child(process.pid)
            if self._marker is not None:
                release_marker(self._marker)


Transport = tuple[
    MemoryObjectReceiveStream[Received], MemoryObjectSendStream[SessionMessage], "ServerProcess"
]


def _parse(line: bytes) -> Received:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as error:
        return ValueError(f"the server wrote a line that is not a JSON-RPC message: {error}")


def _oversized(head: bytes, tail: bytes, size: int) -> Received:
    """The answer to an oversized message: an error response to the request
    it answered, when its id can be read, else an error for the session."""
    found, is_response = recover_id(head, tail)
    reason = (
        f"the MCP server's answer is {size} bytes, over the {MAX_MESSAGE_BYTES} bytes "
        "the host takes from one; it was dropped"
    )
    if found is None or not is_response:
        return ValueError(reason)
    error = {"jsonrpc": "2.0", "id": found, "error": {"code": -32603, "message": reason}}
    return SessionMessage(types.jsonrpc_message_adapter.validate_json(json.dumps(error)))


async def _exited(process: asyncio.subprocess.Process, within_s: float) -> bool:
    try:
        await asyncio.wait_for(process.wait(), within_s)
    except TimeoutError:
        return False
    return True


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


@contextlib.asynccontextmanager
async def stdio_transport(config: McpServerStdio, cwd: str) -> AsyncIterator[Transport]:
    """Start the server and yield the session's streams and the process."""
    env: dict[str, Any] = {
        **get_default_environment(),
        **{v.name: v.value for v in config.env},
        **host_environment(),  # a host it starts counts one level down (delegation limits)
    }
    marker = None
    if subreaper_enabled():
        marker = hold_marker("mcp")
        env[MARKER] = marker
    try:
        process = await asyncio.create_subprocess_exec(
            config.command,
            *config.args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
    except BaseException:
        if marker is not None:
            release_marker(marker)
        raise
    keep_child(process.pid)
    server = ServerProcess(process, marker)
    to_session, from_server = anyio.create_memory_object_stream[Received](0)
    to_server, from_session = anyio.create_memory_object_stream[SessionMessage](0)
    tasks = [
        asyncio.ensure_future(server.read_messages(to_session)),
        asyncio.ensure_future(server.write_messages(from_session)),
        asyncio.ensure_future(server.keep_stderr_tail()),
    ]
    try:
        yield from_server, to_server, server
    finally:
        await asyncio.shield(server.stop())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for stream in (from_server, to_server):
            await stream.aclose()
