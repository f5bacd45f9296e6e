"""The ACP agent oma-host presents to an editor: one method per ACP request.

A prompt is one ``Agent.prompt`` turn under the structured-input contract; for
a backend that takes strings only, text blocks are joined and anything else is
refused before a process starts. ``session/cancel`` aborts the turn, and the
history does not keep it. Each session's agent gets the editor as its client
callbacks: the permission handler and the editor channel (files, terminals).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
import uuid
from typing import TYPE_CHECKING, Any

from acp import RequestError
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    Implementation,
    ListSessionsResponse,
    PermissionOption,
    ToolCallUpdate,
)

from oma_host.acp_server import commands
from oma_host.acp_server.agents import ServedAgents
from oma_host.acp_server.auth import initialize_answer, required_variables
from oma_host.acp_server.content import (
    AcpBlock,
    TextPrompt,
    prompt_blocks,
    prompt_text,
    replay_updates,
)
from oma_host.acp_server.editor import EditorClient, SessionTerminals, request_params
from oma_host.acp_server.editor_mcp import host_servers
from oma_host.acp_server.handshake import LOGIN_METHOD
from oma_host.acp_server.message_ids import TurnMessages, new_epoch
from oma_host.acp_server.sessions import (
    DoorSession,
    SessionBook,
    checked_cwd,
    checked_directories,
)
from oma_host.acp_server.updates import (
    ClientFeatures,
    UpdateSender,
    commands_update,
    compaction_done,
    compaction_update,
    context_update,
    message_update,
    prompt_answer,
    proposed_diff,
    replayed_update,
    stop_notice,
    stop_reason,
    title_update,
    usage_update,
    wire_update,
)
from oma_host.acp_server.wire_v1 import CreateElicitationResponse
from oma_host.core.abort import AbortSignal
from oma_host.core.backends import AgentCallbacks
from oma_host.core.config import AgentConfig
from oma_host.core.cost import prices_of
from oma_host.core.credentials import forget_stored_keys, key_for
from oma_host.core.editor_channel import EditorChannel
from oma_host.core.errors import InvalidMessageError, OmaError
from oma_host.core.history import turn_starts
from oma_host.core.messages import LLMMessage
from oma_host.core.plugins import backend_entry
from oma_host.core.results import add_token_usage
from oma_host.core.spans import CollectedSpans, SpanSink, parse_traceparent, recording
from oma_host.core.tools import builtin_tool
from oma_host.orchestration.store_schema import run_record

if TYPE_CHECKING:
    from oma_host.telemetry.settings import Telemetry

log = logging.getLogger(__name__)

_OPTION_NAMES = {
    "allow_once": "Allow once",
    "allow_always": "Always allow",
    "reject_once": "Reject",
    "reject_always": "Always reject",
}


# What "always" covers for a built-in tool, by its target's kind.
_ALWAYS_NAMES = {"path": "Always allow this path", "command": "Always allow this command"}


def _option_name(kind: str, tool: Any) -> str:
    """The label of a permission option of ``kind`` for a call of ``tool``."""
    declaration = builtin_tool(tool) if kind == "allow_always" and isinstance(tool, str) else None
    if declaration is not None and declaration.target_kind in _ALWAYS_NAMES:
        return _ALWAYS_NAMES[declaration.target_kind]
    return _OPTION_NAMES.get(kind, kind)


def _error(error: OmaError) -> RequestError:
    """An ACP error for an OmaError: its code, its message, its ``data``."""
    return RequestError(error.code, str(error), error.error_data())


class OmaAcpAgent:
    """The ACP agent behind ``oma-host acp`` (the methods of the library's
    ``acp.interfaces.Agent`` it serves, called by :mod:`.routes`)."""

    def __init__(
        self,
        agents: ServedAgents,
        state_dir: str | None,
        idle_timeout_s: float,
        telemetry: Telemetry | None = None,
    ) -> None:
        # The span export (--telemetry-*, else the OTEL_* variables); None: off.
        self._telemetry = telemetry
        self._sessions = SessionBook(agents, state_dir, self._callbacks, idle_timeout_s)
        self._client: EditorClient | None = None
        self._client_capabilities = ClientCapabilities()
        self._features = ClientFeatures()
        self.request_ids = itertools.count(1)

    def on_connect(self, editor: EditorClient) -> None:
        self._client = editor

    @property
    def client(self) -> EditorClient:
        assert self._client is not None, "on_connect runs before any request"
        return self._client

    async def close(self) -> None:
        await self._sessions.close()
        if self._telemetry is not None and self._telemetry.config is not None:
            from oma_host.telemetry.exporters import flush_telemetry

            await flush_telemetry()

    async def _span_export(self) -> tuple[SpanSink | None, bool]:
        """Where a turn's spans are exported (None: they are not), and
        whether they record message text (in the store too, exported or not)."""
        telemetry = self._telemetry
        if telemetry is None:
            return None, False
        if telemetry.config is None and not telemetry.warnings:
            return None, telemetry.capture_content
        from oma_host.telemetry.exporters import telemetry_sink

        return await telemetry_sink(telemetry), telemetry.capture_content

    # -- lifecycle ------------------------------------------------------------------

    def accept_capabilities(self, capabilities: dict[str, Any]) -> None:
        """The client's capabilities from its ``initialize`` (wire form)."""
        self._client_capabilities = ClientCapabilities.model_validate(capabilities)
        self.accept_features(capabilities)

    def accept_features(self, capabilities: dict[str, Any]) -> None:
        """The optional updates the client takes, from its capabilities' wire form."""
        self._features = ClientFeatures.of(capabilities)

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **_: Any,
    ) -> dict[str, Any]:
        """An ``initialize`` the plain shape did not take (:mod:`.handshake`),
        validated by the schema's model: the same answer."""
        capabilities = {} if client_capabilities is None else request_params(client_capabilities)
        self.accept_capabilities(capabilities)
        return initialize_answer(self._sessions.auth_methods, capabilities)

    async def authenticate(self, method_id: str, **_: Any) -> None:
        """Succeeds when the method's variables are set; they are read from
        the environment the editor started oma-host with."""
        if method_id == LOGIN_METHOD["id"]:
            raise RequestError.invalid_params(
                {"message": f"{method_id!r} is a terminal method: run `oma-host acp login`"}
            )
        method = self._sessions.auth_methods.get(method_id)
        if method is None:
            raise RequestError.invalid_params({"message": f"unknown auth method {method_id!r}"})
        missing = [name for name in required_variables(method) if not key_for(name)]
        if missing:
            names = " and ".join(missing)
            raise RequestError.auth_required(
                {
                    "message": f"set {names} in the environment the editor starts oma-host "
                    "with, or run `oma-host login`"
                }
            )

    async def logout(self, **_: Any) -> None:
        """Forget every key ``oma-host login`` kept (the OS keyring's and the
        credentials file's), as ``oma-host logout`` does; keys in the
        environment the editor started the door with are not the door's to
        forget. A session's next request that needs a key is then
        ``auth_required``."""
        await asyncio.to_thread(forget_stored_keys)

    # -- sessions ---------------------------------------------------------------------

    def _sender(self, session_id: str, cwd: str) -> UpdateSender:
        """The sender of one session's updates, in the forms the client takes."""
        return UpdateSender(self.client, session_id, cwd, self._features)

    async def _choices(self, session: DoorSession, **answer: Any) -> dict[str, Any]:
        """A session answer in wire form: ``answer``, the config options and,
        for an LLM agent, its modes. The session's commands (their files
        read in a worker thread) follow it as ``available_commands_update``,
        once the editor knows the session."""
        update = commands_update(await asyncio.to_thread(commands.available, session.cwd))
        sender = self._sender(session.session_id, session.cwd)
        asyncio.get_running_loop().call_soon(sender.send, update)
        answer["configOptions"] = self._sessions.config_options(session)
        modes = self._sessions.modes(session)
        if modes is not None:
            answer["modes"] = modes
        return answer

    async def new_session(
        self,
        cwd: str,
        mcp_servers: list[Any] | None = None,
        additional_directories: list[str] | None = None,
        **meta: Any,
    ) -> dict[str, Any]:
        """A new session, its tools reaching ``additional_directories``
        besides ``cwd``; a ``_meta.traceparent`` on it makes the client's
        span the parent of its turns' runs that bring none of their own."""
        cwd = checked_cwd(cwd)
        directories = checked_directories(additional_directories)
        session = await self._sessions.open(cwd, host_servers(mcp_servers), directories)
        session.trace = parse_traceparent(meta.get("traceparent"), meta.get("tracestate"))
        return await self._choices(session, sessionId=session.session_id)

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[Any] | None = None,
        additional_directories: list[str] | None = None,
        **_: Any,
    ) -> dict[str, Any]:
        """The stored session with its history replayed; its additional
        directories are the request's when it gives them, else those stored."""
        cwd = checked_cwd(cwd)
        directories = checked_directories(additional_directories)
        servers = host_servers(mcp_servers)
        session, history = await self._sessions.load(session_id, cwd, servers, directories)
        sender = self._sender(session_id, cwd)
        for update, message in replay_updates(history, cwd, session.epoch):
            sender.send(replayed_update(update, message))
        await sender.close()
        return await self._choices(session)

    async def resume_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[Any] | None = None,
        additional_directories: list[str] | None = None,
        **_: Any,
    ) -> dict[str, Any]:
        """As ``session/load``, without replaying the history to the editor."""
        cwd = checked_cwd(cwd)
        directories = checked_directories(additional_directories)
        servers = host_servers(mcp_servers)
        session, _history = await self._sessions.load(session_id, cwd, servers, directories)
        return await self._choices(session)

    async def fork_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[Any] | None = None,
        additional_directories: list[str] | None = None,
        **_: Any,
    ) -> dict[str, Any]:
        cwd = checked_cwd(cwd)
        directories = checked_directories(additional_directories)
        servers = host_servers(mcp_servers)
        session = await self._sessions.fork(session_id, cwd, servers, directories)
        return await self._choices(session, sessionId=session.session_id)

    async def close_session(self, session_id: str, **_: Any) -> None:
        await self._sessions.close_session(session_id)

    async def delete_session(self, session_id: str, **_: Any) -> None:
        await self._sessions.delete(session_id)

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **_: Any
    ) -> ListSessionsResponse:
        sessions, next_cursor = await self._sessions.list(cwd, cursor)
        return ListSessionsResponse(sessions=sessions, next_cursor=next_cursor)

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **_: Any
    ) -> dict[str, Any]:
        """Switch one choice; the editor is also told with
        ``config_option_update`` (and ``current_mode_update`` for the mode)."""
        session = self._sessions.get(session_id)
        await self._switch(session, config_id, str(value))
        return {"configOptions": self._sessions.config_options(session)}

    async def set_mode(self, mode_id: str, session_id: str, **_: Any) -> None:
        """``session/set_mode``: the ``mode`` config option, for clients that
        predate config options."""
        session = self._sessions.get(session_id)
        if self._sessions.modes(session) is None:
            raise RequestError.invalid_params(
                {
                    "type": "InvalidParams",
                    "message": f"agent {session.config.name!r} has no modes: its own "
                    "permissions apply",
                }
            )
        await self._switch(session, "mode", mode_id)

    async def _switch(self, session: DoorSession, config_id: str, value: str) -> None:
        mode = session.choices.mode
        await self._sessions.set_option(session, config_id, value)
        sender = self._sender(session.session_id, session.cwd)
        if session.choices.mode != mode:
            sender.send({"sessionUpdate": "current_mode_update", "currentModeId": value})
        options = self._sessions.config_options(session)
        sender.send({"sessionUpdate": "config_option_update", "configOptions": options})
        await sender.close()

    # -- prompts ----------------------------------------------------------------------

    def _turn(self, agent_config: AgentConfig, blocks: list[Any], agent: Any) -> LLMMessage:
        """The validated user turn: the blocks, or their text as one string
        for a string-only backend (which refuses anything but text)."""
        value: object = blocks
        text = prompt_text(blocks)
        if text is not None and not backend_entry(agent_config).accepts_structured:
            value = text
        turn: LLMMessage = agent.validate_prompt_input(value, "prompt", owned=True)
        return turn

    async def prompt(
        self, prompt: list[AcpBlock] | TextPrompt, session_id: str, **meta: Any
    ) -> dict[str, Any]:
        """The turn's answer in wire form (:func:`.updates.prompt_answer`).
        A prompt of text that starts with a command is that command's: the
        host's own is carried out here, a user's is expanded into the turn."""
        session = self._sessions.get(session_id)
        try:
            blocks = prompt_blocks(prompt, session.cwd)
        except InvalidMessageError as error:
            raise _error(error) from None
        text = prompt_text(blocks)
        called = None if text is None else commands.invocation(text)
        if called is not None and called[0] in commands.BUILTINS:
            return await self._command(session, *called)
        if called is not None:  # a user's command: its file read in a worker thread
            user = await asyncio.to_thread(commands.user_command, session.cwd, called[0])
            if user is not None:
                blocks = [{"type": "text", "text": commands.expanded(user, called[1])}]
        agent = session.agent
        try:
            turn = self._turn(agent.config, blocks, agent)
        except InvalidMessageError as error:
            raise _error(error) from None
        abort = AbortSignal()
        self._sessions.turn_started(session, abort)
        stored_epoch = session.epoch
        messages = TurnMessages(session.epoch, lambda: agent.history_length)
        sender = UpdateSender(self.client, session_id, session.cwd, self._features, messages)
        untitled = session.title is None
        started = time.time()
        spans = CollectedSpans()
        export, capture = await self._span_export()
        sinks: tuple[SpanSink, ...] = (spans,) if export is None else (spans, export)
        try:
            # The editor's span (``_meta.traceparent``) is the run's parent.
            remote = parse_traceparent(meta.get("traceparent"), meta.get("tracestate"))
            remote = remote or session.trace
            with recording(
                *sinks, capture_content=capture, conversation_id=session_id, remote=remote
            ):
                result = await agent.prompt_turn(turn, abort=abort, emit=sender.emit)
            if untitled and session.title is not None:
                sender.send(title_update(session.title))
            add_token_usage(session.tokens, result["tokenUsage"])
            if "cost" in result:
                session.cost += result["cost"]["amount"]
            sender.send(usage_update(result, agent.config, session.cost))
            notice = stop_notice(result) if self._features.notices else None
            if notice is not None:
                sender.send(notice)
        finally:
            self._sessions.turn_ended(session, abort)
            await sender.close()
        self._sessions.run_traces.record(
            *run_record(
                result,
                agent=agent.name,
                method="session/prompt",
                status=result["status"]["code"],
                started=started,
                session_id=session_id,
                spans=spans,
            )
        )
        if messages.epoch != session.epoch:  # compacted during the turn
            session.epoch = messages.epoch
        if "cost" in result or messages.epoch != stored_epoch:
            await self._sessions.save_settings(session)
        return prompt_answer(stop_reason(result), result)

    async def _command(self, session: DoorSession, name: str, arguments: str) -> dict[str, Any]:
        """Carry out one of the host's own commands; its answer (or why it
        could not be done) comes back as the agent's message, and the turn
        ends ``end_turn`` without the model being asked."""
        try:
            said = await self._carry_out(session, name, arguments)
        except RequestError as error:
            data = error.data if isinstance(error.data, dict) else {}
            said = str(data.get("message") or error)
        sender = self._sender(session.session_id, session.cwd)
        sender.send(message_update(said))
        await sender.close()
        return {"stopReason": "end_turn"}

    async def _carry_out(self, session: DoorSession, name: str, arguments: str) -> str:
        if name == "compact":
            return await self._compact(session)
        if name == "clear":
            await self._sessions.clear(session)
            return "Cleared the conversation; the next prompt starts afresh."
        if name == "cost":
            priced = prices_of(session.agent.config) is not None or session.cost > 0
            return commands.usage_report(session.tokens, session.cost if priced else None)
        if name == "rewind":
            return await self._rewind_command(session, arguments)
        # /agent and /model: the config option of that name.
        if not arguments:
            option = {o["id"]: o for o in self._sessions.config_options(session)}.get(name)
            if option is None:
                return f"agent {session.config.name!r} has no {name} to choose"
            values = ", ".join(value["value"] for value in option["options"])
            return f"{name}: {option['currentValue']} (one of {values})"
        await self._switch(session, name, arguments)
        return f"Switched the {name} to {arguments} for the next turns."

    async def _rewind_command(self, session: DoorSession, arguments: str) -> str:
        """``/rewind``: the recent user messages, numbered; ``/rewind N``: the
        session rewound to before message N, its files restored unless
        ``keep-files`` follows (:func:`.commands.rewind_arguments`); what to
        tell the editor."""
        agent = session.agent
        history = agent.get_history()
        if not arguments:
            return commands.rewind_listing(history, agent.checkpoint_marks)
        asked = commands.rewind_arguments(arguments, len(turn_starts(history)))
        if isinstance(asked, str):
            return asked
        try:
            rewound = await self._sessions.rewind(session, *asked)
        except OmaError as error:
            return f"The session was not rewound: {error}"
        return commands.rewind_note(rewound, session.cwd)

    async def rewind_session(
        self, session_id: str, keep_turns: int, restore_files: bool
    ) -> dict[str, Any]:
        """``_oma/session/rewind``: the session's conversation cut back to its
        first ``keep_turns`` turns and, with ``restore_files``, its workspace
        restored (:meth:`.sessions.SessionBook.rewind`); what changed."""
        session = self._sessions.get(session_id)
        try:
            rewound = await self._sessions.rewind(session, keep_turns, restore_files)
        except OmaError as error:
            raise _error(error) from None
        return rewound.wire()

    async def _compact(self, session: DoorSession) -> str:
        """``/compact``: the session's history compacted now (after its turn
        in flight) and stored so, the editor's context meter shown the
        compacted size; what to tell the editor."""
        sender = self._sender(session.session_id, session.cwd)
        compaction_id = uuid.uuid4().hex
        if self._features.compaction:
            sender.send(compaction_update(compaction_id, "in_progress"))
        try:
            outcome = await session.agent.compact()
        except OmaError as error:
            if self._features.compaction:
                sender.send(compaction_update(compaction_id, "failed", error=str(error)))
                await sender.close()
            return f"The conversation could not be compacted: {error}"
        except BaseException:
            if self._features.compaction:
                sender.send(compaction_update(compaction_id, "cancelled"))
            raise
        add_token_usage(session.tokens, outcome.usage)
        if outcome.compaction is not None:  # a history rewritten: its ids start afresh
            session.epoch = outcome.compaction.get("id", new_epoch())[:12]
        if outcome.cost:
            session.cost += outcome.cost
        if outcome.cost or outcome.compaction is not None:
            await self._sessions.save_settings(session)
        if outcome.compaction is None:
            reason = outcome.reason or "nothing to compact"
            if self._features.compaction:  # nothing was compacted: the entry ends so
                sender.send(compaction_update(compaction_id, "cancelled"))
                await sender.close()
            return reason[:1].upper() + reason[1:] + "."
        config = session.agent.config
        priced = prices_of(config) is not None or session.cost > 0
        used = outcome.compaction["tokensAfter"]
        if self._features.compaction:
            summary = compaction_done(outcome.compaction)
            sender.send(compaction_update(compaction_id, "completed", summary=summary))
        sender.send(context_update(used, config, session.cost if priced else None))
        await sender.close()
        return commands.compaction_note(outcome.compaction)

    async def cancel(self, session_id: str, **_: Any) -> None:
        self._sessions.get(session_id).cancel_turns()

    # -- the editor's answers -------------------------------------------------------

    def proposed_diff(self, session_id: str, tool: dict[str, Any]) -> dict[str, Any] | None:
        """The ``diff`` content (wire form) of a built-in write the policy asks about."""
        name = tool.get("name")
        declaration = builtin_tool(name) if isinstance(name, str) else None
        diff = proposed_diff(declaration, tool.get("input"), self._sessions.get(session_id).cwd)
        return None if diff is None else wire_update(diff)

    def _callbacks(self, session_id: str) -> AgentCallbacks:
        """What a session's agent may ask of the editor: permission, the
        files the editor advertised it serves (``fs.readTextFile``: so an
        unsaved buffer wins over the disk; ``fs.writeTextFile``: it gets the
        whole new text and applies it), and its terminals (``terminal``:
        the shell's commands run there), and its forms (``elicitation.form``:
        an MCP server's questions). The tools confine every path to ``cwd``
        before the editor is asked."""
        fs = self._client_capabilities.fs

        async def read(path: str) -> str:
            answer = await self.client.read_text_file(session_id=session_id, path=path)
            return answer.content

        async def write(path: str, content: str) -> None:
            await self.client.write_text_file(session_id=session_id, path=path, content=content)

        async def elicit(message: str, schema: dict[str, Any]) -> CreateElicitationResponse:
            return await self.client.elicit(session_id, message, schema)

        editor = EditorChannel(
            read_text=read if fs is not None and fs.read_text_file else None,
            write_text=write if fs is not None and fs.write_text_file else None,
            terminal=(
                SessionTerminals(self.client, session_id)
                if self._client_capabilities.terminal
                else None
            ),
            elicit=elicit if self._features.elicitation_form else None,
        )
        return {"permission_handler": EditorPermission(self, session_id), "editor": editor}


class EditorPermission:
    """A session's permission handler: a wrapped ACP agent with ``permission:
    "ask-client"`` has its own options and tool call passed to the editor's
    ``session/request_permission`` unchanged, and the editor's choice (or
    cancellation) goes back to it (:meth:`pick_option`). A backend that asks
    only approve-or-reject (an LLM agent's tool under ``permissions``) has the
    editor offered the option kinds it lists, and ``allow_always`` answers
    for the rest of the session: for a built-in tool's path, that path only
    (so the option says so); for a command line, that line."""

    def __init__(self, door: OmaAcpAgent, session_id: str) -> None:
        self._door = door
        self._session_id = session_id

    async def pick_option(
        self, request: dict[str, Any], tool_call: dict[str, Any], options: list[dict[str, Any]]
    ) -> str | None:
        answer = await self._door.client.request_permission(
            session_id=self._session_id,
            tool_call=ToolCallUpdate.model_validate(tool_call),
            options=[PermissionOption.model_validate(option) for option in options],
        )
        outcome = answer.outcome
        return outcome.option_id if isinstance(outcome, AllowedOutcome) else None

    async def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        tool = request.get("tool") or {}
        options = [
            {"optionId": kind, "name": _option_name(kind, tool.get("name")), "kind": kind}
            for kind in request["optionKinds"]
        ]
        tool_call: dict[str, Any] = {
            # The tool call the editor was shown, so it asks about that one.
            "toolCallId": tool.get("toolUseId") or f"permission_{next(self._door.request_ids)}",
            "title": request["title"] or request["agentName"],
            "kind": request.get("kind"),
        }
        diff = self._door.proposed_diff(self._session_id, tool)
        if diff is not None:  # a write: the editor reviews the change before it lands
            tool_call["content"] = [diff]
            tool_call["locations"] = [{"path": diff["path"]}]
        chosen = await self.pick_option(request, tool_call, options)
        if chosen is None or not chosen.startswith("allow"):
            return {"approve": False}
        return {"approve": True, "scope": "session" if chosen == "allow_always" else "once"}
