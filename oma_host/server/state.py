"""Per-session state, typed, in one object per connection (:class:`SessionState`).

What ``initialize`` settled, the agents, the session's :class:`Supervisor`, the
client callbacks, and services built on first use (store, evaluator, span
export). Creating it imports nothing heavy: a session exists before
``initialize`` is answered.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from oma_host.core.errors import AgentNotFoundError, StoreError
from oma_host.server.supervisor import Supervisor

if TYPE_CHECKING:
    from oma_host.core.agent import Agent
    from oma_host.core.config import AgentConfig, ModelDefaults
    from oma_host.core.spans import SpanSink
    from oma_host.orchestration.evaluation import EvaluationConfig, OnlineEvaluator
    from oma_host.orchestration.store import Store
    from oma_host.server.callbacks import ClientCallbacks
    from oma_host.server.frame_trace import FrameTracer
    from oma_host.server.rpc import Connection
    from oma_host.server.trace_batch import TraceBatch
    from oma_host.telemetry.settings import Telemetry

_FLUSH_ON_SHUTDOWN_S = 2.0


@dataclass(frozen=True)
class Settings:
    """What ``initialize`` settles for the session (``initializationOptions``)."""

    defaults: ModelDefaults | None = None
    evaluation: EvaluationConfig | None = None
    state_dir: str | None = None  # --state-dir, unless stateDir overrides it
    # initializationOptions.telemetry, settled; None: the OTEL_* variables say.
    telemetry: Telemetry | None = None


@dataclass
class AgentRegistry:
    """The session's agents: agentId -> Agent, and agentId -> the persistent
    sessionId it was created with.

    An ``agent/create`` takes its id when it is read (:meth:`reserve`), before
    it restores a stored session, so a request that names that id and was
    sent after it (a client piping its requests without waiting) waits for
    the create (:meth:`ready`) instead of finding no agent. A create that
    fails gives its id back when no later create took one."""

    _agents: dict[str, Agent] = field(default_factory=dict)
    _sessions: dict[str, str] = field(default_factory=dict)
    _pending: dict[str, asyncio.Future[None]] = field(default_factory=dict)
    _created: int = 0

    def reserve(self) -> str:
        """The id of an agent being created; :meth:`fulfil` or :meth:`abandon` follows."""
        self._created += 1
        agent_id = f"agent-{self._created}"
        self._pending[agent_id] = asyncio.get_running_loop().create_future()
        return agent_id

    def fulfil(self, agent_id: str, agent: Agent, session_id: str | None) -> None:
        self._agents[agent_id] = agent
        if session_id is not None:
            self._sessions[agent_id] = session_id
        self._settle(agent_id)

    def abandon(self, agent_id: str) -> None:
        """The create failed: requests waiting for the id find no agent."""
        self._settle(agent_id)
        if agent_id == f"agent-{self._created}":
            self._created -= 1

    def _settle(self, agent_id: str) -> None:
        waiting = self._pending.pop(agent_id, None)
        if waiting is not None and not waiting.done():
            waiting.set_result(None)

    async def created_before(self, agent_id: str) -> None:
        """Once every create that took its id before ``agent_id`` has finished."""
        earlier = [
            waiting
            for pending, waiting in self._pending.items()
            if _number(pending) < _number(agent_id)
        ]
        for waiting in earlier:
            await asyncio.shield(waiting)

    def named(self, name: str) -> str | None:
        """The id of the agent called ``name`` created last, if any is left."""
        ids = [agent_id for agent_id, agent in self._agents.items() if agent.name == name]
        return max(ids, key=_number, default=None)

    def find(self, agent_id: str) -> Agent | None:
        """The agent, or None once disposed."""
        return self._agents.get(agent_id)

    async def ready(self, agent_id: str) -> Agent:
        """The agent, once a create that holds its id has finished."""
        waiting = self._pending.get(agent_id)
        if waiting is not None:
            await asyncio.shield(waiting)
        return self.get(agent_id)

    def get(self, agent_id: str) -> Agent:
        agent = self._agents.get(agent_id)
        if agent is None:
            raise AgentNotFoundError(
                f"no agent with agentId {agent_id!r} (never created, or disposed)"
            )
        return agent

    def session_of(self, agent_id: str) -> str | None:
        return self._sessions.get(agent_id)

    def remove(self, agent_id: str) -> Agent:
        agent = self.get(agent_id)
        del self._agents[agent_id]
        self._sessions.pop(agent_id, None)
        return agent

    def items(self) -> list[tuple[str, Agent]]:
        return list(self._agents.items())

    def take_all(self) -> list[Agent]:
        """Every agent, forgotten here (shutdown closes them)."""
        agents = list(self._agents.values())
        self._agents.clear()
        self._sessions.clear()
        return agents


def _number(agent_id: str) -> int:
    """The order an ``agent-N`` id was taken in."""
    return int(agent_id.rpartition("-")[2])


class SessionState:
    """Everything one client's session keeps; see the module docstring."""

    def __init__(
        self,
        connection: Connection,
        supervisor: Supervisor,
        tracer: FrameTracer | None = None,
        state_dir: str | None = None,
    ) -> None:
        self.connection = connection
        self.supervisor = supervisor
        self.tracer = tracer
        self.settings = Settings(state_dir=state_dir)
        self.agents = AgentRegistry()
        self._callbacks: ClientCallbacks | None = None
        # LSP's client capabilities from initialize, as sent (callbacks read them).
        self.client_capabilities: Any = None
        self._store: Store | None = None
        self._evaluator: OnlineEvaluator | None = None
        # The run traces waiting to be written (server/trace_batch.py), from the first run on.
        self.run_traces: TraceBatch | None = None
        self._exporting = False  # a run's spans went to an OTLP exporter

    def configure(self, settings: Settings) -> None:
        """Apply what ``initialize`` settled; a stateDir it leaves out keeps --state-dir."""
        if settings.state_dir is None:
            settings = replace(settings, state_dir=self.settings.state_dir)
        self.settings = settings

    @property
    def defaults(self) -> ModelDefaults | None:
        return self.settings.defaults

    @property
    def callbacks(self) -> ClientCallbacks:
        """The client's hooks, permission and scoring, as the core calls them."""
        if self._callbacks is None:
            from oma_host.server.callbacks import ClientCallbacks

            self._callbacks = ClientCallbacks(self.connection, self.client_capabilities)
        return self._callbacks

    def note_secrets(self, config: AgentConfig) -> None:
        """Tell the --trace file about an agent's secret values."""
        if self.tracer is not None:
            self.tracer.add_secrets(config.secrets)

    def store(self) -> Store:
        """The store, opened on first use."""
        if self._store is None:
            import sqlite3

            from oma_host.orchestration.store import Store
            from oma_host.orchestration.store_schema import default_state_dir

            state_dir = self.settings.state_dir
            try:
                store = Store(state_dir)
            except (OSError, sqlite3.Error) as error:
                where = state_dir or default_state_dir()
                raise StoreError(f"the state directory {where} cannot be used: {error}") from None
            self._store = store

            async def close() -> None:
                store.close()

            self.supervisor.on_close("the store", close)
        return self._store

    async def span_export(self) -> tuple[SpanSink | None, bool]:
        """Where a run's spans are exported (None: they are not), and
        whether its spans record message text, in the store and the export
        alike: ``initializationOptions.telemetry``, else the ``OTEL_*``
        variables. The first export a session makes is flushed when the
        session shuts down."""
        from oma_host.telemetry.exporters import (
            environment_telemetry,
            flush_telemetry,
            telemetry_sink,
        )

        telemetry = self.settings.telemetry or environment_telemetry()
        if telemetry.config is None and not telemetry.warnings:
            return None, telemetry.capture_content
        sink = await telemetry_sink(telemetry)
        if sink is not None and not self._exporting:
            self._exporting = True
            self.supervisor.on_close("the span export", flush_telemetry)
        return sink, telemetry.capture_content

    def evaluator(self) -> OnlineEvaluator | None:
        """The online evaluator, built on first use; None when evaluation is off."""
        config = self.settings.evaluation
        if config is None:
            return None
        if self._evaluator is None:
            from oma_host.orchestration.evaluation import OnlineEvaluator

            # Opened here, on the event loop: the records are written from a
            # worker thread, which must not race another thread to open the store.
            store = self.store()
            evaluator = OnlineEvaluator(
                config,
                store_records=store.add_records,
                client_score=self.callbacks.score,
                defaults=self.defaults,
            )
            self._evaluator = evaluator

            async def settle() -> None:
                await evaluator.flush(_FLUSH_ON_SHUTDOWN_S)
                await evaluator.close()

            # Registered after the store's closer, so it runs before it.
            self.supervisor.on_close("the evaluator", settle)
        return self._evaluator
