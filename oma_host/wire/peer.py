"""The JSON-RPC 2.0 peer that every connection of oma-host is built on.

:class:`JsonRpcPeer` owns what is the same whatever the framing and the
methods: request ids and their pending futures, reading an answer into a result
or an error (:func:`answer_failure`), failing what is pending when the other
side goes away, and batched writes that keep messages in the order they were
made. Each subclass keeps its framing and its method table. Dependency-free:
the JSON-RPC door imports it to answer ``initialize``.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Mapping
from typing import Any, ClassVar, TypeGuard

from oma_host.core.errors import ErrorCode

MsgId = int | str

# Gathered frames are written at once past this many bytes.
FLUSH_BYTES = 64 * 1024
# How much of a malformed error answer a message quotes.
SHOWN_ERROR = 200


def valid_id(value: Any) -> TypeGuard[MsgId]:
    """A JSON-RPC id oma-host accepts: a string or an integer (not a bool)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def answer_failure(
    message: Mapping[str, Any], peer: str, *, result_optional: bool = False
) -> tuple[int, str, Any] | None:
    """None when ``message``, an answer from ``peer`` ("the client"), holds a
    result; else the ``(code, message, data)`` of its error, a -32603 saying
    so when it is malformed."""
    if "error" in message:
        error = message["error"]
        code = error.get("code") if isinstance(error, dict) else None
        if isinstance(code, int) and not isinstance(code, bool):
            assert isinstance(error, dict)
            return code, str(error.get("message", "")), error.get("data")
        shown = repr(error)[:SHOWN_ERROR]
        return ErrorCode.INTERNAL_ERROR, f"{peer} sent a malformed error answer: {shown}", None
    if result_optional or "result" in message:
        return None
    return ErrorCode.INTERNAL_ERROR, f"{peer}'s answer has neither result nor error", None


class JsonRpcPeer:
    """One side of a JSON-RPC connection: its requests awaiting answers, and
    its frames waiting to be written. A subclass frames the messages, reads
    its input and routes what it reads; it implements :meth:`_send` and
    :meth:`_error`."""

    # Who the other side is, as messages about its answers name it.
    peer: ClassVar[str] = "the peer"
    # An answer may leave a null ``result`` out.
    result_optional: ClassVar[bool] = False

    def __init__(self, *, first_id: int = 0, id_prefix: str = "") -> None:
        self._ids = itertools.count(first_id)
        self._id_prefix = id_prefix
        # By id; None is the answer to a message whose id the other side
        # could not read (a line that is not JSON), which only a peer that
        # sends such lines on purpose (the CLI's console) awaits.
        self._pending: dict[MsgId | None, asyncio.Future[Any]] = {}
        self._gathered: list[bytes] = []  # frames not written yet, in order
        self._gathered_bytes = 0

    # -- what a subclass provides -------------------------------------------------

    def _send(self, data: bytes) -> None:
        """Write ``data`` (whole frames) to the other side."""
        raise NotImplementedError

    def _error(self, code: int, message: str, data: Any) -> Exception:
        """What an error answer to one of this peer's requests raises."""
        raise NotImplementedError

    # -- requests ---------------------------------------------------------------

    def next_id(self) -> MsgId:
        """The id of this peer's next request."""
        number = next(self._ids)
        return f"{self._id_prefix}{number}" if self._id_prefix else number

    def _expect(self, msg_id: MsgId) -> asyncio.Future[Any]:
        """A future for the answer to the request ``msg_id``, settled by
        :meth:`_resolve` or :meth:`_fail_pending`."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = future
        return future

    def _answered(self, message: Mapping[str, Any]) -> asyncio.Future[Any] | None:
        """The future awaiting ``message``, an answer, taken out of the
        pending requests; None when nothing awaits it (an id never sent, or a
        request whose waiter gave up)."""
        msg_id = message.get("id")
        if msg_id is not None and not valid_id(msg_id):  # unhashable, or a bool
            return None
        future = self._pending.pop(msg_id, None)
        if future is None or future.done():
            return None
        return future

    def _resolve(self, future: asyncio.Future[Any], message: Mapping[str, Any]) -> None:
        """Settle ``future`` with the answer ``message``: its result, or the
        peer's :meth:`_error` for its error."""
        failure = answer_failure(message, self.peer, result_optional=self.result_optional)
        if failure is None:
            future.set_result(message.get("result"))
        else:
            future.set_exception(self._error(*failure))

    def _forget(self, msg_id: MsgId) -> None:
        """Stop waiting for the answer to ``msg_id`` (one that comes is ignored)."""
        self._pending.pop(msg_id, None)

    def _fail_pending(self, error: BaseException) -> None:
        """The answers can no longer come: every request waiting fails with ``error``."""
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(error)

    # -- writing ----------------------------------------------------------------

    def _gather(self, frame: bytes) -> None:
        """Write ``frame`` with the next write: once the event loop has run
        what is ready, or now when the gathered frames pass FLUSH_BYTES."""
        gathered = self._gathered
        gathered.append(frame)
        self._gathered_bytes += len(frame)
        if self._gathered_bytes >= FLUSH_BYTES:
            self.flush()
        elif len(gathered) == 1:
            try:
                asyncio.get_running_loop().call_soon(self.flush)
            except RuntimeError:  # no event loop to come back to: write now
                self.flush()

    def _write_now(self, frame: bytes) -> None:
        """Write ``frame`` now, after the frames gathered before it."""
        if self._gathered:
            self._gathered.append(frame)
            self.flush()
        else:
            self._send(frame)

    def flush(self) -> None:
        """Write the gathered frames (nothing when none are gathered)."""
        gathered = self._gathered
        if not gathered:
            return
        data = gathered[0] if len(gathered) == 1 else b"".join(gathered)
        gathered.clear()
        self._gathered_bytes = 0
        self._send(data)
