"""The byte side of an ACP connection: newline-delimited JSON-RPC over an
agent process's stdin and stdout (its stderr is drained by
:class:`bridges.common.StderrTail`).

``NdjsonPipe`` is the message transport the ``agent-client-protocol``
library's ``Connection`` accepts. It is ours rather than the library's stdio
transport for two reasons: that one logs and skips a line that is not JSON,
while an agent writing anything but protocol to stdout is broken and the run
must say so; and an update kind the library's schema does not know would be
dropped by its validation, while oma-host streams it to the client.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from typing import Any, get_args

from acp.schema import SessionNotification

LINE_LIMIT = 64 * 1024 * 1024  # one JSON-RPC message per line; images make lines long
SHOWN_LINE = 200  # how much of a garbage line a failure message quotes


def _known_update_kinds() -> frozenset[str]:
    """Every ``sessionUpdate`` the library's schema can parse."""
    union = SessionNotification.model_fields["update"].annotation
    return frozenset(
        get_args(model.model_fields["session_update"].annotation)[0] for model in get_args(union)
    )


KNOWN_UPDATES = _known_update_kinds()


class NdjsonPipe:
    """Newline-delimited JSON-RPC over an agent's stdin and stdout; ``fault``
    says why it stopped reading, when it was not the end of the stream."""

    def __init__(
        self, process: asyncio.subprocess.Process, on_unknown: Callable[[dict[str, Any]], None]
    ) -> None:
        assert process.stdin is not None and process.stdout is not None
        self._stdin = process.stdin
        self._stdout = process.stdout
        self._on_unknown = on_unknown
        self.fault: str | None = None
        self.eof = False

    async def send(self, message: dict[str, Any]) -> None:
        if self._stdin.is_closing():
            raise ConnectionError("the agent's stdin is closed")
        try:
            line = json.dumps(message, ensure_ascii=False).encode()
        except UnicodeEncodeError:  # a lone surrogate: send it \u-escaped
            line = json.dumps(message).encode()
        self._stdin.write(line + b"\n")
        await self._stdin.drain()

    async def receive(self) -> dict[str, Any] | None:
        while True:
            try:
                line = await self._stdout.readline()
            except ValueError:  # longer than the stream limit
                self.fault = f"it wrote a line longer than {LINE_LIMIT} bytes on stdout"
                return None
            if not line:
                self.eof = True
                return None
            text = line.strip()
            if not text:
                continue
            try:
                message = json.loads(text)
            except ValueError:
                message = None
            if not isinstance(message, dict):
                shown = text[:SHOWN_LINE].decode(errors="replace")
                self.fault = f"it wrote something that is not JSON-RPC on stdout: {shown!r}"
                return None
            if not self._unknown_update(message):
                return message

    def _unknown_update(self, message: dict[str, Any]) -> bool:
        if message.get("method") != "session/update":
            return False
        params = message.get("params")
        update = params.get("update") if isinstance(params, dict) else None
        if not isinstance(update, dict) or update.get("sessionUpdate") in KNOWN_UPDATES:
            return False
        # The library handles each notification in a task of its own, started in
        # arrival order; queueing this one the same way keeps the order.
        asyncio.get_running_loop().call_soon(self._on_unknown, update)
        return True

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            self._stdin.close()
