"""An ACP client of a few lines, for the tests that send what no SDK client
would and read what it would not: JSON written and read by hand to a real
``oma-host acp``."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from tests.acp_server.helpers import Door

TIMEOUT_S = 30
EditorAnswer = Callable[[dict[str, Any]], dict[str, Any]]


class RawEditor:
    """An ACP client of a few lines: JSON written and read by hand."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self._ids = itertools.count(1)
        # Everything read, in order: answers, notifications, the door's requests.
        self.received: list[dict[str, Any]] = []
        # How the editor answers the door's requests (default: an empty result).
        self.on_request: EditorAnswer = lambda request: {"result": {}}

    def send_line(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line)

    def send(self, method: str, params: Any, *, notify: bool = False) -> int | None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        msg_id = None if notify else next(self._ids)
        if msg_id is not None:
            message["id"] = msg_id
        self.send_line(json.dumps(message).encode() + b"\n")
        return msg_id

    async def read(self) -> dict[str, Any]:
        """The next message; the door's requests are answered on the way."""
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), TIMEOUT_S)
        assert line, "oma-host acp closed its output"
        message: dict[str, Any] = json.loads(line)
        self.received.append(message)
        if "method" in message and "id" in message:
            reply = {"jsonrpc": "2.0", "id": message["id"], **self.on_request(message)}
            self.send_line(json.dumps(reply).encode() + b"\n")
        return message

    async def answer(self, msg_id: int | None) -> dict[str, Any]:
        """The answer to request ``msg_id``: read already, or read until it comes."""
        for message in self.received:
            if "method" not in message and message.get("id") == msg_id:
                return message
        while True:
            message = await self.read()
            if "method" not in message and message.get("id") == msg_id:
                return message

    async def call(self, method: str, params: Any) -> dict[str, Any]:
        return await self.answer(self.send(method, params))

    async def start(self, door: Door) -> str:
        """Initialize and open a session; its id."""
        init = await self.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        assert init["result"]["protocolVersion"] == 1
        new = await self.call("session/new", {"cwd": str(door.cwd), "mcpServers": []})
        session_id: str = new["result"]["sessionId"]
        return session_id

    def updates_of(self, session_id: str) -> list[dict[str, Any]]:
        return [
            message["params"]["update"]
            for message in self.received
            if message.get("method") == "session/update"
            and message["params"]["sessionId"] == session_id
        ]

    def replies_of(self, session_id: str) -> list[dict[str, Any]]:
        """The session's ``agent_message_chunk`` updates: what a turn streams
        (not the announcements a session opens with, such as its commands)."""
        return [
            update
            for update in self.updates_of(session_id)
            if update["sessionUpdate"] == "agent_message_chunk"
        ]


@asynccontextmanager
async def raw_editor(door: Door, line_limit: int = 2**16) -> AsyncIterator[RawEditor]:
    """``oma-host acp`` over the door's agents (:func:`stderr_of` reads its
    stderr); ``line_limit``: the longest line the editor reads (it buffers
    twice that of the door's output before it stops reading)."""
    process = await asyncio.create_subprocess_exec(
        *door.argv(),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=door.env,
        limit=line_limit,
    )
    editor = RawEditor(process)
    try:
        yield editor
    finally:
        if process.stdin is not None and not process.stdin.is_closing():
            process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), TIMEOUT_S)
        except TimeoutError:
            process.kill()
            await process.wait()


async def stderr_of(editor: RawEditor) -> str:
    """Close the door's input and return what it wrote on stderr."""
    assert editor.process.stdin is not None and editor.process.stderr is not None
    editor.process.stdin.close()
    err = await asyncio.wait_for(editor.process.stderr.read(), TIMEOUT_S)
    assert await asyncio.wait_for(editor.process.wait(), TIMEOUT_S) == 0
    return err.decode()
