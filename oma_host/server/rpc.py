"""JSON-RPC 2.0 over one byte stream: the only module that knows the wire's message shapes.

It checks each message and answers a bad one itself, and sends answers,
notifications and the host's requests to the client over
:class:`oma_host.wire.peer.JsonRpcPeer`. Not pygls, which drops an unparseable
frame unanswered and lacks a size limit, ndjson, the gate before ``initialize``
and cancellation answered with a partial result, and importing it costs more
than the rest of the host's start.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from oma_host.core.errors import ErrorCode
from oma_host.core.redact import remember_secrets, scrub_credentials
from oma_host.wire.framing import (
    Framing,
    Location,
    frame_encoder,
    lone_surrogate_at,
    surrogate_problem,
)
from oma_host.wire.limits import DEFAULT_MAX_MESSAGE_BYTES
from oma_host.wire.peer import JsonRpcPeer, MsgId, valid_id

if TYPE_CHECKING:
    from oma_host.server.frame_trace import FrameTracer

log = logging.getLogger("oma_host.server")

# Built once: ``json.dumps`` with any option builds an encoder per call.
_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
# A str as _COMPACT writes it (the C function when there is one).
_encode_string: Callable[[str], str] = json.encoder.encode_basestring
_COMPACT_ASCII = json.JSONEncoder(separators=(",", ":"))


def _one_encoder() -> Callable[[Any], str]:
    """``_COMPACT.encode`` for a message, without building an encoder per call
    (C's, when there is one: setting one up is a large share of a small answer's cost). It
    keeps no list of the containers it is in, so a cycle is a RecursionError
    rather than a ValueError: both say the data is not JSON."""
    make: Any = getattr(json.encoder, "c_make_encoder", None)  # not in typeshed
    if make is None:
        return _COMPACT.encode
    encode = make(
        None,  # no cycle check
        _COMPACT.default,
        json.encoder.encode_basestring,  # ensure_ascii=False
        None,  # no indent
        ":",
        ",",
        False,  # sort_keys
        False,  # skipkeys
        True,  # allow_nan, as JSONEncoder's default
    )

    def encode_message(message: Any) -> str:
        return "".join(encode(message, 0))  # as JSONEncoder.encode joins its chunks

    return encode_message


_encode_message = _one_encoder()

_GONE = "the client is gone"

# A place in JSON data: object keys and array indexes from the top.


class RpcError(Exception):
    """A JSON-RPC error answer; ``data.type`` names the kind (docs/protocol.md,
    "Errors"): the code's own name unless ``type_name`` says otherwise."""

    def __init__(
        self, code: ErrorCode, message: str, type_name: str | None = None, **data: Any
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data: dict[str, Any] = {"type": type_name or code.type_name, **data}

    def to_json(self) -> dict[str, Any]:
        return {"code": int(self.code), "message": self.message, "data": self.data}


class ClientError(Exception):
    """The client answered one of the host's requests with an error, or with
    something that is not a JSON-RPC answer."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{message} (code {code})")
        self.code = code
        self.data = data


@dataclass(frozen=True)
class Call:
    """A request (``id`` set) or a notification (``id`` None) that passed the checks."""

    method: str
    params: Any
    id: MsgId | None
    # Where the params hold a lone surrogate, if they do.
    surrogate_at: Location | None = None


class Connection(JsonRpcPeer):
    """One client: what goes out to it, and the host's requests awaiting its
    answers (the ids, futures and answer parsing of
    :class:`~oma_host.wire.peer.JsonRpcPeer`).

    No frame above ``max_message_bytes`` is ever built for the client: an
    answer that would be is replaced by a -32603 ``ResponseTooLarge`` error, a
    request to the client fails at once, and a notification is left out (and
    logged). ``write`` raising OSError means the client reads no more:
    ``on_lost`` is called once and nothing more is written.

    Requests to the client, and the first answer in a pass of the event
    loop, are written at once. Notifications, and the answers after that
    first one, are gathered and written together once the event loop has run
    what is ready (the peer's batched writes): a stream relaying many deltas
    from one network read then costs one write, and wakes the client once,
    instead of once per delta, and so does a burst of runs that end
    together (a write is a system call and a wake-up of the client: per
    answer, it was the largest cost of a short run). Anything written at
    once first writes what is gathered, so the client reads every message in
    the order it was sent. The session flushes before it ends."""

    peer = "the client"

    def __init__(
        self,
        write: Callable[[bytes], None],
        tracer: FrameTracer | None = None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        on_lost: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(first_id=1, id_prefix="oma-")
        self._write = write
        self._tracer = tracer
        self._limit = max_message_bytes
        self._on_lost = on_lost
        self.lost = False
        self._frame: Callable[[bytes], bytes] = frame_encoder("lsp")
        # An answer was written at once in this pass of the event loop (see _answer).
        self._answered_this_pass = False

    def use_framing(self, framing: Framing) -> None:
        self._frame = frame_encoder(framing)

    def _error(self, code: int, message: str, data: Any) -> Exception:
        return ClientError(code, message, data)

    # -- out ----------------------------------------------------------------

    @staticmethod
    def _encode(message: dict[str, Any]) -> bytes:
        text = _encode_message(message)
        try:
            return text.encode()
        except UnicodeEncodeError:
            # A lone surrogate ("\ud800" in a client's JSON) has no UTF-8 form:
            # send the message with \u escapes, which every JSON parser reads.
            return _COMPACT_ASCII.encode(message).encode()

    def _too_large(self, body: bytes) -> str | None:
        """Why ``body`` may not be sent, if it may not."""
        if len(body) <= self._limit:
            return None
        return f"{len(body)} bytes, over the limit of {self._limit} (--max-message-bytes)"

    def _emit(self, body: bytes, *, queue: bool = False) -> None:
        """Send ``body``: at once, or (``queue``) with the next write."""
        if self.lost:
            return
        if self._tracer is not None:
            self._tracer.record_body("out", body)
        if log.isEnabledFor(logging.DEBUG):  # --log-level DEBUG shows the traffic
            log.debug("sent %s", body.decode(errors="replace"))
        if queue:
            self._gather(self._frame(body))
        else:
            self._write_now(self._frame(body))

    def _send(self, data: bytes) -> None:
        if self.lost:
            return
        try:
            self._write(data)
        except OSError as error:
            self.lost = True
            log.warning("the client reads no more (%s); nothing more is sent to it", error)
            if self._on_lost is not None:
                self._on_lost()

    def notify(self, method: str, params: Any) -> None:
        if self.lost:
            return
        body = self._encode({"jsonrpc": "2.0", "method": method, "params": params})
        problem = self._too_large(body)
        if problem is not None:
            log.warning("a %s notification was not sent: it is %s", method, problem)
            return
        self._emit(body, queue=True)

    def notifier(self, method: str, token: MsgId) -> Callable[[Any], None]:
        """``notify(method, {"token": token, "value": value})`` for each
        ``value`` it is called with (a stream's ``$/progress``), the same bytes
        on the wire. The message's constant part is encoded once, and a value
        of two strings ``{"type", "data"}`` (a text delta) without
        ``json.JSONEncoder``, whose set-up per call costs more than the work."""
        head = (
            '{"jsonrpc":"2.0","method":'
            + _COMPACT.encode(method)
            + ',"params":{"token":'
            + _COMPACT.encode(token)
            + ',"value":'
        )
        string = _encode_string

        def send(value: Any) -> None:
            if self.lost:
                return
            if (
                type(value) is dict
                and len(value) == 2
                and type(kind := value.get("type")) is str
                and type(data := value.get("data")) is str
                and next(iter(value)) == "type"  # the keys in this order, as encoded
            ):
                text = head + '{"type":' + string(kind) + ',"data":' + string(data) + "}}}"
            else:
                text = head + _COMPACT.encode(value) + "}}"
            try:
                body = text.encode()
            except UnicodeEncodeError:  # a lone surrogate: as notify sends it
                body = self._encode(
                    {"jsonrpc": "2.0", "method": method, "params": {"token": token, "value": value}}
                )
            if len(body) > self._limit:
                log.warning(
                    "a %s notification was not sent: it is %s", method, self._too_large(body)
                )
                return
            self._emit(body, queue=True)

        return send

    def respond(self, msg_id: MsgId, result: Any) -> None:
        try:
            body = self._encode({"jsonrpc": "2.0", "id": msg_id, "result": result})
        except (TypeError, ValueError, RecursionError) as error:  # not JSON: a bug, said so
            log.exception("the result of request %r is not JSON", msg_id)
            self.respond_error(
                msg_id, RpcError(ErrorCode.INTERNAL_ERROR, f"the result is not JSON: {error}")
            )
            return
        self._answer(msg_id, body)

    def respond_error(self, msg_id: MsgId | None, error: RpcError) -> None:
        body = self._encode({"jsonrpc": "2.0", "id": msg_id, "error": error.to_json()})
        self._answer(msg_id, body)

    def _answer(self, msg_id: MsgId | None, body: bytes) -> None:
        """Send an answer, or the small error that says it was too large."""
        if self.lost:
            return
        problem = self._too_large(body)
        if problem is not None:
            log.warning("the answer to request %r was not sent: it is %s", msg_id, problem)
            error = RpcError(
                ErrorCode.INTERNAL_ERROR,
                f"the answer is {problem}; it was not sent",
                "ResponseTooLarge",
                size=len(body),
                limit=self._limit,
            )
            body = self._encode({"jsonrpc": "2.0", "id": msg_id, "error": error.to_json()})
        if self._answered_this_pass:
            self._emit(body, queue=True)  # a burst: joins the next write
            return
        # The first answer of this pass of the event loop goes out at once (a
        # lone request waits for nothing); those after it in the same pass are
        # queued, so a burst of answers costs two writes a pass, not one each.
        self._emit(body)
        self._answered_this_pass = True
        try:
            asyncio.get_running_loop().call_soon(self._end_pass)
        except RuntimeError:  # no event loop: every answer is written at once
            self._answered_this_pass = False

    def _end_pass(self) -> None:
        self._answered_this_pass = False

    async def request(self, method: str, params: Any) -> Any:
        """Ask the client; its result, or ClientError for an error answer (or a
        request too large to send). A request whose awaiting is cancelled (a
        hook timeout) stops waiting."""
        msg_id = self.next_id()
        body = self._encode({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        problem = self._too_large(body)
        if problem is not None:
            raise ClientError(
                ErrorCode.INTERNAL_ERROR, f"the {method} request was not sent: it is {problem}"
            )
        if self.lost:
            raise ClientError(ErrorCode.INTERNAL_ERROR, _GONE)
        future = self._expect(msg_id)
        try:
            self._emit(body)
            return await future
        finally:
            self._forget(msg_id)

    def abandon(self) -> None:
        """No more answers can arrive: what is gathered is written (a client
        that closed its end may still read), and every request waiting for an
        answer fails."""
        self.flush()
        self._fail_pending(ClientError(ErrorCode.INTERNAL_ERROR, _GONE))

    # -- in -----------------------------------------------------------------

    def receive(self, message: Any, maybe_surrogates: bool = False) -> Call | None:
        """Check one parsed message: an answer to one of our requests is
        delivered, a malformed message answered, and a request or notification
        returned for the session to handle. ``maybe_surrogates``: the frame
        may hold a lone surrogate (see :func:`lone_surrogate_at`). Never raises."""
        if log.isEnabledFor(logging.DEBUG):
            # Logged before any config in it is parsed: its credential fields
            # are taken out here, and their values from every later line.
            clean, found = scrub_credentials(message)
            remember_secrets(found)
            log.debug("received %s", json.dumps(clean, ensure_ascii=False))
        if not isinstance(message, dict):
            kind = "a batch (array)" if isinstance(message, list) else type(message).__name__
            self._refuse(None, f"a JSON-RPC message must be an object, got {kind}")
            return None
        msg_id = message.get("id")
        has_id = "id" in message
        if message.get("jsonrpc") != "2.0":
            self._refuse(
                msg_id if valid_id(msg_id) else None, 'the message must have "jsonrpc": "2.0"'
            )
            return None
        if has_id and not valid_id(msg_id):
            self._refuse(None, "the message id must be a string or an integer")
            return None
        method = message.get("method")
        if method is None and has_id:
            self._deliver(message, maybe_surrogates)
            return None
        if not isinstance(method, str):
            self._refuse(msg_id, "the message has no string method")
            return None
        params = message.get("params")
        if params is not None and not isinstance(params, dict | list):
            if has_id:
                self._refuse(msg_id, f"{method}: params must be an object or an array")
            return None
        surrogate_at = lone_surrogate_at(params) if maybe_surrogates else None
        return Call(method, params, msg_id if has_id else None, surrogate_at)

    def _refuse(self, msg_id: MsgId | None, message: str) -> None:
        self.respond_error(msg_id, RpcError(ErrorCode.INVALID_REQUEST, message))

    def _deliver(self, message: dict[str, Any], maybe_surrogates: bool) -> None:
        """A client's answer to one of our requests. One of the wrong shape, or
        holding a lone surrogate, is an error answer: the waiting run fails at
        once instead of waiting."""
        future = self._answered(message)
        if future is None:  # unknown, or answered after its timeout
            log.info("ignoring an answer to %r: no request is waiting for it", message["id"])
            return
        if maybe_surrogates and "error" not in message:
            where = lone_surrogate_at(message.get("result"))
            if where is not None:
                problem, _ = surrogate_problem("the client's result", where)
                future.set_exception(ClientError(ErrorCode.INVALID_PARAMS, problem))
                return
        self._resolve(future, message)
