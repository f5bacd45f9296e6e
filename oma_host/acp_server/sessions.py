"""The ACP door's sessions: which agent and model each runs, in which
``cwd``, and how they are stored.

A session is stored like a JSON-RPC session (``Store.create_session``, each
completed turn committed by ``append_turn`` before the prompt is answered,
the whole history by ``replace_history`` when a compaction changed it),
plus its ``cwd``, a title (the first prompt's text) and its settings (the
chosen agent and model) in ``session_info``, so ``session/load`` in a new
process restores it and ``session/list`` can show it. Switching the agent or
the model builds a new core Agent on the same history. The editor's MCP
servers (``session/new`` / ``session/load``) are kept with the session, not
stored, and join each agent it builds (see :meth:`SessionBook._agent`).

An agent whose config lists ``delegates`` finds them among the agents file's
agents: each session builds a delegate the first time one of its agents
hands it a task (in the session's ``cwd``, with the editor's MCP servers and
the session's editor callbacks, without history), keeps it for the
session's later delegations, and ends it with the session's agent (closed,
or rested when idle).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NoReturn

from acp import RequestError
from acp.schema import SessionInfo

from oma_host.acp_server.options import Choices, ModelLists, config_options, mode_state, switched
from oma_host.acp_server.run_traces import RunTraces
from oma_host.core.abort import AbortSignal
from oma_host.core.agent import Agent
from oma_host.core.backends import AgentCallbacks
from oma_host.core.config import AgentConfig, McpServer
from oma_host.core.history import HistoryChange, TurnSink
from oma_host.core.messages import LLMMessage
from oma_host.core.redact import Redactor
from oma_host.core.results import TokenUsage, zero_usage
from oma_host.orchestration.store import Store

log = logging.getLogger(__name__)

TITLE_CHARS = 80
# Sessions in one page of session/list.
LIST_PAGE = 50
# Builds the client callbacks of one session (they ask that session's editor).
CallbacksFactory = Callable[[str], AgentCallbacks]


@dataclass
class DoorSession:
    """One ACP session: its agent (rebuilt on a switch) and the turn in flight."""

    session_id: str
    cwd: str
    config: AgentConfig  # the chosen agent's config as the agents file has it
    choices: Choices
    title: str | None  # set from the first prompt's text, then kept
    # The models the model option offers (options.ModelLists).
    models: list[str] = field(default_factory=list)
    cost: float = 0.0  # every turn's, in USD, while the agent's prices are known
    tokens: TokenUsage = field(default_factory=zero_usage)  # every turn's in this process
    # The editor's MCP servers from session/new or session/load, added to
    # whichever agent the session runs (see SessionBook._agent).
    mcp_servers: list[McpServer] = field(default_factory=list)
    agent: Agent = field(init=False)
    # The agents of the file the session's agents delegated to, by name,
    # built on first use (SessionBook._delegate).
    delegates: dict[str, Agent] = field(default_factory=dict)
    # The abort signal of each prompt in flight: the one running and those
    # queued behind it (an agent runs its prompts one after another).
    turns: set[AbortSignal] = field(default_factory=set)
    # Rests the agent once the session has been idle long enough (see SessionBook).
    idle_timer: asyncio.TimerHandle | None = None

    @property
    def busy(self) -> bool:
        """Whether a turn runs or waits to run."""
        return bool(self.turns)

    def cancel_turns(self) -> None:
        """``session/cancel``: the turn running and every turn queued."""
        for abort in self.turns:
            abort.abort()

    def stop_idle_timer(self) -> None:
        if self.idle_timer is not None:
            self.idle_timer.cancel()
            self.idle_timer = None

    @property
    def agents(self) -> list[Agent]:
        """The session's agent and the delegates it has built."""
        return [self.agent, *self.delegates.values()]

    @property
    def settings(self) -> dict[str, Any]:
        return {**self.choices.settings(), "cost": self.cost}


def _title(turn: LLMMessage) -> str | None:
    text = " ".join(
        block["text"] for block in turn["content"] if block.get("type") == "text"
    ).split()
    joined = " ".join(text)
    if not joined:
        return None
    return joined if len(joined) <= TITLE_CHARS else joined[: TITLE_CHARS - 1] + "…"


def unknown_session(session_id: str) -> RequestError:
    return RequestError.invalid_params(
        {
            "type": "SessionNotFound",
            "sessionId": session_id,
            "message": f"no session {session_id!r} (session/list shows those stored)",
        }
    )


def checked_cwd(cwd: str) -> str:
    """``cwd`` as a session takes it: an absolute path to a directory
    (-32602 otherwise, before anything is opened, rather than a first prompt
    that fails)."""
    if not os.path.isabs(cwd):
        problem = f"cwd must be an absolute path; {cwd!r} is relative"
    elif not os.path.isdir(cwd):
        problem = f"cwd {cwd!r} is not a directory"
    else:
        return cwd
    return _refuse(problem)


def _refuse(message: str) -> NoReturn:
    raise RequestError.invalid_params({"type": "InvalidParams", "message": message})


class SessionBook:
    """Every session of this process, and the store behind them.

    A session whose agent has run nothing for ``idle_timeout_s`` (no
    ``session/close`` came: editors seldom send one) has its agent rest
    (:meth:`Agent.rest`): its MCP servers and any ACP agent's process end, and
    its next turn starts them again, on the same history."""

    def __init__(
        self,
        configs: list[AgentConfig],
        state_dir: str | None,
        callbacks: CallbacksFactory,
        idle_timeout_s: float,
    ) -> None:
        self.configs = {config.name: config for config in configs}
        self.default = configs[0]
        self._state_dir = state_dir
        self._callbacks = callbacks
        self._idle_timeout_s = idle_timeout_s
        self._store: Store | None = None
        self._sessions: dict[str, DoorSession] = {}
        self._model_lists = ModelLists()
        self._resting: set[asyncio.Task[bool]] = set()
        self.run_traces = RunTraces(self.store)

    async def store(self) -> Store:
        if self._store is None:
            self._store = await asyncio.to_thread(Store, self._state_dir)
        return self._store

    def get(self, session_id: str) -> DoorSession:
        session = self._sessions.get(session_id)
        if session is None:
            raise unknown_session(session_id)
        return session

    # -- turns ------------------------------------------------------------------------

    def turn_started(self, session: DoorSession, abort: AbortSignal) -> None:
        session.turns.add(abort)
        session.stop_idle_timer()

    def turn_ended(self, session: DoorSession, abort: AbortSignal) -> None:
        session.turns.discard(abort)
        if not session.busy:
            self._idle_from_now(session)

    def _idle_from_now(self, session: DoorSession) -> None:
        session.stop_idle_timer()
        loop = asyncio.get_running_loop()
        session.idle_timer = loop.call_later(self._idle_timeout_s, self._rest_soon, session)

    def _rest_soon(self, session: DoorSession) -> None:
        session.idle_timer = None
        if session.busy or self._sessions.get(session.session_id) is not session:
            return
        for agent in session.agents:
            task = asyncio.get_running_loop().create_task(agent.rest())
            self._resting.add(task)
            task.add_done_callback(self._rested)

    def _rested(self, task: asyncio.Task[bool]) -> None:
        self._resting.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("an idle session's agent failed to rest: %s", task.exception())

    # -- opening ------------------------------------------------------------------

    async def open(self, cwd: str, mcp_servers: list[McpServer]) -> DoorSession:
        session_id = _new_id()
        config = self.default
        choices = Choices.of(config)
        session = await self._build(session_id, cwd, config, choices, [], mcp_servers, None)
        store = await self.store()
        redact = Redactor.for_config(config).redact_tree
        await asyncio.to_thread(store.create_session, session_id, config.name, [], redact)
        await self.save_settings(session)
        self._opened(session)
        return session

    async def _stored(self, session_id: str) -> tuple[list[LLMMessage], dict[str, Any]]:
        """A stored session's history and info (SessionNotFound without)."""
        store = await self.store()
        history = await asyncio.to_thread(store.load_session, session_id)
        infos = await asyncio.to_thread(store.session_infos, session_id)
        if history is None or not infos:
            raise unknown_session(session_id)
        return history, infos[0]

    def _chosen(self, settings: dict[str, Any]) -> tuple[AgentConfig, Choices]:
        """The agent and choices stored settings name. An agent no longer in
        the agents file: the session goes on with the default."""
        name = settings.get("agent")
        config = self.configs.get(name, self.default) if isinstance(name, str) else self.default
        return config, Choices.stored(settings, config)

    async def load(
        self, session_id: str, cwd: str, mcp_servers: list[McpServer]
    ) -> tuple[DoorSession, list[LLMMessage]]:
        """The stored session, in ``cwd``, and its history (to replay;
        ``session/resume`` does not)."""
        history, info = await self._stored(session_id)
        config, choices = self._chosen(info["settings"])
        previous = self._sessions.get(session_id)
        if previous is not None and previous.busy:
            # The live agent would go on appending to a history the loaded
            # one no longer holds, and the two would disagree.
            _refuse("a turn is running; load after it ends")
        if previous is not None:
            await self._end(previous)
        session = await self._build(
            session_id, cwd, config, choices, history, mcp_servers, info["title"]
        )
        session.cost = _stored_cost(info["settings"])
        await self.save_settings(session)
        self._opened(session)
        return session, history

    async def fork(self, source_id: str, cwd: str, mcp_servers: list[McpServer]) -> DoorSession:
        """A new session holding a copy of a stored session's history (its
        completed turns: a turn still running is not part of it), with the
        same agent, model and title; the source goes on unchanged. A wrapped
        ACP agent's own session is not copied: the fork's opens afresh."""
        history, info = await self._stored(source_id)
        config, choices = self._chosen(info["settings"])
        session_id = _new_id()
        session = await self._build(
            session_id, cwd, config, choices, history, mcp_servers, info["title"]
        )
        store = await self.store()
        redact = Redactor.for_config(config).redact_tree
        await asyncio.to_thread(store.create_session, session_id, config.name, history, redact)
        await asyncio.to_thread(
            store.put_session_info, session_id, cwd, session.settings, info["title"]
        )
        self._opened(session)
        return session

    async def close_session(self, session_id: str) -> None:
        """``session/close``: the session's turns are cancelled and its agent
        ends (its MCP servers, a wrapped agent's process); the stored session
        stays, for ``session/load`` or ``session/resume``."""
        await self._end(self.get(session_id))

    async def delete(self, session_id: str) -> None:
        """``session/delete``: closed if open, then forgotten by the store."""
        live = self._sessions.get(session_id)
        if live is not None:
            await self._end(live)
        store = await self.store()
        if not await asyncio.to_thread(store.delete_session, session_id) and live is None:
            raise unknown_session(session_id)

    async def _end(self, session: DoorSession) -> None:
        if self._sessions.get(session.session_id) is session:
            del self._sessions[session.session_id]
        session.cancel_turns()
        session.stop_idle_timer()
        await asyncio.gather(*(agent.close() for agent in session.agents))

    def _opened(self, session: DoorSession) -> None:
        self._sessions[session.session_id] = session
        self._idle_from_now(session)

    async def _build(
        self,
        session_id: str,
        cwd: str,
        config: AgentConfig,
        choices: Choices,
        history: list[LLMMessage],
        mcp_servers: list[McpServer],
        title: str | None,
    ) -> DoorSession:
        session = DoorSession(
            session_id, cwd, config, choices, title, mcp_servers=list(mcp_servers)
        )
        session.models = await self._model_lists.models(config)
        session.agent = self._agent(session, history)
        return session

    def _agent(self, session: DoorSession, history: list[LLMMessage]) -> Agent:
        """The session's agent, on ``history`` with the session's choices."""
        update = self._in_session(session, session.config)
        update["history"] = history or None
        update.update(session.choices.applied(session.config))
        config = session.config.model_copy(update=update)
        return Agent(
            config,
            on_turn=self._turn_sink(session, config),
            delegates=self._delegate_lookup(session, config),
            **self._callbacks(session.session_id),
        )

    def _in_session(self, session: DoorSession, config: AgentConfig) -> dict[str, Any]:
        """What an agent of the session runs with besides its config: the
        session's ``cwd``, and the editor's MCP servers joining the config's
        own: an LLM agent offers their tools, a wrapped ACP agent gets them in
        its ``session/new``; a process agent has no way to use them, so they
        are left out with a log line (refusing would shut the editor out of
        every process agent whenever it has servers configured)."""
        update: dict[str, Any] = {"cwd": session.cwd}
        backend = config.backend
        if session.mcp_servers and backend is not None and backend.kind == "process":
            names = ", ".join(server.name for server in session.mcp_servers)
            log.warning(
                "agent %r is a process agent and cannot use MCP servers; "
                "the editor's (%s) are left out",
                config.name,
                names,
            )
        elif session.mcp_servers:
            update["mcp_servers"] = [*(config.mcp_servers or []), *session.mcp_servers]
        return update

    def _delegate_lookup(
        self, session: DoorSession, config: AgentConfig
    ) -> Callable[[str], Agent | None] | None:
        """How an agent of the session with ``delegates`` finds them."""
        if not config.delegates:
            return None
        return lambda name: self._delegate(session, name)

    def _delegate(self, session: DoorSession, name: str) -> Agent | None:
        """The session's agent ``name`` of the file, to delegate to (built
        the first time); None once the session has ended."""
        agent = session.delegates.get(name)
        if agent is not None:
            return agent
        config = self.configs.get(name)
        if config is None or self._sessions.get(session.session_id) is not session:
            return None
        config = config.model_copy(update=self._in_session(session, config))
        agent = Agent(
            config,
            delegates=self._delegate_lookup(session, config),
            **self._callbacks(session.session_id),
        )
        session.delegates[name] = agent
        return agent

    def _turn_sink(self, session: DoorSession, config: AgentConfig) -> TurnSink:
        redactor = Redactor.for_config(config)
        redact = redactor.redact_tree

        async def commit(change: HistoryChange) -> None:
            store = await self.store()
            if change.history is not None:
                history = change.history
                await asyncio.to_thread(store.replace_history, session.session_id, history, redact)
            else:
                appended = change.appended
                await asyncio.to_thread(store.append_turn, session.session_id, appended, redact)
            if session.title is None and change.turn is not None:
                title = _title(change.turn)
                # A key pasted into the first prompt stays out of session/list.
                title = None if title is None else redactor.redact(title)
                await asyncio.to_thread(
                    store.put_session_info, session.session_id, session.cwd, session.settings, title
                )
                session.title = title

        return commit

    async def save_settings(self, session: DoorSession) -> None:
        store = await self.store()
        await asyncio.to_thread(
            store.put_session_info, session.session_id, session.cwd, session.settings
        )

    # -- config options -------------------------------------------------------------

    async def clear(self, session: DoorSession) -> None:
        """``/clear``: the session's history is emptied, here and in the store."""
        if session.busy:
            _refuse("a turn is running; clear after it ends")
        session.agent.reset()
        store = await self.store()
        await asyncio.to_thread(store.clear_session, session.session_id)

    def config_options(self, session: DoorSession) -> list[dict[str, Any]]:
        return config_options(session.choices, self.configs, session.models)

    def modes(self, session: DoorSession) -> dict[str, Any] | None:
        return mode_state(session.choices, self.configs)

    async def set_option(self, session: DoorSession, config_id: str, value: str) -> None:
        """Switch one choice for the next turn (a new agent brings its own
        choices); the history stays. Refused while a turn runs or waits."""
        if session.busy:
            _refuse("a turn is running; switch after it ends")
        choices = switched(session.choices, config_id, value, self.configs, session.models)
        if choices.agent != session.choices.agent:
            session.config = self.configs[choices.agent]
            session.models = await self._model_lists.models(session.config)
        session.choices = choices
        previous = session.agent
        session.agent = self._agent(session, previous.get_history())
        await previous.close()
        await self.save_settings(session)

    # -- listing and closing ----------------------------------------------------------

    async def list(
        self, cwd: str | None, cursor: str | None
    ) -> tuple[list[SessionInfo], str | None]:
        """One page of the stored sessions (in ``cwd`` when given), the most
        recently updated first, and the cursor of the next page (None after
        the last). A cursor names the last session of its page, so a session
        created or updated meanwhile moves to the front and shifts nothing."""
        store = await self.store()
        rows = await asyncio.to_thread(store.session_infos, None, cwd)
        rows.sort(key=lambda row: (-row["updated"], row["sessionId"]))
        if cursor is not None:
            after = _cursor_position(cursor)
            rows = [row for row in rows if (-row["updated"], row["sessionId"]) > after]
        page, rest = rows[:LIST_PAGE], rows[LIST_PAGE:]
        infos = [
            SessionInfo(
                session_id=row["sessionId"],
                cwd=row["cwd"],
                title=row["title"],
                updated_at=_timestamp(row["updated"]),
            )
            for row in page
        ]
        next_cursor = _cursor(page[-1]) if rest else None
        return infos, next_cursor

    async def close(self) -> None:
        for session in self._sessions.values():
            session.cancel_turns()
            session.stop_idle_timer()
        await asyncio.gather(
            *(agent.close() for session in self._sessions.values() for agent in session.agents)
        )
        self._sessions.clear()
        await self.run_traces.drain()
        if self._store is not None:
            await asyncio.to_thread(self._store.close)


def _timestamp(updated: float) -> str:
    return datetime.fromtimestamp(updated, UTC).isoformat()


def _cursor(row: dict[str, Any]) -> str:
    """An opaque cursor naming ``row``'s place in the listing."""
    place = json.dumps([-row["updated"], row["sessionId"]])
    return base64.urlsafe_b64encode(place.encode()).decode()


def _cursor_position(cursor: str) -> tuple[float, str]:
    try:
        key, session_id = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        return float(key), str(session_id)
    except (ValueError, TypeError, binascii.Error):
        _refuse(f"cursor {cursor!r} is not one that session/list gave")


def _stored_cost(settings: dict[str, Any]) -> float:
    cost = settings.get("cost")
    return float(cost) if isinstance(cost, int | float) else 0.0


def _new_id() -> str:
    return f"sess_{uuid.uuid4().hex}"
