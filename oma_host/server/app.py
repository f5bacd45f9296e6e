"""The host session: one client connection, from its first byte to ``exit``.

It reads frames (``server/framing.py``), has each checked by the connection
(``server/rpc.py``), and handles what passes: the lifecycle gate (nothing but
``initialize`` before it, nothing after ``shutdown``), one task per request
with its own abort signal and :class:`RequestContext`, ``$/cancelRequest``
(the run stops and answers -32800 with its partial result), and
``shutdown``/``exit`` (PROTOCOL.md sections 1, 2, 5 and 11). Methods come from
the registry: a handler's module is imported on the method's first use.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO

from oma_host.core.abort import AbortSignal
from oma_host.core.errors import OmaError
from oma_host.server.context import RequestContext
from oma_host.server.framing import (
    DEFAULT_MAX_MESSAGE_BYTES,
    Frame,
    FramingChoice,
    detect_framing,
    frame_reader,
)
from oma_host.server.registry import Method, load, lookup
from oma_host.server.rpc import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    SERVER_NOT_INITIALIZED,
    Call,
    Connection,
    MsgId,
    RpcError,
    valid_id,
)
from oma_host.server.state import SessionState, Settings
from oma_host.server.supervisor import Supervisor

if TYPE_CHECKING:
    from oma_host.server.trace import FrameTracer

log = logging.getLogger("oma_host.server")

_SHUTDOWN_WAIT_S = 5.0  # how long shutdown waits for aborted runs to clean up


@dataclass(frozen=True)
class SessionOptions:
    """How a session is served: the command line's choices."""

    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    framing: FramingChoice = "lsp"
    state_dir: str | None = None  # --state-dir
    tracer: FrameTracer | None = None  # --trace


class HostSession:
    """One connection: lifecycle flags, in-flight requests, and its state."""

    def __init__(
        self, write: Callable[[bytes], None], options: SessionOptions | None = None
    ) -> None:
        self.options = options or SessionOptions()
        self.connection = Connection(write, self.options.tracer)
        self.supervisor = Supervisor()
        self.state = SessionState(
            self.connection, self.supervisor, self.options.tracer, self.options.state_dir
        )
        self.initialized = False
        self.shutdown_requested = False
        self.exited = False
        self.exit_code = 0
        # Request id -> its abort signal, while it runs.
        self._requests: dict[MsgId, AbortSignal] = {}
        # Every handler task (notifications too), for shutdown to wait on.
        self._tasks: set[asyncio.Task[None]] = set()
        self._exit_event = asyncio.Event()

    # -- the lifecycle (context.Session) --------------------------------------

    def start(self, settings: Settings) -> None:
        self.state.configure(settings)
        self.initialized = True

    async def shutdown(self) -> None:
        """Cancel in-flight runs, dispose every agent, drain background work
        (idempotent)."""
        self.shutdown_requested = True
        for abort in list(self._requests.values()):
            abort.abort()
        # Aborted runs clean up (one-off agents close, process groups are
        # killed) before their handlers return; wait for that, within bounds.
        current = asyncio.current_task()
        running = [task for task in self._tasks if task is not current and not task.done()]
        if running:
            await asyncio.wait(running, timeout=_SHUTDOWN_WAIT_S)
        agents = self.state.agents.take_all()
        results = await asyncio.gather(*(agent.close() for agent in agents), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                log.warning("an agent failed to close: %s", result)
        await self.supervisor.drain()

    def request_exit(self) -> None:
        self.exit_code = 0 if self.shutdown_requested else 1
        self.exited = True
        self._exit_event.set()

    # -- serving ------------------------------------------------------------------

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
        # No answer can arrive any more: the host's own requests fail now
        # rather than at their timeouts.
        self.connection.abandon()
        if not self.exited:  # end of input: shutdown + exit
            self.exit_code = 0
        await self.shutdown()
        return self.exit_code

    async def _read_loop(self, reader: asyncio.StreamReader) -> None:
        prefix = b""
        framing = self.options.framing
        if framing == "auto":
            framing, prefix = await detect_framing(reader)
            log.info("framing: %s", framing)
        self.connection.use_framing(framing)
        max_bytes = self.options.max_message_bytes
        async for frame in frame_reader(framing, reader, max_bytes, prefix):
            self._handle_frame(frame)
            await asyncio.sleep(0)  # let handlers start in arrival order

    def _handle_frame(self, frame: Frame) -> None:
        if self.options.tracer is not None:
            self.options.tracer.record("in", frame.message, frame.error)
        if frame.error is not None and frame.is_response:
            log.warning("dropped an oversized response from the client: %s", frame.error)
            return
        if frame.error is not None:
            log.warning("bad frame: %s", frame.error)
            type_name = "ParseError" if frame.error_code == PARSE_ERROR else "InvalidRequest"
            self.connection.respond_error(
                frame.recovered_id, RpcError(frame.error_code, frame.error, type_name)
            )
            return
        try:
            call = self.connection.receive(frame.message)
            if call is not None:
                self._handle_call(call)
        except Exception:  # the loop must survive anything a frame can do
            log.exception("failed to handle a message")

    def _handle_call(self, call: Call) -> None:
        if call.id is None:
            self._handle_notification(call)
            return
        if self.exited:
            return
        refusal = self._gate(call.id, call.method)
        if refusal is not None:
            self.connection.respond_error(call.id, refusal)
            return
        method = lookup(call.method)
        if method is None:
            self.connection.respond_error(
                call.id,
                RpcError(METHOD_NOT_FOUND, f"{call.method}: no such method", "MethodNotFound"),
            )
            return
        self._start(method, call.params, call.id)

    def _gate(self, msg_id: MsgId, method: str) -> RpcError | None:
        """Why a request may not run now, if it may not."""
        if not self.initialized and method != Method.INITIALIZE:
            return RpcError(
                SERVER_NOT_INITIALIZED,
                f"{method}: the server is not initialized; send initialize first",
                "ServerNotInitialized",
            )
        if self.shutdown_requested:
            return RpcError(
                INVALID_REQUEST, f"{method}: the server is shutting down", "InvalidRequest"
            )
        if msg_id in self._requests:
            return RpcError(
                INVALID_REQUEST,
                f"{method}: request id {msg_id!r} is already in flight",
                "InvalidRequest",
            )
        return None

    def _handle_notification(self, call: Call) -> None:
        if call.method == "exit":
            self.request_exit()
        elif call.method == "$/cancelRequest":
            params = call.params
            if isinstance(params, dict) and valid_id(params.get("id")):
                self._cancel(params["id"])
        elif not self.initialized or self.shutdown_requested or self.exited:
            log.debug("dropping notification %s", call.method)
        elif (method := lookup(call.method)) is not None:
            self._start(method, call.params, None)  # run, answered to nobody
        else:
            log.debug("ignoring unknown notification %s", call.method)

    def _cancel(self, msg_id: MsgId) -> None:
        abort = self._requests.get(msg_id)
        if abort is not None:
            abort.abort()

    def _start(self, method: Method, params: Any, msg_id: MsgId | None) -> None:
        ctx = RequestContext(method, AbortSignal(), self.state, self)
        task = asyncio.ensure_future(self._run(ctx, params, msg_id))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if msg_id is not None:
            self._requests[msg_id] = ctx.abort

    async def _run(self, ctx: RequestContext, params: Any, msg_id: MsgId | None) -> None:
        """Parse, handle and answer one request; every failure becomes its
        JSON-RPC error (an unexpected one a -32603 that says where, with the
        traceback on stderr rather than on the wire)."""
        result: Any = None
        failure: RpcError | None = None
        try:
            spec = load(ctx.method)
            result = await spec.handler(ctx, spec.parse(params))
        except RpcError as error:
            failure = error
        except OmaError as error:
            data = dict(error.error_data())
            failure = RpcError(error.code, str(error), str(data.pop("type")), **data)
        except Exception as error:
            log.exception("%s failed", ctx.method)
            failure = _internal_error(ctx.method, error)
        finally:
            if msg_id is not None:
                self._requests.pop(msg_id, None)
        if msg_id is None:
            return
        if failure is None:
            self.connection.respond(msg_id, result)
        else:
            self.connection.respond_error(msg_id, failure)


def _internal_error(method: str, error: Exception) -> RpcError:
    from oma_host.core.redact import Redactor

    message = Redactor().redact(f"{method}: internal error: {type(error).__name__}: {error}")
    return RpcError(INTERNAL_ERROR, message, "InternalError")


def stdout_writer(stream: BinaryIO) -> Callable[[bytes], None]:
    def write(data: bytes) -> None:
        stream.write(data)
        stream.flush()

    return write
