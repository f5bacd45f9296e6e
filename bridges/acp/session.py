"""The ACP bridge: oma-host as the client of an Agent Client Protocol agent
(PROTOCOL.md section 9).

On an agent's first run the bridge spawns ``command`` + ``args`` in ``cwd``
(its own process group, ``env`` merged over the host's environment), sends
``initialize`` advertising no ``fs`` or ``terminal`` capability, and opens
``session/new``; later runs reuse that session, one prompt at a time.
``systemPrompt`` is prepended to the first prompt of each session only. A
cancelled or timed-out run sends ``session/cancel`` and returns at once; the
next run waits briefly for the agent to end the abandoned turn, and starts a
fresh process if it never does. Any fault (the command missing, the agent
exiting or writing garbage, a refused handshake) fails the run with a message
naming the cause and discards the process, so the next run starts afresh.

The JSON-RPC machinery and the schema are the ``agent-client-protocol``
library's; this module is imported on an ACP agent's first run only, because
that library takes a few hundred milliseconds to import. How updates map to
results lives in :mod:`bridges.acp.mapping`, the byte transport in
:mod:`bridges.acp.transport`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import acp
from acp.schema import (
    ClientCapabilities,
    FileSystemCapabilities,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
)
from pydantic import ValidationError

from bridges.acp.mapping import BridgeClient, Turn
from bridges.acp.transport import LINE_LIMIT, SHOWN_LINE, NdjsonPipe
from bridges.common import (
    StderrTail,
    compose_prompt,
    could_not_start,
    empty_prompt,
    failed,
    replied,
    working_directory,
)
from bridges.procgroup import (
    GroupProcess,
    SpawnError,
    describe_exit,
    end_process_group,
    spawn_group,
    wait_for_exit,
)
from oma_host.core.backends import PermissionHandler
from oma_host.core.config import AcpBackend, AgentConfig
from oma_host.core.messages import LLMMessage
from oma_host.core.redact import Redactor
from oma_host.core.results import AgentRunResult, RunRecorder
from oma_host.core.version import __version__

log = logging.getLogger(__name__)
T = TypeVar("T")

_HANDSHAKE_S = 60.0  # initialize + session/new; an agent waiting for a login never answers
_CANCEL_GRACE_S = 3.0  # how long an agent may take to end a turn after session/cancel
_EXIT_WAIT_S = 2.0  # after the connection drops, how long to wait for an exit code
_AUTH_REQUIRED = -32000


def close_quietly(task: asyncio.Future[Any]) -> None:
    """Retrieve a finished background future's outcome, so that it is never
    reported as an exception nobody retrieved."""
    if task.done() and not task.cancelled():
        with contextlib.suppress(BaseException):
            task.result()


class _Fault(Exception):
    """Ends the run as a failure; ``fatal`` faults also discard the process."""

    def __init__(self, kind: str, message: str, *, fatal: bool = True) -> None:
        super().__init__(message)
        self.kind = kind
        self.fatal = fatal


@dataclass
class _Live:
    """One agent process with its connection and session."""

    process: GroupProcess
    pipe: NdjsonPipe
    conn: Any  # acp.client.connection.ClientSideConnection
    client: BridgeClient
    stderr: StderrTail
    session_id: str = ""
    agent_info: str = ""  # name and version from its initialize answer
    auth_methods: list[str] = field(default_factory=list)
    prompted: bool = False  # the session has had its first prompt (and the systemPrompt)
    draining: asyncio.Future[None] | None = None  # an abandoned turn ending
    stuck: bool = False  # an abandoned turn never ended: the session is unusable
    closed: bool = False
    background: set[asyncio.Future[Any]] = field(default_factory=set)

    @property
    def dead(self) -> bool:
        return (
            self.closed
            or self.stuck
            or self.pipe.eof
            or self.pipe.fault is not None
            or self.process.returncode is not None
        )

    def spawn(self, step: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(step)
        self.background.add(task)
        task.add_done_callback(self.background.discard)
        task.add_done_callback(close_quietly)

    async def shutdown(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.client.end(cancelled=True)
        for task in [*self.background, *([self.draining] if self.draining else [])]:
            if task is not asyncio.current_task():  # the drain itself may be shutting down
                task.cancel()
        with contextlib.suppress(Exception):
            await self.conn.close()
        await end_process_group(self.process)
        self.stderr.cancel()


class AcpBridge:
    """Runs prompts on one ACP agent session; see the module docstring."""

    def __init__(
        self,
        config: AgentConfig,
        backend: AcpBackend,
        *,
        permission_handler: PermissionHandler | None = None,
    ) -> None:
        self._config = config
        self._backend = backend
        self._permission_handler = permission_handler
        self._redactor = Redactor.for_config(config)
        self._live: _Live | None = None
        self._lock = asyncio.Lock()  # one prompt at a time per session

    @property
    def _command(self) -> str:
        return self._backend.command

    def _who(self, live: _Live | None = None) -> str:
        """The agent as messages name it: its config name, and what it said it
        is at ``initialize`` (else the command)."""
        what = live.agent_info if live is not None and live.agent_info else self._command
        return f"the ACP agent {self._config.name!r} ({what})"

    async def execute(
        self, messages: list[LLMMessage], prompt: str, recorder: RunRecorder, *, streaming: bool
    ) -> AgentRunResult:
        del messages, streaming  # text only; updates are recorded either way
        if not prompt.strip():
            return empty_prompt(self._config, recorder)
        async with self._lock:
            live = self._live
            try:
                live = await self._session()
                return await self._prompt(live, prompt, recorder)
            except _Fault as fault:
                if fault.fatal:
                    await self._discard(live)
                return failed(recorder, self._redactor, fault.kind, str(fault))

    async def close(self) -> None:
        """End the session's process group (``agent/dispose``, host shutdown)."""
        await self._discard(self._live)

    # -- the session --------------------------------------------------------

    async def _session(self) -> _Live:
        live = self._live
        if live is not None:
            if live.draining is not None:
                await asyncio.wait({live.draining})  # bounded by _CANCEL_GRACE_S
            if live.dead:
                log.warning(
                    "ACP agent %r: the previous session ended; starting anew", self._config.name
                )
                await self._discard(live)
        if self._live is None:
            self._live = await self._start()
        return self._live

    def _cwd(self) -> str:
        # session/new wants an absolute path, so the host's own is named.
        return os.path.abspath(working_directory(self._config, self._backend) or os.getcwd())

    async def _start(self) -> _Live:
        cwd = self._cwd()
        try:
            process = await spawn_group(
                [self._command, *self._backend.args],
                cwd=cwd,
                env=self._backend.environment(),
                limit=LINE_LIMIT,
            )
        except SpawnError as error:
            raise _Fault("spawn", could_not_start(self._who(), str(error))) from None
        hooks = self._config.hooks
        client = BridgeClient(
            self._config.name,
            self._backend.permission,
            self._permission_handler,
            (hooks.timeout_ms if hooks else 30_000) / 1000,
        )
        pipe = NdjsonPipe(process, client.unknown_update)
        assert process.stderr is not None
        # The library types its client parameter with its full Client protocol;
        # ours implements what the router calls (the rest is method-not-found).
        conn = acp.connect_to_agent(cast(Any, client), pipe)
        live = _Live(process, pipe, conn, client, StderrTail(process.stderr))
        try:
            await self._handshake(live, cwd)
        except BaseException:
            await live.shutdown()
            raise
        return live

    async def _handshake(self, live: _Live, cwd: str) -> None:
        try:
            async with asyncio.timeout(_HANDSHAKE_S):
                info: InitializeResponse = await self._call(
                    live,
                    "initialize",
                    live.conn.initialize(
                        protocol_version=acp.PROTOCOL_VERSION,
                        client_capabilities=ClientCapabilities(
                            fs=FileSystemCapabilities(read_text_file=False, write_text_file=False),
                            terminal=False,
                        ),
                        client_info=Implementation(name="oma-host", version=__version__),
                    ),
                )
                live.auth_methods = [method.name for method in info.auth_methods or []]
                if info.agent_info is not None:
                    live.agent_info = f"{info.agent_info.name} {info.agent_info.version}"
                if info.protocol_version != acp.PROTOCOL_VERSION:
                    raise _Fault(
                        "protocol",
                        f"{self._who(live)} speaks protocol version "
                        f"{info.protocol_version}; oma-host speaks {acp.PROTOCOL_VERSION}",
                    )
                session: NewSessionResponse = await self._call(
                    live, "session/new", live.conn.new_session(cwd=cwd, mcp_servers=[])
                )
        except TimeoutError:
            raise _Fault(
                "protocol",
                f"{self._who(live)} did not answer initialize and session/new "
                f"within {_HANDSHAKE_S:.0f} s",
            ) from None
        live.session_id = session.session_id

    async def _discard(self, live: _Live | None) -> None:
        if live is None:
            return
        if self._live is live:
            self._live = None
        await live.shutdown()

    # -- one turn -----------------------------------------------------------

    async def _prompt(self, live: _Live, prompt: str, recorder: RunRecorder) -> AgentRunResult:
        text = prompt if live.prompted else compose_prompt(self._config.system_prompt, prompt)
        live.prompted = True
        turn = Turn(recorder, live.client.usage)
        live.client.begin(turn)
        call = asyncio.ensure_future(
            live.conn.prompt(session_id=live.session_id, prompt=[acp.text_block(text)])
        )
        try:
            await asyncio.wait({call})
        except asyncio.CancelledError:
            # Cancelled or timed out: tell the agent, return now, let the turn
            # end in the background (the next run waits for it).
            live.client.end(cancelled=True)
            live.spawn(live.conn.cancel(session_id=live.session_id))
            live.draining = asyncio.ensure_future(self._drain(live, call))
            raise
        live.client.end()
        turn.finish()
        response: PromptResponse = await self._call(live, "session/prompt", call)
        return _result(response.stop_reason, recorder)

    async def _drain(self, live: _Live, call: asyncio.Future[Any]) -> None:
        done, _ = await asyncio.wait({call}, timeout=_CANCEL_GRACE_S)
        if done:
            close_quietly(call)
        else:  # it ignored session/cancel: the session is unusable, end it now
            live.stuck = True
            call.cancel()
            log.warning("ACP agent %r ignored session/cancel; ending it", self._config.name)
            await self._discard(live)

    # -- faults -------------------------------------------------------------

    async def _call(self, live: _Live, what: str, step: Awaitable[T]) -> T:
        """Await one request to the agent, turning every way it can fail into
        a :class:`_Fault` that names the cause."""
        try:
            return await step
        except acp.RequestError as error:
            raise self._refused(live, what, error) from None
        except ConnectionError:
            raise await self._lost(live, what) from None
        except ValidationError as error:
            problem = error.errors()[0]
            where = ".".join(str(part) for part in problem["loc"])
            raise _Fault(
                "protocol",
                f"{self._who(live)} answered {what} with an invalid "
                f"response ({where}: {problem['msg']})",
            ) from None

    def _refused(self, live: _Live, what: str, error: acp.RequestError) -> _Fault:
        detail = str(error)
        if error.data not in (None, {}, ""):
            detail += f" {json.dumps(error.data)[:SHOWN_LINE]}"
        if error.code == _AUTH_REQUIRED:
            offered = ", ".join(live.auth_methods) or "none listed"
            return _Fault(
                "auth",
                f"{self._who(live)} refused {what}: authentication required: "
                f"{detail} (its login methods: {offered}; oma-host does not log agents in: "
                "authenticate with the agent's own tool or pass credentials in backend.env)",
            )
        # An error answer to a prompt leaves the session usable; in the handshake it does not.
        return _Fault(
            "acp",
            f"{self._who(live)} answered {what} with error {error.code}: {detail}",
            fatal=what != "session/prompt",
        )

    async def _lost(self, live: _Live, what: str) -> _Fault:
        """Why the connection dropped: garbage on stdout, an exit, or our close."""
        if live.closed:
            return _Fault("process", f"{self._who(live)} was closed during {what}")
        if live.pipe.fault is not None:
            return _Fault(
                "protocol",
                f"{self._who(live)} broke the protocol during {what}: {live.pipe.fault}",
            )
        how = "closed its stdout"
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(_EXIT_WAIT_S):
                how = describe_exit(await wait_for_exit(live.process))
        await live.stderr.settle()
        tail = live.stderr.text()
        message = f"{self._who(live)} {how} during {what}"
        return _Fault("process", message + (f": {tail}" if tail else ""))


def _result(stop_reason: str, recorder: RunRecorder) -> AgentRunResult:
    """The AgentRunResult for a turn that ended with ``stop_reason``."""
    if stop_reason == "end_turn":
        return replied(recorder)
    if stop_reason in ("max_tokens", "max_turn_requests"):
        return recorder.result(
            "budget_exhausted", f"the ACP agent stopped the turn early (stopReason {stop_reason})"
        )
    if stop_reason == "refusal":
        message = "the ACP agent refused the prompt (stopReason refusal)"
        # What the agent said while refusing is the output; the reason is in status.
        return recorder.result(
            "error", message, output=recorder.output or message, error_kind="refusal"
        )
    return recorder.result("cancelled", f"the ACP agent ended the turn (stopReason {stop_reason})")
