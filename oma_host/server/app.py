"""The host session: one client connection served over pygls.

pygls provides the JSON-RPC machinery (handler execution, the futures behind
server-to-client requests, notifications). This module adds what PROTOCOL.md
asks for and pygls does not do on its own: answering unparseable and
oversized frames, refusing requests before ``initialize``, the shutdown/exit
lifecycle, and ``$/cancelRequest`` that returns the run's partial result.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO

from lsprotocol.types import ResponseError
from pygls.exceptions import JsonRpcException
from pygls.protocol import JsonRPCProtocol, default_converter
from pygls.protocol.json_rpc import JsonRPCNotification, JsonRPCRequestMessage
from pygls.server import JsonRPCServer

from oma_host.core.abort import AbortSignal
from oma_host.server.framing import (
    DEFAULT_MAX_MESSAGE_BYTES,
    Frame,
    FramingChoice,
    detect_framing,
    frame_encoder,
    frame_reader,
)

if TYPE_CHECKING:
    from oma_host.core.agent import Agent
    from oma_host.server.trace import FrameTracer

log = logging.getLogger("oma_host.server")

SERVER_NOT_INITIALIZED = -32002
_SHUTDOWN_WAIT_S = 5.0  # how long shutdown waits for aborted runs to clean up


def rpc_error(code: int, message: str, type_name: str, **data: Any) -> JsonRpcException:
    return JsonRpcException(code=code, message=message, data={"type": type_name, **data})


class HostProtocol(JsonRPCProtocol):
    """pygls's JSON-RPC protocol with our framing, gatekeeping and cancellation."""

    session: HostSession

    def _send_data(self, data: Any) -> None:
        if not data or self.writer is None:
            return
        text = json.dumps(
            data, default=self._serialize_message, separators=(",", ":"), ensure_ascii=False
        )
        try:
            body = text.encode()
        except UnicodeEncodeError:
            # A lone surrogate ("\ud800" in a client's JSON) has no UTF-8 form:
            # send the message with \u escapes, which every JSON parser reads.
            body = json.dumps(
                data, default=self._serialize_message, separators=(",", ":"), ensure_ascii=True
            ).encode()
        if self.session.tracer is not None:
            self.session.tracer.record_body("out", body)
        self.session.write(self.session.frame_encoder(body))

    def send_raw(self, message: dict[str, Any]) -> None:
        """Send an already-built JSON-RPC object (pygls omits ``id: null``)."""
        self._send_data(message)

    def notify(self, method: str, params: Any | None = None) -> None:
        # Streaming sends one notification per delta: build the plain object
        # rather than an attrs message that cattrs must take apart again.
        self._send_data({"jsonrpc": "2.0", "method": method, "params": params})

    def error_response(self, msg_id: Any, code: int, message: str, type_name: str) -> None:
        self.send_raw(
            {
                "jsonrpc": "2.0",
                "id": msg_id,
                "error": {"code": code, "message": message, "data": {"type": type_name}},
            }
        )

    def dispatch(self, message: Any) -> None:
        """Check one parsed frame and route it; never raises."""
        if not isinstance(message, dict):
            kind = "a batch (array)" if isinstance(message, list) else type(message).__name__
            self.error_response(
                None, -32600, f"a JSON-RPC message must be an object, got {kind}", "InvalidRequest"
            )
            return
        msg_id = message.get("id")
        has_id = "id" in message
        if message.get("jsonrpc") != "2.0":
            self.error_response(
                msg_id if _valid_id(msg_id) else None,
                -32600,
                'the message must have "jsonrpc": "2.0"',
                "InvalidRequest",
            )
            return
        if has_id and not _valid_id(msg_id):
            self.error_response(
                None, -32600, "the message id must be a string or an integer", "InvalidRequest"
            )
            return
        method = message.get("method")
        if method is None and has_id:
            self._route_response(message)
            return
        if not isinstance(method, str):
            self.error_response(
                msg_id, -32600, "the message has no string method", "InvalidRequest"
            )
            return
        params = message.get("params")
        if params is not None and not isinstance(params, dict | list):
            if has_id:
                self.error_response(
                    msg_id,
                    -32600,
                    f"{method}: params must be an object or an array",
                    "InvalidRequest",
                )
            return
        if has_id:
            assert msg_id is not None  # checked by _valid_id above
            self._route_request(msg_id, method, params)
        else:
            self._route_notification(method, params)

    def _route_response(self, message: dict[str, Any]) -> None:
        """A client's answer to one of our requests (a hook, a permission, a
        score). One of the wrong shape is an error answer: the waiting run
        fails with errorInfo.kind "callback" at once, instead of waiting."""
        msg_id = message["id"]
        future = self._request_futures.get(msg_id)
        if future is None or future.done():  # unknown, or answered after its timeout
            self._request_futures.pop(msg_id, None)
            log.info("ignoring an answer to %r: no request is waiting for it", msg_id)
            return
        error = message.get("error")
        if "error" in message:
            code = error.get("code") if isinstance(error, dict) else None
            if isinstance(error, dict) and isinstance(code, int) and not isinstance(code, bool):
                response_error = ResponseError(
                    code=code, message=str(error.get("message", "")), data=error.get("data")
                )
            else:
                response_error = ResponseError(
                    code=-32603, message=f"the client sent a malformed error answer: {error!r}"
                )
            self._handle_response(msg_id, None, response_error)
        elif "result" in message:
            self._handle_response(msg_id, message["result"])
        else:
            missing = ResponseError(
                code=-32603, message="the client's answer has neither result nor error"
            )
            self._handle_response(msg_id, None, missing)

    def _route_request(self, msg_id: int | str, method: str, params: Any) -> None:
        session = self.session
        if session.exited:
            return
        if not session.initialized and method != "initialize":
            self.error_response(
                msg_id,
                SERVER_NOT_INITIALIZED,
                f"{method}: the server is not initialized; send initialize first",
                "ServerNotInitialized",
            )
            return
        if session.shutdown_requested:
            self.error_response(
                msg_id, -32600, f"{method}: the server is shutting down", "InvalidRequest"
            )
            return
        session.open_request(msg_id)
        self.handle_message(
            JsonRPCRequestMessage(id=msg_id, method=method, jsonrpc="2.0", params=params)
        )

    def _route_notification(self, method: str, params: Any) -> None:
        session = self.session
        if method == "exit":
            session.request_exit()
        elif method == "$/cancelRequest":
            if isinstance(params, dict) and _valid_id(params.get("id")):
                session.cancel_request(params["id"])
        elif not session.initialized:
            log.debug("dropping notification %s before initialize", method)
        elif method in self.fm.features:
            self.handle_message(JsonRPCNotification(method=method, jsonrpc="2.0", params=params))
        else:
            log.debug("ignoring unknown notification %s", method)

    def _send_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        self.session.close_request(msg_id)
        if error is not None and getattr(error, "code", None) == -32601:
            # pygls reports an unknown method without error.data; add the type.
            error = ResponseError(
                code=error.code, message=error.message, data={"type": "MethodNotFound"}
            )
        super()._send_response(msg_id, result, error)


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


class _Server(JsonRPCServer):
    def report_server_error(self, error: Exception, source: Any) -> None:
        # Handler errors are already answered on the wire; keep stderr quiet.
        log.debug("request failed: %s", error)


Handler = Callable[["HostSession", Any], Awaitable[Any]]


@dataclass(frozen=True)
class SessionOptions:
    """How a session is served: the command line's choices."""

    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    framing: FramingChoice = "lsp"
    state_dir: str | None = None  # --state-dir
    tracer: FrameTracer | None = None  # --trace


class HostSession:
    """State of one connection: lifecycle flags, agents, and in-flight runs."""

    def __init__(
        self,
        write: Callable[[bytes], None],
        methods: dict[str, Handler],
        options: SessionOptions | None = None,
    ) -> None:
        options = options or SessionOptions()
        framing = options.framing
        self.write = write
        self.tracer = options.tracer
        self.max_message_bytes = options.max_message_bytes
        # "auto" is settled by the first bytes the client sends (see _read_loop).
        self.framing = framing
        self.frame_encoder: Callable[[bytes], bytes] = frame_encoder(
            "ndjson" if framing == "ndjson" else "lsp"
        )
        self.server = _Server(HostProtocol, default_converter)
        self.protocol: HostProtocol = self.server.protocol  # type: ignore[assignment]
        self.protocol.session = self
        self.protocol.set_writer(_NullWriter())
        self.initialized = False
        self.shutdown_requested = False
        self.exited = False
        self.exit_code = 0
        self.agents: dict[str, Agent] = {}
        self.abort_signals: dict[int | str, AbortSignal] = {}
        self.extras: dict[str, Any] = {}
        if options.state_dir is not None:  # initializationOptions.stateDir overrides it
            self.extras["state_dir"] = options.state_dir
        # Services register their shutdown here (settle evaluation, close the store).
        self.closers: list[Callable[[], Awaitable[None]]] = []
        # Fire-and-forget work (run traces) kept alive until it finishes.
        self.background: set[asyncio.Future[None]] = set()
        self._exit_event = asyncio.Event()
        self._agent_counter = 0
        for name, handler in methods.items():
            self.protocol.fm.features[name] = _bind(self, name, handler)

    # -- requests and cancellation --------------------------------------

    def open_request(self, msg_id: int | str) -> None:
        self.abort_signals[msg_id] = AbortSignal()

    def close_request(self, msg_id: int | str) -> None:
        self.abort_signals.pop(msg_id, None)

    def abort_signal(self) -> AbortSignal | None:
        """The abort signal of the request whose handler is running now."""
        msg_id = self.protocol.msg_id
        return None if msg_id is None else self.abort_signals.get(msg_id)

    def cancel_request(self, msg_id: int | str) -> None:
        signal = self.abort_signals.get(msg_id)
        if signal is not None:
            signal.abort()

    def new_agent_id(self) -> str:
        self._agent_counter += 1
        return f"agent-{self._agent_counter}"

    # -- lifecycle ----------------------------------------------------------

    async def shutdown(self) -> None:
        """Cancel in-flight runs and dispose every agent (idempotent)."""
        self.shutdown_requested = True
        for signal in list(self.abort_signals.values()):
            signal.abort()
        # Aborted runs clean up (one-off agents close, process groups are
        # killed) before their handlers return; wait for that, within bounds.
        current = asyncio.current_task()
        # pygls keeps each request's task there (typed as a concurrent Future).
        futures: list[object] = list(self.protocol._request_futures.values())
        running = [
            task
            for task in futures
            if isinstance(task, asyncio.Task) and task is not current and not task.done()
        ]
        if running:
            await asyncio.wait(running, timeout=_SHUTDOWN_WAIT_S)
        agents, self.agents = list(self.agents.values()), {}
        results = await asyncio.gather(*(agent.close() for agent in agents), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                log.warning("an agent failed to close: %s", result)
        if self.background:
            await asyncio.wait(self.background, timeout=5)
        closers, self.closers = self.closers, []
        for closer in closers:
            try:
                await closer()
            except Exception as error:
                log.warning("a service failed to close: %s", error)

    def request_exit(self) -> None:
        self.exit_code = 0 if self.shutdown_requested else 1
        self.exited = True
        self._exit_event.set()

    async def serve(self, reader: asyncio.StreamReader) -> int:
        """Read frames until ``exit`` or end of input; returns the exit code."""
        frames = asyncio.ensure_future(self._read_loop(reader))
        exit_wait = asyncio.ensure_future(self._exit_event.wait())
        await asyncio.wait({frames, exit_wait}, return_when=asyncio.FIRST_COMPLETED)
        exit_wait.cancel()
        if not frames.done():
            frames.cancel()
            with suppress(asyncio.CancelledError):
                await frames
        if not self.exited:  # end of input: shutdown + exit
            self.exit_code = 0
        await self.shutdown()
        return self.exit_code

    async def _read_loop(self, reader: asyncio.StreamReader) -> None:
        prefix = b""
        if self.framing == "auto":
            framing, prefix = await detect_framing(reader)
            log.info("framing: %s", framing)
        else:
            framing = self.framing
        self.framing = framing
        self.frame_encoder = frame_encoder(framing)
        async for frame in frame_reader(framing, reader, self.max_message_bytes, prefix):
            self._handle_frame(frame)
            await asyncio.sleep(0)  # let handlers start in arrival order

    def _handle_frame(self, frame: Frame) -> None:
        if self.tracer is not None:
            self.tracer.record("in", frame.message, frame.error)
        if frame.error is not None and frame.is_response:
            log.warning("dropped an oversized response from the client: %s", frame.error)
            return
        if frame.error is not None:
            log.warning("bad frame: %s", frame.error)
            type_name = "ParseError" if frame.error_code == -32700 else "InvalidRequest"
            self.protocol.error_response(
                frame.recovered_id, frame.error_code, frame.error, type_name
            )
            return
        try:
            self.protocol.dispatch(frame.message)
        except Exception:  # the loop must survive anything a frame can do
            log.exception("failed to dispatch a message")


def _bind(session: HostSession, name: str, handler: Handler) -> Callable[[Any], Awaitable[Any]]:
    """The handler as pygls calls it: our errors become their JSON-RPC errors,
    and anything unexpected a -32603 that says where, with the traceback on
    stderr rather than on the wire."""

    async def run(params: Any) -> Any:
        from oma_host.core.errors import OmaError

        try:
            return await handler(session, params)
        except OmaError as error:
            raise JsonRpcException(
                code=error.code, message=str(error), data=error.error_data()
            ) from None
        except JsonRpcException:
            raise
        except Exception as error:
            log.exception("%s failed", name)
            from oma_host.core.redact import Redactor

            message = Redactor().redact(f"{name}: internal error: {type(error).__name__}: {error}")
            raise JsonRpcException(
                code=-32603, message=message, data={"type": "InternalError"}
            ) from None

    return run


class _NullWriter:
    """pygls wants a writer object; ours writes through ``HostSession.write``."""

    def write(self, data: bytes) -> None:  # pragma: no cover - never called
        raise AssertionError("HostProtocol writes through the session")

    def close(self) -> None:
        pass


def stdout_writer(stream: BinaryIO) -> Callable[[bytes], None]:
    def write(data: bytes) -> None:
        stream.write(data)
        stream.flush()

    return write
