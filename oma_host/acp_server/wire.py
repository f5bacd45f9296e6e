"""The ACP door's JSON-RPC peer: newline-delimited JSON on stdio, as ACP specifies.

The project's own rather than the ``agent-client-protocol`` library's
connection because a prompt turn is the hot path: messages are written in order
with no queue or sender task, so a turn's updates are on the wire before its
answer. It keeps the library's wire behaviour, with error messages saying what
was wrong, and adds the JSON-RPC door's guards (size limit, lone surrogates,
backpressure).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeGuard

from pydantic import ValidationError

from oma_host.core.errors import ErrorCode
from oma_host.process.collector import count_in_flight
from oma_host.wire.framing import (
    Frame,
    lone_surrogate_at,
    read_lines,
    surrogate_problem,
)
from oma_host.wire.limits import DEFAULT_MAX_MESSAGE_BYTES
from oma_host.wire.peer import JsonRpcPeer

if TYPE_CHECKING:
    from acp import RequestError

log = logging.getLogger(__name__)

# The stream reader's buffer: a line longer than this is read in parts.
READ_CHUNK = 1 << 20
# Unsent bytes above which the door stops reading until the editor catches up.
_UNSENT_BOUND = 1 << 20
# How many of a request's validation problems its error message names.
_PROBLEMS_SAID = 3
SHOWN_LINE = 200  # how much of a line that is not JSON-RPC the log quotes
# Built once: ``json.dumps`` with any option builds an encoder per call. The
# same bytes as the library's sender; ``default=str`` so an error's data that
# has no JSON form is sent as text rather than breaking the connection.
_ENCODER = json.JSONEncoder(separators=(",", ":"), default=str)

RequestHandler = Callable[[Any], Awaitable[Any]]
"""Takes a request's raw params, returns its result in JSON form (None is ``null``)."""
NotificationHandler = Callable[[Any], Awaitable[None]]
Canceller = Callable[[Any], Awaitable[None]]
"""Ends a running request of one method gracefully, given its params (a
``session/prompt`` ends with ``stopReason: "cancelled"``, as
``session/cancel`` ends it), where ``$/cancel_request`` would otherwise
cancel its task."""

# ACP's protocol-level cancellation of any request (the JSON-RPC door's is
# ``$/cancelRequest``), and what a request cancelled so is answered with.
CANCEL_REQUEST = "$/cancel_request"


class AcpWire(JsonRpcPeer):
    """One ACP connection on a stream pair; :meth:`serve` runs it to the end
    of the input. The ids, futures, answer parsing and batched writes are
    :class:`~oma_host.wire.peer.JsonRpcPeer`'s."""

    peer = "the editor"
    # The TypeScript SDK leaves a void handler's null result out of its answer.
    result_optional = True

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        super().__init__()  # the door's requests, numbered from 0 as the library did
        self._reader = reader
        self._writer = writer
        self._max_message_bytes = max_message_bytes
        self._running: set[asyncio.Task[None]] = set()
        # The editor's requests still being served, by id: their method,
        # params and task, for $/cancel_request.
        self._serving: dict[int | str, tuple[str, Any, asyncio.Task[None]]] = {}
        self._cancelled: set[int | str] = set()
        self._cancellers: Mapping[str, Canceller] = {}
        self._closed = False

    def _error(self, code: int, message: str, data: Any) -> Exception:
        # The library's type, which the door's code catches; imported here
        # (an editor's error answer, or a refused one) and not at start-up.
        from oma_host.wire.acp_library import acp

        return acp.RequestError(code, message, data)

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
        cancellers: Mapping[str, Canceller] | None = None,
    ) -> None:
        """Dispatch what the editor sends until the end of the input;
        ``cancellers``: how ``$/cancel_request`` ends a request of each method
        gracefully (any other is cancelled and answered -32800)."""
        self._cancellers = cancellers or {}
        try:
            async for frame in read_lines(self._reader, self._max_message_bytes):
                message = self._message(frame)
                if message is not None:
                    self._dispatch(message, requests, notifications)
                await self._caught_up()
        finally:
            await self._shut()

    def _message(self, frame: Frame) -> dict[str, Any] | None:
        """The message a line holds, or None when it holds none to dispatch
        (answered here, or logged and skipped)."""
        if frame.error is not None:
            oversized = frame.error_code == ErrorCode.INVALID_REQUEST
            if oversized and frame.recovered_id is not None and not frame.is_response:
                error = _error_object(ErrorCode.INVALID_REQUEST, {"reason": frame.error})
                self._reply_error(frame.recovered_id, error, None)  # a request: say why
            else:
                log.warning("skipped a line: %s", frame.error)
            return None
        message = frame.message
        if not isinstance(message, dict):
            kind = type(message).__name__
            log.warning("skipped a line that is not a JSON-RPC message (a JSON %s)", kind)
            return None
        if frame.maybe_surrogates and self._surrogate(message):
            return None
        return message

    def _surrogate(self, message: dict[str, Any]) -> bool:
        """Refuse ``message`` if what it carries holds a lone surrogate: True
        when it was (answered, dropped, or failing the request it answers)."""
        method = message.get("method")
        carried = message.get("params") if method is not None else message.get("result")
        where = lone_surrogate_at(carried)
        if where is None:
            return False
        if method is None:  # an answer to one of the door's requests
            problem, path = surrogate_problem("the editor's result", where)
            future = self._answered(message)
            if future is not None:
                refused = {"path": path, "reason": problem}
                future.set_exception(
                    self._error(ErrorCode.INVALID_PARAMS, "Invalid params", refused)
                )
        elif "id" in message:
            problem, path = surrogate_problem(f"{method}: params", where)
            refusal = {"path": path, "reason": problem}
            self._reply_error(
                message["id"], _error_object(ErrorCode.INVALID_PARAMS, refusal), method
            )
        else:
            log.warning("dropped the notification %r: its params hold a lone surrogate", method)
        return True

    def _reply_error(self, request_id: Any, error: dict[str, Any], method: Any) -> None:
        reply = {"jsonrpc": "2.0", "id": request_id, "error": _explained(error, method)}
        with contextlib.suppress(ConnectionError):  # the editor is gone: nobody to answer
            self._write_now(self._frame(reply))

    async def _caught_up(self) -> None:
        """Wait, before reading on, while too much of what was written is unsent."""
        transport = self._writer.transport
        if not self._closed and transport.get_write_buffer_size() > _UNSENT_BOUND:
            with contextlib.suppress(ConnectionError):
                await self._writer.drain()

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
        request_id = message.get("id")
        if "id" in message:
            handler = requests.get(method) if isinstance(method, str) else None
            step = self._answer(request_id, method, handler, params)
        elif method == CANCEL_REQUEST:
            step = self._cancel_request(params)
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
        if isinstance(request_id, int | str) and isinstance(method, str):
            self._serving[request_id] = (method, params, task)
            task.add_done_callback(lambda _: self._served(request_id, task))

    def _served(self, request_id: int | str, task: asyncio.Task[None]) -> None:
        if self._serving.get(request_id, (None, None, None))[2] is task:
            del self._serving[request_id]
        self._cancelled.discard(request_id)

    async def _cancel_request(self, params: Any) -> None:
        """``$/cancel_request {requestId}``: the request ends as its method's
        canceller ends it, else its task is cancelled and it is answered
        -32800. An id not being served (answered already) is nothing to do."""
        request_id = params.get("requestId") if isinstance(params, dict) else None
        if not isinstance(request_id, int | str) or isinstance(request_id, bool):
            log.warning("ignored: %s: requestId must be a string or an integer", CANCEL_REQUEST)
            return
        serving = self._serving.get(request_id)
        if serving is None:
            return
        method, request_params, task = serving
        canceller = self._cancellers.get(method)
        if canceller is not None:
            await self._notice(CANCEL_REQUEST, canceller, request_params)
        else:
            self._cancelled.add(request_id)
            task.cancel()

    async def _answer(
        self, request_id: Any, method: Any, handler: RequestHandler | None, params: Any
    ) -> None:
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        try:
            if handler is None:
                error = _error_object(ErrorCode.METHOD_NOT_FOUND, {"method": method})
                reply["error"] = _explained(error, method)
            else:
                reply["result"] = await handler(params)
        except asyncio.CancelledError:
            if request_id not in self._cancelled:
                raise  # the end of the input, or the door closing
            cancelled = _error_object(ErrorCode.REQUEST_CANCELLED, {"requestId": request_id})
            cancelled["message"] = f"{method}: cancelled by {CANCEL_REQUEST}"
            reply["error"] = cancelled
        except ValidationError as error:
            reply["error"] = _invalid(error, method)
        except Exception as error:
            if _is_request_error(error):  # a handler's refusal, as the library raises it
                reply["error"] = _explained(error.to_error_obj(), method)
            else:
                log.exception("request %s failed", method)
                internal = _error_object(ErrorCode.INTERNAL_ERROR, _details(error))
                reply["error"] = _explained(internal, method)
        with contextlib.suppress(ConnectionError):  # the editor is gone: nobody to answer
            self._write_now(self._frame(reply))

    async def _notice(self, method: str, handler: NotificationHandler, params: Any) -> None:
        try:
            await handler(params)
        except ValidationError as error:  # malformed: nobody to answer, one line to say so
            log.warning("ignored: %s", _invalid(error, method)["message"])
        except Exception as error:
            if _is_request_error(error):  # refused (an unknown session, say)
                said = _explained(error.to_error_obj(), method)["message"]
                log.warning("ignored: %s", said)
            else:
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


# The library's messages for the codes the wire answers with itself.
_MESSAGES = {
    ErrorCode.INVALID_REQUEST: "Invalid request",
    ErrorCode.METHOD_NOT_FOUND: "Method not found",
    ErrorCode.INVALID_PARAMS: "Invalid params",
    ErrorCode.INTERNAL_ERROR: "Internal error",
    ErrorCode.REQUEST_CANCELLED: "Request cancelled",
}


def _error_object(code: ErrorCode, data: Any) -> dict[str, Any]:
    """An error object as the library's ``RequestError`` would give it."""
    return {"code": int(code), "message": _MESSAGES[code], "data": data}


def _is_request_error(error: Exception) -> TypeGuard[RequestError]:
    """Whether ``error`` is the library's ``RequestError`` (which only code
    that imported the library can raise)."""
    library = sys.modules.get("acp")
    return library is not None and isinstance(error, library.RequestError)


def _invalid(error: ValidationError, method: Any) -> dict[str, Any]:
    """A request's failed validation: -32602 with the model's ``errors`` as
    ``data``, and a message saying where each was and what was wrong."""
    problems = error.errors(include_url=False)
    said = [
        f"{'.'.join(str(part) for part in problem['loc']) or 'params'}: {problem['msg']}"
        for problem in problems[:_PROBLEMS_SAID]
    ]
    if len(problems) > _PROBLEMS_SAID:
        said.append(f"and {len(problems) - _PROBLEMS_SAID} more")
    answer = _error_object(ErrorCode.INVALID_PARAMS, {"errors": error.errors()})
    answer["message"] = f"{method}: invalid params: {'; '.join(said)}"
    return answer


def _explained(answer: dict[str, Any], method: Any) -> dict[str, Any]:
    """The error object ``answer`` with its ``message`` the explanation:
    clients such as acpx show only the message, and the library's are bare
    names ("Invalid params"). The explanation is the error's own
    ``data.message`` or ``data.reason``, prefixed with the method; ``data``
    stays as it was."""
    data = answer.get("data")
    said = None
    if isinstance(data, dict):
        said = next(
            (data[key] for key in ("message", "reason") if isinstance(data.get(key), str)), None
        )
    if said is not None:
        prefix = f"{method}: " if isinstance(method, str) and not said.startswith(method) else ""
        answer["message"] = f"{prefix}{said}"
    elif answer.get("code") == ErrorCode.METHOD_NOT_FOUND and isinstance(method, str):
        answer["message"] = f"oma-host acp does not serve {method!r}"
    return answer


def _details(error: Exception) -> dict[str, Any]:
    """An unexpected error's text as -32603 data, as the library gave it."""
    try:
        data = json.loads(str(error))
    except ValueError:
        return {"details": str(error)}
    return data if isinstance(data, dict) else {"details": str(error)}
