"""The ACP door's live sessions: agent, model, ``cwd``, turns in flight, idle agents resting.

A session's additional directories are stored in its settings and restored by
``session/load``, ``session/resume`` and ``session/fork`` when the request
names none (:func:`directories_of`).

Switching the agent or model builds a new core Agent on the same history. The
editor's MCP servers are kept with the session, not stored. A session builds
each delegate the first time one of its agents hands it a task and keeps it
while the session's agent lives.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from acp.schema import SessionInfo

from oma_host.acp_server.agents import ServedAgents, default_reading, serve_reading
from oma_host.acp_server.auth import auth_required
from oma_host.acp_server.coding_agent import coding_defaults
from oma_host.acp_server.message_ids import EPOCH_SETTING, new_epoch
from oma_host.acp_server.options import Choices, ModelLists, config_options, mode_state, switched
from oma_host.acp_server.run_traces import RunTraces
from oma_host.acp_server.session_store import (
    DIRECTORIES_SETTING,
    SessionStorage,
    refuse,
    stored_cost,
    stored_directories,
    unknown_session,
)
from oma_host.core.abort import AbortSignal
from oma_host.core.agent import Agent
from oma_host.core.backends import AgentCallbacks
from oma_host.core.config import AgentConfig, McpServer
from oma_host.core.history import Rewound
from oma_host.core.messages import LLMMessage
from oma_host.core.results import TokenUsage, zero_usage
from oma_host.core.spans import TraceParent
from oma_host.providers.base import credential_problem
from oma_host.workspace.sandbox import sandbox_support

log = logging.getLogger(__name__)

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
    # The epoch of its history's message ids (:mod:`.message_ids`).
    epoch: str = field(default_factory=new_epoch)
    # The editor's span from session/new's ``_meta.traceparent``: the parent
    # of the runs of prompts that name none.
    trace: TraceParent | None = None
    # ACP's ``additionalDirectories``: folders its agents' tools reach
    # besides ``cwd`` (AgentConfig.additionalDirectories), kept in the store.
    directories: list[str] = field(default_factory=list)
    # The shadow repository of its workspace checkpoints (None: none are kept).
    checkpoints: str | None = None

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
        return {
            **self.choices.settings(),
            "cost": self.cost,
            EPOCH_SETTING: self.epoch,
            DIRECTORIES_SETTING: self.directories,
        }


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
    return refuse(problem)


def checked_directories(directories: list[str] | None) -> list[str] | None:
    """A request's ``additionalDirectories``, each an absolute path to a
    directory (-32602 naming ``additionalDirectories[i]`` otherwise, as
    :func:`checked_cwd`); None when the request gives none (null or left
    out: a stored session keeps its own, :func:`directories_of`)."""
    if directories is None:
        return None
    for index, directory in enumerate(directories):
        where = f"additionalDirectories[{index}]"
        if not os.path.isabs(directory):
            refuse(f"{where} must be an absolute path; {directory!r} is relative")
        if not os.path.isdir(directory):
            refuse(f"{where} {directory!r} is not a directory")
    return list(dict.fromkeys(directories))


def directories_of(given: list[str] | None, settings: dict[str, Any]) -> list[str]:
    """The additional directories of a stored session opened again: the
    request's own list when it gives one (``[]`` included: none), else
    those stored with it (:func:`checked_directories`)."""
    return given if given is not None else stored_directories(settings)


class SessionBook:
    """Every session of this process, and the store behind them.

    A session whose agent has run nothing for ``idle_timeout_s`` (no
    ``session/close`` came: editors seldom send one) has its agent rest
    (:meth:`Agent.rest`): its MCP servers and any ACP agent's process end, and
    its next turn starts them again, on the same history."""

    def __init__(
        self,
        agents: ServedAgents,
        state_dir: str | None,
        callbacks: CallbacksFactory,
        idle_timeout_s: float,
    ) -> None:
        self._agents = agents
        self.configs = {config.name: config for config in agents.configs}
        self._storage = SessionStorage(state_dir)
        self._callbacks = callbacks
        self._idle_timeout_s = idle_timeout_s
        self._sessions: dict[str, DoorSession] = {}
        self._model_lists = ModelLists()
        self._resting: set[asyncio.Task[bool]] = set()
        self.run_traces = RunTraces(self._storage.store)

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

    def check_agents(self) -> None:
        """An agents file that was refused refuses every session request
        with its problem (-32602): the file, the JSON path, what is wrong."""
        if self._agents.problem is not None:
            refuse(self._agents.problem)

    @property
    def auth_methods(self) -> dict[str, dict[str, Any]]:
        """The served agents' auth methods, by id (:class:`.agents.ServedAgents`)."""
        return self._agents.auth_methods

    @property
    def default(self) -> AgentConfig:
        """The agents file's first agent (the agents checked first)."""
        self.check_agents()
        return self._agents.configs[0]

    def _authenticated(self, config: AgentConfig) -> AgentConfig:
        """``config``, when its agent has a credential (or needs none); else
        ``auth_required`` (-32000) naming its provider and how to log in. The
        default agent (no agents file) is looked for again first: a login
        since the door started may have kept another provider's key."""
        problem = credential_problem(config)
        if problem is None:
            return config
        if self._agents.defaulted and config is self.default:
            agents = serve_reading(default_reading())
            fresh = agents.configs[0] if agents.configs else None
            if fresh is not None and credential_problem(fresh) is None:
                self._agents = agents
                self.configs = {fresh.name: fresh}
                return fresh
        raise auth_required(str(problem))

    async def open(
        self, cwd: str, mcp_servers: list[McpServer], directories: list[str] | None = None
    ) -> DoorSession:
        config = self._authenticated(self.default)
        session_id = _new_id()
        choices = Choices.of(config)
        session = await self._build(
            session_id, cwd, config, choices, ([], []), mcp_servers, None, directories or []
        )
        await self._storage.create(session, [])
        self._opened(session)
        return session

    def _chosen(self, settings: dict[str, Any]) -> tuple[AgentConfig, Choices]:
        """The agent and choices stored settings name. An agent no longer in
        the agents file: the session goes on with the default."""
        name = settings.get("agent")
        config = self.configs.get(name, self.default) if isinstance(name, str) else self.default
        checked = self._authenticated(config)
        if checked is not config:  # the default agent, for the provider a login kept a key of
            return checked, Choices.of(checked)
        return config, Choices.stored(settings, config)

    async def load(
        self,
        session_id: str,
        cwd: str,
        mcp_servers: list[McpServer],
        directories: list[str] | None = None,
    ) -> tuple[DoorSession, list[LLMMessage]]:
        """The stored session, in ``cwd`` with ``directories`` (else those
        stored: :func:`directories_of`), and its history (to replay;
        ``session/resume`` does not)."""
        self.check_agents()
        history, info = await self._storage.stored(session_id)
        config, choices = self._chosen(info["settings"])
        previous = self._sessions.get(session_id)
        if previous is not None and previous.busy:
            # The live agent would go on appending to a history the loaded
            # one no longer holds, and the two would disagree.
            refuse("a turn is running; load after it ends")
        if previous is not None:
            await self._end(previous)
        directories = directories_of(directories, info["settings"])
        marks = await self._storage.marks(session_id)
        session = await self._build(
            session_id,
            cwd,
            config,
            choices,
            (history, marks),
            mcp_servers,
            info["title"],
            directories,
        )
        session.cost = stored_cost(info["settings"])
        epoch = info["settings"].get(EPOCH_SETTING)
        if isinstance(epoch, str) and epoch:
            session.epoch = epoch
        await self.save_settings(session)
        self._opened(session)
        return session, history

    async def fork(
        self,
        source_id: str,
        cwd: str,
        mcp_servers: list[McpServer],
        directories: list[str] | None = None,
    ) -> DoorSession:
        """A new session holding a copy of a stored session's history (its
        completed turns: a turn still running is not part of it), with the
        same agent, model, title and (unless ``directories`` are given)
        additional directories; the source goes on unchanged. A wrapped
        ACP agent's own session is not copied: the fork's opens afresh."""
        self.check_agents()
        history, info = await self._storage.stored(source_id)
        config, choices = self._chosen(info["settings"])
        session_id = _new_id()
        directories = directories_of(directories, info["settings"])
        # The source's checkpoints are in its own repository: the fork starts with none.
        session = await self._build(
            session_id,
            cwd,
            config,
            choices,
            (history, []),
            mcp_servers,
            info["title"],
            directories,
        )
        await self._storage.create(session, history)
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
        if not await self._storage.delete(session_id) and live is None:
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
        history: tuple[list[LLMMessage], list[str | None]],
        mcp_servers: list[McpServer],
        title: str | None,
        directories: list[str],
    ) -> DoorSession:
        """A session whose agent runs on ``history``: its messages and the
        checkpoint beside each."""
        session = DoorSession(
            session_id,
            cwd,
            config,
            choices,
            title,
            mcp_servers=list(mcp_servers),
            directories=directories,
            checkpoints=await self._storage.checkpoints(session_id),
        )
        session.models = await self._model_lists.models(config)
        # Probed once a process, off the loop: the sandbox option says whether it works.
        await asyncio.to_thread(sandbox_support)
        session.agent = self._agent(session, *history)
        return session

    def _agent(
        self, session: DoorSession, history: list[LLMMessage], marks: list[str | None]
    ) -> Agent:
        """The session's agent, on ``history`` (with the checkpoint ``marks``
        beside it) with the session's choices; an LLM agent whose tools
        change files records its checkpoints in the session's repository."""
        update = self._in_session(session, session.config)
        update["history"] = history or None
        update.update(session.choices.applied(session.config))
        config = session.config.model_copy(update=update)
        return Agent(
            config,
            on_turn=self._storage.turn_sink(session, config),
            delegates=self._delegate_lookup(session, config),
            checkpoints=session.checkpoints,
            checkpoint_marks=marks,
            **self._callbacks(session.session_id),
        )

    def _in_session(self, session: DoorSession, config: AgentConfig) -> dict[str, Any]:
        """What an agent of the session runs with besides its config: the
        session's ``cwd``; an LLM agent's coding defaults (tools and the
        environment prompt, where its config does not say: :mod:`.coding_agent`);
        and the editor's MCP servers joining the config's own: an LLM agent
        offers their tools, a wrapped ACP agent gets them in its
        ``session/new``; a process agent has no way to use them, so they are
        left out with a log line (refusing would shut the editor out of every
        process agent whenever it has servers configured)."""
        update: dict[str, Any] = {"cwd": session.cwd, **coding_defaults(config)}
        if session.directories:
            update["additional_directories"] = session.directories
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

    async def save_settings(self, session: DoorSession) -> None:
        await self._storage.save_settings(session)

    # -- config options -------------------------------------------------------------

    async def clear(self, session: DoorSession) -> None:
        """``/clear``: the session's history is emptied, here and in the store."""
        if session.busy:
            refuse("a turn is running; clear after it ends")
        session.agent.reset()
        await self._storage.clear(session.session_id)
        session.epoch = new_epoch()
        await self.save_settings(session)

    async def rewind(self, session: DoorSession, keep_turns: int, restore_files: bool) -> Rewound:
        """``_oma/session/rewind``, ``/rewind``: the session's history cut back
        to its first ``keep_turns`` turns, here and in the store (its
        message ids start afresh), the workspace restored when asked
        (:meth:`Agent.rewind`, whose OmaErrors it raises: nothing changed).
        Refused while a turn runs or waits."""
        if session.busy:
            refuse("a turn is running; rewind after it ends")
        rewound = await session.agent.rewind(keep_turns, restore_files)
        session.epoch = new_epoch()
        await self.save_settings(session)
        return rewound

    def config_options(self, session: DoorSession) -> list[dict[str, Any]]:
        return config_options(session.choices, self.configs, session.models)

    def modes(self, session: DoorSession) -> dict[str, Any] | None:
        return mode_state(session.choices, self.configs)

    async def set_option(self, session: DoorSession, config_id: str, value: str) -> None:
        """Switch one choice for the next turn (a new agent brings its own
        choices); the history stays. Refused while a turn runs or waits."""
        if session.busy:
            refuse("a turn is running; switch after it ends")
        choices = switched(session.choices, config_id, value, self.configs, session.models)
        if choices.agent != session.choices.agent:
            session.config = self.configs[choices.agent]
            session.models = await self._model_lists.models(session.config)
        session.choices = choices
        previous = session.agent
        session.agent = self._agent(session, previous.get_history(), previous.checkpoint_marks)
        await previous.close()
        await self.save_settings(session)

    # -- listing and closing ----------------------------------------------------------

    async def list(
        self, cwd: str | None, cursor: str | None
    ) -> tuple[list[SessionInfo], str | None]:
        """One page of ``session/list`` (:meth:`SessionStorage.page`)."""
        self.check_agents()
        return await self._storage.page(cwd, cursor)

    async def close(self) -> None:
        for session in self._sessions.values():
            session.cancel_turns()
            session.stop_idle_timer()
        await asyncio.gather(
            *(agent.close() for session in self._sessions.values() for agent in session.agents)
        )
        self._sessions.clear()
        await self.run_traces.drain()
        await self._storage.close()


def _new_id() -> str:
    return f"sess_{uuid.uuid4().hex}"
