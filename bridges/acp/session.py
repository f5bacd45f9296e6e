"""The ACP bridge: oma-host as the client of an Agent Client Protocol agent.

On the first run it spawns the agent in its own process group, does the
handshake and opens a session (resumed when it can, logging in when asked);
later runs reuse it, one prompt at a time. A cancelled run sends
``session/cancel`` and returns at once. Any fault fails the run naming the
cause and discards the process, so the next run starts afresh. Imported on an
ACP agent's first run only: the ``agent-client-protocol`` library is slow to
import. docs/protocol.md, "External backends"; docs/backends.md.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any, TypeVar, cast

import acp
from acp.schema import (
    AuthenticateResponse,
    ClientCapabilities,
    FileSystemCapabilities,
    Implementation,
    InitializeRequest,
    InitializeResponse,
    NewSessionRequest,
    NewSessionResponse,
    PromptResponse,
    StopReason,
)
from pydantic import BaseModel

from oma_host.bridges.acp.client import BridgeClient
from oma_host.bridges.acp.config_options import ChoiceError
from oma_host.bridges.acp.files import AgentFiles
from oma_host.bridges.acp.live import Fault, Live, agent_label, read_answer, send
from oma_host.bridges.acp.login import choose, describe
from oma_host.bridges.acp.mapping import Turn, wire
from oma_host.bridges.acp.mcp_servers import session_servers
from oma_host.bridges.acp.resume import CHOICE_ANSWERS, RESUME_ANSWERS, resume_method
from oma_host.bridges.acp.transport import NdjsonPipe, PendingRequest
from oma_host.bridges.common import (
    StderrTail,
    compose_prompt,
    could_not_start,
    empty_prompt,
    failed,
    replied,
    working_directory,
)
from oma_host.core.backends import PermissionHandler, SessionLink
from oma_host.core.config import AcpBackend, AgentConfig
from oma_host.core.delegation import Lineage
from oma_host.core.editor_channel import NO_EDITOR, EditorChannel
from oma_host.core.errors import BackendRequestError, InvalidParamsError
from oma_host.core.events import SessionRestarted
from oma_host.core.messages import LLMMessage
from oma_host.core.recorder import RunRecorder
from oma_host.core.redact import Redactor
from oma_host.core.results import MAX_TOKENS_KIND, MAX_TURN_REQUESTS_KIND, AgentRunResult
from oma_host.core.version import __version__
from oma_host.process.groups import (
    SpawnError,
    spawn_group,
)
from oma_host.workspace.permissions import PermissionPolicy

log = logging.getLogger(__name__)
M = TypeVar("M", bound=BaseModel)

_HANDSHAKE_S = 60.0  # initialize + session/new; an agent waiting for a login never answers
_CANCEL_GRACE_S = 3.0  # how long an agent may take to end a turn after session/cancel


class AcpBridge:
    """Runs prompts on one ACP agent session; see the module docstring."""

    def __init__(
        self,
        config: AgentConfig,
        backend: AcpBackend,
        *,
        permission_handler: PermissionHandler | None = None,
        session_link: SessionLink | None = None,
        editor: EditorChannel | None = None,
    ) -> None:
        self._config = config
        self._backend = backend
        self._permission_handler = permission_handler
        self._editor = editor or NO_EDITOR  # what the door's client does with files
        self._link = session_link  # the ACP sessionId kept with the host's session
        self._redactor = Redactor.for_config(config)
        self._live: Live | None = None
        self._lock = asyncio.Lock()  # one prompt at a time per session

    @property
    def _command(self) -> str:
        return self._backend.command

    def _who(self) -> str:
        """The agent before it answered ``initialize``."""
        return agent_label(self._config.name, self._command)

    async def execute(
        self, messages: list[LLMMessage], prompt: str, recorder: RunRecorder, *, streaming: bool
    ) -> AgentRunResult:
        del messages, streaming  # text only; updates are recorded either way
        if not prompt.strip():
            return empty_prompt(self._config, recorder)
        async with self._lock:
            live = self._live
            try:
                live = await self._session(recorder.place(self._config.delegation))
                return await self._prompt(live, prompt, recorder)
            except Fault as fault:
                if fault.fatal:
                    await self._discard(live)
                return failed(recorder, self._redactor, fault.kind, str(fault))

    async def close(self) -> None:
        """End the session's process group (``agent/dispose``, host shutdown)."""
        await self._discard(self._live)

    # -- the session --------------------------------------------------------

    async def _session(self, lineage: Lineage | None = None) -> Live:
        """The live session, started if need be; for a run at ``lineage``
        (None: any will do), whose room the process must have been started
        with (a host the agent is may delegate that far, no further)."""
        live = self._live
        if live is not None:
            if live.draining is not None:
                await asyncio.wait({live.draining})  # bounded by _CANCEL_GRACE_S
            if live.dead:
                log.warning(
                    "ACP agent %r: the previous session ended; starting anew", self._config.name
                )
                await self._discard(live)
            elif lineage is not None and live.room != lineage.room:
                log.info(
                    "ACP agent %r: restarted for a run with delegation room %d (it had %d)",
                    self._config.name,
                    lineage.room,
                    live.room,
                )
                await self._discard(live)
        if self._live is None:
            self._live = await self._start(lineage or Lineage.root(self._config.delegation))
        return self._live

    def _cwd(self) -> str:
        # session/new wants an absolute path, so the host's own is named.
        return os.path.abspath(working_directory(self._config, self._backend) or os.getcwd())

    async def _start(self, lineage: Lineage) -> Live:
        cwd = self._cwd()
        hooks = self._config.hooks
        client = BridgeClient(
            self._config.name,
            self._backend.permission,
            self._permission_handler,
            (hooks.timeout_ms if hooks else 30_000) / 1000,
        )
        pipe = NdjsonPipe(client.take_update, output_limit=self._backend.max_output_bytes)
        try:
            process = await spawn_group(
                [self._command, *self._backend.args],
                cwd=cwd,
                # A host the agent is counts as one level beneath the run.
                env={**self._backend.environment(), **lineage.environment()},
                stdout_sink=pipe,
            )
        except SpawnError as error:
            raise Fault("spawn", could_not_start(self._who(), str(error))) from None
        assert process.stdin is not None and process.stderr is not None
        pipe.attach(process.stdin)
        # The library types its client parameter with its full Client protocol;
        # ours implements what the router calls (the rest is method-not-found).
        conn = acp.connect_to_agent(cast(Any, client), pipe)
        live = Live(
            process,
            pipe,
            conn,
            client,
            StderrTail(process.stderr),
            self._config.name,
            self._command,
            lineage.room,
        )
        client.watch = live.choices.observe
        client.files = AgentFiles(
            cwd,
            allow_writes=self._backend.allow_writes,
            policy=PermissionPolicy(
                self._config.permissions,
                self._permission_handler,
                self._config.name,
                client.ask_s,
                await asyncio.to_thread(os.path.realpath, cwd),
            ),
            editor=self._editor,
        )
        try:
            await self._handshake(live, cwd)
        except BaseException:
            await live.shutdown()
            raise
        return live

    async def _handshake(self, live: Live, cwd: str) -> None:
        try:
            async with asyncio.timeout(_HANDSHAKE_S):
                initialize = InitializeRequest(
                    protocol_version=acp.PROTOCOL_VERSION,
                    client_capabilities=ClientCapabilities(
                        fs=FileSystemCapabilities(
                            read_text_file=True, write_text_file=self._backend.allow_writes
                        ),
                        terminal=False,
                    ),
                    client_info=Implementation(name="oma-host", version=__version__),
                )
                info = await read_answer(
                    live, "initialize", send(live, "initialize", initialize), InitializeResponse
                )
                live.auth_methods = [method.name for method in info.auth_methods or []]
                live.auth_offers = [wire(method) for method in info.auth_methods or []]
                live.capabilities = info.agent_capabilities
                if info.agent_info is not None:
                    live.agent_info = f"{info.agent_info.name} {info.agent_info.version}"
                if info.protocol_version != acp.PROTOCOL_VERSION:
                    raise Fault(
                        "protocol",
                        f"{live.who} speaks protocol version "
                        f"{info.protocol_version}; oma-host speaks {acp.PROTOCOL_VERSION}",
                    )
                servers, live.mcp_left_out = session_servers(
                    self._config.mcp_servers or [], info.agent_capabilities
                )
                await self._open(live, cwd, NewSessionRequest(cwd=cwd, mcp_servers=servers))
        except TimeoutError:
            raise Fault(
                "protocol",
                f"{live.who} did not answer initialize and session/new within {_HANDSHAKE_S:.0f} s",
            ) from None

    # -- opening the session: resume, log in, choices -------------------------

    async def _ask(self, live: Live, method: str, params: dict[str, Any], model: type[M]) -> Any:
        """Send one request of the handshake or a choice; its answer as raw
        JSON, once read as ``model`` (every failure a :class:`Fault`)."""
        answer = live.pipe.request(method, params).answer
        await read_answer(live, method, answer, model)
        return answer.result()

    async def _open(self, live: Live, cwd: str, new: NewSessionRequest) -> None:
        """Resume the session the host's session remembers, when the agent
        can (session/resume, else session/load, whose replayed updates are
        dropped); else open a new one, logging in if asked, with a
        ``session_restarted`` event for the next run when one was lost. Then
        ``backend.config`` is applied."""
        params = new.model_dump(mode="json", by_alias=True, exclude_none=True)
        link = self._link
        remembered = link.known if link is not None else None
        how = resume_method(live.capabilities)
        reason = f"{live.who} advertises neither session/resume nor session/load"
        if remembered and how is not None:
            live.client.muted = how == "session/load"
            try:
                answer = await self._ask(
                    live, how, {**params, "sessionId": remembered}, RESUME_ANSWERS[how]
                )
            except Fault as fault:
                if live.dead:
                    raise
                reason = str(fault)
            else:
                live.session_id = remembered
                live.prompted = True  # it had its systemPrompt in the host that opened it
                live.choices.take(answer)
                await self._apply_config(live)
                return
            finally:
                live.client.muted = False
        answer = await self._new_session(live, params)
        live.session_id = answer["sessionId"]
        live.choices.take(answer)
        if remembered:
            restarted: SessionRestarted = {
                "previous": remembered,
                "sessionId": live.session_id,
                "reason": reason,
            }
            live.notices.append({"type": "session_restarted", "data": restarted})
        if link is not None and link.known != live.session_id:
            link.known = live.session_id
            await link.remember(live.session_id)
        await self._apply_config(live)

    async def _new_session(self, live: Live, params: dict[str, Any]) -> Any:
        """session/new. A method named in ``backend.auth`` is logged in with
        first (``authenticate``); else, refused for want of a login, the bridge
        logs in with the only method the environment meets (see
        :mod:`oma_host.bridges.acp.login`) and tries once more."""
        wanted = self._backend.auth
        if wanted is not None:
            await self._authenticate(live, wanted)
            return await self._ask(live, "session/new", params, NewSessionResponse)
        try:
            return await self._ask(live, "session/new", params, NewSessionResponse)
        except Fault as fault:
            if fault.kind != "auth" or not live.auth_offers:
                raise
            method = choose(live.auth_offers, None, self._backend.environment())
            if method is None:
                raise
        await self._authenticate(live, method)
        return await self._ask(live, "session/new", params, NewSessionResponse)

    async def _authenticate(self, live: Live, method: str) -> None:
        if choose(live.auth_offers, method, {}) is None:
            raise Fault(
                "auth",
                f"backend.auth names {method!r}, which {live.who} does not offer; "
                f"its login methods: {describe(live.auth_offers)}",
            )
        await self._ask(live, "authenticate", {"methodId": method}, AuthenticateResponse)
        live.notices.append({"type": "authenticated", "data": {"methodId": method}})

    async def _apply_config(self, live: Live) -> None:
        for config_id, value in self._backend.config.items():
            try:
                await self._set_choice(live, config_id, value)
            except InvalidParamsError as error:
                raise Fault("config", f"backend.config.{config_id}: {error}") from None

    async def _set_choice(self, live: Live, config_id: str, value: str | bool) -> None:
        try:
            method, params = live.choices.request(live.session_id, config_id, value)
        except ChoiceError as error:
            raise InvalidParamsError(str(error)) from None
        try:
            answer = await self._ask(live, method, params, CHOICE_ANSWERS[method])
        except Fault as fault:
            fault.fatal = live.dead  # a refused choice leaves the session usable
            raise
        live.choices.applied(method, params, answer)

    def choices(self) -> dict[str, Any] | None:
        """The live session's configOptions, modes and models (``agent/state``)."""
        live = self._live
        if live is None or live.dead or not live.session_id:
            return None
        return live.choices.view()

    async def configure(self, config_id: str, value: str | bool) -> dict[str, Any]:
        """``agent/configure``: set one choice, opening the session first if
        need be (after the run in flight, if any); the choices after."""
        async with self._lock:
            live = self._live
            try:
                live = await self._session()
                await self._set_choice(live, config_id, value)
            except Fault as fault:
                if fault.fatal:
                    await self._discard(live)
                raise BackendRequestError(self._redactor.redact(str(fault)), fault.kind) from None
            return live.choices.view()

    async def _discard(self, live: Live | None) -> None:
        if live is None:
            return
        if self._live is live:
            self._live = None
        await live.shutdown()

    # -- one turn -----------------------------------------------------------

    async def _prompt(self, live: Live, prompt: str, recorder: RunRecorder) -> AgentRunResult:
        text = prompt if live.prompted else compose_prompt(self._config.system_prompt, prompt)
        if not live.prompted:
            for left_out in live.mcp_left_out:
                recorder.event({"type": "mcp_filtered", "data": left_out})
        for notice in live.notices:
            recorder.event(notice)
        live.notices.clear()
        live.client.files_for_turn(recorder)
        live.prompted = True
        live.pipe.count_output()
        turn = Turn(recorder, live.client.usage)
        live.client.begin(turn)
        # Written from this task at once: the params of a text prompt have one
        # shape (what the library's PromptRequest dumps to), so no model is built.
        call = live.pipe.request(
            "session/prompt",
            {"sessionId": live.session_id, "prompt": [{"type": "text", "text": text}]},
        )
        try:
            await live.pipe.drain()
            await call.answer
        except asyncio.CancelledError:
            # Cancelled or timed out: tell the agent, return now, let the turn
            # end in the background (the next run waits for it).
            live.client.end(cancelled=True)
            live.spawn(live.conn.cancel(session_id=live.session_id))
            live.draining = asyncio.ensure_future(self._drain(live, call))
            raise
        except Exception:
            pass  # an error answer or a lost connection: read below, once the turn is closed
        live.client.end()
        turn.finish()
        response = await read_answer(live, "session/prompt", call.answer, PromptResponse)
        return _result(response.stop_reason, recorder)

    async def _drain(self, live: Live, call: PendingRequest) -> None:
        done, _ = await asyncio.wait({call.settled}, timeout=_CANCEL_GRACE_S)
        if not done:  # it ignored session/cancel: the session is unusable, end it now
            live.stuck = True
            log.warning("ACP agent %r ignored session/cancel; ending it", self._config.name)
            await self._discard(live)


def _result(stop_reason: StopReason, recorder: RunRecorder) -> AgentRunResult:
    """The AgentRunResult for a turn that ended with ``stop_reason``."""
    if stop_reason == "end_turn":
        return replied(recorder)
    if stop_reason in ("max_tokens", "max_turn_requests"):
        return recorder.result(
            "budget_exhausted",
            f"the ACP agent stopped the turn early (stopReason {stop_reason})",
            # The agent's own reason, for a door to pass on.
            error_kind=MAX_TOKENS_KIND if stop_reason == "max_tokens" else MAX_TURN_REQUESTS_KIND,
        )
    if stop_reason == "refusal":
        message = "the ACP agent refused the prompt (stopReason refusal)"
        # What the agent said while refusing is the output; the reason is in status.
        return recorder.result(
            "error", message, output=recorder.output or message, error_kind="refusal"
        )
    return recorder.result("cancelled", f"the ACP agent ended the turn (stopReason {stop_reason})")
