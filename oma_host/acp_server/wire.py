"""The door's JSON-RPC peer: newline-delimited JSON on stdio, one message a
line, as ACP specifies. It reads the editor's requests and notifications and
hands each to its handler (:mod:`.routes` owns the table), writes the
answers, and sends the door's own notifications and requests to the editor,
routing each answer to the one future that awaits it.

It is ours rather than the ``agent-client-protocol`` library's
``AgentSideConnection`` because a prompt turn is the door's hot path, and
through the library every message of a turn paid for machinery the door does
not need: each write went through a queue and a sender task and was awaited
(two event-loop passes a message), each request ran in a tracing span, and
each ``session/update`` was built as a pydantic model and dumped again. Here
messages are written in the order they are made, with no task and no wait:
notifications are gathered and written together once the event loop comes
round (or sooner, when an answer or a request is written, which carries them
with it), by the JSON-RPC peer core both doors share
(:mod:`oma_host.core.jsonrpc`, which also keeps the ids and futures of the
door's requests and reads the editor's answers). So every update of a turn
is on the wire before the turn's answer, usually in the same write. The
handlers decide what to validate and build (:mod:`.routes`); this module
keeps the line framing and the dispatch.

What it keeps of the library's wire behaviour:

- a line that is not JSON (or JSON that is not an object) is logged and
  skipped, and the connection carries on;
- every request runs in a task of its own, so a long ``session/prompt`` never
  holds up ``session/cancel`` or another session's requests; notifications
  likewise;
- errors: a method without a handler is -32601 ``Method not found`` with
  ``data: {method}``; a handler's :class:`acp.RequestError` is answered as
  it is; a pydantic ``ValidationError`` is -32602 ``Invalid params`` with
  ``data: {errors}``; anything else is logged and answered -32603 ``Internal
  error`` (its text as ``data``, parsed when it is JSON);
- an answer to one of the door's requests without ``result`` is a null
  result (the TypeScript SDK leaves it out); an ``error`` without an
  integer ``code`` is a -32603 saying the answer was malformed;
- at the end of the input every request of the door awaiting the editor
  fails with ConnectionError, and the requests still running are cancelled;
- the bytes: compact separators and ASCII escapes, as the library wrote them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from acp import RequestError
from pydantic import ValidationError

from oma_host.core.collector import count_in_flight
from oma_host.core.jsonrpc import JsonRpcPeer

log = logging.getLogger(__name__)

# One JSON-RPC message per line; a prompt with images makes long lines. The
# library's default, and a longer line is still read (see ``_read_line``).
LINE_LIMIT = 50 * 1024 * 1024
SHOWN_LINE = 200  # how much of a line that is not JSON-RPC the log quotes
# Built once: ``json.dumps`` with any option builds an encoder per call. The
# same bytes as the library's sender; ``default=str`` so an error's data that
# has no JSON form is sent as text rather than breaking the connection.
_ENCODER = json.JSONEncoder(separators=(",", ":"), default=str)

RequestHandler = Callable[[Any], Awaitable[Any]]
"""Takes a request's raw params, returns its result in JSON form (None is ``null``)."""
NotificationHandler = Callable[[Any], Awaitable[None]]


class AcpWire(JsonRpcPeer):
    """One ACP connection on a stream pair; :meth:`serve` runs it to the end
    of the input. The ids, futures, answer parsing and batched writes are
    :class:`~oma_host.core.jsonrpc.JsonRpcPeer`'s."""

    peer = "the editor"
    # The TypeScript SDK leaves a void handler's null result out of its answer.
    result_optional = True

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        super().__init__()  # the door's requests, numbered from 0 as the library did
        self._reader = reader
        self._writer = writer
        self._running: set[asyncio.Task[None]] = set()
        self._closed = False

    def _error(self, code: int, message: str, data: Any) -> Exception:
        return RequestError(code, message, data)

    # -- out --------------------------------------------------------------------

    def _frame(self, message: dict[str, Any]) -> bytes:
        if self._closed:
            raise ConnectionError("Connection closed")
        return (_ENCODER.encode(message) + "\n").encode()

    def _send(self, data: bytes) -> None:
        self._writer.write(data)

    def notify(self, method: str, params: Any) -> None:
        """Send a notification: written with the next message, or once the
        event loop comes round; ConnectionError once the editor has gone."""
        self._gather(self._frame({"jsonrpc": "2.0", "method": method, "params": params}))

    async def drain(self) -> None:
        """Wait while the editor is not reading what was written (returns at
        once otherwise). What is gathered stays gathered: it goes out with
        the next message, a turn's last updates with its answer."""
        if not self._closed:
            await self._writer.drain()

    async def request(self, method: str, params: Any) -> Any:
        """Ask the editor; its result, or :class:`acp.RequestError` for an
        error answer, ConnectionError when the connection ends first."""
        request_id = self.next_id()
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        self._write_now(self._frame(message))
        future = self._expect(request_id)
        try:
            await self.drain()
            return await future
        finally:
            self._forget(request_id)

    # -- in ---------------------------------------------------------------------

    async def serve(
        self,
        requests: Mapping[str, RequestHandler],
        notifications: Mapping[str, NotificationHandler],
    ) -> None:
        """Dispatch what the editor sends until the end of the input."""
        try:
            while (message := await self._next_message()) is not None:
                self._dispatch(message, requests, notifications)
        finally:
            await self._shut()

    async def _next_message(self) -> dict[str, Any] | None:
        while line := await self._read_line():
            text = line.strip()
            if not text:
                continue
            try:
                message = json.loads(text)
            except ValueError:
                message = None
            if isinstance(message, dict):
                return message
            shown = text[:SHOWN_LINE].decode(errors="replace")
            log.warning("skipped a line that is not a JSON-RPC message: %r", shown)
        return None

    async def _read_line(self) -> bytes:
        """The next line, however long (past the reader's limit it comes in
        parts); empty at the end of the input."""
        parts: list[bytes] = []
        while True:
            try:
                parts.append(await self._reader.readuntil(b"\n"))
            except asyncio.LimitOverrunError as error:
                parts.append(await self._reader.readexactly(error.consumed))
                continue
            except asyncio.IncompleteReadError as error:
                parts.append(error.partial)
            return b"".join(parts)

    def _dispatch(
        self,
        message: dict[str, Any],
        requests: Mapping[str, RequestHandler],
        notifications: Mapping[str, NotificationHandler],
    ) -> None:
        method = message.get("method")
        if method is None:
            if "id" in message and (future := self._answered(message)) is not None:
                self._resolve(future, message)
            return
        params = message.get("params")
        step: Awaitable[None]
        if "id" in message:
            handler = requests.get(method) if isinstance(method, str) else None
            step = self._answer(message["id"], method, handler, params)
        else:
            on_notice = notifications.get(method) if isinstance(method, str) else None
            if on_notice is None:
                # Extension notifications ("_...") are optional by definition.
                if not (isinstance(method, str) and method.startswith("_")):
                    log.warning("no handler for the notification %r; ignored", method)
                return
            step = self._notice(method, on_notice, params)
        task = asyncio.ensure_future(step)
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        count_in_flight(task)

    async def _answer(
        self, request_id: Any, method: Any, handler: RequestHandler | None, params: Any
    ) -> None:
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        try:
            if handler is None:
                raise RequestError.method_not_found(method)
            reply["result"] = await handler(params)
        except RequestError as error:
            reply["error"] = error.to_error_obj()
        except ValidationError as error:
            reply["error"] = RequestError.invalid_params({"errors": error.errors()}).to_error_obj()
        except Exception as error:
            log.exception("request %s failed", method)
            reply["error"] = RequestError.internal_error(_details(error)).to_error_obj()
        with contextlib.suppress(ConnectionError):  # the editor is gone: nobody to answer
            self._write_now(self._frame(reply))

    async def _notice(self, method: str, handler: NotificationHandler, params: Any) -> None:
        try:
            await handler(params)
        except Exception:
            log.exception("notification %s failed", method)

    async def _shut(self) -> None:
        """The end of the input: fail what awaits the editor, cancel what runs."""
        self.flush()
        self._closed = True
        self._fail_pending(ConnectionError("Connection closed"))
        running = list(self._running)
        for task in running:
            task.cancel()
        for task in running:
            with contextlib.suppress(asyncio.CancelledError):
                await task


def _details(error: Exception) -> dict[str, Any]:
    """An unexpected error's text as -32603 data, as the library gave it."""
    try:
        data = json.loads(str(error))
    except ValueError:
        return {"details": str(error)}
    return data if isinstance(data, dict) else {"details": str(error)}
