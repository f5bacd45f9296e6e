"""A small asyncio JSON-RPC client for oma-host.

It spawns ``oma-host`` as an editor would (stdio, LSP framing) or connects to
one serving ``--tcp`` with its token, answers the host's requests through
registered handlers, and records every notification in arrival order.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Self

from oma_host.core.errors import ErrorCode
from oma_host.server.tcp_token import discover_token
from oma_host.wire.framing import encode_frame, read_frames
from oma_host.wire.peer import JsonRpcPeer, answer_failure

ServerRequestHandler = Callable[[Any], Any]

# The host's answers are as large as the conversations it is given: the client
# reads every frame, however large.
_NO_LIMIT = sys.maxsize


def _time_out(future: asyncio.Future[Any], timeout: float) -> None:
    if not future.done():
        future.set_exception(TimeoutError(f"no answer within {timeout} s"))


class RpcError(Exception):
    """An error response from the host."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.data = data


def host_argv(*extra: str) -> list[str]:
    """The argv that runs this checkout's host with this interpreter."""
    return [sys.executable, "-m", "oma_host", *extra]


@dataclass
class HostClient(JsonRpcPeer):
    """Talks to one host: a spawned process (``spawn``) or a TCP one
    (``connect``). Its request ids and futures are the JSON-RPC peer core's
    (:class:`~oma_host.wire.peer.JsonRpcPeer`); a request's future gets
    the host's whole answer, which :func:`unwrap` reads."""

    peer = "the host"

    reader: asyncio.StreamReader
    send_bytes: Callable[[bytes], None]
    process: asyncio.subprocess.Process | None = None
    notifications: list[dict[str, Any]] = field(default_factory=list)
    # Every server-to-client request, in arrival order, as (method, params).
    server_requests: list[tuple[str, Any]] = field(default_factory=list)
    # Every message received, in arrival order (responses, requests, notifications).
    received: list[dict[str, Any]] = field(default_factory=list)
    handlers: dict[str, ServerRequestHandler] = field(default_factory=dict)
    on_notification: Callable[[dict[str, Any]], None] | None = None
    _reader_task: asyncio.Task[None] | None = None
    _answering: set[asyncio.Future[None]] = field(default_factory=set)
    _connection: asyncio.StreamWriter | None = None
    # A TCP host's token, sent as initializationOptions.authToken.
    auth_token: str | None = None

    @classmethod
    async def spawn(
        cls,
        argv: Sequence[str] | None = None,
        *,
        env: dict[str, str] | None = None,
        start_new_session: bool = False,
    ) -> Self:
        """Spawn a host over stdio. ``start_new_session`` keeps a terminal's
        Ctrl-C away from it (the console turns Ctrl-C into a cancel)."""
        process = await asyncio.create_subprocess_exec(
            *(argv or host_argv()),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, **(env or {})},
            limit=2**24,
            start_new_session=start_new_session,
        )
        assert process.stdin is not None and process.stdout is not None
        client = cls(process.stdout, process.stdin.write, process)
        client.start()
        return client

    @classmethod
    async def connect(
        cls, host: str, port: int, *, token_file: str | os.PathLike[str] | None = None
    ) -> Self:
        """Connect to a host serving ``--tcp``. Its token comes from
        ``token_file``, else from the file the host keeps for ``port``
        (TokenFileError when there is none)."""
        token = discover_token(port, token_file)
        reader, writer = await asyncio.open_connection(host, port, limit=2**24)
        client = cls(reader, writer.write, None, _connection=writer, auth_token=token)
        client.start()
        return client

    def __post_init__(self) -> None:
        JsonRpcPeer.__init__(self, first_id=1)

    def _send(self, data: bytes) -> None:
        self.send_bytes(data)

    def _error(self, code: int, message: str, data: Any) -> Exception:
        return RpcError(code, message, data)

    def start(self) -> None:
        """Start reading the host's messages."""
        self._reader_task = asyncio.ensure_future(self._read())

    # -- sending ------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        self._write_now(encode_frame(json.dumps(message).encode()))

    def start_request(
        self, method: str, params: Any = None, *, msg_id: Any = None
    ) -> tuple[Any, asyncio.Future[Any]]:
        """Send a request; returns its id and a future for the response message."""
        if self._reader_task is not None and self._reader_task.done():
            raise ConnectionError("the host has closed its output; it is no longer serving")
        msg_id = self.next_id() if msg_id is None else msg_id
        future = self._expect(msg_id)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return msg_id, future

    async def request(self, method: str, params: Any = None, *, timeout: float = 60) -> Any:
        """Send a request and return its result, or raise RpcError
        (TimeoutError when no answer came within ``timeout`` seconds)."""
        msg_id, future = self.start_request(method, params)
        # A timer on the future rather than asyncio.wait_for: no waiter
        # future and no callbacks to add and remove, on every request.
        timer = asyncio.get_running_loop().call_later(timeout, _time_out, future, timeout)
        try:
            return unwrap(await future)
        finally:
            timer.cancel()
            self._forget(msg_id)  # timed out or cancelled: a late answer has no taker

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def cancel(self, msg_id: Any) -> None:
        self.notify("$/cancelRequest", {"id": msg_id})

    async def initialize(self, options: dict[str, Any] | None = None) -> Any:
        params: dict[str, Any] = {"processId": os.getpid(), "capabilities": {}}
        if self.auth_token is not None:
            options = {**(options or {}), "authToken": self.auth_token}
        if options is not None:
            params["initializationOptions"] = options
        return await self.request("initialize", params)

    async def close(self, timeout: float = 20) -> int:
        """shutdown + exit, then wait for the process; returns its exit code.
        Closing a host that has already exited just returns its code."""
        if self.process is not None and self.process.returncode is not None:
            return self.process.returncode
        with contextlib.suppress(Exception):
            await self.request("shutdown", timeout=timeout)
            self.notify("exit")
        return await self.wait(timeout)

    async def wait(self, timeout: float = 20) -> int:
        """Wait for a spawned host to exit (a TCP connection is just closed)."""
        if self.process is None:
            if self._connection is not None:
                self._connection.close()
            return 0
        try:
            return await asyncio.wait_for(self.process.wait(), timeout)
        except TimeoutError:
            self.process.kill()
            return await self.process.wait()

    async def reap(self, grace_s: float = 5.0) -> None:
        """Wait for a spawned host to end on its own (it was sent the same
        signal as its client), killing it after ``grace_s``."""
        if self.process is not None and self.process.returncode is None:
            await self.wait(grace_s)

    async def stderr_text(self) -> str:
        assert self.process is not None and self.process.stderr is not None
        return (await self.process.stderr.read()).decode(errors="replace")

    # -- receiving ------------------------------------------------------------

    def progress(self, token: Any) -> list[Any]:
        """The ``value`` of every ``$/progress`` for ``token`` so far."""
        return [
            n["params"]["value"]
            for n in self.notifications
            if n.get("method") == "$/progress" and n["params"].get("token") == token
        ]

    async def _read(self) -> None:
        """Dispatch every frame the host writes, read by the host's own frame
        reader; a frame that is not LSP-framed JSON ends the reading."""
        why = "the host closed its stdout"
        try:
            async for frame in read_frames(self.reader, _NO_LIMIT):
                if frame.error is not None:
                    why = f"the host's output is not LSP-framed JSON: {frame.error}"
                    break
                if isinstance(frame.message, dict):
                    self._dispatch(frame.message)
        finally:
            self._fail_pending(ConnectionError(why))

    def _dispatch(self, message: dict[str, Any]) -> None:
        """One message from the host: a request is answered, a notification
        kept (and handed to ``on_notification``), an answer resolves its request."""
        self.received.append(message)
        if "method" in message and "id" in message:
            task = asyncio.ensure_future(self._answer(message))
            self._answering.add(task)
            task.add_done_callback(self._answering.discard)
        elif "method" in message:
            self.notifications.append(message)
            if self.on_notification is not None:
                self.on_notification(message)
        elif (future := self._answered(message)) is not None:
            future.set_result(message)  # the whole answer: see unwrap

    async def _answer(self, message: dict[str, Any]) -> None:
        method = message["method"]
        self.server_requests.append((method, message.get("params")))
        handler = self.handlers.get(method)
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        if handler is None:
            reply["error"] = {
                "code": ErrorCode.METHOD_NOT_FOUND,
                "message": f"client has no handler for {method}",
            }
        else:
            try:
                result = handler(message.get("params"))
                if inspect.isawaitable(result):
                    result = await result
                reply["result"] = result
            except Exception as error:
                reply["error"] = {"code": ErrorCode.INTERNAL_ERROR, "message": str(error)}
        if self.process is None or self.process.returncode is None:
            with contextlib.suppress(Exception):
                self.send(reply)


def unwrap(response: dict[str, Any]) -> Any:
    """The result of a response message, or RpcError for an error response
    (one that is not a JSON-RPC answer included)."""
    failure = answer_failure(response, HostClient.peer)
    if failure is not None:
        raise RpcError(*failure)
    return response.get("result")
