"""The byte side of an ACP connection: newline-delimited JSON-RPC over an agent's stdio.

``NdjsonPipe`` is the transport the ``agent-client-protocol`` library's
``Connection`` accepts, and more: it sends the bridge's own requests and hands
updates straight to the bridge. Ours because an agent writing anything but
protocol to stdout is broken and the run must say so, a turn is the hot path
(one write, one future, one callback per update), and unknown update kinds must
reach the client rather than be dropped by validation.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from acp import RequestError

from oma_host.wire.peer import JsonRpcPeer, valid_id

LINE_LIMIT = 64 * 1024 * 1024  # one JSON-RPC message per line; images make lines long
SHOWN_LINE = 200  # how much of a garbage line a failure message quotes
_UPDATE = "session/update"
# Built once: ``json.dumps`` with any option builds an encoder per call.
_UTF8 = json.JSONEncoder(ensure_ascii=False)


@dataclass(frozen=True)
class PendingRequest:
    """One request of the bridge's awaiting the agent's answer.

    ``answer`` gets the result (or raises :class:`acp.RequestError` for an
    error answer, ConnectionError when the connection ends first). A run
    awaits it directly, so cancelling the run cancels it. ``settled`` is the
    same answer as the pipe receives it, behind an :func:`asyncio.shield`:
    never cancelled with a waiter, it completes when the answer arrives all
    the same, which tells when an abandoned turn ended."""

    settled: asyncio.Future[Any]
    answer: asyncio.Future[Any]

    @classmethod
    def on(cls, settled: asyncio.Future[Any]) -> PendingRequest:
        return cls(settled, asyncio.shield(settled))


class NdjsonPipe(JsonRpcPeer):
    """Newline-delimited JSON-RPC over an agent's stdin and stdout; ``fault``
    says why it stopped reading, when it was not the end of the stream.

    The pipe is the agent's :class:`~oma_host.process.groups.StdoutSink`
    (``spawn_group(..., stdout_sink=pipe)``; then :meth:`attach` its stdin):
    each line is read in the event loop's read callback, so a turn's traffic
    wakes no reader task. An answer to one of the pipe's requests resolves it
    there, and ``on_update`` gets the params of every ``session/update``,
    called soon (not at once). Anything else is queued for :meth:`receive`,
    and while anything is queued, so is everything after it: the library's
    ``Connection`` starts a task for each request it receives, and updates
    and answers must reach the bridge in arrival order with those tasks."""

    peer = "the agent"
    # As the library reads an answer: a missing result is null.
    result_optional = True

    def __init__(
        self,
        on_update: Callable[[Any], None],
        line_limit: int = LINE_LIMIT,
        output_limit: int | None = None,
    ) -> None:
        super().__init__()
        self._stdin: asyncio.StreamWriter | None = None
        self._on_update = on_update
        self._line_limit = line_limit
        # The bytes of stdout read since the count last began (see count_output).
        self._output_limit = output_limit
        self._output = 0
        self.over_output_limit = False
        self._library_ids: dict[Any, Any] = {}  # wire id -> the library's id
        self._partial = bytearray()  # the start of a line still arriving
        self._backlog: collections.deque[dict[str, Any]] = collections.deque()
        self._waiter: asyncio.Future[None] | None = None  # receive() waiting for the backlog
        self._ended = False  # stdout closed, or a fault stopped the reading
        self.fault: str | None = None
        self.eof = False

    def attach(self, stdin: asyncio.StreamWriter) -> None:
        """The agent's stdin, where the pipe writes."""
        self._stdin = stdin

    # -- out ------------------------------------------------------------------

    def _error(self, code: int, message: str, data: Any) -> Exception:
        return RequestError(code, message, data)

    def _write(self, message: dict[str, Any]) -> None:
        if self._stdin is None or self._stdin.is_closing():
            raise ConnectionError("the agent's stdin is closed")
        try:
            line = _UTF8.encode(message).encode()
        except UnicodeEncodeError:  # a lone surrogate: send it \u-escaped
            line = json.dumps(message).encode()
        self._write_now(line + b"\n")

    def _send(self, data: bytes) -> None:
        assert self._stdin is not None  # _write checked
        self._stdin.write(data)

    async def send(self, message: dict[str, Any]) -> None:
        """Send one message (the library's ``Transport.send``)."""
        if "method" in message and "id" in message:  # a request: renumbered
            wire_id = self.next_id()
            self._write({**message, "id": wire_id})
            self._library_ids[wire_id] = message["id"]
        else:
            self._write(message)
        await self.drain()

    def request(self, method: str, params: Any) -> PendingRequest:
        """Send a request now; its answer arrives in the returned record. A
        connection already closed fails it at once."""
        request_id = self.next_id()
        settled = self._expect(request_id)
        try:
            self._write({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        except ConnectionError as error:
            self._forget(request_id)
            settled.set_exception(error)
        return PendingRequest.on(settled)

    async def drain(self) -> None:
        """Wait while the agent's stdin is full (returns at once otherwise);
        a broken pipe fails every request awaiting an answer."""
        if self._stdin is None:
            raise ConnectionError("the agent's stdin is closed")
        try:
            await self._stdin.drain()
        except ConnectionError as error:
            self._fail_pending(error)
            raise

    # -- in: the agent's stdout, as it arrives ------------------------------

    @property
    def output_limit(self) -> int | None:
        return self._output_limit

    def count_output(self) -> None:
        """Count the agent's output afresh (a run begins): past the output
        limit, the pipe stops reading with a fault and ``over_output_limit``."""
        self._output = 0

    def stdout_data(self, data: bytes) -> None:
        if self._ended:
            return  # a fault stopped the reading: the rest is not read
        self._output += len(data)
        if self._output_limit is not None and self._output > self._output_limit:
            self.over_output_limit = True
            self._stop(f"it wrote more than {self._output_limit} bytes on stdout")
            return
        partial = self._partial
        searched = len(partial)  # no newline before here
        partial += data
        start = 0
        while (newline := partial.find(b"\n", searched)) >= 0:
            line = partial[start:newline]
            start = searched = newline + 1
            if len(line) > self._line_limit:
                self._stop(f"it wrote a line longer than {self._line_limit} bytes on stdout")
                return
            if not self._take(line):
                return
        del partial[:start]
        if len(partial) > self._line_limit:
            self._stop(f"it wrote a line longer than {self._line_limit} bytes on stdout")

    def stdout_ended(self, error: Exception | None) -> None:
        del error  # a read error ends the stream as its end does
        if self._ended:
            return
        if self._partial:  # a last line without its newline
            line, self._partial = self._partial, bytearray()
            if not self._take(line):
                return
        self.eof = True
        self._end()

    def _take(self, line: bytearray) -> bool:
        """Handle one line; False when it was not JSON-RPC (a fault)."""
        text = line.strip()
        if not text:
            return True
        try:
            message = json.loads(text)
        except ValueError:
            message = None
        if not isinstance(message, dict):
            shown = bytes(text[:SHOWN_LINE]).decode(errors="replace")
            self._stop(f"it wrote something that is not JSON-RPC on stdout: {shown!r}")
            return False
        if self._backlog or not self._route_now(message):
            self._backlog.append(message)
            self._wake()
        return True

    def _route_now(self, message: dict[str, Any]) -> bool:
        """Handle an update or an answer to one of the pipe's requests, and
        say so; anything else is for :meth:`receive` to route."""
        method = message.get("method")
        if method == _UPDATE:
            asyncio.get_running_loop().call_soon(self._on_update, message.get("params"))
            return True
        if method is None and "id" in message:
            future = self._answered(message)
            if future is not None:
                self._resolve(future, message)
                return True
        return False

    def _stop(self, fault: str) -> None:
        self.fault = fault
        self._partial.clear()
        self._end()

    def _end(self) -> None:
        self._ended = True
        if not self._backlog:  # else receive() fails them once the backlog is read
            self._fail_pending(ConnectionError("Connection closed"))
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def receive(self) -> dict[str, Any] | None:
        """The next message for the library's ``Connection``: the agent's
        requests and notifications other than ``session/update``. None at the
        end of the stream or a fault, when every pending request fails."""
        while True:
            while not self._backlog:
                if self._ended:
                    self._fail_pending(ConnectionError("Connection closed"))
                    return None
                self._waiter = asyncio.get_running_loop().create_future()
                try:
                    await self._waiter
                finally:
                    self._waiter = None
            message = self._backlog.popleft()
            method = message.get("method")
            if method is None:
                if "id" in message and (for_library := self._answer(message)) is not None:
                    return for_library
                continue  # ours, or neither request nor answer: nothing more to do
            if method == _UPDATE:
                asyncio.get_running_loop().call_soon(self._on_update, message.get("params"))
                continue
            return message

    def _answer(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """Resolve an answer to one of the pipe's requests; an answer to one
        of the library's comes back under the library's id, for it. One to no
        request (a stale or invented id) is ignored, as the library ignores one."""
        future = self._answered(message)
        if future is not None:
            self._resolve(future, message)
            return None
        request_id = message["id"]
        if valid_id(request_id) and request_id in self._library_ids:
            return {**message, "id": self._library_ids.pop(request_id)}
        return None

    async def close(self) -> None:
        self._ended = True
        self._fail_pending(ConnectionError("Connection closed"))
        self._wake()
        if self._stdin is not None:
            with contextlib.suppress(Exception):
                self._stdin.close()
