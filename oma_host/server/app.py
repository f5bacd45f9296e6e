"""The host session: one client connection, from its first byte to ``exit``.

It reads frames, has each checked by the connection (:mod:`.rpc`), and applies
the lifecycle gate (nothing but ``initialize`` before it, nothing after
``shutdown``); each request runs in a task of its own with its abort signal and
:class:`RequestContext`, so ``$/cancelRequest`` stops just that run, answered
-32800 with its partial result. Methods come from the registry, a handler's
module imported on first use. A guarded (TCP) connection must open with an
``initialize`` carrying the token. docs/protocol.md, "Lifecycle" and
"Cancellation and progress".
"""

from __future__ import annotations

import asyncio
import logging
import os
import select
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from oma_host.core.abort import AbortSignal
from oma_host.core.errors import ErrorCode, OmaError
from oma_host.core.suggest import did_you_mean
from oma_host.process.collector import count_in_flight
from oma_host.server.context import RequestContext
from oma_host.server.registry import Method, load, lookup
from oma_host.server.rpc import Call, Connection, RpcError
from oma_host.server.state import SessionState, Settings
from oma_host.server.supervisor import Supervisor
from oma_host.server.tcp_token import (
    UNAUTHENTICATED_MAX_MESSAGE_BYTES,
    looks_like_http,
    token_matches,
)
from oma_host.wire.framing import (
    Frame,
    Framing,
    FramingChoice,
    detect_framing,
    frame_reader,
    surrogate_problem,
)
from oma_host.wire.limits import DEFAULT_DRAIN_TIMEOUT_S, DEFAULT_MAX_MESSAGE_BYTES
from oma_host.wire.peer import MsgId, valid_id

if TYPE_CHECKING:
    from oma_host.server.frame_trace import FrameTracer

log = logging.getLogger("oma_host.server")

_SHUTDOWN_WAIT_S = 5.0  # how long shutdown waits for aborted runs to clean up


@dataclass(frozen=True)
class SessionOptions:
    """How a session is served: the command line's choices."""

    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    framing: FramingChoice = "lsp"
    state_dir: str | None = None  # --state-dir
    tracer: FrameTracer | None = None  # --trace
    # Set for a network (TCP) connection: its first request must be an initialize
    # carrying this token, and one that opens like HTTP is closed unread.
    auth_token: str | None = None
    # ndjson end of input: how long the requests in flight may take to finish.
    drain_timeout_s: float = DEFAULT_DRAIN_TIMEOUT_S


class HostSession:
    """One connection: lifecycle flags, in-flight requests, and its state."""

    def __init__(
        self,
        write: Callable[[bytes], None],
        options: SessionOptions | None = None,
        *,
        ready_to_read: Callable[[], Awaitable[None]] | None = None,
        admit: Callable[[], bool] | None = None,
    ) -> None:
        """``write`` sends bytes to the client (raising OSError once it is
        gone); ``ready_to_read`` is awaited before each next frame is read
        (TCP backpressure: it waits while too many replies are unsent);
        ``admit`` is asked once the token is shown whether the connection
        may be served (TCP's connection limit), and a False closes it."""
        self.options = options or SessionOptions()
        self.connection = Connection(
            write, self.options.tracer, self.options.max_message_bytes, self._client_gone
        )
        self._ready_to_read = ready_to_read
        self._admit = admit
        self.authenticated = self.options.auth_token is None
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
        self._gone = asyncio.Event()  # the client reads no more
        self._framing: Framing = "lsp"
        # An initialize or shutdown handler was started and has not run yet.
        self._gating_started = False

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
        """Read frames until ``exit`` or end of input; returns the exit code.

        End of input on ndjson means "no more requests": those in flight
        finish and are answered (within ``drain_timeout_s``) before the
        shutdown. On LSP framing the client is gone, and so are its runs."""
        frames = asyncio.ensure_future(self._read_loop(reader))
        exit_wait = asyncio.ensure_future(self._exit_event.wait())
        gone_wait = asyncio.ensure_future(self._gone.wait())
        try:
            await asyncio.wait({frames, exit_wait, gone_wait}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            await self._interrupted(frames)
            raise
        finally:
            exit_wait.cancel()
            gone_wait.cancel()
        if not frames.done():
            frames.cancel()
            with suppress(asyncio.CancelledError):
                await frames
        input_ended = (
            not frames.cancelled() and frames.exception() is None and not self._gone.is_set()
        )
        if not frames.cancelled() and frames.exception() is not None:
            log.warning("reading from the client failed: %s", frames.exception())
        # No answer can arrive any more: the host's own requests fail now
        # rather than at their timeouts.
        self.connection.abandon()
        if not self.exited:  # end of input: shutdown + exit
            self.exit_code = 0
            if input_ended and self._framing == "ndjson":
                await self._finish_requests()
        await self.shutdown()
        self.connection.flush()  # the answers of the runs shutdown ended
        return self.exit_code

    async def _interrupted(self, frames: asyncio.Future[None]) -> None:
        """Cancelled while serving (Ctrl-C: ``asyncio.run`` cancels its main
        task): end the runs as a shutdown does before the cancellation goes on.

        Left to ``asyncio.run``, they would be cancelled together with every
        other task, asyncio's own included; a command still being started then
        never finishes (its transport waits for pipes whose connecting task was
        cancelled too), and the host hangs on its way out."""
        frames.cancel()
        self.connection.abandon()
        await self.shutdown()
        self.connection.flush()  # the runs' answers (-32800), as a shutdown gives them

    async def _finish_requests(self) -> None:
        """Wait for the requests in flight to be answered, within the drain timeout."""
        running = [task for task in self._tasks if not task.done()]
        if not running:
            return
        log.info("end of input: finishing %d request(s) in flight", len(running))
        gone_wait = asyncio.ensure_future(self._gone.wait())
        all_done = asyncio.ensure_future(asyncio.wait(running))
        await asyncio.wait(
            {all_done, gone_wait},
            timeout=self.options.drain_timeout_s,
            return_when=asyncio.FIRST_COMPLETED,
        )
        gone_wait.cancel()
        all_done.cancel()
        if any(not task.done() for task in running):
            log.warning("requests still in flight at the end of the drain are cancelled")

    def _client_gone(self) -> None:
        """The client reads no more: nothing can be answered, so stop."""
        self.connection.abandon()
        self._gone.set()

    async def _read_loop(self, reader: asyncio.StreamReader) -> None:
        prefix = b""
        framing = self.options.framing
        guarded = self.options.auth_token is not None
        if framing == "auto" or guarded:
            detected, prefix = await detect_framing(reader)
            if guarded and looks_like_http(prefix):
                log.warning("closed a connection that speaks HTTP (it began %r)", prefix)
                return
            if framing == "auto":
                framing = detected
                log.info("framing: %s", framing)
        self._framing = framing
        self.connection.use_framing(framing)
        if not self.authenticated:
            # Until the token is shown, room for an initialize and no more: a
            # frame over it is not read at all, and the connection is closed.
            limit = min(self.options.max_message_bytes, UNAUTHENTICATED_MAX_MESSAGE_BYTES)
            first = frame_reader(framing, reader, limit, prefix, discard_oversized=False)
            frame = await anext(first, None)
            await first.aclose()
            if frame is None or not await self._take(frame):
                return
            prefix = b""
        async for frame in frame_reader(framing, reader, self.options.max_message_bytes, prefix):
            if not await self._take(frame):
                return

    async def _take(self, frame: Frame) -> bool:
        """Handle one frame, then wait until the next may be read; False when
        the connection must close."""
        if not self._handle_frame(frame):
            return False
        if self._ready_to_read is not None:
            # Backpressure: the handler runs (and writes what it answers
            # at once) before the next frame, so waiting for the writes
            # to drain bounds what a client that does not read costs.
            await asyncio.sleep(0)
            await self._ready_to_read()
        elif self._gate_may_change():
            # Let the handler just started run up to its first await
            # before the next frame meets the gate: an initialize (or
            # shutdown) read in one chunk with the requests after it
            # then settles how they are answered. Any other handler
            # starts in arrival order all the same (tasks start first
            # in, first out), so a burst of runs in one read costs no
            # event loop pass per frame.
            await asyncio.sleep(0)
        self._gating_started = False
        return True

    def _gate_may_change(self) -> bool:
        """Whether a handler started now could change how the next frame is
        gated: before ``initialize`` has run, once ``initialize`` or
        ``shutdown`` was started, and from ``shutdown`` or ``exit`` on."""
        return (
            self._gating_started or not self.initialized or self.shutdown_requested or self.exited
        )

    def _handle_frame(self, frame: Frame) -> bool:
        """Handle one frame; False when the connection must close (it failed
        to authenticate)."""
        given_token = _take_auth_token(frame.message)
        if self.options.tracer is not None:
            self.options.tracer.record("in", frame.message, frame.error)
        if not self.authenticated and not self._authenticate(frame, given_token):
            return False
        if frame.error is not None and frame.is_response:
            log.warning("dropped an oversized response from the client: %s", frame.error)
            return True
        if frame.error is not None:
            log.warning("bad frame: %s", frame.error)
            self.connection.respond_error(
                frame.recovered_id, RpcError(frame.error_code, frame.error)
            )
            return True
        try:
            call = self.connection.receive(frame.message, frame.maybe_surrogates)
            if call is not None:
                self._handle_call(call)
        except Exception:  # the loop must survive anything a frame can do
            log.exception("failed to handle a message")
        return True

    def _authenticate(self, frame: Frame, given_token: Any) -> bool:
        """The first frame of a guarded connection: an initialize request with
        the right token passes; anything else closes the connection."""
        assert self.options.auth_token is not None
        message = frame.message
        is_initialize = (
            isinstance(message, dict)
            and message.get("jsonrpc") == "2.0"
            and message.get("method") == Method.INITIALIZE
            and valid_id(message.get("id"))
        )
        if is_initialize and token_matches(self.options.auth_token, given_token):
            if self._admit is not None and not self._admit():
                return False
            self.authenticated = True
            return True
        log.warning(
            "closed a connection whose first message was not an initialize with the "
            "right initializationOptions.authToken"
        )
        if is_initialize:  # a client of ours with a wrong or stale token: say so
            self.connection.respond_error(
                message["id"],
                RpcError(
                    ErrorCode.INVALID_REQUEST,
                    "initialize: initializationOptions.authToken is missing or wrong; "
                    "this host serves TCP to holders of its token file only",
                ),
            )
        return False

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
                RpcError(
                    ErrorCode.METHOD_NOT_FOUND,
                    f"{call.method}: no such method{did_you_mean(call.method, Method)}",
                ),
            )
            return
        if call.surrogate_at is not None:
            message, path = surrogate_problem(f"{method}: params", call.surrogate_at)
            self.connection.respond_error(
                call.id, RpcError(ErrorCode.INVALID_PARAMS, message, path=path)
            )
            return
        self._start(method, call.params, call.id)

    def _gate(self, msg_id: MsgId, method: str) -> RpcError | None:
        """Why a request may not run now, if it may not."""
        if not self.initialized and method != Method.INITIALIZE:
            return RpcError(
                ErrorCode.SERVER_NOT_INITIALIZED,
                f"{method}: the server is not initialized; send initialize first",
            )
        if self.shutdown_requested:
            return RpcError(ErrorCode.INVALID_REQUEST, f"{method}: the server is shutting down")
        if msg_id in self._requests:
            return RpcError(
                ErrorCode.INVALID_REQUEST, f"{method}: request id {msg_id!r} is already in flight"
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
        elif call.surrogate_at is not None:
            log.warning("dropping notification %s: its params hold a lone surrogate", call.method)
        elif (method := lookup(call.method)) is not None:
            self._start(method, call.params, None)  # run, answered to nobody
        else:
            log.debug("ignoring unknown notification %s", call.method)

    def _cancel(self, msg_id: MsgId) -> None:
        abort = self._requests.get(msg_id)
        if abort is not None:
            abort.abort()

    def _start(self, method: Method, params: Any, msg_id: MsgId | None) -> None:
        if method is Method.INITIALIZE or method is Method.SHUTDOWN:
            self._gating_started = True
        ctx = RequestContext(method, AbortSignal(), self.state, self)
        task = asyncio.get_running_loop().create_task(self._run(ctx, params, msg_id))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        count_in_flight(task)
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
    return RpcError(ErrorCode.INTERNAL_ERROR, message)


def _take_auth_token(message: Any) -> Any:
    """Remove ``initializationOptions.authToken`` from an initialize message
    and return it, so no trace, log or handler ever holds the token."""
    if not isinstance(message, dict) or message.get("method") != Method.INITIALIZE:
        return None
    params = message.get("params")
    options = params.get("initializationOptions") if isinstance(params, dict) else None
    return options.pop("authToken", None) if isinstance(options, dict) else None


def stdout_writer(fd: int) -> Callable[[bytes], None]:
    """Write whole frames to ``fd``: one write may take only part of them
    (Linux moves at most 2 GiB per call, and a non-blocking pipe what fits)."""
    poller = select.poll()
    poller.register(fd, select.POLLOUT)

    def write(data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(fd, view) :]
            except BlockingIOError:
                poller.poll()  # a non-blocking stdout: wait until it takes more

    return write
